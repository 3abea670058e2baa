"""The executor: walks a `Schedule` on the simpy components and emits every access as trace records.

Each layer runs after the previous one (tensors pass through DRAM). Inside a
layer the steps form groups, one processing pass each, with the same anatomy
under every execution policy:

- *loads*: the steps before the COMPUTE that fill on-chip buffers (ALLOC,
  DRAM → GLB, L2 → line buffer, FREE), all requested when the group starts;
  an ALLOC in the line buffer first waits until the previous group's stores
  are done (ring rows are overwritten only once released), and a load of
  psums (spilled to the L2 or DRAM) until every earlier group whose psum
  stores overlap its words has stored them;
- the *pass*: once every earlier pass that wrote psums overlapping those it
  reads back has stored them, its filters go into the RFs one transfer after another, then
  its ifmap and psum words stream in over the NoC while the array computes
  (a pass ends when its compute and its streams are done);
- *stores*: the steps after the COMPUTE (psums RF → GLB, ofmaps → DRAM,
  FREE), one after another.

A step is performed by `StepRunner` at the cycle it is requested: every
component books it at once (`book`, no simpy event) and it ends when its
source, destination and bus are all done. The two execution policies differ
only in when groups start and what an ALLOC that does not fit means:

- `pipelined` (layer-by-layer schedules): three simpy processes share the
  groups in order — the prefetcher issues a group's loads as soon as the
  previous group's loads have landed (it runs ahead of the array as far as
  buffer space allows, so DRAM traffic overlaps compute: double buffering),
  the array runs the passes, the storer the stores. Chained steps wait for
  the simpy clock to reach their request cycle, so every resource is booked
  in the order requests are made; an ALLOC waits while its space is full.
- `sequential` (depth-first stacks, phased and planned schedules: rings and
  buffers reused group by group): one process; a group's loads start when the
  previous group's stores have ended. Nothing else runs meanwhile, so steps
  are booked ahead of the simpy clock (it catches up every
  SEQUENTIAL_CLOCK_GROUPS groups) and an ALLOC that does not fit can never
  fit: an impossible mapping.

ALLOC/FREE steps in the line buffer, the L2 or DRAM carry a buffer id (a
depth-first ring, a phased edge buffer, a planned buffer); each id's
occupancy is traced as its own buffer (RING_BUFFER0 + id). An L2 or DRAM
ALLOC whose `src_addr` is a word address (≥ 0) places its words there (see
`hwsim.sim.machine`).

Records (see `hwsim.trace.schema`; op codes `hwsim.vocab.Op`): DRAM one per
burst (or one per transaction when asked; a level that keeps tiles coded
moves and records a transfer's coded words), GLB / L2 / line buffer one per
transfer, NoC one per bus transfer (op write), RF one per transfer (fill, or
read for psums going out), and per pass at level `pe`: the MACs (operand
other, op update, address = active PEs; exactly one per pass, so it also
times the pass), non-MAC ops (other, write), the MACs' RF reads per operand
(read), psum RF writes (psum, update), words handed PE to PE (fill; psum:
spatial reduction, ifmap and filter: systolic forwarding), and what zero ifmap
words spared when the array gates or skips them (skip: the MACs, operand
other; their filter RF reads, operand filter; with zero_gating_psums their
psum RF reads and writes, operand psum).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from itertools import pairwise, takewhile
from typing import Any

import numpy as np
import simpy

from hwsim.errors import HwsimError
from hwsim.hardware.precision import layer_hardware
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.schedule import LayerSchedule, Schedule
from hwsim.sim.component import Port, StatInfo, declared_stats
from hwsim.sim.machine import NAMED_LEVELS, PLACED_LEVELS, Machine
from hwsim.sim.policy import Registry
from hwsim.sim.recorder import Recorder
from hwsim.sim.structure import GroupLog
from hwsim.sparsity.codec import Links
from hwsim.trace.schema import OCCUPANCY_DTYPE
from hwsim.vocab import LEVEL_NAMES, NO_ADDRESS, OTHER, TRACE_LEVELS, Level, Op, Operand, StepField, StepKind

RING_BUFFER0 = 3  # occupancy buffer id of named buffer 0 (0-2: GLB data, GLB filter, line buffer)
SIM_LEVELS = TRACE_LEVELS
SEQUENTIAL_CLOCK_GROUPS = 1024  # a sequential layer advances the simpy clock every this many groups

READ, WRITE, FILL, UPDATE, SKIP = int(Op.READ), int(Op.WRITE), int(Op.FILL), int(Op.UPDATE), int(Op.SKIP)
_DRAM, _L2, _GLB, _LINE_BUFFER, _RF = (int(Level.DRAM), int(Level.L2), int(Level.GLB), int(Level.LINE_BUFFER),
                                      int(Level.RF))
_TRANSFER, _COMPUTE, _ALLOC = int(StepKind.TRANSFER), int(StepKind.COMPUTE), int(StepKind.ALLOC)
_FILTER, _PSUM, _OFMAP = int(Operand.FILTER), int(Operand.PSUM), int(Operand.OFMAP)
_BUS_OF_OPERAND = ("ifmap", "filter", "psum", "psum")  # NoC bus of each operand (`hwsim.vocab.BUS_OF_OPERAND`)

# Positions of the fields in a step tuple, from STEP_DTYPE.
F = StepField
KIND, OPERAND, SRC, DST, GROUP, WORDS, SRC_ADDR, DST_ADDR = (F.KIND, F.OPERAND, F.SRC, F.DST, F.GROUP, F.WORDS,
                                                             F.SRC_ADDR, F.DST_ADDR)
CODED_WORDS = F.CODED_WORDS

# A pass's further records at level `pe` (its first is the MACs: other, update, one per pass even without MACs):
# (step field, op, operand, address = active PEs?) — non-MAC ops (other, write), the MACs' RF reads per operand,
# psum RF writes, words handed PE to PE per operand.
PE_RECORDS = ((F.OPS, WRITE, OTHER, True),
              (F.RF_FILTER_READS, READ, int(Operand.FILTER), False),
              (F.RF_IFMAP_READS, READ, int(Operand.IFMAP), False),
              (F.RF_PSUM_READS, READ, int(Operand.PSUM), False),
              (F.RF_PSUM_WRITES, UPDATE, int(Operand.PSUM), False),
              (F.INTER_PE_WORDS, FILL, int(Operand.PSUM), False),
              (F.INTER_PE_IFMAP_WORDS, FILL, int(Operand.IFMAP), False),
              (F.INTER_PE_FILTER_WORDS, FILL, int(Operand.FILTER), False))

Step = tuple[Any, ...]  # one STEP_DTYPE row as a tuple


@dataclass(slots=True)
class Group:
    """One processing pass: its index in the layer, the layer index of its first step, its steps, and the
    position of its COMPUTE among them (len(steps) if it has none)."""

    index: int
    first: int
    steps: list[Step]
    compute: int


class StepRunner:
    """Performs single steps requested at a given cycle on the machine and records them: the one path
    every execution policy uses."""

    def __init__(self, m: Machine, rec: Recorder) -> None:
        self.m, self.rec = m, rec
        self.want_noc, self.want_rf, self.want_pe = rec.wants("noc"), rec.wants("rf"), rec.wants("pe")
        self.dram_per_burst = rec.wants("dram") and "dram" not in rec.per_transaction
        self.buses = [m.noc.bus(name) for name in _BUS_OF_OPERAND]
        self.coded_levels = frozenset(LEVEL_NAMES.index(level) for level in Links.of(m.hw).levels)
        self.passes = 0
        self.compute_cycles = 0

    def transfer(self, index: int, s: Step, at: int) -> int:
        """Book the source, destination and bus of a transfer requested at `at`, record it; its end cycle. An end
        that keeps tiles coded (DRAM, L2 with `compression`) moves the step's coded words."""
        operand, src, dst, words = s[OPERAND], s[SRC], s[DST], s[WORDS]
        if words == 0:
            return at
        end, coded = at, self.coded_levels
        if src != _RF:
            moved = s[CODED_WORDS] if src in coded else words
            end = max(end, self._side(src, True, s[SRC_ADDR], moved, READ, operand, index, at))
        if dst != _RF:
            outward = dst < src and operand in (_PSUM, _OFMAP)
            moved = s[CODED_WORDS] if dst in coded else words
            end = max(end, self._side(dst, False, s[DST_ADDR], moved, UPDATE if outward else FILL, operand, index,
                                      at))
        if src == _RF or dst == _RF:  # the RF end rides the NoC
            bus = self.buses[operand]
            start = bus.book(False, NO_ADDRESS, words, at)
            end = max(end, bus.reserved_end_cycle)
            if self.want_noc:
                self.rec.row("noc", start, bus.reserved_end_cycle, WRITE, operand, index, NO_ADDRESS, words)
            if self.want_rf:
                filled = dst == _RF
                self.rec.row("rf", at, end, FILL if filled else READ, operand, index,
                             s[DST_ADDR] if filled else s[SRC_ADDR], words)
        return end

    def _side(self, level: int, is_read: bool, address: int, words: int, op: int, operand: int, index: int,
              at: int) -> int:
        """Book one end of a transfer (DRAM, L2, GLB or line buffer) and record it; its end cycle."""
        m, rec = self.m, self.rec
        if level == _DRAM:
            wb = m.hw.word_bytes
            if self.dram_per_burst:
                burst = (m.dram.reserve_read if is_read else m.dram.reserve_write)(address * wb, words * wb, at)
                rec.block("dram", burst, op, operand, index)
                return m.dram.reserved_end_cycle
            start = m.dram.book(is_read, address * wb, words * wb, at)
            component: Port = m.dram
        else:
            component = self._on_chip(level)
            if level == _LINE_BUFFER:
                address = NO_ADDRESS
            start = component.book(is_read, address, words, at)
        name = component.name
        if name in rec.levels:
            rec.row(name, start, component.reserved_end_cycle, op, operand, index, address, words)
        return component.reserved_end_cycle

    def _on_chip(self, level: int) -> Port:
        if level == _GLB:
            return self.m.glb
        if level == _LINE_BUFFER:
            return self.m.require_line_buffer()
        if level == _L2:
            return self.m.require_l2()
        raise HwsimError(f"level {Level(level).name} has no component in this simulator")

    def compute(self, index: int, s: Step, at: int) -> int:
        """Book the PE array for a pass requested at `at`; record its work at level `pe` (and what zeros spared:
        op skip, the MACs and their filter RF reads); its end cycle."""
        active, pe = max(1, s[F.ACTIVE_PES]), self.m.pe
        start = pe.book(s[F.MACS], s[F.OPS], active, at, s[F.STREAM_LENGTH], s[F.ZERO_MACS])
        end = pe.reserved_end_cycle
        self.passes += 1
        self.compute_cycles += end - start
        if self.want_pe:
            row = self.rec.row
            row("pe", start, end, UPDATE, OTHER, index, s[F.ACTIVE_PES], s[F.MACS])  # the pass's record
            for field_index, op, operand, has_address in PE_RECORDS:
                count = s[field_index]
                if count:
                    row("pe", start, end, op, operand, index, s[F.ACTIVE_PES] if has_address else -1, count)
            spared = pe.spared(s[F.ZERO_MACS])
            if spared:
                row("pe", start, end, SKIP, OTHER, index, -1, spared)
                row("pe", start, end, SKIP, _FILTER, index, -1, min(spared, s[F.RF_FILTER_READS]))
                if pe.cfg.zero_gating_psums:
                    row("pe", start, end, SKIP, _PSUM, index, -1,
                        min(spared, s[F.RF_PSUM_READS]) + min(spared, max(0, s[F.RF_PSUM_WRITES])))
        return end

    def claim(self, s: Step, at: int, may_wait: bool) -> simpy.Event | None:
        """An ALLOC at `at`: place it (L2/DRAM with an address), claim its space, log its named buffer; None
        when granted at once, else the event of a claim waiting for space (only if `may_wait`): call
        `claimed` once it fires."""
        level = s[DST]
        if s[SRC_ADDR] >= 0 and level in PLACED_LEVELS:
            self.m.place(level, s[SRC_ADDR], s[WORDS])
        space = self.m.space(level, s[OPERAND])
        waiting = space.claim(s[WORDS], at, may_wait) if space is not None else None
        if waiting is None:
            self.claimed(s, at)
        return waiting

    def claimed(self, s: Step, at: int) -> None:
        """Log an ALLOC granted at `at` in its named buffer."""
        if s[DST] in NAMED_LEVELS:
            self.m.ring_change(s[DST_ADDR], s[WORDS], at)

    def release(self, s: Step, at: int) -> None:
        """A FREE at `at` (never waits)."""
        level = s[DST]
        if s[SRC_ADDR] >= 0 and level in PLACED_LEVELS:
            self.m.unplace(level, s[SRC_ADDR])
        space = self.m.space(level, s[OPERAND])
        if space is not None:
            space.release(s[WORDS], at)
        if level in NAMED_LEVELS:
            self.m.ring_change(s[DST_ADDR], -s[WORDS], at)


