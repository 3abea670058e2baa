"""Where a layer-by-layer schedule keeps its tensors in DRAM."""

from __future__ import annotations

from dataclasses import dataclass

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


def dram_layout(graph: Graph, batch: int = 1) -> dict[str, DramLayout]:
    """Assign every tensor (all images of the batch) and every filter set its own DRAM region."""
    tensor_base: dict[str, int] = {}
    filter_base: dict[str, int] = {}
    image_words: dict[str, int] = {}
    top = 0
    for layer in graph:
        tensor_base[layer.output] = top
        image_words[layer.output] = layer.out_shape.elements
        top += batch * layer.out_shape.elements
        filter_base[layer.name] = top
        top += layer.weight_params
    return {
        l.name: DramLayout(tuple(tensor_base[t] for t in l.inputs), tuple(image_words[t] for t in l.inputs),
                           filter_base[l.name], tensor_base[l.output], image_words[l.output])
        for l in graph
    }
