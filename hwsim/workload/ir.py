"""The workload IR: a `Graph` of typed `Layer`s connected by named tensors.

Tensors are feature maps of one image (batch 1), shaped channels × height ×
width, and × frames for a video clip (3-D convolutions slide over frames as
well); a vector (fully connected output) is C × 1 × 1. Mappers scale by the
batch they choose. A `Layer` is immutable and carries everything a mapper or
an analytic model needs: kernel, stride, dilation, four-sided padding
(negative values crop), groups, fused batch-norm and activation, and the
shapes of its ordered inputs and its output. MACs, parameters and activation
bytes are derived from those fields, never stored twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import NamedTuple

from hwsim.errors import NetworkError

SUPPORTED_BITS = (8, 16, 32)
INTERPOLATION_TAPS = {"nearest": (1, 1), "linear": (2, 2), "cubic": (4, 4)}  # resize window per mode


class Shape(NamedTuple):
    """A feature map of one image: channels × height × width, in elements, over `d` frames (a video clip's
    depth; 1 for an image)."""

    c: int
    h: int
    w: int
    d: int = 1

    @property
    def elements(self) -> int:
        """Number of elements (c·d·h·w)."""
        return self.c * self.d * self.h * self.w

    @property
    def axes(self) -> tuple[int, ...]:
        """The sizes in ONNX's axis order without the batch: (C, H, W), a clip's (C, D, H, W)."""
        return (self.c, self.h, self.w) if self.d == 1 else (self.c, self.d, self.h, self.w)

    def __str__(self) -> str:
        return "x".join(map(str, self.axes))


class Padding(NamedTuple):
    """Padding in pixels on each side; a negative value crops."""

    top: int
    left: int
    bottom: int
    right: int

    @property
    def is_zero(self) -> bool:
        return self == (0, 0, 0, 0)


NO_PADDING = Padding(0, 0, 0, 0)


class FrameWindow(NamedTuple):
    """A window's extent along the frames of a clip (a 3-D convolution or pooling): kernel depth, stride,
    dilation and the frames padded before and after (negative values crop)."""

    kernel: int = 1
    stride: int = 1
    dilation: int = 1
    front: int = 0
    back: int = 0


NO_FRAMES = FrameWindow()


class Precision(NamedTuple):
    """Operand widths in bits read from a quantized graph; None where the graph says nothing.

    A layer without a `Precision` (or a None field) runs at the hardware's word.
    """

    weight_bits: int | None
    activation_bits: int | None
    accumulator_bits: int | None

    def __str__(self) -> str:
        parts = zip(("w", "a", "acc"), self)
        return " ".join(f"{k}{'-' if v is None else v}" for k, v in parts)


class LayerKind(StrEnum):
    """What a layer computes. Mappers dispatch on this."""

    INPUT = "input"
    CONV = "conv"  # grouped, depthwise, dilated, strided convolutions
    CONV_TRANSPOSE = "conv_transpose"
    FC = "fc"  # fully connected (Gemm/MatMul on a flattened input)
    MAX_POOL = "max_pool"
    AVG_POOL = "avg_pool"
    GLOBAL_AVG_POOL = "global_avg_pool"
    GLOBAL_MAX_POOL = "global_max_pool"
    ADD = "add"  # element-wise sum of two or more tensors
    MUL = "mul"  # element-wise product (broadcast along H, W allowed)
    CONCAT = "concat"  # along channels, inputs in order
    UPSAMPLE = "upsample"  # nearest/linear/cubic resize by integer factors
    RESIZE = "resize"  # nearest/linear/cubic resize to any size
    DEPTH_TO_SPACE = "depth_to_space"  # pixel shuffle
    SOFTMAX = "softmax"
    LRN = "lrn"  # local response normalisation across channels
    UNARY = "unary"  # standalone batch-norm / activation that could not be fused
    CHANNEL_SHUFFLE = "channel_shuffle"  # ShuffleNet's reshape-transpose-reshape
    SLICE = "slice"  # a channel range / spatial crop of one input (Split, Slice)
    NORM = "norm"  # layer/instance/group normalisation over `groups` sets of elements
    REDUCE = "reduce"  # sum or mean over channels (a reduction over H and W is a global pool)
    MATMUL = "matmul"  # activation × activation product (attention's Q·Kᵀ and A·V); both operands stream
    PASSTHROUGH = "passthrough"  # an unknown op admitted with --allow-unknown: no cost
    OUTPUT = "output"


WEIGHTED_KINDS = frozenset({LayerKind.CONV, LayerKind.CONV_TRANSPOSE, LayerKind.FC})
POOL_KINDS = frozenset(
    {LayerKind.MAX_POOL, LayerKind.AVG_POOL, LayerKind.GLOBAL_AVG_POOL, LayerKind.GLOBAL_MAX_POOL}
)


@dataclass(frozen=True)
class Layer:
    """One operation of the network, with the shapes it reads and writes.

    `kernel`, `stride`, `dilation` and `padding` describe the sliding window
    of conv, transposed conv and pooling layers (for a transposed conv,
    `stride` is the upsampling factor); `frames` is the window along a clip's frames (3-D layers; `NO_FRAMES`
    for a 2-D window, applied to every frame alike); `kernel` is also the LRN size
    (kernel[0]), a matmul's contraction length (kernel[0]) and a resize's
    interpolation window (`INTERPOLATION_TAPS`). `factor` is the integer
    scale of an upsample layer or the block size of depth-to-space. `groups`
    is the convolution group count, the group count of a channel shuffle, or
    the number of element sets a norm layer normalises separately, or a matmul's independent products. A concat's
    output may exceed its inputs: the rest is a learned constant (a class
    token), counted as parameters. `precision` holds the operand widths a
    quantized graph gives (None: the hardware's word); `word_bits` is the word the layer runs at once a run has
    chosen one per layer (`hwsim.flows.precision`; None: the hardware's word).
    """

    name: str
    kind: LayerKind
    inputs: tuple[str, ...]
    output: str
    in_shapes: tuple[Shape, ...]
    out_shape: Shape
    kernel: tuple[int, int] = (1, 1)
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    padding: Padding = NO_PADDING
    groups: int = 1
    factor: tuple[int, int] = (1, 1)
    has_bias: bool = False
    fused_bn: bool = False
    activation: str | None = None
    op_type: str = ""  # the source op (ONNX op type) for pass-through layers
    precision: Precision | None = None
    word_bits: int | None = None  # the word this layer's tensors and weights move in (None: the hardware's)
    rows: int = 0  # a matmul's rows per product (of its first operand); `groups` counts its products
    frames: FrameWindow = NO_FRAMES

    @property
    def gemm(self) -> tuple[int, int, int, int] | None:
        """A matmul as (products, rows, contraction, columns): `products` independent (rows × contraction) ·
        (contraction × columns) products (heads, windows); None for other kinds, or when an operand is
        broadcast over the products (its words are then fewer than products × its matrix)."""
        if self.kind is not LayerKind.MATMUL or self.rows <= 0:
            return None
        products, rows, k = self.groups, self.rows, self.kernel[0]
        cols, rest = divmod(self.out_shape.elements, products * rows)
        if rest or len(self.in_shapes) != 2 or self.in_shapes[0].elements != products * rows * k \
                or self.in_shapes[1].elements != products * k * cols:
            return None
        return products, rows, k, cols

    # ----- derived quantities -------------------------------------------------
    @property
    def in_shape(self) -> Shape:
        """The first (for most kinds, the only) input shape."""
        return self.in_shapes[0]

    @property
    def is_depthwise(self) -> bool:
        """A conv whose every group has exactly one input channel."""
        return (
            self.kind is LayerKind.CONV
            and self.groups > 1
            and self.groups == self.in_shape.c
        )

    @property
    def weight_shape(self) -> tuple[int, int, int, int] | None:
        """Filter tensor as (M filters, C/groups channels, kh, kw); None if unweighted. A 3-D filter has
        `frames.kernel` such slices."""
        kh, kw = self.kernel
        if self.kind is LayerKind.CONV:
            return (self.out_shape.c, self.in_shape.c // self.groups, kh, kw)
        if self.kind is LayerKind.CONV_TRANSPOSE:
            # Stored as ONNX does: (C_in, M/groups, kh, kw).
            return (self.in_shape.c, self.out_shape.c // self.groups, kh, kw)
        if self.kind is LayerKind.FC:
            return (self.out_shape.c, self.in_shape.elements, 1, 1)
        return None

    @property
    def macs(self) -> int:
        """Multiply-accumulates for one image."""
        if self.kind is LayerKind.MATMUL:
            return self.out_shape.elements * self.kernel[0]  # every output sums K products
        ws = self.weight_shape
        if ws is None:
            return 0
        per_output = ws[1] * ws[2] * ws[3] * self.frames.kernel
        if self.kind is LayerKind.CONV_TRANSPOSE:
            # Every input pixel scatters into M/groups·kh·kw outputs.
            return self.in_shape.elements * per_output
        return self.out_shape.elements * per_output

    @property
    def ops(self) -> int:
        """Non-MAC arithmetic for one image (comparisons, adds, scalings)."""
        out = self.out_shape.elements
        kh, kw = self.kernel
        match self.kind:
            case LayerKind.MAX_POOL | LayerKind.AVG_POOL:
                return out * kh * kw * self.frames.kernel
            case LayerKind.GLOBAL_AVG_POOL | LayerKind.GLOBAL_MAX_POOL:
                return self.in_shape.elements
            case LayerKind.ADD | LayerKind.MUL:
                return out * (len(self.inputs) - 1)
            case LayerKind.SOFTMAX:
                return 3 * out  # exp, sum, divide
            case LayerKind.LRN:
                return out * kh  # kernel[0] holds the LRN size
            case LayerKind.UNARY:
                return out
            case LayerKind.UPSAMPLE | LayerKind.RESIZE:
                taps = kh * kw  # each output: taps products and taps − 1 sums; nearest only copies
                return out * (2 * taps - 1) if taps > 1 else 0
            case LayerKind.NORM:
                return self._norm_ops
            case LayerKind.REDUCE:
                return self.in_shape.elements  # n − 1 adds per output, plus the mean's scaling or one more add
            case _:
                return 0

    @property
    def _norm_ops(self) -> int:
        """Per element: add to the mean's sum, subtract the mean, square, add to the variance's sum,
        scale by 1/σ (5), and the affine scale and shift (2) when fused; per normalised set: divide the
        two sums, add ε, square root, reciprocal (5)."""
        elements = self.out_shape.elements
        affine = 2 * elements if self.fused_bn else 0
        return 5 * elements + 5 * self.groups + affine

    @property
    def weight_params(self) -> int:
        """Filter weights (no bias)."""
        ws = self.weight_shape
        if ws is None:
            return 0
        return ws[0] * ws[1] * ws[2] * ws[3] * self.frames.kernel

    @property
    def params(self) -> int:
        """Learned parameters: weights, bias, batch-norm scale and shift, a concat's constant part."""
        channels = self.out_shape.c
        bias = channels if self.has_bias else 0
        bn = 2 * channels if self.fused_bn else 0
        constant = self.out_shape.elements - self.ifmap_elements if self.kind is LayerKind.CONCAT else 0
        return self.weight_params + bias + bn + constant

    @property
    def ifmap_elements(self) -> int:
        """Input activation elements over all inputs."""
        return sum(s.elements for s in self.in_shapes)

    @property
    def ofmap_elements(self) -> int:
        return self.out_shape.elements

    def ifmap_bytes(self, bits: int) -> int:
        """Input activations in bytes at `bits` per element."""
        return _bytes(self.ifmap_elements, bits)

    def ofmap_bytes(self, bits: int) -> int:
        """Output activations in bytes at `bits` per element."""
        return _bytes(self.ofmap_elements, bits)

    def param_bytes(self, bits: int) -> int:
        """Parameters in bytes at `bits` per element."""
        return _bytes(self.params, bits)


def require_images(graph: Graph, model: str) -> None:
    """Refuse a clip network where `model` tiles or prices 2-D maps only (CNNergy's layers, depth-first line
    buffers, CSDF phases): its frames would be dropped, not modelled."""
    for layer in graph:
        clip = next((s for s in (*layer.in_shapes, layer.out_shape) if s.d > 1), None)
        if clip is not None:
            where = graph.source if graph.source not in ("", "zoo") else graph.name
            raise NetworkError(f"{where}: layer {layer.name!r} works on a clip ({clip}, C×D×H×W); {model} covers "
                               "2-D maps only; estimate, simulate or check it with the default loop-nest mappings")


def _bytes(elements: int, bits: int) -> int:
    if bits not in SUPPORTED_BITS:
        raise NetworkError(f"precision {bits} bit is not supported; use one of {SUPPORTED_BITS}")
    return elements * bits // 8


@dataclass(frozen=True)
class Graph:
    """A network: layers in a valid execution (topological) order.

    Each layer writes one tensor, named after the layer. Build it with
    `GraphBuilder`, which checks names, ordering and shapes.
    """

    name: str
    layers: tuple[Layer, ...]
    source: str = ""  # where it came from: "zoo" or the ONNX file path
    declared_batch: int = 1  # images the source's input holds (an ONNX export's batch): a run's default batch
    _index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {l.name: i for i, l in enumerate(self.layers)})

    def __iter__(self) -> Iterator[Layer]:
        return iter(self.layers)

    def __len__(self) -> int:
        return len(self.layers)

    def layer(self, name: str) -> Layer:
        """The layer called `name`; NetworkError if there is none."""
        try:
            return self.layers[self._index[name]]
        except KeyError:
            raise NetworkError(f"network {self.name!r} has no layer {name!r}") from None

    def producer(self, tensor: str) -> Layer:
        """The layer that writes `tensor` (tensors are named after their producer)."""
        return self.layer(tensor)

    @cached_property
    def _consumers(self) -> dict[str, tuple[Layer, ...]]:
        found: dict[str, list[Layer]] = {l.output: [] for l in self.layers}
        for layer in self.layers:
            for t in dict.fromkeys(layer.inputs):
                found[t].append(layer)
        return {t: tuple(ls) for t, ls in found.items()}

    def consumers(self, tensor: str) -> tuple[Layer, ...]:
        """Layers reading `tensor`, in execution order."""
        return self._consumers[tensor]

    def of_kind(self, *kinds: LayerKind) -> list[Layer]:
        return [l for l in self.layers if l.kind in kinds]

    @property
    def inputs(self) -> list[Layer]:
        return self.of_kind(LayerKind.INPUT)

    @property
    def outputs(self) -> list[Layer]:
        return self.of_kind(LayerKind.OUTPUT)

    @property
    def total_macs(self) -> int:
        return sum(l.macs for l in self.layers)

    @property
    def total_params(self) -> int:
        return sum(l.params for l in self.layers)

