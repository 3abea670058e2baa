"""What the ONNX importer knows about each ONNX value, and small helpers shared by its handlers.

A value is a constant (a numpy array, folded as the importer goes), a `Param`
(a weight whose shape is known but whose data is never loaded) or a
`Feature` (an activation: the IR tensor holding it, its ONNX dims and axis
letters). Quantized graphs add a width in bits to parameters and features.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod

import numpy as np
from onnx import TensorProto

from hwsim.workload.ir import NO_FRAMES, NO_PADDING, FrameWindow, Padding, Shape

DEFAULT_DOMAINS = ("", "ai.onnx")  # the standard operator set's names
SIGNAL = "NCW"  # a 1-D signal (audio): channels × length, modelled as a map of height 1
VOLUME = "NCDHW"  # a clip (video): channels × frames × height × width, windows slide along all three

# ONNX integer element types and their widths: the storage of quantized weights and activations.
INTEGER_BITS: dict[int, int] = {
    TensorProto.INT8: 8, TensorProto.UINT8: 8, TensorProto.INT16: 16, TensorProto.UINT16: 16,
    TensorProto.INT32: 32, TensorProto.UINT32: 32, TensorProto.INT4: 4, TensorProto.UINT4: 4,
}


@dataclass(frozen=True)
class Param:
    """A tensor whose shape is known but whose values are never needed (a weight).

    `bits` is its width when stored as integers (a quantized weight), else None.
    """

    dims: tuple[int, ...]
    bits: int | None = None


@dataclass(frozen=True)
class Feature:
    """An activation: the IR tensor holding it, its ONNX dims (batch 1) and axis letters.

    Letters: N, C, H, W; D for a clip's frames; F for a flattened C·H·W axis; G and K for the group and
    in-group channel axes of a channel shuffle; ? for an axis we cannot name.
    `pad` is a Pad not yet absorbed by the Conv or pool that reads it. `bits`
    is the width a QuantizeLinear gave it (None: not quantized).
    """

    tensor: str
    dims: tuple[int, ...]
    layout: str
    pad: Padding = NO_PADDING
    pad_name: str = ""
    bits: int | None = None


Value = np.ndarray | Param | Feature
Inputs = list[Value | None]  # a node's input values in order; None for an absent or skipped input


class Unsupported(Exception):
    """A node hwsim cannot model; the text says why, starting with a verb."""


def array_bits(a: np.ndarray) -> int | None:
    """The width of an integer array (a small quantized weight), None for floats."""
    return int(a.dtype.itemsize * 8) if np.issubdtype(a.dtype, np.integer) else None


def value_bits(v: Value | None) -> int | None:
    """The integer width of a value, None if it is a float (or absent)."""
    if isinstance(v, np.ndarray):
        return array_bits(v)
    return None if v is None else v.bits


def dims_of(v: Value | None) -> tuple[int, ...]:
    if v is None:
        raise Unsupported("lacks an input it needs")
    if isinstance(v, np.ndarray):
        return tuple(v.shape)
    return v.dims


def ir_shape(dims: Sequence[int], layout: str) -> Shape:
    """The C×H×W (×D frames) shape of a feature; vectors count as C×1×1, other tensors as last axis × the rest × 1."""
    if all(ch in layout for ch in "CHW"):
        frames = dims[layout.index("D")] if "D" in layout else 1
        return Shape(dims[layout.index("C")], dims[layout.index("H")], dims[layout.index("W")], frames)
    if layout == SIGNAL:
        return Shape(dims[1], 1, dims[2])
    if len(dims) <= 2:
        return Shape(prod(dims), 1, 1)
    return Shape(dims[-1], prod(dims[:-1]), 1)


def rows_shape(dims: Sequence[int], layout: str) -> Shape:
    """A tensor read row by row along its last axis: that axis as channels, the rest as pixels."""
    if layout.endswith("C") and "H" in layout and "W" in layout:
        return ir_shape(dims, layout)
    return Shape(dims[-1], prod(dims[:-1]), 1)


def default_layout(rank: int) -> str:
    return {4: "NCHW", 2: "NC"}.get(rank, "?" * rank)


def window_axes(layout: str) -> int:
    """The axes a window slides along in a feature of this layout: 1 along a signal, 3 in a clip, else 2."""
    return {SIGNAL: 1, VOLUME: 3}.get(layout, 2)


def present(ins: Inputs, index: int) -> bool:
    return index < len(ins) and ins[index] is not None


def as_feature(v: Value | None) -> Feature:
    """The feature map an op on feature maps reads as its data input."""
    if not isinstance(v, Feature):
        raise Unsupported("has a constant where hwsim expects a feature map")
    return v


def _window_values(values: Sequence[int], what: str, layout: str) -> tuple[int, ...]:
    """A window attribute with one value per window axis of the layout, checked."""
    axes = window_axes(layout)
    if len(values) != axes:
        over = {1: "a 1-D signal", 3: "a clip's frames, rows and columns"}.get(axes, "a 2-D map")
        raise Unsupported(f"has a {len(values)}-D {what} over {over}; give one value per window axis")
    return tuple(int(v) for v in values)


def window_pair(values: Sequence[int], what: str, layout: str) -> tuple[int, int]:
    """A window attribute's (h, w) pair: a 2-D one as given; a 1-D one over a signal (N×C×L, read as a map of
    height 1) as (1, value); a 3-D one over a clip without its frame value (`frame_value`)."""
    v = _window_values(values, what, layout)
    return (1, v[0]) if len(v) == 1 else (v[-2], v[-1])


def frame_value(values: Sequence[int], what: str, layout: str) -> int:
    """A 3-D window attribute's value along a clip's frames; 1 in other layouts (no window along frames)."""
    v = _window_values(values, what, layout)
    return v[0] if len(v) == 3 else 1


def window_pads(pads: Sequence[int], layout: str) -> tuple[Padding, tuple[int, int]]:
    """ONNX `pads` (every axis' begins, then every axis' ends) as a Padding of rows and columns (a signal's as left
    and right) and the frames padded before and after (0, 0 but in a clip)."""
    axes = window_axes(layout)
    if len(pads) != 2 * axes:
        raise Unsupported(f"has {len(pads)} pads over {axes} window axes; give a begin and an end per axis")
    p = [int(v) for v in pads]
    if axes == 1:
        return Padding(0, p[0], 0, p[1]), (0, 0)
    if axes == 3:
        return Padding(p[1], p[2], p[4], p[5]), (p[0], p[3])
    return Padding(*p), (0, 0)


def frame_window(kernel: int, stride: int, dilation: int, pads: tuple[int, int]) -> FrameWindow:
    """The window along frames; NO_FRAMES when it is the identity (a 2-D kernel on every frame)."""
    window = FrameWindow(kernel, stride, dilation, pads[0], pads[1])
    return NO_FRAMES if window == NO_FRAMES else window


def frames_of(x: Feature) -> int:
    """A clip's frames; 1 for other features."""
    return x.dims[x.layout.index("D")] if "D" in x.layout else 1


def spatial(x: Feature) -> tuple[int, int]:
    """A map's (height, width); a signal's is (1, length)."""
    if x.layout == SIGNAL:
        return (1, x.dims[2])
    return (x.dims[x.layout.index("H")], x.dims[x.layout.index("W")])
