"""On-chip SRAM (the GLB or the L2): shared ports, banks with contiguous address ranges, and
buffer space that a tile must be allocated in before it is fetched.

Timing of one transfer of W words at word address A:

- It touches banks ⌊A/bank_words⌋ … ⌊(A+W−1)/bank_words⌋, where
  bank_words = size_bytes / banks / word_bytes.
- It first claims every bank it touches (all at once, served in request
  order), then one port, and holds them all for
  D = ⌈W / words_per_cycle⌉ + latency_cycles cycles.
  GLB: words_per_cycle = words_per_port, latency 0, `ports` ports.
  L2: one port, words_per_cycle = bandwidth_bytes_per_cycle / word_bytes
  (an exact fraction), latency = latency_cycles.
- So two transfers on the same bank serialise (the wait is counted as
  bank-conflict stall cycles), transfers on different banks run in parallel
  while ports are free, and beyond that they queue for a port.

Space is accounted separately from addresses: a `Space` (simpy Container)
per partition. The GLB has a data partition (`data_bytes`, ifmaps and psums)
and a filter partition (`filter_bytes`); the L2 has only data.
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
)

PARTITIONS = ("data", "filter")


class Sram:
    """A banked, multi-port SRAM built from a `Glb` or `L2` config; `read`/`write` are simpy processes."""

    STATS = (
        StatInfo("read_transfers", "count", "read transfers requested"),
        StatInfo("write_transfers", "count", "write transfers requested"),
        StatInfo("words_read", "words", "words read"),
        StatInfo("words_written", "words", "words written"),
        StatInfo("busy_port_cycles", "port-cycles", "cycles ports were held by transfers"),
        StatInfo("bank_conflict_stall_cycles", "cycles", "cycles transfers waited for a bank in use"),
        StatInfo("port_stall_cycles", "cycles", "cycles transfers waited for a free port"),
    )

    def __init__(self, env: simpy.Environment, cfg: schema.Glb | schema.L2, word_bytes: int,
                 name: str = "glb") -> None:
        if cfg.size_bytes % (cfg.banks * word_bytes):
            raise HwsimError(f"{name}.size: {cfg.size_bytes} B does not split into {cfg.banks} banks of whole "
                             f"{word_bytes}-byte words; make size a multiple of {cfg.banks * word_bytes} B")
        self.env = env
        self.cfg = cfg
        self.name = name
        self.word_bytes = word_bytes
        self.bank_words = cfg.size_bytes // cfg.banks // word_bytes
        self.size_words = self.bank_words * cfg.banks
        if isinstance(cfg, schema.Glb):
            ports, rate, latency = cfg.ports, Fraction(cfg.words_per_port), 0
            data_bytes, filter_bytes = cfg.data_bytes, cfg.filter_bytes
        else:
            ports, latency = 1, cfg.latency_cycles
            rate = exact_rate(cfg.bandwidth_bytes_per_cycle, f"{name}.bandwidth") / word_bytes
            data_bytes, filter_bytes = cfg.size_bytes, 0
        self.words_per_cycle = rate
        self.latency_cycles = latency
        self._ports = simpy.Resource(env, capacity=ports)
        self._banks = [simpy.Resource(env, capacity=1) for _ in range(cfg.banks)]
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

    def read(self, address_words: int, words: int) -> Generator[simpy.Event, Any, np.ndarray]:
        """Process reading `words` from `address_words`; returns a one-record block."""
        self._check(address_words, words)
        self.read_transfers += 1
        self.words_read += words
        return self._transfer(address_words, words)

    def write(self, address_words: int, words: int) -> Generator[simpy.Event, Any, np.ndarray]:
        """Process writing `words` at `address_words`; returns a one-record block."""
        self._check(address_words, words)
        self.write_transfers += 1
        self.words_written += words
        return self._transfer(address_words, words)

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

    def _transfer(self, address_words: int, words: int) -> Generator[simpy.Event, Any, np.ndarray]:
        if words == 0:
            return empty_records()
        requested_cycle = int(self.env.now)
        banks = self._banks[address_words // self.bank_words:(address_words + words - 1) // self.bank_words + 1]
        bank_requests = [bank.request() for bank in banks]
        waiting = [r for r in bank_requests if not r.triggered]
        if waiting:
            yield waiting[0] if len(waiting) == 1 else self.env.all_of(waiting)
        banks_cycle = int(self.env.now)
        port_request = self._ports.request()
        if not port_request.triggered:
            yield port_request
        start_cycle = int(self.env.now)
        duration_cycles = self.transfer_cycles(words)
        yield self.env.timeout(duration_cycles)
        self._ports.release(port_request)
        for bank, request in zip(banks, bank_requests):
            bank.release(request)
        self.bank_conflict_stall_cycles += banks_cycle - requested_cycle
        self.port_stall_cycles += start_cycle - banks_cycle
        self.busy_port_cycles += duration_cycles
        return one_record(start_cycle, start_cycle + duration_cycles, address_words, words)
