"""`hwsim memplan` and `hwsim phases`: the memory the intermediate tensors need under each strategy.

`memplan` runs the layer-by-layer planners (one buffer per edge, TensorRT-style
reuse, greedy-by-size offsets, CEVA buffer ids with swaps and merging), the
phased execution and the lower bound, places buffers in the L2 by the
knapsack when an L2 capacity is given, and with `--simulate` runs each plan
on the accelerator and compares the trace with the plan. `phases` derives the
phases, converts the network to CSDF, checks it, sizes every edge buffer for
one phase per layer and for the phased execution, times both (Eq. 2),
exports SDF3 XML, and with `--simulate` runs both schedules.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import JustifyMethod

from hwsim.analytic.memplan import GRANULE_BYTES
from hwsim.cli.args import add_network_arguments, bytes_arg
from hwsim.cli.commands import COMMAND_HELP
from hwsim.cli.output import console, emit_json, format_bytes, table, write_atomically
from hwsim.errors import ConfigError, HwsimError
from hwsim.flows.memplan import (
    ALL_STRATEGIES,
    BOUND,
    PHASES,
    MemoryStudy,
    StrategyMemory,
    slot_plan,
    study_memory,
)
from hwsim.flows.phases import (
    BufferSimulation,
    PhasesStudy,
    phase_plan,
    phases_sdf3_xml,
    study_phases,
)
from hwsim.hardware import load_config
from hwsim.hardware.precision import at_precision
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.phases import PHASE_RULES
from hwsim.mapping.plans import save_plan
from hwsim.workload.ir import Graph
from hwsim.workload.network import load_network

DEFAULT_HW = "edge-soc-l2"
ALL = "all"


def strategies_arg(text: str) -> tuple[str, ...]:
    """argparse type for --strategy: a comma list of planners and `phases`, or `all`."""
    known = ALL_STRATEGIES
    chosen = known if text == ALL else tuple(s.strip() for s in text.split(","))
    unknown = [s for s in chosen if s not in known]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown strategy {unknown[0]!r}: use {ALL} or a comma list of "
                                         f"{', '.join(known)}")
    return chosen


def _common(p: argparse.ArgumentParser) -> None:
    add_network_arguments(p)
    p.add_argument("--hw", metavar="CONFIG", default=DEFAULT_HW,
                   help=f"accelerator config: precision, L2 and timing (default {DEFAULT_HW})")
    p.add_argument("--bits", type=int, choices=(8, 16, 32), default=None,
                   help="bytes per element for the analysis (default: the config's precision; fp32 = 32)")
    p.add_argument("--rule", choices=PHASE_RULES, default="thesis",
                   help="phase derivation: thesis Algorithm 3 (default) or paper Algorithm 1")
    p.add_argument("--simulate", action="store_true",
                   help="also run the schedules on --hw and compare the trace's buffer peaks with the analysis")
    p.add_argument("--trace-dir", metavar="DIR", default="traces", help="where --simulate writes traces")
    p.add_argument("--out", metavar="FILE.yaml", default=None,
                   help="write the plan (memplan: of the one --strategy given; phases: the phased execution) for "
                        "--hw: simulate replays it with --mapping FILE")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of tables")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("memplan", help=COMMAND_HELP["memplan"])
    _common(p)
    p.add_argument("--strategy", type=strategies_arg, default=strategies_arg(ALL), metavar="LIST",
                   help=f"{ALL} (default) or a comma list of {', '.join(ALL_STRATEGIES)}")
    p.add_argument("--l2", type=bytes_arg, default=None, metavar="SIZE",
                   help="place buffers in an L2 of SIZE (e.g. 2MB) by the knapsack (default: the config's L2)")
    p.add_argument("--granularity", type=bytes_arg, default=GRANULE_BYTES, metavar="SIZE",
                   help="knapsack weight unit (default 1KB): sizes round up to it, the L2 down")
    p.set_defaults(run=run_memplan)
    q = sub.add_parser("phases", help=COMMAND_HELP["phases"])
    _common(q)
    q.add_argument("--sdf3-xml", metavar="FILE", default=None, help="write the phased CSDF graph in SDF3's XML format")
    q.set_defaults(run=run_phases)


# ----- shared ----------------------------------------------------------------------------------------


def _inputs(args: argparse.Namespace) -> tuple[Graph, Accelerator, int | None]:
    """The graph, the config and --bits (a simulation at other bits runs on the config rescaled to them; a bad
    rescale is named before anything runs)."""
    graph = load_network(args.network, args.input, args.allow_unknown).graph
    hw = load_config(args.hw)
    if args.simulate and args.bits:
        try:
            at_precision(hw, args.bits)
        except ConfigError as exc:
            raise ConfigError(f"{args.hw}: {exc}") from None
    return graph, hw, args.bits


def simulation_record(s: BufferSimulation) -> dict[str, Any]:
    return {"trace": str(s.trace), "cycles": s.cycles, "latency_s": s.latency_s, "ok": s.ok,
            "buffers": [{"buffer": c.name, "analytic_bytes": c.analytic_bytes, "simulated_bytes": c.simulated_bytes,
                         "equal": c.equal} for c in s.buffers]}


# ----- memplan ---------------------------------------------------------------------------------------


def _placement_record(s: StrategyMemory) -> dict[str, Any]:
    p = s.placement
    assert p is not None
    return {"capacity_bytes": p.capacity_bytes, "granule_bytes": p.granule_bytes, "l2_bytes": p.l2_bytes,
            "fits_entirely": s.fits_l2, "l2_traffic_bytes": p.l2_traffic_bytes,
            "ddr_traffic_bytes": p.ddr_traffic_bytes, "in_l2": list(s.in_l2)}


def strategy_record(s: StrategyMemory) -> dict[str, Any]:
    row: dict[str, Any] = {"strategy": s.strategy, "total_bytes": s.total_bytes, "bound_bytes": s.bound_bytes,
                           "buffers": s.buffers, "ratio_to_bound": s.ratio_to_bound, **s.details}
    if s.placement:
        row["l2"] = _placement_record(s)
    if s.simulation:
        row["simulation"] = simulation_record(s.simulation)
    return row


def _write_memory_plan(args: argparse.Namespace, study: MemoryStudy, graph: Graph) -> None:
    """--out: the plan of the one memory planner --strategy names, as slots placed for the study's L2."""
    planned = [s for s in study.strategies if s.plan is not None and s.strategy != BOUND]
    if len(args.strategy) != 1 or len(planned) != 1:
        raise HwsimError(f"--out writes one memory plan; give --strategy with one of "
                         f"{', '.join(s for s in ALL_STRATEGIES if s not in (PHASES, BOUND))}")
    chosen = planned[0]
    assert chosen.plan is not None
    save_plan(slot_plan(graph, study.hardware, chosen.plan, chosen.placement), args.out)


