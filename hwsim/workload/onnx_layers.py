"""ONNX handlers for the layers of transformers, normalisations and general tensors.

Matrix products (per-pixel and per-token linear layers, attention's
activation × activation products), layer/instance/group normalisation,
reductions, element-wise arithmetic with broadcasting, concatenation along any
axis (with a constant such as a class token), gathers and slices of any axis,
Expand, and Resize to any size. Each handler reads the node's inputs as the
importer tracks them and adds layers through the importer's `GraphBuilder`,
both reached through `hwsim.workload.onnx_context.ImportContext`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from math import prod

import numpy as np

from hwsim.errors import NetworkError, ShapeError
from hwsim.workload.ir import WEIGHTED_KINDS, Padding
from hwsim.workload.onnx_context import Handler, ImportContext
from hwsim.workload.onnx_fold import (
    OnnxNode,
    ints,
    operand,
    reduce_axes,
    slice_index,
    split_sizes,
)
from hwsim.workload.onnx_values import (
    Feature,
    Inputs,
    Unsupported,
    as_feature,
    dims_of,
    ir_shape,
    present,
    rows_shape,
)


# ----- matrix products --------------------------------------------------------------------------
def gemm(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    """Gemm/MatMul: of two activations a matmul layer; of an activation by constant weights a fully
    connected layer (one vector) or a linear layer on every row (pixels of an NHWC map, tokens)."""
    a, b = ins[0], ins[1]
    if isinstance(a, Feature) and isinstance(b, Feature):
        _matmul(imp, node, a, b)
        return
    if not isinstance(a, Feature):
        raise Unsupported("multiplies a constant by a feature map; hwsim maps feature × weights and "
                          "feature × feature")
    if node.attr_int("transA", 0):
        raise Unsupported("transposes its feature input (transA=1)")
    w = imp.weight_dims(b, 2)
    k, n = (w[1], w[0]) if node.attr_int("transB", 0) else w
    bias = node.op == "Gemm" and present(ins, 2)
    if prod(a.dims[:-1]) == 1:
        _fully_connected(imp, node, a, w, k, n, bias)
        return
    if a.dims[-1] != k:
        raise ShapeError(f"{imp.where(node)}: weights {list(w)} expect rows of {k} but the feature's rows "
                         f"have {a.dims[-1]} ({list(a.dims)}); the model is inconsistent")
    stored = imp.b.shape(a.tensor)  # its producer's map when its channels are the rows (ViT's patch tokens)
    rows = stored if stored.c == k else rows_shape(a.dims, a.layout)
    tensor = imp.b.linear(imp.layer_name(node), a.tensor, rows, n, bias=bias)
    dims = (*a.dims[:-1], n)
    imp.produce(node, 0, tensor, dims, a.layout if a.layout.endswith("C") else "?" * len(dims))


def _fully_connected(imp: ImportContext, node: OnnxNode, x: Feature, w: tuple[int, ...], k: int, n: int,
                     bias: bool) -> None:
    elements = prod(x.dims)
    if elements != k:
        raise ShapeError(
            f"{imp.where(node)}: weights {list(w)} expect {k} inputs but the feature has {elements} "
            f"({list(x.dims)}); the input size probably differs from the one the model was exported for"
        )
    name = imp.layer_name(node)
    imp.weight_sources[name] = (node.inputs[1], not node.attr_int("transB", 0))  # K × N unless transB
    imp.produce_vector(node, imp.b.fc(name, x.tensor, n, bias=bias))


def _matmul(imp: ImportContext, node: OnnxNode, a: Feature, b: Feature) -> None:
    """A product of two activations, batched over leading axes (heads, windows)."""
    if len(a.dims) < 2 or len(b.dims) < 2:
        raise Unsupported("multiplies 1-D feature maps; hwsim maps matrices")
    if node.attr_int("transA", 0) or node.attr_int("transB", 0):
        raise Unsupported("transposes a feature operand inside a Gemm")
    k = a.dims[-1]
    if b.dims[-2] != k:
        raise ShapeError(f"{imp.where(node)}: multiplies {list(a.dims)} by {list(b.dims)}; the inner "
                         "dimensions differ, the model is inconsistent")
    try:
        batch = tuple(np.broadcast_shapes(a.dims[:-2], b.dims[:-2]))
    except ValueError:
        raise Unsupported(f"multiplies {list(a.dims)} by {list(b.dims)}, whose batch axes do not broadcast") from None
    dims = (*batch, a.dims[-2], b.dims[-1])
    layout = "?" * len(dims)
    tensor = imp.b.matmul(imp.layer_name(node), a.tensor, b.tensor, ir_shape(dims, layout), k, prod(batch),
                          a.dims[-2])
    imp.produce(node, 0, tensor, dims, layout)


# ----- normalisation and reductions ---------------------------------------------------------------
def _norm(imp: ImportContext, node: OnnxNode, x: Feature, groups: int, affine: bool = True) -> None:
    if any(imp.consumers[o] for o in node.outputs[1:] if o):
        raise Unsupported("has its mean or variance read (training outputs); hwsim models inference")
    tensor = imp.b.norm(imp.layer_name(node), x.tensor, groups, affine)
    imp.produce(node, 0, tensor, x.dims, x.layout)


def layer_norm(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    """LayerNormalization: one set per index of the axes before `axis`."""
    x = as_feature(ins[0])
    axis = node.attr_int("axis", -1) % len(x.dims)
    _norm(imp, node, x, prod(x.dims[:axis]))


def instance_norm(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    """InstanceNormalization: one set per channel (PyTorch's GroupNorm exports as one over a reshape)."""
    x = as_feature(ins[0])
    _norm(imp, node, x, prod(x.dims[:2]))


def group_norm(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    """GroupNormalization (opset 18): `num_groups` sets per image."""
    x = as_feature(ins[0])
    _norm(imp, node, x, x.dims[0] * node.attr_int("num_groups", 1))


def decomposed_layer_norm(imp: ImportContext, node: OnnxNode, x: Feature, axes: Sequence[int]) -> None:
    """ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div over `axes`: a norm; its affine fuses in after."""
    normalised = {a % len(x.dims) for a in axes}
    groups = prod(d for i, d in enumerate(x.dims) if i not in normalised)
    _norm(imp, node, x, groups, affine=False)


def reduce(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    """ReduceMean/ReduceMax over height and width (and a clip's frames) is a global pool; other reductions a reduce
    layer."""
    x = as_feature(ins[0])
    axes = reduce_axes(node, imp.consts(node, ins), len(x.dims))
    if not axes:
        imp.alias(node, x)
        return
    keep = [i for i in range(len(x.dims)) if i not in axes]
    if node.attr_int("keepdims", 1):
        dims, layout = tuple(1 if i in axes else d for i, d in enumerate(x.dims)), x.layout
    else:
        dims, layout = tuple(x.dims[i] for i in keep), "".join(x.layout[i] for i in keep)
    name = imp.layer_name(node)
    if "".join(sorted(x.layout[a] for a in axes)) in ("HW", "DHW") and node.op in ("ReduceMean", "ReduceMax"):
        make = imp.b.global_max_pool if node.op == "ReduceMax" else imp.b.global_avg_pool
        tensor = make(name, x.tensor)
    else:
        tensor = imp.b.reduce(name, x.tensor, ir_shape(dims, layout))
    imp.produce(node, 0, tensor, dims, layout)


# ----- element-wise arithmetic ----------------------------------------------------------------------
def arithmetic(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    """Add/Sub/Sum and Mul/Div: a layer between features, a folded affine with a constant."""
    feats = [v for v in ins if isinstance(v, Feature)]
    if len(feats) == 1 and len(ins) == 1:
        imp.alias(node, feats[0])
    elif len(feats) == 1:
        _affine(imp, node, ins, feats[0])
    elif len(feats) != len(ins):
        raise Unsupported("mixes two or more feature maps with a constant")
    else:
        try:
            dims = tuple(np.broadcast_shapes(*(f.dims for f in feats)))
        except ValueError:
            raise Unsupported(f"combines {', '.join(str(list(f.dims)) for f in feats)}, which do not "
                              "broadcast") from None
        longest = max(feats, key=lambda f: len(f.dims))
        same = len({f.layout for f in feats}) == 1 and all(c in longest.layout for c in "CHW")
        layout = longest.layout if same or len({f.layout for f in feats}) == 1 else "?" * len(dims)
        make = imp.b.mul if node.op in ("Mul", "Div") else imp.b.add
        out = None if same else ir_shape(dims, layout)
        tensor = make(imp.layer_name(node), [f.tensor for f in feats], out_shape=out)
        imp.produce(node, 0, tensor, dims, layout)


def _affine(imp: ImportContext, node: OnnxNode, ins: Inputs, x: Feature) -> None:
    other = next(v for v in ins if v is not x)
    if tuple(np.broadcast_shapes(x.dims, dims_of(other))) != x.dims:
        raise Unsupported(f"broadcasts a {list(x.dims)} feature map against a larger {list(dims_of(other))} constant")
    if node.op == "Div" and ins[1] is x:
        imp.pointwise(node, x, activation="reciprocal")
        return
    producer = imp.fusable(x)
    is_bias = (node.op in ("Add", "Sub", "Sum") and producer is not None and producer.kind in WEIGHTED_KINDS
               and not producer.has_bias and not producer.fused_bn)
    imp.pointwise(node, x, bias=is_bias, bn=not is_bias)


def expand(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    """Expand of a feature: broadcasting height and width by whole factors copies it (a nearest upsample)."""
    x = as_feature(ins[0])
    target = imp.const(node, ins, 1)
    if target is None:
        raise Unsupported("gives no target shape")
    dims = tuple(np.broadcast_shapes(x.dims, ints(target)))
    if dims == x.dims:
        imp.alias(node, x)
        return
    grown = [i for i, (a, b) in enumerate(zip(x.dims, dims)) if a != b]
    if len(dims) != len(x.dims) or any(x.layout[i] not in "HW" for i in grown) or "C" not in x.layout:
        # a broadcast along another axis (a norm spread over its row, as XCA's normalisation does): the reader
        # takes the copies, so the expand itself is a zero-cost view at the broadcast shape
        layout = x.layout if len(dims) == len(x.dims) else "?" * len(dims)
        tensor = imp.b.passthrough(imp.layer_name(node), [x.tensor], ir_shape(dims, layout), "Expand")
        imp.produce(node, 0, tensor, dims, layout)
        return
    h, w = x.layout.index("H"), x.layout.index("W")
    tensor = imp.b.upsample(imp.layer_name(node), x.tensor, (dims[h] // x.dims[h], dims[w] // x.dims[w]))
    imp.produce(node, 0, tensor, dims, x.layout)


# ----- concatenation, slices, gathers -------------------------------------------------------------
def concat(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    """Concat: along channels as before; along any other axis, or with a constant part (a class or
    distillation token, counted as parameters), as a concat of explicit shapes."""
    parts = [v for v in ins if v is not None]
    feats = [v for v in parts if isinstance(v, Feature)]
    rank = len(feats[0].dims)
    if any(len(dims_of(v)) != rank for v in parts):
        raise Unsupported("concatenates tensors of different ranks")
    axis = node.attr_int("axis", 1) % rank
    dims = list(feats[0].dims)
    dims[axis] = sum(dims_of(v)[axis] for v in parts)
    layouts = {f.layout for f in feats}
    layout = feats[0].layout if len(layouts) == 1 else "?" * rank
    name = imp.layer_name(node)
    if len(feats) == len(parts) and len(layouts) == 1 and layout[axis] == "C" and "H" in layout and "W" in layout:
        tensor = imp.b.concat(name, [f.tensor for f in feats])
    else:
        views = [ir_shape(f.dims, f.layout) for f in feats]
        tensor = imp.b.join(name, [f.tensor for f in feats], ir_shape(dims, layout), views)
    imp.produce(node, 0, tensor, dims, layout)


def crop(imp: ImportContext, node: OnnxNode, x: Feature, k: int, index: Sequence[slice]) -> None:
    """One output of Slice/Split/Gather: a `slice` layer over a range of any axis but the batch."""
    dims, window = [], {"H": (0, 0), "W": (0, 0)}
    for axis, (d, sl) in enumerate(zip(x.dims, index)):
        start, stop, step = sl.indices(d)
        n = len(range(start, stop, step))
        dims.append(n)
        letter = x.layout[axis]
        if n != d and letter not in "CHW?":
            raise Unsupported(f"slices axis {axis} ({letter} of {x.layout}); hwsim slices channels, height, width")
        if letter in "HW" and step == 1:
            window[letter] = (-start, -(d - stop))
    if tuple(dims) == x.dims:
        imp.alias(node, x, k=k)
        return
    padding = Padding(window["H"][0], window["W"][0], window["H"][1], window["W"][1])
    tensor = imp.b.slice(imp.layer_name(node, k), x.tensor, ir_shape(dims, x.layout), crop=padding)
    imp.produce(node, k, tensor, dims, x.layout)


def slice_(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    x = as_feature(ins[0])
    crop(imp, node, x, 0, slice_index(node, imp.consts(node, ins), len(x.dims)))


def split(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    x = as_feature(ins[0])
    axis = node.attr_int("axis", 0) % len(x.dims)
    if x.layout[axis] not in "CHW?":
        raise Unsupported(f"splits axis {axis} ({x.layout[axis]} of {x.layout}); hwsim splits channels, height, width")
    start = 0
    for k, size in enumerate(split_sizes(node, imp.consts(node, ins), x.dims[axis])):
        index = [slice(None)] * len(x.dims)
        index[axis] = slice(start, start + size)
        start += size
        if k < len(node.outputs) and node.outputs[k]:
            crop(imp, node, x, k, index)


def gather(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    """Gather of one run of consecutive indices along an axis of a feature: a slice whose axis takes the
    index's shape (a scalar drops it: q, k, v = qkv.unbind(0); dynamo's as_strided views keep all)."""
    x = as_feature(ins[0])
    index = imp.const(node, ins, 1)
    if index is None:
        raise Unsupported("gives no indices")
    axis = node.attr_int("axis", 0) % len(x.dims)
    picked = [i % x.dims[axis] for i in ints(index)]
    if picked and x.layout == "F" and picked != list(range(picked[0], picked[0] + len(picked))):
        _strided_view(imp, node, x, index)
        return
    if not picked or picked != list(range(picked[0], picked[0] + len(picked))):
        raise Unsupported("gathers scattered indices of a feature map; hwsim gathers one run of indices")
    dims = x.dims[:axis] + tuple(index.shape) + x.dims[axis + 1:]
    if len(picked) == x.dims[axis]:  # the whole axis in order: only a view
        imp.relayout(node, x, dims)
        return
    window = [slice(None)] * len(x.dims)
    window[axis] = slice(picked[0], picked[0] + len(picked))
    crop(imp, node, x, 0, window)
    out = imp.values[node.outputs[0]]
    assert isinstance(out, Feature)
    layout = {0: out.layout[:axis] + out.layout[axis + 1:], 1: out.layout}.get(index.ndim, "?" * len(dims))
    imp.values[node.outputs[0]] = replace(out, dims=dims, layout=layout)


def _strided_view(imp: ImportContext, node: OnnxNode, x: Feature, index: np.ndarray) -> None:
    """A Gather from a map flattened in C, H, W order whose indices enumerate a box of it in order (how the
    dynamo exporter writes `as_strided`): a crop of that box, shaped as the index."""
    s = imp.b.shape(x.tensor)
    flat = (np.asarray(index).reshape(-1) % s.elements).astype(np.int64)
    c, h, w = np.unravel_index(flat, (s.c, s.h, s.w))
    box = [(int(a.min()), int(a.max()) + 1) for a in (c, h, w)]
    expected = np.ravel_multi_index(np.meshgrid(*(np.arange(lo, hi) for lo, hi in box), indexing="ij"),
                                    (s.c, s.h, s.w)).reshape(-1)
    if not np.array_equal(flat, expected):
        raise Unsupported("gathers scattered indices of a feature map; hwsim gathers one run of indices or a box "
                          "of a flattened map")
    image = replace(x, dims=(1, s.c, s.h, s.w), layout="NCHW")
    crop(imp, node, image, 0, [slice(0, 1), *(slice(lo, hi) for lo, hi in box)])
    out = imp.values[node.outputs[0]]
    assert isinstance(out, Feature)
    shaped = tuple(int(d) for d in index.shape)
    layout = "NCHW" if shaped == (1, *(hi - lo for lo, hi in box)) else "?" * len(shaped)
    imp.values[node.outputs[0]] = replace(out, dims=shaped, layout=layout)


# ----- resize ----------------------------------------------------------------------------------------
MODES = {"nearest": "nearest", "linear": "linear", "bilinear": "linear", "cubic": "cubic", "bicubic": "cubic"}


def _resize_factors(imp: ImportContext, node: OnnxNode, ins: Inputs, x: Feature) -> dict[int, float]:
    """Output/input size per axis, from sizes (checked against --input) or scales."""
    args = imp.consts(node, ins)
    if node.op == "Upsample" or node.opset == 10:
        scales, sizes = operand(node, args, 1, "scales"), None
    else:
        scales, sizes = args[2] if len(args) > 2 else None, args[3] if len(args) > 3 else None
    rank = len(x.dims)
    axes = tuple(a % rank for a in node.attr_ints("axes")) or tuple(range(rank))  # opset 18 may name axes
    if sizes is not None and sizes.size:
        marks = imp.from_shape(node.inputs[3]).reshape(-1)
        fixed = [s for a, s, m in zip(axes, ints(sizes), marks) if x.layout[a] in "HW" and not m]
        if imp.input_changed and fixed:
            raise NetworkError(
                f"{imp.where(node)}: resizes to the fixed size {fixed} written when the model was exported, so "
                "--input cannot change the input size; export the model at the size you want (or with sizes "
                "computed from the input's shape), or drop --input")
        return {a: s / x.dims[a] for a, s in zip(axes, ints(sizes))}
    if scales is not None and scales.size:
        return {a: float(s) for a, s in zip(axes, scales.reshape(-1))}
    raise Unsupported("gives neither scales nor sizes")


def resize(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    """Upsample (opset 7-9) and Resize (10+) along height and width, by any factor, in any mode."""
    x = as_feature(ins[0])
    factors = _resize_factors(imp, node, ins, x)
    if "H" not in x.layout or "W" not in x.layout:
        raise Unsupported(f"resizes a {x.layout} tensor; hwsim resizes height and width only")
    for a, f in factors.items():
        if x.layout[a] not in "HW" and f != 1:
            raise Unsupported(f"scales axis {x.layout[a]} by {f:g}; hwsim resizes height and width only")
    mode = MODES.get(node.attr_str("mode", "nearest").lower())
    if mode is None:
        raise Unsupported(f"uses mode {node.attr_str('mode', '')!r}; hwsim knows nearest, linear and cubic")
    h, w = x.layout.index("H"), x.layout.index("W")
    fh, fw = factors.get(h, 1.0), factors.get(w, 1.0)
    dims = list(x.dims)
    dims[h], dims[w] = int(np.floor(x.dims[h] * fh + 1e-6)), int(np.floor(x.dims[w] * fw + 1e-6))
    if min(dims[h], dims[w]) <= 0:
        raise Unsupported(f"resizes {x.dims[h]}x{x.dims[w]} by {fh:g}x{fw:g} to nothing")
    name = imp.layer_name(node)
    if all(f >= 1 and abs(f - round(f)) <= 1e-6 for f in (fh, fw)):
        tensor = imp.b.upsample(name, x.tensor, (round(fh), round(fw)), mode)
    else:
        tensor = imp.b.resize(name, x.tensor, dims[h], dims[w], mode)
    imp.produce(node, 0, tensor, dims, x.layout)


OPS: dict[str, Handler] = {  # the ONNX ops these handlers import (FEATURE_OPS of `hwsim.workload.onnx_import`)
    "ReduceMean": reduce,
    "ReduceMax": reduce,
    "ReduceMin": reduce,
    "ReduceSum": reduce,
    "ReduceL1": reduce,
    "ReduceL2": reduce,
    "ReduceSumSquare": reduce,
    "ReduceProd": reduce,
    "Gemm": gemm,
    "MatMul": gemm,
    "Add": arithmetic,
    "Sub": arithmetic,
    "Mul": arithmetic,
    "Div": arithmetic,
    "Sum": arithmetic,
    "Concat": concat,
    "Upsample": resize,
    "Resize": resize,
    "Expand": expand,
    "Gather": gather,
    "LayerNormalization": layer_norm,
    "InstanceNormalization": instance_norm,
    "GroupNormalization": group_norm,
    "Slice": slice_,
    "Split": split,
}
