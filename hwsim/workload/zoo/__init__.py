"""The built-in network zoo: well-known CNNs built with `GraphBuilder`.

`names()` lists them, `entry(name)` describes one (default input size and
the published MACs / parameters it reproduces, with their source) and
`build(name, input_hw)` returns its `Graph`, at any input resolution.
MACs are multiply-accumulates per image; parameters include biases and
batch-norm scale and shift. Names are forgiving: case, '-', '_', '.' and
spaces are ignored ("VGG-16", "squeezenet1.1") and a few aliases are known.
"""

from __future__ import annotations

import difflib
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

from hwsim.errors import NetworkError
from hwsim.workload.ir import Graph
from hwsim.workload.zoo import classic, densenet, example, inception, mobile, pixel, resnet


@dataclass(frozen=True)
class ZooEntry:
    """One zoo network: how to build it and the published figures it should reproduce."""

    name: str
    description: str
    default_hw: tuple[int, int]  # (height, width)
    in_channels: int
    build: Callable[[int, int], Graph]
    published_macs: float | None  # at default_hw
    published_params: float | None
    published_source: str
    aliases: tuple[str, ...] = ()


_IMAGENET = (224, 224)
_HD = (720, 1280)  # 1280×720 (W×H)

_ENTRIES: tuple[ZooEntry, ...] = (
    ZooEntry("alexnet", "BVLC AlexNet (Caffe): grouped conv2/4/5, LRN, 3 FC layers", (227, 227), 3,
             classic.alexnet, published_macs=724e6, published_params=61.0e6,
             published_source="Sze et al., 'Efficient Processing of Deep Neural Networks' (Proc. IEEE 2017): "
             "61M weights and 724M MACs at 227x227; conv MACs per layer: Chen et al., Eyeriss (JSSC 2017)",
             aliases=("bvlc_alexnet",)),
    ZooEntry("vgg16", "VGG-16 (configuration D)", _IMAGENET, 3, classic.vgg16,
             published_macs=15.5e9, published_params=138.4e6,
             published_source="Sze et al. (2017): 15.5G MACs, 138M weights; torchvision vgg16: 138,357,544 params",
             aliases=("vgg_d",)),
    ZooEntry("vgg19", "VGG-19 (configuration E)", _IMAGENET, 3, classic.vgg19,
             published_macs=19.6e9, published_params=143.7e6,
             published_source="torchvision vgg19 model card: 19.63 GFLOPS (MACs), 143,667,240 params",
             aliases=("vgg_e",)),
    ZooEntry("vgg_e5", "first five conv layers of VGG-E, as fused by Alwani et al. (MICRO 2016)", _IMAGENET, 3,
             classic.vgg_e5, published_macs=None, published_params=None,
             published_source="Alwani et al., 'Fused-Layer CNN Accelerators' (MICRO 2016)",
             aliases=("fused_layer_vgg",)),
    ZooEntry("resnet18", "ResNet-18 (torchvision)", _IMAGENET, 3, resnet.resnet18,
             published_macs=1.82e9, published_params=11.7e6,
             published_source="He et al. (CVPR 2016) Table 1: 1.8e9 multiply-adds; "
             "torchvision resnet18: 1.81 GFLOPS (MACs), 11,689,512 params"),
    ZooEntry("resnet50", "ResNet-50 v1.5 (torchvision: stride on the 3x3 conv)", _IMAGENET, 3, resnet.resnet50,
             published_macs=4.1e9, published_params=25.6e6,
             published_source="torchvision resnet50 model card: 4.09 GFLOPS (MACs), 25,557,032 params",
             aliases=("resnet50_v1.5",)),
    ZooEntry("squeezenet11", "SqueezeNet 1.1", _IMAGENET, 3, mobile.squeezenet11,
             published_macs=0.35e9, published_params=1.24e6,
             published_source="torchvision squeezenet1_1 model card: 0.35 GFLOPS (MACs), 1,235,496 params",
             aliases=("squeezenet",)),
    ZooEntry("googlenet", "GoogLeNet / Inception-v1 (BVLC), no auxiliary heads", _IMAGENET, 3, inception.googlenet,
             published_macs=1.5e9, published_params=6.8e6,
             published_source="Szegedy et al. (CVPR 2015) Table 1: ~1.5G multiply-adds, ~6.8M params (counted "
             "in K = 1024, without biases); the table's conv1 row (34M ops) undercounts the 7x7x3x64 conv "
             "(118M MACs), so the BVLC model has 1.58G MACs and 7.0M params with biases",
             aliases=("inception_v1", "bvlc_googlenet")),
    ZooEntry("mobilenetv2", "MobileNetV2 1.0 (ReLU6, depthwise convs)", _IMAGENET, 3, mobile.mobilenetv2,
             published_macs=0.30e9, published_params=3.5e6,
             published_source="Sandler et al. (CVPR 2018) Table 4: 300M MAdds; "
             "torchvision mobilenet_v2: 3,504,872 params (the paper rounds to 3.4M)"),
    ZooEntry("densenet121", "DenseNet-121 (torchvision), pre-activation BN+ReLU", _IMAGENET, 3,
             densenet.densenet121, published_macs=2.83e9, published_params=8.0e6,
             published_source="torchvision densenet121 model card: 2.83 GFLOPS (MACs), 7,978,856 params"),
    ZooEntry("tiny_yolov2", "Tiny-YOLOv2 VOC (darknet yolov2-tiny-voc)", (416, 416), 3, classic.tiny_yolov2,
             published_macs=6.97e9 / 2, published_params=15.9e6,
             published_source="darknet yolov2-tiny-voc at 416x416: 6.97 BFLOPs (2 per MAC); ~15.9M params",
             aliases=("yolov2_tiny",)),
    ZooEntry("srgan", "SRGAN generator (SRResNet, x4): 16 residual blocks, 37 conv layers", _HD, 3, pixel.srgan,
             published_macs=None, published_params=1.5e6,
             published_source="Goetschalckx & Verhelst (JETCAS 2019): 'the whole model (1.5 M parameters)', "
             "given to two digits (also: 24% of 6.4M features = 1.54M)",
             aliases=("srresnet",)),
    ZooEntry("dmcnn_vd", "DMCNN-VD demosaicking: 20 3x3 conv layers, 64 channels", _HD, 3, pixel.dmcnn_vd,
             published_macs=None, published_params=None,
             published_source="Syu, Chen & Chuang (2018); used by Goetschalckx & Verhelst (JETCAS 2019)",
             aliases=("dmcnn",)),
    ZooEntry("fsrcnn", "FSRCNN(56,12,4), x2 super resolution on the Y channel", _HD, 1, pixel.fsrcnn,
             published_macs=None, published_params=12464,
             published_source="Dong, Loy & Tang (ECCV 2016): FSRCNN(56,12,4) has 12,464 parameters "
             "(weights only; biases not counted)"),
    ZooEntry("mobilenetv2_ssdlite", "MobileNetV2-SSDLite, COCO (91 classes incl. background)", (300, 300), 3,
             mobile.mobilenetv2_ssdlite, published_macs=1.525e9 / 2, published_params=4.475e6,
             published_source="OpenVINO Open Model Zoo ssdlite_mobilenet_v2 (the TF COCO model, 300x300): "
             "1.525 GFLOPs (2 per MAC), 4.475M params; the MobileNetV2 paper (Table 6, at 320x320) "
             "gives 0.8B MAdds and 4.3M params",
             aliases=("ssdlite", "ssdlite_mobilenet_v2")),
    ZooEntry("phases_example", "the example CNN of the DSD'20 phases paper (Table II)", (32, 32), 1,
             example.phases_example, published_macs=None, published_params=None,
             published_source="DSD 2020 phases paper, Table II", aliases=("phases",)),
)

