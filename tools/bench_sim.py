"""Speed and memory of `hwsim simulate` on eyeriss-v1, against its targets and (optionally) SCALE-Sim.

For each network, one fresh `python -m hwsim.cli.main simulate NET --hw eyeriss-v1 --json` (every trace level,
`--levels` to choose) runs inside its own measurement process, which reports the CPU seconds (user + sys), the
wall time and the peak RSS of that one child (RUSAGE_CHILDREN). From them: simulated MACs per CPU-second, CPU
microseconds per schedule step the simulator performed (a transfer, a pass, an allocation or a free), the trace
records written, and each figure against the simulator's targets: AlexNet <= 2 CPU-s, ResNet-50 <= 3, VGG-16 <= 8
(the whole command: start-up, simulation, trace, report), peak RSS < 1 GiB. Records per second is no target: it
counts DRAM bursts per transaction, not simulator speed. Performance targets live here, in a benchmark, never in
tests: they depend on the machine and its load, so the load average is printed with the figures.

--with-peers runs SCALE-Sim 3.0.0 (PyPI `scalesim`, numpy<2.4) beside hwsim from a throwaway virtual
environment made on the first run and reused after (under ~/.cache/hwsim-peers/envs, or $HWSIM_PEER_ENVS: see
tools/throwaway_env.py); tools/scalesim_peer.py writes its inputs:
- speed: SCALE-Sim's CLI, traces on as by default, on AlexNet's conv layers (one topology row per
  group, ifmaps pre-padded) on SCALE-Sim's 12x14 weight-stationary array, and hwsim simulating the
  same layers on the same array (configs/scalesim-12x14-ws.yaml, the layers scheduled alone through
  the API in a fresh process); SCALE-Sim's cycles are checked against its closed form so we know it
  simulated that workload, and the MACs per CPU-second are compared (target: hwsim >= 100x). The ratio is a rate, so
  `--peer-layers conv1,conv2` (a subset, for a slow machine) is a fair comparison;
- compute cycles: hwsim's simulated PE-array cycles for every conv layer of AlexNet and ResNet-18 on
  the six shipped SCALE-Sim arrays (12x14 and 32x32, WS/OS/IS) against SCALE-Sim's closed form, and
  against SCALE-Sim itself on a subset of layers that runs in minutes.

--zeros runs each network again with zeros (`--sparsity relu`; `--measured FILE.onnx INPUT` adds an exported
network measured on a real input) beside its dense run: wall time, its ratio (target <= 1.5x) and DRAM MB.

--cores CONFIG times each network's `--batch` images on a multi-core config's first core alone (the one-core
mapping, the same DRAM model) and over all its cores (`--allocate RULE`), ABBA: the simulator's CPU and wall
seconds on each side, the steps each performed, and the simulated cycles with the speed-up the cores gave (target:
simulating ResNet-50 on four cores costs at most 1.5x the CPU time of one core).

--against REV times the same simulation of each network on another revision of hwsim (a git worktree of REV
outside the repository) and on this checkout, in the order REV, this, this, REV (ABBA: a drift in the machine's
load weighs on both alike), and prints CPU seconds (user + sys of the simulating process) and wall seconds of
both and their ratio; the simulated cycles must be equal.

Usage: python tools/bench_sim.py [--nets alexnet,resnet50] [--with-peers] [--peer-layers conv1,conv2]
                                 [--zeros [--measured FILE.onnx INPUT]] [--against REV]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import scalesim_peer
from revisions import resolve_commit, revision_env, worktree

from hwsim.workload import zoo
from hwsim.workload.ir import LayerKind

ROOT = Path(__file__).resolve().parent.parent
HW = "eyeriss-v1"
LEVELS = "dram,l2,glb,line_buffer,noc,rf,pe,link"  # every trace level (the CLI's default)
GIB = 1 << 30
TARGET_CPU_S = {"alexnet": 2.0, "resnet50": 3.0, "vgg16": 8.0}
TARGET_RSS_BYTES = GIB
TARGET_PEER_SPEEDUP = 100.0  # hwsim's MACs per CPU-second over SCALE-Sim's on its own 12x14 array
PEER_CONFIG = "scalesim-12x14-ws"  # SCALE-Sim's 12x14 example array, weight stationary
ARRAY_ROWS, ARRAY_COLS = 12, 14

# Runs argv[3:] with stdout/stderr to the files argv[1], argv[2]; prints wall time and the child's peak RSS.
MEASURE = """
import json, resource, subprocess, sys, time
with open(sys.argv[1], "wb") as out, open(sys.argv[2], "wb") as err:
    start = time.perf_counter()
    code = subprocess.run(sys.argv[3:], stdout=out, stderr=err).returncode
    wall_s = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall_s": wall_s, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_rss_bytes": usage.ru_maxrss * 1024,
                  "returncode": code}))
