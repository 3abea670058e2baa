"""Is a loop nest a valid mapping of its layer on the hardware? Checked before anything runs, never clamped.

A nest must cover its layer's dims (the factors of each dim multiply to at
least the dim, the outermost one no more than needed: the ragged tail the
nest leaves is stated in the error), spread no more PEs than the array has
(a dim on both axes only where no operand is forwarded along one), meet its dataflow's constraints, and fit:
every level's tiles of the operands it keeps must fit its capacity — per PE
the RF's filter, ifmap and psum words, the GLB's data partition (ifmaps,
psums, and filters unless the GLB has a filter partition) and filter
partition, the L2.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from hwsim.hardware.schema import Accelerator
from hwsim.mapping.dataflows.base import Dataflow
from hwsim.mapping.nest.format import DIMS, LOWERINGS, OPERANDS, LoopNest, MappingError
from hwsim.mapping.nest.passes import NestLoop, nest_loops
from hwsim.mapping.nest.problem import Problem, tile_bound_words
from hwsim.vocab import ceil_div

_CHECKED_ENTRIES = 4096
_checked: dict[tuple[object, ...], str | None] = {}  # the first problem of each (problem, nest, hardware) seen


def check_nest(nest: LoopNest, problem: Problem, hw: Accelerator, dataflow: Dataflow) -> None:
    """Raise MappingError naming the layer, the field and the numbers for the first thing wrong (each distinct
    layer shape, nest and hardware is checked once: a network repeats its shapes, a sweep its nests)."""
    key = (_problem_key(problem), nest.key(), _hardware_key(hw), dataflow.name)
    if key not in _checked:
        if len(_checked) >= _CHECKED_ENTRIES:
            _checked.pop(next(iter(_checked)))
        _checked[key] = next(_problems(nest, problem, hw, dataflow), None)
    found = _checked[key]
    if found is not None:
        raise MappingError(f"layer {nest.layer!r}: {found}")


def _problem_key(p: Problem) -> tuple[object, ...]:
    return (tuple(p.dims[d] for d in DIMS), p.stride, p.dilation, p.pad_top, p.pad_left, p.in_h, p.in_w, p.out_h,
            p.out_w, p.transposed, p.up, p.frame_stride, p.frame_dilation, p.pad_front, p.in_d, p.out_d)


def _hardware_key(hw: Accelerator) -> tuple[object, ...]:
    """What a check reads of the hardware: the array, the RFs, the GLB's partitions, the L2, the word."""
    rf = hw.pe_array.rf
    return (hw.name, hw.pe_array.rows, hw.pe_array.cols, None if rf is None else (rf.filter_words, rf.ifmap_words,
            rf.psum_words), hw.glb.data_bytes, hw.glb.filter_bytes, hw.l2.size_bytes if hw.l2 else None,
            hw.word_bytes)


def _problems(nest: LoopNest, problem: Problem, hw: Accelerator, dataflow: Dataflow) -> Iterator[str]:
    if nest.lowering not in LOWERINGS:
        yield f"lowering: {nest.lowering!r}; use one of {', '.join(LOWERINGS)}"
    yield from _cover(nest, problem)
    yield from _array(nest, hw)
    yield from dataflow.violations(nest)
    yield from _capacity(nest, problem, hw)


