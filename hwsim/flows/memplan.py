"""Memory for the intermediate tensors of a network: the layer-by-layer planners (one buffer per edge,
TensorRT-style reuse, greedy-by-size offsets, CEVA buffer ids with swaps and merging), their lower bound,
and phased execution; buffers placed in the L2 by a knapsack; each plan optionally simulated on the
accelerator and its buffers compared with the trace."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hwsim.analytic.memplan import (
    GRANULE_BYTES,
    STRATEGIES,
    MemoryPlan,
    Placement,
    place_in_l2,
    plan_memory,
    tensor_slots,
)
from hwsim.check.memory import compare_plan, trace_memory
from hwsim.errors import HwsimError
from hwsim.flows.inputs import HardwareLike, NetworkLike, as_graph, as_hardware
from hwsim.flows.phases import (
    BufferSimulation,
    analyse_phases,
    analysis_precision,
    simulate_phased,
    trace_path,
)
from hwsim.flows.run import RunSpec
from hwsim.flows.simulate import run_to_trace
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.phases import derive_phases
from hwsim.mapping.plans import SlotPlan
from hwsim.workload.ir import Graph, require_images

PHASES = "phases"
BOUND = "bound"
ALL_STRATEGIES = (*STRATEGIES, PHASES)


@dataclass(frozen=True)
class StrategyMemory:
    """One strategy's memory: total bytes against the bound, its buffers, the planner's intermediate
    figures (`details`; phases: the number of firings), the L2 placement of a plan's buffers, and the
    simulation when asked."""

    strategy: str
    total_bytes: int
    bound_bytes: int
    buffers: int
    details: Mapping[str, int]
    plan: MemoryPlan | None  # None for phases
    placement: Placement | None
    simulation: BufferSimulation | None

    @property
    def ratio_to_bound(self) -> float:
        return self.plan.ratio_to_bound if self.plan else self.total_bytes / self.bound_bytes

    @property
    def fits_l2(self) -> bool | None:
        """Whether every buffer fits the L2 it was placed in (None: not placed)."""
        return None if self.placement is None else self.total_bytes <= self.placement.capacity_bytes

    @property
    def in_l2(self) -> tuple[str, ...]:
        """The buffers the knapsack put in the L2."""
        if self.plan is None or self.placement is None:
            return ()
        return tuple(b.name for b, x in zip(self.plan.buffers, self.placement.in_l2) if x)


@dataclass(frozen=True)
class MemoryStudy:
    """Every chosen strategy on one network at `bits`, with the L2 capacity the plans were placed in."""

    network: str
    hardware: Accelerator
    bits: int
    l2_bytes: int | None
    strategies: tuple[StrategyMemory, ...]

    @property
    def ok(self) -> bool:
        """Every simulated plan equal to its analysis."""
        return all(s.simulation.ok for s in self.strategies if s.simulation is not None)


def slot_plan(graph: Graph, hw: Accelerator, plan: MemoryPlan, placement: Placement | None) -> SlotPlan:
    """A memory plan as slots (buffers in the L2 as placed, else all in the L2 if they fit, else DRAM)."""
    fits = hw.l2 is not None and plan.total_bytes <= hw.l2.size_bytes
    in_l2 = placement.in_l2 if placement else (fits,) * len(plan.buffers)
    names = tuple(f"{'l2' if x else 'dram'}.{b.name}" for b, x in zip(plan.buffers, in_l2))
    s = graph.layers[0].out_shape
    return SlotPlan(graph.name, hw.name, (s.c, s.h, s.w), plan.strategy,
                    tuple(tensor_slots(plan, in_l2, hw.word_bytes)), names)


def simulate_plan(graph: Graph, hw: Accelerator, plan: MemoryPlan, placement: Placement | None,
                  path: str | Path) -> BufferSimulation:
    """Run a layer-by-layer plan (`slot_plan`) and compare its buffers, extent and live peak with the trace."""
    slots = slot_plan(graph, hw, plan, placement)
    in_l2 = tuple(name.startswith("l2.") for name in slots.buffers)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    run = run_to_trace(RunSpec(graph, hw, 1, slots), path)
    checks = compare_plan(plan, slots.buffers, trace_memory(path), in_l2)
    return BufferSimulation(path, run.cycles, run.cycles / hw.clock_hz, checks)


def _phases_memory(graph: Graph, hw: Accelerator, bits: int, rule: str, bound_bytes: int,
                   trace_dir: str | Path | None) -> StrategyMemory:
    result = analyse_phases(graph, derive_phases(graph, rule), hw, bits)
    simulation = None if trace_dir is None else simulate_phased(result, hw, trace_path(trace_dir, graph, hw, "phased"),
                                                                rule, bits)
    return StrategyMemory(PHASES, result.sizes.total_bytes, bound_bytes, len(result.pg.edges),
                          {"firings": result.pg.firings}, None, None, simulation)


def _plan_memory(graph: Graph, hw: Accelerator, strategy: str, bits: int, l2_bytes: int | None,
                 granularity_bytes: int, trace_dir: str | Path | None) -> StrategyMemory:
    plan = plan_memory(graph, strategy, bits)
    placement = place_in_l2(plan.buffers, l2_bytes, granularity_bytes) if l2_bytes else None
    simulation = None
    if trace_dir is not None and strategy != BOUND:
        simulation = simulate_plan(graph, hw, plan, placement, trace_path(trace_dir, graph, hw, strategy))
    return StrategyMemory(strategy, plan.total_bytes, plan.bound_bytes, len(plan.buffers), plan.details, plan,
                          placement, simulation)


def study_memory(network: NetworkLike, hw: HardwareLike, strategies: Sequence[str] = ALL_STRATEGIES,
                 bits: int | None = None, rule: str = "thesis", l2_bytes: int | None = None,
                 granularity_bytes: int = GRANULE_BYTES, trace_dir: str | Path | None = None) -> MemoryStudy:
    """Each strategy's memory at `bits` (default: the config's precision), its buffers placed in an L2 of
    `l2_bytes` (default: the config's L2) at `granularity_bytes`; phases derived by `rule`; with a
    `trace_dir`, every plan (and the phased execution) simulated on `hw` there."""
    unknown = [s for s in strategies if s not in ALL_STRATEGIES]
    if unknown:
        raise HwsimError(f"unknown strategy {unknown[0]!r}: choose from {', '.join(ALL_STRATEGIES)}")
    graph = as_graph(network)
    require_images(graph, "memory planning")
    accelerator, bits = analysis_precision(as_hardware(hw), bits, trace_dir is not None)
    capacity = l2_bytes or (accelerator.l2.size_bytes if accelerator.l2 else None)
    bound = plan_memory(graph, BOUND, bits).bound_bytes
    rows = tuple(_phases_memory(graph, accelerator, bits, rule, bound, trace_dir) if s == PHASES
                 else _plan_memory(graph, accelerator, s, bits, capacity, granularity_bytes, trace_dir)
                 for s in strategies)
    return MemoryStudy(graph.name, accelerator, bits, capacity, rows)


__all__ = ["ALL_STRATEGIES", "BOUND", "PHASES", "MemoryStudy", "StrategyMemory", "simulate_plan", "slot_plan",
           "study_memory"]
