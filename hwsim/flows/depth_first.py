"""Depth-first execution: the Pareto front of on-chip bytes against DRAM bytes over cuts, tiling
factors and weight policies, beside the layer-by-layer bound (Goetschalckx & Verhelst, 2019), and front
points simulated line by line on line buffers and checked against the closed-form model."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from hwsim.analytic.depth_first import depth_first_cost, layer_by_layer_dram_bytes
from hwsim.check.depth_first import DEFAULT_LEVELS, DepthFirstCheck, compare_point
from hwsim.errors import HwsimError
from hwsim.flows.inputs import HardwareLike, NetworkLike, as_graph, as_hardware
from hwsim.flows.run import RunSpec
from hwsim.flows.simulate import Progress, run_to_trace
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.depth_first import DepthFirstMapping, WeightPolicy, depth_first_layout
from hwsim.mapping.plans import DepthFirstPlan
from hwsim.search.depth_first import (
    DepthFirstPareto,
    Gain,
    ParetoPoint,
    bandwidth_gain,
    depth_first_pareto,
    memory_gain,
    min_bandwidth_gain,
    tiling_gain,
)
from hwsim.workload.ir import Graph, require_images

DEFAULT_BITS = 8  # the paper counts features: one byte each
MODELLED_BITS = (8, 16)
SIMULATE_HW = "depthfirst-edge"
NAMED_POINTS = {"min-memory": 0, "min-dram": -1}  # front indices: least on-chip memory, least DRAM traffic
DEFAULT_MAX_SHORT_SKIP = 8


@dataclass(frozen=True)
class FrontPoint:
    """A front point beside the layer-by-layer bound's DRAM bytes at the same on-chip memory."""

    point: ParetoPoint
    layer_by_layer_dram_bytes: int

    @property
    def bandwidth_gain(self) -> float:
        return self.layer_by_layer_dram_bytes / self.point.dram_bytes


@dataclass(frozen=True)
class DepthFirstGains:
    """The paper's headline ratios."""

    bandwidth_at_equal_memory: Gain
    bandwidth_at_min_bandwidth: Gain
    memory_at_equal_bandwidth: Gain | None
    tiling_memory: Gain | None  # untiled against tiled on-chip memory at equal DRAM traffic


@dataclass(frozen=True)
class DepthFirstStudy:
    """The optimiser's fronts with the bound beside every point, the headline gains, and how long the
    search took."""

    pareto: DepthFirstPareto
    front: tuple[FrontPoint, ...]
    untiled_front: tuple[FrontPoint, ...]
    gains: DepthFirstGains
    seconds: float


def depth_first_bits(hw: Accelerator) -> int:
    """The precision the depth-first model prices on `hw` (8 or 16 bit)."""
    if hw.precision_bits not in MODELLED_BITS:
        raise HwsimError(f"{hw.name}: precision_bits {hw.precision_bits}; depth-first models 8 or 16 bit")
    return hw.precision_bits


def _beside_bound(points: tuple[ParetoPoint, ...], graph: Graph, bits: int) -> tuple[FrontPoint, ...]:
    return tuple(FrontPoint(p, layer_by_layer_dram_bytes(graph, p.on_chip_bytes, bits)) for p in points)


def depth_first_front(network: NetworkLike, bits: int = DEFAULT_BITS, max_short_skip: int = DEFAULT_MAX_SHORT_SKIP,
                      method: str = "auto") -> DepthFirstStudy:
    """Search the depth-first schedules of `network` at `bits` (skips spanning at most `max_short_skip`
    layers stay on chip; `method` exhaustive, dp or auto)."""
    if max_short_skip < 0:
        raise HwsimError(f"max_short_skip {max_short_skip}: give a number of layers ≥ 0")
    graph = as_graph(network)
    require_images(graph, "depth-first tiling")
    start = time.perf_counter()
    result = depth_first_pareto(graph, bits, max_short_skip, method)
    seconds = time.perf_counter() - start
    gains = DepthFirstGains(bandwidth_gain(graph, result.front, bits), min_bandwidth_gain(graph, result.front, bits),
                            memory_gain(graph, result.front, bits), tiling_gain(result.front, result.untiled_front))
    return DepthFirstStudy(result, _beside_bound(result.front, graph, bits),
                           _beside_bound(result.untiled_front, graph, bits), gains, seconds)


def pick_points(front: tuple[ParetoPoint, ...], count: int) -> list[int]:
    """`count` indices spread evenly along the front, both ends included."""
    if count >= len(front):
        return list(range(len(front)))
    return sorted({round(i * (len(front) - 1) / max(1, count - 1)) for i in range(count)})


