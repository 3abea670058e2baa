"""The built-in zoo against published figures, hand calculations and the registry's contract.

Expected values come from the cited sources (papers, model cards), kept in
tests/data with their provenance (zoo-published.csv, googlenet-table1.csv,
depth-first-networks.yaml, eyeriss-v1-alexnet-silicon.csv), or are derived by
arithmetic written out here, never taken from the code's output. MACs are
multiply-accumulates per image.
"""

from __future__ import annotations

import math

import pytest
from conftest import reference, reference_rows

from hwsim.errors import NetworkError, ShapeError
from hwsim.workload import zoo
from hwsim.workload.ir import Graph, LayerKind, Shape

WEIGHTED = (LayerKind.CONV, LayerKind.CONV_TRANSPOSE, LayerKind.FC)


def assert_within(actual: float, expected: float, rel: float = 0.02, what: str = "") -> None:
    assert abs(actual - expected) <= rel * expected, (
        f"{what}: {actual:,.0f} vs {expected:,.0f} ({actual / expected - 1:+.2%}, allowed ±{rel:.0%})"
    )


def macs_of(graph: Graph, *prefixes: str) -> int:
    return sum(l.macs for l in graph if l.name.startswith(prefixes))


# ----- published totals ---------------------------------------------------------------------------
# (name, MACs, params) at the default input size; each row of tests/data/zoo-published.csv names its source.
FIGURES = reference_rows("zoo-published.csv", "name")
PUBLISHED = [(name, r["macs"], r["params"]) for name, r in FIGURES.items() if r["within_2pct"]]