"""

# hwsim on a subset of a network's layers, each scheduled as in the whole network (same levels as the CLI run).
SIM_SUBSET = """
import dataclasses, json, sys
from hwsim.hardware import load_config
from hwsim.mapping.nest_schedule import network_schedule
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
    cpu_s: float = 0.0  # user + sys of the measured process


def measure(cmd: list[str], work_dir: Path, tag: str, env: dict[str, str] | None = None) -> Measured:
    """Run `cmd` in its own measurement process (with `env`); its wall time, CPU time, peak RSS and stdout."""
    out, err = work_dir / f"{tag}.stdout", work_dir / f"{tag}.stderr"
    report = subprocess.run([sys.executable, "-c", MEASURE, str(out), str(err), *cmd], cwd=ROOT, env=env,
                            check=True, capture_output=True, text=True).stdout
    doc = json.loads(report)
    if doc["returncode"] != 0:
        sys.exit(f"{' '.join(cmd)} failed ({doc['returncode']}):\n{err.read_text()[-2000:]}")
    return Measured(doc["wall_s"], doc["peak_rss_bytes"], out.read_text(), doc["cpu_s"])


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
    dram_bytes: int = 0
    steps: int = 0  # schedule steps the simulator performed

    @property
    def macs_per_cpu_s(self) -> float:
        return self.macs / self.measured.cpu_s

    @property
    def us_per_step(self) -> float:
        """CPU microseconds of the whole command per schedule step."""
        return self.measured.cpu_s * 1e6 / max(1, self.steps)


def bench_network(net: str, work_dir: Path, zeros: tuple[str, ...] = (), tag: str = "", levels: str = LEVELS) -> SimRun:
    """One `hwsim simulate` of `net` in a fresh process recording `levels`, with the zeros options `zeros` (none:
    dense)."""
    name = Path(net).stem + tag
    trace = work_dir / f"{name}.h5"
    m = measure([sys.executable, "-m", "hwsim.cli.main", "simulate", net, "--hw", HW, "--trace-levels", levels,
                 "--out", str(trace), "--json", *zeros], work_dir, name)
    doc = json.loads(m.stdout)
    macs, source = doc["network_macs"], "simulate"  # the workload's MACs (whether or not pe records were kept)
    return SimRun(net, m, macs, source, doc["cycles"], trace_records(trace), doc["totals"]["dram_bytes"],
                  sum(layer["steps"] for layer in doc["layers"]))


def ratio(value: float, target: float, higher_is_better: bool = False) -> str:
    ok = value >= target if higher_is_better else value <= target
    return f"{value / target:.2f} {'ok' if ok else 'MISS'}"


def print_networks(runs: list[SimRun], levels: str) -> None:
    print(f"\nhwsim simulate on {HW}, trace levels {levels}, one fresh process per network (the whole command)")
    rows = []
    for r in runs:
        target_s = TARGET_CPU_S.get(r.network)
        rows.append([r.network, f"{r.measured.cpu_s:.2f}", ratio(r.measured.cpu_s, target_s) if target_s else "-",
                     f"{r.measured.wall_s:.2f}", f"{r.macs / 1e6:.1f}", f"{r.macs_per_cpu_s / 1e6:.1f}",
                     f"{r.steps:,}", f"{r.us_per_step:.1f}", f"{r.cycles / 1e6:.2f}", f"{r.records / 1e6:.3f}",
                     f"{r.measured.peak_rss_bytes / 2**20:.0f}", ratio(r.measured.peak_rss_bytes, TARGET_RSS_BYTES)])
    print_table(["network", "CPU s", "/ target", "wall s", "MACs M", "M MACs/CPU-s", "steps", "CPU us/step",
                 "sim cycles M", "records M", "peak RSS MiB", "/ 1 GiB"], rows)
    print("targets: <= 2 CPU-s (alexnet), <= 3 (resnet50), <= 8 (vgg16); peak RSS < 1 GiB (ratio = measured / "
          "target; 'ok' when on the right side)")


