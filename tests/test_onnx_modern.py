"""Import of quantized graphs, normalisations, matrix products, reductions, any resize, shape arithmetic
and --allow-unknown reporting.

Every count is derived by hand in a comment next to its assertion. For a norm
layer over e elements in g sets the importer counts, per element, the add to
the mean's sum, the subtraction of the mean, the square, the add to the
variance's sum and the scaling by 1/σ (5 e), the affine scale and shift (2 e),
and per set the two divisions, the + ε, the square root and the reciprocal
(5 g). A resize output costs taps products and taps − 1 sums (taps: 1 nearest,
4 linear, 16 cubic; nearest is a copy, 0). A reduction costs one op per input
element, a softmax 3 per element, an element-wise layer of n inputs n − 1 per
output element.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnx_modern as M
import pytest

from hwsim.errors import NetworkError
from hwsim.workload import LayerKind, Padding, Shape, onnx_import
from hwsim.workload.ir import Graph, Layer, Precision
from hwsim.workload.onnx_import import ImportResult, load_onnx


def load(model: onnx.ModelProto, tmp_path: Path, **options: object) -> ImportResult:
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    return load_onnx(path, **options)  # type: ignore[arg-type]


def kinds(g: Graph) -> list[str]:
    return [l.kind.value for l in g]


def only(g: Graph, kind: LayerKind) -> Layer:
    (layer,) = g.of_kind(kind)
    return layer


# ----- quantized graphs --------------------------------------------------------------------------------
def test_qdq_pairs_fold_and_keep_fusion(tmp_path: Path) -> None:
    result = load(M.qdq_mixed(), tmp_path)
    g = result.graph
    assert kinds(g) == ["input", "conv", "conv", "conv", "output"] and result.warnings == ()
    c1, c2, c3 = g.of_kind(LayerKind.CONV)
    assert c1.activation == "relu"  # the ReLU between two QDQ pairs still fuses into conv1
    # conv1: 4 × 8 × 8 outputs × 3·3·3 = 6912; conv2: 8 × 64 × 4 = 2048; conv3: 2 × 64 × 8 = 1024.
    assert (c1.macs, c2.macs, c3.macs) == (6912, 2048, 1024)
    assert c1.precision == Precision(8, 8, 32)  # int8 weights and input, int32 bias
    assert c2.precision == Precision(None, 8, None)  # float weights on an int8 activation
    assert c3.precision == Precision(16, 16, 32)  # int16 weights, input quantized with an int16 zero point


@pytest.mark.parametrize("zero_point, activation", [(-128, "relu"), (-3, None)])
def test_relu_folded_into_qdq_comes_back(tmp_path: Path, zero_point: int, activation: str | None) -> None:
    g = load(M.qdq_folded_relu(zero_point), tmp_path).graph
    assert kinds(g) == ["input", "conv", "conv", "output"]
    assert g.layer("conv1").activation == activation and g.layer("conv2").activation is None


def test_qlinear_conv(tmp_path: Path) -> None:
    g = load(M.qlinear_conv(), tmp_path).graph
    assert kinds(g) == ["input", "conv", "max_pool", "output"]
    conv, pool = g.layer("qconv"), g.layer("pool")
    assert conv.macs == 4 * 8 * 8 * 27 and conv.has_bias  # 6912
    assert conv.precision == Precision(8, 8, 32)
    assert pool.precision == Precision(None, 8, None)  # reads QLinearConv's uint8 output
    assert pool.ops == 4 * 4 * 4 * 4  # 64 outputs × a 2×2 window = 256


def test_qlinear_matmul(tmp_path: Path) -> None:
    fc = only(load(M.qlinear_matmul(), tmp_path).graph, LayerKind.FC)
    assert fc.macs == 16 * 10 and fc.precision == Precision(8, 8, 32)


def test_conv_integer(tmp_path: Path) -> None:
    conv = only(load(M.conv_integer(), tmp_path).graph, LayerKind.CONV)
    assert conv.macs == 6912 and conv.precision == Precision(8, 8, 32)  # uint8 image by its zero point


def test_matmul_integer(tmp_path: Path) -> None:
    fc = only(load(M.matmul_integer(), tmp_path).graph, LayerKind.FC)
    assert fc.macs == 160 and fc.precision == Precision(8, 8, 32)


def test_float_graph_has_no_precision(tmp_path: Path) -> None:
    g = load(M.pixel_linear(), tmp_path).graph
    assert all(l.precision is None for l in g)


# ----- normalisation ----------------------------------------------------------------------------------------
def test_layer_norm_over_channels(tmp_path: Path) -> None:
    g = load(M.layer_norm_nhwc(), tmp_path).graph
    assert kinds(g) == ["input", "norm", "output"]
    ln = g.layer("ln")
    # 3 × 5 pixels, each a set of C = 4: g = 15, e = 60: 5·60 + 2·60 + 5·15 = 495; params γ, β: 2 × 4.
    assert ln.groups == 15 and ln.ops == 495 and ln.params == 8 and ln.macs == 0


def test_decomposed_layer_norm_is_one_layer(tmp_path: Path) -> None:
    g = load(M.layer_norm_decomposed(), tmp_path).graph
    assert kinds(g) == ["input", "norm", "output"]
    ln = only(g, LayerKind.NORM)
    assert ln.groups == 15 and ln.fused_bn and ln.ops == 495  # as the LayerNormalization op, γ and β fused


def test_instance_norm(tmp_path: Path) -> None:
    norm = only(load(M.instance_norm(), tmp_path).graph, LayerKind.NORM)
    # one set per channel: g = 4, e = 60: 300 + 120 + 20 = 440
    assert norm.groups == 4 and norm.ops == 440


def test_group_norm(tmp_path: Path) -> None:
    norm = only(load(M.group_norm(), tmp_path).graph, LayerKind.NORM)
    # num_groups 2: 300 + 120 + 10 = 430
    assert norm.groups == 2 and norm.ops == 430


def test_reductions_over_channels_and_width(tmp_path: Path) -> None:
    g = load(M.reductions(), tmp_path).graph
    total, mean = g.layer("sum_c"), g.layer("mean_w")
    assert total.kind is LayerKind.REDUCE and total.out_shape == Shape(1, 3, 5)
    assert total.ops == 60  # every one of the 60 input elements added once
    assert mean.kind is LayerKind.REDUCE and mean.out_shape.elements == 4 * 3 and mean.ops == 60


def test_max_and_min_reductions(tmp_path: Path) -> None:
    g = load(M.reduce_extremes(), tmp_path).graph
    max_c, min_h, max_hw = g.layer("max_c"), g.layer("min_h"), g.layer("max_hw")
    assert max_c.kind is LayerKind.REDUCE and max_c.out_shape == Shape(1, 3, 5)
    assert min_h.kind is LayerKind.REDUCE and min_h.out_shape.elements == 4 * 5  # height dropped: 4 × 5
    assert max_hw.kind is LayerKind.GLOBAL_MAX_POOL and max_hw.out_shape == Shape(4, 1, 1)
    assert max_c.ops == min_h.ops == max_hw.ops == 60  # one comparison per input element
    assert g.total_macs == 0


def test_gather_unbinds_heads_and_takes_the_class_token(tmp_path: Path) -> None:
    g = load(M.token_heads(), tmp_path).graph
    assert kinds(g) == ["input", "conv", "slice", "slice", "add", "slice", "fc", "output"]
    q, v, cls = g.layer("take_q"), g.layer("take_v"), g.layer("take_cls")
    assert q.out_shape.elements == v.out_shape.elements == 7 * 8  # one of the three 7 × 8 projections each
    assert q.ops == v.ops == cls.ops == 0  # a view of a range: no arithmetic
    assert g.layer("add").ops == 56  # 7 × 8 sums
    assert cls.out_shape == Shape(8, 1, 1)
    # qkv: 7 tokens × 8 → 24 = 1344; head: 8 → 10 = 80
    assert g.layer("qkv_proj").macs == 1344 and g.layer("fc").macs == 80 and g.total_macs == 1424


def test_expand_of_activation_is_a_copy(tmp_path: Path) -> None:
    g = load(M.expand_context(), tmp_path).graph
    assert kinds(g) == ["input", "reduce", "upsample", "mul", "output"]
    expand, mul = g.layer("expand"), g.layer("mul")
    # [1, 4, 3, 1] broadcast along width to [1, 4, 3, 5]: a nearest 1×5 upsample, no arithmetic
    assert expand.factor == (1, 5) and expand.out_shape == Shape(4, 3, 5) and expand.ops == 0
    assert mul.ops == 60  # 60 outputs of a two-input product


# ----- activations ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("order", ["legacy", "dynamo"])
def test_gelu_chain_fuses(tmp_path: Path, order: str) -> None:
    g = load(M.conv_gelu(order), tmp_path).graph
    assert kinds(g) == ["input", "conv", "output"]
    assert g.layer("conv").activation == "gelu"


@pytest.mark.parametrize("op, activation", [("HardSwish", "hard_swish"), ("Erf", "erf"), ("Gelu", "gelu"),
                                           ("Floor", "floor"), ("Ceil", "ceil"), ("Round", "round")])
def test_single_activation_fuses(tmp_path: Path, op: str, activation: str) -> None:
    g = load(M.conv_then_activation(op, opset=20 if op == "Gelu" else 14), tmp_path).graph  # Gelu: opset 20
    assert kinds(g) == ["input", "conv", "output"] and g.layer("conv").activation == activation


# ----- matrix products -------------------------------------------------------------------------------------------
def test_per_pixel_linear_is_a_1x1_conv(tmp_path: Path) -> None:
    g = load(M.pixel_linear(), tmp_path).graph
    fc = only(g, LayerKind.CONV)
    # 3 × 5 pixels, each 4 → 6: 15 · 4 · 6 = 360 MACs; the Add is its bias
    assert fc.macs == 360 and fc.has_bias and fc.kernel == (1, 1) and fc.out_shape == Shape(6, 3, 5)
    assert fc.params == 4 * 6 + 6


def test_attention(tmp_path: Path) -> None:
    g = load(M.attention(), tmp_path).graph
    projections = [g.layer(f"proj_{p}") for p in "qkvo"]
    assert all(p.kind is LayerKind.CONV and p.macs == 6 * 8 * 8 for p in projections)  # 6 tokens, 8 → 8: 384
    qk, av, softmax = g.layer("qk"), g.layer("av"), g.layer("softmax")
    assert qk.kind is LayerKind.MATMUL and qk.inputs == ("proj_q", "proj_k")
    assert qk.macs == 2 * 6 * 6 * 4  # 2 heads × 6×6 scores × a dot product of 4: 288
    assert av.kind is LayerKind.MATMUL and av.macs == 2 * 6 * 4 * 6  # 2 heads × 6×4 outputs × 6 tokens: 288
    assert softmax.ops == 3 * 2 * 6 * 6  # exp, sum, divide per score: 216
    assert qk.fused_bn  # the ½ scaling folds into the product
    assert g.total_macs == 4 * 384 + 288 + 288  # 2112


def test_tokens_back_to_an_image(tmp_path: Path) -> None:
    g = load(M.tokens_to_image(), tmp_path).graph
    conv = g.layer("conv")
    assert conv.in_shape == Shape(8, 2, 3) and conv.out_shape == Shape(4, 2, 3)
    assert conv.macs == 4 * 6 * 8 * 9  # 4 × 2 × 3 outputs × 8·3·3: 1728
    assert g.layer("linear").macs == 6 * 8 * 8  # 384


@pytest.mark.parametrize("tokens", [1, 2])
def test_class_token_concat(tmp_path: Path, tokens: int) -> None:
    g = load(M.class_token(tokens), tmp_path).graph
    cat, ln = g.layer("concat"), g.layer("ln")
    assert cat.kind is LayerKind.CONCAT and len(cat.inputs) == 1  # the constant is no tensor
    assert cat.out_shape.elements == (6 + tokens) * 8
    assert cat.params == tokens * 8  # the learned token(s), 8 wide
    assert ln.groups == 6 + tokens


# ----- resize ------------------------------------------------------------------------------------------------------
def test_fractional_bilinear_resize(tmp_path: Path) -> None:
    r = only(load(M.resize_scales(1.5, "linear"), tmp_path).graph, LayerKind.RESIZE)
    # 2 × 15 × 15 = 450 outputs, 4 taps each: 4 products + 3 sums = 7 → 3150
    assert r.out_shape == Shape(2, 15, 15) and r.ops == 3150


def test_fractional_nearest_resize_is_a_copy(tmp_path: Path) -> None:
    r = only(load(M.resize_scales(1.5, "nearest"), tmp_path).graph, LayerKind.RESIZE)
    assert r.out_shape == Shape(2, 15, 15) and r.ops == 0


def test_integer_cubic_upsample(tmp_path: Path) -> None:
    up = only(load(M.resize_scales(2.0, "cubic"), tmp_path).graph, LayerKind.UPSAMPLE)
    # 2 × 20 × 20 = 800 outputs, 16 taps: 16 + 15 = 31 → 24800
    assert up.factor == (2, 2) and up.ops == 24800


@pytest.mark.parametrize("how", ["constant", "mixed"])
def test_fixed_resize_sizes_under_input_are_named(tmp_path: Path, how: str) -> None:
    path = tmp_path / "fixed.onnx"
    onnx.save(M.resize_sizes(how), str(path))
    assert load_onnx(path).graph.layer("resize").out_shape == Shape(2, 15, 15)
    assert load_onnx(path, input_hw=(10, 10)).graph.layer("resize").out_shape == Shape(2, 15, 15)  # same size
    with pytest.raises(NetworkError) as info:
        load_onnx(path, input_hw=(12, 12))
    message = str(info.value)
    assert "\n" not in message and "'resize'" in message and "[15, 15]" in message and "--input" in message


def test_resize_sizes_from_shape_follow_input(tmp_path: Path) -> None:
    r = load(M.resize_sizes("shape"), tmp_path, input_hw=(12, 12)).graph.layer("resize")
    # floor(12 × 1.5) = 18: 2 × 18 × 18 = 648 outputs × 7 = 4536
    assert r.out_shape == Shape(2, 18, 18) and r.ops == 4536


# ----- shape arithmetic ------------------------------------------------------------------------------------------
def test_tf_same_padding_folds(tmp_path: Path) -> None:
    conv = load(M.tf_same_padding(), tmp_path).graph.layer("conv")
    # total = max((ceil(9/2) − 1)·2 + 3 − 9, 0) = 2: one on each side; (9 + 2 − 3) // 2 + 1 = 5
    assert conv.padding == Padding(1, 1, 1, 1) and conv.out_shape == Shape(4, 5, 5)
    assert conv.macs == 4 * 25 * 27  # 2700


@pytest.mark.parametrize("size", [4, 80])
def test_scatter_mask_folds(tmp_path: Path, size: int) -> None:
    """Swin's attention mask is written by slice assignment (ScatterND, ScatterElements) on constants; at 80×80
    it is past the folding limit and followed by shape only. Either way it is a bias on the conv."""
    result = load(M.scatter_mask(size), tmp_path)
    assert kinds(result.graph) == ["input", "conv", "output"] and result.warnings == ()
    conv = result.graph.layer("conv")
    assert conv.macs == 2 * 2 * size * size and conv.has_bias  # 2 → 2 channels, 1×1, size² pixels


SCATTERS = [
    ("ScatterND", [[1], [3]], (2, 3), {}),
    ("ScatterND", [[0, 2], [3, 1], [0, 2]], (3,), {"reduction": "add"}),  # a repeated index accumulates
    ("ScatterND", [[2]], (1, 3), {"reduction": "mul"}),
    ("ScatterElements", [[1, 0, 2], [-1, 2, 0]], (2, 3), {"axis": 0}),  # negative indices count from the end
    ("ScatterElements", [[0, 0], [2, 1]], (2, 2), {"axis": 1, "reduction": "max"}),
    ("ScatterElements", [[1, 1]], (1, 2), {"axis": 1, "reduction": "min"}),
]


@pytest.mark.parametrize("op, indices, updates, attrs", SCATTERS)
def test_scatter_fold_matches_onnx_reference(op: str, indices: list[list[int]], updates: tuple[int, ...],
                                             attrs: dict[str, object]) -> None:
    from onnx.reference import ReferenceEvaluator

    from hwsim.workload.onnx_fold import FOLDS, OnnxNode

    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    upd = np.arange(100, 100 + int(np.prod(updates)), dtype=np.float32).reshape(updates)
    idx = np.array(indices, np.int64)
    proto = onnx.helper.make_node(op, ["d", "i", "u"], ["y"], **attrs)
    graph = onnx.helper.make_graph([proto], "g", [], [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT,
                                                                                          None)])
    expected = ReferenceEvaluator(onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 18)]))
    reference = expected.run(None, {"d": data, "i": idx, "u": upd})[0]
    node = OnnxNode(op, "", "n", ("d", "i", "u"), ("y",), dict(attrs), 18)
    np.testing.assert_array_equal(FOLDS[op](node, [data, idx, upd])[0], reference)
    assert data[0, 0] == 0  # the input is not written in place


# ----- --allow-unknown and unforeseen failures ------------------------------------------------------------------
def test_allow_unknown_reports_once_per_op(tmp_path: Path) -> None:
    result = load(M.unknown_twice(), tmp_path, allow_unknown=True)
    assert len(result.warnings) == 1
    assert "SpaceToDepth" in result.warnings[0] and "1 more node" in result.warnings[0]
    assert result.unmodelled == {"SpaceToDepth": ("s2d_a", "s2d_b")}
    assert result.graph.total_macs == 4 * 64 * 4 + 16 * 16 * 16  # conv1 1024 + conv2 (16 ch at 4×4) 4096


def test_info_reports_what_was_passed_through(cli, tmp_path: Path) -> None:
    path = tmp_path / "unknown.onnx"
    onnx.save(M.unknown_twice(), str(path))
    doc = cli("info", str(path), "--allow-unknown", "--json").json()
    assert doc["import"] == {"macs": 5120, "passthrough_layers": 2,
                             "unmodelled_ops": {"SpaceToDepth": ["s2d_a", "s2d_b"]}}
    assert len(doc["warnings"]) == 1
    text = cli("info", str(path), "--allow-unknown")
    assert text.code == 0 and "2 layers passed through at zero cost" in text.out and "SpaceToDepth ×2" in text.out


def test_info_shows_precision(cli, tmp_path: Path) -> None:
    path = tmp_path / "q.onnx"
    onnx.save(M.qdq_mixed(), str(path))
    doc = cli("info", str(path), "--json").json()
    first = next(l for l in doc["layers"] if l["kind"] == "conv")
    assert first["precision"] == {"weight_bits": 8, "activation_bits": 8, "accumulator_bits": 32}
    assert "w8 a8 acc32" in cli("info", str(path)).out


def test_unforeseen_failure_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(imp: object, node: object, ins: object) -> None:
        raise KeyError("surprise")

    monkeypatch.setitem(onnx_import.FEATURE_OPS, "HardSwish", broken)
    path = tmp_path / "m.onnx"
    onnx.save(M.conv_then_activation("HardSwish"), str(path))
    with pytest.raises(NetworkError) as info:
        load_onnx(path)
    message = str(info.value)
    assert "\n" not in message and "HardSwish" in message and "KeyError" in message
    passed = load_onnx(path, allow_unknown=True)
    assert only(passed.graph, LayerKind.PASSTHROUGH).op_type == "HardSwish"


# ----- downstream ------------------------------------------------------------------------------------------------
def test_attention_products_are_gemms_with_a_streamed_second_operand(tmp_path: Path) -> None:
    """q·kᵀ: 2 heads of (6 tokens × 4) · (4 × 6 tokens); A·v: 2 heads of (6 × 6) · (6 × 4). As loop nests: a 1×1
    convolution per head over the rows, the second operand as its filters (G = heads, M = columns, C = the
    contraction, P = rows), in both the mapping's problem and the closed form's window."""
    from hwsim.analytic.nest_counts import window_of
    from hwsim.mapping.nest.problem import nest_problem

    g = load(M.attention(), tmp_path).graph
    qk, av = g.layer("qk"), g.layer("av")
    assert qk.gemm == (2, 6, 4, 6) and av.gemm == (2, 6, 6, 4)
    for layer, (heads, rows, k, cols) in ((qk, qk.gemm), (av, av.gemm)):
        expected = {"N": 1, "G": 3 * heads, "M": cols, "C": k, "F": 1, "P": rows, "Q": 1, "T": 1, "R": 1,
                    "S": 1}  # batch 3; no frames
        assert nest_problem(layer, 3).dims == expected and window_of(layer, 3).dims == expected
        assert 3 * heads * cols * k * rows == 3 * layer.macs == 3 * 288


@pytest.mark.parametrize("config", ["eyeriss-v1", "tpu-like-ws", "configs/edge-soc-l2.yaml"])
def test_attention_checks_with_its_products_on_the_pe_array(cli, tmp_path: Path, config: str) -> None:
    """The matmuls are mapped as loop nests: their 288 MACs each run on the PE array, the closed form and the
    simulation agree on every count, and the trace obeys the hardware (the second operand read from its own
    DRAM region)."""
    path = tmp_path / "attn.onnx"
    onnx.save(M.attention(), str(path))
    doc = cli("estimate", str(path), "--hw", config, "--json").json()
    qk = next(l for l in doc["layers"] if l["name"] == "qk")
    assert qk["mapping"]["mapping"] == "nest"
    result = cli("check", str(path), "--hw", config, "--json")
    report = json.loads(result.out)
    assert result.code == 0 and report["ok"] and report["validation"]["ok"], report["mismatches"]
    for name in ("qk", "av"):
        layer = next(l for l in report["layers"] if l["name"] == name)
        macs = next(c for c in layer["counts"] if c["level"] == "pe" and c["operand"] == "macs")
        assert macs["analytic"] == macs["simulated"] == 288


def test_trace_records_what_was_passed_through(cli, tmp_path: Path) -> None:
    path = tmp_path / "unknown.onnx"
    onnx.save(M.unknown_twice(), str(path))
    trace = tmp_path / "u.h5"
    assert cli("simulate", str(path), "--hw", "eyeriss-v1", "--allow-unknown", "--out", str(trace)).code == 0
    summary = cli("trace", "summary", str(trace), "--json").json()
    # the same record info's JSON gives (see above): two SpaceToDepth nodes at zero cost, 5,120 MACs kept
    assert summary["imported"] == {"macs": 5120, "passthrough_layers": 2,
                                   "passthrough_ops": {"SpaceToDepth": ["s2d_a", "s2d_b"]}}
    text = cli("trace", "summary", str(trace))
    assert "2 layer(s) passed through at zero cost (--allow-unknown): SpaceToDepth ×2" in text.out


def test_qoperator_format(tmp_path: Path) -> None:
    """Every com.microsoft op imports as its float twin at 8 bit, without --allow-unknown. By hand: conv c1 is
    8 x 8 x 8 outputs x 27 = 13,824 MACs, c2 8 x 8 x 8 x 72 = 36,864, QGemm 16 x 10 = 160 (it was dropped
    before); the LeakyReLU fuses into c1, the add, the swish, both pools, the concat and the global pool are
    layers of their own."""
    g = load(M.qoperator_block(), tmp_path).graph
    assert [g.layer(n).macs for n in ("c1", "c2")] == [13_824, 36_864]
    assert g.layer("c1").activation == "leaky_relu"
    fc = only(g, LayerKind.FC)
    assert fc.macs == 160 and fc.precision == Precision(8, 8, 32)
    assert g.total_macs == 13_824 + 36_864 + 160
    assert g.layer("sum").kind == LayerKind.ADD and g.layer("sum").precision == Precision(None, 8, None)
    assert g.layer("cat").out_shape == Shape(16, 4, 4)
    assert only(g, LayerKind.GLOBAL_AVG_POOL).out_shape == Shape(16, 1, 1)
    assert g.layer("c2").precision == Precision(8, 8, 32)


def test_dynamic_quantization(tmp_path: Path) -> None:
    """DynamicQuantizeLinear gives 8-bit data: ConvInteger 3→4 3×3 on 8×8 = 4 x 64 x 27 = 6,912 MACs, the
    scale, bias and ReLU fold into it; MatMulInteger 256→10 = 2,560 MACs, both at (8, 8, 32) bits."""
    g = load(M.dynamic_quantized(), tmp_path).graph
    conv, fc = only(g, LayerKind.CONV), only(g, LayerKind.FC)
    assert (conv.macs, fc.macs, g.total_macs) == (6_912, 2_560, 6_912 + 2_560)
    assert conv.precision == Precision(8, 8, 32) and fc.precision == Precision(8, 8, 32)
    assert conv.activation == "relu"


def test_reduce_l2_of_a_global_response_norm(tmp_path: Path) -> None:
    """ReduceL2 over H and W of the 8×8×8 conv output is a reduce layer to 8×1×1; the conv keeps its
    8 × 64 × 27 = 13,824 MACs, the only ones."""
    g = load(M.global_response_norm(), tmp_path).graph
    reduce = next(l for l in g if l.name == "g")
    assert reduce.kind == LayerKind.REDUCE and reduce.out_shape == Shape(8, 1, 1)
    assert g.total_macs == 13_824


def test_weight_standardisation_folds_into_the_weight(tmp_path: Path) -> None:
    """The normalisation runs on the weight alone: a constant, no layer; the conv has 8 × 64 × 27 = 13,824 MACs."""
    g = load(M.weight_standardised_conv(), tmp_path).graph
    assert kinds(g) == ["input", "conv", "output"] and g.total_macs == 13_824


def test_a_constant_grid_branch_is_folded(tmp_path: Path) -> None:
    """The positional grid and its 1×1 conv depend on no input: precomputed (as onnxruntime's constant folding
    does), the sum is the 3×3 conv plus a constant. MACs: 8 × 64 × 27 = 13,824, not the grid conv's 2,048."""
    g = load(M.constant_grid_encoding(), tmp_path).graph
    assert g.total_macs == 13_824
    assert [l.kind for l in g if l.kind == LayerKind.CONV] == [LayerKind.CONV]


