"""Row stationary (Eyeriss): PE sets of R filter rows by output rows, and CNNergy's rules as its default mapping.

A PE keeps a filter row (S words) of q channels and p filters, an ifmap
window of q channels and the p psums of its output pixel; a *PE set* is R
rows (kernel rows) by up to K columns (output rows), psums added up each
column. Sets for more channels and filters stack over the array's rows. A
pass streams a band's output columns (`stream: Q`), the ifmap window sliding
through the RFs; ifmap and filters are multicast, psums handed down the set.

CNNergy's scheduling rules choose, in whole numbers: kernel rows folded to
fit J rows (and filter columns folded so that the ifmap columns they span,
(S − 1)·dilation + 1, fit the ifmap RF), q channels and p
filters per set from the RF sizes, channels chP and filters fP per pass
(rules 1, 2, 4, 5), K output rows per pass, and a GLB band of y_oc × x_oc
output pixels for n images, shrunk (rule 6 and the halving loops) until the
band's ifmaps and psums fit the GLB. A 3-D convolution runs as Eyeriss runs
one: a 2-D convolution per output frame F and kernel frame T, its psums
accumulated over T in the GLB like another reduction over channels. As a loop nest:

    dram   G, M/fP, N/n, F, P/y_oc, Q/x_oc, C/chP, T, R folds, S folds
    glb    P = y_oc/y_of, N = n                  (keeps ifmap, psum; filters when they fit its partition)
    array  rows R · C sets · M sets, cols P = y_of, stream Q = x_oc
    rf     C = q, M = p, S                        (keeps all three)
"""

from __future__ import annotations

from dataclasses import dataclass

from hwsim.hardware.kinds import DATAFLOWS
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.dataflows.base import Dataflow, require_pixel_psums
from hwsim.mapping.nest.format import Array, Loop, LoopNest, MappingError, Storage
from hwsim.mapping.nest.problem import Problem
from hwsim.vocab import ceil_div

KEEPS_ALL = frozenset({"ifmap", "filter", "psum"})


@dataclass(frozen=True)
class RsParams:
    """CNNergy's integer row-stationary choices for one layer."""

    folds: int  # kernel-row folds (R > J)
    r_fold: int  # kernel rows per fold
    s_folds: int  # filter-column folds (S > ifmap RF words)
    s_rf: int  # filter columns per fold
    sets: int  # PE sets that fit the array height: J // r_fold
    q: int  # channels per set
    p: int  # filters per set
    chP: int  # channels per pass
    fP: int  # filters per pass
    y_of: int  # output rows per pass (PE columns used)
    y_oc: int  # output rows per GLB band
    x_oc: int  # output columns per GLB band
    n: int  # images per GLB band
    rule: str  # which CNNergy rules set chP and fP


def _span(s: int, dilation: int) -> int:
    """Ifmap columns a filter row of `s` taps reads: (s − 1)·dilation + 1."""
    return (s - 1) * dilation + 1


