"""AlexNet CONV1-5 on eyeriss-v1 at batch 4, simulated, beside Eyeriss v1 silicon (JSSC 2017, Table V).

Judged: the chip's own mapping — the row-stationary parameters of the paper's mapping table, shipped as
configs/mappings/eyeriss-v1-alexnet-jssc.yaml (or --mapping FILE) — simulated with the layers' zeros as the chip saw
them: each conv's ifmap zeros from Table V (used for zero gating and for the run-length code of its ifmap tiles),
its ofmap zeros from CNNergy's reference run (the code of its ofmap tiles), on eyeriss-v1 as shipped: zero gating
(a zero ifmap word gates the MAC, its filter RF read and, as CNNergy prices it, its psum RF read and write), RLC on
the DRAM link (three pairs of a 5-bit run and a 16-bit value per 64-bit word; a tile the code would enlarge, such
as CONV1's dense image, moves raw), psums returned on their own network as the PE columns finish them and a GLB
serving an ifmap read, a psum read and a psum write at once. Every figure comes from the trace: the coded DRAM
words the transfers moved, the GLB words, the energy priced from the trace's counts, the layer's simulated cycles.

Shown beside it: the searched row-stationary mapping (`hwsim map --objective O`; --objective all: each of the
four), with the same zeros priced by the search, judged against the same tolerances but not deciding the verdict.

Per conv layer, each beside the chip with the ratio ours / chip:
- on-chip energy per image: ours, the trace's energy without DRAM / 4; the chip's, power x latency / 4;
- DRAM MB per batch of 4 (coded words x 2 bytes);
- GLB MB per batch (words read, filled and updated at the GLB x 2 bytes);
- processing latency in ms (simulated cycles at 200 MHz; the chip's without configuration and DRAM set-up).
Tolerances: energy ±10 %, DRAM ±20 %, latency ±10 % per layer, total latency ±5 %. GLB traffic is shown, not
judged. Each table ends with its worst figure as a share of its tolerance (1.00: at the edge).

A figure out of tolerance is followed by what the trace says about it (DRAM words by operand; energy by
component, the clock drawn over the simulated time). Exit status 1 when the chip's mapping has a figure out.

Usage: python tools/validate_eyeriss.py [--mapping FILE] [--objective edp|energy|latency|dram|all] [--rules]
       [--no-search]
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType

import numpy as np

import hwsim.trace
from hwsim.hardware import load_config
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.nest.format import NetworkMapping, load_mapping
from hwsim.mapping.nest_schedule import network_schedule
from hwsim.metrics import derive
from hwsim.search.cost import OBJECTIVES
from hwsim.search.network import SearchSettings, search_network
from hwsim.sim.run import simulate_to_trace
from hwsim.sparsity.codec import codec
from hwsim.sparsity.profile import LayerZeros, SparsityProfile
from hwsim.vocab import OPERAND_NAMES, Level
from hwsim.workload import zoo
from hwsim.workload.ir import Graph, Layer

BATCH = 4
REFERENCE = Path(__file__).resolve().parents[1] / "tests" / "data"  # the published figures, with their sources
CHIP_MAPPING = Path(__file__).resolve().parents[1] / "configs" / "mappings" / "eyeriss-v1-alexnet-jssc.yaml"
TOLERANCE = {"energy": 0.10, "dram": 0.20, "latency": 0.10}
TOTAL_LATENCY_TOLERANCE = 0.05


def _rows(path: Path) -> list[dict[str, str]]:
    """A CSV of tests/data without its `#` provenance lines."""
    return list(csv.DictReader(line for line in path.read_text().splitlines() if not line.startswith("#")))


@dataclass(frozen=True)
class Figures:
    """One conv layer's on-chip energy per image (mJ), DRAM and GLB traffic per batch (MB), processing ms; ours
    also the trace's breakdowns that explain a figure out of tolerance."""

    energy_mj: float
    dram_mb: float
    glb_mb: float
    latency_ms: float
    energy_by_component_mj: dict[str, float] | None = None  # per image
    dram_by_operand_mb: dict[str, float] | None = None  # per batch, coded words


SILICON = {r["layer"]: r for r in _rows(REFERENCE / "eyeriss-v1-alexnet-silicon.csv")}
CHIP = {name: Figures(float(r["power_mw"]) * float(r["latency_ms"]) / BATCH / 1e3, float(r["dram_mb"]),
                      float(r["glb_mb"]), float(r["processing_ms"]))
        for name, r in SILICON.items() if name.startswith("conv")}
OFMAP_ZEROS = {f"conv{i + 1}": float(r["sp_of"])
               for i, r in enumerate(_rows(REFERENCE / "cnnergy-alexnet-layers.csv")[:5])}


