"""The PE array: one processing pass at a time.

A pass of M MACs and P non-MAC operations on A active PEs spreads the work
evenly over those PEs; a non-MAC operation (a pooling comparison, an
element-wise add) takes one MAC slot. It lasts

    cycles = ⌈(M + P) / (A · macs_per_cycle)⌉ + fill_drain_cycles.

Utilisation over a run is MACs / (busy cycles · PEs · macs_per_cycle).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import simpy

from hwsim.errors import HwsimError
from hwsim.hardware import schema
from hwsim.sim.timing import NO_ADDRESS, Stat, StatInfo, ceil_div, check_count, collect_stats, hold, one_record


class PeArray:
    """The processing-element array as a simpy Resource of capacity 1; `compute` is a process."""

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
        self._array = simpy.Resource(env, capacity=1)
        self.passes = 0
        self.macs = 0
        self.ops = 0
        self.busy_cycles = 0
        self.queue_stall_cycles = 0

    @property
    def idle_cycles(self) -> int:
        """Cycles so far in which no pass ran."""
        return int(self.env.now) - self.busy_cycles

    @property
    def utilization(self) -> float:
        """Share of the array's MAC slots used while it was busy (0 before any pass)."""
        slots = self.busy_cycles * self.cfg.pes * self.cfg.macs_per_cycle
        return self.macs / slots if slots else 0.0

    def pass_cycles(self, macs: int, ops: int, active_pes: int) -> int:
        """Cycles of one pass: ⌈(macs + ops) / (active_pes · macs_per_cycle)⌉ + fill_drain_cycles."""
        self._check(macs, ops, active_pes)
        return ceil_div(macs + ops, active_pes * self.cfg.macs_per_cycle) + self.cfg.fill_drain_cycles

    def compute(self, macs: int, ops: int, active_pes: int) -> Generator[simpy.Event, Any, np.ndarray]:
        """Process running one pass; returns a one-record block with words = macs + ops."""
        duration_cycles = self.pass_cycles(macs, ops, active_pes)
        return self._compute(macs, ops, duration_cycles)

    def stats(self, prefix: str = "") -> dict[str, Stat]:
        """The statistics with units and descriptions."""
        return collect_stats(self, self.STATS, prefix)

    def _check(self, macs: int, ops: int, active_pes: int) -> None:
        check_count(macs, "macs", self.name)
        check_count(ops, "ops", self.name)
        if int(active_pes) != active_pes or not 1 <= active_pes <= self.cfg.pes:
            raise HwsimError(f"{self.name}: a pass on {active_pes} PEs is impossible; the array has "
                             f"{self.cfg.rows}x{self.cfg.cols} = {self.cfg.pes} PEs")

    def _compute(self, macs: int, ops: int, duration_cycles: int) -> Generator[simpy.Event, Any, np.ndarray]:
        requested_cycle = int(self.env.now)
        start_cycle = yield from hold(self.env, self._array, duration_cycles)
        self.passes += 1
        self.macs += macs
        self.ops += ops
        self.busy_cycles += duration_cycles
        self.queue_stall_cycles += start_cycle - requested_cycle
        return one_record(start_cycle, start_cycle + duration_cycles, NO_ADDRESS, macs + ops)
