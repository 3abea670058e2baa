"""Peak memory and CPU time of a simulation as its input grows: is the memory bounded independently of the input?

Three workloads, each input size in a fresh measurement process (tools/bench_sim.py's `measure`: the peak RSS and
the CPU seconds, user + sys, of that one child, so every figure is one point's):

- `srgan`: SRGAN layer by layer, `hwsim simulate srgan --hw eyeriss-v1 --input WxH` (every trace level, the trace
  written);
- `dmcnn_vd`: DMCNN-VD depth-first, one front point end to end, `hwsim depthfirst dmcnn_vd --input WxH --simulate
  min-memory` (the front search, the simulation into a trace, the model-against-trace check and the trace's
  validation, which reads the whole trace back);
- `dmcnn_vd-sim`: the min-memory point's simulation alone, `hwsim simulate dmcnn_vd --mapping PLAN` (the plan
  written by `hwsim depthfirst --out` beforehand, not measured).

Targets (a benchmark's, never a test's: they depend on the machine and its load, printed with the figures): peak
RSS <= 1 GiB at every size; SRGAN at 1280x720 <= 300 CPU-s; DMCNN-VD at 3840x2160 end to end <= 60 CPU-s. The last
columns give the peak RSS over the smallest size's beside the pixels over the smallest's: bounded memory stays
near 1 while the pixels grow.

--against REV runs every point on another revision of hwsim too (a git worktree of REV outside the repository),
before this checkout's, and checks that both simulated the same cycles (SRGAN: and the same energy and DRAM bytes;
DMCNN-VD: and the same check verdict).

Usage: python tools/bench_memory.py [--srgan 160x90,320x180,640x360] [--dmcnn 960x540,1920x1080]
                                    [--dmcnn-sim 960x540,1920x1080] [--hw eyeriss-v1] [--point min-memory]
                                    [--against REV]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench_sim import ROOT, Measured, load_average, measure, print_table
from revisions import resolve_commit, revision_env, worktree

GIB = 1 << 30
MIB = 1 << 20
TARGET_RSS_BYTES = GIB
TARGET_CPU_S = {("srgan", "1280x720"): 300.0, ("dmcnn_vd", "3840x2160"): 60.0}
HWSIM = [sys.executable, "-P", "-m", "hwsim.cli.main"]  # -P: the side's PYTHONPATH, not the working directory
DEPTH_FIRST_HW = "depthfirst-edge"  # what `hwsim depthfirst --simulate` runs a point on


@dataclass(frozen=True)
class Run:
    """One point's inputs: a workload at an input size on one side, with its scratch files."""

    size: str
    hw: str
    point: str  # DMCNN-VD's front point
    env: dict[str, str]  # runs the side's hwsim
    work_dir: Path
    tag: str

    @property
    def trace(self) -> Path:
        return self.work_dir / f"{self.tag}.h5"

    @property
    def plan(self) -> Path:
        return self.work_dir / f"{self.tag}.yaml"


@dataclass(frozen=True)
class Workload:
    """What is measured at each size: the command, the figures both sides must agree on, what runs before."""

    name: str
    command: Callable[[Run], list[str]]
    figures: Callable[[str], dict[str, object]]
    prepare: Callable[[Run], None] | None = None


@dataclass(frozen=True)
class Point:
    """One measured run."""

    workload: str
    size: str
    side: str
    measured: Measured
    figures: dict[str, object]

    @property
    def pixels(self) -> int:
        width, height = (int(v) for v in self.size.split("x"))
        return width * height


def srgan_command(run: Run) -> list[str]:
    """SRGAN simulated layer by layer (every trace level, the trace written)."""
    return [*HWSIM, "simulate", "srgan", "--hw", run.hw, "--input", run.size, "--out", str(run.trace), "--json"]


def simulate_figures(stdout: str) -> dict[str, object]:
    """The figures of a `hwsim simulate --json` run both sides must agree on."""
    doc = json.loads(stdout)
    return {"cycles": doc["cycles"], "energy_pj": sum(doc["totals"]["energy_pj"].values()),
            "dram_bytes": doc["totals"]["dram_bytes"]}


def dmcnn_command(run: Run) -> list[str]:
    """DMCNN-VD's front point end to end: search, simulation, check."""
    return [*HWSIM, "depthfirst", "dmcnn_vd", "--input", run.size, "--simulate", run.point, "--trace", str(run.trace),
            "--json"]


def dmcnn_figures(stdout: str) -> dict[str, object]:
    """The simulated point's cycles and whether its check passed."""
    simulated = json.loads(stdout)["simulated"][0]
    return {"cycles": simulated["cycles"], "check ok": simulated["ok"]}


def write_plan(run: Run) -> None:
    """The min-memory point's plan, for `dmcnn_sim_command` (the front search, not measured)."""
    if run.point != "min-memory":
        sys.exit(f"--point {run.point}: --dmcnn-sim replays the min-memory point only (what `hwsim depthfirst "
                 "--out` writes without simulating)")
    subprocess.run([*HWSIM, "depthfirst", "dmcnn_vd", "--input", run.size, "--hw", DEPTH_FIRST_HW, "--out",
                    str(run.plan)], cwd=ROOT, env=run.env, check=True, capture_output=True)


