"""`hwsim depthfirst NETWORK`: the Pareto front of depth-first schedules against the layer-by-layer bound.

Runs `hwsim.search.depth_first` (cuts, tiling factors 1…64, both
weight options) and prints the front, the layer-by-layer bound at the front's
memory sizes and the headline ratios of Goetschalckx & Verhelst (2019).
`--pareto` writes the three curves as CSV, `--plot` draws them (matplotlib).
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
from pathlib import Path
from typing import Any

from hwsim.cli.args import add_network_arguments
from hwsim.cli.commands import COMMAND_HELP
from hwsim.cli.depthfirst_checks import check_record, print_checks
from hwsim.cli.output import console, emit_json, format_bytes, table, write_atomically
from hwsim.errors import HwsimError
from hwsim.flows.depth_first import (
    DEFAULT_BITS,
    DEFAULT_MAX_SHORT_SKIP,
    NAMED_POINTS,
    SIMULATE_HW,
    DepthFirstStudy,
    FrontPoint,
    PointCheck,
    check_front_points,
    depth_first_front,
    depth_first_plan,
)
from hwsim.hardware import load_config
from hwsim.mapping.depth_first import DepthFirstMapping
from hwsim.mapping.plans import save_plan
from hwsim.search.depth_first import METHODS, DepthFirstPareto, Gain
from hwsim.workload.ir import Graph
from hwsim.workload.network import load_network


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("depthfirst", help=COMMAND_HELP["depthfirst"])
    add_network_arguments(p)
    p.add_argument("--bits", type=int, choices=(8, 16), default=None,
                   help=f"precision of activations and parameters (default {DEFAULT_BITS}, or the --hw config's)")
    p.add_argument("--hw", metavar="CONFIG", default=None,
                   help="take the precision from this accelerator config (a path or a shipped name)")
    p.add_argument("--max-short-skip", type=int, default=DEFAULT_MAX_SHORT_SKIP, metavar="N",
                   help=f"skips spanning at most N layers stay on chip and are never cut (default "
                        f"{DEFAULT_MAX_SHORT_SKIP})")
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
    p.add_argument("--out", metavar="FILE.yaml", default=None,
                   help="write the plan of the --simulate point (without it: min-memory) for the --hw config "
                        "(default depthfirst-edge): simulate, check and estimate replay it with --mapping FILE")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    p.set_defaults(run=run)


def point_arg(text: str) -> int:
    """A front index (negative counts from the end) or one of NAMED_POINTS."""
    if text in NAMED_POINTS:
        return NAMED_POINTS[text]
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give a front index (0 = least on-chip memory) or one of "
                                         f"{', '.join(NAMED_POINTS)}") from None


# ----- plain data -----------------------------------------------------------------------------


def _bits(args: argparse.Namespace) -> int:
    """--bits, or the config's precision with --hw (they must agree if both are given)."""
    if args.hw is None:
        return args.bits or DEFAULT_BITS
    hw_bits = load_config(args.hw).precision_bits
    if hw_bits not in (8, 16):
        raise HwsimError(f"{args.hw}: precision_bits {hw_bits}; depthfirst models 8 or 16 bit, use --bits instead")
    if args.bits is not None and args.bits != hw_bits:
        raise HwsimError(f"--bits {args.bits} contradicts {args.hw}'s precision_bits {hw_bits}; drop one of them")
    return hw_bits


def point_record(f: FrontPoint) -> dict[str, Any]:
    p = f.point
    return {"on_chip_bytes": p.on_chip_bytes, "dram_bytes": p.dram_bytes, "cuts": list(p.cuts),
            "tiling": list(p.tiling), "weights": str(p.weights),
            "layer_by_layer_dram_bytes": f.layer_by_layer_dram_bytes, "bandwidth_gain": f.bandwidth_gain}


def _gain_record(g: Gain | None) -> dict[str, Any] | None:
    return None if g is None else {"ratio": g.ratio, "on_chip_bytes": g.on_chip_bytes, "dram_bytes": g.dram_bytes,
                                   "reference_bytes": g.reference_bytes}


def document(study: DepthFirstStudy) -> dict[str, Any]:
    result, g = study.pareto, study.gains
    return {"network": result.network, "bits": result.bits, "method": result.method,
            "seconds": round(study.seconds, 3), "model_bytes": result.model_bytes,
            "candidate_cuts": list(result.candidate_cuts),
            "front": [point_record(p) for p in study.front],
            "untiled_front": [point_record(p) for p in study.untiled_front],
            "layer_by_layer": [{"on_chip_bytes": c.on_chip_bytes, "dram_bytes": c.dram_bytes}
                               for c in result.layer_by_layer],
            "headline": {"bandwidth_gain_at_equal_memory": _gain_record(g.bandwidth_at_equal_memory),
                         "bandwidth_gain_at_min_bandwidth": _gain_record(g.bandwidth_at_min_bandwidth),
                         "memory_gain_at_equal_bandwidth": _gain_record(g.memory_at_equal_bandwidth),
                         "tiling_memory_gain": _gain_record(g.tiling_memory)}}


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


