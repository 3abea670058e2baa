"""The passes of a loop nest and, per pass, the words every boundary moves: what the step generator emits.

Passes are the iterations of the storage levels' loops in odometer order
(empty ones, past a dim's end, skipped), enumerated in chunks as index
arrays. For each storage boundary and operand the reuse rule of
`hwsim.mapping.nest.format` marks the passes where a visit starts and ends;
inside the array every pass delivers the words of its own visits, counted
here by enumerating each visit's cells (one per lane or PE sub-range where
the delivery says so) and marking the elements each needs in a bitmask.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from hwsim.mapping.nest.format import DIMS, REDUCTION, SLIDING, LoopNest
from hwsim.mapping.nest.problem import Problem
from hwsim.vocab import ceil_div

PASS_CHUNK = 1 << 14  # passes enumerated at once
STORAGE_PLACES = ("dram", "l2", "glb")
ARRAY_PLACES = ("stream", "rows", "cols", "rf")


@dataclass(frozen=True)
class NestLoop:
    place: str  # a storage level, "stream", "rows", "cols" or "rf"
    dim: str
    factor: int
    tile: int  # the dim's tile inside this loop (product of its factors further in)


def nest_loops(nest: LoopNest) -> list[NestLoop]:
    """Every loop outer to inner with the tile of its dim inside it."""
    raw = [(s.level, l.dim, l.factor) for s in nest.storage for l in s.loops]
    raw += [("stream", l.dim, l.factor) for l in nest.array.stream]
    raw += [("rows", l.dim, l.factor) for l in nest.array.rows]
    raw += [("cols", l.dim, l.factor) for l in nest.array.cols]
    raw += [("rf", l.dim, l.factor) for l in nest.rf.loops]
    out = []
    for i, (place, dim, factor) in enumerate(raw):
        inner = 1
        for _, d, f in raw[i + 1:]:
            if d == dim:
                inner *= f
        out.append(NestLoop(place, dim, factor, inner))
    return out


@dataclass
class Passes:
    """A chunk of passes: per storage loop its index, per dim the pass range's start and length."""

    index: np.ndarray  # [storage loops, passes]
    start: dict[str, np.ndarray]
    length: dict[str, np.ndarray]
    first: int  # number in the layer of the chunk's first own pass
    lead: int = 0  # frame passes before the chunk's own (0 or 1)
    trail: int = 0  # frame passes after them (0 or 1)

    def __len__(self) -> int:
        result: int = self.index.shape[1]
        return result

    @property
    def own(self) -> slice:
        """The chunk's own passes (without the frame)."""
        return slice(self.lead, len(self) - self.trail)