def bench_sparse(nets: list[str], measured: list[tuple[str, str]], work_dir: Path,
                 dense: dict[str, SimRun]) -> None:
    """Each network dense beside the same run with zeros: `--sparsity relu` (zoo networks: half the words after
    a ReLU are zero) or `--activations-from INPUT` (an exported network measured on a real input); eyeriss-v1
    gates zero MACs and run-length codes its DRAM tiles, so the zeros change what the simulator books."""
    rows = []
    cases = [(net, ("--sparsity", "relu")) for net in nets] + [(f, ("--activations-from", i)) for f, i in measured]
    for net, zeros in cases:
        base = dense.get(net) or bench_network(net, work_dir)
        sparse = bench_network(net, work_dir, zeros, "-zeros")
        slower = sparse.measured.wall_s / base.measured.wall_s
        rows.append([Path(net).stem, " ".join(zeros[:1]).lstrip("-"), f"{base.measured.wall_s:.2f}",
                     f"{sparse.measured.wall_s:.2f}", f"{slower:.2f} {'ok' if slower <= 1.5 else 'MISS'}",
                     f"{base.dram_bytes / 1e6:.1f}", f"{sparse.dram_bytes / 1e6:.1f}"])
    print(f"\nzeros on: hwsim simulate on {HW} dense and with zeros (gating, coded DRAM), one fresh process each")
    print_table(["network", "zeros from", "dense wall s", "zeros wall s", "zeros / dense", "dense DRAM MB",
                 "coded DRAM MB"], rows)
    print("target: the run with zeros within 1.5x the dense run's wall time; a measured run includes running the "
          "network with onnxruntime")


# ----- SCALE-Sim beside hwsim ---------------------------------------------------------------------------


def peer_gemms(layer_names: list[str] | None) -> list[scalesim_peer.Gemm]:
    """AlexNet's conv layers (or the named ones) as SCALE-Sim topology rows, one per group."""
    graph = zoo.build("alexnet")
    return [g for layer in graph.of_kind(LayerKind.CONV) if layer_names is None or layer.name in layer_names
            for g in scalesim_peer.gemms(layer)]


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def bench_peer_speed(python: Path, layer_names: list[str] | None, work_dir: Path) -> float:
    """SCALE-Sim and hwsim on the same AlexNet conv layers and the same 12x14 weight-stationary array; returns
    SCALE-Sim's MACs per wall-second."""
    gemms = peer_gemms(layer_names)
    rows, cols = ARRAY_ROWS, ARRAY_COLS
    run = scalesim_peer.write_run(PEER_CONFIG, gemms, work_dir)
    names = ",".join(dict.fromkeys(g.layer for g in gemms))
    print(f"\nSCALE-Sim 3.0.0 (throwaway venv, numpy<2.4) on alexnet {names}: {rows}x{cols} weight stationary "
          f"({PEER_CONFIG}), one topology row per group, CALC bandwidth, traces on (CLI default) ({load_average()})",
          flush=True)
    peer = measure(run.command(python), work_dir, "scalesim")
    cycles = run.cycles()
    print_table(["layer", "group", "topology (padded HxWxC RxS/stride M)", "MACs M", "closed-form cycles",
                 "SCALE-Sim cycles", "equal"],
                [[g.layer, str(g.group), f"{g.ifmap_h}x{g.ifmap_w}x{g.channels} {g.kernel[0]}x{g.kernel[1]}/{g.stride} "
                  f"M{g.filters}", f"{g.macs / 1e6:.2f}", f"{g.cycles('ws', rows, cols):,}", f"{c:,}",
                  "yes" if c == g.cycles("ws", rows, cols) else "NO"] for g, c in zip(gemms, cycles)])
    macs = sum(g.macs for g in gemms)
    mine = measure([sys.executable, "-c", SIM_SUBSET, "alexnet", PEER_CONFIG, names, str(work_dir / "subset.h5"),
                    LEVELS], work_dir, "hwsim-subset")
    mine_doc = json.loads(mine.stdout)
    assert mine_doc["macs"] == macs, (mine_doc["macs"], macs)
    print(f"\nsame layers, {macs / 1e6:.1f} M MACs, same array; hwsim: those layers scheduled alone via the API in a "
          f"fresh process, every trace level")
    print_table(["simulator", "CPU s", "wall s", "M MACs/CPU-s", "peak RSS MiB", "sim cycles M", "output on disk MB"], [
        [f"SCALE-Sim {PEER_CONFIG}", f"{peer.cpu_s:.1f}", f"{peer.wall_s:.1f}", f"{macs / peer.cpu_s / 1e6:.3f}",
         f"{peer.peak_rss_bytes / 2**20:.0f}", f"{sum(cycles) / 1e6:.2f}", f"{dir_bytes(run.out) / 1e6:.0f}"],
        [f"hwsim {PEER_CONFIG}", f"{mine.cpu_s:.2f}", f"{mine.wall_s:.2f}", f"{macs / mine.cpu_s / 1e6:.1f}",
         f"{mine.peak_rss_bytes / 2**20:.0f}", f"{mine_doc['cycles'] / 1e6:.2f}",
         f"{(work_dir / 'subset.h5').stat().st_size / 1e6:.1f}"]])
    speedup = peer.cpu_s / mine.cpu_s
    print(f"hwsim / SCALE-Sim, MACs per CPU-second on the same layers: {speedup:.0f}x "
          f"(target >= {TARGET_PEER_SPEEDUP:.0f}x: {ratio(speedup, TARGET_PEER_SPEEDUP, True)})")
    return macs / peer.cpu_s


