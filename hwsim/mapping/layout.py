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


def dram_layout(graph: Graph, batch: int = 1, lowered_words: Mapping[str, int] | None = None) -> dict[str, DramLayout]:
    """Assign every tensor (all images of the batch), every filter set and every im2col-lowered ifmap matrix
    (`lowered_words`: layer -> words of its matrix for the batch; the host lowers it in DRAM, as SCALE-Sim's
    im2col traces assume) its own DRAM region."""
    lowered_words = lowered_words or {}
    tensor_base: dict[str, int] = {}
    filter_base: dict[str, int] = {}
    lowered_base: dict[str, int] = {}
    image_words: dict[str, int] = {}
    top = 0
    for layer in graph:
        tensor_base[layer.output] = top
        image_words[layer.output] = layer.out_shape.elements
        top += batch * layer.out_shape.elements
        filter_base[layer.name] = top
        top += layer.weight_params
        if layer.name in lowered_words:
            lowered_base[layer.name] = top
            top += lowered_words[layer.name]
    return {
        l.name: DramLayout(tuple(tensor_base[t] for t in l.inputs), tuple(image_words[t] for t in l.inputs),
                           filter_base[l.name], tensor_base[l.output], image_words[l.output], l.weight_params,
                           lowered_base.get(l.name, -1), lowered_words.get(l.name, 0))
        for l in graph
    }
