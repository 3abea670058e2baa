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

from hwsim.workload.ir import NO_PADDING, Padding, Shape

DEFAULT_DOMAINS = ("", "ai.onnx")  # the standard operator set's names
SIGNAL = "NCW"  # a 1-D signal (audio): channels × length, modelled as a map of height 1

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

    Letters: N, C, H, W; F for a flattened C·H·W axis; G and K for the group and
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
    """The C×H×W shape of a feature; vectors count as C×1×1, other tensors as last axis × the rest × 1."""
    if all(ch in layout for ch in "CHW"):
        return Shape(dims[layout.index("C")], dims[layout.index("H")], dims[layout.index("W")])
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


def present(ins: Inputs, index: int) -> bool:
    return index < len(ins) and ins[index] is not None


def as_feature(v: Value | None) -> Feature:
    """The feature map an op on feature maps reads as its data input."""
    if not isinstance(v, Feature):
        raise Unsupported("has a constant where hwsim expects a feature map")
    return v


def window_pair(values: Sequence[int], what: str, signal: bool = False) -> tuple[int, int]:
    """A window attribute as an (h, w) pair: a 2-D one as given; a 1-D one over a signal (N×C×L, read as a map of
    height 1) as (1, value)."""
    if signal:
        if len(values) != 1:
            raise Unsupported(f"has a {len(values)}-D {what} over a 1-D signal; give one value per window axis")
        return (1, int(values[0]))
    if len(values) != 2:
        raise Unsupported(f"has a {len(values)}-D {what}; hwsim models 1-D and 2-D windows")
    return (int(values[0]), int(values[1]))


def window_pads(pads: Sequence[int], signal: bool) -> Padding:
    """ONNX `pads` (every axis' begins, then every axis' ends) as a Padding; a signal's as left and right."""
    if signal:
        if len(pads) != 2:
            raise Unsupported(f"has {len(pads)} pads over a 1-D signal; give its begin and end")
        return Padding(0, int(pads[0]), 0, int(pads[1]))
    if len(pads) != 4:
        raise Unsupported(f"has {len(pads)} pads; hwsim models 1-D and 2-D windows")
    return Padding(*(int(p) for p in pads))


def spatial(x: Feature) -> tuple[int, int]:
    """A map's (height, width); a signal's is (1, length)."""
    if x.layout == SIGNAL:
        return (1, x.dims[2])
    return (x.dims[x.layout.index("H")], x.dims[x.layout.index("W")])
