"""`hwsim sweep FILE`: evaluate every point of a sweep file, resumably, in parallel; and
`hwsim sweep pareto RESULTS`: the non-dominated points for two metrics, printed and plotted.

Points go to OUT/points.jsonl as they finish (a rerun skips the points done; failed points are
retried with --retry-failed), and the table OUT/results.parquet (or .csv without pyarrow) is
rebuilt at the end. A failing point is recorded with its error and the sweep goes on; the exit code
is 1 when the table holds a failed point, 2 for bad input, 130 when interrupted.
"""

from __future__ import annotations

import argparse
import functools
from contextlib import closing
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from hwsim.cli.args import positive_int
from hwsim.cli.commands import COMMAND_HELP
from hwsim.cli.output import console, emit_json, print_notices, table, write_atomically
from hwsim.errors import SweepError
from hwsim.files import OutputLock
from hwsim.sweep.executors import (
    EXECUTORS,
    LOCAL_CLUSTER,
    LOCAL_CLUSTER_MIN_S_PER_WORKER,
    Choice,
    choose_executor,
    run_rows,
)
from hwsim.sweep.pareto import column, pareto_front, plot_front, value
from hwsim.sweep.results import LOG_NAME, PointLog, read_log, read_table, results_path, table_format, write_table
from hwsim.sweep.run import ERROR, OK, evaluate, is_axis_column, table_columns
from hwsim.sweep.spec import Point, Sweep, load_sweep

PARETO = "pareto"
DEFAULT_OUT = Path("results")
SHOWN_ERRORS = 10


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "sweep", help=COMMAND_HELP["sweep"],
        usage="hwsim sweep FILE [--jobs N] [--executor local|dask [--scheduler ADDR]] [--out DIR] [--retry-failed] "
              "[--limit N] [--json]\n       hwsim sweep pareto RESULTS --x METRIC --y METRIC [--maximize x|y] "
              "[--out FILE.png] [--json]",
        description="Run a sweep file (configs/sweeps/*.yaml), or with 'pareto', the Pareto front of a results "
                    "table for two metrics (energy = energy_pj, latency = latency_cycles, or any number column).")
    p.add_argument("target", metavar="FILE | pareto", help="the sweep file, or 'pareto'")
    p.add_argument("results", metavar="RESULTS", nargs="?", default=None,
                   help="pareto: results.parquet, results.csv or the sweep's output folder")
    p.add_argument("--jobs", type=positive_int, default=None, metavar="N",
                   help="worker processes of the local pool or of the Dask LocalCluster started without --scheduler "
                        "(default: the number of CPUs; with the local pool 1 runs in this process)")
    p.add_argument("--executor", choices=EXECUTORS, default=None,
                   help="local process pool (default) or dask: a cluster at --scheduler, or without it a "
                        "LocalCluster started for the sweep and closed at its end, when the points are worth "
                        f"~{LOCAL_CLUSTER_MIN_S_PER_WORKER:.0f} CPU-s per worker (else the local pool, with a note)")
    p.add_argument("--scheduler", metavar="ADDR", default=None,
                   help="dask: the scheduler of a running cluster, e.g. tcp://host:8786")
    p.add_argument("--out", metavar="DIR | FILE.png", default=None,
                   help="sweep: output folder (default results/NAME); pareto: write the plot here")
    p.add_argument("--retry-failed", action="store_true", help="sweep: evaluate failed points again")
    p.add_argument("--limit", type=positive_int, default=None, metavar="N",
                   help="sweep: evaluate at most N of the missing points, then write the table (rerun for the rest)")
    p.add_argument("--x", metavar="METRIC", default=None, help="pareto: the metric on the x axis")
    p.add_argument("--y", metavar="METRIC", default=None, help="pareto: the metric on the y axis")
    p.add_argument("--maximize", choices=("x", "y"), action="append", default=None,
                   help="pareto: maximise this axis' metric instead of minimising it (repeatable)")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.target == PARETO:
        _refuse(args, ("jobs", "executor", "scheduler", "limit"), "hwsim sweep FILE")
        if args.retry_failed:
            raise SweepError("--retry-failed belongs to hwsim sweep FILE, not hwsim sweep pareto")
        return run_pareto(args)
    if args.results is not None:
        raise SweepError(f"{args.results}: hwsim sweep FILE takes one file; for a front write hwsim sweep pareto "
                         f"{args.results} --x energy --y latency")
    _refuse(args, ("x", "y", "maximize"), "hwsim sweep pareto")
    return run_sweep(args)


