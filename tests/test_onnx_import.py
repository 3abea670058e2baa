"""ONNX import and export: real light models, exporter habits, errors and round trips.

Every expected number is worked out by hand in the test (or read straight from
the ONNX file), never copied from the importer's output.
"""

from __future__ import annotations

import json
from collections import Counter
from math import prod
from pathlib import Path

import onnx
import onnx_patterns as P
import pytest
from onnx import numpy_helper

from hwsim.errors import NetworkError
from hwsim.workload import GraphBuilder, LayerKind, Padding, Shape, zoo
from hwsim.workload.ir import Graph, Layer
from hwsim.workload.onnx_export import export_onnx
from hwsim.workload.onnx_import import load_onnx

LIGHT = Path(onnx.__file__).parent / "backend/test/data/light"
LIGHT_MODELS = sorted(p.name for p in LIGHT.glob("*.onnx"))


def save(model: onnx.ModelProto, tmp_path: Path, name: str = "m.onnx") -> Path:
    path = tmp_path / name
    onnx.save(model, str(path))
    return path


def kinds(graph: Graph) -> list[str]:
    return [l.kind.value for l in graph]


def only(graph: Graph, kind: LayerKind) -> Layer:
    (layer,) = graph.of_kind(kind)
    return layer


# ----- the nine light models ---------------------------------------------------------------------
def file_weights(model: onnx.ModelProto) -> tuple[Counter[str], int]:
    """Op counts, and the parameters hwsim should count, read straight from the file:
    Conv/Gemm weights and biases (ConstantOfShape shapes) plus a scale and shift per BN channel."""
    shape_inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    produced = {t.name: tuple(t.dims) for t in model.graph.initializer}  # a few weights are plain initializers
    for n in model.graph.node:
        if n.op_type == "ConstantOfShape":
            produced[n.output[0]] = tuple(shape_inits[n.input[0]])
        elif n.op_type == "Reshape" and n.input[0] in produced:  # GoogLeNet reshapes its classifier weight
            produced[n.output[0]] = tuple(shape_inits[n.input[1]])
    params = 0
    for node in model.graph.node:
        if node.op_type in ("Conv", "Gemm"):
            params += sum(prod(produced[i]) for i in node.input[1:] if i)
        elif node.op_type == "BatchNormalization":
            params += 2 * prod(produced[node.input[1]])
    return Counter(n.op_type for n in model.graph.node), params


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_counts(name: str) -> None:
    model = onnx.load(str(LIGHT / name), load_external_data=False)
    ops, params = file_weights(model)
    result = load_onnx(LIGHT / name)
    g = result.graph
    assert result.opset == 9 and result.elem_bits == 32 and result.warnings == ()
    assert len(g.of_kind(LayerKind.CONV)) == ops["Conv"]
    assert len(g.of_kind(LayerKind.FC)) == ops["Gemm"]
    assert g.total_params == params
    assert [l.out_shape for l in g.outputs] == [Shape(1000, 1, 1)]
    assert g.inputs[0].out_shape == Shape(3, 224, 224)
    assert g.source == str(LIGHT / name)


def test_alexnet_by_hand() -> None:
    g = load_onnx(LIGHT / "light_bvlc_alexnet.onnx").graph
    conv1, conv2 = g.of_kind(LayerKind.CONV)[:2]
    assert conv1.out_shape == Shape(96, 54, 54)  # (224 − 11) // 4 + 1
    assert conv1.macs == 96 * 54 * 54 * 3 * 11 * 11
    assert conv1.activation == "relu" and conv1.has_bias
    # conv2: 2 groups, 5×5 pad 2 on pool1's 26×26 ((54 − 3) // 2 + 1)
    assert conv2.groups == 2 and conv2.out_shape == Shape(256, 26, 26)
    assert conv2.macs == 256 * 26 * 26 * 48 * 25
    fc6 = g.of_kind(LayerKind.FC)[0]
    assert fc6.in_shape == Shape(256, 6, 6) and fc6.macs == 4096 * 256 * 6 * 6
    assert len(g.of_kind(LayerKind.LRN)) == 2 and len(g.of_kind(LayerKind.SOFTMAX)) == 1


