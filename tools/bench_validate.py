"""What the trace validator adds to `hwsim check`: wall time of each part, side by side, for zoo networks.

For each network `hwsim check` does three things, timed here in one process one after another: simulate the
network into a trace and derive its metrics, compute the closed form and compare counts, and validate the
trace's physics (`hwsim.check.validate`). The figure is the validator's share: validate / (simulate +
compare), the time it adds to a check that did not run it (target: at most 20 %). Every check must pass.
The machine's load average is printed with the figures: they depend on it.

The three 720p networks (srgan, dmcnn_vd, fsrcnn) run at 320x180 (W x H) by default: at 1280x720 SRGAN alone moves
52 GB through DRAM, some 800 million burst records, hours of simulation for any check. A network is given as
NAME or NAME@WxH.

Usage: python tools/bench_validate.py [--nets alexnet,resnet50,srgan@180x320] [--hw eyeriss-v1]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from hwsim.analytic.estimate import estimate_network
from hwsim.check import compare
from hwsim.check.validate import validate_trace
from hwsim.flows.simulate import simulate_network
from hwsim.hardware import load_config
from hwsim.trace import open as open_trace
from hwsim.workload import zoo

TARGET = 0.20  # the validator may add at most this share to a check's wall time


REDUCED = {"srgan": (180, 320), "dmcnn_vd": (180, 320), "fsrcnn": (180, 320)}  # (H, W) for the 720p networks


def default_nets() -> str:
    return ",".join(f"{n}@{REDUCED[n][1]}x{REDUCED[n][0]}" if n in REDUCED else n for n in zoo.names())


def measure(net: str, hw_name: str, tmp: Path) -> tuple[float, float, float, bool, bool]:
    """(simulate s, compare s, validate s, counts ok, physics ok) of one check of NAME or NAME@WxH."""
    name, _, size = net.partition("@")
    width, _, height = size.partition("x")
    graph, hw = zoo.build(name, (int(height), int(width)) if size else None), load_config(hw_name)
    t0 = time.perf_counter()
    trace_path = tmp / f"{name}.h5"
    sim = simulate_network(graph, hw, 1, trace_path)
    t1 = time.perf_counter()
    report = compare(estimate_network(sim.graph, sim.hardware, sim.mapping, sim.sparsity), sim.metrics)
    t2 = time.perf_counter()
    with open_trace(trace_path) as trace:
        physics = validate_trace(trace)
    t3 = time.perf_counter()
    (tmp / f"{name}.h5").unlink()
    return t1 - t0, t2 - t1, t3 - t2, report.ok, physics.ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nets", default=default_nets(), help="comma-separated zoo networks, NAME or NAME@WxH "
                                                                "(default: all, the 720p ones at 320x180)")
    parser.add_argument("--hw", default="eyeriss-v1")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; hardware {args.hw}")
    print(f"{'network':22s} {'simulate s':>10s} {'compare s':>10s} {'validate s':>10s} {'adds':>6s}  check")
    total = [0.0, 0.0, 0.0]
    failed = []
    with tempfile.TemporaryDirectory(prefix="hwsim-bench-validate-") as tmp:
        for net in args.nets.split(","):
            sim_s, cmp_s, val_s, counts_ok, physics_ok = measure(net, args.hw, Path(tmp))
            total = [total[0] + sim_s, total[1] + cmp_s, total[2] + val_s]
            verdict = "PASS" if counts_ok and physics_ok else f"FAIL (counts {counts_ok}, physics {physics_ok})"
            if verdict != "PASS":
                failed.append(net)
            print(f"{net:22s} {sim_s:10.2f} {cmp_s:10.2f} {val_s:10.2f} {val_s / (sim_s + cmp_s):6.1%}  {verdict}",
                  flush=True)
    share = total[2] / (total[0] + total[1])
    print(f"{'all':22s} {total[0]:10.2f} {total[1]:10.2f} {total[2]:10.2f} {share:6.1%}  "
          f"(target ≤ {TARGET:.0%}: {'met' if share <= TARGET else 'MISSED'})")
    return 1 if failed or share > TARGET else 0


if __name__ == "__main__":
    sys.exit(main())
