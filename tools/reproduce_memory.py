"""Memory footprints of the phases paper's networks and CEVA's fit-in-L2 shares, with hwsim's planners.

Table 1 (fp32, MB = 10^6 bytes, as the papers): m = m_par + m_buf per
network, m_buf under one buffer per edge (the paper's deep-learning-framework
baseline), TensorRT-style reuse, greedy-by-size offsets, CEVA ids, the
layer-by-layer bound and phases (CSDF, thesis Algorithm 3), beside the DSD'20
paper's Table III (m_DL → m_our) and the thesis' Table 4.3 (buffers, TensorRT
→ phases); then the throughput cost of phases by Eq. 2 on edge-soc-l2.

Table 2 (8 bit): over the built-in zoo and the ONNX Model Zoo graphs shipped
with onnx, the share of networks whose intermediate buffers fit entirely in a
2 MB and a 4 MB L2: one buffer per edge, CEVA's ids, and CEVA's ids with
branch-point swaps and merge buffers (CEVA: 13 → 66 % and 38 → 83 %).

Run: python3 tools/reproduce_memory.py
"""

from __future__ import annotations

import os
import time

import onnx

from hwsim.analytic.csdf import buffer_sizes, phase_timing, to_csdf
from hwsim.analytic.memplan import plan_memory
from hwsim.hardware import load_config
from hwsim.mapping.phases import derive_phases, phased_graph
from hwsim.workload import zoo
from hwsim.workload.ir import Graph
from hwsim.workload.network import load_network

MB = 1e6
LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
FOOTPRINT = (  # (label, network spec, paper m_DL → m_our MB, thesis Table 4.3 buffers TensorRT → ours MB)
    ("resnet18", "resnet18", (84, 52), (4.8, 2.2)),
    ("googlenet", "googlenet", (86, 50), (10.7, 3.0)),
    ("tiny-yolo-v2", "tiny_yolov2", (142, 66), (14.2, 0.8)),
    ("inception-v1", os.path.join(LIGHT, "light_inception_v1.onnx"), (81, 48), (10.3, 3.0)),
    ("vgg19", os.path.join(LIGHT, "light_vgg19.onnx"), (700, 579), (19.3, 2.3)),
    ("densenet121", os.path.join(LIGHT, "light_densenet121.onnx"), (327, 119), (10.9, 7.9)),
    ("squeezenet", os.path.join(LIGHT, "light_squeezenet.onnx"), (34, 12), (5.1, 1.4)),
)
PLANNERS = ("edge", "reuse", "greedy", "ceva", "bound")
L2_SIZES = {"2 MB": 2 * 2**20, "4 MB": 4 * 2**20}


def phased_bytes(graph: Graph, bits: int) -> tuple[int, int]:
    """Total phased buffer bytes and the number of phases (thesis rule)."""
    pg = phased_graph(graph, derive_phases(graph))
    return buffer_sizes(to_csdf(pg, bits), len(pg.edges)).total_bytes, pg.firings


def footprint_table() -> None:
    hw = load_config("edge-soc-l2")
    print("Table 1: memory footprint at fp32 (MB); m = m_par + m_buf")
    head = (f"{'network':13} {'m_par':>7} " + " ".join(f"{p:>7}" for p in PLANNERS)
            + f" {'phases':>7} {'m edge':>7} {'m phase':>7} {'paper m':>12} {'thesis buf':>12} {'phases#':>8}"
            f" {'thr. −':>7}")
    print(head)
    for label, spec, paper, thesis in FOOTPRINT:
        graph = load_network(spec).graph
        m_par = graph.total_params * 4
        bufs = {p: plan_memory(graph, p, 32).total_bytes for p in PLANNERS}
        phased, firings = phased_bytes(graph, 32)
        one = phased_graph(graph, {l.name: 1 for l in graph.layers})
        many = phased_graph(graph, derive_phases(graph))
        decrease = 1 - phase_timing(one, hw).cycles / phase_timing(many, hw).cycles
        print(f"{label:13} {m_par / MB:7.1f} " + " ".join(f"{bufs[p] / MB:7.2f}" for p in PLANNERS)
              + f" {phased / MB:7.2f} {(m_par + bufs['edge']) / MB:7.1f} {(m_par + phased) / MB:7.1f}"
              f" {paper[0]:>5} → {paper[1]:<4} {thesis[0]:>5} → {thesis[1]:<4} {firings:8d} {decrease * 100:6.1f}%")
    print("paper m: DSD'20 Table III m_DL → m_our; thesis buf: Table 4.3 buffers TensorRT → phases; "
          "phases#: total phases here; thr. −: Eq. 2 throughput decrease of phases on edge-soc-l2")


def networks() -> list[tuple[str, str]]:
    """The built-in zoo at default inputs and the ONNX Model Zoo graphs shipped with onnx."""
    found = [(name, name) for name in zoo.names()]
    found += [(f.removeprefix("light_").removesuffix(".onnx") + " (onnx)", os.path.join(LIGHT, f))
              for f in sorted(os.listdir(LIGHT)) if f.endswith(".onnx")]
    return found


def fit_table() -> None:
    print("\nTable 2: intermediate buffers at 8 bit (MiB) and whether they fit entirely in the L2")
    print(f"{'network':28} {'edge':>9} {'ids':>9} {'ceva':>9} {'greedy':>9} {'bound':>9} {'greedy÷bound':>13}")
    sizes: dict[str, list[float]] = {"edge": [], "ids": [], "ceva": []}
    for label, spec in networks():
        graph = load_network(spec).graph
        edge = plan_memory(graph, "edge", 8).total_bytes
        ceva = plan_memory(graph, "ceva", 8)
        row = {"edge": edge, "ids": ceva.details["ids_bytes"], "ceva": ceva.total_bytes}
        for k, v in row.items():
            sizes[k].append(v)
        greedy = plan_memory(graph, "greedy", 8).total_bytes
        print(f"{label:28} " + " ".join(f"{v / 2**20:9.3f}" for v in row.values())
              + f" {greedy / 2**20:9.3f} {ceva.bound_bytes / 2**20:9.3f} {greedy / ceva.bound_bytes:13.3f}")
    n = len(sizes["edge"])
    for size_label, capacity in L2_SIZES.items():
        shares = {k: sum(v <= capacity for v in vs) / n for k, vs in sizes.items()}
        print(f"fit in {size_label} L2 ({n} networks): one buffer per edge {shares['edge'] * 100:.0f} %, "
              f"CEVA ids {shares['ids'] * 100:.0f} %, ids + swaps + merge {shares['ceva'] * 100:.0f} %")
    print("CEVA reports 13 → 66 % (2 MB) and 38 → 83 % (4 MB) over its own network set")


def main() -> None:
    start = time.perf_counter()
    footprint_table()
    fit_table()
    print(f"\n{time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
