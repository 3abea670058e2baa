"""Import an ONNX model as a hwsim `Graph`.

One topological pass over the nodes tracks every ONNX value as one of three
things: a constant (a numpy array, folded as we go, so PyTorch's
Shape → Gather → Concat → Reshape chains become plain numbers), a parameter
(a weight whose shape is known but whose data is never loaded: initializers,
`ConstantOfShape` outputs, missing external data) or a feature (an IR tensor
plus its ONNX dims and axis letters such as "NCHW", "NHWC" or "NC", so tf2onnx
transposes and flattening reshapes cost nothing). Compute ops become layers
through `GraphBuilder`, whose shape rules are authoritative; batch-norms,
activations and constant affines fold into their producer when it is safe.
Anything the importer cannot model raises a one-line `NetworkError` naming
the file, the node and the fix, or with `allow_unknown` becomes a zero-cost
pass-through layer and a warning.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from math import prod
from pathlib import Path

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper

from hwsim.errors import HwsimError, NetworkError, ShapeError
from hwsim.files import require_regular_file
from hwsim.workload import onnx_layers as layers
from hwsim.workload.builder import GraphBuilder, same_padding
from hwsim.workload.ir import (
    NO_PADDING,
    WEIGHTED_KINDS,
    FrameWindow,
    Graph,
    Layer,
    LayerKind,
    Padding,
    Shape,
)
from hwsim.workload.onnx_chains import Chain, find_chains
from hwsim.workload.onnx_context import Handler, ImportContext
from hwsim.workload.onnx_fold import (
    BROADCAST_OPS,
    FOLDS,
    SAME_SHAPE_OPS,
    VIEW_OPS,
    OnnxNode,
    fold_marks,
    ints,
    operand,
    shape_of,
    virtual,
)
from hwsim.workload.onnx_quant import (
    MICROSOFT_DOMAIN,
    fold_quantized,
    layer_precision,
    microsoft_ops,
    quantized_ops,
    strip_qdq,
    with_bits,
)
from hwsim.workload.onnx_values import (
    DEFAULT_DOMAINS,
    INTEGER_BITS,
    SIGNAL,
    VOLUME,
    Feature,
    Inputs,
    Param,
    Unsupported,
    Value,
    as_feature,
    default_layout,
    dims_of,
    frame_value,
    frame_window,
    frames_of,
    ir_shape,
    present,
    spatial,
    value_bits,
    window_axes,
    window_pads,
    window_pair,
)

MIN_OPSET, MAX_OPSET = 7, 21
MAX_ONNX_BYTES = 2**31  # bytes: the largest protobuf message; bigger models keep their weights as external data
MAX_FOLD_ELEMENTS = 4096  # bigger constants are tracked by shape only (they are weights)
SHAPE_READERS = frozenset({"Shape", "Size"})  # consumers that read dims, not data
NO_INPUT_OPS = frozenset({"Constant", "RandomNormal", "RandomUniform"})  # ops that need no input
ABSORBS_PAD = frozenset({"Conv", "MaxPool", "AveragePool", "Pad"})
PASSTHROUGH_DOMAIN = "hwsim"  # where `export_onnx` puts pass-through layers

# ONNX activation op -> hwsim activation name (Clip and the x·sigmoid(x) swish are special).
ACTIVATIONS = {
    "Relu": "relu", "LeakyRelu": "leaky_relu", "PRelu": "prelu", "Sigmoid": "sigmoid", "Tanh": "tanh",
    "HardSigmoid": "hard_sigmoid", "HardSwish": "hard_swish", "Elu": "elu", "Selu": "selu", "Celu": "celu",
    "ThresholdedRelu": "thresholded_relu", "Softplus": "softplus", "Softsign": "softsign", "Mish": "mish",
    "Gelu": "gelu", "Erf": "erf", "Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Reciprocal": "reciprocal",
    "Neg": "neg", "Abs": "abs", "Sin": "sin", "Cos": "cos", "Pow": "pow", "Floor": "floor", "Ceil": "ceil",
    "Round": "round",
}
RELU_FOLDED_INTO = frozenset({*WEIGHTED_KINDS, LayerKind.ADD, LayerKind.MATMUL})  # where quantizers drop ReLUs
GATES = {"Sigmoid": "swish", "HardSigmoid": "hard_swish"}  # x * gate(x) -> one activation


@dataclass(frozen=True)
class ImportResult:
    graph: Graph
    warnings: tuple[str, ...]
    opset: int
    elem_bits: int  # precision of the file's float tensors (16 for fp16 graphs, 32 for float)
    unmodelled: dict[str, tuple[str, ...]] = field(default_factory=dict)  # op -> its zero-cost pass-through layers
    sources: Sources | None = None  # which ONNX values hold the IR's tensors and weights (for measuring them)


@dataclass(frozen=True)
class Sources:
    """Where the IR's data lives in the ONNX graph: per IR tensor the ONNX value holding its final data (after
    every activation folded into its producer; an NCHW one where there is, else a flattened NC one), and per
    weighted layer the value of its filters and whether they are stored transposed (a Gemm's K × N weights)."""

    tensors: dict[str, tuple[str, str]]  # IR tensor -> (ONNX value, layout)
    weights: dict[str, tuple[str, bool]]  # layer -> (ONNX value, stored transposed)


def load_onnx(path: str | Path, allow_unknown: bool = False, input_hw: tuple[int, int] | None = None) -> ImportResult:
    """Read an ONNX file into a `Graph` of one image.

    `input_hw` (height, width) sets the spatial size of every image input,
    resolving symbolic sizes (and overriding fixed ones). With `allow_unknown`,
    ops hwsim cannot model become zero-cost pass-through layers and warnings.
    """
    path = Path(path)
    model = _read(path)
    try:
        return _import(model, path, allow_unknown, input_hw)
    except HwsimError:
        raise
    except Exception as e:
        raise NetworkError(f"{path}: cannot be imported ({type(e).__name__}: {_one_line(e)}); re-export the "
                           "model, or run hwsim --debug for the details") from e


def _import(model: onnx.ModelProto, path: Path, allow_unknown: bool, input_hw: tuple[int, int] | None
            ) -> ImportResult:
    graph = model.graph
    warnings: list[str] = []
    opset = _opset(model, path, warnings)
    initializers = {t.name: t for t in graph.initializer}
    declared = _declared_dims(graph)
    stripped = strip_qdq(graph, _live_nodes(graph, path))
    nodes = stripped.nodes
    specs, batch = _input_specs(graph, initializers, _readers(nodes), input_hw, path, warnings)
    imp = _Importer(path, allow_unknown, _inferred_dims(model), _consumer_counts(nodes, graph), batch, warnings)
    imp.quantized, imp.clamped = stripped.bits, stripped.clamped
    imp.input_changed = any(_differs(declared.get(n, ()), dims) for n, dims, _ in specs)
    for name, tensor in initializers.items():
        _check_initializer_size(tensor, path)
        imp.values[name] = _initializer_value(tensor, path.parent)
    imp.reserve_outputs([o.name for o in graph.output])
    for spec_name, dims, layout in specs:
        imp.add_input(spec_name, dims, layout)
    imp.add_outputs([name for name, _, _ in specs])
    wrapped = _wrap_nodes(nodes, opset)
    imp.find_chains(wrapped)
    for node in wrapped:
        imp.visit(node)
        imp.add_outputs(node.outputs)
    imp.warn_constant_outputs()
    imp.warn_unmodelled()
    built = replace(imp.b.build(), declared_batch=batch)
    return ImportResult(built, tuple(warnings), opset, _elem_bits(graph), imp.unmodelled_layers(), imp.sources())


def _declared_dims(graph: onnx.GraphProto) -> dict[str, tuple[int | None, ...]]:
    """Each graph input's dims as the file declares them (None where symbolic), before --input."""
    return {vi.name: tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
                           for d in vi.type.tensor_type.shape.dim) for vi in graph.input}


