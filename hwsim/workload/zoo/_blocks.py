"""Building blocks shared by several zoo networks.

Conventions used across the zoo: a convolution followed by batch-norm has no
bias (`bias=False`, `bn=True`, as the frameworks export it); 'same'-style
padding is the symmetric `kernel // 2`, which gives ceil(size / stride)
outputs for odd kernels, as PyTorch and TensorFlow do.
"""

from __future__ import annotations

from hwsim.workload.builder import GraphBuilder
from hwsim.workload.ir import Graph


def conv_bn(b: GraphBuilder, name: str, x: str, out: int, kernel: int, stride: int = 1, groups: int = 1,
            activation: str | None = "relu") -> str:
    """Conv (no bias) + fused batch-norm + optional activation, padded to keep the size at stride 1."""
    return b.conv(name, x, out, kernel, stride=stride, padding=kernel // 2, groups=groups, bias=False,
                  bn=True, activation=activation)


def depthwise_bn(b: GraphBuilder, name: str, x: str, kernel: int = 3, stride: int = 1,
                 activation: str | None = "relu6") -> str:
    """Depthwise conv (one filter per channel) + fused batch-norm + activation."""
    channels = b.shape(x).c
    return conv_bn(b, name, x, channels, kernel, stride, groups=channels, activation=activation)


def finish(b: GraphBuilder, x: str, name: str = "output") -> Graph:
    """Mark `x` as the network output and return the finished graph."""
    b.output(name, x)
    return b.build()


def classifier(b: GraphBuilder, x: str, classes: int = 1000, pool: str = "avgpool", fc: str = "fc") -> Graph:
    """ImageNet head: global average pool, fully connected layer, softmax, output."""
    x = b.global_avg_pool(pool, x)
    x = b.fc(fc, x, classes)
    return finish(b, b.softmax("prob", x))


def fc_stack(b: GraphBuilder, x: str, widths: tuple[int, ...] = (4096, 4096, 1000), first: int = 6) -> Graph:
    """AlexNet/VGG head: fc6, fc7 with ReLU (dropout is free at inference), a linear fc8, softmax."""
    for i, width in enumerate(widths):
        last = i == len(widths) - 1
        x = b.fc(f"fc{first + i}", x, width, activation=None if last else "relu")
    return finish(b, b.softmax("prob", x))
