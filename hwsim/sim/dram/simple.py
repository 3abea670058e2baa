"""The `simple` DRAM model: independent channels that move whole bursts, with pipelined access latency, an
optional row buffer and read/write turnaround.

Timing, with C channels, burst size b and bandwidth W bytes/cycle over all channels:

- The address map (`dram.address_map`, `policies.py`) places each burst on a channel; `burst_interleave`
  puts burst k on channel k mod C. A transaction's bursts on a channel follow one another on its data
  bus; channels work in parallel.
- On a channel a burst slot lasts T = b / (W/C) cycles (an exact fraction: times are kept in ticks of 1/den
  cycle so that long transfers see the exact bandwidth). A burst's record spans [⌊s⌋, ⌈s + T⌉) cycles,
  s its data start.
- Latency overlaps: a channel holds `in_flight` bursts at once. Burst i of a transaction requested at r
  is admitted at A_i = the scheduler's start (fcfs: max(r, end of the burst `in_flight` places before it
  on the channel)), and its data can start Λ_i after: the access latency (`latency`, or the row buffer's
  hit or miss latency). So

      s_i = max(A_i + Λ_i, s_{i−1} + T + X_i)

  where s_{−1} + T is the end of the channel's previous burst and X_i the bus idle time a burst forces:
  a burst that opens a row waits miss − hit latency after the previous burst (the channel's one bank
  opens the row meanwhile); the first burst after one in the other direction waits `turnaround`. A long
  transfer still streams at T per burst after one latency; a stream of small requests overlaps its
  latencies up to `in_flight` deep instead of paying each in turn.
- Row buffer (`dram.row_buffer`): a burst at channel-local byte o lies in row ⌊o / row_bytes⌋. Open page:
  a burst in the channel's open row hits (hit latency); the first burst of every other run of one row
  misses and opens it (miss latency, and X = miss − hit). Closed page: every run misses.

The recurrence is solved for a transaction's bursts on a channel at once: with G_i = X_0 + Σ_{0<j≤i}
(T + X_j), s_i = G_i + max(end of the previous burst, max_{j≤i}(A_j + Λ_j − G_j)).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

import numpy as np
import simpy

from hwsim.hardware import schema
from hwsim.sim.component import Statistic
from hwsim.sim.dram.base import DramModel
from hwsim.sim.dram.policies import ADDRESS_MAPS, row_policy
from hwsim.sim.policy import scheduler
from hwsim.sim.timing import exact_rate

READ = 0
WRITE = 1

_PLAN_CACHE_ENTRIES = 4096
_SCALAR_BURSTS = 16  # transfers of at most this many bursts on a channel are booked in plain integers
_OUTCOME_CACHE_ENTRIES = 8192  # bookings kept by what decides them (see `SimpleDram._book_cached`)


@dataclass(frozen=True, slots=True)
class _ChannelPart:
    """The bursts of one transaction on one channel, in the order the channel serves them, as a miss on the
    first run would time them: which bursts they are, their latencies Λ_i and offsets G_i (ticks)."""

    channel: int
    bursts: np.ndarray  # indices into the transaction's bursts
    latency_ticks: np.ndarray  # Λ_i
    offset_ticks: np.ndarray  # G_i
    first_row: int  # relative to the plan's base row
    last_row: int
    runs: int  # row runs (each opens its row unless the first hits the open row)
    latency_list: tuple[int, ...] = ()  # Λ_i, G_i and the burst indices as integers, for parts booked one integer
    offset_list: tuple[int, ...] = ()  # at a time
    burst_list: tuple[int, ...] = ()
    lead_max: tuple[int, ...] = ()  # max_{j≤i}(Λ_j − G_j)
    rest_max: tuple[int, ...] = ()  # max_{1≤j≤i}(Λ_j − G_j), the first entry below any lead
    taken: int = 0  # in-flight slots its bursts take: min(bursts, in_flight)
    floor_ticks: int = 0  # Λ_0 − G_0, and less a turnaround: below these the channel's bus end decides nothing
    turned_floor_ticks: int = 0  # (`SimpleDram._book_cached`)


@dataclass(frozen=True)
class Plan:
    """A transaction's channel parts relative to its base address."""

    bursts: int
    parts: tuple[_ChannelPart, ...]
    few: bool = False  # every part has at most in_flight (and _SCALAR_BURSTS) bursts: booked in plain integers
    busy_cycles: float = 0.0  # the cycles its bursts hold channels' data buses: bursts × slot


