"""Simulate a network's mapping (hwsim's default or a given one) cycle by cycle into an HDF5 trace, and read
back what the trace gives: per-layer counts, energy and utilization, the buffers' peak occupancy and the
totals."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import hwsim.trace
from hwsim.flows.inputs import (
    HardwareLike,
    MappingLike,
    NetworkLike,
    SparsityLike,
    as_graph,
    as_hardware,
    as_mapping,
    as_profile,
)
from hwsim.flows.precision import run_precision
from hwsim.flows.totals import RunTotals
from hwsim.hardware.energy import COMPONENTS
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.mapper import network_schedule
from hwsim.mapping.nest.format import NetworkMapping
from hwsim.metrics import TraceMetrics, derive
from hwsim.sim.executor import LayerRun, SimResult
from hwsim.sim.run import simulate_to_trace
from hwsim.sparsity.profile import DENSE, SparsityProfile
from hwsim.trace import Trace
from hwsim.vocab import TRACE_LEVELS
from hwsim.workload.ir import Graph

ALL_LEVELS = frozenset(TRACE_LEVELS)
Progress = Callable[[int, LayerRun], None]  # called after each layer with its index and measurements


@dataclass(frozen=True)
class Simulation:
    """A simulated run of `batch` images: the simulator's per-layer timing, the trace it wrote (of the
    recorded `levels`) and what the trace gives. Totals cover the recorded levels; latency is simulated."""

    graph: Graph
    hardware: Accelerator
    batch: int
    trace: Path
    levels: frozenset[str]
    result: SimResult
    metrics: TraceMetrics
    peak_occupancy_bytes: dict[str, int]  # per buffer the schedule used
    totals: RunTotals
    mapping: NetworkMapping  # what was simulated
    sparsity: SparsityProfile = DENSE  # the layers' zeros it was simulated with

    @property
    def network_macs(self) -> int:
        """The workload's MACs for the batch, whether the PE array's records were kept or not."""
        return self.graph.total_macs * self.batch


def peak_occupancy(trace: Trace) -> dict[str, int]:
    """The most bytes each buffer held, for the buffers the schedule used."""
    occ = trace.occupancy()
    peaks = {}
    for b, name in enumerate(trace.buffers):
        held = occ["bytes"][occ["buffer"] == b]
        if len(held):
            peaks[name] = int(np.max(held))
    return peaks


def trace_totals(metrics: TraceMetrics, result: SimResult) -> RunTotals:
    """Energy by component, simulated cycles, DRAM bytes and MACs of a run, from its trace."""
    parts = dict.fromkeys([*COMPONENTS, *(k for l in metrics.layers for k in l.energy_pj)])  # links' when present
    energy = {c: sum(l.energy_pj.get(c, 0.0) for l in metrics.layers) for c in parts}
    return RunTotals(energy, result.cycles, sum(l.dram_bytes for l in metrics.layers),
                     sum(l.compute.macs for l in metrics.layers))


def simulate_network(network: NetworkLike, hw: HardwareLike, batch: int = 1, trace_path: str | Path | None = None,
                     levels: frozenset[str] = ALL_LEVELS, progress: Progress | None = None,
                     mapping: MappingLike = None, sparsity: SparsityLike = None,
                     bits: int | None = None) -> Simulation:
    """Simulate `mapping` (default: hwsim's for `batch` images) with the layers' zeros of `sparsity` (None:
    dense), recording `levels` to the trace at `trace_path` (default traces/NETWORK-CONFIG.h5), and derive the
    report from the trace; words are `bits` wide (default: the graph's declared width, else the config's)."""
    graph, accelerator = run_precision(as_graph(network), as_hardware(hw), bits)
    profile = as_profile(sparsity, graph) or DENSE
    chosen = as_mapping(mapping, graph, accelerator, batch, profile)
    path = Path(trace_path) if trace_path is not None else Path("traces") / f"{graph.name}-{accelerator.name}.h5"
    schedule = network_schedule(graph, accelerator, chosen.batch, chosen, profile)
    result = simulate_to_trace(schedule, accelerator, path, levels, sparsity=profile, progress=progress)
    with hwsim.trace.open(path) as trace:
        metrics = derive(trace)
        peaks = peak_occupancy(trace)
    return Simulation(graph, accelerator, chosen.batch, path, levels, result, metrics, peaks,
                      trace_totals(metrics, result), chosen, profile)


__all__ = ["ALL_LEVELS", "Progress", "Simulation", "peak_occupancy", "simulate_network", "trace_totals"]