def _cover(nest: LoopNest, problem: Problem) -> Iterator[str]:
    factors_of: dict[str, list[int]] = {d: [] for d in DIMS}
    for loop in nest.all_loops():
        factors_of[loop.dim].append(loop.factor)
    for d in DIMS:
        extent, given = problem.dims[d], nest.dims.get(d)
        if given != extent:
            yield f"dims.{d}: the mapping says {given}, the layer has {extent}; map this network again"
            continue
        factors = factors_of[d]
        product = math.prod(factors)
        if product < extent:
            yield f"{d}: the factors {factors} cover {product} of {extent}; raise a factor of {d}"
        elif factors and factors[0] > ceil_div(extent, product // factors[0]):
            yield (f"{d}: the outermost factor {factors[0]} exceeds the {ceil_div(extent, product // factors[0])} "
                   f"tiles {extent} needs (the factors cover {product}, a ragged tail of {product - extent}); "
                   f"lower it")


def _array(nest: LoopNest, hw: Accelerator) -> Iterator[str]:
    rows = {l.dim for l in nest.array.rows if l.factor > 1}
    cols = {l.dim for l in nest.array.cols if l.factor > 1}
    lanes = sorted(op for op, mode in nest.array.delivery.items() if mode.startswith("forward"))
    for d in sorted(rows & cols) if lanes else ():
        yield (f"array: {d} is spread over both rows and cols while {lanes[0]} is forwarded along one axis; keep "
               f"{d} on one axis")
    for axis, loops, size in (("rows", nest.array.rows, hw.pe_array.rows), ("cols", nest.array.cols,
                                                                             hw.pe_array.cols)):
        used = math.prod(l.factor for l in loops)
        if used > size:
            yield f"array.{axis}: {' × '.join(str(l) for l in loops)} spreads {used} PEs, the array has {size} {axis}"


def _extent(loops: list[NestLoop], cut: int) -> dict[str, int]:
    return {d: math.prod(l.factor for l in loops[cut:] if l.dim == d) for d in DIMS}


def tile_words(nest: LoopNest, problem: Problem) -> dict[str, dict[str, int]]:
    """Per level below DRAM (l2, glb; rf per PE), the most words a tile of each operand it keeps can hold: the
    room the level must have for it."""
    loops = nest_loops(nest)
    out = {}
    for i, storage in enumerate(nest.storage[1:], start=1):
        above = {s.level for s in nest.storage[:i]}
        extent = _extent(loops, sum(1 for l in loops if l.place in above))
        out[storage.level] = {op: tile_bound_words(problem, op, extent) for op in OPERANDS if op in storage.keeps}
    extent = _extent(loops, sum(1 for l in loops if l.place != "rf"))
    out["rf"] = {op: tile_bound_words(problem, op, extent) for op in OPERANDS if op in nest.rf.keeps}
    return out


def _capacity(nest: LoopNest, problem: Problem, hw: Accelerator) -> Iterator[str]:
    words = tile_words(nest, problem)
    yield from _rf_capacity(nest, problem, hw, words["rf"])
    for storage in nest.storage[1:]:
        yield from _level_capacity(storage.level, words[storage.level], hw)


def _rf_capacity(nest: LoopNest, problem: Problem, hw: Accelerator, words: dict[str, int]) -> Iterator[str]:
    rf = hw.pe_array.rf
    if rf is None:
        if nest.rf.keeps:
            yield f"rf.keeps: {sorted(nest.rf.keeps)}, but {hw.name} has no register files; keep nothing in the PEs"
        return
    room = {"filter": rf.filter_words, "ifmap": rf.ifmap_words, "psum": rf.psum_words}
    spread = {l.dim for l in nest.rf.loops if l.factor > 1}
    for op, need in words.items():
        if need > room[op]:
            dims = ", ".join(d for d in DIMS if d in spread and d in problem.relevant[op])
            yield (f"rf: a PE keeps {need} {op} words, its {op} RF holds {room[op]}; shrink the rf loops of "
                   f"{dims or 'the nest'}")


def _level_capacity(level: str, words: dict[str, int], hw: Accelerator) -> Iterator[str]:
    wb = hw.word_bytes
    if level == "l2":
        total, room = sum(words.values()), (hw.l2.size_bytes if hw.l2 else 0) // wb
        if hw.l2 is None:
            yield "l2: the nest uses an L2 but the config has none; drop the l2 level or add one to the config"
        elif total > room:
            yield f"l2: {_listed(words)} need {total:,} words, the L2 holds {room:,}; shrink the tiles inside the L2"
        return
    filters_apart = hw.glb.filter_bytes > 0
    data = {op: w for op, w in words.items() if not (op == "filter" and filters_apart)}
    room = hw.glb.data_bytes // wb
    if sum(data.values()) > room:
        yield (f"glb: {_listed(data)} need {sum(data.values()):,} words, its data partition holds {room:,}; shrink the "
               "tiles inside the GLB or keep less there")
    if filters_apart and words.get("filter", 0) > hw.glb.filter_bytes // wb:
        yield (f"glb: a filter tile of {words['filter']:,} words does not fit the {hw.glb.filter_bytes // wb:,}-word "
               "filter partition; shrink it or let filters bypass the GLB (keeps without filter)")


def _listed(words: dict[str, int]) -> str:
    return " + ".join(f"{op} {w:,}" for op, w in words.items()) or "nothing"
