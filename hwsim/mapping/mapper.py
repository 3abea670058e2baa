"""Mapping a network layer by layer: each weighted layer by a loop nest of the array's dataflow, every other
layer streamed; the mapping is data (`hwsim.mapping.nest.format.NetworkMapping`), checked, then turned into steps.

`default_mapping` is what hwsim uses when given none: the dataflow's default
(for row stationary, CNNergy's rules). `check_mapping` rejects a mapping that
does not fit the network or the hardware, naming the layer and the field.
`network_schedule` emits the steps of a (checked) mapping.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from hwsim.hardware.precision import layer_hardware
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.dataflows import dataflow_of
from hwsim.mapping.layout import DramLayout, dram_layout
from hwsim.mapping.nest.format import LayerMapping, LoopNest, MappingError, NetworkMapping, Streamed
from hwsim.mapping.nest.problem import has_nest, lowering_for, nest_problem
from hwsim.mapping.nest.steps import L2_BUFFERS, NestSteps, TensorAddresses
from hwsim.mapping.nest.validate import check_nest
from hwsim.mapping.schedule import NestInfo, Schedule, StreamInfo, Work, WorkInfo
from hwsim.mapping.stream import stream_steps, stream_tiles
from hwsim.sparsity.layer import LayerSparsity
from hwsim.sparsity.profile import SparsityProfile
from hwsim.vocab import Operand
from hwsim.workload.ir import Graph, Layer, LayerKind

NO_STEPS = frozenset({LayerKind.INPUT, LayerKind.OUTPUT, LayerKind.PASSTHROUGH})


def layer_mapping(layer: Layer, hw: Accelerator, batch: int) -> LayerMapping:
    """The default mapping of one layer on `hw` (its dataflow's default nest, or streamed)."""
    if has_nest(layer):
        df = dataflow_of(hw)
        return df.default(nest_problem(layer, batch, lowering_for(layer, df.lowering)), hw)
    return Streamed(layer.name, stream_tiles(layer, hw))


def default_mapping(graph: Graph, hw: Accelerator, batch: int = 1, check: bool = True) -> NetworkMapping:
    """hwsim's mapping of `graph` on `hw` for `batch` images when none is given, checked like a given one (unless
    the caller checks it: `check`): a default heuristic that yields an infeasible nest is an error, never run."""
    layers = tuple(layer_mapping(l, layer_hardware(hw, l.word_bits), batch) for l in graph if l.kind not in NO_STEPS)
    mapping = NetworkMapping(graph.name, hw.name, hw.pe_array.dataflow, batch, layers)
    if check:
        check_mapping(mapping, graph, hw)
    return mapping


def check_mapping(mapping: NetworkMapping, graph: Graph, hw: Accelerator) -> None:
    """Raise MappingError for the first layer the mapping does not fit (its network, its hardware)."""
    if mapping.network != graph.name:
        raise MappingError(f"the mapping is of network {mapping.network!r}, not {graph.name!r}; map {graph.name} "
                           "(hwsim map)")
    if mapping.dataflow != hw.pe_array.dataflow:
        raise MappingError(f"mapping of {mapping.network!r}: dataflow {mapping.dataflow!r}, but {hw.name} runs "
                           f"{hw.pe_array.dataflow!r}; map the network for this hardware (hwsim map)")
    for layer in graph:
        if layer.kind in NO_STEPS:
            continue
        check_layer(mapping, layer, layer_hardware(hw, layer.word_bits))


def check_layer(mapping: NetworkMapping, layer: Layer, hw: Accelerator) -> None:
    """Raise MappingError if the mapping's entry for `layer` does not fit it on `hw` (the layer's word)."""
    entry = mapping.layer(layer.name)
    if isinstance(entry, LoopNest):
        if not has_nest(layer):
            raise MappingError(f"layer {layer.name!r}: a {layer.kind} layer is streamed; write `streamed: N`")
        check_nest(entry, nest_problem(layer, mapping.batch, entry.lowering), hw, dataflow_of(hw))
    elif has_nest(layer):
        raise MappingError(f"layer {layer.name!r}: a {layer.kind} layer needs a loop nest, the mapping streams it")
    elif entry.tiles < stream_tiles(layer, hw):
        raise MappingError(f"layer {layer.name!r}: streamed in {entry.tiles} pieces, but a piece fits the GLB only "
                           f"from {stream_tiles(layer, hw)} pieces on; raise streamed to {stream_tiles(layer, hw)}")


def _addresses(layer: Layer, addr: DramLayout) -> TensorAddresses:
    # a matmul's filters are its second operand, every image's after the other (its problem has N = 1)
    filters = addr.ifmap[1] if layer.kind is LayerKind.MATMUL else addr.filter
    if addr.lowered >= 0:  # the im2col matrix is one image of its own region
        return TensorAddresses(addr.lowered, addr.lowered_words, filters, addr.ofmap, addr.ofmap_image_words)
    return TensorAddresses(addr.ifmap[0], addr.ifmap_image_words[0], filters, addr.ofmap, addr.ofmap_image_words)


def _regions(layer: Layer, addr: DramLayout, batch: int) -> tuple[tuple[int, int, int], ...]:
    """The DRAM regions of a nest-mapped layer's steps: its first input (a matmul's second is its filters)."""
    regions = addr.regions(batch, 1)
    if layer.kind is LayerKind.MATMUL:
        regions += ((int(Operand.FILTER), addr.ifmap[1], batch * addr.ifmap_image_words[1]),)
    return regions


def _lowered_words(graph: Graph, mapping: NetworkMapping) -> dict[str, int]:
    """Words of the im2col matrix of every layer the mapping lowers, for its batch."""
    out = {}
    for entry in mapping.layers:
        if isinstance(entry, LoopNest) and entry.lowering == "im2col":
            p = nest_problem(graph.layer(entry.layer), mapping.batch, "im2col")
            out[entry.layer] = p.dims["G"] * p.dims["C"] * p.in_h * p.in_w
    return out


def layer_sparsity(layer: Layer, entry: LoopNest, batch: int, profile: SparsityProfile | None) -> LayerSparsity:
    """The zeros the step generator gives `layer`'s passes and tiles: the profile's fractions, and with measured
    tensors (whose ifmap has the layer's input shape) its exact tiles."""
    if profile is None:
        return LayerSparsity()
    zeros, tensors = profile.zeros(layer.name), profile.tensors
    if layer.kind is LayerKind.MATMUL:  # measured tiles follow convolution windows; a matmul takes the fractions
        return LayerSparsity(zeros)
    ins = layer.in_shape
    if tensors is None or tensors.activations.get(layer.inputs[0], np.zeros(0)).shape != (ins.c, ins.h, ins.w) \
            or layer.output not in tensors.activations:
        return LayerSparsity(zeros)
    conv = nest_problem(layer, batch)
    problem = nest_problem(layer, batch, entry.lowering)
    return LayerSparsity(zeros, tensors.layer_tiles(layer, problem, conv, entry.lowering == "im2col"))


def streamed_sparsity(layer: Layer, profile: SparsityProfile | None) -> LayerSparsity:
    """The zeros of a streamed layer's pieces: the profile's fractions, and its measured tensors flattened."""
    if profile is None:
        return LayerSparsity()
    tensors = profile.tensors
    names = (*layer.inputs, layer.output)
    if tensors is None or any(t not in tensors.activations for t in names):
        return LayerSparsity(profile.zeros(layer.name))
    return LayerSparsity(profile.zeros(layer.name), flats=tuple(tensors.flat(t) for t in names))


def _layer_schedule(layer: Layer, entry: LayerMapping | None, hw: Accelerator, addr: DramLayout,
                    batch: int, sparsity: SparsityProfile | None) -> Work:
    word = hw.precision_bits
    if entry is None or layer.kind in NO_STEPS:
        return Work(layer, WorkInfo(), lambda: iter(()), word_bits=word)
    if isinstance(entry, Streamed):
        tiles, zeros = entry.tiles, streamed_sparsity(layer, sparsity)
        return Work(layer, StreamInfo(tiles=tiles), lambda: stream_steps(layer, hw, addr, batch, tiles, zeros),
                    dram_regions=addr.regions(batch, len(layer.inputs)), word_bits=word)
    steps = NestSteps(entry, nest_problem(layer, batch, entry.lowering), hw, _addresses(layer, addr),
                      layer_sparsity(layer, entry, batch, sparsity))
    info = NestInfo(buffers=L2_BUFFERS if entry.level("l2") is not None else (), lowering=entry.lowering,
                    storage=tuple((s.level, " ".join(str(l) for l in s.loops)) for s in entry.storage),
                    array_rows=tuple(str(l) for l in entry.array.rows),
                    array_cols=tuple(str(l) for l in entry.array.cols),
                    array_stream=tuple(str(l) for l in entry.array.stream),
                    rf=" ".join(str(l) for l in entry.rf.loops))
    return Work(layer, info, steps.blocks, dram_regions=_regions(layer, addr, batch), word_bits=word)


def network_schedule(graph: Graph, hw: Accelerator, batch: int = 1, mapping: NetworkMapping | None = None,
                     sparsity: SparsityProfile | None = None, checked: bool = False) -> Schedule:
    """The steps of `mapping` (default: `default_mapping`) for every layer, layer after layer, tensors in DRAM
    between layers, with the zeros of `sparsity` (None: dense). A given mapping is checked first unless `checked`
    says it was."""
    if mapping is None:
        mapping = default_mapping(graph, hw, batch)
    else:
        if not checked:
            check_mapping(mapping, graph, hw)
        batch = mapping.batch
    views = {l.name: layer_hardware(hw, l.word_bits) for l in graph}  # each layer's word (mixed precision)
    mixed = len({view.precision_bits for view in views.values()}) > 1
    layout = dram_layout(graph, batch, _lowered_words(graph, mapping),
                         {name: view.word_bytes for name, view in views.items()} if mixed else None)
    entries = {m.layer: m for m in mapping.layers}
    layers = tuple(_layer_schedule(l, entries.get(l.name), views[l.name], layout[l.name], batch, sparsity)
                   for l in graph)
    return Schedule(graph.name, hw.name, f"nest:{mapping.dataflow}", batch, layers, mapping)


def with_batch(mapping: NetworkMapping, batch: int) -> NetworkMapping:
    return dataclasses.replace(mapping, batch=batch)
