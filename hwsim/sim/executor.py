"""The executor: walks a `Schedule`'s units of work on the machine's cores and hands every record to a sink.

A schedule is a graph of works: a work starts once the works it is `after` have ended and its core has ended the
work before it (a core runs its works one at a time, in schedule order); works on different cores run at the
same time, contending for what they share (the L2, DRAM channels, links). A chain of works on one core is
today's layer-by-layer run: tensors pass through DRAM.

Inside a work the steps form groups, one processing pass each, with the same anatomy under every execution
policy:

- *loads*: the steps before the COMPUTE that fill on-chip buffers (ALLOC,
  DRAM → GLB, L2 → line buffer, FREE), all requested when the group starts;
  an ALLOC in the line buffer first waits until the previous group's stores
  are done (ring rows are overwritten only once released), and a load of
  psums (spilled to the L2 or DRAM) until every earlier group whose psum
  stores overlap its words has stored them;
- the *pass*: its filters go into the RFs one transfer after another as soon
  as the array has ended the pass before (a filter the group's loads bring
  waits for them to land; one bypassing those buffers does not), then, once
  its loads have landed and every earlier pass that wrote psums overlapping
  those it reads back has stored them, its ifmap and psum words stream in
  over the NoC while the array computes (a pass ends when its compute and
  its streams are done);
- *stores*: the steps after the COMPUTE (psums RF → GLB, ofmaps → DRAM,
  FREE), one after another; with the NoC's `psum_out_streamed` the psums
  leaving the RFs go with the pass instead (as its columns finish them), the
  pass ending when they are stored too.

A step is performed by `hwsim.sim.runner.StepRunner` at the cycle it is requested. The two execution policies
differ only in when groups start and what an ALLOC that does not fit means:

- `pipelined` (layer-by-layer schedules): three simpy processes share the
  groups in order — the prefetcher issues a group's loads as soon as the
  previous group's loads have landed (it runs ahead of the array as far as
  buffer space allows, so DRAM traffic overlaps compute: double buffering),
  the array runs the passes, the storer the stores. Chained steps wait for
  the simpy clock to reach their request cycle, so every resource is booked
  in the order requests are made; an ALLOC waits while its space is full.
  Where the machine's state recurs p groups later and the groups ahead
  repeat, the periods that repeat are made from the last one and the clock
  jumps past them (`hwsim.sim.steady`).
- `sequential` (depth-first stacks, phased and planned schedules: rings and
  buffers reused group by group): one process; a group's loads start when the
  previous group's stores have ended. Nothing else on its core runs meanwhile, so steps
  are booked ahead of the simpy clock (it catches up every
  SEQUENTIAL_CLOCK_GROUPS groups) and an ALLOC that does not fit can never
  fit: an impossible mapping. (Shared units see its requests early: run such works alone.)

ALLOC/FREE steps in the line buffer, the L2 or DRAM carry a buffer id (a
depth-first ring, a phased edge buffer, a planned buffer); each id's
occupancy is traced as its own buffer (after the cores' GLB and line buffers).
An L2 or DRAM ALLOC whose `src_addr` is a word address (≥ 0) places its words there (see
`hwsim.sim.machine`).

What a run measures goes to a *sink* (`hwsim.trace.sinks`): records per level, occupancy events, the
schedule's groups and the DRAM's commands. The HDF5 trace writer is one sink; a counting sink keeps totals
while the run goes. Records go in slabs as they are made (`hwsim.sim.recorder`); on one core, where works run
one at a time, the rest goes every HAND_ON_STEPS steps too, so a run's memory does not grow with its work.
"""

from __future__ import annotations

import gc
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from itertools import takewhile
from typing import Any

import numpy as np
import simpy

