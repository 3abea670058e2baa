"""Simulate a network's mapping (hwsim's default or a given one) cycle by cycle into an HDF5 trace, and report
what it did: per-layer counts, energy and utilization, the buffers' peak occupancy and the totals, priced from
the totals a counting sink kept while the records were written (the trace is read back only for queries,
plots and exports)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hwsim.flows.inputs import HardwareLike, MappingLike, NetworkLike, SparsityLike
from hwsim.flows.run import RunSpec, resolve_run
from hwsim.flows.totals import RunTotals
from hwsim.hardware.energy import COMPONENTS
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.nest.format import NetworkMapping
from hwsim.metrics import TraceMetrics
from hwsim.metrics.derive import RunCounts, counted_sums, price
from hwsim.sim.executor import LayerRun, SimResult
from hwsim.sim.run import RecordedRun, record_run
from hwsim.sparsity.profile import SparsityProfile
from hwsim.trace import Trace
from hwsim.vocab import TRACE_LEVELS
from hwsim.workload.ir import Graph

ALL_LEVELS = frozenset(TRACE_LEVELS)
Progress = Callable[[int, LayerRun], None]  # called after each layer with its index and measurements


@dataclass(frozen=True)
class Simulation:
    """A simulated run: its inputs (`spec`), the simulator's per-layer timing, the trace it wrote (of the
    recorded `levels`; None when none was kept) and the report counted as it ran. Totals cover the recorded
    levels; latency is simulated."""

    spec: RunSpec
    trace: Path | None
    levels: frozenset[str]
    result: SimResult
    metrics: TraceMetrics
    peak_occupancy_bytes: dict[str, int]  # per buffer the schedule used
    totals: RunTotals
    unit_names: tuple[str, ...] = ()  # the accelerator's units (`hwsim.hardware.tree.UnitTable`)
    link_words: np.ndarray | None = None  # per unit, the words carried over it (links; 0 elsewhere)

    @property
    def graph(self) -> Graph:
        return self.spec.graph

    @property
    def hardware(self) -> Accelerator:
        return self.spec.hardware

    @property
    def batch(self) -> int:
        return self.spec.batch

    @property
    def mapping(self) -> NetworkMapping:
        """What was simulated, as a loop-nest mapping (`spec.plan` for a plan of another mapper)."""
        return self.spec.mapping

    @property
    def sparsity(self) -> SparsityProfile:
        """The layers' zeros it was simulated with."""
        return self.spec.sparsity

    @property
    def network_macs(self) -> int:
        """The workload's MACs for the batch, whether the PE array's records were kept or not."""
        return self.graph.total_macs * self.batch


def peak_occupancy(trace: Trace) -> dict[str, int]:
    """The most bytes each buffer held, for the buffers the schedule used (read back from a stored trace)."""
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


def default_trace_path(spec: RunSpec) -> Path:
    """traces/NETWORK-CONFIG.h5."""
    return Path("traces") / f"{spec.graph.name}-{spec.hardware.name}.h5"


def record_spec(spec: RunSpec, path: Path | None, levels: frozenset[str] = ALL_LEVELS,
                progress: Progress | None = None) -> RecordedRun:
    """Schedule `spec`'s plan and simulate it on its accelerator, counting the records of `levels` and writing
    them to the trace at `path` (None: no trace); a depth-first, phased or planned plan records DRAM per transfer."""
    per_transaction = frozenset({"dram"}) if spec.mapper.dram_per_transaction else frozenset()
    return record_run(spec.schedule(), spec.hardware, path, levels, sparsity=spec.sparsity, progress=progress,
                      per_transaction=per_transaction)


def run_to_trace(spec: RunSpec, path: Path, levels: frozenset[str] = ALL_LEVELS,
                 progress: Progress | None = None) -> SimResult:
    """`record_spec` into the trace at `path`, for its timing alone."""
    return record_spec(spec, path, levels, progress).result


def counted_metrics(spec: RunSpec, run: RecordedRun) -> TraceMetrics:
    """The report of `run` priced from the totals its counting sink kept: the same sums a trace of it gives
    (`hwsim.metrics.derive`), without reading the records back."""
    sums = counted_sums(run.counts, len(run.layer_names))
    cores = np.array([r.core for r in run.result.layers], dtype=np.int64)
    return price(RunCounts(spec.graph.name, spec.hardware, spec.batch, run.layer_names, run.layer_word_bytes,
                           run.unit_names, sums, run.dram_stats(), cores))


def simulate_run(spec: RunSpec, trace_path: str | Path | None = None, levels: frozenset[str] = ALL_LEVELS,
                 progress: Progress | None = None, keep_trace: bool = True) -> Simulation:
    """Simulate `spec`'s plan into the trace at `trace_path` (default traces/NETWORK-CONFIG.h5; none at all when
    `keep_trace` is false), recording `levels`, and derive the report from the totals counted as it ran."""
    path = (Path(trace_path) if trace_path is not None else default_trace_path(spec)) if keep_trace else None
    run = record_spec(spec, path, levels, progress)
    metrics = counted_metrics(spec, run)
    links = sum((run.counts.words("link", i).sum(axis=(1, 2)) for i in range(len(run.layer_names))),
                np.zeros(len(run.unit_names), dtype=np.int64))
    return Simulation(spec, path, levels, run.result, metrics, run.peak_occupancy_bytes(),
                      trace_totals(metrics, run.result), run.unit_names, links)


def simulate_network(network: NetworkLike, hw: HardwareLike, batch: int = 1, trace_path: str | Path | None = None,
                     levels: frozenset[str] = ALL_LEVELS, progress: Progress | None = None,
                     mapping: MappingLike = None, sparsity: SparsityLike = None,
                     bits: int | None = None) -> Simulation:
    """`simulate_run` of the run these inputs resolve to (`resolve_run`): `mapping` (default: hwsim's for `batch`
    images) with the zeros of `sparsity` (None: dense) at `bits`-bit words (default: the graph's declared width,
    else the config's)."""
    return simulate_run(resolve_run(network, hw, batch, mapping, sparsity, bits), trace_path, levels, progress)


__all__ = ["ALL_LEVELS", "Progress", "Simulation", "counted_metrics", "default_trace_path", "peak_occupancy",
           "record_spec", "run_to_trace", "simulate_network", "simulate_run", "trace_totals"]
