"""One step generator for every dataflow: a layer's loop nest as the steps the simulator executes.

Each pass is one step group, in nest order (see `hwsim.mapping.schedule` for
the execution contract). Its loads: at every storage level below DRAM, for
each operand whose visit starts, an ALLOC of the tile and its fill from the
nearest outer level keeping it (one transfer per image for activations; a
psum tile is read back unless it is the first visit over the reduction
dims); then the words the array takes in over the pass (filters first, as
the executor loads them before the pass; ifmaps and psums stream). Then the
COMPUTE (MACs, active PEs, the RF reads, the hops between PEs per operand, the
stream length). Its stores: the psums the pass writes back, and at every
level whose visit ends, the psum tile written back (the ofmap when complete
and the parent is DRAM) and freed; an input tile is freed after its last
use (after the visit's first pass when its child takes it whole then). A
tile of ifmaps, ofmaps (or filters) moving between DRAM or the L2 and another
buffer takes its coded words where a level keeps tiles coded (`hwsim.sparsity`:
from its values when measured, else the codec's expectation).

Addresses: DRAM tiles start at their first element in the tensor (images,
then channels, frames, rows, columns); on chip each operand has a region (psums at
0, ifmaps after them, filters in the GLB's filter partition), tiles at its
start and a pass's psum sub-tile at its offset within the tile, so a pass
that reads psums back waits for the pass that wrote those words.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from hwsim.hardware.schema import Accelerator
from hwsim.mapping.nest.format import DIMS, INPUT_OPERANDS, OPERANDS, REDUCTION, LoopNest
from hwsim.mapping.nest.passes import Passes, PassPlan, positions
from hwsim.mapping.nest.problem import Problem, tile_bound_words
from hwsim.mapping.nest.tiles import TileCounter
from hwsim.mapping.schedule import buffer_steps, empty_steps, set_transfers
from hwsim.rows import interleaved
from hwsim.sparsity.codec import Links
from hwsim.sparsity.layer import LayerSparsity
from hwsim.vocab import Level, Operand, StepKind

LEVEL = {"dram": Level.DRAM, "l2": Level.L2, "glb": Level.GLB, "rf": Level.RF}
OPERAND = {"ifmap": Operand.IFMAP, "filter": Operand.FILTER, "psum": Operand.PSUM}
L2_BUFFERS = ("l2.ifmap", "l2.filter", "l2.psum")  # named buffers of nest tiles in the L2 (ids 0, 1, 2)
OPERAND_DIMS = {"ifmap": ("N", "G", "C", "F", "P", "Q"), "filter": ("G", "M", "C", "T", "R", "S"),
                "psum": ("N", "G", "M", "F", "P", "Q")}  # how an operand's tile is laid out on chip, outer to inner
AXES = {"multicast": frozenset(), "forward_cols": frozenset({"rows"}), "forward_rows": frozenset({"cols"}),
        "unicast": frozenset({"rows", "cols"})}


@dataclass(frozen=True)
class TensorAddresses:
    """Word addresses of a layer's tensors in DRAM (all images of each activation tensor, image after image)."""

    ifmap: int
    ifmap_image_words: int
    filter: int
    ofmap: int
    ofmap_image_words: int
    ifmap_channel_words: int = 0  # words from one ifmap channel to the next (0: the layer's own frames x rows x
    # columns; more when the layer computes a band of rows of a larger tensor)
    ofmap_channel_words: int = 0  # likewise for the ofmap


@dataclass
class _Boundary:
    """What one operand does at one level below DRAM, pass by pass (a chunk's own passes)."""

    level: str
    op: str
    parent: str
    starts: np.ndarray  # a visit starts at this pass
    ends: np.ndarray  # a visit ends at this pass
    words: np.ndarray  # words of the visit's tile (storage levels) or the pass's words (the array)
    images: np.ndarray  # images in the tile (activations are moved image by image)
    first: np.ndarray  # first visit of its output tile over the reduction dims (psums)
    last: np.ndarray  # last one
    fresh: np.ndarray  # psum words of first visits (the array's own visits in a pass)
    final: np.ndarray  # psum words of last visits