from hwsim.errors import HwsimError
from hwsim.mapping.schedule import Schedule, Work
from hwsim.registry import Registry
from hwsim.sim.component import StatInfo, declared_stats
from hwsim.sim.groups import Group, groups
from hwsim.sim.machine import Machine
from hwsim.sim.recorder import Recorder
from hwsim.sim.replay import GroupReplay
from hwsim.sim.runner import Step, StepRunner
from hwsim.sim.steady import SteadyState, Upcoming
from hwsim.sim.structure import GroupLog
from hwsim.trace.schema import DRAM_COMMAND_DTYPE, OCCUPANCY_DTYPE
from hwsim.trace.sinks import TraceSink
from hwsim.vocab import TRACE_LEVELS, Level, Operand, StepField, StepKind

SIM_LEVELS = TRACE_LEVELS
SEQUENTIAL_CLOCK_GROUPS = 1024  # a sequential layer advances the simpy clock every this many groups
YOUNG_COLLECTION_ALLOCATIONS = 100_000  # a run's cyclic garbage collector looks at young objects this seldom
HAND_ON_STEPS = 1 << 16  # a one-core run hands occupancy, groups and DRAM commands to the sink every this many steps

_L2, _LINE_BUFFER, _RF = int(Level.L2), int(Level.LINE_BUFFER), int(Level.RF)
_TRANSFER, _COMPUTE, _ALLOC = int(StepKind.TRANSFER), int(StepKind.COMPUTE), int(StepKind.ALLOC)
_FILTER, _PSUM = int(Operand.FILTER), int(Operand.PSUM)

# Positions of the fields in a step tuple, from STEP_DTYPE.
F = StepField
KIND, OPERAND, SRC, DST, GROUP, WORDS, SRC_ADDR, DST_ADDR = (F.KIND, F.OPERAND, F.SRC, F.DST, F.GROUP, F.WORDS,
                                                             F.SRC_ADDR, F.DST_ADDR)


@dataclass(frozen=True)
class RecordOptions:
    """Which levels a run records, and which of them one record per transaction rather than per DRAM burst."""

    levels: frozenset[str] = frozenset(SIM_LEVELS)
    per_transaction: frozenset[str] = frozenset()



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


class ExecutionPolicy(ABC):
    """When a layer's groups start, and whether steps follow the simpy clock and claims wait for space."""

    follows_clock: bool  # chained steps wait until the clock reaches their request cycle
    claims_wait: bool  # an ALLOC that does not fit waits for frees (else: an impossible mapping)

    @abstractmethod
    def run(self, ex: LayerExecutor) -> Generator[simpy.Event, Any, None]:
        """Execute every group of the layer."""


EXECUTION_POLICIES: Registry[type[ExecutionPolicy]] = Registry("execution policy")


