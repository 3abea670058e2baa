"""Energy and latency bounds from a mapping's closed-form counts: the fast answer `hwsim estimate` prints.

Counts come from the mapping alone (`hwsim.analytic.nest_counts`: loop nests
by tile analysis, streamed layers by their pieces) and the layer's zeros (a
`hwsim.sparsity.profile.SparsityProfile`). Energy prices every access of
`counts.LayerCounts` with the config's energy table (`hwsim.hardware.energy`):
a MAC a zero ifmap word gated or skipped (the config's `zero_gating`,
`zero_skipping`) costs neither its MAC nor its filter RF read. The clock
and static power are drawn for the layer's latency bound (the closed form's
own latency; CNNergy's faithful model, `hwsim.analytic.cnnergy`, keeps its
P_clk per MAC at the reference throughput); other control is
`other_fraction` of the on-chip total.

Latency lower bound per layer: the largest of the compute cycles (each pass
spread evenly over its active PEs, plus fill/drain) and each resource's
transfer cycles (DRAM bytes / bandwidth, GLB words / (ports · words per
port), NoC bus words · bits / width): whatever overlaps, a layer cannot
finish sooner than its busiest resource.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hwsim.analytic.counts import LayerCounts
from hwsim.analytic.nest_counts import empty_counts, nest_counts, streamed_counts
from hwsim.hardware.energy import EnergyTable, energy_table
from hwsim.hardware.precision import layer_hardware
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.nest.format import LayerMapping, LoopNest, NetworkMapping, Streamed
from hwsim.sparsity.profile import DENSE, DENSE_LAYER, LayerZeros, SparsityProfile
from hwsim.vocab import LEVEL_NAMES, OPERAND_NAMES, Access, Level, Operand
from hwsim.workload.ir import Graph, Layer, LayerKind


@dataclass(frozen=True)
class LatencyBound:
    """Cycles each resource needs for one layer; the layer takes at least the largest."""

    compute_cycles: int  # passes on the PE array, fill/drain included
    dram_cycles: int  # DRAM bytes / peak bandwidth
    glb_cycles: int  # GLB word accesses / (ports · words per port)
    noc_cycles: int  # the busiest of the ifmap, filter and psum buses
    bound_cycles: int  # the maximum of the above
    bottleneck: str  # which resource sets the bound
    utilization: float  # MACs / (bound · PEs · MACs per cycle): how busy the array can be at best


@dataclass(frozen=True)
class LayerEstimate:
    """One layer: mapping, counts, energy by component and by level × operand, latency bound."""

    layer: Layer
    mapping: dict[str, object]
    counts: LayerCounts
    ifmap_zero_fraction: float  # of its MACs, those whose ifmap word is zero (what gating and skipping spare)
    energy_pj: dict[str, float]  # by hwsim.hardware.energy.COMPONENTS
    level_operand_pj: np.ndarray  # [Level, Operand] energy of the accesses at each level
    latency: LatencyBound
    word_bytes: int  # of the word the layer runs at

    @property
    def total_pj(self) -> float:
        return sum(self.energy_pj.values())

    @property
    def dram_bytes(self) -> int:
        """Bytes the layer moves to and from DRAM (words at its own word)."""
        return int(self.counts.transfers[Level.DRAM].sum()) * self.word_bytes


@dataclass(frozen=True)
class NetworkEstimate:
    """A whole network on one accelerator, for `batch` images."""

    network: str
    hardware: str
    batch: int
    clock_hz: float
    layers: tuple[LayerEstimate, ...]

    def total_pj(self, component: str | None = None) -> float:
        if component is None:
            return sum(l.total_pj for l in self.layers)
        return sum(l.energy_pj[component] for l in self.layers)

    @property
    def cycles(self) -> int:
        """Latency bound of the network run layer after layer."""
        return sum(l.latency.bound_cycles for l in self.layers)


def layer_energy(c: LayerCounts, table: EnergyTable, cycles: int) -> tuple[dict[str, float], np.ndarray]:
    """Energy by component and the [Level, Operand] energy of one layer's counts taking `cycles` (pJ)."""
    return table.price(c.transfers, c.compute, cycles)


def bus_cycles(t: np.ndarray, hw: Accelerator) -> dict[str, int]:
    """Cycles each NoC bus carries the words of a [level, operand, access] count table: ifmaps and filters
    into the RFs on theirs, psums in and out on the psum bus, or out (and ofmaps leaving the RFs) on the psum
    output bus when the NoC has one."""
    bits, noc = hw.precision_bits, hw.noc
    psum_in = int(t[Level.RF, Operand.PSUM, Access.FILL])
    psum_out = int(t[Level.RF, Operand.PSUM].sum() + t[Level.RF, Operand.OFMAP].sum()) - psum_in
    words = {"ifmap": (int(t[Level.RF, Operand.IFMAP, Access.FILL]), noc.ifmap_bus_bits),
             "filter": (int(t[Level.RF, Operand.FILTER, Access.FILL]), noc.filter_bus_bits)}
    if noc.psum_out_bus_bits:
        words |= {"psum": (psum_in, noc.psum_bus_bits), "psum_out": (psum_out, noc.psum_out_bus_bits)}
    else:
        words["psum"] = (psum_in + psum_out, noc.psum_bus_bits)
    return {bus: math.ceil(n * bits / width) for bus, (n, width) in words.items()}


