"""The PE array: one processing pass at a time, timed by the dataflow's pass model.

`rate` (row_stationary, no_local_reuse): a pass of M MACs and P non-MAC
operations on A active PEs spreads the work evenly over those PEs; a non-MAC
operation (a pooling comparison, an element-wise add) takes one MAC slot:

    cycles = ⌈(M + P) / (A · macs_per_cycle)⌉ + fill_drain_cycles.

`systolic` (weight_, output_, input_stationary): a pass is one fold of an
R × C systolic array streaming T iterations; with the skewed fill and drain
of SCALE-Sim it lasts 2R + C + T − 2 cycles (weight and input stationary:
the stationary operand enters over R cycles first) or R + C + T − 2 (output
stationary), whatever part of the array the fold uses (a pass of non-MAC
work only uses the rate model).

Zeros: a pass names the MACs whose ifmap word is zero. With `zero_gating`
(Eyeriss) they are gated: no MAC and no filter RF read is spent on them, the
pass keeps its cycles. With `zero_skipping` they are skipped: the same energy,
and the rate model counts M − skipped MACs (the skips spread evenly over the
active PEs, an optimistic balance).

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
from hwsim.sim.component import Component, StatInfo, Statistic
from hwsim.sim.policy import scheduler
from hwsim.sim.timing import check_count, one_record
from hwsim.vocab import NO_ADDRESS, ceil_div

SYSTOLIC_FILL_ROWS = {"weight_stationary": 2, "input_stationary": 2, "output_stationary": 1}  # R's in a fold's skew


class PeArray(Component):
    """The processing-element array: `book`/`reserve` a pass at once, or run it as a process (`compute`)."""

    passes = Statistic("count", "processing passes run")
    macs = Statistic("MACs", "multiply-accumulates the passes covered, gated and skipped ones included")
    gated_macs = Statistic("MACs", "MACs a zero ifmap word gated (zero_gating) or skipped (zero_skipping)")
    ops = Statistic("ops", "non-MAC operations done")
    busy_cycles = Statistic("cycles", "cycles the array ran a pass, fill and drain included")
    queue_stall_cycles = Statistic("cycles", "cycles passes waited for the array")
    DERIVED_STATS = (
        StatInfo("idle_cycles", "cycles", "cycles since start the array ran no pass"),
        StatInfo("utilization", "fraction", "MACs / (busy cycles · PEs · MACs per PE-cycle)"),
    )

    def __init__(self, env: simpy.Environment, cfg: schema.PeArray, name: str = "pe_array") -> None:
        super().__init__(env, name)
        self.cfg = cfg
        self._scheduler = scheduler("fcfs")  # one pass at a time, in the order they are requested
        self._fill_rows = SYSTOLIC_FILL_ROWS.get(cfg.dataflow, 0)
        self.free_at_cycle = 0  # end of the last pass reserved
        self.spares_zeros = cfg.zero_gating or cfg.zero_skipping

    @property
    def idle_cycles(self) -> int:
        """Cycles so far in which no pass ran or is reserved to run.

        Passes reserved beyond now run back to back up to `free_at_cycle`, so
        this is max(now, free_at_cycle) − busy_cycles.
        """
        return max(int(self.env.now), self.free_at_cycle) - int(self.busy_cycles)

    @property
    def utilization(self) -> float:
        """Share of the array's MAC slots used while it was busy (0 before any pass)."""
        slots = self.busy_cycles * self.cfg.pes * self.cfg.macs_per_cycle
        return self.macs / slots if slots else 0.0

    def spared(self, zero_macs: int) -> int:
        """Of a pass's MACs with a zero ifmap word, those the array gates or skips."""
        return zero_macs if self.spares_zeros else 0

    def pass_cycles(self, macs: int, ops: int, active_pes: int, stream_length: int = 1, zero_macs: int = 0) -> int:
        """Cycles of one pass by the dataflow's timing model (module docstring)."""
        self._check(macs, ops, active_pes)
        if self._fill_rows and macs:
            return self._fill_rows * self.cfg.rows + self.cfg.cols + max(1, stream_length) - 2
        done = macs - zero_macs if self.cfg.zero_skipping else macs
        return ceil_div(done + ops, active_pes * self.cfg.macs_per_cycle) + self.cfg.fill_drain_cycles

    def relative_state(self, now: int) -> tuple[object, ...] | None:
        """What decides its passes requested from cycle `now` on: its free cycle after `now` (0: free); None unless
        first come first served."""
        return (max(self.free_at_cycle - now, 0),) if self._scheduler.name == "fcfs" else None

    def move_on(self, cycles: int) -> None:
        """Its free cycle `cycles` later (`hwsim.sim.steady`)."""
        self.free_at_cycle += cycles
        self.reserved_end_cycle += cycles

    def book(self, macs: int, ops: int, active_pes: int, request_cycle: int | None = None,
             stream_length: int = 1, zero_macs: int = 0) -> int:
        """Reserve a pass requested at `request_cycle` (default now) whose `zero_macs` MACs have a zero ifmap
        word; its start cycle (it ends at `reserved_end_cycle`). The executor's fast path."""
        duration_cycles = self.pass_cycles(macs, ops, active_pes, stream_length, zero_macs)
        now = self.request_cycle(request_cycle)
        start_cycle = self._scheduler.start_cycle(now, self.free_at_cycle)
        self.free_at_cycle = self.reserved_end_cycle = start_cycle + duration_cycles
        self.passes += 1
        self.macs += macs
        self.gated_macs += self.spared(zero_macs)
        self.ops += ops
        self.busy_cycles += duration_cycles
        self.queue_stall_cycles += start_cycle - now
        return start_cycle

    def reserve(self, macs: int, ops: int, active_pes: int) -> np.ndarray:
        """Reserve the array for one pass requested now; its one record (words = macs + ops)."""
        start_cycle = self.book(macs, ops, active_pes)
        return one_record(start_cycle, self.reserved_end_cycle, NO_ADDRESS, macs + ops)

    def compute(self, macs: int, ops: int, active_pes: int) -> Generator[simpy.Event, Any, np.ndarray]:
        """Process running one pass (reserved when it starts); its record once it ends."""
        self._check(macs, ops, active_pes)
        return self._compute(macs, ops, active_pes)

    def _compute(self, macs: int, ops: int, active_pes: int) -> Generator[simpy.Event, Any, np.ndarray]:
        return (yield from self.wait_until_reserved_end(self.reserve(macs, ops, active_pes)))

    def _check(self, macs: int, ops: int, active_pes: int) -> None:
        check_count(macs, "macs", self.name)
        check_count(ops, "ops", self.name)
        if int(active_pes) != active_pes or not 1 <= active_pes <= self.cfg.pes:
            raise HwsimError(f"{self.name}: a pass on {active_pes} PEs is impossible; the array has "
                             f"{self.cfg.rows}x{self.cfg.cols} = {self.cfg.pes} PEs")
