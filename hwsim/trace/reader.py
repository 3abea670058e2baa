"""Reading a trace: open checks, name tables, and streaming queries that stay in bounded memory.

Queries read whole chunks (decoded by worker threads when the file uses the
shuffle + deflate pipeline the writer produces), filter them with numpy and
yield blocks of at most `chunk_records` records. A layer query reads only
the rows between that layer's first and last record, found in `index/<level>`.
`column_blocks` streams a chunk at a time as `RecordColumns`, whose fields
are decoded straight from the chunk's shuffled bytes when first used: the
way to reduce a large trace over a few fields at the speed of decompression.
"""

from __future__ import annotations

import itertools
import json
import math
import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Any, Self

import h5py
import numpy as np

from hwsim.errors import os_reason
from hwsim.rows import joined, taken
from hwsim.trace._codec import (
    CODEC_ERRORS,
    decode_chunk,
    decode_chunk_columns,
    field_from_planes,
    inflate_planes,
    is_shuffle_deflate,
    records_from_planes,
    worker_threads,
)
from hwsim.trace.schema import (
    DRAM_COMMAND_DTYPE,
    GROUP_DTYPE,
    MAX_RECORD_WORDS,
    OCCUPANCY_DTYPE,
    OPERANDS,
    OPS,
    RECORD_DTYPE,
    TRACE_VERSION,
    TraceError,
)
from hwsim.trace.seal import is_sealed_layout, seal_problem
from hwsim.vocab import DRAM_COMMAND_NAMES, TRACE_LEVELS, WORD_BITS, WORD_BITS_TEXT, ceil_div

Code = str | int  # a name from a trace's table, or its index
Window = tuple[int, int]  # cycles [start, end)
_CHUNK_CACHE_BYTES = 32 << 20  # HDF5's own chunk cache, used by files that are not shuffle + deflate
_LISTED_NAMES = 20  # names spelled out in an error message before "... (N in all)"
_CHUNKS_AHEAD = 2  # chunks per worker thread decoded ahead of a column scan's caller
_UNCHUNKED_BLOCK_RECORDS = 1 << 16  # rows per block of a column scan over a dataset stored without chunks


class RecordColumns:
    """Records of one chunk of a level (or those of them a filter kept), a field at a time.

    `block["words"]` is the field as one contiguous array, decoded the first
    time it is asked for and kept while the block lives: numpy's views of a
    field of packed records are strided, and sums, masks and bincounts over
    them run several times slower. `block.records()` gives the block as
    RECORD_DTYPE rows, `block.where(mask)` the rows a boolean mask keeps.
    Columns may be read-only views: copy before writing.
    """

    def __init__(self, length: int, planes: np.ndarray | None = None, records: np.ndarray | None = None,
                 parent: RecordColumns | None = None, mask: np.ndarray | None = None) -> None:
        self._length = length
        self._planes = planes  # byte k of every record in row k (the chunk's shuffled bytes), cut to the block
        self._records = records  # or packed records
        self._parent, self._mask = parent, mask  # or the rows `mask` keeps of `parent`
        self._columns: dict[str, np.ndarray] = {}

    @classmethod
    def of_planes(cls, planes: np.ndarray, lo: int, hi: int) -> RecordColumns:
        """Records lo..hi-1 of a chunk held as its byte planes (`hwsim.trace._codec.inflate_planes`)."""
        return cls(hi - lo, planes=planes[:, lo:hi])

    @classmethod
    def of_records(cls, records: np.ndarray) -> RecordColumns:
        """Packed RECORD_DTYPE rows."""
        return cls(len(records), records=records)

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, name: str) -> np.ndarray:
        column = self._columns.get(name)
        if column is None:
            column = self._columns[name] = self._decoded(name)
        return column

    def _decoded(self, name: str) -> np.ndarray:
        if self._parent is not None:
            return self._parent[name][self._mask]
        if self._planes is not None:
            return field_from_planes(self._planes, RECORD_DTYPE, name, 0, self._length)
        assert self._records is not None
        return np.ascontiguousarray(self._records[name])

    def where(self, mask: np.ndarray) -> RecordColumns:
        """The records `mask` (a boolean per record) keeps; their columns are cut from this block's."""
        if self._parent is not None:  # a filter of a filter: one mask over the unfiltered block
            assert self._mask is not None
            combined = self._mask.copy()
            combined[combined] = mask
            return self._parent.where(combined)
        return RecordColumns(int(np.count_nonzero(mask)), parent=self, mask=mask)

    def records(self, first: int | None = None) -> np.ndarray:
        """The block's records (only the first `first` when given) as RECORD_DTYPE rows, in a fresh array."""
        if self._parent is not None:
            assert self._mask is not None
            return self._parent._rows(self._mask if first is None else np.flatnonzero(self._mask)[:first])
        return self._rows(slice(None, first))

    def _rows(self, which: slice | np.ndarray) -> np.ndarray:
        """The rows `which` (a slice, a boolean mask or indices) picks of an unfiltered block, as packed records."""
        if self._planes is not None:
            return records_from_planes(self._planes, RECORD_DTYPE, which)
        assert self._records is not None
        return self._records[which].copy()