def _differs(declared: Sequence[int | None], used: Sequence[int]) -> bool:
    """Whether an input is imported at another size than the one the file fixes (batch aside)."""
    return len(declared) == len(used) and any(d is not None and d != u for d, u in list(zip(declared, used))[1:])


# ----- reading the file --------------------------------------------------------------------
def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def _read(path: Path) -> onnx.ModelProto:
    if not path.exists():
        raise NetworkError(f"{path}: no such file; check the path")
    size_bytes = require_regular_file(path, str(path), NetworkError, ".onnx file")
    if size_bytes > MAX_ONNX_BYTES:
        raise NetworkError(f"{path}: {size_bytes:,} bytes, beyond the 2 GiB a protobuf holds; keep the weights "
                           "as external data (onnx.save(..., save_as_external_data=True))")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except OSError as e:
        raise NetworkError(f"{path}: cannot be read ({_one_line(e)}); check its permissions") from None
    except Exception as e:  # noqa: BLE001 - protobuf raises DecodeError, RuntimeError or ValueError by version
        raise NetworkError(
            f"{path}: not a readable ONNX model (truncated or corrupt protobuf: {_one_line(e)}); re-export it"
        ) from None
    if model.ir_version <= 0 or not model.HasField("graph") or not model.graph.node:
        raise NetworkError(f"{path}: not an ONNX model (no graph found in the protobuf); re-export it")
    return model


def _opset(model: onnx.ModelProto, path: Path, warnings: list[str]) -> int:
    versions: list[int] = [o.version for o in model.opset_import if o.domain in DEFAULT_DOMAINS]
    if not versions:
        raise NetworkError(f"{path}: declares no opset of the default ONNX domain; re-export it")
    opset = versions[0]
    if opset < MIN_OPSET:
        raise NetworkError(
            f"{path}: opset {opset} is older than {MIN_OPSET}; upgrade it with "
            "onnx.version_converter.convert_version(model, 13)"
        )
    if opset > MAX_OPSET:
        warnings.append(f"opset {opset} is newer than {MAX_OPSET}, the newest hwsim was tested with")
    return opset


def _check_initializer_size(tensor: TensorProto, path: Path) -> None:
    """Raw initializer bytes must fill the tensor's shape exactly (a truncated file leaves fewer)."""
    if tensor.data_location == TensorProto.EXTERNAL or not tensor.HasField("raw_data"):
        return
    try:
        item_bytes = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
    except (KeyError, TypeError, ValueError):
        raise NetworkError(f"{path}: initializer '{tensor.name}' has an unknown data type {tensor.data_type}; the "
                           "model is malformed, re-export it") from None
    if any(d < 0 for d in tensor.dims):
        raise NetworkError(f"{path}: initializer '{tensor.name}' has a negative dimension {list(tensor.dims)}; "
                           "the model is malformed, re-export it")
    expected = prod(tensor.dims) * item_bytes if tensor.data_type not in _PACKED_TYPES else None
    if expected is not None and len(tensor.raw_data) != expected:
        raise NetworkError(f"{path}: initializer '{tensor.name}' holds {len(tensor.raw_data):,} bytes but its shape "
                           f"{list(tensor.dims)} needs {expected:,}; the file is truncated or damaged, re-export it")


_PACKED_TYPES = frozenset(getattr(TensorProto, t) for t in ("INT4", "UINT4", "STRING") if hasattr(TensorProto, t))


def _initializer_value(tensor: TensorProto, base: Path) -> np.ndarray | Param:
    """Small initializers as arrays (they may be shapes); weights and missing data as shapes."""
    dims = tuple(int(d) for d in tensor.dims)
    bits = INTEGER_BITS.get(tensor.data_type)
    if prod(dims) > MAX_FOLD_ELEMENTS:
        return Param(dims, bits)
    if tensor.data_location == TensorProto.EXTERNAL:
        try:
            onnx.external_data_helper.load_external_data_for_tensor(tensor, str(base))
        except (OSError, ValueError, onnx.checker.ValidationError):
            return Param(dims, bits)
    if prod(dims) and not _holds_data(tensor):  # declared with its shape only (a generator's stripped weights)
        return Param(dims, bits)
    return onnx.numpy_helper.to_array(tensor)


_DATA_FIELDS = ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data", "string_data")


def _holds_data(tensor: TensorProto) -> bool:
    """Whether an initializer carries its values in any of ONNX's data fields."""
    return any(len(getattr(tensor, field)) for field in _DATA_FIELDS)


def _elem_bits(graph: onnx.GraphProto) -> int:
    """16 if the file's float tensors are mostly fp16/bf16, else 32."""
    types: Counter[int] = Counter(t.data_type for t in graph.initializer)
    types.update(vi.type.tensor_type.elem_type for vi in graph.input)
    for node in graph.node:
        types.update(a.t.data_type for a in node.attribute if a.type == AttributeProto.TENSOR)
    half = types[TensorProto.FLOAT16] + types[TensorProto.BFLOAT16]
    return 16 if half > types[TensorProto.FLOAT] + types[TensorProto.DOUBLE] else 32


# ----- graph structure ---------------------------------------------------------------------
def _live_nodes(graph: onnx.GraphProto, path: Path) -> list[onnx.NodeProto]:
    """Nodes in topological order that contribute to some graph output."""
    nodes = _topological(graph, path)
    needed = {o.name for o in graph.output}
    live = []
    for node in reversed(nodes):
        if any(o in needed for o in node.output):
            live.append(node)
            needed.update(i for i in node.input if i)
    return live[::-1]


def _topological(graph: onnx.GraphProto, path: Path) -> list[onnx.NodeProto]:
    """The nodes in an order where every input is produced first (usually the file's own)."""
    known = {t.name for t in graph.initializer} | {i.name for i in graph.input} | {""}
    pending, ordered = list(graph.node), []
    while pending:
        waiting = []
        for node in pending:
            if all(i in known for i in node.input):
                ordered.append(node)
                known.update(node.output)
            else:
                waiting.append(node)
        if len(waiting) == len(pending):
            node = waiting[0]
            missing = next(i for i in node.input if i not in known)
            raise NetworkError(
                f"{path}: node '{node.name or node.output[0]}' ({node.op_type}) reads '{missing}', which no node, "
                "initializer or graph input produces; the model is malformed, re-export it"
            )
        pending = waiting
    return ordered


