"""hwsim beside Stream (KU Leuven, PyPI `stream-dse` 2.1.1) on Stream's own multi-core example, same allocation.

Stream's shipped end-to-end example (its tests' two bf16 3x3 convolutions, 8x32x32 -> 16 -> 32 channels, one
image) runs in a throwaway Python 3.12 environment (made on the first run, reused after: tools/throwaway_env.py;
`pyenv` must list a 3.12) with fixed allocations (tools/stream_peer_run.py writes Stream's mapping files):

- A `tpu4_split4`: Stream's `tpu_like_quad_core` hardware, both convs on cores 0-3 split by output channels (K);
- B `tpu4_layer_core`: the same hardware, Conv1 on core 0, Conv2 on core 1 (Conv1's output moved core to core);
- C `eyeriss2_layer_core`: Stream's `eyeriss_like_dual_core`, Conv1 on core 0, Conv2 on core 1;
- D `eyeriss2_fused_tiles`: as C, fused by tiles of rows: the fused group's `intra_core_tiling` cuts the output
  rows (`Conv1.D2`, OY: 32) into tiles of 8, so Stream runs 4 steady-state iterations, Conv2's tile k on core 1
  while Conv1's tile k + 1 runs on core 0.

hwsim simulates the same ONNX file (Stream's generator writes it) on configs translated from Stream's hardware
files (below, every number from them; what hwsim has no place for is said) with the same allocation as an
hwsim plan (A: split by channels 4 + 4 + 4 + 4 and 8 + 8 + 8 + 8; B and C: one layer per core, Conv1's output
forwarded over the link into core 1's GLB; D: as C, each layer in 4 tiles of 8 output rows on its core, a part
`(core, 0, 8)` repeated, Conv1's output forwarded into a line buffer in core 1's GLB, each Conv2 tile starting
when Conv1's tiles hold the rows its windows reach, halo included). Stream's tiles are equal (8 rows of both
layers, at stride 1 Conv2's rows are the fused axis too), so the plan's equal bands mirror them. Both report cycles
(Stream has no clock) and pJ; the tool prints per layer and in total Stream's latency and energy beside hwsim's,
and from hwsim's run what explains the gap: each layer's DRAM words and the cycles they need at the DRAM port,
the link words, each core's busy and waiting cycles, and a tiled layer's tiles (start-end). Stream is analytic
(ZigZag's per-layer cost model and a MILP over slots of one steady-state iteration, iterations overlapped);
hwsim times every transfer on shared ports, so DRAM contention between cores shows in its cycles, not Stream's.

Tiles (D against C), on both sides: Conv2 starts earlier (Conv1's later tiles run under it) but costs more, as an
8-row tile fills the array's output-row dimension worse than 32 rows (ZigZag: 12-wide OY unrolling gives way to
OX by channels, a third more temporal cycles; hwsim's row stationary: 8 of 14 columns in one fold per tile where 32
rows took 3, Conv2 4 x 16 passes against 48) and it is the longer layer, so neither total drops.
Stream fetches Conv2's weights once per tile and Conv1's once, moves each tile's 8 new input rows (keeping the
2-row halo resident) and prices each layer per tile with ZigZag; hwsim fetches each tile's filters (a work's own)
and its input rows with their halo from DRAM, and a Conv1 tile waits for line-buffer slots Conv2 still reads.

Translation (Stream -> hwsim): a memory's energy per bit is its access energy over its widest port (as Stream
prices transfers), times 16 bits per hwsim word; DRAM 1000 pJ per 64-bit access = 15.625 pJ/bit at 8 B/cycle;
links 0 pJ (`unit_energy_cost: 0`) at the 128-bit bus width (Stream routed every transfer over its bus); the
tpu_like core a 32 x 32 weight-stationary array (0.04 pJ/MAC, its weight register 0.095 pJ per 8-bit access:
0.19 pJ per word, its 2 MiB SRAM 416.16 / 378.4 pJ per 2048-bit access); the eyeriss_like core a 12 x 14
row-stationary array (0.5 pJ/MAC, RF 1.0 pJ per 8-bit read: 2.0 pJ per word; its three SRAMs one 200 KiB GLB,
64 KiB for filters, at the 1 Mbit buffer's 100 / 130 pJ per 384-bit access). Stream's pooling, SIMD and offchip
cores have no part in two convolutions. Where Stream prices nothing (links, PE-to-PE hops, the clock) hwsim takes
a negligible positive figure (0.001 pJ, 0.001 mW: it refuses zero), and a latency of one cycle (DRAM, links).

    python tools/stream_peer.py
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from throwaway_env import cached_env_python  # noqa: E402

from hwsim.flows.cores import core_timelines  # noqa: E402
from hwsim.flows.run import resolve_run  # noqa: E402
from hwsim.flows.simulate import simulate_run  # noqa: E402
from hwsim.hardware.loader import parse_config  # noqa: E402
from hwsim.mapping.multicore import forward_problem  # noqa: E402
from hwsim.mapping.plans import AllocationPlan, CorePart  # noqa: E402
from hwsim.vocab import Level  # noqa: E402
from hwsim.workload.network import load_network  # noqa: E402

PEER_PACKAGES = ["stream-dse==2.1.1", "six"]  # six: imported by zigzag, not declared
SHARED = """
clock: 1 GHz
precision: 16 bit
dram: {channels: 1, bandwidth: 8 B/cycle, latency: 1 cycles, burst: 8 B, energy: 15.625 pJ/bit,
       source: "Stream offchip core: one 64-bit port per cycle, 1000 pJ per access"}
