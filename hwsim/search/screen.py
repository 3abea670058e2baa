"""A fast screening cost of a candidate nest: tile words × visits, no edges, no halos shared, no ragged tails.

The closed form (`hwsim.analytic.nest_counts`) counts every boundary exactly
in a few milliseconds; a search screens thousands of candidates, so it first
ranks them by this approximation (about 50 µs each) and sends only the best to
the closed form. For each boundary (GLB, then the PEs) and operand: the visits
are the iterations out to the innermost relevant loop with a factor above 1
(for an ifmap sliding through the RFs along a streamed dim, out to the loop
before it), and each visit moves the hull of its tile, once per PE or lane
along the axes its delivery enumerates. Partial sums are read back on every
visit but the first over the reduction dims and written back on every visit;
spatial reduction hands each PE's psums to the next. Energy prices these with
the config's table (the MACs' own RF accesses are the same for every nest of a
layer and left out); latency is the busiest of the compute (passes plus their
filter loads), DRAM, GLB and bus cycles, plus the DRAM loads of every GLB tile
that does not fit beside the live ones (they cannot be prefetched).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from operator import itemgetter

from hwsim.hardware.energy import EnergyTable
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.nest.format import DIMS, OPERANDS, REDUCTION, SLIDING, Array, LoopNest, Storage
from hwsim.mapping.nest.problem import Problem, tile_bound_words
from hwsim.vocab import Access, Level

SYSTOLIC_FILL = {"weight_stationary": 2, "input_stationary": 2, "output_stationary": 1}
AXES = {"multicast": (), "forward_cols": ("rows",), "forward_rows": ("cols",), "unicast": ("rows", "cols")}
STORAGE = ("dram", "l2", "glb")
FlatLoop = tuple[str, str, int]  # place, dim, factor
Extent = tuple[int, ...]  # a tile's extent per dim, DIMS order
DIM_INDEX = {d: i for i, d in enumerate(DIMS)}


@dataclass(frozen=True)
class Screened:
    """The screening cost of one candidate."""

    energy_pj: float  # the transfers' and hops' energy with control overhead (MACs' own RF accesses left out)
    latency_cycles: float  # busiest resource plus loads that cannot be prefetched
    dram_words: float


def flat_loops(nest: LoopNest) -> list[FlatLoop]:
    """Every loop of the nest outer to inner as (place, dim, factor)."""
    return storage_flat_loops(nest.storage) + pass_flat_loops(nest.array, nest.rf)


def storage_flat_loops(storage: Iterable[Storage]) -> list[FlatLoop]:
    """The storage levels' loops outer to inner as (place, dim, factor)."""
    return [(s.level, l.dim, l.factor) for s in storage for l in s.loops]


def pass_flat_loops(array: Array, rf: Storage) -> list[FlatLoop]:
    """A pass's loops outer to inner as (place, dim, factor): the stream, the rows, the columns, the RF."""
    out: list[FlatLoop] = []
    for place, loops in (("stream", array.stream), ("rows", array.rows), ("cols", array.cols), ("rf", rf.loops)):
        out += [(place, l.dim, l.factor) for l in loops]
    return out


