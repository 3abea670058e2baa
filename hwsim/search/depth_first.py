"""Pareto front of depth-first schedules: where to cut a network into stacks and how much to tile each stack.

The search of Goetschalckx & Verhelst (JETCAS 2019, sec. 5) over the model of
`hwsim.analytic.depth_first`: candidate cuts after every compute layer except
inside a short skip connection, every combination of cuts, tiling factors
1, 2, 4, …, 64 per stack, and both weight options (whole model on chip, or
only the running stack's parameters, refetched per inference). The result is
the Pareto front of (on-chip bytes, DRAM bytes per inference).

Why a decomposition works. Given the cuts, stacks are independent: a stack's
cost depends only on its own layers and tiling (what it reads from outside
and writes to outside), the network's DRAM traffic is the sum over stacks and
its on-chip memory the maximum (+ the model with `WeightPolicy.ON_CHIP`).
So each stack between two candidate boundaries is costed once per tiling
factor (`StackTable`), and

- with few candidate cuts (≤ `EXHAUSTIVE_MAX_CANDIDATES`) every cut subset is
  enumerated, its stacks' tiling options merged into the subset's front;
- otherwise a dynamic programme over "the last boundary" keeps, per prefix of
  the network, the Pareto set of (max on-chip, sum DRAM); dominated partial
  schedules cannot become non-dominated (max and sum are monotone), so the
  DP's front equals the exhaustive one.

Tiling. The paper doubles the tiling factor of the stack needing the most
memory while that lowers the maximum (`paper_greedy_points`). For a fixed cut
set, the exact front over per-stack factors is: for every memory level M,
each stack takes its cheapest (DRAM) factor fitting in M. That is the paper's
doubling carried to every level (it equals the greedy's points when a stack's
memory falls and its traffic rises with the factor), and it is what both
searches compute, so the front never loses a greedy point.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations, pairwise
from typing import TypeVar

from hwsim.analytic.depth_first import (
    DepthFirstCost,
    depth_first_cost,
    layer_by_layer_dram_bytes,
    layer_by_layer_on_chip_bytes,
)
from hwsim.mapping.depth_first import Cut, DepthFirstError, WeightPolicy, depth_first_layout, split_stacks
from hwsim.workload.ir import Graph


def point_cost(graph: Graph, cuts: Sequence[Cut] = (), tiling: int | Sequence[int] = 1,
               weights: WeightPolicy = WeightPolicy.ON_CHIP, bits: int = 8,
               max_short_skip_layers: int = 8) -> DepthFirstCost:
    """The closed-form cost of cutting `graph` after `cuts` (names or graph indices) at the tiling factors
    `tiling` (one for every stack or one per stack): the mapper lays the point out, the analytic model prices
    the layout."""
    return depth_first_cost(graph, depth_first_layout(graph, cuts, tiling, max_short_skip_layers), weights, bits)

TILING_FACTORS = (1, 2, 4, 8, 16, 32, 64)
EXHAUSTIVE_MAX_CANDIDATES = 12  # 2**12 cut subsets; above this the DP is used
CURVE_POINTS = 64  # layer-by-layer bound samples for plots, besides the front's own memory sizes
METHODS = ("auto", "exhaustive", "dp")

T = TypeVar("T")


# ----- results --------------------------------------------------------------------------------
@dataclass(frozen=True)
class ParetoPoint:
    """One depth-first schedule: its cost and how to reproduce it with `point_cost`."""

    on_chip_bytes: int
    dram_bytes: int  # per inference
    cuts: tuple[str, ...]  # compute layers after which a stack ends (the last stack's end excluded)
    tiling: tuple[int, ...]  # one factor per stack
    weights: WeightPolicy


@dataclass(frozen=True)
class CurvePoint:
    """A (memory, traffic) sample of a curve without a schedule (the layer-by-layer bound)."""

    on_chip_bytes: int
    dram_bytes: int


@dataclass(frozen=True)
class Gain:
    """A ratio between a reference and a depth-first point, and where it was found."""

    ratio: float
    on_chip_bytes: int  # of the depth-first point
    dram_bytes: int
    reference_bytes: int  # the reference's DRAM bytes (bandwidth gain) or on-chip bytes (memory gain)


@dataclass(frozen=True)
class DepthFirstPareto:
    """The optimiser's output for one network, precision and skip rule."""

    network: str
    bits: int
    method: str  # "exhaustive" or "dp"
    candidate_cuts: tuple[str, ...]
    model_bytes: int
    front: tuple[ParetoPoint, ...]  # tiled, both weight options; on-chip ascending, DRAM descending
    untiled_front: tuple[ParetoPoint, ...]  # every tiling factor 1
    layer_by_layer: tuple[CurvePoint, ...]  # the bound at the fronts' memory sizes and a log grid


