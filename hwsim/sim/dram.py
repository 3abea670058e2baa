"""Off-chip DRAM: independent channels that move whole bursts, with access latency,
optional row buffers and read/write turnaround.

Timing of one transaction, `read` or `write` of n bytes at byte address A,
with C channels, burst size b and bandwidth W bytes/cycle over all channels:

- It covers the aligned bursts k = ⌊A/b⌋ … ⌊(A+n−1)/b⌋. A partial first or
  last burst still costs a whole burst slot, as in real DRAM; its record
  counts only the words asked for.
- Burst k goes to channel k mod C. Each channel keeps the cycle it is next
  free (the end of its last transaction). A transaction reserves its
  channels when it is requested: on each it is granted at
  g = max(request cycle, channel free) and holds the channel until its last
  burst there. Reserving in request order is first come, first served per
  channel, like a queue, but costs no simpy events, so a whole transaction
  is one timeout (`read`/`write`) or none (`reserve_read`/`reserve_write`,
  which let a caller wait for several components at once). Channels serve
  their bursts in parallel. State and statistics are updated when the
  transaction is reserved.
- On a channel a burst slot lasts T = b / (W/C) cycles (an exact fraction).
  The i-th burst of the transaction on the channel (i = 0, 1, …) occupies the
  data bus during

      [t0 + Λ_i + ⌊i·T⌋,  t0 + Λ_i + ⌈(i+1)·T⌉)

  where t0 is the cycle the channel starts and Λ_i the latency paid so far.
  Without a row buffer Λ_i = latency_cycles, so N bursts on one channel end
  at t0 + latency + ⌈N·T⌉ (rounding once, so long transfers see the exact
  bandwidth).
- Row buffer: burst k lies at channel-local byte ⌊k/C⌋·b, in row
  ⌊⌊k/C⌋·b / row_bytes⌋. A burst in the channel's open row is a hit;
  otherwise it is a miss and opens its row. The bursts of a transaction on
  a channel form runs of one row each; a run starting with a hit pays
  hit_latency, a run starting with a miss pays miss_latency (the bus idles
  while the row opens), and Λ_i is the sum of those latencies up to burst
  i's run. So N bursts in R rows end at t0 + ⌈N·T⌉ + L_first + (R−1)·miss.
- Turnaround: a transaction in the other direction than the channel's
  previous one starts at t0 = max(g, previous end + turnaround_cycles);
  otherwise t0 = g.

Addresses and sizes are given in bytes (word-aligned); records hold word
addresses and word counts like every other component.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

from hwsim.errors import HwsimError
from hwsim.hardware import schema
from hwsim.sim.timing import (
    RECORD_DTYPE,
    Stat,
    StatInfo,
    check_count,
    collect_stats,
    empty_records,
    exact_rate,
    wait_for_reservation,
)
from hwsim.vocab import ceil_div

READ = 0
WRITE = 1

_PLAN_CACHE_ENTRIES = 4096


@dataclass(frozen=True)
class _ChannelPart:
    """The bursts of one transaction on one channel: rows first, first + C, … of the plan."""

    channel: int
    first: int  # index of the channel's first burst in the transaction (address order)
    bursts: int
    first_row: int  # relative to the plan's base row
    last_row: int
    runs: int  # row runs (each after the first opens a row)
    end_cycles: int  # end of the last burst after t0, every run counted as a miss
    first_start_cycles: int  # start of the first burst after t0 (its latency paid)


@dataclass(frozen=True)
class _Plan:
    """A transaction's records relative to its base address and its channels' start cycles (t0 = 0,
    every run a miss), in address order, and the per-channel facts needed to reserve each channel."""

    template: np.ndarray  # int64 (⌈n/C⌉, C, 4): the RECORD_DTYPE fields of burst j at [j // C, j % C]
    bursts: int
    parts: tuple[_ChannelPart, ...]


@dataclass(slots=True)
class _Channel:
    """What a channel remembers between transactions."""

    free_at_cycle: int = 0  # end of its last transaction (also what turnaround counts from)
    open_row: int = -1
    last_direction: int = -1


class Dram:
    """Off-chip DRAM with `cfg.channels` channels.

    `reserve_read`/`reserve_write` time and reserve a transaction at once;
    `read`/`write` are simpy processes doing the same and waiting until it ends.
    """

    STATS = (
        StatInfo("read_transactions", "count", "read transactions requested"),
        StatInfo("write_transactions", "count", "write transactions requested"),
        StatInfo("bytes_read", "bytes", "bytes asked for by reads"),
        StatInfo("bytes_written", "bytes", "bytes asked for by writes"),
        StatInfo("bursts", "count", "burst slots used (partial bursts count whole)"),
        StatInfo("busy_channel_cycles", "channel-cycles", "cycles channels were held, latency included"),
        StatInfo("queue_stall_cycles", "channel-cycles", "cycles transactions waited for a busy channel"),
        StatInfo("turnaround_stall_cycles", "channel-cycles", "idle cycles inserted by read/write turnaround"),
        StatInfo("row_hit_bursts", "count", "bursts to the open row"),
        StatInfo("row_miss_bursts", "count", "bursts that opened a row"),
    )

    def __init__(self, env: simpy.Environment, cfg: schema.Dram, word_bytes: int, name: str = "dram") -> None:
        if cfg.burst_bytes % word_bytes:
            raise HwsimError(f"{name}.burst: {cfg.burst_bytes} B is not a whole number of "
                             f"{word_bytes}-byte words; use a multiple of {word_bytes} B")
        self.env = env
        self.cfg = cfg
        self.name = name
        self.word_bytes = word_bytes
        self._channels = [_Channel() for _ in range(cfg.channels)]
        channel_rate = exact_rate(cfg.bandwidth_bytes_per_cycle, f"{name}.bandwidth") / cfg.channels
        # burst slot T = burst_bytes / channel_rate = _slot_numerator / _slot_denominator cycles
        self._slot_numerator = cfg.burst_bytes * channel_rate.denominator
        self._slot_denominator = channel_rate.numerator
        rb = cfg.row_buffer
        self._row_bytes = rb.row_bytes if rb else 0
        self._miss_latency_cycles = rb.miss_latency_cycles if rb else cfg.latency_cycles
        self._hit_saving_cycles = rb.miss_latency_cycles - rb.hit_latency_cycles if rb else 0
        # shifting an address by this many bytes keeps channels and row boundaries in place
        self._period_bytes = cfg.channels * (math.lcm(cfg.burst_bytes, rb.row_bytes) if rb else cfg.burst_bytes)
        self._plans: dict[tuple[int, int], _Plan] = {}
        self.reserved_end_cycle = 0  # cycle the latest reservation ends (its request cycle if empty)
        self.first_burst_cycle = 0  # cycle the latest reservation's first burst starts
        self.read_transactions = 0
        self.write_transactions = 0
        self.bytes_read = 0
        self.bytes_written = 0
        self.bursts = 0
        self.busy_channel_cycles = 0
        self.queue_stall_cycles = 0
        self.turnaround_stall_cycles = 0
        self.row_hit_bursts = 0
        self.row_miss_bursts = 0

    @property
    def burst_slot_cycles(self) -> float:
        """Cycles one burst occupies a channel's data bus (may be fractional)."""
        return self._slot_numerator / self._slot_denominator

    def reserve_read(self, address_bytes: int, nbytes: int, request_cycle: int | None = None) -> np.ndarray:
        """Reserve a read of `nbytes` at `address_bytes` requested now (or at `request_cycle`); one record per
        burst, in address order. Yields no event: the read ends at `reserved_end_cycle`."""
        self._check(address_bytes, nbytes)
        return self._reserve(READ, address_bytes, nbytes, request_cycle)

    def reserve_write(self, address_bytes: int, nbytes: int, request_cycle: int | None = None) -> np.ndarray:
        """Reserve a write of `nbytes` at `address_bytes` requested now (or at `request_cycle`); one record
        per burst, in address order. Yields no event: the write ends at `reserved_end_cycle`."""
        self._check(address_bytes, nbytes)
        return self._reserve(WRITE, address_bytes, nbytes, request_cycle)

    def read(self, address_bytes: int, nbytes: int) -> Generator[simpy.Event, Any, np.ndarray]:
        """Process reading `nbytes` at `address_bytes` (reserved when it starts); returns `reserve_read`'s
        records once the read ends."""
        self._check(address_bytes, nbytes)
        return wait_for_reservation(self.env, self, self._reserve, READ, address_bytes, nbytes)

    def write(self, address_bytes: int, nbytes: int) -> Generator[simpy.Event, Any, np.ndarray]:
        """Process writing `nbytes` at `address_bytes` (reserved when it starts); returns `reserve_write`'s
        records once the write ends."""
        self._check(address_bytes, nbytes)
        return wait_for_reservation(self.env, self, self._reserve, WRITE, address_bytes, nbytes)

    def stats(self, prefix: str = "") -> dict[str, Stat]:
        """The statistics with units and descriptions."""
        return collect_stats(self, self.STATS, prefix)

    def _check(self, address_bytes: int, nbytes: int) -> None:
        check_count(address_bytes, "address", self.name)
        check_count(nbytes, "size", self.name)
        if address_bytes % self.word_bytes or nbytes % self.word_bytes:
            raise HwsimError(f"{self.name}: access of {nbytes} B at byte {address_bytes} is not aligned to "
                             f"{self.word_bytes}-byte words")

    def book(self, is_read: bool, address_bytes: int, nbytes: int, request_cycle: int | None = None) -> int:
        """Reserve a transaction requested at `request_cycle` (default now) like `reserve_read`/`reserve_write`,
        without building its
        per-burst records: returns the cycle its first burst starts (it ends at `reserved_end_cycle`).
        The executor's fast path when a trace keeps one record per transaction."""
        self._check(address_bytes, nbytes)
        booked = self._book(READ if is_read else WRITE, address_bytes, nbytes, request_cycle)
        if booked is None:
            return self.reserved_end_cycle
        return self.first_burst_cycle

    def _reserve(self, direction: int, address_bytes: int, nbytes: int,
                 request_cycle: int | None = None) -> np.ndarray:
        """Time a checked transaction requested now on every channel it uses and reserve them; its records."""
        booked = self._book(direction, address_bytes, nbytes, request_cycle)
        if booked is None:
            return empty_records()
        return self._records(*booked)

    def _book(self, direction: int, address_bytes: int, nbytes: int,
              request_cycle: int | None = None) -> tuple[_Plan, list[int], int] | None:
        """Reserve the channels; (plan, lane start cycles, address period) or None for zero bytes."""
        now = int(self.env.now) if request_cycle is None else request_cycle
        if direction == READ:
            self.read_transactions += 1
            self.bytes_read += nbytes
        else:
            self.write_transactions += 1
            self.bytes_written += nbytes
        if nbytes == 0:
            self.reserved_end_cycle = now
            return None
        base, offset = divmod(address_bytes, self._period_bytes)
        plan = self._plan(offset, nbytes)
        row_shift = base * (self._period_bytes // self.cfg.channels // self._row_bytes) if self._row_bytes else 0
        shifts = [0] * self.cfg.channels  # start cycle of each lane (burst j is in lane j mod C)
        self.bursts += plan.bursts
        turnaround_cycles = self.cfg.turnaround_cycles
        last_end_cycle = now
        first_burst = 1 << 62  # above any start cycle
        for part in plan.parts:
            channel = self._channels[part.channel]
            free_at_cycle = channel.free_at_cycle
            granted = max(now, free_at_cycle)
            t0 = granted
            if channel.last_direction not in (-1, direction):
                t0 = max(granted, free_at_cycle + turnaround_cycles)
            shift = t0
            if self._row_bytes:
                misses = part.runs
                if part.first_row + row_shift == channel.open_row:
                    shift -= self._hit_saving_cycles
                    misses -= 1
                self.row_miss_bursts += misses
                self.row_hit_bursts += part.bursts - misses
                channel.open_row = part.last_row + row_shift
            shifts[part.first] = shift
            first_burst = min(first_burst, shift + part.first_start_cycles)
            end_cycle = part.end_cycles + shift
            channel.free_at_cycle = end_cycle
            channel.last_direction = direction
            self.queue_stall_cycles += granted - now
            self.turnaround_stall_cycles += t0 - granted
            self.busy_channel_cycles += end_cycle - granted
            last_end_cycle = max(last_end_cycle, end_cycle)
        self.reserved_end_cycle = last_end_cycle
        self.first_burst_cycle = int(first_burst)
        return plan, shifts, base

    def _records(self, plan: _Plan, shifts: list[int], base: int) -> np.ndarray:
        """The plan's records moved to the lanes' start cycles and the transaction's base address."""
        base_words = base * (self._period_bytes // self.word_bytes)
        offsets = np.array([[shift, shift, base_words, 0] for shift in shifts], dtype=np.int64)
        return (plan.template + offsets).reshape(-1, 4)[:plan.bursts].view(RECORD_DTYPE).reshape(-1)

    def _plan(self, offset_bytes: int, nbytes: int) -> _Plan:
        """The cached relative timing of a transfer of `nbytes` at `offset_bytes` into the address period."""
        key = (offset_bytes, nbytes)
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) >= _PLAN_CACHE_ENTRIES:
                self._plans.clear()
            plan = self._plans[key] = self._make_plan(offset_bytes, nbytes)
        return plan

    def _make_plan(self, address_bytes: int, nbytes: int) -> _Plan:
        burst, channels = self.cfg.burst_bytes, self.cfg.channels
        first = address_bytes // burst
        k = np.arange(first, (address_bytes + nbytes - 1) // burst + 1, dtype=np.int64)
        lo_bytes = np.maximum(k * burst, address_bytes)
        hi_bytes = np.minimum((k + 1) * burst, address_bytes + nbytes)
        to_channel_major = np.argsort(k % channels, kind="stable")
        k = k[to_channel_major]
        pos = (k - first) // channels  # position of the burst among the transaction's bursts on its channel
        row = (k // channels) * burst // self._row_bytes if self._row_bytes else np.zeros_like(k)
        new_run = pos == 0
        new_run[1:] |= row[1:] != row[:-1]
        latency = np.where(new_run, self._miss_latency_cycles, 0)
        paid = np.cumsum(latency)
        heads = np.flatnonzero(pos == 0)
        counts = np.diff(np.append(heads, len(k)))
        paid -= np.repeat(paid[heads] - latency[heads], counts)
        num, den = self._slot_numerator, self._slot_denominator
        rel_start = paid + (pos * num) // den
        rel_end = paid - (-(pos + 1) * num // den)
        parts = []
        for lo, hi in zip(heads.tolist(), (heads + counts).tolist()):
            parts.append(_ChannelPart(channel=int(k[lo] % channels), first=int(k[lo] - first), bursts=hi - lo,
                                      first_row=int(row[lo]), last_row=int(row[hi - 1]),
                                      runs=int(new_run[lo:hi].sum()), end_cycles=int(rel_end[hi - 1]),
                                      first_start_cycles=int(rel_start[lo])))
        n = len(k)
        template = np.zeros((ceil_div(n, channels) * channels, 4), dtype=np.int64)
        template[to_channel_major, 0] = rel_start
        template[to_channel_major, 1] = rel_end
        template[:n, 2] = lo_bytes // self.word_bytes
        template[:n, 3] = (hi_bytes - lo_bytes) // self.word_bytes
        lanes = template.reshape(-1, channels, 4)
        lanes.flags.writeable = False
        return _Plan(template=lanes, bursts=n, parts=tuple(parts))