def _readers(nodes: list[onnx.NodeProto]) -> dict[str, list[onnx.NodeProto]]:
    """The nodes reading each value."""
    found: dict[str, list[onnx.NodeProto]] = {}
    for node in nodes:
        for name in dict.fromkeys(node.input):
            found.setdefault(name, []).append(node)
    return found


def _consumer_counts(nodes: list[onnx.NodeProto], graph: onnx.GraphProto) -> Counter[str]:
    """How many times each value is read as data (shape reads excluded), graph outputs included."""
    counts: Counter[str] = Counter(o.name for o in graph.output)
    for node in nodes:
        if node.op_type not in SHAPE_READERS:
            counts.update(i for i in node.input if i)
    return counts


def _wrap_nodes(nodes: list[onnx.NodeProto], opset: int) -> list[OnnxNode]:
    """Decode attributes once and give each node a readable name (its own if unique)."""
    counts = Counter(n.name for n in nodes)
    wrapped = []
    for n in nodes:
        name = n.name if n.name and counts[n.name] == 1 else next((o for o in n.output if o), n.op_type)
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        wrapped.append(OnnxNode(n.op_type, n.domain, name, tuple(n.input), tuple(n.output), attrs, opset))
    return wrapped


def _input_specs(graph: onnx.GraphProto, initializers: dict[str, TensorProto],
                 readers: dict[str, list[onnx.NodeProto]], input_hw: tuple[int, int] | None, path: Path,
                 warnings: list[str]) -> tuple[list[tuple[str, tuple[int, ...], str]], int]:
    """Consumed graph inputs as (name, dims with batch 1, layout); also writes the dims back.

    Writing the resolved dims into the model lets ONNX shape inference produce
    concrete shapes for the pass-through ops that rely on it.
    """
    specs, batch = [], 1
    outputs = {o.name for o in graph.output}
    for vi in graph.input:
        if vi.name in initializers or (vi.name not in readers and vi.name not in outputs):
            continue
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            raise NetworkError(f"{path}: input '{vi.name}' has no shape; re-export the model with a fixed input shape")
        dims: list[int | None] = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
                                  for d in tt.shape.dim]
        if len(dims) not in (2, 3, 4, 5):
            raise NetworkError(
                f"{path}: input '{vi.name}' has rank {len(dims)}; hwsim reads N×C×H×W images, N×C×D×H×W clips, "
                "N×C×L signals or N×F vectors"
            )
        if dims[0] is not None and dims[0] > 1:
            warnings.append(f"input '{vi.name}' has batch {dims[0]}: a run processes {dims[0]} images unless --batch "
                            "says otherwise (shapes are per image)")
            batch = max(batch, dims[0])
        dims[0] = 1
        layout = {2: "NC", 3: SIGNAL, 5: VOLUME}.get(len(dims)) or (
            "NHWC" if _is_nhwc(readers.get(vi.name, [])) else "NCHW")
        if len(dims) == 3:
            _signal_length(dims, input_hw, path, vi.name)
        if len(dims) == 5 and dims[2] is None:
            raise NetworkError(f"{path}: input '{vi.name}' has a symbolic frame count; re-export the model with a "
                               "fixed clip length")
        if len(dims) >= 4:
            h, w = layout.index("H"), layout.index("W")
            if input_hw is not None:
                dims[h], dims[w] = input_hw
            if dims[h] is None or dims[w] is None:
                raise NetworkError(f"{path}: input '{vi.name}' has symbolic height/width; pass --input WxH")
        if None in dims:
            raise NetworkError(
                f"{path}: input '{vi.name}' has a symbolic channel count; re-export with a fixed input shape"
            )
        for d, v in zip(tt.shape.dim, dims):
            d.Clear()
            d.dim_value = v
        specs.append((vi.name, tuple(v for v in dims if v is not None), layout))
    if not specs:
        raise NetworkError(f"{path}: no graph input reaches an output; the model computes nothing from its inputs")
    return specs, batch


def _signal_length(dims: list[int | None], input_hw: tuple[int, int] | None, path: Path, name: str) -> None:
    """A signal's length: as the file gives it, or `--input Lx1` (a signal is a map of height 1)."""
    if input_hw is not None:
        if input_hw[0] != 1:
            raise NetworkError(f"{path}: input '{name}' is a 1-D signal (N×C×L); give its length as --input Lx1")
        dims[2] = input_hw[1]
    if dims[2] is None:
        raise NetworkError(f"{path}: input '{name}' has a symbolic length; pass --input Lx1")


def _is_nhwc(readers: list[onnx.NodeProto]) -> bool:
    """tf2onnx's channels-last input: every data reader transposes it to NCHW first."""
    data = [n for n in readers if n.op_type not in SHAPE_READERS]
    return bool(data) and all(n.op_type == "Transpose" and _perm(n) == [0, 3, 1, 2] for n in data)


def _perm(node: onnx.NodeProto) -> list[int] | None:
    return next((list(a.ints) for a in node.attribute if a.name == "perm"), None)


