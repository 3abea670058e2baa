"""A brute-force counter for loop-nest mappings: the third oracle beside the closed form and the simulation.

It enumerates every point of a (small) layer's loop nest, turns each into the
ifmap, filter and output elements it touches (coordinates from the layer's own
attributes), and counts by sets, never by formula:

- a tile is the set of elements (per lane or PE where the delivery says so)
  touched by one iteration of the loops above a level; a visit starts where
  the mapping's reuse rule says; the words it moves are the set's size, or the
  words not in the previous tile for a sliding window;
- a partial-sum read brings back exactly the elements written back before,
  and a write-back is the ofmap once every element of the tile has all its
  contributions (counted MAC by MAC);
- hops are per-PE element counts minus per-lane (or unique) counts.

Only for tests: the walk is O(MACs) in numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hwsim.mapping.nest.format import LoopNest
from hwsim.vocab import ACCESS_SHAPE, Access, Level, Operand, ceil_div
from hwsim.workload.ir import Layer, LayerKind

LEVEL_OF = {"dram": Level.DRAM, "l2": Level.L2, "glb": Level.GLB, "rf": Level.RF}
OPERAND_OF = {"ifmap": Operand.IFMAP, "filter": Operand.FILTER, "psum": Operand.PSUM}
SLIDING = ("F", "P", "Q", "T", "R", "S")


@dataclass
class OracleCounts:
    transfers: np.ndarray  # [Level, Operand, Access] words
    macs: int
    inter_pe: dict[str, int]  # hops per operand
    passes: int
    compute_cycles: int
    largest: dict[tuple[str, str], int]  # (level, operand): most words one visit's tile holds (RF: one PE's)


@dataclass(frozen=True)
class _Geometry:
    """The layer's window, derived here from the layer alone."""

    dims: dict[str, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]
    pad: tuple[int, int]
    in_hw: tuple[int, int]
    out_hw: tuple[int, int]
    transposed: bool
    up: tuple[int, int]
    frames: tuple[int, int, int, int, int] = (1, 1, 0, 1, 1)  # stride, dilation, front pad, in and out frames


def _dims(**given: int) -> dict[str, int]:
    return {d: given.get(d, 1) for d in ("N", "G", "M", "C", "F", "P", "Q", "T", "R", "S")}


