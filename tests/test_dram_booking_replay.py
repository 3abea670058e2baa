"""The simple DRAM model replays a one-channel booking when a transaction of the same shape met its channel in the
same state relative to the request (`SimpleDram._book_cached`). The replay must be exact: here random request
streams (reads and writes, repeated and fresh addresses, bursts from one to hundreds, requests at the same cycle,
later and earlier) go through the model and through the same model working every booking out in full, and every
transaction's cycles, every burst's cycles, the counters and the channels' state must agree."""

from __future__ import annotations

import random

import numpy as np
import pytest
import simpy

from hwsim.hardware import schema
from hwsim.sim.dram.simple import Plan, SimpleDram

WORD_BYTES = 2


class WorkedOut(SimpleDram):
    """The model with every booking worked out in full: no replay."""

    def _book_cached(self, plan: Plan, offset: int, amount: int, direction: int, now: int, row_shift: int) -> int:
        start = self._book_parts(plan, direction, now * self._ticks_per_cycle, row_shift)
        self._stalled.clear()
        return start


def _config(channels: int, bandwidth: float, turnaround: int, in_flight: int,
            row_buffer: schema.RowBuffer | None) -> schema.Dram:
    return schema.Dram(channels=channels, bandwidth_bytes_per_cycle=bandwidth, latency_cycles=12, burst_bytes=64,
                       turnaround_cycles=turnaround, energy_pj_per_bit=1.0, row_buffer=row_buffer, in_flight=in_flight,
                       source="test")


OPEN = schema.RowBuffer(row_bytes=512, hit_latency_cycles=5, miss_latency_cycles=17)
CLOSED = schema.RowBuffer(row_bytes=512, hit_latency_cycles=5, miss_latency_cycles=17, policy="closed")
CONFIGS = {
    "flat": _config(1, 8.0, 0, 32, None),
    "turnaround-open-rows": _config(1, 8.0, 6, 32, OPEN),
    "short-window-open-rows": _config(1, 3.0, 4, 3, OPEN),  # fractional slots; the in-flight bound binds
    "closed-rows": _config(1, 8.0, 2, 8, CLOSED),
    "two-channels": _config(2, 16.0, 5, 4, OPEN),  # a transaction within one burst stays on one channel
    "long-turnaround-open-rows": _config(1, 8.0, 20, 32, OPEN),  # a turnaround beyond the first burst's latency
}


