"""What a trace holds, and the records that match a filter, streamed a chunk at a time
(`hwsim.trace.Trace.column_blocks`) so that memory stays bounded whatever the trace's size.

Each chunk is reduced with whole-array numpy on the few columns a total needs:
a chunk of one layer (most are: a level's records run layer after layer) by
plain sums, minima and maxima, others by `np.bincount` over the layer (words
summed exactly in int64 by `exact_bincount`). Nothing is joined across chunks.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from hwsim.errors import HwsimError
from hwsim.trace import RECORD_DTYPE, Trace
from hwsim.trace.reader import RecordColumns
from hwsim.trace.sinks import exact_bincount

NamedRow = tuple[Any, ...]  # start_cycle, end_cycle, op, operand, layer, step, address, words, unit (names spelled
# out)
CSV_SLICE_RECORDS = 1 << 14  # records turned into named rows at a time
EXACT_SUM_RECORDS = 1 << 22  # values `exact_bincount` sums exactly in one call
SMALL_VALUE = 1 << 31  # values below this in magnitude: EXACT_SUM_RECORDS of them sum below 2**53, exact in float64


def exact_sums(keys: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """Σ values per key in 0..size-1 as exact int64, over slices short enough for `exact_bincount`. A slice of
    small values (most: a record moves far fewer than 2**31 words) needs one float64 bincount, not two."""
    total = np.zeros(size, dtype=np.int64)
    for i in range(0, len(keys), EXACT_SUM_RECORDS):
        part_keys, part = keys[i:i + EXACT_SUM_RECORDS], values[i:i + EXACT_SUM_RECORDS]
        if int(part.min()) > -SMALL_VALUE and int(part.max()) < SMALL_VALUE:
            total += np.bincount(part_keys, weights=part, minlength=size).astype(np.int64)
        else:
            total += exact_bincount(part_keys, part, size)
    return total


# ----- summary ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LevelSummary:
    """One level: its records, the words they move and the cycles they span (None: no records)."""

    records: int
    words: int
    bytes: int  # the words at the word of each record's layer
    first_cycle: int | None
    last_cycle: int | None


@dataclass(frozen=True)
class LayerSummary:
    """One layer: the cycles its records span and, per level, its records and words."""

    name: str
    first_cycle: int | None
    last_cycle: int | None
    records: dict[str, int]
    words: dict[str, int]


@dataclass(frozen=True)
class TraceSummary:
    """The trace's attributes, per-level totals and per-layer totals."""

    file: str
    network: Any
    hardware: Any
    mapper: Any
    batch: Any
    clock_hz: Any
    word_bytes: int
    first_cycle: int | None
    last_cycle: int | None
    levels: dict[str, LevelSummary]
    layers: tuple[LayerSummary, ...]
    imported: dict[str, Any]  # the network's MACs and the layers passed through at zero cost (the import's record)


class _LevelTotals:
    """Running totals of one level, per layer: words, records, first and last cycle."""

    def __init__(self, layers: int) -> None:
        self.records = 0
        self.words = np.zeros(layers, dtype=np.int64)
        self.counts = np.zeros(layers, dtype=np.int64)
        self.first_cycle = np.full(layers, np.iinfo(np.int64).max, dtype=np.int64)
        self.last_cycle = np.full(layers, -1, dtype=np.int64)

    def add(self, block: RecordColumns) -> None:
        """Count a block of records: by plain reductions when it holds one layer, else by bincounts over layers."""
        layer, words = block["layer"], block["words"]
        start_cycle, end_cycle = block["start_cycle"], block["end_cycle"]
        self.records += len(block)
        low, high = int(layer.min()), int(layer.max())
        if low == high:
            self.counts[low] += len(block)
            self.words[low] += words.sum()
            self.first_cycle[low] = min(self.first_cycle[low], start_cycle.min())
            self.last_cycle[low] = max(self.last_cycle[low], end_cycle.max())
            return
        self.counts += np.bincount(layer, minlength=len(self.counts))
        self.words += exact_sums(layer, words, len(self.words))
        np.minimum.at(self.first_cycle, layer, start_cycle)  # a few layers per block: no scatter of note
        np.maximum.at(self.last_cycle, layer, end_cycle)

    def summary(self, word_bytes: np.ndarray) -> LevelSummary:
        """The level's totals, bytes at each layer's word (`word_bytes` per layer)."""
        seen = self.counts > 0
        return LevelSummary(self.records, int(self.words.sum()), int((self.words * word_bytes).sum()),
                            int(self.first_cycle[seen].min()) if seen.any() else None,
                            int(self.last_cycle.max()) if seen.any() else None)


def _layer_summary(name: str, i: int, totals: Mapping[str, _LevelTotals]) -> LayerSummary:
    first = min((int(t.first_cycle[i]) for t in totals.values() if t.counts[i]), default=None)
    last = max((int(t.last_cycle[i]) for t in totals.values() if t.counts[i]), default=None)
    return LayerSummary(name, first, last, {level: int(t.counts[i]) for level, t in totals.items()},
                        {level: int(t.words[i]) for level, t in totals.items()})


def summarize_trace(trace: Trace) -> TraceSummary:
    """Attributes, per-level totals and per-layer totals of an open trace, streamed."""
    totals = {}
    for level in trace.levels:
        t = _LevelTotals(len(trace.layers))
        for block in trace.column_blocks(level):
            t.add(block)
        totals[level] = t
    levels = {level: t.summary(trace.layer_word_bytes) for level, t in totals.items()}
    firsts = [v.first_cycle for v in levels.values() if v.first_cycle is not None]
    lasts = [v.last_cycle for v in levels.values() if v.last_cycle is not None]
    a = trace.attrs
    return TraceSummary(trace.path, a.get("network"), a.get("hardware"), a.get("mapper"), a.get("batch"),
                        a.get("clock_hz"), int(a.get("word_bits", 8)) // 8, min(firsts, default=None),
                        max(lasts, default=None), levels,
                        tuple(_layer_summary(name, i, totals) for i, name in enumerate(trace.layers)),
                        json.loads(str(a.get("import_json", "{}"))))