_BY_NAME = {e.name: e for e in _ENTRIES}


def _key(name: str) -> str:
    """Lower case without spaces, '-', '_' or '.': the form names are matched in."""
    return re.sub(r"[\s._-]", "", name.lower())


_LOOKUP: dict[str, str] = {_key(alias): e.name for e in _ENTRIES for alias in (e.name, *e.aliases)}


def names() -> list[str]:
    """Canonical zoo names, in registry order."""
    return [e.name for e in _ENTRIES]


def entries() -> list[ZooEntry]:
    """All zoo entries, in registry order."""
    return list(_ENTRIES)


def entry(name: str) -> ZooEntry:
    """The entry for `name` (forgiving spelling); NetworkError with suggestions if unknown."""
    found = _LOOKUP.get(_key(name))
    if found is not None:
        return _BY_NAME[found]
    key = _key(name)
    partial = [k for k in _LOOKUP if key and key in k]
    close = difflib.get_close_matches(key, list(_LOOKUP), n=6, cutoff=0.6)
    suggestions = list(dict.fromkeys(_LOOKUP[k] for k in partial + close))[:3]
    hint = f" (closest: {', '.join(suggestions)})" if suggestions else ""
    raise NetworkError(f"unknown zoo network {name!r}{hint}; run `hwsim zoo` to list them")


def build(name: str, input_hw: tuple[int, int] | None = None) -> Graph:
    """Build zoo network `name` at `input_hw` = (height, width), or at its default size."""
    e = entry(name)
    if input_hw is None:
        return e.build(*e.default_hw)
    try:
        height, width = (operator.index(v) for v in input_hw)
    except (TypeError, ValueError):
        height = width = 0
    if height <= 0 or width <= 0:
        raise NetworkError(f"{e.name}: input size must be two positive integers (height, width), got {input_hw!r}")
    return e.build(height, width)


__all__ = ["ZooEntry", "build", "entries", "entry", "names"]
