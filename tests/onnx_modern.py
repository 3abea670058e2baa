"""Small ONNX models of the networks users bring today, built with onnx.helper.

Quantized graphs as onnxruntime writes them (QDQ pairs, the QLinear and
Integer operators), layer/instance/group normalisation (and the opset-13
decomposition of layer norm), GELU as the legacy and dynamo exporters spell
it, per-pixel linear layers on NHWC tensors, multi-head attention on tokens,
a class token, reductions, Expand, Resize at any scale, and TF-style "same"
padding computed on the input's shape. Each returns a checked `ModelProto`;
the tests derive every count by hand.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx_patterns import FLOAT, int64s, model, tensor, zeros

INT8, UINT8, INT16, INT32 = TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16, TensorProto.INT32


def array(name: str, values: Sequence[float] | float, dtype: type) -> TensorProto:
    return numpy_helper.from_array(np.array(values, dtype), name)


def node(op: str, inputs: Sequence[str], outputs: Sequence[str] | str, name: str = "", **attrs: object
         ) -> onnx.NodeProto:
    outs = [outputs] if isinstance(outputs, str) else list(outputs)
    return helper.make_node(op, list(inputs), outs, name=name or outs[0], **attrs)


# ----- quantized graphs ------------------------------------------------------------------------------
def _qdq(x: str, scale: str, zero_point: str) -> list[onnx.NodeProto]:
    """x → QuantizeLinear → DequantizeLinear → x_dq, as onnxruntime's QDQ format wraps a tensor."""
    return [node("QuantizeLinear", [x, scale, zero_point], f"{x}_q"),
            node("DequantizeLinear", [f"{x}_q", scale, zero_point], f"{x}_dq")]


def _dq_weight(name: str, dims: Sequence[int], dtype: type, zp_dtype: type) -> tuple[list[onnx.NodeProto],
                                                                                   list[TensorProto]]:
    """An integer weight with its DequantizeLinear (its scale and zero point as initializers)."""
    inits = [zeros(f"{name}_quantized", dims, dtype), array(f"{name}_scale", 0.1, np.float32),
             array(f"{name}_zero_point", 0, zp_dtype)]
    return [node("DequantizeLinear", [f"{name}_quantized", f"{name}_scale", f"{name}_zero_point"], name)], inits


