"""Buffer space: the bytes a tile must claim in a level before it is fetched, with occupancy over time.

Space is counted in bytes, so tiles of different word widths (mixed precision) share a buffer exactly.
One mechanism serves both execution policies of the executor: `claim(nbytes,
at, wait)` grants space at cycle `at` when it fits and nobody waits before it;
otherwise a claim that may wait gets an event that fires once frees make room
(first come, first served: a large waiting claim holds back later small
ones), and one that may not wait (a schedule run strictly group after group,
where space not free now never will be) is an impossible mapping.
`release(nbytes, at)` gives space back; waiting claims are granted once the
release has been processed by the simpy clock, in the order they came, like
a simpy Container's puts after a get. Every change of occupancy is logged as
(cycle, bytes after) for the trace until it is taken (`take_occupancy`), so a
run that hands the log on as it goes keeps only the events since it last did.
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
    nbytes: int
    event: simpy.Event
    requested_cycle: int


class Space(Component):
    """A buffer's space in bytes: claims, releases, occupancy log and statistics."""

    capacity_bytes = Statistic("bytes", "space available")
    peak_bytes = Statistic("bytes", "highest occupancy reached")
    allocations = Statistic("count", "claims granted")
    allocate_stall_cycles = Statistic("cycles", "cycles claims waited for space")

    def __init__(self, env: simpy.Environment, capacity_bytes: int, name: str) -> None:
        super().__init__(env, name)
        self.capacity_bytes = capacity_bytes
        self.occupancy_bytes = 0
        self._waiting: deque[_Waiting] = deque()
        self._log_cycles: list[int] = [0]
        self._log_bytes: list[int] = [0]

    def claim(self, nbytes: int, at: int | None = None, wait: bool = True) -> simpy.Event | None:
        """Claim `nbytes` at cycle `at` (default now): None when granted at once, else (only if `wait`) an
        event that fires when granted. More than the capacity, or a claim that cannot wait and does not
        fit, is an error."""
        if type(nbytes) is not int or nbytes < 0:  # (`check_count` passes a plain non-negative int at once)
            check_count(nbytes, "allocation", self.name)
        if nbytes > self.capacity_bytes:
            raise HwsimError(f"{self.name}: cannot allocate {nbytes} bytes, capacity is "
                             f"{self.capacity_bytes} bytes; use smaller tiles or a larger buffer")
        cycle = int(self.env.now) if at is None else at
        if self._waiting:  # a release may have made room that its event has not handed out yet
            self._grant_waiting(None)
        if not self._waiting and self.occupancy_bytes + nbytes <= self.capacity_bytes:
            self._grant(nbytes, cycle, cycle)
            return None
        if not wait:
            raise HwsimError(f"{self.name}: cannot allocate {nbytes} bytes with {self.occupancy_bytes} of "
                             f"{self.capacity_bytes} held; use a larger buffer or a mapping that needs less")
        event = self.env.event()
        self._waiting.append(_Waiting(nbytes, event, cycle))
        return event

    @property
    def waiting_bytes(self) -> int:
        """Bytes the oldest claim waiting for space asks for (0: none waits)."""
        return self._waiting[0].nbytes if self._waiting else 0

    def release(self, nbytes: int, at: int | None = None) -> None:
        """Release `nbytes` claimed earlier at cycle `at` (default now); freeing more than is held is an error."""
        if type(nbytes) is not int or nbytes < 0:
            check_count(nbytes, "free", self.name)
        if nbytes > self.occupancy_bytes:
            raise HwsimError(f"{self.name}: cannot free {nbytes} bytes, only {self.occupancy_bytes} are allocated")
        if nbytes == 0:
            return
        self.occupancy_bytes -= nbytes
        self._log_cycles.append(int(self.env.now) if at is None else at)  # the change in the log
        self._log_bytes.append(self.occupancy_bytes)
        if self._waiting:
            processed = self.env.event()
            processed.callbacks.append(self._grant_waiting)
            processed.succeed()

    def _grant_waiting(self, _: simpy.Event | None) -> None:
        now = int(self.env.now)
        while self._waiting and self.occupancy_bytes + self._waiting[0].nbytes <= self.capacity_bytes:
            waiting = self._waiting.popleft()
            self._grant(waiting.nbytes, waiting.requested_cycle, now)
            waiting.event.succeed()

    def _grant(self, nbytes: int, requested_cycle: int, cycle: int) -> None:
        if nbytes == 0:
            return
        occupancy = self.occupancy_bytes = self.occupancy_bytes + nbytes
        self.allocations += 1
        self.allocate_stall_cycles += cycle - requested_cycle
        if occupancy > self.peak_bytes:
            self.peak_bytes = occupancy
        self._log_cycles.append(cycle)  # the change in the log
        self._log_bytes.append(occupancy)

    def relative_state(self, now: int) -> tuple[object, ...]:
        """What decides its claims from cycle `now` on: its occupancy and the claims waiting (bytes, cycles they
        have waited)."""
        return self.occupancy_bytes, tuple((w.nbytes, now - w.requested_cycle) for w in self._waiting)

    def move_on(self, cycles: int) -> None:
        """The waiting claims' request cycles `cycles` later (`hwsim.sim.steady`)."""
        for waiting in self._waiting:
            waiting.requested_cycle += cycles

    def log_length(self) -> int:
        """Occupancy changes logged and not taken yet."""
        return len(self._log_cycles)

    def log_since(self, first: int, last: int) -> tuple[list[int], list[int]]:
        """Log entries first … last - 1 (cycles, bytes after)."""
        return self._log_cycles[first:last], self._log_bytes[first:last]

    def log_more(self, cycles: list[int], bytes_after: list[int]) -> None:
        """Log changes made elsewhere (`hwsim.sim.steady`'s repeated periods), after those so far."""
        self._log_cycles += cycles
        self._log_bytes += bytes_after

    def occupancy_records(self) -> np.ndarray:
        """Every claim and release not taken yet as (cycle, bytes_after), in order; before the first take, an
        initial (0, 0) first."""
        block = np.empty(len(self._log_cycles), dtype=[("cycle", np.int64), ("bytes_after", np.int64)])
        block["cycle"] = self._log_cycles
        block["bytes_after"] = self._log_bytes
        return block

    def take_occupancy(self) -> np.ndarray:
        """`occupancy_records`, forgotten once taken: the log holds only the events since the last take."""
        block = self.occupancy_records()
        self._log_cycles.clear()
        self._log_bytes.clear()
        return block
