"""Mapping a network layer by layer: each weighted layer by a loop nest of the array's dataflow, every other
layer streamed; the mapping is data (`hwsim.mapping.nest.format.NetworkMapping`), checked, then turned into steps.

`default_mapping` is what hwsim uses when given none: the dataflow's default
(for row stationary, CNNergy's rules). `check_mapping` rejects a mapping that
does not fit the network or the hardware, naming the layer and the field.
`hwsim.mapping.nest_schedule.network_schedule` emits the steps of a (checked) mapping.
"""

from __future__ import annotations

import dataclasses

from hwsim.hardware.precision import layer_hardware
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.dataflows import dataflow_of
from hwsim.mapping.nest.format import LayerMapping, LoopNest, MappingError, NetworkMapping, Streamed
from hwsim.mapping.nest.problem import has_nest, lowering_for, nest_problem
from hwsim.mapping.nest.validate import check_nest
from hwsim.mapping.stream import stream_tiles
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


def with_batch(mapping: NetworkMapping, batch: int) -> NetworkMapping:
    return dataclasses.replace(mapping, batch=batch)
