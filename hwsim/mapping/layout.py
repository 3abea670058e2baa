"""Where a layer-by-layer schedule keeps its tensors in DRAM."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hwsim.vocab import Operand
from hwsim.workload.ir import Graph


@dataclass(frozen=True)
class DramLayout:
    """Word addresses of a layer's tensors in DRAM (tensors are packed in execution order).

    Each activation tensor holds the whole batch, image after image; `*_image_words` is the stride.
    """

    ifmap: tuple[int, ...]
    ifmap_image_words: tuple[int, ...]
    filter: int
    ofmap: int
    ofmap_image_words: int
    filter_words: int = 0
    lowered: int = -1  # first word of the im2col-lowered ifmap matrix (all images), -1: the layer is not lowered
    lowered_words: int = 0
    ifmap_channel_words: int = 0  # a band of rows of a larger tensor: words from one channel to the next (0: the
    ofmap_channel_words: int = 0  # layer's own shapes)

    def regions(self, batch: int, inputs: int) -> tuple[tuple[int, int, int], ...]:
        """(operand, first word, words) of every DRAM region the layer's steps may touch, reading its first
        `inputs` input tensors (or its lowered ifmap matrix): each input (ifmap), its filters, its output (ofmap,
        and psums kept there)."""
        out = [(int(Operand.IFMAP), base, batch * image) for base, image in
               zip(self.ifmap[:inputs], self.ifmap_image_words[:inputs], strict=True)]
        if self.lowered >= 0:
            out = [(int(Operand.IFMAP), self.lowered, self.lowered_words)]
        if self.filter_words:
            out.append((int(Operand.FILTER), self.filter, self.filter_words))
        out.extend((int(operand), self.ofmap, batch * self.ofmap_image_words)
                   for operand in (Operand.PSUM, Operand.OFMAP))
        return tuple(out)


def dram_layout(graph: Graph, batch: int = 1, lowered_words: Mapping[str, int] | None = None,
                word_bytes: Mapping[str, int] | None = None) -> dict[str, DramLayout]:
    """Assign every tensor (all images of the batch), every filter set and every im2col-lowered ifmap matrix
    (`lowered_words`: layer -> words of its matrix for the batch; the host lowers it in DRAM, as SCALE-Sim's
    im2col traces assume) its own DRAM region, each layer's addresses in its own words.

    With `word_bytes` (layer -> bytes of the word it runs at: mixed precision) regions are placed in bytes: a
    tensor's holds its elements at the widest word of its writer and readers (each moves its own words; the
    conversion between them rides the transfer), every region starts on a multiple of the widest word, and a
    layer's addresses are those byte offsets in its words. Without, every layer shares one word."""
    lowered_words = lowered_words or {}
    unit = {l.name: (word_bytes or {}).get(l.name, 1) for l in graph}
    align = max(unit.values(), default=1)
    tensor_base: dict[str, int] = {}
    filter_base: dict[str, int] = {}
    lowered_base: dict[str, int] = {}
    image_words: dict[str, int] = {}
    top = 0
    for layer in graph:
        element = max([unit[layer.name], *(unit[c.name] for c in graph.consumers(layer.output))])
        tensor_base[layer.output] = top
        image_words[layer.output] = layer.out_shape.elements
        top += _aligned(batch * layer.out_shape.elements * element, align)
        filter_base[layer.name] = top
        top += _aligned(layer.weight_params * unit[layer.name], align)
        if layer.name in lowered_words:
            lowered_base[layer.name] = top
            top += _aligned(lowered_words[layer.name] * unit[layer.name], align)
    return {
        l.name: DramLayout(tuple(tensor_base[t] // unit[l.name] for t in l.inputs),
                           tuple(image_words[t] for t in l.inputs), filter_base[l.name] // unit[l.name],
                           tensor_base[l.output] // unit[l.name], image_words[l.output], l.weight_params,
                           lowered_base[l.name] // unit[l.name] if l.name in lowered_base else -1,
                           lowered_words.get(l.name, 0))
        for l in graph
    }


def _aligned(size: int, align: int) -> int:
    """`size` rounded up to a multiple of `align`."""
    return -(-size // align) * align