def print_result(study: DepthFirstStudy) -> None:
    out = console()
    result = study.pareto
    t = table(f"{result.network}, {result.bits}-bit: depth-first Pareto front ({len(result.front)} points, "
              f"{len(result.candidate_cuts)} candidate cuts, {result.method}, {study.seconds:.1f} s)",
              [("on-chip", "right"), ("DRAM/inference", "right"), ("layer-by-layer DRAM", "right"),
               ("gain", "right"), ("weights", "left"), ("stacks", "right"), ("cuts after", "left"),
               ("tiling", "left")])
    for f in study.front:
        p = f.point
        t.add_row(format_bytes(p.on_chip_bytes), format_bytes(p.dram_bytes),
                  format_bytes(f.layer_by_layer_dram_bytes), f"{f.bandwidth_gain:,.1f}x", str(p.weights),
                  str(len(p.tiling)), _abbreviated(", ".join(p.cuts) or "-"),
                  _abbreviated(" ".join(map(str, p.tiling))))
    out.print(t)
    g = study.gains
    bw, mbw, mem, tile = (g.bandwidth_at_equal_memory, g.bandwidth_at_min_bandwidth, g.memory_at_equal_bandwidth,
                          g.tiling_memory)
    out.print(f"bandwidth gain at equal memory: up to {_ratio(bw)}"
              + (f" (at {format_bytes(bw.on_chip_bytes)} on chip)" if bw else "")
              + f"; at the minimum-bandwidth point {_ratio(mbw)}")
    out.print(f"memory gain at equal bandwidth: up to {_ratio(mem)}"
              + (f" (at {format_bytes(mem.dram_bytes)} DRAM per inference)" if mem else ""))
    out.print(f"tiling: up to {_ratio(tile)} less on-chip memory than the untiled front at equal bandwidth; "
              f"model {format_bytes(result.model_bytes)}")


def _simulate(args: argparse.Namespace, study: DepthFirstStudy, graph: Graph) -> tuple[PointCheck, ...]:
    """--simulate POINT on --hw (default depthfirst-edge), the index checked against the front first."""
    if args.simulate is None:
        return ()
    front = study.pareto.front
    if not -len(front) <= args.simulate < len(front):
        raise HwsimError(f"--simulate {args.simulate}: the front has {len(front)} points; give 0 … {len(front) - 1}")
    return check_front_points(graph, load_config(args.hw or SIMULATE_HW), front, [args.simulate],
                              args.max_short_skip, args.trace)


def _write_plan(args: argparse.Namespace, study: DepthFirstStudy, graph: Graph) -> None:
    """--out: the plan of the --simulate point (else the min-memory one) on --hw (default depthfirst-edge)."""
    front = study.pareto.front
    index = args.simulate if args.simulate is not None else NAMED_POINTS["min-memory"]
    if not -len(front) <= index < len(front):
        raise HwsimError(f"--simulate {index}: the front has {len(front)} points; give 0 … {len(front) - 1}")
    p = front[index]
    hw = load_config(args.hw or SIMULATE_HW)
    save_plan(depth_first_plan(graph, hw, DepthFirstMapping(p.cuts, p.tiling, p.weights, args.max_short_skip)),
              args.out)


def run(args: argparse.Namespace) -> int:
    if args.plot:
        _require_matplotlib()  # fail before the search, not after
    if args.max_short_skip < 0:
        raise HwsimError(f"--max-short-skip {args.max_short_skip}: give a number of layers ≥ 0")
    bits = _bits(args)
    loaded = load_network(args.network, args.input, args.allow_unknown)
    study = depth_first_front(loaded.graph, bits, args.max_short_skip, args.method)
    if args.pareto:
        write_csv(args.pareto, study.pareto)
    if args.plot:
        write_plot(args.plot, study.pareto)
    checks = _simulate(args, study, loaded.graph)
    if args.out:
        _write_plan(args, study, loaded.graph)
    code = 0 if all(c.check.ok for c in checks) else 1
    if args.json:
        doc = {**document(study), "warnings": list(loaded.warnings)}
        if checks:
            doc["simulated"] = [check_record(c) for c in checks]
        emit_json(doc)
        return code
    for warning in loaded.warnings:
        console().print(f"[yellow]warning:[/] {warning}")
    print_result(study)
    if checks:
        print_checks(checks, load_config(args.hw or SIMULATE_HW).clock_hz)
        console().print(f"trace: {checks[0].check.trace}")
    return code
