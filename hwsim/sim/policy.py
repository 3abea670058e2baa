"""Implementations chosen by name from the config, and the request schedulers every component shares.

A `Registry` maps the names a config may write (`dram.model: simple`,
`dram.scheduler: fcfs`, `dram.address_map: burst_interleave`) to the classes
that implement them, the way Ramulator 2 registers implementations: a new
DRAM model, address mapping or scheduler is one class and one `register`
line, not edits across the simulator. The hardware schema lists the names a
field accepts (so a config is checked when it is loaded); a test keeps the
two in step.

A *scheduler* decides when a request to a busy resource starts. Components
book requests in the order they are made, so a scheduler sees each request
once, with the cycles its resource (or each server of a pool: ports,
channels) is next free.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from hwsim.hardware.kinds import SCHEDULERS


class Scheduler(ABC):
    """When a request starts on a resource that may be busy."""

    name: str

    @abstractmethod
    def start_cycle(self, request_cycle: int, free_at_cycle: int) -> int:
        """Start of a request made at `request_cycle` on one server free from `free_at_cycle`."""

    @abstractmethod
    def pick_server(self, ready_cycle: int, free_at_cycles: Sequence[int]) -> tuple[int, int]:
        """(server, start cycle) of a request ready at `ready_cycle` on a pool of servers (ports)."""

    @abstractmethod
    def start_cycles(self, request_cycle: int, free_at_cycles: np.ndarray) -> np.ndarray:
        """`start_cycle` of requests made together, the i-th on a server free from `free_at_cycles[i]` (a
        DRAM channel's in-flight slots)."""


@SCHEDULERS.register("fcfs")
class FirstComeFirstServed(Scheduler):
    """First come, first served: a request starts when it is made or when the resource is free, whichever
    is later; requests are served in the order they are made.

    In a pool it starts once some server is free (the earliest), on the server that became free last by
    then, so servers free earlier stay free for later requests; a request waiting for something else
    (a bank) keeps its place in the order: the server it takes is not lent to later requests meanwhile.
    """

    name = "fcfs"

    def start_cycle(self, request_cycle: int, free_at_cycle: int) -> int:
        return max(request_cycle, free_at_cycle)

    def start_cycles(self, request_cycle: int, free_at_cycles: np.ndarray) -> np.ndarray:
        starts: np.ndarray = np.maximum(free_at_cycles, request_cycle)
        return starts

    def pick_server(self, ready_cycle: int, free_at_cycles: Sequence[int]) -> tuple[int, int]:
        if len(free_at_cycles) == 1:
            free_at = free_at_cycles[0]
            return 0, max(ready_cycle, free_at)
        latest = max(free_at_cycles)
        if latest <= ready_cycle:  # every server free by then (most requests): the first free latest
            return free_at_cycles.index(latest), ready_cycle
        start = max(ready_cycle, min(free_at_cycles))
        server, server_free = 0, -1
        for i, free_at in enumerate(free_at_cycles):
            if server_free < free_at <= start:
                server, server_free = i, free_at
        return server, start


def scheduler(name: str) -> Scheduler:
    """A scheduler instance by its config name."""
    chosen: type[Scheduler] = SCHEDULERS.get(name)
    return chosen()