class Progress:
    """How far a stage has got (the index of the last group it finished), and waiting for it; costs a simpy
    event only when a process actually waits."""

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self.done_upto = -1
        self._reached: simpy.Event | None = None

    def advance(self, index: int) -> None:
        self.done_upto = index
        if self._reached is not None:
            reached, self._reached = self._reached, None
            reached.succeed()

    def wait_for(self, index: int) -> Generator[simpy.Event, Any, None]:
        while self.done_upto < index:
            if self._reached is None:
                self._reached = self.env.event()
            yield self._reached


class Handoff:
    """An in-order queue between two processes that costs a simpy event only when the taker must wait
    (a simpy Store costs two per item); the executor hands over tens of thousands of passes per layer."""

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self.items: deque[Any] = deque()
        self.waiter: simpy.Event | None = None

    def put(self, item: Any) -> None:
        self.items.append(item)
        if self.waiter is not None:
            waiter, self.waiter = self.waiter, None
            waiter.succeed()

    def take(self) -> Generator[simpy.Event, Any, Any]:
        while not self.items:
            self.waiter = self.env.event()
            yield self.waiter
        return self.items.popleft()


def _groups(layer: LayerSchedule, log: GroupLog) -> Iterator[Group]:
    """The layer's groups in order, each with the index of its first step in the layer; every block is noted in
    `log` for the trace."""
    offset = 0
    index = 0
    pending: list[Step] = []
    pending_start = 0
    for block in layer.blocks():
        log.add(block, offset)
        steps = block.tolist()
        cuts = np.flatnonzero(np.diff(block["group"])) + 1
        bounds = [0, *cuts.tolist(), len(steps)]
        for a, b in pairwise(bounds):
            part = steps[a:b]
            if pending and pending[0][GROUP] == part[0][GROUP]:
                pending.extend(part)
                continue
            if pending:
                yield Group(index, pending_start, pending, _compute_index(pending))
                index += 1
            pending, pending_start = part, offset + a
        offset += len(steps)
    if pending:
        yield Group(index, pending_start, pending, _compute_index(pending))


