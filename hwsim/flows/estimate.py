"""Closed-form estimates of a network on an accelerator, in a second.

`estimate_mapping` prices the closed-form counts of the mapping the simulator runs (hwsim's default, or a given
one);
`estimate_cnnergy` is the faithful CNNergy model (fractional passes, RLC-compressed DRAM traffic), on a
network or on a CNNergy layer table; `sweep_glb_size` repeats either over GLB ifmap+psum capacities,
the access energy following the config's size law.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING

from hwsim.analytic.estimate import NetworkEstimate, estimate_network
from hwsim.errors import ConfigError, HwsimError, NetworkError
from hwsim.flows.inputs import HardwareLike, MappingLike, NetworkLike, SparsityLike, as_graph, as_hardware
from hwsim.flows.run import RunSpec, resolve_run, with_control
from hwsim.flows.totals import RunTotals
from hwsim.hardware.energy import COMPONENTS, with_glb_data_size
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.nest.format import NetworkMapping
from hwsim.workload.ir import Graph

if TYPE_CHECKING:  # the faithful CNNergy model is imported when it is asked for (`hwsim estimate` starts faster)
    from hwsim.analytic.cnnergy import CnnergyEnergy, CnnergyNetworkResult
    from hwsim.analytic.graph_adapter import SparsityModel

MODELS = ("mapping", "cnnergy")
SIZE_QUANTUM_BYTES = 8  # swept sizes are whole 8-byte lines: a whole number of words at any precision


# ----- row-stationary ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class MappingEstimate:
    """The closed-form estimate of a mapping, the hardware it priced (clock overrides applied), the mapping and
    the network totals (latency: the layer-by-layer bound)."""

    estimate: NetworkEstimate
    hardware: Accelerator
    totals: RunTotals
    mapping: NetworkMapping


def estimate_totals(e: NetworkEstimate) -> RunTotals:
    """Energy by component, the latency bound, DRAM bytes and MACs of an estimate."""
    return RunTotals({c: e.total_pj(c) for c in COMPONENTS}, e.cycles, sum(l.dram_bytes for l in e.layers),
                     sum(l.counts.macs for l in e.layers))


def estimate_run(spec: RunSpec) -> MappingEstimate:
    """Price the spec's loop-nest mapping from its closed-form counts (with its layers' zeros, at its words)."""
    e = estimate_network(spec.graph, spec.hardware, spec.mapping, spec.sparsity)
    return MappingEstimate(e, spec.hardware, estimate_totals(e), spec.mapping)


def estimate_mapping(network: NetworkLike, hw: HardwareLike, batch: int = 1, sparsity: SparsityLike = None,
                     clock_power_w: float | None = None, throughput_gmacs: float | None = None,
                     mapping: MappingLike = None, bits: int | None = None) -> MappingEstimate:
    """`estimate_run` of the run these inputs resolve to (`resolve_run`): `mapping` (default: hwsim's for `batch`
    images) with the zeros of `sparsity` (a model of defaults, a profile; None: dense) and `bits`-bit words
    (default: the graph's declared width, else the config's)."""
    return estimate_run(resolve_run(network, hw, batch, mapping, sparsity, bits, clock_power_w, throughput_gmacs))


# ----- faithful CNNergy -------------------------------------------------------------------------------


@dataclass(frozen=True)
class CnnergyEstimate:
    """The faithful model's result on `source` (a network or a layer table), with each layer's
    multiplicity (depthwise groups, non-square maps) and name; energies are per image."""

    source: str
    hardware: str
    result: CnnergyNetworkResult
    copies: tuple[float, ...]
    names: tuple[str, ...]

    def layer_energies(self) -> tuple[CnnergyEnergy, ...]:
        """Each layer's energy times its multiplicity."""
        return tuple(scaled(r.energy, k) for r, k in zip(self.result.layers, self.copies))

    def total(self) -> CnnergyEnergy:
        from hwsim.analytic.cnnergy import ZERO_ENERGY

        return sum(self.layer_energies(), ZERO_ENERGY)