# ----- candidate cuts and per-stack costs ---------------------------------------------------
def compute_layer_names(graph: Graph) -> tuple[str, ...]:
    """The compute layers in graph order: the positions `point_cost` cuts between."""
    (whole,) = split_stacks(graph, ())
    return tuple(l.name for l in whole)


def candidate_cuts(graph: Graph, max_short_skip_layers: int = 8) -> tuple[str, ...]:
    """Compute layers after which a cut is allowed: all but the last, minus those splitting a short skip.

    Validity is per position (a cut set is valid iff each of its cuts is), so
    each position is tried once on its own with `point_cost`.
    """
    valid = []
    for name in compute_layer_names(graph)[:-1]:
        try:
            point_cost(graph, [name], max_short_skip_layers=max_short_skip_layers)
        except DepthFirstError:
            continue
        valid.append(name)
    return tuple(valid)


@dataclass(frozen=True)
class StackOption:
    """A stack between two boundaries at one tiling factor: memory and traffic under one weight option."""

    tiling: int
    on_chip_bytes: int  # the stack's buffers (+ its parameters with PER_STACK)
    dram_bytes: int


@dataclass(frozen=True)
class StackTable:
    """Every stack between two candidate boundaries, costed once per tiling factor.

    Boundary k (0 … m) is the start of a possible stack; boundary 0 is the
    network's first compute layer, boundary m its end, and boundary k in
    between is "after `cut_names[k - 1]`". `costs[(i, j)]` lists
    (tiling, buffer bytes, parameter bytes, DRAM bytes without parameters)
    for the stack from boundary i to j.
    """

    network: str
    cut_names: tuple[str, ...]
    model_bytes: int
    costs: dict[tuple[int, int], tuple[tuple[int, int, int, int], ...]]

    @property
    def boundaries(self) -> int:
        """m: the index of the end boundary."""
        return len(self.cut_names) + 1

    def options(self, start: int, stop: int, weights: WeightPolicy) -> tuple[StackOption, ...]:
        """The non-dominated tiling options of stack (start, stop), cheapest memory first."""
        per_stack = weights is WeightPolicy.PER_STACK
        opts = [StackOption(t, buf + (par if per_stack else 0), dram + (par if per_stack else 0))
                for t, buf, par, dram in self.costs[(start, stop)]]
        return tuple(pareto(opts, lambda o: (o.on_chip_bytes, o.dram_bytes)))


def stack_table(graph: Graph, cuts: Sequence[str], tilings: Sequence[int] = TILING_FACTORS, bits: int = 8,
                max_short_skip_layers: int = 8) -> StackTable:
    """Cost every stack between candidate boundaries (`cuts`, in graph order) at every factor in `tilings`.

    Cheap by batching: one `point_cost` call with cuts at every g-th
    boundary (from phase r) costs all stacks spanning g boundaries at once, so
    m boundaries need m(m + 1)/2 calls per factor instead of one per stack.
    """
    m = len(cuts) + 1
    costs: dict[tuple[int, int], list[tuple[int, int, int, int]]] = {}
    for tiling in tilings:
        done: set[tuple[int, int]] = set()
        for gap in range(1, m + 1):
            for phase in range(min(gap, m - gap + 1) if gap < m else 1):
                if all((a, b) in done for a, b in _phase_stacks(m, gap, phase)):
                    continue
                bounds = _phase_bounds(m, gap, phase)
                cost = point_cost(graph, [cuts[k - 1] for k in bounds[1:-1]], tiling, WeightPolicy.ON_CHIP,
                                        bits, max_short_skip_layers)
                for (a, b), stack in zip(pairwise(bounds), cost.stacks):
                    if (a, b) not in done:
                        done.add((a, b))
                        costs.setdefault((a, b), []).append(
                            (tiling, stack.on_chip_bytes, stack.weight_bytes, stack.dram_bytes))
    model = sum(l.param_bytes(bits) for l in graph)
    return StackTable(graph.name, tuple(cuts), model, {k: tuple(v) for k, v in costs.items()})


def _phase_bounds(m: int, gap: int, phase: int) -> list[int]:
    """Boundaries 0, phase, phase + gap, …, m (deduplicated): stacks of `gap` boundaries, shorter at the ends."""
    return sorted({0, m, *range(phase, m, gap)})


def _phase_stacks(m: int, gap: int, phase: int) -> list[tuple[int, int]]:
    return list(pairwise(_phase_bounds(m, gap, phase)))


