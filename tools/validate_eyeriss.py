"""AlexNet CONV1-5 on eyeriss-v1 at batch 4 beside Eyeriss v1 silicon (JSSC 2017, Table V).

Ours: the integer-tiled row-stationary estimate (`hwsim estimate`), with the ifmap zeros Table V
measured driving zero gating. Theirs: on-chip energy per image = power x latency / 4, DRAM MB and
processing latency for the batch of 4. DRAM is also shown as it would be with Eyeriss' run-length
compression (CNNergy's factor) applied to our ifmap and ofmap words, to show how much of the
difference compression explains. The faithful CNNergy on-chip energy and DRAM traffic (reference run,
its batch per layer, scaled to 4 images) are shown too.
With the simulator (default), the simulated processing latency and DRAM MB per layer, read from
the trace of `hwsim simulate`, are printed beside silicon too, for the rule mapping and for the searched
row-stationary mapping (`hwsim map --objective latency`, batch 4): DRAM MB uncompressed, the search's latency
estimate (double buffering) beside the simulated latency, and both beside the chip.
Usage: python tools/validate_eyeriss.py [--no-sim] [--objective latency|energy|edp|dram]
"""

from __future__ import annotations

import argparse
import csv
import tempfile
from dataclasses import replace
from pathlib import Path

import hwsim.trace
from hwsim.analytic.cnnergy import cnnergy_network, read_layer_table, rlc_words_per_word
from hwsim.analytic.estimate import estimate_network
from hwsim.hardware import load_config
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.mapper import default_mapping, network_schedule
from hwsim.mapping.nest.format import NetworkMapping
from hwsim.metrics import derive
from hwsim.search.cost import OBJECTIVES
from hwsim.search.network import SearchSettings, search_network
from hwsim.sim.run import simulate_to_trace
from hwsim.vocab import Access, Level, Operand
from hwsim.workload import zoo
from hwsim.workload.ir import Graph

BATCH = 4
REFERENCE = Path(__file__).resolve().parents[1] / "tests" / "data"  # the published figures, with their sources
CNNERGY_TABLE = REFERENCE / "cnnergy-alexnet-layers.csv"
ENERGY_TOLERANCE, DRAM_TOLERANCE, LATENCY_TOLERANCE = 0.15, 0.30, 0.20


def _rows(path: Path) -> list[dict[str, str]]:
    """A CSV of tests/data without its `#` provenance lines."""
    return list(csv.DictReader(line for line in path.read_text().splitlines() if not line.startswith("#")))


# layer: (power mW, latency ms, processing ms, DRAM MB, ifmap zeros) from JSSC 2017 Table V.
SILICON = {r["layer"]: (float(r["power_mw"]), float(r["latency_ms"]), float(r["processing_ms"]), float(r["dram_mb"]),
                        float(r["ifmap_zeros"]))
           for r in _rows(REFERENCE / "eyeriss-v1-alexnet-silicon.csv") if r["layer"].startswith("conv")}
# ofmap zeros of each conv (CNNergy reference run, sp_of), for the compressed-DRAM column.
OFMAP_ZEROS = {f"conv{i + 1}": float(r["sp_of"]) for i, r in enumerate(_rows(CNNERGY_TABLE)[:5])}


def _verdict(ratio: float, tolerance: float) -> str:
    return "ok" if abs(ratio - 1) <= tolerance else "OUT"


def simulated(graph: Graph, hw: Accelerator, mapping: NetworkMapping | None = None) -> dict[str, tuple[float, float]]:
    """Simulate CONV1-5 (batch 4, DRAM and GLB traced) of `mapping` (default: the rules): per layer (processing ms,
    DRAM MB) from the trace."""
    schedule = network_schedule(graph, hw, BATCH, mapping)
    schedule = replace(schedule, layers=tuple(ls for ls in schedule.layers if ls.layer.name in SILICON))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "alexnet.h5"
        simulate_to_trace(schedule, hw, path, frozenset({"dram", "glb"}))
        with hwsim.trace.open(path) as trace:
            metrics = derive(trace)
    return {l.name: (l.cycles / hw.clock_hz * 1e3, int(l.transfers[Level.DRAM].sum()) * hw.word_bytes / 1e6)
            for l in metrics.layers}


