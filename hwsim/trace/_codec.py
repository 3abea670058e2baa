"""HDF5's shuffle + deflate chunk format, done in numpy and zlib so worker threads can share the work.

HDF5 runs its filters in the calling thread with the GIL held: through h5py,
shuffle + LZF writes about 2.5 million records/s and shuffle + deflate about
4 million, on one core. zlib releases the GIL, so the writer shuffles each
chunk itself, has worker threads deflate it and stores the result with
`write_direct_chunk`; the reader fetches chunks with `read_direct_chunk` and
decodes them in worker threads. The chunks are HDF5's own filters' format:
any HDF5 tool reads the file.

Deflate is ISA-L's (the `isal` package) where it is installed: the same
zlib streams, made 6-8x faster than zlib's level 1 on shuffled records (and a
little smaller), inflated 1.5x faster; zlib's otherwise.
"""

from __future__ import annotations

import os
import types
import zlib

import h5py
import numpy as np

from hwsim.rows import opaque

_zlib_streams: types.ModuleType  # what makes and reads the chunks' zlib streams
try:
    from isal import isal_zlib
    _zlib_streams = isal_zlib
except ImportError:  # a platform without ISA-L's wheel
    _zlib_streams = zlib
CODEC_ERRORS: tuple[type[Exception], ...] = tuple({zlib.error, _zlib_streams.error})  # a damaged chunk's

DEFLATE_LEVEL = 1  # shuffled records are mostly runs of equal bytes: level 1 already gives 6x to 150x (ISA-L's
# levels 0-3 and zlib's 0-9 both make standard streams)
_TILE_ROWS = 512  # rows (or columns) transposed at a time: keeps both sides of the copy in cache
_SHUFFLE_SKIPPED, _DEFLATE_SKIPPED = 1, 2  # filter_mask bits of the shuffle, deflate pipeline


def worker_threads() -> int:
    """Threads that encode or decode chunks: one per core, at most four."""
    return max(1, min(4, os.cpu_count() or 1))


def is_shuffle_deflate(dataset: h5py.Dataset) -> bool:
    """Whether the dataset's filter pipeline is exactly shuffle then deflate (the one this module speaks)."""
    dcpl = dataset.id.get_create_plist()
    filters = [dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())]
    return filters == [h5py.h5z.FILTER_SHUFFLE, h5py.h5z.FILTER_DEFLATE]


def _transpose_bytes(rows: np.ndarray) -> np.ndarray:
    """A 2-D uint8 array transposed in tiles along its long side (numpy's plain transpose copy is 3x slower)."""
    n_rows, n_cols = rows.shape
    out = np.empty((n_cols, n_rows), dtype=np.uint8)
    if n_rows >= n_cols:
        for r in range(0, n_rows, _TILE_ROWS):
            out[:, r:r + _TILE_ROWS] = rows[r:r + _TILE_ROWS].T
    else:
        for c in range(0, n_cols, _TILE_ROWS):
            out[c:c + _TILE_ROWS] = rows[:, c:c + _TILE_ROWS].T
    return out


def shuffle_chunk(block: np.ndarray, chunk_records: int) -> np.ndarray:
    """HDF5's shuffle of one full chunk: `block` zero-padded to `chunk_records` rows, byte k of every row together.

    Runs in the writer's own thread: its Python-level tile loop in a worker
    would fight the simulator for the GIL on every tile.
    """
    if len(block) < chunk_records:
        padded = np.zeros(chunk_records, dtype=block.dtype)
        opaque(padded)[:len(block)] = opaque(block)
        block = padded
    return _transpose_bytes(np.ascontiguousarray(block).view(np.uint8).reshape(chunk_records, block.dtype.itemsize))


def deflate(shuffled: np.ndarray) -> bytes:
    """HDF5's deflate of a shuffled chunk: one long zlib call that releases the GIL, for worker threads."""
    compressor = _zlib_streams.compressobj(DEFLATE_LEVEL)
    stream: bytes = compressor.compress(shuffled.data) + compressor.flush()
    return stream


def inflate_planes(filter_mask: int, data: bytes, dtype: np.dtype, chunk_records: int) -> np.ndarray:
    """A shuffle + deflate chunk as its byte planes: a (record bytes, `chunk_records`) uint8 array whose row k holds
    byte k of every record (skipped filters honoured). Inflating into a buffer of the known size saves zlib's
    growing and copying its output; the call releases the GIL, for worker threads."""
    size = dtype.itemsize * chunk_records
    raw = data if filter_mask & _DEFLATE_SKIPPED else _zlib_streams.decompress(data, bufsize=size)
    flat = np.frombuffer(raw, dtype=np.uint8)
    if filter_mask & _SHUFFLE_SKIPPED:
        return _transpose_bytes(flat.reshape(chunk_records, dtype.itemsize))
    return flat.reshape(dtype.itemsize, chunk_records)


def field_from_planes(planes: np.ndarray, dtype: np.dtype, name: str, lo: int, hi: int,
                      out: np.ndarray | None = None) -> np.ndarray:
    """Field `name` of records lo..hi-1 as one contiguous array (into `out` when given), straight from the byte
    planes: one strided byte copy per byte of the field, faster than a whole-record transpose and a strided field
    view; a one-byte field is a view of its plane, no copy."""
    field, offset = dtype.fields[name][:2]  # type: ignore[index]
    if field.itemsize == 1 and out is None:
        return planes[offset, lo:hi].view(field)
    column = np.empty(hi - lo, dtype=field) if out is None else out
    as_bytes = column.view(np.uint8).reshape(hi - lo, field.itemsize)
    for k in range(field.itemsize):
        as_bytes[:, k] = planes[offset + k, lo:hi]
    return column


def records_from_planes(planes: np.ndarray, dtype: np.dtype, rows: slice | np.ndarray) -> np.ndarray:
    """The records at `rows` (a slice, a boolean mask or indices into the planes' columns) as `dtype` rows."""
    picked = planes[:, rows]
    return _transpose_bytes(picked).view(dtype).reshape(picked.shape[1])


def decode_chunk(filter_mask: int, data: bytes, dtype: np.dtype, chunk_records: int) -> np.ndarray:
    """The `chunk_records` records of a chunk stored as shuffle + deflate (skipped filters honoured)."""
    raw = data if filter_mask & _DEFLATE_SKIPPED else _zlib_streams.decompressobj().decompress(data)  # no GIL
    flat = np.frombuffer(raw, dtype=np.uint8)
    if filter_mask & _SHUFFLE_SKIPPED:
        return flat.view(dtype).copy()
    return _transpose_bytes(flat.reshape(dtype.itemsize, chunk_records)).view(dtype).reshape(chunk_records)


def decode_chunk_columns(filter_mask: int, data: bytes, dtype: np.dtype, chunk_records: int,
                         out: dict[str, np.ndarray], start: int) -> None:
    """Write a chunk's records into the columns `out` from row `start` on (as many as fit), straight from the
    shuffled bytes (byte k of every record together): no array of records in between, whose fields numpy
    would copy out strided. Threads may fill disjoint rows of the same columns."""
    planes = inflate_planes(filter_mask, data, dtype, chunk_records)
    count = min(chunk_records, len(next(iter(out.values()))) - start)
    for name in dtype.names or ():
        field_from_planes(planes, dtype, name, 0, count, out[name][start:start + count])