def dmcnn_sim_command(run: Run) -> list[str]:
    """The point's simulation alone, replaying its plan."""
    return [*HWSIM, "simulate", "dmcnn_vd", "--input", run.size, "--hw", DEPTH_FIRST_HW, "--mapping", str(run.plan),
            "--out", str(run.trace), "--json"]


WORKLOADS = {"srgan": Workload("srgan", srgan_command, simulate_figures),
             "dmcnn": Workload("dmcnn_vd", dmcnn_command, dmcnn_figures),
             "dmcnn_sim": Workload("dmcnn_vd-sim", dmcnn_sim_command, simulate_figures, write_plan)}


def run_point(workload: Workload, run: Run, side: str) -> Point:
    """One workload at one size on one side, in its own measurement process; its scratch files are deleted."""
    if workload.prepare is not None:
        workload.prepare(run)
    measured = measure(workload.command(run), run.work_dir, run.tag, run.env)
    run.trace.unlink(missing_ok=True)
    run.plan.unlink(missing_ok=True)
    print(f"  {run.tag}: {measured.cpu_s:.1f} CPU-s, {measured.wall_s:.1f} s wall, peak RSS "
          f"{measured.peak_rss_bytes / MIB:.0f} MiB", flush=True)
    return Point(workload.name, run.size, side, measured, workload.figures(measured.stdout))


def verdict(value: float, target: float | None) -> str:
    if target is None:
        return "-"
    return f"{value / target:.2f} {'ok' if value <= target else 'MISS'}"


def print_points(points: list[Point]) -> None:
    """One row per point: CPU and wall seconds, peak RSS against the target, and its growth over the smallest."""
    smallest: dict[tuple[str, str], Point] = {}
    for p in points:
        key = (p.workload, p.side)
        if key not in smallest or p.pixels < smallest[key].pixels:
            smallest[key] = p
    rows = []
    for p in points:
        first = smallest[(p.workload, p.side)]
        rows.append([p.workload, p.size, p.side, f"{p.measured.cpu_s:.1f}",
                     verdict(p.measured.cpu_s, TARGET_CPU_S.get((p.workload, p.size))), f"{p.measured.wall_s:.1f}",
                     f"{p.measured.peak_rss_bytes / MIB:.0f}", verdict(p.measured.peak_rss_bytes, TARGET_RSS_BYTES),
                     f"{p.measured.peak_rss_bytes / first.measured.peak_rss_bytes:.2f}",
                     f"{p.pixels / first.pixels:.0f}"])
    print_table(["workload", "input", "side", "CPU s", "/ target", "wall s", "peak RSS MiB", "/ 1 GiB",
                 "RSS / smallest", "pixels / smallest"], rows)
    print("targets: peak RSS <= 1 GiB at every size; SRGAN 1280x720 <= 300 CPU-s; DMCNN-VD 3840x2160 end to end "
          "<= 60 CPU-s (ratio = measured / target)")


def check_sides(points: list[Point]) -> bool:
    """Whether every point's figures are the same on both sides; prints the ones that differ."""
    by_key: dict[tuple[str, str], dict[str, Point]] = {}
    for p in points:
        by_key.setdefault((p.workload, p.size), {})[p.side] = p
    same = True
    for (workload, size), sides in by_key.items():
        if len(sides) == 2 and sides["base"].figures != sides["this"].figures:
            same = False
            print(f"{workload} {size}: base {sides['base'].figures} != this {sides['this'].figures}")
    return same


def sizes(text: str) -> list[str]:
    return [s.strip() for s in text.split(",") if s.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--srgan", default="160x90,320x180,640x360", help="SRGAN input sizes WxH, comma-separated "
                                                                        "('' for none)")
    parser.add_argument("--dmcnn", default="960x540,1920x1080", help="DMCNN-VD end-to-end input sizes ('' for none)")
    parser.add_argument("--dmcnn-sim", default="", help="DMCNN-VD simulation-alone input sizes (default none)")
    parser.add_argument("--hw", default="eyeriss-v1", help="the config SRGAN is simulated on")
    parser.add_argument("--point", default="min-memory", help="DMCNN-VD's front point: index, min-memory, min-dram "
                                                              "(--dmcnn-sim: min-memory only)")
    parser.add_argument("--against", metavar="REV", default=None, help="also run every point on revision REV")
    args = parser.parse_args()
    sides = {"this": ROOT}
    if args.against:
        sides = {"base": worktree("base", resolve_commit(args.against)), **sides}
    print(f"bench_memory: {load_average()}, python {sys.version.split()[0]}; sides: "
          + ", ".join(f"{side} {root}" for side, root in sides.items()), flush=True)
    chosen = [(WORKLOADS["srgan"], sizes(args.srgan)), (WORKLOADS["dmcnn"], sizes(args.dmcnn)),
              (WORKLOADS["dmcnn_sim"], sizes(args.dmcnn_sim))]
    points = []
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        for workload, inputs in chosen:
            for size in inputs:
                for side, root in sides.items():
                    tag = f"{workload.name}-{size}-{side}"
                    run = Run(size, args.hw, args.point, revision_env(root), Path(tmp), tag)
                    points.append(run_point(workload, run, side))
    print()
    print_points(points)
    print(f"({load_average()})")
    return 0 if check_sides(points) else 1


if __name__ == "__main__":
    sys.exit(main())
