"""The closed form of a multi-core allocation: each work's counts on its core, and a pipeline bound.

Every work (one image of a layer's part on a core: `hwsim.mapping.multicore`) is priced like a layer of a
single-core run, on its core's hardware, from the part's mapping as data: the part computes `channels` of the
layer's output channels, so its layer is the layer with that many. Its DRAM transfers start at the offsets the
nest gives, its outputs `first_channel` channels into the layer's output tensor.

A tensor the allocation forwards over the links (a `Forward`, data) changes two works' counts: its producer's ofmap
words to DRAM (updates there) are filled into the inbox in the readers' GLB instead, and cross the links on the
fewest hops between the two cores (counted here by a breadth-first walk of the config's links); its reader's ifmap
words from DRAM are read from that inbox (a GLB read) instead: all of them for a loop nest (it reads one tensor),
the tensor's words for a streamed layer (it reads each input whole, one of them from the inbox). Their DRAM
transfers leave the address check, and their latency bound and energy are those of the changed counts.

The pipeline bound is a lower bound of the simulated latency, the largest of:

- the longest chain of works, each at its own latency bound, along the edges a run cannot break: a work waits
  for the works producing what it reads (through layers without steps; a band of rows reading its producer
  directly, for the producer's bands holding the input rows its windows reach, derived here from the band's
  geometry), and a core runs its works one at a time, image after image in layer order, a layer's parts in plan
  order — the pipeline's fill, its steady state set by the slowest stage and its drain, all in one longest path;
- the shared DRAM: every work's DRAM bytes over the DRAM's peak bandwidth (the cores share its channels).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace

from hwsim.analytic.estimate import LayerEstimate, NetworkEstimate, estimate_layer, latency_bound, layer_energy
from hwsim.analytic.nest_addresses import AddressSums, dram_transfer_sums
from hwsim.hardware.energy import energy_table
from hwsim.hardware.precision import layer_hardware
from hwsim.hardware.schema import Accelerator
from hwsim.hardware.tree import core_hardware
from hwsim.mapping.nest.format import LoopNest
from hwsim.mapping.plans import AllocationPlan, Forward, PartMapping, work_name
from hwsim.sparsity.profile import DENSE_LAYER
from hwsim.vocab import Access, Level, Operand
from hwsim.workload.ir import Graph, Layer, LayerKind


@dataclass(frozen=True)
class PipelineBound:
    """The pipeline bound (module docstring) and its parts, in cycles."""

    path_cycles: int  # the longest chain of works at their bounds
    dram_cycles: int  # every work's DRAM bytes at the shared DRAM's peak bandwidth
    core_cycles: tuple[int, ...]  # per core, the sum of its works' bounds (on the path's way: a stage's load)
    reads_from: tuple[tuple[int, ...], ...] = ()  # per work, the works whose data it reads (the data edges)

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
    link_words: int  # words the links carry (each hop counted): the forwarded tensors'


def _part_layer(layer: Layer, part: PartMapping) -> Layer:
    """The layer a part computes: `channels` of its output channels, or its band of `rows` output rows (module
    docstring), or all of it."""
    if part.rows:
        return _band(layer, part.first_row, part.rows)[0]
    if not part.channels:
        return layer
    return replace(layer, out_shape=layer.out_shape._replace(c=part.channels))


def _band(layer: Layer, first: int, rows: int) -> tuple[Layer, int]:
    """Output rows first .. first + rows - 1 of a 2-D convolution as a layer of their own, and the first input row
    they read: the windows of the first output row start `first` strides below the top padding, those of the last
    reach (kernel − 1) dilations further; what of that lies above or below the input is the band's padding."""
    stride, dilation, kernel, pad = layer.stride[0], layer.dilation[0], layer.kernel[0], layer.padding
    top_row = first * stride - pad.top
    past_last = (first + rows - 1) * stride - pad.top + (kernel - 1) * dilation + 1
    low, high = max(top_row, 0), min(past_last, layer.in_shape.h)
    band = replace(layer, in_shapes=(layer.in_shape._replace(h=high - low),),
                   out_shape=layer.out_shape._replace(h=rows),
                   padding=pad._replace(top=low - top_row, bottom=past_last - high))
    return band, low


