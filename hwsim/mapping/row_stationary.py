"""Row-stationary mapping (Eyeriss / CNNergy) with integer tiles.

`rs_params` chooses, per layer, how one processing pass covers the layer,
following CNNergy's scheduling rules but in whole numbers: R-row PE *sets*
(J // R per column group), q channels and p filters per set from the RF
sizes, channels per pass chP and filters per pass fP (rules 1, 2, 4, 5), K
ofmap rows per pass (one per PE column), and a GLB band of y_oc × x_oc ofmap
pixels for n images, shrunk until ifmaps and psums fit the GLB (the halving
loops and rule 6). Kernels taller than the array are split into row folds
that accumulate like extra channel passes. `rs_schedule` turns the
parameters into the step stream (see `hwsim.mapping.schedule`).

Layers the rules do not cover use documented fallbacks:
- depthwise convs are G groups of one channel and M/G filters each;
- fully connected layers are convolutions whose kernel covers the input;
- transposed convs are mapped as their direct-conv equivalent over the
  output grid with the kernel applied at input resolution: MACs equal
  `Layer.macs`, the E × F grid is the input grid (each input pixel scatters);
- pooling, element-wise, concat, resize, pixel shuffle, shuffle, slice,
  softmax, LRN and unary layers *stream*: input tiles pass DRAM → GLB,
  the array performs `Layer.ops` operations, the output returns to DRAM.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass

import numpy as np

from hwsim.errors import HwsimError
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.schedule import (
    Level,
    LayerSchedule,
    Operand,
    Schedule,
    StepKind,
    buffer_steps,
    empty_steps,
    transfers,
)
from hwsim.workload.ir import Graph, Layer, LayerKind


class MappingError(HwsimError):
    """A layer cannot be mapped onto the configured hardware."""


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class ConvProblem:
    """A weighted layer as one convolution per group, in padded coordinates."""

    groups: int
    C: int  # input channels per group
    M: int  # filters per group
    R: int  # kernel rows
    S: int  # kernel columns
    U: int  # vertical stride
    V: int  # horizontal stride
    row_span: int  # input rows one output row needs (dilation included)
    col_span: int
    E: int  # output rows
    F: int  # output columns
    H: int  # real input rows (unpadded)
    W: int
    pad_top: int
    pad_left: int
    up_h: int = 1  # output rows each grid row owns (a transposed conv's stride; 1 otherwise)
    up_w: int = 1
    out_h: int = 0  # rows of the real output map (E unless transposed)
    out_w: int = 0

    def owned(self, a0: int, a1: int, up: int, grid: int, total: int) -> int:
        """Output rows (or columns) grid rows [a0, a1) write; the last tile takes the remainder."""
        return (total if a1 == grid else a1 * up) - a0 * up

    def out_words(self, filters: int, y0: int, y1: int, x0: int, x1: int) -> int:
        """Output words a band of the grid produces for `filters` filters."""
        return (filters * self.owned(y0, y1, self.up_h, self.E, self.out_h or self.E)
                * self.owned(x0, x1, self.up_w, self.F, self.out_w or self.F))


def conv_problem(layer: Layer) -> ConvProblem:
    """The convolution a CONV, FC or transposed-conv layer computes (see module notes)."""
    ins, out = layer.in_shape, layer.out_shape
    if layer.kind is LayerKind.FC:
        return ConvProblem(1, ins.c, out.c, ins.h, ins.w, 1, 1, ins.h, ins.w, 1, 1, ins.h, ins.w, 0, 0)
    g = layer.groups
    kh, kw = layer.kernel
    if layer.kind is LayerKind.CONV_TRANSPOSE:
        # Scatter form: every input pixel contributes kh·kw·(M/g) products; outputs are the output map.
        return ConvProblem(g, ins.c // g, out.c // g, kh, kw, 1, 1, 1, 1, ins.h, ins.w, ins.h, ins.w, 0, 0,
                           layer.stride[0], layer.stride[1], out.h, out.w)
    dh, dw = layer.dilation
    pad = layer.padding
    return ConvProblem(g, ins.c // g, out.c // g, kh, kw, layer.stride[0], layer.stride[1], dh * (kh - 1) + 1,
                       dw * (kw - 1) + 1, out.h, out.w, ins.h, ins.w, pad.top, pad.left)


@dataclass(frozen=True)
class RsParams:
    """Integer row-stationary mapping of one weighted layer (see module docstring)."""

    folds: int  # kernel-row folds (R > J)
    r_fold: int  # kernel rows per fold (the last may have fewer)
    sets: int  # PE sets that fit the array height: J // r_fold
    q: int  # channels per set
    p: int  # filters per set
    chP: int  # channels per pass
    fP: int  # filters per pass
    sets_used: int  # ceil(chP/q) · ceil(fP/p)
    y_of: int  # ofmap rows per pass (PE columns used)
    y_oc: int  # ofmap rows per GLB band
    x_oc: int  # ofmap columns per GLB band
    n: int  # images per pass (batch kept in the GLB)
    rule: str  # which CNNergy rule set chP/fP


def _rf_rules(p_: ConvProblem, hw: Accelerator, r_fold: int) -> tuple[int, int, int, int, int, str]:
    """sets, q, p, chP, fP and the rule used (CNNergy rules 1, 2, 4, 5 in integers)."""
    rf = hw.pe_array.rf
    sets = max(1, hw.pe_array.rows // r_fold)
    q = max(1, min(p_.C, rf.ifmap_words // p_.S))
    p = max(1, min(rf.psum_words, (rf.filter_words // p_.S) // q))
    if q >= p_.C:
        chP, fP, rule = p_.C, p * sets, "1"
    elif p_.C < q * sets:
        chP, fP, rule = p_.C, p * max(1, sets // ceil_div(p_.C, q)), "2"
    else:
        chP, fP, rule = q * sets, p, "default"
    if fP > p_.M:
        fP, rule = p_.M, rule + "+4"
    p = min(p, fP)
    return sets, q, p, chP, fP, rule


def _glb_words(p_: ConvProblem, chP: int, fP: int, y_oc: int, x_oc: int, n: int) -> int:
    """GLB words a band needs: the ifmap rows and columns it reads plus its psums, for n images."""
    rows = min(p_.H, (y_oc - 1) * p_.U + p_.row_span)
    cols = min(p_.W, (x_oc - 1) * p_.V + p_.col_span)
    return n * (chP * rows * cols + p_.out_words(fP, 0, y_oc, 0, x_oc))


def rs_params(layer: Layer, hw: Accelerator, batch: int = 1) -> RsParams:
    """Choose the integer row-stationary mapping of a weighted layer for `batch` images."""
    p_ = conv_problem(layer)
    J, K = hw.pe_array.rows, hw.pe_array.cols
    folds = ceil_div(p_.R, J)
    r_fold = ceil_div(p_.R, folds)
    sets, q, p, chP, fP, rule = _rf_rules(p_, hw, r_fold)
    y_of = min(K, p_.E)
    y_oc, x_oc, n = p_.E, p_.F, batch
    glb = hw.glb.data_bytes // hw.word_bytes
    while _glb_words(p_, chP, fP, y_oc, x_oc, n) > glb:
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
            raise MappingError(
                f"layer {layer.name!r}: one output pixel of one filter needs more than the "
                f"{hw.glb.data_bytes} B GLB holds; raise glb.size in the config"
            )
    p = min(p, fP)
    sets_used = ceil_div(min(chP, p_.C), q) * ceil_div(fP, p)
    return RsParams(folds, r_fold, sets, q, p, chP, fP, sets_used, y_of, y_oc, x_oc, n, rule)


# ----- step generation -----------------------------------------------------------------------------


@dataclass(frozen=True)
class DramLayout:
    """Word addresses of a layer's tensors in DRAM (tensors are packed in execution order)."""

    ifmap: tuple[int, ...]
    filter: int
    ofmap: int


