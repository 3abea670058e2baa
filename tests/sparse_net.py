"""A small CNN with real (seeded random) weights, built with onnx.helper: conv-ReLU, max pool, conv-ReLU, a fully
connected layer. A few KB; its activations have the zeros a ReLU network has, which the sparsity tests measure."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

INPUT = (1, 3, 12, 12)


def weights(seed: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    w = {"w1": rng.normal(0, 0.5, (8, 3, 3, 3)), "b1": rng.normal(0, 0.1, 8),
         "w2": rng.normal(0, 0.3, (8, 8, 3, 3)), "b2": rng.normal(-0.2, 0.1, 8),
         "wf": rng.normal(0, 0.2, (10, 8 * 6 * 6)), "bf": np.zeros(10)}
    w["w2"][:, :, 0, :] = 0  # pruned filter rows: the filters have zeros too
    return {k: v.astype(np.float32) for k, v in w.items()}


def build(path: Path, seed: int = 3) -> Path:
    """Write the network to `path` (conv1 3→8 3×3 pad 1, ReLU, 2×2 max pool, conv2 8→8 3×3 pad 1, ReLU, fc 10)."""
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("Flatten", ["r2"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], name="fc", transB=1)]
    inits = [numpy_helper.from_array(v, k) for k, v in weights(seed).items()]
    graph = helper.make_graph(nodes, "sparse_net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, INPUT)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tests")
    onnx.save(model, str(path))
    return path


def image(seed: int = 5) -> np.ndarray:
    """A 3×12×12 input with smooth structure (a gradient and a bright square), as a .npy input."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:12, 0:12] / 11.0
    picture = np.stack([x, y, x * y]) - 0.5
    picture[:, 3:7, 4:9] += 1.0
    return (picture + rng.normal(0, 0.05, picture.shape)).astype(np.float32)