class LayerExecutor:
    """Runs one work's groups under its execution policy: the group anatomy both policies share."""

    def __init__(self, m: Machine, layer: Work, rec: Recorder, word_bytes: int) -> None:
        self.m, self.layer = m, layer
        self.group_log = GroupLog(rec.layer)
        self.runner = StepRunner(m, rec, word_bytes)
        self.policy = EXECUTION_POLICIES.get("pipelined" if layer.pipelined else "sequential")()
        self.stored = Progress(m.env)  # groups whose stores have finished
        self.psum_stores: deque[tuple[int, int, int, int]] = deque()  # (group, level, first word, end word) of
        # psum stores noted and not yet known to be done, in group order
        self.steps = 0
        self.rf_wait = self.load_wait = self.psum_wait = 0
        self.streams_out = m.cores[layer.core].hw.noc.psum_out_streamed
        self.hand_on: Callable[[], None] | None = None  # called every HAND_ON_STEPS steps, when set
        self._handed_on_steps = 0  # steps loaded when `hand_on` was last called
        self.claim_wait: tuple[Group, int, int] | None = None  # while the loads wait for an ALLOC's space: the
        # group, the ALLOC's position, the cycle its loads so far end (`hwsim.sim.steady` moves them on)
        self.array_idle_from = 0  # the cycle the array last began waiting for a group (pipelined)
        self.landing = False  # whether the prefetcher waits for a group's loads to land (pipelined)

    @property
    def handed_on_steps(self) -> int:
        """Steps loaded when `hand_on` was last called."""
        return self._handed_on_steps

    def run(self) -> Generator[simpy.Event, Any, None]:
        yield from self.policy.run(self)

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
        near, end, filled = [], at, g.filled
        for k in range(g.compute):
            s = steps[k]
            kind = s[KIND]
            if kind == _TRANSFER and s[OPERAND] == _FILTER:
                filled.add(s[DST])
            if s[DST] == _RF:
                near.append(k)
                if s[OPERAND] == _PSUM:
                    g.reads_psums = True
            elif kind == _TRANSFER:
                if s[OPERAND] == _PSUM:
                    writer = self._psum_writer(s[SRC], s[SRC_ADDR], s[WORDS], g.index)
                    if self.stored.done_upto < writer:
                        yield from self.stored.wait_for(writer)
                        at = max(at, int(self.m.env.now))
                        steps, first = g.steps, g.first
                end = max(end, runner.transfer(first + k, s, at))
            elif kind == _ALLOC:
                if s[DST] == _LINE_BUFFER and self.stored.done_upto < g.index - 1:
                    yield from self.stored.wait_for(g.index - 1)  # a ring row is overwritten only once released
                    at = max(at, int(self.m.env.now))
                    steps, first = g.steps, g.first
                waiting = runner.claim(s, at, self.policy.claims_wait)
                if waiting is not None:
                    self.claim_wait = (g, k, end)
                    at = yield from self._granted(s, waiting)
                    self.claim_wait = None
                    steps, first = g.steps, g.first  # a skip may have made it a later group of the same shape
                end = max(end, at)
            else:
                runner.release(s, at)
        return end, near

    def run_pass(self, g: Group, near: list[int], at: int) -> Generator[simpy.Event, Any, int]:
        """The pass of a group whose loads land at `g.landed`, on an array free from `at`: its filters into the
        RFs one after another (from `at` when their source is not one of the group's loads, a filter bypassing
        the buffers the loads fill; else from when they land), then, once its loads and the psums it reads back
        are there, the pass with its streams; its end cycle. After a wait it reads the cycle from the clock and
        the group again (a skip, `hwsim.sim.steady`, may have moved both on)."""
        steps, first, landed, runner = g.steps, g.first, g.landed, self.runner
        env, follows = self.m.env, self.policy.follows_clock
        filled = g.filled
        ready = at
        for k in near:  # filters must sit in the RFs before the pass starts
            if steps[k][OPERAND] == _FILTER:
                from_loads = steps[k][SRC] in filled
                if from_loads and landed > ready:
                    self.load_wait += landed - ready
                    ready = landed
                if follows and ready > env.now and not env.skip_to(ready):
                    yield env.timeout(ready - env.now)
                    ready, steps, first, landed = int(env.now), g.steps, g.first, g.landed
                start = ready
                ready = runner.transfer(first + k, steps[k], ready)
                self.rf_wait += ready - start
        if landed > ready:
            self.load_wait += landed - ready
            ready = landed
        if follows and ready > env.now and not env.skip_to(ready):
            yield env.timeout(ready - env.now)
            ready, steps, first = int(env.now), g.steps, g.first
        if follows and g.reads_psums and self.psum_stores:  # groups run out of order only under a clock-following
            # policy
            ready = yield from self._wait_for_psums(g, near, ready)
        end = ready
        for k in near:
            if steps[k][OPERAND] != _FILTER:
                end = max(end, runner.transfer(first + k, steps[k], ready))
        if g.compute < len(steps):
            end = max(end, runner.compute(first + g.compute, steps[g.compute], ready))
        if self.streams_out:
            for k in self._streamed_out(g):
                end = max(end, runner.transfer(first + k, steps[k], ready))
        return end

    def _streamed_out(self, g: Group) -> Iterator[int]:
        """Positions of the group's psum stores that leave the RFs while its pass runs (the NoC's
        `psum_out_streamed`: each output handed back as its column finishes it)."""
        steps = g.steps
        for k in range(g.compute + 1, len(steps)):
            if steps[k][SRC] == _RF and steps[k][KIND] == _TRANSFER:
                yield k

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
        """Note where the group's stores put psums (from the RFs, or spilled on to the L2 or DRAM), forgetting
        those known to be done (a layer whose passes read no psums back keeps none)."""
        steps, pending, done = g.steps, self.psum_stores, self.stored.done_upto
        while pending and pending[0][0] <= done:
            pending.popleft()
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
        streamed = self.streams_out
        for k in range(g.compute + 1, len(steps)):
            s = steps[k]
            if follows and at > env.now and not env.skip_to(at):
                yield env.timeout(at - env.now)
            kind = s[KIND]
            if kind == _TRANSFER and streamed and s[SRC] == _RF:
                continue  # it ran with the pass
            if kind == _TRANSFER:
                at = runner.transfer(first + k, s, at)
            elif kind == _ALLOC:
                waiting = runner.claim(s, at, self.policy.claims_wait)
                if waiting is not None:
                    at = yield from self._granted(s, waiting)
            else:
                runner.release(s, at)
        if follows and at > env.now and not env.skip_to(at):
            yield env.timeout(at - env.now)
        runner.rec.check()
        self.stored.advance(g.index)
        self.hand_on_when_due()
        return at

    def hand_on_in(self) -> int | None:
        """Steps still to load before `hand_on` is next called (None: never)."""
        return None if self.hand_on is None else HAND_ON_STEPS - (self.steps - self._handed_on_steps)

    def hand_on_when_due(self) -> None:
        """Call `hand_on` when HAND_ON_STEPS steps have been loaded since it was last called."""
        if self.hand_on is not None and self.steps - self._handed_on_steps >= HAND_ON_STEPS:
            self._handed_on_steps = self.steps
            self.hand_on()


