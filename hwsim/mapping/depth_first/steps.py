"""Step emission: one tile's events as a template of STEP_DTYPE steps whose words and addresses are
affine in per-tile quantities, evaluated tile by tile into the stack's step blocks."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from hwsim.hardware.schema import Accelerator
from hwsim.mapping.depth_first.events import Event, tile_events
from hwsim.mapping.depth_first.geometry import plan_stack
from hwsim.mapping.depth_first.plan import GLOBAL_KINDS, DepthFirstError, DepthFirstMapping, StackPlan, WeightPolicy
from hwsim.mapping.depth_first.stacks import long_skips, split_stacks
from hwsim.mapping.schedule import Schedule, StackInfo, Work
from hwsim.vocab import NO_LEVEL, STEP_DTYPE, Level, Operand, StepKind, ceil_div
from hwsim.workload.ir import Graph, Layer

DRAM_ALIGN_BYTES = 4096


def depth_first_schedule(graph: Graph, hw: Accelerator, mapping: DepthFirstMapping) -> Schedule:
    """One `Work` per stack; its steps run the stack's tiles one after another."""
    if hw.line_buffer is None:
        raise DepthFirstError(f"{hw.name}: has no line_buffer section; depth-first schedules need one "
                              "(see configs/depthfirst-edge.yaml)")
    stacks = split_stacks(graph, mapping.cuts)
    if len(mapping.tiling) != len(stacks):
        raise DepthFirstError(f"{graph.name}: {len(mapping.tiling)} tiling factors for {len(stacks)} stacks; "
                              "give one per stack")
    edges = long_skips(graph, stacks, mapping.max_short_skip_layers)
    layout = _DramLayout(graph, hw.word_bytes)
    units = []
    for stack, tf in zip(stacks, mapping.tiling):
        if not isinstance(tf, int) or tf < 1:
            raise DepthFirstError(f"{graph.name}: stack ending at layer {stack[-1].name!r} has tiling factor "
                                  f"{tf!r}; use an integer ≥ 1 (1 = no tiling)")
        plan = plan_stack(graph, stack, tf, edges)
        rings = tuple(plan.consumers)
        info = StackInfo(buffers=tuple(f"line_buffer.ring{k}" for k in range(len(rings))),
                         layers=tuple(l.name for l in stack), tiling=tf, weights=str(mapping.weights),
                         lines_along="width" if plan.scan_rows else "height", rings=rings,
                         ring_width_pixels=tuple((t, plan.ring_width(t)) for t in rings),
                         lead_pixels=tuple(plan.leads.items()))
        units.append(Work(stack[-1], info, _generator(plan, hw, mapping.weights, layout), stack=tuple(stack),
                          pipelined=False, word_bits=hw.precision_bits))  # rings are reused line by line
    return Schedule(graph.name, hw.name, "depth_first", 1, tuple(units))


class _DramLayout:
    """Word addresses in DRAM: every tensor, then per tensor a region for offloaded boundary columns."""

    def __init__(self, graph: Graph, word_bytes: int) -> None:
        self.base: dict[str, int] = {}
        self.boundary: dict[str, int] = {}
        align = DRAM_ALIGN_BYTES // word_bytes
        cursor = 0
        for l in graph:
            for table in (self.base, self.boundary):
                table[l.output] = cursor
                cursor += ceil_div(l.out_shape.elements, align) * align
        self.weights = cursor


