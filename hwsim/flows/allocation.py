"""A multi-core allocation's closed form (the mapper's per-part mappings, as data, priced by the analytic model),
and the allocation written to files: the plan and beside it each core's mapping of its parts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hwsim.analytic.multicore import AllocationEstimate, estimate_allocation
from hwsim.hardware.schema import Accelerator
from hwsim.hardware.tree import core_hardware
from hwsim.mapping.multicore import forwards, part_mappings
from hwsim.mapping.nest.format import NetworkMapping, save_mapping
from hwsim.mapping.plans import AllocationPlan, save_plan
from hwsim.workload.ir import Graph


def closed_allocation(graph: Graph, hw: Accelerator, plan: AllocationPlan) -> AllocationEstimate:
    """Every work of `plan` priced on its core, and the pipeline bound."""
    return estimate_allocation(graph, hw, plan, part_mappings(plan, graph, hw), forwards(plan, graph, hw))


def save_allocation(plan: AllocationPlan, graph: Graph, hw: Accelerator, out: str | Path) -> AllocationPlan:
    """Write `plan` to `out` and beside it, as `OUT-STEM.CORE.yaml` (hwsim-mapping files), each core's mapping of
    its parts, which the written plan names under `mappings` (a replay maps the parts by them); the plan as
    written."""
    path = Path(out)
    cores = hw.all_cores
    written = []
    for k, core in enumerate(cores):
        entries = tuple(p.entry for p in part_mappings(plan, graph, hw) if p.core == k)
        if not entries:
            continue
        name = f"{path.stem}.{core.name}{path.suffix or '.yaml'}"
        view = core_hardware(hw, k)
        save_mapping(NetworkMapping(graph.name, view.name, view.pe_array.dataflow, 1, entries), path.parent / name)
        written.append((core.name, name))
    saved = replace(plan, mappings=tuple(written))
    save_plan(saved, path)
    return saved


__all__ = ["closed_allocation", "save_allocation"]
