"""Residual networks as in torchvision: ResNet-18 and ResNet-50 (v1.5).

Batch-norm is folded into each conv (no conv bias), ReLU fused into the conv
or into the residual add that precedes it. Layer names follow torchvision
(`layer2.0.conv1`, `layer2.0.downsample`, ...), plus `layerS.B.add` for the
residual sum. Within a block the main branch comes before the projection
shortcut, as in torchvision's forward() and the ONNX Model Zoo graph.
"""

from __future__ import annotations

from collections.abc import Callable

from hwsim.workload.builder import GraphBuilder
from hwsim.workload.ir import Graph
from hwsim.workload.zoo._blocks import classifier, conv_bn

Block = Callable[[GraphBuilder, str, str, int, int], str]


def _shortcut(b: GraphBuilder, prefix: str, x: str, channels: int, stride: int) -> str:
    """Identity, or a 1×1 conv-BN projection when the shape changes."""
    if stride == 1 and b.shape(x).c == channels:
        return x
    return conv_bn(b, f"{prefix}.downsample", x, channels, 1, stride, activation=None)


def basic_block(b: GraphBuilder, prefix: str, x: str, width: int, stride: int) -> str:
    """Two 3×3 convs (ResNet-18/34)."""
    y = conv_bn(b, f"{prefix}.conv1", x, width, 3, stride)
    y = conv_bn(b, f"{prefix}.conv2", y, width, 3, activation=None)
    return b.add(f"{prefix}.add", [y, _shortcut(b, prefix, x, width, stride)], activation="relu")


def bottleneck(b: GraphBuilder, prefix: str, x: str, width: int, stride: int) -> str:
    """1×1 reduce, 3×3 (carrying the stride: v1.5), 1×1 expand ×4 (ResNet-50/101/152)."""
    y = conv_bn(b, f"{prefix}.conv1", x, width, 1)
    y = conv_bn(b, f"{prefix}.conv2", y, width, 3, stride)
    y = conv_bn(b, f"{prefix}.conv3", y, 4 * width, 1, activation=None)
    return b.add(f"{prefix}.add", [y, _shortcut(b, prefix, x, 4 * width, stride)], activation="relu")


def _resnet(name: str, block: Block, depths: tuple[int, ...], height: int, width: int) -> Graph:
    b = GraphBuilder(name)
    x = conv_bn(b, "conv1", b.input("input", 3, height, width), 64, 7, 2)
    x = b.max_pool("maxpool", x, 3, 2, padding=1)
    for stage, blocks in enumerate(depths):
        for i in range(blocks):
            stride = 2 if stage > 0 and i == 0 else 1
            x = block(b, f"layer{stage + 1}.{i}", x, 64 * 2**stage, stride)
    return classifier(b, x)


def resnet18(height: int, width: int) -> Graph:
    """ResNet-18 (He et al. 2016): 1.82 G MACs, 11.7 M params at 224×224."""
    return _resnet("resnet18", basic_block, (2, 2, 2, 2), height, width)


def resnet50(height: int, width: int) -> Graph:
    """ResNet-50 v1.5 (torchvision; stride on the 3×3 conv): 4.1 G MACs, 25.6 M params at 224×224."""
    return _resnet("resnet50", bottleneck, (3, 4, 6, 3), height, width)