def run_memplan(args: argparse.Namespace) -> int:
    graph, hw, bits = _inputs(args)
    study = study_memory(graph, hw, args.strategy, bits, args.rule, args.l2, args.granularity,
                         args.trace_dir if args.simulate else None)
    if args.out:
        _write_memory_plan(args, study, graph)
    rows = [strategy_record(s) for s in study.strategies]
    if args.json:
        emit_json({"network": study.network, "hardware": study.hardware.name, "bits": study.bits,
                   "l2_bytes": study.l2_bytes, "strategies": rows})
    else:
        _print_memplan(study, rows)
    return 0 if study.ok else 1


def _print_memplan(study: MemoryStudy, rows: list[dict[str, Any]]) -> None:
    capacity = study.l2_bytes
    title = (f"{study.network}: memory for intermediate tensors at {study.bits} bit"
             + (f"; L2 {format_bytes(capacity)} placed by knapsack (traffic served from L2 / left in DDR)"
                if capacity else ""))
    t = table(title, [("strategy", "left"), ("memory", "right"), ("÷ bound", "right"), ("buffers", "right"),
                      ("fits L2", "left"), ("L2 traffic", "right"), ("DDR traffic", "right"),
                      ("simulated", "left")])
    for r in rows:
        l2 = r.get("l2")
        sim = r.get("simulation")
        t.add_row(r["strategy"], format_bytes(r["total_bytes"]), f"{r['ratio_to_bound']:.3f}", str(r["buffers"]),
                  ("yes" if l2["fits_entirely"] else "no") if l2 else "",
                  format_bytes(l2["l2_traffic_bytes"]) if l2 else "",
                  format_bytes(l2["ddr_traffic_bytes"]) if l2 else "",
                  ("" if sim is None else ("equal" if sim["ok"] else "[red]DIFFERS[/]")
                   + (f", {sim['latency_s'] * 1e3:.3f} ms" if sim else "")))
    console().print(t)
    for r in rows:
        sim = r.get("simulation")
        for b in (sim or {}).get("buffers", []):
            if not b["equal"]:
                console().print(f"[red]{r['strategy']} {b['buffer']}:[/] analytic {b['analytic_bytes']} B, "
                                f"simulated {b['simulated_bytes']} B")


# ----- phases ----------------------------------------------------------------------------------------


