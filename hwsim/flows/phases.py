"""Phases: each layer split into phases that start as soon as their input rows exist (thesis Algorithm 3
or paper Algorithm 1), the network as a CSDF graph, every edge buffer for one phase per layer and for
the phased execution, both timed by Eq. 2, and both simulated on the L2 to compare each buffer's peak."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from hwsim.analytic.csdf import (
    BufferSizes,
    PhaseTiming,
    buffer_sizes,
    deadlocked_actors,
    phase_cycles,
    phase_timing,
    repetition_vector,
    sdf3_xml,
    to_csdf,
)
from hwsim.analytic.memplan import Buffer, place_in_l2
from hwsim.check.memory import BufferCheck, compare_phased, trace_memory
from hwsim.flows.inputs import HardwareLike, NetworkLike, as_graph, as_hardware
from hwsim.flows.run import RunSpec
from hwsim.flows.simulate import run_to_trace
from hwsim.hardware.precision import at_precision
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.phased import PhasedGraph
from hwsim.mapping.phases import derive_phases, phased_graph
from hwsim.mapping.plans import PhasePlan
from hwsim.workload.ir import Graph, require_images


@dataclass(frozen=True)
class PhasedResult:
    """One phased execution analysed: its graph, buffers, which edges live in DRAM, Eq. 2 timing."""

    pg: PhasedGraph
    sizes: BufferSizes
    in_dram: frozenset[int]
    timing: PhaseTiming


@dataclass(frozen=True)
class BufferSimulation:
    """A memory schedule simulated: its trace, cycles, and each named buffer's (or extent's) analysed
    bytes against the trace's."""

    trace: Path
    cycles: int
    latency_s: float
    buffers: tuple[BufferCheck, ...]

    @property
    def ok(self) -> bool:
        return all(c.equal for c in self.buffers)


def analysis_precision(hw: Accelerator, bits: int | None, simulate: bool) -> tuple[Accelerator, int]:
    """The accelerator and precision to analyse at: `bits`, else the config's; a simulation at other bits runs,
    and is analysed, on the config rescaled to them (`hwsim.hardware.precision`)."""
    chosen = bits or hw.precision_bits
    return (at_precision(hw, chosen) if simulate else hw), chosen


def dram_edges(sizes: BufferSizes, pg: PhasedGraph, hw: Accelerator, word_bytes: int) -> frozenset[int]:
    """Edge buffers left in DRAM: none when all fit the L2, else those the knapsack does not place there
    (traffic of an edge: its tensor written once and read once)."""
    if hw.l2 is None:
        return frozenset(range(len(pg.edges)))
    if sizes.total_bytes <= hw.l2.size_bytes:
        return frozenset()
    buffers = tuple(Buffer(e.name, 0, b, 2 * e.rows * e.row_elements * word_bytes)
                    for e, b in zip(pg.edges, sizes.bytes_))
    placement = place_in_l2(buffers, hw.l2.size_bytes)
    return frozenset(e for e, chosen in enumerate(placement.in_l2) if not chosen)


