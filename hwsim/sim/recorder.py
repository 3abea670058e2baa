"""Collecting a layer's access records per trace level and handing them to the trace sink in numpy blocks."""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import itemgetter

import numpy as np

from hwsim.rows import joined, taken
from hwsim.sim.dram.base import BurstRun, Cycles
from hwsim.trace.schema import RECORD_DTYPE
from hwsim.vocab import OTHER, TRACE_LEVELS, Op, Operand, StepField

COLUMNS = ("start_cycle", "end_cycle", "op", "operand", "step", "address", "words", "unit")  # of a held row (the
# layer is the recorder's)
F = StepField
# A pass's further records at level `pe` (its first is the MACs: other, update, one per pass even without MACs):
# (step field, op, operand, address = active PEs?) — non-MAC ops (other, write), the MACs' RF reads per operand,
# psum RF writes, words handed PE to PE per operand; each where its count is not zero.
PE_RECORDS = ((F.OPS, Op.WRITE, OTHER, True),
              (F.RF_FILTER_READS, Op.READ, Operand.FILTER, False),
              (F.RF_IFMAP_READS, Op.READ, Operand.IFMAP, False),
              (F.RF_PSUM_READS, Op.READ, Operand.PSUM, False),
              (F.RF_PSUM_WRITES, Op.UPDATE, Operand.PSUM, False),
              (F.INTER_PE_WORDS, Op.FILL, Operand.PSUM, False),
              (F.INTER_PE_IFMAP_WORDS, Op.FILL, Operand.IFMAP, False),
              (F.INTER_PE_FILTER_WORDS, Op.FILL, Operand.FILTER, False))
PASS_FIELDS = (F.ACTIVE_PES, F.MACS, *(r[0] for r in PE_RECORDS))  # a COMPUTE step's fields a held pass keeps
PASS_COLUMNS = 6 + len(PASS_FIELDS)  # a held pass: start, end, step, unit, MACs spared, spared psums counted (0/1),
# then PASS_FIELDS
_pass_fields = itemgetter(*PASS_FIELDS)  # a COMPUTE step's PASS_FIELDS as a tuple
MOST_PASS_RECORDS = 4 + len(PE_RECORDS)  # the pass, its PE_RECORDS, and three skips
FLUSH_RECORDS = 1 << 18  # records held before they are handed to the sink (some 200 B each while held)


