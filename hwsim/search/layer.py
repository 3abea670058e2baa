"""The search of one layer's mapspace: random-pruned sampling, screening, exact ranking, local refinement.

1. *Sample* (deterministic for a seed): every inner part the dataflow allows
   once, then random ones, each with a random outer part (a GLB factor per dim
   from the tile sizes `space.spread_sizes` gives, an order per storage level, a
   keep mode); a candidate whose GLB tiles do not fit is dropped before it is
   priced (the capacity pre-check).
2. *Screen* each by the fast approximation (`hwsim.search.screen`) under the
   objective and keep the best `Effort.exact` distinct ones.
3. *Rank exactly*: the closed form (`exact_cost`) of those and of the
   dataflow's rule mapping, each validated by `check_nest`; the rule mapping
   is always a candidate, so the search never returns a worse one.
4. *Refine* the best sampled ones (`Effort.starts`) locally: each one's neighbours (one GLB factor one size up or
   down, another order at one level, the other keep mode, a neighbouring
   inner part with the same outer part) are screened, the fitting ones priced
   exactly, and the best move taken while it improves, `Effort.rounds` times.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, replace

from hwsim.errors import HwsimError
from hwsim.hardware.energy import EnergyTable
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.dataflows import Dataflow, dataflow_of
from hwsim.mapping.nest.format import DIMS, OPERANDS, LoopNest
from hwsim.mapping.nest.problem import Problem, lowering_for, nest_problem, tile_bound_words
from hwsim.mapping.nest.validate import check_nest
from hwsim.search.cost import OBJECTIVES, LayerCost, exact_cost, rank
from hwsim.search.screen import STORAGE, Screen, flat_loops
from hwsim.search.space import (
    KEEP_MODES,
    PRIORITIES,
    Inner,
    Outer,
    build_nest,
    choices,
    inner_space,
    remaining,
    spread_sizes,
)
from hwsim.sparsity.profile import DENSE_LAYER, LayerZeros
from hwsim.workload.ir import Layer

GLB_CHOICES = 5  # near-equal GLB tile sizes tried per dim (beside the halvings: space.spread_sizes)


@dataclass(frozen=True)
class Effort:
    """How much of the mapspace a search looks at (the same effort and seed give the same mapping)."""

    samples: int = 1500  # candidates screened (and half as many again: LayerSearcher.samples)
    exact: int = 16  # best screened candidates priced exactly
    rounds: int = 4  # local refinement steps
    starts: int = 2  # best sampled candidates refined


@dataclass(frozen=True)
class LayerSearch:
    """The outcome of one layer's search."""

    nest: LoopNest
    cost: LayerCost
    rule: LoopNest | None  # the dataflow's rule mapping (None when it cannot map the layer)
    rule_cost: LayerCost | None
    screened: int  # candidates screened
    priced: int  # candidates priced exactly


@dataclass(frozen=True)
class _Candidate:
    inner: int  # index into the inner parts
    outer: Outer