def _generator(plan: StackPlan, hw: Accelerator, weights: WeightPolicy,
               layout: _DramLayout) -> Callable[[], Iterator[np.ndarray]]:
    """The stack's step blocks: its weights (per-stack policy), then its tiles, as many to a block as make some
    TILE_BLOCK_STEPS steps (a tile of a wide input is a few hundred steps: a block per tile would cost its numpy
    calls again and again)."""
    def generate() -> Iterator[np.ndarray]:
        template = _template(plan, hw, layout)
        start = 0
        if weights is WeightPolicy.PER_STACK:  # the stack's parameters, in GLB-sized pieces
            words = sum(l.params for l in plan.layers)
            glb_words = hw.glb.size_bytes // hw.word_bytes
            pieces = np.arange(0, words, glb_words)
            block = np.zeros(len(pieces), dtype=STEP_DTYPE)
            block["kind"], block["operand"] = StepKind.TRANSFER, Operand.FILTER
            block["src"], block["dst"] = Level.DRAM, Level.GLB
            block["words"] = np.minimum(glb_words, words - pieces)
            block["src_addr"] = layout.weights + pieces
            yield block
            start = 1
        per_block = max(1, TILE_BLOCK_STEPS // max(1, len(template.steps)))
        for first in range(0, plan.tiling, per_block):
            block = template.evaluate(first, min(plan.tiling, first + per_block))
            block["group"] += start
            yield block
    return generate


# A template step: the STEP_DTYPE fields, with words and addresses as const + coef · quantity[tile, ref].
_TEMPLATE_DTYPE = np.dtype([
    ("kind", np.uint8), ("operand", np.uint8), ("src", np.uint8), ("dst", np.uint8), ("group", np.int64),
    ("w_const", np.int64), ("w_coef", np.int64), ("w_ref", np.int32),
    ("s_const", np.int64), ("s_coef", np.int64), ("s_ref", np.int32),
    ("d_const", np.int64), ("d_coef", np.int64), ("d_ref", np.int32),
    ("macs_coef", np.int64), ("ops_coef", np.int64), ("x_ref", np.int32), ("active", np.int32),
])
ONE = 0  # quantity 0 is the constant 1
TILE_BLOCK_STEPS = 1 << 14  # steps a block of tiles holds at most (a longer tile is a block of its own)


class _Quantities:
    """Per-tile quantities a template refers to: widths, computed widths, overlaps, column starts."""

    def __init__(self, plan: StackPlan) -> None:
        self.plan = plan
        self.refs: dict[tuple[str, str], int] = {}
        self.columns: list[list[int]] = [[1] * plan.tiling]

    def ref(self, what: str, t: str) -> int:
        key = (what, t)
        if key not in self.refs:
            p, n = self.plan, self.plan.tiling
            values = {
                "width": [p.width(t, i) for i in range(n)],
                "computed": [p.computed(t, i) for i in range(n)],
                "overlap": [p.overlap(t, i) for i in range(n)],
                "overlap_next": [p.overlap(t, i + 1) if i + 1 < n else 0 for i in range(n)],
                "start": [p.starts[t][i] for i in range(n)],
                "bound": [p.bounds[t][i] for i in range(n)],
                "next_start": [p.starts[t][i + 1] if i + 1 < n else p.bounds[t][n] for i in range(n)],
            }[what]
            self.refs[key] = len(self.columns)
            self.columns.append(values)
        return self.refs[key]

    def table(self) -> np.ndarray:
        return np.array(self.columns, dtype=np.int64).T  # [tile, ref]


@dataclass(frozen=True)
class _Template:
    """A tile's steps with words, addresses and work as const + coef · quantities[tile, ref]."""

    steps: np.ndarray  # _TEMPLATE_DTYPE
    quantities: np.ndarray  # int64 [tile, ref]
    groups: int  # step groups per tile

    def evaluate(self, first: int, end: int) -> np.ndarray:
        """The steps of tiles first … end − 1, tile after tile, their groups numbered from the first tile's."""
        template, values = self.steps, self.quantities[first:end]  # values: [tile, ref]
        tiles, n = end - first, len(template)
        block = np.zeros(tiles * n, dtype=STEP_DTYPE)
        for name in ("kind", "operand", "src", "dst"):
            block[name] = np.tile(template[name], tiles)
        block["group"] = (template["group"] + (np.arange(first, end) * self.groups)[:, None]).ravel()
        block["words"] = (template["w_const"] + template["w_coef"] * values[:, template["w_ref"]]).ravel()
        block["src_addr"] = (template["s_const"] + template["s_coef"] * values[:, template["s_ref"]]).ravel()
        block["dst_addr"] = (template["d_const"] + template["d_coef"] * values[:, template["d_ref"]]).ravel()
        compute = template["kind"] == StepKind.COMPUTE
        columns = values[:, template["x_ref"]]
        macs = np.where(compute, template["macs_coef"] * columns, 0)
        block["macs"] = macs.ravel()
        block["ops"] = np.where(compute, template["ops_coef"] * columns, 0).ravel()
        block["active_pes"] = np.where(compute, np.minimum(template["active"], np.maximum(1, macs)), 0).ravel()
        for name in ("rf_filter_reads", "rf_ifmap_reads", "rf_psum_reads", "rf_psum_writes"):
            block[name] = block["macs"]  # a MAC reads a filter, an ifmap and a psum word and writes the psum
        idle = np.logical_not(columns[:, compute].any(axis=1))  # a tile with nothing to compute reads no weights
        if idle.any():
            weights = (template["operand"] == Operand.FILTER) & (template["src"] == Level.GLB)
            block["words"][(idle[:, None] & weights).ravel()] = 0
        return block


Affine = tuple[int, int, int]  # (const, coef, ref): const + coef · quantities[tile, ref]
ZERO: Affine = (0, 0, ONE)


def _template(plan: StackPlan, hw: Accelerator, layout: _DramLayout) -> _Template:
    """Build one tile's steps from its events: a step group per compute event, the stack-input loads
    that precede it at its head."""
    events = tile_events(plan)
    steps = _TileSteps(plan, hw, layout)
    pending_loads: list[Event] = []
    for ev in events:
        if ev.layer < 0:
            pending_loads.append(ev)
        else:
            steps.group_of(ev, pending_loads)
            pending_loads = []
    return steps.template()


class _TileSteps:
    """One tile's template steps, built group by group (`group_of`), in the order the group runs them."""

    def __init__(self, plan: StackPlan, hw: Accelerator, layout: _DramLayout) -> None:
        self.plan = plan
        self.layout = layout
        self.q = _Quantities(plan)
        self.rows: list[tuple[int, ...]] = []
        self.group = 0
        self.pes = hw.pe_array.rows * hw.pe_array.cols
        self.glb_words = hw.glb.size_bytes // hw.word_bytes
        self.ring_words = {t: plan.ring_width(t) * plan.channels[t] for t in plan.consumers}
        self.ring_id = {t: i for i, t in enumerate(plan.consumers)}  # ALLOC/FREE address: the ring's id

    def template(self) -> _Template:
        return _Template(np.array(self.rows, dtype=_TEMPLATE_DTYPE), self.q.table(), self.group)

    def group_of(self, ev: Event, pending_loads: list[Event]) -> None:
        """The step group of compute event `ev`, headed by the stack-input lines loaded before it."""
        layer = self.plan.layers[ev.layer]
        for p in [*pending_loads, ev]:
            for t, words in p.lead_alloc.items():
                self.ring_step(StepKind.ALLOC, Operand.IFMAP, t, words)
        self.load_lines(pending_loads)
        self.claim_output_rows(ev, layer.output)
        self.read_inputs(ev)
        self.stream_weights(layer)
        macs, ops = _work_per_column(layer, ev, self.plan)
        self.add(StepKind.COMPUTE, 0, NO_LEVEL, NO_LEVEL, macs=macs, ops=ops,
                 x_ref=self.q.ref("computed", layer.output), active=self.pes)
        self.write_output_rows(ev, layer.output)
        self.free_rows(ev)
        self.group += 1

    # ----- one step, and the affine pieces it is made of -------------------------------------------------
    def add(self, kind: int, operand: int, src: int, dst: int, words: Affine = ZERO, src_addr: Affine = ZERO,
            dst_addr: Affine = ZERO, macs: int = 0, ops: int = 0, x_ref: int = ONE, active: int = 0) -> None:
        self.rows.append((kind, operand, src, dst, self.group, *words, *src_addr, *dst_addr, macs, ops, x_ref,
                          active))

    def ring_step(self, kind: StepKind, operand: Operand, t: str, words: int) -> None:
        """ALLOC or FREE of `words` in ring t of the line buffer."""
        self.add(kind, operand, NO_LEVEL, Level.LINE_BUFFER, (words, 0, ONE), dst_addr=(self.ring_id[t], 0, ONE))

    def line(self, t: str, column: str) -> Affine:
        """Words of one line of t over the tile's columns named `column` ("width", "computed", "overlap", ...)."""
        return 0, self.plan.channels[t], self.q.ref(column, t)

    def row_addr(self, t: str, row: int, column: str, region: dict[str, int]) -> Affine:
        """DRAM address of line `row` of t in `region`, at the tile's column named `column`."""
        c = self.plan.channels[t]
        return region[t] + row * self.plan.line[t] * c, c, self.q.ref(column, t)

    # ----- the parts of a group, in order -------------------------------------------------------------------
    def load_lines(self, loads: list[Event]) -> None:
        """Stack-input lines DRAM -> line buffer (a row allocated unless it overwrites a released one)."""
        for p in loads:
            t = self.plan.external[-1 - p.layer]
            if not p.swapped_write:
                self.ring_step(StepKind.ALLOC, Operand.IFMAP, t, self.ring_words[t])
            src = self.row_addr(t, p.first_row, "start", self.layout.base)
            self.add(StepKind.TRANSFER, Operand.IFMAP, Level.DRAM, Level.LINE_BUFFER, self.line(t, "width"), src)

    def claim_output_rows(self, ev: Event, out: str) -> None:
        """Ring rows for the lines the event writes on chip, and their boundary columns fetched back from
        the tile before."""
        if out not in self.plan.consumers or not ev.rows:
            return
        whole = ev.rows - int(ev.swapped_write)
        if whole:
            self.ring_step(StepKind.ALLOC, Operand.OFMAP, out, whole * self.ring_words[out])
        if self.plan.overlaps(out).any():
            for j in range(ev.rows):
                src = self.row_addr(out, ev.first_row + j, "start", self.layout.boundary)
                self.add(StepKind.TRANSFER, Operand.IFMAP, Level.DRAM, Level.LINE_BUFFER, self.line(out, "overlap"),
                         src)

    def read_inputs(self, ev: Event) -> None:
        """Input windows line buffer -> array, and long-skip lines straight from DRAM."""
        channels = self.plan.channels
        for t, first, end in ev.reads:
            self.add(StepKind.TRANSFER, Operand.IFMAP, Level.LINE_BUFFER, Level.RF,
                     (0, (end - first) * channels[t], self.q.ref("width", t)))
        for t, first, end in ev.dram_reads:
            self.add(StepKind.TRANSFER, Operand.IFMAP, Level.DRAM, Level.RF,
                     (0, (end - first) * channels[t], self.q.ref("width", t)),
                     self.row_addr(t, first, "start", self.layout.base))

    def stream_weights(self, layer: Layer) -> None:
        """The layer's weights GLB -> array, in GLB-sized pieces."""
        for piece in range(0, layer.params, self.glb_words):
            self.add(StepKind.TRANSFER, Operand.FILTER, Level.GLB, Level.RF,
                     (min(self.glb_words, layer.params - piece), 0, ONE))

    def write_output_rows(self, ev: Event, out: str) -> None:
        """The computed line(s): to a ring with the boundary columns the next tile needs offloaded, and to
        DRAM if the FM leaves the stack."""
        plan, layout = self.plan, self.layout
        for row in range(ev.first_row, ev.first_row + ev.rows):
            if out in plan.consumers:
                self.add(StepKind.TRANSFER, Operand.OFMAP, Level.RF, Level.LINE_BUFFER, self.line(out, "computed"))
                if plan.tiling > 1:
                    self.add(StepKind.TRANSFER, Operand.OFMAP, Level.LINE_BUFFER, Level.DRAM,
                             self.line(out, "overlap_next"),
                             dst_addr=self.row_addr(out, row, "next_start", layout.boundary))
            if out in plan.leaving:
                self.add(StepKind.TRANSFER, Operand.OFMAP, Level.RF, Level.DRAM, self.line(out, "computed"),
                         dst_addr=self.row_addr(out, row, "bound", layout.base))

    def free_rows(self, ev: Event) -> None:
        """The input lines released (those swapped stay, overwritten in place) and the leads whose slot ends."""
        for t, lines in ev.released.items():
            whole = lines - ev.swapped_release.get(t, 0)
            if whole:
                self.ring_step(StepKind.FREE, Operand.IFMAP, t, whole * self.ring_words[t])
        for t, words in ev.lead_free.items():
            self.ring_step(StepKind.FREE, Operand.IFMAP, t, words)


def _work_per_column(layer: Layer, ev: Event, plan: StackPlan) -> tuple[int, int]:
    """(MACs, other ops) of the event per computed output column."""
    out = plan.scan[layer.output] * plan.line[layer.output]
    if layer.kind in GLOBAL_KINDS:  # one input line's share of the whole-map layer
        lines = max(plan.scan[t] for t in layer.inputs)
        return layer.macs // lines, layer.ops // lines
    per_pixel_macs, per_pixel_ops = layer.macs / out, layer.ops / out
    return round(per_pixel_macs * ev.rows), round(per_pixel_ops * ev.rows)
