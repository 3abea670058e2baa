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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hwsim.analytic.csdf import (
    BufferSizes,
    PhaseTiming,
    buffer_sizes,
    deadlocked_actors,
    phase_cycles,
    phase_timing,
    repetition_vector,
    sdf3_xml,
    to_csdf,
)
from hwsim.analytic.memplan import (
    GRANULE_BYTES,
    STRATEGIES,
    Buffer,
    MemoryPlan,
    Placement,
    place_in_l2,
    plan_memory,
    tensor_slots,
)
from hwsim.check.memory import BufferCheck, compare_phased, compare_plan, trace_memory
from hwsim.cli.cmd_info import add_network_arguments
from hwsim.cli.output import console, emit_json, format_bytes, table, write_atomically
from hwsim.errors import HwsimError
from hwsim.hardware import load_config
from hwsim.hardware.schema import Accelerator
from hwsim.hardware.units import BYTES, parse_quantity
from hwsim.mapping.phases import PHASE_RULES, PhasedGraph, derive_phases, phased_graph, phased_schedule
from hwsim.mapping.planned import planned_schedule
from hwsim.vocab import Level
from hwsim.sim.run import simulate_to_trace
from hwsim.workload.ir import Graph
from hwsim.workload.network import load_network

DEFAULT_HW = "edge-soc-l2"
PHASES = "phases"
ALL = "all"
PLANNERS = tuple(s for s in STRATEGIES if s != "bound")


def bytes_arg(text: str) -> int:
    """argparse type for a byte size such as 2MB or 512KiB."""
    try:
        value = int(parse_quantity(text, BYTES, None, text))
    except HwsimError as exc:
        raise argparse.ArgumentTypeError(f"{exc}; e.g. 2MB") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive size, e.g. 2MB")
    return value


def strategies_arg(text: str) -> tuple[str, ...]:
    """argparse type for --strategy: a comma list of planners and `phases`, or `all`."""
    known = (*STRATEGIES, PHASES)
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
    p.add_argument("--json", action="store_true", help="print one JSON document instead of tables")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("memplan", help="memory of the intermediate tensors under each planner, the bound, "
                                       "phases, and L2/DDR placement")
    _common(p)
    p.add_argument("--strategy", type=strategies_arg, default=strategies_arg(ALL), metavar="LIST",
                   help=f"{ALL} (default) or a comma list of {', '.join((*STRATEGIES, PHASES))}")
    p.add_argument("--l2", type=bytes_arg, default=None, metavar="SIZE",
                   help="place buffers in an L2 of SIZE (e.g. 2MB) by the knapsack (default: the config's L2)")
    p.add_argument("--granularity", type=bytes_arg, default=GRANULE_BYTES, metavar="SIZE",
                   help="knapsack weight unit (default 1KB): sizes round up to it, the L2 down")
    p.set_defaults(run=run_memplan)
    q = sub.add_parser("phases", help="phases per layer, the CSDF graph, its minimum buffers and throughput")
    _common(q)
    q.add_argument("--sdf3-xml", metavar="FILE", default=None, help="write the phased CSDF graph in SDF3's XML format")
    q.set_defaults(run=run_phases)


# ----- shared ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Setup:
    graph: Graph
    hw: Accelerator
    bits: int


def _setup(args: argparse.Namespace) -> Setup:
    graph = load_network(args.network, args.input, args.allow_unknown).graph
    hw = load_config(args.hw)
    bits = args.bits or hw.precision_bits
    if args.simulate and bits != hw.precision_bits:
        raise HwsimError(f"--bits {bits} with --simulate: the simulator runs at {args.hw}'s {hw.precision_bits}-bit "
                         f"precision; drop --bits or pick a config of {bits} bits")
    return Setup(graph, hw, bits)


@dataclass(frozen=True)
class PhasedResult:
    """One phased execution analysed: its graph, buffers, which edges live in DRAM, Eq. 2 timing."""

    pg: PhasedGraph
    sizes: BufferSizes
    in_dram: frozenset[int]
    timing: PhaseTiming


def dram_edges(sizes: BufferSizes, pg: PhasedGraph, hw: Accelerator, word_bytes: int) -> frozenset[int]:
    """Edge buffers left in DRAM: none when all fit the L2, else those the knapsack does not place there
    (traffic of an edge: its tensor written once and read once)."""
    if hw.l2 is None:
        return frozenset(range(len(pg.edges)))
    if sizes.total_bytes <= hw.l2.size_bytes:
        return frozenset()
    buffers = tuple(Buffer(e.name, 0, b, 2 * e.rows * e.row_elements * word_bytes)
                    for e, b in zip(pg.edges, sizes.bytes_))
    placement = place_in_l2(buffers, hw.l2.size_bytes)
    return frozenset(e for e, chosen in enumerate(placement.in_l2) if not chosen)


