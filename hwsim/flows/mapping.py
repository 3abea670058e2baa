"""`hwsim map`: the mapping hwsim would run a network with — the dataflow's rules, or the best one a search finds
under an objective — as data to read, save, edit and replay."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hwsim.analytic.estimate import NetworkEstimate, estimate_network
from hwsim.flows.inputs import HardwareLike, NetworkLike, as_graph, as_hardware
from hwsim.flows.run import RunSpec, resolve_run
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.nest.format import NetworkMapping, save_mapping
from hwsim.search.cost import OBJECTIVE_UNITS
from hwsim.search.layer import Effort
from hwsim.search.names import MAPPERS, OBJECTIVE_NAMES
from hwsim.search.network import Progress, SearchedMapping, SearchSettings, unique_shapes
from hwsim.workload.ir import Graph


@dataclass(frozen=True)
class MappedNetwork:
    """A network's mapping on one accelerator, with the closed form of each layer (passes, counts, bound) and,
    for a searched mapping, what the search chose per layer beside the rules."""

    graph: Graph
    hardware: Accelerator
    mapping: NetworkMapping
    estimate: NetworkEstimate
    search: SearchedMapping | None = None


def map_network(network: NetworkLike, hw: HardwareLike, batch: int = 1, out: str | Path | None = None,
                search: SearchSettings | None = None, progress: Progress | None = None,
                bits: int | None = None) -> MappedNetwork:
    """hwsim's mapping of `batch` images at `bits`-bit words (default: the graph's, else the config's) — the
    dataflow's rules, or with `search` the best found under its objective — checked, priced by its closed form,
    and written to `out` (YAML, or JSON for a .json path)."""
    return mapped_network(resolve_run(network, hw, batch, search, bits=bits, search_progress=progress), out)


def mapped_network(spec: RunSpec, out: str | Path | None = None) -> MappedNetwork:
    """The spec's loop-nest mapping priced by its closed form (and what a search chose), written to `out`."""
    if out is not None:
        save_mapping(spec.mapping, out)
    return MappedNetwork(spec.graph, spec.hardware, spec.mapping,
                         estimate_network(spec.graph, spec.hardware, spec.mapping), spec.search)


def shapes_to_search(network: NetworkLike, hw: HardwareLike, batch: int = 1) -> int:
    """How many weighted layers of distinct shape a search of `network` looks at (for a progress bar)."""
    return unique_shapes(as_graph(network), as_hardware(hw), batch)


__all__ = ["MAPPERS", "OBJECTIVE_NAMES", "OBJECTIVE_UNITS", "Effort", "MappedNetwork", "SearchSettings",
           "map_network", "mapped_network", "shapes_to_search"]