def dram_layout(graph: Graph) -> dict[str, DramLayout]:
    """Assign every tensor and every filter set its own DRAM region, in execution order."""
    tensor_base: dict[str, int] = {}
    filter_base: dict[str, int] = {}
    top = 0
    for layer in graph:
        tensor_base[layer.output] = top
        top += layer.out_shape.elements
        filter_base[layer.name] = top
        top += layer.weight_params
    return {
        l.name: DramLayout(tuple(tensor_base[t] for t in l.inputs), filter_base[l.name], tensor_base[l.output])
        for l in graph
    }


def _rows_in(p_: ConvProblem, y0: int, y1: int) -> int:
    """Real (unpadded) input rows that output rows [y0, y1) read."""
    first = y0 * p_.U - p_.pad_top
    last = (y1 - 1) * p_.U - p_.pad_top + p_.row_span
    return max(0, min(p_.H, last) - max(0, first))


def _cols_in(p_: ConvProblem, x0: int, x1: int) -> int:
    first = x0 * p_.V - p_.pad_left
    last = (x1 - 1) * p_.V - p_.pad_left + p_.col_span
    return max(0, min(p_.W, last) - max(0, first))


def _tiles(extent: int, size: int) -> list[tuple[int, int]]:
    return [(start, min(extent, start + size)) for start in range(0, extent, size)]