# ----- Pareto machinery -----------------------------------------------------------------------
def pareto(items: Iterable[T], key: Callable[[T], tuple[int, int]]) -> list[T]:
    """The items not dominated in key(item) = (memory, traffic), memory ascending; ties keep the first."""
    front: list[T] = []
    best = math.inf
    for item in sorted(items, key=key):
        traffic = key(item)[1]
        if traffic < best:
            front.append(item)
            best = traffic
    return front


@dataclass(frozen=True)
class _Partial:
    """A schedule of a prefix of the network (or of a whole cut set): max memory, summed traffic, choices."""

    on_chip_bytes: int
    dram_bytes: int
    stacks: tuple[tuple[int, int, int], ...]  # (start boundary, stop boundary, tiling)


def _key(p: _Partial) -> tuple[int, int]:
    return p.on_chip_bytes, p.dram_bytes


def _extend(partials: Sequence[_Partial], start: int, stop: int, options: Sequence[StackOption]) -> list[_Partial]:
    return [_Partial(max(p.on_chip_bytes, o.on_chip_bytes), p.dram_bytes + o.dram_bytes,
                     (*p.stacks, (start, stop, o.tiling))) for p in partials for o in options]


def _exhaustive(table: StackTable, weights: WeightPolicy, tilings: frozenset[int]) -> list[_Partial]:
    """Every cut subset; per subset, its stacks' tiling options merged into that subset's exact front."""
    m = table.boundaries
    found: list[_Partial] = []
    for count in range(m):
        for inner in combinations(range(1, m), count):
            partials = [_Partial(0, 0, ())]
            for a, b in pairwise((0, *inner, m)):
                opts = [o for o in table.options(a, b, weights) if o.tiling in tilings]
                partials = pareto(_extend(partials, a, b, opts), _key)
            found.extend(partials)
    return pareto(found, _key)


def _dynamic_programme(table: StackTable, weights: WeightPolicy, tilings: frozenset[int]) -> list[_Partial]:
    """Pareto set per prefix ending at each boundary; the last boundary's set is the front."""
    m = table.boundaries
    fronts: list[list[_Partial]] = [[_Partial(0, 0, ())]]
    for stop in range(1, m + 1):
        candidates: list[_Partial] = []
        for start in range(stop):
            opts = [o for o in table.options(start, stop, weights) if o.tiling in tilings]
            candidates.extend(_extend(fronts[start], start, stop, opts))
        fronts.append(pareto(candidates, _key))
    return fronts[m]


def _points(table: StackTable, partials: Iterable[_Partial], weights: WeightPolicy) -> list[ParetoPoint]:
    model = table.model_bytes if weights is WeightPolicy.ON_CHIP else 0
    return [ParetoPoint(p.on_chip_bytes + model, p.dram_bytes,
                        tuple(table.cut_names[b - 1] for _, b, _ in p.stacks[:-1]),
                        tuple(t for _, _, t in p.stacks), weights) for p in partials]


def front_from_table(table: StackTable, method: str = "auto",
                     tilings: Sequence[int] = TILING_FACTORS) -> tuple[str, tuple[ParetoPoint, ...]]:
    """(method used, Pareto front over both weight options) with tiling factors restricted to `tilings`."""
    if method not in METHODS:
        raise DepthFirstError(f"{table.network}: unknown search method {method!r}; use one of {', '.join(METHODS)}")
    if method == "auto":
        method = "exhaustive" if len(table.cut_names) <= EXHAUSTIVE_MAX_CANDIDATES else "dp"
    search = _exhaustive if method == "exhaustive" else _dynamic_programme
    allowed = frozenset(tilings)
    points = [pt for w in WeightPolicy for pt in _points(table, search(table, w, allowed), w)]
    return method, tuple(pareto(points, lambda p: (p.on_chip_bytes, p.dram_bytes)))


# ----- the whole optimiser ------------------------------------------------------------------
def depth_first_pareto(graph: Graph, bits: int = 8, max_short_skip_layers: int = 8, method: str = "auto",
                       tilings: Sequence[int] = TILING_FACTORS) -> DepthFirstPareto:
    """The Pareto front of depth-first schedules of `graph`, the untiled front and the layer-by-layer bound."""
    if not tilings or any(not isinstance(t, int) or t < 1 for t in tilings):
        raise DepthFirstError(f"{graph.name}: tiling factors {tuple(tilings)!r}; give integers ≥ 1, e.g. 1 2 4 … 64")
    cuts = candidate_cuts(graph, max_short_skip_layers)
    table = stack_table(graph, cuts, sorted(set(tilings) | {1}), bits, max_short_skip_layers)
    used, front = front_from_table(table, method, tilings)
    _, untiled = front_from_table(table, used, (1,))
    return DepthFirstPareto(graph.name, bits, used, cuts, table.model_bytes, front, untiled,
                            layer_by_layer_curve(graph, [p.on_chip_bytes for p in front + untiled], bits))