def _refuse(args: argparse.Namespace, options: tuple[str, ...], owner: str) -> None:
    for name in options:
        if getattr(args, name) is not None:
            raise SweepError(f"--{name} belongs to {owner}; remove it")


# ----- running a sweep -------------------------------------------------------------------------------


def _pending(sweep: Sweep, done: dict[str, dict[str, object]], retry_failed: bool) -> list[Point]:
    """Points without a row in the log (and failed ones too when retrying)."""
    return [p for p in sweep.points
            if p.point_id not in done or (retry_failed and done[p.point_id].get("status") != OK)]


def _check_executor(args: argparse.Namespace) -> None:
    """--scheduler belongs to --executor dask (checked before anything is written)."""
    if args.scheduler and args.jobs:
        raise SweepError("--jobs sizes the local pool or the LocalCluster started without --scheduler; the cluster "
                         f"at {args.scheduler} has its own workers: remove --jobs")
    if args.executor != "dask" and args.scheduler:
        raise SweepError("--scheduler is for --executor dask; add --executor dask or remove it")


def _where(choice: Choice) -> str:
    """Where the points ran, for the summary."""
    if choice.scheduler is not None:
        return f"the Dask cluster at {choice.scheduler}"
    if choice.kind == LOCAL_CLUSTER:
        return f"a Dask LocalCluster of {choice.workers} workers"
    return f"a local pool of {choice.workers} processes" if (choice.workers or 1) > 1 else "this process"


def run_sweep(args: argparse.Namespace) -> int:
    _check_executor(args)
    sweep = load_sweep(args.target)
    out = Path(args.out) if args.out else DEFAULT_OUT / sweep.name
    fmt = table_format(sweep.outputs.table, sweep.path)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SweepError(f"{out}: cannot create the output folder ({exc.strerror}); give a writable --out") from None
    with OutputLock(out, SweepError):  # two sweeps appending to one points.jsonl would interleave their rows
        return _sweep_into(args, sweep, out, fmt)


def _sweep_into(args: argparse.Namespace, sweep: Sweep, out: Path, fmt: str) -> int:
    """Run the sweep's pending points into the folder `out` (this run holds its lock), then write its table."""
    trace_dir = None
    if sweep.mode == "simulate" and sweep.outputs.traces:
        trace_dir = str((out / "traces").resolve())
        Path(trace_dir).mkdir(exist_ok=True)
    done = read_log(out / LOG_NAME)
    pending = _pending(sweep, done, args.retry_failed)
    todo = pending[: args.limit] if args.limit else pending
    quiet = args.json or not console().is_terminal
    if not quiet:
        console().print(f"{sweep.name}: {len(sweep.points)} points, {len(sweep.points) - len(pending)} done, "
                        f"{len(pending)} to run" + (f" ({len(todo)} now)" if len(todo) < len(pending) else ""))
    evaluated: list[str] = []
    choice = choose_executor(todo, args.executor or "local", args.scheduler, args.jobs)
    if todo:
        print_notices((), (choice.note,) if choice.note else (), args.json)
        rows = run_rows(todo, functools.partial(evaluate, trace_dir=trace_dir), choice)
        with closing(rows), PointLog(out / LOG_NAME) as log, Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TimeRemainingColumn(), console=console(), transient=True, disable=quiet) as bar:
            task = bar.add_task(f"sweep {sweep.name}", total=len(todo))
            for row in rows:
                log.append(row)
                done[str(row["point_id"])] = row
                evaluated.append(str(row["point_id"]))
                bar.update(task, advance=1)
    table_rows = [done[p.point_id] for p in sweep.points if p.point_id in done]
    path = write_table(table_rows, table_columns(sweep.axis_keys), out, fmt)
    failed = [r for r in table_rows if r.get("status") == ERROR]
    summary = {"sweep": sweep.name, "file": sweep.path, "mode": sweep.mode, "out": str(out), "table": str(path),
               "points": len(sweep.points), "done_before": len(sweep.points) - len(pending),
               "to_run": len(pending), "evaluated": evaluated, "remaining": len(pending) - len(evaluated),
               "executor": choice.kind, "workers": choice.workers, "where": _where(choice),
               "notes": [choice.note] if choice.note else [],
               "ok": len(table_rows) - len(failed), "failed": len(failed),
               "failed_points": [{"point_id": r["point_id"], "error": r.get("error")} for r in failed]}
    if args.json:
        emit_json(summary)
    else:
        _print_summary(summary)
    return 1 if failed else 0


