"""Systolic arrays in SCALE-Sim's three dataflows, and SCALE-Sim's folding as their default mappings.

A layer is lowered to its im2col GEMM (K = C·T·R·S window elements, T = N·F·P·Q
output pixels, M filters) and one operand is held still in every PE while
the others flow through the array:

- weight stationary: rows ← K, cols ← M, a fold streams the T pixels; each
  PE keeps one weight; ifmap rows enter at the left edge and move right,
  psums move down the columns;
- output stationary: rows ← T, cols ← M, a fold streams the K window
  elements; each PE keeps one output's psum; ifmaps move right, filters down;
- input stationary: rows ← K, cols ← T, a fold streams the M filters; each
  PE keeps one im2col element; filters move right, psums down.

SCALE-Sim's folding: ⌈rows-dim / R⌉ × ⌈cols-dim / C⌉ folds, columns outer,
each streaming the whole third dim (so a pass is a fold: 2R + C + T − 2 or,
output stationary, R + C + T − 2 cycles). The GLB keeps each operand whole
when it fits, else that operand streams from DRAM fold by fold.

A transposed convolution has no im2col matrix (each input pixel scatters):
it stays a convolution, rows ← C, cols ← M (or T ← P), and its kernel
offsets, batch and columns become further folds.
"""

from __future__ import annotations

from hwsim.hardware.kinds import DATAFLOWS
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.dataflows.base import Dataflow, require_pixel_psums
from hwsim.mapping.nest.format import Array, Loop, LoopNest, Storage
from hwsim.mapping.nest.problem import Problem, tile_bound_words
from hwsim.vocab import ceil_div

# dataflow: (rows dim, cols dim, stream dim, what a PE keeps, delivery of the ifmap and of the filters)
ROLES = {
    "weight_stationary": ("C", "M", "P", "filter", "forward_cols", "unicast"),
    "output_stationary": ("P", "M", "C", "psum", "forward_cols", "forward_rows"),
    "input_stationary": ("C", "P", "M", "ifmap", "unicast", "forward_cols"),
}


def _glb_keeps(problem: Problem, hw: Accelerator) -> frozenset[str]:
    """The operands (per group) the GLB can hold whole: filters first (in the filter partition when there is
    one), then ifmaps, then psums."""
    one_group = {**problem.dims, "G": 1}
    sizes = {op: tile_bound_words(problem, op, one_group) for op in ("filter", "ifmap", "psum")}
    room = hw.glb.data_bytes // hw.word_bytes
    filter_room = hw.glb.filter_bytes // hw.word_bytes
    keeps = set()
    if sizes["filter"] <= (filter_room or room):  # filters go to the filter partition when the GLB has one
        keeps.add("filter")
        room -= 0 if filter_room else sizes["filter"]
    for op in ("ifmap", "psum"):
        if sizes[op] <= room:
            keeps.add(op)
            room -= sizes[op]
    return frozenset(keeps)


def systolic_nest(dataflow: str, problem: Problem, hw: Accelerator) -> LoopNest:
    """SCALE-Sim's folds of the layer's im2col GEMM as a loop nest (see the module docstring)."""
    row_dim, col_dim, stream_dim, keeps, ifmap, filters = ROLES[dataflow]
    if keeps == "psum":
        require_pixel_psums(problem, hw)
    d = problem.dims
    rows, cols = min(d[row_dim], hw.pe_array.rows), min(d[col_dim], hw.pe_array.cols)
    others = tuple(Loop(dim, d[dim]) for dim in ("N", "F", "Q", "T", "R", "S") if d[dim] > 1)  # a transposed conv's
    folds = (Loop(col_dim, ceil_div(d[col_dim], cols)), Loop(row_dim, ceil_div(d[row_dim], rows)), *others)
    array = Array((Loop(row_dim, rows),), (Loop(col_dim, cols),), (Loop(stream_dim, d[stream_dim]),),
                  {"ifmap": ifmap, "filter": filters})
    return LoopNest(problem.layer, dict(d), (Storage("dram", (Loop("G", d["G"]),)),
                                             Storage("glb", folds, _glb_keeps(problem, hw))),
                    array, Storage("rf", (), frozenset({keeps})), "conv" if problem.transposed else "im2col")


def _register(name: str) -> Dataflow:
    row_dim, col_dim, stream_dim, keeps, ifmap, filters = ROLES[name]

    def default(problem: Problem, hw: Accelerator) -> LoopNest:
        return systolic_nest(name, problem, hw)

    flow = Dataflow(name=name, lowering="im2col", rows=frozenset({row_dim}), cols=frozenset({col_dim}),
                    stream=frozenset({stream_dim}), rf_keeps=frozenset({keeps}), rf_loops=False,
                    delivery={"ifmap": ifmap, "filter": filters}, default=default)
    DATAFLOWS.register(name)(flow)
    return flow


WEIGHT_STATIONARY = _register("weight_stationary")
OUTPUT_STATIONARY = _register("output_stationary")
INPUT_STATIONARY = _register("input_stationary")