def test_input_size_override() -> None:
    # AlexNet at 227: conv1 (227 − 11) // 4 + 1 = 55, pools to 27, 13 and (13 + 1 − 3) // 2 + 1 = 6,
    # so fc6 still sees 256·6·6 = 9216 features.
    g = load_onnx(LIGHT / "light_bvlc_alexnet.onnx", input_hw=(227, 227)).graph
    assert g.of_kind(LayerKind.CONV)[0].out_shape == Shape(96, 55, 55)
    assert g.of_kind(LayerKind.FC)[0].in_shape == Shape(256, 6, 6)
    # VGG-19 at 256 ends in 512·8·8 features, which its 25088-input fc6 cannot take.
    message = one_line_error(LIGHT / "light_vgg19.onnx", input_hw=(256, 256))
    assert "25088" in message and "32768" in message


def test_vgg19_total_macs_by_hand() -> None:
    # (out, in, resolution) of the 16 convs, all 3×3 pad 1, then the three fully connected layers.
    convs = [(64, 3, 224), (64, 64, 224), (128, 64, 112), (128, 128, 112), (256, 128, 56)] + [(256, 256, 56)] * 3
    convs += [(512, 256, 28)] + [(512, 512, 28)] * 3 + [(512, 512, 14)] * 4
    expected = sum(o * i * 9 * r * r for o, i, r in convs) + 25088 * 4096 + 4096 * 4096 + 4096 * 1000
    g = load_onnx(LIGHT / "light_vgg19.onnx").graph
    assert g.total_macs == expected
    assert all(c.activation == "relu" for c in g.of_kind(LayerKind.CONV))


def test_resnet50_by_hand() -> None:
    g = load_onnx(LIGHT / "light_resnet50.onnx").graph
    conv1 = g.of_kind(LayerKind.CONV)[0]
    assert conv1.macs == 64 * 112 * 112 * 3 * 7 * 7 and conv1.fused_bn and conv1.activation == "relu"
    adds = g.of_kind(LayerKind.ADD)
    assert len(adds) == 16 and all(a.activation == "relu" for a in adds)  # 3 + 4 + 6 + 3 blocks
    fc = only(g, LayerKind.FC)
    assert fc.macs == 1000 * 2048 and fc.in_shape == Shape(2048, 1, 1)


