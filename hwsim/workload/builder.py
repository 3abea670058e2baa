"""`GraphBuilder`: the one way to make a `Graph`, used by the zoo and the ONNX importer.

Each method appends a layer, computes its output shape from the input shapes
(the shape rules of ONNX/PyTorch, including ceil-mode pooling and negative
padding) and returns the name of the tensor it wrote, so networks read like
the frameworks' own definitions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TypedDict, Unpack

from hwsim.errors import NetworkError, ShapeError
from hwsim.vocab import ceil_div
from hwsim.workload.ir import (
    INTERPOLATION_TAPS,
    NO_FRAMES,
    NO_PADDING,
    FrameWindow,
    Graph,
    Layer,
    LayerKind,
    Padding,
    Precision,
    Shape,
)

Pair = int | tuple[int, int]
PaddingSpec = int | tuple[int, int] | tuple[int, int, int, int] | Padding | str


class _LayerFields(TypedDict, total=False):
    """The `Layer` fields a builder method sets besides name, kind, inputs and shapes."""

    kernel: tuple[int, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]
    padding: Padding
    groups: int
    factor: tuple[int, int]
    frames: FrameWindow
    has_bias: bool
    fused_bn: bool
    activation: str | None
    op_type: str
    rows: int

MAX_TENSOR_ELEMENTS = 2**31  # elements of one tensor (a 2**31-pixel input is past it): int32 indices, memory
MAX_WINDOW = 2**16  # the largest kernel, stride, dilation or pad in one axis (samples)


def pair(value: Pair) -> tuple[int, int]:
    """An int or (h, w) pair as (h, w)."""
    if isinstance(value, int):
        return (value, value)
    h, w = value
    return (int(h), int(w))


def window_out(size: int, pad_total: int, kernel: int, stride: int, dilation: int, ceil_mode: bool) -> int:
    """Output length of a sliding window (ONNX/PyTorch rule, ceil mode included).

    In ceil mode the last window must start inside the input or its leading
    padding, as ONNX and PyTorch require.
    """
    span = dilation * (kernel - 1) + 1
    room = size + pad_total - span
    if room < 0:
        return 0
    if not ceil_mode:
        return room // stride + 1
    out = ceil_div(room, stride) + 1
    pad_begin = pad_total // 2
    if (out - 1) * stride >= size + pad_begin:
        out -= 1
    return out


def same_padding(size: int, kernel: int, stride: int, dilation: int, upper: bool) -> tuple[int, int]:
    """(begin, end) padding that keeps out = ceil(size/stride) (TF 'SAME')."""
    out = ceil_div(size, stride)
    total = max(0, (out - 1) * stride + dilation * (kernel - 1) + 1 - size)
    small, large = total // 2, total - total // 2
    return (small, large) if upper else (large, small)


class GraphBuilder:
    """Accumulates layers in execution order and checks them as they come."""

    def __init__(self, name: str, source: str = "zoo") -> None:
        self.name = name
        self.source = source
        self._layers: list[Layer] = []
        self._shapes: dict[str, Shape] = {}
        self._pos: dict[str, int] = {}

    # ----- plumbing ----------------------------------------------------------
    def shape(self, tensor: str) -> Shape:
        """Shape of an existing tensor."""
        try:
            return self._shapes[tensor]
        except KeyError:
            raise NetworkError(f"{self.name}: no tensor named {tensor!r} has been produced yet") from None

    def layer(self, name: str) -> Layer:
        return self._layers[self._pos[name]]

    def __len__(self) -> int:
        return len(self._layers)

    def layers_from(self, first: int) -> list[Layer]:
        """The layers added since there were `first`."""
        return self._layers[first:]

    def _add(self, layer: Layer) -> str:
        if layer.name in self._shapes:
            raise NetworkError(f"{self.name}: duplicate layer name {layer.name!r}")
        if layer.out_shape.elements > MAX_TENSOR_ELEMENTS:
            raise ShapeError(
                f"{self.name}: layer {layer.name!r} ({layer.kind}) would output {layer.out_shape} = "
                f"{layer.out_shape.elements:,} elements, beyond the {MAX_TENSOR_ELEMENTS:,} hwsim handles per "
                "tensor; give a smaller input (--input WxH) or fix the layer's shape"
            )
        if min(layer.out_shape) <= 0:
            raise ShapeError(
                f"{self.name}: layer {layer.name!r} ({layer.kind}) would output {layer.out_shape} "
                f"from {', '.join(map(str, layer.in_shapes)) or 'nothing'}; check its kernel, stride "
                "and padding or enlarge the network input"
            )
        self._pos[layer.name] = len(self._layers)
        self._layers.append(layer)
        self._shapes[layer.output] = layer.out_shape
        return layer.output

    def _window(self, name: str, kernel: Pair, stride: Pair, dilation: Pair,
                groups: int) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
        """A sliding window's kernel, stride and dilation as (h, w) pairs, each at least 1, and its group count
        at least 1: checked before any shape arithmetic divides by them."""
        k, st, d = pair(kernel), pair(stride), pair(dilation)
        for what, value in (("kernel", k), ("stride", st), ("dilation", d)):
            if min(value) < 1 or max(value) > MAX_WINDOW:
                raise ShapeError(f"{self.name}: layer {name!r}: {what} {value} must be between 1 and {MAX_WINDOW} in "
                                 f"each axis; fix the layer's {what} in the model")
        if groups < 1:
            raise ShapeError(f"{self.name}: layer {name!r}: group count {groups} must be at least 1; fix the "
                             "layer's group attribute in the model")
        return k, st, d

    def _make(self, name: str, kind: LayerKind, inputs: Sequence[str], out_shape: Shape,
              in_shapes: Sequence[Shape] | None = None, **spatial: Unpack[_LayerFields]) -> str:
        """Append a layer reading `inputs` (as their producers shaped them, unless `in_shapes` says otherwise)."""
        ins = tuple(inputs)
        layer = Layer(
            name=name,
            kind=kind,
            inputs=ins,
            output=name,
            in_shapes=tuple(in_shapes) if in_shapes is not None else tuple(self.shape(t) for t in ins),
            out_shape=out_shape,
            **spatial,
        )
        return self._add(layer)

    def _viewed(self, name: str, inputs: Sequence[str], views: Sequence[Shape]) -> None:
        """Check that each view of an input holds as many elements as the tensor itself."""
        for tensor, view in zip(inputs, views):
            if self.shape(tensor).elements != view.elements:
                raise ShapeError(f"{self.name}: layer {name!r} reads {tensor!r} ({self.shape(tensor)}) "
                                 f"as {view}, a different number of elements")

    def set_precision(self, layer_name: str, precision: Precision) -> None:
        """Record the operand widths a quantized graph gives a layer."""
        self._layers[self._pos[layer_name]] = replace(self.layer(layer_name), precision=precision)

    def fuse(self, layer_name: str, bn: bool = False, activation: str | None = None, bias: bool = False) -> None:
        """Fold a batch-norm, a bias or an activation into an existing layer."""
        old = self.layer(layer_name)
        if activation is not None and old.activation is not None:
            raise NetworkError(
                f"{self.name}: layer {layer_name!r} already has activation {old.activation!r}; "
                f"cannot fuse {activation!r} too"
            )
        self._layers[self._pos[layer_name]] = replace(
            old,
            fused_bn=old.fused_bn or bn,
            has_bias=old.has_bias or bias,
            activation=activation if activation is not None else old.activation,
        )

    def build(self) -> Graph:
        """The finished graph; every network needs at least one input and one output."""
        kinds = {l.kind for l in self._layers}
        if LayerKind.INPUT not in kinds or LayerKind.OUTPUT not in kinds:
            raise NetworkError(f"{self.name}: a network needs at least one input and one output layer")
        return Graph(name=self.name, layers=tuple(self._layers), source=self.source)

    # ----- padding helpers ---------------------------------------------------
    def _padding(self, spec: PaddingSpec, x: Shape, kernel: tuple[int, int], stride: tuple[int, int],
                 dilation: tuple[int, int]) -> Padding:
        if isinstance(spec, str):
            if spec == "valid":
                return NO_PADDING
            if spec not in ("same", "same_upper", "same_lower"):
                raise NetworkError(f"{self.name}: padding {spec!r} unknown; use an int, a tuple, 'same' or 'valid'")
            upper = spec != "same_lower"
            t, b = same_padding(x.h, kernel[0], stride[0], dilation[0], upper)
            l, r = same_padding(x.w, kernel[1], stride[1], dilation[1], upper)
            return Padding(t, l, b, r)
        if isinstance(spec, int):
            return Padding(spec, spec, spec, spec)
        if len(spec) == 2:
            ph, pw = spec
            return Padding(ph, pw, ph, pw)
        return Padding(*spec)

    def _check_pads(self, name: str, pad: Padding, x: Shape) -> None:
        """A window's pads (a Pad op absorbed included, negative when it crops) are bounded like a kernel: a pad
        larger than the input is valid (torchvision's ASPP pads a 33x33 map by 36) wherever the output is positive,
        which the window arithmetic checks; only a pad past MAX_WINDOW, where index arithmetic overflows, is refused."""
        if max(abs(p) for p in pad) > MAX_WINDOW:
            raise ShapeError(
                f"{self.name}: layer {name!r}: padding {tuple(pad)} on the {x.h}x{x.w} input must lie within "
                f"{MAX_WINDOW} samples in each axis; fix the layer's pads in the model"
            )

    def _window_shape(self, name: str, x: Shape, channels: int, kernel: tuple[int, int], stride: tuple[int, int],
                      dilation: tuple[int, int], pad: Padding, ceil_mode: bool,
                      frames: FrameWindow = NO_FRAMES) -> Shape:
        self._check_pads(name, pad, x)
        self._check_frames(name, frames)
        h = window_out(x.h, pad.top + pad.bottom, kernel[0], stride[0], dilation[0], ceil_mode)
        w = window_out(x.w, pad.left + pad.right, kernel[1], stride[1], dilation[1], ceil_mode)
        d = window_out(x.d, frames.front + frames.back, frames.kernel, frames.stride, frames.dilation, ceil_mode)
        if h <= 0 or w <= 0 or d <= 0:
            raise ShapeError(
                f"{self.name}: layer {name!r}: a {frames.kernel}x{kernel[0]}x{kernel[1]} window with padding "
                f"{tuple(pad)} and {frames.front}, {frames.back} frames does not fit the {x} input; enlarge the "
                "network input or reduce the kernel"
            )
        return Shape(channels, h, w, d)

    def _check_frames(self, name: str, frames: FrameWindow) -> None:
        """A window along frames is bounded like the others: kernel, stride, dilation 1..MAX_WINDOW, pads within
        MAX_WINDOW."""
        if min(frames[:3]) < 1 or max(frames[:3]) > MAX_WINDOW or max(abs(frames.front), abs(frames.back)) > MAX_WINDOW:
            raise ShapeError(f"{self.name}: layer {name!r}: the window along frames {tuple(frames)} (kernel, stride, "
                             f"dilation, pads) must lie between 1 and {MAX_WINDOW}; fix the layer's attributes")

    # ----- layers --------------------------------------------------------------
    def input(self, name: str, channels: int, height: int, width: int, frames: int = 1) -> str:
        out = Shape(channels, height, width, frames)
        return self._add(Layer(name=name, kind=LayerKind.INPUT, inputs=(), output=name, in_shapes=(), out_shape=out))

    def output(self, name: str, x: str) -> str:
        return self._make(name, LayerKind.OUTPUT, [x], self.shape(x))

    def conv(self, name: str, x: str, out_channels: int, kernel: Pair, stride: Pair = 1,
             padding: PaddingSpec = 0, dilation: Pair = 1, groups: int = 1, bias: bool = True,
             bn: bool = False, activation: str | None = None, frames: FrameWindow = NO_FRAMES) -> str:
        """Convolution; `groups == in channels` gives a depthwise conv; over a clip, `frames` is its window along
        the frames (NO_FRAMES: the 2-D kernel on every frame)."""
        s = self.shape(x)
        k, st, d = self._window(name, kernel, stride, dilation, groups)
        if s.c % groups or out_channels % groups:
            raise ShapeError(
                f"{self.name}: layer {name!r}: {groups} groups do not divide {s.c} input and "
                f"{out_channels} output channels"
            )
        pad = self._padding(padding, s, k, st, d)
        out = self._window_shape(name, s, out_channels, k, st, d, pad, False, frames)
        return self._make(name, LayerKind.CONV, [x], out, kernel=k, stride=st, dilation=d, padding=pad,
                          groups=groups, has_bias=bias, fused_bn=bn, activation=activation, frames=frames)

    def conv_transpose(self, name: str, x: str, out_channels: int, kernel: Pair, stride: Pair = 1,
                       padding: PaddingSpec = 0, output_padding: Pair = 0, dilation: Pair = 1,
                       groups: int = 1, bias: bool = True, bn: bool = False,
                       activation: str | None = None) -> str:
        """Transposed (fractionally strided) convolution, ONNX output-size rule."""
        s = self.shape(x)
        if s.d > 1:
            raise ShapeError(f"{self.name}: layer {name!r}: a transposed convolution over the {s.d} frames of a clip "
                             "is not modelled; hwsim maps transposed convolutions over images")
        k, st, d = self._window(name, kernel, stride, dilation, groups)
        op = pair(output_padding)
        if isinstance(padding, str):
            raise NetworkError(f"{self.name}: layer {name!r}: give transposed-conv padding as numbers")
        pad = self._padding(padding, s, k, st, d)
        self._check_pads(name, pad, s)
        h = (s.h - 1) * st[0] - pad.top - pad.bottom + d[0] * (k[0] - 1) + op[0] + 1
        w = (s.w - 1) * st[1] - pad.left - pad.right + d[1] * (k[1] - 1) + op[1] + 1
        if s.c % groups or out_channels % groups:
            raise ShapeError(f"{self.name}: layer {name!r}: {groups} groups do not divide the channels")
        return self._make(name, LayerKind.CONV_TRANSPOSE, [x], Shape(out_channels, h, w), kernel=k, stride=st,
                          dilation=d, padding=pad, groups=groups, has_bias=bias, fused_bn=bn,
                          activation=activation)

    def fc(self, name: str, x: str, out_features: int, bias: bool = True, bn: bool = False,
           activation: str | None = None) -> str:
        """Fully connected layer over the whole (flattened) input."""
        return self._make(name, LayerKind.FC, [x], Shape(out_features, 1, 1), has_bias=bias, fused_bn=bn,
                          activation=activation)

    def _pool(self, kind: LayerKind, name: str, x: str, kernel: Pair, stride: Pair | None,
              padding: PaddingSpec, ceil_mode: bool, dilation: Pair = 1, frames: FrameWindow = NO_FRAMES) -> str:
        s = self.shape(x)
        k, st, d = self._window(name, kernel, kernel if stride is None else stride, dilation, 1)
        pad = self._padding(padding, s, k, st, d)
        out = self._window_shape(name, s, s.c, k, st, d, pad, ceil_mode, frames)
        return self._make(name, kind, [x], out, kernel=k, stride=st, dilation=d, padding=pad, frames=frames)

    def max_pool(self, name: str, x: str, kernel: Pair, stride: Pair | None = None, padding: PaddingSpec = 0,
                 ceil_mode: bool = False, dilation: Pair = 1, frames: FrameWindow = NO_FRAMES) -> str:
        return self._pool(LayerKind.MAX_POOL, name, x, kernel, stride, padding, ceil_mode, dilation, frames)

    def avg_pool(self, name: str, x: str, kernel: Pair, stride: Pair | None = None, padding: PaddingSpec = 0,
                 ceil_mode: bool = False, dilation: Pair = 1, frames: FrameWindow = NO_FRAMES) -> str:
        return self._pool(LayerKind.AVG_POOL, name, x, kernel, stride, padding, ceil_mode, dilation, frames)

    def global_avg_pool(self, name: str, x: str) -> str:
        """The mean of every channel over its pixels (and frames)."""
        s = self.shape(x)
        return self._make(name, LayerKind.GLOBAL_AVG_POOL, [x], Shape(s.c, 1, 1), kernel=(s.h, s.w),
                          frames=FrameWindow(kernel=s.d))

    def global_max_pool(self, name: str, x: str) -> str:
        s = self.shape(x)
        return self._make(name, LayerKind.GLOBAL_MAX_POOL, [x], Shape(s.c, 1, 1), kernel=(s.h, s.w),
                          frames=FrameWindow(kernel=s.d))

    def _broadcast(self, name: str, inputs: Sequence[str]) -> Shape:
        shapes = [self.shape(t) for t in inputs]
        if len(shapes) < 2:
            raise NetworkError(f"{self.name}: element-wise layer {name!r} needs two or more inputs")
        out = []
        for dim in zip(*shapes):
            sizes = {d for d in dim if d != 1}
            if len(sizes) > 1:
                raise ShapeError(
                    f"{self.name}: layer {name!r}: input shapes {', '.join(map(str, shapes))} do not broadcast"
                )
            out.append(sizes.pop() if sizes else 1)
        return Shape(*out)

    def _covering(self, name: str, inputs: Sequence[str], out_shape: Shape | None) -> Shape:
        """The broadcast of the inputs' shapes, or a given output no smaller than any input."""
        if out_shape is None:
            return self._broadcast(name, inputs)
        if any(self.shape(t).elements > out_shape.elements for t in inputs):
            raise ShapeError(f"{self.name}: layer {name!r}: output {out_shape} is smaller than an input")
        return out_shape

    def add(self, name: str, inputs: Sequence[str], activation: str | None = None,
            out_shape: Shape | None = None) -> str:
        """Element-wise sum (residual connections); inputs keep their order. `out_shape` is given when the
        broadcast happens along axes the C×H×W view does not have (tokens, heads)."""
        return self._make(name, LayerKind.ADD, inputs, self._covering(name, inputs, out_shape), activation=activation)

    def mul(self, name: str, inputs: Sequence[str], activation: str | None = None,
            out_shape: Shape | None = None) -> str:
        """Element-wise product, broadcasting 1-sized dims (squeeze-excite scaling)."""
        return self._make(name, LayerKind.MUL, inputs, self._covering(name, inputs, out_shape), activation=activation)

    def concat(self, name: str, inputs: Sequence[str]) -> str:
        """Channel concatenation; spatial sizes must agree."""
        shapes = [self.shape(t) for t in inputs]
        if len({(s.h, s.w, s.d) for s in shapes}) != 1:
            raise ShapeError(
                f"{self.name}: concat {name!r}: spatial sizes differ ({', '.join(map(str, shapes))})"
            )
        out = Shape(sum(s.c for s in shapes), shapes[0].h, shapes[0].w, shapes[0].d)
        return self._make(name, LayerKind.CONCAT, inputs, out)

    def linear(self, name: str, x: str, rows: Shape, out_features: int, bias: bool = True) -> str:
        """A linear layer applied to every row (pixel, token) of `x`: a 1×1 convolution.

        `rows` views `x` as in_features × H × W (tokens as in_features × count × 1).
        """
        self._viewed(name, [x], [rows])
        return self._make(name, LayerKind.CONV, [x], Shape(out_features, rows.h, rows.w, rows.d), in_shapes=[rows],
                          has_bias=bias)

    def matmul(self, name: str, a: str, b: str, out_shape: Shape, contraction: int, products: int = 1,
               rows: int = 0) -> str:
        """A product of two activations, `products` of them side by side (heads, windows), each of `rows` rows:
        `contraction` multiply-accumulates per output."""
        if contraction <= 0 or products <= 0 or rows < 0:
            raise ShapeError(f"{self.name}: matmul {name!r}: contraction {contraction}, products {products} and "
                             f"rows {rows} must be positive")
        return self._make(name, LayerKind.MATMUL, [a, b], out_shape, kernel=(contraction, 1), groups=products,
                          rows=rows)

    def norm(self, name: str, x: str, groups: int, affine: bool = True) -> str:
        """Normalisation of `groups` equal sets of x's elements (layer, instance or group norm)."""
        s = self.shape(x)
        if groups <= 0 or s.elements % groups:
            raise ShapeError(f"{self.name}: norm {name!r}: {groups} sets do not divide {s.elements} elements")
        return self._make(name, LayerKind.NORM, [x], s, groups=groups, fused_bn=affine)

    def reduce(self, name: str, x: str, out_shape: Shape) -> str:
        """A sum or mean of x's elements into `out_shape` (over channels or other non-spatial axes)."""
        if out_shape.elements <= 0 or self.shape(x).elements % out_shape.elements:
            raise ShapeError(f"{self.name}: reduce {name!r}: {out_shape} does not divide {self.shape(x)}")
        return self._make(name, LayerKind.REDUCE, [x], out_shape)

    def join(self, name: str, inputs: Sequence[str], out_shape: Shape, views: Sequence[Shape] | None = None) -> str:
        """A concat along any axis; elements of `out_shape` beyond the inputs' are a learned constant."""
        shapes = list(views) if views is not None else [self.shape(t) for t in inputs]
        self._viewed(name, inputs, shapes)
        if out_shape.elements < sum(s.elements for s in shapes):
            raise ShapeError(f"{self.name}: concat {name!r}: {out_shape} is smaller than its inputs")
        return self._make(name, LayerKind.CONCAT, inputs, out_shape, in_shapes=shapes)

    def upsample(self, name: str, x: str, factor: Pair, mode: str = "nearest") -> str:
        """Integer-factor resize; `mode` (nearest, linear, cubic) sets the interpolation window."""
        s, f = self.shape(x), pair(factor)
        return self._make(name, LayerKind.UPSAMPLE, [x], Shape(s.c, s.h * f[0], s.w * f[1], s.d), factor=f,
                          kernel=self._taps(name, mode))

    def resize(self, name: str, x: str, height: int, width: int, mode: str = "nearest") -> str:
        """Resize to any height × width (DeepLab's 65 → 520, fractional scales)."""
        s = self.shape(x)
        return self._make(name, LayerKind.RESIZE, [x], Shape(s.c, height, width, s.d), kernel=self._taps(name, mode))

    def _taps(self, name: str, mode: str) -> tuple[int, int]:
        if mode not in INTERPOLATION_TAPS:
            raise NetworkError(f"{self.name}: resize {name!r}: mode {mode!r} unknown; use one of "
                               f"{', '.join(INTERPOLATION_TAPS)}")
        return INTERPOLATION_TAPS[mode]

    def depth_to_space(self, name: str, x: str, block: int) -> str:
        """Pixel shuffle: C·b² × H × W → C × bH × bW."""
        s = self.shape(x)
        if s.c % (block * block):
            raise ShapeError(f"{self.name}: depth_to_space {name!r}: {s.c} channels not divisible by {block}²")
        out = Shape(s.c // (block * block), s.h * block, s.w * block, s.d)
        return self._make(name, LayerKind.DEPTH_TO_SPACE, [x], out, factor=(block, block))

    def softmax(self, name: str, x: str) -> str:
        return self._make(name, LayerKind.SOFTMAX, [x], self.shape(x))

    def lrn(self, name: str, x: str, size: int = 5) -> str:
        """Local response normalisation over `size` neighbouring channels (at least 1, like a kernel)."""
        if not 1 <= size <= MAX_WINDOW:
            raise ShapeError(f"{self.name}: layer {name!r}: LRN size {size} must be between 1 and {MAX_WINDOW} "
                             "channels; fix the layer's size attribute in the model")
        return self._make(name, LayerKind.LRN, [x], self.shape(x), kernel=(size, 1))

    def unary(self, name: str, x: str, bn: bool = False, activation: str | None = None) -> str:
        """A standalone batch-norm and/or activation that no producer could absorb."""
        return self._make(name, LayerKind.UNARY, [x], self.shape(x), fused_bn=bn, activation=activation)

    def channel_shuffle(self, name: str, x: str, groups: int) -> str:
        s = self.shape(x)
        if s.c % groups:
            raise ShapeError(f"{self.name}: channel shuffle {name!r}: {groups} groups do not divide {s.c}")
        return self._make(name, LayerKind.CHANNEL_SHUFFLE, [x], s, groups=groups)

    def slice(self, name: str, x: str, out_shape: Shape, crop: Padding = NO_PADDING) -> str:
        """A channel range or spatial crop of one input (Split, Slice)."""
        return self._make(name, LayerKind.SLICE, [x], out_shape, padding=crop)

    def passthrough(self, name: str, inputs: Sequence[str], out_shape: Shape, op_type: str) -> str:
        """An op hwsim does not model, kept as a zero-cost node so the graph stays connected."""
        return self._make(name, LayerKind.PASSTHROUGH, inputs, out_shape, op_type=op_type)
