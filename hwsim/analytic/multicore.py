"""The closed form of a multi-core allocation: each work's counts on its core, and a pipeline bound.

Every work (one image of a layer's part on a core: `hwsim.mapping.multicore`) is priced like a layer of a
single-core run, on its core's hardware, from the part's mapping as data: the part computes `channels` of the
layer's output channels, so its layer is the layer with that many. Its DRAM transfers start at the offsets the
nest gives, its outputs `first_channel` channels into the layer's output tensor.

The pipeline bound is a lower bound of the simulated latency, the largest of:

- the longest chain of works, each at its own latency bound, along the edges a run cannot break: a work waits
  for the works producing what it reads (through layers without steps), and a core runs its works one at a
  time, image after image in layer order — the pipeline's fill, its steady state set by the slowest stage and
  its drain, all in one longest path;
- the shared DRAM: every work's DRAM bytes over the DRAM's peak bandwidth (the cores share its channels).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from hwsim.analytic.estimate import LayerEstimate, NetworkEstimate, estimate_layer
from hwsim.analytic.nest_addresses import AddressSums, dram_transfer_sums
from hwsim.hardware.energy import energy_table
from hwsim.hardware.precision import layer_hardware
from hwsim.hardware.schema import Accelerator
from hwsim.hardware.tree import core_hardware
from hwsim.mapping.nest.format import LoopNest
from hwsim.mapping.plans import AllocationPlan, PartMapping, work_name
from hwsim.sparsity.profile import DENSE_LAYER
from hwsim.workload.ir import Graph, Layer, LayerKind


@dataclass(frozen=True)
class PipelineBound:
    """The pipeline bound (module docstring) and its parts, in cycles."""

    path_cycles: int  # the longest chain of works at their bounds
    dram_cycles: int  # every work's DRAM bytes at the shared DRAM's peak bandwidth
    core_cycles: tuple[int, ...]  # per core, the sum of its works' bounds (on the path's way: a stage's load)

    @property
    def cycles(self) -> int:
        return max(self.path_cycles, self.dram_cycles)

    @property
    def bottleneck(self) -> str:
        return "dram" if self.dram_cycles > self.path_cycles else "path"


@dataclass(frozen=True)
class AllocationEstimate:
    """Every work of an allocation priced on its core (one `LayerEstimate` per work, named as the work), the core
    each ran on, the DRAM offsets of the nest-mapped works, and the pipeline bound."""

    estimate: NetworkEstimate
    cores: tuple[int, ...]
    addresses: dict[str, AddressSums]
    bound: PipelineBound
    link_words: int  # words the links carry: none, tensors pass between cores through the shared DRAM


def _part_layer(layer: Layer, part: PartMapping) -> Layer:
    """The layer a part computes: `channels` of its output channels (all when 0)."""
    if not part.channels:
        return layer
    return replace(layer, out_shape=layer.out_shape._replace(c=part.channels))


def _part_offsets(layer: Layer, part: PartMapping, hw: Accelerator) -> AddressSums:
    """The part's DRAM transfers and start offsets in their tensors: its outputs lie `first_channel` channels
    into the layer's output tensor (its filters in a region of their own)."""
    assert isinstance(part.entry, LoopNest)
    sums = dram_transfer_sums(_part_layer(layer, part), part.entry, 1, hw)
    if not part.channels:
        return sums
    shift = part.first_channel * (layer.out_shape.elements // layer.out_shape.c)
    return {(operand, op): (n, total + n * shift if operand in ("psum", "ofmap") else total)
            for (operand, op), (n, total) in sums.items()}


_PRICED: dict[tuple[object, ...], tuple[PartMapping, LayerEstimate, AddressSums | None]] = {}
_PRICED_MAX = 4096  # parts kept priced (a search prices the same part in many allocations)


def _priced(layer: Layer, part: PartMapping, hw: Accelerator) -> tuple[LayerEstimate, AddressSums | None]:
    """One image of a part on its core: its estimate and, nest-mapped, its DRAM offsets; kept per part (the same
    mapping object: a mapping is data with unhashable parts, so it is matched by identity and held)."""
    key = (layer, part.core, part.first_channel, part.channels, hw, id(part.entry))
    kept = _PRICED.get(key)
    if kept is not None and kept[0].entry is part.entry:
        return kept[1], kept[2]
    view = layer_hardware(core_hardware(hw, part.core), layer.word_bits)
    e = estimate_layer(_part_layer(layer, part), part.entry, view, 1, energy_table(view), DENSE_LAYER)
    offsets = _part_offsets(layer, part, view) if isinstance(part.entry, LoopNest) else None
    if len(_PRICED) >= _PRICED_MAX:
        _PRICED.clear()
    _PRICED[key] = (part, e, offsets)
    return e, offsets


def _producers(graph: Graph, allocated: set[str], layer: Layer) -> list[str]:
    """The allocated layers whose outputs `layer` reads, through layers without steps."""
    found: list[str] = []
    for tensor in layer.inputs:
        source = graph.producer(tensor)
        if source.name in allocated:
            found.append(source.name)
        elif source.kind is not LayerKind.INPUT:
            found += _producers(graph, allocated, source)
    return found


def estimate_allocation(graph: Graph, hw: Accelerator, plan: AllocationPlan,
                        parts: tuple[PartMapping, ...]) -> AllocationEstimate:
    """The closed form of `plan`, its layers' parts mapped as `parts` say (data: the mapper's), module docstring."""
    cores = hw.all_cores
    priced = [(part, *_priced(graph.layer(part.layer), part, hw)) for part in parts]
    split = {p.layer for p in parts if p.channels}
    works: list[LayerEstimate] = []
    on: list[int] = []
    addresses: dict[str, AddressSums] = {}
    for image in range(plan.images):
        for part, e, offsets in priced:
            name = work_name(part.layer, cores[part.core].name, part.layer in split, image, plan.images)
            works.append(replace(e, layer=replace(e.layer, name=name)))
            on.append(part.core)
            if offsets is not None:
                addresses[name] = offsets
    estimate = NetworkEstimate(graph.name, hw.name, plan.images, hw.clock_hz, tuple(works))
    return AllocationEstimate(estimate, tuple(on), addresses, pipeline_bound(graph, hw, plan, parts, works, on), 0)


def pipeline_bound(graph: Graph, hw: Accelerator, plan: AllocationPlan, parts: tuple[PartMapping, ...],
                   works: list[LayerEstimate], on: list[int]) -> PipelineBound:
    """The pipeline bound of the works (in schedule order: image after image, parts in graph order) of `plan`."""
    allocated = {p.layer for p in parts}
    per_image = len(parts)
    first_of: dict[str, list[int]] = {}
    for k, part in enumerate(parts):
        first_of.setdefault(part.layer, []).append(k)
    finish = [0] * len(works)
    last_on_core: dict[int, int] = {}
    for k, e in enumerate(works):
        image, index = divmod(k, per_image)
        sources = _producers(graph, allocated, graph.layer(parts[index].layer))
        ready = [finish[image * per_image + j] for source in sources for j in first_of[source]]
        if on[k] in last_on_core:
            ready.append(finish[last_on_core[on[k]]])
        finish[k] = max(ready, default=0) + e.latency.bound_cycles
        last_on_core[on[k]] = k
    dram_bytes = sum(e.dram_bytes for e in works)
    dram = math.ceil(dram_bytes / hw.dram.bandwidth_bytes_per_cycle)
    per_core = [0] * len(hw.all_cores)
    for e, core in zip(works, on, strict=True):
        per_core[core] += e.latency.bound_cycles
    return PipelineBound(max(finish, default=0), dram, tuple(per_core))


__all__ = ["AllocationEstimate", "PipelineBound", "estimate_allocation", "pipeline_bound"]
