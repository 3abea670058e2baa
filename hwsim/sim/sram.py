"""On-chip SRAM (the GLB, the L2, or a line buffer): shared ports, banks with contiguous address
ranges, and buffer space that a tile must be allocated in before it is fetched.

Timing of one transfer of W words at word address A:

- It touches banks ⌊A/bank_words⌋ … ⌊(A+W−1)/bank_words⌋, where
  bank_words = size_bytes / banks / word_bytes (NO_ADDRESS: bank 0).
- It needs every bank it touches and one port, and holds them all for
  D = ⌈W / words_per_cycle⌉ + latency_cycles cycles.
  GLB: words_per_cycle = words_per_port, latency 0, `ports` ports.
  L2: one port, words_per_cycle = bandwidth_bytes_per_cycle / word_bytes
  (an exact fraction), latency = latency_cycles.
  Line buffer: one bank, one port, words_per_port, latency 0.
- Every bank and port keeps the cycle it is next free. A transfer requested
  at cycle r is booked at once: with banks_ready = max(r, latest free cycle
  of its banks), the scheduler (`scheduler: fcfs`, see `hwsim.sim.policy`)
  picks its port and start S; its banks and port are then free at S + D.
  First come, first served starts it at S = max(banks_ready, earliest free
  port), on the port free latest by S.
- So two transfers on the same bank serialise, transfers on different banks
  run in parallel while ports are free, and beyond that they queue for a
  port. Stalls split the wait S − r, banks first: bank-conflict stall =
  banks_ready − r, port stall = S − banks_ready.

Space is accounted separately from addresses (`hwsim.sim.space.Space`): the
GLB has a data partition (`data_bytes`, ifmaps and psums) and a filter
partition (`filter_bytes`); the L2 and line buffers have only data.
"""

from __future__ import annotations

from fractions import Fraction

import simpy

from hwsim.errors import HwsimError
from hwsim.hardware import schema
from hwsim.sim.component import Port, Stat, Statistic
from hwsim.sim.policy import scheduler
from hwsim.sim.space import Space
from hwsim.sim.timing import check_count, cycles_at_rate, exact_rate
from hwsim.vocab import NO_ADDRESS

PARTITIONS = ("data", "filter")

SramConfig = schema.Glb | schema.L2 | schema.LineBuffer


def _port_timing(cfg: SramConfig, word_bytes: int, name: str) -> tuple[int, Fraction, int]:
    """(ports, words per cycle, latency cycles) of a GLB, L2 or line buffer."""
    if isinstance(cfg, schema.Glb):
        return cfg.ports, Fraction(cfg.words_per_port), 0
    if isinstance(cfg, schema.LineBuffer):
        return 1, Fraction(cfg.words_per_port), 0
    return 1, exact_rate(cfg.bandwidth_bytes_per_cycle, f"{name}.bandwidth") / word_bytes, cfg.latency_cycles