def _inferred_dims(model: onnx.ModelProto) -> dict[str, tuple[int | None, ...]]:
    """ONNX shape inference's dims per value, for ops whose shapes hwsim does not derive."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception:  # noqa: BLE001 - inference is a best-effort hint: a model it rejects can still import
        return {}
    found = {}
    for vi in [*inferred.graph.value_info, *inferred.graph.output]:
        if vi.type.tensor_type.HasField("shape"):
            found[vi.name] = tuple(d.dim_value if d.HasField("dim_value") else None
                                   for d in vi.type.tensor_type.shape.dim)
    return found


# ----- helpers on values -------------------------------------------------------------------
def _describe(node: OnnxNode) -> str:
    op = node.op if node.domain in DEFAULT_DOMAINS else f"{node.domain}:{node.op}"
    return f"node '{node.name}' ({op})"


# ----- the importer ------------------------------------------------------------------------
class _Importer:
    """Walks the nodes once, keeping each ONNX value's meaning and building the graph; the `ImportContext` its
    handlers are given."""

    def __init__(self, path: Path, allow_unknown: bool, inferred: dict[str, tuple[int | None, ...]],
                 consumers: Counter[str], batch: int, warnings: list[str]) -> None:
        self.path = path
        self.allow_unknown = allow_unknown
        self.inferred = inferred
        self.consumers = consumers
        self.batch = batch
        self.warnings = warnings
        self.b = GraphBuilder(path.stem, source=str(path))
        self.values: dict[str, Value] = {}
        self.uses: dict[str, int] = {}  # IR tensor -> data reads of it and of its aliases
        self.names: set[str] = set()
        self.graph_outputs: Counter[str] = Counter()  # graph output names still to get an output layer
        self.free_outputs: set[str] = set()  # those whose names are kept for their output layers
        self.quantized: dict[str, int] = {}  # value -> the width a removed QDQ pair stored it at
        self.clamped: frozenset[str] = frozenset()  # values whose removed QDQ pair was a folded ReLU
        self.input_changed = False  # whether --input changed a size the file fixes
        self.shape_marks: dict[str, np.ndarray] = {}  # constant -> which of its elements come from a shape
        self.chain_starts: dict[str, Chain] = {}  # first node output -> the chain it starts
        self.chain_ends: dict[str, Chain] = {}  # last node output -> its chain, once x turned out a feature
        self.skipped: set[str] = set()  # outputs of the inner nodes of those chains
        self.images: dict[tuple[str, Shape], str] = {}  # (tensor, C×H×W) -> its reshape into that map
        self.unmodelled: dict[str, list[tuple[str, str]]] = {}  # op -> (layer or node, reason) passed through
        self.weight_sources: dict[str, tuple[str, bool]] = {}  # weighted layer -> (ONNX weight value, transposed)

    # ----- bookkeeping --------------------------------------------------------------------
    def sources(self) -> Sources:
        """The ONNX values holding each IR tensor (the last unpadded NCHW alias in visit order: the data after the
        activations folded into its producer; else the last flattened one) and each layer's weights."""
        found: dict[str, tuple[str, str]] = {}
        for name, value in self.values.items():  # insertion order: the order values were produced
            if not isinstance(value, Feature) or not value.pad.is_zero or value.layout not in ("NCHW", "NC"):
                continue
            if value.layout == "NCHW" or found.get(value.tensor, ("", "NC"))[1] == "NC":
                found[value.tensor] = (name, value.layout)
        return Sources(found, dict(self.weight_sources))

    def unique(self, base: str) -> str:
        name, k = base, 1
        while name in self.names:
            name, k = f"{base}_{k}", k + 1
        self.names.add(name)
        return name

    def layer_name(self, node: OnnxNode, k: int = 0) -> str:
        """A unique name for the layer made from output k of `node`."""
        return self.unique(node.name if k == 0 else f"{node.name}_{k}")

    def where(self, node: OnnxNode) -> str:
        return f"{self.path}: {_describe(node)}"

    def produce(self, node: OnnxNode, k: int, tensor: str, dims: Sequence[int] | None = None,
                layout: str = "NCHW") -> None:
        """Record output k as the new IR tensor `tensor` (NCHW dims from its shape by default)."""
        if dims is None:
            s = self.b.shape(tensor)
            dims = (1, s.c, s.h, s.w)
        out = node.outputs[k]
        self.values[out] = Feature(tensor, tuple(int(d) for d in dims), layout)
        self.uses[tensor] = self.consumers[out]

    def produce_vector(self, node: OnnxNode, tensor: str) -> None:
        self.produce(node, 0, tensor, (1, self.b.shape(tensor).c), "NC")

    def alias(self, node: OnnxNode, x: Feature, dims: Sequence[int] | None = None, layout: str | None = None,
              k: int = 0) -> None:
        """Output k is the same data as `x`, possibly with other dims/letters: no layer."""
        out = node.outputs[k]
        new = replace(x, dims=tuple(int(d) for d in dims) if dims is not None else x.dims,
                      layout=layout if layout is not None else x.layout)
        self.values[out] = new
        self.uses[x.tensor] += self.consumers[out] - 1

    def add_input(self, name: str, dims: tuple[int, ...], layout: str) -> None:
        self.names.add(name)
        self.free_outputs.discard(name)  # an input that is also an output: the output layer is renamed
        tensor = self.b.input(name, *ir_shape(dims, layout))
        self.values[name] = Feature(tensor, dims, layout)
        self.uses[tensor] = self.consumers[name]

    def reserve_outputs(self, names: list[str]) -> None:
        """Keep the graph outputs' names for their output layers (other layers get other names)."""
        self.graph_outputs = Counter(names)
        self.free_outputs = set(names)
        self.names |= self.free_outputs

    def add_outputs(self, produced: Sequence[str]) -> None:
        """Output layers for the graph outputs among the values just produced (keeps the file's order)."""
        for name in produced:
            if not isinstance(self.values.get(name), Feature):
                continue
            for _ in range(self.graph_outputs.pop(name, 0)):
                x = self.materialise(name)
                self.b.output(name if name in self.free_outputs else self.unique(name), x.tensor)
                self.free_outputs.discard(name)

    def warn_constant_outputs(self) -> None:
        for name in self.graph_outputs:
            self.warnings.append(f"output '{name}' does not depend on an input; skipped")

    def value(self, node: OnnxNode, name: str) -> Value:
        try:
            return self.values[name]
        except KeyError:
            raise NetworkError(
                f"{self.where(node)}: reads '{name}', which hwsim could not compute (an output it does not model); "
                "simplify the model around this node"
            ) from None

    def known_dims(self, name: str) -> tuple[int, ...] | None:
        """Shape inference's dims for `name` if all of them are known."""
        dims = self.inferred.get(name)
        if dims is None or None in dims:
            return None
        return tuple(d for d in dims if d is not None)

    def materialise(self, name: str) -> Feature:
        """Feature `name` with any pending Pad turned into a layer (for readers that cannot absorb it)."""
        v = self.values[name]
        assert isinstance(v, Feature), f"{name} is not a feature map"
        if v.pad.is_zero:
            return v
        tensor = self.b.slice(self.unique(v.pad_name), v.tensor, ir_shape(v.dims, v.layout), crop=v.pad)
        new = Feature(tensor, v.dims, v.layout)
        self.values[name] = new
        self.uses[tensor] = self.consumers[name]
        return new

    # ----- reading node inputs ------------------------------------------------------------
    def const(self, node: OnnxNode, ins: Inputs, index: int) -> np.ndarray | None:
        """Input `index` as a known constant (None if absent)."""
        if not present(ins, index):
            return None
        v = ins[index]
        if not isinstance(v, np.ndarray):
            raise Unsupported(f"takes input '{node.inputs[index]}' from a value only known at run time")
        return v

    def consts(self, node: OnnxNode, ins: Inputs) -> list[np.ndarray | None]:
        """All inputs after the first as constants (the first left out for fold functions)."""
        return [None] + [self.const(node, ins, i) for i in range(1, len(ins))]

    def weight_dims(self, v: Value | None, rank: int) -> tuple[int, ...]:
        """The shape of a weight input (which must not be a feature map)."""
        if isinstance(v, Feature):
            raise Unsupported("computes its weights at run time from a feature map; hwsim needs constant weights")
        dims = dims_of(v)
        if len(dims) != rank:
            raise Unsupported(f"has {len(dims)}-D weights; hwsim expects {rank}-D")
        return dims

    def image(self, node: OnnxNode, v: Value | None, windows_ok: bool = False) -> Feature:
        """A feature in NCHW order, as Conv, pooling and pixel shuffles need (or, where `windows_ok`, an N×C×L
        signal, along which windows slide as along a map of height 1, or an N×C×D×H×W clip)."""
        if not isinstance(v, Feature):
            raise Unsupported("has a constant where hwsim expects a feature map")
        if windows_ok and v.layout in (SIGNAL, VOLUME):
            return v
        if v.layout == "????" and v.dims[0] == 1:
            return self.as_image(node, v)
        if v.layout != "NCHW":
            raise NetworkError(
                f"{self.where(node)}: reads a tensor of layout {v.layout} {list(v.dims)}; hwsim needs NCHW here "
                "(a Transpose to channels-first is missing); re-export the model channels-first"
            )
        return v

    def as_image(self, node: OnnxNode, v: Feature) -> Feature:
        """A rank-4 tensor of unnamed axes (tokens reshaped back to a map) read as NCHW: a view of the same
        elements, a zero-cost reshape layer when its producer shaped them otherwise."""
        shape = Shape(*v.dims[1:])
        if self.b.shape(v.tensor) == shape:
            return replace(v, layout="NCHW")
        if (v.tensor, shape) not in self.images:  # one reshape however many layers read the map
            tensor = self.b.passthrough(self.unique(f"{node.name}/reshape"), [v.tensor], shape, "Reshape")
            self.images[(v.tensor, shape)] = tensor
            self.uses[tensor] = 0
        tensor = self.images[(v.tensor, shape)]
        self.uses[tensor] += 1
        return replace(v, tensor=tensor, layout="NCHW")

    # ----- fusion -------------------------------------------------------------------------
    def fusable(self, x: Feature) -> Layer | None:
        """The producer of `x` if a batch-norm/activation after it can fold into it."""
        if not x.pad.is_zero or self.uses[x.tensor] != 1:
            return None
        layer = self.b.layer(x.tensor)
        if layer.kind is LayerKind.INPUT or layer.activation is not None:
            return None
        return layer

    def pointwise(self, node: OnnxNode, x: Feature, bn: bool = False, activation: str | None = None,
                  bias: bool = False) -> None:
        """Fold a batch-norm, bias or activation into x's producer, or add a `unary` layer."""
        if self.fusable(x) is not None:
            self.b.fuse(x.tensor, bn=bn, activation=activation, bias=bias)
            self.alias(node, x)
        else:
            tensor = self.b.unary(self.layer_name(node), x.tensor, bn=bn or bias, activation=activation)
            self.produce(node, 0, tensor, x.dims, x.layout)

    def find_chains(self, nodes: list[OnnxNode]) -> None:
        """Spot x·sigmoid(x) (SiLU/swish), x·hardsigmoid(x), GELU and decomposed layer norms."""
        gates = {n.outputs[0]: n for n in nodes if n.op in GATES and n.domain in DEFAULT_DOMAINS}
        for mul in nodes:
            if mul.op != "Mul" or len(mul.inputs) != 2:
                continue
            for x, g in (mul.inputs, mul.inputs[::-1]):
                gate = gates.get(g)
                if gate and gate.inputs[0] == x and self.consumers[g] == 1:
                    self.chain_starts[g] = Chain(x, GATES[gate.op], g, frozenset({g}), mul.outputs[0], 2)
        for chain in find_chains(nodes, self.consumers):
            self.chain_starts[chain.first] = chain

    def in_chain(self, node: OnnxNode) -> bool:
        """Whether `node` is inside a chain (skipped); starts the chain when its first node comes."""
        out = node.outputs[0]
        chain = self.chain_starts.get(out)
        if chain is not None and isinstance(self.values.get(chain.x), Feature):
            self.skipped |= chain.inner
            self.chain_ends[chain.last] = chain
            x = self.values[chain.x]
            assert isinstance(x, Feature)
            self.uses[x.tensor] -= chain.reads - 1
        return out in self.skipped

    def finish_chain(self, node: OnnxNode, chain: Chain) -> None:
        x = replace(self.materialise(chain.x), bits=self.quantized.get(chain.x))
        if chain.what == "layer_norm":
            self.run(lambda imp, n, _: layers.decomposed_layer_norm(imp, n, x, chain.axes), node, [x])
        else:
            self.run(lambda imp, n, _: imp.pointwise(n, x, activation=chain.what), node, [x])

    # ----- the pass -----------------------------------------------------------------------
    def input_value(self, node: OnnxNode, name: str) -> Value:
        """A node input, at the width a removed QDQ pair stored it at."""
        v = self.value(node, name)
        bits = self.quantized.get(name)
        return v if bits is None or value_bits(v) == bits else with_bits(v, bits)

    def visit(self, node: OnnxNode) -> None:
        if self.in_chain(node):
            return
        chain = self.chain_ends.get(node.outputs[0])
        ins = [self.input_value(node, n) if n and n not in self.skipped else None for n in node.inputs]
        try:
            if chain is not None:
                self.finish_chain(node, chain)
            else:
                self.dispatch(node, ins)
        except Unsupported as e:
            self.unsupported(node, ins, str(e))
        except HwsimError:
            raise
        except Exception as e:  # noqa: BLE001 - a node no handler foresaw is reported, never a traceback
            self.unsupported(node, ins, f"could not be imported ({type(e).__name__}: {_one_line(e)})")

    def dispatch(self, node: OnnxNode, ins: Inputs) -> None:
        if node.domain == PASSTHROUGH_DOMAIN:
            raise Unsupported("is a pass-through layer hwsim exported")
        if node.domain not in DEFAULT_DOMAINS and node.op not in DOMAIN_OPS.get(node.domain, {}):
            known = node.domain in DOMAIN_OPS
            raise Unsupported(f"is not an op of domain '{node.domain}' hwsim knows" if known
                              else f"is in domain '{node.domain}', which hwsim does not know")
        if not any(v is not None for v in ins) and node.op not in NO_INPUT_OPS:
            raise Unsupported("has no inputs; the model is malformed")
        if node.op in SHAPE_READERS:
            dims = dims_of(ins[0])
            read = shape_of(node, dims) if node.op == "Shape" else np.array(prod(dims))
            self.values[node.outputs[0]] = read
            self.shape_marks[node.outputs[0]] = np.ones(read.shape, bool)
            return
        if not any(isinstance(v, Feature) for v in ins):
            self.fold(node, ins)
            self.mark_shapes(node, ins)
            return
        if node.op not in ABSORBS_PAD:
            ins = [replace(self.materialise(n), bits=v.bits) if isinstance(v, Feature) else v
                   for n, v in zip(node.inputs, ins)]
        handler = FEATURE_OPS.get(node.op) if node.domain in DEFAULT_DOMAINS else DOMAIN_OPS[node.domain][node.op]
        if handler is None:
            raise Unsupported("on a feature map is not modelled by hwsim" if node.op in FOLDS
                              else "is not an op hwsim knows")
        self.run(handler, node, ins)
        for out in node.outputs:
            if out in self.clamped:
                self.restore_relu(out)

    def restore_relu(self, name: str) -> None:
        """Put back on its producer the ReLU a quantizer folded into a QDQ pair (one that clamps at zero)."""
        x = self.values.get(name)
        if not isinstance(x, Feature) or not x.pad.is_zero:
            return
        producer = self.b.layer(x.tensor)  # every reader of x reads it clamped: its other readers do not matter
        if producer.kind in RELU_FOLDED_INTO and producer.activation is None:
            self.b.fuse(x.tensor, activation="relu")

    def run(self, handler: Handler, node: OnnxNode, ins: Inputs) -> None:
        """Apply `handler`, then give the layers it made the precision of the values they read."""
        first = len(self.b)
        handler(self, node, ins)
        for layer in self.b.layers_from(first):
            precision = layer_precision(layer, ins) if layer.precision is None else None
            if precision is not None:
                self.b.set_precision(layer.name, precision)

    def mark_shapes(self, node: OnnxNode, ins: Inputs) -> None:
        """Carry the marks of constant elements computed from a tensor's shape through a folded node."""
        marks = [self.shape_marks.get(n) if n else None for n in node.inputs]
        results = [v for v in (self.values.get(o) for o in node.outputs if o) if isinstance(v, np.ndarray)]
        if not any(m is not None and m.any() for m in marks) or len(results) != len([o for o in node.outputs if o]):
            return
        try:
            found = fold_marks(node, ins, marks, results)
        except (ValueError, IndexError, TypeError, KeyError):
            found = [np.ones(np.shape(r), bool) for r in results]  # cannot follow them: all of it may depend
        self.shape_marks.update((o, m) for o, m in zip(node.outputs, found) if m.any())

    def from_shape(self, name: str) -> np.ndarray:
        """Which elements of constant `name` were computed from a tensor's shape (so they follow --input)."""
        value = self.values.get(name)
        return self.shape_marks.get(name, np.zeros(np.shape(value) if isinstance(value, np.ndarray) else (), bool))

    def fold(self, node: OnnxNode, ins: Inputs) -> None:
        """A node on constants and weights only: evaluate it, or at least its output shapes."""
        if node.op == "Constant" and isinstance(node.attrs.get("value"), TensorProto):
            dims = tuple(node.attrs["value"].dims)
            if prod(dims) > MAX_FOLD_ELEMENTS:
                self.values[node.outputs[0]] = Param(dims)
                return
        if node.op == "ConstantOfShape" and isinstance(ins[0], np.ndarray) and prod(ints(ins[0])) > MAX_FOLD_ELEMENTS:
            self.values[node.outputs[0]] = Param(ints(ins[0]))
            return
        quantized = fold_quantized(node, ins)
        if quantized is not None:
            self.values[node.outputs[0]] = quantized
            return
        if node.op in FOLDS and all(v is None or isinstance(v, np.ndarray) for v in ins):
            try:
                results = FOLDS[node.op](node, ins)
            except (ValueError, IndexError, TypeError, KeyError) as e:
                raise Unsupported(f"cannot be evaluated on its constant inputs ({_one_line(e)})") from None
            for out, r in zip(node.outputs, map(np.asarray, results)):  # numpy may hand back scalars
                self.values[out] = Param(r.shape) if r.size > MAX_FOLD_ELEMENTS else r
            return
        for out, dims in zip(node.outputs, self.param_dims(node, ins)):
            self.values[out] = Param(dims)

    def param_dims(self, node: OnnxNode, ins: Inputs) -> list[tuple[int, ...]]:
        """Output shapes of a node that transforms weights (data never loaded)."""
        rest_known = all(v is None or isinstance(v, np.ndarray) for v in ins[1:])
        if node.op in VIEW_OPS and rest_known and ins[0] is not None:
            try:
                return [r.shape for r in FOLDS[node.op](node, [virtual(dims_of(ins[0])), *ins[1:]])]
            except (ValueError, IndexError, TypeError) as e:
                raise Unsupported(f"cannot reshape its weights ({_one_line(e)})") from None
        if node.op in SAME_SHAPE_OPS:
            return [dims_of(ins[0])]
        if node.op in BROADCAST_OPS:
            return [tuple(np.broadcast_shapes(*(dims_of(v) for v in ins if v is not None)))]
        known = [self.known_dims(o) for o in node.outputs if o]
        if (node.op in FOLDS or node.op in FEATURE_OPS) and known and all(d is not None for d in known):
            # an op on constants alone (a Conv over a constant positional grid) is a constant: precomputed, as
            # onnxruntime's constant folding does, at the shape ONNX's inference gives it
            return [d for d in known if d is not None]
        if node.op in FEATURE_OPS:
            raise Unsupported("has no feature-map input and no inferred output shape; hwsim cannot tell what "
                              "it computes")
        raise Unsupported("is not an op hwsim knows" if node.op not in FOLDS else "has an output of unknown shape")

    def unsupported(self, node: OnnxNode, ins: Inputs, reason: str) -> None:
        """Raise the one-line error, or with allow_unknown add pass-through layers and a warning."""
        if not self.allow_unknown:
            raise NetworkError(
                f"{self.where(node)} {reason}; pass --allow-unknown to treat it as a zero-cost pass-through, "
                "or replace it"
            )
        label = node.op if node.domain in DEFAULT_DOMAINS else f"{node.domain}:{node.op}"
        made = self.unmodelled.setdefault(label, [])
        first = len(self.b)
        feats = [self.materialise(n) for n, v in zip(node.inputs, ins) if isinstance(v, Feature)]
        tensors = list(dict.fromkeys(f.tensor for f in feats))
        for k, out in enumerate(node.outputs):
            if not out:
                continue
            dims = self.known_dims(out)
            if not feats:
                if dims is None:
                    raise NetworkError(f"{self.where(node)} {reason}, and its output shape is unknown; replace it")
                self.values[out] = Param(dims)
                continue
            if dims is None:
                dims, layout = feats[0].dims, feats[0].layout
            else:
                layout = feats[0].layout if len(dims) == len(feats[0].dims) else default_layout(len(dims))
            tensor = self.b.passthrough(self.layer_name(node, k), tensors, ir_shape(dims, layout), node.op)
            self.produce(node, k, tensor, dims, layout)
        made.extend((layer.name, reason) for layer in self.b.layers_from(first))
        if len(self.b) == first:
            made.append((node.name, reason))  # constants only: no layer, still reported

    def warn_unmodelled(self) -> None:
        """One warning per op passed through, however many nodes it has."""
        for op, found in self.unmodelled.items():
            (name, reason), more = found[0], len(found) - 1
            count = f" and {more} more node{'s' if more > 1 else ''}" if more else ""
            self.warnings.append(f"{op} (node '{name}'{count}) {reason}: imported as a zero-cost pass-through")

    def unmodelled_layers(self) -> dict[str, tuple[str, ...]]:
        """The pass-through layers made for each op hwsim could not model."""
        names = {layer.name for layer in self.b.layers_from(0) if layer.kind is LayerKind.PASSTHROUGH}
        return {op: tuple(n for n, _ in found if n in names) for op, found in self.unmodelled.items()}

    # ----- shape changes without data movement --------------------------------------------
    def relayout(self, node: OnnxNode, x: Feature, new: tuple[int, ...]) -> None:
        """Give `x` the dims `new` (Reshape/Flatten/Squeeze/Unsqueeze), naming its axes again.

        Splitting C into (G, K), transposing to (K, G) and merging back is a
        channel shuffle; other reshapes are free aliases, except a rank-4 one
        that changes C×H×W, which becomes a zero-cost pass-through layer.
        """
        s = self.b.shape(x.tensor)
        if new == x.dims:
            self.alias(node, x)
            return
        c = x.layout.find("C")
        if c >= 0 and len(new) == len(x.dims) + 1 and new[:c] + new[c + 2:] == x.dims[:c] + x.dims[c + 1:] \
                and new[c] * new[c + 1] == x.dims[c]:
            self.alias(node, x, new, x.layout[:c] + "GK" + x.layout[c + 1:])
            return
        for pair in ("GK", "KG"):
            p = x.layout.find(pair)
            if p >= 0 and len(new) == len(x.dims) - 1 and new[:p] + new[p + 1:] == x.dims[:p] + x.dims[p + 2:] \
                    and new[p] == x.dims[p] * x.dims[p + 1]:
                layout = x.layout[:p] + "C" + x.layout[p + 2:]
                if pair == "GK":
                    self.alias(node, x, new, layout)
                else:
                    tensor = self.b.channel_shuffle(self.layer_name(node), x.tensor, groups=x.dims[p + 1])
                    self.produce(node, 0, tensor, new, layout)
                return
        if len(new) == 2 and new[0] == 1:
            self.alias(node, x, new, "NC" if (s.h, s.w, s.d) == (1, 1, 1) else "NF")
        elif new == (s.elements,) and x.layout == "NCHW":
            self.alias(node, x, new, "F")  # flattened in C, H, W order (dynamo's as_strided views gather from it)
        elif len(new) == 4 and new == (1, s.c, s.h, s.w):
            self.alias(node, x, new, "NCHW")
        elif len(new) == 4 and new[0] == 1 and any(ch in x.layout for ch in "CHW"):
            tensor = self.b.passthrough(self.layer_name(node), [x.tensor], Shape(*new[1:]), node.op)
            self.produce(node, 0, tensor, new)
        else:
            self.alias(node, x, new, "?" * len(new))

    def window_padding(self, node: OnnxNode, x: Feature, kernel: tuple[int, int], stride: tuple[int, int],
                       dilation: tuple[int, int], depth: tuple[int, int, int]) -> tuple[Padding, FrameWindow]:
        """Conv/pool padding from pads or auto_pad, plus any Pad absorbed from the input, and the window along a
        clip's frames (`depth`: its kernel, stride and dilation)."""
        auto = node.attr_str("auto_pad", "NOTSET")
        h, w = spatial(x)
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            upper = auto == "SAME_UPPER"
            top, bottom = same_padding(h, kernel[0], stride[0], dilation[0], upper)
            left, right = same_padding(w, kernel[1], stride[1], dilation[1], upper)
            ends = same_padding(frames_of(x), *depth, upper)
        elif auto == "VALID":
            top = left = bottom = right = 0
            ends = (0, 0)
        else:
            (top, left, bottom, right), ends = window_pads(node.attr_ints("pads") or _no_pads(x), x.layout)
        p = x.pad
        return Padding(top + p.top, left + p.left, bottom + p.bottom, right + p.right), frame_window(*depth, ends)


