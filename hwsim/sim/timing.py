"""Helpers the simulator components share: the access-record block, exact rate arithmetic,
waiting for a reservation, buffer space with occupancy, and statistics.

All times are integer cycles of the core clock. A component's resources
(channels, banks, ports, buses, the PE array) each keep the cycle they are
next free. A transaction reserves them synchronously when it is requested
(`reserve…` methods): its exact timing follows from that state, the state
and the statistics are updated at once, and its per-burst (or per-transfer)
records come back as one numpy block of `RECORD_DTYPE`. Reserving in request
order serves each resource first come, first served, and costs no simpy
event; a caller that moves data through several components reserves on each
and waits for the latest end with a single `env.timeout`. The process
methods (`read`, `write`, `transfer`, `compute`) are that one timeout
wrapped around one reservation (`wait_for_reservation`).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

import numpy as np
import simpy

from hwsim.errors import HwsimError
from hwsim.vocab import NO_ADDRESS, ceil_div

RECORD_DTYPE = np.dtype([
    ("start_cycle", np.int64),  # first cycle of the access (data on the port, bus or PE array)
    ("end_cycle", np.int64),  # cycle the access completes (exclusive)
    ("address", np.int64),  # first word address touched, NO_ADDRESS where there is none
    ("words", np.int64),  # words moved (PE array: MACs + ops of the pass)
])


MAX_RATE_DENOMINATOR = 1_000_000  # rates such as 25.6 B/cycle become exact fractions (128/5)


def one_record(start_cycle: int, end_cycle: int, address: int, words: int) -> np.ndarray:
    """A block holding a single access record."""
    block = np.empty(1, dtype=RECORD_DTYPE)
    block[0] = (start_cycle, end_cycle, address, words)
    return block


def empty_records() -> np.ndarray:
    """A block of no records (a zero-word transfer)."""
    return np.empty(0, dtype=RECORD_DTYPE)


def exact_rate(per_cycle: float, what: str) -> Fraction:
    """`per_cycle` as an exact fraction, so burst and port times do not drift with float error."""
    if not per_cycle > 0:
        raise HwsimError(f"{what}: rate {per_cycle} per cycle must be positive")
    return Fraction(per_cycle).limit_denominator(MAX_RATE_DENOMINATOR)


def cycles_at_rate(amount: int, per_cycle: Fraction) -> int:
    """Whole cycles to move `amount` units at `per_cycle` units per cycle: ⌈amount / rate⌉."""
    return ceil_div(amount * per_cycle.denominator, per_cycle.numerator)


def check_count(value: int, what: str, owner: str) -> None:
    """A word, byte or operation count must be a non-negative integer."""
    if int(value) != value or value < 0:
        raise HwsimError(f"{owner}: {what} must be a non-negative whole number, got {value}")


class Reserving(Protocol):
    """A component with a reservation API: it remembers where its latest reservation ends."""

    reserved_end_cycle: int


def wait_for_reservation(env: simpy.Environment, component: Reserving, reserve: Callable[..., np.ndarray],
                         *args: Any) -> Generator[simpy.Event, Any, np.ndarray]:
    """Process body: `reserve(*args)` on `component` when the process starts, then wait until it ends.

    `component.reserved_end_cycle` is the end of its latest reservation; one
    timeout covers the whole transaction, none if it ends at once.
    """
    records = reserve(*args)
    delay = component.reserved_end_cycle - int(env.now)
    if delay > 0:
        yield env.timeout(delay)
    return records


@dataclass(frozen=True)
class Stat:
    """One statistic of a component: value, unit and what it counts."""

    value: float
    unit: str
    description: str


@dataclass(frozen=True)
class StatInfo:
    """Declares a statistic kept in attribute `attr` of a component."""

    attr: str
    unit: str
    description: str


def collect_stats(component: object, infos: tuple[StatInfo, ...], prefix: str = "") -> dict[str, Stat]:
    """The declared statistics of `component`, keyed by (prefixed) attribute name."""
    return {prefix + i.attr: Stat(getattr(component, i.attr), i.unit, i.description) for i in infos}


class Space(simpy.Container):
    """Buffer space in words: `allocate` blocks while it would overflow, `free` gives it back.

    The level is the occupancy. Allocations are served first come first
    served (a large waiting allocation holds back later small ones), so a tile
    is never fetched into a full buffer. Every change of occupancy is logged
    as (cycle, words after) for the trace.
    """

    STATS = (
        StatInfo("capacity_words", "words", "space available"),
        StatInfo("peak_words", "words", "highest occupancy reached"),
        StatInfo("allocations", "count", "allocations granted"),
        StatInfo("allocate_stall_cycles", "cycles", "cycles allocations waited for space"),
    )

    def __init__(self, env: simpy.Environment, capacity_words: int, name: str) -> None:
        super().__init__(env, capacity=max(capacity_words, 1))
        self.name = name
        self.capacity_words = capacity_words
        self.peak_words = 0
        self.allocations = 0
        self.allocate_stall_cycles = 0
        self._log_cycles: list[int] = [0]
        self._log_words: list[int] = [0]

    def allocate(self, words: int) -> simpy.Event:
        """Claim `words`; the event fires once they fit. More than the capacity is an error."""
        check_count(words, "allocation", self.name)
        if words > self.capacity_words:
            raise HwsimError(f"{self.name}: cannot allocate {words} words, capacity is "
                             f"{self.capacity_words} words; use smaller tiles or a larger buffer")
        if words == 0:
            return self._env.event().succeed()
        event = self.put(words)
        event.requested_cycle = self._env.now  # type: ignore[attr-defined]
        return event

    def free(self, words: int) -> simpy.Event:
        """Release `words` claimed earlier; freeing more than is held is an error."""
        check_count(words, "free", self.name)
        if words > self._level:
            raise HwsimError(f"{self.name}: cannot free {words} words, only {self._level} are allocated")
        if words == 0:
            return self._env.event().succeed()
        return self.get(words)

    def claim_at(self, words: int, cycle: int) -> None:
        """Claim `words` at `cycle` (≥ now) without waiting: for schedules that run one step group after
        another, where space that is not free now never will be."""
        check_count(words, "allocation", self.name)
        if self._level + words > self.capacity_words:
            raise HwsimError(f"{self.name}: cannot allocate {words} words with {self._level} of "
                             f"{self.capacity_words} held; use a larger buffer or a mapping that needs less")
        self._level += words
        self.allocations += 1
        self.peak_words = max(self.peak_words, int(self._level))
        self._log_cycles.append(cycle)
        self._log_words.append(int(self._level))

    def release_at(self, words: int, cycle: int) -> None:
        """Release `words` at `cycle` (≥ now) without an event (see `claim_at`)."""
        check_count(words, "free", self.name)
        if words > self._level:
            raise HwsimError(f"{self.name}: cannot free {words} words, only {self._level} are allocated")
        self._level -= words
        self._log_cycles.append(cycle)
        self._log_words.append(int(self._level))

    @property
    def occupancy_words(self) -> int:
        """Words currently allocated."""
        return int(self._level)

    def occupancy_records(self) -> np.ndarray:
        """Every allocation and free as (cycle, words_after), in order, after an initial (0, 0)."""
        block = np.empty(len(self._log_cycles), dtype=[("cycle", np.int64), ("words_after", np.int64)])
        block["cycle"] = self._log_cycles
        block["words_after"] = self._log_words
        return block

    def stats(self, prefix: str = "") -> dict[str, Stat]:
        return collect_stats(self, self.STATS, prefix)

    def _do_put(self, event: simpy.resources.container.ContainerPut) -> bool | None:
        if self._level + event.amount > self.capacity_words:
            return None
        self._level += event.amount
        event.succeed()
        self.allocations += 1
        # granted inside `put` (no wait) before `allocate` could stamp the request time
        requested_cycle = getattr(event, "requested_cycle", self._env.now)
        self.allocate_stall_cycles += int(self._env.now - requested_cycle)
        self.peak_words = max(self.peak_words, int(self._level))
        self._log(int(self._level))
        return True

    def _do_get(self, event: simpy.resources.container.ContainerGet) -> bool | None:
        result = super()._do_get(event)
        if event.triggered:
            self._log(int(self._level))
        return result

    def _log(self, words_after: int) -> None:
        self._log_cycles.append(int(self._env.now))
        self._log_words.append(words_after)