@dataclass
class Recorder:
    """Collects records per level for one layer; `flush` hands them to the sink as numpy blocks.

    Single-record transactions (most of them) are kept flattened in int lists, one per level (`rows`: the runner
    extends them itself, 8 ints a record in COLUMNS order), and a DRAM transaction's bursts as it was booked (its
    cycles, its address template and a few ints: `BurstRun`), and a PE-array pass as one row of the COMPUTE's
    counts (`pe_pass`: up to 12 records), so building a layer's records costs a few numpy calls per slab, not one
    per transaction. Once FLUSH_RECORDS records are held (`bursts` looks at each
    transaction, `check` once per group) they go to the sink, sorted by start cycle within the slab, so memory
    stays bounded on layers with tens of millions of records. A level's records come from rows or from burst
    runs, never both (DRAM is recorded per burst or per transaction).
    """

    levels: frozenset[str]
    sink: Callable[[str, np.ndarray], None]  # a trace sink's `append`
    layer: int = 0
    per_transaction: frozenset[str] = frozenset()  # levels recorded once per transaction, not per burst
    rows: dict[str, list[int]] = field(default_factory=dict)  # per recorded level, its records flattened (kept
    # lists: `flush` empties them in place)
    runs: dict[str, list[_Run]] = field(default_factory=dict)  # per level: its burst runs, as booked
    passes: list[int] = field(default_factory=list)  # PE-array passes (level pe), PASS_COLUMNS ints each
    held: int = 0  # bursts waiting for the next flush
    blocks: dict[str, list[np.ndarray]] = field(default_factory=dict)  # per level: records made as blocks (replayed
    # groups: `add_blocks`), with the rows and passes held before them made records too, in order
    blocked: int = 0  # the records in `blocks`, as `check` counts them (a pass as its most records)
    deferred: int = 0  # records not made yet, held by `before_flush`'s owner (replayed groups), counted likewise
    before_flush: Callable[[], None] | None = None  # makes the deferred records (`add_blocks`) before a flush
    flushes: int = 0  # how many times `flush` has run

    def __post_init__(self) -> None:
        self.rows = {level: [] for level in TRACE_LEVELS if level in self.levels}

    def wants(self, level: str) -> bool:
        return level in self.levels

    def bursts(self, level: str, run: BurstRun, op: int, operand: int, step: int, unit: int) -> None:
        """A booked DRAM transaction's bursts (`DramModel.booked_bursts`), one record each, as records of one step
        at unit `unit`."""
        bursts = len(run[2])
        runs = self.runs.get(level)
        if runs is None:
            runs = self.runs[level] = []
        runs.append((*run, op, operand, step, unit))
        self.held += bursts
        if self.held >= FLUSH_RECORDS:
            self.flush()

    def row(self, level: str, start: int, end: int, op: int, operand: int, step: int, address: int,
            words: int, unit: int) -> None:
        """One record of `level` (the runner extends `rows` itself where it is hot)."""
        self.rows[level].extend((start, end, op, operand, step, address, words, unit))

    def pe_pass(self, start: int, end: int, step: int, unit: int, spared: int, spared_psums: bool,
                compute: tuple[int, ...]) -> None:
        """A pass of the COMPUTE step `compute` (a step tuple) at unit `unit`: its records at level pe are made
        with the others of its slab (`_pass_records`), not one by one."""
        self.passes.extend((start, end, step, unit, spared, spared_psums, *_pass_fields(compute)))

    def check(self) -> None:
        """Flush if FLUSH_RECORDS records are held (called once per group's stores: rows are not counted one by
        one, a pass as its most records; a group's loads that run ahead hold at most what the buffers they fill
        can hold)."""
        if self.held + self.blocked + self.deferred + self.held_rows() >= FLUSH_RECORDS:
            self.flush()

    def held_rows(self) -> int:
        """The records held as rows and passes, as `check` counts them (a pass as its most records)."""
        return sum(map(len, self.rows.values())) // len(COLUMNS) + len(self.passes) // PASS_COLUMNS * \
            MOST_PASS_RECORDS

    def add_blocks(self, made: dict[str, np.ndarray], passes: np.ndarray | None, counted: int) -> None:
        """Records made as blocks (rows-level records per level, PE-array passes as PASS_COLUMNS columns), after
        those held so far; `counted` of them as `check` counts them."""
        for level, block in made.items():
            self._rows_to_block(level).append(block)
        if passes is not None and len(passes):
            self._rows_to_block("pe").append(_pass_records(passes, self.layer))
        self.blocked += counted

    def _rows_to_block(self, level: str) -> list[np.ndarray]:
        """`level`'s blocks, the rows (or passes) held so far made a block at their end: what comes next follows
        them."""
        blocks = self.blocks.setdefault(level, [])
        rows = self.rows.get(level)
        if rows:
            blocks.append(_from_rows(rows, self.layer))
            rows.clear()
        if level == "pe" and self.passes:
            blocks.append(_pass_records(self.passes, self.layer))
            self.passes.clear()
        return blocks

    def flush(self) -> None:
        """Hand each level's held records, in start-cycle order, to the sink as one block: burst runs, rows (after
        blocks made before them) and passes each in the order they came (a stable sort keeps that order among
        records starting at the same cycle; one channel's bursts, booked in order, need none)."""
        if self.before_flush is not None:
            self.before_flush()
        self.held = self.blocked = self.deferred = 0
        self.flushes += 1
        for level in TRACE_LEVELS:
            runs = self.runs.pop(level, [])
            parts = [_assembled(runs, self.layer)] if runs else []
            self._rows_to_block(level)
            parts += self.blocks.pop(level)
            if not parts:
                continue
            block = joined(parts)
            start = block["start_cycle"]
            if (start[1:] < start[:-1]).any():  # already in order (often): a stable sort would not move a row
                block = taken(block, np.argsort(start, kind="stable"))
            self.sink(level, block)


_Run = tuple[Cycles, Cycles, np.ndarray, int, int, int, int, int, int]  # a BurstRun, then op, operand, step, unit


