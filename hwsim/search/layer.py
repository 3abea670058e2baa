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
from typing import NamedTuple

from hwsim.errors import HwsimError
from hwsim.hardware.energy import EnergyTable
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.dataflows import Dataflow, dataflow_of
from hwsim.mapping.nest.format import DIMS, OPERANDS, LoopNest, Loops
from hwsim.mapping.nest.problem import Problem, lowering_for, nest_problem
from hwsim.mapping.nest.validate import check_nest
from hwsim.search.cost import OBJECTIVES, LayerCost, exact_cost, rank
from hwsim.search.screen import STORAGE, FlatLoop, Screen, flat_loops, pass_flat_loops
from hwsim.search.space import (
    KEEP_MODES,
    PRIORITIES,
    Inner,
    NestBuilder,
    Outer,
    choices,
    inner_space,
    spread_sizes,
)
from hwsim.sparsity.profile import DENSE_LAYER, LayerZeros
from hwsim.workload.ir import Layer

GLB_CHOICES = 5  # near-equal GLB tile sizes tried per dim (beside the halvings: space.spread_sizes)
ALL = frozenset(OPERANDS)
ALL_SORTED = tuple(sorted(ALL))  # what a DRAM keeps, as a nest's `_key` names it


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


class _Built(NamedTuple):
    """A candidate as the screen reads it (its nest is made only for those priced): its inner part, its DRAM's and
    GLB's loops, what the GLB keeps, every loop as (place, dim, factor) and its nest's identity (`_key`)."""

    inner: int
    dram: Loops
    glb: Loops
    keeps: frozenset[str]
    loops: list[FlatLoop]
    key: tuple[object, ...]


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
        self.builder = NestBuilder(self.p, self.inners, self.lowering)
        self.priced: dict[tuple[object, ...], LayerCost | None] = {}
        self.screened = 0
        # what every candidate of an inner part shares: its pass's loops and tile per dim (DIMS order)
        self._pass_loops = [pass_flat_loops(inner.array, inner.rf) for inner in self.inners]
        self._pass_tiles = [tuple(inner.tile(d) for d in DIMS) for inner in self.inners]
        self._sizes: dict[tuple[int, bool], list[int]] = {}
        self._fits: dict[tuple[int, ...], bool] = {}
        self._glb_ops = ("ifmap", "psum") if hw.glb.filter_bytes else OPERANDS
        self._glb_room = hw.glb.data_bytes // hw.word_bytes
        self._filter_room = hw.glb.filter_bytes // hw.word_bytes

    # -- candidates ---------------------------------------------------------------------------------------
    def nest(self, built: _Built) -> LoopNest:
        """The loop nest of a built candidate (made only for those priced exactly)."""
        return self.builder.nest(built.inner, built.dram, built.glb, built.keeps)

    def build(self, c: _Candidate) -> _Built:
        """The candidate's nest in parts: the GLB keeps every operand, or (keep mode `reuse`) those it gives
        reuse, less the filters when the filter partition cannot hold their tile (they go past the GLB)."""
        (dram, dram_loops), (glb, glb_loops) = self.builder.storage_loops(c.inner, c.outer)
        loops = [*dram_loops, *glb_loops, *self._pass_loops[c.inner]]
        rf_keeps = self.inners[c.inner].rf.keeps
        keeps = self._reused(loops, len(dram), rf_keeps) if c.outer.keep_mode == "reuse" else ALL
        if "filter" in keeps and self._filter_room and self.screen.tile(loops, "filter", len(dram)) > self._filter_room:
            keeps -= {"filter"}
        return _Built(c.inner, dram, glb, keeps, loops, (tuple(loops), (ALL_SORTED, tuple(sorted(keeps)))))

    def _reused(self, loops: list[FlatLoop], n_dram: int, rf_keeps: frozenset[str]) -> frozenset[str]:
        """The operands whose GLB tile changes less often than the PEs' (the others gain nothing there)."""
        n_above = sum(1 for l in loops if l[0] in (*STORAGE, "stream"))
        return frozenset(op for op in OPERANDS if self.screen._visit(loops, op, n_dram, True)[0]
                         < self.screen._visit(loops, op, n_above, op in rf_keeps)[0])

    def random_outer(self, rng: random.Random, k: int, spread: bool = True) -> Outer:
        """A random outer part of inner part `k` whose GLB tiles fit: dims in random order, each given the largest
        of a random suffix of its tile sizes that still fits beside the others (the capacity pre-check). The
        sizes are `space.spread_sizes` when `spread`, else only its near-equal largest cuts."""
        rest = self.builder.rest[k]
        extent = list(self._pass_tiles[k])
        factors = [1] * len(DIMS)
        dims = [i for i in range(len(DIMS)) if rest[i] > 1]
        rng.shuffle(dims)
        for i in dims:
            sizes = self._glb_sizes(rest[i], spread)
            for size in sizes[rng.randrange(len(sizes)):]:
                grown = (*extent[:i], extent[i] * size, *extent[i + 1:])
                if self._glb_fits(grown):
                    factors[i], extent[i] = size, grown[i]
                    break
        return Outer(tuple(factors), rng.choice(PRIORITIES), rng.choice(PRIORITIES), rng.choice(KEEP_MODES))

    def _glb_sizes(self, extent: int, spread: bool) -> list[int]:
        """The GLB tile sizes `random_outer` draws from for a dim of `extent` (each list made once)."""
        key = (extent, spread)
        if key not in self._sizes:
            self._sizes[key] = spread_sizes(extent, GLB_CHOICES) if spread else choices(extent, extent, GLB_CHOICES)
        return self._sizes[key]

    def _glb_fits(self, extent: tuple[int, ...]) -> bool:
        """Whether GLB tiles of these extents (DIMS order) fit its data partition (filters too when it has no
        filter partition; else they may bypass it); each extent checked once."""
        fits = self._fits.get(extent)
        if fits is None:
            fits = self._fits[extent] = sum(self.screen.words(op, extent) for op in self._glb_ops) <= self._glb_room
        return fits

    def samples(self, rng: random.Random, count: int) -> Iterator[_Candidate]:
        """Every inner part once, then random ones, `count` in all, with GLB tiles among the largest cuts (where a
        GLB's reuse usually is); then half as many again with GLB tiles over all scales (`space.spread_sizes`: e.g.
        a weight-heavy layer's filter tile small enough for the filter partition while the images stream)."""
        for i in range(count + count // 2):
            k = i if i < len(self.inners) else rng.randrange(len(self.inners))
            yield _Candidate(k, self.random_outer(rng, k, spread=i >= count))

    def screened_value(self, built: _Built) -> float | None:
        self.screened += 1
        inner = self.inners[built.inner]
        s = self.screen.evaluate_loops(built.loops, built.keeps, inner.array.delivery, inner.rf.keeps)
        if s is None:
            return None
        return OBJECTIVES.get(self.objective)(s.energy_pj, s.latency_cycles, s.dram_words)

    # -- exact ---------------------------------------------------------------------------------------------
    def price(self, nest: LoopNest, key: tuple[object, ...] | None = None) -> LayerCost | None:
        """The exact cost of a valid nest (None when `check_nest` rejects it); each nest priced once. `key`:
        the nest's `_key` when the caller has it."""
        key = _key(nest) if key is None else key
        if key not in self.priced:
            try:
                check_nest(nest, self.p, self.hw, self.df)
                self.priced[key] = exact_cost(self.layer, nest, self.batch, self.hw, self.table, self.zeros)
            except HwsimError:
                self.priced[key] = None
        return self.priced[key]

    def neighbours(self, c: _Candidate) -> Iterator[_Candidate]:
        o = c.outer
        rest = self.builder.rest[c.inner]
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
                scaled = tuple(min(g, r) for g, r in zip(o.glb, self.builder.rest[k]))
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
                built = self.build(c)
                nest = self.nest(built)
                cost = self.price(nest, built.key)
                if cost is not None:
                    pool.append((cost, nest, c))
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
            built = self.build(c)
            value = self.screened_value(built)
            if value is not None and built.key not in scored:
                scored[built.key] = (value, i, c)
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
                built = self.build(n)
                if self.screened_value(built) is None:
                    continue
                nest = self.nest(built)
                cost = self.price(nest, built.key)
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