def _compute_index(steps: list[Step]) -> int:
    for i, s in enumerate(steps):
        if s[KIND] == _COMPUTE:
            return i
    return len(steps)


class ExecutionPolicy(ABC):
    """When a layer's groups start, and whether steps follow the simpy clock and claims wait for space."""

    follows_clock: bool  # chained steps wait until the clock reaches their request cycle
    claims_wait: bool  # an ALLOC that does not fit waits for frees (else: an impossible mapping)

    @abstractmethod
    def run(self, ex: LayerExecutor) -> Generator[simpy.Event, Any, None]:
        """Execute every group of the layer."""


EXECUTION_POLICIES: Registry[type[ExecutionPolicy]] = Registry("execution policy")


class LayerExecutor:
    """Runs one layer's groups under its execution policy: the group anatomy both policies share."""

    def __init__(self, m: Machine, layer: LayerSchedule, rec: Recorder) -> None:
        self.m, self.layer = m, layer
        self.group_log = GroupLog(rec.layer)
        self.runner = StepRunner(m, rec)
        self.policy = EXECUTION_POLICIES.get("pipelined" if layer.pipelined else "sequential")()
        self.stored = Progress(m.env)  # groups whose stores have finished
        self.psum_stores: deque[tuple[int, int, int, int]] = deque()  # (group, level, first word, end word) of
        # psum stores noted and not yet known to be done, in group order
        self.steps = 0
        self.rf_wait = self.load_wait = self.psum_wait = 0

    def run(self) -> Generator[simpy.Event, Any, None]:
        yield from self.policy.run(self)

    def until(self, at: int) -> Generator[simpy.Event, Any, int]:
        """Under a clock-following policy, wait until cycle `at`; the cycle the next step is requested."""
        env = self.m.env
        if self.policy.follows_clock and at > env.now:
            yield env.timeout(at - env.now)
        return at

    def _granted(self, s: Step, waiting: simpy.Event) -> Generator[simpy.Event, Any, int]:
        """Wait for an ALLOC's space; log it in its named buffer; the cycle it was granted."""
        yield waiting
        at = int(self.m.env.now)
        self.runner.claimed(s, at)
        return at

    def loads(self, g: Group, at: int) -> Generator[simpy.Event, Any, tuple[int, list[int]]]:
        """Issue the group's loads at `at` (a load of psums once the group that stored them has); (cycle the last
        one lands, positions of its RF transfers). Groups come here in schedule order: their psum stores are
        noted first."""
        runner, steps, first = self.runner, g.steps, g.first
        self.steps += len(steps)
        self._note_psum_stores(g)
        near, end = [], at
        for k in range(g.compute):
            s = steps[k]
            kind = s[KIND]
            if s[DST] == _RF:
                near.append(k)
            elif kind == _TRANSFER:
                if s[OPERAND] == _PSUM:
                    writer = self._psum_writer(s[SRC], s[SRC_ADDR], s[WORDS], g.index)
                    if self.stored.done_upto < writer:
                        yield from self.stored.wait_for(writer)
                        at = max(at, int(self.m.env.now))
                end = max(end, runner.transfer(first + k, s, at))
            elif kind == _ALLOC:
                if s[DST] == _LINE_BUFFER and self.stored.done_upto < g.index - 1:
                    yield from self.stored.wait_for(g.index - 1)  # a ring row is overwritten only once released
                    at = max(at, int(self.m.env.now))
                waiting = runner.claim(s, at, self.policy.claims_wait)
                if waiting is not None:
                    at = yield from self._granted(s, waiting)
                end = max(end, at)
            else:
                runner.release(s, at)
        return end, near

    def run_pass(self, g: Group, near: list[int], at: int) -> Generator[simpy.Event, Any, int]:
        """Filters into the RFs one after another from `at`, then the pass with its streams; its end cycle."""
        steps, first, runner = g.steps, g.first, self.runner
        if self.policy.follows_clock:  # groups run out of order only under a clock-following policy
            at = yield from self._wait_for_psums(g, near, at)
        env, follows = self.m.env, self.policy.follows_clock
        ready = at
        for k in near:  # filters must sit in the RFs before the pass starts
            if steps[k][OPERAND] == _FILTER:
                if follows and ready > env.now:
                    yield env.timeout(ready - env.now)
                ready = runner.transfer(first + k, steps[k], ready)
        if follows and ready > env.now:
            yield env.timeout(ready - env.now)
        self.rf_wait += ready - at
        end = ready
        for k in near:
            if steps[k][OPERAND] != _FILTER:
                end = max(end, runner.transfer(first + k, steps[k], ready))
        if g.compute < len(steps):
            end = max(end, runner.compute(first + g.compute, steps[g.compute], ready))
        return end

    def _wait_for_psums(self, g: Group, near: list[int], at: int) -> Generator[simpy.Event, Any, int]:
        """Wait until every earlier pass that wrote the psums this pass reads back has stored them. The cycle the
        pass may start."""
        steps = g.steps
        writer = max((self._psum_writer(steps[k][SRC], steps[k][SRC_ADDR], steps[k][WORDS], g.index) for k in near
                      if steps[k][OPERAND] == _PSUM), default=-1)
        if self.stored.done_upto < writer:
            yield from self.stored.wait_for(writer)
            waited = max(at, int(self.m.env.now))
            self.psum_wait += waited - at
            at = waited
        return at

    def _note_psum_stores(self, g: Group) -> None:
        """Note where the group's stores put psums (from the RFs, or spilled on to the L2 or DRAM)."""
        steps = g.steps
        for k in range(g.compute + 1, len(steps)):
            s = steps[k]
            if s[OPERAND] == _PSUM and s[KIND] == _TRANSFER and s[WORDS]:
                self.psum_stores.append((g.index, s[DST], s[DST_ADDR], s[DST_ADDR] + s[WORDS]))

    def _psum_writer(self, level: int, address: int, words: int, group: int) -> int:
        """The last group before `group` whose psum stores overlap words address … address + words of `level`
        and are not done yet (-1: none; a store already done needs no wait)."""
        pending, done = self.psum_stores, self.stored.done_upto
        while pending and pending[0][0] <= done:
            pending.popleft()
        end = address + words
        return max((w for w, lv, first, last in takewhile(lambda store: store[0] < group, pending)
                    if lv == level and first < end and address < last), default=-1)

    def stores(self, g: Group, at: int) -> Generator[simpy.Event, Any, int]:
        """The group's stores one after another from `at`; the cycle the last one ends."""
        runner, steps, first = self.runner, g.steps, g.first
        env, follows = self.m.env, self.policy.follows_clock
        for k in range(g.compute + 1, len(steps)):
            s = steps[k]
            if follows and at > env.now:
                yield env.timeout(at - env.now)
            kind = s[KIND]
            if kind == _TRANSFER:
                at = runner.transfer(first + k, s, at)
            elif kind == _ALLOC:
                waiting = runner.claim(s, at, self.policy.claims_wait)
                if waiting is not None:
                    at = yield from self._granted(s, waiting)
            else:
                runner.release(s, at)
        if follows and at > env.now:
            yield env.timeout(at - env.now)
        self.stored.advance(g.index)
        return at


