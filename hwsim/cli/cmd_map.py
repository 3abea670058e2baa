"""`hwsim map`: the mapping hwsim runs a network with, layer by layer, checked and written as YAML or JSON."""

from __future__ import annotations

import argparse
from types import SimpleNamespace
from typing import Any

from hwsim.cli.args import (
    add_allocation_argument,
    add_bits_argument,
    add_network_arguments,
    add_search_arguments,
    batch_arg,
    positive_int,
    search_settings,
)
from hwsim.cli.commands import COMMAND_HELP
from hwsim.cli.output import console, emit_json, format_count, layer_progress, print_notices, table
from hwsim.errors import ConfigError, HwsimError
from hwsim.flows.mapping import MAPPERS, OBJECTIVE_UNITS, MappedNetwork, mapped_network
from hwsim.flows.run import RunSpec, resolve_run
from hwsim.hardware import load_config
from hwsim.mapping.nest.format import LoopNest, Storage, mapping_data
from hwsim.search.cost import rank
from hwsim.search.network import Progress, SearchedMapping, SearchSettings
from hwsim.workload.ir import Graph
from hwsim.workload.network import load_network


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("map", help=COMMAND_HELP["map"])
    add_network_arguments(p)
    p.add_argument("--hw", required=True, metavar="CONFIG", help="accelerator config: a path or a shipped name")
    p.add_argument("--batch", type=batch_arg, default=None, metavar="N",
                   help="images per run (default: the batch an ONNX file declares, else 1)")
    p.add_argument("--out", metavar="FILE.yaml", default=None,
                   help="write the mapping here (YAML, or JSON for a .json name); estimate, simulate and check "
                        "replay it with --mapping FILE")
    p.add_argument("--mapper", choices=MAPPERS, default=None,
                   help="search (the default when --objective is given): the best mapping found per layer; "
                        "rules: the dataflow's rule mapping")
    add_search_arguments(p)
    add_allocation_argument(p)
    add_bits_argument(p)
    p.add_argument("--jobs", type=positive_int, default=1, metavar="N",
                   help="search layers of different shapes in N processes (default 1)")
    p.add_argument("--json", action="store_true", help="print one JSON document: the mapping and each layer's "
                                                       "passes, MACs and latency bound (and the search's choices)")
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


def print_search(s: SearchedMapping) -> None:
    unit = OBJECTIVE_UNITS[s.objective]
    t = table(f"search under {s.objective} ({unit}): each weighted layer beside the rule mapping, "
              f"{s.shapes} shapes ({s.searched} searched, the rest cached) in {s.seconds:.1f} s",
              [("layer", "left"), (f"searched {s.objective}", "right"), (f"rules {s.objective}", "right"),
               ("searched / rules", "right"), ("energy µJ", "right"), ("latency est. cycles", "right"),
               ("DRAM words", "right"), ("from", "left")])
    for c in s.choices:
        value = rank(s.objective, c.cost)[0]
        rule = rank(s.objective, c.rule_cost)[0] if c.rule_cost is not None else None
        t.add_row(c.layer, f"{value:.4g}", f"{rule:.4g}" if rule is not None else "–",
                  f"{value / rule:.3f}" if rule else "–", f"{c.cost.energy_pj / 1e6:.1f}",
                  format_count(c.cost.latency_cycles), format_count(c.cost.dram_words), c.source)
    console().print(t)


def search_document(s: SearchedMapping) -> dict[str, Any]:
    return {"objective": s.objective, "seconds": s.seconds, "shapes": s.shapes, "searched": s.searched,
            "layers": [{"layer": c.layer, "source": c.source, "searched": c.cost.as_data(),
                        "rules": c.rule_cost.as_data() if c.rule_cost else None} for c in s.choices]}


def document(m: MappedNetwork, out: str | None) -> dict[str, Any]:
    estimates = {l.layer.name: l for l in m.estimate.layers}
    return {"mapping": mapping_data(m.mapping), "written_to": out,
            "search": search_document(m.search) if m.search else None,
            "layers": [{"layer": e.layer, "passes": estimates[e.layer].counts.passes,
                        "macs": estimates[e.layer].counts.macs, "ops": estimates[e.layer].counts.ops,
                        "latency_bound_cycles": estimates[e.layer].latency.bound_cycles}
                       for e in m.mapping.layers]}


def resolved_run(args: argparse.Namespace, graph: Graph, search: SearchSettings | None,
                 progress: Progress) -> RunSpec:
    """The run `map` resolves: the rules, or `search`'s mapping, at the words --bits (else the graph's) gives."""
    hw = load_config(args.hw)
    try:
        return resolve_run(graph, hw, args.batch, search, None, args.bits, search_progress=progress)
    except ConfigError as exc:  # a rescaled config breaks a rule: name the file it came from
        raise ConfigError(f"{args.hw}: {exc}") from None


def run_allocation(args: argparse.Namespace) -> int:
    """`hwsim map --allocate RULE`: the allocation over a multi-core config's cores, priced, written to --out with
    each core's mapping of its parts beside it."""
    from hwsim.cli.allocation_view import allocation_document, print_allocation
    from hwsim.cli.args import allocation_request
    from hwsim.flows.allocation import closed_allocation, save_allocation
    from hwsim.mapping.plans import AllocationPlan

    args.mapping = None
    loaded = load_network(args.network, args.input, args.allow_unknown)
    hw = load_config(args.hw)
    try:
        spec = resolve_run(loaded.graph, hw, args.batch, allocation_request(args), None, args.bits)
    except ConfigError as exc:
        raise ConfigError(f"{args.hw}: {exc}") from None
    print_notices(loaded.warnings, spec.notes, args.json)
    assert isinstance(spec.plan, AllocationPlan)
    if args.out:
        save_allocation(spec.plan, spec.graph, spec.hardware, args.out)
    closed = closed_allocation(spec.graph, spec.hardware, spec.plan)
    if args.json:
        emit_json(allocation_document(spec.plan, closed, args.out, spec.allocation_search))
    else:
        print_allocation(spec.plan, spec.hardware, closed, args.out, spec.allocation_search)
    return 0


def run(args: argparse.Namespace) -> int:
    if args.allocate is not None:
        return run_allocation(args)
    loaded = load_network(args.network, args.input, args.allow_unknown)
    mapper = args.mapper or ("search" if args.objective or args.budget else "rules")
    if mapper == "rules" and (args.objective or args.budget):
        raise HwsimError("--objective and --budget set a search; drop --mapper rules")
    settings = search_settings(args, args.jobs) if mapper == "search" else None
    with layer_progress(f"searching {loaded.graph.name}", None, args.json or not settings) as advance:
        spec = resolved_run(args, loaded.graph, settings,
                            lambda done, total, name: advance(done, SimpleNamespace(name=name), total))
    print_notices(loaded.warnings, spec.notes, args.json)
    mapped = mapped_network(spec, args.out)
    if args.json:
        emit_json(document(mapped, args.out))
        return 0
    print_mapping(mapped, args.out)
    if mapped.search is not None:
        print_search(mapped.search)
    return 0


__all__ = ["add_parser"]