def _stream(seed: int, count: int) -> list[tuple[bool, int, int, int]]:
    """(is_read, byte address, bytes, request cycle) of `count` transactions: a layer's rhythm (per group, an
    ifmap tile and a filter tile read at once, every fourth group an output tile written, a fixed gap between
    groups) with a random transaction now and then (any size and place, read or written, now, later or earlier)."""
    rng = random.Random(seed)
    at, out = 0, []
    for group in range(count // 3):
        out.append((True, (1 << 20) + 288 * group, 288, at))
        out.append((True, (1 << 22) + 5184 * group, 5184, at))
        if group % 4 == 3:
            out.append((False, (1 << 23) + 64 * group, 64, at + 350))
        if rng.random() < 0.1:
            jitter = rng.choice((0, 1, 7, 40, -30, 3000))
            out.append((rng.random() < 0.5, WORD_BYTES * rng.randrange(0, 1 << 19), WORD_BYTES * rng.randrange(1, 2000),
                        max(0, at + jitter)))
        at += 2500  # the channel idles between groups: a steady state
    return out


def _mixed_stream(seed: int, count: int) -> list[tuple[bool, int, int, int]]:
    """Pairs of transactions of a few shapes in a few rows, each read or written at random, the second a few
    cycles after the first (before, at or after the first's bursts end), the channel drained between pairs: the
    same shapes meet the channel in the same state with the row open or not and the direction turned or not."""
    rng = random.Random(seed)
    at, out = 0, []
    for _ in range(count // 2):
        for lag in (0, rng.choice((0, 3, 20, 40, 45, 50, 55, 60, 70))):
            offset, nbytes = rng.choice(((0, 128), (64, 256), (512, 192)))
            out.append((rng.random() < 0.5, rng.choice((0, 1 << 16, 2 << 16)) + offset, nbytes, at + lag))
        at += 3000
    return out


def _state(dram: SimpleDram) -> list[object]:
    stats = {name: stat.value for name, stat in dram.stats().items()}
    return [stats, [(c.done_ticks, c.bus_free_ticks, c.open_row, c.last_direction) for c in dram._channels]]


def _same_bookings(cfg: schema.Dram, stream: list[tuple[bool, int, int, int]]) -> SimpleDram:
    """Book `stream` both ways, checking every transaction and, now and then, the counters and channels; the
    replaying model."""
    replayed, full = SimpleDram(simpy.Environment(), cfg, WORD_BYTES), WorkedOut(simpy.Environment(), cfg, WORD_BYTES)
    for k, (is_read, address, nbytes, at) in enumerate(stream):
        a = replayed.book(is_read, address, nbytes, at, WORD_BYTES)
        b = full.book(is_read, address, nbytes, at, WORD_BYTES)
        assert (a, replayed.reserved_end_cycle) == (b, full.reserved_end_cycle), k
        ra = replayed.booked_bursts(a, address, nbytes, WORD_BYTES)
        rb = full.booked_bursts(b, address, nbytes, WORD_BYTES)
        assert np.array_equal(np.add(ra[0], ra[4]), np.add(rb[0], rb[4])), k
        assert np.array_equal(np.add(ra[1], ra[4]), np.add(rb[1], rb[4])), k
        assert all(c.done_ticks == sorted(c.done_ticks) for c in replayed._channels), k  # what the key relies on
        if k % 97 == 0:
            assert _state(replayed) == _state(full), k
    assert _state(replayed) == _state(full)
    return replayed


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("seed", [1, 2])
def test_replayed_bookings_equal_bookings_worked_out_in_full(name: str, seed: int) -> None:
    stream = _stream(seed, 3000)
    replayed = _same_bookings(CONFIGS[name], stream)
    assert len(replayed._outcomes) < len(stream) // 3  # most were replayed, not worked out


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_rows_and_turns_are_replayed_apart(name: str) -> None:
    stream = _mixed_stream(3, 4000)
    replayed = _same_bookings(CONFIGS[name], stream)
    assert len(replayed._outcomes) < len(stream) // 2


def _starts_from_states(states: list[tuple[tuple[int, ...], int | None]], nbytes: int) -> tuple[list[int], SimpleDram]:
    """On the short-window config (3 bursts in flight; ticks of 1/3 cycle), a read of `nbytes` at byte 0 requested
    at cycle 1000 (tick 3000) from each channel state in turn: (in-flight ends, bus end), ticks after the request
    (bus None: it ends with the last in-flight end). Each booked by the replaying model and worked out in full,
    which must agree; their first burst's cycles, and the replaying model."""
    cfg = CONFIGS["short-window-open-rows"]
    replayed, full = SimpleDram(simpy.Environment(), cfg, WORD_BYTES), WorkedOut(simpy.Environment(), cfg, WORD_BYTES)
    starts = []
    for ends_after_request, bus_after_request in states:
        for dram in (replayed, full):
            channel = dram._channels[0]
            channel.done_ticks = [3000 + t for t in ends_after_request]
            channel.bus_free_ticks = 3000 + (ends_after_request[-1] if bus_after_request is None else bus_after_request)
            channel.last_direction, channel.open_row = 0, -1
        a = replayed.book(True, 0, nbytes, 1000, WORD_BYTES)
        assert a == full.book(True, 0, nbytes, 1000, WORD_BYTES)
        starts.append(a)
    return starts, replayed


def test_the_in_flight_ends_are_part_of_what_is_replayed() -> None:
    """Two channel states with the same bus end and the same number of free in-flight slots, one burst admitted
    later in the second: a transaction replayed from the first would start too early in the second."""
    starts, _ = _starts_from_states([((20, 25, 30), None), ((25, 27, 30), None)], 192)
    # the first burst is admitted when the oldest in-flight one ends (20 or 25 ticks after the request); its data
    # starts a miss latency (17 cycles, 51 ticks) later, and at least miss − hit (12 cycles, 36 ticks) after the
    # bus's last burst (30 ticks after the request) while its row opens: ⌊max(3020 + 51, 3030 + 36) / 3⌋ = 1023,
    # ⌊max(3025 + 51, 3066) / 3⌋ = 1025
    assert starts == [1023, 1025]


def test_only_the_slots_a_transaction_takes_are_in_its_key() -> None:
    """A one-burst transaction is admitted after the oldest in-flight end alone: states that differ in a newer end
    (the bus end the same) replay one outcome; a state that differs in the oldest is worked out anew."""
    starts, replayed = _starts_from_states([((20, 25, 30), 30), ((20, 26, 29), 30), ((21, 25, 30), 30)], 64)
    # admitted at the oldest end, its data a miss latency (51 ticks) later, at least miss − hit (36 ticks) after the
    # bus: ⌊max(3020 + 51, 3030 + 36) / 3⌋ = 1023 twice, ⌊max(3021 + 51, 3066) / 3⌋ = 1024
    assert starts == [1023, 1023, 1024]
    assert len(replayed._outcomes) == 2  # the second state replayed the first's outcome


def test_in_flight_ends_of_one_spacing_are_replayed_apart_by_when_they_end() -> None:
    """Two channel states whose in-flight ends have the same spacing, one tick later in the second, the bus ending
    with them, 10 and 11 ticks after the request: both below the first burst's own lead (Λ − G = 51 − 36 = 15
    ticks), where the key's bus term is clamped alike; the key must still tell them apart."""
    starts, _ = _starts_from_states([((5, 8, 10), None), ((6, 9, 11), None)], 192)
    # as above: ⌊max(3005 + 51, 3010 + 36) / 3⌋ = 1018 and ⌊max(3006 + 51, 3011 + 36) / 3⌋ = 1019
    assert starts == [1018, 1019]
