"""Latency of a loop nest with double buffering: can the next visit's tiles be claimed while the current ones
are live? Estimated from the mapping as data and its closed-form counts.

The simulator runs a layer's passes as a pipeline (`hwsim.mapping.schedule`'s
execution contract): the loads of the next pass are issued as soon as the
previous pass's loads have landed, but a tile's ALLOC waits until the level
has room for it beside the tiles still live. So a bandwidth bound is reached
only where the next tiles fit beside the current ones; elsewhere every new
visit's loads wait for the current visit to end, and their transfer time adds
to the compute time instead of hiding under it.

For every level below DRAM (the L2, the GLB's data and filter partitions) the
live words are the tiles of the operands it keeps (an input tile its child
takes whole when it arrives is freed after that pass and does not stay live).
When a storage loop k above the level advances, every kept operand whose
visits' loop (the innermost relevant loop with a factor above 1) is loop k or
inside it starts a new visit. If the live words plus those new tiles exceed
the partition, each of the loop's advances exposes the new tiles' load from
their parent (and, for partial sums, the write-back of the outgoing tile that
frees its space): nothing else moves meanwhile, so those cycles add to the
busiest resource's.

A pass loads its filters into the RFs before it starts (one transfer after
another) and streams its ifmaps and psums while it computes, so

    passes = compute cycles + filter NoC cycles
    estimate = max(DRAM, GLB, ifmap bus, psum bus, passes) + exposed + first load,

the first load being the first visit's tiles, which nothing hides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hwsim.analytic.counts import LayerCounts
from hwsim.analytic.estimate import bus_cycles, latency_bound
from hwsim.analytic.nest_counts import NestCounter, Window
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.nest.format import DIMS, OPERANDS, WINDOWS, LoopNest
from hwsim.vocab import Access, Level, Operand, ceil_div
from hwsim.workload.ir import Layer

STORAGE = ("dram", "l2", "glb")


@dataclass(frozen=True)
class PipelineLatency:
    """One layer's latency estimate with double buffering (see the module docstring)."""

    bound_cycles: int  # the busiest resource (hwsim.analytic.estimate.latency_bound)
    pass_cycles: int  # compute cycles plus the filters' NoC loads before each pass
    exposed_cycles: int  # loads (and psum write-backs) that wait for room beside the live tiles
    first_load_cycles: int  # the first visit's tiles, before any pass
    estimate_cycles: int  # max(bound's transfers, passes) + exposed + first load
    waits: tuple[str, ...]  # "level.operand" of the tiles that cannot be prefetched


def hull_words(w: Window, op: str, extent: dict[str, int]) -> int:
    """The most words a tile of `op` with these dim extents holds (an ifmap window as its hull of rows and
    columns; a transposed convolution's outputs as the rows its grid rows own)."""
    t = {d: min(w.dims[d], extent[d]) for d in DIMS}
    if op == "filter":
        return t["G"] * t["M"] * t["C"] * t["T"] * t["R"] * t["S"]
    if op == "psum":
        rows = min(w.out_hw[0], t["P"] * w.up[0] + max(0, w.out_hw[0] - w.up[0] * w.dims["P"]))
        cols = min(w.out_hw[1], t["Q"] * w.up[1] + max(0, w.out_hw[1] - w.up[1] * w.dims["Q"]))
        return t["N"] * t["G"] * t["M"] * t["F"] * rows * cols
    if w.transposed:
        return t["N"] * t["G"] * t["C"] * t["F"] * t["P"] * t["Q"]
    words = t["N"] * t["G"] * t["C"]
    for out_dim, kernel_dim in WINDOWS:
        stride, dilation, _, size, _, _ = w.axis(out_dim)
        words *= min(size, (t[out_dim] - 1) * stride + (t[kernel_dim] - 1) * dilation + 1)
    return words


@dataclass(frozen=True)
class _Tile:
    level: str
    op: str
    words: int  # the tile's words (hull)
    visit_loop: int  # index of the loop whose iterations (with those outside it) are its visits
    live: bool  # stays in the level while later passes run (not freed as its child takes it)


