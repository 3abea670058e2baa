"""The simulation clock: simpy's environment, and a process's wait that costs no event when nothing else is due."""

from __future__ import annotations

import simpy


class Clock(simpy.Environment):
    """simpy's environment with `skip_to`: a process about to wait for a timeout to a cycle at which no other event
    is due goes on at once instead. simpy would pop that timeout next, set the clock to its cycle and resume the
    process before anything else could run: the same order, without the event (a pass waits a few times for its
    cycle; most of those waits have nothing else due)."""

    def skip_to(self, cycle: int) -> bool:
        """Move the clock to `cycle` (not before now) if no event is due at or before it; whether it moved."""
        queue = self._queue
        if queue and queue[0][0] <= cycle:
            return False
        self._now = cycle
        return True

    def move_on(self, cycles: int) -> None:
        """The clock and every event due `cycles` later (`hwsim.sim.steady`: what would have happened meanwhile was
        made otherwise). Adding one number to every due cycle keeps the queue a heap."""
        self._now += cycles
        self._queue[:] = [(at + cycles, priority, eid, event) for at, priority, eid, event in self._queue]


__all__ = ["Clock"]
