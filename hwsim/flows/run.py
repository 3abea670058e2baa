"""One run's inputs, resolved once: `RunSpec`, what every command maps, schedules, simulates or estimates.

`resolve_run` turns what a user gives (a network name, file or graph; a config name, file or accelerator; a
batch; `--bits`; a mapping or plan file, a search, or nothing; the zeros; clock overrides) into a `RunSpec`: the
graph with each layer's word, the accelerator the run is priced on, the batch, the layers' zeros and the plan
(checked against both), with notes saying how the words were chosen. The flows then take the spec as it is —
nothing downstream resolves a word, loads a mapping or checks a plan again:

    spec = resolve_run("alexnet", "eyeriss-v1")       # inputs → RunSpec
    schedule = spec.schedule()                          # plan → Schedule (the plan's mapper)
    sim = simulate_run(spec, "traces/alexnet.h5")       # Schedule → machine → sink → derive
    report = check_simulation(sim)                      # closed form and trace validator
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from hwsim.errors import HwsimError
from hwsim.flows.inputs import (
    HardwareLike,
    MappingLike,
    NetworkLike,
    SparsityLike,
    as_graph,
    as_hardware,
    as_profile,
    check_batch,
)
from hwsim.flows.precision import precision_notes, run_precision
from hwsim.hardware.precision import at_precision
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.mapper import default_mapping
from hwsim.mapping.mappers import Mapper, mapper_of
from hwsim.mapping.nest.format import MappingError, NetworkMapping
from hwsim.mapping.plans import (
    AllocationPlan,
    AllocationRequest,
    DepthFirstPlan,
    PhasePlan,
    Plan,
    SlotPlan,
    load_plan,
)
from hwsim.mapping.schedule import Schedule
from hwsim.sparsity.profile import DENSE, SparsityProfile
from hwsim.workload.ir import Graph

if TYPE_CHECKING:  # the search engine is imported only by a run that searches (`_searched`)
    from hwsim.search.allocation import AllocationSearch
    from hwsim.search.network import Progress as SearchProgress
    from hwsim.search.network import SearchedMapping, SearchSettings


@dataclass(frozen=True)
class RunSpec:
    """A run's inputs, resolved: the graph (each layer's word set), the accelerator it is priced on, the batch,
    the plan (checked against both), the layers' zeros, and how the words were chosen."""

    graph: Graph
    hardware: Accelerator
    batch: int
    plan: Plan
    sparsity: SparsityProfile = DENSE
    notes: tuple[str, ...] = ()
    search: SearchedMapping | None = None  # what a search chose per layer beside the rules, when it made the plan
    allocation_search: AllocationSearch | None = None  # what an allocation search tried, when it made the plan

    @property
    def mapper(self) -> Mapper:
        """The mapper whose plan this is."""
        return mapper_of(self.plan)

    @property
    def mapping(self) -> NetworkMapping:
        """The loop-nest mapping of a layer-by-layer run (an error for another plan)."""
        if not isinstance(self.plan, NetworkMapping):
            raise HwsimError(f"{self.graph.name}: a {self.mapper.name} plan has no loop-nest mapping; this "
                             "command estimates loop nests (use hwsim depthfirst, phases or memplan for its model)")
        return self.plan

    def schedule(self) -> Schedule:
        """The plan's steps, from its mapper."""
        return self.mapper.schedule(self.plan, self.graph, self.hardware, self.sparsity)


def resolve_run(network: NetworkLike, hw: HardwareLike, batch: int | None = None, mapping: MappingLike = None,
                sparsity: SparsityLike = None, bits: int | None = None, clock_power_w: float | None = None,
                throughput_gmacs: float | None = None, search_progress: SearchProgress | None = None) -> RunSpec:
    """The run `network` on `hw` asks for: `batch` images (None: the batch the network's file declares, else 1),
    words by `bits` (else the graph's declared widths, else the config's),
    the zeros of `sparsity` (None: dense), the plan `mapping` names (None: the dataflow's rules for `batch`
    images; a search; a loop-nest mapping or another mapper's plan, given or in a file), checked once, and the
    clock power and its reference throughput where given. A search reports each layer to `search_progress`."""
    given_graph, config = as_graph(network), as_hardware(hw)
    batch, batch_notes = _batch(batch, given_graph)
    graph, priced = run_precision(given_graph, config, bits)
    priced = with_control(priced, clock_power_w, throughput_gmacs)
    profile = as_profile(sparsity, graph) or DENSE
    allocated = _allocation(mapping, graph, priced, check_batch(batch)) if isinstance(mapping, AllocationRequest) \
        else None
    plan, searched = (allocated[0], None) if allocated else _plan(mapping, graph, priced, batch, profile,
                                                                  search_progress)
    if isinstance(plan, AllocationPlan) and profile is not DENSE:
        raise HwsimError(f"{graph.name}: a multi-core allocation runs dense (zeros are not modelled across cores "
                         "yet); drop --sparsity and --activations-from")
    if isinstance(plan, PhasePlan) and plan.bits != priced.precision_bits:
        priced = at_precision(config, plan.bits)  # a phase plan sizes its buffers at its own word
    notes = (*batch_notes, *precision_notes(given_graph, config, bits))
    try:
        mapper_of(plan).check(plan, graph, priced)
    except HwsimError as exc:  # name the file the plan came from
        if not isinstance(mapping, (str, Path)):
            raise
        raise MappingError(f"{mapping}: {exc}") from None
    run_batch = plan.batch if isinstance(plan, (NetworkMapping, AllocationPlan)) else check_batch(batch)
    return RunSpec(graph, priced, run_batch, plan, profile, notes, searched, allocated[1] if allocated else None)


