"""The word width a graph declares: the operand widths a quantized graph (QDQ, QLinear, integer ops) gives its
layers, as the word its tensors need."""

from __future__ import annotations

from hwsim.vocab import WORD_BITS
from hwsim.workload.ir import Graph, Layer


def declared_bits(layer: Layer) -> int | None:
    """The widest weight or activation width the graph gives `layer`; None when it gives none."""
    if layer.precision is None:
        return None
    given = [b for b in (layer.precision.weight_bits, layer.precision.activation_bits) if b is not None]
    return max(given, default=None)


def word_for(bits: int) -> int:
    """The narrowest modelled word holding `bits` (a 4-bit operand is stored in 8-bit words)."""
    return min((w for w in WORD_BITS if w >= bits), default=max(WORD_BITS))


def graph_bits(graph: Graph) -> int | None:
    """The word holding the widest width a graph declares; None for a graph that declares no width."""
    widest = max((b for l in graph if (b := declared_bits(l)) is not None), default=None)
    return None if widest is None else word_for(widest)


__all__ = ["declared_bits", "graph_bits", "word_for"]
