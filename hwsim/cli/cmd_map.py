"""`hwsim map`: the mapping hwsim runs a network with, layer by layer, checked and written as YAML or JSON."""

from __future__ import annotations

import argparse
from typing import Any

from hwsim.cli.args import add_network_arguments, positive_int
from hwsim.cli.output import console, emit_json, format_count, table
from hwsim.flows.mapping import MappedNetwork, map_network
from hwsim.hardware import load_config
from hwsim.mapping.nest.format import LoopNest, Storage, mapping_data
from hwsim.workload.network import load_network


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("map", help="the loop-nest mapping hwsim runs a network with, checked; "
                                   "write it to replay or edit")
    add_network_arguments(p)
    p.add_argument("--hw", required=True, metavar="CONFIG", help="accelerator config: a path or a shipped name")
    p.add_argument("--batch", type=positive_int, default=1, metavar="N", help="images per run (default 1)")
    p.add_argument("--out", metavar="FILE.yaml", default=None,
                   help="write the mapping here (YAML, or JSON for a .json name); estimate, simulate and check "
                        "replay it with --mapping FILE")
    p.add_argument("--json", action="store_true", help="print one JSON document: the mapping and each layer's "
                                                       "passes, MACs and latency bound")
    p.set_defaults(run=run)


def _storage(s: Storage) -> str:
    loops = " ".join(str(l) for l in s.loops if l.factor > 1) or "–"
    return f"{loops} {{{','.join(sorted(s.keeps)) or 'nothing'}}}"


def print_mapping(m: MappedNetwork, out: str | None) -> None:
    hw = m.hardware
    t = table(f"{m.graph.name} on {hw.name} ({hw.pe_array.dataflow}, {hw.pe_array.rows}x{hw.pe_array.cols}), "
              f"batch {m.mapping.batch}: loops outer to inner with factors > 1, {{what a level keeps}}",
              [("layer", "left"), ("dram", "left"), ("glb", "left"), ("rows × cols", "left"), ("stream", "left"),
               ("rf", "left"), ("passes", "right"), ("MACs / ops", "right"), ("bound cycles", "right")])
    estimates = {l.layer.name: l for l in m.estimate.layers}
    for entry in m.mapping.layers:
        e = estimates[entry.layer]
        if not isinstance(entry, LoopNest):
            t.add_row(entry.layer, f"streamed in {entry.tiles} piece(s) per image", "", "", "", "",
                      format_count(e.counts.passes), format_count(e.counts.ops), format_count(e.latency.bound_cycles))
            continue
        glb = entry.level("glb")
        array = entry.array
        spatial = (" ".join(str(l) for l in array.rows if l.factor > 1) or "–") + " × " + \
            (" ".join(str(l) for l in array.cols if l.factor > 1) or "–")
        t.add_row(entry.layer, _storage(entry.storage[0]).removesuffix(" {filter,ifmap,psum}"),
                  _storage(glb) if glb else "", spatial, " ".join(str(l) for l in array.stream if l.factor > 1),
                  _storage(entry.rf), format_count(e.counts.passes), format_count(e.counts.macs),
                  format_count(e.latency.bound_cycles))
    console().print(t)
    console().print(f"{len(m.mapping.layers)} layers, every one checked against {hw.name}; "
                    + (f"written to {out}" if out else "write it with --out FILE.yaml to replay it with --mapping"))


def document(m: MappedNetwork, out: str | None) -> dict[str, Any]:
    estimates = {l.layer.name: l for l in m.estimate.layers}
    return {"mapping": mapping_data(m.mapping), "written_to": out,
            "layers": [{"layer": e.layer, "passes": estimates[e.layer].counts.passes,
                        "macs": estimates[e.layer].counts.macs, "ops": estimates[e.layer].counts.ops,
                        "latency_bound_cycles": estimates[e.layer].latency.bound_cycles}
                       for e in m.mapping.layers]}


def run(args: argparse.Namespace) -> int:
    loaded = load_network(args.network, args.input, args.allow_unknown)
    mapped = map_network(loaded.graph, load_config(args.hw), args.batch, args.out)
    if args.json:
        emit_json(document(mapped, args.out))
    else:
        print_mapping(mapped, args.out)
    return 0


__all__ = ["add_parser"]
