"""`hwsim simulate` (run a network, write its trace, report from the trace) and `hwsim check`
(the integer-tiled analytic model against the trace-derived metrics)."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

import hwsim.trace
from hwsim.analytic.estimate import estimate_network
from hwsim.check import CheckReport, compare
from hwsim.cli.cmd_info import add_network_arguments
from hwsim.cli.cmd_partition import batch_arg
from hwsim.cli.output import console, emit_json, format_bytes, format_count, table
from hwsim.errors import HwsimError
from hwsim.hardware import load_config
from hwsim.hardware.energy import COMPONENTS
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.row_stationary import rs_schedule
from hwsim.metrics import TraceMetrics, derive
from hwsim.sim.executor import SIM_LEVELS, LayerRun, SimResult
from hwsim.sim.run import simulate_to_trace
from hwsim.workload.network import load_network

DEFAULT_LEVELS = SIM_LEVELS


def levels_arg(text: str) -> frozenset[str]:
    """argparse type for --trace-levels dram,glb,...: a subset of the simulator's levels."""
    chosen = {part.strip() for part in text.split(",") if part.strip()}
    unknown = sorted(chosen - set(SIM_LEVELS))
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"{text!r}: choose trace levels from {','.join(SIM_LEVELS)}")
    return frozenset(chosen)


def _common(p: argparse.ArgumentParser) -> None:
    add_network_arguments(p)
    p.add_argument("--hw", required=True, metavar="CONFIG", help="accelerator config: a path or a shipped name")
    p.add_argument("--batch", type=batch_arg, default=1, metavar="N", help="images per run (default 1)")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of tables")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="simulate a network cycle by cycle, write its HDF5 trace, report from it")
    _common(p)
    p.add_argument("--out", metavar="FILE.h5", default=None,
                   help="trace path (default traces/NETWORK-CONFIG.h5)")
    p.add_argument("--trace-levels", type=levels_arg, default=frozenset(DEFAULT_LEVELS), metavar="LEVELS",
                   help=f"levels to record, comma separated (default all: {','.join(SIM_LEVELS)}); the report "
                        "covers the recorded levels only")
    p.set_defaults(run=run_simulate)
    c = sub.add_parser("check", help="analytic (integer-tiled) counts, energy and latency bound against a simulation")
    _common(c)
    c.add_argument("--trace", metavar="FILE.h5", default=None, help="keep the simulation's trace here")
    c.add_argument("--depthfirst", metavar="N", type=int, default=None,
                   help="instead: run the depth-first optimiser and simulate N points spread along its front "
                        "(both ends included); line-buffer rings' peaks and DRAM bytes must equal the model's")
    c.add_argument("--max-short-skip", type=int, default=8, metavar="N",
                   help="with --depthfirst: skips spanning at most N layers stay on chip (default 8)")
    c.set_defaults(run=run_check)


# ----- running ------------------------------------------------------------------------------------------


def _simulate(args: argparse.Namespace, path: Path, levels: frozenset[str]) -> tuple[Any, Accelerator, SimResult]:
    loaded = load_network(args.network, args.input, args.allow_unknown)
    hw = load_config(args.hw)
    schedule = rs_schedule(loaded.graph, hw, args.batch)
    quiet = args.json or not console().is_terminal
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console(), transient=True, disable=quiet) as bar:
        task = bar.add_task(f"simulating {loaded.graph.name}", total=len(schedule.layers))

        def advance(index: int, layer: LayerRun) -> None:
            bar.update(task, advance=1, description=f"simulating {loaded.graph.name}: {layer.name}")

        result = simulate_to_trace(schedule, hw, path, levels, progress=advance)
    return loaded, hw, result


