"""Speed and memory of `hwsim simulate` on eyeriss-v1, against its targets and (optionally) SCALE-Sim.

For each network, one fresh `python -m hwsim.cli.main simulate NET --hw eyeriss-v1 --trace-levels
dram,glb --json` runs inside its own measurement process, which reports the wall time and the peak RSS
(`ru_maxrss` of RUSAGE_CHILDREN, so only that one child counts). From them: simulated MACs per
wall-second, trace records written per wall-second (records counted in the HDF5 trace over every
level), and each figure against the simulator's targets: AlexNet <= 10 s, ResNet-50 <= 60 s,
peak RSS < 2 GiB, >= 5 M records/s. Performance targets live here, in a benchmark, never in tests:
they depend on the machine and its load, so the load average is printed with the figures.

--with-peers installs SCALE-Sim 3.0.0 (PyPI `scalesim`, numpy<2.4) into a throwaway virtual
environment and runs its CLI, traces on as by default, on AlexNet's conv layers:
tools/data/scalesim-eyeriss-12x14.cfg (12x14 weight-stationary array, 108 kB SRAM) and
tools/data/scalesim-alexnet-conv.csv (ifmaps pre-padded; grouped CONV2/4/5 given ungrouped with
C/groups channels and all M filters, whose MACs equal the grouped layer's). The topology is checked
against `hwsim info alexnet` (output size and MACs per layer), and SCALE-Sim's cycles against the
closed form ceil(Sr/R)*ceil(Sc/C)*(2R + C + T - 2) - 1 (WS: Sr = window, Sc = filters, T = ofmap
pixels), so we know it simulated that workload. hwsim is then timed on the same layers (the conv
layers scheduled alone through the API, in a fresh process) and the MACs per wall-second compared;
the ratio is a rate, so `--peer-layers conv1,conv2` (a subset, for a slow machine) is a fair comparison.

Usage: python tools/bench_sim.py [--nets alexnet,resnet50] [--with-peers] [--peer-layers conv1,conv2]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import subprocess
import sys
import tempfile
import venv
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tools" / "data"
SCALESIM_CFG = DATA / "scalesim-eyeriss-12x14.cfg"
SCALESIM_TOPO = DATA / "scalesim-alexnet-conv.csv"
HW = "eyeriss-v1"
LEVELS = "dram,glb"
GIB = 1 << 30
TARGET_WALL_S = {"alexnet": 10.0, "resnet50": 60.0}
TARGET_RSS_BYTES = 2 * GIB
TARGET_RECORDS_PER_S = 5e6
ARRAY_ROWS, ARRAY_COLS = 12, 14  # as in the SCALE-Sim config

# Runs argv[3:] with stdout/stderr to the files argv[1], argv[2]; prints wall time and the child's peak RSS.
MEASURE = """
import json, resource, subprocess, sys, time
with open(sys.argv[1], "wb") as out, open(sys.argv[2], "wb") as err:
    start = time.perf_counter()
    code = subprocess.run(sys.argv[3:], stdout=out, stderr=err).returncode
    wall_s = time.perf_counter() - start
