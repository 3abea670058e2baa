"""Speed of a depth-first simulation end to end: the optimiser, the schedule, the simulation into an HDF5
trace (DRAM per transaction, line buffer and PE levels) and the model-against-trace check, for one front
point. Target (issue 5): the minimum-memory point of DMCNN-VD at 3840x2160 in <= 5 min on the 2-core
machine. The figures depend on the machine and its load, so the load average is printed with them.

Usage: python tools/bench_depthfirst.py [--network dmcnn-vd] [--input 3840x2160] [--point min-memory]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hwsim.flows.depth_first import NAMED_POINTS, check_point
from hwsim.hardware import load_config
from hwsim.mapping.depth_first import DepthFirstMapping
from hwsim.search.depth_first import depth_first_pareto
from hwsim.trace import open as open_trace
from hwsim.workload.network import load_network

TARGET_S = 300.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--network", default="dmcnn-vd")
    ap.add_argument("--input", default="3840x2160", help="WxH")
    ap.add_argument("--point", default="min-memory", help="front index or min-memory / min-dram")
    ap.add_argument("--hw", default="depthfirst-edge")
    args = ap.parse_args()
    w, h = (int(v) for v in args.input.split("x"))
    hw = load_config(args.hw)
    t0 = time.perf_counter()
    graph = load_network(args.network, (h, w)).graph
    front = depth_first_pareto(graph, hw.precision_bits).front
    t1 = time.perf_counter()
    p = front[NAMED_POINTS[args.point] if args.point in NAMED_POINTS else int(args.point)]
    mapping = DepthFirstMapping(p.cuts, p.tiling, p.weights)
    done = [0]

    def progress(index: int, run) -> None:  # type: ignore[no-untyped-def]
        done[0] += 1
        print(f"  stack {index + 1}/{len(p.tiling)} {run.name}: {run.steps:,} steps, "
              f"{time.perf_counter() - t1:.0f} s", flush=True)

    with tempfile.TemporaryDirectory(prefix="hwsim-bench-df-") as tmp:
        path = Path(tmp) / "df.h5"
        check = check_point(graph, hw, mapping, path, progress=progress)
        t2 = time.perf_counter()
        with open_trace(path) as trace:
            records = sum(trace.n_records(level) for level in ("dram", "line_buffer", "pe"))
        size = path.stat().st_size
    total = t2 - t0
    print(f"{args.network} {w}x{h}, point {args.point}: {len(p.tiling)} stacks, tiling {list(p.tiling)}, "
          f"{p.weights}")
    print(f"optimiser + network {t1 - t0:.1f} s; schedule + simulation + trace + check {t2 - t1:.1f} s; "
          f"total {total:.1f} s = {total / TARGET_S:.2f} of the {TARGET_S:.0f} s target")
    print(f"trace: {records:,} records, {size / 2**20:.1f} MiB; simulated latency "
          f"{check.cycles / hw.clock_hz * 1e3:,.1f} ms")
    print(f"line buffers: model {check.analytic_line_buffer_bytes:,} B, simulated rings "
          f"{check.simulated_line_buffer_bytes:,} B (simultaneous peak {check.simulated_simultaneous_peak_bytes:,} B); "
          f"DRAM model {check.analytic_dram_bytes:,} B, "
          f"simulated {check.simulated_dram_bytes:,} B; equal: {check.ok}")
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0 if check.ok else 1


if __name__ == "__main__":
    sys.exit(main())
