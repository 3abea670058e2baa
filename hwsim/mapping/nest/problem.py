"""A weighted layer as the convolution problem its loop nest covers: the dims and the window geometry.

A convolution over the output grid: ifmap row h = p·U + r·Dh − pad_top (U the
stride, Dh the dilation), and over a clip's frames likewise f·U_F + t·D_F −
pad_front; a fully connected layer is a convolution whose kernel covers its
input (T × R × S = D × H × W, F = P = Q = 1); a product of two activations (attention's Q·Kᵀ and A·V) is a
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

from hwsim.mapping.nest.format import RELEVANT, RELEVANT_TRANSPOSED, WINDOWS, MappingError
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
    dims: dict[str, int]  # N, G, M, C, F, P, Q, T, R, S
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
    frame_stride: int = 1  # the window along a clip's frames: stride, dilation, frames padded in front
    frame_dilation: int = 1
    pad_front: int = 0
    in_d: int = 1  # real ifmap frames (unpadded) and output frames
    out_d: int = 1

    def axis(self, out_dim: str) -> tuple[int, int, int, int]:
        """(stride, dilation, pad before, real ifmap size) of the window axis whose output dim is `out_dim`
        (F, P or Q)."""
        if out_dim == "F":
            return self.frame_stride, self.frame_dilation, self.pad_front, self.in_d
        i = 0 if out_dim == "P" else 1
        return self.stride[i], self.dilation[i], (self.pad_top, self.pad_left)[i], (self.in_h, self.in_w)[i]

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

    def ifmap_frame_start(self, f0: np.ndarray, t0: np.ndarray) -> np.ndarray:
        """First real ifmap frame of a tile."""
        result: np.ndarray = np.maximum(0, f0 * self.frame_stride + t0 * self.frame_dilation - self.pad_front)
        return result

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
    (a 1×1 convolution over a pixels × 1 map with C·T·R·S channels)."""
    if lowering == "im2col":
        conv = nest_problem(layer, batch)
        if conv.transposed:
            raise MappingError(f"layer {layer.name!r}: a transposed convolution has no im2col lowering; map it "
                               "as a convolution (lowering: conv)")
        d = conv.dims
        k, t = d["C"] * d["T"] * d["R"] * d["S"], d["N"] * d["F"] * d["P"] * d["Q"]
        return Problem(layer.name, _dims(1, d["G"], d["M"], k, 1, t, 1, 1, 1, 1), (1, 1), (1, 1), 0, 0, t, 1, t, 1,
                       False)
    ins, out = layer.in_shape, layer.out_shape
    kh, kw = layer.kernel
    if layer.kind is LayerKind.MATMUL:  # a 1x1 convolution over the rows, the second operand as its filters
        gemm = layer.gemm
        if gemm is None:
            raise MappingError(f"layer {layer.name!r}: a matmul with a broadcast operand is streamed")
        products, rows, k, cols = gemm  # the images of a batch are further products: each has its own operands
        return Problem(layer.name, _dims(1, batch * products, cols, k, 1, rows, 1, 1, 1, 1), (1, 1), (1, 1), 0, 0,
                       rows, 1, rows, 1, False)
    if layer.kind is LayerKind.FC:  # its kernel covers the input, a clip's frames included
        return Problem(layer.name, _dims(batch, 1, out.c, ins.c, 1, 1, 1, ins.d, ins.h, ins.w), (1, 1), (1, 1), 0,
                       0, ins.h, ins.w, 1, 1, False, in_d=ins.d)
    g = layer.groups
    if layer.kind is LayerKind.CONV_TRANSPOSE:
        dims = _dims(batch, g, out.c // g, ins.c // g, 1, ins.h, ins.w, 1, kh, kw)
        return Problem(layer.name, dims, (1, 1), (1, 1), 0, 0, ins.h, ins.w, out.h, out.w, True, layer.stride)
    if layer.kind is not LayerKind.CONV:
        raise MappingError(f"layer {layer.name!r}: a {layer.kind} layer has no loop nest; it is streamed")
    fw = layer.frames
    dims = _dims(batch, g, out.c // g, ins.c // g, out.d, out.h, out.w, fw.kernel, kh, kw)
    pad = layer.padding
    return Problem(layer.name, dims, layer.stride, layer.dilation, pad.top, pad.left, ins.h, ins.w, out.h, out.w,
                   False, frame_stride=fw.stride, frame_dilation=fw.dilation, pad_front=fw.front, in_d=ins.d,
                   out_d=out.d)


def _dims(n: int, g: int, m: int, c: int, f: int, p: int, q: int, t: int, r: int, s: int) -> dict[str, int]:
    """A nest's dims in DIMS order."""
    return {"N": n, "G": g, "M": m, "C": c, "F": f, "P": p, "Q": q, "T": t, "R": r, "S": s}


def tile_bound_words(problem: Problem, op: str, extent: dict[str, int]) -> int:
    """The most words a tile of `op` with these dim extents can hold (ifmap windows as hulls): what a level must
    have room for."""
    t = {d: min(problem.dims[d], extent[d]) for d in problem.dims}
    if op == "filter":
        return t["G"] * t["M"] * t["C"] * t["T"] * t["R"] * t["S"]
    if op == "psum":
        rows = owned_bound(t["P"], problem.up[0], problem.dims["P"], problem.out_h)
        return t["N"] * t["G"] * t["M"] * t["F"] * rows * owned_bound(t["Q"], problem.up[1], problem.dims["Q"],
                                                                        problem.out_w)
    if problem.transposed:
        return t["N"] * t["G"] * t["C"] * t["F"] * t["P"] * t["Q"]
    words = t["N"] * t["G"] * t["C"]
    for out_dim, kernel_dim in WINDOWS:
        stride, dilation, _, size = problem.axis(out_dim)
        words *= min(size, (t[out_dim] - 1) * stride + (t[kernel_dim] - 1) * dilation + 1)
    return words


def owned_bound(tile: int, up: int, grid: int, total: int) -> int:
    """The most output rows `tile` grid rows own: `up` each, the last grid row the remainder of the output (a
    transposed convolution whose kernel outreaches its stride)."""
    return min(total, (tile - 1) * up + max(up, total - up * (grid - 1)))