def _conv_steps(layer: Layer, p_: ConvProblem, m: RsParams, addr: DramLayout) -> Iterator[np.ndarray]:
    """The row-stationary loop nest: groups, filter tiles, GLB bands, channel (and fold) tiles, passes."""
    group = 0
    psum_base, ifmap_base = 0, 0  # GLB regions: psums first, the ifmap band after them
    folds = _tiles(p_.R, m.r_fold)
    for g in range(p_.groups):
        for m0, m1 in _tiles(p_.M, m.fP):
            fp = m1 - m0
            for y0, y1 in _tiles(p_.E, m.y_oc):
                for x0, x1 in _tiles(p_.F, m.x_oc):
                    band_psum = p_.out_words(fp, y0, y1, x0, x1)
                    ifmap_base = m.n * band_psum
                    out = [buffer_steps(StepKind.ALLOC, Operand.PSUM, Level.GLB, np.array([group]),
                                        np.array([m.n * band_psum]), np.array([psum_base]))]
                    tiles = [(c0, c1, r0, r1) for c0, c1 in _tiles(p_.C, m.chP) for r0, r1 in folds]
                    for t, (c0, c1, r0, r1) in enumerate(tiles):
                        out.append(_tile_steps(p_, m, addr, g, group, (m0, m1), (y0, y1), (x0, x1), (c0, c1),
                                               (r0, r1), first=t == 0, ifmap_base=ifmap_base))
                        group += ceil_div(y1 - y0, m.y_of) * m.n
                    last = group - 1
                    ofmap = band_psum
                    dram_out = addr.ofmap + ((g * p_.M + m0) * p_.E + y0) * p_.F + x0
                    out.append(transfers(Operand.OFMAP, Level.GLB, Level.DRAM, np.full(m.n, last),
                                         np.full(m.n, ofmap), psum_base + np.arange(m.n) * ofmap,
                                         np.full(m.n, dram_out)))
                    out.append(buffer_steps(StepKind.FREE, Operand.PSUM, Level.GLB, np.array([last]),
                                            np.array([m.n * band_psum]), np.array([psum_base])))
                    yield np.concatenate(out)


def _tile_steps(p_: ConvProblem, m: RsParams, addr: DramLayout, g: int, group: int, mt: tuple[int, int],
                yt: tuple[int, int], xt: tuple[int, int], ct: tuple[int, int], rt: tuple[int, int], first: bool,
                ifmap_base: int) -> np.ndarray:
    """Loads of one channel tile, then its passes: K ofmap rows per pass, one image at a time."""
    (m0, m1), (y0, y1), (x0, x1), (c0, c1), (r0, r1) = mt, yt, xt, ct, rt
    fp, cp, rp = m1 - m0, c1 - c0, r1 - r0
    band_if = cp * _rows_in(p_, y0, y1) * _cols_in(p_, x0, x1)
    filt = fp * cp * rp * p_.S
    filt_addr = addr.filter + (((g * p_.M + m0) * p_.C + c0) * p_.R + r0) * p_.S
    if_addr = addr.ifmap[0] + ((g * p_.C + c0) * p_.H + max(0, y0 * p_.U - p_.pad_top)) * p_.W
    loads = [
        buffer_steps(StepKind.ALLOC, Operand.IFMAP, Level.GLB, np.array([group]), np.array([m.n * band_if]),
                     np.array([ifmap_base])),
        transfers(Operand.IFMAP, Level.DRAM, Level.GLB, np.full(m.n, group), np.full(m.n, band_if),
                  np.full(m.n, if_addr), ifmap_base + np.arange(m.n) * band_if),
        transfers(Operand.FILTER, Level.DRAM, Level.RF, np.array([group]), np.array([filt]),
                  np.array([filt_addr]), np.array([0])),
    ]
    passes = _tiles(y1 - y0, m.y_of)
    n_pass = len(passes) * m.n
    rows = np.array([b - a for a, b in passes]).repeat(m.n)
    starts = np.array([y0 + a for a, _ in passes]).repeat(m.n)
    image = np.tile(np.arange(m.n), len(passes))
    groups = group + np.arange(n_pass)
    width = x1 - x0
    pass_if = cp * np.array([_rows_in(p_, s, s + r) for s, r in zip(starts, rows)]) * _cols_in(p_, x0, x1)
    psum = fp * rows * width
    psum_addr = image * (fp * (y1 - y0) * width) + (starts - y0) * width
    macs = fp * cp * rp * p_.S * rows * width
    chain = rp * ceil_div(cp, m.q)  # PEs a psum passes through vertically
    inter_pe = (chain - 1) * psum
    compute = empty_steps(n_pass)
    compute["kind"] = StepKind.COMPUTE
    compute["group"] = groups
    compute["active_pes"] = ceil_div(cp, m.q) * ceil_div(fp, m.p) * rp * rows
    compute["macs"] = macs
    compute["rf_filter_reads"] = macs
    compute["rf_ifmap_reads"] = macs
    compute["rf_psum_reads"] = macs
    compute["rf_psum_writes"] = macs - inter_pe
    compute["inter_pe_words"] = inter_pe
    per_pass = [
        transfers(Operand.IFMAP, Level.GLB, Level.RF, groups, pass_if, ifmap_base + image * band_if,
                  np.zeros(n_pass, np.int64)),
    ]
    if not first:
        per_pass.append(transfers(Operand.PSUM, Level.GLB, Level.RF, groups, psum, psum_addr,
                                  np.zeros(n_pass, np.int64)))
    per_pass.append(compute)
    per_pass.append(transfers(Operand.PSUM, Level.RF, Level.GLB, groups, psum, np.zeros(n_pass, np.int64),
                              psum_addr))
    # Interleave: for each pass, its loads, compute and psum write-back in order.
    body = np.stack(per_pass, axis=1).reshape(-1)
    free = buffer_steps(StepKind.FREE, Operand.IFMAP, Level.GLB, np.array([group + n_pass - 1]),
                        np.array([m.n * band_if]), np.array([ifmap_base]))
    return np.concatenate([*loads, body, free])


