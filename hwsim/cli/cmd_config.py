"""`hwsim config validate FILE` and `hwsim config show FILE`."""

from __future__ import annotations

import argparse

from hwsim.cli.commands import COMMAND_HELP
from hwsim.cli.output import console, emit_json, table
from hwsim.hardware import describe, load_config, shipped_configs, to_dict
from hwsim.hardware.units import format_quantity


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("config", help=COMMAND_HELP["config"])
    csub = p.add_subparsers(dest="config_command", metavar="{validate,show,list}", required=True)
    for name, helptext, func in (("validate", "check a config and report the first problem", run_validate),
                                 ("show", "every parameter with its value, unit and description", run_show)):
        c = csub.add_parser(name, help=helptext)
        c.add_argument("file", help="config path, or the name of a shipped config (e.g. eyeriss-v1)")
        c.add_argument("--json", action="store_true", help="print one JSON document")
        c.set_defaults(run=func)
    lst = csub.add_parser("list", help="the shipped configs")
    lst.add_argument("--json", action="store_true", help="print one JSON document")
    lst.set_defaults(run=run_list)


def run_validate(args: argparse.Namespace) -> int:
    acc = load_config(args.file)
    if args.json:
        emit_json({"file": args.file, "valid": True, "name": acc.name})
    else:
        console().print(f"{args.file}: valid ({acc.name})")
    return 0


def run_show(args: argparse.Namespace) -> int:
    acc = load_config(args.file)
    if args.json:
        emit_json({"file": args.file, "config": to_dict(acc),
                   "parameters": [{"path": p, "value": v, "unit": u, "description": d}
                                  for p, v, u, d in describe(acc)]})
        return 0
    t = table(f"{acc.name}: {acc.description}", [("parameter", "left"), ("value", "right"), ("description", "left")])
    for path, value, unit, desc in describe(acc):
        t.add_row(path, format_quantity(value, unit) if unit else str(value), desc)
    console().print(t)
    return 0


def run_list(args: argparse.Namespace) -> int:
    shipped = shipped_configs()
    if args.json:
        emit_json({"configs": {name: str(path) for name, path in shipped.items()}})
        return 0
    for name, path in shipped.items():
        console().print(f"{name}  {path}")
    return 0
