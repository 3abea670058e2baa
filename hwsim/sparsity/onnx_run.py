"""Measure a network's tensors: run its ONNX graph once with onnxruntime on one real input.

`--activations-from INPUT` (a `.npy` array, or an image file) runs the graph
with onnxruntime (the optional `measure` extra: `pip install 'hwsim[measure]'`,
which also brings Pillow for images), keeping every value the IR's tensors
come from (`hwsim.workload.onnx_import.Sources`: the data after each folded
activation) and every weighted layer's filters, so zeros are counted in the
tensors the hardware would move. An image is converted as torchvision's
ImageNet models expect: RGB (or grey for one channel), resized to the graph's
input size (bilinear), scaled to [0, 1] and normalised with ImageNet's mean and
standard deviation per channel; a `.npy` array is used as given, shaped C × H × W
or 1 × C × H × W. Values are counted as zero when they are exactly zero.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from hwsim.registry import Registry
from hwsim.sparsity.measured import MeasuredTensors
from hwsim.sparsity.profile import SparsityError
from hwsim.workload.ir import Graph, LayerKind, Shape, require_images
from hwsim.workload.onnx_import import ImportResult

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".ppm")
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def _input_layer_shape(graph: Graph) -> tuple[str, Shape]:
    inputs = [l for l in graph if l.kind is LayerKind.INPUT]
    if len(inputs) != 1:
        raise SparsityError(f"{graph.name}: measuring activations needs a network with one input, it has "
                            f"{len(inputs)}")
    return inputs[0].output, inputs[0].out_shape


def _image(path: Path, shape: Shape) -> np.ndarray:
    try:
        from PIL import Image
    except ImportError:
        raise SparsityError(f"{path}: reading an image needs Pillow; pip install 'hwsim[measure]' (or give a "
                            ".npy array)") from None
    try:
        picture = Image.open(path).convert("L" if shape.c == 1 else "RGB").resize((shape.w, shape.h),
                                                                                   Image.Resampling.BILINEAR)
    except OSError as exc:
        raise SparsityError(f"{path}: not an image Pillow can read ({exc}); give a PNG or JPEG file") from None
    values: np.ndarray = np.asarray(picture, dtype=np.float32).reshape(shape.h, shape.w, -1) / np.float32(255.0)
    if shape.c == 3:
        values = (values - np.array(IMAGENET_MEAN, np.float32)) / np.array(IMAGENET_STD, np.float32)
    if values.shape[2] != shape.c:
        raise SparsityError(f"{path}: an image has 1 or 3 channels; the network's input has {shape.c}, give a .npy")
    return values.transpose(2, 0, 1)


def load_input(path: str | Path, shape: Shape) -> np.ndarray:
    """The network input from a `.npy` array or an image file (module docstring), as 1 × C × H × W float32."""
    path = Path(path)
    if path.suffix.lower() in IMAGE_SUFFIXES:
        return _image(path, shape)[None].astype(np.float32)
    if path.suffix.lower() != ".npy":
        raise SparsityError(f"{path}: --activations-from takes a .npy array or an image "
                            f"({', '.join(IMAGE_SUFFIXES)})")
    try:
        array: np.ndarray = np.load(path)
    except (OSError, ValueError) as exc:
        raise SparsityError(f"{path}: cannot read the array ({exc}); save it with numpy.save") from None
    if array.shape not in ((shape.c, shape.h, shape.w), (1, shape.c, shape.h, shape.w)):
        raise SparsityError(f"{path}: shape {list(array.shape)}, but the network's input is "
                            f"{shape.c}x{shape.h}x{shape.w}; give C x H x W or 1 x C x H x W")
    return array.reshape(1, shape.c, shape.h, shape.w).astype(np.float32)


Runner = Callable[[onnx.ModelProto, list[str], dict[str, np.ndarray]], list[Any]]
RUNNERS: Registry[Runner] = Registry("ONNX runner")


@RUNNERS.register("onnxruntime")
def _onnxruntime(model: onnx.ModelProto, names: list[str], feed: dict[str, np.ndarray]) -> list[Any]:
    """onnxruntime on the CPU, graph optimisations off so every value is kept as the graph states it."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise SparsityError("--activations-from runs the network with onnxruntime; pip install 'hwsim[measure]'"
                            ) from None
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return list(session.run(names, feed))


@RUNNERS.register("reference")
def _reference(model: onnx.ModelProto, names: list[str], feed: dict[str, np.ndarray]) -> list[Any]:
    """onnx's own ReferenceEvaluator: pure numpy, slow, no extra to install (small networks, tests)."""
    from onnx.reference import ReferenceEvaluator

    return list(ReferenceEvaluator(model).run(names, feed))


def _run(model: onnx.ModelProto, names: set[str], feed: dict[str, np.ndarray], runner: str) -> dict[str, Any]:
    """Run `model` once with every value of `names` exposed as an output."""
    present = {o.name for o in model.graph.output}
    model.graph.output.extend(onnx.ValueInfoProto(name=n) for n in sorted(names - present))
    wanted = sorted(names)
    return dict(zip(wanted, RUNNERS.get(runner)(model, wanted, feed)))


def _weights(result: ImportResult, model: onnx.ModelProto, ran: dict[str, Any], base: Path) -> dict[str, np.ndarray]:
    """Each weighted layer's filters in `Layer.weight_shape` order."""
    assert result.sources is not None
    initializers = {t.name: t for t in model.graph.initializer}
    layers = {l.name: l for l in result.graph}
    out: dict[str, np.ndarray] = {}
    for layer, (name, transposed) in result.sources.weights.items():
        if name in initializers:
            value = numpy_helper.to_array(initializers[name], base_dir=str(base))
        elif name in ran:
            value = np.asarray(ran[name])
        else:
            continue
        value = value.T if transposed else value
        shape = layers[layer].weight_shape
        if shape is not None and value.size == int(np.prod(shape)):
            out[layer] = value.reshape(shape)
    return out


def measure_onnx(path: str | Path, result: ImportResult, input_path: str | Path,
                 runner: str = "onnxruntime") -> MeasuredTensors:
    """Run the ONNX file at `path` (imported as `result`) on `input_path` once with `runner` (RUNNERS); every
    IR tensor and filter."""
    path, input_path = Path(path), Path(input_path)
    if result.sources is None:
        raise SparsityError(f"{path}: measuring needs the ONNX import's sources")
    graph = result.graph
    require_images(graph, "measuring zeros")
    input_tensor, shape = _input_layer_shape(graph)
    model = onnx.load(str(path), load_external_data=True)
    feed_name = next(i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer})
    feed = {feed_name: load_input(input_path, shape)}
    sources = result.sources.tensors
    initializers = {t.name for t in model.graph.initializer}
    wanted = {name for name, _ in sources.values()} | {n for n, _ in result.sources.weights.values()
                                                      if n not in initializers}
    ran = _run(model, wanted - {feed_name}, feed, runner)
    ran[feed_name] = feed[feed_name]
    shapes = {l.output: l.out_shape for l in graph}
    activations = {}
    for tensor, (name, _) in sources.items():
        value = np.asarray(ran[name])
        want = shapes[tensor]
        if value.size == want.elements:
            activations[tensor] = value.reshape(want.c, want.h, want.w)
    if input_tensor not in activations:
        activations[input_tensor] = feed[feed_name][0]
    return MeasuredTensors(f"measured: {path.name} on {input_path.name} ({runner}, one image)",
                           MappingProxyType(activations), MappingProxyType(_weights(result, model, ran, path.parent)))
