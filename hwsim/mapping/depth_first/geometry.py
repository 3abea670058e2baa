"""Geometry of a stack, worked out by the mapper: which input lines and columns each output needs (`axis_maps`),
the stack's orientation, FM sizes, tile boundaries and ring leads (`plan_stack`), and the whole network's layout
(`depth_first_layout`)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from hwsim.mapping.depth_first.plan import (
    GLOBAL_KINDS,
    MERGE_KINDS,
    WINDOW_KINDS,
    AxisMap,
    Cut,
    DepthFirstError,
    DepthFirstLayout,
    StackPlan,
)
from hwsim.mapping.depth_first.stacks import long_skips, split_stacks
from hwsim.vocab import ceil_div
from hwsim.workload.ir import Graph, Layer, LayerKind


def depth_first_layout(graph: Graph, cuts: Sequence[Cut] = (), tiling: int | Sequence[int] = 1,
                       max_short_skip_layers: int = 8) -> DepthFirstLayout:
    """The stacks the cuts make of `graph` (cut after the layers `cuts`: names or graph indices), the skips that go
    through DRAM, and each stack's geometry at its tiling factor (one for every stack, or one per stack)."""
    stacks = split_stacks(graph, cuts)
    factors = [tiling] * len(stacks) if isinstance(tiling, int) else list(tiling)
    if len(factors) != len(stacks):
        raise DepthFirstError(f"{graph.name}: {len(factors)} tiling factors for {len(stacks)} stacks; "
                              "give one per stack")
    for stack, factor in zip(stacks, factors):
        if not isinstance(factor, int) or factor < 1:
            raise DepthFirstError(f"{graph.name}: stack ending at layer {stack[-1].name!r} has tiling factor "
                                  f"{factor!r}; use an integer ≥ 1 (1 = no tiling)")
    long = long_skips(graph, stacks, max_short_skip_layers)
    return DepthFirstLayout(tuple(plan_stack(graph, s, f, long) for s, f in zip(stacks, factors)), long)

@functools.lru_cache(maxsize=4096)
def axis_maps(layer: Layer, scan_rows: bool) -> tuple[AxisMap, AxisMap]:
    """(scan axis, line axis) maps of `layer` on its inputs."""
    if layer.kind in WINDOW_KINDS:
        extent = [d * (k - 1) + 1 for d, k in zip(layer.dilation, layer.kernel)]
        maps = [AxisMap("window", e, s, p) for e, s, p in
                zip(extent, layer.stride, (layer.padding.top, layer.padding.left))]
    elif layer.kind is LayerKind.CONV_TRANSPOSE:
        maps = [AxisMap("transposed", k, s, p) for k, s, p in
                zip(layer.kernel, layer.stride, (layer.padding.top, layer.padding.left))]
    elif layer.kind in (LayerKind.UPSAMPLE, LayerKind.DEPTH_TO_SPACE):
        maps = [AxisMap("replicate", 1, f) for f in layer.factor]
    elif layer.kind in GLOBAL_KINDS:
        maps = [AxisMap("whole"), AxisMap("whole")]
    else:  # element-wise and channel layers
        maps = [AxisMap("window"), AxisMap("window")]
    return (maps[0], maps[1]) if scan_rows else (maps[1], maps[0])


