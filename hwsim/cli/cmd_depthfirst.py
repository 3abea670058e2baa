"""`hwsim depthfirst NETWORK`: the Pareto front of depth-first schedules against the layer-by-layer bound.

Runs `hwsim.analytic.depth_first_pareto` (cuts, tiling factors 1…64, both
weight options) and prints the front, the layer-by-layer bound at the front's
memory sizes and the headline ratios of Goetschalckx & Verhelst (2019).
`--pareto` writes the three curves as CSV, `--plot` draws them (matplotlib).
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from hwsim.analytic.depth_first import layer_by_layer_dram_bytes
from hwsim.analytic.depth_first_pareto import (
    METHODS,
    DepthFirstPareto,
    Gain,
    ParetoPoint,
    bandwidth_gain,
    depth_first_pareto,
    memory_gain,
    min_bandwidth_gain,
    tiling_gain,
)
from hwsim.cli.cmd_info import add_network_arguments
from hwsim.cli.output import console, emit_json, format_bytes, table
from hwsim.errors import HwsimError
from hwsim.workload.ir import Graph
from hwsim.workload.network import load_network

DEFAULT_BITS = 8  # the paper counts features: one byte each


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("depthfirst", help="Pareto front of depth-first schedules (cuts, tiling, weights) "
                                          "against the layer-by-layer bound")
    add_network_arguments(p)
    p.add_argument("--bits", type=int, choices=(8, 16), default=None,
                   help=f"precision of activations and parameters (default {DEFAULT_BITS}, or the --hw config's)")
    p.add_argument("--hw", metavar="CONFIG", default=None,
                   help="take the precision from this accelerator config (a path or a shipped name)")
    p.add_argument("--max-short-skip", type=int, default=8, metavar="N",
                   help="skips spanning at most N layers stay on chip and are never cut (default 8)")
    p.add_argument("--method", choices=METHODS, default="auto",
                   help="cut search: exhaustive over cut subsets, dp (dynamic programming), or auto (default)")
    p.add_argument("--pareto", metavar="FILE.csv", default=None,
                   help="write the front, the untiled front and the layer-by-layer bound as CSV")
    p.add_argument("--plot", metavar="FILE.png", default=None,
                   help="draw the three curves on log-log axes (needs matplotlib: pip install hwsim[plot])")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    p.set_defaults(run=run)


# ----- plain data -----------------------------------------------------------------------------


def _bits(args: argparse.Namespace) -> int:
    """--bits, or the config's precision with --hw (they must agree if both are given)."""
    if args.hw is None:
        return args.bits or DEFAULT_BITS
    from hwsim.hardware import load_config

    hw_bits = load_config(args.hw).precision_bits
    if hw_bits not in (8, 16):
        raise HwsimError(f"{args.hw}: precision_bits {hw_bits}; depthfirst models 8 or 16 bit, use --bits instead")
    if args.bits is not None and args.bits != hw_bits:
        raise HwsimError(f"--bits {args.bits} contradicts {args.hw}'s precision_bits {hw_bits}; drop one of them")
    return hw_bits


def point_record(p: ParetoPoint, graph: Graph, bits: int) -> dict[str, Any]:
    lbl = layer_by_layer_dram_bytes(graph, p.on_chip_bytes, bits)
    return {"on_chip_bytes": p.on_chip_bytes, "dram_bytes": p.dram_bytes, "cuts": list(p.cuts),
            "tiling": list(p.tiling), "weights": str(p.weights), "layer_by_layer_dram_bytes": lbl,
            "bandwidth_gain": lbl / p.dram_bytes}


def _gain_record(g: Gain | None) -> dict[str, Any] | None:
    return None if g is None else {"ratio": g.ratio, "on_chip_bytes": g.on_chip_bytes, "dram_bytes": g.dram_bytes,
                                   "reference_bytes": g.reference_bytes}


def headline(result: DepthFirstPareto, graph: Graph) -> dict[str, Gain | None]:
    return {"bandwidth_gain_at_equal_memory": bandwidth_gain(graph, result.front, result.bits),
            "bandwidth_gain_at_min_bandwidth": min_bandwidth_gain(graph, result.front, result.bits),
            "memory_gain_at_equal_bandwidth": memory_gain(graph, result.front, result.bits),
            "tiling_memory_gain": tiling_gain(result.front, result.untiled_front)}


def document(result: DepthFirstPareto, graph: Graph, seconds: float) -> dict[str, Any]:
    return {"network": result.network, "bits": result.bits, "method": result.method,
            "seconds": round(seconds, 3), "model_bytes": result.model_bytes,
            "candidate_cuts": list(result.candidate_cuts),
            "front": [point_record(p, graph, result.bits) for p in result.front],
            "untiled_front": [point_record(p, graph, result.bits) for p in result.untiled_front],
            "layer_by_layer": [{"on_chip_bytes": c.on_chip_bytes, "dram_bytes": c.dram_bytes}
                               for c in result.layer_by_layer],
            "headline": {k: _gain_record(v) for k, v in headline(result, graph).items()}}


# ----- files ----------------------------------------------------------------------------------


