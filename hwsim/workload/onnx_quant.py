"""Quantized ONNX graphs: QDQ pairs folded away, QLinear and Integer ops, and each layer's precision.

onnxruntime's static quantisation (QDQ format) wraps every tensor in a
QuantizeLinear → DequantizeLinear pair. `strip_qdq` removes the pairs on
activations before the import walks the graph, so fusion (a Relu or a
x·sigmoid(x) after a Conv) works as in the float graph, and remembers the
width each tensor was quantized to. Weights keep their own DequantizeLinear,
folded as a `Param` with the width of its integer data. The operator format
(QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger) maps onto the same
layers as Conv and MatMul. A layer's `Precision` is read from the widths of
the values it consumes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from math import prod

import onnx
from onnx import TensorProto, numpy_helper

from hwsim.workload.ir import WEIGHTED_KINDS, Layer, LayerKind, Precision
from hwsim.workload.onnx_context import Handler, ImportContext
from hwsim.workload.onnx_fold import OnnxNode
from hwsim.workload.onnx_values import (
    DEFAULT_DOMAINS,
    INTEGER_BITS,
    Feature,
    Inputs,
    Param,
    Value,
    as_feature,
    dims_of,
    value_bits,
)

ACCUMULATOR_BITS = 32  # ONNX's integer convolutions and matmuls accumulate in int32
DEFAULT_QUANT_BITS = 8  # QuantizeLinear without a zero point writes uint8


def _is(node: onnx.NodeProto, op: str) -> bool:
    return node.op_type == op and node.domain in DEFAULT_DOMAINS


def _zero_point_bits(node: onnx.NodeProto, known: dict[str, int]) -> int:
    """The width QuantizeLinear writes: its zero point's type, its output_dtype (opset 21), else uint8."""
    if len(node.input) > 2 and node.input[2] in known:
        return known[node.input[2]]
    for a in node.attribute:
        if a.name == "output_dtype" and a.i in INTEGER_BITS:
            return INTEGER_BITS[a.i]
    return DEFAULT_QUANT_BITS


def _element_types(graph: onnx.GraphProto, nodes: Sequence[onnx.NodeProto]) -> dict[str, int]:
    """Integer widths of initializers and Constant outputs (where zero points live)."""
    found = {t.name: INTEGER_BITS[t.data_type] for t in graph.initializer if t.data_type in INTEGER_BITS}
    for n in nodes:
        if _is(n, "Constant"):
            value = next((a.t for a in n.attribute if a.name == "value"), None)
            if value is not None and value.data_type in INTEGER_BITS:
                found[n.output[0]] = INTEGER_BITS[value.data_type]
    return found


@dataclass(frozen=True)
class Stripped:
    """What `strip_qdq` leaves: the nodes, the width each removed pair stored its value at, and the values
    whose pair clamps at zero (zero point at the type's minimum: a ReLU the quantizer folded into it)."""

    nodes: list[onnx.NodeProto]
    bits: dict[str, int]
    clamped: frozenset[str]


def _clamps_at_zero(q: onnx.NodeProto, graph: onnx.GraphProto) -> bool:
    """Whether QuantizeLinear `q` has a signed zero point at its type's minimum (-128 for int8): nothing below
    zero survives it, as onnxruntime writes it when it removes a Relu or Clip(0, ·) before it."""
    if len(q.input) < 3:
        return False
    zp = next((t for t in graph.initializer if t.name == q.input[2]), None)
    if zp is None or zp.data_type not in (TensorProto.INT8, TensorProto.INT16) or prod(zp.dims) != 1:
        return False
    value = int(numpy_helper.to_array(zp).reshape(-1)[0])
    return value == -(1 << (INTEGER_BITS[zp.data_type] - 1))


def strip_qdq(graph: onnx.GraphProto, nodes: list[onnx.NodeProto]) -> Stripped:
    """The nodes with every QuantizeLinear → DequantizeLinear pair removed, readers of the pair reading its
    input instead; the width each such input was quantized to. Pairs whose output is a graph output stay."""
    producer = {o: n for n in nodes for o in n.output}
    readers: dict[str, list[onnx.NodeProto]] = {}
    for n in nodes:
        for i in dict.fromkeys(n.input):
            readers.setdefault(i, []).append(n)
    widths = _element_types(graph, nodes)
    outputs = {o.name for o in graph.output}
    rename: dict[str, str] = {}
    bits: dict[str, int] = {}
    clamped: set[str] = set()
    for n in nodes:
        q = producer.get(n.input[0]) if _is(n, "DequantizeLinear") and n.input else None
        if q is not None and _is(q, "QuantizeLinear") and n.output[0] not in outputs:
            rename[n.output[0]] = q.input[0]
            bits[q.input[0]] = _zero_point_bits(q, widths)
            if _clamps_at_zero(q, graph) and all(_is(r, "QuantizeLinear") and _clamps_at_zero(r, graph)
                                                 for r in readers.get(q.input[0], [])):
                clamped.add(q.input[0])  # every reader sees it clamped
    if not rename:
        return Stripped(nodes, {}, frozenset())
    kept = [n for n in nodes if n.output[0] not in rename]
    read = {_follow(rename, i) for n in kept for i in n.input} | outputs
    stripped = []
    for n in kept:
        if _is(n, "QuantizeLinear") and not any(o in read for o in n.output):
            continue
        renamed = onnx.NodeProto()
        renamed.CopyFrom(n)
        renamed.input[:] = [_follow(rename, i) for i in n.input]
        stripped.append(renamed)
    return Stripped(stripped, {_follow(rename, k): v for k, v in bits.items()},
                    frozenset(_follow(rename, k) for k in clamped))


