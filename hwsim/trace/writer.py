"""Writing a trace: blocks buffered into whole chunks, encoded by worker threads, renamed into place when complete.

The file grows under a hidden temporary name beside `path`; only `close()`
sets the root attribute `complete=True`, seals it (a CRC-32 of the file in its
first bytes, `hwsim.trace.seal`) and renames it, so an interrupted run
never leaves a file that looks whole, and an older trace at `path` survives
until the new one is finished.

Layout (see `schema` for the record fields):

    /                 attrs: the caller's attrs, hwsim_trace_version, units (JSON),
                      ops, operands, levels, complete
    /levels/<level>   RECORD_DTYPE[n] in append order, chunked, shuffle + deflate
    /occupancy        OCCUPANCY_DTYPE[n] in append order
    /groups           GROUP_DTYPE[n]: the schedule's groups, layer after layer
    /dram_commands    DRAM_COMMAND_DTYPE[n]: the JEDEC commands the DRAM issued, work after work (empty for a
                      model without commands or a run without the dram level)
    /index/<level>    int64[n_layers, 2]: first row and one past the last row of
                      each layer's records in /levels/<level> ((0, 0) if none)
    /names/layers     str[n_layers]: layer id -> name
    /names/buffers    str[n_buffers]: buffer id -> name
    /names/units      str[n_units]: unit id -> name (dram, l2, core0.glb, ..., link.a>b)
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from types import TracebackType
from typing import Self

import h5py
import numpy as np

from hwsim.errors import os_reason, require_finite
from hwsim.files import OutputLock
from hwsim.rows import opaque
from hwsim.trace._codec import DEFLATE_LEVEL, deflate, shuffle_chunk, worker_threads
from hwsim.trace.schema import (
    DRAM_COMMAND_DTYPE,
    GROUP_DTYPE,
    MAX_BUFFERS,
    MAX_RECORD_WORDS,
    MAX_UNITS,
    OCCUPANCY_DTYPE,
    OPERANDS,
    OPS,
    RECORD_DTYPE,
    TRACE_VERSION,
    UNITS,
    TraceError,
)
from hwsim.trace.seal import SEAL_BYTES, seal
from hwsim.vocab import DRAM_COMMAND_NAMES, TRACE_LEVELS

AttrValue = str | int | float | bool
COMPRESSIONS = ("gzip", "lzf", "none")  # gzip: shuffle + deflate in worker threads; lzf: HDF5's filter, one thread
RESERVED_ATTRS = ("complete", "hwsim_trace_version", "units", "ops", "operands", "levels", "group_level_bits",
                  "dram_commands")
_NO_ROW = np.iinfo(np.int64).max  # first row of a layer not seen yet


def attrs_json(obj: object) -> str:
    """`obj` (dicts, lists, numbers, strings) as canonical JSON: how structured values go into `attrs`; a NaN or
    infinity in it is an error, never a trace attribute."""
    require_finite(obj, "a trace attribute")
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def temporary_path(path: str) -> str:
    """Where the trace for `path` is written until complete: a hidden `.NAME.partial` in the same directory."""
    head, tail = os.path.split(path)
    return os.path.join(head, f".{tail}.partial")


@dataclass
class _Stream:
    """One dataset's records waiting in memory until they fill a chunk."""

    dataset: h5py.Dataset
    dtype: np.dtype  # of the records
    buffer: np.ndarray  # chunk_records rows, as opaque() bytes
    check: Callable[[np.ndarray, int], None]  # validates a full slab (and indexes it) given its first row
    first_rows: np.ndarray  # per layer id: first row of its records (_NO_ROW if none yet); levels only
    end_rows: np.ndarray  # per layer id: one past its last row
    fill: int = 0  # records in `buffer`
    rows: int = 0  # records handed on to the file


