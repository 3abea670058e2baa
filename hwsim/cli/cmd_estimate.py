"""`hwsim estimate`: energy, access counts and latency bounds in a second, from closed-form models.

Two models: `rs` (default) prices the integer-tiled counts of the
row-stationary schedule the simulator runs; `cnnergy` is the faithful
CNNergy model (fractional passes, RLC-compressed DRAM traffic), on a network
or on a CNNergy layer table (`--layers FILE.csv`). `--sweep glb.size=A..B`
repeats the estimate over GLB sizes with the config's energy-size law.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, fields, replace
from typing import Any

from hwsim.analytic.cnnergy import (
    ZERO_ENERGY,
    CnnergyEnergy,
    CnnergyNetworkResult,
    cnnergy_network,
    read_layer_table,
)
from hwsim.analytic.estimate import NetworkEstimate, estimate_network, layer_record
from hwsim.analytic.graph_adapter import DEFAULT_RELU_SPARSITY, SPARSITY_PRESETS, SparsityModel, adapt_graph
from hwsim.cli.cmd_info import add_network_arguments
from hwsim.cli.cmd_partition import AUTO, RELU, batch_arg, choose_sparsity, fraction_arg
from hwsim.cli.output import console, emit_json, format_count, table
from hwsim.errors import ConfigError, HwsimError, NetworkError
from hwsim.hardware import load_config
from hwsim.hardware.energy import COMPONENTS, with_glb_data_size
from hwsim.hardware.schema import Accelerator
from hwsim.hardware.units import BYTES, format_bytes as fmt_bytes, parse_quantity
from hwsim.vocab import LEVEL_NAMES, OPERAND_NAMES
from hwsim.workload.ir import Graph
from hwsim.workload.network import load_network

NONE = "none"
SWEEP_KEYS = ("glb.size",)
MAX_SWEEP_POINTS = 64
NEAR_OPTIMUM = 0.02  # sizes within 2 % of the minimum energy are marked
SIZE_QUANTUM_BYTES = 8


# ----- arguments ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sweep:
    """A parameter and the values (bytes) it takes."""

    key: str
    values_bytes: tuple[int, ...]


def sweep_arg(text: str) -> Sweep:
    """argparse type for --sweep glb.size=8KB..512KB[:N]: doubling steps, or N geometric points."""
    key, sep, spec = text.partition("=")
    if not sep or key.strip() not in SWEEP_KEYS:
        raise argparse.ArgumentTypeError(f"{text!r}: write the sweep as KEY=LOW..HIGH[:POINTS] with KEY one of "
                                         f"{', '.join(SWEEP_KEYS)}, e.g. glb.size=8KB..512KB")
    bounds, _, points = spec.partition(":")
    low_text, dots, high_text = bounds.partition("..")
    try:
        low, high = (int(parse_quantity(v.strip(), BYTES, None, "--sweep")) for v in (low_text, high_text))
    except HwsimError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not dots or not 0 < low < high:
        raise argparse.ArgumentTypeError(f"{text!r}: give LOW..HIGH with 0 < LOW < HIGH, e.g. glb.size=8KB..512KB")
    if points:
        if not points.isdigit() or not 2 <= int(points) <= MAX_SWEEP_POINTS:
            raise argparse.ArgumentTypeError(f"{text!r}: POINTS must be an integer from 2 to {MAX_SWEEP_POINTS}")
        n = int(points)
        # whole 8-byte lines, so every size is a whole number of words at any precision
        values = [SIZE_QUANTUM_BYTES * round(low * (high / low) ** (k / (n - 1)) / SIZE_QUANTUM_BYTES)
                  for k in range(n)]
    else:
        values = [low * 2**k for k in range(int(math.log2(high / low) + 1e-9) + 1)]
        if values[-1] != high:
            values.append(high)
    return Sweep(key.strip(), tuple(sorted(set(values))))


def positive_float(text: str, option: str, example: str) -> float:
    """A positive finite number for `option`."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{option} takes a positive number, e.g. {example}; got {text!r}")
    return value