def _print_summary(s: dict[str, Any]) -> None:
    out = console()
    if s["failed_points"]:
        t = table(f"failed points ({s['failed']}; the first {min(SHOWN_ERRORS, s['failed'])})",
                  [("point", "left"), ("error", "left")])
        for f in s["failed_points"][:SHOWN_ERRORS]:
            t.add_row(f["point_id"], str(f["error"]))
        out.print(t)
    rest = f"; {s['remaining']} still to run (rerun to finish)" if s["remaining"] else ""
    on = f" on {s['where']}" if s["evaluated"] else ""
    out.print(f"{s['sweep']}: {s['points']} points, {len(s['evaluated'])} evaluated now{on}, {s['ok']} ok, "
              f"{s['failed']} failed{rest}; table {s['table']}")


# ----- pareto ------------------------------------------------------------------------------------------


def run_pareto(args: argparse.Namespace) -> int:
    if args.results is None or args.x is None or args.y is None:
        raise SweepError("hwsim sweep pareto needs RESULTS, --x and --y, e.g. hwsim sweep pareto results/NAME "
                         "--x energy --y latency")
    path = results_path(args.results)
    rows = [r for r in read_table(path) if r.get("status") == OK]
    x, y = column(args.x), column(args.y)
    for name, key in ((args.x, x), (args.y, y)):
        if rows and not any(value(r, key) is not None for r in rows):
            numeric = sorted(k for k in rows[0] if value(rows[0], k) is not None)
            raise SweepError(f"{path}: {name}: not a number column of the table; use one of {', '.join(numeric)} "
                             "(or energy, latency, dram)")
    maximize = set(args.maximize or ())
    front = pareto_front(rows, x, y, "x" in maximize, "y" in maximize)
    if args.out:
        title = f"{path.parent.name}: Pareto front of {x} against {y}"
        plot_front(rows, front, x, y, title, lambda fig: write_atomically(
            args.out, lambda tmp: fig.savefig(tmp, dpi=120, format=Path(args.out).suffix.lstrip(".") or "png")))
    params = [k for k in (rows[0] if rows else {}) if is_axis_column(k)]
    if args.json:
        emit_json({"table": str(path), "x": x, "y": y, "maximize": sorted(maximize), "points": len(rows),
                   "front": [rows[i] for i in front], "plot": args.out})
        return 0
    t = table(f"{path}: {len(front)} of {len(rows)} points on the Pareto front of {x} and {y}",
              [("point", "left"), ("network", "left"), *[(k, "right") for k in params], (x, "right"), (y, "right")])
    for i in front:
        r = rows[i]
        t.add_row(str(r["point_id"]), str(r.get("network")), *[str(r.get(k)) for k in params],
                  f"{value(r, x):.6g}", f"{value(r, y):.6g}")
    console().print(t)
    if args.out:
        console().print(f"plot {args.out}")
    return 0


__all__ = ["add_parser"]
