"""`hwsim simulate`: run a network cycle by cycle, write its trace (unless --no-trace), and report what it did
from the totals counted as it ran."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import JustifyMethod as Justify

from hwsim.cli.args import add_run_arguments, run_spec
from hwsim.cli.commands import COMMAND_HELP
from hwsim.cli.output import (
    console,
    emit_json,
    format_bytes,
    format_count,
    layer_progress,
    print_notices,
    table,
)
from hwsim.flows.cores import core_timelines, link_traffic
from hwsim.flows.simulate import Simulation, simulate_run
from hwsim.metrics.derive import not_traced
from hwsim.metrics.dram_stats import dram_report
from hwsim.vocab import TRACE_LEVELS
from hwsim.workload.network import load_network


def levels_arg(text: str) -> frozenset[str]:
    """argparse type for --trace-levels dram,glb,...: a subset of the simulator's levels."""
    chosen = {part.strip() for part in text.split(",") if part.strip()}
    unknown = sorted(chosen - set(TRACE_LEVELS))
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"{text!r}: choose trace levels from {','.join(TRACE_LEVELS)}")
    return frozenset(chosen)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("simulate", help=COMMAND_HELP["simulate"])
    add_run_arguments(p)
    p.add_argument("--out", metavar="FILE.h5", default=None,
                   help="trace path (default traces/NETWORK-CONFIG.h5)")
    p.add_argument("--no-trace", action="store_true",
                   help="write no trace: the report alone, from the totals counted while the simulation runs "
                        "(faster; nothing for `hwsim trace` or `check` to read)")
    p.add_argument("--trace-levels", type=levels_arg, default=frozenset(TRACE_LEVELS), metavar="LEVELS",
                   help=f"levels to record, comma separated (default all: {','.join(TRACE_LEVELS)}); the report "
                        "covers the recorded levels only")
    p.set_defaults(run=run)


NOT_TRACED = "not traced"  # a figure the recorded levels cannot give


def _traced(values: dict[str, float], missing: tuple[str, ...]) -> dict[str, float | None]:
    """Energy by component, None for the components the trace's levels cannot derive."""
    return {k: None if k in missing else v for k, v in values.items()}


def document(sim: Simulation) -> dict[str, Any]:
    """The report: per layer (those with work) timing, stalls, MACs, utilization, energy, DRAM bytes; what the
    recorded levels cannot derive is null and listed under `not_traced`."""
    by_name = {l.name: l for l in sim.metrics.layers}
    t = sim.totals
    missing = not_traced((*t.energy_by_component_pj, "utilization"), sim.levels, sim.hardware)
    layers = []
    for run_ in sim.result.layers:
        if run_.steps == 0:  # graph inputs and outputs: nothing to run
            continue
        m = by_name[run_.name]
        layers.append({
            "name": run_.name, "start_cycle": run_.start_cycle, "end_cycle": run_.end_cycle, "cycles": run_.cycles,
            "steps": run_.steps, "passes": run_.passes, "compute_cycles": run_.compute_cycles,
            "stall_cycles": {"load": run_.load_wait_cycles, "rf_filter": run_.rf_wait_cycles,
                             "psum": run_.psum_wait_cycles},
            "resource_stall_cycles": run_.resource_stall_cycles,
            "macs": m.compute.macs, "gated_macs": m.compute.gated_macs,
            "utilization": None if "utilization" in missing else m.utilization,
            "energy_pj": _traced(m.energy_pj, missing), "dram_bytes": m.dram_bytes,
            "word_bits": 8 * m.word_bytes,
            "dram_energy_pj_by_command": m.dram_energy_pj, "zeros": sim.sparsity.zeros(run_.name).record(),
        })
    return {"network": sim.metrics.network, "hardware": sim.hardware.name, "word_bits": sim.hardware.precision_bits,
            "batch": sim.metrics.batch,
            "trace": None if sim.trace is None else str(sim.trace), "cycles": sim.result.cycles,
            "sparsity": sim.sparsity.record(),
            "latency_s": sim.result.cycles / sim.hardware.clock_hz,
            "layers": layers,
            "totals": {"energy_pj": _traced(dict(t.energy_by_component_pj), missing), "dram_bytes": t.dram_bytes,
                       "macs": t.macs},
            "peak_occupancy_bytes": dict(sim.peak_occupancy_bytes), "traced_levels": sorted(sim.levels),
            "not_traced": list(missing),
            "network_macs": sim.network_macs, "dram_model": sim.hardware.dram.model,
            "dram": [asdict(s) for s in dram_report(sim.hardware, sim.metrics.layers)],
            **_cores_document(sim)}


def _cores_document(sim: Simulation) -> dict[str, Any]:
    """A multi-core run's per-core timelines and link traffic (nothing for one core)."""
    if len(sim.hardware.all_cores) < 2:
        return {}
    links = () if sim.link_words is None else link_traffic(sim.hardware, sim.unit_names, sim.link_words)
    return {"cores": [asdict(c) for c in core_timelines(sim.result, sim.hardware)],
            "links": [asdict(l) for l in links]}


def _cores_table(doc: dict[str, Any]) -> Any:
    t = table(f"cores: {format_count(doc['cycles'])} cycles each, busy (its works running) + waiting (for another "
              "core's works) + idle (done)", [("core", "left"), ("works", "right"), ("busy", "right"),
                                              ("waiting", "right"), ("idle", "right"), ("busy %", "right"),
                                              ("queued in works", "right")])
    for c in doc["cores"]:
        t.add_row(c["core"], str(c["works"]), format_count(c["busy_cycles"]), format_count(c["waiting_cycles"]),
                  format_count(c["idle_cycles"]), f"{c['busy_cycles'] / max(1, doc['cycles']):.0%}",
                  format_count(c["queued_cycles"]))
    return t


