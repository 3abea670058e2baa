"""No local reuse (DianNao): no register files; every MAC takes its operands from the array each step.

The array spreads input channels over its rows and filters over its columns
(DianNao's Tn × Tn neural functional unit); each step an ifmap word is
multicast along its row and every PE takes its own filter word, both from the
GLB (the filters stay there when the filter partition holds them all);
partial sums are added across the rows (an adder tree) and return to the GLB.
A pass streams a band of output pixels (of one output frame of a clip) for one
block of channels and filters; the band is halved until the GLB holds its ifmap
and psums.
"""

from __future__ import annotations

from hwsim.hardware.kinds import DATAFLOWS
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.dataflows.base import Dataflow
from hwsim.mapping.nest.format import Array, Loop, LoopNest, MappingError, Storage
from hwsim.mapping.nest.problem import Problem, tile_bound_words
from hwsim.vocab import ceil_div


def _band_words(problem: Problem, rows_out: int) -> int:
    """GLB words of a band of `rows_out` output (grid) rows with every channel and filter: its ifmap hull and
    its psums (a transposed convolution's grid rows own their stride's output rows)."""
    extent = {**problem.dims, "N": 1, "G": 1, "F": 1, "P": rows_out}
    return sum(tile_bound_words(problem, op, extent) for op in ("ifmap", "psum"))


def nlr_nest(problem: Problem, hw: Accelerator) -> LoopNest:
    """The default no-local-reuse mapping (see the module docstring)."""
    d = problem.dims
    tc, tm = min(d["C"], hw.pe_array.rows), min(d["M"], hw.pe_array.cols)
    band = d["P"]
    room = hw.glb.data_bytes // hw.word_bytes
    while _band_words(problem, band) > room:
        if band == 1:
            raise MappingError(f"layer {problem.layer!r}: one output row's ifmap and psums need more than the "
                               f"{hw.glb.data_bytes} B GLB holds; raise glb.size in the config")
        band = ceil_div(band, 2)
    dram = (Loop("G", d["G"]), Loop("N", d["N"]), Loop("F", d["F"]), Loop("P", ceil_div(d["P"], band)))
    glb = (Loop("M", ceil_div(d["M"], tm)), Loop("C", ceil_div(d["C"], tc)), Loop("T", d["T"]), Loop("R", d["R"]),
           Loop("S", d["S"]))
    array = Array((Loop("C", tc),), (Loop("M", tm),), (Loop("P", band), Loop("Q", d["Q"])),
                  {"ifmap": "multicast", "filter": "unicast"})
    filters_fit = d["M"] * d["C"] * d["T"] * d["R"] * d["S"] <= hw.glb.filter_bytes // hw.word_bytes
    keeps = frozenset({"ifmap", "psum"}) | (frozenset({"filter"}) if filters_fit else frozenset())
    return LoopNest(problem.layer, dict(d), (Storage("dram", dram), Storage("glb", glb, keeps)), array,
                    Storage("rf", (), frozenset()))


NO_LOCAL_REUSE = DATAFLOWS.register("no_local_reuse")(Dataflow(
    name="no_local_reuse", lowering="conv", rows=frozenset({"C", "R", "S"}), cols=frozenset({"M"}),
    stream=frozenset({"N", "P", "Q"}), rf_keeps=frozenset(), rf_loops=False,
    delivery={"ifmap": "multicast", "filter": "unicast"}, default=nlr_nest))
