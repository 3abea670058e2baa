"""Exporters spell some functions as chains of elementary nodes; find them so each imports as one thing.

GELU is written x·½·(1 + erf(x/√2)) (Div, Erf, Add, Mul, Mul in either
order), layer normalisation before opset 17 as ReduceMean, Sub, Pow, ReduceMean,
Add, Sqrt, Div. A `Chain` names the value it reads, the nodes it swallows and
what it computes; the importer skips the inner nodes and builds one fused
activation or one norm layer at the last node.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from hwsim.workload.onnx_fold import OnnxNode
from hwsim.workload.onnx_values import DEFAULT_DOMAINS


@dataclass(frozen=True)
class Chain:
    """Nodes computing one function of the value `x`: `first` and `inner` are skipped, `last` builds it."""

    x: str
    what: str  # "gelu" or "layer_norm"
    first: str  # output of the chain's first node (where x must turn out to be a feature)
    inner: frozenset[str]  # outputs of every node but the last
    last: str  # output of the last node
    reads: int  # reads of x the chain makes (they become one)
    axes: tuple[int, ...] = ()  # the normalised axes of a layer norm


class _Nodes:
    """Producers and consumers of the values of a node list."""

    def __init__(self, nodes: Sequence[OnnxNode], consumers: Counter[str]) -> None:
        self.producer = {o: n for n in nodes for o in n.outputs if o}
        self.readers: dict[str, list[OnnxNode]] = {}
        for n in nodes:
            for i in dict.fromkeys(n.inputs):
                self.readers.setdefault(i, []).append(n)
        self.consumers = consumers

    def sole_reader(self, value: str, op: str) -> OnnxNode | None:
        """The one node reading `value`, if it is an `op` and nothing else reads it."""
        readers = self.readers.get(value, [])
        if self.consumers[value] != 1 or len(readers) != 1 or readers[0].op != op:
            return None
        return readers[0] if readers[0].domain in DEFAULT_DOMAINS else None

    def made_by(self, value: str, op: str) -> OnnxNode | None:
        n = self.producer.get(value)
        return n if n is not None and n.op == op and n.domain in DEFAULT_DOMAINS else None


def _other(node: OnnxNode, value: str) -> str | None:
    """The other input of a two-input node that reads `value`."""
    if len(node.inputs) != 2 or value not in node.inputs:
        return None
    return node.inputs[1] if node.inputs[0] == value else node.inputs[0]


def _gelu(g: _Nodes, erf: OnnxNode) -> Chain | None:
    div = g.made_by(erf.inputs[0], "Div")
    if div is None or g.consumers[div.outputs[0]] != 1:
        return None
    x = div.inputs[0]
    add = g.sole_reader(erf.outputs[0], "Add")
    if add is None:
        return None
    nodes, value, found_x = [div, erf, add], add.outputs[0], False
    for _ in range(2):  # Mul by x and Mul by ½, in either order
        mul = g.sole_reader(value, "Mul")
        other = _other(mul, value) if mul is not None else None
        if mul is None or other is None or (other != x and other in g.producer and not _constant(g, other)):
            break
        found_x |= other == x
        nodes.append(mul)
        value = mul.outputs[0]
    if not found_x or len(nodes) != 5:
        return None
    return Chain(x, "gelu", div.outputs[0], frozenset(n.outputs[0] for n in nodes[:-1]), value, 2)


def _constant(g: _Nodes, value: str) -> bool:
    n = g.producer.get(value)
    return n is not None and n.op == "Constant"


def _layer_norm(g: _Nodes, div: OnnxNode) -> Chain | None:
    if len(div.inputs) != 2:
        return None
    sub, sqrt = g.made_by(div.inputs[0], "Sub"), g.made_by(div.inputs[1], "Sqrt")
    add = g.made_by(sqrt.inputs[0], "Add") if sqrt is not None else None
    var = g.made_by(add.inputs[0], "ReduceMean") if add is not None else None
    square = g.made_by(var.inputs[0], "Pow") if var is not None else None
    mean = g.made_by(sub.inputs[1], "ReduceMean") if sub is not None else None
    if sub is None or sqrt is None or add is None or var is None or square is None or mean is None:
        return None
    x = sub.inputs[0]
    if mean.inputs[0] != x or square.inputs[0] != sub.outputs[0] or g.consumers[sub.outputs[0]] != 2:
        return None
    if any(g.consumers[n.outputs[0]] != 1 for n in (mean, square, var, add, sqrt)):
        return None
    axes = _axes(mean)
    if axes is None or axes != _axes(var):
        return None
    inner = frozenset(n.outputs[0] for n in (mean, sub, square, var, add, sqrt))
    return Chain(x, "layer_norm", mean.outputs[0], inner, div.outputs[0], 2, axes)


def _axes(reduce: OnnxNode) -> tuple[int, ...] | None:
    """ReduceMean's axes when given as an attribute (before opset 18); None otherwise."""
    if len(reduce.inputs) > 1 or "axes" not in reduce.attrs:
        return None
    return tuple(int(a) for a in reduce.attrs["axes"])


def find_chains(nodes: Sequence[OnnxNode], consumers: Counter[str]) -> list[Chain]:
    """Every GELU and decomposed layer norm in `nodes`."""
    g = _Nodes(nodes, consumers)
    found = []
    for n in nodes:
        if n.domain not in DEFAULT_DOMAINS:
            continue
        chain = _gelu(g, n) if n.op == "Erf" else _layer_norm(g, n) if n.op == "Div" else None
        if chain is not None:
            found.append(chain)
    return found