@EXECUTION_POLICIES.register("pipelined")
class Pipelined(ExecutionPolicy):
    """Loads run ahead of the array as far as space allows; passes and stores overlap (module docstring)."""

    follows_clock = True
    claims_wait = True

    def run(self, ex: LayerExecutor) -> Generator[simpy.Event, Any, None]:
        env = ex.m.env
        to_array, to_store = Handoff(env), Handoff(env)
        processes = [env.process(self._prefetcher(ex, to_array)), env.process(self._array(ex, to_array, to_store)),
                     env.process(self._storer(ex, to_store))]
        yield env.all_of(processes)

    @staticmethod
    def _prefetcher(ex: LayerExecutor, to_array: Handoff) -> Generator[simpy.Event, Any, None]:
        """A group's loads are issued back to back, like a DMA engine with outstanding requests; the group
        goes to the array when the last one has landed."""
        for g in _groups(ex.layer, ex.group_log):
            end, near = yield from ex.loads(g, int(ex.m.env.now))
            yield from ex.until(end)
            to_array.put((g, near))
        to_array.put(None)

    @staticmethod
    def _array(ex: LayerExecutor, to_array: Handoff, to_store: Handoff) -> Generator[simpy.Event, Any, None]:
        env = ex.m.env
        while True:
            wait_from = int(env.now)
            item = yield from to_array.take()
            if item is None:
                to_store.put(None)
                return
            g, near = item
            ex.load_wait += int(env.now) - wait_from
            end = yield from ex.run_pass(g, near, int(env.now))
            yield from ex.until(end)
            to_store.put(g)

    @staticmethod
    def _storer(ex: LayerExecutor, to_store: Handoff) -> Generator[simpy.Event, Any, None]:
        while True:
            g = yield from to_store.take()
            if g is None:
                return
            yield from ex.stores(g, int(ex.m.env.now))


