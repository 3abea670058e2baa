"""Skipping a pipelined work's steady state: periods that repeat are made from the last one, not simulated again.

Under the pipelined policy three processes overlap (`hwsim.sim.executor`): the prefetcher loads a group while the
array computes the one before and the storer stores the one before that. A fully connected layer on a row-stationary
array runs thousands of groups of one or two shapes in a steady rhythm: each group's filter tile waits for space the
group before frees, so when the storer has ended a group's stores the array waits for work and the prefetcher waits
for that space. What the machine does from such a moment follows from what it holds then, all relative to the cycle:
every component's free cycles (those already past only by their order: `relative_state`), the buffer spaces and
the claim waiting in them, the events due, where the prefetcher stands in the group it loads (its step, the levels
its filters went to), how long the array has waited, and the shapes of the groups ahead (every step field but the
schedule's group id and a DRAM address, of which only its place in the DRAM's address period counts). Addresses in
DRAM decide nothing else when the DRAM keeps no open rows: `SimpleDram` first come first served, without a row
buffer.

When that state equals the one p groups earlier (p ≤ MOST_PERIOD_GROUPS) and the groups ahead repeat the last p
shapes, each of the next periods does what the last one did, moved by its cycles and steps: its records (a DRAM
burst's address moved with its own group's), the buffers' occupancy events and every counter. Those periods are
made from the last one, handed to the recorder group by group as the storer would (its flushes and hand-ons at the
same points), and the machine jumps ahead: the clock, the events due, every component's free cycles and the group
the prefetcher loads. The trace, the counters and every cycle are those of simulating each group (the tests compare
both). Not skipped: a period during which records were flushed or handed on, or through which a buffer's peak rose,
or that holds named or placed buffers.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Protocol

import numpy as np
import simpy

from hwsim.sim.clock import Clock
from hwsim.sim.component import Statistic, declared_stats
from hwsim.sim.dram.simple import SimpleDram
from hwsim.sim.groups import Group
from hwsim.sim.machine import NAMED_LEVELS, PLACED_LEVELS, Machine
from hwsim.sim.recorder import COLUMNS, FLUSH_RECORDS, MOST_PASS_RECORDS, PASS_COLUMNS
from hwsim.sim.runner import StepRunner
from hwsim.sim.space import Space
from hwsim.sim.sram import Sram
from hwsim.vocab import Level, StepField, StepKind

STEADY = True  # skip repeating periods of pipelined works (False: simulate every group)
MOST_PERIOD_GROUPS = 64  # the longest period looked for, in groups
AHEAD_GROUPS = 4096  # groups looked at ahead for one skip, at most (what a skip holds at once) ...
AHEAD_STEPS = 1 << 16  # ... and as many as hold about this many steps
MOST_MISSES = 4 * MOST_PERIOD_GROUPS  # checkpoints in a row matching none before, after which checking pauses

_DRAM = int(Level.DRAM)
_TRANSFER, _ALLOC, _FREE = int(StepKind.TRANSFER), int(StepKind.ALLOC), int(StepKind.FREE)
F = StepField
KIND, SRC, DST, GROUP, WORDS, SRC_ADDR, DST_ADDR = F.KIND, F.SRC, F.DST, F.GROUP, F.WORDS, F.SRC_ADDR, F.DST_ADDR
_START, _END, _STEP, _ADDRESS = (COLUMNS.index(name) for name in ("start_cycle", "end_cycle", "step", "address"))
Shape = tuple[Any, ...]


class Progress(Protocol):
    """How far a work's stores have got (`hwsim.sim.executor.Progress`)."""

    done_upto: int

    def advance(self, index: int) -> None: ...


class Queue(Protocol):
    """A hand-off between two of a work's processes (`hwsim.sim.executor.Handoff`)."""

    items: deque[Any]
    waiter: simpy.Event | None