def qdq_mixed() -> onnx.ModelProto:
    """onnxruntime's static QDQ format around three 8×8 convs of three precisions.

    conv1 3→4 3×3 pad 1: int8 weights, int32 bias, int8 input, then QDQ, ReLU, QDQ;
    conv2 4→8 1×1: float weights on the int8 activation; conv3 8→2 1×1: int16 weights on an int16 activation.
    """
    inits = [array("s", 0.05, np.float32), array("z8", 0, np.int8), array("z16", 0, np.int16)]
    nodes = _qdq("x", "s", "z8")
    for name, dims, dtype, zp in (("w1", (4, 3, 3, 3), np.int8, np.int8), ("b1", (4,), np.int32, np.int32),
                                  ("w3", (2, 8, 1, 1), np.int16, np.int16)):
        more, more_inits = _dq_weight(name, dims, dtype, zp)
        nodes += more
        inits += more_inits
    inits.append(zeros("w2", (8, 4, 1, 1)))
    nodes += [node("Conv", ["x_dq", "w1", "b1"], "c1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]), *_qdq("c1", "s", "z8"),
              node("Relu", ["c1_dq"], "r1"), *_qdq("r1", "s", "z8"),
              node("Conv", ["r1_dq", "w2"], "c2", kernel_shape=[1, 1]), *_qdq("c2", "s", "z16"),
              node("Conv", ["c2_dq", "w3"], "y", kernel_shape=[1, 1])]
    return model(nodes, [tensor("x", [1, 3, 8, 8])], [tensor("y", [1, 2, 8, 8])], inits, 13)


def qlinear_conv() -> onnx.ModelProto:
    """Operator format: QuantizeLinear (uint8), QLinearConv 3→4 3×3 pad 1 with int32 bias, 2×2 MaxPool on the
    uint8 result, DequantizeLinear."""
    inits = [array("s", 0.05, np.float32), array("zx", 128, np.uint8), zeros("w", (4, 3, 3, 3), np.int8),
             array("ws", 0.1, np.float32), array("wz", 0, np.int8), array("ys", 0.2, np.float32),
             array("yz", 128, np.uint8), zeros("b", (4,), np.int32)]
    nodes = [node("QuantizeLinear", ["x", "s", "zx"], "xq"),
             node("QLinearConv", ["xq", "s", "zx", "w", "ws", "wz", "ys", "yz", "b"], "c", name="qconv",
                  kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             node("MaxPool", ["c"], "p", name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             node("DequantizeLinear", ["p", "ys", "yz"], "y")]
    return model(nodes, [tensor("x", [1, 3, 8, 8])], [tensor("y", [1, 4, 4, 4])], inits, 13)


def qlinear_matmul() -> onnx.ModelProto:
    """QuantizeLinear (int8) of a 1×16 vector, QLinearMatMul by a 16×10 int8 matrix, DequantizeLinear."""
    inits = [array("s", 0.05, np.float32), array("z", 0, np.int8), zeros("b", (16, 10), np.int8),
             array("bs", 0.1, np.float32), array("ys", 0.2, np.float32)]
    nodes = [node("QuantizeLinear", ["x", "s", "z"], "xq"),
             node("QLinearMatMul", ["xq", "s", "z", "b", "bs", "z", "ys", "z"], "m", name="qmatmul"),
             node("DequantizeLinear", ["m", "ys", "z"], "y")]
    return model(nodes, [tensor("x", [1, 16])], [tensor("y", [1, 10])], inits, 13)


def conv_integer() -> onnx.ModelProto:
    """A uint8 image into ConvInteger 3→4 3×3 pad 1 (int8 weights), the int32 result cast to float."""
    inits = [zeros("w", (4, 3, 3, 3), np.int8), array("xz", 128, np.uint8), array("wz", 0, np.int8)]
    nodes = [node("ConvInteger", ["x", "w", "xz", "wz"], "c", name="iconv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             node("Cast", ["c"], "y", to=FLOAT)]
    return model(nodes, [tensor("x", [1, 3, 8, 8], UINT8)], [tensor("y", [1, 4, 8, 8])], inits, 13)


def matmul_integer() -> onnx.ModelProto:
    """A uint8 1×16 vector by a 16×10 int8 matrix in MatMulInteger, cast to float."""
    inits = [zeros("b", (16, 10), np.int8), array("az", 128, np.uint8), array("bz", 0, np.int8)]
    nodes = [node("MatMulInteger", ["x", "b", "az", "bz"], "m", name="imatmul"), node("Cast", ["m"], "y", to=FLOAT)]
    return model(nodes, [tensor("x", [1, 16], UINT8)], [tensor("y", [1, 10])], inits, 13)


# ----- normalisation, reductions, element-wise ---------------------------------------------------------
NCHW_TO_NHWC, NHWC_TO_NCHW = [0, 2, 3, 1], [0, 3, 1, 2]
X = [1, 4, 3, 5]  # C = 4 channels over 3 × 5 pixels: 60 elements


def layer_norm_nhwc() -> onnx.ModelProto:
    """ConvNeXt's norm: NCHW → NHWC, LayerNormalization over channels (opset 17), back to NCHW."""
    nodes = [node("Transpose", ["x"], "t", perm=NCHW_TO_NHWC),
             node("LayerNormalization", ["t", "gamma", "beta"], "n", name="ln", axis=-1),
             node("Transpose", ["n"], "y", perm=NHWC_TO_NCHW)]
    return model(nodes, [tensor("x", X)], [tensor("y", X)], [zeros("gamma", [4]), zeros("beta", [4])], 17)


def layer_norm_decomposed() -> onnx.ModelProto:
    """The same norm as the opset-13 exporters write it: ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div,
    then Mul by gamma and Add beta."""
    inits = [array("two", 2.0, np.float32), array("eps", 1e-5, np.float32), zeros("gamma", [4]), zeros("beta", [4])]
    nodes = [node("Transpose", ["x"], "t", perm=NCHW_TO_NHWC),
             node("ReduceMean", ["t"], "mean", axes=[-1]),
             node("Sub", ["t", "mean"], "d"),
             node("Pow", ["d", "two"], "d2"),
             node("ReduceMean", ["d2"], "var", axes=[-1]),
             node("Add", ["var", "eps"], "var_eps"),
             node("Sqrt", ["var_eps"], "std"),
             node("Div", ["d", "std"], "normed", name="ln"),
             node("Mul", ["normed", "gamma"], "scaled"),
             node("Add", ["scaled", "beta"], "shifted"),
             node("Transpose", ["shifted"], "y", perm=NHWC_TO_NCHW)]
    return model(nodes, [tensor("x", X)], [tensor("y", X)], inits, 13)


def instance_norm() -> onnx.ModelProto:
    inits = [zeros("scale", [4]), zeros("bias", [4])]
    return model([node("InstanceNormalization", ["x", "scale", "bias"], "y", name="in")], [tensor("x", X)],
                 [tensor("y", X)], inits, 13)


def group_norm() -> onnx.ModelProto:
    inits = [zeros("scale", [4]), zeros("bias", [4])]
    return model([node("GroupNormalization", ["x", "scale", "bias"], "y", name="gn", num_groups=2)],
                 [tensor("x", X)], [tensor("y", X)], inits, 21)


def reductions() -> onnx.ModelProto:
    """ReduceSum over channels (keepdims) and ReduceMean over width (dropped), axes as inputs (opset 18)."""
    nodes = [node("ReduceSum", ["x", "axis_c"], "s", name="sum_c", keepdims=1),
             node("ReduceMean", ["x", "axis_w"], "m", name="mean_w", keepdims=0)]
    return model(nodes, [tensor("x", X)], [tensor("s", [1, 1, 3, 5]), tensor("m", [1, 4, 3])],
                 [int64s("axis_c", [1]), int64s("axis_w", [3])], 18)


def expand_context() -> onnx.ModelProto:
    """MobileViT-v2's linear attention tail: a sum over width (keepdims), Expand back to the input's shape
    (taken from Shape), Mul with the input."""
    nodes = [node("ReduceSum", ["x", "axis_w"], "ctx", name="sum_w", keepdims=1),
             node("Shape", ["x"], "shape"),
             node("Expand", ["ctx", "shape"], "wide", name="expand"),
             node("Mul", ["x", "wide"], "y", name="mul")]
    return model(nodes, [tensor("x", X)], [tensor("y", X)], [int64s("axis_w", [3])], 13)


def conv_gelu(order: str) -> onnx.ModelProto:
    """A 1×1 conv 4→4 then GELU as x·½·(1 + erf(x/√2)): 'legacy' ends with Mul(x·(1+erf), ½), 'dynamo' with
    Mul(x, ½·(1+erf))."""
    inits = [zeros("w", (4, 4, 1, 1)), array("sqrt2", 1.4142135, np.float32), array("one", 1.0, np.float32),
             array("half", 0.5, np.float32)]
    nodes = [node("Conv", ["x", "w"], "c", name="conv", kernel_shape=[1, 1]),
             node("Div", ["c", "sqrt2"], "d"), node("Erf", ["d"], "e"), node("Add", ["e", "one"], "a")]
    if order == "legacy":
        nodes += [node("Mul", ["c", "a"], "m"), node("Mul", ["m", "half"], "y")]
    else:
        nodes += [node("Mul", ["half", "a"], "m"), node("Mul", ["c", "m"], "y")]
    return model(nodes, [tensor("x", X)], [tensor("y", X)], inits, 17)


def conv_then_activation(op: str, opset: int = 14) -> onnx.ModelProto:
    nodes = [node("Conv", ["x", "w"], "c", name="conv", kernel_shape=[1, 1]), node(op, ["c"], "y")]
    return model(nodes, [tensor("x", X)], [tensor("y", X)], [zeros("w", (4, 4, 1, 1))], opset)


# ----- matrix products -----------------------------------------------------------------------------------
def pixel_linear() -> onnx.ModelProto:
    """ConvNeXt's MLP input: NHWC MatMul by a 4×6 weight plus bias, back to NCHW."""
    nodes = [node("Transpose", ["x"], "t", perm=NCHW_TO_NHWC), node("MatMul", ["t", "w"], "m", name="fc"),
             node("Add", ["m", "b"], "a"), node("Transpose", ["a"], "y", perm=NHWC_TO_NCHW)]
    return model(nodes, [tensor("x", X)], [tensor("y", [1, 6, 3, 5])], [zeros("w", (4, 6)), zeros("b", [6])], 17)


def attention() -> onnx.ModelProto:
    """Two-head self-attention on 6 tokens of width 8 (an 8×2×3 map flattened, ViT-style).

    q, k, v = tokens·Wq, ·Wk, ·Wv (6×8 by 8×8); heads of 4; A = softmax(q·kᵀ·½); out = (A·v)·Wo.
    """
    inits = [int64s("flat", [1, 8, 6]), int64s("heads", [1, 6, 2, 4]), int64s("merged", [1, 6, 8]),
             array("scale", 0.5, np.float32), *(zeros(w, (8, 8)) for w in ("wq", "wk", "wv", "wo"))]
    nodes = [node("Reshape", ["x", "flat"], "f"), node("Transpose", ["f"], "tok", perm=[0, 2, 1])]
    for p in "qkv":
        nodes += [node("MatMul", ["tok", f"w{p}"], p, name=f"proj_{p}"), node("Reshape", [p, "heads"], f"{p}4")]
    nodes += [node("Transpose", ["q4"], "qh", perm=[0, 2, 1, 3]), node("Transpose", ["k4"], "kt", perm=[0, 2, 3, 1]),
              node("Transpose", ["v4"], "vh", perm=[0, 2, 1, 3]),
              node("MatMul", ["qh", "kt"], "scores", name="qk"), node("Mul", ["scores", "scale"], "scaled"),
              node("Softmax", ["scaled"], "attn", name="softmax", axis=-1),
              node("MatMul", ["attn", "vh"], "ctx", name="av"), node("Transpose", ["ctx"], "ctx_t", perm=[0, 2, 1, 3]),
              node("Reshape", ["ctx_t", "merged"], "ctx_m"), node("MatMul", ["ctx_m", "wo"], "y", name="proj_o")]
    return model(nodes, [tensor("x", [1, 8, 2, 3])], [tensor("y", [1, 6, 8])], inits, 17)


def class_token(tokens: int) -> onnx.ModelProto:
    """ViT's (DeiT's with 2) learned tokens concatenated before the 6 patch tokens of width 8, then a
    LayerNormalization."""
    inits = [int64s("flat", [1, 8, 6]), zeros("cls", (1, tokens, 8)), zeros("gamma", [8]), zeros("beta", [8])]
    nodes = [node("Reshape", ["x", "flat"], "f"), node("Transpose", ["f"], "tok", perm=[0, 2, 1]),
             node("Concat", ["cls", "tok"], "cat", name="concat", axis=1),
             node("LayerNormalization", ["cat", "gamma", "beta"], "y", name="ln", axis=-1)]
    return model(nodes, [tensor("x", [1, 8, 2, 3])], [tensor("y", [1, 6 + tokens, 8])], inits, 17)


# ----- resize and shape arithmetic --------------------------------------------------------------------------
def resize_scales(scale: float, mode: str) -> onnx.ModelProto:
    """Resize of a 2×10×10 map by `scale` along height and width."""
    out = int(10 * scale)
    inits = [array("scales", [1.0, 1.0, scale, scale], np.float32)]
    return model([node("Resize", ["x", "", "scales"], "y", name="resize", mode=mode)], [tensor("x", [1, 2, 10, 10])],
                 [tensor("y", [1, 2, out, out])], inits, 13)


def resize_sizes(how: str) -> onnx.ModelProto:
    """Resize of a 2×10×10 map to 15×15 (bilinear) with sizes: 'constant' [1, 2, 15, 15]; 'mixed', as the legacy
    exporter writes DeepLab's ASPP pooling, Shape(x)[0:2] concatenated with a constant [15, 15]; or 'shape',
    1.5 × the input's own height and width from its Shape (Slice, Cast, Mul, Floor, Cast, Concat)."""
    inits = [int64s("nc", [1, 2]), int64s("start", [2]), int64s("end", [4]), array("ratio", 1.5, np.float32),
             int64s("fixed", [1, 2, 15, 15]), int64s("zero", [0]), int64s("hw15", [15, 15])]
    nodes = [node("Shape", ["x"], "shape")]
    if how == "shape":
        nodes += [node("Slice", ["shape", "start", "end"], "hw"),
                  node("Cast", ["hw"], "hw_f", to=FLOAT), node("Mul", ["hw_f", "ratio"], "scaled"),
                  node("Floor", ["scaled"], "floored"), node("Cast", ["floored"], "hw_out", to=TensorProto.INT64),
                  node("Concat", ["nc", "hw_out"], "sizes", axis=0)]
    elif how == "mixed":
        nodes += [node("Slice", ["shape", "zero", "start"], "nc_shape"),
                  node("Concat", ["nc_shape", "hw15"], "sizes", axis=0)]
    sizes = "fixed" if how == "constant" else "sizes"
    nodes.append(node("Resize", ["x", "", "", sizes], "y", name="resize", mode="linear"))
    return model(nodes, [tensor("x", [1, 2, 10, 10])], [tensor("y", [1, 2, 15, 15])], inits, 13)


def tf_same_padding() -> onnx.ModelProto:
    """timm's TF-style "same" padding for a 3×3 stride-2 conv as the legacy exporter writes it on the input's
    shape: total = max((ceil(H / 2) − 1)·2 + 3 − H, 0) through Ceil, Clip, Max, Min and Where; then Pad.

    For H = W = 9: ceil(4.5) = 5, (5 − 1)·2 + 3 − 9 = 2, so 1 row/column on each side.
    """
    inits = [int64s("two_i", [2]), int64s("zero_i", [0]), int64s("zeros2", [0, 0]),
             array("two", 2.0, np.float32), array("one", 1.0, np.float32), array("three", 3.0, np.float32),
             array("zero", 0.0, np.float32), array("big", 100.0, np.float32), zeros("w", (4, 3, 3, 3)),
             int64s("axes0", [0])]
    nodes = [node("Shape", ["x"], "shape"), node("Gather", ["shape", "two_i"], "h_i", axis=0),
             node("Cast", ["h_i"], "h", to=FLOAT), node("Div", ["h", "two"], "h2"), node("Ceil", ["h2"], "out"),
             node("Sub", ["out", "one"], "o1"), node("Mul", ["o1", "two"], "o2"), node("Add", ["o2", "three"], "o3"),
             node("Sub", ["o3", "h"], "raw"), node("Clip", ["raw", "zero", ""], "clipped"),
             node("Max", ["clipped", "zero"], "pos"), node("Min", ["pos", "big"], "total"),
             node("Greater", ["total", "zero"], "any"), node("Where", ["any", "total", "zero"], "total2"),
             node("Div", ["total2", "two"], "half"), node("Floor", ["half"], "begin_f"),
             node("Sub", ["total2", "begin_f"], "end_f"),
             node("Cast", ["begin_f"], "begin", to=TensorProto.INT64),
             node("Cast", ["end_f"], "end", to=TensorProto.INT64),
             node("Concat", ["zeros2", "begin", "begin", "zeros2", "end", "end"], "pads", axis=0),
             node("Pad", ["x", "pads"], "padded"),
             node("Conv", ["padded", "w"], "y", name="conv", kernel_shape=[3, 3], strides=[2, 2])]
    return model(nodes, [tensor("x", [1, 3, 9, 9])], [tensor("y", [1, 4, 5, 5])], inits, 13)


def unknown_twice() -> onnx.ModelProto:
    """Two SpaceToDepth nodes (an op hwsim does not model) between 1×1 convs of 4 → 4 channels at 8×8."""
    inits = [zeros("w1", (4, 4, 1, 1)), zeros("w2", (16, 16, 1, 1))]
    nodes = [node("Conv", ["x", "w1"], "c1", name="conv1", kernel_shape=[1, 1]),
             node("SpaceToDepth", ["c1"], "s1", name="s2d_a", blocksize=2),
             node("Conv", ["s1", "w2"], "c2", name="conv2", kernel_shape=[1, 1]),
             node("SpaceToDepth", ["c2"], "y", name="s2d_b", blocksize=2)]
    return model(nodes, [tensor("x", [1, 4, 8, 8])], [tensor("y", [1, 64, 2, 2])], inits, 13)


def tokens_to_image() -> onnx.ModelProto:
    """Tokens back to a map (SegFormer, MobileViT): 6 tokens of 8 through a Linear 8→8, transposed and reshaped
    to 8×2×3, then a 3×3 conv 8→4 with padding 1."""
    inits = [int64s("flat", [1, 8, 6]), int64s("image", [1, 8, 2, 3]), zeros("w", (8, 8)), zeros("k", (4, 8, 3, 3))]
    nodes = [node("Reshape", ["x", "flat"], "f"), node("Transpose", ["f"], "tok", perm=[0, 2, 1]),
             node("MatMul", ["tok", "w"], "lin", name="linear"), node("Transpose", ["lin"], "chw", perm=[0, 2, 1]),
             node("Reshape", ["chw", "image"], "img"),
             node("Conv", ["img", "k"], "y", name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    return model(nodes, [tensor("x", [1, 8, 2, 3])], [tensor("y", [1, 4, 2, 3])], inits, 17)


def qdq_folded_relu(zero_point: int) -> onnx.ModelProto:
    """onnxruntime's QDQ graph where the quantizer removed the ReLU after conv1: the pair after it has an int8
    zero point of −128 (nothing below zero survives) — or, for comparison, another zero point."""
    inits = [array("s", 0.05, np.float32), array("z", 0, np.int8), array("zr", zero_point, np.int8),
             zeros("w1", (4, 3, 1, 1)), zeros("w2", (4, 4, 1, 1))]
    nodes = [*_qdq("x", "s", "z"), node("Conv", ["x_dq", "w1"], "c1", name="conv1", kernel_shape=[1, 1]),
             node("QuantizeLinear", ["c1", "s", "zr"], "c1_q"), node("DequantizeLinear", ["c1_q", "s", "zr"], "c1_dq"),
             node("Conv", ["c1_dq", "w2"], "y", name="conv2", kernel_shape=[1, 1])]
    return model(nodes, [tensor("x", [1, 3, 4, 4])], [tensor("y", [1, 4, 4, 4])], inits, 13)


def scatter_mask(size: int) -> onnx.ModelProto:
    """Swin's shifted-window mask as the exporters write `mask[a:b] = k` on zeros: ConstantOfShape size×size,
    ScatterND writing ones into rows 1 and 2, ScatterElements writing twos down column 0, added to a 1×1 conv
    2 → 2 over a 2×size×size map. Above 4096 elements (size 80) the mask is followed by shape only."""
    inits = [int64s("dims", [size, size]), array("rows", [[1], [2]], np.int64),
             array("ones", np.ones((2, size)), np.float32), array("col", np.zeros((size, 1)), np.int64),
             array("twos", np.full((size, 1), 2.0), np.float32), int64s("axes", [0, 1]), zeros("w", (2, 2, 1, 1))]
    nodes = [node("ConstantOfShape", ["dims"], "blank"), node("ScatterND", ["blank", "rows", "ones"], "banded"),
             node("ScatterElements", ["banded", "col", "twos"], "mask", axis=1),
             node("Unsqueeze", ["mask", "axes"], "mask4"),
             node("Conv", ["x", "w"], "c", name="conv", kernel_shape=[1, 1]), node("Add", ["c", "mask4"], "y")]
    return model(nodes, [tensor("x", [1, 2, size, size])], [tensor("y", [1, 2, size, size])], inits, 16)


def reduce_extremes() -> onnx.ModelProto:
    """ReduceMax over channels (keepdims), ReduceMin over height (dropped), ReduceMax over height and width (a
    global max pool), axes as inputs (opset 18)."""
    nodes = [node("ReduceMax", ["x", "axis_c"], "mx", name="max_c", keepdims=1),
             node("ReduceMin", ["x", "axis_h"], "mn", name="min_h", keepdims=0),
             node("ReduceMax", ["x", "axes_hw"], "gm", name="max_hw", keepdims=1)]
    return model(nodes, [tensor("x", X)],
                 [tensor("mx", [1, 1, 3, 5]), tensor("mn", [1, 4, 5]), tensor("gm", [1, 4, 1, 1])],
                 [int64s("axis_c", [1]), int64s("axis_h", [2]), int64s("axes_hw", [2, 3])], 18)


def token_heads() -> onnx.ModelProto:
    """Gather on tokens as nn.MultiheadAttention and ViT write it: qkv = tokens·Wqkv (7 tokens, 8 → 24) reshaped
    to [1, 7, 3, 8], transposed to [3, 1, 7, 8] and unbound with scalar Gathers (q = qkv[0], v = qkv[2]), q + v;
    then the head reads the class token (Gather index 0 along the tokens) into a Gemm 8 → 10. The tokens are an
    8×7×1 map flattened."""
    inits = [int64s("flat", [1, 8, 7]), zeros("wqkv", (8, 24)), int64s("split3", [1, 7, 3, 8]),
             array("i0", 0, np.int64), array("i2", 2, np.int64), zeros("head", (10, 8))]
    nodes = [node("Reshape", ["x", "flat"], "f"), node("Transpose", ["f"], "tok", perm=[0, 2, 1]),
             node("MatMul", ["tok", "wqkv"], "qkv", name="qkv_proj"), node("Reshape", ["qkv", "split3"], "qkv4"),
             node("Transpose", ["qkv4"], "qkv_t", perm=[2, 0, 1, 3]),
             node("Gather", ["qkv_t", "i0"], "q", name="take_q", axis=0),
             node("Gather", ["qkv_t", "i2"], "v", name="take_v", axis=0), node("Add", ["q", "v"], "qv", name="add"),
             node("Gather", ["qv", "i0"], "cls", name="take_cls", axis=1),
             node("Gemm", ["cls", "head"], "y", name="fc", transB=1)]
    return model(nodes, [tensor("x", [1, 8, 7, 1])], [tensor("y", [1, 10])], inits, 13)


def qdq_convs(quantized: bool) -> onnx.ModelProto:
    """Three convs on a 16×16 image, 3 → 8 (3×3, pad 1), ReLU, 8 → 8 (3×3, pad 1), ReLU, 8 → 4 (1×1): as
    onnxruntime's static QDQ quantization writes it (int8 weights behind DequantizeLinear, every activation
    wrapped in a QuantizeLinear/DequantizeLinear pair, the pairs between each conv and its ReLU) or, with
    `quantized` False, its float twin."""
    inits = [array("s", 0.05, np.float32), array("z", 0, np.int8)]
    nodes: list[onnx.NodeProto] = []
    source = "x"
    for k, (cin, cout, kernel, relu) in enumerate(((3, 8, 3, True), (8, 8, 3, True), (8, 4, 1, False)), start=1):
        weight, pad = f"w{k}", (kernel - 1) // 2
        if quantized:
            more, more_inits = _dq_weight(weight, (cout, cin, kernel, kernel), np.int8, np.int8)
            nodes += [*_qdq(source, "s", "z"), *more]
            inits += more_inits
            source = f"{source}_dq"
        else:
            inits.append(zeros(weight, (cout, cin, kernel, kernel)))
        out = f"c{k}" if k < 3 else "y"
        nodes.append(node("Conv", [source, weight], out, name=f"conv{k}", kernel_shape=[kernel, kernel],
                          pads=[pad] * 4))
        source = out
        if relu:
            if quantized:
                nodes += _qdq(source, "s", "z")
                source = f"{source}_dq"
            nodes.append(node("Relu", [source], f"r{k}"))
            source = f"r{k}"
    return model(nodes, [tensor("x", [1, 3, 16, 16])], [tensor("y", [1, 4, 16, 16])], inits, 13)


def qdq_then_float() -> onnx.ModelProto:
    """A QDQ conv 3 → 4 (1×1, int8 weights, its input wrapped in a Q/DQ pair) on a 4×4 image whose output goes,
    with no pair, into a float conv 4 → 2 (1×1): the quantizer left the second in float."""
    inits = [array("s", 0.05, np.float32), array("z", 0, np.int8), zeros("w2", (2, 4, 1, 1))]
    weight, weight_inits = _dq_weight("w1", (4, 3, 1, 1), np.int8, np.int8)
    nodes = [*_qdq("x", "s", "z"), *weight, node("Conv", ["x_dq", "w1"], "c1", name="conv1", kernel_shape=[1, 1]),
             node("Conv", ["c1", "w2"], "y", name="conv2", kernel_shape=[1, 1])]
    return model(nodes, [tensor("x", [1, 3, 4, 4])], [tensor("y", [1, 2, 4, 4])], inits + weight_inits, 13)


def qoperator_block() -> onnx.ModelProto:
    """onnxruntime's QOperator format (com.microsoft ops): QuantizeLinear, QLinearConv 3→8 3×3 pad 1,
    QLinearLeakyRelu, QLinearConv 8→8 3×3 pad 1, QLinearAdd of the two, QLinearSigmoid and QLinearMul (a swish),
    QLinearAveragePool 2×2 of the sum and of the swish, QLinearConcat of both pools (16 channels),
    QLinearGlobalAveragePool, Flatten, QGemm 16→10 with a float output, QLinearSoftmax is not used (float Softmax)."""
    u8 = np.uint8
    inits = [array("s", 0.05, np.float32), array("z", 128, u8), zeros("w1", (8, 3, 3, 3), np.int8),
             zeros("w2", (8, 8, 3, 3), np.int8), array("ws", 0.1, np.float32), array("wz", 0, np.int8),
             zeros("b", (8,), np.int32), zeros("wf", (10, 16), np.int8), zeros("bf", (10,), np.int32)]
    q = ["s", "z"]  # every activation's scale and zero point
    nodes = [node("QuantizeLinear", ["x", *q], "xq"),
             node("QLinearConv", ["xq", *q, "w1", "ws", "wz", *q, "b"], "c1", kernel_shape=[3, 3], pads=[1] * 4),
             node("QLinearLeakyRelu", ["c1", *q, *q], "r1", domain="com.microsoft", alpha=0.1),
             node("QLinearConv", ["r1", *q, "w2", "ws", "wz", *q, "b"], "c2", kernel_shape=[3, 3], pads=[1] * 4),
             node("QLinearAdd", ["c2", *q, "r1", *q, *q], "sum", domain="com.microsoft"),
             node("QLinearSigmoid", ["sum", *q, *q], "gate", domain="com.microsoft"),
             node("QLinearMul", ["sum", *q, "gate", *q, *q], "swish", domain="com.microsoft"),
             node("QLinearAveragePool", ["sum", *q, *q], "p1", domain="com.microsoft", kernel_shape=[2, 2],
                  strides=[2, 2]),
             node("QLinearAveragePool", ["swish", *q, *q], "p2", domain="com.microsoft", kernel_shape=[2, 2],
                  strides=[2, 2]),
             node("QLinearConcat", [*q, "p1", *q, "p2", *q], "cat", domain="com.microsoft", axis=1),
             node("QLinearGlobalAveragePool", ["cat", *q, *q], "gap", domain="com.microsoft"),
             node("Flatten", ["gap"], "flat"),
             node("QGemm", ["flat", *q, "wf", "ws", "wz", "bf"], "fc", domain="com.microsoft", transB=1),
             node("Softmax", ["fc"], "y")]
    return model(nodes, [tensor("x", [1, 3, 8, 8])], [tensor("y", [1, 10])], inits, 13,
                 extra_domains=["com.microsoft"], check=False)


def dynamic_quantized() -> onnx.ModelProto:
    """onnxruntime's quantize_dynamic: DynamicQuantizeLinear of the float input (uint8 data, a run-time scale and
    zero point), ConvInteger 3→4 3×3 pad 1 by int8 weights, Cast to float, Mul by the product of the two scales,
    Add a bias, Relu; then the same for a 256→10 MatMulInteger after Flatten."""
    inits = [zeros("w", (4, 3, 3, 3), np.int8), array("wz", 0, np.int8), array("ws", 0.1, np.float32),
             zeros("bias", (1, 4, 1, 1), np.float32), zeros("wf", (256, 10), np.int8), array("wfs", 0.1, np.float32)]
    nodes = [node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             node("ConvInteger", ["xq", "w", "xz", "wz"], "ci", kernel_shape=[3, 3], pads=[1] * 4),
             node("Cast", ["ci"], "cf", to=FLOAT),
             node("Mul", ["xs", "ws"], "scale"),
             node("Mul", ["cf", "scale"], "scaled"),
             node("Add", ["scaled", "bias"], "biased"),
             node("Relu", ["biased"], "r"),
             node("Flatten", ["r"], "flat"),
             node("DynamicQuantizeLinear", ["flat"], ["fq", "fs", "fz"]),
             node("MatMulInteger", ["fq", "wf", "fz", "wz"], "mi"),
             node("Cast", ["mi"], "mf", to=FLOAT),
             node("Mul", ["fs", "wfs"], "fscale"),
             node("Mul", ["mf", "fscale"], "y")]
    return model(nodes, [tensor("x", [1, 3, 8, 8])], [tensor("y", [1, 10])], inits, 13)


def global_response_norm() -> onnx.ModelProto:
    """ConvNeXt-V2's global response norm on an 8×8×8 map after a 3→8 3×3 conv: ReduceL2 over H and W, its mean
    over channels, x·(gamma·n) + beta + x."""
    inits = [zeros("w", (8, 3, 3, 3)), array("gamma", np.ones((1, 8, 1, 1)), np.float32),
             array("beta", np.zeros((1, 8, 1, 1)), np.float32), array("eps", 1e-6, np.float32)]
    nodes = [node("Conv", ["x", "w"], "c", kernel_shape=[3, 3], pads=[1] * 4),
             node("ReduceL2", ["c"], "g", axes=[2, 3], keepdims=1),
             node("ReduceMean", ["g"], "gm", axes=[1], keepdims=1),
             node("Add", ["gm", "eps"], "gme"),
             node("Div", ["g", "gme"], "n"),
             node("Mul", ["c", "n"], "xn"),
             node("Mul", ["xn", "gamma"], "xg"),
             node("Add", ["xg", "beta"], "xb"),
             node("Add", ["xb", "c"], "y")]
    return model(nodes, [tensor("x", [1, 3, 8, 8])], [tensor("y", [1, 8, 8, 8])], inits, 13)


def weight_standardised_conv() -> onnx.ModelProto:
    """NFNet's weight standardisation: the 8×3×3×3 weight reshaped to 1×8×27, normalised by a training-mode
    BatchNormalization (a function of the weight alone), reshaped back and used by a 3→8 3×3 conv."""
    inits = [zeros("w", (8, 3, 3, 3)), int64s("flat", [1, 8, 27]), int64s("back", [8, 3, 3, 3]),
             array("gain", np.ones(8), np.float32), array("zero", np.zeros(8), np.float32),
             array("one", np.ones(8), np.float32)]
    nodes = [node("Reshape", ["w", "flat"], "wf"),
             node("BatchNormalization", ["wf", "gain", "zero", "zero", "one"], "wn"),
             node("Reshape", ["wn", "back"], "ws"),
             node("Conv", ["x", "ws"], "y", name="conv", kernel_shape=[3, 3], pads=[1] * 4)]
    return model(nodes, [tensor("x", [1, 3, 8, 8])], [tensor("y", [1, 8, 8, 8])], inits, 15)


def constant_grid_encoding() -> onnx.ModelProto:
    """EdgeNeXt's positional encoding: a constant 1×4×8×8 grid (Range, Sin, Cos) through a 4→8 1×1 conv, added to
    the features of a 3→8 3×3 conv. The grid branch depends on no input: a constant."""
    inits = [zeros("w", (8, 3, 3, 3)), zeros("wp", (8, 4, 1, 1)), array("start", 0.0, np.float32),
             array("limit", 128.0, np.float32), array("delta", 1.0, np.float32), int64s("shape", [1, 2, 8, 8])]
    nodes = [node("Range", ["start", "limit", "delta"], "r"),
             node("Reshape", ["r", "shape"], "grid_half"),
             node("Sin", ["grid_half"], "s"),
             node("Cos", ["grid_half"], "co"),
             node("Concat", ["s", "co"], "grid", axis=1),
             node("Conv", ["grid", "wp"], "pos", kernel_shape=[1, 1]),
             node("Conv", ["x", "w"], "c", kernel_shape=[3, 3], pads=[1] * 4),
             node("Add", ["c", "pos"], "y")]
    return model(nodes, [tensor("x", [1, 3, 8, 8])], [tensor("y", [1, 8, 8, 8])], inits, 13)


def cumsum_grid_and_row_norm() -> onnx.ModelProto:
    """EdgeNeXt's pieces: a positional grid made by CumSum of ones (1×4×8×8, a constant) through a 4→8 1×1 conv,
    added to a 3→8 3×3 conv; then XCA's normalisation: the map viewed as 1×8×64 rows, ReduceL2 over each row
    (1×8×1), Expand back to 1×8×64 and a Div."""
    inits = [zeros("w", (8, 3, 3, 3)), zeros("wp", (8, 4, 1, 1)), array("ones", np.ones((1, 4, 8, 8)), np.float32),
             int64s("axis", [3]), int64s("rows", [1, 8, 64]), int64s("wide", [1, 8, 64]),
             int64s("back", [1, 8, 8, 8])]
    nodes = [node("CumSum", ["ones", "axis"], "grid"),
             node("Conv", ["grid", "wp"], "pos", kernel_shape=[1, 1]),
             node("Conv", ["x", "w"], "c", kernel_shape=[3, 3], pads=[1] * 4),
             node("Add", ["c", "pos"], "a"),
             node("Reshape", ["a", "rows"], "r"),
             node("ReduceL2", ["r"], "n", axes=[2], keepdims=1),
             node("Expand", ["n", "wide"], "ne"),
             node("Div", ["r", "ne"], "d"),
             node("Reshape", ["d", "back"], "y")]
    return model(nodes, [tensor("x", [1, 3, 8, 8])], [tensor("y", [1, 8, 8, 8])], inits, 13)


def as_strided_view(transposed: bool = False) -> onnx.ModelProto:
    """The dynamo exporter's `as_strided`: a 3→8 3×3 conv's 8×16×16 output flattened, then a Gather whose
    1×8×8×16 index enumerates rows 0..7 of every channel (a box), read by a 8→4 1×1 conv; `transposed` swaps the
    index's last two axes (not a box in order)."""
    c, h, w = np.meshgrid(np.arange(8), np.arange(8), np.arange(16), indexing="ij")
    index = (c * 256 + h * 16 + w).reshape(1, 8, 8, 16)
    if transposed:
        index = index.transpose(0, 1, 3, 2).copy()
    inits = [zeros("w", (8, 3, 3, 3)), zeros("w2", (4, 8, 1, 1)), int64s("flat", [-1]),
             numpy_helper.from_array(index.astype(np.int64), "index")]
    nodes = [node("Conv", ["x", "w"], "c", kernel_shape=[3, 3], pads=[1] * 4),
             node("Reshape", ["c", "flat"], "f"),
             node("Gather", ["f", "index"], "v", axis=0),
             node("Conv", ["v", "w2"], "y", name="head", kernel_shape=[1, 1])]
    out = [1, 4, 16, 8] if transposed else [1, 4, 8, 16]
    return model(nodes, [tensor("x", [1, 3, 16, 16])], [tensor("y", out)], inits, 13)
