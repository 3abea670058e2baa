"""Depth-first execution with line buffers and tiling (Goetschalckx & Verhelst, JETCAS 2019): closed-form memory models.

Two models of one inference, both in bytes at `bits` per element (at 8 bit a
byte is one of the paper's "features"):

- `layer_by_layer_dram_bytes`: the paper's layer-by-layer lower bound (sec. 2.3),
  DRAM traffic against on-chip memory M.
- `depth_first_cost`: a network cut into stacks of consecutive layers, each run
  depth-first with line buffers (Eq. 1) and optionally tiled (Eqs. 2, 3);
  on-chip bytes and DRAM bytes per stack and in total.

Geometry of a stack. Lines run along the shorter spatial side of the stack's
first input feature map (FM) and are scanned along the longer one (sec. 3.2:
line length min(W, H)); every FM of the stack uses that orientation, its own
length along it ("line", L) and across it ("scan"). A pixel is all channels
of one position. For each layer we use its window: `k_scan` (Eq. 1's k across
lines), `k_line` (along the line), the stride along the line (Eq. 3's S) and
its lookahead `dilation·(k−1) − pad_begin` (= (k−1)/2 for 'same' padding) on
both axes. Layer kinds:

- conv, max/avg pool: their kernel, stride and dilation; strides change only
  the resolution of the next FM, not Eq. 1.
- 1×1 layers and element-wise / channel layers (add, mul, concat, unary, LRN,
  softmax, slice, channel shuffle, pass-through): one pixel (sec. 3.1).
- upsample: one input line (k_scan = 2, k_line = 1 in Eq. 1), replayed for
  its f output lines. Depth-to-space (pixel shuffle, factor f): an input line
  becomes f output lines at once and the consumer takes them one by one, so
  f − 1 output lines wait: (f − 1)/f of an input line.
- transposed conv: ceil(k/S) input lines (a window on the input grid).
- global pools and FC: one accumulating pixel; their output exists only after
  the whole input has streamed through.

Skips. A merge (add, mul, concat) input t whose producer another input depends
on is a skip; it is *short* if it spans at most `max_short_skip_layers` layers
in graph order, else *long*. A short skip stays on chip: t's buffer is the
larger of its consumers' line buffers and the merge's delay, D lines of t
(the sum of the long path's lookaheads) as D·(L_t + 1) pixels; the skip
buffer is what this adds to the line buffer (zero for SRGAN's two-3×3 blocks,
whose delay equals the first conv's (k−1)·L + (k−1) line buffer). A cut must
not split a short skip (the skip's source may end an earlier stack: it is then
read once from DRAM and the skip buffer is filled from it). A long skip goes through DRAM (sec. 6.1): t is written
once (unless already in DRAM) and read once more by the merge's stack.

DRAM per stack: every tensor read from outside the stack once (plus once per
long-skip read), every tensor leaving the stack (later stack, network output,
long skip) written once, the tile-boundary pixels of Eq. 3 (offloaded and
refetched: 2× for FMs made in the stack, 1× for stack inputs, already in DRAM),
and with `WeightPolicy.PER_STACK` the stack's parameters. Stacks run one after
another, so the network needs the largest stack's buffers, plus the whole model
with `WeightPolicy.ON_CHIP` (loaded once, no DRAM traffic per inference).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hwsim.mapping.depth_first.plan import DepthFirstError, DepthFirstLayout, StackPlan, WeightPolicy
from hwsim.vocab import ceil_div
from hwsim.workload.ir import SUPPORTED_BITS, Graph, Layer, LayerKind, Shape

__all__ = [
    "DepthFirstError",
    "WeightPolicy",
    "boundary_pixels",
    "depth_first_cost",
    "layer_by_layer_dram_bytes",
    "layer_by_layer_on_chip_bytes",
    "line_buffer_pixels",
]

_WINDOW_KINDS = frozenset({LayerKind.CONV, LayerKind.MAX_POOL, LayerKind.AVG_POOL})
_GLOBAL_KINDS = frozenset({LayerKind.GLOBAL_AVG_POOL, LayerKind.GLOBAL_MAX_POOL, LayerKind.FC})
_MERGE_KINDS = frozenset({LayerKind.ADD, LayerKind.MUL, LayerKind.CONCAT})
_SPECIAL_WINDOWS = _GLOBAL_KINDS | _MERGE_KINDS | frozenset(
    {LayerKind.CONV_TRANSPOSE, LayerKind.UPSAMPLE, LayerKind.DEPTH_TO_SPACE})
_NOT_COMPUTE = frozenset({LayerKind.INPUT, LayerKind.OUTPUT})
_FUSED_INTO_CONSUMER = frozenset(
    {LayerKind.ADD, LayerKind.MUL, LayerKind.UNARY, LayerKind.DEPTH_TO_SPACE, LayerKind.CHANNEL_SHUFFLE}
)


# ----- the paper's equations ------------------------------------------------------------------
def line_buffer_pixels(kernel_lines: int, kernel_pixels: int, line_pixels: int, tiling: int = 1,
                       overhead_pixels: int = 0) -> int:
    """Pixels a layer keeps of its input FM: Eq. 1, and Eq. 2 with tiling.

    Eq. 2: N_P = (k − 1)·ceil(L / TF) + (k − 1) + O, with L = min(W, H) the line
    length and O = (k − 1)·`overhead_pixels`: each of the k − 1 lines is that much
    longer for the widest tile (TF = 1, O = 0 is Eq. 1). A 1×1 window keeps one pixel.
    """
    if kernel_lines <= 1 and kernel_pixels <= 1:
        return 1
    lines = kernel_lines - 1
    return lines * math.ceil(line_pixels / tiling) + (kernel_pixels - 1) + lines * overhead_pixels


def boundary_pixels(tiling: int, boundary_length_pixels: int, kernel_pixels: int, stride_pixels: int) -> int:
    """Eq. 3: N_OlP = (TF − 1)·max(W, H)·max(0, k − S), pixels of an FM next to tile boundaries."""
    return (tiling - 1) * boundary_length_pixels * max(0, kernel_pixels - stride_pixels)


# ----- layer-by-layer lower bound (sec. 2.3) ----------------------------------------------------
def layer_by_layer_dram_bytes(graph: Graph, on_chip_bytes: int, bits: int = 8) -> int:
    """DRAM bytes per inference of the layer-by-layer lower bound with `on_chip_bytes` of memory.

    BW(M) = |network input| + |network output| + 2·Σ_i max(0, |FM_i| − M) over the
    intermediate FMs (offloaded as one layer's output, fetched as the next one's
    input). The paper's best case: every feature loaded at most once per layer,
    weights free (no DRAM, no on-chip memory), M filled with the last output and
    kept for the next layer, skip connections free, batch-norm and activations
    fused. So a tensor whose single consumer is an element-wise add/mul (as its
    last-produced input), a unary layer, depth-to-space or channel shuffle is
    fused into that consumer and is not an FM of its own.
    """
    if on_chip_bytes < 0:
        raise DepthFirstError(f"{graph.name}: on-chip memory {on_chip_bytes} B is negative; give M ≥ 0")
    io_bytes, fm_bytes = _layer_by_layer_sizes(graph, bits)
    return io_bytes + 2 * sum(max(0, fm - on_chip_bytes) for fm in fm_bytes)


def layer_by_layer_on_chip_bytes(graph: Graph, dram_bytes: int, bits: int = 8) -> int | None:
    """Smallest on-chip memory at which the layer-by-layer bound reaches `dram_bytes`; None if it never does."""
    io_bytes, fm_bytes = _layer_by_layer_sizes(graph, bits)
    if dram_bytes < io_bytes:
        return None
    low, high = 0, max(fm_bytes, default=0)
    while low < high:  # BW(M) is non-increasing in M
        mid = (low + high) // 2
        if io_bytes + 2 * sum(max(0, fm - mid) for fm in fm_bytes) <= dram_bytes:
            high = mid
        else:
            low = mid + 1
    return low


def _layer_by_layer_sizes(graph: Graph, bits: int) -> tuple[int, list[int]]:
    """(|network input| + |network output|, the intermediate FM sizes) in bytes."""
    _check_bits(graph, bits)
    outputs = {t for l in graph.outputs for t in l.inputs}
    io_elements = sum(l.out_shape.elements for l in graph.inputs)
    io_elements += sum(graph.producer(t).out_shape.elements for t in outputs)
    fms = []
    for layer in graph:
        if layer.kind in _NOT_COMPUTE or layer.output in outputs or _fused(graph, layer):
            continue
        fms.append(_to_bytes(layer.out_shape.elements, bits))
    return _to_bytes(io_elements, bits), fms


def _fused(graph: Graph, layer: Layer) -> bool:
    consumers = graph.consumers(layer.output)
    if len(consumers) != 1 or consumers[0].kind not in _FUSED_INTO_CONSUMER:
        return False
    last_input = max(consumers[0].inputs, key=lambda t: graph.layers.index(graph.producer(t)))
    return last_input == layer.output


# ----- depth-first stacks ---------------------------------------------------------------------
@dataclass(frozen=True)
class FeatureMapBuffer:
    """The on-chip buffer of one FM consumed inside a stack, and its tile-boundary traffic."""

    tensor: str
    channels: int
    line_pixels: int  # line length of the widest tile: ceil(L/TF) + overhead (L when untiled)
    line_buffer_pixels: int  # Eq. 1 / Eq. 2, the largest over the FM's consumers in the stack
    skip_buffer_pixels: int  # extra pixels a short skip's delay needs beyond the line buffer
    boundary_pixels: int  # Eq. 3
    on_chip_bytes: int


@dataclass(frozen=True)
class StackCost:
    """One depth-first stack: its layers, tiling, on-chip bytes and DRAM bytes per inference."""

    layers: tuple[str, ...]
    tiling: int
    buffers: tuple[FeatureMapBuffer, ...]
    line_buffer_bytes: int
    skip_buffer_bytes: int
    weight_bytes: int  # the stack's parameters
    on_chip_bytes: int  # line + skip buffers (+ weight_bytes with PER_STACK)
    dram_read_bytes: int  # stack inputs and long-skip reads
    dram_write_bytes: int  # tensors leaving the stack
    boundary_dram_bytes: int  # Eq. 3 offload and refetch
    weight_dram_bytes: int  # weight_bytes with PER_STACK, else 0
    dram_bytes: int


@dataclass(frozen=True)
class DepthFirstCost:
    """A whole network run as depth-first stacks."""

    stacks: tuple[StackCost, ...]
    weights: WeightPolicy
    model_bytes: int
    on_chip_bytes: int  # max over stacks (+ model_bytes with ON_CHIP)
    dram_bytes: int  # sum over stacks


@dataclass(frozen=True)
class _Window:
    k_scan: int
    k_line: int
    stride_line: int
    ahead_scan: float  # input lines beyond the output line's own position
    ahead_line: float
    line_share: float = 1.0  # fraction of a line each held line is (depth-to-space: (f − 1)/f)


def depth_first_cost(graph: Graph, layout: DepthFirstLayout, weights: WeightPolicy = WeightPolicy.ON_CHIP,
                     bits: int = 8) -> DepthFirstCost:
    """On-chip and DRAM bytes of `graph` run depth-first in the stacks of `layout` (a plan's data: its stacks,
    each stack's geometry and the skips through DRAM, as the mapper laid them out). See the module docstring for
    the model; errors name the layer and the fix."""
    _check_bits(graph, bits)
    costs = tuple(_stack_cost(graph, plan, weights, bits, layout.long_skips) for plan in layout.stacks)
    model_bytes = sum(l.param_bytes(bits) for l in graph)
    on_chip = max(c.on_chip_bytes for c in costs) + (model_bytes if weights is WeightPolicy.ON_CHIP else 0)
    return DepthFirstCost(costs, weights, model_bytes, on_chip, sum(c.dram_bytes for c in costs))


def _window(layer: Layer, scan_rows: bool) -> _Window:
    """The layer's window on its (first) input FM, oriented by the stack's scan axis."""
    ks, kl = (layer.kernel if scan_rows else layer.kernel[::-1])
    ss, sl = (layer.stride if scan_rows else layer.stride[::-1])
    ds, dl = (layer.dilation if scan_rows else layer.dilation[::-1])
    ps, pl = (layer.padding.top, layer.padding.left) if scan_rows else (layer.padding.left, layer.padding.top)
    if layer.kind in _WINDOW_KINDS:
        es, el = ds * (ks - 1) + 1, dl * (kl - 1) + 1
        return _Window(es, el, sl, max(0, es - 1 - ps), max(0, el - 1 - pl))
    if layer.kind is LayerKind.CONV_TRANSPOSE:
        return _Window(ceil_div(ks, ss), ceil_div(kl, sl), 1, ceil_div(ps, ss), ceil_div(pl, sl))
    if layer.kind is LayerKind.UPSAMPLE:  # an input line is replayed for f output lines
        return _Window(2, 1, 1, 0, 0)
    if layer.kind is LayerKind.DEPTH_TO_SPACE:  # the f − 1 output lines not yet consumed
        return _Window(2, 1, 1, 0, 0, (layer.factor[0] - 1) / layer.factor[0])
    if layer.kind in _GLOBAL_KINDS:
        scan = layer.in_shape.h if scan_rows else layer.in_shape.w
        return _Window(1, 1, 1, scan - 1, 0)
    return _Window(1, 1, 1, 0, 0)


@dataclass(frozen=True)
class _StackView:
    """A stack as the cost model reads it: orientation (lines along the shorter side of its first input,
    sec. 3.2), FM shapes, windows and the mapper's tiles."""

    graph: Graph
    stack: Sequence[Layer]
    long_skips: frozenset[tuple[str, str]]
    names: frozenset[str]
    ref: Shape  # the stack's first input
    scan_rows: bool
    shapes: dict[str, Shape]
    windows: dict[str, _Window]
    plan: StackPlan

    def scan(self, s: Shape) -> int:
        """Lines of an FM of shape s along the scan axis."""
        return s.h if self.scan_rows else s.w

    def on_chip_inputs(self, layer: Layer) -> list[str]:
        return [t for t in dict.fromkeys(layer.inputs) if (t, layer.name) not in self.long_skips]


def _stack_view(graph: Graph, plan: StackPlan, long_skips: frozenset[tuple[str, str]]) -> _StackView:
    stack = plan.layers
    ref = stack[0].in_shape
    scan_rows = ref.w <= ref.h
    shapes = {t: s for l in stack for t, s in zip(l.inputs, l.in_shapes)} | {l.output: l.out_shape for l in stack}
    return _StackView(graph, stack, long_skips, frozenset(l.name for l in stack), ref, scan_rows, shapes,
                      {l.name: _window(l, scan_rows) for l in stack}, plan)  # each FM's widest tile: Eq. 2's line


def _stack_cost(graph: Graph, plan: StackPlan, weights: WeightPolicy, bits: int,
                long_skips: frozenset[tuple[str, str]]) -> StackCost:
    """Buffers (Eqs. 1–2 and skip delays), DRAM traffic (stack I/O, long skips, Eq. 3) and weights of one stack."""
    stack, tiling = plan.layers, plan.tiling
    view = _stack_view(graph, plan, long_skips)
    ready = _first_lines(view)
    buffers = [_fm_buffer(view, t, ready, bits)
               for t in dict.fromkeys(t for l in stack for t in view.on_chip_inputs(l))]
    weight_bytes = sum(l.param_bytes(bits) for l in stack)
    per_stack = weights is WeightPolicy.PER_STACK
    skip_bytes = sum(_to_bytes(b.skip_buffer_pixels * b.channels, bits) for b in buffers)
    line_bytes = sum(b.on_chip_bytes for b in buffers) - skip_bytes
    read_b, write_b = _to_bytes(_read_elements(view), bits), _to_bytes(_write_elements(view), bits)
    edge_b = _to_bytes(_boundary_elements(view, buffers), bits)
    weight_dram = weight_bytes if per_stack else 0
    return StackCost(
        layers=tuple(l.name for l in stack), tiling=tiling, buffers=tuple(buffers),
        line_buffer_bytes=line_bytes, skip_buffer_bytes=skip_bytes, weight_bytes=weight_bytes,
        on_chip_bytes=line_bytes + skip_bytes + (weight_bytes if per_stack else 0),
        dram_read_bytes=read_b, dram_write_bytes=write_b, boundary_dram_bytes=edge_b,
        weight_dram_bytes=weight_dram, dram_bytes=read_b + write_b + edge_b + weight_dram)


def _first_lines(view: _StackView) -> dict[str, float]:
    """When each FM's first line exists, in lines of the stack's first input (the skip delays)."""
    ready: dict[str, float] = {}
    for layer in view.stack:
        w = view.windows[layer.name]
        ready[layer.output] = max((ready.get(t, 0.0) + w.ahead_scan * view.scan(view.ref) / view.scan(view.shapes[t])
                                   for t in view.on_chip_inputs(layer)), default=0.0)
    return ready


def _fm_buffer(view: _StackView, t: str, ready: dict[str, float], bits: int) -> FeatureMapBuffer:
    """The buffer of on-chip FM t: the largest line buffer over its consumers, the extra pixels a merge's
    delay needs, and its tile-boundary pixels (Eq. 3 summed over the boundaries)."""
    plan, s = view.plan, view.shapes[t]
    consumers = [c for c in view.graph.consumers(t) if c.name in view.names and (t, c.name) not in view.long_skips]
    line_px = plan.ring_width(t)
    lb_elements = max(_consumer_elements(plan, c, view.windows[c.name], t, line_px) for c in consumers)
    lb = ceil_div(lb_elements, s.c)
    delay_px = max((math.ceil((ready[c.output] - ready.get(t, 0.0)) * view.scan(s) / view.scan(view.ref)
                              * (line_px + 1) - 1e-9)
                    for c in consumers if c.kind in _MERGE_KINDS), default=0)
    skip = max(0, delay_px * s.c - lb_elements) // s.c
    edge = int(plan.overlaps(t).sum()) * view.scan(s)
    return FeatureMapBuffer(t, s.c, line_px, lb, skip, edge, _to_bytes(lb_elements + skip * s.c, bits))


def _write_elements(view: _StackView) -> int:
    """Elements of the tensors that leave the stack (consumed by later stacks or over long skips)."""
    writes = 0
    for layer in view.stack:
        leaves = any(c.name not in view.names or (layer.output, c.name) in view.long_skips
                     for c in view.graph.consumers(layer.output))
        writes += layer.out_shape.elements if leaves else 0
    return writes


def _read_elements(view: _StackView) -> int:
    """Elements read from DRAM: the stack's inputs from outside, plus every long-skip read."""
    reads = 0
    for t in dict.fromkeys(t for l in view.stack for t in l.inputs):
        consumers = [c for c in view.graph.consumers(t) if c.name in view.names]
        long_reads = sum((t, c.name) in view.long_skips for c in consumers)
        regular = view.graph.producer(t).name not in view.names and len(consumers) > long_reads
        reads += view.shapes[t].elements * (int(regular) + long_reads)
    return reads


def _boundary_elements(view: _StackView, buffers: list[FeatureMapBuffer]) -> int:
    """Eq. 3 traffic: boundary columns offloaded and fetched back (only fetched for an FM from outside)."""
    boundary = 0
    for b in buffers:
        copies = 2 if view.graph.producer(b.tensor).name in view.names else 1
        boundary += copies * b.boundary_pixels * b.channels
    return boundary


def _consumer_elements(plan: StackPlan, consumer: Layer, window: _Window, t: str, line_px: int) -> int:
    """Elements of t one consumer keeps: Eq. 1 on the ring row (Eq. 2 when tiled); for depth-to-space the
    f − 1 output lines that wait while the first is consumed (zero if they leave the stack at once)."""
    if consumer.kind is LayerKind.DEPTH_TO_SPACE:
        out = consumer.output
        f = consumer.factor[0 if plan.scan_rows else 1]
        return (f - 1) * plan.ring_width(out) * plan.channels[out] if out in plan.consumers else 0
    pixels = line_buffer_pixels(window.k_scan, window.k_line, line_px)
    if consumer.kind not in _SPECIAL_WINDOWS:
        scan_in, scan_out = plan.scan[t], plan.scan[consumer.output]
        if scan_in < window.k_scan + 1 or scan_out < 2:  # too few lines for Eq. 1's steady state
            lead = line_buffer_pixels(1, window.k_line, line_px)
            pixels = max(lines * line_px + (lead if swaps else 0)
                         for lines, swaps in _short_map_lines(plan, consumer, scan_in, scan_out))
    return pixels * plan.channels[t]


def _short_map_lines(plan: StackPlan, consumer: Layer, scan_in: int, scan_out: int) -> list[tuple[int, bool]]:
    """On a feature map with fewer lines than Eq. 1 assumes, per output line that takes in a new input line:
    (input lines held besides the new one's lead, whether it streams over a released line), from the
    window's line ranges: it holds lines first(y) … end(y + 1) − 1; it releases a line when first(y + 1) >
    first(y), and then the new line overwrites it and only its lead is extra."""
    m = plan.maps[consumer.name][0]
    y = np.arange(scan_out + 1, dtype=np.int64)
    first = np.append(m.first_array(y[:-1], scan_in), scan_in)
    end = m.end_array(y, scan_in)
    out = []
    for k in range(scan_out):
        if end[k + 1] > end[k]:  # a new input line arrives for this output line
            releases = bool(first[k + 1] > first[k])
            out.append((int(end[k + 1] - first[k]) - int(releases), releases))
    return out or [(0, False)]


def _check_bits(graph: Graph, bits: int) -> None:
    if bits not in SUPPORTED_BITS:
        raise DepthFirstError(f"{graph.name}: precision {bits} bit is not supported; use one of {SUPPORTED_BITS}")


def _to_bytes(elements: int, bits: int) -> int:
    """Bytes of `elements` values at `bits` each (bits already checked)."""
    return elements * bits // 8
