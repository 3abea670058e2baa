"""Replaying a sequential work's groups: a group that repeats one booked before is not booked again.

Under the sequential policy a group starts when the one before it has ended its stores: every component is
idle then (its ports, banks, buses, array and DRAM channels free, no DRAM burst in flight). What a group does
from there follows from its steps alone — kinds, operands, levels, words, the compute counts, the on-chip
addresses (banks), the channel parts its DRAM transfers split into (`SimpleDram.plan_class`) — and from the DRAM
channels' open rows and last directions (`SimpleDram.replay_key`). Components keep the free cycles of the last
group booked in full: all at or before any later group's start, which is all a booking compares them with.

A depth-first layer runs millions of groups of a few such shapes, so each shape is booked in full (`StepRunner`,
as every group was) and learnt as a template: its records relative to its start and first step, what it added
to every component's and the executor's counters, and the DRAM channels it left. A group of the same shape and
DRAM state is then replayed: its end is the template's, its records the template's moved to its start, its
steps and its own addresses (made as numpy blocks a piece of steps at a time), its counters added, the DRAM's
channels left as the template left them. The trace, the counters and every cycle are those of booking it in
full (the tests compare both).

Not replayed (booked in full): groups with ALLOC or FREE steps (they change buffer occupancy), groups split
between two pieces of steps, and whole works on machines of several cores, with a DRAM that is not
`SimpleDram` first come first served, whose counters are not exact in binary fractions, or recorded per burst
or not at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Protocol

import numpy as np

from hwsim.mapping.schedule import Work
from hwsim.sim.component import Statistic, declared_stats
from hwsim.sim.dram.simple import READ, WRITE, Plan, SimpleDram, Transfer
from hwsim.sim.groups import STEPS_AT_ONCE, Group, compute_index, step_tuples
from hwsim.sim.machine import Machine
from hwsim.sim.recorder import COLUMNS, FLUSH_RECORDS, MOST_PASS_RECORDS, PASS_COLUMNS, records_of
from hwsim.sim.runner import StepRunner
from hwsim.sim.sram import Sram
from hwsim.sim.structure import GroupLog
from hwsim.vocab import NO_ADDRESS, Level, StepKind

REPLAY = True  # replay repeating groups of sequential works (False: book every group in full)
_DRAM, _RF = int(Level.DRAM), int(Level.RF)
_START, _END, _STEP, _ADDRESS = (COLUMNS.index(name) for name in ("start_cycle", "end_cycle", "step", "address"))


class Progress(Protocol):
    """How far a work's stores have got (`hwsim.sim.executor.Progress`)."""

    done_upto: int


class Policy(Protocol):
    """A work's execution policy (`hwsim.sim.executor.ExecutionPolicy`)."""

    follows_clock: bool


class WorkRun(Protocol):
    """What the replay reads and advances of the executor running a work (`hwsim.sim.executor.LayerExecutor`)."""

    steps: int
    rf_wait: int
    load_wait: int
    psum_wait: int

    @property
    def m(self) -> Machine: ...
    @property
    def layer(self) -> Work: ...
    @property
    def runner(self) -> StepRunner: ...
    @property
    def group_log(self) -> GroupLog: ...
    @property
    def policy(self) -> Policy: ...
    @property
    def stored(self) -> Progress: ...

    def hand_on_when_due(self) -> None: ...


@dataclass(frozen=True)
class Template:
    """A learnt group, relative to its start cycle and its first step: its end, its records (rows per level and
    PE-array passes), where each record's address comes from (-1: the record's own; else 2 × step + 1 for the
    step's destination address, 2 × step for its source), the counters it added, the DRAM channels it left."""

    duration_cycles: int
    rows: dict[str, np.ndarray]  # level -> (records, len(COLUMNS)) int64
    address_from: dict[str, np.ndarray]  # level -> per record
    passes: np.ndarray  # (passes, PASS_COLUMNS) int64
    counted: int  # its records as the recorder's `check` counts them
    stats: tuple[tuple[object, str, int | float], ...]  # (component, counter, what the group added)
    counters: tuple[int, ...]  # what it added to the executor's and runner's counters (`GroupReplay._counters`)
    channels: tuple[tuple[int, int, tuple[int, ...]], ...]  # DRAM channels it used: (channel, bus end, in-flight
    # ends), ticks after its start


