"""Where a loop nest's DRAM transfers start, from the mapping as data and the tensors' DRAM layout.

Every tensor lies in DRAM image after image, then channel (group by group), frame, row and column; a filter
set filter after filter, then channel, kernel frame, row and column. A transfer starts at its tile's first
element: for an ifmap tile, the first real frame, row and column its window reads (max(0, output index ×
stride + kernel index × dilation − pad) per axis; a transposed convolution's grid index itself); for an
output tile, its first owned row and column. Per operand and direction this module counts the DRAM transfers
a nest makes and sums their start offsets in their tensor, without walking the nest: the transfers are the
iterations of the loops out to a boundary's visits (`hwsim.analytic.nest_counts`), a tile's start offset is a
sum of one term per group of dims (images, groups, channels, a window axis's output and kernel index together),
and a transfer exists where its tile holds a word (each window axis reads a row), so the sum over the product of
the groups' positions factors: Σ_k (Σ of group k's terms) × Π_{j≠k} (group j's positions).

Which transfers there are follows `hwsim.mapping.nest.format`: a storage level's tile comes from DRAM once per
visit (activations image by image), a psum tile is read back on every visit but the first over the reduction
dims and written back on every visit (as the ofmap on the last); a tile the PEs take straight from DRAM comes
once per visit, or once per pass when the visits lie inside the pass (all images at once).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from hwsim.analytic.nest_counts import NestCounter, progression_union
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.nest.format import DIMS, REDUCTION, WINDOWS, LoopNest
from hwsim.vocab import ceil_div
from hwsim.workload.ir import Layer

AddressSums = dict[tuple[str, str], tuple[int, int]]  # (operand, "read" | "update") -> (transfers, Σ start offsets)


@dataclass(frozen=True)
class _Group:
    """One group of dims of a tile's start offset: its non-empty positions and the sum of its term over them."""

    positions: int
    term_sum: int


def _product(groups: list[_Group]) -> tuple[int, int]:
    """(transfers, Σ offsets) over every combination of the groups' positions."""
    count = math.prod(g.positions for g in groups)
    total = sum(g.term_sum * math.prod(h.positions for j, h in enumerate(groups) if j != k)
                for k, g in enumerate(groups))
    return count, total