@dataclass(slots=True)
class _Channel:
    """What a channel remembers between transactions (times in ticks). Its in-flight ends are a list, or, after a
    replayed transaction that took every slot, that transaction's ends relative to its request and the request
    (`replace_window`), made a list only when something reads them one by one."""

    ends: list[int] | None  # data end of its last in_flight bursts, oldest first (None: base + relative)
    bus_free_ticks: int = 0  # end of its last burst
    open_row: int = -1
    last_direction: int = -1
    ends_base: int = 0
    ends_relative: tuple[int, ...] = ()

    @property
    def done_ticks(self) -> list[int]:
        """Its in-flight ends, oldest first, as a list."""
        if self.ends is None:
            base = self.ends_base
            self.ends = [base + d for d in self.ends_relative]
        return self.ends

    @done_ticks.setter
    def done_ticks(self, ends: list[int]) -> None:
        self.ends = ends

    def end_of_slot(self, slot: int) -> int:
        """The in-flight end at position `slot` (0: the oldest), without making the list."""
        return self.ends[slot] if self.ends is not None else self.ends_base + self.ends_relative[slot]

    def replace_window(self, base: int, relative: tuple[int, ...]) -> None:
        """Every in-flight end at once: `base` plus each of `relative`."""
        self.ends, self.ends_base, self.ends_relative = None, base, relative


Transfer = tuple[int, "Plan", int]  # a transaction to replay: direction, channel parts, first row of its period