class TraceWriter:
    """Writes access records per level and occupancy events into one HDF5 trace.

    `append` and `append_occupancy` take numpy blocks of any size; records are
    copied into chunk-sized buffers, and each full chunk is shuffled here and
    deflated by a worker thread, so many small blocks cost little more than a
    few big ones and compression runs beside the simulator.
    Use as a context manager: leaving the block by an exception (including
    KeyboardInterrupt) discards the temporary file.
    """

    def __init__(self, path: str | os.PathLike[str], levels: Sequence[str], layers: Sequence[str],
                 buffers: Sequence[str], attrs: Mapping[str, AttrValue], compression: str = "gzip",
                 chunk_records: int = 1 << 16, units: Sequence[str] = ("unit",)) -> None:
        self.path = os.fspath(path)
        self.temporary_path = temporary_path(self.path)
        _check_setup(self.path, levels, layers, buffers, attrs, compression, chunk_records)
        _check_names(f"trace {self.path}", "units", units, MAX_UNITS)
        self.layers = tuple(layers)
        self.buffers = tuple(buffers)
        self.units_table = tuple(units)
        self.chunk_records = chunk_records
        self._closed = False
        self._aborted = False
        threads = worker_threads() if compression == "gzip" else 0
        self._pool = ThreadPoolExecutor(threads, "hwsim-trace") if threads else None
        self._pending: deque[tuple[h5py.Dataset, int, int, Future[bytes]]] = deque()
        self._max_pending = 4 * threads + 2  # chunks in flight: bounds memory, keeps every thread busy
        self._lock = OutputLock(self.path, TraceError)
        try:
            os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        except OSError as exc:
            self._shutdown_pool()
            raise TraceError(f"cannot create the folder of trace {self.path} ({exc.strerror}); give a writable "
                             "path") from None
        try:
            self._lock.acquire()  # another run writing this path stops here, before its temporary file is touched
        except BaseException:
            self._shutdown_pool()
            raise
        try:
            self._file = h5py.File(self.temporary_path, "w", userblock_size=SEAL_BYTES)
            self._write_header(levels, attrs)
            self._levels = {level: self._stream(f"levels/{level}", RECORD_DTYPE, compression, len(self.layers),
                                                partial(self._check_records, level))
                            for level in levels}
            self._occupancy = self._stream("occupancy", OCCUPANCY_DTYPE, compression, 0, self._check_occupancy)
            self._groups = self._stream("groups", GROUP_DTYPE, compression, 0, self._check_groups)
            self._commands = self._stream("dram_commands", DRAM_COMMAND_DTYPE, compression, 0,
                                          self._check_commands)
        except OSError as exc:
            self.abort()
            raise TraceError(f"cannot create trace {self.temporary_path} for {self.path} ({exc}); "
                             f"check that the directory is writable") from None
        except BaseException:
            self.abort()
            raise

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def append(self, level: str, block: np.ndarray) -> None:
        """Add a block of RECORD_DTYPE records to `level` (kept in append order)."""
        stream = self._levels.get(level) if isinstance(level, str) else None
        if stream is None:
            raise TraceError(f"trace {self.path}: level {level!r} was not declared; declared levels: "
                             f"{', '.join(self._levels)} (pass it in TraceWriter(levels=...))")
        self._push(stream, block, RECORD_DTYPE)

    def append_occupancy(self, block: np.ndarray) -> None:
        """Add a block of OCCUPANCY_DTYPE events (kept in append order)."""
        self._push(self._occupancy, block, OCCUPANCY_DTYPE)

    def append_groups(self, block: np.ndarray) -> None:
        """Add a block of GROUP_DTYPE rows (the schedule's groups, in layer and step order)."""
        self._push(self._groups, block, GROUP_DTYPE)

    def append_dram_commands(self, block: np.ndarray) -> None:
        """Add a block of DRAM_COMMAND_DTYPE commands (kept in append order)."""
        self._push(self._commands, block, DRAM_COMMAND_DTYPE)

    def add_attrs(self, attrs: Mapping[str, AttrValue]) -> None:
        """Add root attributes known only once the records are written (a run's totals), before `close`."""
        self._require_open()
        _check_attrs(f"trace {self.path}", attrs)
        for key, value in attrs.items():
            self._file.attrs[key] = value

    def close(self) -> None:
        """Write what is buffered and the layer index, mark the file complete and rename it to `path`."""
        if self._closed:
            return
        self._require_open()
        try:
            for stream in (*self._levels.values(), self._occupancy, self._groups, self._commands):
                self._flush(stream)
            while self._pending:
                self._write_oldest()
            for level, stream in self._levels.items():
                seen = stream.first_rows != _NO_ROW
                index = np.stack([np.where(seen, stream.first_rows, 0), stream.end_rows], axis=1)
                self._file.create_dataset(f"index/{level}", data=index, track_times=False)
            self._file.attrs["complete"] = True
            self._file.close()
            seal(self.temporary_path)
            os.replace(self.temporary_path, self.path)
        except OSError as exc:
            raise self._write_failed(exc) from None
        except BaseException:
            self.abort()
            raise
        self._closed = True
        self._lock.release()
        if self._pool is not None:
            self._pool.shutdown()

    def _shutdown_pool(self) -> None:
        self._aborted = True
        if self._pool is not None:
            self._pool.shutdown()

    def abort(self) -> None:
        """Give the trace up: delete the temporary file and leave `path` as it was. Safe to call twice."""
        if self._closed or self._aborted:
            return
        self._aborted = True
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self._pending.clear()
        file = getattr(self, "_file", None)
        if file is not None and file.id.valid:
            with contextlib.suppress(OSError):  # a full disk fails the close too; the file goes either way
                file.close()
        if os.path.exists(self.temporary_path):
            os.remove(self.temporary_path)
        self._lock.release()

    def _write_header(self, levels: Sequence[str], attrs: Mapping[str, AttrValue]) -> None:
        """Root attributes and name tables: what makes the trace self-describing."""
        root = self._file.attrs
        for key, value in attrs.items():
            root[key] = value
        root["hwsim_trace_version"] = TRACE_VERSION
        root["units"] = attrs_json(UNITS)
        for key, names in (("ops", OPS), ("operands", OPERANDS), ("levels", levels),
                           ("group_level_bits", TRACE_LEVELS), ("dram_commands", DRAM_COMMAND_NAMES)):
            root[key] = np.array(names, dtype=h5py.string_dtype())
        for name, values in (("layers", self.layers), ("buffers", self.buffers), ("units", self.units_table)):
            self._file.create_dataset(f"names/{name}", data=np.array(values, dtype=h5py.string_dtype()),
                                      track_times=False)

    def _stream(self, name: str, dtype: np.dtype, compression: str, n_layers_indexed: int,
                check: Callable[[np.ndarray, int], None]) -> _Stream:
        """An empty resizable dataset chunked by `chunk_records` rows, its buffer and its layer index."""
        dataset = self._file.create_dataset(
            name, shape=(0,), maxshape=(None,), dtype=dtype, chunks=(self.chunk_records,),
            compression=None if compression == "none" else compression,
            compression_opts=DEFLATE_LEVEL if compression == "gzip" else None,
            shuffle=compression != "none", track_times=False)
        return _Stream(dataset, dtype, opaque(np.empty(self.chunk_records, dtype)), check,
                       np.full(n_layers_indexed, _NO_ROW, np.int64), np.zeros(n_layers_indexed, np.int64))

    def _require_open(self) -> None:
        if self._closed or self._aborted:
            state = "closed" if self._closed else "aborted"
            raise TraceError(f"trace {self.path}: the writer is already {state}; open a new TraceWriter")

    def _push(self, stream: _Stream, block: np.ndarray, dtype: np.dtype) -> None:
        """Copy `block` into the stream's buffer, handing each full chunk on."""
        self._require_open()
        if not isinstance(block, np.ndarray) or block.dtype != dtype or block.ndim != 1:
            got = block.dtype if isinstance(block, np.ndarray) else type(block).__name__
            raise TraceError(f"trace {self.path}: expected a 1-D numpy array of {dtype} but got {got}; "
                             f"build blocks with hwsim.trace.empty_records / empty_occupancy")
        rows, capacity, done = block.view(stream.buffer.dtype), len(stream.buffer), 0  # opaque(), faster
        while done < len(block):
            take = min(len(block) - done, capacity - stream.fill)
            stream.buffer[stream.fill:stream.fill + take] = rows[done:done + take]
            stream.fill += take
            done += take
            if stream.fill == capacity:
                self._flush(stream)

    def _flush(self, stream: _Stream) -> None:
        """Validate the buffered records and send them to the file as one chunk (compressed by a worker)."""
        if stream.fill == 0:
            return
        slab, first = stream.buffer[:stream.fill].view(stream.dtype), stream.rows
        try:
            stream.check(slab, first)
        except TraceError:
            self.abort()
            raise
        stream.rows += len(slab)
        stream.fill = 0
        if self._pool is None:
            try:
                stream.dataset.resize((stream.rows,))
                stream.dataset[first:] = slab
            except OSError as exc:
                raise self._write_failed(exc) from None
            return
        future = self._pool.submit(deflate, shuffle_chunk(slab, self.chunk_records))
        self._pending.append((stream.dataset, first, len(slab), future))
        if len(self._pending) > self._max_pending:
            self._write_oldest()

    def _write_oldest(self) -> None:
        """Store the oldest encoded chunk; the extent grows only over chunks that exist."""
        dataset, first, n_rows, future = self._pending.popleft()
        try:
            dataset.resize((first + n_rows,))
            dataset.id.write_direct_chunk((first,), future.result())
        except OSError as exc:
            raise self._write_failed(exc) from None

    def _write_failed(self, exc: OSError) -> TraceError:
        """Give the trace up after a failed write (a full disk) and say so in one line."""
        self.abort()
        return TraceError(f"{self.path}: cannot write the trace ({os_reason(exc)}); free space on the disk or "
                          "write elsewhere (--out); nothing was kept")

    def _check_records(self, level: str, slab: np.ndarray, first_row: int) -> None:
        """Reject codes outside the tables, then note each layer's first and end rows in this slab."""
        where = f"trace {self.path}: level {level!r}"
        layer = np.ascontiguousarray(slab["layer"])  # one strided pass; the rest runs on contiguous memory
        _check_range(where, "layer id", layer, len(self.layers), "pass every layer to TraceWriter(layers=...)")
        _check_range(where, "op code", slab["op"], len(OPS), f"use indices into OPS {OPS}")
        _check_range(where, "operand code", slab["operand"], len(OPERANDS), f"use indices into OPERANDS {OPERANDS}")
        _check_range(where, "unit id", slab["unit"], len(self.units_table), "pass every unit to TraceWriter(units=...)")
        words = slab["words"]
        if max(-int(words.min()), int(words.max())) > MAX_RECORD_WORDS:
            raise TraceError(f"{where} has a record of more than {MAX_RECORD_WORDS:,} words; the trace was "
                             "abandoned, fix the simulator")
        cuts = np.flatnonzero(layer[1:] != layer[:-1]) + 1
        run_starts = np.concatenate(([0], cuts))
        run_ends = np.concatenate((cuts, [len(layer)]))
        stream = self._levels[level]
        np.minimum.at(stream.first_rows, layer[run_starts], first_row + run_starts)
        np.maximum.at(stream.end_rows, layer[run_starts], first_row + run_ends)

    def _check_occupancy(self, slab: np.ndarray, first_row: int) -> None:
        """Reject buffer and layer ids outside the tables and negative occupancies."""
        where = f"trace {self.path}: occupancy"
        _check_range(where, "buffer id", slab["buffer"], len(self.buffers),
                     "pass every buffer to TraceWriter(buffers=...)")
        _check_range(where, "layer id", slab["layer"], len(self.layers), "pass every layer to TraceWriter(layers=...)")
        if len(slab) and slab["bytes"].min() < 0:
            raise TraceError(f"{where} has a negative occupancy ({slab['bytes'].min()} bytes); "
                             f"the trace was abandoned, fix the simulator")

    def _check_groups(self, slab: np.ndarray, first_row: int) -> None:
        """Reject layer ids outside the table and steps before the layer's first."""
        where = f"trace {self.path}: groups"
        _check_range(where, "layer id", slab["layer"], len(self.layers), "pass every layer to TraceWriter(layers=...)")
        if len(slab) and (slab["first_step"].min() < 0 or slab["compute_step"].min() < -1):
            raise TraceError(f"{where} has a negative step; the trace was abandoned, fix the simulator")

    def _check_commands(self, slab: np.ndarray, first_row: int) -> None:
        """Reject command codes outside the table and negative cycles."""
        where = f"trace {self.path}: dram_commands"
        _check_range(where, "command code", slab["command"], len(DRAM_COMMAND_NAMES),
                     f"use indices into {DRAM_COMMAND_NAMES}")
        if len(slab) and slab["cycle"].min() < 0:
            raise TraceError(f"{where} has a command before cycle 0; the trace was abandoned, fix the simulator")