class _Offsets:
    """The offset groups of one nest's tiles (see the module docstring)."""

    def __init__(self, counter: NestCounter, layer: Layer, ifmap_channel_words: int = 0,
                 ofmap_channel_words: int = 0) -> None:
        self.c, self.w = counter, counter.w
        d = self.w.dims
        in_d, out_d = self.w.frames[3], self.w.frames[4]
        (in_h, in_w), (out_h, out_w) = self.w.in_hw, self.w.out_hw
        in_channel = ifmap_channel_words or in_d * in_h * in_w
        out_channel = ofmap_channel_words or out_d * out_h * out_w
        self.image_words = {"ifmap": layer.in_shape.elements, "psum": layer.out_shape.elements}
        filter_coef = {"S": 1, "R": d["S"], "T": d["R"] * d["S"]}
        filter_coef["C"] = d["T"] * filter_coef["T"]
        filter_coef["M"] = d["C"] * filter_coef["C"]
        filter_coef["G"] = d["M"] * filter_coef["M"]
        frame_words = in_h * in_w
        up_h, up_w = self.w.up
        self.coef = {
            "filter": filter_coef,
            "ifmap": {"C": in_channel, "G": d["C"] * in_channel, "F": frame_words, "P": in_w, "Q": 1},
            "psum": {"Q": up_w, "P": up_h * out_w, "F": out_h * out_w, "M": out_channel, "G": d["M"] * out_channel},
        }
        self.pair_coef = {"F": frame_words, "P": in_w, "Q": 1}

    def groups(self, op: str, cut: int, images_apart: bool) -> list[_Group]:
        """The groups of `op`'s tile starts over the iterations of the first `cut` loops, the reduction dims left
        out for psums (the caller counts their combinations); `images_apart`: one transfer per image."""
        c, relevant = self.c, self.c.relevant[op]
        out: list[_Group] = []
        paired = op == "ifmap" and not self.w.transposed
        for d in DIMS:
            if op == "psum" and d in REDUCTION:
                continue
            lo, hi = c._ranges(d, cut)
            if d not in relevant:
                out.append(_Group(len(lo), 0))
            elif d == "N":
                out.append(self._images(op, lo, hi, images_apart))
            elif paired and d in ("F", "P", "Q", "T", "R", "S"):
                continue  # a window axis: counted with its kernel dim below
            else:
                out.append(_Group(len(lo), int(lo.sum()) * self.coef[op][d]))
        if paired:
            out += [self._window(pair, cut) for pair in WINDOWS]
        return out

    def _images(self, op: str, lo: np.ndarray, hi: np.ndarray, apart: bool) -> _Group:
        words = self.image_words[op]
        if apart:  # every image of every tile its own transfer: each image once
            n = int(hi[-1])
            return _Group(n, words * n * (n - 1) // 2)
        return _Group(len(lo), words * int(lo.sum()))

    def _window(self, pair: tuple[str, str], cut: int) -> _Group:
        """The pairs of output and kernel positions along one window axis whose tile reads a row, and the sum of
        their first rows (times the axis's words per row)."""
        out_dim, kernel_dim = pair
        (a0, a1), (k0, k1) = self.c._ranges(out_dim, cut), self.c._ranges(kernel_dim, cut)
        stride, dilation, pad, size, _, _ = self.w.axis(out_dim)
        rows = progression_union(a0[:, None], a1[:, None], k0[None, :], k1[None, :], stride, dilation, pad, size)
        first = np.maximum(0, a0[:, None] * stride + k0[None, :] * dilation - pad)
        reads = rows > 0
        return _Group(int(reads.sum()), int(np.where(reads, first, 0).sum()) * self.pair_coef[out_dim])


def _add(out: AddressSums, key: tuple[str, str], count: int, total: int) -> None:
    if count:
        found = out.get(key, (0, 0))
        out[key] = (found[0] + count, found[1] + total)


def _reduction_positions(counter: NestCounter, cut: int) -> int:
    return math.prod(len(counter._ranges(d, cut)[0]) for d in REDUCTION)


def _psums(out: AddressSums, offsets: _Offsets, cut: int, images_apart: bool, reads: int, updates: int,
           finals: int) -> None:
    """Psum transfers over the visits at `cut`: `reads`, `updates` and `finals` (ofmap updates) of the combinations
    of reduction positions, each at every position of the other dims."""
    count, total = _product(offsets.groups("psum", cut, images_apart))
    _add(out, ("psum", "read"), reads * count, reads * total)
    _add(out, ("psum", "update"), updates * count, updates * total)
    _add(out, ("ofmap", "update"), finals * count, finals * total)


def _pass_psums(out: AddressSums, counter: NestCounter, offsets: _Offsets, storage: int, j: int) -> None:
    """Psums the PEs move straight from and to DRAM once per pass: read back unless the pass is the first over the
    reduction dims and streams a single reduction position, written back as psums unless it is the last and
    streams a single one, as the ofmap on the last."""
    stream = [(counter.loops[i], counter._granularity(counter.loops[i].dim, i + 1)) for i in range(storage, j + 1)
              if counter.loops[i].dim in REDUCTION]  # each with the dim's tile inside it
    ranges = {d: counter._ranges(d, storage) for d in REDUCTION}
    reads = updates = finals = 0
    for index in itertools.product(*(range(len(ranges[d][0])) for d in REDUCTION)):
        position = dict(zip(REDUCTION, index))
        first = all(i == 0 for i in index)
        last = all(position[d] == len(ranges[d][0]) - 1 for d in REDUCTION)
        spread = 1
        for loop, inner in stream:
            lo, hi = ranges[loop.dim]
            length = int(hi[position[loop.dim]] - lo[position[loop.dim]])
            spread *= min(loop.factor, ceil_div(length, inner))
        reads += not first or spread > 1
        updates += not last or spread > 1
        finals += last
    _psums(out, offsets, storage, False, reads, updates, finals)


def dram_transfer_sums(layer: Layer, nest: LoopNest, batch: int, hw: Accelerator, ifmap_channel_words: int = 0,
                       ofmap_channel_words: int = 0) -> AddressSums:
    """(operand, direction) -> (DRAM transfers, Σ of their start offsets in their tensor) of the nest's
    schedule (see the module docstring); directions as the trace's DRAM records say them (read, update). A layer
    computing a band of rows of larger tensors gives their words from one channel to the next."""
    counter = NestCounter(layer, nest, batch, hw)
    offsets = _Offsets(counter, layer, ifmap_channel_words, ofmap_channel_words)
    storage = sum(1 for l in counter.loops if l.place in ("dram", "l2", "glb"))
    out: AddressSums = {}
    for level, op in counter.boundaries():
        if counter._parent(op, level) != "dram":
            continue
        k = counter._above(level)
        j = k - 1 if level == "rf" and op not in nest.rf.keeps else counter._innermost(op, k)
        apart = level != "rf"  # a storage level's activation tiles move image by image
        if level == "rf" and j >= storage:  # the visits lie inside the pass: one transfer per pass
            if op == "psum":
                _pass_psums(out, counter, offsets, storage, j)
            else:
                _add(out, (op, "read"), *_product(offsets.groups(op, storage, False)))
            continue
        cut = j + 1
        if op == "psum":
            revisits = _reduction_positions(counter, cut)
            _psums(out, offsets, cut, apart, revisits - 1, revisits - 1, 1)
        else:
            _add(out, (op, "read"), *_product(offsets.groups(op, cut, apart and op == "ifmap")))
    return out


__all__ = ["AddressSums", "dram_transfer_sums"]
