"""What every DRAM model shares: a `Port` of bytes whose transactions are whole bursts, one record each.

A transaction of n bytes at byte address A covers the aligned bursts k = ⌊A/b⌋ … ⌊(A+n−1)/b⌋ (b = the
burst size). A partial first or last burst still costs a whole burst, as in real DRAM; its record counts
only the words asked for. Addresses and sizes are given in bytes (word-aligned); records hold word
addresses and word counts like every other component.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

import numpy as np
import simpy

from hwsim.errors import HwsimError
from hwsim.hardware import schema
from hwsim.sim.component import Port, Statistic
from hwsim.sim.timing import RECORD_DTYPE, check_count
from hwsim.vocab import DRAM_COMMAND_DTYPE

TEMPLATE_CACHE_ENTRIES = 4096

Cycles = Sequence[int] | np.ndarray  # per burst of a transaction (plain ints for a few bursts, else an array)
BurstRun = tuple[Cycles, Cycles, np.ndarray, int, int]
"""The bursts of one booked transaction, not yet records: their data start and end cycles less a cycle shift, the
(first word address, words) of each burst from its offset in the address period (a shared, read-only template),
the words to add to those addresses and the cycles to add to those cycles (a replayed booking's request cycle)."""


class DramModel(Port):
    """Off-chip DRAM: a port moving bytes in whole bursts of `burst_bytes`."""

    read_amount = Statistic("bytes", "bytes asked for by reads")
    written_amount = Statistic("bytes", "bytes asked for by writes")
    bursts = Statistic("count", "burst slots used (partial bursts count whole)")

    def __init__(self, env: simpy.Environment, cfg: schema.Dram, word_bytes: int, name: str = "dram",
                 clock_hz: float | None = None) -> None:
        """`clock_hz` is the core clock the simulation counts cycles of (a model whose timing is in its own
        clock converts; None: the model's own clock, or the config's cycles)."""
        super().__init__(env, name, word_bytes)
        self.cfg = cfg
        self.burst_bytes = cfg.burst_bytes
        self.period_bytes = 0  # transfers whose addresses differ by a multiple of this place alike (0: none do)
        self._templates: dict[tuple[int, int, int], np.ndarray] = {}
        self._booked: tuple[Cycles, Cycles, int] | None = None  # start and end cycles of the last booking's bursts,
        # less the cycles to add to them

    def _plainly_valid(self, address: int, amount: int, word_bytes: int) -> bool:
        """A transfer of at least one whole word at a word-aligned address, of words that fill bursts."""
        return (type(amount) is int and amount > 0 and type(address) is int and address >= 0
                and not (address % word_bytes or amount % word_bytes or self.burst_bytes % word_bytes))

    def _check(self, address: int, amount: int, word_bytes: int) -> None:
        check_count(address, "address", self.name)
        check_count(amount, "size", self.name)
        if self.burst_bytes % word_bytes:
            raise HwsimError(f"{self.name}.burst: {self.burst_bytes} B is not a whole number of "
                             f"{word_bytes}-byte words; use a multiple of {word_bytes} B")
        if address % word_bytes or amount % word_bytes:
            raise HwsimError(f"{self.name}: access of {amount} B at byte {address} is not aligned to "
                             f"{word_bytes}-byte words")

    def burst_range(self, address: int, amount: int) -> np.ndarray:
        """The indices of the bursts a transaction of `amount` bytes at byte `address` covers."""
        b = self.burst_bytes
        return np.arange(address // b, (address + amount - 1) // b + 1, dtype=np.int64)

    def burst_records(self, start_cycles: Cycles, end_cycles: Cycles, address: int, amount: int,
                      word_bytes: int) -> np.ndarray:
        """One record per burst of a transaction: the cycles its data takes and the words (of `word_bytes`) of the
        transaction it carries (a partial first or last burst carries fewer)."""
        template, shift = self._template(address, amount, word_bytes)
        out = np.empty((len(template), 4), dtype=np.int64)
        out[:, 0] = start_cycles
        out[:, 1] = end_cycles
        out[:, 2:] = template
        if shift:
            out[:, 2] += shift
        return out.view(RECORD_DTYPE).reshape(-1)

    def booked_bursts(self, start_cycle: int, address: int, amount: int, word_bytes: int) -> BurstRun:
        """The bursts of the transaction of `amount` bytes at byte `address` just booked (at least one byte;
        `book` returned `start_cycle`), left for a recorder to assemble into records with many others at once. A
        model that makes its own records (`_records`, like a plugin's) hands those on instead."""
        if self._booked is None or type(self)._records is not DramModel._records:
            records = self._records(start_cycle, address, amount, word_bytes)
            return (records["start_cycle"], records["end_cycle"],
                    np.stack((records["address"], records["words"]), axis=1), 0, 0)
        template, shift = self._template(address, amount, word_bytes)
        starts, ends, cycles = self._booked
        return starts, ends, template, shift, cycles

    def _records(self, start_cycle: int, address: int, amount: int, word_bytes: int) -> np.ndarray:
        assert self._booked is not None
        starts, ends, cycles = self._booked
        return self.burst_records(np.add(starts, cycles), np.add(ends, cycles), address, amount, word_bytes)

    def _template(self, address: int, amount: int, word_bytes: int) -> tuple[np.ndarray, int]:
        """(first word address, words) of each burst of a transaction, cached by its offset into the address
        period, and the words its addresses lie beyond that offset's."""
        period = self.period_bytes
        offset = address % period if period else address
        key = (offset, amount, word_bytes)
        template = self._templates.get(key)
        if template is None:
            if len(self._templates) >= TEMPLATE_CACHE_ENTRIES:
                self._templates.clear()
            template = self._templates[key] = self._words_template(offset, amount, word_bytes)
        return template, (address - offset) // word_bytes

    def _words_template(self, address: int, amount: int, wb: int) -> np.ndarray:
        """(first word address, words) of each burst of a transaction of words `wb` bytes wide."""
        bursts, b = self.burst_range(address, amount), self.burst_bytes
        lo = np.maximum(bursts * b, address)
        hi = np.minimum((bursts + 1) * b, address + amount)
        template = np.stack((lo // wb, (hi - lo) // wb), axis=1)
        template.flags.writeable = False
        return template

    def record_commands(self, on: bool) -> None:
        """Keep the JEDEC commands issued from now on for `take_commands` (a model without commands has none)."""
        return None

    def take_commands(self) -> np.ndarray:
        """The commands issued since the last call (`DRAM_COMMAND_DTYPE`, by cycle)."""
        return np.empty(0, dtype=DRAM_COMMAND_DTYPE)

    @abstractmethod
    def stall_cycles(self) -> int:
        """Cycles transactions have waited so far beyond an unloaded access (the machine's DRAM stall)."""


__all__ = ["BurstRun", "DramModel"]
