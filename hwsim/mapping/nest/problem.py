"""A weighted layer as the convolution problem its loop nest covers: the dims and the window geometry.

A convolution over the output grid: ifmap row h = p·U + r·Dh − pad_top (U the
stride, Dh the dilation); a fully connected layer is a convolution whose kernel
covers its input (R × S = H × W, P = Q = 1); a product of two activations (attention's Q·Kᵀ and A·V) is a
1×1 convolution over the rows of its first operand with its second as the filters, one group per product and
image (G = images × products, N = 1: no image shares the other's operand); a transposed convolution runs over
its input grid (P × Q = H × W), every input pixel scattering into R × S
outputs, and each grid row *owns* `up_h` rows of the output (its stride; the
last owns the remainder) — the same work (`Layer.macs`) without the zeros a
zero-inserted input would add.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hwsim.mapping.nest.format import RELEVANT, RELEVANT_TRANSPOSED, MappingError
from hwsim.workload.ir import Layer, LayerKind

NEST_KINDS = frozenset({LayerKind.CONV, LayerKind.CONV_TRANSPOSE, LayerKind.FC, LayerKind.MATMUL})


def has_nest(layer: Layer) -> bool:
    """Whether a loop nest maps the layer (a matmul only when neither operand is broadcast over its products;
    the others are streamed)."""
    return layer.kind in NEST_KINDS and (layer.kind is not LayerKind.MATMUL or layer.gemm is not None)


@dataclass(frozen=True)
class Problem:
    """The dims of a layer's loop nest and where its window reads and its outputs land."""

    layer: str
    dims: dict[str, int]  # N, G, M, C, P, Q, R, S
    stride: tuple[int, int]  # U, V (1 for transposed and fully connected layers)
    dilation: tuple[int, int]
    pad_top: int
    pad_left: int
    in_h: int  # real ifmap rows and columns (unpadded)
    in_w: int
    out_h: int  # output rows and columns (a transposed convolution's output map)
    out_w: int
    transposed: bool
    up: tuple[int, int] = (1, 1)  # output rows and columns each grid row and column owns (transposed: the stride)

    def pixel_outputs(self) -> int:
        """Outputs one grid pixel of one filter owns: 1 for a direct convolution; for a transposed one, its
        stride's rows times columns (the last row and column the remainder of the output)."""
        if not self.transposed:
            return 1
        return owned_bound(1, self.up[0], self.dims["P"], self.out_h) * \
            owned_bound(1, self.up[1], self.dims["Q"], self.out_w)

    @property
    def relevant(self) -> dict[str, frozenset[str]]:
        """Dims each operand's data depends on."""
        return RELEVANT_TRANSPOSED if self.transposed else RELEVANT

    def ifmap_row_start(self, p0: np.ndarray, r0: np.ndarray) -> np.ndarray:
        """First real ifmap row of a tile (its DRAM address offset)."""
        if self.transposed:
            return p0
        result: np.ndarray = np.maximum(0, p0 * self.stride[0] + r0 * self.dilation[0] - self.pad_top)
        return result

    def ifmap_col_start(self, q0: np.ndarray, s0: np.ndarray) -> np.ndarray:
        if self.transposed:
            return q0
        result: np.ndarray = np.maximum(0, q0 * self.stride[1] + s0 * self.dilation[1] - self.pad_left)
        return result


def lowering_for(layer: Layer, preferred: str) -> str:
    """The lowering a dataflow's mapping of `layer` uses: its preferred one, except that a transposed convolution
    scatters each input pixel (it gathers no window an im2col matrix could hold) and stays a convolution."""
    return "conv" if layer.kind is LayerKind.CONV_TRANSPOSE else preferred


