"""Constant folding for the ONNX importer: numpy versions of the shape-arithmetic ops.

Exporters compute reshape targets, resize sizes and pads with small subgraphs
(PyTorch's Shape → Gather → Unsqueeze → Concat → Reshape before a flatten).
Evaluating those subgraphs on the values we know turns them back into plain
numbers. Each fold function takes the node and its input arrays (None for an
absent optional input) and returns one array per output.

Operands that moved from attributes to inputs between opsets (Squeeze axes,
Slice starts, Pad pads, Clip bounds...) are read by `operand`: the input when
the node has it, else the attribute, which covers every opset from 7 to 21.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from hwsim.errors import NetworkError
from hwsim.vocab import ceil_div

Array = np.ndarray
Args = Sequence[Any]  # input arrays, None for an absent optional input


@dataclass(frozen=True)
class OnnxNode:
    """One ONNX node with its attributes decoded once."""

    op: str
    domain: str
    name: str  # readable base name for the layers it creates
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict[str, Any]
    opset: int

    def attr_int(self, name: str, default: int) -> int:
        value = self.attrs.get(name, default)
        if not _is_int(value):
            raise NetworkError(f"node {self.name!r} ({self.op}): attribute {name} is {value!r}, not an integer; "
                               "fix the model")
        return int(value)

    def attr_float(self, name: str, default: float) -> float:
        return float(self.attrs.get(name, default))

    def attr_ints(self, name: str, default: Sequence[int] = ()) -> tuple[int, ...]:
        values = self.attrs.get(name, default)
        if not isinstance(values, (list, tuple)) or not all(_is_int(v) for v in values):
            raise NetworkError(f"node {self.name!r} ({self.op}): attribute {name} is {values!r}, not a list of "
                               "integers; fix the model")
        return tuple(int(v) for v in values)

    def attr_str(self, name: str, default: str) -> str:
        value = self.attrs.get(name, default)
        return value.decode() if isinstance(value, bytes) else str(value)


def _is_int(value: object) -> bool:
    """An integer attribute value (ONNX INT/INTS decode to int; a FLOAT given where an INT belongs does not)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def ints(a: Array | Sequence[int]) -> tuple[int, ...]:
    """A 0-d or 1-d integer array as a tuple of Python ints."""
    return tuple(int(v) for v in np.asarray(a).reshape(-1))


def required(node: OnnxNode, args: Args, index: int, attr: str) -> Array:
    """Like `operand`, for operands the op cannot do without."""
    value = operand(node, args, index, attr)
    if value is None:
        raise ValueError(f"{node.op} without '{attr}'")
    return value


def operand(node: OnnxNode, args: Args, index: int, attr: str) -> Array | None:
    """An operand passed as input `index` (newer opsets) or attribute `attr` (older ones)."""
    if index < len(args) and args[index] is not None:
        given: Array = args[index]
        return given
    if attr in node.attrs:
        value = node.attrs[attr]
        return numpy_helper.to_array(value) if isinstance(value, TensorProto) else np.asarray(value)
    return None


def virtual(dims: Sequence[int]) -> Array:
    """A zero-memory stand-in array of the given shape, for shape-only evaluation."""
    return np.broadcast_to(np.zeros((), np.float32), tuple(dims))


def tensor_value(t: TensorProto) -> Array:
    return numpy_helper.to_array(t)


# ----- individual ops ---------------------------------------------------------------
def _constant(node: OnnxNode, args: Args) -> list[Array]:
    a = node.attrs
    if "value" in a:
        return [tensor_value(a["value"])]
    if "value_float" in a:
        return [np.array(a["value_float"], np.float32)]
    if "value_floats" in a:
        return [np.array(a["value_floats"], np.float32)]
    if "value_int" in a:
        return [np.array(a["value_int"], np.int64)]
    if "value_ints" in a:
        return [np.array(a["value_ints"], np.int64)]
    raise ValueError("Constant without a numeric value attribute")