def test_shufflenet_channel_shuffles() -> None:
    g = load_onnx(LIGHT / "light_shufflenet.onnx").graph
    shuffles = g.of_kind(LayerKind.CHANNEL_SHUFFLE)
    assert len(shuffles) == 16 and {s.groups for s in shuffles} == {4}
    first = g.of_kind(LayerKind.CONV)[1]  # 1×1 group conv 24 → 112 at 56×56, 4 groups
    assert first.groups == 4 and first.macs == 112 * 56 * 56 * (24 // 4)
    assert g.consumers(first.output)[0].kind is LayerKind.CHANNEL_SHUFFLE


def test_densenet_shared_bn_becomes_unary() -> None:
    g = load_onnx(LIGHT / "light_densenet121.onnx").graph
    # Each BN reading a concat (or the stem pool) also read by the next concat cannot fold: 58 of them.
    unaries = g.of_kind(LayerKind.UNARY)
    assert len(unaries) == 58 and all(u.fused_bn and u.activation == "relu" for u in unaries)
    assert len(g.of_kind(LayerKind.CONCAT)) == 58


# ----- (a) PyTorch habits ----------------------------------------------------------------------------
@pytest.mark.parametrize("flatten", [False, True], ids=["shape-chain", "flatten"])
def test_pytorch_classifier(tmp_path: Path, flatten: bool) -> None:
    g = load_onnx(save(P.pytorch_classifier(flatten), tmp_path)).graph
    assert kinds(g) == ["input", "conv", "max_pool", "fc", "output"]
    conv, fc = g.layer("/conv/Conv"), g.layer("/fc/Gemm")
    assert conv.fused_bn and conv.activation == "relu" and conv.out_shape == Shape(8, 32, 32)
    assert conv.macs == 8 * 32 * 32 * 3 * 3 * 3
    assert conv.params == 8 * 27 + 8 + 2 * 8  # weights, bias, BN scale and shift
    assert fc.in_shape == Shape(8, 16, 16) and fc.macs == 10 * 2048 and fc.params == 10 * 2048 + 10


def test_dynamic_shape_arithmetic_folds(tmp_path: Path) -> None:
    g = load_onnx(save(P.dynamic_flatten(), tmp_path)).graph
    assert kinds(g) == ["input", "fc", "output"]
    fc = g.layer("fc")
    assert fc.in_shape == Shape(8, 16, 16) and fc.macs == 10 * 8 * 16 * 16 and not fc.has_bias


def test_vector_input(tmp_path: Path) -> None:
    g = load_onnx(save(P.vector_input(), tmp_path)).graph
    assert g.inputs[0].out_shape == Shape(64, 1, 1) and g.layer("fc").macs == 640


def test_swish_is_one_activation(tmp_path: Path) -> None:
    g = load_onnx(save(P.swish_block(), tmp_path)).graph
    assert kinds(g) == ["input", "conv", "output"] and g.layer("conv").activation == "swish"


# ----- (b) tf2onnx -----------------------------------------------------------------------------------
def test_tf2onnx_nhwc(tmp_path: Path) -> None:
    g = load_onnx(save(P.tf2onnx_nhwc(), tmp_path)).graph
    assert kinds(g) == ["input", "conv", "conv", "add", "global_avg_pool", "fc", "softmax", "output"]
    assert g.inputs[0].out_shape == Shape(3, 32, 32)  # NHWC 32×32×3 read as C×H×W
    conv1 = g.layer("conv1")
    # SAME_UPPER, stride 2: out = ceil(32 / 2) = 16; total pad = 15·2 + 3 − 32 = 1, all at the end.
    assert conv1.out_shape == Shape(16, 16, 16) and conv1.padding == Padding(0, 0, 1, 1)
    assert conv1.macs == 16 * 16 * 16 * 27 and conv1.activation == "relu"
    assert g.layer("add").inputs == ("conv1", "conv2")
    fc = g.layer("dense/MatMul")
    assert fc.has_bias and fc.macs == 16 * 10 and fc.params == 16 * 10 + 10


# ----- (c) fp16 --------------------------------------------------------------------------------------
def test_fp16_graph(tmp_path: Path) -> None:
    result = load_onnx(save(P.fp16_net(), tmp_path))
    assert result.elem_bits == 16
    assert kinds(result.graph) == ["input", "conv", "output"]
    conv = result.graph.layer("conv")
    assert conv.activation == "relu" and conv.macs == 4 * 16 * 16 * 27


# ----- (d) missing external data ---------------------------------------------------------------------
def test_missing_external_data(tmp_path: Path) -> None:
    path = tmp_path / "ext.onnx"
    onnx.save_model(P.external_candidate(), str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="ext.bin")
    (tmp_path / "ext.bin").unlink()
    g = load_onnx(path).graph
    assert kinds(g) == ["input", "conv", "fc", "output"]
    assert g.layer("conv").params == 16 * 27 + 16
    assert g.layer("fc").in_shape == Shape(16, 8, 8) and g.layer("fc").params == 10 * 1024 + 10


def test_weights_declared_by_shape_only(tmp_path: Path) -> None:
    # Stream's workload generators declare bf16 weights with their dims and no data at all (no raw data, no
    # external location): a shape-only parameter, as stripped weights are. Two 3x3 convs, pad 1:
    # 8x32x32 -> 16 channels (16 * 8 * 9 MACs per output pixel) -> 32 channels (32 * 16 * 9).
    bf16 = onnx.TensorProto.BFLOAT16
    weights = [onnx.TensorProto(name=f"w{k}", data_type=bf16, dims=dims) for k, dims in
               ((1, [16, 8, 3, 3]), (2, [32, 16, 3, 3]))]
    assert all(not w.raw_data and w.data_location == onnx.TensorProto.DEFAULT for w in weights)
    convs = [onnx.helper.make_node("Conv", [x, w], [y], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
             for x, w, y in (("x", "w1", "c1"), ("c1", "w2", "c2"))]
    graph = onnx.helper.make_graph(convs, "two_conv", [onnx.helper.make_tensor_value_info("x", bf16, [1, 8, 32, 32])],
                                   [onnx.helper.make_tensor_value_info("c2", bf16, [1, 32, 32, 32])], weights)
    path = tmp_path / "two_conv.onnx"
    onnx.save_model(onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 13)]), str(path))
    g = load_onnx(path).graph
    assert kinds(g) == ["input", "conv", "conv", "output"]
    assert g.total_macs == 32 * 32 * (16 * 8 * 9 + 32 * 16 * 9) == 5_898_240