@EXECUTION_POLICIES.register("pipelined")
class Pipelined(ExecutionPolicy):
    """Loads run ahead of the array as far as space allows; passes and stores overlap (module docstring)."""

    follows_clock = True
    claims_wait = True

    def run(self, ex: LayerExecutor) -> Generator[simpy.Event, Any, None]:
        env = ex.m.env
        to_array, to_store = Handoff(env), Handoff(env)
        upcoming = Upcoming(groups(ex.layer, ex.group_log))
        steady = SteadyState.of(ex, to_array, to_store, upcoming)
        processes = [env.process(self._prefetcher(ex, to_array, upcoming)),
                     env.process(self._array(ex, to_array, to_store)), env.process(self._storer(ex, to_store, steady))]
        if steady is not None:
            steady.watch(processes[:2])
        yield env.all_of(processes)

    @staticmethod
    def _prefetcher(ex: LayerExecutor, to_array: Handoff, upcoming: Upcoming) -> Generator[simpy.Event, Any, None]:
        """A group's loads are issued back to back, like a DMA engine with outstanding requests; the group
        goes to the array when the last one has landed."""
        env = ex.m.env
        for g in upcoming:
            end, near = yield from ex.loads(g, int(ex.m.env.now))
            g.landed = end
            to_array.put((g, near))  # the array may load filters that bypass these loads meanwhile
            if end > env.now and not env.skip_to(end):  # wait until the loads have landed
                ex.landing = True
                yield env.timeout(end - env.now)
                ex.landing = False
        to_array.put(None)

    @staticmethod
    def _array(ex: LayerExecutor, to_array: Handoff, to_store: Handoff) -> Generator[simpy.Event, Any, None]:
        env = ex.m.env
        while True:
            ex.array_idle_from = int(env.now)
            item = yield from to_array.take()
            if item is None:
                to_store.put(None)
                return
            g, near = item
            ex.load_wait += int(env.now) - ex.array_idle_from
            end = yield from ex.run_pass(g, near, int(env.now))
            if end > env.now and not env.skip_to(end):  # wait until the pass has ended
                yield env.timeout(end - env.now)
            to_store.put(g)
            del g, item  # it holds no group while it waits for the next (`hwsim.sim.steady` reads where it stands)

    @staticmethod
    def _storer(ex: LayerExecutor, to_store: Handoff, steady: SteadyState | None) -> Generator[simpy.Event, Any, None]:
        while True:
            g = yield from to_store.take()
            if g is None:
                return
            yield from ex.stores(g, int(ex.m.env.now))
            if steady is not None:
                steady.checkpoint(g)


