"""The word width a run uses: `--bits N` when given, else the width a quantized graph declares, else the config's.

A quantized graph (QDQ, QLinear, integer ops) gives its layers' operand widths; the widest of them is the word
every tensor is stored and moved in, and the config is rescaled to it by `hwsim.hardware.precision`'s rules.
"""

from __future__ import annotations

from hwsim.hardware.precision import at_precision
from hwsim.hardware.schema import Accelerator
from hwsim.workload.ir import Graph
from hwsim.workload.precision import declared_bits, graph_bits


def run_bits(graph: Graph, hw: Accelerator, bits: int | None) -> int:
    """The word width the run uses: `bits`, else the graph's, else `hw`'s."""
    return bits or graph_bits(graph) or hw.precision_bits


def run_hardware(graph: Graph, hw: Accelerator, bits: int | None = None) -> Accelerator:
    """`hw` at the run's word width (itself when that is its own)."""
    return at_precision(hw, run_bits(graph, hw, bits))


def precision_notes(graph: Graph, hw: Accelerator, bits: int | None = None) -> tuple[str, ...]:
    """What a user should know about the run's word width: a config rescaled to it, layers whose declared
    width differs from it (mixed precision runs at the widest), a --bits that overrides the graph."""
    chosen = run_bits(graph, hw, bits)
    declared = [(l.name, b) for l in graph if (b := declared_bits(l)) is not None]
    notes = []
    if chosen != hw.precision_bits:
        why = f"--bits {bits}" if bits else f"the graph's {len(declared)} quantized layers"
        notes.append(f"running at {chosen} bit ({why}): {hw.name}'s {hw.precision_bits}-bit config rescaled by "
                     f"hwsim's precision rules (same bytes, per-word energies × {chosen}/{hw.precision_bits})")
    other = sorted({b for _, b in declared if b != chosen})
    if other:
        count = sum(1 for _, b in declared if b != chosen)
        cause = "as --bits asks" if bits else "the widest the graph declares: its tensors share one word"
        notes.append(f"{count} layers declare {'/'.join(map(str, other))}-bit operands and run at {chosen} bit, "
                     f"{cause}")
    return tuple(notes)


__all__ = ["precision_notes", "run_bits", "run_hardware"]
