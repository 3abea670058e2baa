"""The on-chip network (`noc.model: buses`): the ifmap, filter and psum multicast buses between the GLB and
the PEs, and with `psum_out_bus` a bus of its own for the psums leaving the array (else they take the psum bus).

Moving W words of word_bits (the width of the transfer's words) on a bus of
bus_bits takes ⌈W·word_bits / bus_bits⌉ cycles. A multicast delivers one word to every PE that wants it for the cost
of one, so W counts unique words, not deliveries.

Each bus carries one transfer at a time and keeps the cycle it is next free;
a transfer is booked when it is requested and starts when the bus's
scheduler says (first come, first served: max(request cycle, bus free)).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import simpy

from hwsim.errors import HwsimError
from hwsim.hardware import schema
from hwsim.sim.component import Port, Stat, Statistic
from hwsim.sim.policy import Scheduler, scheduler
from hwsim.vocab import NO_ADDRESS, NOC_BUSES, ceil_div

BUSES = NOC_BUSES


class Bus(Port):
    """One multicast bus; transfers carry unique words and have no address."""

    read_amount = Statistic("words", "unique words read (none: the NoC only carries)")
    written_amount = Statistic("words", "unique words carried")
    busy_cycles = Statistic("cycles", "cycles the bus was carrying data")
    queue_stall_cycles = Statistic("cycles", "cycles transfers waited for the bus")

    def __init__(self, env: simpy.Environment, bus_bits: int, word_bytes: int, policy: Scheduler,
                 name: str) -> None:
        super().__init__(env, name, word_bytes)
        self.bus_bits = bus_bits
        self._scheduler = policy
        self.free_at_cycle = 0

    def transfer_cycles(self, words: int, word_bytes: int | None = None) -> int:
        """Cycles to move `words` unique words: ⌈W·word_bits / bus_bits⌉."""
        return ceil_div(words * 8 * (self.word_bytes if word_bytes is None else word_bytes), self.bus_bits)

    def relative_state(self, now: int) -> tuple[object, ...] | None:
        """What decides its bookings requested from cycle `now` on: its free cycle after `now` (0: free); None
        unless first come first served."""
        return (max(self.free_at_cycle - now, 0),) if self._scheduler.name == "fcfs" else None

    def move_on(self, cycles: int) -> None:
        """Its free cycle `cycles` later (`hwsim.sim.steady`)."""
        self.free_at_cycle += cycles
        self.reserved_end_cycle += cycles

    def _book(self, is_read: bool, address: int, amount: int, now: int, word_bytes: int) -> int:
        start_cycle = self._scheduler.start_cycle(now, self.free_at_cycle)
        duration_cycles = -(-amount * 8 * word_bytes // self.bus_bits)  # `transfer_cycles`
        self.free_at_cycle = self.reserved_end_cycle = start_cycle + duration_cycles
        self.busy_cycles += duration_cycles
        self.queue_stall_cycles += start_cycle - now
        return start_cycle


class Noc:
    """The three buses of the NoC, by name: `book`/`reserve` a transfer on one, or run it as a process
    (`transfer`)."""

    def __init__(self, env: simpy.Environment, cfg: schema.Noc, word_bytes: int, name: str = "noc") -> None:
        self.env = env
        self.cfg = cfg
        self.name = name
        widths = {"ifmap": cfg.ifmap_bus_bits, "filter": cfg.filter_bus_bits, "psum": cfg.psum_bus_bits,
                  "psum_out": cfg.psum_out_bus_bits}
        self.buses = {bus: Bus(env, widths[bus], word_bytes, scheduler(cfg.scheduler), f"{name}.{bus}")
                      for bus in BUSES if widths[bus]}
        self.reserved_end_cycle = 0  # cycle the latest reservation on any bus ends

    def bus(self, bus: str) -> Bus:
        """The bus called `bus`; psum_out is the psum bus when the NoC has no psum output bus of its own."""
        found = self.buses.get(bus) or (self.buses["psum"] if bus == "psum_out" else None)
        if found is None:
            raise HwsimError(f"{self.name}: unknown bus {bus!r}; use one of {', '.join(BUSES)}")
        return found

    def transfer_cycles(self, bus: str, words: int, word_bytes: int | None = None) -> int:
        return self.bus(bus).transfer_cycles(words, word_bytes)

    def book(self, bus: str, words: int, request_cycle: int | None = None, word_bytes: int | None = None) -> int:
        """Reserve `bus` for `words` unique words requested at `request_cycle` (default now); its start cycle
        (it ends at `reserved_end_cycle`)."""
        chosen = self.bus(bus)
        start = chosen.book(False, NO_ADDRESS, words, request_cycle, word_bytes)
        self.reserved_end_cycle = chosen.reserved_end_cycle
        return start

    def reserve(self, bus: str, words: int) -> np.ndarray:
        """Reserve `bus` for `words` requested now; its one record (no address)."""
        chosen = self.bus(bus)
        records = chosen.reserve_write(NO_ADDRESS, words)
        self.reserved_end_cycle = chosen.reserved_end_cycle
        return records

    def transfer(self, bus: str, words: int) -> Generator[simpy.Event, Any, np.ndarray]:
        """Process moving `words` on `bus` (reserved when it starts); its record once it ends."""
        return self.bus(bus).write(NO_ADDRESS, words)

    def stats(self, prefix: str = "") -> dict[str, Stat]:
        """Statistics of every bus, keyed `<bus>.<stat>`, with units and descriptions."""
        out: dict[str, Stat] = {}
        for name, bus in self.buses.items():
            out.update(bus.stats(f"{prefix}{name}."))
        return out

