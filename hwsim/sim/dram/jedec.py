"""The `jedec` DRAM model: channels of ranks, bank groups and banks under JEDEC timing, with refresh, a request
queue per channel served by a scheduling policy, an open- or closed-page policy and an address map by name.

A transaction is booked when it is requested, with no simpy event per burst or command: its bursts are
placed by the address map (`dram.address_map`), each channel's share is put in service order by the
scheduler (`dram.scheduler`: fcfs, frfcfs) and booked arithmetically against that channel's bank state
(`hwsim.sim.dram.banks`), in numpy over the bursts. Times inside the model are DRAM clock cycles (nCK); a
request at core cycle r enters at DRAM cycle ⌈r · f_DRAM / f_core⌉, and each burst's record spans the core
cycles its data occupies the bus: [⌊d · f_core / f_DRAM⌋, ⌈(d + tBL) · f_core / f_DRAM⌉) with d = the
column command + CL (read) or + CWL (write).

Its counters (row hits, misses and conflicts, commands, refreshes, data-bus and bank busy time) are what the
trace keeps per layer to price DRAM energy by command (`hwsim.hardware.dram`).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import simpy

from hwsim.hardware import schema
from hwsim.hardware.jedec import Coordinates, Timing
from hwsim.hardware.kinds import DRAM_ADDRESS_MAPS, DRAM_SCHEDULERS, PAGE_POLICIES
from hwsim.sim.component import Statistic
from hwsim.sim.dram.banks import ChannelBanks, CommandLog, Segment, segments
from hwsim.sim.dram.base import DramModel
from hwsim.sim.timing import MAX_RATE_DENOMINATOR

_PLAN_CACHE_ENTRIES = 4096


@dataclass(frozen=True)
class _Part:
    """A transaction's bursts on one channel: which they are (indices into the transaction, in service order)
    and their segments, or None where the service order depends on the open rows (then the bursts are in
    address order and their bank, bank group, rank and row are kept to order them at booking time)."""

    channel: int
    bursts: np.ndarray
    segments: tuple[Segment, ...] | None
    where: Coordinates


class JedecDram(DramModel):
    """JEDEC DRAM (`dram.model: jedec`); addresses and sizes in bytes, records one per burst in words."""

    read_bursts = Statistic("count", "read bursts (RD commands)")
    write_bursts = Statistic("count", "write bursts (WR commands)")
    row_hit_bursts = Statistic("count", "bursts to their bank's open row")
    row_miss_bursts = Statistic("count", "bursts that activated a row in a closed bank")
    row_conflict_bursts = Statistic("count", "bursts that precharged another open row, then activated theirs")
    activates = Statistic("count", "ACT commands")
    precharges = Statistic("count", "PRE commands (auto-precharges and those before a refresh included)")
    refreshes = Statistic("count", "all-bank REF commands (one per rank)")
    refresh_dram_cycles = Statistic("DRAM cycles", "channel-cycles the channels spent refreshing (tRFC each)")
    refresh_stall_dram_cycles = Statistic("DRAM cycles", "cycles requests arrived during a refresh and waited")
    data_bus_dram_cycles = Statistic("DRAM cycles", "channel-cycles the data buses carried bursts (tBL each)")
    bank_busy_dram_cycles = Statistic("DRAM cycles", "bank-cycles banks spent activating (tRCD), precharging "
                                                     "(tRP) or moving data (tBL)")
    row_open_dram_cycles = Statistic("DRAM cycles", "bank-cycles rows were open, counted when they were closed")
    queue_stall_cycles = Statistic("cycles", "core cycles first bursts arrived later than a row hit on an idle "
                                             "channel would (misses, conflicts, busy banks and bus, refresh)")

    def __init__(self, env: simpy.Environment, cfg: schema.Dram, word_bytes: int, name: str = "dram",
                 clock_hz: float | None = None) -> None:
        super().__init__(env, cfg, word_bytes, name, clock_hz)
        device, timing = cfg.device, cfg.timing
        assert device is not None and timing is not None, "the loader checks that a jedec DRAM has both"
        self.timing = t = Timing.of(timing)
        self.device = device
        self._map = DRAM_ADDRESS_MAPS.get(cfg.address_map)(cfg)
        self._order = DRAM_SCHEDULERS.get(cfg.scheduler)()
        keeps_open = PAGE_POLICIES.get(cfg.page_policy).keeps_rows_open
        self.channels = [ChannelBanks(t, cfg.ranks, device.banks, device.bank_groups, cfg.in_flight, keeps_open)
                         for _ in range(cfg.channels)]
        # DRAM cycles per core cycle (1 without a core clock: the simulation then counts DRAM cycles)
        ratio = Fraction(1) if clock_hz is None else Fraction(device.command_clock_hz) / Fraction(clock_hz)
        ratio = ratio.limit_denominator(MAX_RATE_DENOMINATOR)
        self._dram_num, self._dram_den = ratio.numerator, ratio.denominator  # DRAM cycles per core cycle
        self._plans: dict[tuple[int, int], tuple[_Part, ...]] = {}
        self.period_bytes = self._map.period_bursts * self.burst_bytes

    def stall_cycles(self) -> int:
        return int(self.queue_stall_cycles)

    def record_commands(self, on: bool) -> None:
        for k, channel in enumerate(self.channels):
            channel.log = CommandLog(k) if on else None

    def take_commands(self) -> np.ndarray:
        logs = [channel.log.take() for channel in self.channels if channel.log is not None]
        if not logs:
            return super().take_commands()
        out = np.concatenate(logs) if len(logs) > 1 else logs[0]
        return out[np.argsort(out["cycle"], kind="stable")]

    def to_dram_cycle(self, core_cycle: int) -> int:
        """The first DRAM cycle at or after core cycle `core_cycle`."""
        return -(-core_cycle * self._dram_num // self._dram_den)

    def _book(self, is_read: bool, address: int, amount: int, now: int, word_bytes: int) -> int:
        t, b = self.timing, self.burst_bytes
        first_burst = address // b
        n = (address + amount - 1) // b - first_burst + 1
        period = self._map.period_bursts
        base, offset = divmod(first_burst, period) if period else (0, first_burst)
        self.bursts += n
        request = self.to_dram_cycle(now)
        plan = self._plan(offset, n)
        only = plan[0].segments if len(plan) == 1 else None
        in_order = only is not None  # one channel, served in address order
        if only is not None:
            column = self.channels[plan[0].channel].serve(only, base, not is_read, request, self)
        else:
            column = np.empty(n, dtype=np.int64)
            for part in plan:
                banks = self.channels[part.channel]
                bursts, batch = part.bursts, part.segments
                if batch is None:
                    bursts, batch = self._reordered(part, base, banks.open_row)
                column[bursts] = banks.serve(batch, base, not is_read, request, self)
        latency, num, den = (t.cl if is_read else t.cwl), self._dram_num, self._dram_den
        data = column + latency
        if num == den:
            start, end = data, data + t.bl
        else:
            data *= den
            start = data // num
            end = -(-(data + t.bl * den) // num)
        # served in order, column commands never go back: the first burst starts first, the last ends last
        first, last = (int(start[0]), int(end[-1])) if in_order else (int(start.min()), int(end.max()))
        unloaded = (request + latency) * den // num
        self.queue_stall_cycles += max(0, first - unloaded)
        self.reserved_end_cycle = last
        self._booked = (start, end, 0)
        return first

    def serve_queued(self, burst: np.ndarray, is_write: np.ndarray, arrival: np.ndarray) -> int:
        """Serve single-burst requests (burst indices in arrival order, arriving at DRAM cycles `arrival`) as a
        controller's queues do (`_ChannelQueue`, per channel); when the last data ends."""
        where = self._map.locate(burst)
        cfg, end = self.cfg, 0
        high = max(1, int(cfg.write_queue * cfg.write_high_watermark))
        low = min(high - 1, int(cfg.write_queue * cfg.write_low_watermark))
        for ch in np.unique(where.channel).tolist():
            mine = np.flatnonzero(where.channel == ch)
            w = Coordinates(*(getattr(where, f)[mine] for f in ("channel", "rank", "group", "bank", "row", "column")))
            end = max(end, _ChannelQueue(self, ch, w, is_write[mine], arrival[mine], high, low).run())
        return end

    def book_ordered(self, channel: int, where: Coordinates, is_write: bool, request: np.ndarray) -> np.ndarray:
        """Book bursts of one direction on `channel` in the given order (coordinates with absolute rows), each
        requested at its DRAM cycle in `request`; their column command cycles."""
        banks = self.channels[channel]
        batch = segments(where.bank, where.group, where.rank, where.row, self.timing, banks.piece)
        self.bursts += len(where.bank)
        return banks.serve(batch, 0, is_write, request, self)

    def _reordered(self, part: _Part, base: int, open_row: list[int]) -> tuple[np.ndarray, tuple[Segment, ...]]:
        """A part whose service order depends on the open rows: its bursts in that order, and their segments."""
        w = part.where
        order = self._order.order(w.bank, w.row + base, open_row, self.cfg.in_flight)
        if order is None:
            order = np.arange(len(part.bursts))
        return part.bursts[order], segments(w.bank[order], w.group[order], w.rank[order], w.row[order], self.timing,
                                            self.channels[part.channel].piece)

    def _plan(self, offset: int, n: int) -> tuple[_Part, ...]:
        """The cached channel parts of `n` bursts from burst `offset` into the address period."""
        key = (offset, n)
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) >= _PLAN_CACHE_ENTRIES:
                self._plans.clear()
            plan = self._plans[key] = self._make_plan(offset, n)
        return plan

    def _make_plan(self, offset: int, n: int) -> tuple[_Part, ...]:
        where = self._map.locate(np.arange(offset, offset + n, dtype=np.int64))
        parts = []
        for ch in np.unique(where.channel).tolist():
            mine = np.flatnonzero(where.channel == ch)
            w = Coordinates(*(getattr(where, f)[mine] for f in ("channel", "rank", "group", "bank", "row", "column")))
            bank_rows = len(np.unique(w.bank * (int(w.row.max()) + 1) + w.row))  # distinct (bank, row) pairs
            if self.cfg.scheduler != "fcfs" and bank_rows > len(np.unique(w.bank)):  # frfcfs may reorder
                parts.append(_Part(ch, mine, None, w))
                continue
            batch = segments(w.bank, w.group, w.rank, w.row, self.timing, self.channels[ch].piece)
            parts.append(_Part(ch, mine, batch, w))
        return tuple(parts)


