"""Event order of one tile: which layer computes which output lines when, which lines each event reads
and releases, and the slots and swaps that decide the line buffers' occupancy (the same for every tile)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hwsim.mapping.depth_first.geometry import GLOBAL_KINDS, StackPlan, axis_maps
from hwsim.mapping.depth_first.stacks import DepthFirstError
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