# ----- query -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OpOperandTotal:
    """Matching records of one op and operand."""

    op: str
    operand: str
    records: int
    words: int


@dataclass(frozen=True)
class TraceQuery:
    """What the records of `level` matching the filter add up to, and the first `limit` of them."""

    level: str
    records: int
    words: int
    bytes: int | None  # None for the PE array's records, whose words are work, not data
    first_cycle: int | None
    last_cycle: int | None
    by_op_operand: tuple[OpOperandTotal, ...]
    first_records: tuple[NamedRow, ...]


class _QueryTotals:
    """Running totals of the matching records (words per layer, for bytes at each layer's word; records and words
    per op and operand code), and the first `limit` of them."""

    def __init__(self, limit: int, layers: int, ops: int, operands: int) -> None:
        self.limit = limit
        self.operands = operands
        self.records = 0
        self.layer_words = np.zeros(layers, dtype=np.int64)
        self.code_records = np.zeros(ops * operands, dtype=np.int64)  # code = op * operands + operand
        self.code_words = np.zeros(ops * operands, dtype=np.int64)
        self.first_cycle: int | None = None
        self.last_cycle: int | None = None
        self.shown: list[np.ndarray] = []
        self.held = 0  # records in `shown`

    def add(self, block: RecordColumns) -> None:
        """Count a block of matching records and keep its first ones while fewer than `limit` are held."""
        if not len(block):
            return
        words = block["words"]
        self.records += len(block)
        _add_per_key(self.layer_words, block["layer"], words)
        start, end = int(block["start_cycle"].min()), int(block["end_cycle"].max())
        self.first_cycle = start if self.first_cycle is None else min(self.first_cycle, start)
        self.last_cycle = end if self.last_cycle is None else max(self.last_cycle, end)
        code = block["op"] * np.uint8(self.operands) + block["operand"]  # < 256: the tables are checked at open
        counts = _add_per_key(self.code_words, code, words)
        if counts is None:
            self.code_records[code[0]] += len(block)
        else:
            self.code_records += counts
        if self.held < self.limit:
            self.shown.append(block.records(self.limit - self.held))
            self.held += len(self.shown[-1])

    def by_op_operand(self, ops: tuple[str, ...], operands: tuple[str, ...]) -> tuple[OpOperandTotal, ...]:
        """The totals of each op and operand that matched, in code order (op, then operand)."""
        return tuple(OpOperandTotal(ops[code // self.operands], operands[code % self.operands],
                                    int(self.code_records[code]), int(self.code_words[code]))
                     for code in np.flatnonzero(self.code_records).tolist())


def _add_per_key(totals: np.ndarray, keys: np.ndarray, values: np.ndarray) -> np.ndarray | None:
    """Add Σ values per key to `totals` exactly; the records per key too, returned, unless every key is the same
    (None then: the count is the block's length), which costs one sum instead of three bincounts."""
    low, high = int(keys.min()), int(keys.max())
    if low == high:
        totals[low] += values.sum()
        return None
    totals += exact_sums(keys, values, len(totals))
    return np.bincount(keys, minlength=len(totals))


def named_rows(trace: Trace, block: np.ndarray) -> list[NamedRow]:
    """Records with layer, op and operand spelled out."""
    layers, ops, operands, units = trace.layers, trace.ops, trace.operands, trace.unit_names
    return [(start, end, ops[op], operands[operand], layers[layer], step, address, words, units[unit])
            for start, end, op, operand, layer, step, address, words, unit in block.tolist()]


def query_trace(trace: Trace, level: str, layer: str | None = None, op: str | None = None,
                operand: str | None = None, cycles: tuple[int, int] | None = None, limit: int = 20,
                rows_sink: Callable[[list[NamedRow]], None] | None = None) -> TraceQuery:
    """Stream `level`'s records matching layer, op, operand and the cycle window [A, B) into totals,
    keeping the first `limit`; every match goes to `rows_sink` (in slices) when one is given."""
    if level not in trace.levels:
        raise HwsimError(f"{trace.path}: no level {level!r} in this trace; it has {', '.join(trace.levels)}")
    totals = _QueryTotals(max(0, limit), len(trace.layers), len(trace.ops), len(trace.operands))
    for block in trace.column_blocks(level, layer, operand, op, cycles):
        totals.add(block)
        if rows_sink is not None:  # in slices: a million Python rows would cost hundreds of MB
            matches = block.records()
            for i in range(0, len(matches), CSV_SLICE_RECORDS):
                rows_sink(named_rows(trace, matches[i:i + CSV_SLICE_RECORDS]))
    shown = np.concatenate(totals.shown) if totals.shown else np.empty(0, dtype=RECORD_DTYPE)
    words = int(totals.layer_words.sum())
    return TraceQuery(level, totals.records, words,
                      int((totals.layer_words * trace.layer_word_bytes).sum()) if level != "pe" else None,
                      totals.first_cycle, totals.last_cycle, totals.by_op_operand(trace.ops, trace.operands),
                      tuple(named_rows(trace, shown)))


__all__ = ["LayerSummary", "LevelSummary", "OpOperandTotal", "TraceQuery", "TraceSummary", "named_rows",
           "query_trace", "summarize_trace"]