@dataclass
class _Shape:
    """The groups of one shape: the order their DRAM transfers are booked in (step offsets), and their templates
    by DRAM state (`SimpleDram.replay_key`)."""

    dram_order: tuple[int, ...]
    templates: dict[tuple[int, ...], Template] = field(default_factory=dict)


@dataclass(slots=True)
class Candidate:
    """A group wholly inside the current piece of steps, which may be replayed: its index, its first step in the
    work, its span in the piece, its shape (None: it must be booked in full)."""

    index: int
    first: int
    lo: int
    hi: int
    shape: bytes | None


@dataclass(slots=True)
class Mark:
    """What a candidate booked in full started from, to learn it as a template."""

    start: int
    candidate: Candidate | None  # None: a group spanning pieces (not learnt)
    shape: _Shape | None
    found: tuple[tuple[int, ...], list[tuple[int, int, int]]] | None  # its DRAM state (`SimpleDram.replay_key`)
    rows: dict[str, int]
    passes: int
    flushes: int
    stats: list[int | float]
    counters: tuple[int, ...]


class _Piece:
    """A piece of a work's steps as the replay reads it: per step its shape row (bytes), whether it may be
    replayed, its addresses, its DRAM transfer as `SimpleDram.replay_key` takes it (None: none)."""

    def __init__(self, piece: np.ndarray, replay: GroupReplay) -> None:
        n, wb = len(piece), replay.word_bytes
        kind, src, dst = piece["kind"], piece["src"], piece["dst"]
        self.src_addr, self.dst_addr = piece["src_addr"], piece["dst_addr"]
        src_at_dram, dst_at_dram = src == _DRAM, dst == _DRAM
        dram_addr = np.where(src_at_dram, self.src_addr, self.dst_addr) * wb
        moved = piece["coded_words"] if replay.dram_coded else piece["words"]
        at_dram = (kind == StepKind.TRANSFER) & (src_at_dram | dst_at_dram) & (piece["words"] > 0)
        shapes = piece.copy()  # every field but these three as it is: a step's shape is its row's bytes
        classes, plans, which = replay.plan_classes(np.where(at_dram, dram_addr, -1), moved * wb)
        shapes["group"] = (classes * 8
                           + (self.src_addr == NO_ADDRESS) * 4 + (self.dst_addr == NO_ADDRESS) * 2
                           + (self.src_addr == self.dst_addr))
        shapes["src_addr"] = np.where((src == _RF) | src_at_dram, 0, self.src_addr)
        shapes["dst_addr"] = np.where((dst == _RF) | dst_at_dram, 0, self.dst_addr)
        self.array = piece
        self.rows = shapes.tobytes()
        self.row_bytes = shapes.dtype.itemsize
        valid = (kind == StepKind.TRANSFER) | (kind == StepKind.COMPUTE)
        valid &= replay.within(src, self.src_addr, piece["words"], piece["coded_words"], wb)
        valid &= replay.within(dst, self.dst_addr, piece["words"], piece["coded_words"], wb)
        self.bad = np.r_[0, np.cumsum(~valid)]  # steps lo..hi-1 may be replayed when bad[hi] == bad[lo]
        direction = np.where(src_at_dram, READ, WRITE)
        shift = replay.row_shifts(dram_addr)
        self.dram: list[Transfer | None] = [None] * n  # per step: its DRAM transfer's direction, channel parts and
        # row shift
        for k, way, plan, rows in zip(np.flatnonzero(at_dram).tolist(), direction[at_dram].tolist(),
                                      which[at_dram].tolist(), shift[at_dram].tolist(), strict=True):
            self.dram[k] = (way, plans[plan], rows)

    def shape(self, lo: int, hi: int) -> bytes | None:
        if self.bad[hi] != self.bad[lo]:
            return None
        return self.rows[lo * self.row_bytes:hi * self.row_bytes]


