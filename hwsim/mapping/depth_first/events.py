"""Event order of one tile: which layer computes which output lines when, which lines each event reads
and releases, and the slots and swaps that decide the line buffers' occupancy (the same for every tile)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hwsim.mapping.depth_first.geometry import axis_maps
from hwsim.mapping.depth_first.plan import GLOBAL_KINDS, DepthFirstError, StackPlan
from hwsim.vocab import ceil_div
from hwsim.workload.ir import Layer, LayerKind


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


LineSpan = tuple[int, int]  # [first line, end line) of an FM


def tile_events(plan: StackPlan) -> list[Event]:
    """The events of one tile in depth-first order, with slots and swaps resolved."""
    events = _TileWalk(plan).run()
    _resolve_swaps(plan, events)
    return events


def _rows_per_event(layer: Layer, scan_rows: bool) -> int:
    """Output lines one event of `layer` writes: depth-to-space writes its f lines at once."""
    return layer.factor[0 if scan_rows else 1] if layer.kind is LayerKind.DEPTH_TO_SPACE else 1


def _event_count(layer: Layer, plan: StackPlan, rows_per_event: int) -> int:
    """Events of `layer` per tile: one per output line (group), or one per input line for a whole-map layer."""
    if layer.kind in GLOBAL_KINDS:
        return max(plan.scan[t] for t in layer.inputs)
    return ceil_div(plan.scan[layer.output], rows_per_event)


class _TileWalk:
    """One tile walked in depth-first order: the deepest layer that can proceed runs next (one streaming
    with the current slot first), and a stack input line is loaded only when no layer can.

    State: per FM the lines produced and released and the slot that wrote each line (and whether it was
    that event's first line), per layer its next event, and the slot being streamed.
    """

    def __init__(self, plan: StackPlan) -> None:
        self.plan = plan
        layers = plan.layers
        self.position = {l.name: i for i, l in enumerate(layers)}
        self.maps = {l.name: axis_maps(l, plan.scan_rows)[0] for l in layers}
        self.out_rows = {l.name: plan.scan[l.output] for l in layers}
        self.rows_per_event = {l.name: _rows_per_event(l, plan.scan_rows) for l in layers}
        self.event_count = {l.name: _event_count(l, plan, self.rows_per_event[l.name]) for l in layers}
        made_here = {l.output for l in layers}
        # FMs read from DRAM are all there; those made or loaded here start empty.
        self.produced = {t: 0 if t in made_here or t in plan.external else plan.scan[t] for t in plan.scan}
        self.released = dict.fromkeys(plan.consumers, 0)
        self.next_y = {l.name: 0 for l in layers}
        self.writer_slot: dict[str, list[int]] = {t: [-1] * plan.scan[t] for t in plan.scan}
        self.writer_first: dict[str, list[bool]] = {t: [False] * plan.scan[t] for t in plan.scan}
        self.events: list[Event] = []
        self.slot = -1

    def run(self) -> list[Event]:
        """Every event of the tile, in order."""
        total = sum(self.event_count.values())
        done = 0
        while done < total:
            layer, streams = self._choose()
            if layer is None:
                self._load_line()
            else:
                self._compute(layer, streams)
                done += 1
        return self.events

    # ----- what each layer needs and whether it can run ----------------------------------------------
    def needs(self, layer: Layer, k: int) -> dict[str, LineSpan]:
        """Input lines event k of `layer` reads, per input."""
        scan = self.plan.scan
        if layer.kind in GLOBAL_KINDS:  # accumulate one input line per event
            return {t: (min(k, scan[t] - 1), min(k + 1, scan[t])) for t in layer.inputs}
        step = self.rows_per_event[layer.name]
        y0, y1 = k * step, min(self.out_rows[layer.name], (k + 1) * step)
        m = self.maps[layer.name]
        return {t: (m.first(y0, scan[t]), m.end(y1, scan[t])) for t in layer.inputs}

    def ready(self, layer: Layer) -> bool:
        """Whether every input line the next event of `layer` reads has been produced."""
        k = self.next_y[layer.name]
        if k >= self.event_count[layer.name]:
            return False
        return all(end <= self.produced[t] for t, (_, end) in self.needs(layer, k).items())

    def first_needed(self, layer: Layer, t: str) -> int:
        """The first line of t that `layer` still needs (t's line count once it is done)."""
        k = self.next_y[layer.name]
        if k >= self.event_count[layer.name]:
            return self.plan.scan[t]
        return self.needs(layer, k)[t][0]

    def lockstep(self, layer: Layer) -> bool:
        """Whether the next event of `layer` streams with the current slot: it reads for the first time a
        line that an event of this slot wrote first."""
        k = self.next_y[layer.name]
        span = self.needs(layer, k)
        previous = self.needs(layer, k - 1) if k else {}
        for t in self.plan.inputs[layer.name]:
            end = span[t][1]
            if end > previous.get(t, (0, 0))[1] and self.writer_first[t][end - 1] \
                    and self.writer_slot[t][end - 1] == self.slot:
                return True
        return False

    def _choose(self) -> tuple[Layer | None, bool]:
        """The layer to run next and whether it streams with the current slot: the deepest ready layer
        that streams, else the deepest ready one; (None, False) when none is ready."""
        candidates = [l for l in reversed(self.plan.layers) if self.ready(l)]
        for layer in candidates:
            if self.lockstep(layer):
                return layer, True
        return (candidates[0], False) if candidates else (None, False)

    # ----- events --------------------------------------------------------------------------------------
    def _load_line(self) -> None:
        """Load the next line of the stack input that is least far along; it opens a new slot."""
        plan = self.plan
        pending = [t for t in plan.external if self.produced[t] < plan.scan[t]]
        if not pending:
            raise DepthFirstError(f"stack ending at {plan.layers[-1].name!r}: no layer can proceed; "
                                  "the stack's line dependencies are inconsistent")
        t = min(pending, key=lambda u: self.produced[u] / plan.scan[u])
        self.slot += 1
        row = self.produced[t]
        self._write_lines(t, row, 1)
        self.events.append(Event(-1 - plan.external.index(t), row, 1, slot=self.slot))

    def _compute(self, layer: Layer, streams: bool) -> None:
        """The next event of `layer`: it reads its input windows, writes its output lines and releases the
        input lines no consumer needs any more; unless it streams with the current slot it opens a new one."""
        k = self.next_y[layer.name]
        span = self.needs(layer, k)
        if not streams:
            self.slot += 1
        first_row, rows = self._output_lines(layer, k)
        ev = Event(self.position[layer.name], first_row, rows, slot=self.slot,
                   reads=[(t, *span[t]) for t in self.plan.inputs[layer.name]],
                   dram_reads=[(t, *span[t]) for t in self.plan.dram_inputs[layer.name]])
        self._write_lines(layer.output, first_row, rows)
        self.next_y[layer.name] += 1
        self._release_inputs(layer, ev)
        self.events.append(ev)

    def _output_lines(self, layer: Layer, k: int) -> tuple[int, int]:
        """(first output line, lines written) of event k of `layer`; a whole-map layer writes its one
        line at its last event."""
        if layer.kind in GLOBAL_KINDS:
            return 0, int(k == self.event_count[layer.name] - 1)
        first = k * self.rows_per_event[layer.name]
        return first, min(self.out_rows[layer.name], first + self.rows_per_event[layer.name]) - first

    def _write_lines(self, t: str, first_row: int, rows: int) -> None:
        """Record lines first_row … first_row + rows − 1 of t as produced by the current slot."""
        for j in range(rows):
            self.writer_slot[t][first_row + j] = self.slot
            self.writer_first[t][first_row + j] = j == 0
        self.produced[t] += rows

    def _release_inputs(self, layer: Layer, ev: Event) -> None:
        """Release, after `ev`, the lines of the layer's on-chip inputs that no consumer needs any more."""
        for t in self.plan.inputs[layer.name]:
            keep = min(self.first_needed(c, t) for c in self.plan.consumers[t])
            if keep > self.released[t]:
                ev.released[t] = keep - self.released[t]
                self.released[t] = keep


# ----- slots and swaps -------------------------------------------------------------------------------
def _resolve_swaps(plan: StackPlan, events: list[Event]) -> None:
    """Pair, per ring and slot, the first line written with a line released in the same slot; the slot
    then holds the ring's lead (allocated at its first event, freed after its last; a run of such slots
    holds it from the first to the last)."""
    swap_slots = _pair_swaps(events, _first_writes(plan, events))
    slot_first: dict[int, int] = {}
    slot_last: dict[int, int] = {}
    for i, ev in enumerate(events):
        slot_first.setdefault(ev.slot, i)
        slot_last[ev.slot] = i
    for t, slots in swap_slots.items():
        words = plan.leads[t] * plan.channels[t]
        for a, b in _runs(slots):
            events[slot_first[a]].lead_alloc[t] = words
            events[slot_last[b]].lead_free[t] = words


def _first_writes(plan: StackPlan, events: list[Event]) -> dict[tuple[str, int], int]:
    """(ring, slot) -> the event that wrote the ring's first line in that slot."""
    written_by: dict[tuple[str, int], int] = {}
    for i, ev in enumerate(events):
        out = plan.external[-1 - ev.layer] if ev.layer < 0 else plan.layers[ev.layer].output
        if ev.rows and out in plan.consumers:
            written_by.setdefault((out, ev.slot), i)
    return written_by


def _pair_swaps(events: list[Event], written_by: dict[tuple[str, int], int]) -> dict[str, list[int]]:
    """Mark, per ring and slot, a release after the slot's first write as swapped with it (at most one
    per ring and slot); the slots with a swap, per ring, ascending."""
    swap_slots: dict[str, list[int]] = {}
    for i, ev in enumerate(events):
        for t in ev.released:
            w = written_by.get((t, ev.slot))
            if w is None or w >= i or (swap_slots.get(t) or [-1])[-1] == ev.slot:
                continue
            swap_slots.setdefault(t, []).append(ev.slot)
            events[w].swapped_write = True
            ev.swapped_release[t] = 1
    return swap_slots


def _runs(slots: list[int]) -> list[tuple[int, int]]:
    """(first, last) of each run of consecutive slots: consecutive streaming slots hold the lead without a gap."""
    starts = [s for k, s in enumerate(slots) if k == 0 or slots[k - 1] != s - 1]
    ends = [s for k, s in enumerate(slots) if k == len(slots) - 1 or slots[k + 1] != s + 1]
    return list(zip(starts, ends))
