"""The executor: walks a `Schedule` on the simpy components and emits every access as trace records.

Each layer runs after the previous one (tensors pass through DRAM). Inside a
layer the steps form groups (one processing pass each: its loads, its
COMPUTE, its stores) and three processes share them, in group order:

- the *prefetcher* performs a group's loads into on-chip buffers (ALLOC,
  DRAM → GLB): it runs ahead of the array as far as buffer space allows, so
  DRAM traffic overlaps compute (double buffering whenever two tiles fit);
- the *array* loads a tile's filters into the RFs once the previous pass is
  done with them, then runs the pass while its ifmap and psum words stream
  in from the GLB over the NoC (a pass ends when its compute and its
  streams are done); a pass that reads psums back first waits until the
  pass that last wrote them (to the same GLB address) has stored them;
- the *storer* performs the steps after a COMPUTE (psums RF → GLB, ofmaps
  GLB → DRAM, FREE), overlapping the next passes.

A layer schedule that is not `pipelined` (a depth-first stack, whose line
buffers are rings reused line by line) runs in one process instead: each
group's loads start when the previous group's stores have ended, then its
filters, its pass and its stores, every transaction reserved at the cycle it
is requested (`book(..., request_cycle)`) and allocations claimed at that
cycle; the simpy clock catches up every SEQUENTIAL_CLOCK_GROUPS groups.
ALLOC/FREE steps in the line buffer, the L2 or DRAM carry a buffer id (a
depth-first ring, a phased edge buffer, a planned buffer); each id's
occupancy is traced as its own buffer (RING_BUFFER0 + id). An L2 or DRAM
ALLOC whose `src_addr` is a word address (≥ 0) places its words there: two live
allocations of one level that overlap are an impossible mapping.

A transfer occupies its source and destination at once (data streams from
one into the other) and ends when both are done. Records (see
`hwsim.trace.schema`; op codes are Timeloop's access kinds): DRAM one per
burst (or one per transaction when asked), GLB / L2 / line buffer one per transfer, NoC one per bus transfer (op write), RF one
per transfer (fill, or read for psums going out), and per pass at level `pe`:
the MACs (operand other, op update, address = active PEs), non-MAC ops
(other, write), the MACs' RF reads per operand (read), psum RF writes
(psum, update) and psum words forwarded PE to PE (psum, fill).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import simpy

from hwsim.errors import HwsimError
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.schedule import LayerSchedule, Schedule
from hwsim.sim.dram import Dram
from hwsim.sim.line_buffer import LineBuffer
from hwsim.sim.noc import Noc
from hwsim.sim.pe_array import PeArray
from hwsim.sim.sram import Sram
from hwsim.sim.timing import NO_ADDRESS, Space
from hwsim.trace.schema import OCCUPANCY_DTYPE, RECORD_DTYPE
from hwsim.vocab import BUS_OF_OPERAND, LEVEL_NAMES, OTHER, TRACE_LEVELS, Level, Op, Operand, StepField, StepKind

READ, WRITE, FILL, UPDATE = int(Op.READ), int(Op.WRITE), int(Op.FILL), int(Op.UPDATE)
RING_BUFFER0 = 3  # occupancy buffer id of named buffer 0 (0-2: GLB data, GLB filter, line buffer)
SIM_LEVELS = TRACE_LEVELS
LEVEL_NAME = dict(zip(Level, LEVEL_NAMES))

_DRAM, _L2, _GLB, _LINE_BUFFER, _RF = (int(Level.DRAM), int(Level.L2), int(Level.GLB), int(Level.LINE_BUFFER),
                                      int(Level.RF))
_NAMED_LEVELS = (_DRAM, _L2, _LINE_BUFFER)  # levels whose ALLOC/FREE steps carry a buffer id
_TRANSFER, _COMPUTE, _ALLOC = int(StepKind.TRANSFER), int(StepKind.COMPUTE), int(StepKind.ALLOC)
_FILTER, _PSUM, _OFMAP = int(Operand.FILTER), int(Operand.PSUM), int(Operand.OFMAP)

# Positions of the fields in a step tuple, from STEP_DTYPE.
F = StepField
KIND, OPERAND, SRC, DST, GROUP, WORDS, SRC_ADDR, DST_ADDR = (F.KIND, F.OPERAND, F.SRC, F.DST, F.GROUP, F.WORDS,
                                                             F.SRC_ADDR, F.DST_ADDR)
ACTIVE, MACS, OPS_ = F.ACTIVE_PES, F.MACS, F.OPS


# A pass's records at level `pe`: (step field, op, operand, address = active PEs?) — the MACs (other, update),
# non-MAC ops (other, write), the MACs' RF reads per operand, psum RF writes, psum words forwarded PE to PE.
PE_RECORDS = ((MACS, UPDATE, OTHER, True), (OPS_, WRITE, OTHER, True),
              (F.RF_FILTER_READS, READ, int(Operand.FILTER), False), (F.RF_IFMAP_READS, READ, int(Operand.IFMAP), False),
              (F.RF_PSUM_READS, READ, int(Operand.PSUM), False), (F.RF_PSUM_WRITES, UPDATE, int(Operand.PSUM), False),
              (F.INTER_PE_WORDS, FILL, int(Operand.PSUM), False))

COLUMNS = ("start_cycle", "end_cycle", "op", "operand", "layer", "step", "address", "words")
SMALL_BLOCK = 4  # component blocks up to this many records are kept as Python tuples
FLUSH_RECORDS = 1 << 20  # records held before they are handed to the sink
SEQUENTIAL_CLOCK_GROUPS = 1024  # a sequential layer advances the simpy clock every this many groups


@dataclass
class Recorder:
    """Collects records per level for one layer; `flush` hands them to the sink as numpy blocks.

    Single-record transactions (most of them) are kept flattened in int lists and multi-burst ones as int64
    [n, 8] arrays, so building a layer's records costs one conversion, not one per transaction.
    Every FLUSH_RECORDS records they go to the sink, sorted by start cycle within the slab, so
    memory stays bounded on layers with tens of millions of records.
    """

    levels: frozenset[str]
    sink: Callable[[str, np.ndarray], None]
    layer: int = 0
    per_transaction: frozenset[str] = frozenset()  # levels recorded once per transaction, not per burst
    rows: dict[str, list[int]] = field(default_factory=dict)  # per level, records flattened (8 ints each)
    arrays: dict[str, list[np.ndarray]] = field(default_factory=dict)
    held: int = 0  # records (tuples + array rows) waiting for the next flush

    def wants(self, level: str) -> bool:
        return level in self.levels

    def block(self, level: str, comp: np.ndarray, op: int, operand: int, step: int) -> None:
        """Component records (start, end, address, words) as trace records of one step."""
        layer = self.layer
        if len(comp) > 1 and level in self.per_transaction:
            self.row(level, int(comp["start_cycle"].min()), int(comp["end_cycle"].max()), op, operand, step,
                     int(comp["address"][0]), int(comp["words"].sum()))
            return
        self._count(len(comp))
        if len(comp) <= SMALL_BLOCK:
            rows = self.rows.setdefault(level, [])
            for start, end, address, words in comp.tolist():
                rows.extend((start, end, op, operand, layer, step, address, words))
            return
        out = np.empty((len(comp), len(COLUMNS)), dtype=np.int64)
        out[:, 0] = comp["start_cycle"]
        out[:, 1] = comp["end_cycle"]
        out[:, 2:6] = (op, operand, layer, step)
        out[:, 6] = comp["address"]
        out[:, 7] = comp["words"]
        self.arrays.setdefault(level, []).append(out)

    def row(self, level: str, start: int, end: int, op: int, operand: int, step: int, address: int,
            words: int) -> None:
        rows = self.rows.get(level)
        if rows is None:
            rows = self.rows[level] = []
        rows.extend((start, end, op, operand, self.layer, step, address, words))
        self.held += 1
        if self.held >= FLUSH_RECORDS:
            self.flush()

    def _count(self, records: int) -> None:
        self.held += records
        if self.held >= FLUSH_RECORDS:
            self.flush()

    def flush(self) -> None:
        """Hand each level's held records, in start-cycle order, to the sink as one block."""
        self.held = 0
        for level in SIM_LEVELS:
            parts = self.arrays.pop(level, [])
            rows = self.rows.pop(level, [])
            if rows:
                parts.append(np.array(rows, dtype=np.int64).reshape(-1, len(COLUMNS)))
            if not parts:
                continue
            table = np.concatenate(parts) if len(parts) > 1 else parts[0]
            table = table[np.argsort(table[:, 0], kind="stable")]
            block = np.empty(len(table), dtype=RECORD_DTYPE)
            for j, name in enumerate(COLUMNS):
                block[name] = table[:, j]
            self.sink(level, block)