# ----- feature-map handlers ----------------------------------------------------------------
Window = tuple[tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int, int]]


def _window_attrs(node: OnnxNode, x: Feature, kernel: Sequence[int]) -> Window:
    """Kernel, stride and dilation as (h, w) pairs of a window op on `x`, and its (kernel, stride, dilation) along
    a clip's frames (1, 1, 1 elsewhere)."""
    values = (kernel, node.attr_ints("strides") or _ones(x), node.attr_ints("dilations") or _ones(x))
    names = ("kernel", "stride", "dilation")
    k, st, d = (window_pair(v, n, x.layout) for v, n in zip(values, names))
    kd, sd, dd = (frame_value(v, n, x.layout) for v, n in zip(values, names))
    return k, st, d, (kd, sd, dd)


def _conv_attrs(imp: ImportContext, node: OnnxNode, ins: Inputs) -> tuple[Feature, tuple[int, ...], Window, int]:
    """Input feature, weight dims, window and groups of a Conv or ConvTranspose."""
    x = imp.image(node, ins[0], windows_ok=True)
    w = imp.weight_dims(ins[1], 2 + window_axes(x.layout))
    window = _window_attrs(node, x, node.attr_ints("kernel_shape") or w[2:])
    return x, w, window, node.attr_int("group", 1)


