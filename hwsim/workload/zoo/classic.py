"""Plain convolution chains: AlexNet, VGG, the VGG-E prefix of the fused-layer paper, Tiny-YOLOv2.

MACs are multiply-accumulates for one image; parameters count weights,
biases and batch-norm scale/shift (see `hwsim.workload.ir.Layer.params`).
"""

from __future__ import annotations

from hwsim.workload.builder import GraphBuilder
from hwsim.workload.ir import Graph
from hwsim.workload.zoo._blocks import conv_bn, fc_stack, finish

# Convolution widths per VGG stage (Simonyan & Zisserman 2015, Table 1, configurations D and E).
VGG16_STAGES: tuple[tuple[int, ...], ...] = ((64, 64), (128, 128), (256,) * 3, (512,) * 3, (512,) * 3)
VGG19_STAGES: tuple[tuple[int, ...], ...] = ((64, 64), (128, 128), (256,) * 4, (512,) * 4, (512,) * 4)


def alexnet(height: int, width: int) -> Graph:
    """BVLC AlexNet (Caffe), as analysed by Eyeriss (JSSC 2017) and CNNergy.

    Grouped conv2/4/5 (two GPU halves), LRN after conv1 and conv2, 3×3/2 max
    pools in Caffe's ceil mode (identical to floor mode at 227×227; at 224×224
    it keeps pool5 at 6×6 so fc6 still has 9216 inputs). Conv MACs at 227×227:
    105.4/223.9/149.5/112.1/74.8 M (665.7 M); 724 M MACs and 61 M weights in
    total (Sze et al., "Efficient Processing of Deep Neural Networks").
    """
    b = GraphBuilder("alexnet")
    x = b.input("data", 3, height, width)
    x = b.conv("conv1", x, 96, 11, stride=4, activation="relu")
    x = b.lrn("norm1", x, 5)
    x = b.max_pool("pool1", x, 3, 2, ceil_mode=True)
    x = b.conv("conv2", x, 256, 5, padding=2, groups=2, activation="relu")
    x = b.lrn("norm2", x, 5)
    x = b.max_pool("pool2", x, 3, 2, ceil_mode=True)
    x = b.conv("conv3", x, 384, 3, padding=1, activation="relu")
    x = b.conv("conv4", x, 384, 3, padding=1, groups=2, activation="relu")
    x = b.conv("conv5", x, 256, 3, padding=1, groups=2, activation="relu")
    x = b.max_pool("pool5", x, 3, 2, ceil_mode=True)
    return fc_stack(b, x)


def _vgg_features(b: GraphBuilder, x: str, stages: tuple[tuple[int, ...], ...], final_pool: bool = True) -> str:
    """3×3 same-padded conv+ReLU layers named convS_I, a 2×2/2 max pool poolS after each stage."""
    for s, widths in enumerate(stages, start=1):
        for i, channels in enumerate(widths, start=1):
            x = b.conv(f"conv{s}_{i}", x, channels, 3, padding=1, activation="relu")
        if final_pool or s < len(stages):
            x = b.max_pool(f"pool{s}", x, 2, 2)
    return x


def _vgg(name: str, stages: tuple[tuple[int, ...], ...], height: int, width: int) -> Graph:
    b = GraphBuilder(name)
    x = _vgg_features(b, b.input("data", 3, height, width), stages)
    return fc_stack(b, x)


def vgg16(height: int, width: int) -> Graph:
    """VGG-16 (configuration D): 13 conv + 3 FC; 15.5 G MACs, 138.4 M params at 224×224."""
    return _vgg("vgg16", VGG16_STAGES, height, width)


def vgg19(height: int, width: int) -> Graph:
    """VGG-19 (configuration E): 16 conv + 3 FC; 19.6 G MACs, 143.7 M params at 224×224."""
    return _vgg("vgg19", VGG19_STAGES, height, width)


def vgg_e5(height: int, width: int) -> Graph:
    """The first five conv layers of VGG-E (= VGG-19), the fused-layer paper's workload.

    Alwani et al., "Fused-Layer CNN Accelerators" (MICRO 2016) fuse conv1_1,
    conv1_2, pool1, conv2_1, conv2_2, pool2 and conv3_1 at 224×224; the
    depth-first paper (Goetschalckx & Verhelst 2019) compares against it.
    The network ends at conv3_1 (256×56×56 at 224×224).
    """
    b = GraphBuilder("vgg_e5")
    prefix = VGG19_STAGES[0], VGG19_STAGES[1], VGG19_STAGES[2][:1]
    x = _vgg_features(b, b.input("data", 3, height, width), prefix, final_pool=False)
    return finish(b, x)


def tiny_yolov2(height: int, width: int) -> Graph:
    """Tiny-YOLOv2 for VOC (darknet yolov2-tiny-voc.cfg), 416×416 by default.

    Eight 3×3 conv-BN-leaky-ReLU layers with 2×2 max pools (the sixth with
    stride 1 and 'same' padding, keeping 13×13), then a 1×1 conv to
    125 = 5 anchors × (20 classes + 5) outputs. Darknet reports 6.97 BFLOPs
    (2 FLOPs per MAC: ~3.49 G MACs); ~15.9 M parameters.
    """
    b = GraphBuilder("tiny_yolov2")
    x = b.input("data", 3, height, width)
    for i, channels in enumerate((16, 32, 64, 128, 256, 512), start=1):
        x = conv_bn(b, f"conv{i}", x, channels, 3, activation="leaky_relu")
        last = i == 6
        x = b.max_pool(f"pool{i}", x, 2, 1 if last else 2, padding="same" if last else 0)
    x = conv_bn(b, "conv7", x, 1024, 3, activation="leaky_relu")
    x = conv_bn(b, "conv8", x, 1024, 3, activation="leaky_relu")
    x = b.conv("conv9", x, 125, 1)
    return finish(b, x)