def _report(metrics: TraceMetrics, result: SimResult, path: Path, hw: Accelerator) -> dict[str, Any]:
    by_name = {l.name: l for l in metrics.layers}
    layers = []
    for run in result.layers:
        if run.steps == 0:  # graph inputs and outputs: nothing to run
            continue
        m = by_name[run.name]
        layers.append({
            "name": run.name, "start_cycle": run.start_cycle, "end_cycle": run.end_cycle, "cycles": run.cycles,
            "passes": run.passes, "compute_cycles": run.compute_cycles,
            "stall_cycles": {"load": run.load_wait_cycles, "rf_filter": run.rf_wait_cycles,
                             "psum": run.psum_wait_cycles},
            "resource_stall_cycles": run.resource_stall_cycles,
            "macs": m.compute.macs, "utilization": m.utilization, "energy_pj": m.energy_pj,
            "dram_bytes": int(m.transfers[0].sum()) * hw.word_bytes,
        })
    return {"network": metrics.network, "hardware": hw.name, "batch": metrics.batch, "trace": str(path),
            "cycles": result.cycles, "latency_s": result.cycles / hw.clock_hz, "layers": layers,
            "totals": {"energy_pj": {c: sum(l["energy_pj"][c] for l in layers) for c in COMPONENTS},
                       "dram_bytes": sum(l["dram_bytes"] for l in layers),
                       "macs": sum(l["macs"] for l in layers)}}


def _print_report(doc: dict[str, Any], peaks: dict[str, int]) -> None:
    t = table(f"{doc['network']} on {doc['hardware']}, batch {doc['batch']}: simulated (energy in µJ, from the trace)",
              [("layer", "left"), ("cycles", "right"), ("util", "right"), ("load stall", "right"),
               ("filter stall", "right"), ("psum stall", "right"), ("queued: DRAM/GLB/NoC", "right"),
               ("MAC+RF", "right"), ("GLB", "right"),
               ("DRAM", "right"), ("ctrl", "right"), ("total", "right"), ("DRAM bytes", "right")])
    for l in doc["layers"]:
        e = l["energy_pj"]
        t.add_row(l["name"], format_count(l["cycles"]), f"{l['utilization']:.0%}",
                  format_count(l["stall_cycles"]["load"]), format_count(l["stall_cycles"]["rf_filter"]),
                  format_count(l["stall_cycles"]["psum"]),
                  "/".join(format_count(l["resource_stall_cycles"][k]) for k in ("dram", "glb_port", "noc")),
                  f"{(e['mac'] + e['rf'] + e['inter_pe']) / 1e6:.2f}",
                  f"{e['glb'] / 1e6:.2f}", f"{e['dram'] / 1e6:.2f}", f"{(e['clock'] + e['control']) / 1e6:.2f}",
                  f"{sum(e.values()) / 1e6:.2f}", format_bytes(l["dram_bytes"]))
    out = console()
    out.print(t)
    total = sum(doc["totals"]["energy_pj"].values())
    out.print(f"{format_count(doc['cycles'])} cycles = {doc['latency_s'] * 1e3:.3f} ms, {total / 1e9:.4g} mJ "
              f"(DRAM {doc['totals']['energy_pj']['dram'] / 1e9:.4g} mJ), DRAM traffic "
              f"{format_bytes(doc['totals']['dram_bytes'])}, peak buffer occupancy "
              + ", ".join(f"{k} {format_bytes(v)}" for k, v in peaks.items()) + f"; trace {doc['trace']}")


def _peaks(trace: Any) -> dict[str, int]:
    occ = trace.occupancy()
    return {name: int(occ["bytes"][occ["buffer"] == b].max(initial=0)) for b, name in enumerate(trace.buffers)
            if (occ["buffer"] == b).any()}  # buffers the schedule used


def run_simulate(args: argparse.Namespace) -> int:
    path = Path(args.out) if args.out else Path("traces") / f"{Path(args.network).stem}-{Path(args.hw).stem}.h5"
    loaded, hw, result = _simulate(args, path, args.trace_levels)
    with hwsim.trace.open(path) as trace:
        metrics = derive(trace)
        peaks = _peaks(trace)
    doc = _report(metrics, result, path, hw)
    doc["peak_occupancy_bytes"] = peaks
    doc["traced_levels"] = sorted(args.trace_levels)
    doc["network_macs"] = loaded.graph.total_macs * args.batch  # the workload's MACs, traced or not
    if args.json:
        emit_json({**doc, "warnings": list(loaded.warnings)})
    else:
        _print_report(doc, peaks)
    return 0