def test_a_cumsum_grid_folds_and_a_row_norm_expands(tmp_path: Path) -> None:
    """The CumSum grid and its conv depend on no input (a constant); the row norm is a reduce layer to 8 rows of
    one value, expanded back to 8 × 64 as a zero-cost view read by the division. MACs: the 3×3 conv's
    8 × 64 × 27 = 13,824 only."""
    g = load(M.cumsum_grid_and_row_norm(), tmp_path).graph
    assert g.total_macs == 13_824
    expand = next(l for l in g if l.kind == LayerKind.PASSTHROUGH)
    assert expand.op_type == "Expand" and expand.ops == 0
    assert expand.out_shape.elements == 8 * 64


def test_an_as_strided_view_is_a_crop(tmp_path: Path) -> None:
    """The gathered box is rows 0..7 of the 8×16×16 map: a slice to 8×8×16 read by the 1×1 conv. MACs:
    8 × 256 × 27 = 55,296 and 4 × 128 × 8 = 4,096."""
    g = load(M.as_strided_view(), tmp_path).graph
    view = only(g, LayerKind.SLICE)
    assert view.out_shape == Shape(8, 8, 16) and view.padding == Padding(0, 0, -8, 0)
    assert g.layer("head").in_shape == Shape(8, 8, 16) and g.total_macs == 55_296 + 4_096


def test_a_gather_that_is_no_box_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NetworkError, match="scattered indices"):
        load(M.as_strided_view(transposed=True), tmp_path)
