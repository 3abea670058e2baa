"""A toy DRAM model in one file: every request's first data comes a fixed number of cycles after it is made, and
bursts follow one another on one data bus at the configured bandwidth.

It shows what a new DRAM model takes: its own parameters (`FixedLatencyParams`, written in the config's `dram`
section beside the shared keys), its simulator class (a `DramModel`) and one registration of its kind. A config
names it with `dram.model: fixed_latency` and lists this file under `plugins:`; nothing else in hwsim changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import simpy

from hwsim.hardware import schema
from hwsim.hardware.dram import DramKind
from hwsim.hardware.kinds import DRAM_MODELS
from hwsim.hardware.schema import param
from hwsim.hardware.units import CYCLES
from hwsim.sim.component import Statistic
from hwsim.sim.dram.base import DramModel


@dataclass(frozen=True, kw_only=True)
class FixedLatencyParams:
    """What the toy model adds to the `dram` section."""

    access_latency_cycles: int = param(CYCLES, "cycles from a request to its first data, however busy the DRAM",
                                       integer=True)


class FixedLatencyDram(DramModel):
    """One data bus; a transaction requested at r starts its data at max(r + latency, the bus's next free cycle)
    and its bursts follow one another, each burst / bandwidth cycles long (a whole number)."""

    queue_stall_cycles = Statistic("cycles", "cycles first bursts waited beyond their latency for the data bus")

    def __init__(self, env: simpy.Environment, cfg: schema.Dram, word_bytes: int, name: str = "dram",
                 clock_hz: float | None = None) -> None:
        super().__init__(env, cfg, word_bytes, name, clock_hz)
        params: FixedLatencyParams = cfg.params
        self.latency_cycles = params.access_latency_cycles
        slot = Fraction(cfg.burst_bytes) / Fraction(cfg.bandwidth_bytes_per_cycle)
        assert slot.denominator == 1, "the toy model takes a bandwidth that moves a burst in whole cycles"
        self.slot_cycles = int(slot)
        self.bus_free_cycle = 0

    def _book(self, is_read: bool, address: int, amount: int, now: int, word_bytes: int) -> int:
        bursts = len(self.burst_range(address, amount))
        start = max(now + self.latency_cycles, self.bus_free_cycle)
        self.queue_stall_cycles += start - now - self.latency_cycles
        self.bursts += bursts
        self.bus_free_cycle = self.reserved_end_cycle = start + bursts * self.slot_cycles
        return start

    def _records(self, start_cycle: int, address: int, amount: int, word_bytes: int) -> np.ndarray:
        bursts = len(self.burst_range(address, amount))
        starts = start_cycle + self.slot_cycles * np.arange(bursts, dtype=np.int64)
        return self.burst_records(starts, starts + self.slot_cycles, address, amount, word_bytes)

    def stall_cycles(self) -> int:
        return int(self.queue_stall_cycles)


DRAM_MODELS.register("fixed_latency", params=FixedLatencyParams)(DramKind(
    "a toy: a fixed latency to first data, bursts back to back on one bus", f"{__name__}:FixedLatencyDram"))
