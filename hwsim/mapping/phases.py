"""Layers executed in phases (Minakova & Stefanov): each phase of a layer produces a band of output rows
from the input rows it needs, so the buffers between layers hold bands instead of whole tensors.

Phase counts (`derive_phases`):

- `thesis` (thesis Algorithm 3): a layer whose window covers its whole input
  (fully connected, global pools) runs in one phase; every other layer in one
  phase per output row. Network inputs produce one row per phase; network
  outputs take their tensor in one phase.
- `paper` (DSD'20 paper Algorithm 1, lines 9–12): with hpad = pad_top +
  pad_bottom, one phase if (s ≥ k and hpad = 0) or k = H_in, else
  (H_in + hpad − max(k, s)) / s + 1 phases; layers without a window
  (element-wise, resize) run in one phase.

Phase p of a layer with P phases produces output rows ⌊p·H/P⌋ … ⌊(p+1)·H/P⌋.
On each input edge it needs the input rows the layer's window reaches for
those outputs (`read_first` … `need_end`); after it, rows below the next
phase's first row are released (`release_to`); the last phase needs and
releases every row, so a phase sequence consumes exactly what was produced.

`firing_order` is demand-driven: to fire a layer's next phase, first fire its
producers until its inputs hold the rows it needs, deepest layer first,
pulled from the network outputs. On the paper's example this is its Ex4
order n1(1–17), n2₁, [n1(18–22), n2(2–6)], n3₁, …

`phased_schedule` turns a phased execution into a `Schedule` for the
simulator: every edge has its own buffer (in the L2, or in DRAM when so
placed) whose rows are allocated when produced and freed when released; a
phase reads its input rows into the GLB, computes its share of the layer's
MACs on the PE array and writes its output rows to each consumer's buffer.
Weights are not moved (the memory study is about the intermediate tensors).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

from hwsim.errors import HwsimError
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.depth_first import GLOBAL_KINDS, WINDOW_KINDS, axis_maps
from hwsim.mapping.phased import Edge, PhasedGraph, PhasedLayer
from hwsim.mapping.schedule import PhasedInfo, Schedule, Work, empty_steps
from hwsim.vocab import Level, Operand, StepKind
from hwsim.workload.ir import Graph, Layer, LayerKind

PHASE_RULES = ("thesis", "paper")
STEPS_PER_BLOCK = 8192  # steps gathered into one numpy block


def graph_edges(graph: Graph) -> tuple[Edge, ...]:
    """Every (producer, consumer input) pair, by consumer then port."""
    index = {l.name: i for i, l in enumerate(graph.layers)}
    edges = []
    for j, layer in enumerate(graph.layers):
        for port, tensor in enumerate(layer.inputs):
            producer = graph.producer(tensor)
            shape = producer.out_shape
            suffix = f":{port}" if port else ""
            edges.append(Edge(index[producer.name], j, port, shape.h, shape.w * shape.c,
                              f"{producer.name}->{layer.name}{suffix}"))
    return tuple(edges)


def _whole_input(layer: Layer) -> bool:
    """The layer's window covers its whole input (one phase, thesis Algorithm 3 line 3)."""
    return layer.kind in GLOBAL_KINDS or layer.kind is LayerKind.OUTPUT or (
        layer.kind in WINDOW_KINDS and (layer.kernel[0] - 1) * layer.dilation[0] + 1 >= layer.in_shape.h
        and layer.out_shape.h == 1)