@EXECUTION_POLICIES.register("sequential")
class Sequential(ExecutionPolicy):
    """Groups strictly one after another, booked ahead of the simpy clock (module docstring)."""

    follows_clock = False
    claims_wait = False

    def run(self, ex: LayerExecutor) -> Generator[simpy.Event, Any, None]:
        env = ex.m.env
        end = int(env.now)
        replay = GroupReplay.of(ex)
        if replay is not None:
            replay.end = end
            for item in replay.groups(SEQUENTIAL_CLOCK_GROUPS):
                if item is not None:
                    g, mark = item
                    end = yield from self._book(ex, g, replay.end)
                    replay.learn(mark, end)
                    if g.index % SEQUENTIAL_CLOCK_GROUPS:
                        continue
                if replay.end > env.now:
                    yield env.timeout(replay.end - env.now)
            replay.make_records()
            end = replay.end
        else:
            for g in groups(ex.layer, ex.group_log):
                end = yield from self._book(ex, g, end)
                if g.index % SEQUENTIAL_CLOCK_GROUPS == 0 and end > env.now:
                    yield env.timeout(end - env.now)
        if end > env.now:
            yield env.timeout(end - env.now)

    @staticmethod
    def _book(ex: LayerExecutor, g: Group, start: int) -> Generator[simpy.Event, Any, int]:
        """Book group `g` in full from cycle `start`: loads, pass, stores; the cycle its stores end."""
        g.landed, near = yield from ex.loads(g, start)
        end = yield from ex.run_pass(g, near, start)
        return (yield from ex.stores(g, end))


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
    core: int = 0  # the core it ran on

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
        return max((run.end_cycle for run in self.layers), default=0)

    def dram_cycles(self) -> dict[str, int]:
        """Per work, the cycles from the end of the work that ended before it to its own end: the slice of the
        run its DRAM counters cover (they are taken as each work ends; one core: the work's own cycles)."""
        out, last = {}, 0
        for run in sorted(self.layers, key=lambda r: r.end_cycle):
            out[run.name] = run.end_cycle - last
            last = run.end_cycle
        return out


