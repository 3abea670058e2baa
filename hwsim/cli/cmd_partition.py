"""`hwsim partition NETWORK --hw CONFIG --rate 60Mbps --ptx 0.5W`: NeuPart's client/cloud split."""

from __future__ import annotations

import argparse
import math
import re
from typing import Any

from hwsim.analytic.graph_adapter import DEFAULT_MAX_BATCH, SparsityModel
from hwsim.analytic.neupart import (
    CutCost,
    OptimumChange,
    PartitionModel,
    PartitionResult,
    SweepPoint,
)
from hwsim.cli.args import add_network_arguments, fraction_arg, positive_int
from hwsim.cli.commands import COMMAND_HELP
from hwsim.cli.output import console, emit_json, format_count, table
from hwsim.flows.inputs import AUTO, SPARSITY_CHOICES, choose_sparsity
from hwsim.flows.partition import Partition, partition_network
from hwsim.hardware import load_config
from hwsim.sparsity.names import DEFAULT_RELU_SPARSITY
from hwsim.workload.ir import Graph
from hwsim.workload.network import load_network

RATE_UNITS_BPS = {"bps": 1.0, "kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9,
                  "bit/s": 1.0, "kbit/s": 1e3, "Mbit/s": 1e6, "Gbit/s": 1e9}
POWER_UNITS_W = {"W": 1.0, "mW": 1e-3}
_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z/]*)\s*$")

MAX_SWEEP_POINTS = 200
SWEEP_UNIT_BPS = 1e6  # bare numbers in --sweep-rate are Mbps


# ----- argument parsing -------------------------------------------------------------------------


def _quantity(text: str, units: dict[str, float], case_sensitive: bool, default_unit: str | None,
              what: str, example: str) -> float:
    """A positive finite "number unit" in base units; ArgumentTypeError naming the example otherwise."""
    match = _QUANTITY.match(text)
    lookup = units if case_sensitive else {name.lower(): factor for name, factor in units.items()}
    unit = (match.group(2) if match else "") or (default_unit or "")
    factor = lookup.get(unit if case_sensitive else unit.lower())
    if match is None or factor is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a {what}; write it as e.g. {example!r} "
                                         f"(units: {', '.join(units)})")
    value = float(match.group(1)) * factor
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r}: the {what} must be positive")
    return value


def rate_arg(text: str) -> float:
    """argparse type for --rate: '60Mbps', '1Gbps', '500 kbit/s' in bit/s."""
    return _quantity(text, RATE_UNITS_BPS, False, None, "bit rate", "60Mbps")


def power_arg(text: str) -> float:
    """argparse type for --ptx: '0.5W', '500mW' in W."""
    return _quantity(text, POWER_UNITS_W, True, None, "transmission power", "0.5W")


def _sweep_step(low_bps: float, high_bps: float) -> float:
    """The smallest 1-2-5 step (in Mbps) that keeps the sweep within MAX_SWEEP_POINTS rates."""
    span = (high_bps - low_bps) / SWEEP_UNIT_BPS
    exponent = math.floor(math.log10(span / MAX_SWEEP_POINTS)) if span > 0 else 0
    for power in (exponent, exponent + 1):
        for mantissa in (1, 2, 5):
            step = mantissa * 10.0**power
            if span / step <= MAX_SWEEP_POINTS:
                return step * SWEEP_UNIT_BPS
    return span * SWEEP_UNIT_BPS / MAX_SWEEP_POINTS  # unreachable: 10^(e+1) always fits