def nest_problem(layer: Layer, batch: int, lowering: str = "conv") -> Problem:
    """The loop-nest problem of a CONV, FC or transposed-conv layer for `batch` images, or of its im2col GEMM
    (a 1×1 convolution over a T × 1 map with K = C·R·S channels)."""
    if lowering == "im2col":
        conv = nest_problem(layer, batch)
        if conv.transposed:
            raise MappingError(f"layer {layer.name!r}: a transposed convolution has no im2col lowering; map it "
                               "as a convolution (lowering: conv)")
        d = conv.dims
        k, t = d["C"] * d["R"] * d["S"], d["N"] * d["P"] * d["Q"]
        dims = {"N": 1, "G": d["G"], "M": d["M"], "C": k, "P": t, "Q": 1, "R": 1, "S": 1}
        return Problem(layer.name, dims, (1, 1), (1, 1), 0, 0, t, 1, t, 1, False)
    ins, out = layer.in_shape, layer.out_shape
    kh, kw = layer.kernel
    if layer.kind is LayerKind.MATMUL:  # a 1x1 convolution over the rows, the second operand as its filters
        gemm = layer.gemm
        if gemm is None:
            raise MappingError(f"layer {layer.name!r}: a matmul with a broadcast operand is streamed")
        products, rows, k, cols = gemm  # the images of a batch are further products: each has its own operands
        dims = {"N": 1, "G": batch * products, "M": cols, "C": k, "P": rows, "Q": 1, "R": 1, "S": 1}
        return Problem(layer.name, dims, (1, 1), (1, 1), 0, 0, rows, 1, rows, 1, False)
    if layer.kind is LayerKind.FC:
        dims = {"N": batch, "G": 1, "M": out.c, "C": ins.c, "P": 1, "Q": 1, "R": ins.h, "S": ins.w}
        return Problem(layer.name, dims, (1, 1), (1, 1), 0, 0, ins.h, ins.w, 1, 1, False)
    g = layer.groups
    if layer.kind is LayerKind.CONV_TRANSPOSE:
        dims = {"N": batch, "G": g, "M": out.c // g, "C": ins.c // g, "P": ins.h, "Q": ins.w, "R": kh, "S": kw}
        return Problem(layer.name, dims, (1, 1), (1, 1), 0, 0, ins.h, ins.w, out.h, out.w, True, layer.stride)
    if layer.kind is not LayerKind.CONV:
        raise MappingError(f"layer {layer.name!r}: a {layer.kind} layer has no loop nest; it is streamed")
    dims = {"N": batch, "G": g, "M": out.c // g, "C": ins.c // g, "P": out.h, "Q": out.w, "R": kh, "S": kw}
    pad = layer.padding
    return Problem(layer.name, dims, layer.stride, layer.dilation, pad.top, pad.left, ins.h, ins.w, out.h, out.w,
                   False)


def tile_bound_words(problem: Problem, op: str, extent: dict[str, int]) -> int:
    """The most words a tile of `op` with these dim extents can hold (ifmap windows as hulls): what a level must
    have room for."""
    t = {d: min(problem.dims[d], extent[d]) for d in problem.dims}
    if op == "filter":
        return t["G"] * t["M"] * t["C"] * t["R"] * t["S"]
    if op == "psum":
        return t["N"] * t["G"] * t["M"] * owned_bound(t["P"], problem.up[0], problem.dims["P"], problem.out_h) \
            * owned_bound(t["Q"], problem.up[1], problem.dims["Q"], problem.out_w)
    if problem.transposed:
        rows, cols = t["P"], t["Q"]
    else:
        rows = (t["P"] - 1) * problem.stride[0] + (t["R"] - 1) * problem.dilation[0] + 1
        cols = (t["Q"] - 1) * problem.stride[1] + (t["S"] - 1) * problem.dilation[1] + 1
    return t["N"] * t["G"] * t["C"] * min(rows, problem.in_h) * min(cols, problem.in_w)


def owned_bound(tile: int, up: int, grid: int, total: int) -> int:
    """The most output rows `tile` grid rows own: `up` each, the last grid row the remainder of the output (a
    transposed convolution whose kernel outreaches its stride)."""
    return min(total, (tile - 1) * up + max(up, total - up * (grid - 1)))
