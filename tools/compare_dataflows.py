"""The dataflow comparison of Chen et al., ISCA 2016 (Eyeriss), Fig. 10-11: AlexNet (and VGG-16) CONV and FC
layers on arrays of the same PE count and the same storage area in each dataflow, each layer at the mapping the
search finds for it (objective energy), energy per MAC by level, beside the paper's finding.

The arrays: eyeriss-v1's 12x14 PEs, 16-bit words and per-access energies in every case. Row stationary keeps its
RFs (224 + 12 + 24 words per PE); a weight- or output-stationary systolic PE holds one word of each operand; a
no-local-reuse PE none. Storage area is held equal by giving the GLB what a dataflow's RFs do not use (GLB access
energy then follows the config's size law, E ~ S^0.5), as the paper gives the other dataflows a larger buffer.

Paper (ISCA 2016, Section VII): row stationary is 1.4x to 2.5x more energy-efficient than the other dataflows on
the CONV layers of AlexNet, and at least 1.3x on the FC layers at batch 16 or more.

Reading the table (`CAVEATS`, printed with it): hwsim's weight- and output-stationary arrays run a layer's
im2col GEMM (SCALE-Sim's lowering), so on CONV layers their DRAM and GLB move the im2col matrix, each window
element once per output pixel it feeds; the paper's WS and OS read the ifmap itself. On FC layers there is no
window and every dataflow reads each weight from DRAM once per batch at its searched mapping, so that shared
cost (about 21 pJ per MAC at batch 16) compresses the ratios; they grow with the batch.
Usage: python tools/compare_dataflows.py [--batch 16] [--nets alexnet,vgg16] [--fc-batches 32,64] [--plot FILE.png]
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from hwsim.analytic.estimate import estimate_network
from hwsim.hardware import load_config
from hwsim.hardware.energy import energy_table, with_glb_data_size
from hwsim.hardware.schema import Accelerator, RegisterFiles
from hwsim.search.layer import search_layer
from hwsim.search.network import SearchSettings, search_network
from hwsim.workload import zoo
from hwsim.workload.ir import LayerKind

DATAFLOWS = ("row_stationary", "weight_stationary", "output_stationary", "no_local_reuse")
SHORT = {"row_stationary": "RS", "weight_stationary": "WS", "output_stationary": "OS", "no_local_reuse": "NLR"}
LEVELS = ("dram", "glb", "inter_pe", "rf", "mac")  # energy components shown, by level; clock and control in "other"
PAPER = {"CONV": (1.4, 2.5), "FC": (1.3, None)}
CAVEATS = ("WS and OS here run the im2col GEMM: on CONV layers their DRAM and GLB words are the im2col matrix "
           "(each window element once per output pixel it feeds), not the ifmap the paper's WS and OS read.",
           "On FC layers every dataflow reads each weight from DRAM once per batch: that shared cost compresses "
           "the FC ratios at batch 16 (see the larger batches).")


def equal_area(dataflow: str) -> Accelerator:
    """eyeriss-v1 re-built for `dataflow` with the same PEs and the same storage bytes (module docstring)."""
    base = load_config("eyeriss-v1")
    rf = base.pe_array.rf
    assert rf is not None
    per_pe = {"row_stationary": rf, "no_local_reuse": None}.get(
        dataflow, RegisterFiles(filter_words=1, ifmap_words=1, psum_words=1, access_energy_pj=rf.access_energy_pj))
    rf_words = (rf.filter_words + rf.ifmap_words + rf.psum_words)
    mine = (per_pe.filter_words + per_pe.ifmap_words + per_pe.psum_words) if per_pe else 0
    spare_bytes = (rf_words - mine) * base.word_bytes * base.pe_array.pes
    hw = replace(base, name=f"equal-area-{SHORT[dataflow].lower()}",
                 pe_array=replace(base.pe_array, dataflow=dataflow, rf=per_pe))
    return with_glb_data_size(hw, hw.glb.data_bytes + spare_bytes) if spare_bytes else hw


def energy_per_mac(net: str, dataflow: str, batch: int) -> dict[str, dict[str, float]]:
    """Per kind (CONV, FC): pJ per MAC by level at the searched mapping."""
    hw = equal_area(dataflow)
    graph = zoo.build(net)
    found = search_network(graph, hw, batch, SearchSettings(objective="energy", jobs=2, use_cache=False))
    out: dict[str, dict[str, float]] = {}
    for kind, layer_kinds in (("CONV", (LayerKind.CONV,)), ("FC", (LayerKind.FC,))):
        layers = [e for e in estimate_network(graph, hw, found.mapping).layers if e.layer.kind in layer_kinds]
        macs = sum(e.counts.macs for e in layers)
        levels = {lv: sum(e.energy_pj[lv] for e in layers) / macs for lv in LEVELS}
        levels["other"] = sum(e.total_pj for e in layers) / macs - sum(levels.values())
        out[kind] = levels
    return out


def fc_per_mac(net: str, dataflow: str, batch: int) -> float:
    """pJ per MAC of the network's FC layers alone at their searched mappings (objective energy)."""
    hw = equal_area(dataflow)
    table = energy_table(hw)
    layers = [l for l in zoo.build(net) if l.kind is LayerKind.FC]
    energy_pj = sum(search_layer(l, hw, batch, "energy", table).cost.energy_pj for l in layers)
    return energy_pj / (sum(l.macs for l in layers) * batch)  # Layer.macs: one image's