def _follow(rename: dict[str, str], name: str) -> str:
    while name in rename:
        name = rename[name]
    return name


def with_bits(v: Value, bits: int) -> Value:
    """A value as stored at `bits` (a feature or a weight behind a removed QDQ pair)."""
    if isinstance(v, Feature):
        return replace(v, bits=bits)
    return Param(dims_of(v), bits)


# ----- precision of the layers a node made ----------------------------------------------------------------
def _common_bits(values: Sequence[Value]) -> int | None:
    """The width shared by some values, None if any of them is a float."""
    widths = [value_bits(v) for v in values]
    return None if not widths or None in widths else max(w for w in widths if w is not None)


def layer_precision(layer: Layer, ins: Sequence[Value | None]) -> Precision | None:
    """Operand widths of a layer made from node inputs `ins` (weights at 1, bias at 2 for weighted layers)."""
    feats = [v for v in ins if isinstance(v, Feature)]
    if layer.kind is LayerKind.MATMUL and len(feats) == 2:
        weight, act = value_bits(feats[1]), value_bits(feats[0])
        bias = None
    elif layer.kind in WEIGHTED_KINDS and len(ins) > 1 and ins[1] is not None and not isinstance(ins[1], Feature):
        weight, act = value_bits(ins[1]), _common_bits(feats)
        bias = value_bits(ins[2]) if len(ins) > 2 and ins[2] is not None else None
    else:
        act = _common_bits(feats)
        return None if act is None else Precision(None, act, None)
    if weight is None and act is None:
        return None
    acc = bias if bias is not None else (ACCUMULATOR_BITS if weight is not None and act is not None else None)
    return Precision(weight, act, acc)


# ----- handlers -------------------------------------------------------------------------------------------
def _zero_point_array_bits(ins: Inputs, index: int) -> int:
    zp = ins[index] if index < len(ins) else None
    bits = value_bits(zp) if zp is not None else None
    return bits if bits is not None else DEFAULT_QUANT_BITS


