"""`hwsim info NETWORK|FILE.onnx`: the per-layer table of a network."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import JustifyMethod

from hwsim.cli.args import add_network_arguments, bits_arg
from hwsim.cli.commands import COMMAND_HELP
from hwsim.cli.output import console, emit_json, format_bytes, format_count, table
from hwsim.workload.ir import NO_FRAMES, Graph, Layer
from hwsim.workload.network import load_network
from hwsim.workload.precision import graph_bits

DEFAULT_INFO_BITS = 16  # the byte counts of a graph that declares no width


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("info", help=COMMAND_HELP["info"])
    add_network_arguments(p)
    p.add_argument("--bits", type=bits_arg, default=None, metavar="N",
                   help="precision of activations and parameters for byte counts, 8, 16 or 32 (default: the width "
                        "a quantized graph declares, else 16)")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    p.set_defaults(run=run)


def layer_record(layer: Layer, bits: int) -> dict[str, Any]:
    """Everything `info` reports about one layer, as plain data."""
    return {
        "name": layer.name,
        "kind": str(layer.kind),
        "inputs": list(layer.inputs),
        "in_shapes": [list(s.axes) for s in layer.in_shapes],
        "out_shape": list(layer.out_shape.axes),
        "kernel": list(layer.kernel),
        "stride": list(layer.stride),
        "dilation": list(layer.dilation),
        "padding": list(layer.padding),
        "frames": layer.frames._asdict(),
        "groups": layer.groups,
        "fused_bn": layer.fused_bn,
        "activation": layer.activation,
        "macs": layer.macs,
        "ops": layer.ops,
        "params": layer.params,
        "precision": layer.precision._asdict() if layer.precision is not None else None,
        "ifmap_bytes": layer.ifmap_bytes(bits),
        "ofmap_bytes": layer.ofmap_bytes(bits),
        "param_bytes": layer.param_bytes(bits),
    }


def totals(graph: Graph, bits: int) -> dict[str, Any]:
    """Network totals: MACs, parameters, and the largest activation tensor."""
    return {
        "layers": len(graph),
        "macs": graph.total_macs,
        "params": graph.total_params,
        "param_bytes": sum(l.param_bytes(bits) for l in graph),
        "ofmap_bytes": sum(l.ofmap_bytes(bits) for l in graph),
        "max_ofmap_bytes": max(l.ofmap_bytes(bits) for l in graph),
    }


def _window(layer: Layer) -> str:
    """A window as kh×kw/stride, over a clip kd×kh×kw/stride (a stride per axis where they differ)."""
    if layer.kind.value in ("conv", "conv_transpose", "max_pool", "avg_pool"):
        kernel, strides = list(layer.kernel), list(layer.stride)
        if layer.frames != NO_FRAMES or any(s.d > 1 for s in layer.in_shapes):
            kernel, strides = [layer.frames.kernel, *kernel], [layer.frames.stride, *strides]
        stride = strides[0] if len(set(strides)) == 1 else "x".join(map(str, strides))
        text = f"{'x'.join(map(str, kernel))}/{stride}"
        if layer.groups > 1:
            text += f" g{layer.groups}"
        return text
    return ""


def run(args: argparse.Namespace) -> int:
    loaded = load_network(args.network, args.input, args.allow_unknown)
    graph = loaded.graph
    bits = args.bits or graph_bits(graph) or DEFAULT_INFO_BITS
    if args.json:
        emit_json({
            "network": graph.name,
            "source": graph.source,
            "bits": bits,
            "warnings": list(loaded.warnings),
            "totals": totals(graph, bits),
            "import": loaded.import_summary,
            "layers": [layer_record(l, bits) for l in graph],
        })
        return 0
    out = console()
    for warning in loaded.warnings:
        out.print(f"[yellow]warning:[/] {warning}")
    out.print(_layer_table(graph, bits))
    if any(s.d > 1 for l in graph for s in (*l.in_shapes, l.out_shape)):
        out.print("clips are shaped CxDxHxW (D frames) and their windows DxHxW; others CxHxW")
    tot = totals(graph, bits)
    out.print(f"{tot['layers']} layers, {format_count(tot['macs'])} MACs, {format_count(tot['params'])} parameters "
              f"({format_bytes(tot['param_bytes'])}), largest activation {format_bytes(tot['max_ofmap_bytes'])}")
    if loaded.unmodelled:
        out.print(_unmodelled_line(loaded.unmodelled))
    return 0


def _layer_table(graph: Graph, bits: int) -> Any:
    """The per-layer table; a precision column when the graph gives any (quantized graphs)."""
    quantized = any(l.precision is not None for l in graph)
    columns: list[tuple[str, JustifyMethod]] = [
        ("#", "right"), ("layer", "left"), ("kind", "left"), ("input", "left"), ("output", "left"),
        ("window", "left"), ("fused", "left"), ("MACs", "right"), ("ops", "right"), ("params", "right"),
        ("ofmap", "right")]
    t = table(f"{graph.name} ({graph.source}), {bits}-bit", columns + ([("precision", "left")] if quantized else []))
    for i, l in enumerate(graph):
        fused = "+".join(x for x in ("bn" if l.fused_bn else "", l.activation or "") if x)
        row = [str(i), l.name, str(l.kind), ", ".join(map(str, l.in_shapes)), str(l.out_shape), _window(l), fused,
               format_count(l.macs) if l.macs else "", format_count(l.ops) if l.ops else "",
               format_count(l.params) if l.params else "", format_bytes(l.ofmap_bytes(bits))]
        t.add_row(*row, *([str(l.precision or "")] if quantized else []))
    return t


def _unmodelled_line(unmodelled: dict[str, tuple[str, ...]] | Any) -> str:
    """What --allow-unknown let through, once per op: the MACs above leave out their work."""
    count = sum(len(names) for names in unmodelled.values())
    ops = ", ".join(f"{op} ×{len(names)}" for op, names in unmodelled.items())
    return (f"[yellow]{count} layer{'s' if count != 1 else ''} passed through at zero cost[/] ({ops}): "
            "the MACs and parameters above leave out their work")
