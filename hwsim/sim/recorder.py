"""Collecting a layer's access records per trace level and handing them to the trace sink in numpy blocks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from hwsim.trace.schema import RECORD_DTYPE
from hwsim.vocab import TRACE_LEVELS

COLUMNS = ("start_cycle", "end_cycle", "op", "operand", "layer", "step", "address", "words", "unit")
SMALL_BLOCK = 4  # component blocks up to this many records are kept as Python tuples
FLUSH_RECORDS = 1 << 18  # records held before they are handed to the sink (some 200 B each while held)


@dataclass
class Recorder:
    """Collects records per level for one layer; `flush` hands them to the sink as numpy blocks.

    Single-record transactions (most of them) are kept flattened in int lists and multi-burst ones as int64
    [n, 9] arrays, so building a layer's records costs one conversion, not one per transaction.
    Every FLUSH_RECORDS records they go to the sink, sorted by start cycle within the slab, so
    memory stays bounded on layers with tens of millions of records.
    """

    levels: frozenset[str]
    sink: Callable[[str, np.ndarray], None]  # a trace sink's `append`
    layer: int = 0
    per_transaction: frozenset[str] = frozenset()  # levels recorded once per transaction, not per burst
    rows: dict[str, list[int]] = field(default_factory=dict)  # per level, records flattened (9 ints each)
    arrays: dict[str, list[np.ndarray]] = field(default_factory=dict)
    held: int = 0  # records (tuples + array rows) waiting for the next flush

    def wants(self, level: str) -> bool:
        return level in self.levels

    def block(self, level: str, comp: np.ndarray, op: int, operand: int, step: int, unit: int) -> None:
        """Component records (start, end, address, words) of unit `unit` as trace records of one step."""
        layer = self.layer
        if len(comp) > 1 and level in self.per_transaction:
            self.row(level, int(comp["start_cycle"].min()), int(comp["end_cycle"].max()), op, operand, step,
                     int(comp["address"][0]), int(comp["words"].sum()), unit)
            return
        self._count(len(comp))
        if len(comp) <= SMALL_BLOCK:
            rows = self.rows.setdefault(level, [])
            for start, end, address, words in comp.tolist():
                rows.extend((start, end, op, operand, layer, step, address, words, unit))
            return
        out = np.empty((len(comp), len(COLUMNS)), dtype=np.int64)
        out[:, 0] = comp["start_cycle"]
        out[:, 1] = comp["end_cycle"]
        out[:, 2:6] = (op, operand, layer, step)
        out[:, 6] = comp["address"]
        out[:, 7] = comp["words"]
        out[:, 8] = unit
        self.arrays.setdefault(level, []).append(out)

    def row(self, level: str, start: int, end: int, op: int, operand: int, step: int, address: int,
            words: int, unit: int) -> None:
        rows = self.rows.get(level)
        if rows is None:
            rows = self.rows[level] = []
        rows.extend((start, end, op, operand, self.layer, step, address, words, unit))
        self.held += 1
        if self.held >= FLUSH_RECORDS:
            self.flush()

    def _count(self, records: int) -> None:
        self.held += records
        if self.held >= FLUSH_RECORDS:
            self.flush()

    def flush(self) -> None:
        """Hand each level's held records, in start-cycle order, to the sink as one block."""
        self.held = 0
        for level in TRACE_LEVELS:
            parts = self.arrays.pop(level, [])
            rows = self.rows.pop(level, [])
            if rows:
                parts.append(np.array(rows, dtype=np.int64).reshape(-1, len(COLUMNS)))
            if not parts:
                continue
            table = np.concatenate(parts) if len(parts) > 1 else parts[0]
            start = table[:, 0]
            if (start[1:] < start[:-1]).any():  # already in order (often): a stable sort would not move a row
                table = table[np.argsort(start, kind="stable")]
            block = np.empty(len(table), dtype=RECORD_DTYPE)
            for j, name in enumerate(COLUMNS):
                block[name] = table[:, j]
            self.sink(level, block)