class LayerSearcher:
    """Searches one layer's mapspace (module docstring)."""

    def __init__(self, layer: Layer, hw: Accelerator, batch: int, objective: str, table: EnergyTable,
                 zeros: LayerZeros = DENSE_LAYER) -> None:
        OBJECTIVES.get(objective)
        self.layer, self.hw, self.batch, self.objective, self.table = layer, hw, batch, objective, table
        self.zeros = zeros  # the exact ranking prices the layer's zeros; screening stays dense
        self.df: Dataflow = dataflow_of(hw)
        self.lowering = lowering_for(layer, self.df.lowering)
        self.p: Problem = nest_problem(layer, batch, self.lowering)
        self.screen = Screen(self.p, hw, table)
        self.inners: list[Inner] = inner_space(self.p, hw)
        self.priced: dict[tuple[object, ...], LayerCost | None] = {}
        self.screened = 0

    # -- candidates ---------------------------------------------------------------------------------------
    def nest_of(self, c: _Candidate) -> LoopNest:
        inner = self.inners[c.inner]
        nest = build_nest(self.p, inner, c.outer, self.lowering, frozenset(OPERANDS))
        keeps = self._reused(nest) if c.outer.keep_mode == "reuse" else frozenset(OPERANDS)
        room = self.hw.glb.filter_bytes // self.hw.word_bytes
        dram_loops = len(nest.storage[0].loops)
        if "filter" in keeps and room and self.screen.tile(flat_loops(nest), "filter", dram_loops) > room:
            keeps -= {"filter"}  # the filter partition cannot hold the tile: filters go past the GLB
        return replace(nest, storage=(nest.storage[0], replace(nest.storage[1], keeps=keeps)))

    def _reused(self, nest: LoopNest) -> frozenset[str]:
        """The operands whose GLB tile changes less often than the PEs' (the others gain nothing there)."""
        loops = flat_loops(nest)
        n_dram = sum(1 for l in loops if l[0] == "dram")
        n_above = sum(1 for l in loops if l[0] in (*STORAGE, "stream"))
        return frozenset(op for op in OPERANDS if self.screen._visit(loops, op, n_dram, True)[0]
                         < self.screen._visit(loops, op, n_above, op in nest.rf.keeps)[0])

    def random_outer(self, rng: random.Random, inner: Inner, spread: bool = True) -> Outer:
        """A random outer part whose GLB tiles fit: dims in random order, each given the largest of a random
        suffix of its tile sizes that still fits beside the others (the capacity pre-check). The sizes are
        `space.spread_sizes` when `spread`, else only its near-equal largest cuts."""
        rest = dict(zip(DIMS, remaining(self.p, inner)))
        extent = {d: inner.tile(d) for d in DIMS}
        factors = dict.fromkeys(DIMS, 1)
        dims = [d for d in DIMS if rest[d] > 1]
        rng.shuffle(dims)
        for d in dims:
            sizes = spread_sizes(rest[d], GLB_CHOICES) if spread else choices(rest[d], rest[d], GLB_CHOICES)
            for size in sizes[rng.randrange(len(sizes)):]:
                if self._glb_fits({**extent, d: extent[d] * size}):
                    factors[d], extent[d] = size, extent[d] * size
                    break
        return Outer(tuple(factors[d] for d in DIMS), rng.choice(PRIORITIES), rng.choice(PRIORITIES),
                     rng.choice(KEEP_MODES))

    def _glb_fits(self, extent: dict[str, int]) -> bool:
        """Whether GLB tiles of these extents fit its data partition (filters too when it has no filter
        partition; else they may bypass it)."""
        ops = ("ifmap", "psum") if self.hw.glb.filter_bytes else OPERANDS
        return sum(tile_bound_words(self.p, op, extent) for op in ops) <= self.hw.glb.data_bytes // self.hw.word_bytes

    def samples(self, rng: random.Random, count: int) -> Iterator[_Candidate]:
        """Every inner part once, then random ones, `count` in all, with GLB tiles among the largest cuts (where a
        GLB's reuse usually is); then half as many again with GLB tiles over all scales (`space.spread_sizes`: e.g.
        a weight-heavy layer's filter tile small enough for the filter partition while the images stream)."""
        for i in range(count + count // 2):
            k = i if i < len(self.inners) else rng.randrange(len(self.inners))
            yield _Candidate(k, self.random_outer(rng, self.inners[k], spread=i >= count))

    def screened_value(self, nest: LoopNest) -> float | None:
        self.screened += 1
        s = self.screen.evaluate(nest)
        if s is None:
            return None
        return OBJECTIVES.get(self.objective)(s.energy_pj, s.latency_cycles, s.dram_words)

    # -- exact ---------------------------------------------------------------------------------------------
    def price(self, nest: LoopNest) -> LayerCost | None:
        """The exact cost of a valid nest (None when `check_nest` rejects it); each nest priced once."""
        key = _key(nest)
        if key not in self.priced:
            try:
                check_nest(nest, self.p, self.hw, self.df)
                self.priced[key] = exact_cost(self.layer, nest, self.batch, self.hw, self.table, self.zeros)
            except HwsimError:
                self.priced[key] = None
        return self.priced[key]

    def neighbours(self, c: _Candidate) -> Iterator[_Candidate]:
        o = c.outer
        rest = remaining(self.p, self.inners[c.inner])
        for i, r in enumerate(rest):
            sizes = sorted({1, *choices(r, r, GLB_CHOICES)})
            at = sizes.index(min(sizes, key=lambda s: abs(s - o.glb[i])))
            for k in (at - 1, at + 1):
                if 0 <= k < len(sizes):
                    yield _Candidate(c.inner, replace(o, glb=(*o.glb[:i], sizes[k], *o.glb[i + 1:])))
        for prio in PRIORITIES:
            yield _Candidate(c.inner, replace(o, dram_priority=prio))
            yield _Candidate(c.inner, replace(o, glb_priority=prio))
        yield _Candidate(c.inner, replace(o, keep_mode=KEEP_MODES[1 - KEEP_MODES.index(o.keep_mode)]))
        for k in (c.inner - 1, c.inner + 1):
            if 0 <= k < len(self.inners):
                scaled = tuple(min(g, r) for g, r in zip(o.glb, remaining(self.p, self.inners[k])))
                yield _Candidate(k, replace(o, glb=scaled))

    # -- the search ----------------------------------------------------------------------------------------
    def run(self, effort: Effort, seed: int) -> LayerSearch:
        rule = self._rule()
        pool: list[tuple[LayerCost, LoopNest, _Candidate | None]] = []
        rule_cost = self.price(rule) if rule is not None else None
        if rule is not None and rule_cost is not None:
            pool.append((rule_cost, rule, None))
        if self.inners:
            rng = random.Random(seed ^ _shape_seed(self.p))
            for c in self._best_screened(rng, effort):
                cost = self.price(self.nest_of(c))
                if cost is not None:
                    pool.append((cost, self.nest_of(c), c))
        if not pool:
            raise HwsimError(f"layer {self.layer.name!r}: no mapping of the {self.df.name} mapspace fits "
                             f"{self.hw.name}; raise the GLB or RF sizes in the config")
        pool.sort(key=lambda e: rank(self.objective, e[0]))
        starts = [e for e in pool if e[2] is not None][:effort.starts]
        best = min([pool[0], *(self._refine(e, effort.rounds) for e in starts)],
                   key=lambda e: rank(self.objective, e[0]))
        return LayerSearch(best[1], best[0], rule, rule_cost, self.screened, len(self.priced))

    def _rule(self) -> LoopNest | None:
        try:
            return self.df.default(self.p, self.hw)
        except HwsimError:
            return None

    def _best_screened(self, rng: random.Random, effort: Effort) -> list[_Candidate]:
        scored: dict[tuple[object, ...], tuple[float, int, _Candidate]] = {}
        for i, c in enumerate(self.samples(rng, effort.samples)):
            nest = self.nest_of(c)
            value = self.screened_value(nest)
            key = _key(nest)
            if value is not None and key not in scored:
                scored[key] = (value, i, c)
        ordered = sorted(scored.values(), key=lambda e: (e[0], e[1]))
        return [c for _, _, c in ordered[:effort.exact]]

    def _refine(self, best: tuple[LayerCost, LoopNest, _Candidate | None],
                rounds: int) -> tuple[LayerCost, LoopNest, _Candidate | None]:
        for _ in range(rounds):
            c = best[2]
            if c is None:
                return best
            moves = []
            for n in self.neighbours(c):
                nest = self.nest_of(n)
                if self.screened_value(nest) is None:
                    continue
                cost = self.price(nest)
                if cost is not None:
                    moves.append((cost, nest, n))
            if not moves:
                return best
            step = min(moves, key=lambda e: rank(self.objective, e[0]))
            if rank(self.objective, step[0]) >= rank(self.objective, best[0]):
                return best
            best = step
        return best


def _key(nest: LoopNest) -> tuple[object, ...]:
    return (tuple(flat_loops(nest)), tuple(tuple(sorted(s.keeps)) for s in nest.storage))


def shape_signature(p: Problem, lowering: str) -> tuple[object, ...]:
    """What a layer's search depends on besides the hardware, the objective and the effort: its problem."""
    return (lowering, tuple(p.dims[d] for d in DIMS), p.stride, p.dilation, p.pad_top, p.pad_left, p.in_h, p.in_w,
            p.out_h, p.out_w, p.transposed, p.up)


def _shape_seed(p: Problem) -> int:
    return zlib.crc32(repr(shape_signature(p, "")).encode())


def search_layer(layer: Layer, hw: Accelerator, batch: int, objective: str, table: EnergyTable,
                 effort: Effort = Effort(), seed: int = 0, zeros: LayerZeros = DENSE_LAYER) -> LayerSearch:
    """The best nest found for `layer` with its `zeros` under `objective` (module docstring)."""
    return LayerSearcher(layer, hw, batch, objective, table, zeros).run(effort, seed)


__all__ = ["Effort", "LayerSearch", "LayerSearcher", "search_layer", "shape_signature"]
