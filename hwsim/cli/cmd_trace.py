"""`hwsim trace summary|query FILE`: what a trace holds, and the records that match a filter.

Both stream the trace block by block (`hwsim.trace.Trace.records`), so their
memory stays bounded whatever the trace's size: summary keeps per-layer
totals, query keeps totals and the first `--limit` matches (all matches go
to `--csv`, written as they are found, then renamed into place).
"""

from __future__ import annotations

import argparse
import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import hwsim.trace
from hwsim.cli.output import (
    console,
    emit_json,
    format_bytes,
    format_count,
    table,
    write_atomically,
)
from hwsim.errors import HwsimError
from hwsim.metrics.perfetto import write_perfetto
from hwsim.metrics.plots import PLOT_KINDS, plot, require_matplotlib
from hwsim.trace.schema import RECORD_DTYPE

DEFAULT_LIMIT = 20  # matching records shown (table) or listed (JSON)
CSV_SLICE_RECORDS = 1 << 14  # records turned into CSV rows at a time


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("trace", help="inspect an HDF5 trace: summary, or a filtered query of its records")
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
    g = verbs.add_parser("plot", help="bandwidth, occupancy, energy or timeline of a trace as an image")
    g.add_argument("file", metavar="FILE.h5")
    g.add_argument("--kind", choices=PLOT_KINDS, required=True,
                   help="bandwidth per level over time, occupancy per buffer over time, energy per layer by "
                        "level and operand, or a timeline of layers with the PE array's busy share")
    g.add_argument("--out", metavar="FILE.png", required=True, help="image to write (format from the suffix)")
    g.set_defaults(run=run_plot)
    e = verbs.add_parser("export", help="Chrome/Perfetto trace-event JSON: a track per component, counters")
    e.add_argument("file", metavar="FILE.h5")
    e.add_argument("--perfetto", metavar="OUT.json", required=True, help="trace-event JSON to write")
    e.add_argument("--layer", default=None, help="only this layer's access events (layers and counters stay whole)")
    e.add_argument("--cycles", type=cycles_arg, default=None, metavar="A:B", help="only access events in [A, B)")
    e.add_argument("--max-events", type=int, default=1_000_000, metavar="N",
                   help="access events exported at most, shared by the levels (default 1000000; the viewer "
                        "slows beyond a few million)")
    e.set_defaults(run=run_export)


def run_export(args: argparse.Namespace) -> int:
    if args.max_events < 1:
        raise HwsimError(f"--max-events {args.max_events}: give a number of events ≥ 1")
    with hwsim.trace.open(args.file) as trace:
        counts: dict[str, int] = {}

        def write(tmp: str) -> None:
            with open(tmp, "w") as f:
                counts.update(write_perfetto(trace, f, args.layer, args.cycles, args.max_events))
        write_atomically(args.perfetto, write)
    left_out = f"; {format_count(counts['dropped'])} left out (raise --max-events or filter)" if counts["dropped"] else ""
    console().print(f"{format_count(counts['events'])} access events written to {args.perfetto}{left_out}; "
                    "open it in ui.perfetto.dev")
    return 0


def run_plot(args: argparse.Namespace) -> int:
    require_matplotlib()
    fmt = Path(args.out).suffix.lstrip(".") or "png"
    with hwsim.trace.open(args.file) as trace:
        plot(trace, args.kind, lambda fig: write_atomically(args.out, lambda tmp: fig.savefig(tmp, dpi=120, format=fmt)))
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


@dataclass
class LevelTotals:
    """Totals of one level, overall and per layer (words, records, first and last cycle)."""

    layers: int
    records: int = 0
    words: np.ndarray = field(init=False)
    counts: np.ndarray = field(init=False)
    first_cycle: np.ndarray = field(init=False)
    last_cycle: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.words = np.zeros(self.layers, dtype=np.int64)
        self.counts = np.zeros(self.layers, dtype=np.int64)
        self.first_cycle = np.full(self.layers, np.iinfo(np.int64).max, dtype=np.int64)
        self.last_cycle = np.full(self.layers, -1, dtype=np.int64)

    def add(self, block: np.ndarray) -> None:
        layer = block["layer"]
        self.records += len(block)
        self.words += np.bincount(layer, weights=block["words"], minlength=self.layers).astype(np.int64)
        self.counts += np.bincount(layer, minlength=self.layers)
        np.minimum.at(self.first_cycle, layer, block["start_cycle"])
        np.maximum.at(self.last_cycle, layer, block["end_cycle"])


