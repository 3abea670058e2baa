"""Export a hwsim `Graph` as a small ONNX model that `load_onnx` reads back.

Like the ONNX test suite's light models, every weight is a `ConstantOfShape`
of an int64 shape initializer, so even VGG is a few KB: the file carries the
network's structure and shapes, not trained values. Fused batch-norms and
activations become their own nodes after the layer (so the importer folds them
back and parameter counts round-trip), a fully connected layer is
Flatten + Gemm(transB=1), a channel shuffle is Reshape/Transpose/Reshape, and
negative padding (cropping) is a Pad node before the window.

Round trips are exact for graphs in the importer's canonical form (a fusable
batch-norm or activation already fused); pass-through layers export as ops of
the "hwsim" domain and need `allow_unknown` to import again.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import onnx
from onnx import TensorProto, helper

from hwsim.errors import NetworkError
from hwsim.workload.builder import window_out
from hwsim.workload.ir import INTERPOLATION_TAPS, Graph, Layer, LayerKind, Padding, require_images
from hwsim.workload.onnx_import import ACTIVATIONS, GATES, PASSTHROUGH_DOMAIN

MIN_EXPORT_OPSET, MAX_EXPORT_OPSET = 11, 21
# First opset of the activation ops that are younger than opset 11.
OP_SINCE = {"HardSwish": 14, "Mish": 18, "Gelu": 20}
ACTIVATION_OPS = {name: op for op, name in ACTIVATIONS.items()}
GATE_OPS = {name: op for op, name in GATES.items()}  # x * gate(x) activations


def export_onnx(graph: Graph, path: str | Path, opset: int = 17) -> None:
    """Write `graph` to `path` as ONNX (weights as ConstantOfShape), atomically."""
    if not MIN_EXPORT_OPSET <= opset <= MAX_EXPORT_OPSET:
        raise NetworkError(f"cannot export opset {opset}; choose one from {MIN_EXPORT_OPSET} to {MAX_EXPORT_OPSET}")
    require_images(graph, "the ONNX export")
    writer = _Writer(graph, opset)
    for layer in graph:
        writer.emit(layer)
    _write(writer.model(), Path(path))


def _write(model: onnx.ModelProto, path: Path) -> None:
    """Serialise to a temporary name beside `path`, then rename: never a half-written file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(model.SerializeToString())
        os.replace(tmp, path)
    except OSError as e:
        raise NetworkError(f"{path}: cannot write the ONNX file ({e.strerror or e}); check the directory") from None
    finally:
        tmp.unlink(missing_ok=True)