@dataclass
class Machine:
    """The components of one accelerator in one simpy environment."""

    env: simpy.Environment
    hw: Accelerator
    dram: Dram
    glb: Sram
    noc: Noc
    pe: PeArray
    line_buffer: LineBuffer | None = None
    l2: Sram | None = None
    ring_words: dict[int, int] = field(default_factory=dict)  # named buffer id -> words held
    ring_log: list[tuple[int, int, int]] = field(default_factory=list)  # (cycle, id, words after a change)
    placed: dict[int, dict[int, int]] = field(default_factory=dict)  # level -> live allocations: address -> words

    def ring_change(self, ring: int, words: int, cycle: int | None = None) -> None:
        """Log a named buffer's occupancy (a ring, an edge buffer) after an ALLOC (+words) or FREE (−words)
        at `cycle` (now)."""
        held = self.ring_words[ring] = self.ring_words.get(ring, 0) + words
        self.ring_log.append((int(self.env.now) if cycle is None else cycle, ring, held))

    def place(self, level: int, address: int, words: int) -> None:
        """Claim words address … address + words of `level`; an overlap with a live allocation is an error."""
        live = self.placed.setdefault(level, {})
        for start, size in live.items():
            if start < address + words and address < start + size:
                raise HwsimError(f"{LEVEL_NAME[Level(level)]}: words {address}..{address + words} overlap the live "
                                 f"allocation at {start}..{start + size}; the memory plan puts two live tensors "
                                 "in one place")
        live[address] = words

    def unplace(self, level: int, address: int) -> None:
        self.placed.get(level, {}).pop(address, None)

    def stall_cycles(self) -> dict[str, int]:
        """Cycles transactions have queued so far, by cause: DRAM channels (incl. read/write turnaround),
        GLB ports and bank conflicts, NoC buses, GLB space (allocations waiting for frees)."""
        return {
            "dram": int(self.dram.queue_stall_cycles + self.dram.turnaround_stall_cycles),
            "glb_port": int(self.glb.port_stall_cycles),
            "glb_bank": int(self.glb.bank_conflict_stall_cycles),
            "noc": int(sum(bus.queue_stall_cycles for bus in self.noc.buses.values())),
            "glb_space": int(sum(space.allocate_stall_cycles for space in self.glb.spaces.values())),
            "line_buffer_port": int(self.line_buffer.port_stall_cycles) if self.line_buffer else 0,
            "l2_port": int(self.l2.port_stall_cycles) if self.l2 else 0,
        }

    @classmethod
    def build(cls, hw: Accelerator) -> Machine:
        env = simpy.Environment()
        wb = hw.word_bytes
        line_buffer = LineBuffer(env, hw.line_buffer, wb) if hw.line_buffer else None
        l2 = Sram(env, hw.l2, wb, "l2") if hw.l2 else None
        return cls(env, hw, Dram(env, hw.dram, wb), Sram(env, hw.glb, wb, "glb"), Noc(env, hw.noc, wb),
                   PeArray(env, hw.pe_array, wb), line_buffer, l2)

    def require_line_buffer(self) -> LineBuffer:
        if self.line_buffer is None:
            raise HwsimError(f"{self.hw.name}: the schedule uses line buffers but the config has no "
                             "line_buffer section; add one")
        return self.line_buffer

    def require_l2(self) -> Sram:
        if self.l2 is None:
            raise HwsimError(f"{self.hw.name}: the schedule uses an L2 but the config has no l2 section; add one")
        return self.l2

    def space(self, level: int, operand: int) -> Space | None:
        """The buffer space an ALLOC/FREE step claims: a GLB partition, the line buffer, the L2, or none
        (DRAM is not bounded)."""
        if level == Level.LINE_BUFFER:
            return self.require_line_buffer().space
        if level == Level.L2:
            return self.require_l2().spaces["data"]
        if level == Level.DRAM:
            return None
        return self.glb.spaces["filter" if operand == Operand.FILTER and "filter" in self.glb.spaces else "data"]


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

    @property
    def cycles(self) -> int:
        return self.end_cycle - self.start_cycle


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


