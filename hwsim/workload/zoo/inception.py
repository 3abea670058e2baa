"""GoogLeNet / Inception-v1 as released by BVLC (Caffe), without the auxiliary classifiers.

Caffe details kept: conv biases, LRN after pool1 and after conv2, ceil-mode
3×3/2 max pools. The final 7×7 average pool is modelled as a global average
pool (identical at 224×224, and keeps fc at 1024 inputs at other sizes).
Branches are emitted in Caffe's order (1×1, 3×3 reduce, 3×3, 5×5 reduce,
5×5, pool, pool proj). ~1.5 G MACs (Szegedy et al. 2015: "a computational
budget of 1.5 billion multiply-adds"), ~7.0 M params with biases.
"""

from __future__ import annotations

from hwsim.workload.builder import GraphBuilder
from hwsim.workload.ir import Graph
from hwsim.workload.zoo._blocks import classifier

# Inception modules: #1×1, #3×3 reduce, #3×3, #5×5 reduce, #5×5, pool proj (Szegedy et al. 2015, Table 1).
INCEPTION_V1: dict[str, tuple[int, int, int, int, int, int]] = {
    "3a": (64, 96, 128, 16, 32, 32),
    "3b": (128, 128, 192, 32, 96, 64),
    "4a": (192, 96, 208, 16, 48, 64),
    "4b": (160, 112, 224, 24, 64, 64),
    "4c": (128, 128, 256, 24, 64, 64),
    "4d": (112, 144, 288, 32, 64, 64),
    "4e": (256, 160, 320, 32, 128, 128),
    "5a": (256, 160, 320, 32, 128, 128),
    "5b": (384, 192, 384, 48, 128, 128),
}
POOL_AFTER = {"3b": "pool3", "4e": "pool4"}


def _relu_conv(b: GraphBuilder, name: str, x: str, out: int, kernel: int) -> str:
    return b.conv(name, x, out, kernel, padding=kernel // 2, activation="relu")


def inception_module(b: GraphBuilder, name: str, x: str, widths: tuple[int, int, int, int, int, int]) -> str:
    """Four parallel branches (1×1; 1×1→3×3; 1×1→5×5; 3×3/1 max pool→1×1), concatenated."""
    n1, r3, n3, r5, n5, proj = widths
    p = f"inception_{name}"
    branch1 = _relu_conv(b, f"{p}_1x1", x, n1, 1)
    branch3 = _relu_conv(b, f"{p}_3x3", _relu_conv(b, f"{p}_3x3_reduce", x, r3, 1), n3, 3)
    branch5 = _relu_conv(b, f"{p}_5x5", _relu_conv(b, f"{p}_5x5_reduce", x, r5, 1), n5, 5)
    pooled = b.max_pool(f"{p}_pool", x, 3, 1, padding=1)
    branch4 = _relu_conv(b, f"{p}_pool_proj", pooled, proj, 1)
    return b.concat(f"{p}_output", [branch1, branch3, branch5, branch4])


def googlenet(height: int, width: int) -> Graph:
    """GoogLeNet (BVLC), 224×224 by default."""
    b = GraphBuilder("googlenet")
    x = b.conv("conv1", b.input("data", 3, height, width), 64, 7, stride=2, padding=3, activation="relu")
    x = b.max_pool("pool1", x, 3, 2, ceil_mode=True)
    x = b.lrn("norm1", x, 5)
    x = _relu_conv(b, "conv2_reduce", x, 64, 1)
    x = _relu_conv(b, "conv2", x, 192, 3)
    x = b.lrn("norm2", x, 5)
    x = b.max_pool("pool2", x, 3, 2, ceil_mode=True)
    for name, widths in INCEPTION_V1.items():
        x = inception_module(b, name, x, widths)
        if name in POOL_AFTER:
            x = b.max_pool(POOL_AFTER[name], x, 3, 2, ceil_mode=True)
    return classifier(b, x, pool="pool5", fc="loss3_classifier")