def _write_atomically(path: str, write) -> None:  # type: ignore[no-untyped-def]
    """Write via a temporary file in the target directory, then rename: no half-written file on failure."""
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=target.suffix, dir=target.parent or ".")
    except OSError as exc:
        raise HwsimError(f"{path}: cannot write there ({exc.strerror}); give a path in an existing, writable "
                         "directory") from None
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, target)
    except OSError as exc:
        raise HwsimError(f"{path}: cannot write ({exc.strerror})") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_csv(path: str, result: DepthFirstPareto) -> None:
    """Rows curve, on_chip_bytes, dram_bytes, weights, cuts, tiling (lists joined by ';')."""
    def write(tmp: str) -> None:
        with open(tmp, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["curve", "on_chip_bytes", "dram_bytes", "weights", "cuts", "tiling"])
            for curve, points in (("front", result.front), ("untiled", result.untiled_front)):
                for p in points:
                    w.writerow([curve, p.on_chip_bytes, p.dram_bytes, str(p.weights), ";".join(p.cuts),
                                ";".join(map(str, p.tiling))])
            for c in result.layer_by_layer:
                w.writerow(["layer_by_layer", c.on_chip_bytes, c.dram_bytes, "", "", ""])
    _write_atomically(path, write)


def _require_matplotlib() -> None:
    if importlib.util.find_spec("matplotlib") is None:
        raise HwsimError("--plot needs matplotlib, which is not installed; install it with pip install hwsim[plot]")


def write_plot(path: str, result: DepthFirstPareto) -> None:
    """The tiled front, the untiled front and the layer-by-layer bound, log-log, as steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5))
    ax.step([c.on_chip_bytes for c in result.layer_by_layer], [c.dram_bytes for c in result.layer_by_layer],
            where="post", label="layer-by-layer bound", color="grey")
    for label, points, style in (("depth-first, untiled", result.untiled_front, "s--"),
                                 ("depth-first, tiled (Pareto front)", result.front, "o-")):
        ax.step([p.on_chip_bytes for p in points], [p.dram_bytes for p in points], style, where="post",
                label=label, markersize=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"on-chip memory (bytes, {result.bits}-bit)")
    ax.set_ylabel("DRAM traffic per inference (bytes)")
    ax.set_title(f"{result.network}: depth-first vs layer-by-layer")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    _write_atomically(path, lambda tmp: fig.savefig(tmp, dpi=120, format=Path(path).suffix.lstrip(".") or "png"))
    plt.close(fig)


# ----- run ------------------------------------------------------------------------------------


def _ratio(g: Gain | None) -> str:
    return "-" if g is None else f"{g.ratio:,.1f}x"


LIST_CHARS = 26  # long cut and tiling lists are cut short in the table (--json and --pareto have them whole)


def _abbreviated(text: str) -> str:
    return text if len(text) <= LIST_CHARS else text[:LIST_CHARS - 1] + "…"


def print_result(result: DepthFirstPareto, graph: Graph, seconds: float) -> None:
    out = console()
    t = table(f"{result.network}, {result.bits}-bit: depth-first Pareto front ({len(result.front)} points, "
              f"{len(result.candidate_cuts)} candidate cuts, {result.method}, {seconds:.1f} s)",
              [("on-chip", "right"), ("DRAM/inference", "right"), ("layer-by-layer DRAM", "right"),
               ("gain", "right"), ("weights", "left"), ("stacks", "right"), ("cuts after", "left"),
               ("tiling", "left")])
    for p in result.front:
        r = point_record(p, graph, result.bits)
        t.add_row(format_bytes(p.on_chip_bytes), format_bytes(p.dram_bytes),
                  format_bytes(r["layer_by_layer_dram_bytes"]), f"{r['bandwidth_gain']:,.1f}x", str(p.weights),
                  str(len(p.tiling)), _abbreviated(", ".join(p.cuts) or "-"),
                  _abbreviated(" ".join(map(str, p.tiling))))
    out.print(t)
    h = headline(result, graph)
    bw, mbw, mem, tile = (h[k] for k in ("bandwidth_gain_at_equal_memory", "bandwidth_gain_at_min_bandwidth",
                                         "memory_gain_at_equal_bandwidth", "tiling_memory_gain"))
    out.print(f"bandwidth gain at equal memory: up to {_ratio(bw)}"
              + (f" (at {format_bytes(bw.on_chip_bytes)} on chip)" if bw else "")
              + f"; at the minimum-bandwidth point {_ratio(mbw)}")
    out.print(f"memory gain at equal bandwidth: up to {_ratio(mem)}"
              + (f" (at {format_bytes(mem.dram_bytes)} DRAM per inference)" if mem else ""))
    out.print(f"tiling: up to {_ratio(tile)} less on-chip memory than the untiled front at equal bandwidth; "
              f"model {format_bytes(result.model_bytes)}")


def run(args: argparse.Namespace) -> int:
    if args.plot:
        _require_matplotlib()  # fail before the search, not after
    if args.max_short_skip < 0:
        raise HwsimError(f"--max-short-skip {args.max_short_skip}: give a number of layers ≥ 0")
    bits = _bits(args)
    loaded = load_network(args.network, args.input, args.allow_unknown)
    graph = loaded.graph
    start = time.perf_counter()
    result = depth_first_pareto(graph, bits, args.max_short_skip, args.method)
    seconds = time.perf_counter() - start
    if args.pareto:
        write_csv(args.pareto, result)
    if args.plot:
        write_plot(args.plot, result)
    if args.json:
        doc = document(result, graph, seconds)
        doc["warnings"] = list(loaded.warnings)
        emit_json(doc)
        return 0
    for warning in loaded.warnings:
        console().print(f"[yellow]warning:[/] {warning}")
    print_result(result, graph, seconds)
    return 0
