"""The depth-first mapper: stacks of layers executed line by line through line buffers, optionally tiled.

Mapping decisions (shared with the closed-form model in
`hwsim.analytic.depth_first`, which prices them without walking steps):

- *Stacks*: the compute layers split after each cut (`split_stacks`); a
  merge input that spans more than `max_short_skip_layers` layers is a long
  skip and goes through DRAM (`long_skips`).
- *Orientation*: lines run along the shorter side of a stack's first input
  (Goetschalckx & Verhelst, sec. 3.2); the other axis is scanned.
- *Tiles* (`plan_stack`): every FM of a stack is split along its lines into
  TF tiles that are run one after another, each through all scan lines. The
  stack's output FMs are split evenly (⌈L/TF⌉ columns); going upstream,
  tile i of an FM ends where its consumers' tile i needs it to end, so no
  tile ever waits for a later one. A tile therefore also needs a few
  columns computed by the tile before it (k − S for a window): those are
  offloaded to DRAM when computed and fetched back (Eq. 3), never
  recomputed. A ring row is as wide as the FM's widest tile.

The schedule (`depth_first_schedule`): one `LayerSchedule` per stack whose
steps walk its tiles. Within a tile, each *event* is one layer computing one
output line (depth-to-space: its f lines at once), in depth-first order: the
deepest layer that can proceed goes first, and a new line of a stack input
is loaded from DRAM only when none can. An event is one step group: it
allocates line-buffer rows for the lines it writes, reads its input windows
from the line buffers into the array (weights from the GLB), computes, writes
its line to a line buffer (or to DRAM if the FM leaves the stack), offloads
the boundary columns the next tile needs and frees the input lines no
consumer needs any more.

Line-buffer occupancy is what a pixel-level ring buffer holds, lifted to
lines: events that stream in lock-step (a loaded line and everything it
triggers downstream, a *slot*) overwrite released lines in place, so a line
written and a line released in the same slot swap; while the slot streams,
each such ring also holds its window's lead into the new line (k − 1
pixels of a k-wide window, one pixel for a 1×1 layer, the column delay of a
short skip). Lines written without a release (filling, depth-to-space's
waiting lines, an upsampler's replayed line) are allocated whole. Line-buffer
ALLOC/FREE steps carry the ring's id (its index in `StackPlan.consumers`) as
their address, so the simulator can trace each ring's occupancy.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import pairwise

import numpy as np

from hwsim.errors import HwsimError
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.schedule import LayerSchedule, Schedule
from hwsim.vocab import NO_LEVEL, STEP_DTYPE, ceil_div, Level, Operand, StepKind
from hwsim.workload.ir import Graph, Layer, LayerKind

Cut = int | str

WINDOW_KINDS = frozenset({LayerKind.CONV, LayerKind.MAX_POOL, LayerKind.AVG_POOL})
GLOBAL_KINDS = frozenset({LayerKind.GLOBAL_AVG_POOL, LayerKind.GLOBAL_MAX_POOL, LayerKind.FC})
MERGE_KINDS = frozenset({LayerKind.ADD, LayerKind.MUL, LayerKind.CONCAT})
NOT_COMPUTE = frozenset({LayerKind.INPUT, LayerKind.OUTPUT})
DRAM_ALIGN_BYTES = 4096


class DepthFirstError(HwsimError):
    """A depth-first request that cannot be mapped or modelled (bad cut, tiling factor, precision)."""


class WeightPolicy(StrEnum):
    """Where the model's parameters live (sec. 5)."""

    ON_CHIP = "on_chip"  # whole model on chip, loaded once: no DRAM bytes per inference
    PER_STACK = "per_stack"  # only the running stack's parameters, refetched every inference