def depth_first_plan(graph: Graph, hw: Accelerator, mapping: DepthFirstMapping) -> DepthFirstPlan:
    """A depth-first mapping of `graph` on `hw` as a plan (data a file holds and a run replays)."""
    s = graph.layers[0].out_shape
    cuts = tuple(graph.layers[c].name if isinstance(c, int) and 0 <= c < len(graph) else str(c)
                 for c in mapping.cuts)  # a cut named by its graph index, by its name
    return DepthFirstPlan(graph.name, hw.name, (s.c, s.h, s.w), cuts,
                          tuple(mapping.tiling), str(mapping.weights), mapping.max_short_skip_layers)


def check_point(graph: Graph, hw: Accelerator, mapping: DepthFirstMapping | DepthFirstPlan, trace_path: str | Path,
                levels: frozenset[str] = DEFAULT_LEVELS, progress: Progress | None = None) -> DepthFirstCheck:
    """Simulate a depth-first point of `graph` on `hw` into `trace_path` (DRAM recorded per transaction), compare
    its trace with the closed-form model of the plan and validate the trace's physics."""
    plan = mapping if isinstance(mapping, DepthFirstPlan) else depth_first_plan(graph, hw, mapping)
    spec = RunSpec(graph, hw, 1, plan)
    spec.mapper.check(plan, graph, hw)
    result = run_to_trace(spec, Path(trace_path), levels | {"dram", "line_buffer"}, progress)
    layout = depth_first_layout(graph, plan.cuts, list(plan.tiling), plan.max_short_skip_layers)
    cost = depth_first_cost(graph, layout, WeightPolicy(plan.weights), hw.precision_bits)
    return compare_point(plan, cost, trace_path, [run.cycles for run in result.layers], hw.word_bytes)


@dataclass(frozen=True)
class PointCheck:
    """A simulated front point: its position on the front and the model-against-trace comparison."""

    position: int
    check: DepthFirstCheck


def check_front_points(network: NetworkLike, hw: HardwareLike, front: tuple[ParetoPoint, ...], indices: list[int],
                       max_short_skip: int = DEFAULT_MAX_SHORT_SKIP, trace_path: str | Path | None = None,
                       trace_dir: str | Path = "traces") -> tuple[PointCheck, ...]:
    """Simulate the front points at `indices` (negative: from the end) on `hw`'s line buffers and compare
    each with the closed-form model; one point's trace goes to `trace_path` when given, every other to
    TRACE_DIR/NETWORK-CONFIG-dfPOSITION.h5."""
    graph, accelerator = as_graph(network), as_hardware(hw)
    checks = []
    for index in indices:
        if not -len(front) <= index < len(front):
            raise HwsimError(f"front point {index}: the front has {len(front)} points; give 0 … {len(front) - 1}")
        point = front[index]
        mapping = DepthFirstMapping(point.cuts, point.tiling, point.weights, max_short_skip)
        position = index % len(front)
        path = (Path(trace_path) if trace_path and len(indices) == 1
                else Path(trace_dir) / f"{graph.name}-{accelerator.name}-df{position}.h5")
        path.parent.mkdir(parents=True, exist_ok=True)
        checks.append(PointCheck(position, check_point(graph, accelerator, mapping, path)))
    return tuple(checks)


def check_depth_first(network: NetworkLike, hw: HardwareLike, points: int,
                      max_short_skip: int = DEFAULT_MAX_SHORT_SKIP, trace_path: str | Path | None = None,
                      trace_dir: str | Path = "traces") -> tuple[PointCheck, ...]:
    """Search the front at `hw`'s precision and check `points` points spread along it (both ends); a
    single point's trace goes to `trace_path` when given."""
    if points < 1:
        raise HwsimError(f"{points} points: give a number of points ≥ 1")
    graph, accelerator = as_graph(network), as_hardware(hw)
    front = depth_first_pareto(graph, depth_first_bits(accelerator), max_short_skip).front
    return check_front_points(graph, accelerator, front, pick_points(front, points), max_short_skip, trace_path,
                              trace_dir)


__all__ = ["DEFAULT_BITS", "NAMED_POINTS", "SIMULATE_HW", "DepthFirstGains", "DepthFirstStudy", "FrontPoint",
           "PointCheck", "check_depth_first", "check_front_points", "check_point", "depth_first_bits",
           "depth_first_front", "depth_first_plan", "pick_points"]