rss_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"wall_s": wall_s, "peak_rss_bytes": rss_kib * 1024, "returncode": code}))
"""

# hwsim on a subset of a network's layers, each scheduled as in the whole network (same levels as the CLI run).
SIM_SUBSET = """
import dataclasses, json, sys
from hwsim.hardware import load_config
from hwsim.mapping.mapper import network_schedule
from hwsim.sim.run import simulate_to_trace
from hwsim.workload.network import load_network
net, hw_name, names, out, levels = sys.argv[1], sys.argv[2], sys.argv[3].split(","), sys.argv[4], sys.argv[5]
hw = load_config(hw_name)
schedule = network_schedule(load_network(net).graph, hw, 1)
subset = dataclasses.replace(schedule, layers=tuple(ls for ls in schedule.layers if ls.layer.name in names))
result = simulate_to_trace(subset, hw, out, frozenset(levels.split(",")))
print(json.dumps({"cycles": result.cycles, "macs": sum(ls.layer.macs for ls in subset.layers)}))
"""


@dataclass(frozen=True)
class Measured:
    wall_s: float
    peak_rss_bytes: int
    stdout: str


def measure(cmd: list[str], work_dir: Path, tag: str) -> Measured:
    """Run `cmd` in its own measurement process; its wall time, peak RSS and stdout."""
    out, err = work_dir / f"{tag}.stdout", work_dir / f"{tag}.stderr"
    report = subprocess.run([sys.executable, "-c", MEASURE, str(out), str(err), *cmd], cwd=ROOT,
                            check=True, capture_output=True, text=True).stdout
    doc = json.loads(report)
    if doc["returncode"] != 0:
        sys.exit(f"{' '.join(cmd)} failed ({doc['returncode']}):\n{err.read_text()[-2000:]}")
    return Measured(doc["wall_s"], doc["peak_rss_bytes"], out.read_text())


def hwsim_json(*args: str) -> dict:
    return json.loads(subprocess.run([sys.executable, "-m", "hwsim.cli.main", *args, "--json"], cwd=ROOT,
                                     check=True, capture_output=True, text=True).stdout)


def trace_records(path: Path) -> int:
    import hwsim.trace

    with hwsim.trace.open(path) as trace:
        return sum(trace.n_records(level) for level in trace.levels)


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} (1/5/15 min) on {os.cpu_count()} cores"


def print_table(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows)]
    for i, row in enumerate([headers, *rows]):
        print("  ".join(str(c).rjust(w) if j else str(c).ljust(w) for j, (c, w) in enumerate(zip(row, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))


# ----- hwsim on whole networks --------------------------------------------------------------------------


@dataclass(frozen=True)
class SimRun:
    network: str
    measured: Measured
    macs: int
    macs_source: str
    cycles: int
    records: int

    @property
    def macs_per_s(self) -> float:
        return self.macs / self.measured.wall_s

    @property
    def records_per_s(self) -> float:
        return self.records / self.measured.wall_s


def bench_network(net: str, work_dir: Path) -> SimRun:
    trace = work_dir / f"{net}.h5"
    m = measure([sys.executable, "-m", "hwsim.cli.main", "simulate", net, "--hw", HW, "--trace-levels", LEVELS,
                 "--out", str(trace), "--json"], work_dir, net)
    doc = json.loads(m.stdout)
    macs, source = doc["network_macs"], "simulate"  # the workload's MACs (a dram,glb trace has no pe records)
    return SimRun(net, m, macs, source, doc["cycles"], trace_records(trace))


def ratio(value: float, target: float, higher_is_better: bool = False) -> str:
    ok = value >= target if higher_is_better else value <= target
    return f"{value / target:.2f} {'ok' if ok else 'MISS'}"


def print_networks(runs: list[SimRun]) -> None:
    print(f"\nhwsim simulate on {HW}, trace levels {LEVELS}, one fresh process per network")
    rows = []
    for r in runs:
        target_s = TARGET_WALL_S.get(r.network)
        rows.append([r.network, f"{r.measured.wall_s:.2f}", ratio(r.measured.wall_s, target_s) if target_s else "-",
                     f"{r.macs / 1e6:.1f}", f"{r.macs_per_s / 1e6:.1f}",
                     f"{r.cycles / 1e6:.2f}", f"{r.records / 1e6:.3f}", f"{r.records_per_s / 1e6:.3f}",
                     ratio(r.records_per_s, TARGET_RECORDS_PER_S, True), f"{r.measured.peak_rss_bytes / 2**20:.0f}",
                     ratio(r.measured.peak_rss_bytes, TARGET_RSS_BYTES)])
    print_table(["network", "wall s", "/ target s", "MACs M", "M MACs/s", "sim cycles M", "records M",
                 "M records/s", "/ 5 M/s", "peak RSS MiB", "/ 2 GiB"], rows)
    print("targets: wall <= 10 s (alexnet), <= 60 s (resnet50); peak RSS < 2 GiB; >= 5 M records/s "
          "(ratio = measured / target; 'ok' when on the right side)")



# ----- SCALE-Sim beside hwsim ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ConvLayer:
    """One row of a SCALE-Sim conv topology (ifmap pre-padded, one group's channels)."""

    name: str
    ifmap_h: int
    ifmap_w: int
    filter_h: int
    filter_w: int
    channels: int
    filters: int
    stride: int

    @property
    def ofmap_hw(self) -> tuple[int, int]:
        return (self.ifmap_h - self.filter_h) // self.stride + 1, (self.ifmap_w - self.filter_w) // self.stride + 1

    @property
    def macs(self) -> int:
        oh, ow = self.ofmap_hw
        return oh * ow * self.filters * self.filter_h * self.filter_w * self.channels

    def closed_form_cycles(self, rows: int, cols: int) -> int:
        """SCALE-Sim's weight-stationary compute cycles in CALC mode (peers.md)."""
        window, ofmap_px = self.filter_h * self.filter_w * self.channels, math.prod(self.ofmap_hw)
        return math.ceil(window / rows) * math.ceil(self.filters / cols) * (2 * rows + cols + ofmap_px - 2) - 1


def read_topology(path: Path) -> list[ConvLayer]:
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f)][1:]
    return [ConvLayer(r[0].strip(), *(int(x) for x in r[1:8])) for r in rows if r and r[0].strip()]


