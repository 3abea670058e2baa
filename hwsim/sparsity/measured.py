"""A network's measured tensors: one image's activations and filters, their zero fractions, and each layer's
tiles for the step generator.

`MeasuredTensors` holds one image's activation of every IR tensor (C × H × W)
and every weighted layer's filters (`Layer.weight_shape`, a transposed
convolution's as ONNX stores them). Every image of a batch is that image (the
network ran once). It counts each layer's zero fractions (its zero MACs
exactly, from the window over its ifmap), makes the measured
`SparsityProfile`, and hands the step generator a layer's `LayerTiles`
(`hwsim.sparsity.tiles`): each tile's values and each pass's zero MACs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from hwsim.sparsity.profile import LayerZeros, SparsityProfile
from hwsim.sparsity.tiles import Geometry, LayerTiles, Window, window_zeros
from hwsim.workload.ir import Graph, Layer, LayerKind


@dataclass(frozen=True)
class MeasuredTensors:
    """One image's activations by IR tensor and the weighted layers' filters by layer, and where they came from."""

    source: str
    activations: Mapping[str, np.ndarray]
    weights: Mapping[str, np.ndarray] = field(default_factory=lambda: MappingProxyType({}))

    def zero_fraction(self, tensor: str) -> float:
        values = self.activations[tensor]
        return float(np.count_nonzero(values == 0)) / max(1, values.size)

    def layer_zeros(self, layer: Layer) -> LayerZeros:
        """The layer's zero fractions, counted: its inputs (element-weighted), filters, output, and its MACs."""
        sizes = [self.activations[t].size for t in layer.inputs]
        each = tuple(self.zero_fraction(t) for t in layer.inputs)
        ifmap = sum(z * n for z, n in zip(each, sizes)) / max(1, sum(sizes))
        weights = self.weights.get(layer.name)
        filt = float(np.count_nonzero(weights == 0)) / weights.size if weights is not None and weights.size else 0.0
        return LayerZeros(ifmap, filt, self.zero_fraction(layer.output), self._zero_macs(layer, ifmap),
                          each if len(each) > 1 else ())

    def _zero_macs(self, layer: Layer, ifmap: float) -> float:
        if layer.kind not in (LayerKind.CONV, LayerKind.FC, LayerKind.CONV_TRANSPOSE) or not layer.macs:
            return ifmap
        zero = self.activations[layer.inputs[0]] == 0
        if layer.kind is LayerKind.CONV:
            window = window_zeros(zero, _conv_window(layer), (0, layer.kernel[0]), (0, layer.kernel[1]))
            count = int(window.sum()) * (layer.out_shape.c // layer.groups)
        else:  # every input word meets the same number of MACs
            count = int(zero.sum()) * (layer.macs // zero.size)
        return count / layer.macs

    def profile(self, graph: Graph) -> SparsityProfile:
        """The measured profile of `graph`: every layer with inputs, counted; the tensors kept for exact tiles."""
        known = self.activations
        layers = {l.name: self.layer_zeros(l) for l in graph
                  if l.inputs and all(t in known for t in l.inputs) and l.output in known}
        return SparsityProfile("measured", self.source, MappingProxyType(layers), self)

    def layer_tiles(self, layer: Layer, problem: Geometry, conv: Geometry, im2col: bool) -> LayerTiles:
        """What the step generator reads of `layer` mapped as `problem` (`conv`: its convolution problem, which
        `problem` unfolds when the mapping lowers it to im2col)."""
        return LayerTiles(problem, conv, im2col, self.activations[layer.inputs[0]], self.activations[layer.output],
                          self.weights.get(layer.name))

    def flat(self, tensor: str) -> np.ndarray:
        """A tensor's values in DRAM order (channels, rows, columns)."""
        return self.activations[tensor].reshape(-1)


def _conv_window(layer: Layer) -> Window:
    return Window(layer.stride, layer.dilation, (layer.padding.top, layer.padding.left),
                  (layer.out_shape.h, layer.out_shape.w))