# ----- (e) one op at a time ----------------------------------------------------------------------------
@pytest.mark.parametrize("make, factor, shape", [
    (P.upsample7, (2, 2), Shape(4, 16, 16)),
    (P.upsample9, (2, 3), Shape(4, 16, 24)),
    (P.resize10, (2, 2), Shape(4, 16, 16)),
    (P.resize11_scales, (2, 3), Shape(4, 16, 24)),
    (P.resize13_sizes, (3, 2), Shape(4, 24, 16)),
])
def test_upsample_and_resize(tmp_path: Path, make, factor, shape) -> None:
    layer = only(load_onnx(save(make(), tmp_path)).graph, LayerKind.UPSAMPLE)
    assert layer.factor == factor and layer.out_shape == shape


def test_depth_to_space(tmp_path: Path) -> None:
    layer = only(load_onnx(save(P.depth_to_space(), tmp_path)).graph, LayerKind.DEPTH_TO_SPACE)
    assert layer.factor == (2, 2) and layer.out_shape == Shape(16 // 4, 8, 8)


@pytest.mark.parametrize("output_shape", [False, True], ids=["pads", "output_shape"])
def test_conv_transpose(tmp_path: Path, output_shape: bool) -> None:
    layer = only(load_onnx(save(P.conv_transpose(output_shape), tmp_path)).graph, LayerKind.CONV_TRANSPOSE)
    # (8 − 1)·2 − 1 − 1 + 4 = 16; output_shape 16 gives total pad 2·7 + 4 − 16 = 2, split 1/1.
    assert layer.out_shape == Shape(4, 16, 16) and layer.padding == Padding(1, 1, 1, 1)
    assert layer.macs == 8 * 8 * 8 * 4 * 4 * 4  # every input pixel scatters into 4 filters of 4×4
    assert layer.params == 8 * 4 * 4 * 4


@pytest.mark.parametrize("make, activation", [
    (lambda: P.clip(10, 0, 6), "relu6"),
    (lambda: P.clip(11, 0, 6), "relu6"),
    (lambda: P.clip(13, -1, 1), "clip"),
    (P.prelu, "prelu"),
    (P.dropout_identity, "relu"),
], ids=["clip-attr", "clip-inputs", "clip-other", "prelu", "dropout-identity"])
def test_activation_fuses_into_conv(tmp_path: Path, make, activation: str) -> None:
    g = load_onnx(save(make(), tmp_path)).graph
    assert kinds(g) == ["input", "conv", "output"]
    assert g.layer("conv").activation == activation and g.layer("conv").macs == 8 * 10 * 10 * 27


@pytest.mark.parametrize("opset, sizes", [(11, (2, 6)), (13, (2, 6)), (18, (4, 4))])
def test_split(tmp_path: Path, opset: int, sizes: tuple[int, int]) -> None:
    g = load_onnx(save(P.split(opset), tmp_path)).graph
    assert kinds(g) == ["input", "conv", "slice", "slice", "concat", "output"]
    first, second = g.of_kind(LayerKind.SLICE)
    assert (first.out_shape, second.out_shape) == (Shape(sizes[0], 10, 10), Shape(sizes[1], 10, 10))
    assert first.activation == "relu" and second.activation is None
    assert g.layer("concat").inputs == (second.name, first.name) and g.layer("concat").out_shape == Shape(8, 10, 10)


def test_sum_of_three_keeps_order(tmp_path: Path) -> None:
    add = only(load_onnx(save(P.sum3(), tmp_path)).graph, LayerKind.ADD)
    assert add.inputs == ("conv_c", "conv_a", "conv_b") and add.ops == 8 * 10 * 10 * 2


@pytest.mark.parametrize("opset", [13, 18])
def test_reduce_mean_keepdims_squeeze_excite(tmp_path: Path, opset: int) -> None:
    g = load_onnx(save(P.squeeze_excite(opset), tmp_path)).graph
    assert kinds(g) == ["input", "conv", "global_avg_pool", "conv", "mul", "output"]
    assert g.layer("mean").out_shape == Shape(8, 1, 1)
    assert g.layer("se").activation == "sigmoid" and g.layer("se").macs == 8 * 8
    assert g.layer("scale").inputs == ("conv", "se")


def test_bn_on_shared_concat_is_unary(tmp_path: Path) -> None:
    g = load_onnx(save(P.bn_after_shared_concat(), tmp_path)).graph
    assert kinds(g) == ["input", "conv", "concat", "unary", "conv", "concat", "output"]
    bn = g.layer("bn")
    assert bn.fused_bn and bn.activation == "relu" and bn.params == 2 * 8 and bn.inputs == ("cat1",)
    assert g.layer("conv1").fused_bn is False and g.layer("cat2").out_shape == Shape(12, 10, 10)


@pytest.mark.parametrize("opset", [9, 13])
def test_slice_of_feature(tmp_path: Path, opset: int) -> None:
    layer = only(load_onnx(save(P.slices(opset), tmp_path)).graph, LayerKind.SLICE)
    # channels 2..5; rows 1..9 (end clamps to 10); columns −8..−1 of 10 are 2..8.
    assert layer.out_shape == Shape(4, 9, 7)
    assert layer.padding == Padding(-1, -2, 0, -1)  # negative: cropped rows/columns on each side


@pytest.mark.parametrize("opset", [11, 13])
def test_squeeze_before_gemm(tmp_path: Path, opset: int) -> None:
    g = load_onnx(save(P.gap_squeeze_fc(opset), tmp_path)).graph
    assert kinds(g) == ["input", "conv", "global_avg_pool", "fc", "output"]
    assert g.layer("fc").in_shape == Shape(8, 1, 1) and g.layer("fc").macs == 80


def test_batch_above_one_is_per_image(tmp_path: Path) -> None:
    m = P.pytorch_classifier(False)
    for vi in [*m.graph.input, *m.graph.output]:
        vi.type.tensor_type.shape.dim[0].dim_value = 4
    result = load_onnx(save(m, tmp_path))
    assert len(result.warnings) == 1 and "batch 4: a run processes 4 images" in result.warnings[0]
    assert result.graph.layer("/fc/Gemm").in_shape == Shape(8, 16, 16)
    assert result.graph.declared_batch == 4


def test_a_batch_export_runs_its_batch(cli, tmp_path: Path) -> None:
    """The classifier has 241,664 MACs per image: its batch-4 export estimates 4 x 241,664 = 966,656 MACs, as
    --batch 4 does; --batch 1 overrides the file's batch, with a note saying so."""
    m = P.pytorch_classifier(False)
    for vi in [*m.graph.input, *m.graph.output]:
        vi.type.tensor_type.shape.dim[0].dim_value = 4
    path = str(save(m, tmp_path))
    assert json.loads(cli("info", path, "--json").out)["totals"]["macs"] == 241_664
    default = json.loads(cli("estimate", path, "--hw", "eyeriss-v1", "--json").out)
    explicit = json.loads(cli("estimate", path, "--hw", "eyeriss-v1", "--batch", "4", "--json").out)
    assert default["batch"] == 4 and default["totals"]["macs"] == 966_656 and default["notes"] == []
    assert default["totals"] == explicit["totals"]
    one = json.loads(cli("estimate", path, "--hw", "eyeriss-v1", "--batch", "1", "--json").out)
    assert one["batch"] == 1 and one["totals"]["macs"] == 241_664
    assert any("declares batch 4; this run processes 1 image as" in n for n in one["notes"])


# ----- (f) padding -------------------------------------------------------------------------------------
@pytest.mark.parametrize("pads, conv_pads, padding, shape", [
    # Pad adds 1 top/bottom and 2 left/right to the conv's own 1: 10 + 4 − 2 = 12 rows, 10 + 6 − 2 = 14 columns.
    ([0, 0, 1, 2, 0, 0, 1, 2], [1, 1, 1, 1], Padding(2, 3, 2, 3), Shape(8, 12, 14)),
    # A cropping Pad (−1 each side) plus asymmetric conv pads (top 0, left 1, bottom 2, right 3):
    # rows 10 − 1 + 0 − 1 + 2 − 2 = 8, columns 10 − 1 + 1 − 1 + 3 − 2 = 10.
    ([0, 0, -1, -1, 0, 0, -1, -1], [0, 1, 2, 3], Padding(-1, 0, 1, 2), Shape(8, 8, 10)),
])
def test_pad_absorbed_into_conv(tmp_path: Path, pads, conv_pads, padding, shape) -> None:
    g = load_onnx(save(P.pad_then_conv(pads, conv_pads), tmp_path)).graph
    assert kinds(g) == ["input", "conv", "output"]
    conv = g.layer("conv")
    assert conv.padding == padding and conv.out_shape == shape and conv.macs == shape.elements * 27


def test_pad_not_absorbed_becomes_slice(tmp_path: Path) -> None:
    g = load_onnx(save(P.pad_then_relu(), tmp_path)).graph
    pad = only(g, LayerKind.SLICE)
    assert pad.padding == Padding(1, 1, 1, 1) and pad.out_shape == Shape(3, 12, 12) and pad.activation == "relu"


# ----- (g) ceil mode -----------------------------------------------------------------------------------
def test_ceil_mode_pooling(tmp_path: Path) -> None:
    g = load_onnx(save(P.ceil_pools(), tmp_path)).graph
    # max: ceil((28 − 3) / 2) + 1 = 14 (floor would give 13); avg: ceil((14 − 2) / 2) + 1 = 7.
    assert g.layer("maxpool").out_shape == Shape(8, 14, 14)
    assert g.layer("avgpool").out_shape == Shape(8, 7, 7)


# ----- errors ------------------------------------------------------------------------------------------
def one_line_error(path: Path, **options) -> str:
    with pytest.raises(NetworkError) as info:
        load_onnx(path, **options)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    return message


def test_truncated_file(tmp_path: Path) -> None:
    data = (LIGHT / "light_bvlc_alexnet.onnx").read_bytes()
    path = tmp_path / "half.onnx"
    path.write_bytes(data[: len(data) // 2])
    assert "re-export" in one_line_error(path)


def test_not_an_onnx_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.onnx"
    path.write_text("these are not the weights you are looking for\n")
    assert "not" in one_line_error(path)


def test_missing_path(tmp_path: Path) -> None:
    assert "no such file" in one_line_error(tmp_path / "absent.onnx")


def test_symbolic_size_needs_input_hw(tmp_path: Path) -> None:
    path = save(P.symbolic_image(), tmp_path)
    assert "--input" in one_line_error(path)
    conv = load_onnx(path, input_hw=(64, 48)).graph.layer("conv")
    assert conv.out_shape == Shape(8, 31, 23)  # (64 − 3) // 2 + 1, (48 − 3) // 2 + 1


def test_unknown_op(tmp_path: Path) -> None:
    path = save(P.with_space_to_depth(), tmp_path)
    message = one_line_error(path)
    assert "'s2d'" in message and "SpaceToDepth" in message and "--allow-unknown" in message
    result = load_onnx(path, allow_unknown=True)
    assert len(result.warnings) == 1 and "SpaceToDepth" in result.warnings[0]
    passthrough = only(result.graph, LayerKind.PASSTHROUGH)
    # Its shape comes from ONNX shape inference: blocksize 2 turns 8×10×10 into 32×5×5.
    assert passthrough.op_type == "SpaceToDepth" and passthrough.out_shape == Shape(32, 5, 5)
    assert passthrough.macs == 0 and passthrough.activation == "relu"


def test_conv_on_channels_last_is_a_clear_error(tmp_path: Path) -> None:
    message = one_line_error(save(P.conv_on_nhwc(), tmp_path))
    assert "'conv'" in message and "NHWC" in message and "NCHW" in message


def test_op_in_foreign_domain(tmp_path: Path) -> None:
    path = save(P.with_custom_op(), tmp_path)
    assert "com.example:FancyOp" in one_line_error(path)
    layer = only(load_onnx(path, allow_unknown=True).graph, LayerKind.PASSTHROUGH)
    assert layer.out_shape == Shape(8, 10, 10)  # no inference for FancyOp: the input's shape


# ----- export and round trip ---------------------------------------------------------------------------
def mixed_net() -> Graph:
    """Grouped, depthwise and dilation-free convs, a channel shuffle, concat, add, upsample,
    depth-to-space, transposed conv, global pool and fc, everything fused where it can be."""
    b = GraphBuilder("mixed")
    x = b.input("x", 3, 32, 32)
    x = b.conv("stem", x, 16, 3, padding=1, bn=True, activation="relu")
    x = b.conv("grouped", x, 16, 3, padding=1, groups=4, activation="relu6")
    x = b.conv("depthwise", x, 16, 3, stride=2, padding=1, groups=16, bn=True)
    s = b.channel_shuffle("shuffle", x, groups=4)
    a = b.conv("branch_a", s, 8, 1, activation="relu")
    c = b.conv("branch_b", s, 8, 3, padding=1, bias=False)
    x = b.concat("cat", [a, c])
    x = b.add("residual", [x, s], activation="relu")
    x = b.max_pool("pool", x, 3, 2, padding=1, ceil_mode=True)
    x = b.upsample("up", x, 2)
    x = b.depth_to_space("d2s", x, 2)
    x = b.conv_transpose("deconv", x, 8, 4, stride=2, padding=1, activation="swish")
    x = b.global_avg_pool("gap", x)
    x = b.fc("fc", x, 10)
    b.output("out", b.softmax("prob", x))
    return b.build()


def small_net() -> Graph:
    """Input normalisation, asymmetric and cropping pads, LRN, ceil-mode average pooling,
    a spatial slice, a broadcast multiply and two fc layers (one with BN)."""
    b = GraphBuilder("small")
    x = b.input("img", 3, 28, 28)
    x = b.unary("norm", x, bn=True)
    x = b.conv("conv", x, 6, 5, padding=(0, 1, 2, 3))
    x = b.lrn("lrn", x, 5)
    x = b.avg_pool("pool", x, 3, 2, ceil_mode=True)
    x = b.conv("crop_conv", x, 6, 3, padding=(-1, 0, 0, 1), groups=6, activation="sigmoid")
    s = b.slice("window", x, Shape(6, 8, 13), crop=Padding(-1, 0, -1, 0))
    g = b.global_max_pool("gmp", s)
    x = b.mul("scale", [s, g])
    x = b.fc("fc1", x, 32, bn=True, activation="relu")
    b.output("logits", b.fc("fc2", x, 10, bias=False))
    return b.build()


def signature(g: Graph) -> list[tuple]:
    return [(l.name, l.kind, l.inputs, l.in_shapes, l.out_shape, l.macs, l.params, l.activation, l.fused_bn,
             l.has_bias, l.groups, l.factor, l.kernel, l.stride, l.padding) for l in g]


def test_small_net_shapes_by_hand() -> None:
    g = small_net()
    # conv: 28 + 0 + 2 − 5 + 1 = 26 rows, 28 + 1 + 3 − 5 + 1 = 28 columns; ceil pool: 13 × 14;
    # crop_conv (depthwise): 13 − 1 + 0 − 3 + 1 = 10 rows, 14 + 0 + 1 − 3 + 1 = 13 columns.
    assert g.layer("conv").out_shape == Shape(6, 26, 28) and g.layer("conv").macs == 6 * 26 * 28 * 75
    assert g.layer("pool").out_shape == Shape(6, 13, 14)
    assert g.layer("crop_conv").out_shape == Shape(6, 10, 13) and g.layer("crop_conv").macs == 6 * 10 * 13 * 9
    assert g.layer("fc1").macs == 32 * 6 * 8 * 13 and g.layer("fc1").params == 32 * 624 + 32 + 64


@pytest.mark.parametrize("make", [mixed_net, small_net])
def test_round_trip(tmp_path: Path, make) -> None:
    graph = make()
    path = tmp_path / f"{graph.name}.onnx"
    export_onnx(graph, path)
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    assert all(t.data_type == onnx.TensorProto.INT64 for t in model.graph.initializer
               if t.name.endswith("_shape"))
    back = load_onnx(path)
    assert back.warnings == () and back.opset == 17
    assert signature(back.graph) == signature(graph)
    assert back.graph.total_macs == graph.total_macs and back.graph.total_params == graph.total_params
    assert not list(tmp_path.glob(".*.tmp"))  # the temporary file was renamed away


def test_export_keeps_vgg_small(tmp_path: Path) -> None:
    graph = load_onnx(LIGHT / "light_vgg19.onnx").graph
    path = tmp_path / "vgg.onnx"
    export_onnx(graph, path, opset=13)
    assert path.stat().st_size < 20_000  # 143 M parameters, stored as shapes only
    back = load_onnx(path).graph
    assert back.total_params == graph.total_params and back.total_macs == graph.total_macs


def test_pass_through_survives_export(tmp_path: Path) -> None:
    graph = load_onnx(save(P.with_space_to_depth(), tmp_path), allow_unknown=True).graph
    export_onnx(graph, tmp_path / "rt.onnx")
    back = load_onnx(tmp_path / "rt.onnx", allow_unknown=True)
    assert len(back.warnings) == 1 and signature(back.graph) == signature(graph)
    assert back.graph.layer("s2d").op_type == "SpaceToDepth"


def test_export_unknown_activation_fails_cleanly(tmp_path: Path) -> None:
    b = GraphBuilder("odd")
    x = b.input("x", 3, 8, 8)
    b.output("y", b.conv("conv", x, 4, 1, activation="wiggle"))
    with pytest.raises(NetworkError, match="wiggle"):
        export_onnx(b.build(), tmp_path / "odd.onnx")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("name", zoo.names())
def test_every_zoo_network_round_trips(tmp_path: Path, name: str) -> None:
    graph = zoo.build(name)
    path = tmp_path / f"{name}.onnx"
    export_onnx(graph, path)
    back = load_onnx(path)
    assert back.warnings == ()
    assert signature(back.graph) == signature(graph)