@EXECUTION_POLICIES.register("sequential")
class Sequential(ExecutionPolicy):
    """Groups strictly one after another, booked ahead of the simpy clock (module docstring)."""

    follows_clock = False
    claims_wait = False

    def run(self, ex: LayerExecutor) -> Generator[simpy.Event, Any, None]:
        env = ex.m.env
        end = int(env.now)
        for g in _groups(ex.layer, ex.group_log):
            loaded, near = yield from ex.loads(g, end)
            ex.load_wait += loaded - end
            end = yield from ex.run_pass(g, near, loaded)
            end = yield from ex.stores(g, end)
            if g.index % SEQUENTIAL_CLOCK_GROUPS == 0 and end > env.now:
                yield env.timeout(end - env.now)
        if end > env.now:
            yield env.timeout(end - env.now)


@dataclass
class LayerRun:
    """What the simulation measured for one layer."""

    name: str
    start_cycle: int
    end_cycle: int
    steps: int
    passes: int
    compute_cycles: int  # cycles the array was busy with this layer's passes
    rf_wait_cycles: int  # cycles passes waited for their filters to reach the RFs
    load_wait_cycles: int  # cycles the array waited for prefetched data (DRAM bandwidth, buffer space)
    psum_wait_cycles: int  # cycles passes waited for earlier passes' psums to be stored
    resource_stall_cycles: dict[str, int]  # cycles transactions queued for each resource during the layer
    dram_counters: dict[str, float] = field(default_factory=dict)  # the DRAM model's counters gained in the layer

    @property
    def cycles(self) -> int:
        return self.end_cycle - self.start_cycle