def chip_zeros() -> SparsityProfile:
    """CONV1-5's zeros as the chip saw them: Table V's ifmap zeros (gating and the ifmap code), CNNergy's
    reference ofmap zeros (the ofmap code); dense filters."""
    layers = {name: LayerZeros(float(SILICON[name]["ifmap_zeros"]), 0.0, OFMAP_ZEROS[name],
                               float(SILICON[name]["ifmap_zeros"])) for name in CHIP}
    return SparsityProfile("profile", "Eyeriss v1 silicon (JSSC 2017 Table V) ifmap zeros; CNNergy reference ofmap "
                                      "zeros", MappingProxyType(layers))


def simulate(graph: Graph, hw: Accelerator, mapping: NetworkMapping | None) -> dict[str, Figures]:
    """CONV1-5 of `mapping` (None: the rules) simulated at batch 4 with the chip's zeros, every level traced."""
    schedule = network_schedule(graph, hw, BATCH, mapping, chip_zeros())
    schedule = replace(schedule, layers=tuple(ls for ls in schedule.layers if ls.layer.name in CHIP))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "alexnet.h5"
        simulate_to_trace(schedule, hw, path, sparsity=chip_zeros())
        with hwsim.trace.open(path) as trace:
            metrics = derive(trace)
    wb = hw.word_bytes
    return {l.name: Figures((sum(l.energy_pj.values()) - l.energy_pj["dram"]) / BATCH / 1e9,
                            int(l.transfers[Level.DRAM].sum()) * wb / 1e6, int(l.transfers[Level.GLB].sum()) * wb / 1e6,
                            l.cycles / hw.clock_hz * 1e3, {k: v / BATCH / 1e9 for k, v in l.energy_pj.items()},
                            {op: int(l.transfers[Level.DRAM, i].sum()) * wb / 1e6
                             for i, op in enumerate(OPERAND_NAMES)})
            for l in metrics.layers}


def _moved_once_mb(layer: Layer, hw: Accelerator) -> dict[str, float]:
    """MB of the layer's ifmap and ofmap tensors for the batch, each coded once as one tile (codec expectation),
    and of its filters: what moving each operand exactly once would cost."""
    assert hw.dram.compression is not None
    rlc, zeros = codec(hw.dram.compression, hw.precision_bits), chip_zeros().zeros(layer.name)
    ifmap = BATCH * int(rlc.expected_words(np.array([layer.in_shape.elements]), zeros.ifmap)[0])
    ofmap = BATCH * int(rlc.expected_words(np.array([layer.out_shape.elements]), zeros.ofmap)[0])
    filters = int(np.prod(layer.weight_shape or (0,)))
    return {op: words * hw.word_bytes / 1e6 for op, words in (("ifmap", ifmap), ("filter", filters),
                                                              ("ofmap", ofmap))}


def explain(layer: Layer, ours: Figures, hw: Accelerator) -> list[str]:
    """What the trace says about a figure out of tolerance: DRAM by operand against each operand moved once;
    energy by component."""
    name = layer.name
    chip, lines = CHIP[name], []
    if abs(ours.dram_mb / chip.dram_mb - 1) > TOLERANCE["dram"] and ours.dram_by_operand_mb:
        once = _moved_once_mb(layer, hw)
        parts = ", ".join(f"{op} {mb:.2f} ({mb / once[op]:.1f} x once)" if op in once else f"{op} {mb:.2f}"
                          for op, mb in ours.dram_by_operand_mb.items() if mb)
        lines.append(f"{name} DRAM {ours.dram_mb:.2f} MB = {parts} MB (coded words, batch {BATCH}; once: each "
                     "tensor moved one time as one coded tile)")
    if abs(ours.energy_mj / chip.energy_mj - 1) > TOLERANCE["energy"] and ours.energy_by_component_mj:
        e = ours.energy_by_component_mj
        parts = ", ".join(f"{k} {v:.3f}" for k, v in e.items() if v and k != "dram")
        lines.append(f"{name} on-chip {ours.energy_mj:.3f} mJ/img = {parts} (the clock drawn over the simulated "
                     f"{ours.latency_ms:.2f} ms of {BATCH} images)")
    return lines


def _cell(ours: float, chip: float, tolerance: float | None) -> str:
    ratio = ours / chip
    verdict = "" if tolerance is None else (" ok " if abs(ratio - 1) <= tolerance else " OUT")
    return f"{ours:8.3f} {chip:7.2f} {ratio:5.2f}{verdict:4s}"


