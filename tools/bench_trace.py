"""Throughput of the HDF5 trace: write and read N synthetic access records in a temporary directory.

Records go to four levels round robin in blocks of `--block` records, shaped
like a simulator's output (rising cycles, tile addresses, a few word counts,
layers in order); `--random` makes addresses, word counts and durations
random, the worst case for compression. Prints records/s for writing
(append + close; also without the cost of making the blocks), for a full read,
for a one-layer read through the index, and the file size.
Usage: python tools/bench_trace.py [--records N] [--block N] [--compression gzip|lzf|none] [--random]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Iterator

import numpy as np

import hwsim.trace
from hwsim.trace import TraceWriter, empty_records

LEVELS = ("dram", "glb", "noc", "rf")
LAYERS = tuple(f"layer{i}" for i in range(20))


def synthetic_blocks(n_records: int, block_records: int, randomise: bool) -> Iterator[tuple[str, np.ndarray]]:
    """(level, block) pairs totalling `n_records`, layers advancing evenly from first to last."""
    rng = np.random.default_rng(1)
    i = np.arange(block_records)
    words = np.array([16, 32, 64, 12])[i % 4]
    address = (i * 16) % 8192
    duration_cycles = 4 + i % 3
    records_per_layer = -(-n_records // len(LAYERS))
    for first in range(0, n_records, block_records):
        n = min(block_records, n_records - first)
        if randomise:
            words, address = rng.integers(1, 4096, n), rng.integers(0, 1 << 30, n)
            duration_cycles = rng.integers(1, 5000, n)
        block = empty_records(n)
        block["start_cycle"] = 2 * (first + i[:n])
        block["end_cycle"] = block["start_cycle"] + duration_cycles[:n]
        block["op"] = i[:n] % 3
        block["operand"] = (i[:n] // 4) % 4
        block["layer"] = first // records_per_layer
        block["step"] = (first + i[:n]) // 8
        block["address"] = address[:n]
        block["words"] = words[:n]
        yield LEVELS[(first // block_records) % len(LEVELS)], block


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=20_000_000)
    parser.add_argument("--block", type=int, default=1024, help="records per append call")
    parser.add_argument("--compression", default="gzip")
    parser.add_argument("--random", action="store_true", help="incompressible addresses, words and durations")
    args = parser.parse_args()
    n = args.records
    print(f"{n:,} records, {args.block}-record blocks, compression {args.compression}, "
          f"{'random' if args.random else 'regular'} data, {os.cpu_count()} cores")

    start = time.perf_counter()
    for _ in synthetic_blocks(n, args.block, args.random):
        pass
    make_s = time.perf_counter() - start

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.h5")
        start = time.perf_counter()
        with TraceWriter(path, LEVELS, LAYERS, ["glb"], {"bench": True}, compression=args.compression) as writer:
            for level, block in synthetic_blocks(n, args.block, args.random):
                writer.append(level, block)
        write_s = time.perf_counter() - start
        size_bytes = os.path.getsize(path)

        with hwsim.trace.open(path) as trace:
            start = time.perf_counter()
            seen = sum(len(b) for level in LEVELS for b in trace.records(level))
            read_s = time.perf_counter() - start
            assert seen == n, (seen, n)
            start = time.perf_counter()
            one_layer = sum(len(b) for level in LEVELS for b in trace.records(level, layer=LAYERS[7]))
            layer_s = time.perf_counter() - start

    print(f"write (make blocks + append + close) {n / write_s / 1e6:7.2f} M records/s  ({write_s:.2f} s)")
    print(f"write minus making the blocks        {n / (write_s - make_s) / 1e6:7.2f} M records/s  "
          f"(making them alone: {make_s:.2f} s)")
    print(f"read, every record                   {n / read_s / 1e6:7.2f} M records/s  ({read_s:.2f} s)")
    print(f"read one layer via the index         {one_layer:,} records in {layer_s:.3f} s")
    print(f"file size {size_bytes / 1e6:.1f} MB, {size_bytes / n:.2f} bytes/record "
          f"(raw {hwsim.trace.RECORD_DTYPE.itemsize})")


if __name__ == "__main__":
    main()
