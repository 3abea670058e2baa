"""One mapper protocol: every family of mappings (loop nest, depth-first, phases, planned memory) is a `Mapper`
registered by name, whose plans are data (`hwsim.mapping.plans`) it checks against a network and an accelerator
and turns into a `Schedule`.

A run resolves its plan once (hwsim's default, a search, or a file written with `--out`), checks it, and asks
the plan's mapper for the schedule: the simulator never needs to know which family made it. A family's module is
imported when one of its plans is first checked or scheduled, so a command that never meets one does not load it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from hwsim.hardware.schema import Accelerator
from hwsim.mapping.mapper import check_mapping
from hwsim.mapping.nest.format import MappingError, NetworkMapping
from hwsim.mapping.plans import (
    AllocationPlan,
    DepthFirstPlan,
    PhasePlan,
    Plan,
    SlotPlan,
    plan_mapper,
    plan_problems,
)
from hwsim.mapping.schedule import Schedule
from hwsim.registry import Registry
from hwsim.sparsity.profile import SparsityProfile
from hwsim.vocab import Level
from hwsim.workload.ir import Graph, require_images


class Mapper(ABC):
    """A family of mappings: checks its plans and turns them into schedules."""

    name: ClassVar[str]
    dram_per_transaction: ClassVar[bool] = False  # its schedules' DRAM traffic is traced one record per transfer

    def check(self, plan: Plan, graph: Graph, hw: Accelerator) -> None:
        """Raise MappingError when `plan` does not fit `graph` on `hw`, naming the field and the fix (a clip is a
        NetworkError: the plans of these mappers tile 2-D maps)."""
        require_images(graph, f"the {self.name} mapper")
        s = graph.layers[0].out_shape if graph.layers else None
        problem = plan_problems(plan, graph.name, (s.c, s.h, s.w) if s else (0, 0, 0))
        if problem:
            raise MappingError(problem)

    @abstractmethod
    def schedule(self, plan: Any, graph: Graph, hw: Accelerator, sparsity: SparsityProfile | None) -> Schedule:
        """The steps of a checked `plan` for `graph` on `hw`, with the zeros of `sparsity` where it models them."""


MAPPERS: Registry[Mapper] = Registry("mapper")


class NestMapper(Mapper):
    """Loop nests layer by layer (`hwsim.mapping.mapper`): the dataflow's rules, a search's or a file's."""

    name = "nest"

    def check(self, plan: Plan, graph: Graph, hw: Accelerator) -> None:
        assert isinstance(plan, NetworkMapping)
        check_mapping(plan, graph, hw)

    def schedule(self, plan: NetworkMapping, graph: Graph, hw: Accelerator,
                 sparsity: SparsityProfile | None) -> Schedule:
        from hwsim.mapping.nest_schedule import network_schedule

        return network_schedule(graph, hw, plan.batch, plan, sparsity, checked=True)


class DepthFirstMapper(Mapper):
    """Stacks of layers run line by line through line buffers (`hwsim.mapping.depth_first`)."""

    name = "depth_first"
    dram_per_transaction = True

    def check(self, plan: Plan, graph: Graph, hw: Accelerator) -> None:
        from hwsim.mapping.depth_first import split_stacks

        super().check(plan, graph, hw)
        assert isinstance(plan, DepthFirstPlan)
        stacks = split_stacks(graph, plan.cuts)
        if len(plan.tiling) != len(stacks):
            raise MappingError(f"plan.tiling: {len(plan.tiling)} factors for the {len(stacks)} stacks the cuts make; "
                               "give one per stack")

    def schedule(self, plan: DepthFirstPlan, graph: Graph, hw: Accelerator,
                 sparsity: SparsityProfile | None) -> Schedule:
        from hwsim.mapping.depth_first import DepthFirstMapping, WeightPolicy, depth_first_schedule

        mapping = DepthFirstMapping(plan.cuts, plan.tiling, WeightPolicy(plan.weights), plan.max_short_skip_layers)
        return depth_first_schedule(graph, hw, mapping)


