"""Small ONNX models in the shapes real exporters produce, built with onnx.helper.

Each function returns a checked `ModelProto` imitating one exporter habit
(PyTorch's shape chains, tf2onnx's NHWC transposes, fp16 graphs, old-opset
attribute forms...). The tests save them, import them and compare with
shapes worked out by hand.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FLOAT, FLOAT16, INT64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64
Dim = int | str


def zeros(name: str, dims: Sequence[int], dtype: type = np.float32) -> TensorProto:
    """A real (all-zero) initializer: these models carry their weights."""
    return numpy_helper.from_array(np.zeros(tuple(dims), dtype), name)


def int64s(name: str, values: Sequence[int]) -> TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def floats(name: str, values: Sequence[float]) -> TensorProto:
    return numpy_helper.from_array(np.array(values, np.float32), name)


def tensor(name: str, dims: Sequence[Dim], elem: int = FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, list(dims))


def model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto],
          inits: list[TensorProto], opset: int, extra_domains: Sequence[str] = (),
          check: bool = True) -> onnx.ModelProto:
    opsets = [helper.make_opsetid("", opset), *(helper.make_opsetid(d, 1) for d in extra_domains)]
    graph = helper.make_graph(nodes, "pattern", inputs, outputs, inits)
    m = helper.make_model(graph, opset_imports=opsets, producer_name="tests")
    m.ir_version = helper.find_min_ir_version_for(opsets, ignore_unknown=True)
    if check:
        onnx.checker.check_model(m)
    return m


def conv_weights(prefix: str, out_c: int, in_c: int, k: int, bias: bool = True,
                 dtype: type = np.float32) -> tuple[list[str], list[TensorProto]]:
    inits = [zeros(f"{prefix}.weight", (out_c, in_c, k, k), dtype)]
    if bias:
        inits.append(zeros(f"{prefix}.bias", (out_c,), dtype))
    return [t.name for t in inits], inits


def bn_params(prefix: str, c: int) -> tuple[list[str], list[TensorProto]]:
    inits = [zeros(f"{prefix}.{p}", (c,)) for p in ("weight", "bias", "running_mean", "running_var")]
    return [t.name for t in inits], inits


# ----- (a) PyTorch opset 17 ------------------------------------------------------------------
def pytorch_classifier(flatten: bool) -> onnx.ModelProto:
    """Conv+BN+ReLU, MaxPool, then x.view(x.size(0), -1) (or torch.flatten) and a Linear.

    Input 1? (symbolic batch) × 3 × 32 × 32; conv 3→8 3×3 pad 1; pool 2×2; fc 2048→10.
    """
    w, inits = conv_weights("conv", 8, 3, 3)
    bn, bn_inits = bn_params("bn", 8)
    inits += [*bn_inits, zeros("fc.weight", (10, 2048)), zeros("fc.bias", (10,))]
    nodes = [
        helper.make_node("Conv", ["x", *w], ["c"], name="/conv/Conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", *bn], ["b"], name="/bn/BatchNormalization"),
        helper.make_node("Relu", ["b"], ["r"], name="/relu/Relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="/pool/MaxPool", kernel_shape=[2, 2], strides=[2, 2]),
    ]
    if flatten:
        nodes.append(helper.make_node("Flatten", ["p"], ["flat"], name="/Flatten", axis=1))
    else:
        scalar0 = helper.make_tensor("v", INT64, [], [0])
        nodes += [
            helper.make_node("Shape", ["p"], ["shape"], name="/Shape"),
            helper.make_node("Constant", [], ["idx"], name="/Constant", value=scalar0),
            helper.make_node("Gather", ["shape", "idx"], ["batch"], name="/Gather", axis=0),
            helper.make_node("Constant", [], ["axes"], name="/Constant_1", value_ints=[0]),
            helper.make_node("Unsqueeze", ["batch", "axes"], ["batch1"], name="/Unsqueeze"),
            helper.make_node("Constant", [], ["minus1"], name="/Constant_2", value_ints=[-1]),
            helper.make_node("Concat", ["batch1", "minus1"], ["target"], name="/Concat", axis=0),
            helper.make_node("Reshape", ["p", "target"], ["flat"], name="/Reshape"),
        ]
    nodes.append(helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["logits"], name="/fc/Gemm", transB=1))
    return model(nodes, [tensor("x", ["batch_size", 3, 32, 32])], [tensor("logits", ["batch_size", 10])], inits, 17)


def dynamic_flatten() -> onnx.ModelProto:
    """The flatten target computed the long way, as traced dynamic-shape exports do:
    Range picks dims 1..3 of Shape, ReduceProd multiplies them, Where/Equal guard a zero batch,
    Expand broadcasts the result; then Reshape and a Linear 2048→10 (input 8×16×16)."""
    inits = [int64s("one", [1]), int64s("four", [4]), int64s("zero", [0]), int64s("idx0", [0]), int64s("len2", [2]),
             zeros("fc.weight", (10, 2048))]
    scalar = {name: helper.make_tensor("v", INT64, [], [value]) for name, value in (("s1", 1), ("s4", 4))}
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Constant", [], ["start"], value=scalar["s1"]),
        helper.make_node("Constant", [], ["limit"], value=scalar["s4"]),
        helper.make_node("Constant", [], ["delta"], value_int=1),
        helper.make_node("Range", ["start", "limit", "delta"], ["axes"]),
        helper.make_node("Gather", ["shape", "axes"], ["chw"], axis=0),
        helper.make_node("ReduceProd", ["chw"], ["features"], keepdims=1),
        helper.make_node("Gather", ["shape", "idx0"], ["batch"], axis=0),
        helper.make_node("Equal", ["batch", "zero"], ["is_zero"]),
        helper.make_node("Where", ["is_zero", "one", "batch"], ["batch1"]),
        helper.make_node("Concat", ["batch1", "features"], ["target"], axis=0),
        helper.make_node("Expand", ["target", "len2"], ["target2"]),
        helper.make_node("Reshape", ["x", "target2"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fc.weight"], ["y"], name="fc", transB=1),
    ]
    return model(nodes, [tensor("x", [1, 8, 16, 16])], [tensor("y", [1, 10])], inits, 17)


def vector_input() -> onnx.ModelProto:
    """A rank-2 input (1×64) straight into a Linear 64→10."""
    node = helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="fc", transB=1)
    return model([node], [tensor("x", [1, 64])], [tensor("y", [1, 10])], [zeros("w", (10, 64)), zeros("b", (10,))], 13)


def swish_block() -> onnx.ModelProto:
    """PyTorch's SiLU: y = c * sigmoid(c) after a conv (3→4, 1×1, 8×8)."""
    w, inits = conv_weights("conv", 4, 3, 1)
    nodes = [
        helper.make_node("Conv", ["x", *w], ["c"], name="conv", kernel_shape=[1, 1]),
        helper.make_node("Sigmoid", ["c"], ["s"], name="sigmoid"),
        helper.make_node("Mul", ["c", "s"], ["y"], name="mul"),
    ]
    return model(nodes, [tensor("x", [1, 3, 8, 8])], [tensor("y", [1, 4, 8, 8])], inits, 17)