def shape_of(node: OnnxNode, dims: Sequence[int]) -> Array:
    """Shape's output for an input of `dims`, honouring opset-15 start/end."""
    start = node.attr_int("start", 0)
    end = node.attrs.get("end")
    picked = tuple(dims)[start:None if end is None else int(end)]
    return np.array(picked, np.int64)


def _gather(node: OnnxNode, args: Args) -> list[Array]:
    return [np.take(args[0], np.asarray(args[1]).astype(np.int64), axis=node.attr_int("axis", 0))]


def _unsqueeze(node: OnnxNode, args: Args) -> list[Array]:
    axes = ints(required(node, args, 1, "axes"))
    return [np.expand_dims(args[0], axes)]


def _squeeze(node: OnnxNode, args: Args) -> list[Array]:
    axes = operand(node, args, 1, "axes")
    if axes is None or axes.size == 0:
        return [np.squeeze(args[0])]
    return [np.squeeze(args[0], axis=ints(axes))]


def _concat(node: OnnxNode, args: Args) -> list[Array]:
    parts = [a for a in args if a is not None]
    return [np.concatenate(parts, axis=node.attr_int("axis", 0)).astype(parts[0].dtype, copy=False)]


def slice_index(node: OnnxNode, args: Args, rank: int) -> tuple[slice, ...]:
    """Slice's starts/ends/axes/steps (attributes ≤ opset 9, inputs ≥ 10) as Python slices."""
    starts = ints(required(node, args, 1, "starts"))
    ends = ints(required(node, args, 2, "ends"))
    axes_arr = operand(node, args, 3, "axes")
    axes = ints(axes_arr) if axes_arr is not None else tuple(range(len(starts)))
    steps_arr = operand(node, args, 4, "steps")
    steps = ints(steps_arr) if steps_arr is not None else (1,) * len(starts)
    index = [slice(None)] * rank
    for axis, start, end, step in zip(axes, starts, ends, steps):
        index[axis % rank] = slice(start, end, step)
    return tuple(index)


def _slice(node: OnnxNode, args: Args) -> list[Array]:
    return [args[0][slice_index(node, args, args[0].ndim)]]


def _cast(node: OnnxNode, args: Args) -> list[Array]:
    return [args[0].astype(helper.tensor_dtype_to_np_dtype(node.attr_int("to", TensorProto.FLOAT)))]


def _cast_like(node: OnnxNode, args: Args) -> list[Array]:
    return [args[0].astype(args[1].dtype)]


def reshape_target(in_dims: Sequence[int], shape: Sequence[int], allowzero: bool) -> tuple[int, ...]:
    """Reshape's target with 0 (copy the input dim) and -1 (infer) resolved."""
    out = [in_dims[i] if v == 0 and not allowzero else v for i, v in enumerate(shape)]
    if -1 in out:
        known = int(np.prod([v for v in out if v != -1]))
        total = int(np.prod(in_dims))
        out[out.index(-1)] = total // known if known else 0
    return tuple(out)


def _reshape(node: OnnxNode, args: Args) -> list[Array]:
    target = reshape_target(args[0].shape, ints(required(node, args, 1, "shape")), bool(node.attr_int("allowzero", 0)))
    return [np.reshape(args[0], target)]


def _flatten(node: OnnxNode, args: Args) -> list[Array]:
    dims = args[0].shape
    axis = node.attr_int("axis", 1) % (len(dims) + 1) if dims else 0
    return [np.reshape(args[0], (int(np.prod(dims[:axis])), int(np.prod(dims[axis:]))))]


def _transpose(node: OnnxNode, args: Args) -> list[Array]:
    perm = node.attr_ints("perm") or tuple(reversed(range(args[0].ndim)))
    return [np.transpose(args[0], perm)]


def _expand(node: OnnxNode, args: Args) -> list[Array]:
    shape = np.broadcast_shapes(args[0].shape, ints(args[1]))
    return [np.broadcast_to(args[0], shape)]


def _tile(node: OnnxNode, args: Args) -> list[Array]:
    return [np.tile(args[0], ints(args[1]))]