def print_table(title: str, ours: dict[str, Figures]) -> float:
    """The per-layer table and the total latency; the worst judged figure's deviation as a share of its tolerance
    (at most 1: every figure within)."""
    print(f"\n{title}")
    print(f"{'layer':6s} | {'on-chip mJ/img':>14s} {'chip':>5s} {'ratio':>5s}     | {'DRAM MB':>8s} {'chip':>7s} "
          f"{'ratio':>5s}     | {'GLB MB':>8s} {'chip':>7s} {'ratio':>5s} | {'proc ms':>8s} {'chip':>7s} {'ratio':>5s}")
    worst = 0.0
    for name, chip in CHIP.items():
        o = ours[name]
        print(f"{name:6s} | {_cell(o.energy_mj, chip.energy_mj, TOLERANCE['energy']):>26s} | "
              f"{_cell(o.dram_mb, chip.dram_mb, TOLERANCE['dram'])} | {_cell(o.glb_mb, chip.glb_mb, None)} | "
              f"{_cell(o.latency_ms, chip.latency_ms, TOLERANCE['latency'])}")
        for ratio, tolerance in ((o.energy_mj / chip.energy_mj, TOLERANCE["energy"]),
                                 (o.dram_mb / chip.dram_mb, TOLERANCE["dram"]),
                                 (o.latency_ms / chip.latency_ms, TOLERANCE["latency"])):
            worst = max(worst, abs(ratio - 1) / tolerance)
    total = {k: sum(getattr(ours[n], k) for n in CHIP) for k in ("energy_mj", "dram_mb", "glb_mb", "latency_ms")}
    chip_total = {k: sum(getattr(CHIP[n], k) for n in CHIP) for k in total}
    print(f"{'total':6s} | {_cell(total['energy_mj'], chip_total['energy_mj'], None):>26s} | "
          f"{_cell(total['dram_mb'], chip_total['dram_mb'], None)} | "
          f"{_cell(total['glb_mb'], chip_total['glb_mb'], None)} | "
          f"{_cell(total['latency_ms'], chip_total['latency_ms'], TOTAL_LATENCY_TOLERANCE)}")
    worst = max(worst, float(abs(total["latency_ms"] / chip_total["latency_ms"] - 1)) / TOTAL_LATENCY_TOLERANCE)
    print(f"worst figure: {worst:.2f} of its tolerance")
    return worst


def _explain_all(graph: Graph, figures: dict[str, Figures], hw: Accelerator) -> None:
    for line in (line for name in CHIP for line in explain(graph.layer(name), figures[name], hw)):
        print(f"  {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mapping", type=Path, default=CHIP_MAPPING,
                        help="the mapping judged (default: the chip's own, "
                             "configs/mappings/eyeriss-v1-alexnet-jssc.yaml)")
    parser.add_argument("--objective", choices=[*OBJECTIVES.names(), "all"], default="edp",
                        help="what the searched mapping shown beside it minimises per layer (default edp: energy x "
                             "latency; all: each objective in turn)")
    parser.add_argument("--no-search", action="store_true", help="judge the mapping only, no searched mapping beside")
    parser.add_argument("--rules", action="store_true", help="also simulate the rule mapping (CNNergy's rules)")
    args = parser.parse_args()
    hw = load_config("eyeriss-v1")
    graph = zoo.build("alexnet")
    print(f"AlexNet CONV1-5 on {hw.name}, batch {BATCH}, simulated with {chip_zeros().source}; zero gating "
          f"{'on' if hw.pe_array.zero_gating else 'off'}, DRAM code "
          f"{hw.dram.compression.format if hw.dram.compression else 'none'}")
    judged = simulate(graph, hw, load_mapping(args.mapping))
    worst = print_table(f"the chip's mapping ({args.mapping.name}), simulated", judged)
    _explain_all(graph, judged, hw)
    closest: list[tuple[float, str]] = []
    objectives = [] if args.no_search else OBJECTIVES.names() if args.objective == "all" else [args.objective]
    for objective in objectives:
        settings = SearchSettings(objective=objective, jobs=2, use_cache=False, sparsity=chip_zeros())
        found = search_network(graph, hw, BATCH, settings)
        searched = simulate(graph, hw, found.mapping)
        closest.append((print_table(f"searched mapping (objective {objective}, found in {found.seconds:.1f} s, the "
                                    "layers' zeros priced), simulated, shown beside", searched), objective))
        _explain_all(graph, searched, hw)
    if len(closest) > 1:
        share, objective = min(closest)
        print(f"\nclosest searched objective: {objective} (worst figure {share:.2f} of its tolerance)")
    if args.rules:
        print_table("rule mapping (CNNergy's rules), simulated", simulate(graph, hw, None))
    print(f"\ntolerances: on-chip energy ±{TOLERANCE['energy']:.0%}, DRAM ±{TOLERANCE['dram']:.0%}, latency "
          f"±{TOLERANCE['latency']:.0%} per layer, total latency ±{TOTAL_LATENCY_TOLERANCE:.0%}; GLB not judged. "
          f"The chip's mapping: {'all within' if worst <= 1 else 'some figure is OUT'}.")
    sys.exit(0 if worst <= 1 else 1)


if __name__ == "__main__":
    main()