def sweep_arg(text: str) -> list[float]:
    """argparse type for --sweep-rate A:B[:STEP] (Mbps unless a unit is given): the rates in bit/s."""
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise argparse.ArgumentTypeError(f"{text!r}: give the sweep as LOW:HIGH or LOW:HIGH:STEP, e.g. 1:200 (Mbps)")
    low, high = (_quantity(p, RATE_UNITS_BPS, False, "Mbps", "bit rate", "1:200") for p in parts[:2])
    if high <= low:
        raise argparse.ArgumentTypeError(f"{text!r}: the sweep's upper rate must exceed its lower one")
    step = (_quantity(parts[2], RATE_UNITS_BPS, False, "Mbps", "rate step", "1:200:5") if len(parts) == 3
            else _sweep_step(low, high))
    count = math.floor((high - low) / step * (1 + 1e-12))
    if count + 1 > 10 * MAX_SWEEP_POINTS:
        raise argparse.ArgumentTypeError(f"{text!r}: {count + 1} rates; use a step that gives at most "
                                         f"{10 * MAX_SWEEP_POINTS}")
    rates = [low + k * step for k in range(count + 1)]
    return rates if math.isclose(rates[-1], high) else [*rates, high]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("partition", help=COMMAND_HELP["partition"])
    add_network_arguments(p)
    p.add_argument("--hw", required=True, metavar="CONFIG",
                   help="the client's accelerator: a config path or a shipped name (e.g. eyeriss-v1)")
    p.add_argument("--rate", type=rate_arg, required=True, metavar="RATE",
                   help="effective uplink bit rate, e.g. 60Mbps, 1Gbps")
    p.add_argument("--ptx", type=power_arg, required=True, metavar="POWER",
                   help="transmission power, e.g. 0.5W, 500mW")
    p.add_argument("--input-sparsity", type=fraction_arg, default=0.0, metavar="S",
                   help="zeros in the image as sent (the paper's SparsityIn of the JPEG-coded image); "
                        "0 sends raw 8-bit pixels (default)")
    p.add_argument("--sparsity", choices=SPARSITY_CHOICES, default=AUTO,
                   help="activation sparsity: measured AlexNet values when they fit the network (auto, "
                        "default), or ReLU defaults")
    p.add_argument("--relu-sparsity", type=fraction_arg, default=DEFAULT_RELU_SPARSITY, metavar="F",
                   help=f"zeros after a ReLU where nothing was measured (default {DEFAULT_RELU_SPARSITY})")
    p.add_argument("--max-batch", type=positive_int, default=DEFAULT_MAX_BATCH, metavar="N",
                   help=f"cap on CNNergy's batch per layer (default {DEFAULT_MAX_BATCH}, the reference's)")
    p.add_argument("--sweep-rate", type=sweep_arg, default=None, metavar="LOW:HIGH[:STEP]",
                   help="also find the optimum over a range of rates in Mbps, e.g. 1:200")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    p.set_defaults(run=run)


# ----- JSON -------------------------------------------------------------------------------------


def cost_record(cost: CutCost) -> dict[str, Any]:
    """One priced cut as plain data, SI units in the key names."""
    cut = cost.cut
    return {"after": cut.after, "position": cut.position, "side": cut.side, "elements": cut.elements,
            "raw_bits": cut.raw_bits, "sparsity": cut.sparsity, "tx_bits": cut.tx_bits, "encoding": cut.encoding,
            "client_energy_j": cut.client_energy_j, "tx_energy_j": cost.tx_energy_j,
            "total_energy_j": cost.total_energy_j, "client_latency_s": cut.client_latency_s,
            "cloud_latency_s": cut.cloud_latency_s, "delay_s": cost.delay_s}


def sweep_record(points: tuple[SweepPoint, ...], changes: tuple[OptimumChange, ...], ptx_w: float) -> dict[str, Any]:
    """The rate sweep: the optimum at every rate and where it moves."""
    return {"ptx_w": ptx_w,
            "points": [{"rate_bps": p.rate_bps, "optimum": p.optimum, "side": p.side,
                        "total_energy_j": p.total_energy_j, "savings_vs_fully_cloud_pct": p.savings_vs_cloud_pct,
                        "savings_vs_fully_client_pct": p.savings_vs_client_pct} for p in points],
            "changes": [{"below_bps": c.below_bps, "above_bps": c.above_bps, "from": c.before, "to": c.after,
                         "crossover_bps": c.crossover_bps} for c in changes]}


def document(graph: Graph, p: Partition, ptx_w: float, swept: bool, warnings: tuple[str, ...]) -> dict[str, Any]:
    """Everything `partition` reports, as one JSON-ready document."""
    model, sparsity, result = p.model, p.sparsity, p.result
    return {
        "network": graph.name,
        "source": graph.source,
        "hardware": model.hardware,
        "word_bits": model.word_bits,
        "sparsity": {"model": sparsity.name, "relu_sparsity": sparsity.relu_sparsity, "source": sparsity.source},
        "input_sparsity": model.input_sparsity,
        "link": {"rate_bps": result.link.rate_bps, "ptx_w": result.link.ptx_w},
        "warnings": list(warnings),
        "optimum": cost_record(result.optimum),
        "savings_pct": {"vs_fully_cloud": result.savings_vs_cloud_pct,
                        "vs_fully_client": result.savings_vs_client_pct},
        "cuts": [cost_record(c) for c in result.costs],
        "layers": [{"name": l.name, "kind": l.kind, "macs": l.macs, "batch": l.batch,
                    "client_energy_j": l.client_energy_j, "client_latency_s": l.client_latency_s,
                    "cloud_latency_s": l.cloud_latency_s} for l in model.layers],
        "sweep": sweep_record(p.sweep, p.changes, ptx_w) if swept else None,
    }


