"""The `simple` DRAM model: independent channels that move whole bursts, with access latency,
optional row buffers and read/write turnaround.

Timing of one transaction, `read` or `write` of n bytes at byte address A,
with C channels, burst size b and bandwidth W bytes/cycle over all channels:

- It covers the aligned bursts k = ⌊A/b⌋ … ⌊(A+n−1)/b⌋. A partial first or
  last burst still costs a whole burst slot, as in real DRAM; its record
  counts only the words asked for.
- The address map (`dram.address_map`, `policies.py`) places each burst on
  a channel; `burst_interleave` puts burst k on channel k mod C, at
  channel-local byte ⌊k/C⌋·b. Each channel keeps the cycle it is next free
  (the end of its last transaction). A transaction books its channels when
  it is requested: on each it is granted at g = the scheduler's start
  (`fcfs`: max(request cycle, channel free)) and holds the channel until its
  last burst there. Channels serve their bursts in parallel.
- On a channel a burst slot lasts T = b / (W/C) cycles (an exact fraction).
  The i-th burst of the transaction on the channel (i = 0, 1, …) occupies the
  data bus during

      [t0 + Λ_i + ⌊i·T⌋,  t0 + Λ_i + ⌈(i+1)·T⌉)

  where t0 is the cycle the channel starts and Λ_i the latency paid so far.
  Without a row buffer Λ_i = latency_cycles, so N bursts on one channel end
  at t0 + latency + ⌈N·T⌉ (rounding once, so long transfers see the exact
  bandwidth).
- Row buffer (`dram.row_buffer`, policy `open` or `closed`): a burst at
  channel-local byte o lies in row ⌊o / row_bytes⌋. Open page: a burst in
  the channel's open row is a hit; otherwise it is a miss and opens its row.
  Closed page: every run is a miss. The bursts of a transaction on
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

from dataclasses import dataclass

import numpy as np
import simpy

from hwsim.errors import HwsimError
from hwsim.hardware import schema
from hwsim.sim.component import Port, Statistic
from hwsim.sim.dram.policies import ADDRESS_MAPS, row_policy
from hwsim.sim.policy import scheduler
from hwsim.sim.timing import RECORD_DTYPE, check_count, exact_rate

READ = 0
WRITE = 1

_PLAN_CACHE_ENTRIES = 4096


@dataclass(frozen=True)
class _ChannelPart:
    """The bursts of one transaction on one channel: rows first, first + C, … of the plan."""

    channel: int
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

    template: np.ndarray  # int64 (n, 4): the RECORD_DTYPE fields of each burst, address order, t0 = 0
    part_of_burst: np.ndarray  # int64 (n,): which part (channel) each burst belongs to
    bursts: int
    parts: tuple[_ChannelPart, ...]


@dataclass(slots=True)
class _Channel:
    """What a channel remembers between transactions."""

    free_at_cycle: int = 0  # end of its last transaction (also what turnaround counts from)
    open_row: int = -1
    last_direction: int = -1


class SimpleDram(Port):
    """Off-chip DRAM with `cfg.channels` channels; addresses and sizes in bytes (word-aligned), records in
    words. `book`/`reserve_read`/`reserve_write`/`read`/`write` come from `Port`; a transaction's records
    are one per burst."""

    read_amount = Statistic("bytes", "bytes asked for by reads")
    written_amount = Statistic("bytes", "bytes asked for by writes")
    bursts = Statistic("count", "burst slots used (partial bursts count whole)")
    busy_channel_cycles = Statistic("channel-cycles", "cycles channels were held, latency included")
    queue_stall_cycles = Statistic("channel-cycles", "cycles transactions waited for a busy channel")
    turnaround_stall_cycles = Statistic("channel-cycles", "idle cycles inserted by read/write turnaround")
    row_hit_bursts = Statistic("count", "bursts to the open row")
    row_miss_bursts = Statistic("count", "bursts that opened a row")

    def __init__(self, env: simpy.Environment, cfg: schema.Dram, word_bytes: int, name: str = "dram") -> None:
        super().__init__(env, name)
        if cfg.burst_bytes % word_bytes:
            raise HwsimError(f"{name}.burst: {cfg.burst_bytes} B is not a whole number of "
                             f"{word_bytes}-byte words; use a multiple of {word_bytes} B")
        self.cfg = cfg
        self.word_bytes = word_bytes
        self._channels = [_Channel() for _ in range(cfg.channels)]
        self._scheduler = scheduler(cfg.scheduler)
        self._address_map = ADDRESS_MAPS.get(cfg.address_map)(cfg)
        self._rows = row_policy(cfg)
        channel_rate = exact_rate(cfg.bandwidth_bytes_per_cycle, f"{name}.bandwidth") / cfg.channels
        # burst slot T = burst_bytes / channel_rate = _slot_numerator / _slot_denominator cycles
        self._slot_numerator = cfg.burst_bytes * channel_rate.denominator
        self._slot_denominator = channel_rate.numerator
        self._period_bytes = self._address_map.period_bytes(self._rows.row_bytes)
        rows_per_period = self._period_bytes // cfg.channels // self._rows.row_bytes if self._rows.row_bytes else 0
        self._rows_per_period = rows_per_period  # rows a channel advances per address period
        self._plans: dict[tuple[int, int], _Plan] = {}
        self.first_burst_cycle = 0  # cycle the latest reservation's first burst starts

    @property
    def burst_slot_cycles(self) -> float:
        """Cycles one burst occupies a channel's data bus (may be fractional)."""
        return self._slot_numerator / self._slot_denominator

    def _check(self, address: int, amount: int) -> None:
        check_count(address, "address", self.name)
        check_count(amount, "size", self.name)
        if address % self.word_bytes or amount % self.word_bytes:
            raise HwsimError(f"{self.name}: access of {amount} B at byte {address} is not aligned to "
                             f"{self.word_bytes}-byte words")

    def _book(self, is_read: bool, address: int, amount: int, now: int) -> int:
        """Reserve the channels; the cycle the first burst starts. Keeps the plan and its parts' start cycles
        for `_records`."""
        direction = READ if is_read else WRITE
        base, offset = divmod(address, self._period_bytes)
        plan = self._plan(offset, amount)
        self.bursts += plan.bursts
        shifts = []  # start cycle (t0, less a row hit's saving) of each part
        last_end_cycle, first_burst = now, 1 << 62  # above any start cycle
        start_cycle, turnaround_cycles = self._scheduler.start_cycle, self.cfg.turnaround_cycles
        row_shift = base * self._rows_per_period
        for part in plan.parts:
            channel = self._channels[part.channel]
            free_at_cycle = channel.free_at_cycle
            granted = start_cycle(now, free_at_cycle)
            t0 = granted
            if channel.last_direction != direction and channel.last_direction != -1:
                t0 = max(granted, free_at_cycle + turnaround_cycles)
            shift = self._row_access(part, channel, row_shift, t0) if self._rows.row_bytes else t0
            end_cycle = part.end_cycles + shift
            channel.free_at_cycle = end_cycle
            channel.last_direction = direction
            self.queue_stall_cycles += granted - now
            self.turnaround_stall_cycles += t0 - granted
            self.busy_channel_cycles += end_cycle - granted
            shifts.append(shift)
            first_burst = min(first_burst, shift + part.first_start_cycles)
            last_end_cycle = max(last_end_cycle, end_cycle)
        self.reserved_end_cycle = last_end_cycle
        self.first_burst_cycle = int(first_burst)
        self._booked = (plan, shifts, base)
        return self.first_burst_cycle

    def _row_access(self, part: _ChannelPart, channel: _Channel, row_shift: int, t0: int) -> int:
        """Count the part's row hits and misses, move the channel's open row; its lane's start cycle (t0, less
        the saving of a hit on the open row)."""
        rows = self._rows
        misses = part.runs
        shift = t0
        if rows.keeps_open and part.first_row + row_shift == channel.open_row:
            shift -= rows.hit_saving_cycles
            misses -= 1
        self.row_miss_bursts += misses
        self.row_hit_bursts += part.bursts - misses
        channel.open_row = part.last_row + row_shift
        return shift

    def _records(self, start_cycle: int, address: int, amount: int) -> np.ndarray:
        """The booked plan's records moved to its parts' start cycles and the transaction's base address."""
        plan, shifts, base = self._booked
        base_words = base * (self._period_bytes // self.word_bytes)
        offsets = np.array([[shift, shift, base_words, 0] for shift in shifts], dtype=np.int64)
        moved: np.ndarray = plan.template + (offsets if len(shifts) == 1 else offsets[plan.part_of_burst])
        return moved.view(RECORD_DTYPE).reshape(-1)

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
        burst = self.cfg.burst_bytes
        first = address_bytes // burst
        k = np.arange(first, (address_bytes + nbytes - 1) // burst + 1, dtype=np.int64)
        lo_bytes = np.maximum(k * burst, address_bytes)
        hi_bytes = np.minimum((k + 1) * burst, address_bytes + nbytes)
        channel, local_bytes = self._address_map.locate(k)
        to_channel_major = np.argsort(channel, kind="stable")
        k, channel, local_bytes = k[to_channel_major], channel[to_channel_major], local_bytes[to_channel_major]
        heads = np.flatnonzero(np.r_[True, channel[1:] != channel[:-1]])
        counts = np.diff(np.append(heads, len(k)))
        pos = np.arange(len(k)) - np.repeat(heads, counts)  # position among the transaction's bursts on its channel
        row = local_bytes // self._rows.row_bytes if self._rows.row_bytes else np.zeros_like(k)
        new_run = pos == 0
        new_run[1:] |= row[1:] != row[:-1]
        latency = np.where(new_run, self._rows.run_latency_cycles, 0)
        paid = np.cumsum(latency)
        paid -= np.repeat(paid[heads] - latency[heads], counts)
        num, den = self._slot_numerator, self._slot_denominator
        rel_start = paid + (pos * num) // den
        rel_end = paid - (-(pos + 1) * num // den)
        parts = tuple(_ChannelPart(channel=int(channel[lo]), bursts=hi - lo, first_row=int(row[lo]),
                                   last_row=int(row[hi - 1]), runs=int(new_run[lo:hi].sum()),
                                   end_cycles=int(rel_end[hi - 1]), first_start_cycles=int(rel_start[lo]))
                      for lo, hi in zip(heads.tolist(), (heads + counts).tolist()))
        n = len(k)
        template = np.empty((n, 4), dtype=np.int64)
        template[to_channel_major, 0] = rel_start
        template[to_channel_major, 1] = rel_end
        template[:, 2] = lo_bytes // self.word_bytes
        template[:, 3] = (hi_bytes - lo_bytes) // self.word_bytes
        part_of_burst = np.empty(n, dtype=np.int64)
        part_of_burst[to_channel_major] = np.repeat(np.arange(len(parts)), counts)
        template.flags.writeable = False
        return _Plan(template=template, part_of_burst=part_of_burst, bursts=n, parts=parts)