class PhasesMapper(Mapper):
    """Layers in phases with edge buffers in the L2 or DRAM (`hwsim.mapping.phases`)."""

    name = "phases"
    dram_per_transaction = True

    def check(self, plan: Plan, graph: Graph, hw: Accelerator) -> None:
        super().check(plan, graph, hw)
        assert isinstance(plan, PhasePlan)
        given = dict(plan.phases)
        missing = [l.name for l in graph if l.name not in given]
        if missing or len(given) != len(graph.layers):
            extra = sorted(set(given) - {l.name for l in graph})
            raise MappingError(f"plan.phases: {'no phases for ' + missing[0] if missing else 'unknown ' + extra[0]}; "
                               "give every layer of the network its phases")
        self.schedule(plan, graph, hw, None)  # the phases fit the layers and the edges exist

    def schedule(self, plan: PhasePlan, graph: Graph, hw: Accelerator,
                 sparsity: SparsityProfile | None) -> Schedule:
        from hwsim.mapping.phases import phased_graph, phased_schedule

        pg = phased_graph(graph, dict(plan.phases))
        names = [e.name for e in pg.edges]
        unknown = [e for e in plan.dram_edges if e not in names]
        if unknown:
            raise MappingError(f"phase plan of {plan.network!r}: edge {unknown[0]!r} is not an edge of the network; "
                               "edges are named producer->consumer")
        return phased_schedule(pg, hw, {names.index(e): Level.DRAM for e in plan.dram_edges})


class PlannedMapper(Mapper):
    """Layers one after another with their tensors where a memory plan put them (`hwsim.mapping.planned`)."""

    name = "planned"
    dram_per_transaction = True

    def check(self, plan: Plan, graph: Graph, hw: Accelerator) -> None:
        super().check(plan, graph, hw)
        assert isinstance(plan, SlotPlan)
        for i, slot in enumerate(plan.slots):
            steps = (slot.producer, *slot.consumers)
            if not slot.consumers or max(steps) >= len(graph.layers) or slot.buffer >= len(plan.buffers):
                raise MappingError(f"plan.slots[{i}]: producer, consumers or buffer outside the network's "
                                   f"{len(graph.layers)} layers and the plan's {len(plan.buffers)} buffers")

    def schedule(self, plan: SlotPlan, graph: Graph, hw: Accelerator,
                 sparsity: SparsityProfile | None) -> Schedule:
        from hwsim.mapping.planned import planned_schedule

        return planned_schedule(graph, hw, plan.slots, plan.buffers)


class MultiCoreMapper(Mapper):
    """Layers allocated to the cores of a multi-core accelerator, images streaming through them
    (`hwsim.mapping.multicore`); each core maps its parts by its own dataflow's rules."""

    name = "multicore"

    def check(self, plan: Plan, graph: Graph, hw: Accelerator) -> None:
        from hwsim.mapping.multicore import check_allocation

        assert isinstance(plan, AllocationPlan)
        s = graph.layers[0].out_shape if graph.layers else None
        problem = plan_problems(plan, graph.name, (s.c, s.h, s.w) if s else (0, 0, 0))
        if problem:
            raise MappingError(problem)
        check_allocation(plan, graph, hw)

    def schedule(self, plan: AllocationPlan, graph: Graph, hw: Accelerator,
                 sparsity: SparsityProfile | None) -> Schedule:
        from hwsim.mapping.multicore import multicore_schedule

        return multicore_schedule(plan, graph, hw)


for _mapper in (NestMapper(), DepthFirstMapper(), PhasesMapper(), PlannedMapper(), MultiCoreMapper()):
    MAPPERS.register(_mapper.name)(_mapper)


def mapper_of(plan: Plan) -> Mapper:
    """The mapper whose plans `plan` is one of."""
    mapper: Mapper = MAPPERS.get(plan_mapper(plan))
    return mapper


__all__ = ["MAPPERS", "DepthFirstMapper", "Mapper", "MultiCoreMapper", "NestMapper", "PhasesMapper", "PlannedMapper",
           "mapper_of"]
