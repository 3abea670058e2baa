"""`hwsim estimate`: energy, access counts and latency bounds in a second, from closed-form models.

Two models: `rs` (default) prices the integer-tiled counts of the
row-stationary schedule the simulator runs; `cnnergy` is the faithful
CNNergy model (fractional passes, RLC-compressed DRAM traffic), on a network
or on a CNNergy layer table (`--layers FILE.csv`). `--sweep glb.size=A..B`
repeats the estimate over GLB sizes with the config's energy-size law.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from hwsim.analytic.estimate import NetworkEstimate, layer_record
from hwsim.cli.args import (
    add_bits_argument,
    add_mapping_argument,
    add_network_arguments,
    add_sparsity_arguments,
    batch_arg,
    positive_float,
    run_config,
    run_spec,
    sparsity_request,
    table_config,
)
from hwsim.cli.commands import COMMAND_HELP
from hwsim.cli.output import console, emit_json, format_count, print_notices, table
from hwsim.errors import HwsimError, NetworkError
from hwsim.flows.estimate import (
    CnnergyEstimate,
    EstimateSettings,
    GlbSizeSweep,
    LayerTable,
    MappingEstimate,
    cnnergy_sparsity,
    estimate_cnnergy,
    estimate_run,
    glb_sizes,
    sweep_glb_size,
)
from hwsim.flows.inputs import AUTO, NONE, SparsityLike
from hwsim.flows.precision import is_mixed
from hwsim.flows.run import RunSpec
from hwsim.hardware.schema import Accelerator
from hwsim.hardware.units import BYTES, parse_quantity
from hwsim.hardware.units import format_bytes as fmt_bytes
from hwsim.vocab import ACCESS_SHAPE, LEVEL_NAMES, OPERAND_NAMES
from hwsim.workload.ir import Graph
from hwsim.workload.network import load_network

if TYPE_CHECKING:
    from rich.table import Table

    from hwsim.analytic.cnnergy import CnnergyEnergy

SWEEP_KEYS = ("glb.size",)
MAX_SWEEP_POINTS = 64
NEAR_OPTIMUM = 0.02  # sizes within 2 % of the minimum energy are marked


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
    if points and (not points.isdigit() or not 2 <= int(points) <= MAX_SWEEP_POINTS):
        raise argparse.ArgumentTypeError(f"{text!r}: POINTS must be an integer from 2 to {MAX_SWEEP_POINTS}")
    return Sweep(key.strip(), glb_sizes(low, high, int(points) if points else None))


def _watts(text: str) -> float:
    return positive_float(text, "--clock-power", "0.1063")


def _gmacs(text: str) -> float:
    return positive_float(text, "--throughput-gmacs", "23.1")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("estimate", help=COMMAND_HELP["estimate"])
    add_network_arguments(p, required=False)
    p.add_argument("--hw", required=True, metavar="CONFIG",
                   help="accelerator config: a path or a shipped name (e.g. eyeriss-v1)")
    p.add_argument("--model", choices=("mapping", "cnnergy"), default="mapping",
                   help="mapping: closed-form counts of the mapping the simulator runs (default: hwsim's, or "
                        "--mapping FILE); cnnergy: the faithful CNNergy model")
    p.add_argument("--layers", metavar="FILE.csv", default=None,
                   help="cnnergy only: a CNNergy layer table (name,R,M,H,C,U,E,sp_if,sp_of,n) instead of a network")
    p.add_argument("--batch", type=batch_arg, default=None, metavar="N",
                   help="mapping: images per run (default: the batch an ONNX file declares, else 1)")
    add_mapping_argument(p)
    add_bits_argument(p)
    add_sparsity_arguments(p, "none for the mapping model; auto for cnnergy: measured AlexNet values when they fit")
    p.add_argument("--clock-power", type=_watts, default=None, metavar="W",
                   help="clock power in W at the reference throughput (default: the config's control.clock_power)")
    p.add_argument("--throughput-gmacs", type=_gmacs, default=None, metavar="X",
                   help="reference throughput in GMAC/s of the clock power (default: the config's)")
    p.add_argument("--sweep", type=sweep_arg, default=None, metavar="glb.size=LOW..HIGH[:N]",
                   help="repeat over GLB sizes (ifmap+psum capacity; energy per access follows the config's "
                        "size law), e.g. glb.size=8KB..512KB")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    p.set_defaults(run=run)


# ----- output -----------------------------------------------------------------------------------------


def _uj(pj: float) -> str:
    return f"{pj / 1e6:.2f}"


def print_mapping_estimate(r: MappingEstimate) -> None:
    e, hw = r.estimate, r.hardware
    out = console()
    t = table(f"{e.network} on {e.hardware} ({hw.pe_array.dataflow}), batch {e.batch}: closed form of the mapping "
              "(energy in µJ; `hwsim map` prints the mapping)",
              [("layer", "left"), ("MACs", "right"), ("util", "right"), ("cycles", "right"),
               ("bound by", "left"), ("MAC", "right"), ("RF", "right"), ("NoC/PE", "right"), ("GLB", "right"),
               ("DRAM", "right"), ("ctrl", "right"), ("total", "right"), ("DRAM bytes", "right")])
    for l in e.layers:
        en = l.energy_pj
        t.add_row(l.layer.name, format_count(l.counts.macs + l.counts.ops),
                  f"{l.latency.utilization:.0%}", format_count(l.latency.bound_cycles), l.latency.bottleneck,
                  _uj(en["mac"]), _uj(en["rf"]), _uj(en["inter_pe"]), _uj(en["glb"] + en["l2"] + en["line_buffer"]),
                  _uj(en["dram"]), _uj(en["clock"] + en["control"]), _uj(l.total_pj),
                  fmt_bytes(l.dram_bytes))
    out.print(t)
    out.print(_level_operand_table(e))
    macs = r.totals.macs
    seconds = e.cycles / e.clock_hz
    out.print(f"total {e.total_pj() / 1e9:.4g} mJ for {e.batch} image(s) ({e.total_pj() / 1e9 / e.batch:.4g} mJ "
              f"per image; DRAM {e.total_pj('dram') / 1e9:.4g} mJ), {format_count(macs)} MACs, latency bound "
              f"{format_count(e.cycles)} cycles = {seconds * 1e3:.3f} ms, "
              f"utilization {macs / max(1, e.cycles * hw.pe_array.pes * hw.pe_array.macs_per_cycle):.0%}")


def _level_operand_table(e: NetworkEstimate) -> Table:
    by_level = sum((l.level_operand_pj for l in e.layers), np.zeros(ACCESS_SHAPE[:2]))
    words = sum((l.counts.accesses for l in e.layers), np.zeros(ACCESS_SHAPE, dtype=np.int64))
    t = table("energy (µJ) and accesses (words: reads / fills / updates) by level and operand, all layers",
              [("level", "left"), *[(name, "right") for name in OPERAND_NAMES]])
    for lv, name in enumerate(LEVEL_NAMES):
        if words[lv].any():
            t.add_row(name, *[f"{by_level[lv, op] / 1e6:.2f}  ({format_count(words[lv, op, 0])} / "
                              f"{format_count(words[lv, op, 1])} / {format_count(words[lv, op, 2])})"
                              for op in range(len(OPERAND_NAMES))])
    return t


def mapping_document(r: MappingEstimate) -> dict[str, Any]:
    e, hw, totals = r.estimate, r.hardware, r.totals
    return {"model": "mapping", "network": e.network, "hardware": e.hardware, "batch": e.batch,
            "word_bits": hw.precision_bits, "clock_hz": e.clock_hz,
            "layers": [layer_record(l) for l in e.layers],
            "totals": {"energy_pj": dict(totals.energy_by_component_pj), "total_energy_pj": e.total_pj(),
                       "macs": totals.macs, "latency_bound_cycles": totals.latency_cycles,
                       "dram_bytes": totals.dram_bytes}}


def _cnnergy_parts(e: CnnergyEnergy) -> dict[str, float]:
    return {"mac": e.mac_pj, "rf": e.rf_pj, "inter_pe": e.inter_pe_pj, "glb": e.glb_pj, "dram": e.dram_pj,
            "clock": e.clock_pj, "control": e.other_control_pj, "total": e.total_pj}


def _title(c: CnnergyEstimate) -> str:
    return f"{c.source} on {c.hardware}"


def print_cnnergy(c: CnnergyEstimate) -> None:
    t = table(f"{_title(c)}: faithful CNNergy, energy per image in mJ",
              [("layer", "left"), ("n", "right"), ("chP", "right"), ("fP", "right"), *[(h, "right") for h in (
                  "MAC", "RF", "inter-PE", "GLB", "DRAM", "clock", "control", "total")]])
    for name, r, k, energy in zip(c.names, c.result.layers, c.copies, c.layer_energies()):
        t.add_row(name + (f" x{k:g}" if k != 1 else ""), str(r.layer.n), f"{r.mapping.ch_pass:g}",
                  f"{r.mapping.f_pass:g}", *[f"{v / 1e9:.3f}" for v in _cnnergy_parts(energy).values()])
    parts = _cnnergy_parts(c.total())
    t.add_row("total", "", "", "", *[f"{v / 1e9:.3f}" for v in parts.values()], style="bold")
    out = console()
    out.print(t)
    out.print(f"total {parts['total'] / 1e9:.3f} mJ per image, "
              f"{(parts['total'] - parts['clock'] - parts['control']) / 1e9:.3f} mJ without control")


def cnnergy_document(c: CnnergyEstimate) -> dict[str, Any]:
    return {"model": "cnnergy", "source": _title(c),
            "layers": [{"name": n, "copies": k, "batch": r.layer.n, "chP": r.mapping.ch_pass, "fP": r.mapping.f_pass,
                        "energy_per_image_pj": _cnnergy_parts(energy)}
                       for n, r, k, energy in zip(c.names, c.result.layers, c.copies, c.layer_energies())],
            "totals": {"energy_per_image_pj": _cnnergy_parts(c.total())}}


# ----- sweep ------------------------------------------------------------------------------------------


def _law(hw: Accelerator, size: str) -> str:
    return f"{size}^{hw.glb.energy_size_exponent}"


def sweep_document(s: GlbSizeSweep, key: str) -> dict[str, Any]:
    best = s.optimum
    assert best.energy_per_image_pj is not None
    return {"model": s.model, "network": s.source, "hardware": s.hardware.name, "key": key,
            "law": "E(S) = E·" + _law(s.hardware, f"(S/{s.hardware.glb.data_bytes} B)"),
            "optimum_bytes": best.data_bytes,
            "points": [{"bytes": p.data_bytes, "energy_per_image_pj": p.energy_per_image_pj, "dram_pj": p.dram_pj,
                        "glb_pj": p.glb_pj,
                        "relative_to_optimum": None if p.energy_per_image_pj is None
                        else p.energy_per_image_pj / best.energy_per_image_pj,
                        "error": p.error} for p in s.points]}


def print_sweep(s: GlbSizeSweep) -> None:
    best = s.optimum
    best_pj = best.energy_per_image_pj or 0.0
    t = table(f"{s.source} on {s.hardware.name} ({s.model}): energy per image vs GLB ifmap+psum size; access "
              f"energy x " + _law(s.hardware, f"(S/{fmt_bytes(s.hardware.glb.data_bytes)})"),
              [("GLB size", "right"), ("GLB pJ/access", "right"), ("total mJ", "right"), ("vs min", "right"),
               ("DRAM mJ", "right"), ("GLB mJ", "right"), ("", "left")])
    for p in s.points:
        size, access = fmt_bytes(p.data_bytes), f"{p.glb_read_energy_pj:.3g}"
        if p.energy_per_image_pj is None or p.dram_pj is None or p.glb_pj is None:
            t.add_row(size, access, "-", "-", "-", "-", "does not fit")
            continue
        pj = p.energy_per_image_pj
        mark = "<- minimum" if p is best else ("within 2 %" if pj <= best_pj * (1 + NEAR_OPTIMUM) else "")
        t.add_row(size, access, f"{pj / 1e9:.4f}", f"{pj / best_pj - 1:+.1%}", f"{p.dram_pj / 1e9:.4f}",
                  f"{p.glb_pj / 1e9:.4f}", mark, style="bold green" if p is best else None)
    console().print(t)
    console().print(f"minimum at {fmt_bytes(best.data_bytes)}: {best_pj / 1e9:.4f} mJ per image")


# ----- run --------------------------------------------------------------------------------------------


def _source(args: argparse.Namespace) -> tuple[Graph | LayerTable, tuple[str, ...]]:
    """The network (with the loader's warnings) or the layer table the arguments name."""
    if args.layers and args.model != "cnnergy":
        raise NetworkError(f"{args.layers}: a CNNergy layer table needs --model cnnergy")
    if args.layers and args.network:
        raise NetworkError(f"give either a network or --layers {args.layers}, not both")
    if args.layers:
        return LayerTable(args.layers), ()
    if not args.network:
        raise NetworkError("name a network (zoo name or .onnx file) or, with --model cnnergy, --layers FILE.csv")
    loaded = load_network(args.network, args.input, args.allow_unknown)
    return loaded.graph, loaded.warnings


def _sparsity(args: argparse.Namespace, source: Graph | LayerTable) -> SparsityLike:
    """The zeros the options ask for (None: dense); the default is dense for the mapping model and auto for
    cnnergy, which takes defaults or presets only."""
    if isinstance(source, LayerTable):
        return None
    chosen = sparsity_request(args, source, AUTO if args.model == "cnnergy" else NONE)
    return cnnergy_sparsity(chosen) if args.model == "cnnergy" else chosen


def _estimate_mapping(args: argparse.Namespace, graph: Graph, warnings: tuple[str, ...]) -> int:
    """The mapping model: the run resolved once, its mapping priced in closed form."""
    spec = run_spec(args, graph, NONE, args.clock_power, args.throughput_gmacs)
    print_notices(warnings, spec.notes, args.json)
    if spec.mapper.name == "multicore":
        return _estimate_allocation(args, spec)
    r = estimate_run(spec)
    if args.json:
        emit_json({**mapping_document(r), "warnings": list(warnings), "notes": list(spec.notes)})
    else:
        print_mapping_estimate(r)
    return 0


def _estimate_allocation(args: argparse.Namespace, spec: RunSpec) -> int:
    """A multi-core allocation priced in closed form: each work on its core, and the pipeline bound."""
    from hwsim.cli.allocation_view import allocation_document, print_allocation
    from hwsim.flows.allocation import closed_allocation
    from hwsim.mapping.plans import AllocationPlan

    assert isinstance(spec.plan, AllocationPlan)
    closed = closed_allocation(spec.graph, spec.hardware, spec.plan)
    if args.json:
        emit_json(allocation_document(spec.plan, closed, None, spec.allocation_search))
    else:
        print_allocation(spec.plan, spec.hardware, closed, None, spec.allocation_search)
    return 0


def run(args: argparse.Namespace) -> int:
    source, warnings = _source(args)
    if isinstance(source, Graph) and args.model != "cnnergy" and not args.sweep:
        return _estimate_mapping(args, source, warnings)
    notes: tuple[str, ...] = ()
    if isinstance(source, Graph):
        source, hw, notes = run_config(args, source)
        if args.model == "cnnergy" and is_mixed(source):
            raise HwsimError(f"{source.name}: the CNNergy model prices one word and the graph mixes precisions; "
                             "give --bits N")
    else:
        hw = table_config(args)
    print_notices(warnings, notes, args.json)
    batch = args.batch or (source.declared_batch if isinstance(source, Graph) else 1)
    settings = EstimateSettings(args.model, batch, _sparsity(args, source), args.clock_power,
                                args.throughput_gmacs)
    if args.sweep:
        swept = sweep_glb_size(source, hw, args.sweep.values_bytes, settings)
        if args.json:
            emit_json(sweep_document(swept, args.sweep.key))
        else:
            print_sweep(swept)
    else:
        c = estimate_cnnergy(source, hw, cnnergy_sparsity(settings.sparsity), args.clock_power, args.throughput_gmacs)
        if args.json:
            emit_json(cnnergy_document(c))
        else:
            print_cnnergy(c)
    return 0
