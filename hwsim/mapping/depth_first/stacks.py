"""Which layers run together: the stacks a cut list makes, the skips that go through DRAM, and the
choices (cuts, tiling, weight policy) a depth-first mapping is made of."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from hwsim.mapping.depth_first.plan import (
    MERGE_KINDS,
    NOT_COMPUTE,
    Cut,
    DepthFirstError,
)
from hwsim.workload.ir import Graph, Layer


# ----- stacks and skips -------------------------------------------------------------------------
def split_stacks(graph: Graph, cuts: Sequence[Cut]) -> tuple[tuple[Layer, ...], ...]:
    """The compute layers (no input/output markers) in graph order, split after each cut layer."""
    compute = [l for l in graph if l.kind not in NOT_COMPUTE]
    if not compute:
        raise DepthFirstError(f"{graph.name}: no compute layers to stack")
    position = {l.name: i for i, l in enumerate(compute)}
    after: set[int] = set()
    for cut in cuts:
        name = graph.layers[cut].name if isinstance(cut, int) and 0 <= cut < len(graph) else cut
        if not isinstance(name, str) or name not in position:
            raise DepthFirstError(f"{graph.name}: cut {cut!r} is not a compute layer; give a layer name or index "
                                  f"between the first and the last compute layer")
        if position[name] == len(compute) - 1 or position[name] in after:
            raise DepthFirstError(f"{graph.name}: cut after layer {name!r} is repeated or leaves an empty stack; "
                                  "remove it")
        after.add(position[name])
    bounds = [0, *sorted(p + 1 for p in after), len(compute)]
    return tuple(tuple(compute[a:b]) for a, b in pairwise(bounds))


def long_skips(graph: Graph, stacks: Sequence[Sequence[Layer]], max_short: int) -> frozenset[tuple[str, str]]:
    """(tensor, merge layer) edges that go through DRAM; raises if a cut splits a short skip."""
    index = {l.name: i for i, l in enumerate(graph.layers)}
    stack_of = {l.name: i for i, s in enumerate(stacks) for l in s}
    long = set()
    for merge in graph.of_kind(*MERGE_KINDS):
        for t in dict.fromkeys(merge.inputs):
            others = [u for u in merge.inputs if u != t]
            if not any(reaches(graph, t, u, index) for u in others):
                continue
            source = graph.producer(t)
            span = index[merge.name] - index[source.name]
            if span > max_short:
                long.add((t, merge.name))
                continue
            # The long path starts at a consumer of t; it and the merge must share a stack.
            path = [c for c in graph.consumers(t) if c is not merge
                    and any(reaches(graph, c.output, u, index) for u in others)]
            for start in path:
                if stack_of[start.name] != stack_of[merge.name]:
                    split = stacks[stack_of[start.name]][-1].name
                    raise DepthFirstError(
                        f"{graph.name}: the cut after layer {split!r} splits the short skip from {t!r} to "
                        f"{merge.name!r} ({span} layers); cut before {start.name!r} or after {merge.name!r}, "
                        f"or pass max_short_skip_layers < {span} to send it through DRAM")
    return frozenset(long)


def reaches(graph: Graph, source: str, target: str, index: dict[str, int]) -> bool:
    """Whether tensor `target` depends on tensor `source`."""
    floor, todo, seen = index[source], [target], set()
    while todo:
        t = todo.pop()
        if t == source:
            return True
        if t in seen or index[t] < floor:
            continue
        seen.add(t)
        todo.extend(graph.producer(t).inputs)
    return False