def _from_rows(rows: list[int], layer: int) -> np.ndarray:
    """Flattened rows (8 ints each, in COLUMNS order) as records of `layer`."""
    return records_of(np.frombuffer(array("q", rows), dtype=np.int64).reshape(-1, len(COLUMNS)), layer)  # a third
    # faster than np.array


def records_of(table: np.ndarray, layer: int) -> np.ndarray:
    """Rows of a (records, len(COLUMNS)) int64 table as records of `layer`."""
    block = np.empty(len(table), dtype=RECORD_DTYPE)
    for j, name in enumerate(COLUMNS):
        block[name] = table[:, j]
    block["layer"] = layer
    return block


def _assembled(runs: list[_Run], layer: int) -> np.ndarray:
    """Burst runs as records (one per burst), in the order given, written column by column."""
    bursts = np.fromiter((len(run[2]) for run in runs), dtype=np.int64, count=len(runs))
    scalars = np.array([run[3:] for run in runs], dtype=np.int64)  # word shift, cycle shift, op, operand, step,
    # unit per run
    template = np.concatenate([run[2] for run in runs])
    out = np.empty(len(template), dtype=RECORD_DTYPE)
    cycles = np.repeat(scalars[:, 1], bursts)
    np.add(np.concatenate([run[0] for run in runs]), cycles, out=out["start_cycle"])
    np.add(np.concatenate([run[1] for run in runs]), cycles, out=out["end_cycle"])
    out["op"] = np.repeat(scalars[:, 2], bursts)
    out["operand"] = np.repeat(scalars[:, 3], bursts)
    out["layer"] = layer
    out["step"] = np.repeat(scalars[:, 4], bursts)
    out["address"] = template[:, 0] + np.repeat(scalars[:, 0], bursts)
    out["words"] = template[:, 1]
    out["unit"] = np.repeat(scalars[:, 5], bursts)
    return out


_SLOT_OP = np.array([Op.UPDATE, *(r[1] for r in PE_RECORDS), Op.SKIP, Op.SKIP, Op.SKIP], dtype=np.uint8)
_SLOT_OPERAND = np.array([OTHER, *(r[2] for r in PE_RECORDS), OTHER, Operand.FILTER, Operand.PSUM], dtype=np.uint8)
_SLOT_ADDRESSED = np.array([True, *(r[3] for r in PE_RECORDS), False, False, False])  # address = active PEs


def _pass_records(passes: list[int] | np.ndarray, layer: int) -> np.ndarray:
    """Held passes (PASS_COLUMNS ints each) as their records of `layer` at level pe, pass by pass, each pass's in
    slot order: the pass (other, update: its MACs, address its active PEs), its PE_RECORDS whose count is not
    zero, and where zeros spared MACs (skip): the spared MACs (other), their filter RF reads (filter) and, where
    the array counts spared psums, the psum RF reads and writes they spared (psum)."""
    table = passes if isinstance(passes, np.ndarray) else \
        np.frombuffer(array("q", passes), dtype=np.int64).reshape(-1, PASS_COLUMNS)
    start, end, step, unit, spared, spared_psums = table[:, :6].T
    active, macs, counts = table[:, 6], table[:, 7], table[:, 8:]
    rf_filter, rf_psum = counts[:, 1], counts[:, 3]
    words = np.column_stack([macs, counts, spared, np.minimum(spared, rf_filter),
                             np.minimum(spared, rf_psum) + np.minimum(spared, np.maximum(0, counts[:, 4]))])
    made = np.column_stack([np.ones(len(table), dtype=bool), counts != 0, spared != 0, spared != 0,
                            (spared != 0) & (spared_psums != 0)])
    which, slot = np.nonzero(made)  # row-major: pass by pass, slot order within a pass
    out = np.empty(len(which), dtype=RECORD_DTYPE)
    out["start_cycle"], out["end_cycle"] = start[which], end[which]
    out["op"], out["operand"] = _SLOT_OP[slot], _SLOT_OPERAND[slot]
    out["layer"], out["step"] = layer, step[which]
    out["address"] = np.where(_SLOT_ADDRESSED[slot], active[which], -1)
    out["words"], out["unit"] = words[which, slot], unit[which]
    return out