def searched_table(graph: Graph, hw: Accelerator, objective: str) -> None:
    """The searched row-stationary mapping of CONV1-5: DRAM MB, the latency estimate and the simulated latency
    beside the chip."""
    found = search_network(graph, hw, BATCH, SearchSettings(objective=objective, jobs=2, use_cache=False))
    choices = {c.layer: c for c in found.choices}
    print(f"\nsearched mapping (objective {objective}, found in {found.seconds:.1f} s), simulated: DRAM uncompressed")
    print(f"{'layer':6s} | {'DRAM MB':>8s} {'rules':>6s} {'silicon':>8s} {'ratio':>6s} | {'est ms':>7s} {'sim ms':>7s} "
          f"{'est/sim':>7s} {'rules':>6s} {'silicon':>8s} {'ratio':>6s}")
    rules = simulated(graph, hw)
    for name, (ms, mb) in simulated(graph, hw, found.mapping).items():
        processing_ms, dram_mb = SILICON[name][2], SILICON[name][3]
        est_ms = choices[name].cost.latency_cycles / hw.clock_hz * 1e3
        r_t = ms / processing_ms
        print(f"{name:6s} | {mb:8.2f} {rules[name][1]:6.2f} {dram_mb:8.1f} {mb / dram_mb:6.2f} | {est_ms:7.2f} "
              f"{ms:7.2f} {est_ms / ms:7.2f} {rules[name][0]:6.2f} {processing_ms:8.1f} {r_t:6.2f} "
              f"{_verdict(r_t, LATENCY_TOLERANCE)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-sim", action="store_true", help="only the analytic columns")
    parser.add_argument("--objective", choices=OBJECTIVES.names(), default="latency",
                        help="what the searched mapping minimises (default latency)")
    args = parser.parse_args()
    hw = load_config("eyeriss-v1")
    graph = zoo.build("alexnet")
    zeros = {name: row[4] for name, row in SILICON.items()}
    estimate = {l.layer.name: l for l in estimate_network(graph, hw, default_mapping(graph, hw, BATCH), zeros).layers}
    cnnergy = {f"conv{i + 1}": r for i, r in enumerate(cnnergy_network(read_layer_table(CNNERGY_TABLE), hw).layers)}
    print(f"AlexNet on {hw.name}, batch {BATCH}: ours (closed form of the default mapping) vs Eyeriss v1 silicon")
    print(f"{'layer':6s} | {'on-chip mJ/img':>14s} {'silicon':>8s} {'ratio':>6s} {'':3s} {'CNNergy':>8s} | "
          f"{'DRAM MB':>8s} {'RLC MB':>7s} {'silicon':>8s} {'ratio':>6s} {'RLC':>6s} {'':3s} {'CNNergy':>8s} | "
          f"{'proc ms':>8s} {'silicon':>8s} {'ratio':>6s} {'':3s} {'bound by':>8s}")
    for name, (power_mw, latency_ms, processing_ms, dram_mb, if_zeros) in SILICON.items():
        e = estimate[name]
        on_chip_mj = (e.total_pj - e.energy_pj["dram"]) / BATCH / 1e9
        silicon_mj = power_mw * latency_ms / BATCH / 1e3
        faithful = cnnergy[name].energy
        faithful_mj = (faithful.total_pj - faithful.dram_pj) / 1e9
        t = e.counts.transfers
        dram_words = int(t[Level.DRAM].sum())
        ifmap = int(t[Level.DRAM, Operand.IFMAP, Access.READ])
        ofmap = int(t[Level.DRAM, Operand.OFMAP, Access.UPDATE])
        first = name == "conv1"  # the image is read uncompressed
        rlc_words = (dram_words - ofmap - (0 if first else ifmap)
                     + ofmap * rlc_words_per_word(hw.precision_bits, OFMAP_ZEROS[name])
                     + (0 if first else ifmap * rlc_words_per_word(hw.precision_bits, if_zeros)))
        mb, rlc_mb = dram_words * hw.word_bytes / 1e6, rlc_words * hw.word_bytes / 1e6
        word_pj = hw.dram.energy_pj_per_bit * hw.precision_bits
        faithful_mb = faithful.dram_pj / word_pj * hw.word_bytes * BATCH / 1e6
        ms = e.latency.bound_cycles / hw.clock_hz * 1e3
        r_e, r_d, r_rlc, r_t = on_chip_mj / silicon_mj, mb / dram_mb, rlc_mb / dram_mb, ms / processing_ms
        print(f"{name:6s} | {on_chip_mj:14.3f} {silicon_mj:8.3f} {r_e:6.2f} {_verdict(r_e, ENERGY_TOLERANCE):3s} "
              f"{faithful_mj:8.3f} | {mb:8.2f} {rlc_mb:7.2f} {dram_mb:8.1f} {r_d:6.2f} {r_rlc:6.2f} "
              f"{_verdict(r_rlc, DRAM_TOLERANCE):3s} {faithful_mb:8.2f} | {ms:8.2f} {processing_ms:8.1f} {r_t:6.2f} "
              f"{_verdict(r_t, LATENCY_TOLERANCE):3s} {e.latency.bottleneck:>8s}")
    if not args.no_sim:
        print(f"\nsimulated (hwsim simulate, batch {BATCH}, DRAM+GLB traced): latency and DRAM from the trace")
        print(f"{'layer':6s} | {'sim ms':>8s} {'silicon':>8s} {'ratio':>6s} {'':3s} | {'sim DRAM MB':>11s} "
              f"{'silicon':>8s} {'ratio':>6s}")
        for name, (ms, mb) in simulated(graph, hw).items():
            processing_ms, dram_mb = SILICON[name][2], SILICON[name][3]
            r_t = ms / processing_ms
            print(f"{name:6s} | {ms:8.2f} {processing_ms:8.1f} {r_t:6.2f} {_verdict(r_t, LATENCY_TOLERANCE):3s} | "
                  f"{mb:11.2f} {dram_mb:8.1f} {mb / dram_mb:6.2f}")
    if not args.no_sim:
        searched_table(graph, hw, args.objective)
    print(f"tolerances: on-chip energy ±{ENERGY_TOLERANCE:.0%}, DRAM ±{DRAM_TOLERANCE:.0%} (judged on the "
          f"RLC column), latency ±{LATENCY_TOLERANCE:.0%}")


if __name__ == "__main__":
    main()
