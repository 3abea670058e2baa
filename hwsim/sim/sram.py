"""On-chip SRAM (the GLB, the L2, or a line buffer): shared ports, banks with contiguous address
ranges, and buffer space that a tile must be allocated in before it is fetched.

Timing of one transfer of W words at word address A:

- It touches banks ⌊A/bank_words⌋ … ⌊(A+W−1)/bank_words⌋, where
  bank_words = size_bytes / banks / word_bytes (NO_ADDRESS: bank 0).
- It needs one port for D = ⌈W / words_per_cycle⌉ + latency_cycles
  cycles and sweeps the banks it touches in address order: bank b is held
  from the cycle its first word passes, S + ⌊(first word of b − A) /
  words_per_cycle⌋, to the cycle its last word has, S + latency_cycles +
  ⌈(end word of b − A) / words_per_cycle⌉. So a second transfer over the
  same banks (a pass's psums written back behind their reads) follows the
  first bank by bank on another port instead of waiting for its end. With
  one port every bank is free by the time the port is; such an SRAM holds
  all of a transfer's banks to its end, which times alike.
  GLB: words_per_cycle = words_per_port, latency 0, `ports` ports.
  L2: one port, words_per_cycle = bandwidth_bytes_per_cycle / word_bytes
  (an exact fraction), latency = latency_cycles.
  Line buffer: one bank, one port, words_per_port, latency 0.
- Every bank and port keeps the cycle it is next free. A transfer requested
  at cycle r is booked at once: with banks_ready = max(r, latest over its
  banks of the cycle the bank is free less its entry offset), the
  scheduler (`scheduler: fcfs`, see `hwsim.sim.policy`) picks its port and
  start S; its port is then free at S + D, each bank when it has left it.
  First come, first served starts it at S = max(banks_ready, earliest free
  port), on the port free latest by S.
- So two transfers on the same bank serialise, transfers on different banks
  run in parallel while ports are free, and beyond that they queue for a
  port. Stalls split the wait S − r, banks first: bank-conflict stall =
  banks_ready − r, port stall = S − banks_ready.

Space is accounted separately from addresses, in bytes (`hwsim.sim.space.Space`):
the GLB has a data partition (`data_bytes`, ifmaps and psums) and a filter
partition (`filter_bytes`); the L2 and line buffers have only data. A
transaction names the width of its words; the rates, bank sizes and word
addresses above are those of that width (a GLB port of 4 16-bit words moves 8
8-bit ones: `hwsim.hardware.precision`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from operator import sub

import numpy as np
import simpy

from hwsim.errors import HwsimError
from hwsim.hardware import schema
from hwsim.sim.component import Port, Stat, Statistic
from hwsim.sim.policy import scheduler
from hwsim.sim.space import Space
from hwsim.sim.timing import check_count, cycles_at_rate, exact_rate
from hwsim.vocab import NO_ADDRESS

PARTITIONS = ("data", "filter")
SWEEP_CACHE_ENTRIES = 4096  # bank sweeps kept per SRAM (see `Sram._sweep`)

SramConfig = schema.Glb | schema.L2 | schema.LineBuffer
ConfigAtWord = Callable[[int], SramConfig]  # the SRAM's config as a run at words of that many bytes sees it


def _port_timing(cfg: SramConfig, word_bytes: int, name: str) -> tuple[int, Fraction, int]:
    """(ports, words per cycle, latency cycles) of a GLB, L2 or line buffer."""
    if isinstance(cfg, schema.Glb):
        return cfg.ports, Fraction(cfg.words_per_port), 0
    if isinstance(cfg, schema.LineBuffer):
        return 1, Fraction(cfg.words_per_port), 0
    return 1, exact_rate(cfg.bandwidth_bytes_per_cycle, f"{name}.bandwidth") / word_bytes, cfg.latency_cycles


@dataclass(frozen=True)
class WordTiming:
    """How an SRAM moves and locates words of one width."""

    words_per_cycle: Fraction
    latency_cycles: int
    bank_words: int  # words of that width per bank
    size_words: int

    @property
    def rate(self) -> tuple[int, int]:
        """(numerator, denominator) of `words_per_cycle`, as plain integers for the booking path."""
        return self.words_per_cycle.numerator, self.words_per_cycle.denominator


class Sram(Port):
    """A banked, multi-port SRAM built from a `Glb`, `L2` or `LineBuffer` config; addresses and sizes in
    words of each transaction's width, space in bytes. `book`/`reserve_read`/`reserve_write`/`read`/`write` come
    from `Port`."""

    read_amount = Statistic("words", "words read")
    written_amount = Statistic("words", "words written")
    busy_port_cycles = Statistic("port-cycles", "cycles ports were held by transfers")
    bank_conflict_stall_cycles = Statistic("cycles", "cycles transfers waited for a bank in use")
    port_stall_cycles = Statistic("cycles", "cycles transfers waited for a free port")

    def __init__(self, env: simpy.Environment, cfg: SramConfig, word_bytes: int, name: str = "glb",
                 cfg_at_word: ConfigAtWord | None = None) -> None:
        """`cfg_at_word` gives the config at another word width (its words per port follow the precision rules);
        without it a transaction of another width sees `cfg` as it is."""
        super().__init__(env, name, word_bytes)
        self.cfg = cfg
        self._banks = 1 if isinstance(cfg, schema.LineBuffer) else cfg.banks
        self._cfg_at_word = cfg_at_word
        self._timings: dict[int, WordTiming] = {}
        self._rates: dict[int, tuple[WordTiming, int, int]] = {}  # per width: its timing and rate as integers
        self._sweeps: dict[tuple[int, int, int], tuple[list[int], list[int]]] = {}  # see `_sweep`
        ports = _port_timing(cfg, word_bytes, name)[0]
        default = self.timing(word_bytes)
        self.words_per_cycle, self.latency_cycles = default.words_per_cycle, default.latency_cycles
        self.bank_words, self.size_words = default.bank_words, default.size_words
        self._scheduler = scheduler(cfg.scheduler)
        self._one_lane = ports == self._banks == 1 and self._scheduler.name == "fcfs"  # its bank is free when its
        # port is: a transfer starts when both are (a line buffer's every transfer: `_book`)
        self._port_free_at = [0] * ports  # cycle each port is next free
        self._bank_free_at = [0] * self._banks  # cycle each bank is next free
        filter_bytes = cfg.filter_bytes if isinstance(cfg, schema.Glb) else 0
        self.spaces = {"data": Space(env, cfg.size_bytes - filter_bytes, f"{name} data partition"),
                       "filter": Space(env, filter_bytes, f"{name} filter partition")}

    def timing(self, word_bytes: int) -> WordTiming:
        """How this SRAM moves words of `word_bytes` (computed once per width)."""
        found = self._timings.get(word_bytes)
        if found is not None:
            return found
        cfg = self._cfg_at_word(word_bytes) if self._cfg_at_word is not None else self.cfg
        banks = self._banks
        if cfg.size_bytes % (banks * word_bytes):
            raise HwsimError(f"{self.name}.size: {cfg.size_bytes} B does not split into {banks} banks of whole "
                             f"{word_bytes}-byte words; make size a multiple of {banks * word_bytes} B")
        _, rate, latency = _port_timing(cfg, word_bytes, self.name)
        bank_words = cfg.size_bytes // banks // word_bytes
        timing = self._timings[word_bytes] = WordTiming(rate, latency, bank_words, bank_words * banks)
        return timing

    def transfer_cycles(self, words: int, word_bytes: int | None = None) -> int:
        """Cycles a transfer of `words` holds its port and banks: ⌈W / words_per_cycle⌉ + latency."""
        t = self.timing(self.word_bytes if word_bytes is None else word_bytes)
        return cycles_at_rate(words, t.words_per_cycle) + t.latency_cycles

    def partition(self, partition: str = "data") -> Space:
        """The partition's space in bytes (data: ifmaps and psums; filter: the GLB's filter partition)."""
        found = self.spaces.get(partition)
        if found is None:
            raise HwsimError(f"{self.name}: unknown partition {partition!r}; use one of {', '.join(PARTITIONS)}")
        return found

    def allocate(self, words: int, partition: str = "data") -> simpy.Event:
        """Process-style claim of `words` of the SRAM's own width: an event firing once they are claimed."""
        granted = self.partition(partition).claim(words * self.word_bytes)
        return granted if granted is not None else self.env.event().succeed()

    def free(self, words: int, partition: str = "data") -> simpy.Event:
        """Process-style release of `words` of the SRAM's own width (never waits)."""
        self.partition(partition).release(words * self.word_bytes)
        return self.env.event().succeed()

    def stats(self, prefix: str = "") -> dict[str, Stat]:
        """Transfer statistics and those of each partition, with units and descriptions."""
        out = super().stats(prefix)
        for partition, space in self.spaces.items():
            out.update(space.stats(f"{prefix}{partition}."))
        return out

    def relative_state(self, now: int) -> tuple[object, ...] | None:
        """What decides its bookings requested from cycle `now` on (`hwsim.sim.steady`): each bank's free cycle after
        `now` (0: free), each port's (a port free by `now` by its rank among those: which one a transfer takes);
        None unless first come first served (a request waits only for what is booked)."""
        if self._scheduler.name != "fcfs":
            return None
        ports = self._port_free_at
        past = sorted({free for free in ports if free <= now})
        return (tuple(free - now if free > now else past.index(free) - len(past) for free in ports),
                tuple(max(free - now, 0) for free in self._bank_free_at))

    def move_on(self, cycles: int) -> None:
        """Every free cycle `cycles` later (the clock jumps ahead: `hwsim.sim.steady`)."""
        self._port_free_at = [free + cycles for free in self._port_free_at]
        self._bank_free_at = [free + cycles for free in self._bank_free_at]
        self.reserved_end_cycle += cycles

    def _plainly_valid(self, address: int, amount: int, word_bytes: int) -> bool:
        """A transfer of at least one word, inside the buffer or not located (a line buffer's rows), at a width
        already booked."""
        rated = self._rates.get(word_bytes)
        return (rated is not None and type(amount) is int and amount > 0 and type(address) is int
                and ((address >= 0 and address + amount <= rated[0].size_words) or address == NO_ADDRESS))

    def located_within(self, address: np.ndarray, amount: np.ndarray, word_bytes: int) -> np.ndarray:
        """Per transfer, whether `_plainly_valid` would pass it once its width is booked: inside the buffer, or not
        located."""
        inside: np.ndarray = ((address >= 0) & (address + amount <= self.timing(word_bytes).size_words)) | \
            (address == NO_ADDRESS)
        return inside

    def _check(self, address: int, amount: int, word_bytes: int) -> None:
        if type(amount) is int and amount >= 0 and type(address) is int and address >= 0 and (
                address + amount <= (self._timings.get(word_bytes) or self.timing(word_bytes)).size_words):
            return  # the common case, decided without the messages below
        check_count(amount, "size", self.name)
        if address == NO_ADDRESS:  # not located (line-buffer rows)
            return
        check_count(address, "address", self.name)
        size_words = self.timing(word_bytes).size_words
        if address + amount > size_words:
            raise HwsimError(f"{self.name}: access of {amount} words at word {address} runs past the end "
                             f"of the {size_words}-word buffer")

    @staticmethod
    def _sweep_offsets(into_first: int, amount: int, bank: int, numerator: int, denominator: int,
                       latency_cycles: int) -> tuple[list[int], list[int]]:
        """Per bank a transfer touches, in address order: the cycle after its start its first word there passes
        (floor), and the cycle its last word there has passed (ceil, with the SRAM's latency). The transfer
        starts `into_first` words into its first bank; the rate is numerator / denominator words per cycle."""
        entry, leave = [], []
        for b in range((into_first + amount - 1) // bank + 1):
            into = max(0, b * bank - into_first)
            entry.append(into * denominator // numerator)
            leave.append(-(-min(amount, (b + 1) * bank - into_first) * denominator // numerator) + latency_cycles)
        return entry, leave

    def _sweep(self, into_first: int, amount: int, word_bytes: int, t: WordTiming, numerator: int,
               denominator: int) -> tuple[list[int], list[int]]:
        """`_sweep_offsets`, kept per (offset into the first bank, words, width): a layer's transfers repeat a few
        shapes, and a wide one sweeps hundreds of banks."""
        key = (into_first, amount, word_bytes)
        found = self._sweeps.get(key)
        if found is None:
            if len(self._sweeps) >= SWEEP_CACHE_ENTRIES:
                self._sweeps.clear()
            found = self._sweeps[key] = self._sweep_offsets(into_first, amount, t.bank_words, numerator,
                                                            denominator, t.latency_cycles)
        return found

    def _rate(self, word_bytes: int) -> tuple[WordTiming, int, int]:
        found = self._rates.get(word_bytes)
        if found is None:
            t = self.timing(word_bytes)
            found = self._rates[word_bytes] = (t, *t.rate)
        return found

    def _book(self, is_read: bool, address: int, amount: int, now: int, word_bytes: int) -> int:
        t, numerator, denominator = self._rates.get(word_bytes) or self._rate(word_bytes)
        if self._one_lane:  # what the general path below does with one port and one bank, free at the same cycle
            free = self._port_free_at[0]
            start_cycle = max(now, free)
            duration_cycles = -(-amount * denominator // numerator) + t.latency_cycles
            end_cycle = self._port_free_at[0] = self._bank_free_at[0] = start_cycle + duration_cycles
            self.reserved_end_cycle = end_cycle
            self.bank_conflict_stall_cycles += start_cycle - now  # the bank is what it waits for
            self.busy_port_cycles += duration_cycles
            return start_cycle
        located = max(address, 0)  # NO_ADDRESS (line buffers: rows are not located) is bank 0
        bank = t.bank_words
        first_bank = located // bank
        last_bank = (located + amount - 1) // bank
        bank_free_at = self._bank_free_at
        sweeps = first_bank != last_bank and len(self._port_free_at) > 1
        if sweeps:
            entry, leave = self._sweep(located - first_bank * bank, amount, word_bytes, t, numerator, denominator)
            banks_ready = max(now, *map(sub, bank_free_at[first_bank:last_bank + 1], entry))
        elif first_bank == last_bank:
            banks_ready = bank_free_at[first_bank]
            if banks_ready < now:
                banks_ready = now
        else:
            banks_ready = max(now, *bank_free_at[first_bank:last_bank + 1])
        port, start_cycle = self._scheduler.pick_server(banks_ready, self._port_free_at)
        duration_cycles = -(-amount * denominator // numerator) + t.latency_cycles  # ⌈W / words_per_cycle⌉ + latency
        end_cycle = start_cycle + duration_cycles
        self._port_free_at[port] = end_cycle
        if sweeps:
            bank_free_at[first_bank:last_bank + 1] = [start_cycle + left for left in leave]
        elif first_bank == last_bank:
            bank_free_at[first_bank] = end_cycle
        else:
            bank_free_at[first_bank:last_bank + 1] = [end_cycle] * (last_bank + 1 - first_bank)
        self.reserved_end_cycle = end_cycle
        self.bank_conflict_stall_cycles += banks_ready - now
        self.port_stall_cycles += start_cycle - banks_ready
        self.busy_port_cycles += duration_cycles
        return start_cycle
