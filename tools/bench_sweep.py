"""Sweep throughput: the local pool against one process, and with --dask against a Dask LocalCluster.

Default: the wall time of a 200-point `estimate` sweep of ResNet-50 with --jobs 1 and --jobs 2, and the
speed-up. The sweep (GLB ifmap+psum size × PE rows × PE columns × batch = 5 × 5 × 4 × 2 points) is
written to a temporary folder and run end to end as `hwsim sweep` subprocesses (interpreter start-up
included), each into a fresh output folder; the median of --repeat runs is reported, with the load
average. Both result tables must be equal (the wall-time column aside).

--dask: a 300-point `simulate` sweep (SqueezeNet 1.1 at 32x32 on eyeriss-v1, PE rows × PE columns × GLB
ifmap+psum size = 5 × 6 × 10; about 0.47 CPU-s a point) on the local pool and on a Dask LocalCluster, both
with --jobs N, interleaved: points per second, wall and CPU seconds (user + sys of the sweep and every
process under it: this process adopts orphans as a subreaper and reaps them, so a worker that outlived its
sweep is counted and named). The target: Dask within 1.2x of the pool's points/s. It also times what a
LocalCluster costs to start and stop (a 2-point sweep with the size threshold lifted, against the pool),
the figure hwsim.sweep.executors' LOCAL_CLUSTER_MIN_S_PER_WORKER rests on.

Measured on the 2-core machine, shared (load average 1.8-6), pool against LocalCluster, --jobs 2:
  Dask's default polling:  1.49 vs 1.14 points/s, 117 vs 145 CPU-s (ratio 1.31)
  the cluster as started now (executors.LOCAL_CLUSTER_CONFIG), median of 2 at load ~5.5:
                           1.21 vs 1.48 points/s, 145 vs 142 CPU-s (ratio 0.81)
  the same, one run at load 1.8-4: 2.22 vs 1.97 points/s, 135 vs 153 CPU-s, wall 135 vs 152 s (ratio 1.13)
  a LocalCluster's start and stop: +2.7 to +5.8 s wall, +2.4 to +2.9 CPU-s; no process left running.
Usage: python tools/bench_sweep.py [--repeat N] [--jobs N]
       python tools/bench_sweep.py --dask [--points N] [--repeat N] [--jobs N]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
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

SIMULATE_PER_GLB_SIZE = 5 * 6  # points per GLB size of the --dask sweep
# from this many simulated points on 2 workers `--executor dask` starts a LocalCluster by itself (0.5 CPU-s a point
# estimated: hwsim.sweep.executors); fewer are run on one with the threshold lifted, to compare the same thing
LOCAL_CLUSTER_POINTS = 240


def simulate_sweep(points: int) -> dict[str, object]:
    """The --dask sweep with `points` points (a multiple of 30: that many GLB sizes over 5 × 6 arrays)."""
    return {
        "name": "bench-squeezenet-simulate",
        "config": "eyeriss-v1",
        "networks": [{"name": "squeezenet11", "input": "32x32"}],
        "mode": "simulate",
        "axes": {
            "pe_array.rows": [8, 10, 12, 14, 16],
            "pe_array.cols": [7, 8, 10, 12, 14, 16],
            "glb.data_size": [f"{16 * (k + 1)} KiB" for k in range(points // SIMULATE_PER_GLB_SIZE)],
        },
        "outputs": {"table": "csv", "traces": False},
    }


# `hwsim sweep` with a LocalCluster for any number of points: what starting and stopping one costs
FORCE_LOCAL_CLUSTER = """
import sys
import hwsim.sweep.executors as executors
executors.LOCAL_CLUSTER_MIN_S_PER_WORKER = 0.0
from hwsim.cli.main import main
sys.exit(main(sys.argv[1:]))
"""
PR_SET_CHILD_SUBREAPER = 36  # Linux prctl(2): orphaned descendants are re-parented to this process
REAP_LIMIT_S = 30.0  # how long a process left behind by a sweep may take to exit before it is named


@dataclass(frozen=True)
class Measured:
    """One sweep run: wall seconds, CPU seconds of it and everything under it, where its points ran (the
    summary's `where`), processes that outlived it."""

    wall_s: float
    cpu_s: float
    where: str
    leftovers: tuple[int, ...]


def adopt_orphans() -> None:
    """Become the subreaper of every process started from here (Linux), so that a process the sweep leaves
    behind is re-parented to this one: reaping it adds its CPU time to RUSAGE_CHILDREN and shows it."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1) != 0:
        sys.exit("this benchmark needs Linux's prctl(PR_SET_CHILD_SUBREAPER)")


def _reap_orphans() -> tuple[int, ...]:
    """Wait for the processes re-parented here (at most REAP_LIMIT_S); the pids of those still running then,
    which are killed."""
    deadline = time.monotonic() + REAP_LIMIT_S
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return ()  # none left
        if pid:
            continue
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    alive = tuple(int(p) for p in os.listdir("/proc") if p.isdigit() and _parent(int(p)) == os.getpid())
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    return alive


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def run_measured(argv: list[str]) -> Measured:
    """Run `argv` to completion (it must succeed) and what it cost, its descendants included."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start_s = time.perf_counter()
    done = subprocess.run(argv, check=True, stdout=subprocess.PIPE, text=True)
    wall_s = time.perf_counter() - start_s
    leftovers = _reap_orphans()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Measured(wall_s, cpu_s, json.loads(done.stdout)["where"], leftovers)


def sweep_argv(sweep: Path, out: Path, jobs: int, dask: bool, force_cluster: bool = False) -> list[str]:
    """`hwsim sweep` on the pool or with --executor dask (with `force_cluster`, a LocalCluster whatever the size)."""
    head = [sys.executable, "-c", FORCE_LOCAL_CLUSTER] if force_cluster else [sys.executable, "-m", "hwsim.cli.main"]
    tail = ["--executor", "dask"] if dask else []
    return [*head, "sweep", str(sweep), "--jobs", str(jobs), "--out", str(out), "--json", *tail]


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


def _median(runs: list[Measured], field: str) -> float:
    return float(statistics.median(getattr(r, field) for r in runs))


def _line(name: str, points: int, runs: list[Measured]) -> str:
    wall_s, cpu_s = _median(runs, "wall_s"), _median(runs, "cpu_s")
    left = sorted({p for r in runs for p in r.leftovers})
    return (f"  {name:<22} {points / wall_s:6.2f} points/s  wall {wall_s:7.2f} s  CPU {cpu_s:7.2f} s  on "
            f"{runs[0].where}"
            f"  (walls {', '.join(f'{r.wall_s:.1f}' for r in runs)}; CPU {', '.join(f'{r.cpu_s:.1f}' for r in runs)})"
            + (f"  LEFT RUNNING: {left}" if left else ""))


def bench_dask(points: int, repeat: int, jobs: int) -> None:
    """The --dask comparison (see the module's docstring)."""
    adopt_orphans()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="hwsim-bench-sweep-") as tmp:
        sweep, tiny = Path(tmp) / "simulate.yaml", Path(tmp) / "tiny.yaml"
        sweep.write_text(yaml.safe_dump(simulate_sweep(points), sort_keys=False))
        tiny.write_text(yaml.safe_dump({**SWEEP, "name": "tiny", "networks": ["phases_example"],
                                        "axes": {"pe_array.cols": [7, 14]}}, sort_keys=False))
        runs: dict[str, list[Measured]] = {"pool": [], "dask": [], "pool 2 points": [], "LocalCluster 2 points": []}
        for k in range(repeat):  # interleaved, so a change of machine load hits both
            runs["pool"].append(run_measured(sweep_argv(sweep, Path(tmp) / f"pool-{k}", jobs, False)))
            runs["dask"].append(run_measured(sweep_argv(sweep, Path(tmp) / f"dask-{k}", jobs, True,
                                                        force_cluster=points < LOCAL_CLUSTER_POINTS)))
            runs["pool 2 points"].append(run_measured(sweep_argv(tiny, Path(tmp) / f"tp-{k}", jobs, False)))
            runs["LocalCluster 2 points"].append(
                run_measured(sweep_argv(tiny, Path(tmp) / f"tc-{k}", jobs, True, force_cluster=True)))
        pool, dask = table(Path(tmp) / "pool-0"), table(Path(tmp) / "dask-0")
        if len(pool) != points or any(r["status"] != "ok" for r in pool):
            sys.exit(f"expected {points} ok points, got {len(pool)}")
        if pool != dask:
            sys.exit("the local pool and the LocalCluster gave different tables")
    print(f"{points}-point simulate sweep of SqueezeNet 1.1 at 32x32 on eyeriss-v1, --jobs {jobs}, {os.cpu_count()} "
          f"CPUs, median of {repeat}; load average (1, 5, 15 min) before {_load(load_before)}, after "
          f"{_load(os.getloadavg())}; CPU = user + sys of the sweep and all its processes")
    for name, measured in runs.items():
        print(_line(name, points if "2 points" not in name else 2, measured))
    ratio = _median(runs["dask"], "wall_s") / _median(runs["pool"], "wall_s")
    start_wall = _median(runs["LocalCluster 2 points"], "wall_s") - _median(runs["pool 2 points"], "wall_s")
    start_cpu = _median(runs["LocalCluster 2 points"], "cpu_s") - _median(runs["pool 2 points"], "cpu_s")
    print(f"  pool points/s / Dask points/s: {ratio:.3f} (target <= 1.2); tables equal ({points} points)")
    print(f"  a LocalCluster's start and stop: +{start_wall:.2f} s wall, +{start_cpu:.2f} CPU-s over the pool")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=None, help="runs per executor (median reported; default 3, "
                        "with --dask 1)")
    parser.add_argument("--jobs", type=int, default=2, help="the parallel job count (beside --jobs 1 without --dask)")
    parser.add_argument("--dask", action="store_true", help="a simulate sweep on the local pool and on Dask")
    parser.add_argument("--points", type=int, default=300, help="--dask: points of the sweep, a multiple of 30")
    args = parser.parse_args()
    if args.dask:
        if args.points <= 0 or args.points % SIMULATE_PER_GLB_SIZE:
            parser.error(f"--points {args.points}: give a positive multiple of {SIMULATE_PER_GLB_SIZE}")
        bench_dask(args.points, args.repeat or 1, args.jobs)
        return
    args.repeat = args.repeat or 3
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