# ----- the tiles of a stack ---------------------------------------------------------------------
def plan_stack(graph: Graph, stack: Sequence[Layer], tiling: int, long_edges: frozenset[tuple[str, str]]) -> StackPlan:
    """Orientation, tile boundaries (backwards from the stack's outputs) and ring leads of one stack."""
    names = {l.name for l in stack}
    ref = stack[0].in_shape
    scan_rows = ref.w <= ref.h
    inputs = {l.name: tuple(t for t in dict.fromkeys(l.inputs) if (t, l.name) not in long_edges) for l in stack}
    dram_inputs = {l.name: tuple(t for t in dict.fromkeys(l.inputs) if (t, l.name) in long_edges) for l in stack}
    consumers: dict[str, list[Layer]] = {}
    for l in stack:
        for t in inputs[l.name]:
            consumers.setdefault(t, []).append(l)
    shapes = {t: s for l in stack for t, s in zip(l.inputs, l.in_shapes)} | {l.output: l.out_shape for l in stack}
    scan = {t: (s.h if scan_rows else s.w) for t, s in shapes.items()}
    line = {t: (s.w if scan_rows else s.h) for t, s in shapes.items()}
    leaving = frozenset(l.output for l in stack if any(c.name not in names or (l.output, c.name) in long_edges
                                                       for c in graph.consumers(l.output))
                        or not graph.consumers(l.output))
    bounds: dict[str, npt.NDArray[np.int64]] = {}
    starts: dict[str, npt.NDArray[np.int64]] = {}
    for l in reversed(stack):
        out = l.output
        if out not in bounds:  # an output of the stack: even tiles
            q = ceil_div(line[out], tiling)
            bounds[out] = np.minimum(line[out], np.arange(tiling + 1, dtype=np.int64) * q)
            starts[out] = bounds[out][:-1].copy()
        for t in inputs[l.name] + dram_inputs[l.name]:
            if t in bounds and t not in consumers:
                continue
            cs = consumers.get(t, [l])
            if any(c.output not in bounds for c in cs):
                continue  # another consumer later in the stack is not planned yet
            maps = [(axis_maps(c, scan_rows)[1], bounds[c.output]) for c in cs]
            ends = np.max([m.end_array(b, line[t]) for m, b in maps], axis=0)
            ends[0], ends[-1] = 0, line[t]
            ends = np.maximum.accumulate(ends)
            bounds[t] = ends
            first = np.min([m.first_array(b[:-1], line[t]) for m, b in maps], axis=0)
            starts[t] = np.minimum(ends[:-1], first)
            starts[t][0] = 0
    plan = StackPlan(tuple(stack), tiling, scan_rows, inputs, dram_inputs,
                     {t: tuple(cs) for t, cs in consumers.items()},
                     tuple(t for t in consumers if graph.producer(t).name not in names), leaving,
                     scan, line, {t: s.c for t, s in shapes.items()}, bounds, starts)
    plan.leads = _leads(plan)
    plan.maps = {l.name: axis_maps(l, scan_rows) for l in stack}
    return plan


def _leads(plan: StackPlan) -> dict[str, int]:
    """Per on-chip FM, the pixels of the next line its ring holds while streaming (max over consumers):
    the window's lead, or for a merge input the column delay of the merge's other inputs."""
    lag: dict[str, float] = {}  # columns by which an FM trails the stack's first input, in its own pixels
    for l in plan.layers:
        ahead = _column_lookahead(l, plan.scan_rows)
        lag[l.output] = max((lag.get(t, 0.0) * plan.line[l.output] / max(1, plan.line[t]) + ahead
                             for t in plan.inputs[l.name]), default=0.0)
    leads = {}
    for t, cs in plan.consumers.items():
        best = 0
        for c in cs:
            if c.kind in MERGE_KINDS:
                delay = lag[c.output] * plan.line[t] / max(1, plan.line[c.output]) - lag.get(t, 0.0)
                best = max(best, 1, math.ceil(delay - 1e-9))
            else:
                best = max(best, axis_maps(c, plan.scan_rows)[1].lead)
        leads[t] = best
    return leads


def _column_lookahead(layer: Layer, scan_rows: bool) -> float:
    """Columns beyond an output's own position its window reaches (in output pixels)."""
    m = axis_maps(layer, scan_rows)[1]
    if m.kind == "window":
        return max(0, m.k - 1 - m.pad) / m.s
    if m.kind == "transposed":
        return max(0, ceil_div(m.pad, m.s))
    return 0.0
