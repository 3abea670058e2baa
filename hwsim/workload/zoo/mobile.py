"""Compact networks: SqueezeNet 1.1, MobileNetV2 and MobileNetV2-SSDLite.

MobileNetV2 layer names: `stem`, then `blockN_expand` / `blockN_dw` /
`blockN_project` / `blockN_add` for the 17 inverted-residual blocks (N is
torchvision's `features` index, which is TensorFlow's `layer_{N+1}`), then
`conv_last` (1×1 to 1280).
"""

from __future__ import annotations

from hwsim.workload.builder import GraphBuilder
from hwsim.workload.ir import Graph
from hwsim.workload.zoo._blocks import classifier, conv_bn, depthwise_bn, finish

# SqueezeNet 1.1 fire modules (squeeze, expand per branch), with max pools after fire3 and fire5.
SQUEEZENET11_FIRES: tuple[tuple[int, int], ...] = (
    (16, 64), (16, 64), (32, 128), (32, 128), (48, 192), (48, 192), (64, 256), (64, 256),
)
SQUEEZENET11_POOL_AFTER = (3, 5)

# MobileNetV2 inverted-residual stages (expansion t, channels c, repeats n, first stride s); paper Table 2.
MOBILENETV2_STAGES: tuple[tuple[int, int, int, int], ...] = (
    (1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1),
)

# SSDLite: the first feature map is the expansion of TF layer_15 = block 14 here (output stride 16).
SSDLITE_TAP = "block14_expand"
SSDLITE_EXTRA_DEPTHS = (512, 256, 256, 128)
SSDLITE_ANCHORS = (3, 6, 6, 6, 6, 6)  # TF ssd_anchor_generator: 3 boxes on the lowest layer
COCO_CLASSES = 91  # 90 COCO label ids + background, as the TF Object Detection API model


def _fire(b: GraphBuilder, name: str, x: str, squeeze: int, expand: int) -> str:
    """Fire module: 1×1 squeeze, then parallel 1×1 and 3×3 expands, concatenated."""
    s = b.conv(f"{name}_squeeze", x, squeeze, 1, activation="relu")
    e1 = b.conv(f"{name}_expand1x1", s, expand, 1, activation="relu")
    e3 = b.conv(f"{name}_expand3x3", s, expand, 3, padding=1, activation="relu")
    return b.concat(f"{name}_concat", [e1, e3])


def squeezenet11(height: int, width: int) -> Graph:
    """SqueezeNet 1.1 (DeepScale; torchvision squeezenet1_1): 0.35 G MACs, 1.24 M params at 224×224.

    Caffe/torchvision pools are ceil-mode; conv10 + global average pool replace FC layers.
    """
    b = GraphBuilder("squeezenet11")
    x = b.conv("conv1", b.input("data", 3, height, width), 64, 3, stride=2, activation="relu")
    x = b.max_pool("pool1", x, 3, 2, ceil_mode=True)
    for i, (squeeze, expand) in enumerate(SQUEEZENET11_FIRES, start=2):
        x = _fire(b, f"fire{i}", x, squeeze, expand)
        if i in SQUEEZENET11_POOL_AFTER:
            x = b.max_pool(f"pool{i}", x, 3, 2, ceil_mode=True)
    x = b.conv("conv10", x, 1000, 1, activation="relu")
    x = b.global_avg_pool("pool10", x)
    return finish(b, b.softmax("prob", x))


def inverted_residual(b: GraphBuilder, prefix: str, x: str, out: int, stride: int, expand: int) -> str:
    """1×1 expand (ReLU6, skipped when t = 1), 3×3 depthwise (ReLU6), linear 1×1 project, residual if shapes allow."""
    channels = b.shape(x).c
    y = x if expand == 1 else conv_bn(b, f"{prefix}_expand", x, channels * expand, 1, activation="relu6")
    y = depthwise_bn(b, f"{prefix}_dw", y, 3, stride)
    y = conv_bn(b, f"{prefix}_project", y, out, 1, activation=None)
    if stride == 1 and channels == out:
        y = b.add(f"{prefix}_add", [x, y])
    return y


def _mobilenetv2_backbone(b: GraphBuilder, x: str) -> str:
    """Stem, the 17 inverted residuals, and the final 1×1 conv to 1280 channels."""
    x = conv_bn(b, "stem", x, 32, 3, 2, activation="relu6")
    index = 1
    for expand, out, repeats, stride in MOBILENETV2_STAGES:
        for r in range(repeats):
            x = inverted_residual(b, f"block{index}", x, out, stride if r == 0 else 1, expand)
            index += 1
    return conv_bn(b, "conv_last", x, 1280, 1, activation="relu6")


def mobilenetv2(height: int, width: int) -> Graph:
    """MobileNetV2 1.0 (Sandler et al. 2018): 0.30 G MACs, 3.5 M params at 224×224 (torchvision)."""
    b = GraphBuilder("mobilenetv2")
    x = _mobilenetv2_backbone(b, b.input("input", 3, height, width))
    return classifier(b, x, pool="avgpool", fc="classifier")


def _ssdlite_extra(b: GraphBuilder, index: int, x: str, depth: int) -> str:
    """Extra feature layer: 1×1 to depth/2, 3×3 depthwise stride 2, 1×1 to depth (all BN + ReLU6)."""
    y = conv_bn(b, f"extra{index}_reduce", x, depth // 2, 1, activation="relu6")
    y = depthwise_bn(b, f"extra{index}_dw", y, 3, 2)
    return conv_bn(b, f"extra{index}_project", y, depth, 1, activation="relu6")


def _ssdlite_predictor(b: GraphBuilder, name: str, x: str, outputs: int) -> None:
    """Separable predictor: 3×3 depthwise (BN + ReLU6), then a linear 1×1 conv with bias; a graph output."""
    y = depthwise_bn(b, f"{name}_dw", x)
    b.output(f"{name}_out", b.conv(name, y, outputs, 1))


def mobilenetv2_ssdlite(height: int, width: int) -> Graph:
    """MobileNetV2-SSDLite for COCO (91 classes incl. background), TF Object Detection API layout.

    Six feature maps: the block-14 expansion (576 ch, stride 16), the 1280-ch
    last layer (stride 32) and four extra layers of 512/256/256/128 channels;
    each gets a separable box predictor (anchors × 4) and class predictor
    (anchors × 91). The released 300×300 model has 4.475 M params and 1.525
    GFLOPs (OpenVINO Open Model Zoo card); the MobileNetV2 paper (Table 6,
    at 320×320) gives 4.3 M params and 0.8 G MACs.
    """
    b = GraphBuilder("mobilenetv2_ssdlite")
    last = _mobilenetv2_backbone(b, b.input("input", 3, height, width))
    features = [SSDLITE_TAP, last]
    for i, depth in enumerate(SSDLITE_EXTRA_DEPTHS, start=1):
        features.append(_ssdlite_extra(b, i, features[-1], depth))
    for i, (feature, anchors) in enumerate(zip(features, SSDLITE_ANCHORS, strict=True), start=1):
        _ssdlite_predictor(b, f"head{i}_box", feature, anchors * 4)
        _ssdlite_predictor(b, f"head{i}_cls", feature, anchors * COCO_CLASSES)
    return b.build()
