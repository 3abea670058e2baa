"""A phased execution as data (Minakova & Stefanov): the network's edges, each layer's phases with the rows
every phase produces, reads and frees, and the order the phases fire in.

The mapper derives it from the phases per layer (`hwsim.mapping.phases.phased_graph`); the step generator and
the CSDF model (`hwsim.analytic.csdf`) both read it as data.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from hwsim.workload.ir import Graph


@dataclass(frozen=True)
class Edge:
    """A producer's output consumed by one input (port) of a consumer: one buffer."""

    producer: int  # layer index
    consumer: int  # layer index
    port: int  # which input of the consumer
    rows: int  # height of the tensor
    row_elements: int  # elements per row (width · channels)
    name: str  # "producer->consumer" (with ":port" for the second and later inputs)


@dataclass(frozen=True)
class PhasedLayer:
    """One layer's phases: output row bounds and, per input edge, the rows each phase reads and frees."""

    phases: int
    out_bounds: np.ndarray  # phases + 1 output row boundaries
    read_first: tuple[np.ndarray, ...]  # per input port: first input row phase p reads
    need_end: tuple[np.ndarray, ...]  # per input port: input rows that must exist for phase p
    release_to: tuple[np.ndarray, ...]  # per input port: rows below this are freed after phase p


@dataclass(frozen=True)
class PhasedGraph:
    """A graph whose layers run in phases, with its edges and the order the phases fire in."""

    graph: Graph
    phases: dict[str, int]
    edges: tuple[Edge, ...]
    layers: tuple[PhasedLayer, ...]

    @cached_property
    def inputs_of(self) -> tuple[tuple[int, ...], ...]:
        """Per layer, its input edges (indices into `edges`) by port."""
        found: list[list[int]] = [[] for _ in self.graph.layers]
        for e, edge in enumerate(self.edges):
            found[edge.consumer].append(e)
        return tuple(tuple(sorted(f, key=lambda e: self.edges[e].port)) for f in found)

    @cached_property
    def outputs_of(self) -> tuple[tuple[int, ...], ...]:
        """Per layer, the edges its output feeds."""
        found: list[list[int]] = [[] for _ in self.graph.layers]
        for e, edge in enumerate(self.edges):
            found[edge.producer].append(e)
        return tuple(tuple(f) for f in found)

    @property
    def firings(self) -> int:
        return sum(l.phases for l in self.layers)

    def firing_order(self) -> np.ndarray:
        """Layer index of every firing, demand-driven from the network outputs (see the module docstring)."""
        fired = [0] * len(self.layers)
        order: list[int] = []
        sinks = [j for j, outs in enumerate(self.outputs_of) if not outs]
        for sink in sinks:
            while fired[sink] < self.layers[sink].phases:
                self._demand(sink, fired, order)
        return np.array(order, dtype=np.int64)

    def _demand(self, target: int, fired: list[int], order: list[int]) -> None:
        """Fire `target`'s next phase, firing its producers first as far as it needs."""
        stack = [target]
        while stack:
            j = stack[-1]
            p = fired[j]
            missing = -1
            for e in self.inputs_of[j]:
                edge = self.edges[e]
                producer = self.layers[edge.producer]
                if producer.out_bounds[fired[edge.producer]] < self.layers[j].need_end[edge.port][p]:
                    missing = edge.producer
                    break
            if missing < 0:
                order.append(j)
                fired[j] += 1
                stack.pop()
            else:
                stack.append(missing)


__all__ = ["Edge", "PhasedGraph", "PhasedLayer"]
