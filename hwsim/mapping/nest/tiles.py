"""Words of an operand's tiles, pass by pass, counted by enumerating the elements each one needs.

A tile covers, per dim, a range of indices; an ifmap row set comes from every
pair (output row, kernel row) of its ranges, so the generator lists those
rows and counts the distinct ones in range (no formula: the closed form in
`hwsim.analytic.nest_counts` computes the same numbers its own way). Inside
the array a pass's visits are cut into *cells*: a visit per iteration of the
stream loops out to the visits' loop, and per lane or PE sub-range along the
array axes the delivery enumerates; a tile's words are the sum over its cells.
"""

from __future__ import annotations

import numpy as np

from hwsim.mapping.nest.format import DIMS, WINDOWS
from hwsim.mapping.nest.passes import NestLoop, Passes
from hwsim.mapping.nest.problem import Problem
from hwsim.vocab import ceil_div

Cells = tuple[np.ndarray, np.ndarray, np.ndarray]  # [passes, cells] lo, hi and whether the cell exists
WINDOW_ELEMENTS = 1 << 20  # (pass, cell pair, row pair) elements `_window_rows` enumerates at once (~40 B each)
ARRAY_CELLS = 1 << 20  # cells `TileCounter.array_words` enumerates at once, over every dim (~40 B each)


def whole(lo: np.ndarray, hi: np.ndarray) -> Cells:
    """One cell per pass: the range itself."""
    return lo[:, None], hi[:, None], (hi > lo)[:, None]


def split(cells: Cells, size: int, count: int) -> Cells:
    """Every cell cut into up to `count` consecutive pieces of `size`."""
    lo, hi, ok = cells
    sub_lo = lo[:, :, None] + np.arange(count)[None, None, :] * size
    sub_hi = np.minimum(hi[:, :, None], sub_lo + size)
    exists = ok[:, :, None] & (sub_lo < sub_hi)
    n = lo.shape[0]
    return sub_lo.reshape(n, -1), sub_hi.reshape(n, -1), exists.reshape(n, -1)