def geometry(layer: Layer, batch: int, lowering: str = "conv") -> _Geometry:
    if lowering == "im2col":  # the GEMM: a 1×1 convolution over the output pixels with C·T·R·S channels
        d = geometry(layer, batch).dims
        k, t = d["C"] * d["T"] * d["R"] * d["S"], d["N"] * d["F"] * d["P"] * d["Q"]
        return _Geometry(_dims(G=d["G"], M=d["M"], C=k, P=t), (1, 1), (1, 1), (0, 0), (t, 1), (t, 1), False, (1, 1))
    ins, out = layer.in_shape, layer.out_shape
    kh, kw = layer.kernel
    if layer.kind is LayerKind.FC:
        return _Geometry(_dims(N=batch, M=out.c, C=ins.c, T=ins.d, R=ins.h, S=ins.w), (1, 1), (1, 1), (0, 0),
                         (ins.h, ins.w), (1, 1), False, (1, 1), (1, 1, 0, ins.d, 1))
    g = layer.groups
    if layer.kind is LayerKind.CONV_TRANSPOSE:
        return _Geometry(_dims(N=batch, G=g, M=out.c // g, C=ins.c // g, P=ins.h, Q=ins.w, R=kh, S=kw), (1, 1),
                         (1, 1), (0, 0), (ins.h, ins.w), (out.h, out.w), True, layer.stride)
    fw = layer.frames
    return _Geometry(_dims(N=batch, G=g, M=out.c // g, C=ins.c // g, F=out.d, P=out.h, Q=out.w, T=fw.kernel, R=kh,
                           S=kw), layer.stride, layer.dilation, (layer.padding.top, layer.padding.left),
                     (ins.h, ins.w), (out.h, out.w), False, (1, 1), (fw.stride, fw.dilation, fw.front, ins.d, out.d))


@dataclass
class _Points:
    """Every point of the nest, in loop order: per loop its index, per dim its coordinate."""

    index: np.ndarray  # [loops, points]
    coord: dict[str, np.ndarray]
    row: np.ndarray  # PE row position of each point
    col: np.ndarray


def _loop_list(nest: LoopNest) -> list[tuple[str, str, int]]:
    """(place, dim, factor) of every loop, outer to inner; place is a storage level, 'stream', 'rows', 'cols' or
    'rf'."""
    out = [(s.level, l.dim, l.factor) for s in nest.storage for l in s.loops]
    out += [("stream", l.dim, l.factor) for l in nest.array.stream]
    out += [("rows", l.dim, l.factor) for l in nest.array.rows]
    out += [("cols", l.dim, l.factor) for l in nest.array.cols]
    out += [("rf", l.dim, l.factor) for l in nest.rf.loops]
    return out


def _points(nest: LoopNest, loops: list[tuple[str, str, int]]) -> _Points:
    factors = [f for _, _, f in loops]
    grid = np.indices(factors, dtype=np.int64).reshape(len(factors), -1)
    coord = {d: np.zeros(grid.shape[1], dtype=np.int64) for d in nest.dims}
    for i, (_, dim, _) in enumerate(loops):
        inner = int(np.prod([f for _, d, f in loops[i + 1:] if d == dim], dtype=np.int64))
        coord[dim] += grid[i] * inner
    valid = np.ones(grid.shape[1], dtype=bool)
    for d, extent in nest.dims.items():
        valid &= coord[d] < extent
    row = np.zeros(grid.shape[1], dtype=np.int64)
    col = np.zeros(grid.shape[1], dtype=np.int64)
    for i, (place, _, f) in enumerate(loops):
        if place == "rows":
            row = row * f + grid[i]
        elif place == "cols":
            col = col * f + grid[i]
    return _Points(grid[:, valid], {d: c[valid] for d, c in coord.items()}, row[valid], col[valid])


def _elements(op: str, g: _Geometry, c: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(element id, point index) pairs: the elements each point touches (ifmap points in the padding touch none;
    a transposed convolution's output point touches the outputs its grid pixel owns)."""
    d = g.dims
    pts = np.arange(len(c["N"]))
    if op == "filter":
        return (((((c["G"] * d["M"] + c["M"]) * d["C"] + c["C"]) * d["T"] + c["T"]) * d["R"] + c["R"]) * d["S"]
                + c["S"]), pts
    f_stride, f_dilation, f_pad, D, OD = g.frames
    if op == "ifmap":
        if g.transposed:
            f, h, w = c["F"], c["P"], c["Q"]
        else:
            f = c["F"] * f_stride + c["T"] * f_dilation - f_pad
            h = c["P"] * g.stride[0] + c["R"] * g.dilation[0] - g.pad[0]
            w = c["Q"] * g.stride[1] + c["S"] * g.dilation[1] - g.pad[1]
        H, W = g.in_hw
        ok = (f >= 0) & (f < D) & (h >= 0) & (h < H) & (w >= 0) & (w < W)
        ids = ((((c["N"] * d["G"] + c["G"]) * d["C"] + c["C"]) * D + f) * H + h) * W + w
        return ids[ok], pts[ok]
    OH, OW = g.out_hw
    base = ((c["N"] * d["G"] + c["G"]) * d["M"] + c["M"]) * OD + c["F"]
    if not g.transposed:
        return (base * OH + c["P"]) * OW + c["Q"], pts
    ids, owners = [], []
    for dy in range(max(g.up[0], OH - g.up[0] * (d["P"] - 1))):
        for dx in range(max(g.up[1], OW - g.up[1] * (d["Q"] - 1))):
            y, x = c["P"] * g.up[0] + dy, c["Q"] * g.up[1] + dx
            last_y, last_x = c["P"] == d["P"] - 1, c["Q"] == d["Q"] - 1
            ok = ((dy < g.up[0]) | last_y) & ((dx < g.up[1]) | last_x) & (y < OH) & (x < OW)
            ids.append(((base * OH + y) * OW + x)[ok])
            owners.append(pts[ok])
    return np.concatenate(ids), np.concatenate(owners)


class Oracle:
    """Counts a loop nest by walking it; `count()` returns totals comparable with the closed form's."""

    def __init__(self, layer: Layer, nest: LoopNest, batch: int, array_rows: int, array_cols: int,
                 timing: str, macs_per_cycle: int = 1, fill_drain_cycles: int = 0) -> None:
        self.g = geometry(layer, batch, nest.lowering)
        assert dict(nest.dims) == self.g.dims, (dict(nest.dims), self.g.dims)
        self.nest, self.timing = nest, timing
        self.array = (array_rows, array_cols, macs_per_cycle, fill_drain_cycles)
        self.loops = _loop_list(nest)
        self.p = _points(nest, self.loops)
        self.relevant = {
            "ifmap": {"N", "G", "C", "F", "P", "Q"} | (set() if self.g.transposed else {"T", "R", "S"}),
            "filter": {"G", "M", "C", "T", "R", "S"},
            "psum": {"N", "G", "M", "F", "P", "Q"},
        }
        self.table = np.zeros(ACCESS_SHAPE, dtype=np.int64)
        self.hops = {"ifmap": 0, "filter": 0, "psum": 0}
        self.largest: dict[tuple[str, str], int] = {}

    # -- the walk --------------------------------------------------------------------------------------
    def count(self) -> OracleCounts:
        levels = [s.level for s in self.nest.storage] + ["rf"]
        for i, level in enumerate(levels[1:], start=1):
            for op in ("ifmap", "filter", "psum"):
                keeps = self.nest.rf.keeps if level == "rf" else self.nest.storage[i].keeps
                if level == "rf" or op in keeps:
                    self._boundary(level, levels[:i], op)
        passes, cycles = self._passes()
        macs = len(self.p.coord["N"])
        return OracleCounts(self.table, macs, dict(self.hops), passes, cycles, dict(self.largest))

    def _above(self, level: str) -> int:
        """Number of loops above `level` (the RF's include the stream loops)."""
        places = [place for place, _, _ in self.loops]
        if level == "rf":
            return sum(1 for p in places if p not in ("rows", "cols", "rf"))
        order = [s.level for s in self.nest.storage]
        return sum(1 for p in places if p in order[:order.index(level)])

    def _parent(self, outer: list[str], op: str) -> str:
        for level in reversed(outer):
            storage = next(s for s in self.nest.storage if s.level == level)
            if op in storage.keeps:
                return level
        return "dram"

    def _runs(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Start index of each run of points sharing their first k loop indices, and those indices."""
        key = self.p.index[:k].T
        if k == 0:
            return np.array([0]), np.zeros((1, 0), dtype=np.int64)
        change = np.ones(len(key), dtype=bool)
        change[1:] = np.any(key[1:] != key[:-1], axis=1)
        starts = np.flatnonzero(change)
        return starts, key[starts]

    def _boundary(self, level: str, outer: list[str], op: str) -> None:
        k = self._above(level)
        starts, keys = self._runs(k)
        ends = np.append(starts[1:], len(self.p.coord["N"]))
        j = max((i for i in range(k) if self.loops[i][1] in self.relevant[op] and self.loops[i][2] > 1), default=-1)
        if level == "rf" and op not in self.nest.rf.keeps:
            j = k - 1  # nothing stays in the PEs: every iteration delivers again
        parent = self._parent(outer, op)
        sets = self._tile_sets(op, level, starts, ends)
        if op == "psum":
            self._outputs(level, parent, keys, j, sets, starts, ends)
        else:
            self._inputs(level, parent, op, keys, j, sets)

    def _tile_sets(self, op: str, level: str, starts: np.ndarray,
                   ends: np.ndarray) -> list[tuple[set[tuple[int, int]], set[tuple[int, int]]]]:
        """Per run: the set of (lane, element) it delivers and the set of (PE, element) the PEs hold."""
        ids, pts = _elements(op, self.g, self.p.coord)
        order = np.argsort(pts, kind="stable")
        ids, pts = ids[order], pts[order]
        mode = "multicast" if op == "psum" or level != "rf" else self.nest.array.delivery[op]
        pe = self.p.row[pts] * 10_000 + self.p.col[pts]
        lane = {"multicast": np.zeros_like(pts), "forward_cols": self.p.row[pts], "forward_rows": self.p.col[pts],
                "unicast": pe}[mode]
        lo = np.searchsorted(pts, starts)
        hi = np.searchsorted(pts, ends)
        return [(set(zip(lane[a:b].tolist(), ids[a:b].tolist())), set(zip(pe[a:b].tolist(), ids[a:b].tolist())))
                for a, b in zip(lo, hi)]

    def _is_visit(self, keys: np.ndarray, r: int, j: int) -> tuple[bool, bool]:
        """(a visit starts at run r, it slides along loop j) by the reuse rule."""
        if r == 0:
            return True, False
        diff = np.flatnonzero(keys[r] != keys[r - 1])
        inc = int(diff[0]) if len(diff) else len(keys[r])
        return inc <= j, inc == j

    def _sliding(self, level: str, op: str, j: int) -> bool:
        return (level == "rf" and op == "ifmap" and j >= 0 and self.loops[j][0] == "stream"
                and self.loops[j][1] in SLIDING and not self.g.transposed and "ifmap" in self.nest.rf.keeps
                and self.nest.array.delivery["ifmap"] == "multicast")

    def _held(self, level: str, op: str, tile: set[tuple[int, int]] | set[int],
              runs: list[tuple[set[tuple[int, int]], set[tuple[int, int]]]]) -> None:
        """Keep the largest tile a level holds: a storage level the visit's whole tile, an RF the most elements one
        PE holds in one run (an RF's runs are its visits' stream steps)."""
        if level == "rf":
            words = max((int(np.max(np.unique([pe for pe, _ in held], return_counts=True)[1], initial=0))
                         for _, held in runs if held), default=0)
        else:
            words = len(tile)
        self.largest[(level, op)] = max(self.largest.get((level, op), 0), words)

    def _move(self, op: Operand, src: str, dst: str, words: int) -> None:
        if not words:
            return
        s, d = LEVEL_OF[src], LEVEL_OF[dst]
        self.table[s, op, Access.READ] += words
        outward = d < s and op in (Operand.PSUM, Operand.OFMAP)
        self.table[d, op, Access.UPDATE if outward else Access.FILL] += words

    def _visit_bounds(self, keys: np.ndarray, j: int, runs: int) -> list[tuple[int, int, bool]]:
        """(first run, one past the last run, slides) of every visit."""
        starts = [(r, slides) for r in range(runs) for visit, slides in [self._is_visit(keys, r, j)] if visit]
        ends = [r for r, _ in starts[1:]] + [runs]
        return [(a, b, slides) for (a, slides), b in zip(starts, ends)]

    def _inputs(self, level: str, parent: str, op: str, keys: np.ndarray, j: int,
                sets: list[tuple[set[tuple[int, int]], set[tuple[int, int]]]]) -> None:
        """A visit fills the union of its runs' sets (its PEs hold every copy any pass of it needs)."""
        sliding = self._sliding(level, op, j)
        forwarded = level == "rf" and self.nest.array.delivery[op].startswith("forward")
        seen: set[tuple[int, int]] = set()  # a sliding window's run so far: each of its words arrives once
        for a, b, slides in self._visit_bounds(keys, j, len(sets)):
            tile = set().union(*(lanes for lanes, _ in sets[a:b]))
            self._held(level, op, tile, sets[a:b])
            if not (sliding and slides):
                seen = set()
            self._move(OPERAND_OF[op], parent, level, len(tile - seen))
            if forwarded:
                self.hops[op] += len(set().union(*(held for _, held in sets[a:b]))) - len(tile)
            seen |= tile

    def _outputs(self, level: str, parent: str, keys: np.ndarray, j: int,
                 sets: list[tuple[set[tuple[int, int]], int]], starts: np.ndarray, ends: np.ndarray) -> None:
        ids, pts = _elements("psum", self.g, self.p.coord)
        total = np.bincount(ids)
        done = np.zeros_like(total)
        written: set[int] = set()
        for a, b, _ in self._visit_bounds(keys, j, len(sets)):
            tile = {e for run, _ in sets[a:b] for _, e in run}
            self._held(level, "psum", tile, sets[a:b])
            self._move(Operand.PSUM, parent, level, len(tile & written))
            in_visit = (pts >= starts[a]) & (pts < ends[b - 1])
            np.add.at(done, ids[in_visit], 1)
            if level == "rf":  # partial sums of one run are added PE to PE
                self.hops["psum"] += sum(len(held) - len(run) for run, held in sets[a:b])
            complete = bool(np.all(done[list(tile)] == total[list(tile)]))
            final = parent == "dram" and complete
            self._move(Operand.OFMAP if final else Operand.PSUM, level, parent, len(tile))
            written |= tile

    def _passes(self) -> tuple[int, int]:
        k = sum(1 for place, _, _ in self.loops if place in ("dram", "l2", "glb"))
        starts, _ = self._runs(k)
        ends = np.append(starts[1:], len(self.p.coord["N"]))
        stream = [i for i, (place, _, _) in enumerate(self.loops) if place == "stream"]
        rows, cols, mpc, fill_drain = self.array
        cycles = 0
        for a, b in zip(starts, ends):
            macs = b - a
            active = len(set(zip(self.p.row[a:b].tolist(), self.p.col[a:b].tolist())))
            if self.timing in ("systolic", "systolic_os"):
                t = len({tuple(v) for v in self.p.index[stream, a:b].T.tolist()}) if stream else 1
                cycles += (1 if self.timing == "systolic_os" else 2) * rows + cols + t - 2
            else:
                cycles += ceil_div(macs, active * mpc) + fill_drain
        return len(starts), cycles