def phases_document(study: PhasesStudy) -> dict[str, Any]:
    single, phased, c = study.one_phase, study.phased, study.csdf
    return {
        "network": study.network, "hardware": study.hardware.name, "bits": study.bits, "rule": study.rule,
        "phases": dict(study.phases), "total_phases": phased.pg.firings, "one_phase_total": single.pg.firings,
        "csdf": {"actors": c.actors, "channels": c.channels, "reuse_channels": c.reuse_channels, "consistent": True,
                 "repetition_vector_all_ones": c.repetition_vector_all_ones,
                 "deadlocked_actors": list(c.deadlocked_actors)},
        "buffers": [{"edge": e.name, "one_phase_bytes": a, "phased_bytes": b}
                    for e, a, b in zip(phased.pg.edges, single.sizes.bytes_, phased.sizes.bytes_)],
        "one_phase_total_bytes": single.sizes.total_bytes, "phased_total_bytes": phased.sizes.total_bytes,
        "edges_in_dram": {"one_phase": len(single.in_dram), "phased": len(phased.in_dram)},
        "claim_at_start_total_bytes": {"one_phase": single.sizes.claim_at_start_total_bytes,
                                       "phased": phased.sizes.claim_at_start_total_bytes},
        "timing": {name: {"cycles": r.timing.cycles, "access_cycles": r.timing.access_cycles,
                          "kernel_cycles": r.timing.kernel_cycles, "op_cycles": r.timing.op_cycles,
                          "fps": r.timing.fps} for name, r in (("one_phase", single), ("phased", phased))},
        "throughput_decrease": study.throughput_decrease,
    }


def run_phases(args: argparse.Namespace) -> int:
    graph, hw, bits = _inputs(args)
    study = study_phases(graph, hw, bits, args.rule, args.trace_dir if args.simulate else None)
    doc = phases_document(study)
    if args.out:
        save_plan(phase_plan(study.phased, study.hardware, study.rule, study.bits), args.out)
        doc["plan"] = args.out
    if args.sdf3_xml:
        text = phases_sdf3_xml(study)

        def write(tmp: str) -> None:
            Path(tmp).write_text(text)
        write_atomically(args.sdf3_xml, write)
        doc["sdf3_xml"] = args.sdf3_xml
    if study.simulation is not None:
        doc["simulation"] = {name: simulation_record(s) for name, s in study.simulation.items()}
    if args.json:
        emit_json(doc)
    else:
        _print_phases(study.network, doc)
    return 0 if study.ok else 1


def _print_phases(network: str, doc: dict[str, Any]) -> None:
    out = console()
    c = doc["csdf"]
    out.print(f"{network}: {doc['total_phases']} phases ({doc['rule']} rule) against "
              f"{doc['one_phase_total']} for one phase per layer; CSDF {c['actors']} actors, {c['channels']} channels, "
              f"{c['reuse_channels']} reuse self-loops; consistent, repetition vector "
              f"{'all ones' if c['repetition_vector_all_ones'] else 'not all ones'}; "
              + ("deadlock-free" if not c["deadlocked_actors"] else f"[red]deadlock at {c['deadlocked_actors']}[/]"))
    sim = doc.get("simulation", {})
    columns: list[tuple[str, JustifyMethod]] = [("edge", "left"), ("one phase", "right"), ("phased", "right")]
    t = table("edge buffers (paper semantics: a firing consumes and produces at once; a buffer holds its channel "
              "and the consumer's reuse rows)", columns + ([("simulated", "right")] if sim else []))
    simulated = {b["buffer"].split(".", 1)[1]: b["simulated_bytes"] for b in sim.get("phased", {}).get("buffers", [])}
    for b in doc["buffers"]:
        extra = [f"{simulated.get(b['edge'], 0):,} B"] if sim else []
        t.add_row(b["edge"], f"{b['one_phase_bytes']:,} B", f"{b['phased_bytes']:,} B", *extra)
    t.add_row("total", f"{doc['one_phase_total_bytes']:,} B", f"{doc['phased_total_bytes']:,} B",
              *([f"{sum(simulated.values()):,} B"] if sim else []))
    out.print(t)
    tm = doc["timing"]
    out.print(f"Eq. 2 latency: one phase per layer {tm['one_phase']['cycles']:,} cycles "
              f"({tm['one_phase']['fps']:,.1f} fps), phased {tm['phased']['cycles']:,} cycles "
              f"({tm['phased']['fps']:,.1f} fps): throughput −{doc['throughput_decrease'] * 100:.1f} %")
    for name, s in sim.items():
        out.print(f"simulated {name}: {s['cycles']:,} cycles, buffers "
                  f"{'equal to the analysis' if s['ok'] else '[red]DIFFER from the analysis[/]'} ({s['trace']})")