# ----- check ----------------------------------------------------------------------------------------------


def _check_document(report: CheckReport) -> dict[str, Any]:
    return {"network": report.network, "hardware": report.hardware, "ok": report.ok,
            "layers": [{"name": l.name, "ok": l.ok, "analytic_pj": l.analytic_pj, "simulated_pj": l.simulated_pj,
                        "bound_cycles": l.bound_cycles, "simulated_cycles": l.simulated_cycles,
                        "counts": [{"level": r.level, "operand": r.operand, "access": r.access,
                                    "analytic": r.analytic, "simulated": r.simulated} for r in l.counts]}
                       for l in report.layers],
            "mismatches": [vars(r) for r in report.mismatches]}


def _print_check(report: CheckReport) -> None:
    t = table(f"{report.network} on {report.hardware}: analytic (integer-tiled) vs simulated",
              [("layer", "left"), ("counts equal", "right"), ("energy µJ analytic", "right"),
               ("simulated", "right"), ("bound cycles", "right"), ("simulated", "right"), ("", "left")])
    for l in report.layers:
        equal = sum(r.ok for r in l.counts)
        t.add_row(l.name, f"{equal}/{len(l.counts)}", f"{l.analytic_pj / 1e6:.3f}", f"{l.simulated_pj / 1e6:.3f}",
                  format_count(l.bound_cycles), format_count(l.simulated_cycles), "ok" if l.ok else "MISMATCH",
                  style=None if l.ok else "bold red")
    out = console()
    out.print(t)
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
    counts = sum(len(l.counts) for l in report.layers)
    out.print(f"{'PASS' if report.ok else 'FAIL'}: {counts - len(report.mismatches)}/{counts} counts equal over "
              f"{len(report.layers)} layers")


def run_depthfirst_check(args: argparse.Namespace) -> int:
    """`hwsim check NET --hw CONFIG --depthfirst N`: closed-form depth-first model against simulations."""
    from hwsim.analytic.depth_first_pareto import depth_first_pareto
    from hwsim.cli.cmd_depthfirst import (
        check_record,
        pick_points,
        print_checks,
        simulate_points,
    )

    if args.depthfirst < 1:
        raise HwsimError(f"--depthfirst {args.depthfirst}: give a number of points ≥ 1")
    hw = load_config(args.hw)
    if hw.precision_bits not in (8, 16):
        raise HwsimError(f"{args.hw}: precision_bits {hw.precision_bits}; depth-first models 8 or 16 bit")
    graph = load_network(args.network, args.input, args.allow_unknown).graph
    front = depth_first_pareto(graph, hw.precision_bits, args.max_short_skip).front
    checks = simulate_points(graph, args.hw, front, pick_points(front, args.depthfirst), args.max_short_skip,
                             args.trace)
    if args.json:
        emit_json({"network": graph.name, "hardware": hw.name, "points": [check_record(i, c) for i, c in checks]})
    else:
        print_checks(checks, hw.clock_hz)
    return 0 if all(c.ok for _, c in checks) else 1


def run_check(args: argparse.Namespace) -> int:
    if args.depthfirst is not None:
        return run_depthfirst_check(args)
    with tempfile.TemporaryDirectory(prefix="hwsim-check-") as tmp:
        path = Path(args.trace) if args.trace else Path(tmp) / "check.h5"
        loaded, hw, _ = _simulate(args, path, frozenset(SIM_LEVELS))
        with hwsim.trace.open(path) as trace:
            metrics = derive(trace)
    report = compare(estimate_network(loaded.graph, hw, args.batch), metrics)
    if args.json:
        emit_json(_check_document(report))
    else:
        _print_check(report)
    return 0 if report.ok else 1


__all__ = ["add_parser"]
