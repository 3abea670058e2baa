"""`hwsim trace summary|query|validate|plot|export FILE`: what a trace holds, the records that match a filter,
whether its timing obeys the hardware, figures, and exports (Perfetto trace events; the DRAM bursts for
Ramulator 2, DRAMsim3 and DRAMPower).

Summary and query stream the trace a chunk at a time (`hwsim.trace.Trace.column_blocks`), so their
memory stays bounded whatever the trace's size: summary keeps per-layer
totals, query keeps totals and the first `--limit` matches (all matches go
to `--csv`, written as they are found, then renamed into place). The
validator and the exporters are imported by the verbs that run them: a
summary or a query does not pay for loading them.
"""

from __future__ import annotations

import argparse
import csv
from dataclasses import asdict
from pathlib import Path
from typing import Any

import hwsim.trace
from hwsim.cli.commands import COMMAND_HELP
from hwsim.cli.output import (
    console,
    emit_json,
    format_bytes,
    format_count,
    table,
    write_atomically,
)
from hwsim.errors import HwsimError
from hwsim.flows.trace_stats import TraceQuery, query_trace, summarize_trace
from hwsim.metrics.plots import PLOT_KINDS, plot, require_matplotlib

DEFAULT_LIMIT = 20  # matching records shown (table) or listed (JSON)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("trace", help=COMMAND_HELP["trace"])
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True, parser_class=type(p))
    s = verbs.add_parser("summary", help="levels, record counts, cycle span and per-layer totals")
    s.add_argument("file", metavar="FILE.h5")
    s.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    s.set_defaults(run=run_summary)
    q = verbs.add_parser("query", help="records of one level matching layer, op, operand and a cycle window")
    q.add_argument("file", metavar="FILE.h5")
    q.add_argument("--level", default="dram", help="storage level or pe (default dram)")
    q.add_argument("--layer", default=None, help="layer name (or its index in the trace)")
    q.add_argument("--op", default=None, help="read, write, fill or update")
    q.add_argument("--operand", default=None, help="ifmap, filter, psum, ofmap or other")
    q.add_argument("--cycles", type=cycles_arg, default=None, metavar="A:B",
                   help="keep records overlapping cycles [A, B)")
    q.add_argument("--limit", type=int, default=DEFAULT_LIMIT, metavar="N",
                   help=f"matching records to show (default {DEFAULT_LIMIT}); --csv gets all of them")
    q.add_argument("--csv", metavar="OUT.csv", default=None, help="write every matching record here")
    q.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    q.set_defaults(run=run_query)
    v = verbs.add_parser("validate", help="check the trace's physics: bandwidth, ports, DRAM latency and JEDEC "
                                          "timing, dependencies, occupancy, addresses and levels (exit 1 if a rule "
                                          "is broken)")
    v.add_argument("file", metavar="FILE.h5")
    v.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    v.set_defaults(run=run_validate)
    g = verbs.add_parser("plot", help="bandwidth, occupancy, energy or timeline of a trace as an image")
    g.add_argument("file", metavar="FILE.h5")
    g.add_argument("--kind", choices=PLOT_KINDS, required=True,
                   help="bandwidth per level over time, occupancy per buffer over time, energy per layer by "
                        "level and operand, or a timeline of layers with the PE array's busy share")
    g.add_argument("--out", metavar="FILE.png", required=True, help="image to write (format from the suffix)")
    g.set_defaults(run=run_plot)
    e = verbs.add_parser("export", help="Chrome/Perfetto trace-event JSON (a track per component, counters), and the "
                                        "DRAM traffic for Ramulator 2, DRAMsim3 or DRAMPower")
    e.add_argument("file", metavar="FILE.h5")
    e.add_argument("--perfetto", metavar="OUT.json", default=None, help="trace-event JSON to write")
    e.add_argument("--ramulator", metavar="OUT.trace", default=None,
                   help="Ramulator 2 LoadStoreTrace of the DRAM bursts (LD/ST ADDR per line)")
    e.add_argument("--dramsim3", metavar="OUT.trace", default=None,
                   help="DRAMsim3 trace of the DRAM bursts (ADDR READ|WRITE CYCLE per line, DRAM clock cycles)")
    e.add_argument("--drampower", metavar="OUT.trace", default=None,
                   help="DRAMPower command trace (CYCLE,CMD,BANK per line) of the DRAM bursts, one file per channel "
                        "and rank (NAME.chC.rR.SUFFIX when several); needs the jedec DRAM model")
    e.add_argument("--layer", default=None, help="only this layer's access events (layers and counters stay whole)")
    e.add_argument("--cycles", type=cycles_arg, default=None, metavar="A:B", help="only access events in [A, B)")
    e.add_argument("--max-events", type=int, default=1_000_000, metavar="N",
                   help="access events exported at most, shared by the levels (default 1000000; the viewer "
                        "slows beyond a few million)")
    e.set_defaults(run=run_export)


