"""`hwsim check`: the mapping's closed-form counts against a simulation's trace, or with --depthfirst the
depth-first model against simulations of points along its front.

Each printed line says which kind of evidence it is: access counts and PE-array work come from two
computations (the closed form and the counts summed from the trace); energy prices both sides with the
same table (a consistency line); latency is a lower bound (simulated at or above the analytic bound).
"""

from __future__ import annotations

import argparse
from typing import Any

from hwsim.check import CheckReport
from hwsim.check.compare import ENERGY_RTOL, SEARCH_RTOL
from hwsim.check.depth_first import DepthFirstCheck
from hwsim.cli.args import add_run_arguments, run_config, run_spec
from hwsim.cli.commands import COMMAND_HELP
from hwsim.cli.depthfirst_checks import check_record, print_checks
from hwsim.cli.output import console, emit_json, format_count, layer_progress, print_notices, table
from hwsim.cli.validation import print_validation, validation_document
from hwsim.errors import HwsimError
from hwsim.flows.check import check_run
from hwsim.flows.depth_first import DEFAULT_MAX_SHORT_SKIP, PointCheck, check_depth_first
from hwsim.flows.precision import is_mixed
from hwsim.workload.network import load_network

COUNTS = "counts (evidence: two computations, the mapping's closed form and the trace)"
ENERGY = "energy (consistency only: one price table on both sides)"
LATENCY = "latency (a lower bound only: simulated ≥ analytic)"
SEARCH = "search (the costs it ranked by, against the closed form of the mappings it chose)"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = sub.add_parser("check", help=COMMAND_HELP["check"])
    add_run_arguments(c)
    c.add_argument("--trace", metavar="FILE.h5", default=None, help="keep the simulation's trace here")
    c.add_argument("--depthfirst", metavar="N", type=int, default=None,
                   help="instead: run the depth-first optimiser and simulate N points spread along its front "
                        "(both ends included); line-buffer rings' peaks and DRAM bytes must equal the model's")
    c.add_argument("--max-short-skip", type=int, default=DEFAULT_MAX_SHORT_SKIP, metavar="N",
                   help=f"with --depthfirst: skips spanning at most N layers stay on chip (default "
                        f"{DEFAULT_MAX_SHORT_SKIP})")
    c.set_defaults(run=run)


def document(report: CheckReport) -> dict[str, Any]:
    return {"network": report.network, "hardware": report.hardware, "ok": report.ok,
            "energy_leaves_out": list(report.energy_leaves_out),
            "layers": [{"name": l.name, "ok": l.ok, "analytic_pj": l.analytic_pj, "simulated_pj": l.simulated_pj,
                        "bound_cycles": l.bound_cycles, "simulated_cycles": l.simulated_cycles,
                        "counts": [{"level": r.level, "operand": r.operand, "access": r.access,
                                    "analytic": r.analytic, "simulated": r.simulated} for r in l.counts]}
                       for l in report.layers],
            "mismatches": [vars(r) for r in report.mismatches],
            "search": [{**vars(r), "ok": r.ok} for r in report.search],
            "pipeline": {**vars(report.pipeline), "ok": report.pipeline.ok} if report.pipeline else None,
            "validation": validation_document(report.validation) if report.validation else None}


def _layer_table(report: CheckReport) -> Any:
    t = table(f"{report.network} on {report.hardware}: closed form of the mapping vs simulated (trace)",
              [("layer", "left"), ("counts equal", "right"), ("energy µJ: analytic", "right"),
               ("simulated", "right"), ("latency: bound cycles", "right"), ("simulated", "right"), ("", "left")])
    for l in report.layers:
        equal = sum(r.ok for r in l.counts)
        t.add_row(l.name, f"{equal}/{len(l.counts)}", f"{l.analytic_pj / 1e6:.3f}", f"{l.simulated_pj / 1e6:.3f}",
                  format_count(l.bound_cycles), format_count(l.simulated_cycles), "ok" if l.ok else "MISMATCH",
                  style=None if l.ok else "bold red")
    return t