def layer_phases(layer: Layer, rule: str) -> int:
    """Phases of one layer under `rule` (see the module docstring)."""
    out_rows = layer.out_shape.h
    if layer.kind is LayerKind.INPUT:
        return out_rows
    if _whole_input(layer) or not _row_aligned(layer):
        return 1
    if rule == "thesis":
        return out_rows
    if rule != "paper":
        raise HwsimError(f"phase rule {rule!r}: use one of {', '.join(PHASE_RULES)}")
    if layer.kind not in WINDOW_KINDS:
        return 1
    k = (layer.kernel[0] - 1) * layer.dilation[0] + 1
    s = layer.stride[0]
    hpad = layer.padding.top + layer.padding.bottom
    h_in = layer.in_shape.h
    if (s >= k and hpad == 0) or k == h_in:
        return 1
    return min(out_rows, (h_in + hpad - max(k, s)) // s + 1)


def _row_aligned(layer: Layer) -> bool:
    """Every input maps to output rows by a window, a resize or a broadcast (a whole-row dependence)."""
    if layer.kind in WINDOW_KINDS or layer.kind in (LayerKind.CONV_TRANSPOSE, LayerKind.UPSAMPLE,
                                                     LayerKind.DEPTH_TO_SPACE):
        return True
    return all(s.h in (1, layer.out_shape.h) for s in layer.in_shapes)


def derive_phases(graph: Graph, rule: str = "thesis") -> dict[str, int]:
    """The number of phases of every layer (thesis Algorithm 3 or paper Algorithm 1)."""
    if rule not in PHASE_RULES:
        raise HwsimError(f"phase rule {rule!r}: use one of {', '.join(PHASE_RULES)}")
    return {l.name: layer_phases(l, rule) for l in graph.layers}


def phased_layer(layer: Layer, phases: int) -> PhasedLayer:
    """Row bands of `layer` run in `phases` phases."""
    out_rows = layer.out_shape.h
    bounds = (np.arange(phases + 1, dtype=np.int64) * out_rows) // phases
    row_map = axis_maps(layer, True)[0]
    firsts, ends, releases = [], [], []
    for shape in layer.in_shapes:
        h_in = shape.h
        if layer.kind is LayerKind.OUTPUT or phases == 1:
            first = np.zeros(phases, dtype=np.int64)
            end = np.full(phases, h_in, dtype=np.int64)
        elif h_in == 1 and out_rows > 1 and layer.kind not in WINDOW_KINDS:  # a broadcast row, read by every phase
            first = np.zeros(phases, dtype=np.int64)
            end = np.ones(phases, dtype=np.int64)
        else:
            first = row_map.first_array(bounds[:-1], h_in).astype(np.int64)
            end = np.array([row_map.end(int(b), h_in) for b in bounds[1:]], dtype=np.int64)
        end = np.maximum.accumulate(end)
        end[-1] = h_in
        release = np.minimum(end, np.append(first[1:], h_in))
        release = np.maximum.accumulate(release)
        release[-1] = h_in
        firsts.append(np.minimum(first, end))
        ends.append(end)
        releases.append(release)
    return PhasedLayer(phases, bounds, tuple(firsts), tuple(ends), tuple(releases))


def phased_graph(graph: Graph, phases: Mapping[str, int]) -> PhasedGraph:
    """`graph` with the given phases per layer (e.g. `derive_phases`, or 1 everywhere)."""
    layers = []
    for layer in graph.layers:
        p = int(phases[layer.name])
        if not 1 <= p <= max(1, layer.out_shape.h):
            raise HwsimError(f"{layer.name}: {p} phases for {layer.out_shape.h} output rows; give 1 to "
                             f"{layer.out_shape.h}")
        layers.append(phased_layer(layer, p))
    return PhasedGraph(graph, dict(phases), graph_edges(graph), tuple(layers))


# ----- the schedule ----------------------------------------------------------------------------------


def phased_schedule(pg: PhasedGraph, hw: Accelerator, levels: Mapping[int, Level] | None = None,
                    name: str = "csdf_phases") -> Schedule:
    """The phases in firing order as one sequential step stream (one group per phase); edge buffer e lives
    in `levels[e]` (default L2), its ALLOC/FREE steps carry e as their buffer id."""
    placement = {e: (levels or {}).get(e, Level.L2) for e in range(len(pg.edges))}
    glb_words = max(1, hw.glb.data_bytes // hw.word_bytes)
    order = pg.firing_order()
    layers = pg.graph.layers
    buffer_names = tuple(f"{placement[e].name.lower()}.{edge.name}" for e, edge in enumerate(pg.edges))

    def generate() -> Iterator[np.ndarray]:
        fired = [0] * len(layers)
        rows: list[tuple[int, ...]] = []
        for group, j in enumerate(order.tolist()):
            p = fired[j]
            fired[j] += 1
            rows.extend(_phase_steps(pg, j, p, group, placement, glb_words, hw.pe_array.pes))
            if len(rows) >= STEPS_PER_BLOCK:
                yield steps_block(rows)
                rows = []
        if rows:
            yield steps_block(rows)

    info = PhasedInfo(buffers=buffer_names, phases=tuple(pg.phases.items()), firings=len(order),
                      edges=tuple(e.name for e in pg.edges))
    stack = Work(layers[0], info, generate, stack=tuple(layers), pipelined=False, word_bits=hw.precision_bits)
    return Schedule(pg.graph.name, hw.name, name, 1, (stack,))


STEP_FIELDS = ("kind", "operand", "src", "dst", "group", "words", "src_addr", "dst_addr", "active_pes", "macs", "ops")


def steps_block(rows: list[tuple[int, ...]]) -> np.ndarray:
    table = np.array(rows, dtype=np.int64)
    block = empty_steps(len(table))
    for k, name in enumerate(STEP_FIELDS):
        block[name] = table[:, k]
    return block


def chunk_words(words: int, limit: int) -> list[int]:
    """`words` split into transfers of at most `limit` words (what the GLB holds at once)."""
    full, rest = divmod(words, limit)
    return [limit] * full + ([rest] if rest else [])


def _phase_steps(pg: PhasedGraph, j: int, p: int, group: int, placement: Mapping[int, Level],
                 glb_words: int, pes: int) -> list[tuple[int, ...]]:
    """The steps of phase p of layer j: reads of its input rows, its pass, frees, allocations, writes."""
    layer = pg.graph.layers[j]
    pl = pg.layers[j]
    steps: list[tuple[int, ...]] = []
    none = 255
    for e in pg.inputs_of[j]:
        edge = pg.edges[e]
        rows = int(pl.need_end[edge.port][p] - pl.read_first[edge.port][p])
        for words in chunk_words(rows * edge.row_elements, glb_words):
            steps.append((StepKind.TRANSFER, Operand.IFMAP, placement[e], Level.GLB, group, words, 0, 0, 0, 0, 0))
    out_rows = int(pl.out_bounds[p + 1] - pl.out_bounds[p])
    h_out = max(1, layer.out_shape.h)
    macs = layer.macs * out_rows // h_out
    ops = layer.ops * out_rows // h_out
    if layer.kind is LayerKind.INPUT:  # the image arrives from DRAM
        for e in pg.outputs_of[j]:
            steps.append((StepKind.ALLOC, Operand.OFMAP, none, placement[e], group,
                          out_rows * pg.edges[e].row_elements, -1, e, 0, 0, 0))
            if placement[e] != Level.DRAM:
                steps.append((StepKind.TRANSFER, Operand.OFMAP, Level.DRAM, placement[e], group,
                              out_rows * pg.edges[e].row_elements, 0, 0, 0, 0, 0))
        return steps
    steps.append((StepKind.COMPUTE, Operand.IFMAP, none, none, group, 0, 0, 0, pes, macs, ops))
    for e in pg.inputs_of[j]:
        edge = pg.edges[e]
        before = int(pl.release_to[edge.port][p - 1]) if p else 0
        freed = int(pl.release_to[edge.port][p]) - before
        if freed:
            steps.append((StepKind.FREE, Operand.IFMAP, none, placement[e], group, freed * edge.row_elements,
                          -1, e, 0, 0, 0))
    for e in pg.outputs_of[j]:
        words = out_rows * pg.edges[e].row_elements
        if words:
            steps.append((StepKind.ALLOC, Operand.OFMAP, none, placement[e], group, words, -1, e, 0, 0, 0))
            for chunk in chunk_words(words, glb_words):
                steps.append((StepKind.TRANSFER, Operand.OFMAP, Level.GLB, placement[e], group, chunk, 0, 0,
                              0, 0, 0))
    if layer.kind is LayerKind.OUTPUT:  # the result leaves for DRAM
        for chunk in chunk_words(layer.in_shape.elements, glb_words):
            steps.append((StepKind.TRANSFER, Operand.OFMAP, Level.GLB, Level.DRAM, group, chunk, 0, 0, 0, 0, 0))
    return steps