# ----- stacks and skips -------------------------------------------------------------------------
def split_stacks(graph: Graph, cuts: Sequence[Cut]) -> tuple[tuple[Layer, ...], ...]:
    """The compute layers (no input/output markers) in graph order, split after each cut layer."""
    compute = [l for l in graph if l.kind not in NOT_COMPUTE]
    if not compute:
        raise DepthFirstError(f"{graph.name}: no compute layers to stack")
    position = {l.name: i for i, l in enumerate(compute)}
    after: set[int] = set()
    for cut in cuts:
        name = graph.layers[cut].name if isinstance(cut, int) and 0 <= cut < len(graph) else cut
        if not isinstance(name, str) or name not in position:
            raise DepthFirstError(f"{graph.name}: cut {cut!r} is not a compute layer; give a layer name or index "
                                  f"between the first and the last compute layer")
        if position[name] == len(compute) - 1 or position[name] in after:
            raise DepthFirstError(f"{graph.name}: cut after layer {name!r} is repeated or leaves an empty stack; "
                                  "remove it")
        after.add(position[name])
    bounds = [0, *sorted(p + 1 for p in after), len(compute)]
    return tuple(tuple(compute[a:b]) for a, b in pairwise(bounds))


def long_skips(graph: Graph, stacks: Sequence[Sequence[Layer]], max_short: int) -> frozenset[tuple[str, str]]:
    """(tensor, merge layer) edges that go through DRAM; raises if a cut splits a short skip."""
    index = {l.name: i for i, l in enumerate(graph.layers)}
    stack_of = {l.name: i for i, s in enumerate(stacks) for l in s}
    long = set()
    for merge in graph.of_kind(*MERGE_KINDS):
        for t in dict.fromkeys(merge.inputs):
            others = [u for u in merge.inputs if u != t]
            if not any(reaches(graph, t, u, index) for u in others):
                continue
            source = graph.producer(t)
            span = index[merge.name] - index[source.name]
            if span > max_short:
                long.add((t, merge.name))
                continue
            # The long path starts at a consumer of t; it and the merge must share a stack.
            path = [c for c in graph.consumers(t) if c is not merge
                    and any(reaches(graph, c.output, u, index) for u in others)]
            for start in path:
                if stack_of[start.name] != stack_of[merge.name]:
                    split = stacks[stack_of[start.name]][-1].name
                    raise DepthFirstError(
                        f"{graph.name}: the cut after layer {split!r} splits the short skip from {t!r} to "
                        f"{merge.name!r} ({span} layers); cut before {start.name!r} or after {merge.name!r}, "
                        f"or pass max_short_skip_layers < {span} to send it through DRAM")
    return frozenset(long)


