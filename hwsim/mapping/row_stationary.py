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
from hwsim.mapping.schedule import LayerSchedule, Schedule, buffer_steps, empty_steps, set_transfers, transfers
from hwsim.vocab import Level, Operand, StepKind, ceil_div
from hwsim.workload.ir import Graph, Layer, LayerKind


class MappingError(HwsimError):
    """A layer cannot be mapped onto the configured hardware."""


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
    elif q * sets > p_.C:
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
    """Word addresses of a layer's tensors in DRAM (tensors are packed in execution order).

    Each activation tensor holds the whole batch, image after image; `*_image_words` is the stride.
    """

    ifmap: tuple[int, ...]
    ifmap_image_words: tuple[int, ...]
    filter: int
    ofmap: int
    ofmap_image_words: int


def dram_layout(graph: Graph, batch: int = 1) -> dict[str, DramLayout]:
    """Assign every tensor (all images of the batch) and every filter set its own DRAM region."""
    tensor_base: dict[str, int] = {}
    filter_base: dict[str, int] = {}
    image_words: dict[str, int] = {}
    top = 0
    for layer in graph:
        tensor_base[layer.output] = top
        image_words[layer.output] = layer.out_shape.elements
        top += batch * layer.out_shape.elements
        filter_base[layer.name] = top
        top += layer.weight_params
    return {
        l.name: DramLayout(tuple(tensor_base[t] for t in l.inputs), tuple(image_words[t] for t in l.inputs),
                           filter_base[l.name], tensor_base[l.output], image_words[l.output])
        for l in graph
    }


def rows_in(p_: ConvProblem, y0: int, y1: int) -> int:
    """Real (unpadded) input rows that output rows [y0, y1) read."""
    first = y0 * p_.U - p_.pad_top
    last = (y1 - 1) * p_.U - p_.pad_top + p_.row_span
    return max(0, min(p_.H, last) - max(0, first))


def cols_in(p_: ConvProblem, x0: int, x1: int) -> int:
    """Real (unpadded) input columns that output columns [x0, x1) read."""
    first = x0 * p_.V - p_.pad_left
    last = (x1 - 1) * p_.V - p_.pad_left + p_.col_span
    return max(0, min(p_.W, last) - max(0, first))


def tiles(extent: int, size: int) -> list[tuple[int, int]]:
    """[start, end) ranges of size `size` covering `extent`; the last one takes the remainder."""
    return [(start, min(extent, start + size)) for start in range(0, extent, size)]


def filters_staged(hw: Accelerator, m: RsParams, S: int) -> bool:
    """Whether one pass's filters fit the GLB's filter partition (else they go DRAM → RF directly)."""
    return m.fP * m.chP * m.r_fold * S * hw.word_bytes <= hw.glb.filter_bytes


@dataclass(frozen=True)
class _Band:
    """One GLB band of group 0: a filter tile, a group of images and a y × x block of the output grid."""

    m: tuple[int, int]
    images: tuple[int, int]
    y: tuple[int, int]
    x: tuple[int, int]