class _Run:
    """One simulation: a simpy process per work, each waiting for the works it is after and for its core."""

    def __init__(self, schedule: Schedule, m: Machine, sink: TraceSink, options: RecordOptions,
                 progress: Callable[[int, LayerRun], None] | None) -> None:
        self.schedule, self.m, self.sink, self.options, self.progress = schedule, m, sink, options, progress
        env = m.env
        self.done = [env.event() for _ in schedule.layers]
        self.runs: list[LayerRun | None] = [None] * len(schedule.layers)
        self.spaces = m.buffer_spaces()
        self.untraced = m.untraced_spaces()
        self.ring0 = len(self.spaces)  # occupancy buffer id of named buffer 0
        # one core runs one work at a time: what happens while a work runs is that work's, so it can be handed on
        # as the work goes (with several cores, a work's events are those since the last work ended, known only
        # when it ends)
        self.hands_on = len(m.cores) == 1
        self.commands: list[np.ndarray] = []  # DRAM commands taken while the running work ran, kept compact
        self.dram_mark = m.dram.stats()
        m.dram.record_commands("dram" in options.levels)  # the validator checks the JEDEC timing from them
        self.previous_on_core: list[int | None] = []
        last: dict[int, int] = {}
        for i, work in enumerate(schedule.layers):
            if not 0 <= work.core < len(m.cores):
                raise HwsimError(f"work {work.name!r} runs on core {work.core}, but {m.hw.name} has "
                                 f"{len(m.cores)} cores; map it to one of 0 … {len(m.cores) - 1}")
            if any(not 0 <= j < i for j in schedule.waits_for(i)):
                raise HwsimError(f"work {work.name!r} (#{i}) waits for works {list(schedule.waits_for(i))}; a work "
                                 "waits only for works listed before it")
            self.previous_on_core.append(last.get(work.core))
            last[work.core] = i

    def result(self) -> SimResult:
        env = self.m.env
        for i in range(len(self.schedule.layers)):
            env.process(self._work(i))
        pending = env.all_of(self.done) if self.done else env.timeout(0)
        try:
            env.run(pending)
        except RuntimeError:  # simpy: no event is left, yet some work has not finished
            if pending.triggered:
                raise
            raise HwsimError(self._deadlock()) from None
        runs = [run for run in self.runs if run is not None]
        return SimResult(self.schedule.network, self.schedule.hardware, self.schedule.batch, runs,
                         declared_stats(type(self.m.dram)))

    def _work(self, index: int) -> Generator[simpy.Event, Any, None]:
        """Wait for the works `index` is after and its core's previous work, run it, hand its records on."""
        m, work = self.m, self.schedule.layers[index]
        waits = [self.done[j] for j in self.schedule.waits_for(index)]
        previous = self.previous_on_core[index]
        if previous is not None and previous not in self.schedule.waits_for(index):
            waits.append(self.done[previous])
        pending = [event for event in waits if not event.processed]
        if pending:
            yield m.env.all_of(pending)
        word_bytes = (work.word_bits or m.hw.precision_bits) // 8
        rec = Recorder(self.options.levels, self.sink.append, index, self.options.per_transaction)
        ex = LayerExecutor(m, work, rec, word_bytes)
        if self.hands_on:
            ex.hand_on = partial(self._hand_on, index, ex.group_log)
        start, before = int(m.env.now), m.stall_cycles(work.core)
        yield from ex.run()
        after, dram = m.stall_cycles(work.core), m.dram.stats()
        counters = {k: dram[k].value - self.dram_mark[k].value for k in dram}  # shared: since the last work ended
        self.dram_mark = dram
        rec.flush()
        self.sink.append_groups(ex.group_log.rows())
        commands = self._work_commands()
        if len(commands):
            self.sink.append_dram_commands(commands)
        self._emit_occupancy(index)
        run = LayerRun(work.name, start, int(m.env.now), ex.steps, ex.runner.passes, ex.runner.compute_cycles,
                       ex.rf_wait, ex.load_wait, ex.psum_wait, {k: after[k] - before[k] for k in after}, counters,
                       work.core)
        self.runs[index] = run
        if self.progress:
            self.progress(index, run)
        self.done[index].succeed()

    def _hand_on(self, layer: int, groups: GroupLog) -> None:
        """While work `layer` runs alone: hand its finished groups and the buffers' events so far to the sink, so
        that memory holds only what came since (the trace gets the same rows), and keep the DRAM commands so far
        as compact rows (a later booking may issue commands at earlier cycles: they go once the work ends)."""
        done = groups.take()
        if len(done):
            self.sink.append_groups(done)
        self._take_commands()
        self._emit_occupancy(layer)

    def _take_commands(self) -> None:
        commands = self.m.dram.take_commands()
        if len(commands):
            self.commands.append(commands)

    def _work_commands(self) -> np.ndarray:
        """The DRAM commands issued since the last work ended, by cycle, ties by channel and then in the order
        issued: what one take at the work's end gives, however many takes there were."""
        self._take_commands()
        parts, self.commands = self.commands, []
        if len(parts) <= 1:
            return parts[0] if parts else np.empty(0, dtype=DRAM_COMMAND_DTYPE)
        joined = np.concatenate(parts)
        ordered: np.ndarray = joined[np.lexsort((joined["channel"], joined["cycle"]))]
        return ordered

    def _emit_occupancy(self, layer: int) -> None:
        """The buffers' allocate/free events not handed on yet, as work `layer`'s."""
        for b, space in enumerate(self.spaces):
            if space is None:
                continue
            log = space.take_occupancy()
            if len(log):
                self.sink.append_occupancy(occupancy_events(b, layer, log))
        for space in self.untraced:
            space.take_occupancy()
        if self.m.ring_log:
            self.sink.append_occupancy(ring_events(self.m.ring_log, layer, self.ring0))
            self.m.ring_log.clear()

    def _deadlock(self) -> str:
        """Why the run stopped making progress: the works not finished and the buffer claims that wait for space
        nothing will free."""
        m = self.m
        stuck_works = [w.name for w, done in zip(self.schedule.layers, self.done) if not done.triggered]
        spaces = [*self.spaces, m.l2.spaces["data"] if m.l2 else None]
        stuck = [f"{space.name} needs {space.waiting_bytes} bytes with {space.occupancy_bytes} of "
                 f"{space.capacity_bytes} held" for space in spaces if space is not None and space.waiting_bytes]
        why = "; ".join(stuck) if stuck else "a step waits for an event that never comes (a cycle of works?)"
        return (f"layer {stuck_works[0] if stuck_works else '?'} cannot make progress at cycle {int(m.env.now)}: "
                f"{why}, and no later step can free it; give the mapping smaller tiles, free the space in an earlier "
                "group, or enlarge the buffer")