class PassPlan:
    """What the passes of one layer's nest do at every boundary (see the module docstring)."""

    def __init__(self, nest: LoopNest, problem: Problem) -> None:
        self.nest, self.problem = nest, problem
        self.dims = problem.dims
        self.loops = nest_loops(nest)
        self.storage = [l for l in self.loops if l.place in STORAGE_PLACES]
        self.tile = {d: int(np.prod([l.factor for l in self.loops if l.dim == d and l.place in ARRAY_PLACES],
                                    dtype=np.int64)) for d in DIMS}

    # -- passes ------------------------------------------------------------------------------------------
    def chunks(self) -> Iterator[Passes]:
        """All non-empty passes in order, about PASS_CHUNK at a time, each chunk framed by its neighbours: the
        pass before it (if any) first and the pass after it (if any) last, so visits that start or end at a
        chunk's edge are seen; `lead` and `trail` on the chunk say whether those frame passes are there."""
        factors = np.array([l.factor for l in self.storage], dtype=np.int64)
        total = int(np.prod(factors, dtype=np.int64))
        decoded = (self._decode(np.arange(b, min(total, b + PASS_CHUNK), dtype=np.int64), factors)
                   for b in range(0, total, PASS_CHUNK))
        previous: Passes | None = None
        current: Passes | None = None
        done = 0
        for chunk in decoded:
            if not len(chunk):
                continue
            if current is not None:
                yield _framed(previous, current, chunk, done)
                done += len(current)
                previous = current
            current = chunk
        if current is not None:
            yield _framed(previous, current, None, done)

    def _decode(self, flat: np.ndarray, factors: np.ndarray) -> Passes:
        index = np.empty((len(factors), len(flat)), dtype=np.int64)
        rest = flat
        for i in range(len(factors) - 1, -1, -1):
            rest, index[i] = np.divmod(rest, factors[i])
        start = {d: np.zeros(len(flat), dtype=np.int64) for d in DIMS}
        for i, loop in enumerate(self.storage):
            start[loop.dim] += index[i] * loop.tile
        keep = np.ones(len(flat), dtype=bool)
        for d in DIMS:
            keep &= start[d] < self.dims[d]
        start = {d: s[keep] for d, s in start.items()}
        length = {d: np.minimum(self.tile[d], self.dims[d] - start[d]) for d in DIMS}
        return Passes(index[:, keep], start, length, 0)

    # -- reuse -------------------------------------------------------------------------------------------
    def above(self, level: str) -> int:
        """Loops above `level` ("rf": the storage loops and the stream)."""
        if level == "rf":
            return sum(1 for l in self.loops if l.place in (*STORAGE_PLACES, "stream"))
        order = [s.level for s in self.nest.storage]
        return sum(1 for l in self.loops if l.place in order[:order.index(level)])

    def innermost(self, op: str, level: str) -> int:
        """The loop whose iterations (with those outside it) are the visits of `op`'s tile at `level`."""
        k = self.above(level)
        if level == "rf" and op not in self.nest.rf.keeps:
            return k - 1
        relevant = self.problem.relevant[op]
        return max((i for i in range(k) if self.loops[i].dim in relevant and self.loops[i].factor > 1),
                   default=-1)

    def visit_edges(self, passes: Passes, j: int) -> tuple[np.ndarray, np.ndarray]:
        """(starts, ends) over the chunk's own passes: where a visit whose loops are the first j + 1 starts (the
        layer's first pass always) and where one ends (the layer's last pass always)."""
        change = np.ones(len(passes) + 1, dtype=bool)  # change[i]: pass i starts a visit (i = len: past the end)
        if j >= 0 and len(passes) > 1:
            key = passes.index[:j + 1]
            change[1:-1] = np.any(key[:, 1:] != key[:, :-1], axis=0)
        elif len(passes) > 1:
            change[1:-1] = False
        if passes.lead:
            change[0] = False  # decided within the previous chunk
        own = passes.own
        return change[own], change[own.start + 1:own.stop + 1]

    def reduction_edge(self, passes: Passes, j: int) -> tuple[np.ndarray, np.ndarray]:
        """(first, last) visit of its output tile over the reduction loops among the first j + 1 storage loops."""
        first = np.ones(len(passes), dtype=bool)
        last = np.ones(len(passes), dtype=bool)
        for d in REDUCTION:
            at = [i for i in range(min(j + 1, len(self.storage))) if self.storage[i].dim == d]
            if not at:
                continue
            tile = self.storage[at[-1]].tile
            start = sum(passes.index[i] * self.storage[i].tile for i in at)
            first &= start == 0
            last &= start + tile >= self.dims[d]
        return first, last

    def sliding_dim(self, op: str, j: int) -> str:
        """The dim whose window slides over loop j at the RF boundary (``""`` when none does)."""
        nest = self.nest
        if (op == "ifmap" and not self.problem.transposed and "ifmap" in nest.rf.keeps
                and nest.array.delivery["ifmap"] == "multicast" and j >= 0 and self.loops[j].place == "stream"
                and self.loops[j].dim in SLIDING):
            return self.loops[j].dim
        return ""


def _framed(before: Passes | None, chunk: Passes, after: Passes | None, first: int) -> Passes:
    """`chunk` with the last pass of `before` in front and the first of `after` behind."""
    parts = ([_pick(before, -1)] if before is not None else []) + [chunk] + \
        ([_pick(after, 0)] if after is not None else [])
    return Passes(np.concatenate([p.index for p in parts], axis=1),
                  {d: np.concatenate([p.start[d] for p in parts]) for d in DIMS},
                  {d: np.concatenate([p.length[d] for p in parts]) for d in DIMS}, first,
                  int(before is not None), int(after is not None))


def _pick(chunk: Passes, i: int) -> Passes:
    at = slice(i, None) if i == -1 else slice(i, i + 1)
    return Passes(chunk.index[:, at], {d: s[at] for d, s in chunk.start.items()},
                  {d: n[at] for d, n in chunk.length.items()}, 0)


def positions(length: np.ndarray, factor: int, inner: int) -> np.ndarray:
    """Non-empty positions of a loop of `factor` over `inner`-sized pieces in ranges of `length`."""
    result: np.ndarray = np.minimum(factor, ceil_div(length, inner))
    return result