def _groups(layer: LayerSchedule) -> Iterator[tuple[int, list[tuple[Any, ...]], int]]:
    """(first step index, step tuples, index of the COMPUTE within them) per pass, in order."""
    offset = 0
    pending: list[tuple[Any, ...]] = []
    pending_start = 0
    for block in layer.blocks():
        steps = block.tolist()
        groups = block["group"]
        cuts = np.flatnonzero(np.diff(groups)) + 1
        bounds = [0, *cuts.tolist(), len(steps)]
        for a, b in zip(bounds[:-1], bounds[1:]):
            part = steps[a:b]
            if pending and pending[0][GROUP] == part[0][GROUP]:
                pending.extend(part)
                continue
            if pending:
                yield pending_start, pending, _compute_index(pending)
            pending, pending_start = part, offset + a
        offset += len(steps)
    if pending:
        yield pending_start, pending, _compute_index(pending)


def _compute_index(steps: list[tuple[Any, ...]]) -> int:
    for i, s in enumerate(steps):
        if s[KIND] == _COMPUTE:
            return i
    return len(steps)


class LayerExecutor:
    """Runs one layer's groups through the prefetcher, the array and the storer."""

    def __init__(self, m: Machine, layer: LayerSchedule, rec: Recorder) -> None:
        self.m, self.layer, self.rec = m, layer, rec
        env = m.env
        self.to_array = Handoff(env)
        self.to_store = Handoff(env)
        self.stored_upto = -1  # index of the last group whose stores finished
        self.psum_writer: dict[int, int] = {}  # GLB psum address -> the last group that stores psums there
        self.stored_event = env.event()
        self.want_noc, self.want_rf, self.want_pe = rec.wants("noc"), rec.wants("rf"), rec.wants("pe")
        self.dram_per_burst = rec.wants("dram") and "dram" not in rec.per_transaction
        self.passes = self.steps = 0
        self.compute_cycles = self.rf_wait = self.load_wait = self.psum_wait = 0

    def run(self) -> Generator[simpy.Event, Any, None]:
        env = self.m.env
        if not self.layer.pipelined:
            yield from self._sequential()
            return
        prefetch = env.process(self._prefetcher())
        array = env.process(self._array())
        store = env.process(self._storer())
        yield prefetch & array & store

    # -- the three processes --------------------------------------------------------------------------

    def _prefetcher(self) -> Generator[simpy.Event, Any, None]:
        """A group's loads into on-chip buffers are issued back to back, like a DMA engine with
        outstanding requests (each resource still serves them in order); the group goes to the array
        when the last one has landed. Only an allocation that does not fit makes it wait earlier."""
        env = self.m.env
        for index, (first, steps, c) in enumerate(_groups(self.layer)):
            self.steps += len(steps)
            near = []
            end = int(env.now)
            for k in range(c):
                s = steps[k]
                kind = s[KIND]
                if s[DST] == Level.RF:
                    near.append(k)
                elif kind == StepKind.TRANSFER:
                    end = max(end, self._reserve_transfer(first + k, s))
                elif kind == StepKind.ALLOC:
                    if s[DST] == Level.LINE_BUFFER:  # a ring row is overwritten only once released
                        while self.stored_upto < index - 1:
                            yield self.stored_event
                        end = max(end, int(env.now))
                    yield from self._allocate(s)
                    end = max(end, int(env.now))
                elif kind == StepKind.FREE:
                    self._free(s)
            if end > env.now:
                yield env.timeout(end - env.now)
            self.to_array.put((index, first, steps, c, near))
        self.to_array.put(None)

    def _array(self) -> Generator[simpy.Event, Any, None]:
        env = self.m.env
        while True:
            wait_from = env.now
            item = yield from self.to_array.take()
            if item is None:
                self.to_store.put(None)
                return
            index, first, steps, c, near = item
            self.load_wait += env.now - wait_from
            writers = [self.psum_writer[steps[k][SRC_ADDR]] for k in near
                       if steps[k][OPERAND] == Operand.PSUM and steps[k][SRC_ADDR] in self.psum_writer]
            if writers:
                wait_from = env.now
                while self.stored_upto < max(writers):
                    yield self.stored_event
                self.psum_wait += env.now - wait_from
            for k in range(c + 1, len(steps)):
                if steps[k][OPERAND] == Operand.PSUM and steps[k][SRC] == Level.RF:
                    self.psum_writer[steps[k][DST_ADDR]] = index
            wait_from = env.now
            end = env.now
            for k in near:
                if steps[k][OPERAND] == Operand.FILTER:  # filters must sit in the RFs before the pass starts
                    yield from self._step(first + k, steps[k])
            self.rf_wait += env.now - wait_from
            end = env.now
            for k in near:
                if steps[k][OPERAND] != Operand.FILTER:
                    end = max(end, self._reserve_transfer(first + k, steps[k]))
            if c < len(steps):
                end = max(end, self._reserve_compute(first + c, steps[c]))
            if end > env.now:
                yield env.timeout(end - env.now)
            self.to_store.put((index, first, steps, c))

    def _storer(self) -> Generator[simpy.Event, Any, None]:
        while True:
            item = yield from self.to_store.take()
            if item is None:
                return
            index, first, steps, c = item
            for k in range(c + 1, len(steps)):
                yield from self._step(first + k, steps[k])
            self.stored_upto = index
            event, self.stored_event = self.stored_event, self.m.env.event()
            event.succeed()

    def _sequential(self) -> Generator[simpy.Event, Any, None]:
        """Groups strictly one after another: loads from the end of the previous group, filters into the
        RFs, then the pass with its streams, then the stores one after another. Each transaction is reserved
        at the cycle it is requested; nothing else runs meanwhile, so the clock need only catch up every
        SEQUENTIAL_CLOCK_GROUPS groups and at the end."""
        env = self.m.env
        step, transfer = self._sequential_step, self._reserve_transfer
        end = int(env.now)
        for group, (first, steps, c) in enumerate(_groups(self.layer)):
            self.steps += len(steps)
            start = end
            loaded = start
            near = []
            for k in range(c):
                s = steps[k]
                if s[DST] == _RF:
                    near.append(k)
                else:
                    loaded = max(loaded, step(first + k, s, start))
            at = loaded
            for k in near:  # filters must sit in the RFs before the pass starts
                if steps[k][OPERAND] == _FILTER:
                    at = transfer(first + k, steps[k], at)
            self.load_wait += loaded - start
            self.rf_wait += at - loaded
            end = at
            for k in near:
                if steps[k][OPERAND] != _FILTER:
                    end = max(end, transfer(first + k, steps[k], at))
            if c < len(steps):
                end = max(end, self._reserve_compute(first + c, steps[c], at))
            for k in range(c + 1, len(steps)):
                end = step(first + k, steps[k], end)
            if group % SEQUENTIAL_CLOCK_GROUPS == 0 and end > env.now:
                yield env.timeout(end - env.now)
        if end > env.now:
            yield env.timeout(end - env.now)

    def _sequential_step(self, index: int, s: tuple[Any, ...], at: int) -> int:
        """A transfer, allocation or free requested at cycle `at`; the cycle it ends."""
        kind = s[KIND]
        if kind == _TRANSFER:
            return self._reserve_transfer(index, s, at)
        words = s[WORDS] if kind == _ALLOC else -s[WORDS]
        level = s[DST]
        space = self.m.space(level, s[OPERAND])
        if s[SRC_ADDR] >= 0 and (level == _L2 or level == _DRAM):  # a placed allocation
            if words >= 0:
                self.m.place(level, s[SRC_ADDR], words)
            else:
                self.m.unplace(level, s[SRC_ADDR])
        if space is not None:
            if words >= 0:
                space.claim_at(words, at)
            else:
                space.release_at(-words, at)
        if level in _NAMED_LEVELS:
            self.m.ring_change(s[DST_ADDR], words, at)
        return at

    # -- steps ----------------------------------------------------------------------------------------

    def _step(self, index: int, s: tuple[Any, ...]) -> Generator[simpy.Event, Any, None]:
        kind = s[KIND]
        if kind == StepKind.TRANSFER:
            yield from self._transfer(index, s)
        elif kind == StepKind.ALLOC:
            yield from self._allocate(s)
        elif kind == StepKind.FREE:
            self._free(s)

    def _allocate(self, s: tuple[Any, ...]) -> Generator[simpy.Event, Any, None]:
        """Claim an ALLOC's space now, waiting while it is full."""
        space = self.m.space(s[DST], s[OPERAND])
        if space is not None:
            granted = space.allocate(s[WORDS])
            if not granted.triggered:
                yield granted
        if s[DST] in _NAMED_LEVELS:
            self.m.ring_change(s[DST_ADDR], s[WORDS])

    def _free(self, s: tuple[Any, ...]) -> None:
        """Release a FREE's space now (never waits)."""
        space = self.m.space(s[DST], s[OPERAND])
        if space is not None:
            space.free(s[WORDS])
        if s[DST] in _NAMED_LEVELS:
            self.m.ring_change(s[DST_ADDR], -s[WORDS])

    def _transfer(self, index: int, s: tuple[Any, ...]) -> Generator[simpy.Event, Any, None]:
        end = self._reserve_transfer(index, s)
        if end > self.m.env.now:
            yield self.m.env.timeout(end - self.m.env.now)

    def _reserve_transfer(self, index: int, s: tuple[Any, ...], at: int | None = None) -> int:
        """Reserve the source, destination and bus of a transfer requested at cycle `at` (default now);
        record it; return its end cycle."""
        m, rec = self.m, self.rec
        now = int(m.env.now) if at is None else at
        operand, src, dst, words = s[OPERAND], s[SRC], s[DST], s[WORDS]
        if words == 0:
            return now
        end = now
        if src != _RF:
            end = max(end, self._reserve_side(src, True, s[SRC_ADDR], words, READ, operand, index, now))
        if dst != _RF:
            outward = dst < src and (operand == _PSUM or operand == _OFMAP)
            end = max(end, self._reserve_side(dst, False, s[DST_ADDR], words, UPDATE if outward else FILL,
                                              operand, index, now))
        if _RF in (src, dst):  # the RF end rides the NoC
            start = m.noc.book(BUS_OF_OPERAND[operand], words, now)
            end = max(end, m.noc.reserved_end_cycle)
            if self.want_noc:
                rec.row("noc", start, m.noc.reserved_end_cycle, WRITE, operand, index, NO_ADDRESS, words)
            if self.want_rf:
                filled = dst == _RF
                rec.row("rf", now, end, FILL if filled else READ, operand, index,
                        s[DST_ADDR] if filled else s[SRC_ADDR], words)
        return end

    def _reserve_side(self, level: int, is_read: bool, address: int, words: int, op: int, operand: int,
                      index: int, at: int) -> int:
        """Reserve one end of a transfer (DRAM, GLB or line buffer) and record it; its end cycle."""
        m, rec = self.m, self.rec
        if level == _DRAM:
            wb = m.hw.word_bytes
            if self.dram_per_burst:
                burst = (m.dram.reserve_read if is_read else m.dram.reserve_write)(address * wb, words * wb, at)
                rec.block("dram", burst, op, operand, index)
                return m.dram.reserved_end_cycle
            component: Dram | Sram = m.dram
            start = m.dram.book(is_read, address * wb, words * wb, at)
            name = "dram"
        elif level == _GLB:
            component, name = m.glb, "glb"
            start = m.glb.book(is_read, address, words, at)
        elif level == _LINE_BUFFER:
            component, name = m.line_buffer or m.require_line_buffer(), "line_buffer"
            address = NO_ADDRESS
            start = component.book(is_read, address, words, at)
        elif level == _L2:
            component, name = m.require_l2(), "l2"
            start = component.book(is_read, address, words, at)
        else:
            raise HwsimError(f"level {Level(level).name} has no component in this simulator")
        if name in rec.levels:
            rec.row(name, start, component.reserved_end_cycle, op, operand, index, address, words)
        return component.reserved_end_cycle

    def _reserve_compute(self, index: int, s: tuple[Any, ...], at: int | None = None) -> int:
        """Reserve the PE array for a pass requested at `at` (default now); record its work at level `pe`;
        return its end cycle."""
        start = self.m.pe.book(s[MACS], s[OPS_], max(1, s[ACTIVE]), at)
        end = self.m.pe.reserved_end_cycle
        self.passes += 1
        self.compute_cycles += end - start
        if self.want_pe:
            row = self.rec.row
            for field_index, op, operand, has_address in PE_RECORDS:
                count = s[field_index]
                if count:
                    row("pe", start, end, op, operand, index, s[ACTIVE] if has_address else -1, count)
        return end


