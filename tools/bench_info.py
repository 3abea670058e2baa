"""Wall time of `hwsim info` on ResNet-50 (zoo and ONNX), beside interpreter start-up.

Prints the median of several runs of each command, measured in one run so the
ratios are comparable, and the ratio to the 2 s target of the foundation issue.
Usage: python tools/bench_info.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import onnx

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
TARGET_S = 2.0


def wall_seconds(cmd: list[str], repeat: int) -> float:
    """Median wall time of `cmd` over `repeat` runs (output discarded)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    hwsim = [sys.executable, "-m", "hwsim.cli.main"]
    cases = {
        "python -c pass (start-up)": [sys.executable, "-c", "pass"],
        "hwsim --version": [*hwsim, "--version"],
        "hwsim info resnet50 --json": [*hwsim, "info", "resnet50", "--json"],
        "hwsim info light_resnet50.onnx --json": [*hwsim, "info", os.path.join(LIGHT, "light_resnet50.onnx"),
                                                  "--json"],
        "hwsim info light_densenet121.onnx --json": [*hwsim, "info",
                                                     os.path.join(LIGHT, "light_densenet121.onnx"), "--json"],
    }
    print_timings(cases, args.repeat, TARGET_S)


def print_timings(cases: dict[str, list[str]], repeat: int, target_s: float) -> None:
    """Median wall time of each command, its ratio to the first (interpreter start-up) and to the target."""
    width = max(len(label) for label in cases) + 2
    print(f"{'command':{width}s} {'median s':>9s} {'x start-up':>10s} {f'/ {target_s:g} s target':>12s}")
    base = None
    for label, cmd in cases.items():
        t = wall_seconds(cmd, repeat)
        base = base or t
        print(f"{label:{width}s} {t:9.3f} {t / base:10.1f} {t / target_s:12.2f}")


if __name__ == "__main__":
    main()