@dataclass
class SimResult:
    """The simulated timing of a whole schedule (the trace holds the accesses)."""

    network: str
    hardware: str
    batch: int
    layers: list[LayerRun]
    dram_stats: tuple[StatInfo, ...] = ()  # unit and description of each of the DRAM model's counters

    @property
    def cycles(self) -> int:
        return self.layers[-1].end_cycle if self.layers else 0


def _run_layer(m: Machine, layer: LayerSchedule, rec: Recorder) -> tuple[LayerRun, np.ndarray]:
    """Run one layer; what it measured and its schedule's groups (for the trace)."""
    ex = LayerExecutor(m, layer, rec)
    start = int(m.env.now)
    before, dram_before = m.stall_cycles(), m.dram.stats()
    done = m.env.process(ex.run())
    try:
        m.env.run(done)
    except RuntimeError:  # simpy: no event is left, yet the layer has not finished
        if done.triggered:
            raise
        raise HwsimError(_deadlock(m, layer)) from None
    after, dram_after = m.stall_cycles(), m.dram.stats()
    dram = {k: dram_after[k].value - dram_before[k].value for k in dram_after}
    return (LayerRun(layer.name, start, int(m.env.now), ex.steps, ex.runner.passes, ex.runner.compute_cycles,
                     ex.rf_wait, ex.load_wait, ex.psum_wait, {k: after[k] - before[k] for k in after}, dram),
            ex.group_log.rows())