class GroupReplay:
    """The templates of one sequential work, and the groups replayed since their records were last made."""

    def __init__(self, ex: WorkRun, dram: SimpleDram) -> None:
        self.ex, self.dram, self.rec = ex, dram, ex.runner.rec
        self.word_bytes = ex.runner.wb
        self.dram_coded = _DRAM in ex.runner.coded_levels
        core = ex.m.cores[ex.layer.core]
        self.srams: dict[int, Sram] = {int(Level.GLB): core.glb}
        if core.line_buffer is not None:
            self.srams[int(Level.LINE_BUFFER)] = core.line_buffer
        if ex.m.l2 is not None:
            self.srams[int(Level.L2)] = ex.m.l2
        components: list[object] = [dram, *self.srams.values(), core.pe, *core.noc.buses.values()]
        self.stat_slots = [(c, info.attr) for c in components for info in declared_stats(type(c))
                           if isinstance(getattr(type(c), info.attr, None), Statistic)]
        self.shapes: dict[bytes, _Shape] = {}
        self.piece: _Piece | None = None
        self.pending: list[tuple[Template, int, int, int]] = []  # (template, start, first step, lo) since the last
        # records were made
        self.current: Mark | None = None  # the group being booked in full
        self.held = 0  # the records the recorder holds and defers, as its `check` counts them
        self.end = 0  # the cycle the next group starts at
        self.rec.before_flush = self.before_flush

    @staticmethod
    def of(ex: WorkRun) -> GroupReplay | None:
        """The replay of a sequential work's groups, where its machine allows it (module docstring)."""
        dram, runner = ex.m.dram, ex.runner
        if (not REPLAY or ex.policy.follows_clock or len(ex.m.cores) > 1 or not isinstance(dram, SimpleDram)
                or not dram.replays or runner.dram_per_burst or not runner.rec.wants("dram")):  # (a group's DRAM
            # order is learnt from its records)
            return None
        return GroupReplay(ex, dram)

    def plan_classes(self, address: np.ndarray, nbytes: np.ndarray) -> tuple[np.ndarray, list[Plan], np.ndarray]:
        """Per step, the class of its DRAM transfer's channel parts (`SimpleDram.plan_class`: transfers of one
        class time alike from the same channel state wherever they lie), -1 for a step without one; the distinct
        transfers' channel parts, and which of them each step's are."""
        period = self.dram.period_bytes or 1
        key = np.where(address >= 0, (address % period) << 32 | nbytes, -1)
        distinct = sorted(set(key.tolist()))
        plans = [self.dram.replay_plan(k >> 32, k & 0xFFFFFFFF) if k >= 0 else Plan(0, ()) for k in distinct]
        classes = np.array([self.dram.plan_class(k >> 32, k & 0xFFFFFFFF) if k >= 0 else -1 for k in distinct],
                           dtype=np.int64)
        which = np.searchsorted(np.array(distinct, dtype=np.int64), key)
        found: np.ndarray = classes[which]
        return found, plans, which

    def row_shifts(self, address: np.ndarray) -> np.ndarray:
        """Per DRAM byte address, the row its address period starts at (`SimpleDram.replay_key`)."""
        period = self.dram.period_bytes or 1
        shifts: np.ndarray = (np.maximum(address, 0) // period) * self.dram.rows_per_period
        return shifts

    def within(self, level: np.ndarray, address: np.ndarray, words: np.ndarray, coded: np.ndarray,
               wb: int) -> np.ndarray:
        """Whether each step end's address is one its component takes without a check (else it is booked in full,
        which says what is wrong)."""
        ok: np.ndarray = (level != _DRAM) | (address >= 0)
        for lv, sram in self.srams.items():
            moved = coded if lv in self.ex.runner.coded_levels else words
            ok &= (level != lv) | sram.located_within(address, moved, wb)
        return ok

    def groups(self, clock_groups: int) -> Iterator[tuple[Group, Mark] | None]:
        """The work's groups in order (noted in its group log as `groups` notes them), from cycle `self.end` on:
        those a template fits are replayed here, advancing `self.end`; the others come out with their marks to be
        booked in full (then `learn`); None after every `clock_groups`-th group replayed, for the simpy clock to
        catch up. A piece's replayed groups get their records before the next piece is read."""
        offset, index = 0, 0
        pending: Group | None = None
        pending_id = -1
        for block in self.ex.layer.blocks():
            self.ex.group_log.add(block, offset)
            for lo in range(0, len(block), STEPS_AT_ONCE):
                piece = block[lo:lo + STEPS_AT_ONCE]
                self.piece = _Piece(piece, self)
                ids = piece["group"]
                bounds = [0, *(np.flatnonzero(np.diff(ids)) + 1).tolist(), len(piece)]
                for a, b in pairwise(bounds):
                    gid = int(ids[a])
                    if pending is not None and gid == pending_id:
                        pending.steps.extend(step_tuples(piece[a:b]))
                        pending.compute = compute_index(pending.steps)
                        continue
                    if pending is not None:
                        yield pending, self.mark(None, self.end)
                        index, pending = index + 1, None
                    if b == len(piece):  # the next piece may continue it
                        steps = step_tuples(piece[a:b])
                        pending, pending_id = Group(index, offset + lo + a, steps, compute_index(steps)), gid
                        continue
                    shape = self.piece.shape(a, b)
                    if shape is not None and self.replay(index, offset + lo + a, a, b, shape):
                        if index % clock_groups == 0:
                            yield None
                    else:
                        c = Candidate(index, offset + lo + a, a, b, shape)
                        yield self.group(c), self.mark(c, self.end)
                    index += 1
                self.make_records()
            offset += len(block)
        if pending is not None:
            yield pending, self.mark(None, self.end)

    def group(self, c: Candidate) -> Group:
        """A candidate to book in full, as a group."""
        assert self.piece is not None
        steps = step_tuples(self.piece.array[c.lo:c.hi])
        return Group(c.index, c.first, steps, compute_index(steps))

    def _transfers(self, shape: _Shape, lo: int) -> list[Transfer]:
        assert self.piece is not None
        dram = self.piece.dram
        return [dram[lo + k] for k in shape.dram_order]  # type: ignore[misc]

    def replay(self, index: int, first: int, lo: int, hi: int, shape_bytes: bytes) -> bool:
        """Replay group `index` (steps lo … hi - 1 of the piece, the first step `first` of the work, of shape
        `shape_bytes`) from cycle `self.end` if a template fits it, advancing `self.end`; whether it did."""
        shape = self.shapes.get(shape_bytes)
        if shape is None or not shape.templates:
            return False
        start = self.end
        found = self.dram.replay_key(self._transfers(shape, lo), start)
        template = shape.templates.get(found[0]) if found is not None else None
        if template is None or found is None:
            return False
        self.dram.replay_channels(start, found[1], template.channels)
        self.pending.append((template, start, first, lo))
        ex, rec = self.ex, self.rec
        ex.steps += hi - lo
        ex.stored.done_upto = index
        rec.deferred += template.counted
        self.held += template.counted
        if self.held >= FLUSH_RECORDS:  # `check` after the group's stores: flushes
            rec.check()
            self.held = rec.held + rec.blocked + rec.deferred + rec.held_rows()
        ex.hand_on_when_due()
        self.end = start + template.duration_cycles
        return True

    def mark(self, c: Candidate | None, start: int) -> Mark:
        """What a group booked in full (a candidate, or a group spanning pieces: None) starts from: the recorder's
        rows so far, its counters, its DRAM state (when its shape's transfer order is known)."""
        shape = self.shapes.get(c.shape) if c is not None and c.shape is not None else None
        found = self.dram.replay_key(self._transfers(shape, c.lo), start) if shape is not None and c else None
        rec = self.rec
        self.current = Mark(start, c, shape, found, {level: len(rows) for level, rows in rec.rows.items()},
                            len(rec.passes), rec.flushes,
                            [getattr(component, attr) for component, attr in self.stat_slots], self._counters())
        return self.current

    def _counters(self) -> tuple[int, ...]:
        ex = self.ex
        return ex.rf_wait, ex.load_wait, ex.psum_wait, ex.runner.passes, ex.runner.compute_cycles

    def learn(self, mark: Mark, end: int) -> None:
        """After a group booked in full since `mark`, ending at `end`: learn its shape's DRAM transfer order the
        first time, a template for its DRAM state after that (a candidate's); its records join the replays' in
        order."""
        rec, c = self.rec, mark.candidate
        self.current = None
        self.end = end
        if rec.flushes == mark.flushes:  # (flushed after its stores: its records went with the replays' before)
            if c is not None and c.shape is not None and not any(rec.runs.values()):
                self._learn(mark, c, self._rows_since(mark), end)
            self._defer(mark)
        self.held = rec.held + rec.blocked + rec.deferred + rec.held_rows()

    def _rows_since(self, mark: Mark) -> dict[str, np.ndarray]:
        """The records held as rows since `mark`, per level, as (records, len(COLUMNS)) tables."""
        rows = self.rec.rows
        return {level: np.array(rows[level][n:], dtype=np.int64).reshape(-1, len(COLUMNS))
                for level, n in mark.rows.items() if len(rows[level]) > n}

    def _defer(self, mark: Mark) -> None:
        """Move the records of the group booked in full since `mark` out of the recorder's rows into the pending
        replays, after them (a template of its own, at cycle and step 0)."""
        rec = self.rec
        rows = self._rows_since(mark)
        passes = np.array(rec.passes[mark.passes:], dtype=np.int64).reshape(-1, PASS_COLUMNS)
        for level, n in mark.rows.items():
            del rec.rows[level][n:]
        del rec.passes[mark.passes:]
        counted = sum(len(t) for t in rows.values()) + len(passes) * MOST_PASS_RECORDS
        if counted:
            own = {level: np.full(len(t), -1, np.int64) for level, t in rows.items()}
            self.pending.append((Template(0, rows, own, passes, counted, (), (0,) * 5, ()), 0, 0, 0))
            rec.deferred += counted

    def before_flush(self) -> None:
        """The recorder is about to flush (`Recorder.before_flush`): the records of a group booked in full so far
        join the replays', and all are made."""
        if self.current is not None:
            self._defer(self.current)
        self.make_records()

    def _learn(self, mark: Mark, c: Candidate, rows: dict[str, np.ndarray], end: int) -> None:
        """Learn candidate `c`, booked in full since `mark` with records `rows`: its shape's DRAM transfer order,
        or a template for its DRAM state."""
        assert c.shape is not None
        if mark.shape is None:
            order = self._dram_order(rows.get("dram"), c)
            if order is not None:
                self.shapes[c.shape] = _Shape(order)
            return
        if mark.found is None:
            return
        template = self._template(mark, rows, end)
        if template is not None:
            mark.shape.templates[mark.found[0]] = template

    def _dram_order(self, dram_rows: np.ndarray | None, c: Candidate) -> tuple[int, ...] | None:
        """The step offsets of a group's DRAM transfers in the order they were booked (their records' order; None
        when they were not recorded)."""
        assert self.piece is not None
        transfers = sum(1 for k in range(c.lo, c.hi) if self.piece.dram[k] is not None)
        order = tuple((dram_rows[:, _STEP] - c.first).tolist()) if dram_rows is not None else ()
        return order if len(order) == transfers else None

    def _template(self, mark: Mark, rows: dict[str, np.ndarray], end: int) -> Template | None:
        assert self.piece is not None and mark.found is not None and mark.candidate is not None
        c, start, rec = mark.candidate, mark.start, self.rec
        stats = []
        for (component, attr), before in zip(self.stat_slots, mark.stats, strict=True):
            added = getattr(component, attr) - before
            if added:
                if isinstance(added, float) and component is not self.dram:
                    return None  # a sum of fractions a replay could round otherwise
                stats.append((component, attr, added))
        sources: dict[str, np.ndarray] = {}
        for level, table in rows.items():
            table[:, _START] -= start
            table[:, _END] -= start
            table[:, _STEP] -= c.first
            found = self._address_sources(table, c.lo)
            if found is None:
                return None
            sources[level] = found
        passes = np.array(rec.passes[mark.passes:], dtype=np.int64).reshape(-1, PASS_COLUMNS)
        passes[:, 0] -= start
        passes[:, 1] -= start
        passes[:, 2] -= c.first
        counted = sum(len(t) for t in rows.values()) + len(passes) * MOST_PASS_RECORDS
        counters = tuple(after - before for after, before in zip(self._counters(), mark.counters, strict=True))
        channels = self.dram.replay_marks(start, [k for k, _, _ in mark.found[1]])
        return Template(end - start, rows, sources, passes, counted, tuple(stats), counters, channels)

    def _address_sources(self, table: np.ndarray, lo: int) -> np.ndarray | None:
        """Per record of a learnt group (steps relative to its first), where its address comes from: -1 its own
        (none), 2 × step its step's source address, 2 × step + 1 its destination's (None: neither)."""
        assert self.piece is not None
        at = lo + table[:, _STEP]
        address = table[:, _ADDRESS]
        src, dst = self.piece.src_addr[at], self.piece.dst_addr[at]
        out = np.where(address == NO_ADDRESS, -1, np.where(address == src, 2 * table[:, _STEP],
                                                           2 * table[:, _STEP] + 1))
        if ((address != NO_ADDRESS) & (address != src) & (address != dst)).any():
            return None
        return out

    def make_records(self) -> None:
        """The records, counters and statistics of the groups replayed since the last call."""
        if not self.pending:
            return
        assert self.piece is not None
        pending, self.pending = self.pending, []
        kinds: dict[int, int] = {}
        templates: list[Template] = []
        which = []
        for template, _, _, _ in pending:
            k = kinds.get(id(template))
            if k is None:
                k = kinds[id(template)] = len(templates)
                templates.append(template)
            which.append(k)
        tid = np.array(which, dtype=np.int64)
        start = np.array([p[1] for p in pending], dtype=np.int64)
        first = np.array([p[2] for p in pending], dtype=np.int64)
        lo = np.array([p[3] for p in pending], dtype=np.int64)
        layer, made = self.rec.layer, {}
        for level in self.rec.rows:
            tables = [t.rows.get(level) for t in templates]
            if any(t is not None for t in tables):
                table = _expanded(tables, [t.address_from.get(level) for t in templates], tid, start, first, lo,
                                  self.piece)
                made[level] = records_of(table, layer)
        passes = _expanded([t.passes for t in templates], [None] * len(templates), tid, start, first, lo,
                           self.piece, (0, 1, 2))
        counts = np.bincount(tid, minlength=len(templates)).tolist()
        self.rec.add_blocks(made, passes, sum(t.counted * n for t, n in zip(templates, counts, strict=True)))
        self.rec.deferred = 0
        self._count(templates, counts)

    def _count(self, templates: list[Template], counts: list[int]) -> None:
        """Add what `counts[k]` replays of `templates[k]` added to the components' and the executor's counters."""
        ex = self.ex
        added = [0] * 5
        for template, n in zip(templates, counts, strict=True):
            for component, attr, delta in template.stats:
                setattr(component, attr, getattr(component, attr) + delta * n)
            for k, delta in enumerate(template.counters):
                added[k] += delta * n
        ex.rf_wait += added[0]
        ex.load_wait += added[1]
        ex.psum_wait += added[2]
        ex.runner.passes += added[3]
        ex.runner.compute_cycles += added[4]


def _expanded(tables: list[np.ndarray | None], sources: list[np.ndarray | None], tid: np.ndarray, start: np.ndarray,
              first: np.ndarray, lo: np.ndarray, piece: _Piece,
              columns: tuple[int, int, int] = (_START, _END, _STEP)) -> np.ndarray:
    """The rows of replays (replay i of template tid[i], from cycle start[i], its first step first[i], at lo[i] in
    the piece), in replay order: each template's rows with its cycles and steps moved and, where `sources` says
    (-1: the row's own address), the replay's own step addresses. A few numpy calls however many templates."""
    width = next(t.shape[1] for t in tables if t is not None)
    sizes = np.array([len(t) if t is not None else 0 for t in tables], dtype=np.int64)
    every = np.concatenate([t if t is not None else np.zeros((0, width), np.int64) for t in tables])
    source = np.concatenate([s if s is not None else np.full(n, -1, np.int64) for s, n in zip(sources, sizes)])
    each = sizes[tid]
    replay = np.repeat(np.arange(len(tid)), each)
    row = np.arange(len(replay)) - np.repeat(np.cumsum(each) - each, each) + np.repeat((np.cumsum(sizes) - sizes)[tid],
                                                                                        each)
    out: np.ndarray = every[row]
    begin, finish, step = columns
    out[:, begin] += start[replay]
    out[:, finish] += start[replay]
    out[:, step] += first[replay]
    picked = source[row]
    own = np.flatnonzero(picked >= 0)
    if len(own):
        at = lo[replay[own]] + picked[own] // 2
        out[own, _ADDRESS] = np.where(picked[own] % 2 == 1, piece.dst_addr[at], piece.src_addr[at])
    return out
