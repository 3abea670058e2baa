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
from hwsim.check.depth_first import DepthFirstCheck, check_point
from hwsim.cli.cmd_info import add_network_arguments
from hwsim.cli.output import console, emit_json, format_bytes, table, write_atomically
from hwsim.errors import HwsimError
from hwsim.mapping.depth_first import DepthFirstMapping
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
    p.add_argument("--simulate", metavar="POINT", type=point_arg, default=None,
                   help="simulate a front point (index from 0 = least on-chip memory, or min-memory / "
                        "min-dram) on the --hw config (default depthfirst-edge) and check it against the model")
    p.add_argument("--trace", metavar="FILE.h5", default=None,
                   help="trace of --simulate (default traces/NETWORK-CONFIG-dfPOINT.h5)")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    p.set_defaults(run=run)


SIMULATE_HW = "depthfirst-edge"
NAMED_POINTS = {"min-memory": 0, "min-dram": -1}


def point_arg(text: str) -> int:
    """A front index (negative counts from the end) or one of NAMED_POINTS."""
    if text in NAMED_POINTS:
        return NAMED_POINTS[text]
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give a front index (0 = least on-chip memory) or one of "
                                         f"{', '.join(NAMED_POINTS)}") from None


def pick_points(front: tuple[ParetoPoint, ...], count: int) -> list[int]:
    """`count` indices spread evenly along the front, both ends included."""
    if count >= len(front):
        return list(range(len(front)))
    return sorted({round(i * (len(front) - 1) / max(1, count - 1)) for i in range(count)})


def simulate_points(graph: Graph, hw_spec: str, front: tuple[ParetoPoint, ...], indices: list[int],
                    max_short_skip: int, trace: str | None) -> list[tuple[int, DepthFirstCheck]]:
    """Simulate the chosen front points and compare each with the closed-form model."""
    from hwsim.hardware import load_config

    hw = load_config(hw_spec)
    checks = []
    for index in indices:
        if not -len(front) <= index < len(front):
            raise HwsimError(f"--simulate {index}: the front has {len(front)} points; give 0 … {len(front) - 1}")
        point = front[index]
        mapping = DepthFirstMapping(point.cuts, point.tiling, point.weights, max_short_skip)
        position = index % len(front)
        path = Path(trace) if trace and len(indices) == 1 else Path("traces") / f"{graph.name}-{hw.name}-df{position}.h5"
        path.parent.mkdir(parents=True, exist_ok=True)
        checks.append((position, check_point(graph, hw, mapping, path)))
    return checks


def check_record(position: int, c: DepthFirstCheck) -> dict[str, Any]:
    return {"point": position, "ok": c.ok, "trace": c.trace, "cuts": list(c.mapping.cuts),
            "tiling": list(c.mapping.tiling), "weights": str(c.mapping.weights), "cycles": c.cycles,
            "stacks": [{"name": s.name, "tiling": s.tiling, "ok": s.ok,
                        "analytic_line_buffer_bytes": s.analytic_line_buffer_bytes,
                        "simulated_line_buffer_bytes": s.simulated_line_buffer_bytes,
                        "simulated_simultaneous_peak_bytes": s.simulated_simultaneous_peak_bytes,
                        "analytic_dram_bytes": s.analytic_dram_bytes, "simulated_dram_bytes": s.simulated_dram_bytes,
                        "cycles": s.cycles} for s in c.stacks]}


def print_checks(checks: list[tuple[int, DepthFirstCheck]], clock_hz: float) -> None:
    t = table("depth-first points simulated: line buffers (sum of the rings' peaks) and DRAM bytes, model vs "
              "simulation; the whole line buffer's simultaneous peak beside them",
              [("point", "right"), ("stacks", "right"), ("weights", "left"), ("line buffer model", "right"),
               ("simulated rings", "right"), ("simultaneous", "right"), ("DRAM model", "right"),
               ("DRAM simulated", "right"), ("latency", "right"), ("equal", "left")])
    for position, c in checks:
        t.add_row(str(position), str(len(c.stacks)), str(c.mapping.weights), f"{c.analytic_line_buffer_bytes:,} B",
                  f"{c.simulated_line_buffer_bytes:,} B", f"{c.simulated_simultaneous_peak_bytes:,} B",
                  f"{c.analytic_dram_bytes:,} B",
                  f"{c.simulated_dram_bytes:,} B", f"{c.cycles / clock_hz * 1e3:,.3f} ms",
                  "yes" if c.ok else "[red]NO[/]")
    console().print(t)
    for position, c in checks:
        for s in c.stacks:
            if not s.ok:
                console().print(f"[red]point {position}, stack {s.name}:[/] line buffer {s.analytic_line_buffer_bytes} "
                                f"vs {s.simulated_line_buffer_bytes} B, DRAM {s.analytic_dram_bytes} vs "
                                f"{s.simulated_dram_bytes} B")


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
    write_atomically(path, write)


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
    write_atomically(path, lambda tmp: fig.savefig(tmp, dpi=120, format=Path(path).suffix.lstrip(".") or "png"))
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
    checks = []
    if args.simulate is not None:
        checks = simulate_points(graph, args.hw or SIMULATE_HW, result.front, [args.simulate], args.max_short_skip,
                                 args.trace)
    if args.json:
        doc = document(result, graph, seconds)
        doc["warnings"] = list(loaded.warnings)
        if checks:
            doc["simulated"] = [check_record(i, c) for i, c in checks]
        emit_json(doc)
        return 0 if all(c.ok for _, c in checks) else 1
    for warning in loaded.warnings:
        console().print(f"[yellow]warning:[/] {warning}")
    print_result(result, graph, seconds)
    if checks:
        from hwsim.hardware import load_config

        print_checks(checks, load_config(args.hw or SIMULATE_HW).clock_hz)
        console().print(f"trace: {checks[0][1].trace}")
    return 0 if all(c.ok for _, c in checks) else 1