def analyse_phases(graph: Graph, phases: dict[str, int], hw: Accelerator, bits: int) -> PhasedResult:
    pg = phased_graph(graph, phases)
    sizes = buffer_sizes(to_csdf(pg, bits), len(pg.edges))
    in_dram = dram_edges(sizes, pg, hw, bits // 8)
    return PhasedResult(pg, sizes, in_dram, phase_timing(pg, hw, in_dram))


def _trace_path(args: argparse.Namespace, setup: Setup, what: str) -> Path:
    path = Path(args.trace_dir) / f"{setup.graph.name}-{setup.hw.name}-{what}.h5"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _check_rows(checks: tuple[BufferCheck, ...]) -> list[dict[str, Any]]:
    return [{"buffer": c.name, "analytic_bytes": c.analytic_bytes, "simulated_bytes": c.simulated_bytes,
             "equal": c.equal} for c in checks]


def _simulated(path: Path, checks: tuple[BufferCheck, ...], cycles: int, hw: Accelerator) -> dict[str, Any]:
    return {"trace": str(path), "cycles": cycles, "latency_s": cycles / hw.clock_hz,
            "ok": all(c.equal for c in checks), "buffers": _check_rows(checks)}


def simulate_phased(args: argparse.Namespace, setup: Setup, result: PhasedResult, what: str) -> dict[str, Any]:
    """Run a phased schedule (edge buffers in the L2 unless placed in DRAM) and compare each buffer's peak."""
    schedule = phased_schedule(result.pg, setup.hw, {e: Level.DRAM for e in result.in_dram})
    path = _trace_path(args, setup, what)
    run = simulate_to_trace(schedule, setup.hw, path, per_transaction=frozenset({"dram"}))
    names = schedule.layers[0].params["buffers"]
    return _simulated(path, compare_phased(result.sizes, names, trace_memory(path)), run.cycles, setup.hw)


def simulate_plan(args: argparse.Namespace, setup: Setup, plan: MemoryPlan, placement: Placement | None
                  ) -> dict[str, Any]:
    """Run a layer-by-layer plan (buffers in the L2 as placed, else all in the L2 if they fit, else DRAM)."""
    fits = setup.hw.l2 is not None and plan.total_bytes <= setup.hw.l2.size_bytes
    in_l2 = placement.in_l2 if placement else (fits,) * len(plan.buffers)
    wb = setup.hw.word_bytes
    names = [f"{'l2' if x else 'dram'}.{b.name}" for b, x in zip(plan.buffers, in_l2)]
    schedule = planned_schedule(setup.graph, setup.hw, tensor_slots(plan, in_l2, wb), names)
    path = _trace_path(args, setup, plan.strategy)
    run = simulate_to_trace(schedule, setup.hw, path, per_transaction=frozenset({"dram"}))
    return _simulated(path, compare_plan(plan, tuple(names), trace_memory(path), in_l2), run.cycles, setup.hw)


# ----- memplan ---------------------------------------------------------------------------------------


def run_memplan(args: argparse.Namespace) -> int:
    setup = _setup(args)
    capacity = args.l2 or (setup.hw.l2.size_bytes if setup.hw.l2 else None)
    rows: list[dict[str, Any]] = []
    bound = plan_memory(setup.graph, "bound", setup.bits).bound_bytes
    ok = True
    for strategy in args.strategy:
        if strategy == PHASES:
            result = analyse_phases(setup.graph, derive_phases(setup.graph, args.rule), setup.hw, setup.bits)
            row = {"strategy": PHASES, "total_bytes": result.sizes.total_bytes, "bound_bytes": bound,
                   "buffers": len(result.pg.edges), "ratio_to_bound": result.sizes.total_bytes / bound,
                   "firings": result.pg.firings}
            if args.simulate:
                row["simulation"] = simulate_phased(args, setup, result, "phased")
        else:
            plan = plan_memory(setup.graph, strategy, setup.bits)
            placement = place_in_l2(plan.buffers, capacity, args.granularity) if capacity else None
            row = {"strategy": strategy, "total_bytes": plan.total_bytes, "bound_bytes": plan.bound_bytes,
                   "buffers": len(plan.buffers), "ratio_to_bound": plan.ratio_to_bound, **plan.details}
            if placement:
                row["l2"] = _placement_record(plan, placement)
            if args.simulate and strategy != "bound":
                row["simulation"] = simulate_plan(args, setup, plan, placement)
        ok = ok and row.get("simulation", {}).get("ok", True)
        rows.append(row)
    if args.json:
        emit_json({"network": setup.graph.name, "hardware": setup.hw.name, "bits": setup.bits,
                   "l2_bytes": capacity, "strategies": rows})
    else:
        _print_memplan(setup, rows, capacity)
    return 0 if ok else 1


def _placement_record(plan: MemoryPlan, p: Placement) -> dict[str, Any]:
    return {"capacity_bytes": p.capacity_bytes, "granule_bytes": p.granule_bytes, "l2_bytes": p.l2_bytes,
            "fits_entirely": plan.total_bytes <= p.capacity_bytes,
            "l2_traffic_bytes": p.l2_traffic_bytes, "ddr_traffic_bytes": p.ddr_traffic_bytes,
            "in_l2": [b.name for b, x in zip(plan.buffers, p.in_l2) if x]}


def _print_memplan(setup: Setup, rows: list[dict[str, Any]], capacity: int | None) -> None:
    title = (f"{setup.graph.name}: memory for intermediate tensors at {setup.bits} bit"
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
                  format_bytes(l2["l2_traffic_bytes"]) if l2 else "", format_bytes(l2["ddr_traffic_bytes"]) if l2 else "",
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


def run_phases(args: argparse.Namespace) -> int:
    setup = _setup(args)
    phases = derive_phases(setup.graph, args.rule)
    phased = analyse_phases(setup.graph, phases, setup.hw, setup.bits)
    single = analyse_phases(setup.graph, {name: 1 for name in phases}, setup.hw, setup.bits)
    g = to_csdf(phased.pg, setup.bits)
    q = repetition_vector(g)
    dead = deadlocked_actors(g)
    if args.sdf3_xml:
        times = {name: (a + k + o).tolist() for name, (a, k, o) in phase_cycles(phased.pg, setup.hw).items()}
        text = sdf3_xml(g, times)
        write_atomically(args.sdf3_xml, lambda tmp: Path(tmp).write_text(text))
    doc: dict[str, Any] = {
        "network": setup.graph.name, "hardware": setup.hw.name, "bits": setup.bits, "rule": args.rule,
        "phases": phases, "total_phases": phased.pg.firings, "one_phase_total": single.pg.firings,
        "csdf": {"actors": len(g.actors), "channels": sum(not c.reuse for c in g.channels),
                 "reuse_channels": sum(c.reuse for c in g.channels), "consistent": True,
                 "repetition_vector_all_ones": all(v == 1 for v in q), "deadlocked_actors": list(dead)},
        "buffers": [{"edge": e.name, "one_phase_bytes": a, "phased_bytes": b}
                    for e, a, b in zip(phased.pg.edges, single.sizes.bytes_, phased.sizes.bytes_)],
        "one_phase_total_bytes": single.sizes.total_bytes, "phased_total_bytes": phased.sizes.total_bytes,
        "edges_in_dram": {"one_phase": len(single.in_dram), "phased": len(phased.in_dram)},
        "claim_at_start_total_bytes": {"one_phase": single.sizes.claim_at_start_total_bytes,
                                       "phased": phased.sizes.claim_at_start_total_bytes},
        "timing": {name: {"cycles": r.timing.cycles, "access_cycles": r.timing.access_cycles,
                          "kernel_cycles": r.timing.kernel_cycles, "op_cycles": r.timing.op_cycles,
                          "fps": r.timing.fps} for name, r in (("one_phase", single), ("phased", phased))},
        "throughput_decrease": 1 - phased.timing.fps / single.timing.fps,
    }
    if args.sdf3_xml:
        doc["sdf3_xml"] = args.sdf3_xml
    if args.simulate:
        doc["simulation"] = {"one_phase": simulate_phased(args, setup, single, "one-phase"),
                             "phased": simulate_phased(args, setup, phased, "phased")}
    if args.json:
        emit_json(doc)
    else:
        _print_phases(setup, doc)
    ok = not dead and all(s["ok"] for s in doc.get("simulation", {}).values())
    return 0 if ok else 1


def _print_phases(setup: Setup, doc: dict[str, Any]) -> None:
    out = console()
    c = doc["csdf"]
    out.print(f"{setup.graph.name}: {doc['total_phases']} phases ({doc['rule']} rule) against "
              f"{doc['one_phase_total']} for one phase per layer; CSDF {c['actors']} actors, {c['channels']} channels, "
              f"{c['reuse_channels']} reuse self-loops; consistent, repetition vector "
              f"{'all ones' if c['repetition_vector_all_ones'] else 'not all ones'}; "
              + ("deadlock-free" if not c["deadlocked_actors"] else f"[red]deadlock at {c['deadlocked_actors']}[/]"))
    sim = doc.get("simulation", {})
    t = table("edge buffers (paper semantics: a firing consumes and produces at once; a buffer holds its channel "
              "and the consumer's reuse rows)", [("edge", "left"), ("one phase", "right"), ("phased", "right")]
              + ([("simulated", "right")] if sim else []))
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

