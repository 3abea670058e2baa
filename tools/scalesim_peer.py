"""hwsim's systolic arrays beside SCALE-Sim 3.0: compute cycles per conv layer, WS/OS/IS on 12x14 and 32x32.

For every conv layer of AlexNet and ResNet-18 on each of the six shipped SCALE-Sim configs
(configs/scalesim-{12x14,32x32}-{ws,os,is}.yaml) hwsim simulates the layer's default mapping (SCALE-Sim's folds
of the im2col GEMM) and reports the cycles its PE array spent (Σ over passes). Beside it:

- SCALE-Sim's closed form, written here from SCALE-Sim's compute modules: a fold of T streamed iterations takes
  2R + C + T − 2 cycles (weight and input stationary) or R + C + T − 2 (output stationary) on an R × C array, with
  ⌈Sr/R⌉·⌈Sc/C⌉ folds; SCALE-Sim reports the index of the last cycle, the total minus one. Roles: WS Sr = window
  (K = C·R·S), Sc = filters, T = output pixels; OS Sr = pixels, Sc = filters, T = window; IS Sr = window, Sc =
  pixels, T = filters. A grouped layer is G such GEMMs;
- SCALE-Sim itself (a throwaway virtual environment) on a subset of layers that finishes in minutes: its
  COMPUTE_REPORT's "Total Cycles" must equal the closed form.

hwsim's cycles are counts; SCALE-Sim's are last-cycle indices: equal means hwsim − G = SCALE-Sim.
"""

from __future__ import annotations

import csv
import math
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from throwaway_env import cached_env_python

from hwsim.hardware import load_config
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.nest_schedule import network_schedule
from hwsim.mapping.schedule import Schedule
from hwsim.sim.executor import RecordOptions, simulate
from hwsim.sim.machine import Machine
from hwsim.trace.sinks import NullSink
from hwsim.workload import zoo
from hwsim.workload.ir import Layer, LayerKind

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = tuple(f"scalesim-{size}-{df}" for size in ("12x14", "32x32") for df in ("ws", "os", "is"))
NETWORKS = ("alexnet", "resnet18")
SUBSET = {"alexnet": ("conv5",), "resnet18": ("layer2.0.downsample", "layer3.0.downsample", "layer4.0.downsample")}
FILL_ROWS = {"ws": 2, "is": 2, "os": 1}


@dataclass(frozen=True)
class Gemm:
    """One group of a conv layer as SCALE-Sim sees it (its topology row, ifmap pre-padded to the extent used)."""

    layer: str
    group: int
    ifmap_h: int
    ifmap_w: int
    kernel: tuple[int, int]
    channels: int
    filters: int
    stride: int
    pixels: int

    @property
    def window(self) -> int:
        return self.kernel[0] * self.kernel[1] * self.channels

    @property
    def macs(self) -> int:
        return self.window * self.filters * self.pixels

    def cycles(self, dataflow: str, rows: int, cols: int) -> int:
        """SCALE-Sim's closed form (module docstring): its report, the last cycle's index."""
        sr, sc, t = {"ws": (self.window, self.filters, self.pixels), "os": (self.pixels, self.filters, self.window),
                     "is": (self.window, self.pixels, self.filters)}[dataflow]
        return math.ceil(sr / rows) * math.ceil(sc / cols) * (FILL_ROWS[dataflow] * rows + cols + t - 2) - 1