class Screen:
    """Screening costs of candidate nests of one problem on one accelerator."""

    def __init__(self, p: Problem, hw: Accelerator, table: EnergyTable) -> None:
        self.p, self.hw, self.table = p, hw, table
        self.rel = p.relevant
        self.glb_room = hw.glb.data_bytes // hw.word_bytes
        self.filter_room = hw.glb.filter_bytes // hw.word_bytes
        self.control = 1.0 / (1.0 - table.other_fraction)
        self._words: dict[str, dict[Extent, int]] = {op: {} for op in OPERANDS}
        self._relevant_of = {op: itemgetter(*(i for i, d in enumerate(DIMS) if d in self.rel[op])) for op in OPERANDS}

    def words(self, op: str, extent: Extent) -> int:
        """`tile_bound_words` of a tile of `op` with this extent, worked out once per problem for each extent of
        the dims `op` depends on (its words depend on no other; a search asks for the same few thousand extents
        hundreds of thousands of times)."""
        key = self._relevant_of[op](extent)
        known = self._words[op]
        found = known.get(key)
        if found is None:
            found = known[key] = tile_bound_words(self.p, op, dict(zip(DIMS, extent)))
        return found

    # -- visits and tiles --------------------------------------------------------------------------------
    def _visit(self, loops: list[FlatLoop], op: str, cut: int, kept: bool) -> tuple[int, int]:
        """(loop j of the visits, first loop of the tile)."""
        if not kept:
            return cut - 1, cut
        rel = self.rel[op]
        for j in range(cut - 1, -1, -1):  # the innermost relevant loop above the cut
            if loops[j][2] > 1 and loops[j][1] in rel:
                return j, j + 1
        return -1, 0

    def _extent(self, loops: list[FlatLoop], start: int, skip: tuple[str, ...] = ()) -> tuple[Extent, int]:
        """Per dim the product of the factors from loop `start` on, leaving out the array axes in `skip` (and
        the PEs those cover)."""
        extent = [1] * len(DIMS)
        units = 1
        at = DIM_INDEX
        for place, d, f in loops[start:]:
            if skip and place in skip:
                units *= f
            else:
                extent[at[d]] *= f
        return tuple(extent), units

    def tile(self, loops: list[FlatLoop], op: str, start: int) -> int:
        return self.words(op, self._extent(loops, start)[0])

    def boundary(self, loops: list[FlatLoop], op: str, cut: int, kept: bool, axes: tuple[str, ...] = (),
                 slide: bool = False) -> tuple[int, int]:
        """(words moved over all visits, reduction revisits) of `op` at a boundary below loop `cut`."""
        visits, units, tile, revisits = self._crossing(loops, op, cut, kept, axes, slide)
        return visits * units * tile, revisits

    def _crossing(self, loops: list[FlatLoop], op: str, cut: int, kept: bool, axes: tuple[str, ...] = (),
                  slide: bool = False) -> tuple[int, int, int, int]:
        """(visits, PEs or lanes each visit reaches, words of the tile each receives, reduction revisits) of `op`
        at a boundary below loop `cut` (`boundary`'s parts: the tile also says what a level must hold)."""
        j, start = self._visit(loops, op, cut, kept)
        if slide and j >= 0 and loops[j][0] == "stream" and loops[j][1] in SLIDING:
            start = j
        visits = 1
        revisits = 1
        for _, d, f in loops[:start]:
            visits *= f
            if d in REDUCTION:
                revisits *= f
        extent, units = self._extent(loops, start, axes)
        return visits, units, self.words(op, extent), revisits

    # -- the candidate -----------------------------------------------------------------------------------
    def evaluate(self, nest: LoopNest) -> Screened | None:
        """The screening cost, or None when a GLB tile does not fit."""
        glb = nest.level("glb")
        return self.evaluate_loops(flat_loops(nest), glb.keeps if glb is not None else frozenset(),
                                   nest.array.delivery, nest.rf.keeps)

    def evaluate_loops(self, loops: list[FlatLoop], keeps: frozenset[str], delivery: Mapping[str, str],
                       rf_keeps: frozenset[str]) -> Screened | None:
        """`evaluate` of a nest given as a search has it before building it: its `flat_loops`, what its GLB
        keeps, how its array delivers the inputs and what its RFs keep."""
        n_dram = sum(1 for l in loops if l[0] == "dram")
        n_above_rf = sum(1 for l in loops if l[0] in (*STORAGE, "stream"))
        kept = {op: self._crossing(loops, op, n_dram, True) for op in keeps}  # below the DRAM's loops
        tiles = {op: crossing[2] for op, crossing in kept.items()}
        if not self._fits(tiles):
            return None
        w = self.table.word_pj
        glb_words = dram_words = 0.0
        moved: dict[str, float] = {}
        for op in OPERANDS:
            parent = "glb" if op in keeps else "dram"
            if op in keeps:
                visits, units, tile, rev = kept[op]
                words = visits * units * tile
                moved[op] = words
                dram_words += words if op != "psum" else 2 * words - words / rev
                glb_words += words if op != "psum" else 2 * words - words / rev
            axes = AXES[delivery[op]] if op != "psum" else ()
            slide = op == "ifmap" and not self.p.transposed and "ifmap" in rf_keeps and not axes
            words, rev = self.boundary(loops, op, n_above_rf, op in rf_keeps, axes, slide)
            moves = words if op != "psum" else 2 * words - words / rev
            if parent == "glb":
                glb_words += moves
            else:
                dram_words += moves
            moved[f"rf.{op}"] = words
        dram = dram_words * w[Level.DRAM, Access.READ]
        on_chip = glb_words * w[Level.GLB, Access.READ] + sum(moved[f"rf.{op}"] for op in OPERANDS) * w[Level.RF,
                                                                                                         Access.FILL]
        hops = self._hops(loops, n_above_rf)
        on_chip += hops * self.table.inter_pe_pj
        energy = dram + on_chip * self.control
        latency = self._latency(loops, moved, glb_words, dram_words, tiles)
        return Screened(energy, latency, dram_words)

    def _fits(self, tiles: dict[str, int]) -> bool:
        data = sum(w for op, w in tiles.items() if not (op == "filter" and self.filter_room))
        return data <= self.glb_room and (not self.filter_room or tiles.get("filter", 0) <= self.filter_room)

    def _hops(self, loops: list[FlatLoop], cut: int) -> int:
        """Psum words handed PE to PE: every PE's psums over the loops above the PEs, less the distinct ones."""
        iterations = 1
        for _, _, f in loops[:cut]:
            iterations *= f
        spread, units = self._extent(loops, cut, ("rows", "cols"))
        whole = self._extent(loops, cut)[0]
        return iterations * max(0, units * self.words("psum", spread) - self.words("psum", whole))

    def _latency(self, loops: list[FlatLoop], moved: dict[str, float], glb_words: float, dram_words: float,
                 tiles: dict[str, int]) -> float:
        hw, pe = self.hw, self.hw.pe_array
        passes = work = active = stream = 1
        for place, _, f in loops:
            if place in STORAGE:
                passes *= f
            else:
                work *= f
                active *= f if place in ("rows", "cols") else 1
                stream *= f if place == "stream" else 1
        if pe.dataflow in SYSTOLIC_FILL:
            compute = passes * (SYSTOLIC_FILL[pe.dataflow] * pe.rows + pe.cols + stream - 2)
        else:
            work = min(work, math.prod(self.p.dims[d] for d in DIMS))
            compute = passes * (-(-work // (active * pe.macs_per_cycle)) + pe.fill_drain_cycles)
        bits, noc = hw.precision_bits, hw.noc
        filters = moved["rf.filter"] * bits / noc.filter_bus_bits
        psums = (max(1 / noc.psum_bus_bits, 1 / noc.psum_out_bus_bits) if noc.psum_out_bus_bits  # in and out apart
                 else 2 / noc.psum_bus_bits)
        streams = max(moved["rf.ifmap"] * bits / noc.ifmap_bus_bits, moved["rf.psum"] * bits * psums)
        dram = dram_words * hw.word_bytes / hw.dram.bandwidth_bytes_per_cycle
        glb = glb_words / (hw.glb.ports * hw.glb.words_per_port)
        apart = {op: op == "filter" and self.filter_room > 0 for op in tiles}
        live = {part: sum(w for op, w in tiles.items() if apart[op] == part) for part in (False, True)}
        exposed = sum(moved[op] * hw.word_bytes / hw.dram.bandwidth_bytes_per_cycle for op, w in tiles.items()
                      if live[apart[op]] + w > (self.filter_room if apart[op] else self.glb_room))
        return max(dram, glb, streams, compute + filters) + exposed


__all__ = ["Screen", "Screened", "flat_loops", "pass_flat_loops", "storage_flat_loops"]