def bench_peer_cycles(python: Path, work_dir: Path) -> None:
    """hwsim's simulated compute cycles per conv layer against SCALE-Sim's closed form (every conv layer of AlexNet
    and ResNet-18, WS/OS/IS on 12x14 and 32x32) and against SCALE-Sim itself on a subset."""
    print(f"\ncompute cycles per conv layer: hwsim simulated, SCALE-Sim's closed form, SCALE-Sim run on "
          f"{scalesim_peer.SUBSET} ({load_average()})", flush=True)
    rows = scalesim_peer.compare(peer=scalesim_peer.peer_cycles(python, work_dir / "cycles"))
    print_table(["config", "network", "conv layers", "equal to closed form", "SCALE-Sim run", "equal to SCALE-Sim",
                 "hwsim cycles"],
                [[config, net, str(len(part)), str(sum(r.hwsim - r.groups == r.closed_form for r in part)),
                  str(sum(r.scalesim is not None for r in part)),
                  str(sum(r.scalesim is not None and r.hwsim - r.groups == r.scalesim for r in part)),
                  f"{sum(r.hwsim for r in part):,}"]
                 for config in scalesim_peer.CONFIGS for net in scalesim_peer.NETWORKS
                 for part in [[r for r in rows if (r.config, r.network) == (config, net)]]])
    print(scalesim_peer.summary(rows))


def bench_against(nets: list[str], rev: str, work_dir: Path) -> None:
    """Each network simulated on revision `rev` and on this checkout, ABBA; CPU and wall seconds side by side."""
    commit = resolve_commit(rev)
    sides = {"base": revision_env(worktree("base", commit)), "this": revision_env(ROOT)}
    rows = []
    for net in nets:
        times: dict[str, list[Measured]] = {"base": [], "this": []}
        for k, side in enumerate(("base", "this", "this", "base")):
            trace = work_dir / f"{net}-{side}-{k}.h5"
            # -P: the working directory (this checkout) is not put ahead of the side's PYTHONPATH
            times[side].append(measure([sys.executable, "-P", "-m", "hwsim.cli.main", "simulate", net, "--hw", HW,
                                        "--trace-levels", LEVELS, "--out", str(trace), "--json"], work_dir,
                                       f"{net}-{side}-{k}", sides[side]))
        cycles = {side: {json.loads(m.stdout)["cycles"] for m in ms} for side, ms in times.items()}
        assert cycles["base"] == cycles["this"], (net, cycles)
        cpu = {side: sum(m.cpu_s for m in ms) / len(ms) for side, ms in times.items()}
        wall = {side: sum(m.wall_s for m in ms) / len(ms) for side, ms in times.items()}
        rows.append([net, f"{cpu['base']:.2f}", f"{cpu['this']:.2f}", f"{cpu['this'] / cpu['base']:.3f}",
                     f"{wall['base']:.2f}", f"{wall['this']:.2f}", f"{wall['this'] / wall['base']:.3f}",
                     f"{next(iter(cycles['this'])):,}"])
    print(f"\nhwsim simulate on {HW}, trace levels {LEVELS}: {commit[:12]} (base) against this checkout, ABBA, means "
          f"of two runs each ({load_average()})")
    print_table(["network", "base CPU s", "this CPU s", "this / base", "base wall s", "this wall s", "this / base",
                 "cycles (equal)"], rows)


