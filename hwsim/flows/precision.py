"""The word each layer of a run uses: `--bits N` for all when given, else the width a quantized graph declares
per layer, else the config's.

A quantized graph (QDQ, QLinear, integer ops) gives its layers' operand widths (its pools and adds too: their
activations are quantized). A layer runs at the narrowest modelled word holding its widest operand; a layer the
graph gives no width (one left in float) runs at the config's word, as a float graph does; the graph's input
takes the widest word its readers declare, its output the word of the layer writing it. When every layer runs
at one word the config
is rescaled to it (`hwsim.hardware.precision`); otherwise (mixed precision) the config stays and each layer sees
it rescaled to its own word: its mapping, its steps, its simulation and its prices all follow that word.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from hwsim.hardware.precision import at_precision
from hwsim.hardware.schema import Accelerator
from hwsim.workload.ir import Graph, LayerKind
from hwsim.workload.precision import declared_bits, word_for


def layer_widths(graph: Graph, hw: Accelerator, bits: int | None) -> dict[str, int]:
    """Each layer's word: `bits` for every layer; else its declared width, or `hw`'s for a layer the graph leaves
    in float (a graph input: the widest word its readers declare; a graph output: its writer's)."""
    if bits:
        return {l.name: bits for l in graph}
    declared = {l.name: word_for(b) for l in graph if (b := declared_bits(l)) is not None}
    widths: dict[str, int] = {}
    for layer in graph:
        if layer.name in declared:
            widths[layer.name] = declared[layer.name]
        elif layer.kind is LayerKind.INPUT:
            readers = [declared[c.name] for c in graph.consumers(layer.output) if c.name in declared]
            widths[layer.name] = max(readers, default=hw.precision_bits)
        elif layer.kind is LayerKind.OUTPUT and layer.inputs:
            widths[layer.name] = widths[layer.inputs[0]]
        else:
            widths[layer.name] = hw.precision_bits
    return widths


def is_resolved(graph: Graph) -> bool:
    """Whether every layer of `graph` already carries the word it runs at."""
    return all(l.word_bits is not None for l in graph)


def run_precision(graph: Graph, hw: Accelerator, bits: int | None = None) -> tuple[Graph, Accelerator]:
    """`graph` with each layer's word set, and the accelerator the run is priced on: `hw` rescaled to the one
    word every layer uses, or `hw` itself under mixed precision. A graph already resolved is returned as given."""
    if bits is None and is_resolved(graph):
        return graph, hw
    widths = layer_widths(graph, hw, bits)
    resolved = replace(graph, layers=tuple(replace(l, word_bits=widths[l.name]) for l in graph))
    words = set(widths.values())
    return resolved, at_precision(hw, words.pop()) if len(words) == 1 else hw


def is_mixed(graph: Graph) -> bool:
    """Whether the layers of a resolved graph run at more than one word."""
    return len({l.word_bits for l in graph}) > 1


def precision_notes(graph: Graph, hw: Accelerator, bits: int | None = None) -> tuple[str, ...]:
    """How the run's words were chosen: a config rescaled to one word, mixed precision per layer, layers whose
    declared width differs from the word they run at."""
    widths = layer_widths(graph, hw, bits)
    words = Counter(widths[l.name] for l in graph if l.kind not in (LayerKind.INPUT, LayerKind.OUTPUT))
    declared = [(l.name, b) for l in graph if (b := declared_bits(l)) is not None]
    quantized = f"{_layers(len(declared))} quantized in the graph"
    notes = []
    if len(words) > 1:
        spread = ", ".join(f"{count} at {word} bit" for word, count in sorted(words.items()))
        notes.append(f"mixed precision ({quantized}): layers run at their own word, {spread}; each sees "
                     f"{hw.name} rescaled to its word by hwsim's precision rules")
    elif words and (chosen := next(iter(words))) != hw.precision_bits:
        why = f"--bits {bits}" if bits else quantized
        notes.append(f"running at {chosen} bit ({why}): {hw.name}'s {hw.precision_bits}-bit config rescaled by "
                     f"hwsim's precision rules (same bytes, per-word energies × {chosen}/{hw.precision_bits})")
    moved = Counter((b, widths[name]) for name, b in declared if b != widths[name])
    cause = "as --bits asks" if bits else "the narrowest modelled word holding them"
    for (given, run), count in sorted(moved.items()):
        notes.append(f"{_layers(count)} declare {given}-bit operands and run at {run} bit, {cause}")
    wide = Counter(l.precision.accumulator_bits for l in graph if l.precision is not None
                   and (l.precision.accumulator_bits or 0) > widths[l.name])
    for acc, count in sorted(wide.items()):
        notes.append(f"{_layers(count)} accumulate in {acc} bit: hwsim keeps their psums at the layer's word, as "
                     "Eyeriss and CNNergy do (the MAC accumulates wider inside the PE), so psums that leave the "
                     "PE array are counted at the word: a lower bound on their traffic")
    return tuple(notes)


def _layers(count: int) -> str:
    return f"{count} layer" if count == 1 else f"{count} layers"


__all__ = ["is_mixed", "is_resolved", "layer_widths", "precision_notes", "run_precision"]