def latency_bound(c: LayerCounts, hw: Accelerator) -> LatencyBound:
    """The per-resource cycles of one layer and their maximum (see module docstring)."""
    t = c.transfers
    dram_bytes = int(t[Level.DRAM].sum()) * hw.word_bytes
    dram = math.ceil(dram_bytes / hw.dram.bandwidth_bytes_per_cycle)
    glb = math.ceil(int(t[Level.GLB].sum()) / (hw.glb.ports * hw.glb.words_per_port))
    noc = max(bus_cycles(t, hw).values())
    parts = {"compute": c.compute_cycles, "dram": dram, "glb": glb, "noc": noc}
    bottleneck = max(parts, key=lambda k: parts[k])
    bound = parts[bottleneck]
    lanes = hw.pe_array.pes * hw.pe_array.macs_per_cycle
    utilization = c.macs / (bound * lanes) if bound else 0.0
    return LatencyBound(c.compute_cycles, dram, glb, noc, bound, bottleneck, utilization)


def mapping_summary(entry: LayerMapping | None) -> dict[str, object]:
    """The mapping a report shows: the loop nest level by level, or the pieces a streamed layer moves."""
    if entry is None:
        return {"mapping": "none"}
    if isinstance(entry, Streamed):
        return {"mapping": "stream", "tiles": entry.tiles}
    out: dict[str, object] = {"mapping": "nest", "lowering": entry.lowering}
    for storage in entry.storage:
        out[storage.level] = " ".join(str(l) for l in storage.loops)
    out["rows"] = " ".join(str(l) for l in entry.array.rows)
    out["cols"] = " ".join(str(l) for l in entry.array.cols)
    out["stream"] = " ".join(str(l) for l in entry.array.stream)
    out["rf"] = " ".join(str(l) for l in entry.rf.loops)
    return out


def layer_counts(layer: Layer, entry: LayerMapping | None, hw: Accelerator, batch: int,
                 zeros: LayerZeros = DENSE_LAYER) -> LayerCounts:
    """The closed-form counts of one layer as its mapping entry says (none: nothing to run), with its zeros."""
    if entry is None:
        return empty_counts(layer)
    if isinstance(entry, LoopNest):
        return nest_counts(layer, entry, batch, hw, zeros)
    return streamed_counts(layer, entry, hw, batch, zeros)


def estimate_layer(layer: Layer, entry: LayerMapping | None, hw: Accelerator, batch: int, table: EnergyTable,
                   zeros: LayerZeros) -> LayerEstimate:
    """Counts, energy and latency bound of one layer."""
    counts = layer_counts(layer, entry, hw, batch, zeros)
    latency = latency_bound(counts, hw)
    energy, by_level = layer_energy(counts, table, latency.bound_cycles)
    return LayerEstimate(layer, mapping_summary(entry), counts, zeros.zero_macs, energy, by_level, latency,
                         hw.word_bytes)


def estimate_network(graph: Graph, hw: Accelerator, mapping: NetworkMapping,
                     sparsity: SparsityProfile | None = None) -> NetworkEstimate:
    """Every layer of `graph` as `mapping` maps it, with the zeros of `sparsity` (default dense); each layer on
    `hw` at its own word (`Layer.word_bits`: mixed precision)."""
    profile = sparsity or DENSE
    entries = {m.layer: m for m in mapping.layers}
    views = {bits: layer_hardware(hw, bits) for bits in {l.word_bits for l in graph}}
    tables = {bits: energy_table(view) for bits, view in views.items()}
    layers = tuple(estimate_layer(l, entries.get(l.name), views[l.word_bits], mapping.batch, tables[l.word_bits],
                                  profile.zeros(l.name))
                   for l in graph if l.kind not in (LayerKind.INPUT, LayerKind.OUTPUT))
    return NetworkEstimate(graph.name, hw.name, mapping.batch, hw.clock_hz, layers)


def layer_record(e: LayerEstimate) -> dict[str, object]:
    """One layer as plain data (JSON): counts per level × operand × access, energy, latency."""
    c = e.counts
    accesses = c.accesses
    return {
        "name": e.layer.name,
        "kind": str(e.layer.kind),
        "mapping": e.mapping,
        "macs": c.macs,
        "ops": c.ops,
        "passes": c.passes,
        "ifmap_zero_fraction": e.ifmap_zero_fraction,
        "gated_macs": c.gated_macs,
        "accesses_words": {
            LEVEL_NAMES[lv]: {OPERAND_NAMES[op]: {a.name.lower(): int(accesses[lv, op, a]) for a in Access}
                              for op in range(len(Operand)) if accesses[lv, op].any()}
            for lv in range(len(Level)) if accesses[lv].any()
        },
        "inter_pe_words": c.inter_pe_words,
        "word_bits": 8 * e.word_bytes,
        "dram_bytes": e.dram_bytes,
        "energy_pj": e.energy_pj,
        "energy_by_level_operand_pj": {
            LEVEL_NAMES[lv]: {OPERAND_NAMES[op]: float(e.level_operand_pj[lv, op]) for op in range(len(Operand))
                              if e.level_operand_pj[lv, op]}
            for lv in range(len(Level)) if e.level_operand_pj[lv].any()
        },
        "total_energy_pj": e.total_pj,
        "latency_cycles": {"compute": e.latency.compute_cycles, "dram": e.latency.dram_cycles,
                           "glb": e.latency.glb_cycles, "noc": e.latency.noc_cycles,
                           "bound": e.latency.bound_cycles},
        "bottleneck": e.latency.bottleneck,
        "utilization": e.latency.utilization,
    }
