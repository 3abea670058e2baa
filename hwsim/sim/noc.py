"""The on-chip network: the ifmap, filter and psum multicast buses between the GLB and the PEs.

Each bus is a simpy Resource (capacity 1). Moving W words of word_bits on a
bus of bus_bits takes ⌈W·word_bits / bus_bits⌉ cycles. A multicast delivers
one word to every PE that wants it for the cost of one, so W counts unique
words, not deliveries.
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
    empty_records,
    hold,
    one_record,
)

BUSES = ("ifmap", "filter", "psum")


class Bus:
    """One multicast bus and its statistics."""

    STATS = (
        StatInfo("transfers", "count", "transfers carried"),
        StatInfo("words", "words", "unique words carried"),
        StatInfo("busy_cycles", "cycles", "cycles the bus was carrying data"),
        StatInfo("queue_stall_cycles", "cycles", "cycles transfers waited for the bus"),
    )

    def __init__(self, env: simpy.Environment, bus_bits: int) -> None:
        self.resource = simpy.Resource(env, capacity=1)
        self.bus_bits = bus_bits
        self.transfers = 0
        self.words = 0
        self.busy_cycles = 0
        self.queue_stall_cycles = 0


class Noc:
    """The three buses of the NoC; `transfer` is a simpy process."""

    def __init__(self, env: simpy.Environment, cfg: schema.Noc, word_bytes: int, name: str = "noc") -> None:
        self.env = env
        self.cfg = cfg
        self.name = name
        self.word_bits = 8 * word_bytes
        self.buses = {"ifmap": Bus(env, cfg.ifmap_bus_bits), "filter": Bus(env, cfg.filter_bus_bits),
                      "psum": Bus(env, cfg.psum_bus_bits)}

    def transfer_cycles(self, bus: str, words: int) -> int:
        """Cycles to move `words` unique words on `bus`: ⌈W·word_bits / bus_bits⌉."""
        return ceil_div(words * self.word_bits, self._bus(bus).bus_bits)

    def transfer(self, bus: str, words: int) -> Generator[simpy.Event, Any, np.ndarray]:
        """Process moving `words` unique words on `bus`; returns a one-record block (no address)."""
        check_count(words, "size", f"{self.name}.{bus}")
        return self._transfer(self._bus(bus), words)

    def stats(self, prefix: str = "") -> dict[str, Stat]:
        """Statistics of every bus, keyed `<bus>.<stat>`, with units and descriptions."""
        out: dict[str, Stat] = {}
        for name, bus in self.buses.items():
            out.update(collect_stats(bus, Bus.STATS, f"{prefix}{name}."))
        return out

    def _bus(self, bus: str) -> Bus:
        found = self.buses.get(bus)
        if found is None:
            raise HwsimError(f"{self.name}: unknown bus {bus!r}; use one of {', '.join(BUSES)}")
        return found

    def _transfer(self, bus: Bus, words: int) -> Generator[simpy.Event, Any, np.ndarray]:
        if words == 0:
            return empty_records()
        requested_cycle = int(self.env.now)
        duration_cycles = ceil_div(words * self.word_bits, bus.bus_bits)
        start_cycle = yield from hold(self.env, bus.resource, duration_cycles)
        bus.transfers += 1
        bus.words += words
        bus.busy_cycles += duration_cycles
        bus.queue_stall_cycles += start_cycle - requested_cycle
        return one_record(start_cycle, start_cycle + duration_cycles, NO_ADDRESS, words)