def gemms(layer: Layer) -> list[Gemm]:
    """The layer's groups as SCALE-Sim topology rows: ifmap (E−1)·U + R rows (pre-padded), C/G channels, M/G
    filters (SCALE-Sim has no groups and no dilation)."""
    g = layer.groups
    (kh, kw), (u, v) = layer.kernel, layer.stride
    if u != v or layer.dilation != (1, 1):
        raise SystemExit(f"{layer.name}: SCALE-Sim takes one stride and no dilation")
    out = layer.out_shape
    return [Gemm(layer.name, k, (out.h - 1) * u + kh, (out.w - 1) * v + kw, (kh, kw), layer.in_shape.c // g,
                 out.c // g, u, out.h * out.w) for k in range(g)]


def conv_schedule(net: str, hw: Accelerator) -> Schedule:
    """The network's default mapping on `hw`, its conv layers only."""
    schedule = network_schedule(zoo.build(net), hw)
    layers = tuple(ls for ls in schedule.layers if ls.layer.kind is LayerKind.CONV)
    return Schedule(schedule.network, schedule.hardware, schedule.mapper, schedule.batch, layers, schedule.mapping)


def hwsim_compute_cycles(net: str, config: str) -> dict[str, int]:
    """Cycles hwsim's PE array spends on each conv layer (a simulation without a trace)."""
    hw = load_config(config)
    result = simulate(conv_schedule(net, hw), Machine.build(hw), NullSink(), RecordOptions(frozenset()))
    return {run.name: run.compute_cycles for run in result.layers}


@dataclass(frozen=True)
class Row:
    network: str
    config: str
    layer: str
    groups: int
    hwsim: int
    closed_form: int  # SCALE-Sim's, summed over the groups (its report per group)
    scalesim: int | None  # SCALE-Sim run, summed over the groups (subset only)

    @property
    def equal(self) -> bool:
        return self.hwsim - self.groups == self.closed_form and self.scalesim in (None, self.closed_form)


def compare(configs: tuple[str, ...] = CONFIGS, networks: tuple[str, ...] = NETWORKS,
            peer: dict[tuple[str, str, str], int] | None = None) -> list[Row]:
    """hwsim, the closed form and (where run) SCALE-Sim, per config, network and conv layer."""
    rows = []
    for config in configs:
        hw = load_config(config)
        df = config.rsplit("-", 1)[1]
        for net in networks:
            cycles = hwsim_compute_cycles(net, config)
            for layer in zoo.build(net).of_kind(LayerKind.CONV):
                parts = gemms(layer)
                closed = sum(p.cycles(df, hw.pe_array.rows, hw.pe_array.cols) for p in parts)
                rows.append(Row(net, config, layer.name, len(parts), cycles[layer.name], closed,
                                (peer or {}).get((config, net, layer.name))))
    return rows


# ----- SCALE-Sim itself ---------------------------------------------------------------------------------

CFG = """[general]
run_name = {name}

[architecture_presets]
ArrayHeight = {rows}
ArrayWidth = {cols}
IfmapSramSzkB = 1024
FilterSramSzkB = 1024
OfmapSramSzkB = 1024
IfmapOffset = 0
FilterOffset = 10000000
OfmapOffset = 20000000
Dataflow = {dataflow}
Bandwidth = 10
ReadRequestBuffer = 32
WriteRequestBuffer = 32

[layout]
IfmapCustomLayout = False
IfmapSRAMBankBandwidth = 10
IfmapSRAMBankNum = 10
IfmapSRAMBankPort = 2
FilterCustomLayout = False
FilterSRAMBankBandwidth = 10
FilterSRAMBankNum = 10
FilterSRAMBankPort = 2

[sparsity]
SparsitySupport = false
SparseRep = ellpack_block
OptimizedMapping = false
BlockSize = 8
RandomNumberGeneratorSeed = 40

[run_presets]
InterfaceBandwidth = CALC
UseRamulatorTrace = False
"""
HEADER = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,"


PEER_PACKAGES = ("scalesim==3.0.0", "numpy<2.4")  # SCALE-Sim 3.0 fails on numpy 2.4


def peer_python() -> Path:
    """The python of a throwaway virtual environment with SCALE-Sim 3.0, kept under the peers' cache folder for
    these pins (made on the first run, reused after: tools/throwaway_env.py)."""
    return cached_env_python("scalesim", [PEER_PACKAGES])


@dataclass(frozen=True)
class PeerRun:
    """The files of one SCALE-Sim run: its config, topology and layout, and its output folder."""

    cfg: Path
    topology: Path
    layout: Path
    out: Path

    def command(self, python: Path) -> list[str]:
        return [str(python), "-m", "scalesim.scale", "-c", str(self.cfg), "-t", str(self.topology), "-l",
                str(self.layout), "-p", str(self.out)]

    def cycles(self) -> list[int]:
        """SCALE-Sim's 'Total Cycles' per topology row (CALC bandwidth: compute only)."""
        (report,) = self.out.glob("*/COMPUTE_REPORT.csv")
        with open(report, newline="") as f:
            return [int(r[2]) for r in list(csv.reader(f))[1:] if r]


def write_run(config: str, layers: list[Gemm], work_dir: Path) -> PeerRun:
    """SCALE-Sim's inputs for `layers` on the array of a shipped scalesim-* config (1 MB SRAMs: compute only)."""
    hw = load_config(config)
    name = config.replace("-", "_")
    work_dir.mkdir(parents=True, exist_ok=True)
    run = PeerRun(work_dir / f"{name}.cfg", work_dir / f"{name}.csv", work_dir / f"{name}-layout.csv",
                  work_dir / f"{name}-out")
    run.cfg.write_text(CFG.format(name=name, rows=hw.pe_array.rows, cols=hw.pe_array.cols,
                                  dataflow=config.rsplit("-", 1)[1]))
    run.topology.write_text("\n".join([HEADER] + [f"{g.layer}-g{g.group}, {g.ifmap_h}, {g.ifmap_w}, {g.kernel[0]}, "
                                                 f"{g.kernel[1]}, {g.channels}, {g.filters}, {g.stride},"
                                                 for g in layers]) + "\n")
    run.layout.write_text("Layer name,\n")  # mandatory; unused without a custom layout
    return run


def run_scalesim(python: Path, config: str, layers: list[Gemm], work_dir: Path) -> list[int]:
    """SCALE-Sim's cycles per topology row."""
    run = write_run(config, layers, work_dir)
    subprocess.run(run.command(python), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return run.cycles()


def peer_cycles(python: Path, work_dir: Path, configs: tuple[str, ...] = CONFIGS) -> dict[tuple[str, str, str], int]:
    """SCALE-Sim's cycles on the SUBSET layers, summed over each layer's groups."""
    out: dict[tuple[str, str, str], int] = {}
    for config in configs:
        for net, names in SUBSET.items():
            graph = zoo.build(net)
            parts = [g for name in names for g in gemms(graph.layer(name))]
            for g, c in zip(parts, run_scalesim(python, config, parts, work_dir)):
                key = (config, net, g.layer)
                out[key] = out.get(key, 0) + c
    return out


def summary(rows: list[Row]) -> str:
    equal = sum(r.equal for r in rows)
    ran = [r for r in rows if r.scalesim is not None]
    return (f"{equal}/{len(rows)} layers: hwsim's compute cycles − groups = SCALE-Sim's closed form; SCALE-Sim run on "
            f"{len(ran)} of them: {sum(r.scalesim == r.closed_form for r in ran)}/{len(ran)} equal to the closed form "
            f"(total cycles compared: {int(np.sum([r.hwsim for r in rows])):,})")
