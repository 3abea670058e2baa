"""What a trace holds, and the records that match a filter, streamed block by block
(`hwsim.trace.Trace.records`) so that memory stays bounded whatever the trace's size."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hwsim.errors import HwsimError
from hwsim.trace import RECORD_DTYPE, Trace

NamedRow = tuple[Any, ...]  # start_cycle, end_cycle, op, operand, layer, step, address, words, unit (names spelled
# out)
CSV_SLICE_RECORDS = 1 << 14  # records turned into named rows at a time


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

    def add(self, block: np.ndarray) -> None:
        layer, n = block["layer"], len(self.words)
        self.records += len(block)
        self.words += np.bincount(layer, weights=block["words"], minlength=n).astype(np.int64)
        self.counts += np.bincount(layer, minlength=n)
        np.minimum.at(self.first_cycle, layer, block["start_cycle"])
        np.maximum.at(self.last_cycle, layer, block["end_cycle"])

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
        for block in trace.records(level):
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


@dataclass
class _QueryTotals:
    """Running totals of the matching records, and the first few of them."""

    limit: int
    records: int = 0
    words: int = 0
    bytes: int = 0  # the words at the word of each record's layer
    first_cycle: int | None = None
    last_cycle: int | None = None
    by_op_operand: dict[tuple[int, int], list[int]] = field(default_factory=dict)  # -> [records, words]
    shown: list[np.ndarray] = field(default_factory=list)

    def add(self, block: np.ndarray, word_bytes: np.ndarray) -> None:
        """Count `block`, its bytes at the word of each record's layer (`word_bytes` per layer)."""
        if not len(block):
            return
        self.records += len(block)
        self.words += int(block["words"].sum())
        self.bytes += int((block["words"] * word_bytes[block["layer"]]).sum())
        start, end = int(block["start_cycle"].min()), int(block["end_cycle"].max())
        self.first_cycle = start if self.first_cycle is None else min(self.first_cycle, start)
        self.last_cycle = end if self.last_cycle is None else max(self.last_cycle, end)
        keys, inverse = np.unique(block["op"].astype(np.int64) * 256 + block["operand"], return_inverse=True)
        words = np.bincount(inverse, weights=block["words"])
        counts = np.bincount(inverse)
        for key, n, w in zip(keys.tolist(), counts.tolist(), words.tolist()):
            entry = self.by_op_operand.setdefault(divmod(key, 256), [0, 0])
            entry[0] += n
            entry[1] += int(w)
        held = sum(len(b) for b in self.shown)
        if held < self.limit:
            self.shown.append(block[:self.limit - held].copy())


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
    totals = _QueryTotals(max(0, limit))
    for block in trace.records(level, layer, operand, op, cycles):
        totals.add(block, trace.layer_word_bytes)
        if rows_sink is not None:  # in slices: a million Python rows would cost hundreds of MB
            for i in range(0, len(block), CSV_SLICE_RECORDS):
                rows_sink(named_rows(trace, block[i:i + CSV_SLICE_RECORDS]))
    shown = np.concatenate(totals.shown) if totals.shown else np.empty(0, dtype=RECORD_DTYPE)
    return TraceQuery(level, totals.records, totals.words, totals.bytes if level != "pe" else None,
                      totals.first_cycle, totals.last_cycle,
                      tuple(OpOperandTotal(trace.ops[o], trace.operands[x], n, w)
                            for (o, x), (n, w) in sorted(totals.by_op_operand.items())),
                      tuple(named_rows(trace, shown)))


__all__ = ["LayerSummary", "LevelSummary", "OpOperandTotal", "TraceQuery", "TraceSummary", "named_rows",
           "query_trace", "summarize_trace"]