def scaled(e: CnnergyEnergy, k: float) -> CnnergyEnergy:
    """Every energy of `e` times `k`."""
    return replace(e, **{f.name: getattr(e, f.name) * k for f in fields(e) if f.name.endswith("_pj")})


@dataclass(frozen=True)
class LayerTable:
    """A CNNergy layer table file (name,R,M,H,C,U,E,sp_if,sp_of,n): what the faithful model can price
    instead of a network."""

    path: str


def cnnergy_sparsity(sparsity: SparsityLike) -> SparsityModel | None:
    """`sparsity` as the faithful model takes it: defaults or a preset (its layers are CNNergy's), or dense."""
    from hwsim.analytic.graph_adapter import SparsityModel

    if sparsity is None or isinstance(sparsity, SparsityModel):
        return sparsity
    raise HwsimError("the cnnergy model takes sparsity none, auto, relu or a preset; a profile or measured zeros "
                     "are for the mapping model")


def estimate_cnnergy(source: NetworkLike | LayerTable, hw: HardwareLike, sparsity: SparsityModel | None = None,
                     clock_power_w: float | None = None, throughput_gmacs: float | None = None) -> CnnergyEstimate:
    """Faithful CNNergy on a layer table, or on a network's conv and fully connected layers with the
    activation zeros of `sparsity` (None: dense)."""
    from hwsim.analytic.cnnergy import cnnergy_network, read_layer_table
    from hwsim.analytic.graph_adapter import SparsityModel, adapt_graph

    accelerator = as_hardware(hw)
    if isinstance(source, LayerTable):
        layers = read_layer_table(source.path)
        result = cnnergy_network(layers, accelerator, clock_power_w, throughput_gmacs)
        return CnnergyEstimate(source.path, accelerator.name, result, tuple(1.0 for _ in layers),
                               tuple(l.name for l in layers))
    graph = as_graph(source)
    dense = SparsityModel(relu_sparsity=0.0)  # no zeros anywhere
    adapted = [a for a in adapt_graph(graph, sparsity or dense, accelerator) if a is not None]
    if not adapted:
        raise NetworkError(f"{graph.name}: no conv or fully connected layer for CNNergy to price")
    result = cnnergy_network([a.layer for a in adapted], accelerator, clock_power_w, throughput_gmacs)
    return CnnergyEstimate(graph.name, accelerator.name, result, tuple(a.copies for a in adapted),
                           tuple(a.layer.name for a in adapted))


# ----- GLB size sweep ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class GlbSizePoint:
    """One GLB ifmap+psum capacity: its access energy and the energy per image (None: some layer's
    smallest tile does not fit, `error` says which)."""

    data_bytes: int
    glb_read_energy_pj: float
    energy_per_image_pj: float | None
    dram_pj: float | None
    glb_pj: float | None
    error: str | None


@dataclass(frozen=True)
class GlbSizeSweep:
    """Energy per image against the GLB's ifmap+psum capacity under one model."""

    model: str
    source: str
    hardware: Accelerator  # the base config; its GLB size and exponent define the energy-size law
    points: tuple[GlbSizePoint, ...]

    @property
    def optimum(self) -> GlbSizePoint:
        """The size of least energy per image (the first of equals)."""
        return min((p for p in self.points if p.energy_per_image_pj is not None),
                   key=lambda p: p.energy_per_image_pj or 0.0)


