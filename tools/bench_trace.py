"""Throughput of the HDF5 trace: writing and reading synthetic records, and `hwsim trace summary|query` on traces.

Default: write and read N synthetic access records in a temporary directory.
Records go to four levels round robin in blocks of `--block` records, shaped
like a simulator's output (rising cycles, tile addresses, a few word counts,
layers in order); `--random` makes addresses, word counts and durations
random, the worst case for compression. Prints records/s for writing
(append + close; also without the cost of making the blocks), for a full read,
for a one-layer read through the index, and the file size.

--cli TRACE.h5 [...]: `hwsim trace summary FILE --json`, `hwsim trace query FILE --json` (every dram record
matches) and a filtered query (dram reads of ifmaps in the middle third of the trace's cycles), each in a fresh
process of its own: records read (summary: every level; query: the level's, all of whose chunks are read), CPU
seconds (user + sys of that process, its decoding threads included), wall seconds, records per CPU-second and
peak RSS. The goal is >= 10 M records per CPU-second with a peak RSS that does not grow with the trace: give
traces of two sizes. With --against REV the same commands run on revision REV too, ABBA (REV, this, this, REV
for --repeat 2), and the outputs of the two sides must be identical.

--make OUT --from TRACE --copies K: write OUT holding K copies of TRACE's records (each copy's cycles after the
previous copy's last), through the trace writer: a large input for --cli without a long simulation.

Usage: python tools/bench_trace.py [--records N] [--block N] [--compression gzip|lzf|none] [--random]
       python tools/bench_trace.py --cli TRACE.h5 [TRACE.h5 ...] [--against REV] [--repeat N]
       python tools/bench_trace.py --make OUT.h5 --from TRACE.h5 --copies K
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np
from bench_sim import Measured, load_average, measure, print_table
from revisions import ROOT, resolve_commit, revision_env, worktree

import hwsim.trace
from hwsim.trace import TraceWriter, empty_records
from hwsim.trace.writer import RESERVED_ATTRS

LEVELS = ("dram", "glb", "noc", "rf")
LAYERS = tuple(f"layer{i}" for i in range(20))
MIB = 1 << 20
TARGET_RECORDS_PER_CPU_S = 10e6


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


def bench_synthetic(args: argparse.Namespace) -> None:
    """Write and read `args.records` synthetic records; records/s of each phase and the file size."""
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


# ----- hwsim trace summary | query on given traces -------------------------------------------------------------


@dataclass(frozen=True)
class TraceCommand:
    """One command timed on one trace, and the records it reads."""

    trace: Path
    name: str
    argv: tuple[str, ...]
    records: int


def trace_commands(path: Path) -> list[TraceCommand]:
    """Summary, an unfiltered dram query and a filtered one (dram reads of ifmaps over the middle third of the
    cycles from the first dram record's start to the last one's end) of the trace at `path`."""
    with hwsim.trace.open(path) as trace:
        every_level = sum(trace.n_records(level) for level in trace.levels)
        dram = trace.n_records("dram") if "dram" in trace.levels else 0
    with h5py.File(path, "r") as file:  # two chunks read: the window's ends
        first_cycle = int(file["levels/dram"][0]["start_cycle"]) if dram else 0
        last_cycle = int(file["levels/dram"][-1]["end_cycle"]) if dram else 3
    third = max(1, (last_cycle - first_cycle) // 3)
    window = f"{first_cycle + third}:{first_cycle + 2 * third}"
    file = str(path)
    commands = [TraceCommand(path, "summary", ("trace", "summary", file, "--json"), every_level)]
    if dram:
        commands += [TraceCommand(path, "query dram", ("trace", "query", file, "--json"), dram),
                     TraceCommand(path, f"query dram read ifmap {window}",
                                  ("trace", "query", file, "--op", "read", "--operand", "ifmap", "--cycles", window,
                                   "--json"), dram)]
    return commands


def run_side(env: dict[str, str], command: TraceCommand, work: Path, tag: str) -> Measured:
    """`command` run by the hwsim that `env` imports (PYTHONPATH; -P keeps the working directory's off the path)."""
    return measure([sys.executable, "-P", "-m", "hwsim.cli.main", *command.argv], work, tag, env)


def bench_cli(paths: list[Path], against: str | None, repeat: int) -> None:
    """Each command of each trace on this checkout (and on `against`, alternating which side goes first); medians
    of `repeat` runs a side; the sides' outputs compared."""
    sides = {"this": revision_env(ROOT)}
    commit = ""
    if against:
        commit = resolve_commit(against)
        sides = {"base": revision_env(worktree("base", commit)), **sides}
    print(f"bench_trace --cli: {load_average()}; this checkout" + (f" against {commit[:12]} (base), ABBA"
                                                                  if commit else ""))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for command in (c for path in paths for c in trace_commands(path)):
            runs: dict[str, list[Measured]] = {side: [] for side in sides}
            for k in range(repeat):
                for side in sides if k % 2 == 0 else reversed(sides):
                    runs[side].append(run_side(sides[side], command, work, f"{side}{k}"))
            rows.extend(result_rows(command, runs))
    print_table(["trace", "command", "records", "side", "CPU s", "wall s", "M records/CPU-s", "peak RSS MiB",
                 "this/base CPU", "same output"], rows)
    print(f"target: >= {TARGET_RECORDS_PER_CPU_S / 1e6:.0f} M records per CPU-second, peak RSS flat in the "
          "trace's size")


def result_rows(command: TraceCommand, runs: dict[str, list[Measured]]) -> list[list[str]]:
    """A table row per side: medians of its runs; the CPU ratio and whether the outputs equal this side's."""
    this_cpu_s = statistics.median(m.cpu_s for m in runs["this"])
    this_output = json.loads(runs["this"][0].stdout)
    rows = []
    for side, measured in runs.items():
        cpu_s = statistics.median(m.cpu_s for m in measured)
        wall_s = statistics.median(m.wall_s for m in measured)
        rss_mib = max(m.peak_rss_bytes for m in measured) / MIB
        same = all(json.loads(m.stdout) == this_output for m in measured)
        rows.append([command.trace.name, command.name, f"{command.records:,}", side, f"{cpu_s:.2f}",
                     f"{wall_s:.2f}", f"{command.records / cpu_s / 1e6:.1f}", f"{rss_mib:.0f}",
                     f"{this_cpu_s / cpu_s:.3f}" if side == "base" else "", "yes" if same else "NO"])
    return rows


# ----- a large trace from a small one ---------------------------------------------------------------------------


def make_copies(source: Path, out: Path, copies: int) -> None:
    """Write `out` with `copies` copies of `source`'s records per level, each copy shifted in cycles past the
    previous copy's last end (steps and addresses as they are), the source's tables and attributes kept."""
    with hwsim.trace.open(source) as trace:
        attrs = {k: v for k, v in trace.attrs.items()
                 if k not in RESERVED_ATTRS and isinstance(v, (str, int, float, bool))}
        span_cycles = 1 + max((int(b["end_cycle"].max()) for level in trace.levels
                               for b in trace.column_blocks(level)), default=0)
        start = time.perf_counter()
        with TraceWriter(out, trace.levels, trace.layers, trace.buffers, attrs,
                         units=trace.unit_names) as writer:
            for copy in range(copies):
                for level in trace.levels:
                    for block in trace.records(level):
                        block["start_cycle"] += copy * span_cycles
                        block["end_cycle"] += copy * span_cycles
                        writer.append(level, block)
        records = copies * sum(trace.n_records(level) for level in trace.levels)
    print(f"{out}: {copies} copies of {source}, {records:,} records in {time.perf_counter() - start:.1f} s, "
          f"{os.path.getsize(out) / 1e6:.1f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=20_000_000)
    parser.add_argument("--block", type=int, default=1024, help="records per append call")
    parser.add_argument("--compression", default="gzip")
    parser.add_argument("--random", action="store_true", help="incompressible addresses, words and durations")
    parser.add_argument("--cli", nargs="+", type=Path, metavar="TRACE.h5",
                        help="time hwsim trace summary and query on these traces instead")
    parser.add_argument("--against", metavar="REV", default=None, help="with --cli: the revision beside this one")
    parser.add_argument("--repeat", type=int, default=2, help="with --cli: runs of each command per side (default 2)")
    parser.add_argument("--make", type=Path, metavar="OUT.h5", help="write a trace of --copies copies of --from")
    parser.add_argument("--from", dest="source", type=Path, metavar="TRACE.h5")
    parser.add_argument("--copies", type=int, default=5)
    args = parser.parse_args()
    if args.make:
        if args.source is None:
            parser.error("--make needs --from TRACE.h5")
        make_copies(args.source, args.make, args.copies)
    elif args.cli:
        bench_cli(args.cli, args.against, args.repeat)
    else:
        bench_synthetic(args)


if __name__ == "__main__":
    main()