def _links_table(doc: dict[str, Any]) -> Any:
    t = table("links: words carried per direction, the cycles they take at the link's width, energy",
              [("link", "left"), ("words", "right"), ("cycles", "right"), ("energy µJ", "right")])
    for l in doc["links"]:
        t.add_row(l["direction"], format_count(l["words"]), format_count(l["busy_cycles"]),
                  f"{l['energy_pj'] / 1e6:.3f}")
    return t


def _layer_table(doc: dict[str, Any]) -> Any:
    """The per-layer table; with zeros, each layer's input and output zero fractions and its gated MACs."""
    sparse = doc["sparsity"]["kind"] != "dense"
    zero_columns: list[tuple[str, Justify]] = [("zeros if/of", "right"), ("gated MACs", "right")] if sparse else []
    t = table(f"{doc['network']} on {doc['hardware']}, batch {doc['batch']}: simulated (energy in µJ, from the trace)",
              [("layer", "left"), ("cycles", "right"), ("util", "right"), ("load stall", "right"),
               ("filter stall", "right"), ("psum stall", "right"), ("queued: DRAM/GLB/NoC", "right"),
               ("MAC+RF", "right"), ("GLB", "right"),
               ("DRAM", "right"), ("ctrl", "right"), ("total", "right"), ("DRAM bytes", "right"), *zero_columns])
    for l in doc["layers"]:
        e, z = l["energy_pj"], l["zeros"]
        zeros = [f"{z['ifmap']:.0%}/{z['ofmap']:.0%}", format_count(l["gated_macs"])] if sparse else []
        util = l["utilization"]
        t.add_row(l["name"], format_count(l["cycles"]), NOT_TRACED if util is None else f"{util:.0%}",
                  format_count(l["stall_cycles"]["load"]), format_count(l["stall_cycles"]["rf_filter"]),
                  format_count(l["stall_cycles"]["psum"]),
                  "/".join(format_count(l["resource_stall_cycles"][k]) for k in ("dram", "glb_port", "noc")),
                  _micro(e, "mac", "rf", "inter_pe"), _micro(e, "glb"), _micro(e, "dram"),
                  _micro(e, "clock", "control"),
                  f"{_traced_sum(e) / 1e6:.2f}", format_bytes(l["dram_bytes"]), *zeros)
    return t


def _micro(energy_pj: dict[str, float | None], *parts: str) -> str:
    """The parts' energy in µJ, or "not traced" when a part could not be derived."""
    values = [energy_pj[p] for p in parts]
    return NOT_TRACED if any(v is None for v in values) else f"{sum(v or 0.0 for v in values) / 1e6:.2f}"


def _traced_sum(energy_pj: dict[str, float | None]) -> float:
    return sum(v for v in energy_pj.values() if v is not None)


def print_report(doc: dict[str, Any]) -> None:
    out = console()
    out.print(_layer_table(doc))
    if "cores" in doc:
        out.print(_cores_table(doc))
        if doc["links"]:
            out.print(_links_table(doc))
    if doc["sparsity"]["kind"] != "dense":
        out.print(f"zeros: {doc['sparsity']['source']} (zeros if/of: the share of zero words in the layer's input "
                  "and output tensors; gated MACs: those a zero ifmap word gated or skipped)")
    if doc["dram"]:
        d = table(f"DRAM ({doc['dram_model']})", [("statistic", "left"), ("value", "right"), ("unit", "left"),
                                                   ("what", "left")])
        for stat in doc["dram"]:
            value = stat["value"]
            d.add_row(stat["name"], f"{value:.3f}" if stat["unit"] == "fraction" else format_count(value),
                      stat["unit"], stat["description"])
        out.print(d)
    energy = doc["totals"]["energy_pj"]
    missing = doc["not_traced"]
    dram = "DRAM not traced" if energy["dram"] is None else f"DRAM {energy['dram'] / 1e9:.4g} mJ"
    of = f" of the traced levels; not traced: {', '.join(missing)} (--trace-levels)" if missing else ""
    out.print(f"{format_count(doc['cycles'])} cycles = {doc['latency_s'] * 1e3:.3f} ms, "
              f"{_traced_sum(energy) / 1e9:.4g} mJ{of} ({dram}), DRAM traffic "
              f"{format_bytes(doc['totals']['dram_bytes'])}, peak buffer occupancy "
              + ", ".join(f"{k} {format_bytes(v)}" for k, v in doc["peak_occupancy_bytes"].items())
              + (f"; trace {doc['trace']}" if doc["trace"] is not None else "; no trace written"))


def run(args: argparse.Namespace) -> int:
    loaded = load_network(args.network, args.input, args.allow_unknown)
    spec = run_spec(args, loaded.graph)
    hw, notes = spec.hardware, spec.notes
    width = f"@{hw.precision_bits}b" if hw.name.endswith(f"@{hw.precision_bits}b") else ""  # a rescaled config
    path = Path(args.out) if args.out else Path("traces") / f"{Path(args.network).stem}-{Path(args.hw).stem}{width}.h5"
    warnings = loaded.warnings
    print_notices(warnings, notes, args.json)
    with layer_progress(f"simulating {spec.graph.name}", len(spec.graph), args.json) as progress:
        sim = simulate_run(spec, path, args.trace_levels, progress, keep_trace=not args.no_trace)
    if args.json:
        emit_json({**document(sim), "warnings": list(warnings), "notes": list(notes)})
    else:
        print_report(document(sim))
    return 0


__all__ = ["add_parser"]
