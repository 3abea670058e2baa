"""From the workload IR to CNNergy's layer form, with a model of the zeros in every tensor.

CNNergy (`hwsim.analytic.cnnergy`) prices square convolutions described by
R, M, H (padded), C, U, E, the zero fractions sp_if / sp_of and a batch n.
`adapt_graph` turns each CONV / FC / CONV_TRANSPOSE layer of a `Graph` into
that form; every other layer (pooling, LRN, add, concat, ...) has no CNNergy
energy and maps to None, though it still produces a tensor a partition may
cut at.

Conventions, each chosen so that the CNNergy reference run of AlexNet is
reproduced exactly from `zoo.build("alexnet")`:

- H is the padded ifmap height (in_h + pad_top + pad_bottom), E the ofmap
  height, U the vertical stride. If those are inconsistent with R
  ((H − R) // U + 1 ≠ E: dilation, an enclosing square kernel), H becomes
  (E − 1)·U + R, the rows the outputs actually read.
- Grouped convolutions are one group's channels with all filters
  (C = in_c / groups, M = out_c), as the reference feeds AlexNet CONV2/4/5.
  That assumes every filter reads the same C channels, which under-counts
  ifmap traffic by the group count: a factor 2 the reference accepts. For a
  depthwise convolution it would be a factor of hundreds, so a depthwise
  layer is instead priced as one group (C = 1, M = out_c / groups) repeated
  `groups` times.
- FC layers are convolutions with R = H = the input's spatial size
  (AlexNet fc6: R = H = 6, C = 256; fc7/fc8: R = H = 1, C = 4096). If that
  input is not square or R would not fit the PE array, the input is
  flattened: R = H = 1, C = all input elements.
- A non-square kernel becomes the enclosing square, R = max(kh, kw): a
  square-filter accelerator runs the padded zero taps, and CNNergy prices
  dense MACs. (No zoo network has one.)
- A non-square map is priced with its height and scaled by width / height
  (`copies`): every CNNergy term but the GLB fit grows linearly with the
  number of ofmap columns.
- A transposed convolution is a stride-1 convolution over the zero-stuffed
  input (H = E + R − 1); the stuffed zeros enter sp_if, so CNNergy's
  zero-skipping charges only the real MACs.
- A filter taller than the PE array or wider than the ifmap RF cannot be
  mapped row-stationary; it is lowered to a 1×1 convolution over the
  im2col-unfolded ifmap (C·R² channels, H = E), as a GEMM engine would run it.
- A map so wide that CNNergy cannot fit one pass's ifmap and one filter's
  psums in the GLB (SRGAN's 4x-upscaled output) is split into square ofmap
  tiles that it can schedule, each priced and multiplied.
- The batch n follows the reference's two runs: a first schedule proposes
  the images each layer's GLB holds, then the used batches are the largest
  values of a divisibility chain (1 | 2 | 6 | ...) not above the proposal,
  capped at `max_batch` (18, the largest batch of the reference AlexNet run).
  AlexNet: proposed [1, 2, 7, 7, 7, 316, 316, 316], used [1, 2, 6, 6, 6, 18, 18, 18].
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING

from hwsim.errors import ConfigError, NetworkError
from hwsim.hardware.schema import Accelerator
from hwsim.sparsity.names import DEFAULT_RELU_SPARSITY
from hwsim.sparsity.profile import LayerZeros, SparsityProfile, default_zero_macs, padded_sparsity
from hwsim.vocab import ceil_div
from hwsim.workload.ir import Graph, Layer, LayerKind, require_images

if TYPE_CHECKING:  # the sparsity model is read by every run; the CNNergy model only when it prices (below)
    from hwsim.analytic.cnnergy import CnnergyLayer

RELU_FAMILY = frozenset({"relu", "relu6", "thresholded_relu"})
"""Activations that output exact zeros for a whole range of inputs."""

# DEFAULT_RELU_SPARSITY (hwsim.sparsity.names, where the command line reads it): the zero fraction after a
# ReLU-family activation when nothing was measured, half the pre-activations negative. Conservative next to
# measured AlexNet layers (0.51-0.91 zeros).

DEFAULT_MAX_BATCH = 18
"""Cap on CNNergy's batch n: the largest batch of the reference AlexNet run (FC layers)."""