def _ones(x: Feature) -> tuple[int, ...]:
    """A window attribute's default (1 per window axis)."""
    return (1,) * window_axes(x.layout)


def _no_pads(x: Feature) -> tuple[int, ...]:
    return (0,) * (2 * window_axes(x.layout))


def _produce_window(imp: ImportContext, node: OnnxNode, x: Feature, tensor: str) -> None:
    """Output 0 of a window op on `x`: a map, or a signal or a clip again when `x` is one."""
    s = imp.b.shape(tensor)
    if x.layout == SIGNAL:
        imp.produce(node, 0, tensor, (1, s.c, s.w), SIGNAL)
    elif x.layout == VOLUME:
        imp.produce(node, 0, tensor, (1, s.c, s.d, s.h, s.w), VOLUME)
    else:
        imp.produce(node, 0, tensor)


def _conv(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    x, w, (kernel, stride, dilation, depth), groups = _conv_attrs(imp, node, ins)
    if w[1] * groups != x.dims[1]:
        raise ShapeError(
            f"{imp.where(node)}: weights {list(w)} with {groups} groups expect {w[1] * groups} input channels, "
            f"but the input has {x.dims[1]}; the model is inconsistent"
        )
    pad, frames = imp.window_padding(node, x, kernel, stride, dilation, depth)
    name = imp.layer_name(node)
    imp.weight_sources[name] = (node.inputs[1], False)
    tensor = imp.b.conv(name, x.tensor, w[0], kernel, stride, pad, dilation, groups, bias=present(ins, 2),
                        frames=frames)
    _produce_window(imp, node, x, tensor)


def _conv_transpose(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    x, w, (kernel, stride, dilation, _), groups = _conv_attrs(imp, node, ins)
    if x.layout == VOLUME:
        raise Unsupported("is a 3-D transposed convolution; hwsim maps transposed convolutions over images and "
                          "signals")
    signal = x.layout == SIGNAL
    axes = window_axes(x.layout)
    out_pad = window_pair(node.attr_ints("output_padding") or (0,) * axes, "output padding", x.layout)
    if signal:
        out_pad = (0, out_pad[1])  # a signal's height stays 1: nothing added to it
    auto = node.attr_str("auto_pad", "NOTSET")
    size = spatial(x)
    given = node.attr_ints("output_shape")  # the window axes' sizes, possibly after N and C
    target: tuple[int, ...] = window_pair(given[-axes:], "output shape", x.layout) if given else ()
    if not target and auto in ("SAME_UPPER", "SAME_LOWER"):
        target = (size[0] * stride[0], size[1] * stride[1])
    if target:
        # ONNX: total = stride·(in−1) + output_padding + (k−1)·d + 1 − out, split as auto_pad says.
        begin_end = []
        for i in range(2):
            total = stride[i] * (size[i] - 1) + out_pad[i] + (kernel[i] - 1) * dilation[i] + 1 - target[i]
            small = total // 2
            begin_end.append((small, total - small) if auto == "SAME_UPPER" else (total - small, small))
        pad = Padding(begin_end[0][0], begin_end[1][0], begin_end[0][1], begin_end[1][1])
    elif auto == "VALID":
        pad = NO_PADDING
    else:
        pad, _ = window_pads(node.attr_ints("pads") or _no_pads(x), x.layout)
    name = imp.layer_name(node)
    imp.weight_sources[name] = (node.inputs[1], False)
    tensor = imp.b.conv_transpose(name, x.tensor, w[1] * groups, kernel, stride, pad, out_pad, dilation, groups,
                                  bias=present(ins, 2))
    _produce_window(imp, node, x, tensor)


def _pool(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    x = imp.image(node, ins[0], windows_ok=True)
    if len(node.outputs) > 1 and imp.consumers[node.outputs[1]]:
        raise Unsupported("uses the Indices output, which hwsim does not model")
    kernel, stride, dilation, depth = _window_attrs(node, x, node.attr_ints("kernel_shape"))
    ceil_mode = bool(node.attr_int("ceil_mode", 0))
    pad, frames = imp.window_padding(node, x, kernel, stride, dilation, depth)
    make = imp.b.max_pool if node.op == "MaxPool" else imp.b.avg_pool
    tensor = make(imp.layer_name(node), x.tensor, kernel, stride, pad, ceil_mode, dilation, frames)
    _produce_window(imp, node, x, tensor)


def _global_pool(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    x = imp.image(node, ins[0], windows_ok=True)
    make = imp.b.global_max_pool if node.op == "GlobalMaxPool" else imp.b.global_avg_pool
    _produce_window(imp, node, x, make(imp.layer_name(node), x.tensor))


def _depth_to_space(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    x = imp.image(node, ins[0])  # DCR and CRD orders move the same data
    imp.produce(node, 0, imp.b.depth_to_space(imp.layer_name(node), x.tensor, node.attr_int("blocksize", 1)))


def _softmax(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    x = as_feature(ins[0])
    imp.produce(node, 0, imp.b.softmax(imp.layer_name(node), x.tensor), x.dims, x.layout)


def _lrn(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    x = as_feature(ins[0])
    imp.produce(node, 0, imp.b.lrn(imp.layer_name(node), x.tensor, node.attr_int("size", 5)), x.dims, x.layout)


def _batch_norm(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    imp.pointwise(node, as_feature(ins[0]), bn=True)


def _activation(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    imp.pointwise(node, as_feature(ins[0]), activation=ACTIVATIONS[node.op])


def _clip(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    """Clip: bounds are attributes up to opset 10, inputs from 11; 0..6 is ReLU6."""
    known = [v if isinstance(v, np.ndarray) else None for v in ins]
    lo, hi = operand(node, known, 1, "min"), operand(node, known, 2, "max")
    lo_v = None if lo is None else float(lo.reshape(-1)[0])
    hi_v = None if hi is None else float(hi.reshape(-1)[0])
    if lo_v == 0 and hi_v == 6:
        name = "relu6"
    elif lo_v == 0 and (hi_v is None or hi_v == float("inf")):
        name = "relu"
    else:
        name = "clip"
    imp.pointwise(node, as_feature(ins[0]), activation=name)


def _alias(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    """Identity, Dropout (inference) and Cast move no data."""
    imp.alias(node, as_feature(ins[0]))


def _reshape(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    """Reshape, Flatten, Squeeze, Unsqueeze of a feature: new dims, computed on a stand-in array."""
    x = as_feature(ins[0])
    out = node.outputs[0]
    try:
        args = imp.consts(node, ins)
    except Unsupported:
        inferred = imp.known_dims(out)
        if inferred is None:
            raise
        imp.relayout(node, x, (1, *inferred[1:]))
        return
    if node.op == "Reshape" and imp.batch > 1 and args[1] is not None and ints(args[1])[:1] == (imp.batch,):
        args[1] = np.array((1, *ints(args[1])[1:]), np.int64)  # a batch baked into the target shape
    try:
        new = FOLDS[node.op](node, [virtual(x.dims), *args[1:]])[0].shape
    except ValueError as e:
        raise NetworkError(f"{imp.where(node)}: cannot reshape {list(x.dims)} ({_one_line(e)}); "
                           "the input size probably differs from the one the model was exported for") from None
    imp.relayout(node, x, tuple(int(d) for d in new))


def _transpose(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    """A transpose only renames axes (tf2onnx NHWC <-> NCHW, channel shuffles): no layer."""
    x = as_feature(ins[0])
    perm = node.attr_ints("perm") or tuple(reversed(range(len(x.dims))))
    imp.alias(node, x, [x.dims[p] for p in perm], "".join(x.layout[p] for p in perm))


def _pad(imp: ImportContext, node: OnnxNode, ins: Inputs) -> None:
    """Pad of height/width: kept pending so the next Conv or pool absorbs it into its padding."""
    x = as_feature(ins[0])
    args = imp.consts(node, ins)
    given = operand(node, args, 1, "pads")
    if given is None:
        raise Unsupported("gives no pads")
    pads = ints(given)
    rank = len(x.dims)
    axes = ints(args[3]) if len(args) > 3 and args[3] is not None else tuple(range(rank))
    begin, end = [0] * rank, [0] * rank
    for i, a in enumerate(axes):
        begin[a % rank], end[a % rank] = pads[i], pads[i + len(axes)]
    for a in range(rank):
        if (begin[a] or end[a]) and x.layout[a] not in "HW":
            raise Unsupported(f"pads axis {a} ({x.layout[a]} of {x.layout}); hwsim pads height and width only")
    if not any(begin) and not any(end):
        imp.alias(node, x)
        return
    w = x.layout.index("W")
    h = x.layout.find("H")  # none in a signal
    added = Padding(begin[h] if h >= 0 else 0, begin[w], end[h] if h >= 0 else 0, end[w])
    pad = Padding(*(a + b for a, b in zip(x.pad, added)))
    dims = [d + b + e for d, b, e in zip(x.dims, begin, end)]
    imp.alias(node, replace(x, pad=pad, pad_name=x.pad_name or node.name), dims)


FEATURE_OPS: dict[str, Handler] = {
    "Conv": _conv,
    "ConvTranspose": _conv_transpose,
    "MaxPool": _pool,
    "AveragePool": _pool,
    "GlobalAveragePool": _global_pool,
    "GlobalMaxPool": _global_pool,
    "DepthToSpace": _depth_to_space,
    "Softmax": _softmax,
    "LogSoftmax": _softmax,
    "LRN": _lrn,
    "BatchNormalization": _batch_norm,
    "Clip": _clip,
    "Identity": _alias,
    "Dropout": _alias,
    "Cast": _alias,
    "CastLike": _alias,
    "Reshape": _reshape,
    "Flatten": _reshape,
    "Squeeze": _reshape,
    "Unsqueeze": _reshape,
    "Transpose": _transpose,
    "Pad": _pad,
    **layers.OPS,  # the handlers of hwsim.workload.onnx_layers: a new operator is one handler and one entry there
    **{op: _activation for op in ACTIVATIONS},
}
FEATURE_OPS.update(quantized_ops(FEATURE_OPS))  # the quantized ops, as their float twins
DOMAIN_OPS: dict[str, dict[str, Handler]] = {MICROSOFT_DOMAIN: microsoft_ops(FEATURE_OPS)}  # other domains' ops
