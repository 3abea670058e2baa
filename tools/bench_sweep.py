"""Wall time of a 200-point `estimate` sweep of ResNet-50 with --jobs 1 and --jobs 2, and the speed-up.

The sweep (GLB ifmap+psum size × PE rows × PE columns × batch = 5 × 5 × 4 × 2 points) is written to
a temporary folder and run end to end as `hwsim sweep` subprocesses (interpreter start-up included),
each into a fresh output folder; the median of --repeat runs is reported, with the load average.
Both result tables must be equal (the wall-time column aside).
Usage: python tools/bench_sweep.py [--repeat N] [--jobs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from hwsim.sweep.results import read_table

SWEEP = {
    "name": "bench-resnet50",
    "config": "eyeriss-v1",
    "networks": ["resnet50"],
    "mode": "estimate",
    "axes": {
        "glb.data_size": ["32 KiB", "64 KiB", "100 KiB", "128 KiB", "256 KiB"],
        "pe_array.rows": [8, 12, 16, 24, 32],
        "pe_array.cols": [8, 14, 16, 28],
        "batch": [1, 2],
    },
}
POINTS = 5 * 5 * 4 * 2


def run_once(sweep: Path, out: Path, jobs: int) -> float:
    """Seconds for one `hwsim sweep` into the empty folder `out`."""
    start_s = time.perf_counter()
    subprocess.run([sys.executable, "-m", "hwsim.cli.main", "sweep", str(sweep), "--jobs", str(jobs),
                    "--out", str(out), "--json"], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start_s


def table(out: Path) -> list[dict[str, object]]:
    """The results table by point id, without wall times."""
    path = next(p for p in (out / "results.parquet", out / "results.csv") if p.exists())
    rows = read_table(path)
    for row in rows:
        row.pop("wall_s")
    return sorted(rows, key=lambda r: str(r["point_id"]))


def _load(averages: tuple[float, float, float]) -> str:
    return "/".join(f"{v:.2f}" for v in averages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs per job count (median reported)")
    parser.add_argument("--jobs", type=int, default=2, help="the parallel job count beside --jobs 1")
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="hwsim-bench-sweep-") as tmp:
        sweep = Path(tmp) / "sweep.yaml"
        sweep.write_text(yaml.safe_dump(SWEEP, sort_keys=False))
        times: dict[int, list[float]] = {1: [], args.jobs: []}
        for k in range(args.repeat):
            for jobs in times:  # interleaved, so a change of machine load hits both
                times[jobs].append(run_once(sweep, Path(tmp) / f"out-{jobs}-{k}", jobs))
        rows = {jobs: table(Path(tmp) / f"out-{jobs}-0") for jobs in times}
        if len(rows[1]) != POINTS or any(r["status"] != "ok" for r in rows[1]):
            sys.exit(f"expected {POINTS} ok points, got {len(rows[1])}")
        if rows[1] != rows[args.jobs]:
            sys.exit(f"--jobs 1 and --jobs {args.jobs} gave different tables")
    serial_s, parallel_s = statistics.median(times[1]), statistics.median(times[args.jobs])
    print(f"{POINTS}-point estimate sweep of ResNet-50 on eyeriss-v1, {os.cpu_count()} CPUs, median of "
          f"{args.repeat}; load average (1, 5, 15 min) before {_load(load_before)}, after {_load(os.getloadavg())}")
    print(f"  --jobs 1: {serial_s:6.2f} s   ({', '.join(f'{t:.2f}' for t in times[1])})")
    print(f"  --jobs {args.jobs}: {parallel_s:6.2f} s   ({', '.join(f'{t:.2f}' for t in times[args.jobs])})")
    print(f"  speed-up {serial_s / parallel_s:.2f}x; tables equal ({POINTS} points)")


if __name__ == "__main__":
    main()
