"""How fast and how good the mapper's search is, measured side by side.

- search time of AlexNet and ResNet-50 on eyeriss-v1 (batch 1, energy objective, no cache) with 1 and with
  `--jobs` processes, beside the targets (10 s and 60 s on a 2-core machine);
- `--zoo`: every layer of every zoo network on eyeriss-v1, under each objective, searched beside the rule mapping:
  per network and objective the worst and the geometric mean of searched / rules, and the layers worse than the
  rules (must be none);
- `--with-nn-dataflow`: nn_dataflow 2.1 (installed with sympy 1.6.2 in a throwaway virtual environment under a
  temporary folder) searching the same AlexNet layers (a grouped layer as its G towers) on the same 12x14 array,
  the same batch, the same per-access energies (DRAM, GLB, inter-PE, RF, MAC in pJ from eyeriss-v1), one process
  each: per layer the energy each reports and the search times. The two models price different access counts
  (see `ALIGNMENT`), so each side's total is printed beside the parts both count.

Usage: python tools/bench_mapper.py [--jobs 2] [--zoo] [--with-nn-dataflow] [--batch 4]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import tempfile
import time
import venv
from pathlib import Path

from hwsim.analytic.estimate import estimate_network
from hwsim.hardware import load_config
from hwsim.hardware.schema import Accelerator
from hwsim.search.cost import OBJECTIVES, rank
from hwsim.search.network import SearchedMapping, SearchSettings, search_network
from hwsim.workload import zoo
from hwsim.workload.ir import Layer, LayerKind

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


# ----- nn_dataflow side by side ---------------------------------------------------------------------------

ALIGNMENT = """\
Energy alignment. Both sides price with eyeriss-v1's energies: DRAM 338.8, GLB 10.16, RF 1.694, MAC 1.694 and
array (nn_dataflow ITCN, hwsim's inter-PE hop) 3.388 pJ per 16-bit word; nn_dataflow's NoC hops between nodes
cost 0 (one node). nn_dataflow reports MACs x op cost + its DRAM, GBUF, ITCN and REGF accesses x cost; hwsim
reports MACs, its RF accesses (the MACs' reads and psum writes and every RF fill), inter-PE hops, GLB and DRAM
accesses, plus clock and control overheads. The column 'hwsim like nnd' drops hwsim's clock and control, which
nn_dataflow does not model; access counting still differs (nn_dataflow's REGF and ITCN counts follow its
Eyeriss map strategy), so DRAM energy, which both count as words moved, is printed separately."""

DRIVER = r'''
import json, sys, time
from nn_dataflow.core import (Cost, ConvLayer, FCLayer, InputLayer, MapStrategyEyeriss, MemHierEnum as me,
                              Network, NNDataflow, NodeRegion, Option, PhyDim2, Resource)
spec = json.load(open(sys.argv[1]))
proc = NodeRegion(dim=PhyDim2(1, 1), origin=PhyDim2(0, 0), type=NodeRegion.PROC)
data = NodeRegion(dim=PhyDim2(1, 1), origin=PhyDim2(0, 0), type=NodeRegion.DRAM)
resource = Resource(proc_region=proc, dram_region=data, src_data_region=data, dst_data_region=data,
                    dim_array=PhyDim2(*spec["array"]), size_gbuf=spec["gbuf_words"], size_regf=spec["regf_words"],
                    array_bus_width=float("inf"), dram_bandwidth=float("inf"), no_time_mux=False)
hier = [0] * me.NUM
hier[me.DRAM], hier[me.GBUF], hier[me.ITCN], hier[me.REGF] = spec["pj"]
cost = Cost(mac_op=spec["mac_pj"], mem_hier=tuple(hier), noc_hop=0, idl_unit=0)
options = Option(sw_gbuf_bypass=(True, True, True), layer_pipeline_opt=False, opt_goal="e", ntops=1, nprocesses=1)
out = {"seconds": 0.0, "layers": {}}
for l in spec["layers"]:  # one network per layer: nn_dataflow checks that a layer's input matches its producer
    net = Network(l["name"])
    if l["fc"]:
        net.set_input_layer(InputLayer(l["C"], l["R"]))
        net.add(l["name"], FCLayer(l["C"], l["M"], l["R"]))
    else:
        net.set_input_layer(InputLayer(l["C"], (l["H_out"] - 1) * l["stride"] + l["R"]))
        net.add(l["name"], ConvLayer(l["C"], l["M"], l["H_out"], l["R"], l["stride"]))
    start = time.time()
    tops, _ = NNDataflow(net, spec["batch"], resource, cost, MapStrategyEyeriss).schedule_search(options)
    out["seconds"] += time.time() - start
    r = tops[0].res_dict[l["name"]]
    out["layers"][l["name"]] = {"cost": r.total_cost, "dram_words": list(r.total_accesses)[me.DRAM]}
print(json.dumps(out))
'''


def nn_dataflow_python(env_dir: Path) -> Path:
    """A throwaway virtual environment with nn_dataflow 2.1 (it needs sympy 1.6.2); its python."""
    python = env_dir / "bin" / "python"
    if not python.exists():
        venv.create(env_dir, with_pip=True)
        subprocess.run([python, "-m", "pip", "install", "-q", "nn-dataflow==2.1", "sympy==1.6.2"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return python


def peer_layers(layers: list[Layer]) -> list[dict[str, object]]:
    """hwsim's conv and FC layers as nn_dataflow layers: one tower of a grouped layer (nn_dataflow has no groups;
    its energy is multiplied by G when compared)."""
    out: list[dict[str, object]] = []
    for l in layers:
        g = l.groups if l.kind is LayerKind.CONV else 1
        fc = l.kind is LayerKind.FC
        out.append({"name": l.name, "C": l.in_shape.c // g, "M": l.out_shape.c // g, "H_out": l.out_shape.h,
                    "H_in": l.in_shape.h, "R": l.in_shape.h if fc else l.kernel[0], "stride": l.stride[0],
                    "fc": fc, "groups": g})
    return out


def nn_dataflow_side_by_side(batch: int) -> None:
    hw = load_config(CONFIG)
    graph = zoo.build("alexnet")
    layers = [l for l in graph if l.kind in (LayerKind.CONV, LayerKind.FC)]
    rf = hw.pe_array.rf
    assert rf is not None
    spec = {"layers": peer_layers(layers), "batch": batch, "array": [hw.pe_array.rows, hw.pe_array.cols],
            "gbuf_words": hw.glb.size_bytes // hw.word_bytes,
            "regf_words": rf.filter_words + rf.ifmap_words + rf.psum_words,
            "pj": [hw.dram.energy_pj_per_bit * hw.precision_bits, hw.glb.read_energy_pj,
                   hw.noc.inter_pe_energy_pj, rf.access_energy_pj], "mac_pj": hw.pe_array.mac_energy_pj}
    with tempfile.TemporaryDirectory(prefix="bench-mapper-") as tmp:
        python = nn_dataflow_python(Path(tmp) / "venv")
        (Path(tmp) / "spec.json").write_text(json.dumps(spec))
        (Path(tmp) / "driver.py").write_text(DRIVER)
        done = subprocess.run([python, Path(tmp) / "driver.py", Path(tmp) / "spec.json"], check=True,
                              capture_output=True, text=True)
    peer = json.loads(done.stdout.strip().splitlines()[-1])
    ours = search_network(graph, hw, batch, SearchSettings(objective="energy", jobs=1, use_cache=False))
    _print_side_by_side(ours, peer, spec, hw)


def _print_side_by_side(ours: SearchedMapping, peer: dict[str, object], spec: dict[str, object],
                        hw: Accelerator) -> None:
    est = {e.layer.name: e for e in estimate_network(zoo.build("alexnet"), hw, ours.mapping).layers}
    groups = {l["name"]: l["groups"] for l in spec["layers"]}  # type: ignore[attr-defined]
    word_pj = hw.dram.energy_pj_per_bit * hw.precision_bits
    print(f"\nAlexNet on a 12x14 array, batch {spec['batch']}, energy per layer in µJ (one process each)")
    print(f"{'layer':6s} {'hwsim':>9s} {'hwsim like nnd':>15s} {'nn_dataflow':>12s} {'ratio':>6s} "
          f"{'DRAM hwsim':>11s} {'DRAM nnd':>9s}")
    for name, r in peer["layers"].items():  # type: ignore[attr-defined]
        e = est[name]
        g = groups[name]
        like = e.total_pj - e.energy_pj["clock"] - e.energy_pj["control"]
        nnd = r["cost"] * g
        nnd_dram = r["dram_words"] * g * word_pj
        print(f"{name:6s} {e.total_pj / 1e6:9.1f} {like / 1e6:15.1f} {nnd / 1e6:12.1f} {like / nnd:6.3f} "
              f"{e.energy_pj['dram'] / 1e6:11.1f} {nnd_dram / 1e6:9.1f}")
    print(f"search time: hwsim {ours.seconds:.1f} s, nn_dataflow {peer['seconds']:.1f} s, "
          f"ratio {ours.seconds / peer['seconds']:.2f}")  # type: ignore[operator]
    print(ALIGNMENT)


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
        nn_dataflow_side_by_side(args.batch)


if __name__ == "__main__":
    main()
