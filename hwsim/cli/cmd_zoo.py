"""`hwsim zoo` (list the built-in networks) and `hwsim zoo export NAME FILE`."""

from __future__ import annotations

import argparse
from typing import Any

from hwsim.cli.args import input_size_arg
from hwsim.cli.commands import COMMAND_HELP
from hwsim.cli.output import console, emit_json, format_count, table
from hwsim.workload import zoo


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("zoo", help=COMMAND_HELP["zoo"])
    p.add_argument("--json", action="store_true", help="print one JSON document instead of a table")
    p.set_defaults(run=run_list)
    zsub = p.add_subparsers(dest="zoo_command", metavar="{list,export}")
    lst = zsub.add_parser("list", help="list the built-in networks (the default)")
    lst.add_argument("--json", action="store_true", help="print one JSON document instead of a table")
    lst.set_defaults(run=run_list)
    exp = zsub.add_parser("export", help="write a zoo network as an ONNX graph (weights as ConstantOfShape)")
    exp.add_argument("name", help="zoo network name")
    exp.add_argument("file", help="output .onnx path")
    exp.add_argument("--input", metavar="WxH", type=input_size_arg, default=None,
                     help="override the input resolution")
    exp.add_argument("--opset", type=int, default=17, help="ONNX opset to write (default 17)")
    exp.add_argument("--json", action="store_true", help="print one JSON document describing the export")
    exp.set_defaults(run=run_export)


def run_list(args: argparse.Namespace) -> int:
    rows: list[dict[str, Any]] = []  # the JSON document's rows
    for name in zoo.names():
        e = zoo.entry(name)
        g = e.build(*e.default_hw)
        rows.append({"name": name, "description": e.description, "input": [e.in_channels, *e.default_hw],
                     "layers": len(g), "macs": g.total_macs, "params": g.total_params,
                     "published_macs": e.published_macs, "published_params": e.published_params,
                     "published_source": e.published_source})
    if args.json:
        emit_json({"networks": rows})
        return 0
    t = table("built-in networks (hwsim info NAME for layers; --input WxH to resize)", [
        ("name", "left"), ("input CxHxW", "left"), ("layers", "right"), ("MACs", "right"), ("params", "right"),
        ("description", "left")])
    for r in rows:
        c, h, w = r["input"]
        t.add_row(r["name"], f"{c}x{h}x{w}", str(r["layers"]), format_count(r["macs"]),
                  format_count(r["params"]), r["description"])
    console().print(t)
    return 0


def run_export(args: argparse.Namespace) -> int:
    from hwsim.workload.onnx_export import export_onnx

    graph = zoo.build(args.name, args.input)
    export_onnx(graph, args.file, opset=args.opset)
    if args.json:
        emit_json({"network": graph.name, "file": args.file, "opset": args.opset, "layers": len(graph)})
    else:
        console().print(f"wrote {args.file}: {graph.name}, {len(graph)} layers, opset {args.opset}")
    return 0