def _float_info(name: str, dims: Sequence[int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(dims))


class _Writer:
    """Accumulates nodes and initializers; each IR tensor becomes a 1×C×H×W ONNX value."""

    def __init__(self, graph: Graph, opset: int) -> None:
        self.graph = graph
        self.opset = opset
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self.value_info: list[onnx.ValueInfoProto] = []
        self.names = {layer.name for layer in graph}  # reserved for the layers' own outputs
        self.custom = False

    # ----- plumbing -----------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        name, k = base, 1
        while name in self.names:
            name, k = f"{base}_{k}", k + 1
        self.names.add(name)
        return name

    def node(self, op: str, inputs: Sequence[str], name: str, attrs: Mapping[str, Any] | None = None,
             domain: str = "") -> str:
        """Append a node with one output; returns the output's name."""
        out = self.fresh(f"{name}:out")
        self.nodes.append(helper.make_node(op, list(inputs), [out], name=name, domain=domain, **(attrs or {})))
        return out

    def ints(self, name: str, values: Sequence[int]) -> str:
        """An int64 initializer (shapes, axes, pads)."""
        name = self.fresh(name)
        self.initializers.append(helper.make_tensor(name, TensorProto.INT64, [len(values)], list(values)))
        return name

    def scalar(self, name: str, value: float) -> str:
        name = self.fresh(name)
        self.initializers.append(helper.make_tensor(name, TensorProto.FLOAT, [], [value]))
        return name

    def weight(self, layer: Layer, what: str, dims: Sequence[int]) -> str:
        """A weight as ConstantOfShape(int64 shape): its shape without its megabytes."""
        zero = helper.make_tensor("value", TensorProto.FLOAT, [1], [0.0])
        return self.node("ConstantOfShape", [self.ints(f"{layer.name}/{what}_shape", dims)],
                         f"{layer.name}/{what}", {"value": zero})

    def model(self) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, self.graph.name, self.inputs, self.outputs, self.initializers,
                                  value_info=self.value_info)
        opsets = [helper.make_opsetid("", self.opset)]
        if self.custom:
            opsets.append(helper.make_opsetid(PASSTHROUGH_DOMAIN, 1))
        model = helper.make_model(graph, opset_imports=opsets, producer_name="hwsim")
        model.ir_version = helper.find_min_ir_version_for(opsets, ignore_unknown=True)
        onnx.checker.check_model(model)
        return model

    # ----- layers -------------------------------------------------------------------------
    def emit(self, layer: Layer) -> None:
        emitter = EMITTERS.get(layer.kind)
        joined = layer.kind is LayerKind.CONCAT and layer.out_shape.c != sum(s.c for s in layer.in_shapes)
        if emitter is None or joined:
            raise NetworkError(f"layer '{layer.name}' ({layer.kind}{', not along channels' if joined else ''}) has "
                               "no ONNX form hwsim writes; export networks of the built-in layer kinds")
        value = emitter(self, layer)
        lead = layer.kind is LayerKind.UNARY  # no main node: the first of these carries the layer's name
        if layer.fused_bn:
            c = layer.out_shape.c
            stats = [self.weight(layer, what, [c]) for what in ("bn_scale", "bn_bias", "bn_mean", "bn_var")]
            value = self.node("BatchNormalization", [value, *stats], layer.name if lead else f"{layer.name}/bn")
            lead = False
        if layer.activation is not None:
            value = self.activation(layer, value, layer.name if lead else f"{layer.name}/{layer.activation}")
        self.settle(layer, value)

    def settle(self, layer: Layer, value: str) -> None:
        """Rename the layer's last ONNX value to the layer's own name (what the importer reads back)."""
        last = self.nodes[-1] if self.nodes else None
        if last is not None and last.output[0] == value:
            last.output[0] = layer.output
            for info in self.value_info:  # a pass-through's declared shape follows the rename
                if info.name == value:
                    info.name = layer.output
        elif value != layer.output:
            self.nodes.append(helper.make_node("Identity", [value], [layer.output], name=f"{layer.name}/identity"))

    def activation(self, layer: Layer, x: str, where: str) -> str:
        """The activation as ONNX node(s) named `where`."""
        name = layer.activation or ""
        if name == "relu6":
            return self.node("Clip", [x, self.scalar(f"{where}_min", 0.0), self.scalar(f"{where}_max", 6.0)], where)
        if name == "clip":
            return self.node("Clip", [x], where)
        op = ACTIVATION_OPS.get(name)
        if name in GATE_OPS and (op is None or OP_SINCE.get(op, 0) > self.opset):
            return self.node("Mul", [x, self.node(GATE_OPS[name], [x], f"{where}_gate")], where)
        if op is None:
            raise NetworkError(f"layer '{layer.name}': activation '{name}' has no ONNX op hwsim can export")
        if OP_SINCE.get(op, 0) > self.opset:
            since = OP_SINCE[op]
            raise NetworkError(f"layer '{layer.name}': {op} needs opset {since}; export with opset={since}")
        inputs = [x, self.weight(layer, "slope", [layer.out_shape.c, 1, 1])] if op == "PRelu" else [x]
        return self.node(op, inputs, where)

    def cropped(self, layer: Layer, x: str) -> tuple[str, Padding]:
        """Move negative (cropping) padding into a Pad node; returns its output and the rest."""
        p = layer.padding
        if min(p) >= 0:
            return x, p
        crop = [min(v, 0) for v in (p.top, p.left, p.bottom, p.right)]
        pads = self.ints(f"{layer.name}/crop", [0, 0, crop[0], crop[1], 0, 0, crop[2], crop[3]])
        return self.node("Pad", [x, pads], f"{layer.name}/crop"), Padding(*(max(v, 0) for v in p))


def _input(w: _Writer, layer: Layer) -> str:
    w.inputs.append(_float_info(layer.name, [1, *layer.out_shape.axes]))
    return layer.name


def _output(w: _Writer, layer: Layer) -> str:
    w.outputs.append(_float_info(layer.name, [1, *layer.out_shape.axes]))
    return w.node("Identity", [layer.inputs[0]], f"{layer.name}/identity")