@pytest.mark.parametrize(("name", "macs", "params"), PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_published_totals(name: str, macs: float, params: float) -> None:
    graph = zoo.build(name)
    assert_within(graph.total_macs, macs, what=f"{name} MACs")
    assert_within(graph.total_params, params, what=f"{name} params")


# Exact parameter counts from the torchvision model cards (weights, biases, BN scale and shift).
TORCHVISION_PARAMS = {name: r["torchvision_params"] for name, r in FIGURES.items() if r["torchvision_params"]}


@pytest.mark.parametrize(("name", "params"), TORCHVISION_PARAMS.items())
def test_exact_torchvision_parameter_counts(name: str, params: int) -> None:
    assert zoo.build(name).total_params == params


def test_registry_carries_the_published_figures() -> None:
    for e in zoo.entries():
        row = FIGURES.get(e.name, {"macs": None, "params": None})
        assert e.published_macs == pytest.approx(row["macs"]), e.name
        assert e.published_params == pytest.approx(row["params"]), e.name
        if row["macs"] or row["params"]:
            assert e.published_source, e.name


SILICON = reference_rows("eyeriss-v1-alexnet-silicon.csv", "layer")  # Eyeriss v1, JSSC 2017 Table V, batch 4
SILICON_BATCH = 4


def test_alexnet_conv_macs_per_layer() -> None:
    # Table V gives each layer's MACs for a batch of 4 in GMAC to two decimals: ±0.005 GMAC of rounding,
    # ±1.25 M per image, and on the total ±0.005 GMAC as well.
    convs = zoo.build("alexnet").of_kind(LayerKind.CONV)
    assert [l.name for l in convs] == ["conv1", "conv2", "conv3", "conv4", "conv5"]
    for layer in convs:
        per_image = SILICON[layer.name]["gmac"] * 1e9 / SILICON_BATCH
        assert abs(layer.macs - per_image) <= 0.005e9 / SILICON_BATCH, (layer.name, layer.macs, per_image)
    # 96·55·55·363 + 256·27·27·1200 + 384·13·13·2304 + 384·13·13·1728 + 256·13·13·1728 = 665.8 M
    total = sum(l.macs for l in convs)
    assert total == 96 * 55 * 55 * 363 + 256 * 27 * 27 * 1200 + 169 * (384 * 2304 + 384 * 1728 + 256 * 1728)
    assert abs(total - SILICON["total"]["gmac"] * 1e9 / SILICON_BATCH) <= 0.005e9 / SILICON_BATCH


def test_alexnet_hand_counts() -> None:
    g = zoo.build("alexnet")
    assert g.layer("conv1").out_shape == Shape(96, 55, 55)
    assert g.layer("conv2").macs == 27 * 27 * 256 * (48 * 5 * 5)  # grouped: 48 input channels per filter
    assert g.layer("fc6").weight_shape == (4096, 256 * 6 * 6, 1, 1)
    # At 224x224 Caffe's ceil-mode pools still leave 6x6 before fc6 (the ONNX light model relies on it).
    assert zoo.build("alexnet", (224, 224)).layer("pool5").out_shape == Shape(256, 6, 6)


# ----- GoogLeNet: Szegedy et al. 2015, Table 1 -----------------------------------------------------
# Per row: (zoo layer-name prefixes, "params" in K, "ops" in M), from tests/data/googlenet-table1.csv.
GOOGLENET_TABLE1 = {r["row"]: (tuple(str(r["zoo_prefixes"]).split()), r["params_k"], r["ops_m"])
                    for r in reference("googlenet-table1.csv")}
GOOGLENET_TEXT = FIGURES["googlenet"]  # "1.5 billion multiply-adds", 6.8 M parameters


def test_googlenet_against_table1() -> None:
    """Table 1 row by row, then the 1.5 G total with the table's conv1 slip corrected.

    - conv1: the table's 34 M ops contradict its own row (7×7/2, 3 → 64
      channels, 112×112 out): checked by hand instead.
    - 5a: the table's 54 M ops exceed what its own widths give (≈51 M); the
      architecture is confirmed layer by layer against the BVLC ONNX model
      in test_zoo_light_models.py, so this row is reported, not asserted.
    - ops are rounded to whole millions: tolerance is the larger of 2 % and 0.5 M.
    """
    g = zoo.build("googlenet")
    conv1 = 112 * 112 * 64 * (7 * 7 * 3)
    assert g.layer("conv1").macs == conv1
    for row, (prefixes, _, ops) in GOOGLENET_TABLE1.items():
        if row in ("conv1", "5a"):
            continue
        ours = macs_of(g, *prefixes)
        assert abs(ours - ops * 1e6) <= max(0.02 * ops * 1e6, 0.5e6), f"{row}: {ours:,} vs {ops} M"
    # The paper's "1.5 billion multiply-adds" is the Table 1 sum, which counts conv1 as 34 M.
    table_total = sum(ops for _, _, ops in GOOGLENET_TABLE1.values()) * 1e6
    assert_within(table_total, GOOGLENET_TEXT["macs"], what="Table 1 sum vs the text")
    assert_within(g.total_macs, table_total - 34e6 + conv1, what="MACs with conv1 corrected")


def test_googlenet_params_against_table1() -> None:
    # Table 1 counts parameters in K = 1024 (conv2: 64·64 + 64·192·9 = 114,688 = 112 K; linear:
    # 1024·1000 = 1,024,000 = 1000 K) and leaves out biases; the rows sum to the "6.8 M" of the text.
    g = zoo.build("googlenet")
    assert macs_of(g, "conv2_reduce", "conv2") == 56 * 56 * (64 * 64 + 64 * 192 * 9)
    assert sum(l.weight_params for l in g.of_kind(*WEIGHTED) if l.name.startswith("conv2")) == 112 * 1024
    table_k = sum(k for _, k, _ in GOOGLENET_TABLE1.values())
    assert_within(table_k * 1000, GOOGLENET_TEXT["params"], what="Table 1 sum vs the text")
    assert_within(sum(l.weight_params for l in g), table_k * 1024, what="weights")
    # BVLC GoogLeNet without the auxiliary heads has about 7.0 M parameters with biases (the 6.8–7.0 M).
    assert 6.8e6 <= g.total_params <= 7.0e6 * 1.02


# ----- the depth-first paper's networks ------------------------------------------------------------
DEPTH_FIRST = reference("depth-first-networks.yaml")  # Goetschalckx & Verhelst 2019
HD = tuple(DEPTH_FIRST["inputs"]["hd"])  # (720, 1280)


def test_srgan_structure_and_params() -> None:
    paper = DEPTH_FIRST["srgan"]
    g = zoo.build("srgan")
    convs = g.of_kind(LayerKind.CONV)
    assert len(convs) == paper["conv_layers"]  # "SRGAN (37 layers)"
    assert g.inputs[0].out_shape == Shape(3, *HD)
    assert g.outputs[0].out_shape == Shape(3, 4 * HD[0], 4 * HD[1])
    # "1.5 M parameters" is given to two significant digits: 1.45–1.55 M.
    half_digit = 0.5 * 10 ** (math.floor(math.log10(paper["params"])) - paper["params_significant_digits"] + 1)
    assert paper["params"] - half_digit <= g.total_params < paper["params"] + half_digit
    # Same paper: the model is "24 %" of "6.4 M features" on chip = 1.536 M, here within 2 %.
    assert_within(g.total_params, paper["model_share_of_on_chip"] * paper["hd_min_bandwidth_on_chip_features"],
                  what="SRGAN params")


def test_srgan_macs_by_hand() -> None:
    h, w = 90, 160
    g = zoo.build("srgan", (h, w))
    per_lr_pixel = (
        9 * 9 * 3 * 64  # conv_input
        + 33 * 3 * 3 * 64 * 64  # 32 residual-block convs + conv_mid
        + 3 * 3 * 64 * 256  # up1 conv at LR resolution
        + 4 * 3 * 3 * 64 * 256  # up2 conv at 2x resolution
        + 16 * 9 * 9 * 64 * 3  # conv_output at 4x resolution
    )
    assert g.total_macs == per_lr_pixel * h * w


def test_dmcnn_vd_structure_and_macs() -> None:
    paper = DEPTH_FIRST["dmcnn_vd"]  # 20 conv 3×3 layers, 64 channels
    g = zoo.build("dmcnn_vd")
    convs = g.of_kind(LayerKind.CONV)
    k = paper["kernel"]
    assert len(convs) == paper["conv_layers"] and all(l.kernel == (k, k) for l in convs)
    assert [l.out_shape.c for l in convs] == [paper["channels"]] * 19 + [3]
    per_pixel = 3 * 3 * 3 * 64 + 18 * 3 * 3 * 64 * 64 + 3 * 3 * 64 * 3
    assert g.total_macs == per_pixel * HD[0] * HD[1]
    residual = g.layer("residual")
    assert residual.kind is LayerKind.ADD and "input" in residual.inputs


def test_dmcnn_vd_at_4k_scales_with_pixels() -> None:
    hd, uhd = zoo.build("dmcnn_vd"), zoo.build("dmcnn_vd", tuple(DEPTH_FIRST["inputs"]["uhd_4k"]))
    assert uhd.outputs[0].out_shape == Shape(3, 2160, 3840)
    assert uhd.total_macs == hd.total_macs * (3840 * 2160) // (1280 * 720)
    assert uhd.total_macs == 9 * hd.total_macs
    assert uhd.total_params == hd.total_params


def test_fsrcnn_against_the_paper() -> None:
    d, s, m = 56, 12, 4
    g = zoo.build("fsrcnn")
    assert g.outputs[0].out_shape == Shape(1, 2 * 720, 2 * 1280)
    # Dong et al. 2016: FSRCNN(56,12,4) has 12,464 parameters, i.e. its weights (no biases):
    published = FIGURES["fsrcnn"]["params"]
    assert sum(l.weight_params for l in g) == published
    assert_within(g.total_params, published, what="params with biases")
    # ... and costs (9·m·s² + 2·s·d + 106·d) multiply-adds per low-resolution pixel.
    assert g.total_macs == (9 * m * s * s + 2 * s * d + 106 * d) * 720 * 1280


def test_ssdlite_structure() -> None:
    g = zoo.build("mobilenetv2_ssdlite")
    # The first feature map is the expansion of layer 15 (stride 16); the second the last layer (stride 32).
    assert g.layer("block14_expand").out_shape == Shape(576, 19, 19)
    assert g.layer("conv_last").out_shape == Shape(1280, 10, 10)
    assert [g.layer(f"extra{i}_project").out_shape for i in range(1, 5)] == [
        Shape(512, 5, 5), Shape(256, 3, 3), Shape(256, 2, 2), Shape(128, 1, 1)]
    assert len(g.outputs) == 12
    assert g.layer("head1_cls").out_shape.c == 3 * 91 and g.layer("head2_box").out_shape.c == 6 * 4
    assert all(g.layer(f"head{i}_cls_dw").is_depthwise for i in range(1, 7))


def test_ssdlite_at_the_papers_resolution() -> None:
    # MobileNetV2 paper: "The input resolution of both models is 320 × 320"; Table 6: 0.8B MAdds, 4.3M params.
    paper = FIGURES["mobilenetv2_ssdlite@320x320"]
    g = zoo.build("mobilenetv2_ssdlite", (320, 320))
    assert_within(g.total_macs, paper["macs"], what="MACs at 320x320")
    # The TF model with 91 classes has 4.475 M parameters (OpenVINO card, checked above); the paper's
    # 4.3 M is 4 % lower than both. Known discrepancy, bounded here rather than hidden.
    assert_within(g.total_params, paper["params"], rel=0.05, what="params vs the paper")


# ----- hand-calculated shapes and MACs --------------------------------------------------------------
def test_phases_example_shapes_and_macs() -> None:
    g = zoo.build("phases_example")
    assert [l.name for l in g] == ["n1", "n2", "n3", "n4", "n5"]
    assert g.layer("n1").out_shape == Shape(1, 32, 32)
    assert g.layer("n2").out_shape == Shape(4, 16, 16)  # [16,16,4]: 32 − 17 + 1
    assert g.layer("n3").out_shape == Shape(3, 4, 4)  # [4,4,3]: (16 − 2 − 5) // 3 + 1
    assert g.layer("n4").out_shape == Shape(2, 1, 1)  # [1,1,2]
    assert g.layer("n3").padding == (-1, -1, -1, -1)
    assert g.layer("n2").macs == 16 * 16 * 4 * (17 * 17 * 1)
    assert g.layer("n3").macs == 4 * 4 * 3 * (5 * 5 * 4)
    assert g.layer("n4").macs == 2 * (4 * 4 * 3)


def test_vgg_hand_counts() -> None:
    g = zoo.build("vgg16")
    assert g.layer("conv1_1").macs == 224 * 224 * 64 * (3 * 3 * 3)
    assert g.layer("pool5").out_shape == Shape(512, 7, 7)
    assert g.layer("fc6").weight_params == 4096 * 512 * 7 * 7
    assert len(zoo.build("vgg19").of_kind(LayerKind.CONV)) == 16


def test_vgg_e5_is_the_fused_layer_prefix() -> None:
    g = zoo.build("vgg_e5")
    names = [l.name for l in g if l.kind not in (LayerKind.INPUT, LayerKind.OUTPUT)]
    assert names == ["conv1_1", "conv1_2", "pool1", "conv2_1", "conv2_2", "pool2", "conv3_1"]
    assert g.outputs[0].out_shape == Shape(256, 56, 56)
    assert g.total_macs == 224 * 224 * 64 * 9 * (3 + 64) + 112 * 112 * 128 * 9 * (64 + 128) + 56 * 56 * 256 * 9 * 128


def test_tiny_yolov2_hand_counts() -> None:
    g = zoo.build("tiny_yolov2")
    assert g.layer("pool6").out_shape == Shape(512, 13, 13)  # stride-1 pool with 'same' padding keeps 13x13
    assert g.outputs[0].out_shape == Shape(125, 13, 13)  # 5 anchors x (20 classes + 5)
    assert g.layer("conv8").macs == 13 * 13 * 1024 * (1024 * 9)
    assert all(l.activation == "leaky_relu" for l in g.of_kind(LayerKind.CONV)[:8])


def test_resnet_conventions() -> None:
    g = zoo.build("resnet50")
    assert g.layer("conv1").macs == 112 * 112 * 64 * (7 * 7 * 3)
    # v1.5: the stride sits on the 3x3 conv, not on the first 1x1.
    assert g.layer("layer2.0.conv1").stride == (1, 1) and g.layer("layer2.0.conv2").stride == (2, 2)
    assert g.layer("layer2.0.downsample").stride == (2, 2)
    convs = g.of_kind(LayerKind.CONV)
    assert all(l.fused_bn and not l.has_bias for l in convs)
    adds = g.of_kind(LayerKind.ADD)
    assert len(adds) == 16 and all(a.activation == "relu" for a in adds)
    assert len(zoo.build("resnet18").of_kind(LayerKind.ADD)) == 8


def test_mobilenetv2_conventions() -> None:
    g = zoo.build("mobilenetv2")
    dws = [l for l in g.of_kind(LayerKind.CONV) if l.is_depthwise]
    assert len(dws) == 17 and all(l.activation == "relu6" for l in dws)
    assert all(g.layer(f"block{i}_project").activation is None for i in range(1, 18))  # linear bottlenecks
    assert len(g.of_kind(LayerKind.ADD)) == 10
    assert g.layer("block1_dw").macs == 112 * 112 * 32 * 9


def test_densenet_preactivation_convention() -> None:
    g = zoo.build("densenet121")
    unary = g.of_kind(LayerKind.UNARY)
    # One per dense layer (norm1): 6 + 12 + 24 + 16. The transitions' norms and norm5 read a block's
    # last concat, which has no other reader, so they are fused into it.
    assert len(unary) == 6 + 12 + 24 + 16
    assert all(u.fused_bn and u.activation == "relu" for u in unary)
    for last in ("denseblock1.denselayer6", "denseblock4.denselayer16"):
        concat = g.layer(f"{last}.concat")
        assert concat.fused_bn and concat.activation == "relu" and len(g.consumers(concat.output)) == 1
    first = "denseblock1.denselayer1"
    assert g.layer(f"{first}.conv1").fused_bn and g.layer(f"{first}.conv1").activation == "relu"
    assert not g.layer(f"{first}.conv2").fused_bn and g.layer(f"{first}.conv2").activation is None
    assert g.layer("denseblock4.denselayer16.concat").out_shape == Shape(1024, 7, 7)
    assert g.layer("transition1.conv").out_shape == Shape(128, 56, 56)  # 256 -> 128 channels
    assert g.layer("transition1.pool").out_shape == Shape(128, 28, 28)


def test_squeezenet_fire_module() -> None:
    g = zoo.build("squeezenet11")
    assert g.layer("fire2_concat").out_shape == Shape(128, 55, 55)
    assert g.layer("fire9_concat").out_shape == Shape(512, 13, 13)
    assert g.layer("conv10").macs == 13 * 13 * 1000 * 512


# ----- every network, the registry contract ---------------------------------------------------------
@pytest.mark.parametrize("name", zoo.names())
def test_builds_at_default_resolution(name: str) -> None:
    e = zoo.entry(name)
    g = zoo.build(name)
    assert g.name == name and g.source == "zoo"
    assert [l.out_shape for l in g.inputs] == [Shape(e.in_channels, *e.default_hw)]
    assert g.outputs and g.total_macs > 0 and g.total_params > 0
    for layer in g:
        assert min(layer.out_shape) > 0, layer.name
        assert all(min(s) > 0 for s in layer.in_shapes), layer.name
    assert len({l.name for l in g}) == len(g)


@pytest.mark.parametrize("name", zoo.names())
def test_builds_at_another_resolution(name: str) -> None:
    h, w = zoo.entry(name).default_hw
    g = zoo.build(name, (h * 3 // 2, w * 3 // 2))
    assert g.inputs[0].out_shape.axes[1:] == (h * 3 // 2, w * 3 // 2)
    assert g.total_macs > zoo.build(name).total_macs


def test_super_resolution_outputs_scale_with_input() -> None:
    assert zoo.build("srgan", (60, 100)).outputs[0].out_shape == Shape(3, 240, 400)
    assert zoo.build("fsrcnn", (2160, 3840)).outputs[0].out_shape == Shape(1, 4320, 7680)


@pytest.mark.parametrize(("spelling", "name"), [
    ("VGG-16", "vgg16"), ("vgg_16", "vgg16"), ("squeezenet1.1", "squeezenet11"), ("squeezenet", "squeezenet11"),
    ("SqueezeNet-1.1", "squeezenet11"), ("ResNet50", "resnet50"), ("Tiny-YOLOv2", "tiny_yolov2"),
    ("mobilenet_v2", "mobilenetv2"), ("MobileNetV2-SSDLite", "mobilenetv2_ssdlite"), ("inception_v1", "googlenet"),
    ("DenseNet 121", "densenet121"), ("DMCNN-VD", "dmcnn_vd"), ("vgg-e5", "vgg_e5"),
])
def test_entry_accepts_spelling_variants(spelling: str, name: str) -> None:
    assert zoo.entry(spelling).name == name
    assert zoo.build(spelling).name == name


def test_unknown_name_suggests_closest() -> None:
    with pytest.raises(NetworkError) as err:
        zoo.entry("resnet51")
    message = str(err.value)
    assert "resnet50" in message and "hwsim zoo" in message
    with pytest.raises(NetworkError, match="hwsim zoo"):
        zoo.build("not-a-network")


def test_bad_input_sizes() -> None:
    with pytest.raises(NetworkError):
        zoo.build("vgg16", (0, 224))
    with pytest.raises(ShapeError):
        zoo.build("vgg16", (16, 16))  # pool5 has nothing left to pool


def test_names_and_defaults() -> None:
    assert len(zoo.names()) == len(set(zoo.names())) == 16
    defaults = {e.name: e.default_hw for e in zoo.entries()}
    assert defaults["alexnet"] == (227, 227) and defaults["vgg16"] == (224, 224)
    assert defaults["tiny_yolov2"] == (416, 416) and defaults["mobilenetv2_ssdlite"] == (300, 300)
    assert defaults["srgan"] == defaults["dmcnn_vd"] == defaults["fsrcnn"] == (720, 1280)
    assert defaults["phases_example"] == (32, 32)
