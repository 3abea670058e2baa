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
    distinct ifmap rows each pair reads."""
    (a_lo, a_hi, a_ok), (k_lo, k_hi, k_ok) = a, k
    stride, dilation, pad, size = problem.axis(out_dim)
    span_a = int(np.max(a_hi - a_lo, initial=0))
    span_k = int(np.max(k_hi - k_lo, initial=0))
    if span_a == 0 or span_k == 0:
        return np.zeros(a_lo.shape[0], dtype=np.int64)
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
        granularity outside j) of `op`'s words, per lane or PE sub-range along `axes`."""
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