def _rf_rules(problem: Problem, hw: Accelerator, r_fold: int, s_rf: int, dilation: int
              ) -> tuple[int, int, int, int, int, str]:
    """sets, q, p, chP, fP and the rule used (CNNergy rules 1, 2, 4, 5 in integers); a channel's ifmap window
    is the span of its filter row's columns, and each of a PE's p filters keeps the psums its pixel owns (a
    transposed convolution's pixel owns its stride's rows times columns)."""
    d = problem.dims
    rf = hw.pe_array.rf
    if rf is None:
        raise MappingError(f"{hw.name}: a row-stationary array needs pe_array.rf (its PEs keep filter rows)")
    sets = max(1, hw.pe_array.rows // r_fold)
    q = max(1, min(d["C"], rf.ifmap_words // _span(s_rf, dilation)))
    owned = require_pixel_psums(problem, hw)
    p = max(1, min(rf.psum_words // owned, (rf.filter_words // s_rf) // q))
    if q >= d["C"]:
        chP, fP, rule = d["C"], p * sets, "1"
    elif q * sets > d["C"]:
        chP, fP, rule = d["C"], p * max(1, sets // ceil_div(d["C"], q)), "2"
    else:
        chP, fP, rule = q * sets, p, "default"
    if fP > d["M"]:
        fP, rule = d["M"], rule + "+4"
    return sets, q, min(p, fP), chP, fP, rule


def _band_words(problem: Problem, chP: int, fP: int, y_oc: int, x_oc: int, n: int, r: int, s: int) -> int:
    """GLB words of a band: the ifmap rows and columns it reads (hull) plus its psums, for n images."""
    rows = min(problem.in_h, (y_oc - 1) * problem.stride[0] + (r - 1) * problem.dilation[0] + 1)
    cols = min(problem.in_w, (x_oc - 1) * problem.stride[1] + (s - 1) * problem.dilation[1] + 1)
    if problem.transposed:
        rows, cols = y_oc, x_oc
    return n * (chP * rows * cols + fP * y_oc * problem.up[0] * x_oc * problem.up[1])


def rs_params(problem: Problem, hw: Accelerator) -> RsParams:
    """CNNergy's rules for one layer (see the module docstring)."""
    d = problem.dims
    folds = ceil_div(d["R"], hw.pe_array.rows)
    r_fold = ceil_div(d["R"], folds)
    rf = hw.pe_array.rf
    ifmap_words = rf.ifmap_words if rf else 1
    dilation = problem.dilation[1]
    s_folds = ceil_div(d["S"], max(1, (ifmap_words - 1) // dilation + 1))  # taps whose span fits the ifmap RF
    s_rf = ceil_div(d["S"], s_folds)
    sets, q, p, chP, fP, rule = _rf_rules(problem, hw, r_fold, s_rf, dilation)
    y_of = min(hw.pe_array.cols, d["P"])
    y_oc, x_oc, n = d["P"], d["Q"], d["N"]
    glb = hw.glb.data_bytes // hw.word_bytes
    while _band_words(problem, chP, fP, y_oc, x_oc, n, r_fold, s_rf) > glb:
        if n > 1:
            n = ceil_div(n, 2)
        elif y_oc > y_of:
            y_oc = max(y_of, ceil_div(ceil_div(y_oc, 2), y_of) * y_of)
        elif x_oc > 1:
            x_oc = ceil_div(x_oc, 2)
        elif fP > 1:
            fP, rule = fP - 1, rule + "+6"
        elif chP > 1:
            chP -= 1
        else:
            raise MappingError(f"layer {problem.layer!r}: one output pixel of one filter needs more than the "
                               f"{hw.glb.data_bytes} B GLB holds; raise glb.size in the config")
    return RsParams(folds, r_fold, s_folds, s_rf, sets, q, min(p, fP), chP, fP, y_of, y_oc, x_oc, n, rule)


def _split_sets(total: int, per_set: int, extent: int) -> tuple[int, int]:
    """(sets, per set) covering `total` of a dim of `extent` with uniform tiles no larger than `total` (a pass
    of the whole dim may round up)."""
    sets = ceil_div(min(total, extent), per_set)
    if total >= extent or total % per_set == 0:
        return sets, per_set
    return sets, total // sets


def rs_nest(problem: Problem, hw: Accelerator) -> LoopNest:
    """The CNNergy-rule mapping of a layer as a loop nest (see the module docstring)."""
    m = rs_params(problem, hw)
    d = problem.dims
    csets, q = _split_sets(m.chP, m.q, d["C"])
    msets, p = _split_sets(m.fP, m.p, d["M"])
    staged = msets * p * csets * q * m.r_fold * m.s_rf * hw.word_bytes <= hw.glb.filter_bytes
    dram = (Loop("G", d["G"]), Loop("M", ceil_div(d["M"], msets * p)), Loop("N", ceil_div(d["N"], m.n)),
            Loop("F", d["F"]), Loop("P", ceil_div(d["P"], m.y_oc)), Loop("Q", ceil_div(d["Q"], m.x_oc)),
            Loop("C", ceil_div(d["C"], csets * q)), Loop("T", d["T"]), Loop("R", m.folds), Loop("S", m.s_folds))
    glb = Storage("glb", (Loop("P", ceil_div(m.y_oc, m.y_of)), Loop("N", m.n)),
                  KEEPS_ALL if staged else frozenset({"ifmap", "psum"}))
    array = Array((Loop("R", m.r_fold), Loop("C", csets), Loop("M", msets)), (Loop("P", m.y_of),),
                  (Loop("Q", m.x_oc),), {"ifmap": "multicast", "filter": "multicast"})
    rf = Storage("rf", (Loop("C", q), Loop("M", p), Loop("S", m.s_rf)), KEEPS_ALL)
    return LoopNest(problem.layer, dict(d), (Storage("dram", dram), glb), array, rf)


ROW_STATIONARY = DATAFLOWS.register("row_stationary")(Dataflow(
    name="row_stationary", lowering="conv", rows=frozenset({"R", "C", "M", "N", "P"}), cols=frozenset({"P", "N", "M"}),
    stream=frozenset({"Q", "N"}), rf_keeps=KEEPS_ALL, rf_loops=True,
    delivery={"ifmap": "multicast", "filter": "multicast"}, default=rs_nest))