def _constant_of_shape(node: OnnxNode, args: Args) -> list[Array]:
    value = node.attrs.get("value")
    fill = tensor_value(value).reshape(-1) if value is not None else np.zeros(1, np.float32)
    return [np.full(ints(args[0]), fill[0], dtype=fill.dtype)]


def _range(node: OnnxNode, args: Args) -> list[Array]:
    start, limit, delta = (np.asarray(a).reshape(()) for a in args[:3])
    return [np.arange(start.item(), limit.item(), delta.item()).astype(start.dtype)]


def _cumsum(node: OnnxNode, args: Args) -> list[Array]:
    """CumSum along the axis input (EdgeNeXt's positional grid is a cumulative sum of ones)."""
    x = np.asarray(args[0])
    axis = int(np.asarray(args[1]).reshape(-1)[0]) % max(x.ndim, 1)
    if node.attr_int("reverse", 0):
        x = np.flip(x, axis)
    total = np.cumsum(x, axis=axis, dtype=x.dtype)
    if node.attr_int("exclusive", 0):
        total = total - x
    return [np.flip(total, axis) if node.attr_int("reverse", 0) else total]


def _where(node: OnnxNode, args: Args) -> list[Array]:
    return [np.asarray(np.where(args[0], args[1], args[2]))]


def _clip(node: OnnxNode, args: Args) -> list[Array]:
    """Clip with bounds as inputs (opset 11+) or attributes; timm's TF-style "same" padding uses it."""
    lo, hi = operand(node, args, 1, "min"), operand(node, args, 2, "max")
    x = args[0]
    low = lo.astype(x.dtype) if lo is not None else None
    high = hi.astype(x.dtype) if hi is not None else None
    return [np.clip(x, low, high) if low is not None or high is not None else x]


def _divide(a: Array, b: Array) -> Array:
    quotient: Array = np.true_divide(a, b)
    if np.issubdtype(a.dtype, np.integer):
        truncated: Array = np.trunc(quotient)  # ONNX integer Div truncates
        return truncated.astype(a.dtype)
    return quotient.astype(a.dtype, copy=False)


def _mod(node: OnnxNode, args: Args) -> list[Array]:
    fn = np.fmod if node.attr_int("fmod", 0) else np.mod
    return [fn(args[0], args[1])]


def split_sizes(node: OnnxNode, args: Args, length: int) -> list[int]:
    """Split's part lengths: the `split` input (≥ 13) or attribute, else equal parts."""
    given = operand(node, args, 1, "split")
    if given is not None and given.size:
        return list(ints(given))
    parts = node.attr_int("num_outputs", len(node.outputs))
    step = ceil_div(length, parts)
    return [min(step, length - i * step) for i in range(parts)]


def _split(node: OnnxNode, args: Args) -> list[Array]:
    axis = node.attr_int("axis", 0)
    sizes = split_sizes(node, args, args[0].shape[axis])
    return np.split(args[0], np.cumsum(sizes)[:-1], axis=axis)


def reduce_axes(node: OnnxNode, args: Args, rank: int) -> tuple[int, ...]:
    """A Reduce* node's axes (attribute before opset 18, input after), all axes if empty."""
    axes = operand(node, args, 1, "axes")
    if axes is None or axes.size == 0:
        return () if node.attr_int("noop_with_empty_axes", 0) else tuple(range(rank))
    return tuple(a % rank for a in ints(axes))


def _reducer(fn: Callable[..., Array]) -> Callable[[OnnxNode, Args], list[Array]]:
    def fold(node: OnnxNode, args: Args) -> list[Array]:
        axes = reduce_axes(node, args, args[0].ndim)
        keep = bool(node.attr_int("keepdims", 1))
        return [np.asarray(fn(args[0], axis=axes, keepdims=keep)).astype(args[0].dtype, copy=False)]

    return fold


def _elementwise(fn: Callable[..., Array]) -> Callable[[OnnxNode, Args], list[Array]]:
    def fold(node: OnnxNode, args: Args) -> list[Array]:
        return [reduce(fn, [a for a in args if a is not None])]

    return fold