ADAPTED_KINDS = frozenset({LayerKind.CONV, LayerKind.FC, LayerKind.CONV_TRANSPOSE})
"""The layers CNNergy prices; every other kind has no CNNergy energy."""

ZERO_PRESERVING_KINDS = frozenset({
    LayerKind.MAX_POOL, LayerKind.AVG_POOL, LayerKind.LRN, LayerKind.CONCAT, LayerKind.SLICE,
    LayerKind.CHANNEL_SHUFFLE, LayerKind.DEPTH_TO_SPACE, LayerKind.UPSAMPLE, LayerKind.PASSTHROUGH,
    LayerKind.OUTPUT,
})
"""Layers whose output is zero where (all of) their window is zero: they keep their input's zero
fraction. For pools that is an upper bound (AlexNet measured: pool1 0.39 after conv1 0.51)."""


# ----- sparsity ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SparsityModel:
    """The fraction of zeros in every tensor, and the sp_if / sp_of CNNergy reads per layer.

    Without measurements: the network input is dense (image pixels), a
    ReLU-family activation leaves `relu_sparsity` zeros, shape-only layers
    and pools keep their input's zeros (concat: element-weighted), a product
    keeps its sparsest factor, and everything else (linear layers, BN, adds,
    softmax, global pools, other activations) is dense. `measured` gives a
    layer's (sp_if, sp_of) as data: its output tensor takes sp_of, and a
    tensor no measured layer produces but a measured layer reads (a pool
    output) takes that reader's sp_if. A derived sp_if also counts the
    padding zeros of the padded ifmap, as the reference does for SqueezeNet;
    a measured one is used as given.
    """

    name: str = "relu"
    relu_sparsity: float = DEFAULT_RELU_SPARSITY
    measured: Mapping[str, tuple[float, float]] = field(default_factory=lambda: MappingProxyType({}))
    source: str = "defaults: dense input, ReLU-family outputs at relu_sparsity zeros"

    def __post_init__(self) -> None:
        _check_fraction("relu_sparsity", self.relu_sparsity)
        for layer, pair in self.measured.items():
            for value in pair:
                _check_fraction(f"measured sparsity of {layer!r}", value)

    def tensor_sparsities(self, graph: Graph) -> dict[str, float]:
        """Zero fraction of every tensor of `graph`, by tensor (= producer) name."""
        measured_inputs = self._measured_input_sparsities(graph)
        zeros: dict[str, float] = {}
        for layer in graph:
            if layer.name in self.measured:
                zeros[layer.output] = self.measured[layer.name][1]
            elif layer.output in measured_inputs:
                zeros[layer.output] = measured_inputs[layer.output]
            else:
                zeros[layer.output] = self._derived_sparsity(layer, zeros)
        return zeros

    def _measured_input_sparsities(self, graph: Graph) -> dict[str, float]:
        """sp_if of measured layers, by the tensor they read (used for tensors nobody measured)."""
        found: dict[str, float] = {}
        for layer in graph:
            if layer.name in self.measured and layer.inputs:
                found.setdefault(layer.inputs[0], self.measured[layer.name][0])
        return found

    def _derived_sparsity(self, layer: Layer, zeros: Mapping[str, float]) -> float:
        """The default rules for a tensor nobody measured."""
        if layer.activation in RELU_FAMILY:
            return self.relu_sparsity
        if layer.kind is LayerKind.INPUT or layer.activation is not None or layer.fused_bn:
            return 0.0
        if layer.kind in ZERO_PRESERVING_KINDS:
            elements = [shape.elements for shape in layer.in_shapes]
            return sum(zeros[t] * n for t, n in zip(layer.inputs, elements)) / max(sum(elements), 1)
        if layer.kind is LayerKind.MUL:
            return max(zeros[t] for t in layer.inputs)
        return 0.0

    def profile(self, graph: Graph) -> SparsityProfile:
        """Every layer's zero fractions under this model, as the simulator and the closed form read them: the
        tensors' zeros (element-weighted over a layer's inputs), the MACs' zeros as `layer_sparsity` gives
        them (a measured sp_if as given, a derived one with the padding), dense filters."""
        zeros = self.tensor_sparsities(graph)
        layers = {}
        for layer in graph:
            if not layer.inputs:
                continue
            sizes = [s.elements for s in layer.in_shapes]
            ifmap = sum(zeros[t] * n for t, n in zip(layer.inputs, sizes)) / max(sum(sizes), 1)
            zero_macs = default_zero_macs(layer, ifmap)
            if layer.name in self.measured:
                ifmap = zero_macs = self.measured[layer.name][0]
            each = tuple(zeros[t] for t in layer.inputs) if len(layer.inputs) > 1 else ()
            layers[layer.name] = LayerZeros(ifmap, 0.0, zeros[layer.output], zero_macs, each)
        kind = "preset" if self.measured else "defaults"
        return SparsityProfile(kind, f"{self.name}: {self.source}", MappingProxyType(layers))

    def layer_sparsity(self, layer: Layer, zeros: Mapping[str, float]) -> tuple[float, float]:
        """(sp_if, sp_of) of a weighted layer: measured, or derived from its tensors and padding."""
        if layer.name in self.measured:
            return self.measured[layer.name]
        sp_if = zeros[layer.inputs[0]]
        if layer.kind is LayerKind.CONV:  # a transposed conv's padding crops its output instead
            sp_if = padded_sparsity(layer, sp_if)
        return sp_if, zeros[layer.output]