class NestSteps:
    """The step blocks of one layer's loop nest."""

    def __init__(self, nest: LoopNest, problem: Problem, hw: Accelerator, addr: TensorAddresses,
                 sparsity: LayerSparsity | None = None) -> None:
        self.nest, self.problem, self.hw, self.addr = nest, problem, hw, addr
        self.sparsity = sparsity if sparsity is not None else LayerSparsity()
        self.links = Links.of(hw)
        self.plan = PassPlan(nest, problem)
        self.tiles = TileCounter(problem, self.plan.loops)
        self.storage_levels = [s.level for s in nest.storage]
        self.regions = self._regions()

    # -- where things are --------------------------------------------------------------------------------
    def parent(self, op: str, level: str) -> str:
        outer = self.storage_levels if level == "rf" else self.storage_levels[:self.storage_levels.index(level)]
        for name in reversed(outer):
            storage = self.nest.level(name)
            if storage is not None and op in storage.keeps:
                return name
        return "dram"

    def child_takes_whole(self, op: str, level: str) -> bool:
        """Whether the next level in takes `op`'s tile from `level` only when the tile arrives."""
        inner = self.storage_levels[self.storage_levels.index(level) + 1:]
        child = next((l for l in inner if op in self.nest.level(l).keeps), "rf")  # type: ignore[union-attr]
        return self.plan.innermost(op, child) == self.plan.innermost(op, level)

    def _regions(self) -> dict[tuple[str, str], int]:
        """(level, operand) → first word of the operand's region on chip."""
        out: dict[tuple[str, str], int] = {}
        for level in self.storage_levels[1:]:
            storage = self.nest.level(level)
            cut = self.plan.above(level)
            base = 0
            for op in ("psum", "ifmap", "filter"):
                if storage is None or op not in storage.keeps:
                    continue
                if level == "glb" and op == "filter" and self.hw.glb.filter_bytes:
                    out[(level, op)] = self.hw.glb.data_bytes // self.hw.word_bytes
                    continue
                out[(level, op)] = base
                base += self._nominal_words(op, cut)
        return out

    def _nominal_words(self, op: str, cut: int) -> int:
        """An upper bound of the operand's tile inside the first `cut` loops (windows as hulls)."""
        return tile_bound_words(self.problem, op, {d: self.tiles.tile_inside(d, cut) for d in DIMS})

    # -- per chunk ---------------------------------------------------------------------------------------
    def boundaries(self, passes: Passes) -> list[_Boundary]:
        out = []
        for level in self.storage_levels[1:]:
            for op in OPERANDS:
                if op in self.nest.level(level).keeps:  # type: ignore[union-attr]
                    out.append(self._storage_boundary(passes, level, op))
        out += [self._array_boundary(passes, op) for op in OPERANDS]
        return out

    def _storage_boundary(self, passes: Passes, level: str, op: str) -> _Boundary:
        j = self.plan.innermost(op, level)
        starts, ends = self.plan.visit_edges(passes, j)
        own = passes.own
        cut = self.plan.above(level)
        words = self.tiles.storage_tile(passes, op, cut)[own]
        lo, hi = self.tiles.ranges(passes, "N", cut)
        first, last = self.plan.reduction_edge(passes, j)
        zero = np.zeros_like(words)
        return _Boundary(level, op, self.parent(op, level), starts, ends, words, (hi - lo)[own], first[own],
                         last[own], zero, zero)

    def _array_boundary(self, passes: Passes, op: str) -> _Boundary:
        plan, own = self.plan, passes.own
        j = plan.innermost(op, "rf")
        axes = AXES[self.nest.array.delivery[op]] if op in INPUT_OPERANDS else frozenset()
        words = self.tiles.array_words(passes, op, j, axes, plan.sliding_dim(op, j))[own]
        storage = len(plan.storage)
        ones = np.ones(len(words), dtype=bool)
        if j < storage:  # visits span passes: the tile moves when its visit starts and ends
            starts, ends = plan.visit_edges(passes, j)
            first, last = (edge[own] for edge in plan.reduction_edge(passes, j))
            return _Boundary("rf", op, self.parent(op, "rf"), starts, ends, words, ones.astype(np.int64), first,
                             last, np.where(first, words, 0), np.where(last, words, 0))
        red = self._stream_reductions(passes, j)[own]
        first, last = (edge[own] for edge in plan.reduction_edge(passes, j))
        per = words // red
        return _Boundary("rf", op, self.parent(op, "rf"), ones, ones, words, ones.astype(np.int64), first, last,
                         np.where(first, per, 0), np.where(last, per, 0))

    def _stream_reductions(self, passes: Passes, j: int) -> np.ndarray:
        """Per pass: how many reduction positions its stream visits take (loops out to j)."""
        red = np.ones(len(passes), dtype=np.int64)
        for i in range(len(self.plan.storage), j + 1):
            loop = self.plan.loops[i]
            if loop.dim in REDUCTION:
                red *= positions(passes.length[loop.dim], loop.factor, loop.tile)
        return red

    def compute(self, passes: Passes) -> dict[str, np.ndarray]:
        """Per pass: MACs, active PEs, stream length and the hops between PEs."""
        own = passes.own
        length = {d: passes.length[d][own] for d in DIMS}
        macs = np.prod([length[d] for d in DIMS], axis=0)
        active = np.ones_like(macs)
        stream = np.ones_like(macs)
        for d in DIMS:  # a dim folded over both axes: its rows and cols loops cut one range together
            spread = [l for l in self.plan.loops if l.place in ("rows", "cols") and l.dim == d]
            if spread:
                active *= positions(length[d], int(np.prod([l.factor for l in spread], dtype=np.int64)),
                                    spread[-1].tile)
        for d in DIMS:
            at = [l for l in self.plan.loops if l.place == "stream" and l.dim == d]
            if at:
                factor = int(np.prod([l.factor for l in at], dtype=np.int64))
                stream *= positions(length[d], factor, at[-1].tile)
        hops = {op: self._hops(passes, op)[own] for op in OPERANDS}
        start = {d: passes.start[d][own] for d in DIMS}
        zero = self.sparsity.zero_macs(start, length, macs)
        return {"macs": macs, "active": active, "stream": stream, "zero": zero,
                **{f"hops_{op}": hops[op] for op in OPERANDS}}

    def _hops(self, passes: Passes, op: str) -> np.ndarray:
        plan, all_pes = self.plan, frozenset({"rows", "cols"})
        if op == "psum":  # partial sums of one run of the loops above the PEs are added PE to PE
            k = plan.above("rf")
            held: np.ndarray = self.tiles.array_words(passes, op, k - 1, all_pes, "")
            unique: np.ndarray = self.tiles.array_words(passes, op, k - 1, frozenset(), "")
            hops: np.ndarray = held - unique
            return hops
        mode = self.nest.array.delivery[op]
        if not mode.startswith("forward"):
            return np.zeros(len(passes), dtype=np.int64)
        j = plan.innermost(op, "rf")
        lanes = self.tiles.array_words(passes, op, j, AXES[mode], "")
        held = self.tiles.array_words(passes, op, j, all_pes, "") - lanes
        if j < len(plan.storage):
            starts, _ = plan.visit_edges(passes, j)
            full = np.zeros(len(passes), dtype=bool)
            full[passes.own] = starts
            held = np.where(full, held, 0)
        result: np.ndarray = held
        return result


    # -- steps -------------------------------------------------------------------------------------------
    def blocks(self) -> Iterator[np.ndarray]:
        for passes in self.plan.chunks():
            yield self.chunk_steps(passes)

    def chunk_steps(self, passes: Passes) -> np.ndarray:
        own = passes.own
        table = _Table(own.stop - own.start, passes.first + np.arange(own.stop - own.start))
        bounds = self.boundaries(passes)
        stored = [b for b in bounds if b.level != "rf"]
        array = {b.op: b for b in bounds if b.level == "rf"}
        for b in stored:
            self._loads(table, passes, b)
        for op in ("filter", "ifmap", "psum"):
            self._array_load(table, passes, array[op])
        table.compute(self.compute(passes))
        self._array_store(table, passes, array["psum"])
        for b in reversed(stored):
            self._stores(table, passes, b)
        return table.steps()

    def _coded(self, passes: Passes, op: str, src: str, dst: str, words: np.ndarray, keep: np.ndarray,
               level: str) -> np.ndarray | None:
        """Per pass: the words a transfer of `op` tiles of `level` (`words` each) takes coded between `src` and
        `dst`, where `keep` (None when it moves raw)."""
        codec = self.links.coded(op, src, dst)
        if codec is None:
            return None
        ranges = None
        if self.sparsity.tiles is not None:
            cut, own = self.plan.above(level), passes.own
            ranges = {d: (lo[own], hi[own]) for d in DIMS for lo, hi in [self.tiles.ranges(passes, d, cut)]}
        return self.sparsity.coded_words(op, codec, words, ranges, keep)

    def _loads(self, t: _Table, passes: Passes, b: _Boundary) -> None:
        region = self._region(b.level, b.op, b.words)
        t.space(b.starts, StepKind.ALLOC, OPERAND[b.op], b.level, b.words, region)
        if b.op == "filter":
            t.transfer(b.starts, Operand.FILTER, b.parent, b.level, b.words,
                       self._tile_address(passes, b.parent, "filter", b.level, 0), region,
                       self._coded(passes, "filter", b.parent, b.level, b.words, b.starts, b.level))
            return
        per_image = b.words // np.maximum(1, b.images)
        keep = b.starts & ~b.first if b.op == "psum" else b.starts
        coded = self._coded(passes, b.op, b.parent, b.level, per_image, keep, b.level)  # every image alike
        for i in range(int(b.images.max(initial=0))):
            t.transfer(keep & (i < b.images), OPERAND[b.op], b.parent, b.level, per_image,
                       self._tile_address(passes, b.parent, b.op, b.level, i), region + i * per_image, coded)

    def _array_load(self, t: _Table, passes: Passes, b: _Boundary) -> None:
        words = b.words - b.fresh if b.op == "psum" else b.words
        t.transfer(b.starts, OPERAND[b.op], b.parent, "rf", words,
                   self._pass_address(passes, b.parent, b.op, b.words), 0)

    def _array_store(self, t: _Table, passes: Passes, b: _Boundary) -> None:
        final = b.final if b.parent == "dram" else np.zeros_like(b.final)
        addr = self._pass_address(passes, b.parent, "psum", b.words)
        t.transfer(b.ends, Operand.PSUM, "rf", b.parent, b.words - final, 0, addr)
        t.transfer(b.ends, Operand.OFMAP, "rf", b.parent, final, 0, addr)

    def _stores(self, t: _Table, passes: Passes, b: _Boundary) -> None:
        region = self._region(b.level, b.op, b.words)
        if b.op != "psum":
            release = b.starts if self.child_takes_whole(b.op, b.level) else b.ends
            t.space(release, StepKind.FREE, OPERAND[b.op], b.level, b.words, region)
            return
        per_image = b.words // np.maximum(1, b.images)
        final = b.last & (b.parent == "dram")
        coded = self._coded(passes, "ofmap", b.level, b.parent, per_image, b.ends & final, b.level)
        for i in range(int(b.images.max(initial=0))):
            keep = b.ends & (i < b.images)
            dst = self._tile_address(passes, b.parent, "psum", b.level, i)
            t.transfer(keep & ~final, Operand.PSUM, b.level, b.parent, per_image, region + i * per_image, dst)
            t.transfer(keep & final, Operand.OFMAP, b.level, b.parent, per_image, region + i * per_image, dst, coded)
        t.space(b.ends, StepKind.FREE, Operand.PSUM, b.level, b.words, region)

    # -- addresses ---------------------------------------------------------------------------------------
    def _end(self, level: str, op: str) -> int:
        """The word where `op`'s partition of an on-chip level ends (the GLB's data partition, or all of it for
        filters; the L2's whole size)."""
        wb = self.hw.word_bytes
        if level == "l2" and self.hw.l2:
            return self.hw.l2.size_bytes // wb
        return (self.hw.glb.size_bytes if op == "filter" else self.hw.glb.data_bytes) // wb

    def _region(self, level: str, op: str, words: np.ndarray) -> np.ndarray:
        """The operand's region start at `level`, moved down where a tile would run past its partition's end."""
        start: np.ndarray = np.minimum(self.regions[(level, op)], np.maximum(0, self._end(level, op) - words))
        return start

    def _tile_address(self, passes: Passes, level: str, op: str, child: str, image: int) -> np.ndarray:
        """Where image `image` of the tile of `child` (the level taking it) starts in `level`."""
        own = passes.own
        if level != "dram":
            return np.broadcast_to(self.regions[(level, op)], own.stop - own.start)
        cut = self.plan.above(child)
        lo = {d: self.tiles.ranges(passes, d, cut)[0][own] for d in DIMS}
        return self._dram_address(op, lo, image)

    def _pass_address(self, passes: Passes, level: str, op: str, span: np.ndarray) -> np.ndarray:
        """Where the pass's words of `op` start in `level` (DRAM: in the tensor; on chip: the offset of the pass's
        corner in the level's tile, so each sub-tile of psums has one address). `span`: the words the pass moves
        (more than the tile holds when the pass delivers words again); the start moves down so they stay inside
        the operand's partition."""
        own = passes.own
        lo = {d: passes.start[d][own] for d in DIMS}
        if level == "dram":
            return self._dram_address(op, lo, 0)
        cut = self.plan.above(level)
        corner = {d: self.tiles.ranges(passes, d, cut)[0][own] for d in DIMS}
        extent = {d: min(self.problem.dims[d], self.tiles.tile_inside(d, cut)) for d in DIMS}
        offset = np.zeros_like(lo["N"])
        for d in OPERAND_DIMS[op]:
            offset = offset * extent[d] + (lo[d] - corner[d])
        words = self.tiles.array_words(passes, op, len(self.plan.storage) - 1, frozenset(), "")[own]
        room = np.maximum(0, self._end(level, op) - np.maximum(words, span))
        start: np.ndarray = np.minimum(self.regions.get((level, op), 0) + offset, room)
        return start

    def _dram_address(self, op: str, lo: dict[str, np.ndarray], image: int) -> np.ndarray:
        p, a, dims = self.problem, self.addr, self.problem.dims
        if op == "filter":
            slice_ = (((lo["G"] * dims["M"] + lo["M"]) * dims["C"] + lo["C"]) * dims["T"] + lo["T"]) * dims["R"]
            filters: np.ndarray = (slice_ + lo["R"]) * dims["S"] + lo["S"] + a.filter
            return filters
        if op == "ifmap":
            d0 = lo["F"] if p.transposed else p.ifmap_frame_start(lo["F"], lo["T"])
            h0, w0 = p.ifmap_row_start(lo["P"], lo["R"]), p.ifmap_col_start(lo["Q"], lo["S"])
            channel = lo["G"] * dims["C"] + lo["C"]
            stride = a.ifmap_channel_words or p.in_d * p.in_h * p.in_w
            ifmap: np.ndarray = ((lo["N"] + image) * a.ifmap_image_words + channel * stride
                                 + (d0 * p.in_h + h0) * p.in_w + w0)
            return ifmap + a.ifmap
        channel = lo["G"] * dims["M"] + lo["M"]
        stride = a.ofmap_channel_words or p.out_d * p.out_h * p.out_w
        y0, x0 = lo["P"] * p.up[0], lo["Q"] * p.up[1]
        ofmap: np.ndarray = ((lo["N"] + image) * a.ofmap_image_words + channel * stride
                             + (lo["F"] * p.out_h + y0) * p.out_w + x0)
        return ofmap + a.ofmap

