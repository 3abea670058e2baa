"""Run Stream (stream-dse 2.1.1) on its shipped two-conv example with fixed (hand-written) allocations and print
per-layer core/start/end/latency/energy plus totals as JSON.

Run inside Stream's own environment (tools/stream_peer.py makes it and runs this):
    STREAM_PEER_WORK=DIR python tools/stream_peer_run.py [--scenario NAME ...] > result.json

Scenarios (all use the 2-conv workload of stream/tests/test_co.py: bf16, 1x8x32x32 -> Conv3x3 16 -> Conv3x3 32):
  tpu4_split4     : tpu_like_quad_core.yaml + the shipped test mapping (make_2_conv_mapping): each Conv on cores
                    0-3, its output channels (D6 = K) split 4 ways; one fused group, intra_core_tiling Conv1.D0 tile 1.
  tpu4_layer_core : tpu_like_quad_core.yaml, Conv1 -> core 0, Conv2 -> core 1, no inter-core split, same fused group.
  eyeriss2_layer_core : eyeriss_like_dual_core.yaml, Conv1 -> core 0, Conv2 -> core 1.
  eyeriss2_fused_tiles : as eyeriss2_layer_core, but the fused group's intra_core_tiling cuts the output rows
                    (Conv1.D2 = OY, 32) into tiles of 8: 4 steady-state iterations, Conv2's tiles following Conv1's.
No search: the mapping YAML fixes which cores each layer runs on (only the MILP for tensor placement / transfer
routing runs, with OR-Tools GSCIP, license-free).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import shutil
import sys
from typing import Any

import stream
import yaml
from stream.api import SolveOptions, evaluate_mapping
from stream.inputs.testing.workload.make_2_conv import TwoConvWorkloadConfig, make_2_conv_workload
from stream.opt.allocation.constraint_optimization.utils import active_fraction
from stream.workload.node import ComputationNode

PKG = os.path.dirname(stream.__file__)
HW_DIR = os.path.join(PKG, "inputs", "examples", "hardware")
WORK = os.environ.get("STREAM_PEER_WORK", "/tmp/stream-peer")

CFG = TwoConvWorkloadConfig(
    batch_size=1, in_channels=8, height=32, width=32, out_channels_1=16, out_channels_2=32,
    kernel_size=3, in_dtype="bf16", weight_dtype="bf16",
)


LAYER_TILING = [{"dim": "Conv1.D0", "tile": 1}]  # batch in tiles of 1: batch 1 is one iteration (shipped mapping)
ROW_TILING = [{"dim": "Conv1.D2", "tile": 8}]  # D2 = OY (conv_maps: b, ox, oy, ...): 32 rows in 4 tiles of 8


def mapping_yaml(name: str, alloc: dict[str, list[int]], split: dict[str, list[dict[str, Any]]],
                 tiling: list[dict[str, Any]]) -> str:
    """A Stream mapping YAML: per layer its core_allocation (one group of cores) and inter_core_tiling; one fused group
    with intra_core_tiling `tiling` (each entry's `tile` is a tile's size along the dim, not the number of tiles)."""
    data = {
        "layers": [
            {"name": layer, "core_allocation": [cores], "inter_core_tiling": [split.get(layer, [])]}
            for layer, cores in alloc.items()
        ],
        "fused_groups": [
            {"name": "Fused_Group_1", "layers": list(alloc), "intra_core_tiling": tiling}
        ],
        "runtime_args": {"input": {}, "weights_1": {}, "weights_2": {}, "output": {}},
    }
    path = os.path.join(WORK, f"mapping_{name}.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(data, f, sort_keys=False)
    return path


SCENARIOS = {  # name: (hardware file, cores per layer, inter_core_tiling per layer, the fused group's tiling)
    "tpu4_split4": (
        "tpu_like_quad_core.yaml",
        {"Conv1": [0, 1, 2, 3], "Conv2": [0, 1, 2, 3]},
        {"Conv1": [{"dim": "D6", "split": 4}], "Conv2": [{"dim": "D6", "split": 4}]},
        LAYER_TILING,
    ),
    "tpu4_layer_core": ("tpu_like_quad_core.yaml", {"Conv1": [0], "Conv2": [1]}, {}, LAYER_TILING),
    "eyeriss2_layer_core": ("eyeriss_like_dual_core.yaml", {"Conv1": [0], "Conv2": [1]}, {}, LAYER_TILING),
    "eyeriss2_fused_tiles": ("eyeriss_like_dual_core.yaml", {"Conv1": [0], "Conv2": [1]}, {}, ROW_TILING),
}


def _num(x: Any) -> int | float | None:
    if x is None:
        return None
    f = float(x)
    return int(f) if f.is_integer() else f


def run(name: str, workload_path: str) -> dict[str, Any]:
    hw_file, alloc, split, tiling = SCENARIOS[name]
    hw = os.path.join(HW_DIR, hw_file)
    mapping = mapping_yaml(name, alloc, split, tiling)
    out = os.path.join(WORK, "outputs", name)
    shutil.rmtree(out, ignore_errors=True)
    est = evaluate_mapping(hw, workload_path, out, mapping, SolveOptions(artifacts=True))
    ctx = est.context
    allocation = ctx.get("allocation")
    problem, sol = allocation.problem, allocation.solution
    lut, ssis, mp = problem.cost_lut, problem.ssis, problem.mapping
    lat = sol.latency

    slot_start, acc = {}, 0.0
    for s in sorted(sol.slot_latencies):
        slot_start[s] = acc
        acc += float(sol.slot_latencies[s])

    layers = []
    for node in problem.workload.nodes:
        if not isinstance(node, ComputationNode):
            continue
        cores = sorted({c.id for group in mp.get(node).resource_allocation for c in group})
        placed = [c for c in lut.get_cores(node) if c.id in cores]
        frac = active_fraction(node, ssis)
        per_core = []
        for c in placed:
            e = lut.get_cost(node, c)
            entry = {
                "core": c.id,
                "latency_total_cycles": _num(e.latency_total),
                "ideal_cycle": _num(e.ideal_cycle),
                "ideal_temporal_cycle": _num(e.ideal_temporal_cycle),
                "energy_total_pj": _num(e.energy_total),
            }
            if e.cme is not None:
                cme = e.cme
                entry["mac_energy_pj"] = _num(getattr(cme, "mac_energy", None))
                entry["mem_energy_pj"] = _num(getattr(cme, "mem_energy", None))
                entry["spatial_mapping"] = str(getattr(cme, "spatial_mapping", None))
                entry["temporal_mapping"] = str(getattr(cme, "temporal_mapping", "")).replace("\n", " | ")[:600]
            per_core.append(entry)
        latency = math.ceil(max(lut.get_cost(node, c).latency_total for c in placed)) * frac
        energy = sum(lut.get_cost(node, c).energy_total for c in placed) * frac
        slot = problem.timeslots[node]
        start = slot_start[slot]
        layers.append({
            "layer": node.name,
            "type": node.type,
            "cores": cores,
            "inter_core_tiling": [[str(d), int(f)] for grp in mp.get(node).inter_core_tiling for d, f in grp]
            if mp.get(node).inter_core_tiling else [],
            "slot": slot,
            "start_cycle": _num(start),
            "end_cycle": _num(start + latency),
            "latency_cycles": _num(latency),
            "energy_pj": _num(energy),
            "note": "start/end are within steady-state iteration i (iteration k adds k*(per_iteration-overlap)); "
                    "latency/energy are per iteration (energy summed over the layer's cores)",
            "per_core": per_core,
        })

    transfers = []
    for tr, plan in sol.transfer_routes.items():
        slot = problem.timeslots[tr]
        transfers.append({
            "transfer": tr.name,
            "slot": slot,
            "start_cycle": _num(slot_start[slot]),
            "slot_latency_cycles": _num(sol.slot_latencies[slot]),
            "route_cycles": _num(sol.route_cycles.get(tr)),
            "sources": [c.id for c in plan.sources],
            "targets": [c.id for c in plan.targets],
            "links": [str(link) for link in plan.links_used],
        })
    transfers.sort(key=lambda t: t["slot"])

    perf = sol.performance
    return {
        "scenario": name,
        "hardware": hw,
        "workload": workload_path,
        "mapping": mapping,
        "totals": {
            "latency_total_cycles": lat.total,
            "latency_per_iteration_cycles": lat.per_iteration,
            "overlap_cycles": lat.overlap,
            "fill_cycles": lat.fill,
            "iterations": problem.iterations,
            "estimate_cycles": _num(est.cycles),
            "energy_total_pj": _num(perf["energy"]["total_pj"]),
            "energy_nodes_pj_per_iteration": _num(perf["energy"]["node_pj_per_iteration"]),
            "energy_transfers_pj_per_iteration": _num(perf["energy"]["transfer_pj_per_iteration"]),
            "bottleneck": perf["bottleneck"],
            "end_to_end_mac_utilization": perf["aggregate"]["end_to_end_mac_utilization"],
            "total_mac_ops": perf["aggregate"]["total_mac_ops"],
            "solver": {"status": sol.solve_stats.status, "backend": sol.solve_stats.backend,
                       "solve_time_s": sol.solve_stats.solve_time_s},
        },
        "slot_latencies": {str(k): _num(v) for k, v in sorted(sol.slot_latencies.items())},
        "layers": layers,
        "transfers": transfers,
        "outputs_dir": out,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", action="append", choices=list(SCENARIOS))
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    logging.getLogger("zigzag").setLevel(logging.ERROR)
    os.makedirs(WORK, exist_ok=True)
    with contextlib.redirect_stdout(sys.stderr):  # the builder prints, and writes into the package's folder
        built = make_2_conv_workload(CFG)
    workload = os.path.join(WORK, os.path.basename(built))
    shutil.copy(built, workload)
    with contextlib.redirect_stdout(sys.stderr):
        results = [run(name, workload) for name in (args.scenario or list(SCENARIOS))]
    print(json.dumps({"stream_dse_version": "2.1.1", "runs": results}, indent=1, default=str))


if __name__ == "__main__":
    main()