def _watts(text: str) -> float:
    return positive_float(text, "--clock-power", "0.1063")


def _gmacs(text: str) -> float:
    return positive_float(text, "--throughput-gmacs", "23.1")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("estimate", help="closed-form energy, access counts and latency bounds per layer")
    add_network_arguments(p, required=False)
    p.add_argument("--hw", required=True, metavar="CONFIG",
                   help="accelerator config: a path or a shipped name (e.g. eyeriss-v1)")
    p.add_argument("--model", choices=("rs", "cnnergy"), default="rs",
                   help="rs: integer-tiled counts of the row-stationary schedule (default); "
                        "cnnergy: the faithful CNNergy model")
    p.add_argument("--layers", metavar="FILE.csv", default=None,
                   help="cnnergy only: a CNNergy layer table (name,R,M,H,C,U,E,sp_if,sp_of,n) instead of a network")
    p.add_argument("--batch", type=batch_arg, default=1, metavar="N", help="rs: images per run (default 1)")
    p.add_argument("--sparsity", choices=(NONE, AUTO, RELU, *SPARSITY_PRESETS), default=None,
                   help="activation zeros used for zero gating and compression: none (rs default: dense), "
                        "auto (cnnergy default: measured AlexNet values when they fit), relu, or a preset")
    p.add_argument("--relu-sparsity", type=fraction_arg, default=DEFAULT_RELU_SPARSITY, metavar="F",
                   help=f"zeros after a ReLU where nothing was measured (default {DEFAULT_RELU_SPARSITY})")
    p.add_argument("--clock-power", type=_watts, default=None, metavar="W",
                   help="clock power in W at the reference throughput (default: the config's control.clock_power)")
    p.add_argument("--throughput-gmacs", type=_gmacs, default=None, metavar="X",
                   help="reference throughput in GMAC/s of the clock power (default: the config's)")
    p.add_argument("--sweep", type=sweep_arg, default=None, metavar="glb.size=LOW..HIGH[:N]",
                   help="repeat over GLB sizes (ifmap+psum capacity; energy per access follows the config's "
                        "size law), e.g. glb.size=8KB..512KB")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    p.set_defaults(run=run)


# ----- the two models -------------------------------------------------------------------------------


def _with_control(hw: Accelerator, clock_power_w: float | None, throughput_gmacs: float | None) -> Accelerator:
    control = hw.control
    if clock_power_w is not None:
        control = replace(control, clock_power_w=clock_power_w)
    if throughput_gmacs is not None:
        control = replace(control, reference_throughput_gmacs=throughput_gmacs)
    return replace(hw, control=control)


def _ifmap_zeros(graph: Graph, sparsity: SparsityModel | None) -> dict[str, float]:
    """Each layer's ifmap zero fraction under `sparsity` (empty: dense)."""
    if sparsity is None:
        return {}
    zeros = sparsity.tensor_sparsities(graph)
    return {layer.name: sparsity.layer_sparsity(layer, zeros)[0] for layer in graph if layer.inputs}


@dataclass(frozen=True)
class CnnergyRun:
    """The faithful model's result with each result's multiplicity (depthwise groups, non-square maps)."""

    result: CnnergyNetworkResult
    copies: tuple[float, ...]
    names: tuple[str, ...]

    def total(self) -> CnnergyEnergy:
        return sum((_scaled(r.energy, c) for r, c in zip(self.result.layers, self.copies)), ZERO_ENERGY)


def _scaled(e: CnnergyEnergy, k: float) -> CnnergyEnergy:
    return replace(e, **{f.name: getattr(e, f.name) * k for f in fields(e) if f.name.endswith("_pj")})


