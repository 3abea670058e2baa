"""The PE array: one processing pass at a time.

A pass of M MACs and P non-MAC operations on A active PEs spreads the work
evenly over those PEs; a non-MAC operation (a pooling comparison, an
element-wise add) takes one MAC slot. It lasts

    cycles = ⌈(M + P) / (A · macs_per_cycle)⌉ + fill_drain_cycles.

Utilisation over a run is MACs / (busy cycles · PEs · macs_per_cycle).

The array runs one pass at a time and keeps the cycle it is next free. A
pass reserves it when it is requested and starts at max(request cycle,
array free): first come, first served like a queue, but with no simpy
events (`reserve`), or one timeout (`compute`, a process). Statistics count
a pass when it is reserved.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import simpy

from hwsim.errors import HwsimError
from hwsim.hardware import schema
from hwsim.sim.timing import (
    NO_ADDRESS,
    Stat,
    StatInfo,
    ceil_div,
    check_count,
    collect_stats,
    one_record,
    wait_for_reservation,
)


class PeArray:
    """The processing-element array: `reserve` times and reserves a pass at once, `compute` is a simpy
    process doing the same and waiting until it ends."""

    STATS = (
        StatInfo("passes", "count", "processing passes run"),
        StatInfo("macs", "MACs", "multiply-accumulates done"),
        StatInfo("ops", "ops", "non-MAC operations done"),
        StatInfo("busy_cycles", "cycles", "cycles the array ran a pass, fill and drain included"),
        StatInfo("idle_cycles", "cycles", "cycles since start the array ran no pass"),
        StatInfo("queue_stall_cycles", "cycles", "cycles passes waited for the array"),
        StatInfo("utilization", "fraction", "MACs / (busy cycles · PEs · MACs per PE-cycle)"),
    )

    def __init__(self, env: simpy.Environment, cfg: schema.PeArray, word_bytes: int,
                 name: str = "pe_array") -> None:
        self.env = env
        self.cfg = cfg
        self.name = name
        self.word_bytes = word_bytes
        self.free_at_cycle = 0  # end of the last pass reserved
        self.reserved_end_cycle = 0  # cycle the latest reservation ends
        self.passes = 0
        self.macs = 0
        self.ops = 0
        self.busy_cycles = 0
        self.queue_stall_cycles = 0

    @property
    def idle_cycles(self) -> int:
        """Cycles so far in which no pass ran or is reserved to run.

        Passes reserved beyond now run back to back up to `free_at_cycle`, so
        this is max(now, free_at_cycle) − busy_cycles.
        """
        return max(int(self.env.now), self.free_at_cycle) - self.busy_cycles

    @property
    def utilization(self) -> float:
        """Share of the array's MAC slots used while it was busy (0 before any pass)."""
        slots = self.busy_cycles * self.cfg.pes * self.cfg.macs_per_cycle
        return self.macs / slots if slots else 0.0

    def pass_cycles(self, macs: int, ops: int, active_pes: int) -> int:
        """Cycles of one pass: ⌈(macs + ops) / (active_pes · macs_per_cycle)⌉ + fill_drain_cycles."""
        self._check(macs, ops, active_pes)
        return ceil_div(macs + ops, active_pes * self.cfg.macs_per_cycle) + self.cfg.fill_drain_cycles

    def reserve(self, macs: int, ops: int, active_pes: int) -> np.ndarray:
        """Reserve the array for one pass requested now; returns a one-record block with
        words = macs + ops. Yields no event: the pass ends at `reserved_end_cycle`."""
        return self._reserve(macs, ops, self.pass_cycles(macs, ops, active_pes))

    def compute(self, macs: int, ops: int, active_pes: int) -> Generator[simpy.Event, Any, np.ndarray]:
        """Process running one pass (reserved when it starts); returns `reserve`'s record once it ends."""
        duration_cycles = self.pass_cycles(macs, ops, active_pes)
        return wait_for_reservation(self.env, self, self._reserve, macs, ops, duration_cycles)

    def stats(self, prefix: str = "") -> dict[str, Stat]:
        """The statistics with units and descriptions."""
        return collect_stats(self, self.STATS, prefix)

    def _check(self, macs: int, ops: int, active_pes: int) -> None:
        check_count(macs, "macs", self.name)
        check_count(ops, "ops", self.name)
        if int(active_pes) != active_pes or not 1 <= active_pes <= self.cfg.pes:
            raise HwsimError(f"{self.name}: a pass on {active_pes} PEs is impossible; the array has "
                             f"{self.cfg.rows}x{self.cfg.cols} = {self.cfg.pes} PEs")

    def book(self, macs: int, ops: int, active_pes: int, request_cycle: int | None = None) -> int:
        """Reserve a pass requested at `request_cycle` (default now) like `reserve`, without building its
        record: returns its start cycle (it ends at `reserved_end_cycle`). The executor's fast path."""
        return self._book(macs, ops, self.pass_cycles(macs, ops, active_pes), request_cycle)

    def _reserve(self, macs: int, ops: int, duration_cycles: int) -> np.ndarray:
        start_cycle = self._book(macs, ops, duration_cycles)
        return one_record(start_cycle, self.reserved_end_cycle, NO_ADDRESS, macs + ops)

    def _book(self, macs: int, ops: int, duration_cycles: int, request_cycle: int | None = None) -> int:
        now = int(self.env.now) if request_cycle is None else request_cycle
        start_cycle = max(now, self.free_at_cycle)
        self.free_at_cycle = self.reserved_end_cycle = start_cycle + duration_cycles
        self.passes += 1
        self.macs += macs
        self.ops += ops
        self.busy_cycles += duration_cycles
        self.queue_stall_cycles += start_cycle - now
        return start_cycle