def glb_sizes(low_bytes: int, high_bytes: int, points: int | None = None) -> tuple[int, ...]:
    """Sizes from `low_bytes` to `high_bytes`: doubling steps (and the top), or `points` geometric steps
    rounded to whole 8-byte lines."""
    if not 0 < low_bytes < high_bytes or (points is not None and points < 2):
        raise ConfigError(f"glb.size {low_bytes}..{high_bytes} B in {points or 'doubling'} steps: give "
                          "0 < LOW < HIGH and at least 2 points")
    if points is not None:
        values = [SIZE_QUANTUM_BYTES * round(low_bytes * (high_bytes / low_bytes) ** (k / (points - 1))
                                             / SIZE_QUANTUM_BYTES) for k in range(points)]
    else:
        values = [low_bytes * 2**k for k in range(int(math.log2(high_bytes / low_bytes) + 1e-9) + 1)]
        if values[-1] != high_bytes:
            values.append(high_bytes)
    return tuple(sorted(set(values)))


@dataclass(frozen=True)
class EstimateSettings:
    """What a GLB sweep holds fixed: the model and its inputs."""

    model: str = "mapping"
    batch: int = 1  # rs only
    sparsity: SparsityLike = None  # cnnergy: a SparsityModel or None
    clock_power_w: float | None = None
    throughput_gmacs: float | None = None


def _per_image(source: Graph | LayerTable, hw: Accelerator, s: EstimateSettings) -> tuple[float, float, float]:
    """(total, DRAM, GLB) energy per image under the settings' model."""
    if s.model == "cnnergy":
        total = estimate_cnnergy(source, hw, cnnergy_sparsity(s.sparsity), s.clock_power_w, s.throughput_gmacs).total()
        return total.total_pj, total.dram_pj, total.glb_pj
    assert not isinstance(source, LayerTable)  # sweep_glb_size allows a table with the cnnergy model only
    e = estimate_mapping(source, hw, s.batch, s.sparsity, s.clock_power_w, s.throughput_gmacs).estimate
    return e.total_pj() / e.batch, e.total_pj("dram") / e.batch, e.total_pj("glb") / e.batch


def sweep_glb_size(source: NetworkLike | LayerTable, hw: HardwareLike, sizes_bytes: tuple[int, ...],
                   settings: EstimateSettings = EstimateSettings()) -> GlbSizeSweep:
    """Energy per image at every GLB ifmap+psum capacity of `sizes_bytes` (in the settings' model). A
    size some layer cannot be mapped into is a point with its error; ConfigError when no size can run
    the network."""
    if not sizes_bytes:
        raise ConfigError("a GLB size sweep needs at least one size")
    if settings.model not in MODELS:
        raise ConfigError(f"model {settings.model!r}: choose one of {', '.join(MODELS)}")
    if isinstance(source, LayerTable) and settings.model != "cnnergy":
        raise NetworkError(f"{source.path}: a CNNergy layer table needs the cnnergy model")
    base = as_hardware(hw)
    network = source if isinstance(source, LayerTable) else as_graph(source)
    points = []
    for size in sizes_bytes:
        swept = with_glb_data_size(base, size)
        try:
            total, dram, glb = _per_image(network, swept, settings)
            points.append(GlbSizePoint(size, swept.glb.read_energy_pj, total, dram, glb, None))
        except HwsimError as exc:  # a GLB too small for some layer's smallest tile
            points.append(GlbSizePoint(size, swept.glb.read_energy_pj, None, None, None, str(exc)))
    if all(p.energy_per_image_pj is None for p in points):
        raise ConfigError(f"glb.size {sizes_bytes[0]}..{sizes_bytes[-1]} B: no size in the range can run the "
                          "network; raise the sizes")
    name = network.path if isinstance(network, LayerTable) else network.name
    return GlbSizeSweep(settings.model, name, base, tuple(points))


__all__ = [
    "MODELS",
    "CnnergyEstimate",
    "EstimateSettings",
    "GlbSizePoint",
    "GlbSizeSweep",
    "LayerTable",
    "MappingEstimate",
    "cnnergy_sparsity",
    "estimate_cnnergy",
    "estimate_mapping",
    "estimate_totals",
    "glb_sizes",
    "scaled",
    "sweep_glb_size",
    "with_control",
]
