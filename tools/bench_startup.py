"""CPU seconds of hwsim's start-up: `hwsim --help` and `hwsim estimate resnet50 --hw eyeriss-v1`, this checkout
beside another revision (--against REV) in one run, ABBA, median of --repeat runs each.

Targets (the lean-core issue): `hwsim --help` ≤ 0.15 CPU-s, `hwsim estimate resnet50` ≤ 0.35 CPU-s. Printed:
per command the CPU seconds (user + sys of the command's process) and wall of each side, their ratio, and this
checkout against the target.

Usage: python tools/bench_startup.py [--against REV] [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from bench_sim import ROOT, load_average, measure
from revisions import resolve_commit, revision_env, worktree

COMMANDS = {"hwsim --help": (["--help"], 0.15),
            "hwsim estimate resnet50 --hw eyeriss-v1": (["estimate", "resnet50", "--hw", "eyeriss-v1"], 0.35)}


def _runs(root: Path, args: list[str], work: Path, tag: str) -> tuple[float, float]:
    """(CPU s, wall s) of one run of `python -P -m hwsim.cli.main ARGS` on the hwsim at `root`: both sides alike
    (-P: the working directory is not put ahead of the side's PYTHONPATH; bytecode cached, as an install runs)."""
    done = measure([sys.executable, "-P", "-m", "hwsim.cli.main", *args], work, tag, revision_env(root))
    return done.cpu_s, done.wall_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", metavar="REV", default=None, help="the revision beside this checkout")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each command per side (default 5)")
    args = parser.parse_args()
    base = worktree("base", resolve_commit(args.against)) if args.against else None
    print(f"bench_startup: {load_average()}, python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        print(f"{'command':42s} {'base CPU s':>10s} {'this CPU s':>10s} {'ratio':>6s} {'this wall s':>11s} "
              f"{'target':>7s} {'this/target':>11s}")
        for name, (argv, target_s) in COMMANDS.items():
            for root in (ROOT, base) if base is not None else (ROOT,):  # a first run writes the bytecode caches
                _runs(root, argv, work, "warm")
            sides: dict[str, list[tuple[float, float]]] = {"base": [], "this": []}
            for k in range(args.repeat):
                order = ("base", "this") if k % 2 == 0 else ("this", "base")  # ABBA
                for side in order:
                    if side == "base" and base is None:
                        continue
                    sides[side].append(_runs(base if side == "base" and base is not None else ROOT, argv, work,
                                             f"{side}{k}"))
            this_cpu = statistics.median(c for c, _ in sides["this"])
            this_wall = statistics.median(w for _, w in sides["this"])
            base_cpu = statistics.median(c for c, _ in sides["base"]) if sides["base"] else float("nan")
            print(f"{name:42s} {base_cpu:10.3f} {this_cpu:10.3f} {this_cpu / base_cpu:6.3f} {this_wall:11.3f} "
                  f"{target_s:7.2f} {this_cpu / target_s:11.2f}")


if __name__ == "__main__":
    main()
