"""The steps of a layer-by-layer loop-nest mapping: each layer's work (a nest's step generator, a streamed layer's
pieces) at the DRAM addresses the network's layout gives its tensors, with the zeros the run prices. Kept apart from
the rules and checks (`hwsim.mapping.mapper`), so that a closed-form estimate does not load the step generators."""

from __future__ import annotations

import numpy as np

from hwsim.hardware.precision import layer_hardware
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.layout import DramLayout, dram_layout
from hwsim.mapping.mapper import NO_STEPS, check_mapping, default_mapping
from hwsim.mapping.nest.format import LayerMapping, LoopNest, NetworkMapping, Streamed
from hwsim.mapping.nest.problem import nest_problem
from hwsim.mapping.nest.steps import L2_BUFFERS, NestSteps, TensorAddresses
from hwsim.mapping.schedule import NestInfo, Schedule, StreamInfo, Work, WorkInfo
from hwsim.mapping.stream import stream_steps
from hwsim.sparsity.layer import LayerSparsity
from hwsim.sparsity.profile import SparsityProfile
from hwsim.vocab import Operand
from hwsim.workload.ir import Graph, Layer, LayerKind


def _addresses(layer: Layer, addr: DramLayout) -> TensorAddresses:
    # a matmul's filters are its second operand, every image's after the other (its problem has N = 1)
    filters = addr.ifmap[1] if layer.kind is LayerKind.MATMUL else addr.filter
    if addr.lowered >= 0:  # the im2col matrix is one image of its own region
        return TensorAddresses(addr.lowered, addr.lowered_words, filters, addr.ofmap, addr.ofmap_image_words)
    return TensorAddresses(addr.ifmap[0], addr.ifmap_image_words[0], filters, addr.ofmap, addr.ofmap_image_words,
                           addr.ifmap_channel_words, addr.ofmap_channel_words)


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


def layer_work(layer: Layer, entry: LayerMapping | None, hw: Accelerator, addr: DramLayout) -> Work:
    """The work of one image of `layer` (a layer's part on one core, tensors where `addr` puts them), dense."""
    return _layer_schedule(layer, entry, hw, addr, 1, None)


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


__all__ = ["layer_sparsity", "layer_work", "network_schedule", "streamed_sparsity"]
