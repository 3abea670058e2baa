"""Closed-form counts of a loop-nest mapping, from the mapping alone (Timeloop-style tile analysis).

For every storage boundary (DRAM → L2 → GLB → the PEs) and operand, the words
read at the parent and filled (or updated) at the child follow from the loop
nest as `hwsim.mapping.nest.format` defines it, without walking it:

- the visits of an operand's tile at a level are the iterations of the loops
  out to the innermost relevant loop j; each dim's positions there lie on a
  uniform grid at granularity g (the product of its factors inside j), so
  there are ⌈D/g⌉ of them and the sum over visits of a tile's words factors
  into a product, over the operand's independent axes, of sums over those
  positions (an ifmap's rows depend on P and R together: a sum over pairs);
- a tile's words are the distinct elements it needs — an ifmap row set is a
  union of arithmetic progressions, counted exactly per residue of the stride;
  inside the array they are counted per lane or per PE where the delivery
  says so (the array's enumerated axes split each range into the PEs'
  sub-ranges);
- a sliding window (j a stream loop over P/Q/R/S, ifmap kept by the RF and
  multicast) delivers each word of its run once: j's dim counts at the
  granularity outside j;
- partial sums: a visit reads back unless it is the first over the reduction
  dims outside j (⌈D/g⌉ visits per output tile, one of them first and one
  last), and writes back every visit, the last one as the ofmap to DRAM;
- passes, MACs and compute cycles: per-dim range lengths take at most two
  values (full and clipped tail), so sums of per-pass ceilings enumerate at
  most 2⁸ length combinations. A systolic fold of T stream iterations on an
  R × C array takes 2R + C + T − 2 cycles (weight and input stationary) or
  R + C + T − 2 (output stationary), SCALE-Sim's timing.

Every MAC reads its three operands from the PE's RF and writes its psum there,
except psums handed to the next PE; words entering the array are RF fills.

Zeros (`hwsim.sparsity.layer`): a pass of W MACs has ⌊W · z⌋ whose ifmap word
is zero (z: the layer's zero-MAC fraction), summed over the same length
combinations; the array gates them (zero_gating) or skips them (zero_skipping:
its pass then counts W − ⌊W · z⌋ MACs), with their filter RF reads and, with
zero_gating_psums, their psum RF reads and writes (the writes at most the
layer's).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from hwsim.analytic.counts import LayerCounts, add_transfer
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.nest.format import DIMS, REDUCTION, SLIDING, WINDOWS, LoopNest, Streamed
from hwsim.sparsity.codec import Codec, Links
from hwsim.sparsity.layer import expected_zero_macs
from hwsim.sparsity.profile import DENSE_LAYER, LayerZeros
from hwsim.vocab import ACCESS_SHAPE, Level, Operand, ceil_div
from hwsim.workload.ir import Layer, LayerKind

LEVEL = {"dram": Level.DRAM, "l2": Level.L2, "glb": Level.GLB, "rf": Level.RF}
SYSTOLIC_FILL = {"weight_stationary": 2, "input_stationary": 2, "output_stationary": 1}  # R's in a fold's skew
_ARRAY = frozenset({"rows", "cols"})  # the PE array's spatial places


@dataclass(frozen=True)
class Window:
    """A layer's sliding window, read off the layer (here, independently of the mapper); `frames` is the window
    along a clip's frames: (stride, dilation, frames padded in front, input frames, output frames)."""

    dims: dict[str, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]
    pad: tuple[int, int]
    in_hw: tuple[int, int]
    out_hw: tuple[int, int]
    up: tuple[int, int]
    transposed: bool
    frames: tuple[int, int, int, int, int] = (1, 1, 0, 1, 1)

    def axis(self, out_dim: str) -> tuple[int, int, int, int, int, int]:
        """(stride, dilation, pad, input size, output rows each grid row owns, output size) along the axis of
        `out_dim` (F: frames, P: rows, Q: columns)."""
        if out_dim == "F":
            stride, dilation, pad, size, out = self.frames
            return stride, dilation, pad, size, 1, out
        i = "PQ".index(out_dim)
        return self.stride[i], self.dilation[i], self.pad[i], self.in_hw[i], self.up[i], self.out_hw[i]