def _batch(asked: int | None, graph: Graph) -> tuple[int, tuple[str, ...]]:
    """The run's batch: `asked`, else the one the network's file declares; a note where `asked` overrides it."""
    if asked is None:
        return graph.declared_batch, ()
    if graph.declared_batch not in (1, asked):
        images = f"{asked} image{'s' if asked > 1 else ''}"
        return asked, (f"{graph.name} declares batch {graph.declared_batch}; this run processes {images} as "
                       "--batch asks",)
    return asked, ()


def _plan(mapping: MappingLike, graph: Graph, hw: Accelerator, batch: int, profile: SparsityProfile,
          progress: SearchProgress | None) -> tuple[Plan, SearchedMapping | None]:
    """The plan `mapping` names: the rules, a search's result (and what it chose), or a given or saved plan (a
    loop-nest mapping for another batch is an error)."""
    if mapping is None:
        return default_mapping(graph, hw, check_batch(batch), check=False), None
    assert not isinstance(mapping, AllocationRequest)  # made by `_allocation`
    if not isinstance(mapping, (str, Path, NetworkMapping, DepthFirstPlan, PhasePlan, SlotPlan,
                                AllocationPlan)):  # a search
        searched = _searched(mapping, graph, hw, check_batch(batch), profile, progress)
        return searched.mapping, searched
    given = load_plan(mapping) if isinstance(mapping, (str, Path)) else mapping
    if isinstance(given, NetworkMapping) and batch not in (1, given.batch):
        raise MappingError(f"mapping of {given.network!r}: made for batch {given.batch}, asked for {batch}; map the "
                           "network again with --batch, or drop --batch")
    if isinstance(given, AllocationPlan) and batch not in (1, given.images):
        raise MappingError(f"allocation of {given.network!r}: streams {given.images} images (plan.images), asked "
                           f"for {batch}; set plan.images to {batch}, or drop --batch")
    return given, None


def _allocation(request: AllocationRequest, graph: Graph, hw: Accelerator,
                images: int) -> tuple[AllocationPlan, AllocationSearch | None]:
    """The allocation `request` asks for: a fixed rule's, or the one a search finds (its module imported here) and
    what it tried."""
    if request.rule == "search":
        from hwsim.search.allocation import search_allocation

        found = search_allocation(graph, hw, images, request.objective)
        return found.plan, found
    from hwsim.mapping.multicore import allocate

    return allocate(graph, hw, images, request.rule, request.tiles), None


def _searched(settings: SearchSettings, graph: Graph, hw: Accelerator, batch: int, profile: SparsityProfile,
              progress: SearchProgress | None) -> SearchedMapping:
    """The mapping a search finds under `settings` (pricing the run's zeros unless they name their own); the
    search engine is imported here, so a run that does not search does not load it."""
    from hwsim.search.network import search_network

    chosen = settings if settings.sparsity is not None else replace(settings, sparsity=profile)
    return search_network(graph, hw, batch, chosen, progress)


def with_control(hw: Accelerator, clock_power_w: float | None, throughput_gmacs: float | None) -> Accelerator:
    """`hw` with its clock power (W) and the reference throughput (GMAC/s) it is quoted at replaced."""
    control = hw.control
    if clock_power_w is not None:
        control = replace(control, clock_power_w=clock_power_w)
    if throughput_gmacs is not None:
        control = replace(control, reference_throughput_gmacs=throughput_gmacs)
    return hw if control == hw.control else replace(hw, control=control)


__all__ = ["RunSpec", "resolve_run", "with_control"]