def _stream_steps(layer: Layer, hw: Accelerator, addr: DramLayout, batch: int) -> Iterator[np.ndarray]:
    """Fallback for layers without weights: GLB-sized tiles in, `ops` on the array, results out."""
    in_words = [s.elements for s in layer.in_shapes]
    out_words = layer.out_shape.elements
    glb = hw.glb.data_bytes // hw.word_bytes
    tiles = max(1, ceil_div(sum(in_words) + out_words, glb))
    while sum(ceil_div(w, tiles) for w in (*in_words, out_words)) > glb:  # the largest tile must fit
        tiles += 1
    split = [np.array([len(a) for a in np.array_split(np.arange(w), tiles)]) for w in (*in_words, out_words, layer.ops)]
    offsets = [np.concatenate([[0], np.cumsum(sz)[:-1]]) for sz in split]
    pes = hw.pe_array.pes
    group = 0
    for _ in range(batch):
        for t in range(tiles):
            ins = [int(sz[t]) for sz in split[:-2]]
            out, ops = int(split[-2][t]), int(split[-1][t])
            claim = sum(ins) + out
            steps = [buffer_steps(StepKind.ALLOC, Operand.IFMAP, Level.GLB, np.array([group]), np.array([claim]),
                                  np.array([0]))]
            glb_addr = 0
            for i, words in enumerate(ins):
                steps.append(transfers(Operand.IFMAP, Level.DRAM, Level.GLB, np.array([group]), np.array([words]),
                                       np.array([addr.ifmap[i] + offsets[i][t]]), np.array([glb_addr])))
                glb_addr += words
            compute = empty_steps(1)
            compute["kind"] = StepKind.COMPUTE
            compute["group"] = group
            compute["ops"] = ops
            compute["active_pes"] = min(pes, max(1, ops))
            steps.append(compute)
            steps.append(transfers(Operand.OFMAP, Level.GLB, Level.DRAM, np.array([group]), np.array([out]),
                                   np.array([glb_addr]), np.array([addr.ofmap + offsets[-2][t]])))
            steps.append(buffer_steps(StepKind.FREE, Operand.IFMAP, Level.GLB, np.array([group]),
                                      np.array([claim]), np.array([0])))
            group += 1
            yield np.concatenate(steps)


NO_STEPS = frozenset({LayerKind.INPUT, LayerKind.OUTPUT, LayerKind.PASSTHROUGH})
WEIGHTED = frozenset({LayerKind.CONV, LayerKind.CONV_TRANSPOSE, LayerKind.FC})


def layer_schedule(layer: Layer, hw: Accelerator, addr: DramLayout, batch: int) -> LayerSchedule:
    """The row-stationary schedule of one layer (or its fallback), generated lazily."""
    if layer.kind in NO_STEPS:
        return LayerSchedule(layer, {"mapping": "none"}, lambda: iter(()))
    if layer.kind in WEIGHTED:
        problem = conv_problem(layer)
        params = rs_params(layer, hw, batch)
        info = {"mapping": "row_stationary", **asdict(params), **asdict(problem)}
        return LayerSchedule(layer, info, lambda: _conv_steps(layer, problem, params, addr))
    return LayerSchedule(layer, {"mapping": "stream"}, lambda: _stream_steps(layer, hw, addr, batch))


def rs_schedule(graph: Graph, hw: Accelerator, batch: int = 1) -> Schedule:
    """Map every layer of `graph` row-stationary, layer by layer, tensors in DRAM between layers."""
    layout = dram_layout(graph)
    layers = tuple(layer_schedule(l, hw, layout[l.name], batch) for l in graph)
    return Schedule(graph.name, hw.name, "row_stationary", batch, layers)