def _check_range(where: str, what: str, values: np.ndarray, count: int, fix: str) -> None:
    """Raise if any of `values` is outside 0..count-1."""
    low, high = int(values.min()) if values.dtype.kind == "i" else 0, int(values.max())
    if low < 0 or high >= count:
        raise TraceError(f"{where} has {what} {low if low < 0 else high} but only {count} exist; "
                         f"the trace was abandoned, {fix}")


def _check_names(where: str, what: str, names: Sequence[str], limit: int) -> None:
    if not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names) or len(names) > limit:
        raise TraceError(f"{where}: {what} must be at most {limit} distinct non-empty names, got {len(names)} "
                         f"({len(set(names))} distinct); give each a unique, non-empty name")


def _check_attrs(where: str, attrs: Mapping[str, AttrValue]) -> None:
    for key, value in attrs.items():
        if not isinstance(key, str) or not key or key in RESERVED_ATTRS:
            raise TraceError(f"{where}: attribute name {key!r} is empty or reserved ({', '.join(RESERVED_ATTRS)}); "
                             f"rename it")
        if not isinstance(value, (str, int, float, bool)):
            raise TraceError(f"{where}: attribute {key!r} is a {type(value).__name__}; store it as "
                             f"attrs_json(value), or as str, int, float or bool")
        require_finite(value, f"{where}: attribute {key!r}")


def _check_setup(path: str, levels: Sequence[str], layers: Sequence[str], buffers: Sequence[str],
                 attrs: Mapping[str, AttrValue], compression: str, chunk_records: int) -> None:
    """Reject a writer configuration that would produce a trace the reader cannot interpret."""
    where = f"trace {path}"
    if os.path.isdir(path):
        raise TraceError(f"{where} is a directory; give a file name such as {os.path.join(path, 'run.h5')}")
    unknown = [level for level in levels if level not in TRACE_LEVELS]
    if unknown or len(set(levels)) != len(levels) or not levels:
        raise TraceError(f"{where}: levels {list(levels)} must be distinct names from {', '.join(TRACE_LEVELS)}")
    for what, names, limit in (("layers", layers, 1 << 31), ("buffers", buffers, MAX_BUFFERS)):
        _check_names(where, what, names, limit)
    _check_attrs(where, attrs)
    if compression not in COMPRESSIONS:
        raise TraceError(f"{where}: compression {compression!r} is not one of {', '.join(COMPRESSIONS)}")
    if not isinstance(chunk_records, int) or chunk_records < 1:
        raise TraceError(f"{where}: chunk_records must be a positive int, got {chunk_records!r}")