Block = np.ndarray | RecordColumns  # records as packed rows or as columns: both give a field by name
RowFilter = Callable[[Block], np.ndarray]  # the boolean mask of a block's records a query keeps


def open(path: str | os.PathLike[str], allow_incomplete: bool = False) -> Trace:  # hwsim.trace.open, by design
    """Open a complete trace written by `TraceWriter` (an interrupted one only with `allow_incomplete`)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise TraceError(f"trace {path} does not exist; check the path or run the simulation that writes it")
    if path.endswith(".partial") and not allow_incomplete:
        raise TraceError(f"{path} is the temporary file of a trace that was never completed: the run was "
                         f"interrupted; re-run the simulation")
    try:
        problem = seal_problem(path) if is_sealed_layout(path) and not allow_incomplete else ""
    except OSError as exc:
        raise TraceError(f"trace {path} cannot be read ({os_reason(exc)}); check the file") from None
    if problem:
        raise TraceError(f"trace {path} is damaged: {problem}; re-run the simulation that wrote it")
    try:
        file = h5py.File(path, "r", rdcc_nbytes=_CHUNK_CACHE_BYTES)
    except OSError as exc:
        raise TraceError(f"trace {path} is not a readable HDF5 file ({exc}); pass a .h5 trace written by hwsim") \
            from None
    try:
        return Trace(path, file, allow_incomplete)
    except DAMAGE_ERRORS as exc:
        file.close()
        raise TraceError(f"trace {path} is damaged ({_short(exc)}); re-run the simulation that wrote it") from None
    except BaseException:
        file.close()
        raise


class Trace:
    """An open trace: its attributes, name tables and record queries. Close it (or use `with`)."""

    def __init__(self, path: str, file: h5py.File, allow_incomplete: bool) -> None:
        self.path = path
        self._file = file
        self.attrs: dict[str, Any] = {key: _python_value(value) for key, value in file.attrs.items()}
        version = self.attrs.get("hwsim_trace_version")
        if version is None:
            raise TraceError(f"{path} is an HDF5 file but not an hwsim trace (no hwsim_trace_version attribute); "
                             f"pass a trace written by hwsim")
        if not isinstance(version, int) or isinstance(version, bool):
            raise TraceError(f"trace {path} is damaged: format version {version!r} is not an integer; re-run the "
                             "simulation that wrote it")
        if self.attrs.get("complete") is not True and not allow_incomplete:
            raise TraceError(f"trace {path} is incomplete (no complete=True attribute): the run was interrupted; "
                             f"re-run the simulation")
        if version < TRACE_VERSION:
            raise TraceError(f"trace {path} has format version {version}, written by an older hwsim; this one reads "
                             f"version {TRACE_VERSION}: re-run the simulation")
        if version > TRACE_VERSION:
            raise TraceError(f"trace {path} has format version {version} but this hwsim reads up to "
                             f"{TRACE_VERSION}; upgrade hwsim")
        self.levels: tuple[str, ...] = tuple(self.attrs["levels"])
        self.ops: tuple[str, ...] = tuple(self.attrs["ops"])
        self.operands: tuple[str, ...] = tuple(self.attrs["operands"])
        self.units: dict[str, str] = json.loads(self.attrs["units"])
        self.layers: tuple[str, ...] = tuple(_python_value(file["names/layers"][()]))
        self.buffers: tuple[str, ...] = tuple(_python_value(file["names/buffers"][()]))
        if "names/units" not in file:
            raise TraceError(f"trace {path} is damaged: it has no unit table (names/units); re-run the simulation")
        self.unit_names: tuple[str, ...] = tuple(_python_value(file["names/units"][()]))
        _check_header(path, self.attrs, self.levels, self.ops, self.operands, self.layers)
        _check_index(path, file, self.levels, len(self.layers))
        self.layer_word_bytes: np.ndarray = _layer_word_bytes(path, self.attrs, len(self.layers))
        self.layer_cores: np.ndarray = _layer_cores(path, self.attrs, len(self.layers))
        first = self.attrs.get("named_buffers_from", min(3, len(self.buffers)))
        if not isinstance(first, int) or isinstance(first, bool) or not 0 <= first <= len(self.buffers):
            raise TraceError(f"trace {path} is damaged: attribute named_buffers_from is {first!r}; re-run the "
                             "simulation that wrote it")
        self.first_named_buffer: int = first  # buffers from here on are named ones (rings, edge or plan buffers)
        self._direct: dict[str, bool] = {}  # dataset name -> decoded by worker threads
        self._dtypes = {f"/levels/{level}": RECORD_DTYPE for level in self.levels} | {
            "/occupancy": OCCUPANCY_DTYPE, "/groups": GROUP_DTYPE}
        for name, dtype in self._dtypes.items():
            if name not in file or file[name].dtype != dtype:
                raise TraceError(f"trace {path}: dataset {name} is missing or not of the hwsim record type; "
                                 f"re-run the simulation with this hwsim")
            self._direct[name] = is_shuffle_deflate(file[name])
        self.group_level_bits: tuple[str, ...] = tuple(self.attrs["group_level_bits"])
        self._pool = ThreadPoolExecutor(worker_threads(), "hwsim-trace-read")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Release the file and the decoding threads. Safe to call twice."""
        self._pool.shutdown()
        if self._file.id.valid:
            self._file.close()

    @property
    def clock_hz(self) -> float:
        """The accelerator's clock, for times in seconds; a trace without one (not written by a simulation) is
        a TraceError, not a KeyError."""
        value = self.attrs.get("clock_hz")
        if value is None:
            raise TraceError(f"trace {self.path} has no clock_hz attribute, which times in seconds need; re-run "
                             "the simulation that wrote it")
        return float(value)

    def n_records(self, level: str) -> int:
        """How many access records `level` holds."""
        return len(self._level_dataset(level))

    def records(self, level: str, layer: Code | None = None, operand: Code | None = None, op: Code | None = None,
                window_cycles: Window | None = None, chunk_records: int = 1 << 20) -> Iterator[np.ndarray]:
        """Stream `level`'s records in file order, as RECORD_DTYPE blocks of at most `chunk_records`.

        Filters combine: `layer` (name or id), `operand` and `op` (names or
        codes), and `window_cycles=(c0, c1)`, which keeps records overlapping
        [c0, c1) (start_cycle < c1 and end_cycle > c0). Arguments are checked
        here, before the first block is read.
        """
        dataset = self._level_dataset(level)
        first_row, end_row, keep = self._record_filter(dataset, level, layer, operand, op, window_cycles)
        _check_chunk_records(self.path, chunk_records)
        return self._scan(dataset, first_row, end_row, chunk_records, keep)

    def column_blocks(self, level: str, layer: Code | None = None, operand: Code | None = None,
                      op: Code | None = None, window_cycles: Window | None = None) -> Iterator[RecordColumns]:
        """`records(...)` one chunk at a time as `RecordColumns`: each field a contiguous array decoded when first
        asked for, so a reduction over a few fields neither decodes the others nor reads them strided.

        Worker threads decode a few chunks ahead of the caller; memory holds
        those chunks, whatever the level's length. The filters are those of
        `records`; chunks without a match are skipped.
        """
        dataset = self._level_dataset(level)
        first_row, end_row, keep = self._record_filter(dataset, level, layer, operand, op, window_cycles)
        return self._column_scan(dataset, first_row, end_row, keep)

    def layer_rows(self, level: str) -> np.ndarray | None:
        """Per layer of `level`, the first row of its records and one past the last ((0, 0): none; other layers'
        records may lie between when layers ran at once), from the trace's layer index; None without one."""
        name = f"index/{level}"
        if name not in self._file:
            return None
        rows: np.ndarray = np.asarray(self._file[name][()], dtype=np.int64)
        n = len(self._level_dataset(level))
        if ((rows[:, 0] < 0) | (rows[:, 0] > rows[:, 1]) | (rows[:, 1] > n)).any():
            raise TraceError(f"trace {self.path}: index/{level} is damaged (a layer's rows outside 0..{n}); re-run "
                             "the simulation that wrote it")
        return rows

    def layers_blocks(self, level: str, first_layer: int, end_layer: int) -> Iterator[RecordColumns]:
        """The records of layers first_layer … end_layer - 1 of `level` as `column_blocks` gives them, read from the
        rows the layer index spans for them (the whole level without one) and filtered by layer only where other
        layers' records lie among those rows."""
        dataset = self._level_dataset(level)
        rows = self.layer_rows(level)
        first_row, end_row, alone = 0, len(dataset), False
        if rows is not None:
            mine = rows[first_layer:end_layer]
            mine = mine[mine[:, 1] > mine[:, 0]]
            if not len(mine):
                return iter(())
            first_row, end_row = int(mine[:, 0].min()), int(mine[:, 1].max())
            others = np.delete(rows, np.s_[first_layer:end_layer], axis=0)
            alone = not ((others[:, 1] > others[:, 0]) & (others[:, 1] > first_row) & (others[:, 0] < end_row)).any()

        def keep(block: Block) -> np.ndarray:
            layer = block["layer"]
            mask: np.ndarray = (layer >= first_layer) & (layer < end_layer)
            return mask
        return self._column_scan(dataset, first_row, end_row, None if alone else keep)

    def _record_filter(self, dataset: h5py.Dataset, level: str, layer: Code | None, operand: Code | None,
                       op: Code | None, window_cycles: Window | None) -> tuple[int, int, RowFilter | None]:
        """The rows a query of `level` reads (a layer's span in `index/<level>` when there is one) and the mask of
        a block's records that match (None: every record does); names and codes checked against the tables."""
        layer_id = None if layer is None else self._code(layer, self.layers, "layer")
        operand_code = None if operand is None else self._code(operand, self.operands, "operand")
        op_code = None if op is None else self._code(op, self.ops, "op")
        c0, c1 = self._window(window_cycles)
        first_row, end_row = 0, len(dataset)
        if layer_id is not None and f"index/{level}" in self._file:
            first_row, end_row = (int(row) for row in self._file[f"index/{level}"][layer_id])
            if not 0 <= first_row <= end_row <= len(dataset):
                raise TraceError(f"trace {self.path}: index/{level} is damaged (layer {layer_id} at rows "
                                 f"{first_row}..{end_row} of {len(dataset)}); re-run the simulation that wrote it")

        def keep(block: Block) -> np.ndarray:
            mask = np.ones(len(block), dtype=bool)
            for column, code in (("layer", layer_id), ("operand", operand_code), ("op", op_code)):
                if code is not None:
                    mask &= block[column] == code
            if window_cycles is not None:
                mask &= (block["start_cycle"] < c1) & (block["end_cycle"] > c0)
            return mask

        filtered = any(f is not None for f in (layer_id, operand_code, op_code, window_cycles))
        return first_row, end_row, keep if filtered else None

    def select(self, level: str, layer: Code | None = None, operand: Code | None = None, op: Code | None = None,
               window_cycles: Window | None = None, chunk_records: int = 1 << 20) -> np.ndarray:
        """`records(...)` as one array: for queries whose answer fits in memory."""
        blocks = self.records(level, layer, operand, op, window_cycles, chunk_records)
        if any(f is not None for f in (layer, operand, op, window_cycles)):
            return _joined(blocks, RECORD_DTYPE)
        out = np.empty(self.n_records(level), dtype=RECORD_DTYPE)  # the whole level: one copy, no list to join
        filled = 0
        for block in blocks:
            out[filled:filled + len(block)] = block
            filled += len(block)
        return out[:filled]

    def columns(self, level: str) -> dict[str, np.ndarray]:
        """Every record of `level` as one contiguous array per field (what whole-trace analyses such as the
        validator want: numpy's field views of packed records are strided and slow), checked like `records`."""
        dataset = self._level_dataset(level)
        n = len(dataset)
        out = {name: np.empty(n, dtype=RECORD_DTYPE.fields[name][0])  # type: ignore[index]
               for name in RECORD_DTYPE.names or ()}
        chunk_len = dataset.chunks[0] if dataset.chunks else max(n, 1)
        step = max(1, (1 << 20) // chunk_len)
        for k0 in range(0, ceil_div(n, chunk_len), step):
            k1 = min(k0 + step, ceil_div(n, chunk_len))
            self._fill_columns(dataset, k0, k1, chunk_len, out)
        return out

    def _fill_columns(self, dataset: h5py.Dataset, k0: int, k1: int, chunk_len: int,
                      out: dict[str, np.ndarray]) -> None:
        """Decode chunks k0..k1-1 into their rows of `out`, their codes checked (a damaged chunk is a TraceError
        naming it)."""
        lo, hi = k0 * chunk_len, min(len(dataset), k1 * chunk_len)
        try:
            if self._direct[dataset.name]:
                raw = [dataset.id.read_direct_chunk((k * chunk_len,)) for k in range(k0, k1)]
                list(self._pool.map(lambda kr: decode_chunk_columns(kr[1][0], kr[1][1], RECORD_DTYPE, chunk_len, out,
                                                                    (k0 + kr[0]) * chunk_len), enumerate(raw)))
            else:
                rows = self._decoded_chunks(dataset, k0, k1, chunk_len)
                for name in RECORD_DTYPE.names or ():
                    out[name][lo:hi] = rows[name]
        except DAMAGE_ERRORS as exc:
            raise TraceError(f"trace {self.path}: dataset {dataset.name} is damaged at rows from {lo:,} "
                             f"({_short(exc)}); re-run the simulation that wrote it") from None
        problem = self._bad_codes({name: column[lo:hi] for name, column in out.items()})
        if problem:
            raise TraceError(f"trace {self.path}: dataset {dataset.name} is damaged: {problem} in rows from "
                             f"{lo:,}; re-run the simulation that wrote it")

    def to_pandas(self, level: str, layer: Code | None = None, operand: Code | None = None, op: Code | None = None,
                  window_cycles: Window | None = None) -> Any:
        """`select(...)` as a pandas DataFrame for notebooks, with op, operand and layer as named categories.
        pandas is optional: install it to use this (the answer must fit in memory, as with `select`)."""
        try:
            import pandas as pd
        except ImportError:
            raise TraceError("to_pandas needs pandas, which is not installed; install it with pip install pandas, "
                             "or use records()/select() for numpy blocks") from None
        block = self.select(level, layer, operand, op, window_cycles)
        frame = pd.DataFrame({name: block[name] for name in RECORD_DTYPE.names or ()})
        for column, names in (("op", self.ops), ("operand", self.operands), ("layer", self.layers)):
            frame[column] = pd.Categorical.from_codes(frame[column].to_numpy(), categories=list(names))
        return frame

    def occupancy(self, buffer: Code | None = None, window_cycles: Window | None = None) -> np.ndarray:
        """Occupancy events in file order, of one buffer (name or id) and/or with c0 <= cycle < c1.

        Each event's `bytes` is the occupancy after it; the occupancy at c0 is
        the last event before c0, which a window leaves out.
        """
        buffer_id = None if buffer is None else self._code(buffer, self.buffers, "buffer")
        c0, c1 = self._window(window_cycles)

        def keep(block: np.ndarray) -> np.ndarray:
            mask = np.ones(len(block), dtype=bool)
            if buffer_id is not None:
                mask &= block["buffer"] == buffer_id
            if window_cycles is not None:
                mask &= (block["cycle"] >= c0) & (block["cycle"] < c1)
            return mask

        self._require_open()
        dataset = self._file["occupancy"]
        return _joined(self._scan(dataset, 0, len(dataset), 1 << 20, keep), OCCUPANCY_DTYPE)

    def groups(self) -> np.ndarray:
        """The schedule's groups (GROUP_DTYPE rows, layer after layer in step order): which steps form each
        processing pass with its loads and stores."""
        self._require_open()
        dataset = self._file["groups"]
        return _joined(self._scan(dataset, 0, len(dataset), 1 << 20, None), GROUP_DTYPE)

    def dram_commands(self) -> np.ndarray | None:
        """The JEDEC commands the DRAM issued (DRAM_COMMAND_DTYPE rows, work after work, each work's by cycle);
        None for a trace written before traces held them. Empty when the DRAM model issues none or the dram
        level was not recorded."""
        self._require_open()
        if "dram_commands" not in self._file:
            return None
        dataset = self._file["dram_commands"]
        if dataset.dtype != DRAM_COMMAND_DTYPE:
            raise TraceError(f"trace {self.path}: dataset /dram_commands is not of the hwsim command type; re-run "
                             "the simulation with this hwsim")
        self._direct.setdefault(dataset.name, is_shuffle_deflate(dataset))
        self._dtypes.setdefault(dataset.name, DRAM_COMMAND_DTYPE)
        return _joined(self._scan(dataset, 0, len(dataset), 1 << 20, None), DRAM_COMMAND_DTYPE)

    def _level_dataset(self, level: str) -> h5py.Dataset:
        self._require_open()
        if level not in self.levels:
            raise TraceError(f"trace {self.path} has no level {level!r}; levels in this trace: "
                             f"{', '.join(self.levels)}")
        return self._file[f"levels/{level}"]

    def _require_open(self) -> None:
        if not self._file.id.valid:
            raise TraceError(f"trace {self.path} was closed; open it again with hwsim.trace.open")

    def _code(self, value: Code, names: tuple[str, ...], what: str) -> int:
        """The index of `value` in `names`, given as a name or as an index."""
        if isinstance(value, str) and value in names:
            return names.index(value)
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and 0 <= value < len(names):
            return int(value)
        listed = ", ".join(names[:_LISTED_NAMES]) + (f", ... ({len(names)} in all)" if len(names) > _LISTED_NAMES
                                                     else "")
        raise TraceError(f"trace {self.path} has no {what} {value!r}; give a name or index 0..{len(names) - 1} "
                         f"of: {listed}")

    def _window(self, window_cycles: Window | None) -> Window:
        if window_cycles is None:
            return 0, 0
        c0, c1 = window_cycles
        if not c0 <= c1:
            raise TraceError(f"trace {self.path}: window_cycles {window_cycles} must be (start, end) with "
                             f"start <= end")
        return int(c0), int(c1)

    def _scan(self, dataset: h5py.Dataset, first_row: int, end_row: int, chunk_records: int,
              keep: Callable[[np.ndarray], np.ndarray] | None) -> Iterator[np.ndarray]:
        """Rows [first_row, end_row) read whole chunks at a time, filtered, in blocks of <= chunk_records."""
        chunk_len = dataset.chunks[0] if dataset.chunks else chunk_records
        per_read = max(1, chunk_records // chunk_len)
        end_chunk = ceil_div(end_row, chunk_len)
        for k0 in range(first_row // chunk_len, end_chunk, per_read):
            k1 = min(k0 + per_read, end_chunk)
            rows = self._read_chunks(dataset, k0, k1, chunk_len)
            lo, hi = max(first_row - k0 * chunk_len, 0), min(end_row, k1 * chunk_len) - k0 * chunk_len
            for start in range(lo, hi, chunk_records):
                block = rows[start:min(start + chunk_records, hi)]
                if keep is not None:
                    block = taken(block, keep(block))
                if len(block):
                    yield block

    def _column_scan(self, dataset: h5py.Dataset, first_row: int, end_row: int,
                     keep: RowFilter | None) -> Iterator[RecordColumns]:
        """Rows [first_row, end_row) of a level's dataset, a chunk at a time, filtered by `keep`: worker threads
        read, decode and check the next `_CHUNKS_AHEAD` chunks while the caller works on this one."""
        chunk_len = dataset.chunks[0] if dataset.chunks else _UNCHUNKED_BLOCK_RECORDS
        chunks = iter(range(first_row // chunk_len, ceil_div(end_row, chunk_len)))

        def submit(k: int) -> tuple[int, Future[tuple[RecordColumns, str]]]:
            lo, hi = max(first_row - k * chunk_len, 0), min(end_row - k * chunk_len, chunk_len)
            return k, self._pool.submit(self._decode_block, dataset, k, chunk_len, lo, hi)

        pending = deque(submit(k) for k in itertools.islice(chunks, _CHUNKS_AHEAD * worker_threads()))
        while pending:
            k, future = pending.popleft()
            pending.extend(submit(k) for k in itertools.islice(chunks, 1))
            block = self._checked_block(dataset, k * chunk_len, future)
            if keep is not None:
                block = block.where(keep(block))
            if len(block):
                yield block

    def _decode_block(self, dataset: h5py.Dataset, k: int, chunk_len: int, lo: int,
                      hi: int) -> tuple[RecordColumns, str]:
        """Rows lo..hi-1 of chunk k, and what is wrong with their codes ('' when nothing): a worker's task. A
        shuffle + deflate chunk is inflated here into its byte planes, others are read through HDF5."""
        if self._direct[dataset.name]:
            filter_mask, data = dataset.id.read_direct_chunk((k * chunk_len,))
            block = RecordColumns.of_planes(inflate_planes(filter_mask, data, RECORD_DTYPE, chunk_len), lo, hi)
        else:
            block = RecordColumns.of_records(dataset[k * chunk_len + lo:k * chunk_len + hi])
        return block, self._bad_codes(block)

    def _checked_block(self, dataset: h5py.Dataset, first_row: int,
                       future: Future[tuple[RecordColumns, str]]) -> RecordColumns:
        """A worker's block, or the TraceError naming the damaged chunk (from `first_row`) it found."""
        try:
            block, problem = future.result()
        except DAMAGE_ERRORS as exc:
            raise TraceError(f"trace {self.path}: dataset {dataset.name} is damaged at rows from {first_row:,} "
                             f"({_short(exc)}); re-run the simulation that wrote it") from None
        if problem:
            raise TraceError(f"trace {self.path}: dataset {dataset.name} is damaged: {problem} in rows from "
                             f"{first_row:,}; re-run the simulation that wrote it")
        return block

    def _read_chunks(self, dataset: h5py.Dataset, k0: int, k1: int, chunk_len: int) -> np.ndarray:
        """The rows of chunks k0..k1-1 (the last one cut at the dataset's end), their codes checked against the
        trace's tables: a damaged chunk is a TraceError naming it, never a wrong answer."""
        try:
            rows = self._decoded_chunks(dataset, k0, k1, chunk_len)
        except DAMAGE_ERRORS as exc:
            raise TraceError(f"trace {self.path}: dataset {dataset.name} is damaged at rows from {k0 * chunk_len:,} "
                             f"({_short(exc)}); re-run the simulation that wrote it") from None
        problem = self._bad_codes(rows)
        if problem:
            raise TraceError(f"trace {self.path}: dataset {dataset.name} is damaged: {problem} in rows from "
                             f"{k0 * chunk_len:,}; re-run the simulation that wrote it")
        return rows

    def _bad_codes(self, rows: np.ndarray | dict[str, np.ndarray] | RecordColumns) -> str:
        """What is wrong with a block of records, occupancy events or groups read back (as an array, or record
        columns) ('' when nothing): a code past its name table, a negative occupancy, an end before a start."""
        dtype = rows.dtype if isinstance(rows, np.ndarray) else RECORD_DTYPE
        if dtype == DRAM_COMMAND_DTYPE:
            if len(rows) and (rows["command"].max() >= len(DRAM_COMMAND_NAMES) or rows["cycle"].min() < 0):
                return "a command code past the table or a command before cycle 0"
            return ""
        layer = rows["layer"]
        if len(layer) and (layer.min() < 0 or layer.max() >= len(self.layers)):
            return f"a layer id outside 0..{len(self.layers) - 1}"
        if dtype == GROUP_DTYPE:
            if len(rows) and (rows["first_step"].min() < 0 or rows["compute_step"].min() < -1
                              or rows["levels"].max() >= 1 << len(self.group_level_bits)):
                return "a negative step or a level bit past the table"
            return ""
        if dtype == OCCUPANCY_DTYPE:
            if len(rows) and (rows["buffer"].max() >= len(self.buffers) or rows["bytes"].min() < 0):
                return f"a buffer id past {len(self.buffers) - 1} or a negative occupancy"
            return ""
        for column, names in (("op", self.ops), ("operand", self.operands), ("unit", self.unit_names)):
            if len(rows) and rows[column].max() >= len(names):
                return f"an {column} code past {len(names) - 1}"
        if len(rows) and (rows["start_cycle"].min() < 0 or np.any(rows["end_cycle"] < rows["start_cycle"])):
            return "a record starting before cycle 0 or ending before it starts"
        words = rows["words"]  # (negative at the PE level: skipped MACs)
        if len(words) and max(-int(words.min()), int(words.max())) > MAX_RECORD_WORDS:
            return f"a record of more than {MAX_RECORD_WORDS:,} words"
        return ""

    def _decoded_chunks(self, dataset: h5py.Dataset, k0: int, k1: int, chunk_len: int) -> np.ndarray:
        end_row = min(k1 * chunk_len, len(dataset))
        if not self._direct[dataset.name]:
            read: np.ndarray = dataset[k0 * chunk_len:end_row]  # h5py decodes it
            return read
        dtype = self._dtypes[dataset.name]  # checked at open
        raw = [dataset.id.read_direct_chunk((k * chunk_len,)) for k in range(k0, k1)]
        parts = list(self._pool.map(lambda r: decode_chunk(r[0], r[1], dtype, chunk_len), raw))
        rows = joined(parts)
        return rows[:end_row - k0 * chunk_len]


DAMAGE_ERRORS: tuple[type[Exception], ...] = (OSError, KeyError, ValueError, TypeError, IndexError, RuntimeError,
                                              *CODEC_ERRORS)  # h5py's, inflating a chunk


def _short(exc: BaseException) -> str:
    """An exception as a few words for a one-line message."""
    text = (str(exc).splitlines() or [""])[0]
    return f"{type(exc).__name__}: {text[:100]}" if text else type(exc).__name__


def _check_header(path: str, attrs: dict[str, Any], levels: tuple[str, ...], ops: tuple[str, ...],
                  operands: tuple[str, ...], layers: tuple[str, ...]) -> None:
    """The attributes and name tables a reader relies on, as this format version writes them: the code tables
    equal to the vocabulary, known levels, at least one layer, a positive finite clock and word width, and
    every JSON attribute readable."""
    problem = ""
    if ops != OPS or operands != OPERANDS or tuple(attrs.get("group_level_bits", ())) != TRACE_LEVELS:
        problem = "its op, operand or level table differs from this format version's"
    elif not set(levels) <= set(TRACE_LEVELS):
        problem = f"unknown levels {sorted(set(levels) - set(TRACE_LEVELS))}"
    elif not layers:
        problem = "its layer table is empty"
    elif len(set(layers)) != len(layers):
        problem = f"its layer table names {_first_repeat(layers)!r} twice"
    for key in ("clock_hz", "word_bits", "batch"):
        value = attrs.get(key)
        if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            problem = problem or f"attribute {key} is {value!r}, not a positive number"
    for key, value in attrs.items():
        if key.endswith("_json") or key == "units":
            try:
                json.loads(value)
            except (TypeError, ValueError):
                problem = problem or f"attribute {key} is not readable JSON"
    if problem:
        raise TraceError(f"trace {path} is damaged: {problem}; re-run the simulation that wrote it")


def _first_repeat(names: tuple[str, ...]) -> str:
    """The first name listed a second time."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return ""


def _check_index(path: str, file: h5py.File, levels: tuple[str, ...], layers: int) -> None:
    """Each level's layer index, where there is one, holds a (first row, end row) pair per layer."""
    for level in levels:
        name = f"index/{level}"
        if name in file and (file[name].shape != (layers, 2) or file[name].dtype.kind not in "iu"):
            raise TraceError(f"trace {path} is damaged: {name} has shape {file[name].shape} of {file[name].dtype}, "
                             f"not {layers} integer (first, end) row pairs; re-run the simulation that wrote it")


def _layer_word_bytes(path: str, attrs: dict[str, Any], layers: int) -> np.ndarray:
    """Bytes of the word each layer ran at, by layer index: the trace's per-layer record (mixed precision), else
    its one word."""
    word_bits = attrs.get("word_bits", 8)
    given = json.loads(attrs["layer_word_bits_json"]) if "layer_word_bits_json" in attrs else [word_bits] * layers
    if not (isinstance(given, list) and len(given) == layers
            and all(isinstance(b, int) and not isinstance(b, bool) and b in WORD_BITS for b in given)):
        raise TraceError(f"trace {path} is damaged: attribute layer_word_bits_json is not one word width "
                         f"({WORD_BITS_TEXT} bit) per layer; re-run the simulation that wrote it")
    return np.asarray(given, dtype=np.int64) // 8


def _layer_cores(path: str, attrs: dict[str, Any], layers: int) -> np.ndarray:
    """The core each layer (unit of work) ran on, by layer index (all 0 when the trace does not say)."""
    given = json.loads(attrs["layer_cores_json"]) if "layer_cores_json" in attrs else [0] * layers
    if not (isinstance(given, list) and len(given) == layers
            and all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 256 for c in given)):
        raise TraceError(f"trace {path} is damaged: attribute layer_cores_json is not one core index per layer; "
                         "re-run the simulation that wrote it")
    return np.asarray(given, dtype=np.int64)


def _joined(blocks: Iterator[np.ndarray], dtype: np.dtype) -> np.ndarray:
    """All `blocks` in one array (empty if none)."""
    parts = list(blocks)
    return joined(parts) if parts else np.zeros(0, dtype)


def _check_chunk_records(path: str, chunk_records: int) -> None:
    if not isinstance(chunk_records, int) or chunk_records < 1:
        raise TraceError(f"trace {path}: chunk_records must be a positive int, got {chunk_records!r}")


def _python_value(value: object) -> Any:
    """An attribute or name table as plain Python: str, int, float, bool or a list of them."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, np.ndarray):
        return [_python_value(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    return value
