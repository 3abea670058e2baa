"""1-D convolution networks (audio: N×C×L signals) imported as maps of height 1, with hand-counted MACs, and
simulated and checked on a row-stationary and a systolic config."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_one_line_error
from onnx import TensorProto, helper, numpy_helper, save

from hwsim.workload.ir import LayerKind, Shape
from hwsim.workload.onnx_import import load_onnx


def _signal_model(path: Path, nodes: list, weights: dict[str, tuple[int, ...]], length: int = 8000,
                  channels: int = 1) -> Path:
    """A graph on a 1 x channels x length input named x with output y; weights are zero tensors."""
    inits = [numpy_helper.from_array(np.zeros(shape, np.float32), name) for name, shape in weights.items()]
    graph = helper.make_graph(nodes, path.stem, [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                [1, channels, length])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def m5_like(path: Path) -> Path:
    """M5's first block and a second conv: Conv1d(1, 16, 80, stride 4, pad 38), ReLU, MaxPool1d(4),
    Conv1d(16, 32, 3, pad 1), global average pool, Linear(32, 10)."""
    nodes = [helper.make_node("Conv", ["x", "W1"], ["c1"], strides=[4], pads=[38, 38]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[4], strides=[4]),
             helper.make_node("Conv", ["p1", "W2"], ["c2"], pads=[1, 1]),
             helper.make_node("GlobalAveragePool", ["c2"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "Wfc"], ["y"], transB=1)]
    return _signal_model(path, nodes, {"W1": (16, 1, 80), "W2": (32, 16, 3), "Wfc": (10, 32)})


def test_an_m5_like_network_by_hand(tmp_path: Path) -> None:
    """conv1: (8000 + 2*38 - 80) / 4 + 1 = 2000 outputs x 16 filters x 80 taps = 2,560,000 MACs;
    pool: 2000 / 4 = 500; conv2: 500 x 32 x 16 x 3 = 768,000; fc 32 x 10 = 320. Total 3,328,320."""
    graph = load_onnx(m5_like(tmp_path / "m5.onnx")).graph
    c1, p1, c2 = graph.layer("c1"), graph.layer("p1"), graph.layer("c2")
    assert (c1.kind, c1.in_shapes[0], c1.out_shape) == (LayerKind.CONV, Shape(1, 1, 8000), Shape(16, 1, 2000))
    assert (c1.kernel, c1.stride, c1.activation) == ((1, 80), (1, 4), "relu")
    assert (c1.padding.top, c1.padding.left, c1.padding.bottom, c1.padding.right) == (0, 38, 0, 38)
    assert p1.out_shape == Shape(16, 1, 500) and c2.out_shape == Shape(32, 1, 500)
    assert [graph.layer(n).macs for n in ("c1", "c2")] == [2_560_000, 768_000]
    assert graph.total_macs == 2_560_000 + 768_000 + 320


def test_a_pad_op_and_a_transposed_conv_on_a_signal(tmp_path: Path) -> None:
    """Pad(3, 5) along L absorbed by a Conv1d(4, 8, 5): 100 + 8 - 5 + 1 = 104 outputs x 8 x 4 x 5 = 16,640 MACs;
    then ConvTranspose1d(8, 2, 4, stride 2): (104 - 1) x 2 + 4 = 210 outputs; its MACs count every input tap:
    104 x 8 x 2 x 4 = 6,656."""
    nodes = [helper.make_node("Pad", ["x", "pads"], ["xp"]),
             helper.make_node("Conv", ["xp", "W1"], ["c1"]),
             helper.make_node("ConvTranspose", ["c1", "Wt"], ["y"], strides=[2])]
    path = _signal_model(tmp_path / "padded.onnx", nodes, {"W1": (8, 4, 5), "Wt": (8, 2, 4)}, length=100,
                         channels=4)
    from onnx import load
    model = load(path)
    model.graph.initializer.append(numpy_helper.from_array(np.array([0, 0, 3, 0, 0, 5], np.int64), "pads"))
    save(model, path)
    graph = load_onnx(path).graph
    c1 = graph.layer("c1")
    assert (c1.padding.left, c1.padding.right, c1.out_shape) == (3, 5, Shape(8, 1, 104))
    assert c1.macs == 16_640
    t = next(l for l in graph if l.kind == LayerKind.CONV_TRANSPOSE)
    assert t.out_shape == Shape(2, 1, 210)
    assert t.macs == 104 * 8 * 2 * 4


def test_signal_length_from_the_command_line(cli, tmp_path: Path) -> None:
    """--input Lx1 sets a signal's length (half the samples: half of each conv's MACs); another height is refused."""
    path = m5_like(tmp_path / "m5.onnx")
    result = cli("info", str(path), "--input", "4000x1", "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["totals"]["macs"] == 1_280_000 + 384_000 + 320
    assert_one_line_error(cli("info", str(path), "--input", "4000x2"), "1-D signal", "--input Lx1")


@pytest.mark.parametrize("hw", ["eyeriss-v1", "scalesim-12x14-ws", "scalesim-32x32-os", "shidiannao-os"])
def test_a_signal_network_simulates_and_checks(cli, tmp_path: Path, hw: str) -> None:
    result = cli("check", str(m5_like(tmp_path / "m5.onnx")), "--hw", hw)
    assert result.code == 0, result.err
    assert result.out.rstrip().endswith("PASS")