def write_topology(layers: list[ConvLayer], path: Path) -> None:
    header = SCALESIM_TOPO.read_text().splitlines()[0]
    lines = [header] + [f"{l.name}, {l.ifmap_h}, {l.ifmap_w}, {l.filter_h}, {l.filter_w}, {l.channels}, "
                        f"{l.filters}, {l.stride}," for l in layers]
    path.write_text("\n".join(lines) + "\n")


def check_against_hwsim(layers: list[ConvLayer], net: str) -> None:
    """Each topology row must have hwsim's output size and MACs for that layer."""
    hw_layers = {l["name"]: l for l in hwsim_json("info", net)["layers"]}
    for l in layers:
        ref = hw_layers[l.name]
        if tuple(ref["out_shape"][1:]) != l.ofmap_hw or ref["macs"] != l.macs:
            sys.exit(f"{SCALESIM_TOPO}: {l.name} gives {l.ofmap_hw} and {l.macs} MACs, hwsim "
                     f"{ref['out_shape']} and {ref['macs']}")


def make_peer_python(env_dir: Path) -> Path:
    """A throwaway virtual environment with SCALE-Sim; its python."""
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "-q", "scalesim", "numpy<2.4"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return python


def scalesim_cycles(out_dir: Path) -> list[int]:
    """'Total Cycles' (compute, without the prefetch) per layer from COMPUTE_REPORT.csv."""
    (report,) = out_dir.glob("*/COMPUTE_REPORT.csv")
    with open(report, newline="") as f:
        return [int(row[2]) for row in list(csv.reader(f))[1:] if row]


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def bench_peers(layer_names: list[str] | None, work_dir: Path) -> float:
    """SCALE-Sim and hwsim on the same AlexNet conv layers; returns SCALE-Sim's MACs per wall-second."""
    layers = [l for l in read_topology(SCALESIM_TOPO) if layer_names is None or l.name in layer_names]
    check_against_hwsim(layers, "alexnet")
    topo, layout, out_dir = work_dir / "topology.csv", work_dir / "layout.csv", work_dir / "scalesim-out"
    write_topology(layers, topo)
    layout.write_text("Layer name,\n")  # mandatory file; unused without a custom layout
    names = ",".join(l.name for l in layers)
    print(f"\nSCALE-Sim 3.0.0 (throwaway venv, numpy<2.4) on alexnet {names}: {SCALESIM_CFG.relative_to(ROOT)}, "
          f"{ARRAY_ROWS}x{ARRAY_COLS} weight stationary, SRAM ifmap 50 + filter 8 + ofmap 50 kB, CALC bandwidth, "
          "traces on (CLI default)")
    python = make_peer_python(work_dir / "venv")
    print(f"  installed; running ({load_average()})", flush=True)
    peer = measure([str(python), "-m", "scalesim.scale", "-c", str(SCALESIM_CFG), "-t", str(topo), "-l",
                    str(layout), "-p", str(out_dir)], work_dir, "scalesim")
    cycles = scalesim_cycles(out_dir)
    rows = [[l.name, f"{l.ifmap_h}x{l.ifmap_w}x{l.channels} {l.filter_h}x{l.filter_w}/{l.stride} M{l.filters}",
             f"{l.macs / 1e6:.2f}", f"{l.closed_form_cycles(ARRAY_ROWS, ARRAY_COLS):,}", f"{c:,}",
             "yes" if c == l.closed_form_cycles(ARRAY_ROWS, ARRAY_COLS) else "NO"] for l, c in zip(layers, cycles)]
    print_table(["layer", "topology (padded HxWxC RxS/stride M)", "MACs M", "closed-form cycles",
                 "SCALE-Sim cycles", "equal"], rows)
    macs = sum(l.macs for l in layers)

    mine = measure([sys.executable, "-c", SIM_SUBSET, "alexnet", HW, names, str(work_dir / "subset.h5"), LEVELS],
                   work_dir, "hwsim-subset")
    mine_doc = json.loads(mine.stdout)
    assert mine_doc["macs"] == macs, (mine_doc["macs"], macs)
    print(f"\nsame layers ({names}), {macs / 1e6:.1f} M MACs; hwsim: those layers scheduled alone via the API in a "
          f"fresh process, trace levels {LEVELS}")
    print_table(["simulator", "wall s", "M MACs/s", "peak RSS MiB", "sim cycles M", "output on disk MB"], [
        ["SCALE-Sim 12x14 WS", f"{peer.wall_s:.1f}", f"{macs / peer.wall_s / 1e6:.3f}",
         f"{peer.peak_rss_bytes / 2**20:.0f}", f"{sum(cycles) / 1e6:.2f}", f"{dir_bytes(out_dir) / 1e6:.0f}"],
        [f"hwsim {HW}", f"{mine.wall_s:.2f}", f"{macs / mine.wall_s / 1e6:.1f}",
         f"{mine.peak_rss_bytes / 2**20:.0f}", f"{mine_doc['cycles'] / 1e6:.2f}",
         f"{(work_dir / 'subset.h5').stat().st_size / 1e6:.1f}"]])
    print(f"hwsim / SCALE-Sim, MACs per wall-second on the same layers: {peer.wall_s / mine.wall_s:.0f}x")
    return macs / peer.wall_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nets", default="alexnet,resnet50", help="comma-separated zoo networks")
    parser.add_argument("--with-peers", action="store_true", help="also run SCALE-Sim on AlexNet's conv layers")
    parser.add_argument("--peer-layers", default=None, metavar="LAYERS",
                        help="SCALE-Sim on these conv layers only, e.g. conv1,conv2 (default all five)")
    args = parser.parse_args()
    print(f"bench_sim: {load_average()}, python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="bench-sim-") as tmp:
        work_dir = Path(tmp)
        runs = [bench_network(net.strip(), work_dir) for net in args.nets.split(",") if net.strip()]
        print_networks(runs)
        print(f"({load_average()})")
        if args.with_peers:
            peer_rate = bench_peers(args.peer_layers.split(",") if args.peer_layers else None, work_dir)
            for r in runs:
                print(f"hwsim {r.network} whole network (CLI, above) / SCALE-Sim, MACs per wall-second: "
                      f"{r.macs_per_s / peer_rate:.0f}x")
            print(f"({load_average()})")


if __name__ == "__main__":
    main()