# ----- (b) tf2onnx NHWC -------------------------------------------------------------------------
def tf2onnx_nhwc() -> onnx.ModelProto:
    """Keras-style NHWC 32×32×3 input, convs sandwiched in Transposes, residual add in NHWC,
    ReduceMean over H, W and a Dense layer as MatMul + Add."""
    w1, inits = conv_weights("conv1", 16, 3, 3)
    w2, more = conv_weights("conv2", 16, 16, 1)
    inits += [*more, zeros("dense/kernel", (16, 10)), zeros("dense/bias", (10,))]
    to_nchw, to_nhwc = [0, 3, 1, 2], [0, 2, 3, 1]
    nodes = [
        helper.make_node("Transpose", ["input_1"], ["t0"], name="conv1__6", perm=to_nchw),
        helper.make_node("Conv", ["t0", *w1], ["c1"], name="conv1", strides=[2, 2], kernel_shape=[3, 3],
                         auto_pad="SAME_UPPER"),
        helper.make_node("Transpose", ["c1"], ["t1"], name="conv1__7", perm=to_nhwc),
        helper.make_node("Relu", ["t1"], ["r1"], name="relu1"),
        helper.make_node("Transpose", ["r1"], ["t2"], name="conv2__8", perm=to_nchw),
        helper.make_node("Conv", ["t2", *w2], ["c2"], name="conv2", kernel_shape=[1, 1]),
        helper.make_node("Transpose", ["c2"], ["t3"], name="conv2__9", perm=to_nhwc),
        helper.make_node("Add", ["r1", "t3"], ["sum"], name="add"),
        helper.make_node("ReduceMean", ["sum"], ["gap"], name="gap", axes=[1, 2], keepdims=0),
        helper.make_node("MatMul", ["gap", "dense/kernel"], ["mm"], name="dense/MatMul"),
        helper.make_node("Add", ["mm", "dense/bias"], ["logits"], name="dense/BiasAdd"),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    return model(nodes, [tensor("input_1", ["unk__1", 32, 32, 3])], [tensor("probs", ["unk__2", 10])], inits, 13)


# ----- (c) fp16 ------------------------------------------------------------------------------------
def fp16_net() -> onnx.ModelProto:
    """fp16 input, weights and output; a conv (3→4, 3×3, pad 1) at 16×16 with Casts around a ReLU."""
    w, inits = conv_weights("conv", 4, 3, 3, dtype=np.float16)
    nodes = [
        helper.make_node("Conv", ["x", *w], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Cast", ["c"], ["c32"], name="to_fp32", to=FLOAT),
        helper.make_node("Relu", ["c32"], ["r"], name="relu"),
        helper.make_node("Cast", ["r"], ["y"], name="to_fp16", to=FLOAT16),
    ]
    return model(nodes, [tensor("x", [1, 3, 16, 16], FLOAT16)], [tensor("y", [1, 4, 16, 16], FLOAT16)], inits, 13)


# ----- (d) weights in an external file -----------------------------------------------------------
def external_candidate() -> onnx.ModelProto:
    """Conv 3→16 3×3 (1728-byte weight: external) at 8×8, Reshape to [1, -1], Linear 1024→10."""
    w, inits = conv_weights("conv", 16, 3, 3)
    inits += [int64s("flat_shape", [1, -1]), zeros("fc.weight", (10, 1024)), zeros("fc.bias", (10,))]
    nodes = [
        helper.make_node("Conv", ["x", *w], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Reshape", ["c", "flat_shape"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1),
    ]
    return model(nodes, [tensor("x", [1, 3, 8, 8])], [tensor("y", [1, 10])], inits, 17)


# ----- (e) one op at a time ------------------------------------------------------------------------
def single(op: str, x_dims: Sequence[int], y_dims: Sequence[Dim], opset: int, inputs: Sequence[str] = (),
           inits: Sequence[TensorProto] = (), **attrs: object) -> onnx.ModelProto:
    """x → op → y, the op's extra inputs taken from `inits` (names in `inputs`, '' for absent)."""
    node = helper.make_node(op, ["x", *inputs], ["y"], name=op.lower(), **attrs)
    return model([node], [tensor("x", x_dims)], [tensor("y", y_dims)], list(inits), opset)


def upsample7() -> onnx.ModelProto:
    return single("Upsample", [1, 4, 8, 8], [1, 4, 16, 16], 7, scales=[1.0, 1.0, 2.0, 2.0], mode="nearest")


def upsample9() -> onnx.ModelProto:
    return single("Upsample", [1, 4, 8, 8], [1, 4, 16, 24], 9, ["scales"], [floats("scales", [1, 1, 2, 3])])


def resize11_scales() -> onnx.ModelProto:
    return single("Resize", [1, 4, 8, 8], [1, 4, 16, 24], 11, ["roi", "scales"],
                  [floats("roi", []), floats("scales", [1, 1, 2, 3])], mode="nearest")


def resize13_sizes() -> onnx.ModelProto:
    return single("Resize", [1, 4, 8, 8], [1, 4, 24, 16], 13, ["", "", "sizes"], [int64s("sizes", [1, 4, 24, 16])],
                  mode="linear")


def resize10() -> onnx.ModelProto:
    return single("Resize", [1, 4, 8, 8], [1, 4, 16, 16], 10, ["scales"], [floats("scales", [1, 1, 2, 2])])


def depth_to_space() -> onnx.ModelProto:
    return single("DepthToSpace", [1, 16, 4, 4], [1, 4, 8, 8], 13, blocksize=2, mode="CRD")


def conv_transpose(output_shape: bool) -> onnx.ModelProto:
    """8→4 channels, 4×4 kernel, stride 2 on 8×8: pads 1 (or output_shape 16×16) give 16×16."""
    inits = [zeros("w", (8, 4, 4, 4))]
    geometry = {"output_shape": [16, 16]} if output_shape else {"pads": [1, 1, 1, 1]}
    return single("ConvTranspose", [1, 8, 8, 8], [1, 4, 16, 16], 13, ["w"], inits, strides=[2, 2],
                  kernel_shape=[4, 4], **geometry)


def conv_then(op_nodes: list[onnx.NodeProto], inits: list[TensorProto], opset: int, y: str = "y",
              out_c: int = 8) -> onnx.ModelProto:
    """x (1×3×10×10) → conv 3→8 3×3 pad 1 named 'conv' writing 'c' → `op_nodes` → y."""
    w, conv_inits = conv_weights("conv", 8, 3, 3)
    nodes = [helper.make_node("Conv", ["x", *w], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             *op_nodes]
    return model(nodes, [tensor("x", [1, 3, 10, 10])], [tensor(y, [1, out_c, 10, 10])], conv_inits + inits, opset)


def clip(opset: int, lo: float, hi: float) -> onnx.ModelProto:
    """Conv then Clip(lo, hi): bounds as attributes before opset 11, inputs from 11."""
    if opset < 11:
        return conv_then([helper.make_node("Clip", ["c"], ["y"], name="clip", min=float(lo), max=float(hi))], [], opset)
    bounds = [numpy_helper.from_array(np.array(lo, np.float32), "lo"),
              numpy_helper.from_array(np.array(hi, np.float32), "hi")]
    return conv_then([helper.make_node("Clip", ["c", "lo", "hi"], ["y"], name="clip")], bounds, opset)


def prelu() -> onnx.ModelProto:
    return conv_then([helper.make_node("PRelu", ["c", "slope"], ["y"], name="prelu")], [zeros("slope", (8, 1, 1))], 13)


def dropout_identity() -> onnx.ModelProto:
    """Conv → Dropout (opset 13, mask unused) → Identity → ReLU: all three fold into the conv."""
    nodes = [helper.make_node("Dropout", ["c"], ["d", "mask"], name="dropout"),
             helper.make_node("Identity", ["d"], ["i"], name="identity"),
             helper.make_node("Relu", ["i"], ["y"], name="relu")]
    return conv_then(nodes, [], 13)


def split(opset: int) -> onnx.ModelProto:
    """Conv (8 ch) split into channels 2+6 (11: attribute, 13: input) or 4+4 (18: num_outputs), ReLU on
    the first part, then concatenated back in reverse order."""
    if opset >= 18:
        node = helper.make_node("Split", ["c"], ["a", "b"], name="split", axis=1, num_outputs=2)
        inits = []
    elif opset >= 13:
        node = helper.make_node("Split", ["c", "sizes"], ["a", "b"], name="split", axis=1)
        inits = [int64s("sizes", [2, 6])]
    else:
        node = helper.make_node("Split", ["c"], ["a", "b"], name="split", axis=1, split=[2, 6])
        inits = []
    nodes = [node, helper.make_node("Relu", ["a"], ["ra"], name="relu"),
             helper.make_node("Concat", ["b", "ra"], ["y"], name="concat", axis=1)]
    return conv_then(nodes, inits, opset)


def sum3() -> onnx.ModelProto:
    """Three 1×1 convs of x summed by one Sum node, inputs in the order c, a, b."""
    inits, nodes = [], []
    for name in ("a", "b", "c"):
        w, more = conv_weights(name, 8, 3, 1)
        inits += more
        nodes.append(helper.make_node("Conv", ["x", *w], [name], name=f"conv_{name}", kernel_shape=[1, 1]))
    nodes.append(helper.make_node("Sum", ["c", "a", "b"], ["y"], name="sum"))
    return model(nodes, [tensor("x", [1, 3, 10, 10])], [tensor("y", [1, 8, 10, 10])], inits, 13)


def squeeze_excite(opset: int) -> onnx.ModelProto:
    """Conv (8 ch, 10×10) → ReduceMean over H, W keepdims (axes: attribute ≤ 17, input ≥ 18) →
    1×1 conv 8→8 → Sigmoid → Mul with the conv output."""
    w, inits = conv_weights("se", 8, 8, 1)
    if opset >= 18:
        mean = helper.make_node("ReduceMean", ["c", "axes"], ["m"], name="mean", keepdims=1)
        inits.append(int64s("axes", [2, 3]))
    else:
        mean = helper.make_node("ReduceMean", ["c"], ["m"], name="mean", axes=[2, 3], keepdims=1)
    nodes = [mean,
             helper.make_node("Conv", ["m", *w], ["s"], name="se", kernel_shape=[1, 1]),
             helper.make_node("Sigmoid", ["s"], ["g"], name="gate"),
             helper.make_node("Mul", ["c", "g"], ["y"], name="scale")]
    return conv_then(nodes, inits, opset)


def bn_after_shared_concat() -> onnx.ModelProto:
    """DenseNet's pattern: concat(x, conv(x)) feeds a BN+ReLU+conv and the next concat."""
    w1, inits = conv_weights("conv1", 5, 3, 3)
    w2, more = conv_weights("conv2", 4, 8, 1)
    bn, bn_inits = bn_params("bn", 8)
    inits += more + bn_inits
    nodes = [
        helper.make_node("Conv", ["x", *w1], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Concat", ["x", "c1"], ["cat1"], name="cat1", axis=1),
        helper.make_node("BatchNormalization", ["cat1", *bn], ["b"], name="bn"),
        helper.make_node("Relu", ["b"], ["r"], name="relu"),
        helper.make_node("Conv", ["r", *w2], ["c2"], name="conv2", kernel_shape=[1, 1]),
        helper.make_node("Concat", ["cat1", "c2"], ["y"], name="cat2", axis=1),
    ]
    return model(nodes, [tensor("x", [1, 3, 10, 10])], [tensor("y", [1, 12, 10, 10])], inits, 13)


INT64_MAX = 2**63 - 1


def slices(opset: int) -> onnx.ModelProto:
    """Conv (8×10×10) → Slice channels [2, 6), rows [1, end), columns [−8, −1):
    attributes at opset 9, inputs (with steps) from 10."""
    starts, ends, axes = [2, 1, -8], [6, INT64_MAX, -1], [1, 2, 3]
    if opset < 10:
        node = helper.make_node("Slice", ["c"], ["y"], name="slice", starts=starts, ends=ends, axes=axes)
        inits = []
    else:
        node = helper.make_node("Slice", ["c", "starts", "ends", "axes", "steps"], ["y"], name="slice")
        inits = [int64s("starts", starts), int64s("ends", ends), int64s("axes", axes), int64s("steps", [1, 1, 1])]
    return conv_then([node], inits, opset)


def gap_squeeze_fc(opset: int) -> onnx.ModelProto:
    """Conv (8 ch) → GlobalAveragePool → Squeeze H, W (attribute ≤ 12, input ≥ 13) → Gemm 8→10."""
    if opset >= 13:
        squeeze = helper.make_node("Squeeze", ["g", "axes"], ["s"], name="squeeze")
        inits = [int64s("axes", [2, 3])]
    else:
        squeeze = helper.make_node("Squeeze", ["g"], ["s"], name="squeeze", axes=[2, 3])
        inits = []
    inits += [zeros("fc.weight", (10, 8)), zeros("fc.bias", (10,))]
    nodes = [helper.make_node("GlobalAveragePool", ["c"], ["g"], name="gap"), squeeze,
             helper.make_node("Gemm", ["s", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1)]
    w, conv_inits = conv_weights("conv", 8, 3, 3)
    nodes.insert(0, helper.make_node("Conv", ["x", *w], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    return model(nodes, [tensor("x", [1, 3, 10, 10])], [tensor("y", [1, 10])], conv_inits + inits, opset)


def conv_on_nhwc() -> onnx.ModelProto:
    """A Transpose to channels-last straight into a Conv: hwsim cannot run that Conv."""
    w, inits = conv_weights("conv", 4, 3, 1)
    nodes = [helper.make_node("Transpose", ["x"], ["t"], name="to_nhwc", perm=[0, 2, 3, 1]),
             helper.make_node("Conv", ["t", *w], ["y"], name="conv", kernel_shape=[1, 1])]
    return model(nodes, [tensor("x", [1, 3, 8, 8])], [tensor("y", [1, 4, 8, 3])], inits, 13)


# ----- (f) padding ---------------------------------------------------------------------------------
def pad_then_conv(pads: Sequence[int], conv_pads: Sequence[int]) -> onnx.ModelProto:
    """x 1×3×10×10 → Pad (opset 11, `pads` in ONNX order) → conv 3→8 3×3 with `conv_pads`."""
    w, inits = conv_weights("conv", 8, 3, 3)
    inits.append(int64s("pads", pads))
    nodes = [helper.make_node("Pad", ["x", "pads"], ["p"], name="pad", mode="constant"),
             helper.make_node("Conv", ["p", *w], ["y"], name="conv", kernel_shape=[3, 3], pads=list(conv_pads))]
    return model(nodes, [tensor("x", [1, 3, 10, 10])], [tensor("y", [1, 8, "h", "w"])], inits, 11)


def pad_then_relu() -> onnx.ModelProto:
    """A Pad whose reader cannot absorb it (opset 2-10 form, `pads` attribute)."""
    nodes = [helper.make_node("Pad", ["x"], ["p"], name="pad", pads=[0, 0, 1, 1, 0, 0, 1, 1]),
             helper.make_node("Relu", ["p"], ["y"], name="relu")]
    return model(nodes, [tensor("x", [1, 3, 10, 10])], [tensor("y", [1, 3, 12, 12])], [], 9)


# ----- (g) ceil mode ---------------------------------------------------------------------------------
def ceil_pools() -> onnx.ModelProto:
    """x 1×8×28×28 → MaxPool 3×3 s2 ceil → AveragePool 2×2 s2 ceil."""
    nodes = [helper.make_node("MaxPool", ["x"], ["m"], name="maxpool", kernel_shape=[3, 3], strides=[2, 2],
                              ceil_mode=1),
             helper.make_node("AveragePool", ["m"], ["y"], name="avgpool", kernel_shape=[2, 2], strides=[2, 2],
                              ceil_mode=1)]
    return model(nodes, [tensor("x", [1, 8, 28, 28])], [tensor("y", [1, 8, 7, 7])], [], 13)


# ----- unknown ops ----------------------------------------------------------------------------------
def with_space_to_depth() -> onnx.ModelProto:
    """Conv → SpaceToDepth (a standard op hwsim does not model) → ReLU."""
    nodes = [helper.make_node("SpaceToDepth", ["c"], ["s"], name="s2d", blocksize=2),
             helper.make_node("Relu", ["s"], ["y"], name="relu")]
    return conv_then(nodes, [], 13, out_c=32)


def with_custom_op() -> onnx.ModelProto:
    """Conv → com.example FancyOp → output."""
    w, inits = conv_weights("conv", 8, 3, 3)
    nodes = [helper.make_node("Conv", ["x", *w], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("FancyOp", ["c"], ["y"], name="fancy", domain="com.example")]
    return model(nodes, [tensor("x", [1, 3, 10, 10])], [tensor("y", [1, 8, 10, 10])], inits, 13, ["com.example"])


def symbolic_image() -> onnx.ModelProto:
    """A fully convolutional net with symbolic height and width."""
    w, inits = conv_weights("conv", 8, 3, 3)
    node = helper.make_node("Conv", ["x", *w], ["y"], name="conv", kernel_shape=[3, 3], strides=[2, 2])
    return model([node], [tensor("x", ["N", 3, "H", "W"])], [tensor("y", ["N", 8, "h", "w"])], inits, 13)