def _unary(fn: Callable[[Array], Array]) -> Callable[[OnnxNode, Args], list[Array]]:
    def fold(node: OnnxNode, args: Args) -> list[Array]:
        return [np.asarray(fn(args[0])).astype(args[0].dtype, copy=False)]

    return fold


SCATTER_REDUCTIONS: dict[str, np.ufunc] = {"add": np.add, "mul": np.multiply, "max": np.maximum,
                                            "min": np.minimum}


def _scatter(node: OnnxNode, data: Array, index: tuple[Array, ...], updates: Array) -> Array:
    """`data` with `updates` written (or reduced, opset 16+) at `index`, as ScatterND and ScatterElements do."""
    out = np.array(data, copy=True)
    reduction = node.attr_str("reduction", "none")
    if reduction == "none":
        out[index] = updates
    elif reduction in SCATTER_REDUCTIONS:
        SCATTER_REDUCTIONS[reduction].at(out, index, updates)
    else:
        raise ValueError(f"reduction '{reduction}'")
    return out


def _scatter_nd(node: OnnxNode, args: Args) -> list[Array]:
    """ScatterND: each last-axis row of `indices` addresses one slice of the data (PyTorch's slice assignment,
    e.g. Swin's shifted-window attention mask)."""
    data, indices, updates = args[0], np.asarray(args[1]).astype(np.int64), np.asarray(args[2])
    depth = indices.shape[-1]
    rows = indices.reshape(-1, depth)
    return [_scatter(node, data, tuple(rows.T), updates.reshape(rows.shape[0], *data.shape[depth:]))]


def _scatter_elements(node: OnnxNode, args: Args) -> list[Array]:
    """ScatterElements (and Scatter, opset ≤ 10): `indices` replaces the coordinate along `axis`."""
    data, indices, updates = args[0], np.asarray(args[1]).astype(np.int64), np.asarray(args[2])
    axis = node.attr_int("axis", 0) % data.ndim
    grid: list[Array] = list(np.indices(indices.shape, sparse=True))
    grid[axis] = indices % data.shape[axis]
    return [_scatter(node, data, tuple(np.broadcast_arrays(*grid)), updates)]


def _identity(node: OnnxNode, args: Args) -> list[Array]:
    """Identity and Dropout (inference): the input, plus an all-true mask if asked for."""
    return [args[0], np.ones(args[0].shape, bool)][: len(node.outputs)]


FOLDS: dict[str, Callable[[OnnxNode, Args], list[Array]]] = {
    "Constant": _constant,
    "Gather": _gather,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Concat": _concat,
    "Slice": _slice,
    "Cast": _cast,
    "CastLike": _cast_like,
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Transpose": _transpose,
    "Expand": _expand,
    "Tile": _tile,
    "ConstantOfShape": _constant_of_shape,
    "Range": _range,
    "CumSum": _cumsum,
    "Where": _where,
    "ScatterND": _scatter_nd,
    "ScatterElements": _scatter_elements,
    "Scatter": _scatter_elements,
    "Split": _split,
    "Identity": _identity,
    "Dropout": _identity,
    "Mod": _mod,
    "Clip": _clip,
    "Add": _elementwise(np.add),
    "Sub": _elementwise(np.subtract),
    "Mul": _elementwise(np.multiply),
    "Div": _elementwise(_divide),
    "Pow": _elementwise(np.power),
    "Sum": _elementwise(np.add),
    "Max": _elementwise(np.maximum),
    "Min": _elementwise(np.minimum),
    "Equal": _elementwise(np.equal),
    "Less": _elementwise(np.less),
    "LessOrEqual": _elementwise(np.less_equal),
    "Greater": _elementwise(np.greater),
    "GreaterOrEqual": _elementwise(np.greater_equal),
    "And": _elementwise(np.logical_and),
    "Or": _elementwise(np.logical_or),
    "Xor": _elementwise(np.logical_xor),
    "Not": _unary(np.logical_not),
    "Neg": _unary(np.negative),
    "Abs": _unary(np.abs),
    "Sqrt": _unary(np.sqrt),
    "Floor": _unary(np.floor),
    "Ceil": _unary(np.ceil),
    "Round": _unary(np.round),
    "Sign": _unary(np.sign),
    "Exp": _unary(np.exp),
    "Log": _unary(np.log),
    "Reciprocal": _unary(np.reciprocal),
    "ReduceProd": _reducer(np.prod),
    "ReduceSum": _reducer(np.sum),
    "ReduceMean": _reducer(np.mean),
    "ReduceMax": _reducer(np.max),
    "ReduceMin": _reducer(np.min),
    "ReduceL1": _reducer(lambda a, axis, keepdims: np.sum(np.abs(a), axis=axis, keepdims=keepdims)),
    "ReduceL2": _reducer(lambda a, axis, keepdims: np.sqrt(np.sum(np.square(a), axis=axis, keepdims=keepdims))),
    "ReduceSumSquare": _reducer(lambda a, axis, keepdims: np.sum(np.square(a), axis=axis, keepdims=keepdims)),
    "Sin": _unary(np.sin),
    "Cos": _unary(np.cos),
    "Tanh": _unary(np.tanh),
}

