"""DenseNet-121 (Huang et al. 2017), torchvision layout: growth 32, bottleneck 4·32, compression 0.5.

DenseNet is pre-activation: every conv reads BN+ReLU of its input. The IR
fuses batch-norm and activation into the layer that *produces* a tensor, so:

- where the normalised tensor has a single consumer (the 3×3 conv after the
  1×1 bottleneck, the stem conv0, and a block's last concat, read only by the
  transition's norm or by norm5), BN+ReLU is fused into the producer
  (`bn=True`, `activation="relu"`), exact because that BN sees nothing else;
- where it does not (a dense layer's norm1 reads the block's running concat,
  which later layers and the next concat also read, each consumer with its
  own BN), it is a standalone `unary` layer with `bn=True, activation="relu"`.

This is the rule the ONNX importer applies too, so an exported DenseNet
re-imports layer for layer.

So the parameters are exactly torchvision's (BN scale+shift per channel);
MACs come from conv and FC layers only. 2.83 G MACs, 8.0 M params at 224×224.
"""

from __future__ import annotations

from hwsim.workload.builder import GraphBuilder
from hwsim.workload.ir import Graph
from hwsim.workload.zoo._blocks import classifier, conv_bn

GROWTH = 32
BOTTLENECK = 4 * GROWTH


def _dense_layer(b: GraphBuilder, prefix: str, x: str) -> str:
    """norm1+relu1 (unary) → 1×1 conv with norm2+relu2 fused → 3×3 conv; returns the new features."""
    y = b.unary(f"{prefix}.norm1", x, bn=True, activation="relu")
    y = conv_bn(b, f"{prefix}.conv1", y, BOTTLENECK, 1)
    return b.conv(f"{prefix}.conv2", y, GROWTH, 3, padding=1, bias=False)


def _dense_block(b: GraphBuilder, index: int, x: str, layers: int) -> str:
    for i in range(1, layers + 1):
        prefix = f"denseblock{index}.denselayer{i}"
        x = b.concat(f"{prefix}.concat", [x, _dense_layer(b, prefix, x)])
    return x


def _transition(b: GraphBuilder, index: int, x: str) -> str:
    """BN+ReLU fused into the block's last concat, 1×1 conv halving the channels, 2×2/2 average pool."""
    prefix = f"transition{index}"
    b.fuse(x, bn=True, activation="relu")
    y = b.conv(f"{prefix}.conv", x, b.shape(x).c // 2, 1, bias=False)
    return b.avg_pool(f"{prefix}.pool", y, 2, 2)


def densenet121(height: int, width: int) -> Graph:
    """DenseNet-121: blocks of 6, 12, 24, 16 dense layers."""
    b = GraphBuilder("densenet121")
    x = conv_bn(b, "conv0", b.input("input", 3, height, width), 64, 7, 2)  # norm0 + relu0 fused
    x = b.max_pool("pool0", x, 3, 2, padding=1)
    depths = (6, 12, 24, 16)
    for i, layers in enumerate(depths, start=1):
        x = _dense_block(b, i, x, layers)
        if i < len(depths):
            x = _transition(b, i, x)
    b.fuse(x, bn=True, activation="relu")  # norm5
    return classifier(b, x, pool="avgpool", fc="classifier")