def summarize(trace: hwsim.trace.Trace) -> dict[str, Any]:
    """Attributes, per-level totals and per-layer totals, streamed."""
    n = len(trace.layers)
    totals = {}
    for level in trace.levels:
        t = LevelTotals(n)
        for block in trace.records(level):
            t.add(block)
        totals[level] = t
    word_bytes = int(trace.attrs.get("word_bits", 8)) // 8
    levels = {}
    for level, t in totals.items():
        seen = t.counts > 0
        levels[level] = {"records": t.records, "words": int(t.words.sum()),
                         "first_cycle": int(t.first_cycle[seen].min()) if seen.any() else None,
                         "last_cycle": int(t.last_cycle.max()) if seen.any() else None}
    layers = []
    for i, name in enumerate(trace.layers):
        first = min((int(t.first_cycle[i]) for t in totals.values() if t.counts[i]), default=None)
        last = max((int(t.last_cycle[i]) for t in totals.values() if t.counts[i]), default=None)
        layers.append({"name": name, "first_cycle": first, "last_cycle": last,
                       "records": {level: int(t.counts[i]) for level, t in totals.items()},
                       "words": {level: int(t.words[i]) for level, t in totals.items()}})
    firsts = [v["first_cycle"] for v in levels.values() if v["first_cycle"] is not None]
    lasts = [v["last_cycle"] for v in levels.values() if v["last_cycle"] is not None]
    return {"file": trace.path, "network": trace.attrs.get("network"), "hardware": trace.attrs.get("hardware"),
            "mapper": trace.attrs.get("mapper"), "batch": trace.attrs.get("batch"),
            "clock_hz": trace.attrs.get("clock_hz"), "word_bytes": word_bytes,
            "first_cycle": min(firsts, default=None), "last_cycle": max(lasts, default=None),
            "levels": levels, "layers": layers}


def run_summary(args: argparse.Namespace) -> int:
    with hwsim.trace.open(args.file) as trace:
        doc = summarize(trace)
    if args.json:
        emit_json(doc)
        return 0
    out = console()
    span = (doc["last_cycle"] or 0) - (doc["first_cycle"] or 0)
    out.print(f"{doc['file']}: {doc['network']} on {doc['hardware']} ({doc['mapper']}, batch {doc['batch']}), "
              f"cycles {doc['first_cycle']}…{doc['last_cycle']} = {span / doc['clock_hz'] * 1e3:,.3f} ms")
    t = table("levels", [("level", "left"), ("records", "right"), ("words", "right"), ("bytes", "right"),
                         ("first cycle", "right"), ("last cycle", "right")])
    for level, v in doc["levels"].items():
        t.add_row(level, format_count(v["records"]), format_count(v["words"]),
                  format_bytes(v["words"] * doc["word_bytes"]) if level != "pe" else "-",
                  _cycle(v["first_cycle"]), _cycle(v["last_cycle"]))
    out.print(t)
    levels = [level for level in doc["levels"] if level != "pe"]
    t = table("layers (words moved per level)", [("layer", "left"), ("first cycle", "right"),
                                                  ("last cycle", "right")] + [(level, "right") for level in levels])
    for layer in doc["layers"]:
        t.add_row(layer["name"], _cycle(layer["first_cycle"]), _cycle(layer["last_cycle"]),
                  *(format_count(layer["words"][level]) for level in levels))
    out.print(t)
    return 0


def _cycle(value: int | None) -> str:
    return "-" if value is None else str(value)


# ----- query --------------------------------------------------------------------------------------


@dataclass
class QueryTotals:
    """What the matching records add up to, and the first few of them."""

    limit: int
    records: int = 0
    words: int = 0
    first_cycle: int | None = None
    last_cycle: int | None = None
    by_op_operand: dict[tuple[int, int], list[int]] = field(default_factory=dict)  # -> [records, words]
    shown: list[np.ndarray] = field(default_factory=list)

    def add(self, block: np.ndarray) -> None:
        if not len(block):
            return
        self.records += len(block)
        self.words += int(block["words"].sum())
        start, end = int(block["start_cycle"].min()), int(block["end_cycle"].max())
        self.first_cycle = start if self.first_cycle is None else min(self.first_cycle, start)
        self.last_cycle = end if self.last_cycle is None else max(self.last_cycle, end)
        keys, inverse = np.unique(block["op"].astype(np.int64) * 256 + block["operand"], return_inverse=True)
        words = np.bincount(inverse, weights=block["words"])
        counts = np.bincount(inverse)
        for key, n, w in zip(keys.tolist(), counts.tolist(), words.tolist()):
            entry = self.by_op_operand.setdefault(divmod(key, 256), [0, 0])
            entry[0] += n
            entry[1] += int(w)
        held = sum(len(b) for b in self.shown)
        if held < self.limit:
            self.shown.append(block[:self.limit - held].copy())