def _window_attrs(layer: Layer, pad: Padding) -> dict[str, list[int]]:
    attrs = {"kernel_shape": list(layer.kernel), "strides": list(layer.stride),
             "pads": [pad.top, pad.left, pad.bottom, pad.right]}
    if layer.dilation != (1, 1):
        attrs["dilations"] = list(layer.dilation)
    return attrs


def _conv(w: _Writer, layer: Layer) -> str:
    x, pad = w.cropped(layer, layer.inputs[0])
    inputs = [x, w.weight(layer, "weight", layer.weight_shape or ())]
    if layer.has_bias:
        inputs.append(w.weight(layer, "bias", [layer.out_shape.c]))
    attrs = {**_window_attrs(layer, pad), "group": layer.groups}
    return w.node("Conv", inputs, layer.name, attrs)


def _conv_transpose(w: _Writer, layer: Layer) -> str:
    inputs = [layer.inputs[0], w.weight(layer, "weight", layer.weight_shape or ())]
    if layer.has_bias:
        inputs.append(w.weight(layer, "bias", [layer.out_shape.c]))
    p, s = layer.padding, layer.in_shape
    begin_end = ((p.top, p.bottom), (p.left, p.right))
    out_pad = [
        out - ((size - 1) * st - b - e + d * (k - 1) + 1)
        for out, size, st, (b, e), d, k in zip((layer.out_shape.h, layer.out_shape.w), (s.h, s.w), layer.stride,
                                               begin_end, layer.dilation, layer.kernel)
    ]
    attrs = {**_window_attrs(layer, p), "group": layer.groups, "output_padding": out_pad}
    return w.node("ConvTranspose", inputs, layer.name, attrs)


def _fc(w: _Writer, layer: Layer) -> str:
    flat = w.node("Flatten", [layer.inputs[0]], f"{layer.name}/flatten", {"axis": 1})
    inputs = [flat, w.weight(layer, "weight", (layer.out_shape.c, layer.in_shape.elements))]
    if layer.has_bias:
        inputs.append(w.weight(layer, "bias", [layer.out_shape.c]))
    y = w.node("Gemm", inputs, layer.name, {"transB": 1})
    return w.node("Reshape", [y, w.ints(f"{layer.name}/shape", [1, *layer.out_shape.axes])], f"{layer.name}/reshape")


def _pool(w: _Writer, layer: Layer) -> str:
    x, pad = w.cropped(layer, layer.inputs[0])
    s = layer.in_shape
    floor_h = window_out(s.h, pad.top + pad.bottom, layer.kernel[0], layer.stride[0], layer.dilation[0], False)
    floor_w = window_out(s.w, pad.left + pad.right, layer.kernel[1], layer.stride[1], layer.dilation[1], False)
    ceil_mode = (floor_h, floor_w) != (layer.out_shape.h, layer.out_shape.w)  # the IR keeps only the result
    attrs = {**_window_attrs(layer, pad), "ceil_mode": int(ceil_mode)}
    op = "MaxPool" if layer.kind is LayerKind.MAX_POOL else "AveragePool"
    if op == "AveragePool" and layer.dilation != (1, 1) and w.opset < 19:
        raise NetworkError(f"layer '{layer.name}': a dilated AveragePool needs opset 19; export with opset=19")
    return w.node(op, [x], layer.name, attrs)


def _simple(op: str, attrs: Callable[[Layer], Mapping[str, Any]] | None = None) -> Callable[[_Writer, Layer], str]:
    """An emitter for ops that map one-to-one: inputs in order, attributes from the layer."""
    def emit(w: _Writer, layer: Layer) -> str:
        return w.node(op, list(layer.inputs), layer.name, attrs(layer) if attrs else None)

    return emit


def _add(w: _Writer, layer: Layer) -> str:
    return w.node("Add" if len(layer.inputs) == 2 else "Sum", list(layer.inputs), layer.name)


def _mul(w: _Writer, layer: Layer) -> str:
    value = layer.inputs[0]
    for k, other in enumerate(layer.inputs[1:]):  # Mul is binary: a chain for three or more inputs
        value = w.node("Mul", [value, other], layer.name if k == 0 else f"{layer.name}/{k}")
    return value