def analyse_phases(graph: Graph, phases: Mapping[str, int], hw: Accelerator, bits: int) -> PhasedResult:
    """Buffers, DRAM placement and Eq. 2 timing of `graph` run with `phases` per layer."""
    pg = phased_graph(graph, dict(phases))
    sizes = buffer_sizes(to_csdf(pg, bits), len(pg.edges))
    in_dram = dram_edges(sizes, pg, hw, bits // 8)
    return PhasedResult(pg, sizes, in_dram, phase_timing(pg, hw, in_dram))


def phase_plan(result: PhasedResult, hw: Accelerator, rule: str, bits: int) -> PhasePlan:
    """An analysed phased execution as a plan: its phases, and the edges the placement left in DRAM."""
    graph = result.pg.graph
    s = graph.layers[0].out_shape
    return PhasePlan(graph.name, hw.name, (s.c, s.h, s.w), rule, bits, tuple(result.pg.phases.items()),
                     tuple(result.pg.edges[e].name for e in sorted(result.in_dram)))


def simulate_phased(result: PhasedResult, hw: Accelerator, trace_path: str | Path, rule: str = "thesis",
                    bits: int | None = None) -> BufferSimulation:
    """Run a phased plan (edge buffers in the L2 unless placed in DRAM) and compare each buffer's peak."""
    plan = phase_plan(result, hw, rule, bits or hw.precision_bits)
    spec = RunSpec(result.pg.graph, hw, 1, plan)
    path = Path(trace_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    run = run_to_trace(spec, path)
    names = tuple(f"{'dram' if e in result.in_dram else 'l2'}.{edge.name}" for e, edge in enumerate(result.pg.edges))
    checks = compare_phased(result.sizes, names, trace_memory(path))
    return BufferSimulation(path, run.cycles, run.cycles / hw.clock_hz, checks)


@dataclass(frozen=True)
class CsdfSummary:
    """The phased network as a CSDF graph: its size, consistency and deadlock check."""

    actors: int
    channels: int
    reuse_channels: int  # self-loops holding the rows a consumer reuses
    repetition_vector_all_ones: bool
    deadlocked_actors: tuple[str, ...]


@dataclass(frozen=True)
class PhasesStudy:
    """Phases per layer, the CSDF graph, one phase per layer against phased (buffers, DRAM placement,
    Eq. 2 timing), and both simulated when asked."""

    network: str
    hardware: Accelerator
    bits: int
    rule: str
    phases: Mapping[str, int]
    one_phase: PhasedResult
    phased: PhasedResult
    csdf: CsdfSummary
    simulation: Mapping[str, BufferSimulation] | None  # "one_phase", "phased"

    @property
    def throughput_decrease(self) -> float:
        return 1 - self.phased.timing.fps / self.one_phase.timing.fps

    @property
    def ok(self) -> bool:
        """Deadlock-free, and every simulated buffer equal to its analysis."""
        sims = self.simulation or {}
        return not self.csdf.deadlocked_actors and all(s.ok for s in sims.values())


def trace_path(trace_dir: str | Path, graph: Graph, hw: Accelerator, what: str) -> Path:
    """TRACE_DIR/NETWORK-CONFIG-WHAT.h5."""
    return Path(trace_dir) / f"{graph.name}-{hw.name}-{what}.h5"


def study_phases(network: NetworkLike, hw: HardwareLike, bits: int | None = None, rule: str = "thesis",
                 trace_dir: str | Path | None = None) -> PhasesStudy:
    """Derive the phases by `rule`, analyse both executions at `bits` (default: the config's precision)
    and, with a `trace_dir`, simulate both on `hw` there."""
    graph = as_graph(network)
    require_images(graph, "the phased (CSDF) model")
    accelerator, bits = analysis_precision(as_hardware(hw), bits, trace_dir is not None)
    phases = derive_phases(graph, rule)
    phased = analyse_phases(graph, phases, accelerator, bits)
    single = analyse_phases(graph, {name: 1 for name in phases}, accelerator, bits)
    g = to_csdf(phased.pg, bits)
    csdf = CsdfSummary(len(g.actors), sum(not c.reuse for c in g.channels), sum(c.reuse for c in g.channels),
                       all(v == 1 for v in repetition_vector(g)), tuple(deadlocked_actors(g)))
    simulation = None
    if trace_dir is not None:
        simulation = {"one_phase": simulate_phased(single, accelerator,
                                                   trace_path(trace_dir, graph, accelerator, "one-phase"), rule, bits),
                      "phased": simulate_phased(phased, accelerator,
                                                trace_path(trace_dir, graph, accelerator, "phased"), rule, bits)}
    return PhasesStudy(graph.name, accelerator, bits, rule, phases, single, phased, csdf, simulation)


def phases_sdf3_xml(study: PhasesStudy) -> str:
    """The phased CSDF graph in SDF3's XML format, with each phase's execution time (Eq. 2 cycles)."""
    times = {name: (a + k + o).tolist() for name, (a, k, o) in phase_cycles(study.phased.pg, study.hardware).items()}
    return sdf3_xml(to_csdf(study.phased.pg, study.bits), times)


__all__ = ["BufferSimulation", "CsdfSummary", "PhasedResult", "PhasesStudy", "analyse_phases", "analysis_precision",
           "dram_edges", "phase_plan", "phases_sdf3_xml", "simulate_phased", "study_phases", "trace_path"]