def run_cnnergy(args: argparse.Namespace, graph: Graph | None, hw: Accelerator) -> CnnergyRun:
    """Faithful CNNergy on a layer table or on the graph's weighted layers."""
    if args.layers:
        layers = read_layer_table(args.layers)
        result = cnnergy_network(layers, hw, args.clock_power, args.throughput_gmacs)
        return CnnergyRun(result, tuple(1.0 for _ in layers), tuple(l.name for l in layers))
    assert graph is not None
    sparsity = choose_sparsity(args.sparsity or AUTO, args.relu_sparsity, graph) if args.sparsity != NONE \
        else SparsityModel(relu_sparsity=0.0)
    adapted = [a for a in adapt_graph(graph, sparsity, hw) if a is not None]
    if not adapted:
        raise NetworkError(f"{graph.name}: no conv or fully connected layer for CNNergy to price")
    result = cnnergy_network([a.layer for a in adapted], hw, args.clock_power, args.throughput_gmacs)
    return CnnergyRun(result, tuple(a.copies for a in adapted), tuple(a.layer.name for a in adapted))


def run_rs(args: argparse.Namespace, graph: Graph, hw: Accelerator) -> NetworkEstimate:
    sparsity = None if args.sparsity in (None, NONE) else choose_sparsity(args.sparsity, args.relu_sparsity, graph)
    return estimate_network(graph, _with_control(hw, args.clock_power, args.throughput_gmacs), args.batch,
                            _ifmap_zeros(graph, sparsity))


# ----- output -----------------------------------------------------------------------------------------


def _uj(pj: float) -> str:
    return f"{pj / 1e6:.2f}"


def _mapping_text(m: dict[str, Any]) -> str:
    if m["mapping"] != "row_stationary":
        return m["mapping"]
    return f"chP {m['chP']} fP {m['fP']} n {m['n']} {m['y_oc']}x{m['x_oc']}"


def print_rs(e: NetworkEstimate, hw: Accelerator) -> None:
    out = console()
    t = table(f"{e.network} on {e.hardware}, batch {e.batch}: integer-tiled row-stationary estimate (energy in µJ)",
              [("layer", "left"), ("mapping", "left"), ("MACs", "right"), ("util", "right"), ("cycles", "right"),
               ("bound by", "left"), ("MAC", "right"), ("RF", "right"), ("NoC/PE", "right"), ("GLB", "right"),
               ("DRAM", "right"), ("ctrl", "right"), ("total", "right"), ("DRAM bytes", "right")])
    for l in e.layers:
        en = l.energy_pj
        t.add_row(l.layer.name, _mapping_text(l.mapping), format_count(l.counts.macs + l.counts.ops),
                  f"{l.latency.utilization:.0%}", format_count(l.latency.bound_cycles), l.latency.bottleneck,
                  _uj(en["mac"]), _uj(en["rf"]), _uj(en["inter_pe"]), _uj(en["glb"] + en["l2"] + en["line_buffer"]),
                  _uj(en["dram"]), _uj(en["clock"] + en["control"]), _uj(l.total_pj),
                  fmt_bytes(int(l.counts.transfers[0].sum()) * hw.word_bytes))
    out.print(t)
    by_level = sum(l.level_operand_pj for l in e.layers)
    words = sum(l.counts.accesses for l in e.layers)
    t2 = table("energy (µJ) and accesses (words: reads / fills / updates) by level and operand, all layers",
               [("level", "left"), *[(name, "right") for name in OPERAND_NAMES]])
    for lv, name in enumerate(LEVEL_NAMES):
        if words[lv].any():
            t2.add_row(name, *[f"{by_level[lv, op] / 1e6:.2f}  ({format_count(words[lv, op, 0])} / "
                               f"{format_count(words[lv, op, 1])} / {format_count(words[lv, op, 2])})"
                               for op in range(len(OPERAND_NAMES))])
    out.print(t2)
    macs = sum(l.counts.macs for l in e.layers)
    seconds = e.cycles / e.clock_hz
    out.print(f"total {e.total_pj() / 1e9:.4g} mJ for {e.batch} image(s) ({e.total_pj() / 1e9 / e.batch:.4g} mJ "
              f"per image; DRAM {e.total_pj('dram') / 1e9:.4g} mJ), {format_count(macs)} MACs, latency bound "
              f"{format_count(e.cycles)} cycles = {seconds * 1e3:.3f} ms, "
              f"utilization {macs / max(1, e.cycles * hw.pe_array.pes * hw.pe_array.macs_per_cycle):.0%}")