def _conv_steps(p_: ConvProblem, m: RsParams, addr: DramLayout, hw: Accelerator,
                batch: int) -> Iterator[np.ndarray]:
    """The row-stationary loop nest: groups, filter tiles, image groups, GLB bands, then `_band_steps`.

    Groups of a grouped or depthwise conv repeat group 0's steps with shifted DRAM addresses and pass
    numbers, so they are replicated in numpy rather than rebuilt band by band.
    """
    chan = [(c0, c1, r0, r1) for c0, c1 in tiles(p_.C, m.chP) for r0, r1 in tiles(p_.R, m.r_fold)]
    c0, c1, r0, r1 = (np.array(v, dtype=np.int64) for v in zip(*chan))
    staged = filters_staged(hw, m, p_.S)

    def group_bands() -> Iterator[np.ndarray]:
        group = 0
        for mt in tiles(p_.M, m.fP):
            for it in tiles(batch, m.n):
                for yt in tiles(p_.E, m.y_oc):
                    for xt in tiles(p_.F, m.x_oc):
                        block = _band_steps(p_, m, addr, hw, _Band(mt, it, yt, xt), (c0, c1, r0, r1), staged,
                                            group)
                        group = int(block["group"][-1]) + 1
                        yield block

    if p_.groups == 1:
        yield from group_bands()
        return
    first = np.concatenate(list(group_bands()))
    per_block = max(1, STEPS_PER_BLOCK // len(first))
    for g0 in range(0, p_.groups, per_block):
        yield _replicate_groups(first, p_, addr, g0, min(p_.groups, g0 + per_block))


STEPS_PER_BLOCK = 1 << 18  # target size of a replicated block of steps


def _replicate_groups(first: np.ndarray, p_: ConvProblem, addr: DramLayout, g0: int, g1: int) -> np.ndarray:
    """Group 0's steps repeated for groups [g0, g1): filter, ifmap and ofmap DRAM addresses and pass
    numbers shift by one group's extent per group."""
    g = np.repeat(np.arange(g0, g1, dtype=np.int64), len(first))
    out = np.tile(first, g1 - g0)
    passes = int(first["group"][-1]) + 1
    out["group"] += g * passes
    from_dram = out["src"] == Level.DRAM
    filt = from_dram & (out["operand"] == Operand.FILTER)
    out["src_addr"][filt] += g[filt] * (p_.M * p_.C * p_.R * p_.S)
    ifmap = from_dram & (out["operand"] == Operand.IFMAP)
    out["src_addr"][ifmap] += g[ifmap] * (p_.C * p_.H * p_.W)
    ofmap = out["dst"] == Level.DRAM
    out["dst_addr"][ofmap] += g[ofmap] * (p_.M * (p_.out_h or p_.E) * (p_.out_w or p_.F))
    return out


@dataclass(frozen=True)
class _BandLayout:
    """One band's sizes and GLB word addresses: per channel (and fold) tile [T], per pass [P] (passes
    outer, images inner) and per tile and pass [T, P]."""

    n_img: int  # images
    fp: int  # filters
    cp: np.ndarray  # [T] channels
    rp: np.ndarray  # [T] kernel rows
    rows: np.ndarray  # [P] output grid rows
    width: int  # output grid columns
    image: np.ndarray  # [P] image (within the band)
    pass_rows_in: np.ndarray  # [P] real input rows read
    band_cols: int  # real input columns read
    band_if: np.ndarray  # [T] ifmap words per image
    band_psum: int  # psum (and ofmap) words per image
    psum: np.ndarray  # [P] psum words
    psum_addr: np.ndarray  # [P] GLB address of the psums
    ifmap_base: int  # GLB address of the ifmaps (after the psums)
    filter_base: int  # GLB address of the filters (the filter partition)
    first_group: np.ndarray  # [T] step group of each tile's first pass
    groups: np.ndarray  # [T, P] step group of each pass


def _band_layout(p_: ConvProblem, m: RsParams, hw: Accelerator, band: _Band, chan: tuple[np.ndarray, ...],
                 group: int) -> _BandLayout:
    """Sizes, addresses and step groups of one band whose first pass is step group `group`."""
    (m0, m1), (i0, i1), (y0, y1), (x0, x1) = band.m, band.images, band.y, band.x
    c0, c1, r0, r1 = chan
    fp, n_img, width = m1 - m0, i1 - i0, x1 - x0
    cp = c1 - c0
    starts, ends = (np.array(v, dtype=np.int64) for v in zip(*tiles(y1 - y0, m.y_of)))
    starts += y0
    ends += y0
    rows = np.repeat(ends - starts, n_img)
    image = np.tile(np.arange(n_img), len(starts))
    band_cols = cols_in(p_, x0, x1)
    band_psum = p_.out_words(fp, y0, y1, x0, x1)
    first_group = group + np.arange(len(cp)) * len(rows)
    return _BandLayout(
        n_img=n_img, fp=fp, cp=cp, rp=r1 - r0, rows=rows, width=width, image=image,
        pass_rows_in=np.repeat([rows_in(p_, s, e) for s, e in zip(starts, ends)], n_img),
        band_cols=band_cols, band_if=cp * rows_in(p_, y0, y1) * band_cols, band_psum=band_psum,
        psum=fp * rows * width, psum_addr=image * band_psum + (np.repeat(starts, n_img) - y0) * fp * width,
        ifmap_base=n_img * band_psum, filter_base=hw.glb.data_bytes // hw.word_bytes,
        first_group=first_group, groups=first_group[:, None] + np.arange(len(rows))[None, :])


_PER_PASS = 5  # ifmap GLB → RF, psum GLB → RF, COMPUTE, psum RF → GLB, FREE filter (first pass only)


def _band_steps(p_: ConvProblem, m: RsParams, addr: DramLayout, hw: Accelerator, band: _Band,
                chan: tuple[np.ndarray, ...], staged: bool, group: int) -> np.ndarray:
    """One band: its psum space, then per channel (and fold) tile the filter and ifmap loads and the
    passes (K ofmap rows each, images innermost), finally the ofmaps back to DRAM.

    Built as a [tiles, slots] array so a band with hundreds of channel tiles costs a few numpy calls;
    the slots a tile does not use are dropped at the end.
    """
    b = _band_layout(p_, m, hw, band, chan, group)
    T, P = b.groups.shape
    head = 4 + b.n_img  # ALLOC filter, filter DRAM → GLB, filter → RF, ALLOC ifmap, ifmap loads
    end = head + _PER_PASS * P
    s = empty_steps(T * (end + 1)).reshape(T, end + 1)
    keep = np.ones((T, end + 1), dtype=bool)
    col = _Columns(s)
    filt = _filter_loads(col, keep, p_, addr, band, chan, b, staged)
    _ifmap_loads(col, p_, addr, band, chan, b)
    passes = s[:, head:end].reshape(T, P, _PER_PASS)
    _pass_transfers(passes, b)
    keep[0, head + 1:end:_PER_PASS] = False  # the first tile starts its psums from zero
    # The staged filters leave the GLB's filter partition once the tile's first pass has them in its RFs.
    col.buffer(head + 4, StepKind.FREE, Operand.FILTER, b.first_group, filt, b.filter_base)
    keep[:, head + 4 + _PER_PASS:end:_PER_PASS] = False
    if not staged:
        keep[:, head + 4] = False
    _pass_computes(passes[:, :, 2], p_, m, b)
    col.buffer(end, StepKind.FREE, Operand.IFMAP, b.groups[:, -1], b.n_img * b.band_if, b.ifmap_base)
    return _with_psum_space(s[keep], p_, addr, band, b, group)


def _filter_loads(col: _Columns, keep: np.ndarray, p_: ConvProblem, addr: DramLayout, band: _Band,
                  chan: tuple[np.ndarray, ...], b: _BandLayout, staged: bool) -> np.ndarray:
    """Slots 0–2 of each tile: its filters DRAM → GLB → RF (staged) or DRAM → RF; their words [T]."""
    c0, _, r0, _ = chan
    filt: np.ndarray = b.fp * b.cp * b.rp * p_.S
    filt_dram = addr.filter + ((band.m[0] * p_.C + c0) * p_.R + r0) * p_.S
    col.buffer(0, StepKind.ALLOC, Operand.FILTER, b.first_group, filt, b.filter_base)
    col.transfer(1, Operand.FILTER, Level.DRAM, Level.GLB, b.first_group, filt, filt_dram, b.filter_base)
    if staged:
        col.transfer(2, Operand.FILTER, Level.GLB, Level.RF, b.first_group, filt, b.filter_base, 0)
    else:
        col.transfer(2, Operand.FILTER, Level.DRAM, Level.RF, b.first_group, filt, filt_dram, 0)
        keep[:, :2] = False
    return filt


def _ifmap_loads(col: _Columns, p_: ConvProblem, addr: DramLayout, band: _Band, chan: tuple[np.ndarray, ...],
                 b: _BandLayout) -> None:
    """Slot 3 and the n_img slots after it: each tile's ifmap space and its ifmaps DRAM → GLB, per image."""
    col.buffer(3, StepKind.ALLOC, Operand.IFMAP, b.first_group, b.n_img * b.band_if, b.ifmap_base)
    row0 = max(0, band.y[0] * p_.U - p_.pad_top)
    col0 = max(0, band.x[0] * p_.V - p_.pad_left)
    for i in range(b.n_img):
        if_dram = (addr.ifmap[0] + (band.images[0] + i) * addr.ifmap_image_words[0]
                   + (chan[0] * p_.H + row0) * p_.W + col0)
        col.transfer(4 + i, Operand.IFMAP, Level.DRAM, Level.GLB, b.first_group, b.band_if, if_dram,
                     b.ifmap_base + i * b.band_if)


def _pass_transfers(passes: np.ndarray, b: _BandLayout) -> None:
    """Each pass's ifmap rows and psums GLB → RF, and its psums back RF → GLB ([T, P, slot] steps)."""
    set_transfers(passes[:, :, 0], Operand.IFMAP, Level.GLB, Level.RF, b.groups,
                  b.cp[:, None] * b.pass_rows_in * b.band_cols, b.ifmap_base + b.image * b.band_if[:, None], 0)
    set_transfers(passes[:, :, 1], Operand.PSUM, Level.GLB, Level.RF, b.groups, b.psum, b.psum_addr, 0)
    set_transfers(passes[:, :, 3], Operand.PSUM, Level.RF, Level.GLB, b.groups, b.psum, 0, b.psum_addr)


def _pass_computes(compute: np.ndarray, p_: ConvProblem, m: RsParams, b: _BandLayout) -> None:
    """Each pass's COMPUTE step ([T, P]): MACs, active PEs, RF accesses, psums passed between PEs."""
    macs = (b.fp * b.cp * b.rp * p_.S)[:, None] * (b.rows * b.width)[None, :]
    inter_pe = (b.rp * ceil_div(b.cp, m.q) - 1)[:, None] * b.psum[None, :]
    compute["kind"] = StepKind.COMPUTE
    compute["group"] = b.groups
    compute["active_pes"] = (ceil_div(b.cp, m.q) * ceil_div(b.fp, m.p) * b.rp)[:, None] * b.rows[None, :]
    compute["macs"] = macs
    compute["rf_filter_reads"] = macs
    compute["rf_ifmap_reads"] = macs
    compute["rf_psum_reads"] = macs
    compute["rf_psum_writes"] = macs - inter_pe
    compute["inter_pe_words"] = inter_pe


def _with_psum_space(body_steps: np.ndarray, p_: ConvProblem, addr: DramLayout, band: _Band, b: _BandLayout,
                     group: int) -> np.ndarray:
    """The band's steps framed by its psum space (ALLOC first, FREE last), the ofmaps GLB → DRAM before
    the FREE."""
    (m0, _), (i0, _), (y0, _), (x0, _) = band.m, band.images, band.y, band.x
    n_img = b.n_img
    last = int(b.groups[-1, -1])
    out_rows, out_cols = p_.out_h or p_.E, p_.out_w or p_.F
    of_dram = (addr.ofmap + (i0 + np.arange(n_img)) * addr.ofmap_image_words
               + (m0 * out_rows + y0 * p_.up_h) * out_cols + x0 * p_.up_w)
    out = empty_steps(len(body_steps) + n_img + 2)
    out[0] = buffer_steps(StepKind.ALLOC, Operand.PSUM, Level.GLB, np.array([group]),
                          np.array([n_img * b.band_psum]), np.array([0]))[0]
    out[1:1 + len(body_steps)] = body_steps
    out[1 + len(body_steps):-1] = transfers(Operand.OFMAP, Level.GLB, Level.DRAM, np.full(n_img, last),
                                            np.full(n_img, b.band_psum), np.arange(n_img) * b.band_psum, of_dram)
    out[-1] = buffer_steps(StepKind.FREE, Operand.PSUM, Level.GLB, np.array([last]),
                           np.array([n_img * b.band_psum]), np.array([0]))[0]
    return out


@dataclass(frozen=True)
class _Columns:
    """Writes one slot (column) of a [tiles, slots] step array."""

    steps: np.ndarray

    def transfer(self, j: int, operand: Operand, src: Level, dst: Level, group: np.ndarray,
                 words: np.ndarray | int, src_addr: np.ndarray | int, dst_addr: np.ndarray | int) -> None:
        set_transfers(self.steps[:, j], operand, src, dst, group, words, src_addr, dst_addr)

    def buffer(self, j: int, kind: StepKind, operand: Operand, group: np.ndarray, words: np.ndarray | int,
               addr: np.ndarray | int) -> None:
        view = self.steps[:, j]
        view["kind"] = kind
        view["operand"] = operand
        view["dst"] = Level.GLB
        view["group"] = group
        view["words"] = words
        view["dst_addr"] = addr


def stream_tiles(layer: Layer, hw: Accelerator) -> int:
    """Tiles a streaming layer needs so that every input tile and its output tile fit the GLB together."""
    words = [s.elements for s in layer.in_shapes] + [layer.out_shape.elements]
    glb = hw.glb.data_bytes // hw.word_bytes
    n = max(1, ceil_div(sum(words), glb))
    while sum(ceil_div(w, n) for w in words) > glb:  # np.array_split puts the remainder first
        n += 1
    return n


def split_sizes(total: int, parts: int) -> np.ndarray:
    """Sizes of `parts` near-equal pieces of `total`, larger ones first (as np.array_split)."""
    base, extra = divmod(total, parts)
    return base + (np.arange(parts) < extra).astype(np.int64)


def _stream_steps(layer: Layer, hw: Accelerator, addr: DramLayout, batch: int) -> Iterator[np.ndarray]:
    """Fallback for layers without weights: per image, GLB-sized tiles in, `ops` on the array, results out.

    Slots per tile: ALLOC, one DRAM → GLB load per input, the inputs GLB → RF, COMPUTE, the output
    RF → GLB and GLB → DRAM, FREE.
    """
    k = len(layer.in_shapes)
    n = stream_tiles(layer, hw)
    ins = [split_sizes(s.elements, n) for s in layer.in_shapes]
    out = split_sizes(layer.out_shape.elements, n)
    ops = split_sizes(layer.ops, n)
    in_off = [np.concatenate([[0], np.cumsum(sz)[:-1]]) for sz in ins]
    out_off = np.concatenate([[0], np.cumsum(out)[:-1]])
    in_total = np.sum(ins, axis=0)
    claim = in_total + out
    glb_in = np.cumsum([np.zeros(n, np.int64), *ins], axis=0)  # GLB address of each input tile
    pes = hw.pe_array.pes
    for image in range(batch):
        group = image * n + np.arange(n)
        s = empty_steps(n * (k + 6)).reshape(n, k + 6)
        col = _Columns(s)
        col.buffer(0, StepKind.ALLOC, Operand.IFMAP, group, claim, 0)
        for i in range(k):
            col.transfer(1 + i, Operand.IFMAP, Level.DRAM, Level.GLB, group, ins[i],
                         addr.ifmap[i] + image * addr.ifmap_image_words[i] + in_off[i], glb_in[i])
        col.transfer(k + 1, Operand.IFMAP, Level.GLB, Level.RF, group, in_total, 0, 0)
        compute = s[:, k + 2]
        compute["kind"] = StepKind.COMPUTE
        compute["group"] = group
        compute["ops"] = ops
        compute["active_pes"] = np.clip(ops, 1, pes)
        col.transfer(k + 3, Operand.OFMAP, Level.RF, Level.GLB, group, out, 0, in_total)
        col.transfer(k + 4, Operand.OFMAP, Level.GLB, Level.DRAM, group, out, in_total,
                     addr.ofmap + image * addr.ofmap_image_words + out_off)
        col.buffer(k + 5, StepKind.FREE, Operand.IFMAP, group, claim, 0)
        yield s.reshape(-1)


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
        info["filters_staged"] = filters_staged(hw, params, problem.S)
        return LayerSchedule(layer, info, lambda: _conv_steps(problem, params, addr, hw, batch))
    return LayerSchedule(layer, {"mapping": "stream"}, lambda: _stream_steps(layer, hw, addr, batch))


def rs_schedule(graph: Graph, hw: Accelerator, batch: int = 1) -> Schedule:
    """Map every layer of `graph` row-stationary, layer by layer, tensors in DRAM between layers."""
    layout = dram_layout(graph, batch)
    layers = tuple(layer_schedule(l, hw, layout[l.name], batch) for l in graph)
    return Schedule(graph.name, hw.name, "row_stationary", batch, layers)