class _Nest:
    """The tiles of one nest at each level below DRAM, from the closed form's view of the loops."""

    def __init__(self, counter: NestCounter) -> None:
        self.c = counter
        self.loops = counter.loops
        self.order = [s.level for s in counter.nest.storage]

    def tiles(self) -> list[_Tile]:
        out = []
        for level in self.order[1:]:
            storage = self.c.nest.level(level)
            for op in OPERANDS:
                if storage is not None and op in storage.keeps:
                    j = self.c._innermost(op, self.c._above(level))
                    extent = {d: int(np.prod([l.factor for l in self.loops[j + 1:] if l.dim == d], dtype=np.int64))
                              for d in DIMS}
                    out.append(_Tile(level, op, hull_words(self.c.w, op, extent), j, not self._taken_whole(op, level,
                                                                                                          j)))
        return out

    def _taken_whole(self, op: str, level: str, j: int) -> bool:
        """Whether the next level in takes the tile when it arrives (it is freed after that pass)."""
        if op == "psum":
            return False
        inner = self.order[self.order.index(level) + 1:]
        child = next((l for l in inner if op in self.c.nest.level(l).keeps), "rf")  # type: ignore[union-attr]
        if child == "rf" and op not in self.c.nest.rf.keeps:
            return False
        return self.c._innermost(op, self.c._above(child)) == j

    def advances(self, k: int) -> int:
        """How often loop k moves to its next iteration with every loop outside it fixed or moving too."""
        outer = int(np.prod([l.factor for l in self.loops[:k]], dtype=np.int64))
        return outer * (self.loops[k].factor - 1)


def _partition(hw: Accelerator, level: str, op: str) -> tuple[str, int]:
    """(name, words) of the part of `level` that holds `op`'s tiles."""
    wb = hw.word_bytes
    if level == "l2":
        return "l2", (hw.l2.size_bytes if hw.l2 else 0) // wb
    if op == "filter" and hw.glb.filter_bytes:
        return "glb.filter", hw.glb.filter_bytes // wb
    return "glb.data", hw.glb.data_bytes // wb


def _move_cycles(hw: Accelerator, parent: str, words: int) -> int:
    """Cycles to bring `words` from `parent` (DRAM or the L2) into the level below it."""
    if parent == "dram":
        return math.ceil(words * hw.word_bytes / hw.dram.bandwidth_bytes_per_cycle) + hw.dram.latency_cycles
    if parent == "l2" and hw.l2 is not None:
        return math.ceil(words * hw.word_bytes / hw.l2.bandwidth_bytes_per_cycle) + hw.l2.latency_cycles
    return 0


def _exposed(nest: _Nest, tiles: list[_Tile], hw: Accelerator) -> tuple[int, list[str]]:
    """Cycles of the loads that wait for room, and which tiles they are."""
    exposed, waits = 0, []
    by_part: dict[tuple[str, int], list[_Tile]] = {}
    for t in tiles:
        by_part.setdefault(_partition(hw, t.level, t.op), []).append(t)
    for (_, room), part in by_part.items():
        live = sum(t.words for t in part if t.live)
        for k in range(len(nest.loops)):
            if nest.loops[k].place not in STORAGE or nest.loops[k].factor < 2:
                continue
            changing = [t for t in part if t.visit_loop >= k and _above(nest, t.level, k)]
            if not changing or live + sum(t.words for t in changing) <= room:
                continue
            cycles = sum(_move_cycles(hw, nest.c._parent(t.op, t.level), t.words) * (2 if t.op == "psum" else 1)
                         for t in changing)
            exposed += nest.advances(k) * cycles
            waits += [f"{t.level}.{t.op}" for t in changing if f"{t.level}.{t.op}" not in waits]
    return exposed, waits


def _above(nest: _Nest, level: str, k: int) -> bool:
    return nest.loops[k].place in nest.order[:nest.order.index(level)]


def pipeline_latency(layer: Layer, nest: LoopNest, batch: int, hw: Accelerator,
                     counts: LayerCounts) -> PipelineLatency:
    """The latency estimate of one layer's nest (module docstring); `counts` are its closed-form counts."""
    bound = latency_bound(counts, hw)
    view = _Nest(NestCounter(layer, nest, batch, hw))
    tiles = view.tiles()
    exposed, waits = _exposed(view, tiles, hw)
    filter_fills = int(counts.transfers[Level.RF, Operand.FILTER, Access.FILL])
    filter_noc = ceil_div(filter_fills * hw.precision_bits, hw.noc.filter_bus_bits)
    passes = counts.compute_cycles + filter_noc
    first = sum(_move_cycles(hw, view.c._parent(t.op, t.level), t.words) for t in tiles if t.op != "psum")
    streams = max(cycles for bus, cycles in bus_cycles(counts.transfers, hw).items() if bus != "filter")
    estimate = max(bound.dram_cycles, bound.glb_cycles, streams, passes) + exposed + first
    return PipelineLatency(bound.bound_cycles, passes, exposed, first, estimate, tuple(waits))


__all__ = ["PipelineLatency", "hull_words", "pipeline_latency"]