def rs_document(e: NetworkEstimate, hw: Accelerator) -> dict[str, Any]:
    return {"model": "rs", "network": e.network, "hardware": e.hardware, "batch": e.batch,
            "word_bits": hw.precision_bits, "clock_hz": e.clock_hz,
            "layers": [layer_record(l, hw) for l in e.layers],
            "totals": {"energy_pj": {c: e.total_pj(c) for c in COMPONENTS}, "total_energy_pj": e.total_pj(),
                       "macs": sum(l.counts.macs for l in e.layers), "latency_bound_cycles": e.cycles,
                       "dram_bytes": sum(int(l.counts.transfers[0].sum()) for l in e.layers) * hw.word_bytes}}


def _cnnergy_parts(e: CnnergyEnergy) -> dict[str, float]:
    return {"mac": e.mac_pj, "rf": e.rf_pj, "inter_pe": e.inter_pe_pj, "glb": e.glb_pj, "dram": e.dram_pj,
            "clock": e.clock_pj, "control": e.other_control_pj, "total": e.total_pj}


def print_cnnergy(run_: CnnergyRun, title: str) -> None:
    t = table(f"{title}: faithful CNNergy, energy per image in mJ",
              [("layer", "left"), ("n", "right"), ("chP", "right"), ("fP", "right"), *[(h, "right") for h in (
                  "MAC", "RF", "inter-PE", "GLB", "DRAM", "clock", "control", "total")]])
    for name, r, k in zip(run_.names, run_.result.layers, run_.copies):
        parts = _cnnergy_parts(_scaled(r.energy, k))
        t.add_row(name + (f" x{k:g}" if k != 1 else ""), str(r.layer.n), f"{r.mapping.ch_pass:g}", f"{r.mapping.f_pass:g}",
                  *[f"{v / 1e9:.3f}" for v in parts.values()])
    parts = _cnnergy_parts(run_.total())
    t.add_row("total", "", "", "", *[f"{v / 1e9:.3f}" for v in parts.values()], style="bold")
    out = console()
    out.print(t)
    out.print(f"total {parts['total'] / 1e9:.3f} mJ per image, {(parts['total'] - parts['clock'] - parts['control']) / 1e9:.3f}"
              f" mJ without control")


def cnnergy_document(run_: CnnergyRun, title: str) -> dict[str, Any]:
    return {"model": "cnnergy", "source": title,
            "layers": [{"name": n, "copies": k, "batch": r.layer.n, "chP": r.mapping.ch_pass, "fP": r.mapping.f_pass,
                        "energy_per_image_pj": _cnnergy_parts(_scaled(r.energy, k))}
                       for n, r, k in zip(run_.names, run_.result.layers, run_.copies)],
            "totals": {"energy_per_image_pj": _cnnergy_parts(run_.total())}}


# ----- sweep ------------------------------------------------------------------------------------------


def _per_image_pj(args: argparse.Namespace, graph: Graph | None, hw: Accelerator) -> tuple[float, float, float]:
    """(total, DRAM, GLB) energy per image under the chosen model."""
    if args.model == "cnnergy":
        total = run_cnnergy(args, graph, hw).total()
        return total.total_pj, total.dram_pj, total.glb_pj
    assert graph is not None
    e = run_rs(args, graph, hw)
    return e.total_pj() / e.batch, e.total_pj("dram") / e.batch, e.total_pj("glb") / e.batch