def _window_rows(problem: Problem, out_dim: str, a: Cells, k: Cells) -> np.ndarray:
    """Per pass: Σ over cell pairs (grid rows × kernel rows, or frames, or columns: the axis of `out_dim`) of the
    distinct ifmap rows each pair reads. The (pass, cell pair, row pair) elements are enumerated a slice of passes
    at a time, at most WINDOW_ELEMENTS at once: a tile spanning a whole row of a wide input would otherwise take
    memory in proportion to the input's width times the passes of a chunk."""
    (a_lo, a_hi, _), (k_lo, k_hi, _) = a, k
    span_a = int(np.max(a_hi - a_lo, initial=0))
    span_k = int(np.max(k_hi - k_lo, initial=0))
    passes = a_lo.shape[0]
    if span_a == 0 or span_k == 0:
        return np.zeros(passes, dtype=np.int64)
    per_pass = a_lo.shape[1] * k_lo.shape[1] * span_a * span_k
    step = max(1, WINDOW_ELEMENTS // per_pass)
    if passes <= step:
        return _distinct_rows(problem.axis(out_dim), a, k, span_a, span_k)
    parts = [_distinct_rows(problem.axis(out_dim), _rows(a, lo, lo + step), _rows(k, lo, lo + step), span_a, span_k)
             for lo in range(0, passes, step)]
    return np.concatenate(parts)


def _rows(cells: Cells, lo: int, hi: int) -> Cells:
    """The cells of passes lo … hi − 1."""
    return cells[0][lo:hi], cells[1][lo:hi], cells[2][lo:hi]


def _distinct_rows(axis: tuple[int, int, int, int], a: Cells, k: Cells, span_a: int, span_k: int) -> np.ndarray:
    """`_window_rows` of a slice of passes, on `axis` = (stride, dilation, padding, ifmap size), with every cell at
    most `span_a` (grid) and `span_k` (kernel) long."""
    (a_lo, a_hi, a_ok), (k_lo, k_hi, k_ok) = a, k
    stride, dilation, pad, size = axis
    ai = a_lo[:, :, None, None, None] + np.arange(span_a)[None, None, None, :, None]
    ki = k_lo[:, None, :, None, None] + np.arange(span_k)[None, None, None, None, :]
    values = ai * stride + ki * dilation - pad
    valid = ((ai < a_hi[:, :, None, None, None]) & (ki < k_hi[:, None, :, None, None])
             & a_ok[:, :, None, None, None] & k_ok[:, None, :, None, None] & (values >= 0) & (values < size))
    flat = np.where(valid, values, -1).reshape(values.shape[0], values.shape[1], values.shape[2], -1)
    ordered = np.sort(flat, axis=-1)
    distinct = (ordered >= 0) & np.concatenate([np.ones_like(ordered[..., :1], dtype=bool),
                                                 ordered[..., 1:] != ordered[..., :-1]], axis=-1)
    result: np.ndarray = distinct.sum(axis=(1, 2, 3))
    return result


def _grid_cells(problem: Problem, axis: int, cells: Cells) -> np.ndarray:
    """Per pass: Σ over cells of a transposed convolution's ifmap rows (the grid rows themselves)."""
    lo, hi, ok = cells
    result: np.ndarray = np.where(ok, hi - lo, 0).sum(axis=1)
    return result


def _owned_cells(problem: Problem, axis: int, cells: Cells) -> np.ndarray:
    """Per pass: Σ over cells of the output rows they write (owned rows of a transposed convolution)."""
    lo, hi, ok = cells
    up = problem.up[axis]
    grid = problem.dims["P" if axis == 0 else "Q"]
    total = problem.out_h if axis == 0 else problem.out_w
    rows = np.where(hi >= grid, total, hi * up) - lo * up
    result: np.ndarray = np.where(ok, rows, 0).sum(axis=1)
    return result


def count(problem: Problem, op: str, cells: dict[str, Cells], copies: dict[str, np.ndarray]) -> np.ndarray:
    """Per pass: the words of `op` over its cells; `copies[d]` is, per pass, how many copies an irrelevant dim
    makes (its stream visits, or the PEs along an enumerated axis holding one each)."""
    relevant = problem.relevant[op]
    total = np.ones(next(iter(cells.values()))[0].shape[0], dtype=np.int64)
    for d in DIMS:
        if d not in relevant:
            total *= copies[d]
    if op == "ifmap" and problem.transposed:
        total *= _grid_cells(problem, 0, cells["P"]) * _grid_cells(problem, 1, cells["Q"])
        singles: tuple[str, ...] = ("N", "G", "C", "F")
    elif op == "ifmap":
        for out_dim, kernel_dim in WINDOWS:
            total *= _window_rows(problem, out_dim, cells[out_dim], cells[kernel_dim])
        singles = ("N", "G", "C")
    elif op == "psum" and problem.transposed:
        total *= _owned_cells(problem, 0, cells["P"]) * _owned_cells(problem, 1, cells["Q"])
        singles = ("N", "G", "M", "F")
    else:
        singles = tuple(d for d in DIMS if d in relevant)
    for d in singles:
        lo, hi, ok = cells[d]
        total *= np.where(ok, hi - lo, 0).sum(axis=1)
    return total


class TileCounter:
    """The words of `op` tiles, pass by pass, for one nest (see the module docstring)."""

    def __init__(self, problem: Problem, loops: list[NestLoop]) -> None:
        self.problem, self.loops = problem, loops

    def ranges(self, passes: Passes, dim: str, cut: int) -> tuple[np.ndarray, np.ndarray]:
        """Per pass, the dim's range inside the first `cut` loops when `cut` lies among the storage loops (the
        tile of the visit that contains the pass)."""
        start = np.zeros(len(passes), dtype=np.int64)
        for i, loop in enumerate(self.loops):
            if loop.place not in ("dram", "l2", "glb"):
                break
            if i < cut and loop.dim == dim:
                start += passes.index[i] * loop.tile
        inner = self.tile_inside(dim, cut)
        return start, np.minimum(self.problem.dims[dim], start + inner)

    def tile_inside(self, dim: str, cut: int) -> int:
        return int(np.prod([l.factor for l in self.loops[cut:] if l.dim == dim], dtype=np.int64))

    def storage_tile(self, passes: Passes, op: str, cut: int) -> np.ndarray:
        """Per pass: the words of the `op` tile inside the first `cut` (storage) loops."""
        cells = {d: whole(*self.ranges(passes, d, cut)) for d in DIMS}
        copies = {d: np.ones(len(passes), dtype=np.int64) for d in DIMS}
        return count(self.problem, op, cells, copies)

    def array_words(self, passes: Passes, op: str, j: int, axes: frozenset[str], coarse: str) -> np.ndarray:
        """Per pass: Σ over its visits at the array (loops out to j; `coarse`: a sliding dim counted at the
        granularity outside j) of `op`'s words, per lane or PE sub-range along `axes`. Each pass is counted on
        its own, a slice of passes at a time holding at most ARRAY_CELLS cells: a stream loop over a whole row
        cuts a pass into as many cells as the input is wide."""
        width = self._cells_per_pass(op, j, axes, coarse)
        step = max(1, ARRAY_CELLS // width)
        if len(passes) <= step:
            return self._array_words(passes, op, j, axes, coarse)
        return np.concatenate([self._array_words(_slice(passes, lo, lo + step), op, j, axes, coarse)
                               for lo in range(0, len(passes), step)])

    def _cells_per_pass(self, op: str, j: int, axes: frozenset[str], coarse: str) -> int:
        """The cells `_array_words` enumerates per pass, over every dim (the visits' cells, cut per lane or PE
        sub-range for the dims `op` depends on)."""
        storage = sum(1 for l in self.loops if l.place in ("dram", "l2", "glb"))
        relevant = self.problem.relevant[op]
        total = 0
        for d in DIMS:
            cut = j if coarse == d else j + 1
            width = 1
            for i in range(storage, cut):
                if self.loops[i].dim == d:
                    width *= self.loops[i].factor
            if d in relevant:
                for loop in self._spatial(d, axes):
                    width *= loop.factor
            total += width
        return total

    def _array_words(self, passes: Passes, op: str, j: int, axes: frozenset[str], coarse: str) -> np.ndarray:
        """`array_words` of every pass of `passes` at once."""
        cells: dict[str, Cells] = {}
        copies: dict[str, np.ndarray] = {}
        relevant = self.problem.relevant[op]
        for d in DIMS:
            visits = self._visit_cells(passes, d, j, coarse == d)
            if d in relevant:
                cells[d] = self._pe_cells(d, visits, axes)
            else:
                cells[d] = visits
                copies[d] = self._copies(d, visits, axes)
        return count(self.problem, op, cells, copies)

    def _visit_cells(self, passes: Passes, dim: str, j: int, coarse: bool) -> Cells:
        """The dim's ranges of the visits in each pass: the visit's tile when j is a storage loop (visits span
        passes: the range inside j), else the pass range cut by the stream loops out to j."""
        storage = sum(1 for l in self.loops if l.place in ("dram", "l2", "glb"))
        cut = j if coarse else j + 1
        if cut <= storage:
            return whole(*self.ranges(passes, dim, cut))
        cells = whole(passes.start[dim], passes.start[dim] + passes.length[dim])
        for i in range(storage, cut):
            loop = self.loops[i]
            if loop.dim == dim:
                cells = split(cells, loop.tile, loop.factor)
        return cells

    def _spatial(self, dim: str, axes: frozenset[str]) -> list[NestLoop]:
        return [l for l in self.loops if l.place in axes and l.dim == dim]

    def _pe_cells(self, dim: str, cells: Cells, axes: frozenset[str]) -> Cells:
        for loop in self._spatial(dim, axes):
            cells = split(cells, loop.tile, loop.factor)
        return cells

    def _copies(self, dim: str, cells: Cells, axes: frozenset[str]) -> np.ndarray:
        """Per pass: Σ over cells of the PE positions along the enumerated axes that hold a copy."""
        lo, hi, ok = cells
        spatial = self._spatial(dim, axes)
        used: np.ndarray = ok.astype(np.int64)
        if spatial:
            factor = int(np.prod([l.factor for l in spatial], dtype=np.int64))
            used = np.where(ok, np.minimum(factor, ceil_div(hi - lo, spatial[-1].tile)), 0)
        total: np.ndarray = used.sum(axis=1)
        return total


def _slice(passes: Passes, lo: int, hi: int) -> Passes:
    """Passes lo … hi − 1 of `passes`, as a chunk of their own (each pass's words depend on that pass alone)."""
    at = slice(lo, hi)
    return Passes(passes.index[:, at], {d: s[at] for d, s in passes.start.items()},
                  {d: n[at] for d, n in passes.length.items()}, passes.first + lo)
