"""An allocation search: which core runs which layer (or which output channels of it), under an objective over the
whole run, priced by the allocation's closed form (`hwsim.analytic.multicore`).

It starts from the best of the fixed rules (`hwsim.mapping.multicore.ALLOCATION_RULES`) and of stages balanced by
the layers' closed-form bounds on the first core (rather than by MACs: a fully connected layer is short in MACs and
long in DRAM words), and improves it by local moves, first improvement kept: a layer moved whole to another core,
or split over every core in proportion to their lanes. A move its core cannot run (its GLB or RFs too small for the
part) is refused and counted. It stops when a round over every layer finds no better move, or after
`max_evaluations` priced allocations. Starting from the fixed rules and keeping only improvements, it is never
worse than the best rule under its own objective; what it tried is returned with it.

Objectives: `latency` (the pipeline bound, cycles), `energy` (pJ, every work's closed-form energy), `edp` (their
product).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hwsim.analytic.multicore import estimate_allocation
from hwsim.errors import HwsimError
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.multicore import (
    ALLOCATION_RULES,
    allocate,
    balanced_stages,
    part_mappings,
    split_parts,
    splittable,
)
from hwsim.mapping.nest.format import MappingError
from hwsim.mapping.plans import AllocationPlan, CorePart
from hwsim.search.names import ALLOCATION_OBJECTIVES
from hwsim.workload.ir import Graph

MAX_EVALUATIONS = 400  # allocations one search prices at most


@dataclass(frozen=True)
class AllocationSearch:
    """The allocation a search found, its cost, each fixed rule's cost (None: the rule does not fit), and how many
    allocations it priced and how many it refused (a part its core cannot run)."""

    plan: AllocationPlan
    objective: str
    cost: float
    rules: tuple[tuple[str, float | None], ...]
    priced: int
    refused: int


def allocation_cost(graph: Graph, hw: Accelerator, plan: AllocationPlan, objective: str) -> float:
    """The closed-form cost of `plan` under `objective`: cycles of the pipeline bound, pJ, or their product."""
    closed = estimate_allocation(graph, hw, plan, part_mappings(plan, graph, hw))
    cycles, energy = float(closed.bound.cycles), closed.estimate.total_pj()
    return {"latency": cycles, "energy": energy, "edp": cycles * energy}[objective]


class _Pricer:
    """Prices allocations, counting the priced and the refused."""

    def __init__(self, graph: Graph, hw: Accelerator, objective: str) -> None:
        self.graph, self.hw, self.objective = graph, hw, objective
        self.priced = self.refused = 0

    def cost(self, plan: AllocationPlan) -> float | None:
        self.priced += 1
        try:
            return allocation_cost(self.graph, self.hw, plan, self.objective)
        except MappingError:
            self.refused += 1
            return None


def _moves(graph: Graph, hw: Accelerator, plan: AllocationPlan, index: int) -> list[tuple[CorePart, ...]]:
    """Layer `index`'s other allocations: whole on each other core, or split over every core."""
    names = [c.name for c in hw.all_cores]
    name, now = plan.layers[index]
    out: list[tuple[CorePart, ...]] = [(CorePart(core, 0),) for core in names if now != (CorePart(core, 0),)]
    layer = graph.layer(name)
    if splittable(layer) and len(names) > 1:
        lanes = [c.pe_array.pes * c.pe_array.macs_per_cycle for c in hw.all_cores]
        parts = split_parts(layer, names, lanes)
        if parts != now and len(parts) > 1:
            out.append(parts)
    return out


def _bound_stages(graph: Graph, hw: Accelerator, images: int) -> AllocationPlan | None:
    """Contiguous stages, one per core, balancing the layers' closed-form bounds on the first core per lane (None:
    a layer does not fit the first core)."""
    first = hw.all_cores[0].name
    alone = allocate(graph, hw, 1, "round_robin")
    alone = replace(alone, layers=tuple((name, (CorePart(first, 0),)) for name, _ in alone.layers))
    try:
        closed = estimate_allocation(graph, hw, alone, part_mappings(alone, graph, hw))
        bounds = [e.latency.bound_cycles for e in closed.estimate.layers]
    except MappingError:
        return None
    lanes = [c.pe_array.pes * c.pe_array.macs_per_cycle for c in hw.all_cores]
    stages = balanced_stages([max(1, b) for b in bounds], lanes)
    names = [c.name for c in hw.all_cores]
    return replace(alone, images=images, rule="stages by bound",
                   layers=tuple((name, (CorePart(names[k], 0),)) for (name, _), k in zip(alone.layers, stages,
                                                                                        strict=True)))


def search_allocation(graph: Graph, hw: Accelerator, images: int, objective: str = "latency",
                      max_evaluations: int = MAX_EVALUATIONS) -> AllocationSearch:
    """The best allocation of `images` images of `graph` over `hw`'s cores the search finds (module docstring)."""
    if objective not in ALLOCATION_OBJECTIVES:
        raise HwsimError(f"allocation objective {objective!r}; use one of {', '.join(ALLOCATION_OBJECTIVES)}")
    pricer = _Pricer(graph, hw, objective)
    rules: list[tuple[str, float | None]] = []
    best: tuple[float, AllocationPlan] | None = None
    for rule in ALLOCATION_RULES:
        try:
            plan = allocate(graph, hw, images, rule)
        except MappingError:
            rules.append((rule, None))
            continue
        cost = pricer.cost(plan)
        rules.append((rule, cost))
        if cost is not None and (best is None or cost < best[0]):
            best = (cost, plan)
    balanced = _bound_stages(graph, hw, images)
    if balanced is not None:
        cost = pricer.cost(balanced)
        rules.append(("stages by bound", cost))
        if cost is not None and (best is None or cost < best[0]):
            best = (cost, balanced)
    if best is None:
        raise MappingError(f"{graph.name} on {hw.name}: no fixed allocation fits the cores; give a larger core")
    cost, plan = best
    improved = True
    while improved and pricer.priced < max_evaluations:
        improved = False
        for index in range(len(plan.layers)):
            for parts in _moves(graph, hw, plan, index):
                if pricer.priced >= max_evaluations:
                    break
                layers = list(plan.layers)
                layers[index] = (layers[index][0], parts)
                candidate = replace(plan, rule=f"search:{objective}", layers=tuple(layers))
                tried = pricer.cost(candidate)
                if tried is not None and tried < cost:
                    cost, plan, improved = tried, candidate, True
    return AllocationSearch(replace(plan, rule=f"search:{objective}"), objective, cost, tuple(rules),
                            pricer.priced, pricer.refused)


__all__ = ["MAX_EVALUATIONS", "AllocationSearch", "allocation_cost", "search_allocation"]