def fc_batches(net: str, batches: list[int]) -> None:
    """FC layers at more batches: each dataflow's energy per MAC over row stationary's."""
    for batch in batches:
        per_mac = {df: fc_per_mac(net, df, batch) for df in DATAFLOWS}
        ratios = " ".join(f"{SHORT[df]} {per_mac[df] / per_mac['row_stationary']:.2f}" for df in DATAFLOWS[1:])
        print(f"{net} FC at batch {batch}: RS {per_mac['row_stationary']:.2f} pJ/MAC; the others / RS: {ratios}")


def table(net: str, batch: int, results: dict[str, dict[str, dict[str, float]]]) -> None:
    print(f"\n{net}, batch {batch}: energy per MAC (pJ) by level at each dataflow's searched mapping, "
          "equal PEs and storage")
    print(f"{'kind':4s} {'dataflow':8s} " + " ".join(f"{lv:>8s}" for lv in (*LEVELS, "other")) +
          f" {'total':>8s} {'/ RS':>6s}")
    for kind in ("CONV", "FC"):
        rs_total = sum(results["row_stationary"][kind].values())
        for df in DATAFLOWS:
            levels = results[df][kind]
            total = sum(levels.values())
            print(f"{kind:4s} {SHORT[df]:8s} " + " ".join(f"{levels[lv]:8.2f}" for lv in (*LEVELS, "other")) +
                  f" {total:8.2f} {total / rs_total:6.2f}")
        others = [sum(results[df][kind].values()) / rs_total for df in DATAFLOWS[1:]]
        low, high = PAPER[kind]
        paper = f"{low}x to {high}x" if high else f"at least {low}x"
        print(f"{kind}: RS is {min(others):.2f}x to {max(others):.2f}x more energy-efficient than the others here; "
              f"the paper: {paper}")
    print("\n".join(f"note: {c}" for c in CAVEATS))


def plot(results: dict[str, dict[str, dict[str, dict[str, float]]]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nets = list(results)
    fig, axes = plt.subplots(1, 2 * len(nets), figsize=(4.5 * 2 * len(nets), 4.5), squeeze=False)
    for i, (net, by_df) in enumerate(results.items()):
        for k, kind in enumerate(("CONV", "FC")):
            ax = axes[0][2 * i + k]
            bottom = [0.0] * len(DATAFLOWS)
            for lv in (*LEVELS, "other"):
                values = [by_df[df][kind][lv] for df in DATAFLOWS]
                ax.bar([SHORT[df] for df in DATAFLOWS], values, bottom=bottom, label=lv)
                bottom = [b + v for b, v in zip(bottom, values)]
            ax.set_title(f"{net} {kind}")
            ax.set_ylabel("energy per MAC (pJ)")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=16, help="images per run (default 16, the paper's)")
    parser.add_argument("--nets", default="alexnet,vgg16", help="zoo networks (default alexnet,vgg16)")
    parser.add_argument("--fc-batches", default="32,64", help="batches at which the FC layers are compared again "
                        "(default 32,64; the paper: RS at least 1.3x at batch 16 or more)")
    parser.add_argument("--plot", default=None, metavar="FILE.png", help="stacked bars per dataflow (matplotlib)")
    args = parser.parse_args()
    results = {}
    for net in args.nets.split(","):
        results[net] = {df: energy_per_mac(net, df, args.batch) for df in DATAFLOWS}
        table(net, args.batch, results[net])
        fc_batches(net, [int(b) for b in args.fc_batches.split(",") if b])
    if args.plot:
        plot(results, args.plot)
        print(f"plot written to {args.plot}")


if __name__ == "__main__":
    main()
