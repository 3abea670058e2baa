"""`hwsim dram replay TRACE --hw CONFIG`: a DRAM request trace timed on a config's DRAM model."""

from __future__ import annotations

import argparse

from hwsim.cli.commands import COMMAND_HELP
from hwsim.cli.output import console, emit_json, format_count, table


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("dram", help=COMMAND_HELP["dram"])
    verbs = p.add_subparsers(dest="dram_command", metavar="VERB", required=True)
    r = verbs.add_parser("replay", help="time a request trace on the config's DRAM model: time in ns and cycles, "
                                        "bandwidth, row hits, misses and conflicts")
    r.add_argument("trace", metavar="TRACE", help="Ramulator 2 LoadStoreTrace (`LD 0xADDR` / `ST 0xADDR`: every "
                                                  "request at once) or DRAMsim3 trace (`0xADDR READ|WRITE CYCLE`)")
    r.add_argument("--hw", required=True, metavar="CONFIG", help="accelerator config whose DRAM times the requests")
    r.add_argument("--format", choices=("auto", "ramulator", "dramsim3"), default="auto",
                   help="the trace's format (default: by the fields of its first line)")
    r.add_argument("--json", action="store_true", help="print one JSON document instead of a table")
    r.set_defaults(run=run_replay)


def run_replay(args: argparse.Namespace) -> int:
    from hwsim.flows.dram_replay import read_requests, replay
    from hwsim.hardware import load_config

    hw = load_config(args.hw)
    result = replay(read_requests(args.trace, args.format), hw)
    doc = result.as_data()
    if args.json:
        emit_json(doc)
        return 0
    t = table(f"{args.trace} ({result.requests.format}) on {hw.name}'s {result.model} DRAM",
              [("figure", "left"), ("value", "right"), ("unit", "left")])
    rows = [("requests", format_count(len(result.requests.address)), f"{doc['reads']:,} reads, {doc['writes']:,} "
                                                                         f"writes of {result.burst_bytes} B"),
            ("time", f"{result.end_ns:,.1f}", "ns (to the last data)"),
            ("time", f"{result.end_cycles:,}", f"cycles of {result.clock_hz / 1e6:g} MHz"),
            ("bandwidth", f"{result.bandwidth_gb_s:.3f}", "GB/s (bytes moved over the time)")]
    for name, value in (("row hits", result.row_hits), ("row misses", result.row_misses),
                        ("row conflicts", result.row_conflicts)):
        if value is not None:
            rows.append((name, f"{value:,}", "bursts"))
    for row in rows:
        t.add_row(*row)
    console().print(t)
    return 0
