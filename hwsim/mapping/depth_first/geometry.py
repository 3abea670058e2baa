"""Geometry of a stack: which input lines and columns each output needs (`AxisMap`), the stack's
orientation, FM sizes, tile boundaries and ring leads (`StackPlan`)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from hwsim.mapping.depth_first.stacks import MERGE_KINDS
from hwsim.vocab import ceil_div
from hwsim.workload.ir import Graph, Layer, LayerKind

WINDOW_KINDS = frozenset({LayerKind.CONV, LayerKind.MAX_POOL, LayerKind.AVG_POOL})
GLOBAL_KINDS = frozenset({LayerKind.GLOBAL_AVG_POOL, LayerKind.GLOBAL_MAX_POOL, LayerKind.FC})


# ----- how a layer's output positions depend on its input, per axis ------------------------------
@dataclass(frozen=True)
class AxisMap:
    """Input positions (lines or columns) a layer's outputs need along one axis.

    `first(y)`: the first input position output y needs; `end(y_end)`: one past
    the last input position any output before y_end needs (0 for y_end = 0).
    """

    kind: str  # "window", "replicate" (upsample, depth-to-space), "transposed", "whole"
    k: int = 1  # window extent, dilation included
    s: int = 1  # stride (window, transposed) or factor (replicate)
    pad: int = 0  # padding before the first position

    def first(self, y: int, n_in: int) -> int:
        if self.kind == "window":
            return min(n_in, max(0, self.s * y - self.pad))
        if self.kind == "replicate":
            return min(n_in, y // self.s)
        if self.kind == "transposed":
            return min(n_in, max(0, ceil_div(y + self.pad - self.k + 1, self.s)))
        return 0

    def end(self, y_end: int, n_in: int) -> int:
        if y_end <= 0:
            return 0
        if self.kind == "window":
            return max(0, min(n_in, self.s * (y_end - 1) - self.pad + self.k))
        if self.kind == "replicate":
            return min(n_in, ceil_div(y_end, self.s))
        if self.kind == "transposed":
            return max(0, min(n_in, (y_end - 1 + self.pad) // self.s + 1))
        return n_in

    def first_array(self, y: npt.NDArray[np.int64], n_in: int) -> np.ndarray:
        """`first` of every element of y."""
        if self.kind == "window":
            return np.minimum(np.maximum(self.s * y - self.pad, 0), n_in)
        if self.kind == "replicate":
            return np.minimum(n_in, y // self.s)
        if self.kind == "transposed":
            lowest: npt.NDArray[np.int64] = ceil_div(y + self.pad - self.k + 1, self.s)
            return np.minimum(np.maximum(lowest, 0), n_in)
        return np.zeros_like(y)

    def end_array(self, y_end: npt.NDArray[np.int64], n_in: int) -> np.ndarray:
        """`end` of every element of y_end."""
        if self.kind == "window":
            out = np.minimum(np.maximum(self.s * (y_end - 1) - self.pad + self.k, 0), n_in)
        elif self.kind == "replicate":
            out = np.minimum(n_in, ceil_div(y_end, self.s))
        elif self.kind == "transposed":
            out = np.minimum(np.maximum((y_end - 1 + self.pad) // self.s + 1, 0), n_in)
        else:
            out = np.full_like(y_end, n_in)
        return np.where(y_end <= 0, 0, out)

    @property
    def lead(self) -> int:
        """Pixels of the next line a streaming window holds beyond its full lines (the window's extent
        minus one; a point-wise layer holds the one pixel it works on)."""
        if self.kind == "window":
            return max(1, self.k - 1)
        if self.kind == "transposed":
            return ceil_div(self.k, self.s) - 1
        return 0


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
@dataclass
class StackPlan:
    """A stack's geometry: orientation, FMs, tile boundaries and widths, ring leads.

    Positions are in the stack's orientation: `scan[t]` lines of `line[t]`
    pixels, `channels[t]` values per pixel. For tile i of FM t, columns
    `bounds[t][i]` … `bounds[t][i+1]` are computed there and `starts[t][i]` …
    `bounds[t][i+1]` are held (the extra columns come from the tile before).
    """

    layers: tuple[Layer, ...]
    tiling: int
    scan_rows: bool
    inputs: dict[str, tuple[str, ...]]  # layer -> its inputs held on chip (long-skip edges excluded)
    dram_inputs: dict[str, tuple[str, ...]]  # layer -> its inputs read straight from DRAM
    consumers: dict[str, tuple[Layer, ...]]  # on-chip tensor -> its consumers in the stack
    external: tuple[str, ...]  # on-chip tensors produced before the stack (loaded from DRAM)
    leaving: frozenset[str]  # tensors made here that DRAM keeps (later stacks, outputs, long skips)
    scan: dict[str, int]
    line: dict[str, int]
    channels: dict[str, int]
    bounds: dict[str, npt.NDArray[np.int64]]  # [tiling + 1]
    starts: dict[str, npt.NDArray[np.int64]]  # [tiling]
    leads: dict[str, int] = field(default_factory=dict)

    def widths(self, t: str) -> np.ndarray:
        """Held columns of t per tile."""
        return self.bounds[t][1:] - self.starts[t]

    def overlaps(self, t: str) -> np.ndarray:
        """Columns of t each tile fetches back from the tile before."""
        return self.bounds[t][:-1] - self.starts[t]

    def width(self, t: str, tile: int) -> int:
        """Columns of t held in `tile`: computed there plus those fetched back from the tile before."""
        return int(self.bounds[t][tile + 1] - self.starts[t][tile])

    def computed(self, t: str, tile: int) -> int:
        return int(self.bounds[t][tile + 1] - self.bounds[t][tile])

    def overlap(self, t: str, tile: int) -> int:
        """Columns of t that `tile` needs from the tile before (offloaded there, fetched back here)."""
        return int(self.bounds[t][tile] - self.starts[t][tile])

    def ring_width(self, t: str) -> int:
        """A ring row of t: its widest tile."""
        return int(self.widths(t).max())


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