def bench_cores(nets: list[str], config: str, rule: str, batch: int, work_dir: Path) -> None:
    """Each network's `batch` images on `config`'s first core alone (its one-core mapping, the same DRAM model) and
    over all its cores (`--allocate rule`), alternating ABBA: the simulator's CPU and wall time on each side, and
    what the cores gained (simulated cycles)."""
    sides = {"one core": ["--hw", config], "cores": ["--hw", config, "--allocate", rule]}
    rows = []
    for net in nets:
        times: dict[str, list[Measured]] = {side: [] for side in sides}
        for k, side in enumerate(("one core", "cores", "cores", "one core")):
            times[side].append(measure([sys.executable, "-m", "hwsim.cli.main", "simulate", net, *sides[side],
                                        "--batch", str(batch), "--trace-levels", LEVELS, "--out",
                                        str(work_dir / f"{net}-{k}.h5"), "--json"], work_dir, f"{net}-cores-{k}"))
        cpu = {side: sum(m.cpu_s for m in ms) / len(ms) for side, ms in times.items()}
        wall = {side: sum(m.wall_s for m in ms) / len(ms) for side, ms in times.items()}
        cycles = {side: json.loads(ms[0].stdout)["cycles"] for side, ms in times.items()}
        steps = {side: sum(layer["steps"] for layer in json.loads(ms[0].stdout)["layers"])
                 for side, ms in times.items()}
        rows.append([net, f"{cpu['one core']:.2f}", f"{cpu['cores']:.2f}", f"{cpu['cores'] / cpu['one core']:.3f}",
                     f"{wall['one core']:.2f}", f"{wall['cores']:.2f}", f"{steps['one core']:,}", f"{steps['cores']:,}",
                     f"{cycles['one core']:,}", f"{cycles['cores']:,}", f"{cycles['one core'] / cycles['cores']:.2f}"])
    print(f"\nhwsim simulate, batch {batch}: {config}'s first core alone against all its cores (--allocate {rule}), "
          f"trace levels {LEVELS}, ABBA, means of two runs each ({load_average()})")
    print_table(["network", "1-core CPU s", "cores CPU s", "cores / 1", "1-core wall s", "cores wall s",
                 "1-core steps", "cores steps", "1-core cycles", "cores cycles", "speed-up"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nets", default="alexnet,resnet50,vgg16", help="comma-separated zoo networks")
    parser.add_argument("--levels", default=LEVELS, help=f"trace levels to record (default every one: {LEVELS})")
    parser.add_argument("--with-peers", action="store_true", help="also run SCALE-Sim on AlexNet's conv layers")
    parser.add_argument("--peer-layers", default=None, metavar="LAYERS",
                        help="SCALE-Sim on these conv layers only, e.g. conv1,conv2 (default all five)")
    parser.add_argument("--zeros", action="store_true",
                        help="also run each network with zeros (--sparsity relu) beside the dense run")
    parser.add_argument("--measured", nargs=2, action="append", default=[], metavar=("FILE.onnx", "INPUT"),
                        help="with --zeros: also an exported network dense and measured on INPUT (needs the measure "
                             "extra)")
    parser.add_argument("--against", metavar="REV", default=None,
                        help="instead: each network on revision REV and on this checkout, ABBA (CPU and wall seconds)")
    parser.add_argument("--cores", metavar="CONFIG", default=None,
                        help="instead: each network on one core and on this multi-core config, ABBA (the simulator's "
                             "CPU time on each, and the simulated speed-up); with --allocate and --batch")
    parser.add_argument("--allocate", default="stages", help="with --cores: the allocation rule (default stages)")
    parser.add_argument("--batch", type=int, default=8, help="with --cores: images per run (default 8)")
    args = parser.parse_args()
    print(f"bench_sim: {load_average()}, python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="bench-sim-") as tmp:
        work_dir = Path(tmp)
        if args.against:
            bench_against([n.strip() for n in args.nets.split(",") if n.strip()], args.against, work_dir)
            return
        if args.cores:
            bench_cores([n.strip() for n in args.nets.split(",") if n.strip()], args.cores, args.allocate,
                        args.batch, work_dir)
            return
        runs = [bench_network(net.strip(), work_dir, levels=args.levels) for net in args.nets.split(",") if net.strip()]
        print_networks(runs, args.levels)
        print(f"({load_average()})")
        if args.zeros:
            bench_sparse([r.network for r in runs], [tuple(m) for m in args.measured], work_dir,
                         {r.network: r for r in runs})
            print(f"({load_average()})")
        if args.with_peers:
            python = scalesim_peer.peer_python()  # kept between runs under the peers' cache folder
            print(f"SCALE-Sim's environment: {python.parent.parent}", flush=True)
            peer_rate = bench_peer_speed(python, args.peer_layers.split(",") if args.peer_layers else None, work_dir)
            for r in runs:
                print(f"hwsim {r.network} on {HW}, whole command (above) / SCALE-Sim, MACs per CPU-second: "
                      f"{r.macs_per_cpu_s / peer_rate:.0f}x")
            bench_peer_cycles(python, work_dir)
            print(f"({load_average()})")


if __name__ == "__main__":
    main()