# ----- tables -----------------------------------------------------------------------------------


def _mbps(rate_bps: float) -> str:
    return f"{rate_bps / 1e6:.4g} Mbps"


def _print_cuts(model: PartitionModel, sparsity: SparsityModel, result: PartitionResult) -> None:
    """The cut table, optimum highlighted, then the savings line."""
    out = console()
    link = result.link
    t = table(f"{model.network} on {model.hardware} ({model.word_bits}-bit), {_mbps(link.rate_bps)}, "
              f"P_tx {link.ptx_w:g} W, sparsity: {sparsity.name}",
              [("#", "right"), ("cut after", "left"), ("side", "left"), ("zeros", "right"), ("tx bits", "right"),
               ("client mJ", "right"), ("tx mJ", "right"), ("total mJ", "right"), ("delay ms", "right")])
    for index, cost in enumerate(result.costs):
        cut = cost.cut
        is_best = index == result.best_index
        t.add_row(str(index), cut.after + ("  <- optimum" if is_best else ""), cut.side, f"{cut.sparsity:.3f}",
                  format_count(cut.tx_bits) + ("" if cut.encoding != "raw" else " raw"),
                  f"{cut.client_energy_j * 1e3:.3f}", f"{cost.tx_energy_j * 1e3:.3f}",
                  f"{cost.total_energy_j * 1e3:.3f}", f"{cost.delay_s * 1e3:.2f}",
                  style="bold green" if is_best else None)
    out.print(t)
    best, cloud, client = result.optimum, result.fully_cloud, result.fully_client
    out.print(f"optimum: cut after {best.cut.after}, {best.total_energy_j * 1e3:.3f} mJ on the client: "
              f"{result.savings_vs_cloud_pct:.1f} % less than fully cloud ({cloud.total_energy_j * 1e3:.3f} mJ), "
              f"{result.savings_vs_client_pct:.1f} % less than fully on the client "
              f"({client.total_energy_j * 1e3:.3f} mJ); delay {best.delay_s * 1e3:.2f} ms "
              f"(fully cloud {cloud.delay_s * 1e3:.2f} ms, fully client {client.delay_s * 1e3:.2f} ms)")


def _segments(points: tuple[SweepPoint, ...]) -> list[tuple[float, float, SweepPoint, SweepPoint]]:
    """Runs of consecutive sweep rates with the same optimum: (first rate, last rate, first, last point)."""
    runs: list[tuple[float, float, SweepPoint, SweepPoint]] = []
    for point in points:
        if runs and runs[-1][2].optimum == point.optimum:
            first = runs[-1]
            runs[-1] = (first[0], point.rate_bps, first[2], point)
        else:
            runs.append((point.rate_bps, point.rate_bps, point, point))
    return runs


def _print_sweep(points: tuple[SweepPoint, ...], changes: tuple[OptimumChange, ...], ptx_w: float) -> None:
    """Which cut is optimal over which rates, and the exact rates where it moves."""
    out = console()
    t = table(f"optimum over the rate sweep, P_tx {ptx_w:g} W",
              [("rates", "left"), ("optimal cut", "left"), ("side", "left"), ("savings vs cloud %", "right"),
               ("savings vs client %", "right")])
    for low, high, first, last in _segments(points):
        t.add_row(f"{_mbps(low)} - {_mbps(high)}", first.optimum, first.side,
                  f"{first.savings_vs_cloud_pct:.1f} - {last.savings_vs_cloud_pct:.1f}",
                  f"{first.savings_vs_client_pct:.1f} - {last.savings_vs_client_pct:.1f}")
    out.print(t)
    for change in changes:
        where = (f"at {_mbps(change.crossover_bps)}" if change.crossover_bps is not None
                 else f"between {_mbps(change.below_bps)} and {_mbps(change.above_bps)}")
        out.print(f"the optimum moves from {change.before} to {change.after} {where}")


# ----- run --------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    loaded = load_network(args.network, args.input, args.allow_unknown)
    graph = loaded.graph
    sparsity = choose_sparsity(args.sparsity, args.relu_sparsity, graph)
    p = partition_network(graph, load_config(args.hw), args.rate, args.ptx, sparsity, args.input_sparsity,
                          args.max_batch, args.sweep_rate or ())
    if args.json:
        emit_json(document(graph, p, args.ptx, bool(args.sweep_rate), loaded.warnings))
        return 0
    for warning in loaded.warnings:
        console().print(f"[yellow]warning:[/] {warning}")
    _print_cuts(p.model, p.sparsity, p.result)
    if args.sweep_rate:
        _print_sweep(p.sweep, p.changes, args.ptx)
    return 0