def _deadlock(m: Machine, layer: LayerSchedule) -> str:
    """Why a layer stopped making progress: the buffer claims that wait for space nothing will free."""
    stuck = [f"{space.name} needs {space.waiting_words} words with {space.occupancy_words} of "
             f"{space.capacity_words} held" for space in (*m.buffer_spaces(), m.l2.spaces["data"] if m.l2 else None)
             if space is not None and space.waiting_words]
    why = "; ".join(stuck) if stuck else "a step waits for an event that never comes"
    return (f"layer {layer.name} cannot make progress at cycle {int(m.env.now)}: {why}, and no later step can free "
            "it; give the mapping smaller tiles, free the space in an earlier group, or enlarge the buffer")


def simulate(schedule: Schedule, hw: Accelerator, sink: Callable[[str, np.ndarray], None],
             levels: frozenset[str] = frozenset(SIM_LEVELS),
             progress: Callable[[int, LayerRun], None] | None = None,
             occupancy_sink: Callable[[np.ndarray], None] | None = None,
             per_transaction: frozenset[str] = frozenset(),
             group_sink: Callable[[np.ndarray], None] | None = None) -> SimResult:
    """Execute `schedule` layer after layer; every record of the chosen `levels` goes to `sink(level, block)`
    (one per transaction rather than per burst for the levels in `per_transaction`), each layer's groups
    (`hwsim.trace.schema.GROUP_DTYPE`) to `group_sink` and the buffers'
    allocate/free events to `occupancy_sink` (buffer 0 = GLB data, 1 = GLB filter, 2 = line buffer,
    RING_BUFFER0 + k = named buffer k: a depth-first ring, a phased or planned buffer)."""
    m = Machine.build(hw)
    runs: list[LayerRun] = []
    spaces = m.buffer_spaces()
    emitted = [0] * len(spaces)
    for index, layer in enumerate(schedule.layers):
        m.use(layer_hardware(hw, layer.layer.word_bits))  # the layer's word (mixed precision)
        word_bytes = m.hw.word_bytes
        rec = Recorder(levels, sink, index, per_transaction)
        run, groups = _run_layer(m, layer, rec)
        rec.flush()
        if group_sink is not None:
            group_sink(groups)
        if occupancy_sink is not None:
            for b, space in enumerate(spaces):
                if space is None:
                    continue
                log = space.occupancy_records()[emitted[b]:]
                emitted[b] += len(log)
                if len(log):
                    occupancy_sink(occupancy_events(b, index, log, word_bytes))
            if m.ring_log:
                occupancy_sink(ring_events(m.ring_log, index, word_bytes))
        m.ring_log.clear()
        runs.append(run)
        if progress:
            progress(index, run)
    return SimResult(schedule.network, schedule.hardware, schedule.batch, runs, declared_stats(type(m.dram)))


def ring_events(log: list[tuple[int, int, int]], layer: int, word_bytes: int) -> np.ndarray:
    """Named-buffer changes (cycle, id, words after) as trace occupancy events in bytes."""
    table = np.array(log, dtype=np.int64)
    out = np.empty(len(table), dtype=OCCUPANCY_DTYPE)
    out["buffer"] = RING_BUFFER0 + table[:, 1]
    out["cycle"] = table[:, 0]
    out["bytes"] = table[:, 2] * word_bytes
    out["layer"] = layer
    return out


def occupancy_events(buffer: int, layer: int, log: np.ndarray, word_bytes: int) -> np.ndarray:
    """A `Space`'s (cycle, words_after) log as trace occupancy events in bytes."""
    out = np.empty(len(log), dtype=OCCUPANCY_DTYPE)
    out["buffer"] = buffer
    out["cycle"] = log["cycle"]
    out["bytes"] = log["words_after"] * word_bytes
    out["layer"] = layer
    return out