def _check_fraction(what: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise NetworkError(f"{what} is a fraction of zeros in [0, 1], got {value}")


ALEXNET_MEASURED = SparsityModel(
    name="alexnet-measured",
    measured=MappingProxyType({
        "conv1": (0.0001, 0.5102), "conv2": (0.3870, 0.8066), "conv3": (0.7250, 0.7244),
        "conv4": (0.7930, 0.7018), "conv5": (0.7760, 0.9050), "fc6": (0.7113, 0.8312),
        "fc7": (0.8312, 0.8125), "fc8": (0.8125, 0.0),
    }),
    source="measured AlexNet sparsities from CNNergy/NeuPart: the reference run's sp_if / sp_of "
           "(ifmap zeros of CONV2-5 as measured on Eyeriss, JSSC 2017)",
)

SPARSITY_PRESETS: Mapping[str, SparsityModel] = MappingProxyType({ALEXNET_MEASURED.name: ALEXNET_MEASURED})


def sparsity_preset(name: str) -> SparsityModel:
    """A named set of measured sparsities; NetworkError listing the names if unknown."""
    try:
        return SPARSITY_PRESETS[name]
    except KeyError:
        raise NetworkError(f"unknown sparsity preset {name!r}; known: {', '.join(SPARSITY_PRESETS)}") from None


def preset_fits(model: SparsityModel, graph: Graph) -> bool:
    """Whether every measured layer of `model` is a weighted layer of `graph` (and vice versa)."""
    weighted = {layer.name for layer in graph if layer.kind in ADAPTED_KINDS}
    return bool(model.measured) and weighted == set(model.measured)


# ----- layer shapes -----------------------------------------------------------------------------


@dataclass(frozen=True)
class AdaptedLayer:
    """A graph layer in CNNergy's form: `layer` priced `copies` times.

    `copies` is the group count of a depthwise layer times width / height of
    a non-square map (1 for AlexNet). `convention` says which rule of the
    module docstring built it, for reports.
    """

    source: str
    layer: CnnergyLayer
    copies: float
    convention: str

    @property
    def macs(self) -> float:
        """MACs per image as CNNergy runs them (enclosing-square taps included)."""
        return self.layer.macs * self.copies


@dataclass(frozen=True)
class _Shape:
    """R, M, H, C, U, E and the energy multiplier, before sparsity and batch."""

    R: int
    M: int
    H: int
    C: int
    U: int
    E: int
    copies: float
    convention: str


def _consistent_height(padded_h: int, r: int, u: int, e: int) -> int:
    """The padded height if (H − R) // U + 1 = E holds, else the rows E outputs read, (E − 1)·U + R."""
    if padded_h >= r and (padded_h - r) // u + 1 == e:
        return padded_h
    return (e - 1) * u + r


def _map_aspect(layer: Layer) -> float:
    """Ofmap width / height: the multiplier for a non-square map priced by its height."""
    return layer.out_shape.w / layer.out_shape.h


def _conv_shape(layer: Layer) -> _Shape:
    """A (grouped, depthwise, dilated, non-square) convolution as a square CNNergy layer."""
    kh, kw = layer.kernel
    r = max(kh, kw)
    padded_h = layer.in_shape.h + layer.padding.top + layer.padding.bottom
    e, u = layer.out_shape.h, layer.stride[0]
    h = _consistent_height(padded_h, r, u, e)
    aspect = _map_aspect(layer)
    if layer.is_depthwise:
        return _Shape(r, layer.out_shape.c // layer.groups, h, 1, u, e, layer.groups * aspect,
                      "depthwise: one group priced groups times")
    convention = "grouped: one group's channels, all filters" if layer.groups > 1 else "conv"
    return _Shape(r, layer.out_shape.c, h, layer.in_shape.c // layer.groups, u, e, aspect, convention)


def _fc_shape(layer: Layer, hw: Accelerator) -> _Shape:
    """FC as an R = H convolution over its input map, or over the flattened input."""
    shape = layer.in_shape
    if shape.h == shape.w and _fits_row_stationary(shape.h, hw):
        return _Shape(shape.h, layer.out_shape.c, shape.h, shape.c, 1, 1, 1.0, "fc as R = H conv")
    return _Shape(1, layer.out_shape.c, 1, shape.elements, 1, 1, 1.0, "fc on the flattened input")


def _transposed_shape(layer: Layer) -> _Shape:
    """A transposed conv as a stride-1 conv over the zero-stuffed input (zeros go to sp_if)."""
    r = max(layer.kernel)
    e = layer.out_shape.h
    return _Shape(r, layer.out_shape.c, e + r - 1, layer.in_shape.c // layer.groups, 1, e, _map_aspect(layer),
                  "transposed conv over the zero-stuffed input")


def _fits_row_stationary(r: int, hw: Accelerator) -> bool:
    """A filter row fits an ifmap RF and R filter rows fit the PE array's height."""
    return hw.pe_array.rf is not None and r <= hw.pe_array.rows and r <= hw.pe_array.rf.ifmap_words


def _im2col(shape: _Shape) -> _Shape:
    """A filter too large for the PE array, lowered to a 1×1 conv over the unfolded ifmap."""
    return _Shape(1, shape.M, shape.E, shape.C * shape.R * shape.R, 1, shape.E, shape.copies,
                  f"{shape.convention}; R={shape.R} too large for the PE array, lowered to 1x1 (im2col)")


def _layer_shape(layer: Layer, hw: Accelerator) -> _Shape:
    """The CNNergy shape of a weighted layer, with the im2col fallback for oversized filters."""
    if layer.kind is LayerKind.FC:
        return _fc_shape(layer, hw)
    shape = _transposed_shape(layer) if layer.kind is LayerKind.CONV_TRANSPOSE else _conv_shape(layer)
    return shape if _fits_row_stationary(shape.R, hw) else _im2col(shape)


def _stuffed_sparsity(layer: Layer, shape: _Shape, sparsity: float) -> float:
    """Zero fraction of a transposed conv's zero-stuffed, padded input (one map of H × W + R − 1)."""
    stuffed_area = shape.H * (layer.out_shape.w + shape.R - 1)
    density = (1.0 - sparsity) * layer.in_shape.h * layer.in_shape.w / stuffed_area
    return 1.0 - min(density, 1.0)


def adapt_layer(layer: Layer, sparsity: tuple[float, float], first_layer: bool, hw: Accelerator,
                batch: int = 1) -> AdaptedLayer | None:
    """One IR layer in CNNergy's form (None if it has no weights), for the given (sp_if, sp_of)."""
    from hwsim.analytic.cnnergy import CnnergyLayer

    if layer.kind not in ADAPTED_KINDS:
        return None
    shape = _layer_shape(layer, hw)
    sp_if, sp_of = sparsity
    if layer.kind is LayerKind.CONV_TRANSPOSE:
        sp_if = _stuffed_sparsity(layer, shape, sp_if)
    cnnergy = CnnergyLayer(name=layer.name, R=shape.R, M=shape.M, H=shape.H, C=shape.C, U=shape.U, E=shape.E,
                           sp_if=sp_if, sp_of=sp_of, n=batch, first_layer=first_layer)
    tile, tiles = _schedulable_tile(cnnergy, hw)
    convention = shape.convention if tiles == 1 else f"{shape.convention}; tiled into {tile.E}x{tile.E} ofmap tiles"
    return AdaptedLayer(layer.name, tile, shape.copies * tiles, convention)


def _schedulable_tile(layer: CnnergyLayer, hw: Accelerator) -> tuple[CnnergyLayer, float]:
    """The layer, or the largest square ofmap tile CNNergy can schedule, and how many tiles cover it.

    CNNergy narrows a pass only while its ifmap alone overflows the GLB; a
    map thousands of pixels wide can still leave no room for one filter's
    psums. Such a layer is split into tiles of ceil(E / 2^k) ofmap rows and
    columns (the ifmap halo re-read per tile, as a tiled accelerator would),
    priced (E / E_tile)² times.
    """
    from hwsim.analytic.cnnergy import cnnergy_schedule

    tile_e = layer.E
    while True:
        tile = replace(layer, H=(tile_e - 1) * layer.U + layer.R, E=tile_e) if tile_e != layer.E else layer
        try:
            cnnergy_schedule(tile, hw)
        except ConfigError:
            if tile_e == 1:
                raise
            tile_e = ceil_div(tile_e, 2)
            continue
        return tile, (layer.E / tile_e) ** 2


# ----- batch ------------------------------------------------------------------------------------


def batch_ladder(proposed: Sequence[int], max_batch: int) -> list[int]:
    """Used batches from proposed ones: a divisibility chain, each value the largest fitting one.

    Images processed together in one layer must regroup without remainder in
    the next, so the used batches must divide one another (the reference
    picks 1, 2, 6, 18 for AlexNet). Going up through the distinct proposals
    (capped at `max_batch`), each step takes the largest multiple of the
    previous rung that does not exceed the proposal; each layer then gets
    the largest rung not above its own proposal.
    """
    if max_batch < 1:
        raise NetworkError(f"the batch cap must be at least 1, got {max_batch}")
    capped = [max(1, min(p, max_batch)) for p in proposed]
    rungs = [1]
    for value in sorted(set(capped)):
        multiple = value // rungs[-1] * rungs[-1]
        if multiple > rungs[-1]:
            rungs.append(multiple)
    return [max(r for r in rungs if r <= value) for value in capped]


def _with_batches(adapted: list[AdaptedLayer | None], hw: Accelerator, max_batch: int) -> list[AdaptedLayer | None]:
    """The reference's second run: every layer at its used batch from the first run's proposals."""
    from hwsim.analytic.cnnergy import cnnergy_schedule

    present = [a for a in adapted if a is not None]
    proposed = [cnnergy_schedule(a.layer, hw).proposed_batch for a in present]
    used = iter(batch_ladder(proposed, max_batch))
    return [None if a is None else replace(a, layer=replace(a.layer, n=next(used))) for a in adapted]


# ----- the whole graph --------------------------------------------------------------------------


def adapt_graph(graph: Graph, sparsity: SparsityModel, hw: Accelerator,
                max_batch: int = DEFAULT_MAX_BATCH) -> list[AdaptedLayer | None]:
    """Every layer of `graph`, in order, in CNNergy's form (None for unweighted layers).

    A layer that reads a network input is a first layer (its ifmap comes
    from DRAM uncompressed). Batches follow `batch_ladder`.
    """
    require_images(graph, "CNNergy's model")
    zeros = sparsity.tensor_sparsities(graph)
    inputs = {layer.output for layer in graph.inputs}
    adapted = [adapt_layer(layer, sparsity.layer_sparsity(layer, zeros), bool(inputs & set(layer.inputs)), hw)
               if layer.kind in ADAPTED_KINDS else None for layer in graph]
    return _with_batches(adapted, hw, max_batch)


def cnnergy_layers(graph: Graph, sparsity: SparsityModel, hw: Accelerator,
                   max_batch: int = DEFAULT_MAX_BATCH) -> list[CnnergyLayer | None]:
    """The CNNergy layer of every graph layer (None for unweighted ones); see `adapt_graph`.

    A depthwise or non-square layer is priced `copies` times; use
    `adapt_graph` to get that multiplier.
    """
    return [None if a is None else a.layer for a in adapt_graph(graph, sparsity, hw, max_batch)]