class Sram(Port):
    """A banked, multi-port SRAM built from a `Glb`, `L2` or `LineBuffer` config; addresses and sizes in
    words. `book`/`reserve_read`/`reserve_write`/`read`/`write` come from `Port`."""

    read_amount = Statistic("words", "words read")
    written_amount = Statistic("words", "words written")
    busy_port_cycles = Statistic("port-cycles", "cycles ports were held by transfers")
    bank_conflict_stall_cycles = Statistic("cycles", "cycles transfers waited for a bank in use")
    port_stall_cycles = Statistic("cycles", "cycles transfers waited for a free port")

    def __init__(self, env: simpy.Environment, cfg: SramConfig, word_bytes: int, name: str = "glb") -> None:
        super().__init__(env, name)
        banks = 1 if isinstance(cfg, schema.LineBuffer) else cfg.banks
        if cfg.size_bytes % (banks * word_bytes):
            raise HwsimError(f"{name}.size: {cfg.size_bytes} B does not split into {banks} banks of whole "
                             f"{word_bytes}-byte words; make size a multiple of {banks * word_bytes} B")
        self.cfg = cfg
        self.word_bytes = word_bytes
        self.bank_words = cfg.size_bytes // banks // word_bytes
        self.size_words = self.bank_words * banks
        ports, self.words_per_cycle, self.latency_cycles = _port_timing(cfg, word_bytes, name)
        self._scheduler = scheduler(cfg.scheduler)
        self._port_free_at = [0] * ports  # cycle each port is next free
        self._bank_free_at = [0] * banks  # cycle each bank is next free
        filter_bytes = cfg.filter_bytes if isinstance(cfg, schema.Glb) else 0
        self.spaces = {"data": Space(env, (cfg.size_bytes - filter_bytes) // word_bytes, f"{name} data partition"),
                       "filter": Space(env, filter_bytes // word_bytes, f"{name} filter partition")}

    def use_word(self, cfg: SramConfig, word_bytes: int) -> None:
        """Hold and move words of `word_bytes` from now on, `cfg` being this SRAM at that word (mixed precision:
        the next layer runs at another word). Only an empty SRAM changes its word: nothing left in it is
        reinterpreted."""
        held = [space.name for space in self.spaces.values() if space.occupancy_words or space.waiting_words]
        if held:
            raise HwsimError(f"{held[0]} still holds words when the next layer changes the word width; mixed "
                             "precision runs layer-by-layer schedules, which leave no data on chip between layers")
        banks = len(self._bank_free_at)
        if cfg.size_bytes % (banks * word_bytes):
            raise HwsimError(f"{self.name}.size: {cfg.size_bytes} B does not split into {banks} banks of whole "
                             f"{word_bytes}-byte words; make size a multiple of {banks * word_bytes} B")
        self.cfg, self.word_bytes = cfg, word_bytes
        self.bank_words = cfg.size_bytes // banks // word_bytes
        self.size_words = self.bank_words * banks
        _, self.words_per_cycle, self.latency_cycles = _port_timing(cfg, word_bytes, self.name)
        filter_bytes = cfg.filter_bytes if isinstance(cfg, schema.Glb) else 0
        self.spaces["data"].capacity_words = (cfg.size_bytes - filter_bytes) // word_bytes
        self.spaces["filter"].capacity_words = filter_bytes // word_bytes

    def transfer_cycles(self, words: int) -> int:
        """Cycles a transfer of `words` holds its port and banks: ⌈W / words_per_cycle⌉ + latency."""
        return cycles_at_rate(words, self.words_per_cycle) + self.latency_cycles

    def partition(self, partition: str = "data") -> Space:
        """The partition's space (data: ifmaps and psums; filter: the GLB's filter partition)."""
        found = self.spaces.get(partition)
        if found is None:
            raise HwsimError(f"{self.name}: unknown partition {partition!r}; use one of {', '.join(PARTITIONS)}")
        return found

    def allocate(self, words: int, partition: str = "data") -> simpy.Event:
        """Process-style claim: an event firing once `words` of the partition are claimed."""
        granted = self.partition(partition).claim(words)
        return granted if granted is not None else self.env.event().succeed()

    def free(self, words: int, partition: str = "data") -> simpy.Event:
        """Process-style release of `words` of the partition (never waits)."""
        self.partition(partition).release(words)
        return self.env.event().succeed()

    def stats(self, prefix: str = "") -> dict[str, Stat]:
        """Transfer statistics and those of each partition, with units and descriptions."""
        out = super().stats(prefix)
        for partition, space in self.spaces.items():
            out.update(space.stats(f"{prefix}{partition}."))
        return out

    def _check(self, address: int, amount: int) -> None:
        check_count(amount, "size", self.name)
        if address == NO_ADDRESS:  # not located (line-buffer rows)
            return
        check_count(address, "address", self.name)
        if address + amount > self.size_words:
            raise HwsimError(f"{self.name}: access of {amount} words at word {address} runs past the end "
                             f"of the {self.size_words}-word buffer")

    def _book(self, is_read: bool, address: int, amount: int, now: int) -> int:
        located = max(address, 0)  # NO_ADDRESS (line buffers: rows are not located) is bank 0
        first_bank = located // self.bank_words
        last_bank = (located + amount - 1) // self.bank_words
        bank_free_at = self._bank_free_at
        banks_ready = max(now, bank_free_at[first_bank] if first_bank == last_bank
                          else max(bank_free_at[first_bank:last_bank + 1]))
        port, start_cycle = self._scheduler.pick_server(banks_ready, self._port_free_at)
        duration_cycles = self.transfer_cycles(amount)
        end_cycle = start_cycle + duration_cycles
        self._port_free_at[port] = end_cycle
        bank_free_at[first_bank:last_bank + 1] = [end_cycle] * (last_bank + 1 - first_bank)
        self.reserved_end_cycle = end_cycle
        self.bank_conflict_stall_cycles += banks_ready - now
        self.port_stall_cycles += start_cycle - banks_ready
        self.busy_port_cycles += duration_cycles
        return start_cycle