control: {clock_power: 0.001 mW, reference_throughput: 1 GMAC/s, other_fraction: 0.001,
          source: "Stream prices no clock (hwsim needs a positive figure: a negligible one)"}
"""
TPU = """
name: stream-tpu-quad
pe_array: {rows: 32, cols: 32, dataflow: weight_stationary, macs_per_cycle: 1, fill_drain: 0 cycles,
           mac_energy: 0.04 pJ, rf: {filter: 1 word, ifmap: 1 word, psum: 1 word, access_energy: 0.19 pJ},
           source: "Stream tpu_like core: 32x32 array, 0.04 pJ/MAC; rf_128B 0.095 pJ per 8-bit access"}
noc: {ifmap_bus: 512 bit, filter_bus: 512 bit, psum_bus: 512 bit, psum_out_bus: 0 bit, psum_out_streamed: false,
      inter_pe_energy: 0.001 pJ, source: "one word per array row or column per cycle; Stream prices no hop"}
glb: {size: 2 MiB, banks: 1, ports: 1, words_per_port: 128, read_energy: 3.251 pJ, write_energy: 2.957 pJ,
      source: "Stream sram_2MB: 416.16 / 378.4 pJ per 2048-bit access"}
cores: 4
links: [{name: bus01, between: [core0, core1], width: 128 bit, latency: 1 cycles, energy: 0.001 pJ,
         source: "Stream's 128-bit bus, unit_energy_cost 0"}]
"""
EYERISS = """
name: stream-eyeriss-dual
pe_array: {rows: 12, cols: 14, macs_per_cycle: 1, fill_drain: 0 cycles, mac_energy: 0.5 pJ,
           rf: {filter: 32 words, ifmap: 32 words, psum: 8 words, access_energy: 2.0 pJ},
           source: "Stream eyeriss_like core: 14x12 array, 0.5 pJ/MAC; rf_64B 1.0 pJ per 8-bit read"}
noc: {ifmap_bus: 64 bit, filter_bus: 64 bit, psum_bus: 64 bit, inter_pe_energy: 0.001 pJ,
      source: "Eyeriss-like 64-bit buses; Stream prices no hop"}
glb: {size: 200 KiB, filter: 64 KiB, banks: 1, ports: 2, words_per_port: 24, read_energy: 4.167 pJ,
      write_energy: 5.417 pJ, source: "Stream sram_1M + sram_64KB + sram_8KB; 100 / 130 pJ per 384-bit access"}
cores: 2
links: [{name: bus01, between: [core0, core1], width: 128 bit, latency: 1 cycles, energy: 0.001 pJ,
         source: "Stream's 128-bit bus, unit_energy_cost 0"}]