def run_export(args: argparse.Namespace) -> int:
    if not any((args.perfetto, args.ramulator, args.dramsim3, args.drampower)):
        raise HwsimError("trace export: give at least one of --perfetto, --ramulator, --dramsim3, --drampower")
    if args.ramulator or args.dramsim3 or args.drampower:
        export_dram(args)
    if args.perfetto:
        export_perfetto(args)
    return 0


def export_dram(args: argparse.Namespace) -> None:
    """Write the DRAM bursts in each simulator's format asked for."""
    from hwsim.hardware.dram import dram_kind
    from hwsim.metrics.dram_export import dram_requests, write_drampower, write_dramsim3, write_ramulator

    with hwsim.trace.open(args.file) as trace:
        requests = dram_requests(trace)
    out = console()
    clock = "DRAM" if dram_kind(requests.hardware.dram.model).prices_commands else "core"
    if args.ramulator:
        n = write_ramulator(requests, args.ramulator)
        out.print(f"{format_count(n)} requests written to {args.ramulator} (Ramulator 2 LoadStoreTrace)")
    if args.dramsim3:
        n = write_dramsim3(requests, args.dramsim3)
        out.print(f"{format_count(n)} requests written to {args.dramsim3} (DRAMsim3 trace, {clock} clock cycles)")
    if args.drampower:
        files = write_drampower(requests, args.drampower)
        out.print(f"commands of {format_count(len(requests))} bursts written to "
                  f"{', '.join(str(f) for f in files)} (DRAMPower command traces, DRAM clock cycles)")


def export_perfetto(args: argparse.Namespace) -> None:
    from hwsim.metrics.perfetto import write_perfetto

    if args.max_events < 1:
        raise HwsimError(f"--max-events {args.max_events}: give a number of events ≥ 1")
    with hwsim.trace.open(args.file) as trace:
        counts: dict[str, int] = {}

        def write(tmp: str) -> None:
            with open(tmp, "w") as f:
                counts.update(write_perfetto(trace, f, args.layer, args.cycles, args.max_events))
        write_atomically(args.perfetto, write)
    left_out = (f"; {format_count(counts['dropped'])} left out (raise --max-events or filter)"
                if counts["dropped"] else "")
    console().print(f"{format_count(counts['events'])} access events written to {args.perfetto}{left_out}; "
                    "open it in ui.perfetto.dev")


def run_plot(args: argparse.Namespace) -> int:
    require_matplotlib()
    fmt = Path(args.out).suffix.lstrip(".") or "png"
    with hwsim.trace.open(args.file) as trace:
        plot(trace, args.kind,
             lambda fig: write_atomically(args.out, lambda tmp: fig.savefig(tmp, dpi=120, format=fmt)))
    console().print(f"{args.kind} plot of {args.file} written to {args.out}")
    return 0