def quantize(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    """QuantizeLinear of a feature (operator format): the same data, stored narrower: no layer."""
    x = as_feature(ins[0])
    bits = node.attrs.get("output_dtype")
    width = INTEGER_BITS.get(int(bits), DEFAULT_QUANT_BITS) if bits else _zero_point_array_bits(ins, 2)
    imp.alias(node, replace(x, bits=width))


def dequantize(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    """DequantizeLinear of a feature: read as floats from here on: no layer."""
    imp.alias(node, replace(as_feature(ins[0]), bits=None))


def fold_quantized(node: OnnxNode, ins: Inputs) -> Param | None:
    """QuantizeLinear/DequantizeLinear of a weight: its shape and the width of its integer side."""
    if node.op == "DequantizeLinear":
        return Param(dims_of(ins[0]), value_bits(ins[0]))
    if node.op == "QuantizeLinear":
        return Param(dims_of(ins[0]), _zero_point_array_bits(ins, 2))
    return None


def _integer_output(imp: ImportContext, node: OnnxNode, bits: int) -> None:
    out = imp.values[node.outputs[0]]
    if isinstance(out, Feature):
        imp.values[node.outputs[0]] = replace(out, bits=bits)


def _operand(ins: Inputs, index: int, zero_point: int) -> Value | None:
    """An integer operand with its width: its own type, else its zero point's (uint8 without one)."""
    v = ins[index] if index < len(ins) else None
    if v is None or value_bits(v) is not None:
        return v
    return with_bits(v, _zero_point_array_bits(ins, zero_point))


@dataclass(frozen=True)
class Twin:
    """A quantized op read as the float op it computes: which of its inputs the float op reads (each with the
    input holding its zero point, -1 for none), where its bias is, and where its output's zero point is."""

    op: str  # the float op, whose handler imports it
    operands: tuple[tuple[int, int], ...]  # (input, its zero point's input) in the float op's order
    bias: int | None = None  # input index of an int32 bias
    out_zero_point: int | None = None  # input index of the output's zero point; None: the int32 accumulator
    float_output: bool = False  # the output stays float when input `out_zero_point` is absent (QGemm)


def _twin(twin: Twin, handlers: Mapping[str, Handler]) -> Handler:
    """A handler importing a quantized op as `twin.op` on its data operands, each at its integer width."""
    def run(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
        names = [node.inputs[i] if i < len(node.inputs) else "" for i, _ in twin.operands]
        values = [_operand(ins, i, z) for i, z in twin.operands]
        if twin.bias is not None and twin.bias < len(ins) and (b := ins[twin.bias]) is not None:
            names.append(node.inputs[twin.bias])
            values.append(with_bits(b, ACCUMULATOR_BITS))
        imp.run(handlers[twin.op], replace(node, op=twin.op, domain="", inputs=tuple(names)), values)
        z = twin.out_zero_point
        if z is None:
            _integer_output(imp, node, ACCUMULATOR_BITS)
        elif not (twin.float_output and (z >= len(ins) or ins[z] is None)):
            _integer_output(imp, node, _zero_point_array_bits(ins, z))
    return run


def _concat_twin(handlers: Mapping[str, Handler]) -> Handler:
    """QLinearConcat(Y_scale, Y_zp, then (X, X_scale, X_zp) per input): a Concat of the X at their widths."""
    def run(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
        inputs = range(2, len(ins), 3)
        _twin(Twin("Concat", tuple((i, i + 2) for i in inputs), out_zero_point=1), handlers)(imp, node, ins)
    return run


def _dynamic_quantize(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    """DynamicQuantizeLinear: the same data as uint8, and a scale and zero point computed at run time (scalars
    whose values hwsim never needs)."""
    imp.alias(node, replace(as_feature(ins[0]), bits=DEFAULT_QUANT_BITS))
    for k, bits in ((1, None), (2, DEFAULT_QUANT_BITS)):
        if k < len(node.outputs) and node.outputs[k]:
            imp.values[node.outputs[k]] = Param((), bits)


# ONNX's operator-format quantized ops as their float twins. QLinearConv: x, x_scale, x_zp, w, w_scale, w_zp,
# y_scale, y_zp, B; QLinearMatMul: a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp; ConvInteger: x, w, x_zp,
# w_zp; MatMulInteger: A, B, a_zp, b_zp (int32 results).
STANDARD_TWINS = {
    "QLinearConv": Twin("Conv", ((0, 2), (3, 5)), bias=8, out_zero_point=7),
    "QLinearMatMul": Twin("MatMul", ((0, 2), (3, 5)), out_zero_point=7),
    "ConvInteger": Twin("Conv", ((0, 2), (1, 3))),
    "MatMulInteger": Twin("MatMul", ((0, 2), (1, 3))),
}
# onnxruntime's QOperator format (domain com.microsoft). Binary ops: A, A_scale, A_zp, B, B_scale, B_zp, C_scale,
# C_zp; unary ones: X, X_scale, X_zp, Y_scale, Y_zp; QGemm: A, a_scale, a_zp, B, b_scale, b_zp, C, y_scale, y_zp
# (without y_scale its output is float).
MICROSOFT_TWINS = {
    "QLinearAdd": Twin("Add", ((0, 2), (3, 5)), out_zero_point=7),
    "QLinearMul": Twin("Mul", ((0, 2), (3, 5)), out_zero_point=7),
    "QLinearAveragePool": Twin("AveragePool", ((0, 2),), out_zero_point=4),
    "QLinearGlobalAveragePool": Twin("GlobalAveragePool", ((0, 2),), out_zero_point=4),
    "QLinearSigmoid": Twin("Sigmoid", ((0, 2),), out_zero_point=4),
    "QLinearLeakyRelu": Twin("LeakyRelu", ((0, 2),), out_zero_point=4),
    "QLinearSoftmax": Twin("Softmax", ((0, 2),), out_zero_point=4),
    "QGemm": Twin("Gemm", ((0, 2), (3, 5)), bias=6, out_zero_point=8, float_output=True),
}
MICROSOFT_DOMAIN = "com.microsoft"


def quantized_ops(handlers: Mapping[str, Handler]) -> dict[str, Handler]:
    """Handlers of the standard domain's quantized ops, built on the float ops' `handlers`."""
    return {
        "QuantizeLinear": quantize,
        "DequantizeLinear": dequantize,
        "DynamicQuantizeLinear": _dynamic_quantize,
        **{op: _twin(twin, handlers) for op, twin in STANDARD_TWINS.items()},
    }


def microsoft_ops(handlers: Mapping[str, Handler]) -> dict[str, Handler]:
    """Handlers of onnxruntime's quantized ops (domain com.microsoft), built on the float ops' `handlers`."""
    return {"QLinearConcat": _concat_twin(handlers),
            **{op: _twin(twin, handlers) for op, twin in MICROSOFT_TWINS.items()}}