def simulate(schedule: Schedule, machine: Machine, sink: TraceSink, options: RecordOptions = RecordOptions(),
             progress: Callable[[int, LayerRun], None] | None = None) -> SimResult:
    """Execute `schedule`'s works on `machine` (built from the accelerator's tree: `Machine.build`), every record of
    the levels `options` asks for, each work's groups (`hwsim.trace.schema.GROUP_DTYPE`) and the buffers'
    allocate/free events going to `sink` (occupancy buffers: each core's GLB data, GLB filter and line buffer,
    then named buffer k: a depth-first ring, a phased or planned buffer); `progress` is told of each work as it
    ends."""
    with _young_collections_every(YOUNG_COLLECTION_ALLOCATIONS):
        return _Run(schedule, machine, sink, options, progress).result()


@contextmanager
def _young_collections_every(allocations: int) -> Iterator[None]:
    """Python's cyclic garbage collector looks at its youngest objects every `allocations` container allocations
    while the block runs (then as before). A run allocates millions of steps and records as tuples, which hold no
    cycles: at Python's default (700) the collector's passes over them cost VGG-16 some 4 % of its run."""
    threshold = gc.get_threshold()
    gc.set_threshold(allocations, *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)


def ring_events(log: list[tuple[int, int, int]], layer: int, ring0: int) -> np.ndarray:
    """Named-buffer changes (cycle, id, bytes after) as trace occupancy events of buffer ring0 + id."""
    table = np.array(log, dtype=np.int64)
    out = np.empty(len(table), dtype=OCCUPANCY_DTYPE)
    out["buffer"] = ring0 + table[:, 1]
    out["cycle"] = table[:, 0]
    out["bytes"] = table[:, 2]
    out["layer"] = layer
    return out


def occupancy_events(buffer: int, layer: int, log: np.ndarray) -> np.ndarray:
    """A `Space`'s (cycle, bytes_after) log as trace occupancy events."""
    out = np.empty(len(log), dtype=OCCUPANCY_DTYPE)
    out["buffer"] = buffer
    out["cycle"] = log["cycle"]
    out["bytes"] = log["bytes_after"]
    out["layer"] = layer
    return out