def cycles_arg(text: str) -> tuple[int, int]:
    """A:B with integers 0 ≤ A < B."""
    parts = text.split(":")
    try:
        start, end = (int(v) for v in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give a cycle window A:B, e.g. 0:100000") from None
    if not 0 <= start < end:
        raise argparse.ArgumentTypeError(f"{text!r}: the window needs 0 ≤ A < B")
    return start, end


# ----- summary ------------------------------------------------------------------------------------


def run_validate(args: argparse.Namespace) -> int:
    from hwsim.check.validate import validate_trace
    from hwsim.cli.validation import print_validation, validation_document

    with hwsim.trace.open(args.file) as trace:
        result = validate_trace(trace)
    if args.json:
        emit_json(validation_document(result))
    else:
        print_validation(result)
        console().print("PASS" if result.ok else "FAIL")
    return 0 if result.ok else 1


def run_summary(args: argparse.Namespace) -> int:
    with hwsim.trace.open(args.file) as trace:
        doc = asdict(summarize_trace(trace))
    if args.json:
        emit_json(doc)
        return 0
    out = console()
    span = (doc["last_cycle"] or 0) - (doc["first_cycle"] or 0)
    out.print(f"{doc['file']}: {doc['network']} on {doc['hardware']} ({doc['mapper']}, batch {doc['batch']}), "
              f"cycles {doc['first_cycle']}…{doc['last_cycle']}"
              + (f" = {span / doc['clock_hz'] * 1e3:,.3f} ms" if doc["clock_hz"] else " (no clock in the trace)"))
    t = table("levels", [("level", "left"), ("records", "right"), ("words", "right"), ("bytes", "right"),
                         ("first cycle", "right"), ("last cycle", "right")])
    for level, v in doc["levels"].items():
        t.add_row(level, format_count(v["records"]), format_count(v["words"]),
                  format_bytes(v["bytes"]) if level != "pe" else "-",
                  _cycle(v["first_cycle"]), _cycle(v["last_cycle"]))
    out.print(t)
    levels = [level for level in doc["levels"] if level != "pe"]
    t = table("layers (words moved per level)", [("layer", "left"), ("first cycle", "right"),
                                                  ("last cycle", "right"), *((level, "right") for level in levels)])
    for layer in doc["layers"]:
        t.add_row(layer["name"], _cycle(layer["first_cycle"]), _cycle(layer["last_cycle"]),
                  *(format_count(layer["words"][level]) for level in levels))
    out.print(t)
    passed = doc["imported"].get("passthrough_ops") or {}
    if passed:
        ops = ", ".join(f"{op} ×{len(names)}" for op, names in passed.items())
        out.print(f"[yellow]{sum(len(n) for n in passed.values())} layer(s) passed through at zero cost "
                  f"(--allow-unknown): {ops}; the {format_count(doc['imported']['macs'])} MACs leave their work out")
    return 0


def _cycle(value: int | None) -> str:
    return "-" if value is None else str(value)


# ----- query --------------------------------------------------------------------------------------


CSV_HEADER = ("start_cycle", "end_cycle", "op", "operand", "layer", "step", "address", "words", "unit")


def _query(args: argparse.Namespace, trace: hwsim.trace.Trace) -> TraceQuery:
    """The query, every match also written to --csv when given."""
    if not args.csv:
        return query_trace(trace, args.level, args.layer, args.op, args.operand, args.cycles, args.limit)
    holder: list[TraceQuery] = []

    def write(tmp: str) -> None:
        with open(tmp, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(CSV_HEADER)
            holder.append(query_trace(trace, args.level, args.layer, args.op, args.operand, args.cycles, args.limit,
                                      w.writerows))
    write_atomically(args.csv, write)
    return holder[0]


def query_document(args: argparse.Namespace, q: TraceQuery) -> dict[str, Any]:
    return {"file": args.file, "level": args.level,
            "filter": {"layer": args.layer, "op": args.op, "operand": args.operand,
                       "cycles": list(args.cycles) if args.cycles else None},
            "records": q.records, "words": q.words, "bytes": q.bytes, "first_cycle": q.first_cycle,
            "last_cycle": q.last_cycle, "by_op_operand": [asdict(b) for b in q.by_op_operand],
            "first_records": [dict(zip(CSV_HEADER, r)) for r in q.first_records], "csv": args.csv}


def run_query(args: argparse.Namespace) -> int:
    if args.limit < 0:
        raise HwsimError(f"--limit {args.limit}: give a number of records ≥ 0")
    with hwsim.trace.open(args.file) as trace:
        q = _query(args, trace)
    doc = query_document(args, q)
    if args.json:
        emit_json(doc)
        return 0
    out = console()
    what = ", ".join(f"{k} {v}" for k, v in doc["filter"].items() if v is not None) or "no filter"
    out.print(f"{args.level} records matching {what}: {format_count(q.records)} records, "
              f"{format_count(q.words)} words"
              + (f" = {format_bytes(q.bytes)}" if q.bytes is not None else "")
              + (f", cycles {q.first_cycle}…{q.last_cycle}" if q.records else ""))
    t = table("by op and operand", [("op", "left"), ("operand", "left"), ("records", "right"), ("words", "right")])
    for b in q.by_op_operand:
        t.add_row(b.op, b.operand, format_count(b.records), format_count(b.words))
    out.print(t)
    if q.first_records:
        t = table(f"first {len(q.first_records)} records", [(h, "right") for h in CSV_HEADER])
        for r in q.first_records:
            t.add_row(*(str(v) for v in r))
        out.print(t)
    if args.csv:
        out.print(f"all {format_count(q.records)} matching records written to {args.csv}")
    return 0