def _nest_dims(n: int, g: int, m: int, c: int, f: int, p: int, q: int, t: int, r: int, s: int) -> dict[str, int]:
    return {"N": n, "G": g, "M": m, "C": c, "F": f, "P": p, "Q": q, "T": t, "R": r, "S": s}


def window_of(layer: Layer, batch: int, lowering: str = "conv") -> Window:
    """The layer's window, or that of its im2col GEMM: a 1×1 convolution over its output pixels with C·T·R·S
    channels."""
    if lowering == "im2col":
        d = window_of(layer, batch).dims
        k, t = d["C"] * d["T"] * d["R"] * d["S"], d["N"] * d["F"] * d["P"] * d["Q"]
        return Window(_nest_dims(1, d["G"], d["M"], k, 1, t, 1, 1, 1, 1), (1, 1), (1, 1), (0, 0), (t, 1), (t, 1),
                      (1, 1), False)
    ins, out = layer.in_shape, layer.out_shape
    kh, kw = layer.kernel
    if layer.kind is LayerKind.MATMUL and layer.gemm is not None:
        # (rows × k)·(k × cols) per product and image: a 1×1 convolution over the rows, filters = the second
        # operand, which no image or product shares with another (so they are groups, N = 1)
        products, rows, k, cols = layer.gemm
        return Window(_nest_dims(1, batch * products, cols, k, 1, rows, 1, 1, 1, 1), (1, 1), (1, 1), (0, 0),
                      (rows, 1), (rows, 1), (1, 1), False)
    if layer.kind is LayerKind.FC:  # the kernel covers the whole input, every frame of a clip
        return Window(_nest_dims(batch, 1, out.c, ins.c, 1, 1, 1, ins.d, ins.h, ins.w), (1, 1), (1, 1), (0, 0),
                      (ins.h, ins.w), (1, 1), (1, 1), False, (1, 1, 0, ins.d, 1))
    g = layer.groups
    if layer.kind is LayerKind.CONV_TRANSPOSE:
        dims = _nest_dims(batch, g, out.c // g, ins.c // g, 1, ins.h, ins.w, 1, kh, kw)
        return Window(dims, (1, 1), (1, 1), (0, 0), (ins.h, ins.w), (out.h, out.w), layer.stride, True)
    fw = layer.frames
    dims = _nest_dims(batch, g, out.c // g, ins.c // g, out.d, out.h, out.w, fw.kernel, kh, kw)
    return Window(dims, layer.stride, layer.dilation, (layer.padding.top, layer.padding.left), (ins.h, ins.w),
                  (out.h, out.w), (1, 1), False, (fw.stride, fw.dilation, fw.front, ins.d, out.d))


def progression_union(a0: np.ndarray, a1: np.ndarray, k0: np.ndarray, k1: np.ndarray, stride: int, dilation: int,
                      pad: int, size: int) -> np.ndarray:
    """|{a·stride + k·dilation − pad : a ∈ [a0, a1), k ∈ [k0, k1)} ∩ [0, size)| for arrays of ranges.

    Values of one residue ρ modulo the stride come from the kernel offsets k with k·dilation − pad ≡ ρ; each
    such k gives the interval a + ⌊(k·dilation − pad)/stride⌋ over a, all of one length, in increasing order:
    their union is a sweep over ends, clipped to the quotient range [0, ⌈(size − ρ)/stride⌉)."""
    a0, a1, k0, k1 = (np.asarray(v, dtype=np.int64) for v in (a0, a1, k0, k1))
    total = np.zeros(np.broadcast(a0, k0).shape, dtype=np.int64)
    span = int(np.max(k1, initial=0))
    for rho in range(stride):
        top = ceil_div(size - rho, stride)
        last_end = np.full_like(total, np.iinfo(np.int64).min)
        for k in range(span):
            offset = k * dilation - pad
            if (offset - rho) % stride:
                continue
            base = (offset - rho) // stride
            use = (k >= k0) & (k < k1) & (a1 > a0)
            start = np.clip(a0 + base, 0, top)
            end = np.clip(a1 + base, 0, top)
            gained = np.maximum(0, end - np.maximum(start, last_end))
            total += np.where(use, gained, 0)
            last_end = np.where(use, np.maximum(last_end, end), last_end)
    return total


_GROUP_SUMS_ENTRIES = 1 << 15
_group_sums: dict[tuple[object, ...], int] = {}  # pair and owned-row sums by their grids and window axis
_group_histograms: dict[tuple[object, ...], tuple[np.ndarray, np.ndarray]] = {}  # their values' histograms


def _owned(a0: np.ndarray, a1: np.ndarray, up: int, grid: int, total: int) -> np.ndarray:
    return np.where(a1 > a0, np.where(a1 >= grid, total, a1 * up) - a0 * up, 0)


@dataclass(frozen=True)
class _Loop:
    place: str  # a storage level, "stream", "rows", "cols" or "rf"
    dim: str
    factor: int


def _suffix_products(loops: list[_Loop]) -> dict[str, list[int]]:
    """Per dim, the product of its factors from each loop index on (index len(loops): 1)."""
    out = {d: [1] * (len(loops) + 1) for d in DIMS}
    for i in range(len(loops) - 1, -1, -1):
        for d in DIMS:
            out[d][i] = out[d][i + 1] * (loops[i].factor if loops[i].dim == d else 1)
    return out


def _loops(nest: LoopNest) -> list[_Loop]:
    out = [_Loop(s.level, l.dim, l.factor) for s in nest.storage for l in s.loops]
    out += [_Loop("stream", l.dim, l.factor) for l in nest.array.stream]
    out += [_Loop("rows", l.dim, l.factor) for l in nest.array.rows]
    out += [_Loop("cols", l.dim, l.factor) for l in nest.array.cols]
    return out + [_Loop("rf", l.dim, l.factor) for l in nest.rf.loops]


class NestCounter:
    """The counts of one layer's loop nest (see the module docstring)."""

    def __init__(self, layer: Layer, nest: LoopNest, batch: int, hw: Accelerator,
                 zeros: LayerZeros = DENSE_LAYER) -> None:
        self.layer, self.nest, self.hw, self.zeros = layer, nest, hw, zeros
        self.links = Links.of(hw)
        self.w = window_of(layer, batch, nest.lowering)
        self.loops = _loops(nest)
        self._inside = _suffix_products(self.loops)
        self._by_dim = {d: [i for i, l in enumerate(self.loops) if l.dim == d] for d in DIMS}
        self._grid: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = {}
        self._places: dict[tuple[frozenset[str], str], tuple[int, ...]] = {}
        self.relevant = {
            "ifmap": {"N", "G", "C", "F", "P", "Q"} | (set() if self.w.transposed else {"T", "R", "S"}),
            "filter": {"G", "M", "C", "T", "R", "S"},
            "psum": {"N", "G", "M", "F", "P", "Q"},
        }

    # -- grids -----------------------------------------------------------------------------------------
    def _granularity(self, dim: str, cut: int) -> int:
        """The dim's tile inside the first `cut` loops: the product of its factors from loop `cut` on."""
        return self._inside[dim][cut]

    def _ranges(self, dim: str, cut: int) -> tuple[np.ndarray, np.ndarray]:
        """The dim's ranges [lo, hi) at the granularity inside the first `cut` loops (the uniform grid)."""
        key = (dim, cut)
        if key not in self._grid:
            g, extent = self._granularity(dim, cut), self.w.dims[dim]
            lo = np.arange(ceil_div(extent, g), dtype=np.int64) * g
            self._grid[key] = (lo, np.minimum(extent, lo + g))
        return self._grid[key]

    def _at(self, places: frozenset[str], dim: str) -> tuple[int, ...]:
        """Indices of the dim's loops at `places`, outer to inner."""
        key = (places, dim)
        if key not in self._places:
            self._places[key] = tuple(i for i in self._by_dim[dim] if self.loops[i].place in places)
        return self._places[key]

    def _split(self, dim: str, lo: np.ndarray, hi: np.ndarray, axes: frozenset[str]) -> tuple[np.ndarray, np.ndarray]:
        """Ranges cut into the sub-ranges of the PEs along the enumerated array `axes` (a dim lies on at most one
        of rows and cols)."""
        spatial = self._at(axes, dim)
        if not spatial:
            return lo, hi
        inner = self._granularity(dim, spatial[-1] + 1)
        count = math.prod(self.loops[i].factor for i in spatial)
        sub_lo = (lo[:, None] + np.arange(count)[None, :] * inner).ravel()
        sub_hi = np.minimum(np.repeat(hi, count), sub_lo + inner)
        keep = sub_lo < sub_hi
        return sub_lo[keep], sub_hi[keep]

    def _copies(self, dim: str, cut: int, axes: frozenset[str]) -> int:
        """Σ over the dim's ranges inside the first `cut` loops of the PE positions along the enumerated `axes`
        that hold a copy of an operand the dim does not index: each range has length g (the granularity), but
        a clipped tail, and the spatial loops spread it over min(count, ⌈length / inner⌉) positions."""
        g, extent = self._granularity(dim, cut), self.w.dims[dim]
        full, tail = divmod(extent, g)
        spatial = self._at(axes, dim)
        if not spatial:
            return full + (tail > 0)
        inner = self._granularity(dim, spatial[-1] + 1)
        count = math.prod(self.loops[i].factor for i in spatial)
        return full * min(count, ceil_div(g, inner)) + (min(count, ceil_div(tail, inner)) if tail else 0)

    # -- words of an operand's tiles ---------------------------------------------------------------------
    def words(self, op: str, cut: int, axes: frozenset[str] = frozenset(), coarse: str = "") -> int:
        """Σ over the iterations of the first `cut` loops of the distinct `op` elements each needs (per PE
        sub-range along `axes`); `coarse` names a dim counted at the granularity one loop further out."""
        cuts = {d: cut - 1 if d == coarse else cut for d in DIMS}
        rel = self.relevant[op]
        total = 1
        for d in DIMS:
            if d not in rel:
                total *= self._copies(d, cuts[d], axes)
        for group in self._groups(op):
            total *= self._group_sum(op, group, tuple(cuts[d] for d in group), axes)
        return total

    def _groups(self, op: str) -> list[tuple[str, ...]]:
        if op == "ifmap" and not self.w.transposed:
            return [("N",), ("G",), ("C",), *WINDOWS]
        return [(d,) for d in DIMS if d in self.relevant[op]]

    def _group_sum(self, op: str, group: tuple[str, ...], cuts: tuple[int, ...], axes: frozenset[str]) -> int:
        """Σ over the group's ranges (pairs of output and kernel ranges for an ifmap's rows or columns) of the
        distinct elements each holds. The PE sub-ranges of one dim's ranges partition it, so a dim that indexes
        the operand alone sums to its extent (a transposed convolution's outputs aside: owned rows)."""
        w = self.w
        if len(group) == 1 and not (op == "psum" and w.transposed and group[0] in ("P", "Q")):
            return w.dims[group[0]]
        grids = tuple(self._grid_key(d, c, axes) for d, c in zip(group, cuts))
        key = (len(group), grids, w.axis(group[0]))
        if key not in _group_sums:
            if len(_group_sums) >= _GROUP_SUMS_ENTRIES:
                _group_sums.pop(next(iter(_group_sums)))
            _group_sums[key] = int(self._group_values(op, group, cuts, axes).sum())
        return _group_sums[key]

    def _group_values(self, op: str, group: tuple[str, ...], cuts: tuple[int, ...],
                      axes: frozenset[str] = frozenset()) -> np.ndarray:
        """The distinct elements of each of the group's ranges (or pairs of ranges), one value per range."""
        w = self.w
        ranges = [self._split(d, *self._ranges(d, c), axes) for d, c in zip(group, cuts)]
        if len(group) == 1 and not (op == "psum" and w.transposed and group[0] in ("P", "Q")):
            ((lo, hi),) = ranges
            lengths: np.ndarray = hi - lo
            return lengths
        stride, dilation, pad, size, up, total = w.axis(group[0])
        if len(group) == 2:
            (a0, a1), (k0, k1) = ranges
            rows = progression_union(a0[:, None], a1[:, None], k0[None, :], k1[None, :], stride, dilation, pad, size)
            return rows.ravel()
        ((lo, hi),) = ranges
        return _owned(lo, hi, up, w.dims[group[0]], total)

    def coded_words(self, op: str, cut: int, codec: Codec, fraction: float) -> int:
        """Σ over the visits of the first `cut` (storage) loops, image by image for activations, of the coded words
        of `op`'s tile, by the codec's expectation for a `fraction` of zeros: each group of dims gives the
        distinct tile extents with their multiplicities, and the tiles of one shape are priced once. For psums,
        only the last visit of each output tile (the ofmap written back)."""
        total = 1  # transfers per tile shape: the copies of the dims the operand ignores, and one per image
        for d in DIMS:
            if d not in self.relevant[op] and op != "psum":  # a psum's other dims are reduced: one last visit
                total *= self._copies(d, cut, frozenset())
        values, counts = np.ones(1, dtype=np.int64), np.ones(1, dtype=np.int64)
        for group in self._groups(op):
            if group == ("N",) and op != "filter":
                total *= self.w.dims["N"]
                continue
            found, found_counts = self._group_histogram(op, group, tuple(cut for _ in group))
            values, inverse = np.unique(np.outer(values, found).ravel(), return_inverse=True)
            counts = np.bincount(inverse, weights=np.outer(counts, found_counts).ravel()).astype(np.int64)
        return total * int((counts * codec.expected_words(values, fraction)).sum())

    def _group_histogram(self, op: str, group: tuple[str, ...], cuts: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """The distinct values of `_group_values` with how often each occurs, kept per (grids, window axis) like
        the group sums (a network's layers and a sweep's points share them)."""
        w = self.w
        owned = op == "psum" and w.transposed and group[0] in ("P", "Q")
        key = ("histogram", owned, len(group), tuple(self._grid_key(d, c, frozenset()) for d, c in zip(group, cuts)),
               w.axis(group[0]) if group[0] in "FPQ" else ())
        found = _group_histograms.get(key)
        if found is None:
            if len(_group_histograms) >= _GROUP_SUMS_ENTRIES:
                _group_histograms.pop(next(iter(_group_histograms)))
            found = _group_histograms[key] = np.unique(self._group_values(op, group, cuts), return_counts=True)
        return found

    def _grid_key(self, dim: str, cut: int, axes: frozenset[str]) -> tuple[int, int, int, int]:
        """What a dim's ranges at `cut`, cut into PE sub-ranges along `axes`, depend on: (extent, granularity,
        sub-ranges per range, sub-range size)."""
        spatial = self._at(axes, dim)
        count = math.prod(self.loops[i].factor for i in spatial) if spatial else 1
        inner = self._granularity(dim, spatial[-1] + 1) if spatial else 0
        return self.w.dims[dim], self._granularity(dim, cut), count, inner

    # -- boundaries --------------------------------------------------------------------------------------
    def _above(self, level: str) -> int:
        if level == "rf":
            return sum(1 for l in self.loops if l.place not in ("rows", "cols", "rf"))
        order = [s.level for s in self.nest.storage]
        return sum(1 for l in self.loops if l.place in order[:order.index(level)])

    def _innermost(self, op: str, k: int) -> int:
        return max((i for i in range(k) if self.loops[i].dim in self.relevant[op] and self.loops[i].factor > 1),
                   default=-1)

    def _visits(self, op: str, level: str) -> tuple[int, int, str]:
        """(cut, loop j, coarse dim) of the visits of `op`'s tile at `level`."""
        k = self._above(level)
        if level == "rf" and op not in self.nest.rf.keeps:
            return k, k - 1, ""
        j = self._innermost(op, k)
        nest = self.nest
        sliding = (level == "rf" and op == "ifmap" and not self.w.transposed and "ifmap" in nest.rf.keeps
                   and nest.array.delivery["ifmap"] == "multicast" and j >= 0 and self.loops[j].place == "stream"
                   and self.loops[j].dim in SLIDING)
        return j + 1, j, self.loops[j].dim if sliding else ""

    def _parent(self, op: str, level: str) -> str:
        order = [s.level for s in self.nest.storage]
        outer = order if level == "rf" else order[:order.index(level)]
        for name in reversed(outer):
            if op in self.nest.level(name).keeps:  # type: ignore[union-attr]
                return name
        return "dram"

    def _axes(self, op: str) -> frozenset[str]:
        mode = self.nest.array.delivery.get(op, "multicast")
        return {"multicast": frozenset(), "forward_cols": frozenset({"rows"}),
                "forward_rows": frozenset({"cols"}), "unicast": frozenset({"rows", "cols"})}[mode]

    def boundaries(self) -> Iterator[tuple[str, str]]:
        """(level, operand) of every boundary below DRAM where the operand moves in."""
        for s in self.nest.storage[1:]:
            for op in ("ifmap", "filter", "psum"):
                if op in s.keeps:
                    yield s.level, op
        for op in ("ifmap", "filter", "psum"):
            yield "rf", op

    def transfers(self) -> tuple[np.ndarray, dict[str, int]]:
        """[Level, Operand, Access] words and the PE-to-PE hops per operand."""
        table = np.zeros(ACCESS_SHAPE, dtype=np.int64)
        hops = {"ifmap": 0, "filter": 0, "psum": 0}
        for level, op in self.boundaries():
            parent = self._parent(op, level)
            cut, _, coarse = self._visits(op, level)
            axes = self._axes(op) if level == "rf" and op != "psum" else frozenset()
            words = self.words(op, cut, axes, coarse)
            if op != "psum":
                self._add(table, op, parent, level, words, cut)
                if level == "rf" and axes and self.nest.array.delivery[op].startswith("forward"):
                    hops[op] += self.words(op, cut, frozenset({"rows", "cols"})) - words
                continue
            self._psums(table, level, parent, cut, words)
        k = self._above("rf")
        hops["psum"] = self.words("psum", k, frozenset({"rows", "cols"})) - self.words("psum", k)
        return table, hops

    def _add(self, table: np.ndarray, op: str, src: str, dst: str, words: int, cut: int) -> None:
        """A transfer of `words` words of `op` ("ifmap", "filter", or "ofmap": psums written back last) from `src`
        to `dst`, its coded words at an end that keeps tiles coded."""
        operand = Operand[op.upper()]
        codec = self.links.coded(op, src, dst)
        if codec is None:
            add_transfer(table, operand, LEVEL[src], LEVEL[dst], words)
            return
        tile_op = "psum" if op == "ofmap" else op
        coded = self.coded_words(tile_op, cut, codec, getattr(self.zeros, op))
        levels = self.links.levels
        add_transfer(table, operand, LEVEL[src], LEVEL[dst], coded if src in levels else words,
                     coded if dst in levels else words)

    def _psums(self, table: np.ndarray, level: str, parent: str, cut: int, words: int) -> None:
        """Reads on every visit but the first over the reduction dims outside j, write-backs on every visit."""
        revisits = int(np.prod([len(self._ranges(d, cut)[0]) for d in REDUCTION], dtype=np.int64))
        once = words // revisits
        add_transfer(table, Operand.PSUM, LEVEL[parent], LEVEL[level], words - once)
        if parent == "dram":
            self._add(table, "ofmap", level, parent, once, cut)
            add_transfer(table, Operand.PSUM, LEVEL[level], LEVEL[parent], words - once)
        else:
            add_transfer(table, Operand.PSUM, LEVEL[level], LEVEL[parent], words)

    # -- passes ------------------------------------------------------------------------------------------
    def _pass_lengths(self) -> dict[str, list[tuple[int, int]]]:
        """Per dim, the (range length, how many passes have it) of its pass ranges: full tiles of the dim's
        granularity g, and one clipped tail when g does not divide the dim."""
        cut = sum(1 for l in self.loops if l.place in ("dram", "l2", "glb"))
        out = {}
        for d in DIMS:
            g, extent = self._granularity(d, cut), self.w.dims[d]
            full, tail = divmod(extent, g)
            out[d] = [(g, full)] * (full > 0) + [(tail, 1)] * (tail > 0)
        return out

    def _positions(self, dim: str, length: int, places: frozenset[str]) -> int:
        """Non-empty iterations of the dim's loops at `places` (the stream, or the array's rows and cols
        together: a dim folded over both axes has its spatial loops next to each other) in a range of
        `length`."""
        at = self._at(places, dim)
        if not at:
            return 1
        inner = self._granularity(dim, at[-1] + 1)
        count = math.prod(self.loops[i].factor for i in at)
        return min(count, ceil_div(length, inner))

    def passes(self) -> tuple[int, int, int, int]:
        """(passes, MACs, compute cycles, MACs whose ifmap word is zero) by the dataflow's pass timing."""
        pe = self.hw.pe_array
        systolic = pe.dataflow in SYSTOLIC_FILL
        # per dim and pass length: (length, passes with it, stream positions or active PE positions)
        per_dim = [[(length, n, self._positions(d, length, frozenset({"stream"}) if systolic else _ARRAY))
                    for length, n in lengths] for d, lengths in self._pass_lengths().items()]
        passes = macs = cycles = zero_macs = 0
        for combo in itertools.product(*per_dim):
            n = math.prod(c[1] for c in combo)
            work = math.prod(c[0] for c in combo)
            spread = math.prod(c[2] for c in combo)
            zero = int(expected_zero_macs(np.array([work]), self.zeros.zero_macs)[0])
            passes += n
            macs += n * work
            zero_macs += n * zero
            if systolic:  # SCALE-Sim: a fold of T streamed iterations, skewed in and out
                cycles += n * (SYSTOLIC_FILL[pe.dataflow] * pe.rows + pe.cols + spread - 2)
            else:
                done = work - zero if pe.zero_skipping else work
                cycles += n * (ceil_div(done, spread * pe.macs_per_cycle) + pe.fill_drain_cycles)
        return passes, macs, cycles, zero_macs

    def counts(self) -> LayerCounts:
        table, hops = self.transfers()
        passes, macs, cycles, zero_macs = self.passes()
        pe = self.hw.pe_array
        gated = zero_macs if pe.zero_gating or pe.zero_skipping else 0
        writes = macs - hops["psum"]
        psums = gated + min(gated, max(0, writes)) if pe.zero_gating_psums else 0
        return LayerCounts(self.layer.name, table, macs, 0, macs, macs, macs, writes, hops["psum"],
                           passes, cycles, hops["ifmap"], hops["filter"], gated, gated, psums)


_COUNTS_CACHE_ENTRIES = 4096
_counts_cache: dict[tuple[object, ...], LayerCounts] = {}


def _counts_key(w: Window, nest: LoopNest, hw: Accelerator, zeros: LayerZeros) -> tuple[object, ...]:
    """What the counts depend on: the window, the nest without its layer's name, the array's timing and zero
    features, and the layer's zeros."""
    pe = hw.pe_array
    window = (tuple(w.dims[d] for d in DIMS), w.stride, w.dilation, w.pad, w.in_hw, w.out_hw, w.up, w.transposed,
              w.frames)
    coding = (hw.dram.compression, hw.l2.compression if hw.l2 is not None else None)
    return (window, nest.key(), pe.dataflow, pe.rows, pe.cols, pe.macs_per_cycle, pe.fill_drain_cycles,
            pe.zero_gating, pe.zero_skipping, zeros, coding)


def nest_counts(layer: Layer, nest: LoopNest, batch: int, hw: Accelerator,
                zeros: LayerZeros = DENSE_LAYER) -> LayerCounts:
    """`NestCounter(...).counts()`, counted once per distinct (window, nest, array, zeros): a network's repeated
    layer shapes, and a mapper's repeated candidates, cost one count each."""
    key = _counts_key(window_of(layer, batch, nest.lowering), nest, hw, zeros)
    found = _counts_cache.get(key)
    if found is None:
        found = NestCounter(layer, nest, batch, hw, zeros).counts()
        if len(_counts_cache) >= _COUNTS_CACHE_ENTRIES:
            _counts_cache.pop(next(iter(_counts_cache)))
        _counts_cache[key] = found
    return dataclasses.replace(found, layer=layer.name, transfers=found.transfers.copy())


def _piece_sizes(total: int, pieces: int) -> tuple[tuple[int, int], ...]:
    """(size, how many) of `pieces` near-equal pieces of `total` words, larger first."""
    small, larger = divmod(total, pieces)
    return ((small + 1, larger), (small, pieces - larger))


def _pieces_coded(total: int, pieces: int, codec: Codec | None, fraction: float) -> int:
    """Words of `pieces` near-equal pieces of `total` words, each coded by the codec's expectation (raw: none)."""
    if codec is None:
        return total
    return sum(n * int(codec.expected_words(np.array([size]), fraction)[0]) for size, n in _piece_sizes(total, pieces)
               if n)


def streamed_counts(layer: Layer, mapping: Streamed, hw: Accelerator, batch: int,
                    zeros: LayerZeros = DENSE_LAYER) -> LayerCounts:
    """A streamed layer: each image's inputs DRAM → GLB → array in `mapping.tiles` near-equal pieces (larger
    ones first), the ops on min(ops, PEs) PEs per piece, outputs back the same way; a DRAM that keeps tiles coded
    moves each piece's coded words."""
    ins = sum(s.elements for s in layer.in_shapes) * batch
    out = layer.out_shape.elements * batch
    n, pe, links = mapping.tiles, hw.pe_array, Links.of(hw)
    coded_in = batch * sum(_pieces_coded(s.elements, n, links.coded("ifmap", "dram", "glb"), zeros.input(i))
                           for i, s in enumerate(layer.in_shapes))
    coded_out = batch * _pieces_coded(layer.out_shape.elements, n, links.coded("ofmap", "glb", "dram"), zeros.ofmap)
    dram_coded = "dram" in links.levels
    table = np.zeros(ACCESS_SHAPE, dtype=np.int64)
    add_transfer(table, Operand.IFMAP, Level.DRAM, Level.GLB, coded_in if dram_coded else ins, ins)
    add_transfer(table, Operand.IFMAP, Level.GLB, Level.RF, ins)
    add_transfer(table, Operand.OFMAP, Level.RF, Level.GLB, out)
    add_transfer(table, Operand.OFMAP, Level.GLB, Level.DRAM, out, coded_out if dram_coded else out)
    cycles = sum(count * (ceil_div(ops, max(1, min(ops, pe.pes)) * pe.macs_per_cycle) + pe.fill_drain_cycles)
                 for ops, count in _piece_sizes(layer.ops, n))
    return LayerCounts(layer.name, table, 0, layer.ops * batch, 0, 0, 0, 0, 0, n * batch, cycles * batch)


def empty_counts(layer: Layer) -> LayerCounts:
    return LayerCounts(layer.name, np.zeros(ACCESS_SHAPE, dtype=np.int64), 0, 0, 0, 0, 0, 0, 0, 0, 0)
