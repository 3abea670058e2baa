"""The mapspace of a layer on an array of a given dataflow: what a pass does inside the array (the dataflow's own
choices), and how the storage levels above it tile and order the rest.

A candidate is an *inner* part, chosen by the dataflow (`INNER_SPACES`, one
enumerator per dataflow, each within its constraints and the RF's capacity):

- row stationary: kernel rows folded to fit the array's height, filter columns
  to fit the ifmap RF; q channels, p filters and S columns per PE within the
  filter, ifmap and psum RFs; PE sets for channels and filters stacked over
  the rows; output rows, or images or filters when the map is narrow, over the
  columns; output columns (and images) streamed;
- systolic (weight, output, input stationary): a tile of the rows dim, of the
  cols dim, and of the streamed dim (whole or cut, at every scale);
- no local reuse: channels over the rows, filters over the columns, a band of
  output rows (and images) streamed;

and an *outer* part: per dim the GLB's factor over the passes' tiles (the DRAM
takes the rest), the order of each storage level's loops and what the GLB
keeps. An order is a priority of the operands: the loops irrelevant to the
first are innermost (its tile stays while they run: Timeloop's reuse rule),
then those irrelevant to the second; so each level has at most six orders.
The GLB keeps every operand (`all`), or only those it gives reuse (`reuse`:
an operand whose GLB tile changes as often as the PEs' is moved past it).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from hwsim.hardware.schema import Accelerator
from hwsim.mapping.dataflows import dataflow_of
from hwsim.mapping.dataflows.systolic import ROLES
from hwsim.mapping.nest.format import DIMS, OPERANDS, Array, Loop, LoopNest, Loops, Storage
from hwsim.mapping.nest.problem import Problem, tile_bound_words
from hwsim.registry import Registry
from hwsim.search.screen import FlatLoop
from hwsim.vocab import ceil_div

PRIORITIES = tuple(itertools.permutations(OPERANDS))  # the loop orders of a storage level
KEEP_MODES = ("all", "reuse")
CHOICES = 3  # values tried per inner factor


@dataclass(frozen=True)
class Inner:
    """What one pass does inside the array: its spatial, stream and RF loops."""

    array: Array
    rf: Storage

    def tile(self, dim: str) -> int:
        """The pass's tile of `dim`: the product of its factors inside the array."""
        product = 1
        for loop in (*self.array.stream, *self.array.rows, *self.array.cols, *self.rf.loops):
            if loop.dim == dim:
                product *= loop.factor
        return product


@dataclass(frozen=True)
class Outer:
    """How the storage levels tile and order what the passes leave: the GLB's factor per dim (DIMS order), the
    operand priority of the DRAM's and of the GLB's loops, and which operands the GLB keeps."""

    glb: tuple[int, ...]
    dram_priority: tuple[str, ...]
    glb_priority: tuple[str, ...]
    keep_mode: str


def choices(extent: int, most: int, count: int = CHOICES) -> list[int]:
    """Up to `count` tile sizes ≤ `most` for a dim of `extent`, largest first: the sizes ⌈extent/k⌉ that cut it
    into k near-equal tiles (no two give the same number of tiles)."""
    out: list[int] = []
    k = ceil_div(extent, max(1, most))
    while len(out) < count and k <= extent:
        size = ceil_div(extent, k)
        if size <= most and (not out or size < out[-1]):
            out.append(size)
        k = ceil_div(extent, size - 1) if size > 1 else extent + 1
    return out or [1]


def spread_sizes(extent: int, near: int) -> list[int]:
    """Tile sizes of a dim of `extent` over all scales, largest first: the `near` largest near-equal cuts
    (`choices`) and the halvings ⌈extent/2^k⌉ down to 1. Small tiles matter where a weight-heavy layer keeps a
    filter tile that fits its partition while the images stream past it (GLB tiles; a systolic pass's stream)."""
    halvings = {ceil_div(extent, 1 << k) for k in range(extent.bit_length() + 1)}
    return sorted({*choices(extent, extent, near), *halvings}, reverse=True)


def _loops(*pairs: tuple[str, int]) -> Loops:
    return tuple(Loop(d, f) for d, f in pairs if f > 1)


# ----- inner parts per dataflow ---------------------------------------------------------------------------

InnerSpace = Callable[[Problem, Accelerator], Iterator[Inner]]
INNER_SPACES: Registry[InnerSpace] = Registry("mapspace of pe_array.dataflow")