def layer_by_layer_curve(graph: Graph, on_chip_bytes: Iterable[int], bits: int = 8) -> tuple[CurvePoint, ...]:
    """The bound at the given memory sizes and on a log grid up to where it stops falling (the largest FM)."""
    io = layer_by_layer_dram_bytes(graph, 2**62, bits)
    largest = layer_by_layer_on_chip_bytes(graph, io, bits) or 1
    sizes = set(on_chip_bytes)
    low = max(1, min(sizes, default=largest) // 2)
    high = max(largest, max(sizes, default=largest)) * 2
    sizes |= {round(low * (high / low) ** (k / (CURVE_POINTS - 1))) for k in range(CURVE_POINTS)}
    return tuple(CurvePoint(m, layer_by_layer_dram_bytes(graph, m, bits)) for m in sorted(sizes))


def paper_greedy_points(graph: Graph, cuts: Sequence[str], weights: WeightPolicy, bits: int = 8,
                        max_short_skip_layers: int = 8, max_tiling: int = 64) -> tuple[ParetoPoint, ...]:
    """The paper's tiling heuristic for one cut set: double the factor of the stack needing the most memory.

    Starts untiled and stops when doubling the largest stack's factor no longer
    lowers the network's on-chip maximum or the factor would exceed `max_tiling`.
    Every visited schedule is returned (the first one untiled).
    """
    n_stacks = len(cuts) + 1
    tiling = [1] * n_stacks
    cost = point_cost(graph, cuts, tiling, weights, bits, max_short_skip_layers)
    points = [_point(cost.on_chip_bytes, cost.dram_bytes, cuts, tiling, weights)]
    while True:
        largest = max(range(n_stacks), key=lambda s: cost.stacks[s].on_chip_bytes)
        if tiling[largest] * 2 > max_tiling:
            break
        trial = [*tiling[:largest], tiling[largest] * 2, *tiling[largest + 1:]]
        next_cost = point_cost(graph, cuts, trial, weights, bits, max_short_skip_layers)
        if next_cost.on_chip_bytes >= cost.on_chip_bytes:
            break
        tiling, cost = trial, next_cost
        points.append(_point(cost.on_chip_bytes, cost.dram_bytes, cuts, tiling, weights))
    return tuple(points)


def _point(on_chip: int, dram: int, cuts: Sequence[str], tiling: Sequence[int], weights: WeightPolicy) -> ParetoPoint:
    return ParetoPoint(on_chip, dram, tuple(cuts), tuple(tiling), weights)


# ----- headline ratios -----------------------------------------------------------------------
def bandwidth_gain(graph: Graph, points: Sequence[ParetoPoint], bits: int = 8) -> Gain:
    """Largest layer-by-layer DRAM / depth-first DRAM at equal on-chip memory, over `points`."""
    gains = [Gain(lbl / p.dram_bytes, p.on_chip_bytes, p.dram_bytes, lbl)
             for p in points for lbl in (layer_by_layer_dram_bytes(graph, p.on_chip_bytes, bits),)]
    return max(gains, key=lambda g: g.ratio)


def min_bandwidth_gain(graph: Graph, front: Sequence[ParetoPoint], bits: int = 8) -> Gain:
    """The bandwidth gain at the front's minimum-traffic point (the paper's 268× for DMCNN-VD at 4K)."""
    return bandwidth_gain(graph, [min(front, key=lambda p: (p.dram_bytes, p.on_chip_bytes))], bits)


def memory_gain(graph: Graph, points: Sequence[ParetoPoint], bits: int = 8) -> Gain | None:
    """Largest layer-by-layer on-chip bytes / depth-first on-chip bytes at equal DRAM traffic (None: never)."""
    gains = []
    for p in points:
        lbl = layer_by_layer_on_chip_bytes(graph, p.dram_bytes, bits)
        if lbl is not None:
            gains.append(Gain(lbl / p.on_chip_bytes, p.on_chip_bytes, p.dram_bytes, lbl))
    return max(gains, key=lambda g: g.ratio, default=None)


def tiling_gain(front: Sequence[ParetoPoint], untiled: Sequence[ParetoPoint]) -> Gain | None:
    """Largest untiled on-chip / tiled on-chip at equal (or lower) DRAM traffic over the tiled front."""
    gains = []
    for p in front:
        fits = [u.on_chip_bytes for u in untiled if u.dram_bytes <= p.dram_bytes]
        if fits:
            gains.append(Gain(min(fits) / p.on_chip_bytes, p.on_chip_bytes, p.dram_bytes, min(fits)))
    return max(gains, key=lambda g: g.ratio, default=None)