class WorkRun(Protocol):
    """What the skip reads and moves of the executor running a work (`hwsim.sim.executor.LayerExecutor`)."""

    steps: int
    rf_wait: int
    load_wait: int
    psum_wait: int
    array_idle_from: int
    claim_wait: tuple[Group, int, int] | None
    psum_stores: deque[tuple[int, int, int, int]]

    @property
    def m(self) -> Machine: ...
    @property
    def runner(self) -> StepRunner: ...
    @property
    def stored(self) -> Progress: ...
    @property
    def handed_on_steps(self) -> int: ...
    @property
    def landing(self) -> bool: ...

    def hand_on_in(self) -> int | None: ...
    def hand_on_when_due(self) -> None: ...


class Upcoming:
    """A work's groups in order, those not taken yet looked at ahead (`ahead`) and dropped when skipped."""

    def __init__(self, source: Iterator[Group]) -> None:
        self.source = source
        self.buffer: deque[Group] = deque()
        self.taken: deque[Group] | None = None  # when kept (`keep_taken`): the groups taken whose stores may not
        # have ended

    def __iter__(self) -> Upcoming:
        return self

    def __next__(self) -> Group:
        g = self.buffer.popleft() if self.buffer else next(self.source)
        if self.taken is not None:
            self.taken.append(g)
        return g

    def keep_taken(self) -> None:
        """Keep the groups taken until `stored` says their stores have ended (for `in_flight`)."""
        self.taken = deque()

    def stored(self, index: int) -> None:
        """Group `index`'s stores have ended: forget the groups taken up to it."""
        taken = self.taken
        while taken and taken[0].index <= index:
            taken.popleft()

    def in_flight(self) -> list[Group]:
        """The groups taken whose stores have not ended (`stored`), in order."""
        return list(self.taken or ())

    def ahead(self, most_groups: int, most_steps: int) -> list[Group]:
        """The next groups, not taken: `most_groups` of them, or fewer at the work's end or where they hold
        `most_steps` steps."""
        buffer = self.buffer
        steps = sum(len(g.steps) for g in buffer)
        while len(buffer) < most_groups and steps < most_steps:
            g = next(self.source, None)
            if g is None:
                break
            buffer.append(g)
            steps += len(g.steps)
        return list(buffer)[:most_groups]

    def drop(self, n: int) -> None:
        """Forget the next `n` groups (made by a skip)."""
        for _ in range(n):
            self.buffer.popleft()


@dataclass(slots=True)
class _Mark:
    """A checkpoint: the group whose stores just ended, the cycle, the machine's relative state, the group the
    prefetcher waits to load, and where the recorder, the buffers' logs and the counters stood."""

    index: int
    now: int
    state: tuple[Any, ...]
    in_flight: list[Group]  # groups index + 1, …: loaded or loading, not stored
    rows: dict[str, int]
    runs: int
    passes: int
    logs: tuple[int, ...]
    stats: list[int | float]
    counters: tuple[int, ...]
    flushes: int
    handed: int


@dataclass
class _Window:
    """What the work did between two checkpoints a group apart, to be made again: held rows per level (with the
    window group each row's step is in), DRAM burst runs (with theirs), PE-array passes (with theirs), the buffers'
    log entries, the steps loaded, the records as the recorder counts them and the bursts among them."""

    rows: dict[str, tuple[np.ndarray, np.ndarray]]
    runs: list[tuple[tuple[Any, ...], int, int]]  # (run, window group, step position in it)
    passes: tuple[np.ndarray, np.ndarray]
    logs: list[tuple[list[int], list[int]]]
    steps: int
    counted: int
    bursts: int


