"""On-chip SRAM (the GLB, the L2, or a line buffer): shared ports, banks with contiguous address
ranges, and buffer space that a tile must be allocated in before it is fetched.

Timing of one transfer of W words at word address A:

- It touches banks ⌊A/bank_words⌋ … ⌊(A+W−1)/bank_words⌋, where
  bank_words = size_bytes / banks / word_bytes.
- It needs every bank it touches and one port, and holds them all for
  D = ⌈W / words_per_cycle⌉ + latency_cycles cycles.
  GLB: words_per_cycle = words_per_port, latency 0, `ports` ports.
  L2: one port, words_per_cycle = bandwidth_bytes_per_cycle / word_bytes
  (an exact fraction), latency = latency_cycles.
  Line buffer: one bank, one port, words_per_port, latency 0.
- Every bank and port keeps the cycle it is next free. A transfer requested
  at cycle r reserves them at once (no simpy event): with
  banks_ready = max(r, latest free cycle of its banks) it starts at
  S = max(banks_ready, earliest free cycle of the ports), on the port free
  latest by S (so ports free earlier stay free for later requests), and
  sets its banks and port free at S + D. Requests are thus served first
  come, first served in the order they are made.
- So two transfers on the same bank serialise, transfers on different banks
  run in parallel while ports are free, and beyond that they queue for a
  port. Stall statistics split the wait S − r as before, banks first:
  bank-conflict stall = banks_ready − r (waiting for a bank in use), port
  stall = S − banks_ready (then waiting for a port).
- A transfer waiting for a bank keeps its place in the port order: the port
  it reserves from S is not lent to later requests in the cycles before S,
  even to one whose banks are free then. With one port (Eyeriss) transfers
  simply use the port in request order.
- State and statistics are updated when a transfer is reserved.

Space is accounted separately from addresses: a `Space` (simpy Container)
per partition, whose allocations block while it is full. The GLB has a data partition (`data_bytes`, ifmaps and psums)
and a filter partition (`filter_bytes`); the L2 and line buffers have only data.
"""

from __future__ import annotations

from collections.abc import Generator
from fractions import Fraction
from typing import Any

import numpy as np
import simpy

from hwsim.errors import HwsimError
from hwsim.hardware import schema
from hwsim.sim.timing import (
    Space,
    Stat,
    StatInfo,
    check_count,
    collect_stats,
    cycles_at_rate,
    empty_records,
    exact_rate,
    one_record,
    wait_for_reservation,
)

PARTITIONS = ("data", "filter")


