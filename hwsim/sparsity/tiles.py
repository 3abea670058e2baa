"""What the step generator reads of one layer's measured tensors: each tile's values, each pass's zero MACs.

`LayerTiles` answers, for one layer and its loop-nest problem, in the order a
transfer streams the words (the on-chip layouts of
`hwsim.mapping.nest.steps`: ifmap channel, row, column; filter G, M, C, R, S;
ofmap channel, row, column):

- the values of an ifmap, filter or ofmap tile given its ranges per conv dim
  (an ifmap tile's rows are the distinct rows its output rows and kernel rows
  read, clipped to the map; an im2col lowering's rows and columns are unfolded
  from the convolution they come from);
- per pass, the MACs whose ifmap word is zero (padding included), exactly: for
  each kernel-offset range, the zero indicator summed over the window, then a
  box sum over the pass's channels, output rows and columns from a summed-area
  table, times its filters and images. An im2col lowering has no such table
  here (it would be the size of the unfolded matrix): its passes take the
  layer's exact zero-MAC fraction (`exact` is False).

It works on arrays alone, below both the profile (`hwsim.sparsity.profile`),
which names it as what measured tensors give, and the measured tensors
(`hwsim.sparsity.measured`), which make it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np

Ranges = dict[str, tuple[int, int]]  # conv dim -> [lo, hi)


class Geometry(Protocol):
    """The loop-nest problem of a layer as `hwsim.mapping.nest.problem.Problem` gives it (read-only)."""

    @property
    def dims(self) -> dict[str, int]: ...
    @property
    def stride(self) -> tuple[int, int]: ...
    @property
    def dilation(self) -> tuple[int, int]: ...
    @property
    def pad_top(self) -> int: ...
    @property
    def pad_left(self) -> int: ...
    @property
    def in_h(self) -> int: ...
    @property
    def in_w(self) -> int: ...
    @property
    def out_h(self) -> int: ...
    @property
    def out_w(self) -> int: ...
    @property
    def transposed(self) -> bool: ...
    @property
    def up(self) -> tuple[int, int]: ...


@dataclass(frozen=True)
class Window:
    """A convolution's window over its ifmap, per axis (rows, columns)."""

    stride: tuple[int, int]
    dilation: tuple[int, int]
    pad: tuple[int, int]
    out: tuple[int, int]


def _window_of(g: Geometry) -> Window:
    return Window(g.stride, g.dilation, (g.pad_top, g.pad_left), (g.dims["P"], g.dims["Q"]))


