"""A multi-core allocation's closed form: the mapper's per-part mappings (data) priced by the analytic model."""

from __future__ import annotations

from hwsim.analytic.multicore import AllocationEstimate, estimate_allocation
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.multicore import forwards, part_mappings
from hwsim.mapping.plans import AllocationPlan
from hwsim.workload.ir import Graph


def closed_allocation(graph: Graph, hw: Accelerator, plan: AllocationPlan) -> AllocationEstimate:
    """Every work of `plan` priced on its core, and the pipeline bound."""
    return estimate_allocation(graph, hw, plan, part_mappings(plan, graph, hw), forwards(plan, graph, hw))


__all__ = ["closed_allocation"]