class _Table:
    """A chunk's steps as a [passes, slots] table filled slot by slot; `keep` marks the slots that exist."""

    def __init__(self, n: int, group: np.ndarray) -> None:
        self.n, self.group = n, group
        self.columns: list[tuple[np.ndarray, np.ndarray]] = []

    def _column(self, keep: np.ndarray) -> np.ndarray:
        col = empty_steps(self.n)
        col["group"] = self.group
        self.columns.append((col, keep & (self.n > 0)))
        return col

    def transfer(self, keep: np.ndarray, operand: Operand, src: str, dst: str, words: np.ndarray,
                 src_addr: np.ndarray | int, dst_addr: np.ndarray | int, coded: np.ndarray | None = None) -> None:
        col = self._column(keep & (words > 0))
        set_transfers(col, operand, LEVEL[src], LEVEL[dst], self.group, words, src_addr, dst_addr)
        if coded is not None:
            col["coded_words"] = coded

    def space(self, keep: np.ndarray, kind: StepKind, operand: Operand, level: str, words: np.ndarray,
              addr: np.ndarray | int) -> None:
        col = self._column(keep & (words > 0))
        block = buffer_steps(kind, operand, LEVEL[level], self.group, words, np.broadcast_to(addr, self.n))
        col[:] = block
        if level == "l2":  # the L2 traces named buffers: an id per operand, no placement
            col["dst_addr"] = L2_BUFFERS.index(f"l2.{Operand(operand).name.lower()}")
            col["src_addr"] = -1

    def compute(self, fields: dict[str, np.ndarray]) -> None:
        col = self._column(np.ones(self.n, dtype=bool))
        col["kind"] = StepKind.COMPUTE
        col["macs"] = fields["macs"]
        col["active_pes"] = fields["active"]
        col["stream_length"] = fields["stream"]
        col["zero_macs"] = fields["zero"]
        for name in ("rf_filter_reads", "rf_ifmap_reads", "rf_psum_reads"):
            col[name] = fields["macs"]
        col["rf_psum_writes"] = fields["macs"] - fields["hops_psum"]
        col["inter_pe_words"] = fields["hops_psum"]
        col["inter_pe_ifmap_words"] = fields["hops_ifmap"]
        col["inter_pe_filter_words"] = fields["hops_filter"]

    def steps(self) -> np.ndarray:
        """The kept steps, pass by pass, slot order within each pass."""
        if not self.columns:
            return empty_steps(0)
        return interleaved([c for c, _ in self.columns], [k for _, k in self.columns])