def _part_offsets(layer: Layer, part: PartMapping, hw: Accelerator) -> AddressSums:
    """The part's DRAM transfers and start offsets in their tensors: its outputs lie `first_channel` channels, or
    its band's `first_row` rows, into the layer's output tensor, a band's inputs its first input row's into the
    input tensor, one channel a whole map from the next (its filters in a region of their own)."""
    assert isinstance(part.entry, LoopNest)
    if part.rows:
        band, low = _band(layer, part.first_row, part.rows)
        sums = dram_transfer_sums(band, part.entry, 1, hw, layer.in_shape.h * layer.in_shape.w,
                                  layer.out_shape.h * layer.out_shape.w)
        shifts = {"ifmap": low * layer.in_shape.w, "psum": part.first_row * layer.out_shape.w,
                  "ofmap": part.first_row * layer.out_shape.w}
    else:
        sums = dram_transfer_sums(_part_layer(layer, part), part.entry, 1, hw)
        if not part.channels:
            return sums
        shift = part.first_channel * (layer.out_shape.elements // layer.out_shape.c)
        shifts = {"ifmap": 0, "psum": shift, "ofmap": shift}
    return {(operand, op): (n, total + n * shifts.get(operand, 0)) for (operand, op), (n, total) in sums.items()}


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


def estimate_allocation(graph: Graph, hw: Accelerator, plan: AllocationPlan, parts: tuple[PartMapping, ...],
                        sent: tuple[Forward, ...] = ()) -> AllocationEstimate:
    """The closed form of `plan`, its layers' parts mapped as `parts` say and the tensors `sent` forwarded over the
    links (data: the mapper's), module docstring."""
    cores = hw.all_cores
    priced = [(part, *_priced(graph.layer(part.layer), part, hw)) for part in parts]
    link_words = 0
    for f in sent:
        for k in (i for i, (part, _, _) in enumerate(priced) if part.layer == f.producer):  # each of its tiles
            part, e, offsets = priced[k]
            moved = int(e.counts.transfers[Level.DRAM, Operand.OFMAP, Access.UPDATE])
            priced[k] = (part, _moved(e, hw, part.core, (Level.DRAM, Operand.OFMAP, Access.UPDATE),
                                      (Level.GLB, Operand.OFMAP, Access.FILL)), _without(offsets, ("ofmap", "update")))
            link_words += moved * hops(hw, part.core, f.core) * plan.images
        for j in (i for i, (p, _, _) in enumerate(priced) if p.layer in f.consumers):
            part, e, offsets = priced[j]
            whole = isinstance(part.entry, LoopNest)  # a nest reads only it; a streamed layer reads it whole
            priced[j] = (part, _moved(e, hw, part.core, (Level.DRAM, Operand.IFMAP, Access.READ),
                                      (Level.GLB, Operand.IFMAP, Access.READ), None if whole else f.words),
                         _without(offsets, ("ifmap", "read")))
    split = {p.layer for p in parts if p.channels or p.rows}
    tiles = _tiles(parts)
    works: list[LayerEstimate] = []
    on: list[int] = []
    addresses: dict[str, AddressSums] = {}
    for image in range(plan.images):
        for k, (part, e, offsets) in enumerate(priced):
            name = work_name(part.layer, cores[part.core].name, part.layer in split, image, plan.images, tiles[k])
            works.append(replace(e, layer=replace(e.layer, name=name)))
            on.append(part.core)
            if offsets is not None:
                addresses[name] = offsets
    estimate = NetworkEstimate(graph.name, hw.name, plan.images, hw.clock_hz, tuple(works))
    return AllocationEstimate(estimate, tuple(on), addresses, pipeline_bound(graph, hw, plan, parts, works, on),
                              link_words)


def _tiles(parts: tuple[PartMapping, ...]) -> list[int | None]:
    """Per part, its index among its layer's parts on its core when that core computes several (its tile)."""
    count = Counter((p.layer, p.core) for p in parts)
    seen: Counter[tuple[str, int]] = Counter()
    out: list[int | None] = []
    for p in parts:
        out.append(seen[p.layer, p.core] if count[p.layer, p.core] > 1 else None)
        seen[p.layer, p.core] += 1
    return out


def _reads(graph: Graph, reader: PartMapping, producer: PartMapping) -> bool:
    """Whether part `reader` reads what part `producer` writes: a band of rows that reads its producer's output
    directly reads the input rows of its band (`_band`), so only a band of the producer meeting them; any other
    part reads all of it (through a layer without steps, its rows are not the producer's)."""
    if not reader.rows or not producer.rows:
        return True
    layer = graph.layer(reader.layer)
    if producer.layer not in {graph.producer(t).name for t in layer.inputs}:
        return True
    band, low = _band(layer, reader.first_row, reader.rows)
    return producer.first_row < low + band.in_shape.h and low < producer.first_row + producer.rows


def _moved(e: LayerEstimate, hw: Accelerator, core: int, source: tuple[Level, Operand, Access],
           target: tuple[Level, Operand, Access], words: int | None = None) -> LayerEstimate:
    """`e` with `words` of its words at `source` (None: all) counted at `target` instead, its bound and energy
    those of the new counts."""
    transfers = e.counts.transfers.copy()
    moving = int(transfers[source]) if words is None else words
    transfers[target] += moving
    transfers[source] -= moving
    counts = replace(e.counts, transfers=transfers)
    view = layer_hardware(core_hardware(hw, core), e.layer.word_bits)
    latency = latency_bound(counts, view)
    energy, by_level = layer_energy(counts, energy_table(view), latency.bound_cycles)
    return replace(e, counts=counts, latency=latency, energy_pj=energy, level_operand_pj=by_level)


def _without(offsets: AddressSums | None, key: tuple[str, str]) -> AddressSums | None:
    """The DRAM transfers `offsets` sums, those of `key` (operand, direction) left out (they no longer reach DRAM)."""
    return None if offsets is None else {k: v for k, v in offsets.items() if k != key}


def hops(hw: Accelerator, source: int, target: int) -> int:
    """The fewest links between cores `source` and `target` (through other cores), by a breadth-first walk."""
    names = [c.name for c in hw.all_cores]
    ends = [pair for link in hw.links for pair in (link.between, link.between[::-1])]
    seen, frontier, depth = {names[source]}, {names[source]}, 0
    while frontier:
        if names[target] in frontier:
            return depth
        frontier = {b for a, b in ends if a in frontier and b in names and b not in seen}
        seen |= frontier
        depth += 1
    raise ValueError(f"no links join cores {names[source]} and {names[target]}")


def pipeline_bound(graph: Graph, hw: Accelerator, plan: AllocationPlan, parts: tuple[PartMapping, ...],
                   works: list[LayerEstimate], on: list[int]) -> PipelineBound:
    """The pipeline bound of the works (in schedule order: image after image, parts in graph order) of `plan`."""
    allocated = {p.layer for p in parts}
    per_image = len(parts)
    first_of: dict[str, list[int]] = {}
    for k, part in enumerate(parts):
        first_of.setdefault(part.layer, []).append(k)
    finish = [0] * len(works)
    reads_from: list[tuple[int, ...]] = []
    last_on_core: dict[int, int] = {}
    for k, e in enumerate(works):
        image, index = divmod(k, per_image)
        sources = _producers(graph, allocated, graph.layer(parts[index].layer))
        reads_from.append(tuple(image * per_image + j for source in sources for j in first_of[source]
                                if _reads(graph, parts[index], parts[j])))
        ready = [finish[j] for j in reads_from[-1]]
        if on[k] in last_on_core:
            ready.append(finish[last_on_core[on[k]]])
        finish[k] = max(ready, default=0) + e.latency.bound_cycles
        last_on_core[on[k]] = k
    dram_bytes = sum(e.dram_bytes for e in works)
    dram = math.ceil(dram_bytes / hw.dram.bandwidth_bytes_per_cycle)
    per_core = [0] * len(hw.all_cores)
    for e, core in zip(works, on, strict=True):
        per_core[core] += e.latency.bound_cycles
    return PipelineBound(max(finish, default=0), dram, tuple(per_core), tuple(reads_from))


__all__ = ["AllocationEstimate", "PipelineBound", "estimate_allocation", "hops", "pipeline_bound"]