@dataclass(frozen=True, slots=True)
class _PartOutcome:
    """What booking a transaction did to one channel, relative to its request tick."""

    done_ticks: tuple[int, ...]  # the channel's newest in-flight ends (its bursts' last ones), minus the request
    bus_free_ticks: int  # minus the request
    turnaround_stall_cycles: float  # what `_stalls` added to each counter
    queue_stall_cycles: float
    row_misses: int  # bursts that opened a row, and bursts that hit one
    row_hits: int


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What booking a transaction did, relative to its request: its bursts' cycles after the request cycle, and
    per channel part what it did to the channel."""

    start_cycles: np.ndarray  # per burst, minus the request cycle
    end_cycles: np.ndarray
    first_start_cycles: int  # the first burst's start, minus the request cycle
    last_end_cycles: int  # the last burst's end, minus the request cycle
    parts: tuple[_PartOutcome, ...]
    row_misses: int  # over its parts
    row_hits: int


class SimpleDram(DramModel):
    """Off-chip DRAM with `cfg.channels` channels; addresses and sizes in bytes (word-aligned), records in
    words, one per burst."""

    busy_channel_cycles = Statistic("channel-cycles", "cycles channels' data buses carried bursts")
    queue_stall_cycles = Statistic("channel-cycles", "cycles first bursts waited beyond their latency for the "
                                                     "data bus or the in-flight bound")
    turnaround_stall_cycles = Statistic("channel-cycles", "idle cycles inserted by read/write turnaround")
    row_hit_bursts = Statistic("count", "bursts to the open row")
    row_miss_bursts = Statistic("count", "bursts that opened a row")

    def __init__(self, env: simpy.Environment, cfg: schema.Dram, word_bytes: int, name: str = "dram",
                 clock_hz: float | None = None) -> None:
        super().__init__(env, cfg, word_bytes, name, clock_hz)
        self._scheduler = scheduler(cfg.scheduler)
        self._fcfs = self._scheduler.name == "fcfs"  # a burst admitted while its in-flight slot is free starts then
        self._address_map = ADDRESS_MAPS.get(cfg.address_map)(cfg)
        self._rows = row_policy(cfg)
        channel_rate = exact_rate(cfg.bandwidth_bytes_per_cycle, f"{name}.bandwidth") / cfg.channels
        # burst slot T = burst_bytes / channel_rate = _slot_ticks / _ticks_per_cycle cycles
        self._slot_ticks = cfg.burst_bytes * channel_rate.denominator
        self._ticks_per_cycle = channel_rate.numerator
        self._in_flight = cfg.in_flight
        self._channels = [_Channel([0] * cfg.in_flight) for _ in range(cfg.channels)]
        self._period_bytes = self.period_bytes = self._address_map.period_bytes(self._rows.row_bytes)
        row_bytes = self._rows.row_bytes
        self._rows_per_period = self._period_bytes // cfg.channels // row_bytes if row_bytes else 0
        longest = max(cfg.latency_cycles, self._rows.run_latency_cycles) * self._ticks_per_cycle
        # within a transaction the in-flight bound binds only if in_flight slots are shorter than a latency
        self._piece = cfg.in_flight if (cfg.in_flight - 1) * self._slot_ticks < longest else 1 << 62
        self._plans: dict[tuple[int, int], Plan] = {}
        self._outcomes: dict[tuple[object, ...], _Outcome] = {}  # see `_book_cached`
        self._plan_classes: dict[tuple[object, ...], int] = {}  # see `plan_class`
        self._stalled: list[tuple[int, int]] = []  # the (turnaround, queue) ticks `_stalls` added, while noted

    @property
    def burst_slot_cycles(self) -> float:
        """Cycles one burst occupies a channel's data bus (may be fractional)."""
        return self._slot_ticks / self._ticks_per_cycle

    def stall_cycles(self) -> int:
        return int(self.queue_stall_cycles + self.turnaround_stall_cycles)

    def _book(self, is_read: bool, address: int, amount: int, now: int, word_bytes: int) -> int:
        """Book every channel's share; the cycle the first burst starts. Keeps the bursts' ticks for `_records`."""
        direction = READ if is_read else WRITE
        base, offset = divmod(address, self._period_bytes)
        plan = self._plan(offset, amount)
        self.bursts += plan.bursts
        request_ticks = now * self._ticks_per_cycle
        row_shift = base * self._rows_per_period
        if self._fcfs:
            return self._book_cached(plan, offset, amount, direction, now, row_shift)
        start = self._book_parts(plan, direction, request_ticks, row_shift)
        self._stalled.clear()
        return start

    def _book_parts(self, plan: Plan, direction: int, request_ticks: int, row_shift: int) -> int:
        """`_book` worked out: every channel part streamed; the cycle the first burst starts."""
        if plan.few:
            return self._book_few(plan, direction, request_ticks, row_shift)
        if len(plan.parts) == 1:  # the bursts are in address order on one channel
            part = plan.parts[0]
            starts = self._serve(part, self._channels[part.channel], direction, request_ticks, row_shift)
        else:
            starts = np.empty(plan.bursts, dtype=np.int64)
            for part in plan.parts:
                starts[part.bursts] = self._serve(part, self._channels[part.channel], direction, request_ticks,
                                                  row_shift)
        tpc = self._ticks_per_cycle
        start_cycles = starts // tpc
        end_cycles = (starts + (self._slot_ticks + tpc - 1)) // tpc  # ⌈(start + slot) / tpc⌉
        self.busy_channel_cycles += plan.bursts * self._slot_ticks / tpc
        self._booked = (start_cycles, end_cycles, 0)
        if len(plan.parts) == 1:  # a channel serves its bursts one after another: the first starts first
            self.reserved_end_cycle = int(end_cycles[-1])
            return int(start_cycles[0])
        self.reserved_end_cycle = int(end_cycles.max())
        return int(start_cycles.min())

    def _serve(self, part: _ChannelPart, channel: _Channel, direction: int, request_ticks: int,
               row_shift: int) -> np.ndarray:
        """The data start (ticks) of each burst of `part` on `channel`; updates the channel and the counters."""
        saving, turnaround_ticks = self._open(part, channel, direction, row_shift)
        latency = part.latency_ticks
        if saving:
            latency = latency.copy()
            latency[0] -= saving
        n = len(part.bursts)
        if n <= self._piece:  # one piece (the in-flight bound does not bind within it)
            starts = self._stream(channel, request_ticks, latency, part.offset_ticks - (saving - turnaround_ticks))
        else:
            starts = np.empty(n, dtype=np.int64)
            for lo in range(0, n, self._piece):
                hi = min(n, lo + self._piece)
                base = int(part.offset_ticks[lo - 1]) + self._slot_ticks if lo else saving - turnaround_ticks
                starts[lo:hi] = self._stream(channel, request_ticks, latency[lo:hi],
                                             part.offset_ticks[lo:hi] - base)
        self._stalls(channel, direction, int(starts[0]) - (request_ticks + int(latency[0])), turnaround_ticks)
        return starts

    def _book_few(self, plan: Plan, direction: int, request_ticks: int, row_shift: int) -> int:
        """`_book` of a transaction of at most `in_flight` bursts on each channel, in plain integers."""
        if len(plan.parts) == 1:
            starts = self._serve_few(plan.parts[0], direction, request_ticks, row_shift)
        else:
            starts = [0] * plan.bursts
            for part in plan.parts:
                for i, start in zip(part.burst_list, self._serve_few(part, direction, request_ticks, row_shift)):
                    starts[i] = start
        tpc, slot = self._ticks_per_cycle, self._slot_ticks
        start_cycles = [s // tpc for s in starts]
        end_cycles = [-(-(s + slot) // tpc) for s in starts]
        self.reserved_end_cycle = max(end_cycles)
        self.busy_channel_cycles += len(starts) * slot / tpc
        self._booked = (start_cycles, end_cycles, 0)
        return min(start_cycles)

    def _serve_few(self, part: _ChannelPart, direction: int, request_ticks: int, row_shift: int) -> list[int]:
        """`_serve` of at most `in_flight` bursts, in plain integers."""
        channel = self._channels[part.channel]
        saving, turnaround_ticks = self._open(part, channel, direction, row_shift)
        base = saving - turnaround_ticks
        first_latency = part.latency_list[0] - saving
        if self._fcfs and channel.done_ticks[len(part.latency_list) - 1] <= request_ticks:
            starts = self._stream_free(channel, part, request_ticks, base, first_latency - part.offset_list[0])
        else:
            latency = [first_latency, *part.latency_list[1:]]
            starts = self._stream_scalar(channel, request_ticks, latency, [o - base for o in part.offset_list])
        self._stalls(channel, direction, starts[0] - (request_ticks + first_latency), turnaround_ticks)
        return starts

    def _stream_free(self, channel: _Channel, part: _ChannelPart, request_ticks: int, base: int,
                     first_lead: int) -> list[int]:
        """`_stream_scalar` when every burst is admitted at the request (first come, first served, the in-flight
        slots they take free by then): s_i = G_i − base + max(bus free, request + base + max_{j≤i}(Λ_j − G_j)),
        the running maximum taken from the part's template (the first burst's Λ less a row hit's saving)."""
        top, bus, slot = request_ticks + base, channel.bus_free_ticks, self._slot_ticks
        leads = part.lead_max if first_lead == part.lead_max[0] else [max(first_lead, r) for r in part.rest_max]
        starts = [o - base + max(bus, top + m) for o, m in zip(part.offset_list, leads)]
        channel.bus_free_ticks = starts[-1] + slot
        channel.done_ticks = channel.done_ticks[len(starts):] + [s + slot for s in starts]
        return starts

    def _open(self, part: _ChannelPart, channel: _Channel, direction: int, row_shift: int) -> tuple[int, int]:
        """Row-buffer counters and the channel's open row for `part`; (ticks the first burst saves by hitting
        the open row, turnaround ticks it must wait)."""
        rows, tpc = self._rows, self._ticks_per_cycle
        saving, misses = 0, part.runs
        if rows.keeps_open and part.first_row + row_shift == channel.open_row:  # the first run hits
            saving, misses = rows.hit_saving_cycles * tpc, misses - 1
        if rows.row_bytes:
            self.row_miss_bursts += misses
            self.row_hit_bursts += len(part.bursts) - misses
            channel.open_row = part.last_row + row_shift
        turned = channel.last_direction not in (-1, direction)
        return saving, self.cfg.turnaround_cycles * tpc if turned else 0

    def _stalls(self, channel: _Channel, direction: int, waited_ticks: int, turnaround_ticks: int) -> None:
        """Split the first burst's wait beyond its latency into turnaround and queueing; note the direction."""
        waited = max(0, waited_ticks)
        turnaround = min(turnaround_ticks, waited)
        self._add_stalls(turnaround, waited - turnaround)
        channel.last_direction = direction

    def _add_stalls(self, turnaround_ticks: int, queue_ticks: int) -> None:
        tpc = self._ticks_per_cycle
        self.turnaround_stall_cycles += turnaround_ticks / tpc
        self.queue_stall_cycles += queue_ticks / tpc
        self._stalled.append((turnaround_ticks, queue_ticks))

    def _stream(self, channel: _Channel, request_ticks: int, latency: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """Data starts s_i = G_i + max(bus free, max_{j≤i}(A_j + Λ_j − G_j)) of consecutive bursts, admitted
        against the channel's in-flight window; updates the window and the bus. A few bursts (most of a
        layer's transfers) are worked out in plain integers: numpy's per-call cost would dominate."""
        n, window = len(latency), self._in_flight
        if n <= min(window, _SCALAR_BURSTS):
            return np.array(self._stream_scalar(channel, request_ticks, latency.tolist(), offsets.tolist()),
                            dtype=np.int64)
        done = np.asarray(channel.done_ticks, dtype=np.int64)
        if n <= window:
            admit = self._scheduler.start_cycles(request_ticks, done[:n])
        else:
            admit = np.full(n, request_ticks, dtype=np.int64)
            admit[:window] = self._scheduler.start_cycles(request_ticks, done)
        lead = admit + latency
        lead -= offsets
        starts = np.maximum.accumulate(lead)
        np.maximum(starts, channel.bus_free_ticks, out=starts)
        starts += offsets
        channel.bus_free_ticks = int(starts[-1]) + self._slot_ticks
        ends = (starts[-window:] + self._slot_ticks).tolist()
        channel.done_ticks = ends if n >= window else channel.done_ticks[n:] + ends
        return starts

    def _stream_scalar(self, channel: _Channel, request_ticks: int, latency: Sequence[int],
                       offsets: Sequence[int]) -> list[int]:
        """`_stream` for at most `in_flight` bursts, in plain integers (a running maximum)."""
        start_cycle, slot, done, bus = self._scheduler.start_cycle, self._slot_ticks, channel.done_ticks, \
            channel.bus_free_ticks
        leads = [start_cycle(request_ticks, d) + l - o for d, l, o in zip(done, latency, offsets)]
        starts = [(max(bus, c)) + o for c, o in zip(accumulate(leads, max), offsets)]
        channel.bus_free_ticks = starts[-1] + slot
        channel.done_ticks = done[len(starts):] + [s + slot for s in starts]
        return starts

    def _book_cached(self, plan: Plan, offset: int, amount: int, direction: int, now: int, row_shift: int) -> int:
        """`_book_parts` of a first-come-first-served transaction, replayed when a transaction of the same place in
        the address period and size met its channels in the same state relative to its request (a layer's
        transfers repeat a few shapes in a steady rhythm: 99 % of AlexNet's on eyeriss-v1 are replays).

        What decides the outcome, all in the key, per channel: whether its first run hits the open row and whether
        the direction turns; of the in-flight ends its bursts are admitted after (the oldest, one per burst: the
        slots they take; the newer ones stay the channel's as they are), those after the request (an end at or
        before it admits a burst at the request, as any earlier end would; the ends are in order, so those are
        the last of them, most often none); and the channel's bus end, clamped below where the first burst's own
        latency (less a turnaround) dominates it. The key is flat: per part its hit, turn, bus end and the count
        of its ends after the request, then those."""
        request_ticks = now * self._ticks_per_cycle
        channels, keeps_open = self._channels, self._rows.keeps_open
        key: list[int] = [offset, amount]
        for part in plan.parts:
            channel = channels[part.channel]
            last = channel.last_direction
            turned = last != direction and last != -1
            floor = part.turned_floor_ticks if turned else part.floor_ticks
            bus = channel.bus_free_ticks - request_ticks
            hit = keeps_open and part.first_row + row_shift == channel.open_row
            taken = part.taken
            if channel.end_of_slot(taken - 1) <= request_ticks:  # every slot it takes is free by the request
                key += (hit, turned, max(floor, bus), 0)
            else:
                done = channel.done_ticks
                later = [d - request_ticks for d in done[bisect_right(done, request_ticks, 0, taken):taken]]
                key += (hit, turned, max(floor, bus), len(later), *later)
        found = self._outcomes.get(shape := tuple(key))
        if found is None:
            found = self._outcome(plan, direction, now, row_shift)
            if len(self._outcomes) >= _OUTCOME_CACHE_ENTRIES:
                self._outcomes.clear()
            self._outcomes[shape] = found
            return now + found.first_start_cycles
        keeps_rows, in_flight = self._rows.row_bytes > 0, self._in_flight
        for part, did in zip(plan.parts, found.parts):
            channel = channels[part.channel]
            if keeps_rows:
                channel.open_row = part.last_row + row_shift
            channel.bus_free_ticks = request_ticks + did.bus_free_ticks
            if part.taken == in_flight:  # its bursts took every slot (a long transfer's every time)
                channel.replace_window(request_ticks, did.done_ticks)
            else:
                done = channel.done_ticks
                del done[:part.taken]
                done.extend([request_ticks + d for d in did.done_ticks])
            if did.turnaround_stall_cycles:  # as `_stalls` adds them, channel by channel (adding 0.0 changes nothing)
                self.turnaround_stall_cycles += did.turnaround_stall_cycles
            if did.queue_stall_cycles:
                self.queue_stall_cycles += did.queue_stall_cycles
            channel.last_direction = direction
        if keeps_rows:
            self.row_miss_bursts += found.row_misses
            self.row_hit_bursts += found.row_hits
        self.busy_channel_cycles += plan.busy_cycles
        self._booked = (found.start_cycles, found.end_cycles, now)
        self.reserved_end_cycle = now + found.last_end_cycles
        return now + found.first_start_cycles

    @property
    def replays(self) -> bool:
        """Whether a group of its bookings can be replayed (`hwsim.sim.replay`): first come first served, its
        counters sums of binary fractions of a cycle (a tick a power-of-two fraction: sums are exact, in any
        order)."""
        tpc = self._ticks_per_cycle
        return self._fcfs and tpc & (tpc - 1) == 0

    @property
    def keeps_rows(self) -> bool:
        """Whether its channels keep an open row (then where a transfer lies decides its timing beyond its place
        in the address period)."""
        return self._rows.row_bytes > 0

    def relative_state(self, now: int) -> tuple[object, ...]:
        """What decides its bookings requested from cycle `now` on, apart from open rows (`keeps_rows`): per channel
        its bus end and in-flight ends after `now` in ticks (0: over; a burst starts no earlier than its request)
        and its last direction."""
        request = now * self._ticks_per_cycle
        return tuple((max(c.bus_free_ticks - request, 0), tuple(max(end - request, 0) for end in c.done_ticks),
                      c.last_direction) for c in self._channels)

    def move_on(self, cycles: int) -> None:
        """Every channel's bus and in-flight ends `cycles` later (`hwsim.sim.steady`)."""
        ticks = cycles * self._ticks_per_cycle
        for c in self._channels:
            c.bus_free_ticks += ticks
            c.done_ticks = [end + ticks for end in c.done_ticks]
        self.reserved_end_cycle += cycles

    def plan_class(self, offset_bytes: int, nbytes: int) -> int:
        """A number naming how a transfer of `nbytes` at `offset_bytes` into the address period splits into
        channel parts (each part's channel, latencies, offsets, row runs and rows spanned): transfers of one class
        book alike from the same channel state (`replay_key` says which rows they hit)."""
        plan = self._plan(offset_bytes, nbytes)
        shape = tuple((p.channel, p.latency_list, p.offset_list, p.runs, p.last_row - p.first_row)
                      for p in plan.parts)
        return self._plan_classes.setdefault(shape, len(self._plan_classes))

    @property
    def rows_per_period(self) -> int:
        """Rows of each channel in one address period: a transfer k periods in is k times this many rows on."""
        return self._rows_per_period

    def replay_plan(self, offset_bytes: int, nbytes: int) -> Plan:
        """The channel parts of a transfer of `nbytes` at `offset_bytes` into the address period (`replay_key`)."""
        return self._plan(offset_bytes, nbytes)

    def replay_key(self, transfers: list[Transfer],
                   now: int) -> tuple[tuple[int, ...], list[tuple[int, int, int]]] | None:
        """What decides the bookings of a group's transactions (direction, channel parts as `replay_plan` gives them,
        the row their address period starts at; in the order they are booked) requested from cycle `now` on,
        beyond their parts' shapes: per channel they use, its bus end before `now` (clamped where no burst can wait
        for it: a turnaround and a tick back), then per channel part whether its first run hits the open row and
        whether it turns the direction, with the rows and directions the transactions before it leave. Also each
        such channel's open row and direction after them. None when a channel they use is not idle at `now`."""
        request, rows, channels = now * self._ticks_per_cycle, self._rows, self._channels
        lookback = -(self.cfg.turnaround_cycles * self._ticks_per_cycle + 1)
        newest, keeps_open, keeps_rows = self._in_flight - 1, rows.keeps_open, rows.row_bytes > 0
        key: list[int] = []
        state: dict[int, list[int]] = {}
        for direction, plan, row_shift in transfers:
            for part in plan.parts:
                channel = state.get(part.channel)
                if channel is None:
                    c = channels[part.channel]
                    bus = c.bus_free_ticks - request
                    if bus > 0 or c.end_of_slot(newest) > request:
                        return None
                    channel = state[part.channel] = [c.open_row, c.last_direction]
                    key.append(max(lookback, bus))
                last = channel[1]
                key.append(2 * (keeps_open and part.first_row + row_shift == channel[0])
                           + (last != direction and last != -1))
                if keeps_rows:
                    channel[0] = part.last_row + row_shift
                channel[1] = direction
        return tuple(key), [(k, row, way) for k, (row, way) in state.items()]

    def replay_marks(self, now: int, channels: list[int]) -> tuple[tuple[int, int, tuple[int, ...]], ...]:
        """Channels' bus ends and in-flight ends, in ticks after cycle `now` (a booked group's, to replay)."""
        request = now * self._ticks_per_cycle
        return tuple((k, self._channels[k].bus_free_ticks - request,
                      tuple(end - request for end in self._channels[k].done_ticks)) for k in channels)

    def replay_channels(self, now: int, after: list[tuple[int, int, int]],
                        marks: tuple[tuple[int, int, tuple[int, ...]], ...]) -> None:
        """Leave the channels as a replayed group starting at cycle `now` does: open rows and directions
        (`replay_key`), bus and in-flight ends (`replay_marks`)."""
        request = now * self._ticks_per_cycle
        channels = self._channels
        for k, row, direction in after:
            channels[k].open_row, channels[k].last_direction = row, direction
        for k, bus, ends in marks:
            channels[k].bus_free_ticks = request + bus
            channels[k].replace_window(request, ends)

    def _outcome(self, plan: Plan, direction: int, now: int, row_shift: int) -> _Outcome:
        """Book a transaction in full (`_book_parts`) and say what it did, relative to `now`."""
        request_ticks, tpc = now * self._ticks_per_cycle, self._ticks_per_cycle
        self._stalled.clear()
        hits = [self._rows.keeps_open and part.first_row + row_shift == self._channels[part.channel].open_row
                for part in plan.parts]
        start = self._book_parts(plan, direction, request_ticks, row_shift)
        assert self._booked is not None and len(self._stalled) == len(plan.parts)
        parts = []
        for part, (turnaround, queue), hit in zip(plan.parts, self._stalled, hits):
            channel = self._channels[part.channel]
            fresh = channel.done_ticks[-part.taken:]
            misses = part.runs - hit  # as `_open` counts them
            parts.append(_PartOutcome(tuple(d - request_ticks for d in fresh), channel.bus_free_ticks - request_ticks,
                                      turnaround / tpc, queue / tpc, misses, len(part.burst_list) - misses))
        self._stalled.clear()
        starts, ends, _ = self._booked  # a booking worked out in full adds no cycles
        relative = (np.asarray(starts, dtype=np.int64) - now, np.asarray(ends, dtype=np.int64) - now)  # arrays, also
        # for a few bursts booked in integers: a recorder joins thousands of replays' at once
        for cycles in relative:
            cycles.flags.writeable = False  # every replay hands these on
        self._booked = (*relative, now)
        return _Outcome(relative[0], relative[1], start - now, self.reserved_end_cycle - now, tuple(parts),
                        sum(p.row_misses for p in parts), sum(p.row_hits for p in parts))

    def _plan(self, offset_bytes: int, nbytes: int) -> Plan:
        """The cached channel parts of a transfer of `nbytes` at `offset_bytes` into the address period."""
        key = (offset_bytes, nbytes)
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) >= _PLAN_CACHE_ENTRIES:
                self._plans.clear()
            plan = self._plans[key] = self._make_plan(offset_bytes, nbytes)
        return plan

    def _make_plan(self, address_bytes: int, nbytes: int) -> Plan:
        k = self.burst_range(address_bytes, nbytes)
        channel, local_bytes = self._address_map.locate(k)
        parts = []
        for ch in sorted(set(channel.tolist())):  # (np.unique would import numpy.ma: 6 ms of every run)
            mine = np.flatnonzero(channel == ch)
            parts.append(self._make_part(ch, mine, local_bytes[mine]))
        few = all(len(p.bursts) <= min(self._in_flight, _SCALAR_BURSTS) for p in parts)
        return Plan(bursts=len(k), parts=tuple(parts), few=few,
                     busy_cycles=len(k) * self._slot_ticks / self._ticks_per_cycle)

    def _make_part(self, channel: int, bursts: np.ndarray, local_bytes: np.ndarray) -> _ChannelPart:
        """Λ_i and G_i of a channel's bursts when the first run misses (see the module doc)."""
        rb, tpc = self.cfg.row_buffer, self._ticks_per_cycle
        row = local_bytes // rb.row_bytes if rb is not None else np.zeros_like(local_bytes)
        new_run = np.r_[True, row[1:] != row[:-1]]
        if rb is not None:
            miss, hit = rb.miss_latency_cycles * tpc, rb.hit_latency_cycles * tpc
            latency = np.where(new_run, miss, hit).astype(np.int64)
            extra = np.where(new_run, miss - hit, 0).astype(np.int64)
        else:
            latency = np.full(len(bursts), self.cfg.latency_cycles * tpc, dtype=np.int64)
            extra = np.zeros(len(bursts), dtype=np.int64)
        gaps = extra + self._slot_ticks
        gaps[0] = extra[0]
        offsets = np.cumsum(gaps)
        leads = (latency - offsets).tolist()
        floor = leads[0]
        return _ChannelPart(channel=channel, bursts=bursts, latency_ticks=latency, offset_ticks=offsets,
                            first_row=int(row[0]), last_row=int(row[-1]), runs=int(new_run.sum()),
                            latency_list=tuple(latency.tolist()), offset_list=tuple(offsets.tolist()),
                            burst_list=tuple(bursts.tolist()), lead_max=tuple(accumulate(leads, max)),
                            rest_max=tuple(accumulate([-(1 << 62), *leads[1:]], max)),
                            taken=min(len(bursts), self._in_flight), floor_ticks=floor,
                            turned_floor_ticks=floor - self.cfg.turnaround_cycles * tpc)
