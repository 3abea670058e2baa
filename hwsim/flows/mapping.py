"""`hwsim map`: the mapping hwsim would run a network with, as data to read, save, edit and replay."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hwsim.analytic.estimate import NetworkEstimate, estimate_network
from hwsim.flows.inputs import HardwareLike, NetworkLike, as_graph, as_hardware, as_mapping
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.nest.format import NetworkMapping, save_mapping
from hwsim.workload.ir import Graph


@dataclass(frozen=True)
class MappedNetwork:
    """A network's mapping on one accelerator, with the closed form of each layer (passes, counts, bound)."""

    graph: Graph
    hardware: Accelerator
    mapping: NetworkMapping
    estimate: NetworkEstimate


def map_network(network: NetworkLike, hw: HardwareLike, batch: int = 1, out: str | Path | None = None) -> MappedNetwork:
    """hwsim's default mapping of `batch` images (the dataflow's rules), checked, priced by its closed form, and
    written to `out` (YAML, or JSON for a .json path) when given."""
    graph, accelerator = as_graph(network), as_hardware(hw)
    mapping = as_mapping(None, graph, accelerator, batch)
    if out is not None:
        save_mapping(mapping, out)
    return MappedNetwork(graph, accelerator, mapping, estimate_network(graph, accelerator, mapping))


__all__ = ["MappedNetwork", "map_network"]
