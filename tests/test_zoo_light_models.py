"""Zoo networks against the ONNX Model Zoo "light" graphs shipped inside the onnx wheel.

The light models keep the real graphs but replace every weight by a
ConstantOfShape node, so the weight *shapes* survive. They are read here
directly with the onnx package (no hwsim importer involved) and compared,
weighted layer by weighted layer, with the zoo: filter shape, stride and
group count, in execution order.

All six compare as *ordered* lists: the zoo emits parallel branches in the
same order as the exported graphs (Caffe's inception branch order; ResNet's
main branch before its projection shortcut), so no permutation is needed.

Known differences of detail between the light models and the zoo, none of
which changes a weight shape, stride or group count:
- bvlc_alexnet feeds 224×224 and emulates Caffe's ceil-mode pool5 with an
  end padding of 1; its pool1/pool2 use floor mode. The zoo's AlexNet is
  built at 224×224 here and uses ceil mode for all three pools, which also
  leaves 256×6×6 = 9216 inputs to fc6.
- inception_v1 (Caffe) uses floor-mode pools (55→27→13→6 at 224) and pads
  its 7×7 average pool; the zoo keeps Caffe's ceil mode (56→28→14→7) and a
  global average pool. Its classifier weight goes through a Reshape.
- resnet50 (Caffe2) ends in a fixed 7×7 average pool; the zoo uses a global one.
- densenet121 (Caffe port) has its classifier as a 1×1 Conv after global
  pooling; the zoo has an FC layer. Both weights are 1000×1024(×1×1).
"""

from __future__ import annotations

import os

import onnx
import pytest
from onnx import helper, numpy_helper

from hwsim.workload import zoo
from hwsim.workload.ir import LayerKind

LIGHT_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")

Weighted = tuple[tuple[int, int, int, int], tuple[int, int], int]


def _weight_shape(graph: onnx.GraphProto, tensor: str) -> tuple[int, ...]:
    """Shape of a weight input: an initializer, or a ConstantOfShape / Reshape whose shape is an initializer."""
    inits = {t.name: t for t in graph.initializer}
    if tensor in inits:
        return tuple(inits[tensor].dims)
    producer = next(n for n in graph.node if tensor in n.output)
    shape_input = {"ConstantOfShape": 0, "Reshape": 1}[producer.op_type]
    shape = tuple(int(v) for v in numpy_helper.to_array(inits[producer.input[shape_input]]))
    assert all(d > 0 for d in shape), f"{tensor}: unresolved shape {shape}"
    return shape


def onnx_weighted_layers(filename: str) -> list[Weighted]:
    """(weight shape as M×C×kh×kw, stride, groups) of every Conv and Gemm, in node order."""
    graph = onnx.load(os.path.join(LIGHT_DIR, filename)).graph
    found: list[Weighted] = []
    for node in graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type == "Conv":
            m, c, kh, kw = _weight_shape(graph, node.input[1])
            sh, sw = attrs.get("strides", [1, 1])
            found.append(((m, c, kh, kw), (sh, sw), attrs.get("group", 1)))
        elif node.op_type == "Gemm":
            rows, cols = _weight_shape(graph, node.input[1])
            out, inp = (rows, cols) if attrs.get("transB", 0) else (cols, rows)
            found.append(((out, inp, 1, 1), (1, 1), 1))
    return found


def zoo_weighted_layers(name: str, input_hw: tuple[int, int] | None) -> list[Weighted]:
    graph = zoo.build(name, input_hw)
    return [(l.weight_shape, l.stride, l.groups) for l in graph.of_kind(LayerKind.CONV, LayerKind.FC)]


CASES = [
    ("light_bvlc_alexnet.onnx", "alexnet", (224, 224)),
    ("light_vgg19.onnx", "vgg19", None),
    ("light_squeezenet.onnx", "squeezenet11", None),
    ("light_inception_v1.onnx", "googlenet", None),
    ("light_resnet50.onnx", "resnet50", None),
    ("light_densenet121.onnx", "densenet121", None),
]


@pytest.mark.parametrize(("filename", "name", "input_hw"), CASES, ids=[c[1] for c in CASES])
def test_weighted_layers_match_light_model(filename: str, name: str, input_hw: tuple[int, int] | None) -> None:
    expected = onnx_weighted_layers(filename)
    actual = zoo_weighted_layers(name, input_hw)
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert a == e, f"{name}: weighted layer {i}: zoo {a} != ONNX {e}"


def test_light_model_layer_counts() -> None:
    """Independent sanity check of the reader on counts known from the architectures."""
    assert len(onnx_weighted_layers("light_vgg19.onnx")) == 16 + 3
    assert len(onnx_weighted_layers("light_resnet50.onnx")) == 1 + 16 * 3 + 4 + 1  # stem, blocks, projections, fc
    assert len(onnx_weighted_layers("light_densenet121.onnx")) == 1 + 2 * (6 + 12 + 24 + 16) + 3 + 1
    assert len(onnx_weighted_layers("light_inception_v1.onnx")) == 3 + 9 * 6 + 1
