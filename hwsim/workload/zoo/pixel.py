"""Pixel-to-pixel networks from the depth-first paper (Goetschalckx & Verhelst, JETCAS 2019) and FSRCNN.

Default input 1280×720 (720p, W×H); these networks run at full image
resolution, so MACs scale with the pixel count.
"""

from __future__ import annotations

from hwsim.workload.builder import GraphBuilder
from hwsim.workload.ir import Graph
from hwsim.workload.zoo._blocks import conv_bn, finish

SRGAN_BLOCKS = 16
SRGAN_WIDTH = 64


def _srgan_residual(b: GraphBuilder, prefix: str, x: str) -> str:
    """3×3 conv-BN-PReLU, 3×3 conv-BN, plus the block input."""
    y = conv_bn(b, f"{prefix}_conv1", x, SRGAN_WIDTH, 3, activation="prelu")
    y = conv_bn(b, f"{prefix}_conv2", y, SRGAN_WIDTH, 3, activation=None)
    return b.add(f"{prefix}_add", [y, x])


def _srgan_upsample(b: GraphBuilder, prefix: str, x: str) -> str:
    """3×3 conv to 256 channels, pixel shuffle ×2, PReLU.

    The PReLU is fused into the conv: pixel shuffle only moves elements, so
    activating before or after it is the same computation.
    """
    y = b.conv(f"{prefix}_conv", x, 4 * SRGAN_WIDTH, 3, padding=1, activation="prelu")
    return b.depth_to_space(f"{prefix}_shuffle", y, 2)


def srgan(height: int, width: int) -> Graph:
    """SRGAN generator (SRResNet, Ledig et al. 2017), ×4 super resolution: 37 conv layers, ~1.5 M params.

    9×9 conv + PReLU, 16 residual blocks, 3×3 conv-BN + long skip, two ×2
    upsample blocks, 9×9 conv to RGB. The output is 4× the input in each dimension.
    """
    b = GraphBuilder("srgan")
    x = b.input("input", 3, height, width)
    head = b.conv("conv_input", x, SRGAN_WIDTH, 9, padding=4, activation="prelu")
    y = head
    for i in range(1, SRGAN_BLOCKS + 1):
        y = _srgan_residual(b, f"res{i}", y)
    y = conv_bn(b, "conv_mid", y, SRGAN_WIDTH, 3, activation=None)
    y = b.add("add_mid", [y, head])
    for i in (1, 2):
        y = _srgan_upsample(b, f"up{i}", y)
    return finish(b, b.conv("conv_output", y, 3, 9, padding=4))


def dmcnn_vd(height: int, width: int) -> Graph:
    """DMCNN-VD demosaicking (Syu et al. 2018): 20 3×3 conv layers of 64 channels, residual learning.

    The Bayer mosaic enters as 3 sparse colour planes; layers 1–19 are
    conv-BN-SELU, layer 20 a linear conv back to 3 channels whose output is
    added to the input (global residual).
    """
    b = GraphBuilder("dmcnn_vd")
    x = b.input("input", 3, height, width)
    y = x
    for i in range(1, 20):
        y = conv_bn(b, f"conv{i}", y, 64, 3, activation="selu")
    y = b.conv("conv20", y, 3, 3, padding=1)
    return finish(b, b.add("residual", [y, x]))


def fsrcnn(height: int, width: int, scale: int = 2, d: int = 56, s: int = 12, m: int = 4) -> Graph:
    """FSRCNN(d=56, s=12, m=4), ×2 (Dong, Loy & Tang, ECCV 2016), on the luminance channel.

    5×5 feature extraction to d, 1×1 shrink to s, m 3×3 mapping layers, 1×1
    expand to d (all PReLU), then a 9×9 transposed conv with stride `scale` to
    one channel; padding 4 and output padding scale−1 make the output exactly
    scale× the input. The paper counts 12,464 weights (no biases).
    """
    b = GraphBuilder("fsrcnn")
    y = b.conv("feature", b.input("input", 1, height, width), d, 5, padding=2, activation="prelu")
    y = b.conv("shrink", y, s, 1, activation="prelu")
    for i in range(1, m + 1):
        y = b.conv(f"map{i}", y, s, 3, padding=1, activation="prelu")
    y = b.conv("expand", y, d, 1, activation="prelu")
    y = b.conv_transpose("deconv", y, 1, 9, stride=scale, padding=4, output_padding=scale - 1)
    return finish(b, y)