def _taps(w: Window, axis: int, k: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Ifmap index of kernel offset `k` for every output position along `axis`, clipped, and whether it is in
    the map (else padding)."""
    index = np.arange(w.out[axis]) * w.stride[axis] + k * w.dilation[axis] - w.pad[axis]
    inside = (index >= 0) & (index < size)
    return np.clip(index, 0, size - 1), inside


def window_zeros(zero: np.ndarray, w: Window, rows: tuple[int, int], cols: tuple[int, int]) -> np.ndarray:
    """[channel, p, q]: Σ over kernel rows `rows` and columns `cols` of whether the ifmap word under the window
    is zero (padding counts as zero)."""
    total = np.zeros((zero.shape[0], w.out[0], w.out[1]), dtype=np.int64)
    for r in range(*rows):
        h, h_in = _taps(w, 0, r, zero.shape[1])
        band = zero[:, h, :] | ~h_in[None, :, None]
        for s in range(*cols):
            x, x_in = _taps(w, 1, s, zero.shape[2])
            total += band[:, :, x] | ~x_in[None, None, :]
    return total


def _summed(counts: np.ndarray) -> np.ndarray:
    """Summed-area table of a [channel, p, q] array, with a leading zero plane on each axis."""
    table = np.zeros(tuple(n + 1 for n in counts.shape), dtype=np.int64)
    table[1:, 1:, 1:] = counts.cumsum(0).cumsum(1).cumsum(2)
    return table


def _box(table: np.ndarray, c: tuple[np.ndarray, np.ndarray], p: tuple[np.ndarray, np.ndarray],
         q: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Σ over the boxes [c0, c1) × [p0, p1) × [q0, q1) (arrays of boxes) from a summed-area table: the eight
    corners by inclusion and exclusion, the far corner (c1, p1, q1) added."""
    total = np.zeros(len(c[0]), dtype=np.int64)
    for i, ci in enumerate(c):
        for j, pj in enumerate(p):
            for k, qk in enumerate(q):
                total += table[ci, pj, qk] if (i + j + k) % 2 else -table[ci, pj, qk]
    return total


class LayerTiles:
    """One layer's measured tiles and passes (module docstring)."""

    def __init__(self, problem: Geometry, conv: Geometry, im2col: bool, ifmap: np.ndarray, ofmap: np.ndarray,
                 weights: np.ndarray | None) -> None:
        self.p, self.conv, self.im2col = problem, conv, im2col
        self.ifmap, self.ofmap = ifmap, ofmap.reshape(ofmap.shape[0], -1) if self.im2col else ofmap
        self.weights = self._filters(weights)
        self._tables: dict[tuple[int, int, int, int], np.ndarray] = {}

    @property
    def exact(self) -> bool:
        """Whether `zero_macs` counts each pass exactly (not for an im2col lowering)."""
        return not self.im2col

    def _filters(self, weights: np.ndarray | None) -> np.ndarray | None:
        """Filters as [g·M + m, c, r, s] (an im2col lowering: [g·M + m, k])."""
        if weights is None:
            return None
        d = self.conv.dims
        if self.conv.transposed:  # ONNX: (C_in, M/groups, kh, kw)
            w = weights.reshape(d["G"], d["C"], d["M"], d["R"], d["S"]).transpose(0, 2, 1, 3, 4)
            return w.reshape(d["G"] * d["M"], d["C"], d["R"], d["S"])
        w = weights.reshape(d["G"] * d["M"], d["C"], d["R"], d["S"])
        return w.reshape(w.shape[0], -1) if self.im2col else w

    @staticmethod
    def _channels(g: tuple[int, int], c: tuple[int, int], per_group: int) -> np.ndarray:
        return (np.arange(*g)[:, None] * per_group + np.arange(*c)[None, :]).ravel()

    def _lines(self, axis: int, a: tuple[int, int], k: tuple[int, int]) -> np.ndarray:
        """Distinct ifmap rows (axis 0) or columns of output range `a` and kernel range `k`, in the map."""
        p, size = self.p, (self.p.in_h, self.p.in_w)[axis]
        if p.transposed:
            return np.arange(*a)
        pad = (p.pad_top, p.pad_left)[axis]
        index = np.arange(*a)[:, None] * p.stride[axis] + np.arange(*k)[None, :] * p.dilation[axis] - pad
        return np.unique(index[(index >= 0) & (index < size)])

    def ifmap_values(self, t: Ranges) -> np.ndarray:
        """One image's ifmap tile (ranges of G, C, P, Q, R, S), channel by channel, row by row."""
        if self.im2col:
            return self._unfolded(t["G"], t["C"], t["P"])
        channels = self._channels(t["G"], t["C"], self.p.dims["C"])
        values: np.ndarray = self.ifmap[np.ix_(channels, self._lines(0, t["P"], t["R"]),
                                               self._lines(1, t["Q"], t["S"]))]
        return values.reshape(-1)

    def _unfolded(self, g: tuple[int, int], k: tuple[int, int], t: tuple[int, int]) -> np.ndarray:
        """Rows k and columns t of the im2col matrix of groups g (k: channel, kernel row, kernel column; t:
        image, output row, output column)."""
        d = self.conv.dims
        ks = np.arange(*k)
        c, r, s = np.unravel_index(ks, (d["C"], d["R"], d["S"]))
        _, p, q = np.unravel_index(np.arange(*t), (d["N"], d["P"], d["Q"]))
        w = _window_of(self.conv)
        h = p[None, :] * w.stride[0] + r[:, None] * w.dilation[0] - w.pad[0]
        x = q[None, :] * w.stride[1] + s[:, None] * w.dilation[1] - w.pad[1]
        inside = (h >= 0) & (h < self.conv.in_h) & (x >= 0) & (x < self.conv.in_w)
        parts = []
        for group in range(*g):
            v = self.ifmap[group * d["C"] + c[:, None], np.clip(h, 0, self.conv.in_h - 1),
                           np.clip(x, 0, self.conv.in_w - 1)]
            parts.append(np.where(inside, v, 0).reshape(-1))
        return np.concatenate(parts) if parts else np.zeros(0, self.ifmap.dtype)

    def ofmap_values(self, t: Ranges) -> np.ndarray:
        """One image's ofmap tile (ranges of G, M, P, Q), channel by channel, row by row."""
        p = self.p
        channels = self._channels(t["G"], t["M"], p.dims["M"])
        if self.im2col:
            d = self.conv.dims
            pq = np.arange(*t["P"]) % (d["P"] * d["Q"])
            values: np.ndarray = self.ofmap[np.ix_(channels, pq)]
            return values.reshape(-1)
        rows = self._owned(0, t["P"]) if p.transposed else np.arange(*t["P"])
        cols = self._owned(1, t["Q"]) if p.transposed else np.arange(*t["Q"])
        values = self.ofmap[np.ix_(channels, rows, cols)]
        return values.reshape(-1)

    def _owned(self, axis: int, a: tuple[int, int]) -> np.ndarray:
        """Output rows (axis 0) or columns grid range `a` of a transposed convolution owns."""
        p = self.p
        grid, total, up = p.dims["PQ"[axis]], (p.out_h, p.out_w)[axis], p.up[axis]
        return np.arange(a[0] * up, total if a[1] >= grid else a[1] * up)

    def filter_values(self, t: Ranges) -> np.ndarray:
        """The filter tile (ranges of G, M, C, R, S) in G, M, C, R, S order; empty without weights."""
        if self.weights is None:
            return np.zeros(0)
        rows = self._channels(t["G"], t["M"], self.p.dims["M"])
        if self.im2col:
            values: np.ndarray = self.weights[np.ix_(rows, np.arange(*t["C"]))]
        else:
            values = self.weights[np.ix_(rows, np.arange(*t["C"]), np.arange(*t["R"]), np.arange(*t["S"]))]
        return values.reshape(-1)

    def zero_macs(self, start: Mapping[str, np.ndarray], length: Mapping[str, np.ndarray]) -> np.ndarray:
        """Per pass (ranges start + length per dim): the MACs whose ifmap word is zero (module docstring)."""
        p = self.p
        total = np.zeros(len(start["N"]), dtype=np.int64)
        kernel = np.stack([start["R"], length["R"], start["S"], length["S"]], axis=1)
        for r0, rn, s0, sn in {tuple(int(v) for v in row) for row in kernel}:
            key = (r0, rn, s0, sn)
            mine = np.all(kernel == key, axis=1)
            table = self._table(key)
            c0, cn = start["C"][mine], length["C"][mine]
            g0, gn = start["G"][mine], length["G"][mine]
            rows = (start["P"][mine], start["P"][mine] + length["P"][mine])
            cols = (start["Q"][mine], start["Q"][mine] + length["Q"][mine])
            found = np.zeros(int(mine.sum()), dtype=np.int64)
            for k in range(int(gn.max(initial=0))):  # one box per group of the pass
                lo = (g0 + k) * p.dims["C"] + c0
                found += np.where(k < gn, _box(table, (lo, lo + cn), rows, cols), 0)
            total[mine] = found
        scale = length["M"] * length["N"]
        if p.transposed:  # every input word meets the pass's kernel offsets
            scale = scale * length["R"] * length["S"]
        result: np.ndarray = total * scale
        return result

    def _table(self, key: tuple[int, int, int, int]) -> np.ndarray:
        """The summed-area table of the window's zeros over the kernel ranges of `key` (r0, rn, s0, sn)."""
        if key not in self._tables:
            r0, rn, s0, sn = key
            zero = self.ifmap == 0
            if self.p.transposed:
                counts = zero.astype(np.int64)
            else:
                counts = window_zeros(zero, _window_of(self.p), (r0, r0 + rn), (s0, s0 + sn))
            self._tables[key] = _summed(counts)
        return self._tables[key]