class Sram:
    """A banked, multi-port SRAM built from a `Glb` or `L2` config. `reserve_read`/`reserve_write` time
    and reserve a transfer at once; `read`/`write` are simpy processes doing the same and waiting until
    it ends."""

    STATS = (
        StatInfo("read_transfers", "count", "read transfers requested"),
        StatInfo("write_transfers", "count", "write transfers requested"),
        StatInfo("words_read", "words", "words read"),
        StatInfo("words_written", "words", "words written"),
        StatInfo("busy_port_cycles", "port-cycles", "cycles ports were held by transfers"),
        StatInfo("bank_conflict_stall_cycles", "cycles", "cycles transfers waited for a bank in use"),
        StatInfo("port_stall_cycles", "cycles", "cycles transfers waited for a free port"),
    )

    def __init__(self, env: simpy.Environment, cfg: schema.Glb | schema.L2 | schema.LineBuffer, word_bytes: int,
                 name: str = "glb") -> None:
        banks = 1 if isinstance(cfg, schema.LineBuffer) else cfg.banks
        if cfg.size_bytes % (banks * word_bytes):
            raise HwsimError(f"{name}.size: {cfg.size_bytes} B does not split into {banks} banks of whole "
                             f"{word_bytes}-byte words; make size a multiple of {banks * word_bytes} B")
        self.env = env
        self.cfg = cfg
        self.name = name
        self.word_bytes = word_bytes
        self.bank_words = cfg.size_bytes // banks // word_bytes
        self.size_words = self.bank_words * banks
        if isinstance(cfg, schema.Glb):
            ports, rate, latency = cfg.ports, Fraction(cfg.words_per_port), 0
            data_bytes, filter_bytes = cfg.data_bytes, cfg.filter_bytes
        elif isinstance(cfg, schema.LineBuffer):
            ports, rate, latency = 1, Fraction(cfg.words_per_port), 0
            data_bytes, filter_bytes = cfg.size_bytes, 0
        else:
            ports, latency = 1, cfg.latency_cycles
            rate = exact_rate(cfg.bandwidth_bytes_per_cycle, f"{name}.bandwidth") / word_bytes
            data_bytes, filter_bytes = cfg.size_bytes, 0
        self.words_per_cycle = rate
        self.latency_cycles = latency
        self._port_free_at = [0] * ports  # cycle each port is next free
        self._bank_free_at = [0] * banks  # cycle each bank is next free
        self.reserved_end_cycle = 0  # cycle the latest reservation ends (its request cycle if empty)
        self.spaces = {"data": Space(env, data_bytes // word_bytes, f"{name} data partition"),
                       "filter": Space(env, filter_bytes // word_bytes, f"{name} filter partition")}
        self.read_transfers = 0
        self.write_transfers = 0
        self.words_read = 0
        self.words_written = 0
        self.busy_port_cycles = 0
        self.bank_conflict_stall_cycles = 0
        self.port_stall_cycles = 0

    def transfer_cycles(self, words: int) -> int:
        """Cycles a transfer of `words` holds its port and banks: ⌈W / words_per_cycle⌉ + latency."""
        return cycles_at_rate(words, self.words_per_cycle) + self.latency_cycles

    def reserve_read(self, address_words: int, words: int) -> np.ndarray:
        """Reserve a read of `words` from `address_words` requested now; returns a one-record block.
        Yields no event: the read ends at `reserved_end_cycle`."""
        self._check(address_words, words)
        return self._reserve(True, address_words, words)

    def reserve_write(self, address_words: int, words: int) -> np.ndarray:
        """Reserve a write of `words` at `address_words` requested now; returns a one-record block.
        Yields no event: the write ends at `reserved_end_cycle`."""
        self._check(address_words, words)
        return self._reserve(False, address_words, words)

    def read(self, address_words: int, words: int) -> Generator[simpy.Event, Any, np.ndarray]:
        """Process reading `words` from `address_words` (reserved when it starts); returns `reserve_read`'s
        record once the read ends."""
        self._check(address_words, words)
        return wait_for_reservation(self.env, self, self._reserve, True, address_words, words)

    def write(self, address_words: int, words: int) -> Generator[simpy.Event, Any, np.ndarray]:
        """Process writing `words` at `address_words` (reserved when it starts); returns `reserve_write`'s
        record once the write ends."""
        self._check(address_words, words)
        return wait_for_reservation(self.env, self, self._reserve, False, address_words, words)

    def allocate(self, words: int, partition: str = "data") -> simpy.Event:
        """Event firing once `words` of the partition are claimed (waits while it is full)."""
        return self._space(partition).allocate(words)

    def free(self, words: int, partition: str = "data") -> simpy.Event:
        """Event releasing `words` of the partition."""
        return self._space(partition).free(words)

    def stats(self, prefix: str = "") -> dict[str, Stat]:
        """Transfer statistics and those of each partition, with units and descriptions."""
        out = collect_stats(self, self.STATS, prefix)
        for partition, space in self.spaces.items():
            out.update(space.stats(f"{prefix}{partition}."))
        return out

    def _space(self, partition: str) -> Space:
        space = self.spaces.get(partition)
        if space is None:
            raise HwsimError(f"{self.name}: unknown partition {partition!r}; use one of {', '.join(PARTITIONS)}")
        return space

    def _check(self, address_words: int, words: int) -> None:
        check_count(address_words, "address", self.name)
        check_count(words, "size", self.name)
        if address_words + words > self.size_words:
            raise HwsimError(f"{self.name}: access of {words} words at word {address_words} runs past the end "
                             f"of the {self.size_words}-word buffer")

    def book(self, is_read: bool, address_words: int, words: int, request_cycle: int | None = None) -> int:
        """Reserve a transfer requested at `request_cycle` (default now, never earlier) like
        `reserve_read`/`reserve_write`, without building its record: returns its start cycle (it ends at
        `reserved_end_cycle`). The executor's fast path."""
        self._check(address_words, words)
        return self._book(is_read, address_words, words, request_cycle)

    def _reserve(self, is_read: bool, address_words: int, words: int) -> np.ndarray:
        """Time a checked transfer requested now and reserve its banks and a port; its record."""
        start_cycle = self._book(is_read, address_words, words)
        if words == 0:
            return empty_records()
        return one_record(start_cycle, self.reserved_end_cycle, address_words, words)

    def _book(self, is_read: bool, address_words: int, words: int, request_cycle: int | None = None) -> int:
        now = int(self.env.now) if request_cycle is None else request_cycle
        if is_read:
            self.read_transfers += 1
            self.words_read += words
        else:
            self.write_transfers += 1
            self.words_written += words
        if words == 0:
            self.reserved_end_cycle = now
            return now
        located = max(address_words, 0)  # NO_ADDRESS (line buffers: one bank) is located at word 0
        first_bank = located // self.bank_words
        last_bank = (located + words - 1) // self.bank_words
        bank_free_at = self._bank_free_at
        banks_ready = max(now, bank_free_at[first_bank] if first_bank == last_bank
                          else max(bank_free_at[first_bank:last_bank + 1]))
        ports = self._port_free_at
        start_cycle = max(banks_ready, min(ports))
        port, port_free_at = 0, -1  # the port free latest by the start: earlier free ones stay for others
        for i, free_at in enumerate(ports):
            if port_free_at < free_at <= start_cycle:
                port, port_free_at = i, free_at
        duration_cycles = self.transfer_cycles(words)
        end_cycle = start_cycle + duration_cycles
        ports[port] = end_cycle
        bank_free_at[first_bank:last_bank + 1] = [end_cycle] * (last_bank + 1 - first_bank)
        self.reserved_end_cycle = end_cycle
        self.bank_conflict_stall_cycles += banks_ready - now
        self.port_stall_cycles += start_cycle - banks_ready
        self.busy_port_cycles += duration_cycles
        return start_cycle
