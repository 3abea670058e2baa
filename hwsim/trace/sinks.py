"""Where a simulation's records go: the `TraceSink` protocol and the sinks besides the HDF5 writer.

The simulator hands a sink numpy blocks as it runs: access records per level (`RECORD_DTYPE`), buffer
occupancy events (`OCCUPANCY_DTYPE`), the schedule's groups (`GROUP_DTYPE`) and, from a DRAM model that issues
JEDEC commands while the dram level is recorded, its commands (`DRAM_COMMAND_DTYPE`). `hwsim.trace.TraceWriter`
keeps them all in an HDF5 file; `CountingSink` keeps totals only (words per layer, level, unit, op and operand,
each layer's span and passes, each buffer's peak), in memory bounded by the layers and units, not the records;
`NullSink` keeps nothing (a run timed for its cycles alone); `Tee` hands every block to several sinks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from hwsim.trace.schema import OPERANDS, OPS
from hwsim.vocab import DRAM_COMMAND_NAMES, OTHER, Op

_CODES = len(OPS) * len(OPERANDS)  # (op, operand) pairs
_EXACT_FLOAT = 1 << 53  # float64 holds every integer up to here


def exact_bincount(keys: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """Σ values per key as int64, exactly: `np.bincount` sums in float64, exact below 2⁵³, so the values are summed
    as their low and high 31-bit halves (a block of up to 2²² values keeps each half's sum exact), or at once when no
    sum can pass 2⁵³ (non-negative values whose largest times their count stays below it)."""
    if len(values) and values.min() >= 0 and int(values.max()) <= _EXACT_FLOAT // len(values):
        return np.bincount(keys, weights=values, minlength=size).astype(np.int64)  # every partial sum exact
    low = np.bincount(keys, weights=values & 0x7FFF_FFFF, minlength=size)
    high = np.bincount(keys, weights=values >> 31, minlength=size)
    return (high.astype(np.int64) << 31) + low.astype(np.int64)


class TraceSink(Protocol):
    """What the simulator writes to: records of a level, occupancy events and group rows, as numpy blocks."""

    def append(self, level: str, block: np.ndarray) -> None:
        """A block of `RECORD_DTYPE` records of `level`."""

    def append_occupancy(self, block: np.ndarray) -> None:
        """A block of `OCCUPANCY_DTYPE` events."""

    def append_groups(self, block: np.ndarray) -> None:
        """A block of `GROUP_DTYPE` rows."""

    def append_dram_commands(self, block: np.ndarray) -> None:
        """A block of `DRAM_COMMAND_DTYPE` commands."""


class NullSink:
    """Keeps nothing."""

    def append(self, level: str, block: np.ndarray) -> None:
        return None

    def append_occupancy(self, block: np.ndarray) -> None:
        return None

    def append_groups(self, block: np.ndarray) -> None:
        return None

    def append_dram_commands(self, block: np.ndarray) -> None:
        return None


class Tee:
    """Hands every block to each of `sinks`, in order."""

    def __init__(self, *sinks: TraceSink) -> None:
        self.sinks = sinks

    def append(self, level: str, block: np.ndarray) -> None:
        for sink in self.sinks:
            sink.append(level, block)

    def append_occupancy(self, block: np.ndarray) -> None:
        for sink in self.sinks:
            sink.append_occupancy(block)

    def append_groups(self, block: np.ndarray) -> None:
        for sink in self.sinks:
            sink.append_groups(block)

    def append_dram_commands(self, block: np.ndarray) -> None:
        for sink in self.sinks:
            sink.append_dram_commands(block)


class CountingSink:
    """Totals kept while a simulation runs, for `layers` layers and `units` units:

    - `words(level, layer)`: words per [unit, op, operand] (an int64 array; records' `words` summed);
    - `records(level, layer)`: records per [unit, op, operand];
    - `span(layer)`: its first record's start and last record's end (−1, −1: none);
    - `passes(layer)`, `pass_cycles(layer)`: its passes (pe records of op update, operand other) and their cycles;
    - `peak_bytes()`: the most bytes each buffer held, `used_buffers()` the ones that held any; `groups(layer)`:
      its schedule groups;
    - `dram_commands()`: the DRAM commands issued, per command (`DRAM_COMMAND_NAMES` order).
    """

    def __init__(self, layers: int, units: int, buffers: int) -> None:
        self.units = units
        self._words: dict[tuple[str, int], np.ndarray] = {}
        self._records: dict[tuple[str, int], np.ndarray] = {}
        self._first = np.full(layers, np.iinfo(np.int64).max, dtype=np.int64)
        self._last = np.full(layers, -1, dtype=np.int64)
        self._passes = np.zeros(layers, dtype=np.int64)
        self._pass_cycles = np.zeros(layers, dtype=np.int64)
        self._peaks = np.zeros(buffers, dtype=np.int64)
        self._used = np.zeros(buffers, dtype=bool)
        self._groups = np.zeros(layers, dtype=np.int64)
        self._commands = np.zeros(len(DRAM_COMMAND_NAMES), dtype=np.int64)

    def append(self, level: str, block: np.ndarray) -> None:
        if not len(block):
            return
        layer = block["layer"]
        code = (block["unit"].astype(np.int64) * len(OPS) + block["op"]) * len(OPERANDS) + block["operand"]
        first = int(layer[0])
        if (layer == first).all():  # a recorder's block (one work's): no per-layer scatter
            self._count(level, first, block, code)
            return
        for one in np.unique(layer).tolist():
            self._count(level, one, block[layer == one], code[layer == one])

    def _count(self, level: str, layer: int, block: np.ndarray, code: np.ndarray) -> None:
        """Add the totals of `block`, records of `layer` alone with their [unit, op, operand] codes `code`."""
        self._first[layer] = min(int(self._first[layer]), int(block["start_cycle"].min()))
        self._last[layer] = max(int(self._last[layer]), int(block["end_cycle"].max()))
        size, key = self.units * _CODES, (level, layer)
        words = exact_bincount(code, block["words"], size)
        records = np.bincount(code, minlength=size).astype(np.int64)
        self._words[key] = self._words.get(key, 0) + words
        self._records[key] = self._records.get(key, 0) + records
        if level == "pe":
            passes = (block["op"] == Op.UPDATE) & (block["operand"] == OTHER)
            self._passes[layer] += int(np.count_nonzero(passes))
            self._pass_cycles[layer] += int((block["end_cycle"] - block["start_cycle"])[passes].sum())

    def append_occupancy(self, block: np.ndarray) -> None:
        if len(block):
            np.maximum.at(self._peaks, block["buffer"], block["bytes"])
            self._used[block["buffer"]] = True

    def append_groups(self, block: np.ndarray) -> None:
        if len(block):
            np.add.at(self._groups, block["layer"], 1)

    def append_dram_commands(self, block: np.ndarray) -> None:
        self._commands += np.bincount(block["command"], minlength=len(DRAM_COMMAND_NAMES))[:len(self._commands)]

    def dram_commands(self) -> dict[str, int]:
        return dict(zip(DRAM_COMMAND_NAMES, self._commands.tolist()))

    def words(self, level: str, layer: int) -> np.ndarray:
        """Words of `level` in `layer`, per [unit, op, operand]."""
        return self._table(self._words, level, layer)

    def records(self, level: str, layer: int) -> np.ndarray:
        """Records of `level` in `layer`, per [unit, op, operand]."""
        return self._table(self._records, level, layer)

    def _table(self, tables: dict[tuple[str, int], np.ndarray], level: str, layer: int) -> np.ndarray:
        found = tables.get((level, layer))
        flat = found if found is not None else np.zeros(self.units * _CODES, dtype=np.int64)
        return flat.reshape(self.units, len(OPS), len(OPERANDS))

    def span(self, layer: int) -> tuple[int, int]:
        if self._last[layer] < 0:
            return -1, -1
        return int(self._first[layer]), int(self._last[layer])

    def passes(self, layer: int) -> int:
        return int(self._passes[layer])

    def pass_cycles(self, layer: int) -> int:
        return int(self._pass_cycles[layer])

    def groups(self, layer: int) -> int:
        return int(self._groups[layer])

    def peak_bytes(self) -> Sequence[int]:
        """The most bytes each buffer held, by buffer id."""
        return self._peaks.tolist()

    def used_buffers(self) -> Sequence[int]:
        """The ids of the buffers that had an occupancy event (the ones the schedule used)."""
        return np.flatnonzero(self._used).tolist()


__all__ = ["CountingSink", "NullSink", "Tee", "TraceSink"]
