"""Reproduce the headline numbers of Goetschalckx & Verhelst (JETCAS 2019) with hwsim's depth-first optimiser.

SRGAN, MobileNetV2-SSDLite and DMCNN-VD at 1280x720 and 3840x2160 (8 bit: a
byte is one of the paper's features), and the first five conv layers of VGG-E
at 224x224 against the fused-layer accelerator (Alwani et al. 2016). Prints
ours beside the paper's. Run: python3 tools/reproduce_depthfirst.py
"""

from __future__ import annotations

import time

from hwsim.analytic.depth_first import (
    WeightPolicy,
    layer_by_layer_dram_bytes,
    layer_by_layer_on_chip_bytes,
)
from hwsim.search.depth_first import (
    DepthFirstPareto,
    Gain,
    ParetoPoint,
    depth_first_pareto,
    memory_gain,
    min_bandwidth_gain,
    point_cost,
    tiling_gain,
)
from hwsim.workload.ir import Graph
from hwsim.workload.network import load_network

NETWORKS = ("srgan", "mobilenetv2_ssdlite", "dmcnn_vd")
RESOLUTIONS = {"HD": (720, 1280), "4K": (2160, 3840)}  # (H, W)
PAPER = {  # what the paper states, by (network, resolution)
    ("dmcnn_vd", "4K"): "min-BW gain 268x",
    ("srgan", "4K"): "memory gain up to 19,633x",
    ("srgan", "HD"): "min-BW point 165 M features DRAM, 6.4 M on chip, 24 % model",
}


def features_on_chip(graph: Graph, p: ParetoPoint) -> int:
    """On-chip bytes of the point without the weights (feature buffers only)."""
    cost = point_cost(graph, p.cuts, list(p.tiling), p.weights)
    return max(s.line_buffer_bytes + s.skip_buffer_bytes for s in cost.stacks)


def feature_tiling_gain(graph: Graph, r: DepthFirstPareto, gain: Gain) -> float:
    """The tiling gain's two points compared on their feature buffers only (weights left out)."""
    def at(front: tuple[ParetoPoint, ...], on_chip: int) -> ParetoPoint:
        return min((p for p in front if p.on_chip_bytes == on_chip), key=lambda p: p.dram_bytes)
    return features_on_chip(graph, at(r.untiled_front, gain.reference_bytes)) / \
        features_on_chip(graph, at(r.front, gain.on_chip_bytes))


def m(x: float) -> str:
    return f"{x / 1e6:,.2f} M"


def run_one(name: str, res: str) -> tuple[Graph, DepthFirstPareto, float]:
    graph = load_network(name, RESOLUTIONS[res]).graph
    start = time.perf_counter()
    result = depth_first_pareto(graph)
    return graph, result, time.perf_counter() - start


def main() -> None:
    print("Goetschalckx & Verhelst 2019 vs hwsim (8 bit: bytes = features)\n")
    print(f"{'network':22}{'res':4}{'time':>7}{'front':>6} {'min-BW point (DRAM / on chip)':>32}"
          f"{'lbl@=mem':>14}{'min-BW gain':>12}{'mem gain':>11}{'tiling gain':>12}  paper")
    scaling: dict[str, dict[str, tuple[int, int]]] = {}
    for name in NETWORKS:
        for res in RESOLUTIONS:
            graph, r, seconds = run_one(name, res)
            best = min(r.front, key=lambda p: (p.dram_bytes, p.on_chip_bytes))
            mbw = min_bandwidth_gain(graph, r.front)
            mem = memory_gain(graph, r.front)
            tile = tiling_gain(r.front, r.untiled_front)
            print(f"{name:22}{res:4}{seconds:6.1f}s{len(r.front):6} "
                  f"{m(best.dram_bytes):>15} / {m(best.on_chip_bytes):>14}"
                  f"{m(mbw.reference_bytes):>14}{mbw.ratio:>11,.0f}x{mem.ratio if mem else 0:>10,.0f}x"
                  f"{tile.ratio if tile else 0:>11,.1f}x  {PAPER.get((name, res), '')}")
            if tile:
                print(f"{'':26}tiling gain on feature buffers alone at that DRAM: "
                      f"{feature_tiling_gain(graph, r, tile):,.1f}x (the total also counts on-chip weights)")
            io = layer_by_layer_dram_bytes(graph, 2**62)
            lbl = layer_by_layer_on_chip_bytes(graph, io)
            if lbl is None:
                raise SystemExit(f"{name} at {res}: the layer-by-layer bound never reaches its own DRAM traffic")
            scaling.setdefault(name, {})[res] = (features_on_chip(graph, best), lbl)
            if (name, res) == ("srgan", "HD"):
                model_share = r.model_bytes / best.on_chip_bytes if best.weights is WeightPolicy.ON_CHIP else 0.0
                print(f"{'':26}SRGAN HD min-BW: {m(best.dram_bytes)} features DRAM, {m(best.on_chip_bytes)} on chip, "
                      f"model {m(r.model_bytes)} = {model_share:.0%} (paper 165 M, 6.4 M, 24 %, 1.5 M parameters)")
    print("\nScaling HD -> 4K (min(W,H) grows 3x, W*H grows 9x):")
    for name, by_res in scaling.items():
        (df_hd, lbl_hd), (df_4k, lbl_4k) = by_res["HD"], by_res["4K"]
        print(f"  {name:22} depth-first feature buffers at min-BW {m(df_hd)} -> {m(df_4k)} ({df_4k / df_hd:.2f}x); "
              f"layer-by-layer memory for in+out traffic {m(lbl_hd)} -> {m(lbl_4k)} ({lbl_4k / lbl_hd:.2f}x)")

    print("\nVGG-E first five conv layers at 224x224 vs fused-layer (Alwani et al. 2016: 362 KB on chip, "
          "feature traffic 77 MB -> 3.6 MB, 32-bit):")
    for bits in (8, 32):
        graph = load_network("vgg_e5", (224, 224)).graph
        r = depth_first_pareto(graph, bits=bits)
        best = min(r.front, key=lambda p: (p.dram_bytes, p.on_chip_bytes))
        lbl0 = layer_by_layer_dram_bytes(graph, 0, bits)
        feats = point_cost(graph, best.cuts, list(best.tiling), best.weights, bits)
        fmb = max(s.line_buffer_bytes + s.skip_buffer_bytes for s in feats.stacks)
        print(f"  {bits:2}-bit: layer-by-layer with no on-chip memory {lbl0 / 2**20:.1f} MiB -> depth-first "
              f"{best.dram_bytes / 2**20:.2f} MiB; feature buffers {fmb / 1024:.0f} KiB "
              f"(362 KB / ours = {362 * 1000 / fmb:.1f}x; paper: about 3x), "
              f"with weights {best.on_chip_bytes / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