class _ChannelQueue:
    """A channel's controller serving a request trace: a read queue of `in_flight` requests and a write queue of
    `write_queue`. Requests enter in arrival order when their queue has a free entry (a request finding its queue
    full waits, and those behind it); an entry frees when its request's column command issues. Each step serves
    the requests waiting by the time the channel can take them (FR-FCFS): every bank with one serves all waiting
    requests to one row, its open row if one hits it, else its oldest request's row, the banks taking turns;
    another row of the bank waits for a later step. The write queue is served from the moment it holds `high`
    writes until it holds `low`, or when no read waits; reads otherwise."""

    def __init__(self, dram: JedecDram, channel: int, where: Coordinates, is_write: np.ndarray, arrival: np.ndarray,
                 high: int, low: int) -> None:
        self.dram, self.channel, self.where = dram, channel, where
        self.is_write, self.arrival = is_write.tolist(), arrival.tolist()
        self.high, self.low = high, low
        self.free = {False: [0] * dram.cfg.in_flight, True: [0] * dram.cfg.write_queue}  # when each entry frees
        self.queues: dict[bool, list[int]] = {False: [], True: []}
        self.entered = [0] * len(self.arrival)
        self.next = 0  # the next request to enter a queue
        self.end = 0
        self.draining = False

    def run(self) -> int:
        while True:
            self._admit()
            reads, writes = self.queues[False], self.queues[True]
            if not reads and not writes:
                return self.end
            if len(writes) >= self.high:
                self.draining = True
            if self.draining and len(writes) <= self.low:
                self.draining = False
            self._step(bool(writes) and (self.draining or not reads))

    def _admit(self) -> None:
        """Requests enter their queue in arrival order while it has a free entry."""
        while self.next < len(self.arrival):
            free = self.free[self.is_write[self.next]]
            if not free:
                return
            self.entered[self.next] = max(self.arrival[self.next], heapq.heappop(free))
            self.queues[self.is_write[self.next]].append(self.next)
            self.next += 1

    def _step(self, is_write: bool) -> None:
        queue = self.queues[is_write]
        banks = self.dram.channels[self.channel]
        horizon = max(min(self.entered[i] for i in queue), banks.last_col)
        waiting = [i for i in queue if self.entered[i] <= horizon]
        w = self.where
        chosen: dict[int, int] = {}  # bank -> the row it serves
        for i in waiting:  # oldest first
            b, r = int(w.bank[i]), int(w.row[i])
            if r == banks.open_row[b] or b not in chosen:  # a hit wins over the oldest request's row
                chosen[b] = r
        served = np.array([i for i in waiting if chosen[int(w.bank[i])] == int(w.row[i])], dtype=np.int64)
        ready = banks.activate_ready(w.bank[served], w.row[served])
        served = served[_in_turn(w.bank[served], ready)]
        part = Coordinates(*(getattr(w, f)[served] for f in ("channel", "rank", "group", "bank", "row", "column")))
        entered = np.array([self.entered[i] for i in served.tolist()], dtype=np.int64)
        column = self.dram.book_ordered(self.channel, part, is_write, entered)
        t = self.dram.timing
        self.end = max(self.end, int(column.max()) + (t.cwl if is_write else t.cl) + t.bl)
        for c in column.tolist():
            heapq.heappush(self.free[is_write], c)
        done = set(served.tolist())
        self.queues[is_write] = [i for i in queue if i not in done]


def _in_turn(bank: np.ndarray, ready: np.ndarray) -> np.ndarray:
    """The order in which banks take turns: each bank's first burst, then each one's second, ...; within a turn the
    banks that can activate first (`ready`, 0 for a row hit), then in order of first appearance."""
    n = len(bank)
    position = np.arange(n)
    by_bank = np.lexsort((position, bank))
    b = bank[by_bank]
    head = np.r_[True, b[1:] != b[:-1]]
    starts = np.flatnonzero(head)
    runs = np.diff(np.r_[starts, n])
    turn = np.empty(n, dtype=np.int64)
    turn[by_bank] = position - np.repeat(starts, runs)
    first = np.empty(n, dtype=np.int64)
    first[by_bank] = np.repeat(by_bank[starts], runs)
    bank_ready = np.empty(n, dtype=np.int64)
    bank_ready[by_bank] = np.repeat(ready[by_bank[starts]], runs)
    return np.lexsort((position, first, bank_ready, turn))


__all__ = ["JedecDram"]