def print_report(report: CheckReport) -> None:
    out = console()
    out.print(_layer_table(report))
    if report.mismatches:
        rows = table("mismatching counts", [("layer", "left"), ("level", "left"), ("operand", "left"),
                                            ("access", "left"), ("analytic", "right"), ("simulated", "right")])
        for r in report.mismatches:
            rows.add_row(r.layer, r.level, r.operand, r.access, str(r.analytic), str(r.simulated))
        out.print(rows)
    for l in report.layers:
        if not l.energy_ok or not l.latency_ok:
            out.print(f"{l.name}: energy {'ok' if l.energy_ok else 'differs'}, latency "
                      f"{'ok' if l.latency_ok else 'below the analytic bound'}")
    layers = len(report.layers)
    counts = sum(len(l.counts) for l in report.layers)
    out.print(f"{COUNTS}: {counts - len(report.mismatches)}/{counts} equal over {layers} layers (words read, "
              "filled, updated per level and operand; PE-array work; passes and the cycles the array spends on them; "
              "DRAM transfers and their start offsets in their tensors)")
    left_out = (f" ({', '.join(report.energy_leaves_out)} left out: priced by the commands it issued)"
                if report.energy_leaves_out else "")
    out.print(f"{ENERGY}: {sum(l.energy_ok for l in report.layers)}/{layers} layers equal within {ENERGY_RTOL:g}"
              + left_out)
    out.print(f"{LATENCY}: {sum(l.latency_ok for l in report.layers)}/{layers} layers at or above the bound")
    if report.search:
        bad = [row for row in report.search if not row.ok]
        for row in bad:
            out.print(f"{row.layer}: the search stated {row.figure} {row.searched:g}, the closed form of its choice "
                      f"gives {row.closed_form:g}")
        searched = len({r.layer for r in report.search})
        out.print(f"{SEARCH}: {len(report.search) - len(bad)}/{len(report.search)} figures of {searched} searched "
                  f"layers equal within {SEARCH_RTOL:g} (energy, latency, bound, DRAM words)")
    if report.pipeline is not None:
        p = report.pipeline
        above = "at or above the bound" if p.simulated_cycles >= p.bound_cycles else "BELOW THE BOUND"
        equal = "equal" if p.link_words_closed == p.link_words_simulated else "DIFFER"
        out.print(f"pipeline bound (a lower bound: the longest chain of works at their bounds, or the shared DRAM): "
                  f"{format_count(p.bound_cycles)} cycles ({p.bottleneck}), simulated "
                  f"{format_count(p.simulated_cycles)} — {above}; link words: closed form "
                  f"{format_count(p.link_words_closed)}, trace {format_count(p.link_words_simulated)} — {equal}")
        out.print(f"data edges (a work or tile reading what another writes, from the parts' geometry): "
                  f"{p.edges_checked - len(p.missing_edges)}/{p.edges_checked} in the schedule the trace declares"
                  + "".join(f"; MISSING {edge}" for edge in p.missing_edges[:3]))
    if report.validation is not None:
        print_validation(report.validation)
    out.print("PASS" if report.ok else "FAIL")


def run_depthfirst(args: argparse.Namespace) -> int:
    """`hwsim check NET --hw CONFIG --depthfirst N`: closed-form depth-first model against simulations."""
    if args.depthfirst < 1:
        raise HwsimError(f"--depthfirst {args.depthfirst}: give a number of points ≥ 1")
    loaded = load_network(args.network, args.input, args.allow_unknown)
    graph, hw, notes = run_config(args, loaded.graph)
    if is_mixed(graph):
        raise HwsimError(f"{graph.name}: the depth-first model runs the whole network at one word and the graph "
                         "mixes precisions; give --bits N")
    print_notices(loaded.warnings, notes, args.json)
    checks = check_depth_first(graph, hw, args.depthfirst, args.max_short_skip, args.trace)
    if args.json:
        emit_json({"network": graph.name, "hardware": hw.name, "points": [check_record(c) for c in checks]})
    else:
        print_checks(checks, hw.clock_hz)
    return 0 if all(c.check.ok for c in checks) else 1


def run(args: argparse.Namespace) -> int:
    if args.depthfirst is not None:
        return run_depthfirst(args)
    loaded = load_network(args.network, args.input, args.allow_unknown)
    spec = run_spec(args, loaded.graph)
    print_notices(loaded.warnings, spec.notes, args.json)
    with layer_progress(f"simulating {spec.graph.name}", len(spec.graph), args.json) as progress:
        report = check_run(spec, args.trace, progress)
    if isinstance(report, DepthFirstCheck):  # a depth-first plan: its model against the trace
        point = PointCheck(0, report)
        if args.json:
            emit_json({"network": spec.graph.name, "hardware": spec.hardware.name, "points": [check_record(point)]})
        else:
            print_checks((point,), spec.hardware.clock_hz)
        return 0 if report.ok else 1
    if args.json:
        emit_json(document(report))
    else:
        print_report(report)
    return 0 if report.ok else 1


__all__ = ["add_parser"]