def _upsample(w: _Writer, layer: Layer) -> str:
    scales = w.fresh(f"{layer.name}/scales")
    w.initializers.append(helper.make_tensor(scales, TensorProto.FLOAT, [4], [1.0, 1.0, *map(float, layer.factor)]))
    return w.node("Resize", [layer.inputs[0], "", scales], layer.name, {"mode": _MODES[layer.kernel]})


_MODES = {taps: mode for mode, taps in INTERPOLATION_TAPS.items()}


def _unary(w: _Writer, layer: Layer) -> str:
    if not layer.fused_bn and layer.activation is None:
        return w.node("Identity", [layer.inputs[0]], layer.name)
    return layer.inputs[0]  # the batch-norm and activation nodes follow in `emit`


def _channel_shuffle(w: _Writer, layer: Layer) -> str:
    c, h, wd = layer.in_shape.c, layer.in_shape.h, layer.in_shape.w
    g = layer.groups
    split = w.node("Reshape", [layer.inputs[0], w.ints(f"{layer.name}/split", [1, g, c // g, h, wd])],
                   f"{layer.name}/split")
    swapped = w.node("Transpose", [split], f"{layer.name}/transpose", {"perm": [0, 2, 1, 3, 4]})
    return w.node("Reshape", [swapped, w.ints(f"{layer.name}/merge", [1, c, h, wd])], layer.name)


def _slice(w: _Writer, layer: Layer) -> str:
    """Channels [0, C') and cropping as Slice; positive padding as Pad."""
    s, out, p = layer.in_shape, layer.out_shape, layer.padding
    crop_h, crop_w = (max(-p.top, 0), max(-p.bottom, 0)), (max(-p.left, 0), max(-p.right, 0))
    grow_h, grow_w = (max(p.top, 0), max(p.bottom, 0)), (max(p.left, 0), max(p.right, 0))
    starts = [0, crop_h[0], crop_w[0]]
    ends = [out.c, crop_h[0] + out.h - sum(grow_h), crop_w[0] + out.w - sum(grow_w)]
    value = layer.inputs[0]
    if starts != [0, 0, 0] or ends != [s.c, s.h, s.w]:
        value = w.node("Slice", [value, w.ints(f"{layer.name}/starts", starts), w.ints(f"{layer.name}/ends", ends),
                                 w.ints(f"{layer.name}/axes", [1, 2, 3])], layer.name)
    if any(grow_h + grow_w):
        pads = w.ints(f"{layer.name}/pads", [0, 0, grow_h[0], grow_w[0], 0, 0, grow_h[1], grow_w[1]])
        value = w.node("Pad", [value, pads], f"{layer.name}/pad")
    if value == layer.inputs[0]:
        value = w.node("Identity", [value], layer.name)
    return value


def _passthrough(w: _Writer, layer: Layer) -> str:
    w.custom = True
    value = w.node(layer.op_type or "Passthrough", list(layer.inputs), layer.name, domain=PASSTHROUGH_DOMAIN)
    w.value_info.append(_float_info(value, [1, *layer.out_shape.axes]))
    return value


EMITTERS: dict[LayerKind, Callable[[_Writer, Layer], str]] = {
    LayerKind.INPUT: _input,
    LayerKind.OUTPUT: _output,
    LayerKind.CONV: _conv,
    LayerKind.CONV_TRANSPOSE: _conv_transpose,
    LayerKind.FC: _fc,
    LayerKind.MAX_POOL: _pool,
    LayerKind.AVG_POOL: _pool,
    LayerKind.GLOBAL_AVG_POOL: _simple("GlobalAveragePool"),
    LayerKind.GLOBAL_MAX_POOL: _simple("GlobalMaxPool"),
    LayerKind.ADD: _add,
    LayerKind.MUL: _mul,
    LayerKind.CONCAT: _simple("Concat", lambda layer: {"axis": 1}),
    LayerKind.UPSAMPLE: _upsample,
    LayerKind.DEPTH_TO_SPACE: _simple("DepthToSpace", lambda layer: {"blocksize": layer.factor[0]}),
    LayerKind.SOFTMAX: _simple("Softmax", lambda layer: {"axis": 1}),
    LayerKind.LRN: _simple("LRN", lambda layer: {"size": layer.kernel[0]}),
    LayerKind.UNARY: _unary,
    LayerKind.CHANNEL_SHUFFLE: _channel_shuffle,
    LayerKind.SLICE: _slice,
    LayerKind.PASSTHROUGH: _passthrough,
}
