"""The on-chip network: the ifmap, filter and psum multicast buses between the GLB and the PEs.

Moving W words of word_bits on a bus of bus_bits takes ⌈W·word_bits / bus_bits⌉
cycles. A multicast delivers one word to every PE that wants it for the cost
of one, so W counts unique words, not deliveries.

Each bus carries one transfer at a time and keeps the cycle it is next free.
A transfer reserves its bus when it is requested and starts at
max(request cycle, bus free): first come, first served like a queue, but
with no simpy events (`reserve`), or one timeout (`transfer`, a process).
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
    one_record,
    wait_for_reservation,
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

    def __init__(self, bus_bits: int) -> None:
        self.bus_bits = bus_bits
        self.free_at_cycle = 0
        self.transfers = 0
        self.words = 0
        self.busy_cycles = 0
        self.queue_stall_cycles = 0


class Noc:
    """The three buses of the NoC: `reserve` times and reserves a transfer at once, `transfer` is a
    simpy process doing the same and waiting until it ends."""

    def __init__(self, env: simpy.Environment, cfg: schema.Noc, word_bytes: int, name: str = "noc") -> None:
        self.env = env
        self.cfg = cfg
        self.name = name
        self.word_bits = 8 * word_bytes
        self.buses = {"ifmap": Bus(cfg.ifmap_bus_bits), "filter": Bus(cfg.filter_bus_bits),
                      "psum": Bus(cfg.psum_bus_bits)}
        self.reserved_end_cycle = 0  # cycle the latest reservation ends (its request cycle if empty)

    def transfer_cycles(self, bus: str, words: int) -> int:
        """Cycles to move `words` unique words on `bus`: ⌈W·word_bits / bus_bits⌉."""
        return ceil_div(words * self.word_bits, self._bus(bus).bus_bits)

    def reserve(self, bus: str, words: int) -> np.ndarray:
        """Reserve `bus` for `words` unique words requested now; returns a one-record block (no address).
        Yields no event: the transfer ends at `reserved_end_cycle`."""
        check_count(words, "size", f"{self.name}.{bus}")
        return self._reserve(self._bus(bus), words)

    def transfer(self, bus: str, words: int) -> Generator[simpy.Event, Any, np.ndarray]:
        """Process moving `words` unique words on `bus` (reserved when it starts); returns `reserve`'s
        record once the transfer ends."""
        check_count(words, "size", f"{self.name}.{bus}")
        return wait_for_reservation(self.env, self, self._reserve, self._bus(bus), words)

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

    def book(self, bus: str, words: int, request_cycle: int | None = None) -> int:
        """Reserve a transfer on `bus` requested at `request_cycle` (default now) like `reserve`, without
        building its record: returns its start cycle (it ends at `reserved_end_cycle`)."""
        check_count(words, "size", self.name)
        return self._book(self._bus(bus), words, request_cycle)

    def _reserve(self, bus: Bus, words: int) -> np.ndarray:
        start_cycle = self._book(bus, words)
        if words == 0:
            return empty_records()
        return one_record(start_cycle, self.reserved_end_cycle, NO_ADDRESS, words)

    def _book(self, bus: Bus, words: int, request_cycle: int | None = None) -> int:
        now = int(self.env.now) if request_cycle is None else request_cycle
        if words == 0:
            self.reserved_end_cycle = now
            return now
        start_cycle = max(now, bus.free_at_cycle)
        duration_cycles = ceil_div(words * self.word_bits, bus.bus_bits)
        bus.free_at_cycle = self.reserved_end_cycle = start_cycle + duration_cycles
        bus.transfers += 1
        bus.words += words
        bus.busy_cycles += duration_cycles
        bus.queue_stall_cycles += start_cycle - now
        return start_cycle