class SteadyState:
    """Checkpoints of one pipelined work at each group's end of stores, and the skips they allow (module
    docstring)."""

    def __init__(self, ex: WorkRun, dram: SimpleDram, to_array: Queue, to_store: Queue, upcoming: Upcoming) -> None:
        self.ex, self.dram, self.rec = ex, dram, ex.runner.rec
        self.to_array, self.to_store, self.upcoming = to_array, to_store, upcoming
        upcoming.keep_taken()
        self.processes: list[simpy.Process] = []  # the prefetcher's and the array's (`watch`)
        m = ex.m
        self.env: Clock = m.env
        core = m.cores[0]
        self.srams: list[Sram] = [s for s in (core.glb, core.line_buffer, m.l2) if s is not None]
        self.spaces: list[Space] = [space for sram in self.srams for space in sram.spaces.values()]
        self.movers: list[Any] = [dram, *self.srams, core.pe, *core.noc.buses.values(), *self.spaces]
        self.counted = [dram, *self.srams, core.pe, *core.noc.buses.values(), *self.spaces]  # whose counters a
        # skip adds to (`stat_slots`)
        self._stat_slots: list[tuple[Any, str]] | None = None
        self.wb = ex.runner.wb
        self.history: deque[_Mark] = deque(maxlen=MOST_PERIOD_GROUPS)  # the last checkpoints, one a group
        self.seen: dict[tuple[Any, ...], _Mark] = {}  # the latest of them in each state
        self.misses = 0
        self.pause = 0
        self.pause_length = 1
        self.skipped_groups = 0  # groups made by skips (for tests and benchmarks)

    @property
    def stat_slots(self) -> list[tuple[Any, str]]:
        """(component, counter) of every declared counter a skip adds to (a buffer's peak and capacity are not
        sums), found the first time a checkpoint is noted."""
        if self._stat_slots is None:
            self._stat_slots = [(c, info.attr) for c in self.counted for info in declared_stats(type(c))
                                if isinstance(getattr(type(c), info.attr, None), Statistic)
                                and info.attr not in ("peak_bytes", "capacity_bytes")]
        return self._stat_slots

    def watch(self, processes: list[simpy.Process]) -> None:
        """The processes whose positions are part of the state (the prefetcher and the array)."""
        self.processes = processes

    @staticmethod
    def of(ex: WorkRun, to_array: Queue, to_store: Queue, upcoming: Upcoming) -> SteadyState | None:
        """The skip of a pipelined work where its machine allows it (module docstring)."""
        m, dram = ex.m, ex.m.dram
        if (not STEADY or len(m.cores) > 1 or not isinstance(dram, SimpleDram) or not dram.replays
                or dram.keeps_rows or not dram.period_bytes or not isinstance(m.env, Clock)):
            return None
        return SteadyState(ex, dram, to_array, to_store, upcoming)

    def step_shape(self, s: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """A step as its timing sees it: without its schedule group id, a DRAM address as its place in the address
        period (None: a step a skip does not cover)."""
        kind = s[KIND]
        if kind == _TRANSFER and s[WORDS] and (s[SRC] == _DRAM or s[DST] == _DRAM):
            at_src = s[SRC] == _DRAM
            address = s[SRC_ADDR] if at_src else s[DST_ADDR]
            if address < 0 or (s[SRC] == _DRAM and s[DST] == _DRAM):
                return None
            offset = address * self.wb % self.dram.period_bytes
            ends = (offset, s[DST_ADDR]) if at_src else (s[SRC_ADDR], offset)
            return (*s[:GROUP], *s[GROUP + 1:SRC_ADDR], *ends, *s[DST_ADDR + 1:])
        if kind in (_ALLOC, _FREE) and (s[DST] in NAMED_LEVELS or (s[SRC_ADDR] >= 0 and s[DST] in PLACED_LEVELS)):
            return None
        return (*s[:GROUP], *s[GROUP + 1:])

    def shape(self, g: Group) -> Shape | None:
        """The group's steps' shapes (None: a group a skip does not cover), kept on the group."""
        if g.shape is None:
            shapes = [self.step_shape(s) for s in g.steps]
            g.shape = () if any(s is None for s in shapes) else tuple(shapes)
        return g.shape or None

    def checkpoint(self, g: Group) -> None:
        """The storer has ended group `g`'s stores: note the machine's state, and skip what repeats."""
        self.upcoming.stored(g.index)
        if self.pause:
            self.pause -= 1
            return
        ex = self.ex
        if (self.to_store.items or ex.psum_stores or not (ex.landing or ex.claim_wait is not None)
                or (mark := self._mark(g)) is None):  # (the first three: what most works' groups fail at once)
            if self.history:
                self._forget()
            return
        found = self.seen.get(mark.state)
        if (found is not None and found.flushes == mark.flushes and found.handed == mark.handed
                and self._skip([*list(self.history)[found.index - mark.index:], mark])):
            self._forget()
            self.misses, self.pause_length = 0, 1
            return
        if len(self.history) == self.history.maxlen and self.seen.get(self.history[0].state) is self.history[0]:
            del self.seen[self.history[0].state]
        self.history.append(mark)
        self.seen[mark.state] = mark
        self.misses += 1
        if self.misses >= MOST_MISSES:  # no steady state so far: look again later, less often each time
            self._forget()
            self.misses = 0
            self.pause, self.pause_length = self.pause_length, min(self.pause_length * 2, 1 << 12)

    def _forget(self) -> None:
        self.history.clear()
        self.seen.clear()

    def _mark(self, g: Group) -> _Mark | None:
        """A checkpoint after group `g`'s stores, None where the processes do not stand as a skip needs: the
        prefetcher waiting for a group's loads to land or for space (its loads so far over), the storer idle, no
        psum store pending."""
        ex, env, rec = self.ex, self.env, self.rec
        now = int(env.now)
        wait = ex.claim_wait
        in_flight = self.upcoming.in_flight()
        if (not in_flight or in_flight[0].index != g.index + 1 or self.to_store.items or ex.psum_stores
                or ex.stored.done_upto != g.index or not (ex.landing or (wait is not None and wait[2] <= now))):
            return None
        shapes = [self.shape(a) for a in in_flight]
        if any(shape is None for shape in shapes):
            return None
        loading = wait[0] if wait is not None else None
        groups = tuple((a.index - g.index, shape, tuple(sorted(a.filled)), a.reads_psums,
                        None if a is loading else max(a.landed - now, 0)) for a, shape in zip(in_flight, shapes))
        components = tuple(c.relative_state(now) for c in self.movers[1:])
        if None in components:
            return None
        state = (self.dram.relative_state(now), components,
                 self._queue_state(now), groups, wait[1] if wait is not None else None,
                 tuple((item[0].index - g.index, tuple(item[1])) for item in self.to_array.items),
                 tuple(self._position(process, g.index) for process in self.processes),
                 now - ex.array_idle_from, tuple(space.peak_bytes for space in self.spaces))
        return _Mark(g.index, now, state, in_flight, {level: len(rows) for level, rows in rec.rows.items()},
                     len(rec.runs.get("dram", ())), len(rec.passes),
                     tuple(space.log_length() for space in self.spaces),
                     [getattr(c, attr) for c, attr in self.stat_slots], self._counters(), rec.flushes,
                     ex.handed_on_steps)

    @staticmethod
    def _position(process: simpy.Process, stored: int) -> tuple[Any, ...]:
        """Where a suspended process stands: per generator it is inside, the instruction, the step position `k`,
        the group (after group `stored`) and whether it waits (a finished process: ())."""
        out = []
        generator = getattr(process, "_generator", None)
        while generator is not None and generator.gi_frame is not None:
            local = generator.gi_frame.f_locals
            g = local.get("g")
            out.append((generator.gi_code.co_name, generator.gi_frame.f_lasti, local.get("k"),
                        g.index - stored if isinstance(g, Group) else None))
            generator = generator.gi_yieldfrom
        return tuple(out)

    def _queue_state(self, now: int) -> tuple[Any, ...]:
        """The events due, relative to `now`: cycle, priority, kind and what each wakes (in the order they come)."""
        out = []
        for at, priority, _, event in sorted(self.env._queue, key=lambda entry: entry[:3]):
            wakes = tuple((getattr(cb, "__qualname__", repr(cb)), id(getattr(cb, "__self__", None)))
                          for cb in (event.callbacks or ()))
            out.append((at - now, priority, type(event).__name__, wakes))
        return tuple(out)

    def _counters(self) -> tuple[int, ...]:
        ex = self.ex
        return ex.steps, ex.rf_wait, ex.load_wait, ex.psum_wait, ex.runner.passes, ex.runner.compute_cycles

    def _skip(self, marks: list[_Mark]) -> bool:
        """Make the periods that repeat the one between `marks[0]` and `marks[-1]` (p groups, each window between
        two marks a group apart) and jump the machine past them; whether any period was made."""
        p, r = len(marks) - 1, len(marks[-1].in_flight)
        window = [m.in_flight[0] for m in marks] + marks[-1].in_flight[1:]  # groups j-p+1 … j+r: those the
        # period's records belong to
        groups = window + self.upcoming.ahead(AHEAD_GROUPS, AHEAD_STEPS)
        repeats = 0
        for q in range(p + 1, len(groups)):
            shape = self.shape(groups[q])
            if shape is None or shape != groups[q - p].shape:
                break
            repeats += 1
        periods = self._periods(marks, (repeats - r + 1) // p)
        if periods <= 0:
            return False
        windows = [self._window(a, b, window) for a, b in pairwise(marks)]
        if any(w is None for w in windows):
            return False
        made = _Made([w for w in windows if w is not None], groups[:p + r + periods * p], p,
                     marks[-1].now - marks[0].now, self)
        self._make(made, marks[-1].index + 1, periods)
        self._count(marks[0], marks[-1], periods)
        self._jump(periods * made.cycles, marks[-1].in_flight, groups[p + periods * p:p + r + periods * p])
        self.upcoming.drop(periods * p)
        self.skipped_groups += periods * p
        return True

    def _make(self, made: _Made, first_index: int, periods: int) -> None:
        """The windows of `periods` periods in order, the k-th ending the stores of group first_index + k as the
        storer ends them: the records between the recorder's flushes and the hand-ons made a batch at a time."""
        ex, rec = self.ex, self.rec
        p = len(made.windows)
        start, steps = 0, ex.steps
        counted = rec.held + rec.blocked + rec.deferred + rec.held_rows()
        to_hand_on = ex.hand_on_in()
        for k in range(periods * p):
            w = made.windows[k % p]
            steps += w.steps
            counted += w.counted
            flushes = counted >= FLUSH_RECORDS
            hands_on = to_hand_on is not None and steps - ex.steps >= to_hand_on
            if flushes or hands_on or k == periods * p - 1:
                made.add(start, k + 1)
                ex.steps = steps
                rec.check()
                ex.stored.advance(first_index + k)
                ex.hand_on_when_due()
                start, counted = k + 1, rec.held + rec.blocked + rec.deferred + rec.held_rows()
                to_hand_on = ex.hand_on_in()
                steps = ex.steps

    def _periods(self, marks: list[_Mark], most: int) -> int:
        """How many of `most` periods can be made before a DRAM burst run would flush the recorder inside a
        group (a flush at a group's end of stores is made as the storer makes it)."""
        rec = self.rec
        held, counted = rec.held, rec.held + rec.blocked + rec.deferred + rec.held_rows()
        per_window = []
        for a, b in pairwise(marks):
            runs = rec.runs.get("dram", [])[a.runs:b.runs]
            bursts = sum(len(run[2]) for run in runs)
            rows = sum(b.rows[level] - a.rows[level] for level in a.rows) // len(COLUMNS)
            per_window.append((bursts, bursts + rows + (b.passes - a.passes) // PASS_COLUMNS * MOST_PASS_RECORDS))
        for n in range(most):
            for bursts, records in per_window:
                held += bursts
                if held >= FLUSH_RECORDS:
                    return n
                counted += records
                if counted >= FLUSH_RECORDS:
                    held = counted = 0
        return most

    def _window(self, a: _Mark, b: _Mark, window: list[Group]) -> _Window | None:
        """What the work did between checkpoints `a` and `b`, the groups its records belong to being `window` (None:
        a record of a group before them)."""
        rec = self.rec
        firsts = np.array([g.first for g in window], dtype=np.int64)
        rows = {}
        for level, n in a.rows.items():
            table = np.array(rec.rows[level][n:b.rows[level]], dtype=np.int64).reshape(-1, len(COLUMNS))
            rows[level] = (table, np.searchsorted(firsts, table[:, _STEP], side="right") - 1)
        runs = []
        for run in rec.runs.get("dram", [])[a.runs:b.runs]:
            x = int(np.searchsorted(firsts, run[7], side="right")) - 1
            runs.append((run, x, run[7] - window[x].first))
        passes = np.array(rec.passes[a.passes:b.passes], dtype=np.int64).reshape(-1, PASS_COLUMNS)
        logs = [space.log_since(first, last) for space, first, last in zip(self.spaces, a.logs, b.logs, strict=True)]
        owners = [x for _, x in rows.values()] + [np.array([x for _, x, _ in runs], dtype=np.int64)]
        if any(len(x) and x.min() < 0 for x in owners) or (len(passes) and passes[:, 2].min() < firsts[0]):
            return None
        bursts = sum(len(run[2]) for run, _, _ in runs)
        counted = bursts + sum(len(t) for t, _ in rows.values()) + len(passes) * MOST_PASS_RECORDS
        return _Window(rows, runs, (passes, np.searchsorted(firsts, passes[:, 2], side="right") - 1), logs,
                       b.counters[0] - a.counters[0], counted, bursts)

    def _count(self, a: _Mark, b: _Mark, periods: int) -> None:
        """Add `periods` times what the period from `a` to `b` added to every counter (the steps are added window by
        window)."""
        for (component, attr), before, after in zip(self.stat_slots, a.stats, b.stats, strict=True):
            if after != before:
                setattr(component, attr, getattr(component, attr) + (after - before) * periods)
        ex = self.ex
        added = [(after - before) * periods for after, before in zip(b.counters, a.counters, strict=True)]
        ex.rf_wait += added[1]
        ex.load_wait += added[2]
        ex.psum_wait += added[3]
        ex.runner.passes += added[4]
        ex.runner.compute_cycles += added[5]

    def _jump(self, cycles: int, in_flight: list[Group], later: list[Group]) -> None:
        """Move the machine `cycles` on: the clock and the events due, every free cycle, the claim waiting, the
        array's wait and the groups in flight, each becoming its counterpart in `later` (same shape, its own
        steps)."""
        self.env.move_on(cycles)
        for component in self.movers:
            component.move_on(cycles)
        ex = self.ex
        ex.array_idle_from += cycles
        wait = ex.claim_wait
        if wait is not None:
            ex.claim_wait = (wait[0], wait[1], wait[2] + cycles)
        moved = [(b.index, b.first, b.steps) for b in later]
        for g, (index, first, steps) in zip(in_flight, moved, strict=True):
            g.index, g.first, g.steps = index, first, steps
            if wait is None or g is not wait[0]:
                g.landed += cycles


def _dram_address(s: tuple[Any, ...]) -> int:
    """A DRAM transfer step's DRAM word address."""
    return int(s[SRC_ADDR] if s[SRC] == _DRAM else s[DST_ADDR])


def _stacked(tables: list[np.ndarray], order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows of tables[order[0]], tables[order[1]], …, one after another, and for each the position in `order`
    it was made for."""
    sizes = np.array([len(t) for t in tables], dtype=np.int64)
    begins = np.cumsum(sizes) - sizes
    each = sizes[order]
    which = np.repeat(np.arange(len(order)), each)
    within = np.arange(int(each.sum())) - np.repeat(np.cumsum(each) - each, each)
    rows: np.ndarray = np.concatenate(tables)[begins[order][which] + within]
    return rows, which


class _Made:
    """The windows of one skip made again: for the k-th window after the period (k = 0, 1, …) window k % p of
    period 1 + k // p, moved by that many periods' cycles and by its groups' steps and DRAM addresses."""

    def __init__(self, windows: list[_Window], groups: list[Group], p: int, cycles: int, steady: SteadyState) -> None:
        self.windows, self.groups, self.p, self.cycles, self.steady = windows, groups, p, cycles, steady
        self.firsts = np.array([g.first for g in groups], dtype=np.int64)
        self.moved: dict[tuple[int, int], np.ndarray] = {}  # (window group, step position) -> per group of
        # `groups`: its DRAM address there less the window group's

    def _moves(self, x: int, position: int) -> np.ndarray:
        """Per group of `groups`, how far its DRAM address at step `position` lies beyond window group `x`'s (at
        the groups a whole number of periods after x; 0 elsewhere)."""
        found = self.moved.get((x, position))
        if found is None:
            base = _dram_address(self.groups[x].steps[position])
            found = np.zeros(len(self.groups), dtype=np.int64)
            for q in range(x, len(self.groups), self.p):
                found[q] = _dram_address(self.groups[q].steps[position]) - base
            self.moved[(x, position)] = found
        return found

    def add(self, start: int, stop: int) -> None:
        """Hand windows start … stop - 1 (counted from the first after the period) to the recorder and the
        buffers' logs."""
        p, rec = self.p, self.steady.rec
        ks = np.arange(start, stop, dtype=np.int64)
        order, periods = ks % p, ks // p + 1
        cycles = periods * self.cycles
        for level in self.windows[0].rows:
            tables = [w.rows[level][0] for w in self.windows]
            if not any(len(t) for t in tables):
                continue
            rows, which = _stacked(tables, order)
            owners, _ = _stacked([w.rows[level][1] for w in self.windows], order)
            moved = periods[which] * p + owners
            rows[:, _START] += cycles[which]
            rows[:, _END] += cycles[which]
            rows[:, _STEP] += self.firsts[moved] - self.firsts[owners]
            if level == "dram":
                for i in range(len(rows)):
                    x, q = int(owners[i]), int(moved[i])
                    rows[i, _ADDRESS] += self._moves(x, int(rows[i, _STEP] - self.firsts[q]))[q]
            rec.rows[level].extend(rows.ravel().tolist())
        self._add_runs(ks)
        self._add_passes(order, periods, cycles)
        for s, space in enumerate(self.steady.spaces):
            logs = [w.logs[s] for w in self.windows]
            if any(log[0] for log in logs):
                stamped, which = _stacked([np.array(log[0], dtype=np.int64) for log in logs], order)
                after, _ = _stacked([np.array(log[1], dtype=np.int64) for log in logs], order)
                space.log_more((stamped + cycles[which]).tolist(), after.tolist())

    def _add_runs(self, ks: np.ndarray) -> None:
        """The DRAM burst runs of windows `ks`, in order (a skip makes no run that flushes: `_periods`)."""
        p, rec = self.p, self.steady.rec
        runs = rec.runs.setdefault("dram", [])
        held = 0
        for k in ks.tolist():
            n, w = k // p + 1, self.windows[k % p]
            for run, x, position in w.runs:
                starts, ends, template, shift, at, op, operand, step, unit = run
                q = x + n * p
                runs.append((starts, ends, template, shift + int(self._moves(x, position)[q]), at + n * self.cycles,
                             op, operand, step + int(self.firsts[q] - self.firsts[x]), unit))
            held += w.bursts
        rec.held += held

    def _add_passes(self, order: np.ndarray, periods: np.ndarray, cycles: np.ndarray) -> None:
        """The PE-array passes of the windows `order` of periods `periods`."""
        tables = [w.passes[0] for w in self.windows]
        if not any(len(t) for t in tables):
            return
        rows, which = _stacked(tables, order)
        owners, _ = _stacked([w.passes[1] for w in self.windows], order)
        moved = periods[which] * self.p + owners
        rows[:, 0] += cycles[which]
        rows[:, 1] += cycles[which]
        rows[:, 2] += self.firsts[moved] - self.firsts[owners]
        self.steady.rec.passes.extend(rows.ravel().tolist())