@INNER_SPACES.register("row_stationary")
def row_stationary_inners(p: Problem, hw: Accelerator) -> Iterator[Inner]:
    """Row-stationary passes (module docstring)."""
    d, rf, pe = p.dims, hw.pe_array.rf, hw.pe_array
    if rf is None:
        return
    for r_fold in choices(d["R"], pe.rows, 2):
        for s_rf in choices(d["S"], rf.ifmap_words, 2):
            window = (s_rf - 1) * p.dilation[1] + 1 if not p.transposed else 1
            for q in choices(d["C"], rf.ifmap_words // window):
                for pf in choices(d["M"], min(rf.psum_words, rf.filter_words // (q * s_rf))):
                    for rows in _rs_rows(p, pe.rows // r_fold, q, pf):
                        yield from _rs_passes(p, hw, (("R", r_fold), *rows), (("C", q), ("M", pf), ("S", s_rf)))


def _rs_rows(p: Problem, sets: int, q: int, pf: int) -> Iterator[tuple[tuple[str, int], ...]]:
    """PE sets over channels and filters that fill the rows well."""
    c_tiles, m_tiles = ceil_div(p.dims["C"], q), ceil_div(p.dims["M"], pf)
    seen = set()
    for csets in choices(c_tiles, sets):
        msets = choices(m_tiles, max(1, sets // csets), 1)[0]
        if (csets, msets) not in seen:
            seen.add((csets, msets))
            yield ("C", csets), ("M", msets)
    msets = choices(m_tiles, sets, 1)[0]
    csets = choices(c_tiles, max(1, sets // msets), 1)[0]
    if (csets, msets) not in seen:
        yield ("C", csets), ("M", msets)


def _rs_passes(p: Problem, hw: Accelerator, rows: tuple[tuple[str, int], ...],
               rf: tuple[tuple[str, int], ...]) -> Iterator[Inner]:
    d, cols = p.dims, hw.pe_array.cols
    m_on_rows = any(dim == "M" and f > 1 for dim, f in rows)
    for y in choices(d["P"], cols, 2):
        spare = cols // y
        extra: list[tuple[str, int]] = [("N", 1)]
        if spare > 1 and d["N"] > 1:
            extra.append(("N", choices(d["N"], spare, 1)[0]))
        if spare > 1 and not m_on_rows and ceil_div(d["M"], dict(rf)["M"]) > 1:
            extra.append(("M", choices(ceil_div(d["M"], dict(rf)["M"]), spare, 1)[0]))
        for dim, f in extra:
            for x in choices(d["Q"], d["Q"]):
                n_stream = 1 if dim == "N" and f > 1 else d["N"]
                for n in sorted({1, n_stream}):
                    array = Array(_loops(*rows), _loops(("P", y), (dim, f)), _loops(("Q", x), ("N", n)),
                                  {"ifmap": "multicast", "filter": "multicast"})
                    yield Inner(array, Storage("rf", _loops(*rf), frozenset(OPERANDS)))


def _systolic(name: str) -> InnerSpace:
    row_dim, col_dim, stream_dim, keeps, ifmap, filters = ROLES[name]

    def inners(p: Problem, hw: Accelerator) -> Iterator[Inner]:
        d = p.dims
        for a in choices(d[row_dim], hw.pe_array.rows):
            for b in choices(d[col_dim], hw.pe_array.cols):
                for s in spread_sizes(d[stream_dim], 4):  # whole, near-equal cuts, and halvings
                    yield Inner(Array(_loops((row_dim, a)), _loops((col_dim, b)), _loops((stream_dim, s)),
                                      {"ifmap": ifmap, "filter": filters}), Storage("rf", (), frozenset({keeps})))
    return inners


for _name in ROLES:
    INNER_SPACES.register(_name)(_systolic(_name))


@INNER_SPACES.register("no_local_reuse")
def no_local_reuse_inners(p: Problem, hw: Accelerator) -> Iterator[Inner]:
    """Channels over the rows, filters over the columns, a band of output rows (and images) streamed."""
    d = p.dims
    for a in choices(d["C"], hw.pe_array.rows):
        for b in choices(d["M"], hw.pe_array.cols):
            for band in choices(d["P"], d["P"], 4):
                for n in sorted({1, d["N"]}):
                    yield Inner(Array(_loops(("C", a)), _loops(("M", b)), _loops(("N", n), ("P", band), ("Q", d["Q"])),
                                      {"ifmap": "multicast", "filter": "unicast"}), Storage("rf", (), frozenset()))


def inner_space(p: Problem, hw: Accelerator) -> list[Inner]:
    """Every inner part the array's dataflow allows for this problem that fits the array and the RFs."""
    df = dataflow_of(hw)
    out = []
    for inner in INNER_SPACES.get(df.name)(p, hw):
        if _fits_inner(p, hw, inner):
            out.append(inner)
    return out


def _fits_inner(p: Problem, hw: Accelerator, inner: Inner) -> bool:
    pe = hw.pe_array
    rows = _product(inner.array.rows)
    cols = _product(inner.array.cols)
    if rows > pe.rows or cols > pe.cols:
        return False
    rf = pe.rf
    if rf is None or not inner.rf.keeps:
        return True
    extent = {d: _product(l for l in inner.rf.loops if l.dim == d) for d in DIMS}
    room = {"filter": rf.filter_words, "ifmap": rf.ifmap_words, "psum": rf.psum_words}
    return all(tile_bound_words(p, op, extent) <= room[op] for op in inner.rf.keeps)


def _product(loops: Iterator[Loop] | Loops) -> int:
    product = 1
    for loop in loops:
        product *= loop.factor
    return product


# ----- outer parts and whole nests -------------------------------------------------------------------------


def remaining(p: Problem, inner: Inner) -> tuple[int, ...]:
    """Per dim (DIMS order), the pass tiles the storage levels iterate over."""
    return tuple(ceil_div(p.dims[d], inner.tile(d)) for d in DIMS)


def level_order(p: Problem, dims: tuple[str, ...], priority: tuple[str, ...]) -> tuple[str, ...]:
    """A storage level's looping dims (`dims`: factors > 1, DIMS order) outer to inner in the order `priority`
    gives: the loops irrelevant to the first operand innermost, then those irrelevant to the second."""
    rel = p.relevant
    return tuple(sorted(dims, key=lambda d: tuple(d not in rel[op] for op in priority)))


LevelLoops = tuple[Loops, tuple[FlatLoop, ...]]  # a storage level's loops, and as (place, dim, factor)


class NestBuilder:
    """The loop nests of one problem's candidates (an inner part by its index, an outer part), remembering what
    candidates share: each inner part's remaining tiles and each storage level's loops per factors and order."""

    def __init__(self, p: Problem, inners: list[Inner], lowering: str) -> None:
        self.p, self.inners, self.lowering = p, inners, lowering
        self.rest = [remaining(p, inner) for inner in inners]  # per inner part (DIMS order)
        self._orders: dict[tuple[str, tuple[int, ...], tuple[str, ...]], LevelLoops] = {}
        self._dim_orders: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[str, ...]] = {}

    def storage_loops(self, k: int, outer: Outer) -> tuple[LevelLoops, LevelLoops]:
        """The DRAM's and the GLB's loops of inner part `k` with `outer`: the GLB takes its factor of each dim
        (at most what the passes leave), the DRAM the rest."""
        rest = self.rest[k]
        glb = tuple(map(min, outer.glb, rest))
        dram = tuple(map(ceil_div, rest, glb))
        return self._ordered("dram", dram, outer.dram_priority), self._ordered("glb", glb, outer.glb_priority)

    def nest(self, k: int, dram: Loops, glb: Loops, keeps: frozenset[str]) -> LoopNest:
        """The loop nest of inner part `k` under the storage levels' loops, the GLB keeping `keeps`."""
        inner = self.inners[k]
        storage = (Storage("dram", dram), Storage("glb", glb, keeps))
        return LoopNest(self.p.layer, dict(self.p.dims), storage, inner.array, inner.rf, self.lowering)

    def _ordered(self, level: str, factors: tuple[int, ...], priority: tuple[str, ...]) -> LevelLoops:
        """The loops of a level with these factors (DIMS order; those > 1 loop) in `level_order`, made once per
        combination (the order once per set of looping dims)."""
        key = (level, factors, priority)
        found = self._orders.get(key)
        if found is None:
            by_dim = dict(zip(DIMS, factors))
            dims = tuple(d for d in DIMS if by_dim[d] > 1)
            order = self._dim_orders.get((dims, priority))
            if order is None:
                order = self._dim_orders[dims, priority] = level_order(self.p, dims, priority)
            loops = tuple(Loop(d, by_dim[d]) for d in order)
            found = self._orders[key] = (loops, tuple((level, l.dim, l.factor) for l in loops))
        return found


__all__ = ["INNER_SPACES", "KEEP_MODES", "PRIORITIES", "Inner", "LevelLoops", "NestBuilder", "Outer", "choices",
           "inner_space", "level_order", "remaining", "spread_sizes"]
