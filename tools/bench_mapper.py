"""How fast and how good the mapper's search is, measured side by side.

- search time of AlexNet and ResNet-50 on eyeriss-v1 (batch 1, energy objective, no cache) with 1 and with
  `--jobs` processes, beside the targets (10 s and 60 s on a 2-core machine);
- `--zoo`: every layer of every zoo network on eyeriss-v1, under each objective, searched beside the rule mapping:
  per network and objective the worst and the geometric mean of searched / rules, and the layers worse than the
  rules (must be none);
- `--with-nn-dataflow`: nn_dataflow 2.1 (with sympy 1.6.2 in a throwaway virtual environment made on the first
  run and reused after, under ~/.cache/hwsim-peers/envs: tools/throwaway_env.py) scheduling the same AlexNet layers
  (a grouped layer as one of its G towers) on the same 12x14 array, the same batch and the same per-access
  energies, as it is and limited to Eyeriss' RF and GLB partitions (tools/nn_dataflow_peer.py): (a) each tool's
  best under its own model, (b) hwsim's searched mapping beside nn_dataflow's schedule translated into an hwsim
  nest, both priced by hwsim, the access counts of each level side by side, and each search's CPU seconds (user +
  sys) and wall seconds, measured in the same run, beside the energy of the mappings it chose.

Usage: python tools/bench_mapper.py [--jobs 2] [--zoo] [--with-nn-dataflow] [--batch 4]
"""

from __future__ import annotations

import argparse
import math
import time

import nn_dataflow_peer

from hwsim.hardware import load_config
from hwsim.hardware.schema import Accelerator
from hwsim.search.cost import OBJECTIVES, rank
from hwsim.search.network import SearchedMapping, SearchSettings, search_network
from hwsim.workload import zoo

TARGETS_S = {"alexnet": 10.0, "resnet50": 60.0}
CONFIG = "eyeriss-v1"


def search(net: str, hw: Accelerator, objective: str, jobs: int, batch: int = 1) -> SearchedMapping:
    return search_network(zoo.build(net), hw, batch, SearchSettings(objective=objective, jobs=jobs, use_cache=False))


def times(jobs: int) -> None:
    hw = load_config(CONFIG)
    print(f"search time on {CONFIG}, batch 1, objective energy, no cache")
    print(f"{'network':10s} {'shapes':>6s} {'1 process s':>12s} {f'{jobs} processes s':>14s} {'target s':>9s}")
    for net, target in TARGETS_S.items():
        one = search(net, hw, "energy", 1)
        many = search(net, hw, "energy", jobs)
        verdict = "ok" if min(one.seconds, many.seconds) <= target else "OVER"
        print(f"{net:10s} {one.shapes:6d} {one.seconds:12.1f} {many.seconds:14.1f} {target:9.0f} {verdict}")


def zoo_table(jobs: int) -> None:
    hw = load_config(CONFIG)
    print(f"\nsearched / rules per layer on {CONFIG}, batch 1 (worst, geometric mean, layers worse than the rules)")
    print(f"{'network':20s} {'layers':>6s} " + " ".join(f"{o:>22s}" for o in OBJECTIVES.names()) + f" {'s':>6s}")
    worse_total = 0
    for net in zoo.names():
        cells, start, layers = [], time.perf_counter(), 0
        for objective in OBJECTIVES.names():
            found = search(net, hw, objective, jobs)
            ratios = [rank(objective, c.cost)[0] / rank(objective, c.rule_cost)[0] for c in found.choices
                      if c.rule_cost is not None and rank(objective, c.rule_cost)[0] > 0]
            worse = sum(1 for r in ratios if r > 1 + 1e-12)
            worse_total += worse
            layers = len(found.choices)
            geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else 1.0
            cells.append(f"{max(ratios, default=1.0):7.3f} {geo:7.3f} {worse:6d}")
        print(f"{net:20s} {layers:6d} " + " ".join(f"{c:>22s}" for c in cells)
              + f" {time.perf_counter() - start:6.0f}", flush=True)
    print(f"layers where the search is worse than the rules, all networks and objectives: {worse_total}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=2, help="processes for the parallel runs (default 2)")
    parser.add_argument("--zoo", action="store_true", help="every zoo network under every objective")
    parser.add_argument("--with-nn-dataflow", action="store_true", help="nn_dataflow 2.1 side by side on AlexNet")
    parser.add_argument("--batch", type=int, default=4, help="batch of the nn_dataflow comparison (default 4)")
    parser.add_argument("--no-times", action="store_true", help="skip the AlexNet and ResNet-50 timings")
    args = parser.parse_args()
    if not args.no_times:
        times(args.jobs)
    if args.zoo:
        zoo_table(args.jobs)
    if args.with_nn_dataflow:
        nn_dataflow_peer.compare(args.batch)


if __name__ == "__main__":
    main()