# Ops whose output is a view of their first input: on weights (whose values are
# not loaded) they run on a `virtual` array to get the output shape for free.
VIEW_OPS = frozenset({"Identity", "Dropout", "Unsqueeze", "Squeeze", "Reshape", "Flatten", "Transpose",
                      "Expand", "Slice"})
# Ops whose output has their first input's shape.
SAME_SHAPE_OPS = frozenset({"Cast", "CastLike", "Neg", "Abs", "Sqrt", "Reciprocal", "Exp", "Log", "Floor",
                            "Ceil", "Round", "Sign", "Not", "DequantizeLinear", "QuantizeLinear", "Relu",
                            "Sigmoid", "Tanh", "Clip", "ScatterND", "ScatterElements", "Scatter", "Sin", "Cos",
                            "CumSum", "Erf", "LeakyRelu", "Elu", "Selu", "Softplus", "Softsign", "HardSigmoid",
                            "HardSwish", "Gelu", "Mish", "Softmax", "LogSoftmax",
                            # normalisations of a weight (NFNet's weight standardisation): a weight again
                            "BatchNormalization", "InstanceNormalization", "LayerNormalization",
                            "GroupNormalization", "LpNormalization"})
# Element-wise ops whose output has the broadcast shape of their inputs.
BROADCAST_OPS = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Sum", "Max", "Min", "Mod", "Equal", "Less",
                           "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor", "Where"})

# Ops that only move elements: an element's mark (computed from a tensor's shape) moves with it.
MOVING_OPS = frozenset({"Concat", "Slice", "Gather", "Unsqueeze", "Squeeze", "Reshape", "Flatten", "Transpose",
                        "Expand", "Tile", "Split"})
MARK_KEEPING_OPS = frozenset({"Cast", "CastLike", "Identity", "Dropout", "Floor", "Ceil", "Round", "Neg", "Abs"})


def fold_marks(node: OnnxNode, args: Args, marks: Sequence[Array | None], results: Sequence[Array]) -> list[Array]:
    """Which elements of each output of a folded node derive from some tensor's shape, given the same for its
    inputs (None: none do): moving ops carry the marks along, element-wise ops mark an element if any of its
    operands is marked, anything else marks a whole output if any input element is marked."""
    full = [np.zeros(np.shape(a), bool) if m is None else m for a, m in zip(args, marks)]
    if node.op in MARK_KEEPING_OPS:
        return [full[0]]
    if node.op in MOVING_OPS:
        data = range(len(args)) if node.op == "Concat" else (0,)
        return [np.asarray(r, bool) for r in FOLDS[node.op](node, [full[i] if i in data else a
                                                                    for i, a in enumerate(args)])]
    if node.op in BROADCAST_OPS:
        return [np.broadcast_to(reduce(np.logical_or, [m for m, a in zip(full, args) if a is not None]),
                                np.shape(results[0]))]
    marked = any(m.any() for m in full)
    return [np.full(np.shape(r), marked) for r in results]