def query(trace: hwsim.trace.Trace, args: argparse.Namespace, sink: Any = None) -> QueryTotals:
    """Stream the matching records into totals (and CSV rows)."""
    totals = QueryTotals(max(0, args.limit))
    for block in trace.records(args.level, args.layer, args.operand, args.op, args.cycles):
        totals.add(block)
        if sink is not None:  # in slices: a million Python rows would cost hundreds of MB
            for i in range(0, len(block), CSV_SLICE_RECORDS):
                sink.writerows(_named_rows(trace, block[i:i + CSV_SLICE_RECORDS]))
    return totals


def _named_rows(trace: hwsim.trace.Trace, block: np.ndarray) -> list[tuple[Any, ...]]:
    """Records with layer, op and operand spelled out."""
    layers, ops, operands = trace.layers, trace.ops, trace.operands
    return [(start, end, ops[op], operands[operand], layers[layer], step, address, words)
            for start, end, op, operand, layer, step, address, words in block.tolist()]


CSV_HEADER = ("start_cycle", "end_cycle", "op", "operand", "layer", "step", "address", "words")


def run_query(args: argparse.Namespace) -> int:
    if args.limit < 0:
        raise HwsimError(f"--limit {args.limit}: give a number of records ≥ 0")
    with hwsim.trace.open(args.file) as trace:
        if args.level not in trace.levels:
            raise HwsimError(f"{args.file}: no level {args.level!r} in this trace; it has {', '.join(trace.levels)}")
        if args.csv:
            holder: dict[str, QueryTotals] = {}

            def write(tmp: str) -> None:
                with open(tmp, "w", newline="") as f:
                    w = csv.writer(f)
                    w.writerow(CSV_HEADER)
                    holder["totals"] = query(trace, args, w)
            write_atomically(args.csv, write)
            totals = holder["totals"]
        else:
            totals = query(trace, args)
        shown = np.concatenate(totals.shown) if totals.shown else np.empty(0, dtype=RECORD_DTYPE)
        rows = _named_rows(trace, shown)
        breakdown = [{"op": trace.ops[op], "operand": trace.operands[operand], "records": n, "words": w}
                     for (op, operand), (n, w) in sorted(totals.by_op_operand.items())]
        word_bytes = int(trace.attrs.get("word_bits", 8)) // 8
    doc = {"file": args.file, "level": args.level,
           "filter": {"layer": args.layer, "op": args.op, "operand": args.operand,
                      "cycles": list(args.cycles) if args.cycles else None},
           "records": totals.records, "words": totals.words,
           "bytes": totals.words * word_bytes if args.level != "pe" else None,
           "first_cycle": totals.first_cycle, "last_cycle": totals.last_cycle, "by_op_operand": breakdown,
           "first_records": [dict(zip(CSV_HEADER, r)) for r in rows], "csv": args.csv}
    if args.json:
        emit_json(doc)
        return 0
    out = console()
    what = ", ".join(f"{k} {v}" for k, v in doc["filter"].items() if v is not None) or "no filter"
    out.print(f"{args.level} records matching {what}: {format_count(totals.records)} records, "
              f"{format_count(totals.words)} words"
              + (f" = {format_bytes(doc['bytes'])}" if doc["bytes"] is not None else "")
              + (f", cycles {totals.first_cycle}…{totals.last_cycle}" if totals.records else ""))
    t = table("by op and operand", [("op", "left"), ("operand", "left"), ("records", "right"), ("words", "right")])
    for b in breakdown:
        t.add_row(b["op"], b["operand"], format_count(b["records"]), format_count(b["words"]))
    out.print(t)
    if rows:
        t = table(f"first {len(rows)} records", [(h, "right") for h in CSV_HEADER])
        for r in rows:
            t.add_row(*(str(v) for v in r))
        out.print(t)
    if args.csv:
        out.print(f"all {format_count(totals.records)} matching records written to {args.csv}")
    return 0