def reaches(graph: Graph, source: str, target: str, index: dict[str, int]) -> bool:
    """Whether tensor `target` depends on tensor `source`."""
    floor, todo, seen = index[source], [target], set()
    while todo:
        t = todo.pop()
        if t == source:
            return True
        if t in seen or index[t] < floor:
            continue
        seen.add(t)
        todo.extend(graph.producer(t).inputs)
    return False


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

    def first_array(self, y: np.ndarray, n_in: int) -> np.ndarray:
        """`first` of every element of y."""
        if self.kind == "window":
            return np.minimum(np.maximum(self.s * y - self.pad, 0), n_in)
        if self.kind == "replicate":
            return np.minimum(n_in, y // self.s)
        if self.kind == "transposed":
            return np.minimum(np.maximum(ceil_div(y + self.pad - self.k + 1, self.s), 0), n_in)
        return np.zeros_like(y)

    def end_array(self, y_end: np.ndarray, n_in: int) -> np.ndarray:
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
    bounds: dict[str, np.ndarray]  # int64 [tiling + 1]
    starts: dict[str, np.ndarray]  # int64 [tiling]
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
    bounds: dict[str, np.ndarray] = {}
    starts: dict[str, np.ndarray] = {}
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


# ----- events: the depth-first order of one tile (the same for every tile) ------------------------
@dataclass
class Event:
    """One unit of work of a tile: a stack input line loaded, or a layer computing output lines."""

    layer: int  # index into the stack, or -1 - k for loading external tensor k
    first_row: int  # first output line (the loaded line)
    rows: int  # output lines written (0 for a whole-map layer still accumulating)
    reads: list[tuple[str, int, int]] = field(default_factory=list)  # (tensor, first line, end line) read on chip
    dram_reads: list[tuple[str, int, int]] = field(default_factory=list)  # lines read straight from DRAM
    released: dict[str, int] = field(default_factory=dict)  # tensor -> lines released after the event
    slot: int = 0
    swapped_write: bool = False  # its first written line overwrites a released line in place
    swapped_release: dict[str, int] = field(default_factory=dict)  # tensor -> 1 if one release was swapped
    lead_alloc: dict[str, int] = field(default_factory=dict)  # ring -> lead words allocated as its slot starts
    lead_free: dict[str, int] = field(default_factory=dict)  # ring -> lead words freed as its slot ends


def tile_events(plan: StackPlan) -> list[Event]:
    """The events of one tile in depth-first order, with slots and swaps resolved."""
    layers = plan.layers
    position = {l.name: i for i, l in enumerate(layers)}
    maps = {l.name: axis_maps(l, plan.scan_rows)[0] for l in layers}
    out_rows = {l.name: plan.scan[l.output] for l in layers}
    made_here = {l.output for l in layers}
    produced = {t: 0 if t in made_here or t in plan.external else plan.scan[t] for t in plan.scan}  # DRAM: all there
    released = dict.fromkeys(plan.consumers, 0)
    next_y = {l.name: 0 for l in layers}
    writer_slot: dict[str, list[int]] = {t: [-1] * plan.scan[t] for t in plan.scan}
    writer_first: dict[str, list[bool]] = {t: [False] * plan.scan[t] for t in plan.scan}
    events: list[Event] = []
    slot = -1

    def step_rows(l: Layer) -> int:
        return l.factor[0 if plan.scan_rows else 1] if l.kind is LayerKind.DEPTH_TO_SPACE else 1

    def events_of(l: Layer) -> int:
        if l.kind in GLOBAL_KINDS:
            return max(plan.scan[t] for t in l.inputs)
        return ceil_div(out_rows[l.name], step_rows(l))

    def needs(l: Layer, k: int) -> dict[str, tuple[int, int]]:
        """Input lines event k of l reads, per input."""
        if l.kind in GLOBAL_KINDS:  # accumulate one input line per event
            return {t: (min(k, plan.scan[t] - 1), min(k + 1, plan.scan[t])) for t in l.inputs}
        y0, y1 = k * step_rows(l), min(out_rows[l.name], (k + 1) * step_rows(l))
        return {t: (maps[l.name].first(y0, plan.scan[t]), maps[l.name].end(y1, plan.scan[t])) for t in l.inputs}

    def ready(l: Layer) -> bool:
        k = next_y[l.name]
        if k >= events_of(l):
            return False
        return all(end <= produced[t] for t, (_, end) in needs(l, k).items())

    def first_needed(l: Layer, t: str) -> int:
        k = next_y[l.name]
        if k >= events_of(l):
            return plan.scan[t]
        return needs(l, k)[t][0]

    def lockstep(l: Layer) -> bool:
        """Whether l's next event streams with the current slot: it reads for the first time a line that an
        event of this slot wrote first."""
        k = next_y[l.name]
        span = needs(l, k)
        previous = needs(l, k - 1) if k else {}
        for t in plan.inputs[l.name]:
            end = span[t][1]
            if end > previous.get(t, (0, 0))[1] and writer_first[t][end - 1] and writer_slot[t][end - 1] == slot:
                return True
        return False

    total = sum(events_of(l) for l in layers)
    done = 0
    while done < total:
        candidates = [l for l in reversed(layers) if ready(l)]  # deepest first
        chosen = next((l for l in candidates if lockstep(l)), candidates[0] if candidates else None)
        if chosen is None:
            pending = [t for t in plan.external if produced[t] < plan.scan[t]]
            if not pending:
                raise DepthFirstError(f"stack ending at {layers[-1].name!r}: no layer can proceed; "
                                      "the stack's line dependencies are inconsistent")
            t = min(pending, key=lambda u: produced[u] / plan.scan[u])
            slot += 1
            r = produced[t]
            writer_slot[t][r], writer_first[t][r] = slot, True
            produced[t] += 1
            events.append(Event(-1 - plan.external.index(t), r, 1, slot=slot))
            continue
        l = chosen
        k = next_y[l.name]
        span = needs(l, k)
        if not lockstep(l):
            slot += 1
        ev = Event(position[l.name], 0, 0, slot=slot)
        ev.reads = [(t, *span[t]) for t in plan.inputs[l.name]]
        ev.dram_reads = [(t, *span[t]) for t in plan.dram_inputs[l.name]]
        if l.kind in GLOBAL_KINDS:
            ev.first_row, ev.rows = 0, int(k == events_of(l) - 1)
        else:
            ev.first_row = k * step_rows(l)
            ev.rows = min(out_rows[l.name], (k + 1) * step_rows(l)) - ev.first_row
        for j in range(ev.rows):
            writer_slot[l.output][ev.first_row + j] = slot
            writer_first[l.output][ev.first_row + j] = j == 0
        produced[l.output] += ev.rows
        next_y[l.name] += 1
        done += 1
        for t in plan.inputs[l.name]:
            keep = min(first_needed(c, t) for c in plan.consumers[t])
            if keep > released[t]:
                ev.released[t] = keep - released[t]
                released[t] = keep
        events.append(ev)
    _resolve_swaps(plan, events)
    return events


def _resolve_swaps(plan: StackPlan, events: list[Event]) -> None:
    """Pair, per ring and slot, the first line written with a line released in the same slot; the slot
    then holds the ring's lead (allocated at its first event, freed after its last; a run of such slots
    holds it from the first to the last)."""
    written_by: dict[tuple[str, int], int] = {}  # (ring, slot) -> event that wrote the ring's first line there
    for i, ev in enumerate(events):
        out = plan.external[-1 - ev.layer] if ev.layer < 0 else plan.layers[ev.layer].output
        if ev.rows and out in plan.consumers:
            written_by.setdefault((out, ev.slot), i)
    slot_first: dict[int, int] = {}
    slot_last: dict[int, int] = {}
    for i, ev in enumerate(events):
        slot_first.setdefault(ev.slot, i)
        slot_last[ev.slot] = i
    swap_slots: dict[str, list[int]] = {}
    for i, ev in enumerate(events):
        for t in ev.released:
            key = (t, ev.slot)
            w = written_by.get(key)
            if w is None or w >= i or (swap_slots.get(t) or [-1])[-1] == ev.slot:
                continue
            swap_slots.setdefault(t, []).append(ev.slot)
            events[w].swapped_write = True
            ev.swapped_release[t] = 1
    for t, slots in swap_slots.items():  # consecutive streaming slots hold the lead without a gap
        words = plan.leads[t] * plan.channels[t]
        starts = [s for k, s in enumerate(slots) if k == 0 or slots[k - 1] != s - 1]
        ends = [s for k, s in enumerate(slots) if k == len(slots) - 1 or slots[k + 1] != s + 1]
        for a, b in zip(starts, ends):
            events[slot_first[a]].lead_alloc[t] = words
            events[slot_last[b]].lead_free[t] = words


# ----- steps --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DepthFirstMapping:
    """The choices behind a depth-first schedule."""

    cuts: tuple[str, ...]
    tiling: tuple[int, ...]
    weights: WeightPolicy
    max_short_skip_layers: int = 8


def depth_first_schedule(graph: Graph, hw: Accelerator, mapping: DepthFirstMapping) -> Schedule:
    """One `LayerSchedule` per stack; its steps run the stack's tiles one after another."""
    if hw.line_buffer is None:
        raise DepthFirstError(f"{hw.name}: has no line_buffer section; depth-first schedules need one "
                              "(see configs/depthfirst-edge.yaml)")
    stacks = split_stacks(graph, mapping.cuts)
    if len(mapping.tiling) != len(stacks):
        raise DepthFirstError(f"{graph.name}: {len(mapping.tiling)} tiling factors for {len(stacks)} stacks; "
                              "give one per stack")
    edges = long_skips(graph, stacks, mapping.max_short_skip_layers)
    layout = _DramLayout(graph, hw.word_bytes)
    units = []
    for stack, tf in zip(stacks, mapping.tiling):
        if not isinstance(tf, int) or tf < 1:
            raise DepthFirstError(f"{graph.name}: stack ending at layer {stack[-1].name!r} has tiling factor "
                                  f"{tf!r}; use an integer ≥ 1 (1 = no tiling)")
        plan = plan_stack(graph, stack, tf, edges)
        params = {"layers": [l.name for l in stack], "tiling": tf, "weights": str(mapping.weights),
                  "lines_along": "width" if plan.scan_rows else "height",
                  "rings": list(plan.consumers),
                  "ring_width_pixels": {t: plan.ring_width(t) for t in plan.consumers},
                  "lead_pixels": dict(plan.leads)}
        units.append(LayerSchedule(stack[-1], params, _generator(plan, hw, mapping.weights, layout),
                                   stack=tuple(stack), pipelined=False))  # rings are reused line by line
    return Schedule(graph.name, hw.name, "depth_first", 1, tuple(units))


class _DramLayout:
    """Word addresses in DRAM: every tensor, then per tensor a region for offloaded boundary columns."""

    def __init__(self, graph: Graph, word_bytes: int) -> None:
        self.base: dict[str, int] = {}
        self.boundary: dict[str, int] = {}
        align = DRAM_ALIGN_BYTES // word_bytes
        cursor = 0
        for l in graph:
            for table in (self.base, self.boundary):
                table[l.output] = cursor
                cursor += ceil_div(l.out_shape.elements, align) * align
        self.weights = cursor


def _generator(plan: StackPlan, hw: Accelerator, weights: WeightPolicy,
               layout: _DramLayout) -> Callable[[], Iterator[np.ndarray]]:
    """The stack's step blocks: its weights (per-stack policy), then one block per tile."""
    def generate() -> Iterator[np.ndarray]:
        template = _template(plan, hw, layout)
        start = 0
        if weights is WeightPolicy.PER_STACK:  # the stack's parameters, in GLB-sized pieces
            words = sum(l.params for l in plan.layers)
            glb_words = hw.glb.size_bytes // hw.word_bytes
            pieces = np.arange(0, words, glb_words)
            block = np.zeros(len(pieces), dtype=STEP_DTYPE)
            block["kind"], block["operand"] = StepKind.TRANSFER, Operand.FILTER
            block["src"], block["dst"] = Level.DRAM, Level.GLB
            block["words"] = np.minimum(glb_words, words - pieces)
            block["src_addr"] = layout.weights + pieces
            yield block
            start = 1
        for tile in range(plan.tiling):
            block = template.evaluate(tile)
            block["group"] += start + tile * template.groups
            yield block
    return generate


# A template step: the STEP_DTYPE fields, with words and addresses as const + coef · quantity[tile, ref].
_TEMPLATE_DTYPE = np.dtype([
    ("kind", np.uint8), ("operand", np.uint8), ("src", np.uint8), ("dst", np.uint8), ("group", np.int64),
    ("w_const", np.int64), ("w_coef", np.int64), ("w_ref", np.int32),
    ("s_const", np.int64), ("s_coef", np.int64), ("s_ref", np.int32),
    ("d_const", np.int64), ("d_coef", np.int64), ("d_ref", np.int32),
    ("macs_coef", np.int64), ("ops_coef", np.int64), ("x_ref", np.int32), ("active", np.int32),
])
ONE = 0  # quantity 0 is the constant 1


class _Quantities:
    """Per-tile quantities a template refers to: widths, computed widths, overlaps, column starts."""

    def __init__(self, plan: StackPlan) -> None:
        self.plan = plan
        self.refs: dict[tuple[str, str], int] = {}
        self.columns: list[list[int]] = [[1] * plan.tiling]

    def ref(self, what: str, t: str) -> int:
        key = (what, t)
        if key not in self.refs:
            p, n = self.plan, self.plan.tiling
            values = {
                "width": [p.width(t, i) for i in range(n)],
                "computed": [p.computed(t, i) for i in range(n)],
                "overlap": [p.overlap(t, i) for i in range(n)],
                "overlap_next": [p.overlap(t, i + 1) if i + 1 < n else 0 for i in range(n)],
                "start": [p.starts[t][i] for i in range(n)],
                "bound": [p.bounds[t][i] for i in range(n)],
                "next_start": [p.starts[t][i + 1] if i + 1 < n else p.bounds[t][n] for i in range(n)],
            }[what]
            self.refs[key] = len(self.columns)
            self.columns.append(values)
        return self.refs[key]

    def table(self) -> np.ndarray:
        return np.array(self.columns, dtype=np.int64).T  # [tile, ref]


@dataclass(frozen=True)
class _Template:
    """A tile's steps with words, addresses and work as const + coef · quantities[tile, ref]."""

    steps: np.ndarray  # _TEMPLATE_DTYPE
    quantities: np.ndarray  # int64 [tile, ref]
    groups: int  # step groups per tile

    def evaluate(self, tile: int) -> np.ndarray:
        """The steps of one tile."""
        template, values = self.steps, self.quantities[tile]
        block = np.zeros(len(template), dtype=STEP_DTYPE)
        for name in ("kind", "operand", "src", "dst", "group"):
            block[name] = template[name]
        block["words"] = template["w_const"] + template["w_coef"] * values[template["w_ref"]]
        block["src_addr"] = template["s_const"] + template["s_coef"] * values[template["s_ref"]]
        block["dst_addr"] = template["d_const"] + template["d_coef"] * values[template["d_ref"]]
        compute = template["kind"] == StepKind.COMPUTE
        columns = values[template["x_ref"]]
        block["macs"] = np.where(compute, template["macs_coef"] * columns, 0)
        block["ops"] = np.where(compute, template["ops_coef"] * columns, 0)
        block["active_pes"] = np.where(compute, np.minimum(template["active"], np.maximum(1, block["macs"])), 0)
        for name in ("rf_filter_reads", "rf_ifmap_reads", "rf_psum_reads", "rf_psum_writes"):
            block[name] = block["macs"]  # a MAC reads a filter, an ifmap and a psum word and writes the psum
        if not values[template["x_ref"][compute]].any():  # a tile with nothing to compute reads no weights
            block["words"][(template["operand"] == Operand.FILTER) & (template["src"] == Level.GLB)] = 0
        return block


def _template(plan: StackPlan, hw: Accelerator, layout: _DramLayout) -> _Template:
    """Build one tile's steps from its events."""
    events = tile_events(plan)
    q = _Quantities(plan)
    rows: list[tuple] = []
    pes = hw.pe_array.rows * hw.pe_array.cols
    glb_words = hw.glb.size_bytes // hw.word_bytes
    group = 0

    def add(kind, operand, src, dst, words=(0, 0, ONE), src_addr=(0, 0, ONE), dst_addr=(0, 0, ONE),
            macs=0, ops=0, x_ref=ONE, active=0):
        rows.append((kind, operand, src, dst, group, *words, *src_addr, *dst_addr, macs, ops, x_ref, active))

    def row_addr(t: str, row: int, col: str, region: dict[str, int]) -> tuple[int, int, int]:
        c = plan.channels[t]
        return region[t] + row * plan.line[t] * c, c, q.ref(col, t)

    ring_words = {t: plan.ring_width(t) * plan.channels[t] for t in plan.consumers}
    ring = {t: (i, 0, ONE) for i, t in enumerate(plan.consumers)}  # ALLOC/FREE address: the ring's id
    pending_loads: list[Event] = []
    for ev in events:
        if ev.layer < 0:
            pending_loads.append(ev)
            continue
        layer = plan.layers[ev.layer]
        out = layer.output
        for p in [*pending_loads, ev]:
            for t, words in p.lead_alloc.items():
                add(StepKind.ALLOC, Operand.IFMAP, NO_LEVEL, Level.LINE_BUFFER, (words, 0, ONE), dst_addr=ring[t])
        for p in pending_loads:  # stack input lines DRAM -> line buffer
            t = plan.external[-1 - p.layer]
            c = plan.channels[t]
            if not p.swapped_write:
                add(StepKind.ALLOC, Operand.IFMAP, NO_LEVEL, Level.LINE_BUFFER, (ring_words[t], 0, ONE),
                    dst_addr=ring[t])
            src = row_addr(t, p.first_row, "start", layout.base)
            add(StepKind.TRANSFER, Operand.IFMAP, Level.DRAM, Level.LINE_BUFFER, (0, c, q.ref("width", t)), src)
        pending_loads = []
        on_chip_out = out in plan.consumers
        if on_chip_out and ev.rows:
            whole = ev.rows - int(ev.swapped_write)
            if whole:
                add(StepKind.ALLOC, Operand.OFMAP, NO_LEVEL, Level.LINE_BUFFER, (whole * ring_words[out], 0, ONE),
                    dst_addr=ring[out])
            if plan.overlaps(out).any():
                for j in range(ev.rows):  # boundary columns fetched back from the tile before
                    src = row_addr(out, ev.first_row + j, "start", layout.boundary)
                    add(StepKind.TRANSFER, Operand.IFMAP, Level.DRAM, Level.LINE_BUFFER,
                        (0, plan.channels[out], q.ref("overlap", out)), src)
        for t, first, end in ev.reads:  # input windows line buffer -> array
            add(StepKind.TRANSFER, Operand.IFMAP, Level.LINE_BUFFER, Level.RF,
                (0, (end - first) * plan.channels[t], q.ref("width", t)))
        for t, first, end in ev.dram_reads:  # long-skip lines straight from DRAM
            add(StepKind.TRANSFER, Operand.IFMAP, Level.DRAM, Level.RF,
                (0, (end - first) * plan.channels[t], q.ref("width", t)), row_addr(t, first, "start", layout.base))
        for piece in range(0, layer.params, glb_words):  # weights streamed from the GLB, in GLB-sized pieces
            add(StepKind.TRANSFER, Operand.FILTER, Level.GLB, Level.RF, (min(glb_words, layer.params - piece), 0, ONE))
        macs, ops = _work_per_column(layer, ev, plan)
        add(StepKind.COMPUTE, 0, NO_LEVEL, NO_LEVEL, macs=macs, ops=ops, x_ref=q.ref("computed", out), active=pes)
        for j in range(ev.rows):  # the computed line(s): to a ring, to DRAM, boundary columns offloaded
            row = ev.first_row + j
            c = plan.channels[out]
            if on_chip_out:
                add(StepKind.TRANSFER, Operand.OFMAP, Level.RF, Level.LINE_BUFFER, (0, c, q.ref("computed", out)))
                if plan.tiling > 1:
                    add(StepKind.TRANSFER, Operand.OFMAP, Level.LINE_BUFFER, Level.DRAM,
                        (0, c, q.ref("overlap_next", out)), dst_addr=row_addr(out, row, "next_start", layout.boundary))
            if out in plan.leaving:
                add(StepKind.TRANSFER, Operand.OFMAP, Level.RF, Level.DRAM, (0, c, q.ref("computed", out)),
                    dst_addr=row_addr(out, row, "bound", layout.base))
        for t, lines in ev.released.items():
            whole = lines - ev.swapped_release.get(t, 0)
            if whole:
                add(StepKind.FREE, Operand.IFMAP, NO_LEVEL, Level.LINE_BUFFER, (whole * ring_words[t], 0, ONE),
                    dst_addr=ring[t])
        for t, words in ev.lead_free.items():
            add(StepKind.FREE, Operand.IFMAP, NO_LEVEL, Level.LINE_BUFFER, (words, 0, ONE), dst_addr=ring[t])
        group += 1
    return _Template(np.array(rows, dtype=_TEMPLATE_DTYPE), q.table(), group)


def _work_per_column(layer: Layer, ev: Event, plan: StackPlan) -> tuple[int, int]:
    """(MACs, other ops) of the event per computed output column."""
    out = plan.scan[layer.output] * plan.line[layer.output]
    if layer.kind in GLOBAL_KINDS:  # one input line's share of the whole-map layer
        lines = max(plan.scan[t] for t in layer.inputs)
        return layer.macs // lines, layer.ops // lines
    per_pixel_macs, per_pixel_ops = layer.macs / out, layer.ops / out
    return round(per_pixel_macs * ev.rows), round(per_pixel_ops * ev.rows)