@dataclass
class SimResult:
    """The simulated timing of a whole schedule (the trace holds the accesses)."""

    network: str
    hardware: str
    batch: int
    layers: list[LayerRun]

    @property
    def cycles(self) -> int:
        return self.layers[-1].end_cycle if self.layers else 0


def simulate(schedule: Schedule, hw: Accelerator, sink: Callable[[str, np.ndarray], None],
             levels: frozenset[str] = frozenset(SIM_LEVELS),
             progress: Callable[[int, LayerRun], None] | None = None,
             occupancy_sink: Callable[[np.ndarray], None] | None = None,
             per_transaction: frozenset[str] = frozenset()) -> SimResult:
    """Execute `schedule` layer after layer; every record of the chosen `levels` goes to `sink(level, block)`
    (one per transaction rather than per burst for the levels in `per_transaction`) and the buffers'
    allocate/free events to `occupancy_sink` (buffer 0 = GLB data, 1 = GLB filter, 2 = line buffer,
    RING_BUFFER0 + k = the line buffer's ring k, for the ring ids of depth-first schedules)."""
    m = Machine.build(hw)
    runs: list[LayerRun] = []
    spaces = [m.glb.spaces.get(p) for p in ("data", "filter")] + [m.line_buffer.space if m.line_buffer else None]
    emitted = [0] * len(spaces)
    for index, layer in enumerate(schedule.layers):
        rec = Recorder(levels, sink, index, per_transaction)
        ex = LayerExecutor(m, layer, rec)
        start = int(m.env.now)
        before = m.stall_cycles()
        m.env.run(m.env.process(ex.run()))
        after = m.stall_cycles()
        run = LayerRun(layer.name, start, int(m.env.now), ex.steps, ex.passes, ex.compute_cycles, ex.rf_wait,
                       ex.load_wait, ex.psum_wait, {k: after[k] - before[k] for k in after})
        rec.flush()
        if occupancy_sink is not None:
            for b, space in enumerate(spaces):
                if space is None:
                    continue
                log = space.occupancy_records()[emitted[b]:]
                emitted[b] += len(log)
                if len(log):
                    occupancy_sink(occupancy_events(b, index, log, hw.word_bytes))
            if m.ring_log:
                occupancy_sink(ring_events(m.ring_log, index, hw.word_bytes))
        m.ring_log.clear()
        runs.append(run)
        if progress:
            progress(index, run)
    return SimResult(schedule.network, schedule.hardware, schedule.batch, runs)


def ring_events(log: list[tuple[int, int, int]], layer: int, word_bytes: int) -> np.ndarray:
    """Line-buffer ring changes (cycle, ring, words after) as trace occupancy events in bytes."""
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
