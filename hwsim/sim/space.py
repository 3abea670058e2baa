"""Buffer space: the words a tile must claim in a level before it is fetched, with occupancy over time.

One mechanism serves both execution policies of the executor: `claim(words,
at, wait)` grants space at cycle `at` when it fits and nobody waits before it;
otherwise a claim that may wait gets an event that fires once frees make room
(first come, first served: a large waiting claim holds back later small
ones), and one that may not wait (a schedule run strictly group after group,
where space not free now never will be) is an impossible mapping.
`release(words, at)` gives space back; waiting claims are granted once the
release has been processed by the simpy clock, in the order they came, like
a simpy Container's puts after a get. Every change of occupancy is logged as
(cycle, words after) for the trace.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import simpy

from hwsim.errors import HwsimError
from hwsim.sim.component import Component, Statistic
from hwsim.sim.timing import check_count


@dataclass
class _Waiting:
    words: int
    event: simpy.Event
    requested_cycle: int


class Space(Component):
    """A buffer's space in words: claims, releases, occupancy log and statistics."""

    capacity_words = Statistic("words", "space available")
    peak_words = Statistic("words", "highest occupancy reached")
    allocations = Statistic("count", "claims granted")
    allocate_stall_cycles = Statistic("cycles", "cycles claims waited for space")

    def __init__(self, env: simpy.Environment, capacity_words: int, name: str) -> None:
        super().__init__(env, name)
        self.capacity_words = capacity_words
        self.occupancy_words = 0
        self._waiting: deque[_Waiting] = deque()
        self._log_cycles: list[int] = [0]
        self._log_words: list[int] = [0]

    def claim(self, words: int, at: int | None = None, wait: bool = True) -> simpy.Event | None:
        """Claim `words` at cycle `at` (default now): None when granted at once, else (only if `wait`) an
        event that fires when granted. More than the capacity, or a claim that cannot wait and does not
        fit, is an error."""
        check_count(words, "allocation", self.name)
        if words > self.capacity_words:
            raise HwsimError(f"{self.name}: cannot allocate {words} words, capacity is "
                             f"{self.capacity_words} words; use smaller tiles or a larger buffer")
        cycle = int(self.env.now) if at is None else at
        if self._waiting:  # a release may have made room that its event has not handed out yet
            self._grant_waiting(None)
        if not self._waiting and self.occupancy_words + words <= self.capacity_words:
            self._grant(words, cycle, cycle)
            return None
        if not wait:
            raise HwsimError(f"{self.name}: cannot allocate {words} words with {self.occupancy_words} of "
                             f"{self.capacity_words} held; use a larger buffer or a mapping that needs less")
        event = self.env.event()
        self._waiting.append(_Waiting(words, event, cycle))
        return event

    @property
    def waiting_words(self) -> int:
        """Words the oldest claim waiting for space asks for (0: none waits)."""
        return self._waiting[0].words if self._waiting else 0

    def release(self, words: int, at: int | None = None) -> None:
        """Release `words` claimed earlier at cycle `at` (default now); freeing more than is held is an error."""
        check_count(words, "free", self.name)
        if words > self.occupancy_words:
            raise HwsimError(f"{self.name}: cannot free {words} words, only {self.occupancy_words} are allocated")
        if words == 0:
            return
        self.occupancy_words -= words
        self._log(int(self.env.now) if at is None else at)
        if self._waiting:
            processed = self.env.event()
            processed.callbacks.append(self._grant_waiting)
            processed.succeed()

    def _grant_waiting(self, _: simpy.Event | None) -> None:
        now = int(self.env.now)
        while self._waiting and self.occupancy_words + self._waiting[0].words <= self.capacity_words:
            waiting = self._waiting.popleft()
            self._grant(waiting.words, waiting.requested_cycle, now)
            waiting.event.succeed()

    def _grant(self, words: int, requested_cycle: int, cycle: int) -> None:
        if words == 0:
            return
        self.occupancy_words += words
        self.allocations += 1
        self.allocate_stall_cycles += cycle - requested_cycle
        self.peak_words = max(self.peak_words, self.occupancy_words)
        self._log(cycle)

    def _log(self, cycle: int) -> None:
        self._log_cycles.append(cycle)
        self._log_words.append(self.occupancy_words)

    def occupancy_records(self) -> np.ndarray:
        """Every claim and release as (cycle, words_after), in order, after an initial (0, 0)."""
        block = np.empty(len(self._log_cycles), dtype=[("cycle", np.int64), ("words_after", np.int64)])
        block["cycle"] = self._log_cycles
        block["words_after"] = self._log_words
        return block