def run_sweep(args: argparse.Namespace, graph: Graph | None, hw: Accelerator) -> int:
    rows = []
    for size in args.sweep.values_bytes:
        swept = with_glb_data_size(hw, size)
        try:
            rows.append((size, *_per_image_pj(args, graph, swept)))
        except HwsimError as exc:  # a GLB too small for some layer's smallest tile
            rows.append((size, math.nan, math.nan, math.nan, str(exc)))
    valid = [r for r in rows if not math.isnan(r[1])]
    if not valid:
        raise ConfigError(f"--sweep {args.sweep.key}: no size in the range can run the network; raise the sizes")
    best = min(valid, key=lambda r: r[1])
    if args.json:
        emit_json({"model": args.model, "network": graph.name if graph else args.layers, "hardware": hw.name,
                   "key": args.sweep.key, "law": f"E(S) = E·(S/{hw.glb.data_bytes} B)^{hw.glb.energy_size_exponent}",
                   "optimum_bytes": best[0],
                   "points": [{"bytes": r[0], "energy_per_image_pj": None if math.isnan(r[1]) else r[1],
                               "dram_pj": None if math.isnan(r[2]) else r[2],
                               "glb_pj": None if math.isnan(r[3]) else r[3],
                               "relative_to_optimum": None if math.isnan(r[1]) else r[1] / best[1],
                               "error": r[4] if len(r) > 4 else None} for r in rows]})
        return 0
    t = table(f"{graph.name if graph else args.layers} on {hw.name} ({args.model}): energy per image vs GLB "
              f"ifmap+psum size; access energy x (S/{fmt_bytes(hw.glb.data_bytes)})^{hw.glb.energy_size_exponent}",
              [("GLB size", "right"), ("GLB pJ/access", "right"), ("total mJ", "right"), ("vs min", "right"),
               ("DRAM mJ", "right"), ("GLB mJ", "right"), ("", "left")])
    for r in rows:
        swept = with_glb_data_size(hw, r[0])
        if math.isnan(r[1]):
            t.add_row(fmt_bytes(r[0]), f"{swept.glb.read_energy_pj:.3g}", "-", "-", "-", "-", "does not fit")
            continue
        mark = "<- minimum" if r is best else ("within 2 %" if r[1] <= best[1] * (1 + NEAR_OPTIMUM) else "")
        t.add_row(fmt_bytes(r[0]), f"{swept.glb.read_energy_pj:.3g}", f"{r[1] / 1e9:.4f}",
                  f"{r[1] / best[1] - 1:+.1%}", f"{r[2] / 1e9:.4f}", f"{r[3] / 1e9:.4f}", mark,
                  style="bold green" if r is best else None)
    console().print(t)
    console().print(f"minimum at {fmt_bytes(best[0])}: {best[1] / 1e9:.4f} mJ per image")
    return 0


# ----- run --------------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    if args.layers and args.model != "cnnergy":
        raise NetworkError(f"{args.layers}: a CNNergy layer table needs --model cnnergy")
    if args.layers and args.network:
        raise NetworkError(f"give either a network or --layers {args.layers}, not both")
    if not args.layers and not args.network:
        raise NetworkError("name a network (zoo name or .onnx file) or, with --model cnnergy, --layers FILE.csv")
    hw = load_config(args.hw)
    graph = None
    warnings: tuple[str, ...] = ()
    if args.network:
        loaded = load_network(args.network, args.input, args.allow_unknown)
        graph, warnings = loaded.graph, loaded.warnings
    if not args.json:
        for warning in warnings:
            console().print(f"[yellow]warning:[/] {warning}")
    if args.sweep:
        return run_sweep(args, graph, hw)
    if args.model == "cnnergy":
        title = f"{graph.name if graph else args.layers} on {hw.name}"
        result = run_cnnergy(args, graph, hw)
        if args.json:
            emit_json(cnnergy_document(result, title))
        else:
            print_cnnergy(result, title)
        return 0
    assert graph is not None
    e = run_rs(args, graph, hw)
    if args.json:
        emit_json({**rs_document(e, hw), "warnings": list(warnings)})
    else:
        print_rs(e, hw)
    return 0