"""
Part = tuple[str, int] | tuple[str, int, int]  # CorePart's fields: (core, channels) or (core, channels, rows)
# Stream's name: (hwsim config, each layer's parts, forwarded); parts repeating one core with rows are its tiles
SCENARIOS: dict[str, tuple[str, dict[str, list[Part]], tuple[str, ...]]] = {
    "tpu4_split4": (TPU, {"Conv1": [("core0", 4), ("core1", 4), ("core2", 4), ("core3", 4)],
                          "Conv2": [("core0", 8), ("core1", 8), ("core2", 8), ("core3", 8)]}, ()),
    "tpu4_layer_core": (TPU, {"Conv1": [("core0", 0)], "Conv2": [("core1", 0)]}, ("Conv1",)),
    "eyeriss2_layer_core": (EYERISS, {"Conv1": [("core0", 0)], "Conv2": [("core1", 0)]}, ("Conv1",)),
    "eyeriss2_fused_tiles": (EYERISS, {"Conv1": [("core0", 0, 8)] * 4, "Conv2": [("core1", 0, 8)] * 4}, ("Conv1",)),
}


def python312() -> Path:
    """A Python 3.12 interpreter from pyenv (Stream needs it)."""
    root = Path(subprocess.run(["pyenv", "root"], capture_output=True, text=True, check=True).stdout.strip())
    found = sorted(root.glob("versions/3.12*/bin/python"))
    if not found:
        sys.exit("stream_peer: pyenv lists no Python 3.12; install one (Stream needs it)")
    return found[-1]


def run_stream(work: Path) -> dict[str, Any]:
    """Stream's runs (every scenario), as tools/stream_peer_run.py prints them."""
    python = cached_env_python("stream", [PEER_PACKAGES], base=python312())
    done = subprocess.run([str(python), str(ROOT / "tools" / "stream_peer_run.py")], capture_output=True,
                          text=True, env={**os.environ, "STREAM_PEER_WORK": str(work)}, check=False)
    if done.returncode:
        sys.exit(f"Stream failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def run_hwsim(onnx: Path, name: str, work: Path) -> dict[str, Any]:
    """hwsim's simulation of Stream's scenario `name`: per layer span and energy, DRAM words, and the cores."""
    text, layers, forwarded = SCENARIOS[name]
    hw = parse_config(SHARED + text, f"{name}.yaml")
    graph = load_network(str(onnx)).graph
    plan = AllocationPlan(graph.name, hw.name, (8, 32, 32), 1, "given",
                          tuple((layer, tuple(CorePart(*part) for part in parts))
                                for layer, parts in layers.items()))
    note = ""
    for producer in forwarded:  # as Stream moves it core to core, where hwsim can (else through DRAM, said)
        readers = [l for l in graph if producer in l.inputs]
        problem = forward_problem(graph.layer(producer), readers, plan, graph, hw)
        if problem:
            note = f"{producer}'s output through DRAM, not over the link: {problem}"
        else:
            plan = replace(plan, forwarded=(*plan.forwarded, producer))
    sim = simulate_run(resolve_run(graph, hw, None, plan), work / f"{name}.h5")
    out: dict[str, Any] = {"cycles": sim.result.cycles, "layers": {}, "cores": [], "link_words": 0, "note": note}
    for layer in layers:
        mine = [m for m in sim.metrics.layers if m.name.split("@")[0] == layer]
        runs = sorted((r for r in sim.result.layers if r.name.split("@")[0] == layer), key=lambda r: r.start_cycle)
        dram_words = sum(int(m.transfers[Level.DRAM].sum()) for m in mine)
        tiled = len({r.core for r in runs}) < len(runs)  # a core computing several bands of rows: its tiles
        out["layers"][layer] = {
            "start": runs[0].start_cycle, "end": max(r.end_cycle for r in runs),
            "tiles": [(r.start_cycle, r.end_cycle) for r in runs] if tiled else [],
            "energy_pj": sum(m.energy_pj.get(c, 0.0) for m in mine for c in m.energy_pj if c not in ("dram", "link")),
            "dram_pj": sum(m.energy_pj.get("dram", 0.0) for m in mine),
            "dram_words": dram_words, "dram_port_cycles": dram_words * 2 // 8}
    out["energy_pj"] = sum(sum(m.energy_pj.values()) for m in sim.metrics.layers)
    out["cores"] = [(c.core, c.busy_cycles, c.waiting_cycles) for c in core_timelines(sim.result, hw) if c.works]
    out["link_words"] = int(sim.link_words.sum()) if sim.link_words is not None else 0
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="stream-peer-") as tmp:
        work = Path(tmp)
        stream = run_stream(work)
        onnx = next(work.glob("*.onnx"))
        print(f"Stream {stream['stream_dse_version']} and hwsim on Stream's two-conv example ({onnx.name}), one "
              "image, cycles and pJ")
        for run in stream["runs"]:
            name = run["scenario"]
            ours = run_hwsim(onnx, name, work)
            totals = run["totals"]
            n = totals["iterations"]  # Stream's steady-state iterations: its tiles (1: the whole layers)
            print(f"\n{name}: total cycles Stream {totals['latency_total_cycles']:,} / hwsim {ours['cycles']:,}; "
                  f"energy Stream {totals['energy_total_pj'] / 1e6:.3f} uJ (layers "
                  f"{n * totals['energy_nodes_pj_per_iteration'] / 1e6:.3f}, transfers "
                  f"{n * totals['energy_transfers_pj_per_iteration'] / 1e6:.3f}) / "
                  f"hwsim {ours['energy_pj'] / 1e6:.3f} uJ")
            print(f"  {'layer':<6} {'cores':<10} {'Stream cycles':>13} {'hwsim cycles':>12} {'Stream uJ':>10} "
                  f"{'hwsim uJ':>9}  hwsim DRAM words (cycles at the port), DRAM uJ")
            for layer in run["layers"]:
                h = ours["layers"][layer["layer"]]
                print(f"  {layer['layer']:<6} {','.join(map(str, layer['cores'])):<10} "
                      f"{n * layer['latency_cycles']:>13,} {h['end'] - h['start']:>12,} "
                      f"{n * layer['energy_pj'] / 1e6:>10.3f} {h['energy_pj'] / 1e6:>9.3f}  "
                      f"{h['dram_words']:,} ({h['dram_port_cycles']:,}), {h['dram_pj'] / 1e6:.3f}")
            cores = ", ".join(f"{c} busy {b:,} waiting {w:,}" for c, b, w in ours["cores"])
            slots = ", ".join(f"{k}: {v:,}" for k, v in run["slot_latencies"].items())
            print(f"  hwsim cores: {cores}; link words {ours['link_words']:,}"
                  + (f"; {ours['note']}" if ours["note"] else ""))
            for layer, h in ours["layers"].items():
                if h["tiles"]:
                    print(f"  hwsim {layer}'s {len(h['tiles'])} tiles (start-end): "
                          + ", ".join(f"{a:,}-{b:,}" for a, b in h["tiles"]))
            print(f"  Stream's slots of one iteration (cycles): {slots}")
            if n > 1:
                layers = ", ".join(f"{layer['layer']} {layer['latency_cycles']:,}" for layer in run["layers"])
                print(f"  Stream's {n} iterations (one a tile; per tile {layers}): total {n} x "
                      f"{totals['latency_per_iteration_cycles']:,} per iteration - {n - 1} x "
                      f"{totals['overlap_cycles']:,} overlap + {totals['fill_cycles']:,} fill")
    print("\nStream's layer energy excludes its transfers (given in total); hwsim's layer energy above excludes DRAM "
          "and links (beside it). Stream's layer cycles and energy are its tile's times its iterations (with tiles: "
          "the layer's busy cycles); hwsim's layer cycles are its span, first start to last end (with tiles: the "
          "waits between them included, its core's waiting). Stream's slots serialise one iteration (transfers, "
          "then layers) and overlap successive iterations; hwsim overlaps a layer's DRAM traffic with its compute, "
          "runs a reader's tile as soon as the rows it reads are there, and shares the DRAM port between cores. "
          "hwsim's weight-stationary "
          "array computes a convolution as SCALE-Sim does, on its im2col matrix in DRAM (each input word about "
          "kernel-area times): on a 64-bit DRAM port its layers take about their DRAM words' port cycles; "
          "Stream's tpu_like core (ZigZag's spatial unrolling OX, OY by FY, C) reads each input word once.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
