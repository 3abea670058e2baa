"""Layers allocated to the cores of a multi-core accelerator: the allocation is data (`AllocationPlan`), each core
maps its part of a layer with its own dataflow's rules, and the schedule is a graph of works over the cores.

A layer runs on one core, or is split over several by output channels (a convolution without groups or a fully
connected layer: each core reads the whole ifmap, its slice of the filters, and writes its slice of the output
channels, which are contiguous in DRAM) or by output rows (a 2-D convolution: each core reads every filter and the
band of input rows its output rows' windows reach, the halo shared with the band above and below included, and
writes its rows of every channel; its tiles address the whole tensors, one channel a whole map apart). Bands of
rows may also share a core: its *tiles* of the layer, run one after another. `images` stream through the cores:
each image's layers are works of their own (one image per work, so a core's filters are fetched per image, as in
any layer pipeline), a core runs its works in image order, and a work waits for the works that produce what it
reads (through layers without steps: a reshape waits for nothing itself) — a band of rows reading its producer
directly only for the producer's bands holding the rows its windows reach, so a reader's tile runs while its
producer computes the next (depth first across cores). The works are listed depth first (`depth_first_order`).
Tensors pass between layers through the shared DRAM, where every image of a tensor has its own region
(`hwsim.mapping.layout`): two cores reading DRAM at once share its channels.

A tensor the plan lists as `forwarded` (by its producer) skips DRAM: its producer's stores (GLB → DRAM) push it
over the links into an *inbox* at the top of its readers' core's GLB, and their loads (DRAM → GLB or RF) take it
from there — fusion across cores, layer by layer or tile by tile. The inbox keeps the tensor's rows (all channels
of a row together): all of them, or for readers in tiles a line buffer (`inbox_rows`: the rows a reader tile
reads up to the end of the producer tile completing them, plus one producer tile), row r in slot r mod its rows,
a producer tile waiting for the reader tiles still reading the slots it overwrites. The producer's first tile
claims it (ALLOC) before its first step, the readers' last tile frees it after its last, and the producer's next
image waits for the readers of the one before (one image per inbox). Every layer on a core with inboxes is mapped
on a GLB smaller by their words, so its tiles and the inboxes never meet; a core whose GLB cannot hold them is an
error before any simulation. A tensor can be forwarded when its producer runs on one core (whole or in tiles)
that computes it directly (not as an im2col matrix, whose outputs leave the array for DRAM), its readers all run
on one other core and each is streamed and whole (an element-wise add may take one input from an inbox, the other
from DRAM) or a loop nest of that one input (not an im2col matrix the host lowers; whole or in tiles), the network
has one word and DRAM no compression.

Fixed rules make an allocation for comparison (`ALLOCATION_RULES`): `round_robin` (layer k on core k mod n),
`stages` (contiguous stages, one per core, balancing MACs per lane: a pipeline), `split` (every splittable layer
over all cores by output channels in proportion to their lanes; the rest on the core with the most lanes),
`split_rows` (every 2-D convolution over the cores that compute it directly, not as an im2col matrix, by output
rows in proportion to their lanes: each core reads the input rows its band's windows reach, the halo rows
shared with its neighbours read twice), `fused` (the stages; the layers at a boundary between cores in tiles, at
most `FUSED_TILES`, each at least as tall as its core's PE array is wide, producers' tiles aligned to their
readers' by `line_buffer_tiles`; and, in graph order, each forwardable tensor whose inbox keeps its readers'
core's inboxes within half that core's GLB data partition).
`hwsim.search.allocation` searches one under an objective.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import numpy as np

from hwsim.hardware.precision import layer_hardware
from hwsim.hardware.schema import Accelerator
from hwsim.hardware.tree import core_hardware
from hwsim.mapping.dataflows import dataflow_of
from hwsim.mapping.layout import DramLayout, dram_layout
from hwsim.mapping.mapper import NO_STEPS, check_layer, layer_mapping
from hwsim.mapping.nest.format import LayerMapping, LoopNest, MappingError, NetworkMapping
from hwsim.mapping.nest.problem import has_nest, lowering_for, nest_problem
from hwsim.mapping.plans import AllocationPlan, CorePart, Forward, PartMapping, part_tiles, work_name
from hwsim.mapping.schedule import Schedule, buffer_steps, on_core
from hwsim.sparsity.codec import Links
from hwsim.vocab import Level, Operand, StepKind
from hwsim.workload.ir import Graph, Layer, LayerKind

ALLOCATION_RULES = ("round_robin", "stages", "split", "split_rows", "fused")
FUSED_TILES = 4  # bands of rows the `fused` rule cuts a layer at a boundary between cores into, at most


@dataclass(frozen=True)
class WorkPart:
    """One work of an allocation: a layer's part (`layer`, renamed and with its share of the output channels or
    rows) on core `core` for image `image`, its first output channel `first_channel` (or row `first_row`, reading
    input rows from `first_input_row`) in the whole layer, its mapping, and the original layer it is part of."""

    whole: Layer
    layer: Layer
    core: int
    image: int
    first_channel: int
    entry: LayerMapping
    first_row: int = 0  # a part of output rows: its first output row, and its band's first input row
    first_input_row: int = 0
    tile: int | None = None  # its index among the bands of the layer its core computes, when it has several


def splittable(layer: Layer) -> bool:
    """Whether `layer` can be split by output channels (each slice's filters and outputs contiguous in DRAM)."""
    return (layer.kind is LayerKind.CONV and layer.groups == 1) or layer.kind is LayerKind.FC


def part_layer(layer: Layer, name: str, channels: int) -> Layer:
    """`layer` computing only `channels` of its output channels, named `name`."""
    return replace(layer, name=name, out_shape=layer.out_shape._replace(c=channels))


def row_splittable(layer: Layer) -> bool:
    """Whether `layer` can be split by output rows: a 2-D convolution (grouped or not) or fully connected layer
    over a map, each band reading the input rows its windows cover (the halo above and below it included)."""
    return layer.kind is LayerKind.CONV and layer.frames.kernel == 1 and layer.out_shape.d == 1 and \
        layer.out_shape.h > 1


def row_band(layer: Layer, name: str, first_row: int, rows: int) -> tuple[Layer, int]:
    """`layer` computing output rows first_row .. first_row + rows - 1, named `name`, and its band's first input
    row: the rows its windows reach (clipped to the input; the padding that was above or below the input stays
    where the band meets it)."""
    (stride, _), (dilation, _), kernel = layer.stride, layer.dilation, layer.kernel[0]
    height, pad = layer.in_shape.h, layer.padding
    start = first_row * stride - pad.top
    end = (first_row + rows - 1) * stride - pad.top + (kernel - 1) * dilation + 1
    top, bottom = max(0, -start), max(0, end - height)
    band = max(0, start), min(end, height)
    shape = layer.in_shape._replace(h=band[1] - band[0])
    return replace(layer, name=name, in_shapes=(shape,), out_shape=layer.out_shape._replace(h=rows),
                   padding=pad._replace(top=top, bottom=bottom)), band[0]


def _lanes(hw: Accelerator, core: int) -> int:
    view = core_hardware(hw, core)
    return view.pe_array.pes * view.pe_array.macs_per_cycle


def allocate(graph: Graph, hw: Accelerator, images: int, rule: str, tiles: int = 0) -> AllocationPlan:
    """The allocation fixed rule `rule` (one of ALLOCATION_RULES) makes for `images` images of `graph` on `hw`
    (`fused`: with `tiles` tiles per layer at a boundary between cores, 0 for its own choice)."""
    if rule not in ALLOCATION_RULES:
        raise MappingError(f"allocation rule {rule!r}; use one of {', '.join(ALLOCATION_RULES)} (or search)")
    names = [c.name for c in hw.all_cores]
    layers = [l for l in graph if l.kind not in NO_STEPS]
    lanes = [_lanes(hw, k) for k in range(len(names))]
    chosen: list[tuple[str, tuple[CorePart, ...]]]
    if rule == "round_robin":
        chosen = [(l.name, (CorePart(names[i % len(names)], 0),)) for i, l in enumerate(layers)]
    elif rule in ("stages", "fused"):
        stages = balanced_stages([max(1, l.macs) for l in layers], lanes)
        chosen = [(l.name, (CorePart(names[s], 0),)) for l, s in zip(layers, stages, strict=True)]
    elif rule == "split":
        widest = max(range(len(names)), key=lambda k: (lanes[k], -k))
        chosen = [(l.name, split_parts(l, names, lanes) if splittable(l) else (CorePart(names[widest], 0),))
                  for l in layers]
    else:  # split_rows: over the cores that do not lower convolutions to an im2col matrix
        direct = [k for k in range(len(names)) if dataflow_of(core_hardware(hw, k)).lowering != "im2col"] or [0]
        widest = max(direct, key=lambda k: (lanes[k], -k))
        chosen = [(l.name, row_parts(l, [names[k] for k in direct], [lanes[k] for k in direct])
                   if row_splittable(l) and len(direct) > 1 else (CorePart(names[widest], 0),)) for l in layers]
    plan = AllocationPlan(graph.name, hw.name, _input_shape(graph), images, rule, tuple(chosen))
    if rule != "fused":
        return plan
    plan = line_buffer_tiles(boundary_tiles(plan, graph, hw, tiles), graph, hw)
    return replace(plan, forwarded=fused_forwards(plan, graph, hw))


def boundary_tiles(plan: AllocationPlan, graph: Graph, hw: Accelerator, tiles: int = 0) -> AllocationPlan:
    """`plan` with every layer at a boundary between cores (whose output a layer on another core reads, or that
    reads one from another core) cut into bands of rows on its core, where it can be split by rows and its core
    computes it directly: a consumer's tile then starts once the rows it reads are there. `tiles` bands (at most
    one per row); 0: at most `FUSED_TILES`, each at least as many rows as its core's PE array has columns (a
    row-stationary array maps output rows across its columns: a shorter band leaves columns idle)."""
    home = {name: {p.core for p in parts} for name, parts in plan.layers}
    edge: set[str] = set()
    for layer in graph:
        for source in producers(graph, plan, layer) if plan.parts(layer.name) else ():
            if home[source] != home[layer.name]:
                edge |= {source, layer.name}
    layers = []
    for name, given in plan.layers:
        layer, parts = graph.layer(name), given
        if name in edge and len(parts) == 1 and row_splittable(layer) and not _lowers(layer, parts[0].core, hw):
            core = [c.name for c in hw.all_cores].index(parts[0].core)
            tall = max(1, layer.out_shape.h // core_hardware(hw, core).pe_array.cols)
            count = min(tiles, layer.out_shape.h) if tiles else min(FUSED_TILES, tall)
            rows = shares(layer.out_shape.h, [1] * count)
            parts = tuple(CorePart(parts[0].core, 0, r) for r in rows) if len(rows) > 1 else parts
        layers.append((name, parts))
    return replace(plan, layers=tuple(layers))


def line_buffer_tiles(plan: AllocationPlan, graph: Graph, hw: Accelerator) -> AllocationPlan:
    """`plan` with each producer (in graph order) whose readers, all on one other core, read it in tiles re-cut
    depth first: each producer tile ends where a reader tile's input rows end (it computes the rows that tile
    still needs), so its line buffer holds a reader tile's input rows and one producer tile; a producer and
    readers once re-cut stay so. (Shorter tiles would shrink the line buffer further, but cost a row-stationary
    array its columns and fetch the filters once more per tile: ResNet-18 on quad-eyeriss-mesh in 2-row tiles
    ran 1.37x longer and moved 16 % more DRAM bytes than its stages (batch 2); a plan can still give them.)"""
    readers, fixed = _readers(graph, plan), set[str]()
    for layer in graph:
        found = readers.get(layer.name, [])
        names = {layer.name, *(r.name for r in found)}
        if (not found or names & fixed or any(len(plan.parts(r.name)) == 1 for r in found)
                or not row_splittable(layer) or forward_problem(layer, found, plan, graph, hw)):
            continue
        plan, fixed = _aligned(plan, layer, found, len(plan.parts(found[0].name))), fixed | names
    return plan


def _aligned(plan: AllocationPlan, producer: Layer, readers: list[Layer], tiles: int) -> AllocationPlan:
    """`plan` with `readers` in `tiles` bands of rows each, on their core, and `producer` in tiles ending where
    the readers' tiles' input rows end (a tile that would be empty left out)."""
    cut: dict[str, tuple[CorePart, ...]] = {}
    ends = [0] * tiles
    for reader in readers:
        core, row = plan.parts(reader.name)[0].core, 0
        cut[reader.name] = tuple(CorePart(core, 0, r) for r in shares(reader.out_shape.h, [1] * tiles))
        for t, part in enumerate(cut[reader.name]):
            band, low = row_band(reader, reader.name, row, part.rows)
            ends[t] = max(ends[t], min(producer.out_shape.h, low + band.in_shape.h))
            row += part.rows
    bounds = sorted({0, *ends, producer.out_shape.h})
    core = plan.parts(producer.name)[0].core
    cut[producer.name] = tuple(CorePart(core, 0, b - a) for a, b in itertools.pairwise(bounds))
    return replace(plan, layers=tuple((n, cut.get(n, parts)) for n, parts in plan.layers))


def _input_shape(graph: Graph) -> tuple[int, int, int]:
    s = graph.layers[0].out_shape if graph.layers else None
    return (s.c, s.h, s.w) if s else (0, 0, 0)


def shares(total: int, lanes: list[int]) -> list[int]:
    """`total` in proportion to `lanes`, largest remainders first (ties to the earlier)."""
    share = np.array(lanes, dtype=np.float64) * total / sum(lanes)
    counts = np.floor(share).astype(np.int64)
    for k in np.argsort(-(share - counts), kind="stable")[:total - int(counts.sum())]:
        counts[k] += 1
    return [int(c) for c in counts.tolist()]


def split_parts(layer: Layer, names: list[str], lanes: list[int]) -> tuple[CorePart, ...]:
    """`layer`'s output channels over the cores in proportion to their lanes (a core left without a channel is
    left out)."""
    parts = tuple(CorePart(name, c) for name, c in zip(names, shares(layer.out_shape.c, lanes), strict=True) if c)
    return parts if len(parts) > 1 else (CorePart(parts[0].core, 0),)


def row_parts(layer: Layer, names: list[str], lanes: list[int]) -> tuple[CorePart, ...]:
    """`layer`'s output rows over the cores in proportion to their lanes (a core left without a row is left
    out)."""
    parts = tuple(CorePart(name, 0, r) for name, r in zip(names, shares(layer.out_shape.h, lanes), strict=True) if r)
    return parts if len(parts) > 1 else (CorePart(parts[0].core, 0),)


def balanced_stages(costs: list[int], lanes: list[int]) -> list[int]:
    """Contiguous stages of `costs` over the cores in order (core k gets a stage; a core may get none), minimising
    the slowest stage's cost per lane (a linear partition, by dynamic programming): the stage of each item."""
    n, cores = len(costs), len(lanes)
    prefix = np.concatenate([[0], np.cumsum(costs)]).tolist()
    inf = float("inf")
    best = [[inf] * (n + 1) for _ in range(cores + 1)]  # best[k][i]: the first i items on the first k cores
    cut = [[0] * (n + 1) for _ in range(cores + 1)]
    best[0][0] = 0.0
    for k in range(1, cores + 1):
        for i in range(n + 1):
            for j in range(i + 1):  # core k-1 takes items j .. i-1
                worst = max(best[k - 1][j], (prefix[i] - prefix[j]) / lanes[k - 1])
                if worst < best[k][i]:
                    best[k][i], cut[k][i] = worst, j
    stages, i = [0] * n, n
    for k in range(cores, 0, -1):
        j = cut[k][i]
        stages[j:i] = [k - 1] * (i - j)
        i = j
    return stages


def check_allocation(plan: AllocationPlan, graph: Graph, hw: Accelerator) -> None:
    """Raise MappingError, naming the field and the fix, when `plan` does not fit `graph` on `hw`: a layer left
    out or unknown, a core the accelerator does not have, a split of a layer that cannot be split or whose
    channels do not add up, or a part its core cannot run (its GLB or RFs too small)."""
    names = [c.name for c in hw.all_cores]
    stepped = [l.name for l in graph if l.kind not in NO_STEPS]
    given = dict(plan.layers)
    missing = [n for n in stepped if n not in given]
    if missing:
        raise MappingError(f"plan.layers: no core for layer {missing[0]!r}; allocate every layer with steps "
                           f"({len(missing)} missing)")
    unknown = sorted(set(given) - set(stepped))
    if unknown:
        raise MappingError(f"plan.layers.{unknown[0]}: not a layer with steps of {graph.name}; remove it")
    for name, parts in plan.layers:
        for part in parts:
            if part.core not in names:
                raise MappingError(f"plan.layers.{name}: core {part.core!r}; {hw.name} has {', '.join(names)}")
        if len(parts) == 1 and (parts[0].rows or parts[0].channels):
            layer = graph.layer(name)
            if parts[0].rows not in (0, layer.out_shape.h) or parts[0].channels not in (0, layer.out_shape.c):
                raise MappingError(f"plan.layers.{name}: one part computes the whole layer ({layer.out_shape.c} "
                                   f"channels, {layer.out_shape.h} rows); give the others to other cores")
        if len(parts) > 1 and any(p.rows for p in parts):
            layer = graph.layer(name)
            if not row_splittable(layer) or any(p.channels or not p.rows for p in parts):
                raise MappingError(f"plan.layers.{name}: a {layer.kind.value} layer is not split by output rows "
                                   "(only 2-D convolutions are), or its parts mix rows and channels; give it one "
                                   "core, or split it by channels")
            if sum(p.rows for p in parts) != layer.out_shape.h:
                raise MappingError(f"plan.layers.{name}: the parts' rows add up to {sum(p.rows for p in parts)} "
                                   f"over {len(parts)} parts; make them add up to the layer's {layer.out_shape.h} "
                                   "(a core may take several bands, its tiles)")
        elif len(parts) > 1:
            layer = graph.layer(name)
            if not splittable(layer):
                raise MappingError(f"plan.layers.{name}: a {layer.kind.value} layer"
                                   f"{' with groups' if layer.groups > 1 else ''} is not split by output channels; "
                                   "give it one core")
            if sum(p.channels for p in parts) != layer.out_shape.c or len({p.core for p in parts}) < len(parts):
                raise MappingError(f"plan.layers.{name}: the parts' channels add up to "
                                   f"{sum(p.channels for p in parts)} over {len(parts)} parts; give each core once, "
                                   f"the channels adding up to the layer's {layer.out_shape.c}")
    _part_entries(plan, graph, hw)  # every forwarded tensor can be, every part fits its core


@dataclass(frozen=True)
class _Entry:
    """A part of a layer as mapped: the whole layer, the part's layer, its core, where it starts (output channel,
    output row and input row) and the mapping its core's dataflow gives it for one image."""

    whole: Layer
    layer: Layer
    core: int
    first_channel: int
    first_row: int
    first_input_row: int
    entry: LayerMapping
    tile: int | None


def _part_entries(plan: AllocationPlan, graph: Graph, hw: Accelerator) -> tuple[_Entry, ...]:
    """Per part of every layer, in graph order, as mapped (checked: a part that does not fit its core, a band on
    a core that lowers convolutions to an im2col matrix, is an error); kept per plan unless the plan reads mapping
    files (they may change between two reads)."""
    return _mapped_parts(plan, graph, hw) if plan.mappings else _ruled_parts(plan, graph, hw)


@functools.lru_cache(maxsize=16)
def _ruled_parts(plan: AllocationPlan, graph: Graph, hw: Accelerator) -> tuple[_Entry, ...]:
    return _mapped_parts(plan, graph, hw)


def _mapped_parts(plan: AllocationPlan, graph: Graph, hw: Accelerator) -> tuple[_Entry, ...]:
    cores = {c.name: k for k, c in enumerate(hw.all_cores)}
    inboxes = inbox_words(forwards(plan, graph, hw), len(cores))
    out = []
    for layer in graph:
        parts = plan.parts(layer.name)
        channel = row = 0
        for part, tile in zip(parts, part_tiles(parts), strict=True):
            core = cores[part.core]
            name = work_name(layer.name, part.core, len(parts) > 1, 0, 1, tile)
            sub, input_row = layer, 0
            if part.rows and len(parts) > 1:
                sub, input_row = row_band(layer, name, row, part.rows)
            elif len(parts) > 1:
                sub = part_layer(layer, name, part.channels)
            view = mapped_view(hw, core, layer.word_bits, inboxes[core], layer.name)
            given = dict(plan.mappings).get(part.core)
            entry = _fitted(sub, view, layer.name, part.core) if given is None else _given(sub, view, given)
            if part.rows and isinstance(entry, LoopNest) and entry.lowering == "im2col":
                raise MappingError(f"plan.layers.{layer.name}: core {part.core} lowers it to an im2col matrix, which "
                                   "is not split by rows; split it by channels or give it to one core")
            out.append(_Entry(layer, sub, core, channel, row, input_row, entry, tile))
            channel, row = channel + part.channels, row + part.rows
    return tuple(out)


def inbox_words(sent: tuple[Forward, ...], cores: int) -> list[int]:
    """Per core, the words of the inboxes at the top of its GLB."""
    words = [0] * cores
    for f in sent:
        words[f.core] += f.inbox_words
    return words


def mapped_view(hw: Accelerator, core: int, word_bits: int | None, inbox: int, where: str) -> Accelerator:
    """Core `core` at `word_bits` as its layers are mapped: its GLB less `inbox` words (the inboxes above them)."""
    view = layer_hardware(core_hardware(hw, core), word_bits)
    if not inbox:
        return view
    glb = view.glb
    left = glb.size_bytes - inbox * view.word_bytes
    if left - glb.filter_bytes < view.word_bytes:
        raise MappingError(f"plan.layers.{where}: core {hw.all_cores[core].name}'s GLB ({glb.size_bytes // 1024} KiB, "
                           f"{glb.filter_bytes // 1024} KiB of it for filters) cannot hold the tensors forwarded to "
                           f"it ({inbox * view.word_bytes // 1024} KiB of inboxes); allocate their "
                           "readers to a core with a larger GLB, or take them out of plan.forwarded")
    return replace(view, glb=replace(glb, size_bytes=left))


def _readers(graph: Graph, plan: AllocationPlan) -> dict[str, list[Layer]]:
    """Per layer with steps, the layers with steps that read its output (through layers without steps)."""
    readers: dict[str, list[Layer]] = {}
    for layer in graph:
        if plan.parts(layer.name):
            for source in producers(graph, plan, layer):
                readers.setdefault(source, []).append(layer)
    return readers


def forward_problem(layer: Layer, readers: list[Layer], plan: AllocationPlan, graph: Graph,
                    hw: Accelerator) -> str:
    """Why `layer`'s output cannot be forwarded over the links ('' when it can: module docstring)."""
    parts = plan.parts(layer.name)
    if Links.of(hw).levels or _word_bytes(graph, hw) is not None:
        return "a run with DRAM compression or several words forwards nothing"
    if len({p.core for p in parts}) != 1:
        return "its producer is split over cores (forward the output of a layer one core computes, whole or in tiles)"
    if has_nest(layer) and _lowers(layer, parts[0].core, hw):
        return "its producer's core computes it as an im2col matrix, its outputs leaving the array for DRAM"
    homes = {p.core for r in readers for p in plan.parts(r.name)}
    if not readers or len(homes) != 1 or parts[0].core in homes:
        return "its readers do not all run on one other core"
    if not all(_reads_inbox(r, plan, hw) for r in readers):
        return "a reader is split over cores, or a loop nest reading an im2col matrix or several tensors"
    return ""


@functools.lru_cache(maxsize=16)
def forwards(plan: AllocationPlan, graph: Graph, hw: Accelerator) -> tuple[Forward, ...]:
    """The tensors `plan` forwards over the links (module docstring), each with its inbox; a tensor that cannot be
    forwarded is an error naming it."""
    cores = {c.name: k for k, c in enumerate(hw.all_cores)}
    readers = _readers(graph, plan)
    top = [core_hardware(hw, k).glb.size_bytes // hw.word_bytes for k in range(len(cores))]
    out = []
    for i, name in enumerate(plan.forwarded):
        if not plan.parts(name):
            raise MappingError(f"plan.forwarded[{i}]: {name!r} is not a layer with steps of {graph.name}")
        layer, found = graph.layer(name), readers.get(name, [])
        problem = forward_problem(layer, found, plan, graph, hw)
        if problem:
            raise MappingError(f"plan.forwarded[{i}]: {name}'s output cannot be forwarded: {problem}; remove it")
        core, rows = cores[plan.parts(found[0].name)[0].core], layer.out_shape.h * layer.out_shape.d
        ring = inbox_rows(layer, found, plan, graph)
        top[core] -= layer.out_shape.elements // rows * ring
        out.append(Forward(name, tuple(r.name for r in found), core, top[core], layer.out_shape.elements,
                           layer.out_shape.c, rows, ring))
    return tuple(out)


def inbox_rows(layer: Layer, readers: list[Layer], plan: AllocationPlan, graph: Graph) -> int:
    """Rows per channel of `layer`'s output its inbox holds at once: all of them when a reader reads it whole
    (or through a layer without steps); else a line buffer, as the depth-first and CSDF seeds size one: for
    every reader tile, the rows from its first input row to the end of the producer tile that completes its
    last, plus one producer tile more (so the producer computes its next tile while the reader reads)."""
    height = layer.out_shape.h * layer.out_shape.d
    ends = np.cumsum([p.rows or height for p in plan.parts(layer.name)]).tolist()
    step = max(b - a for a, b in zip([0, *ends[:-1]], ends, strict=True))
    spans = []
    for reader in readers:
        parts = plan.parts(reader.name)
        direct = any(graph.producer(t).name == layer.name for t in reader.inputs)
        if len(parts) == 1 or not direct or layer.out_shape.d != 1:
            return height
        row = 0
        for p in parts:
            band, low = row_band(reader, reader.name, row, p.rows)
            high = low + band.in_shape.h
            spans.append(next(e for e in ends if e >= high) - low)
            row += p.rows
    return int(min(height, max(spans) + step))


def fused_forwards(plan: AllocationPlan, graph: Graph, hw: Accelerator) -> tuple[str, ...]:
    """The producers the `fused` rule forwards: in graph order, each forwardable output whose inbox keeps its
    readers' core's inboxes within half that core's GLB data partition."""
    readers = _readers(graph, plan)
    room = [core_hardware(hw, k).glb.data_bytes // 2 for k in range(len(hw.all_cores))]
    cores = {c.name: k for k, c in enumerate(hw.all_cores)}
    chosen = []
    for layer in graph:
        found = readers.get(layer.name, [])
        if not plan.parts(layer.name) or forward_problem(layer, found, plan, graph, hw):
            continue
        ring = inbox_rows(layer, found, plan, graph)
        core = cores[plan.parts(found[0].name)[0].core]
        size = layer.out_shape.elements // (layer.out_shape.h * layer.out_shape.d) * ring * hw.word_bytes
        if size <= room[core]:
            room[core] -= size
            chosen.append(layer.name)
    return tuple(chosen)


def _reads_inbox(layer: Layer, plan: AllocationPlan, hw: Accelerator) -> bool:
    """Whether `layer` can read a forwarded input from an inbox: it runs on one core, and is streamed and whole
    (each input's pieces loaded from its own region) or a loop nest of one input read as it is (no im2col matrix),
    whole or in tiles."""
    parts = plan.parts(layer.name)
    if len({p.core for p in parts}) != 1:
        return False
    if not has_nest(layer):
        return len(parts) == 1
    return len(layer.inputs) == 1 and not _lowers(layer, parts[0].core, hw)


def _lowers(layer: Layer, core: str, hw: Accelerator) -> bool:
    """Whether core `core`'s dataflow computes `layer` on its im2col matrix (a systolic array, SCALE-Sim's way)."""
    view = core_hardware(hw, [c.name for c in hw.all_cores].index(core))
    return lowering_for(layer, dataflow_of(view).lowering) == "im2col"


def input_from(graph: Graph, plan: AllocationPlan, reader: Layer, producer: str) -> int:
    """The index of `reader`'s input that carries `producer`'s output (through layers without steps)."""
    for i, tensor in enumerate(reader.inputs):
        source = graph.producer(tensor)
        if source.name == producer or (not plan.parts(source.name) and producer in producers(graph, plan, source)):
            return i
    raise MappingError(f"{reader.name} reads nothing {producer} produces")


def _given(layer: Layer, hw: Accelerator, path: str) -> LayerMapping:
    """The entry for part `layer` in the mapping file at `path`, checked on its core `hw`."""
    from hwsim.mapping.nest.format import load_mapping

    try:
        entry = load_mapping(path).layer(layer.name)
        check_layer(NetworkMapping("", hw.name, hw.pe_array.dataflow, 1, (entry,)), layer, hw)
    except MappingError as exc:
        raise MappingError(f"plan.mappings: {path}: {exc}") from None
    return entry


@functools.lru_cache(maxsize=4096)
def _fitted(layer: Layer, hw: Accelerator, where: str, core: str) -> LayerMapping:
    """The rules' mapping of `layer` for one image on core `hw`, checked."""
    try:
        entry = layer_mapping(layer, hw, 1)
        check_layer(NetworkMapping("", hw.name, hw.pe_array.dataflow, 1, (entry,)), layer, hw)
    except MappingError as exc:
        raise MappingError(f"plan.layers.{where}: core {core} cannot run it ({hw.glb.size_bytes // 1024} KiB GLB, "
                           f"{hw.pe_array.rows}x{hw.pe_array.cols} PEs): {exc}; allocate it to a larger core or "
                           "split it over several") from None
    return entry


def part_mappings(plan: AllocationPlan, graph: Graph, hw: Accelerator) -> tuple[PartMapping, ...]:
    """Every part's mapping, in graph order (what a closed form prices)."""
    out = []
    for e in _part_entries(plan, graph, hw):
        by_rows = e.layer is not e.whole and e.layer.out_shape.h != e.whole.out_shape.h
        by_channels = e.layer is not e.whole and not by_rows
        out.append(PartMapping(e.whole.name, e.core, e.first_channel, e.layer.out_shape.c if by_channels else 0,
                               e.entry, e.first_row, e.layer.out_shape.h if by_rows else 0))
    return tuple(out)


def work_parts(plan: AllocationPlan, graph: Graph, hw: Accelerator) -> Iterator[WorkPart]:
    """The allocation's works in schedule order: image after image, each image's layers in graph order, each
    layer's parts in the plan's order."""
    entries = _part_entries(plan, graph, hw)
    for image in range(plan.images):
        for e in entries:
            name = work_name(e.whole.name, hw.all_cores[e.core].name, e.layer is not e.whole, image, plan.images,
                             e.tile)
            yield WorkPart(e.whole, replace(e.layer, name=name), e.core, image, e.first_channel, e.entry,
                           e.first_row, e.first_input_row, e.tile)


def producers(graph: Graph, plan: AllocationPlan, layer: Layer) -> tuple[str, ...]:
    """The layers with steps whose outputs `layer` reads, looking through layers without steps."""
    out: list[str] = []
    for tensor in layer.inputs:
        source = graph.producer(tensor)
        if plan.parts(source.name):
            out.append(source.name)
        elif source.kind is not LayerKind.INPUT:
            out.extend(producers(graph, plan, source))
    return tuple(dict.fromkeys(out))


def multicore_schedule(plan: AllocationPlan, graph: Graph, hw: Accelerator) -> Schedule:
    """The works of a checked allocation (module docstring), each on its core, waiting for the parts of its
    producers whose rows it reads, listed depth first."""
    from hwsim.mapping.nest_schedule import layer_work

    parts = list(work_parts(plan, graph, hw))
    entries = {(p.whole.name, p.first_channel, p.first_row): p.entry for p in parts if p.image == 0}
    layout = dram_layout(graph, plan.images, _lowered_words(graph, entries, plan.images), _word_bytes(graph, hw))
    sent = forwards(plan, graph, hw)
    inboxes = inbox_words(sent, len(hw.all_cores))
    pushes = {f.producer: f for f in sent}
    pulls: dict[str, list[Forward]] = {}
    for f in sent:
        for reader in f.consumers:
            pulls.setdefault(reader, []).append(f)
    index: dict[tuple[int, str], list[int]] = {}
    for k, part in enumerate(parts):
        index.setdefault((part.image, part.whole.name), []).append(k)
    works = []
    for k, part in enumerate(parts):
        name = part.whole.name
        after = [j for source in producers(graph, plan, part.whole) for j in index[(part.image, source)]
                 if reads_rows_of(graph, part, parts[j])]
        first, last = index[(part.image, name)][0] == k, index[(part.image, name)][-1] == k
        if name in pushes and part.image > 0 and first:  # its inbox is free once the image before is read
            after += [j for reader in pushes[name].consumers for j in index[(part.image - 1, reader)]]
        if name in pushes:  # a line buffer's slots are free once the rows they held are read
            after += _overwritten(pushes[name], part, [(j, parts[j]) for reader in pushes[name].consumers
                                                       for j in index[(part.image, reader)]])
        view = mapped_view(hw, part.core, part.whole.word_bits, inboxes[part.core], name)
        addr = layout[name]
        work = layer_work(part.layer, part.entry, view, image_layout(addr, part, plan.images))
        generate = on_core(work.generate, part.core)
        if name in pushes:
            generate = _pushed(generate, pushes[name], addr.ofmap + part.image * addr.ofmap_image_words, first)
        for f in pulls.get(name, ()):
            i = input_from(graph, plan, part.whole, f.producer)
            generate = _pulled(generate, f, addr.ifmap[i] + part.image * addr.ifmap_image_words[i],
                               last and name == f.consumers[-1])
        works.append(replace(work, generate=generate, core=part.core, after=tuple(dict.fromkeys(after)),
                             dram_regions=_whole_tensors(work.dram_regions, addr, part.image,
                                                         part.layer.out_shape.h != part.whole.out_shape.h)))
    order = depth_first_order([w.core for w in works], [w.after or () for w in works], [p.image for p in parts])
    if len(order) < len(works):
        raise MappingError(f"plan.forwarded: the works of {graph.name} wait for each other in a circle (a line "
                           "buffer too small for its readers' tiles); forward fewer tensors or cut fewer tiles")
    position = {k: i for i, k in enumerate(order)}
    listed = tuple(replace(works[k], after=tuple(sorted(position[j] for j in works[k].after or ()))) for k in order)
    return Schedule(graph.name, hw.name, "multicore", plan.images, listed)


def _overwritten(f: Forward, producer: WorkPart, readers: list[tuple[int, WorkPart]]) -> list[int]:
    """The reader works (index, part) whose rows producer tile `producer` overwrites in `f`'s line buffer: those
    reading a row `ring_rows` or more above its last (none when the inbox holds the whole tensor)."""
    if f.ring_rows == f.rows:
        return []
    freed = producer.first_row + producer.layer.out_shape.h - f.ring_rows
    return [j for j, r in readers if r.first_input_row < freed]


def reads_rows_of(graph: Graph, reader: WorkPart, producer: WorkPart) -> bool:
    """Whether work `reader` reads what work `producer` writes: a band of rows reading its producer's output
    directly reads the rows its windows reach (`first_input_row` on), so only a producer's band meeting them;
    any other reader reads all of it."""
    if reader.layer.out_shape.h == reader.whole.out_shape.h or producer.layer.out_shape.h == producer.whole.out_shape.h:
        return True
    if all(graph.producer(t).name != producer.whole.name for t in reader.whole.inputs):
        return True  # through layers without steps (a reshape, a concatenation): their rows are not its rows
    low, high = reader.first_input_row, reader.first_input_row + reader.layer.in_shape.h
    return producer.first_row < high and low < producer.first_row + producer.layer.out_shape.h


def depth_first_order(cores: list[int], after: list[tuple[int, ...]], images: list[int]) -> list[int]:
    """The works listed so that each follows what it waits for and each core keeps its works' order, choosing,
    among the works free to go next, one of the earliest image and, in it, the deepest (the latest in graph
    order): a consumer's tile comes right after the last producer tile it reads, before any other producer tile
    (so the schedule's order is the order data flows in, tile by tile, and every write listed before a read of
    the same words is one it waits for, directly or through its core's order). Works left waiting in a circle are
    left out."""
    import heapq

    waiting = [len(set(a)) for a in after]
    then: list[list[int]] = [[] for _ in after]
    last: dict[int, int] = {}
    for k, core in enumerate(cores):
        for j in set(after[k]):
            then[j].append(k)
        if core in last and last[core] not in after[k]:
            then[last[core]].append(k)
            waiting[k] += 1
        last[core] = k
    ready = [(images[k], -k) for k in range(len(cores)) if not waiting[k]]
    heapq.heapify(ready)
    order = []
    while ready:
        k = -heapq.heappop(ready)[1]
        order.append(k)
        for n in then[k]:
            waiting[n] -= 1
            if not waiting[n]:
                heapq.heappush(ready, (images[n], -n))
    return order


Blocks = Callable[[], Iterator[np.ndarray]]


def _inbox_step(kind: StepKind, f: Forward, group: int, core: int) -> np.ndarray:
    """An ALLOC or FREE of `f`'s inbox, by a work on core `core`."""
    step = buffer_steps(kind, Operand.OFMAP, Level.GLB, np.array([group]), np.array([f.inbox_words]),
                        np.array([f.inbox_word]))
    step["src_core"], step["dst_core"] = core, f.core
    return step


def _pushed(blocks: Blocks, f: Forward, base: int, claim: bool) -> Blocks:
    """A producer's steps with its inbox claimed first (by its first tile: `claim`) and its ofmap stores (GLB →
    DRAM, from word `base` of the tensor's DRAM image) going to the inbox on `f.core` instead (`into_inbox`)."""
    def steps() -> Iterator[np.ndarray]:
        claimed = not claim
        for block in blocks():
            if not len(block):
                continue
            if not claimed:
                claimed = True
                yield _inbox_step(StepKind.ALLOC, f, int(block["group"][0]), int(block["src_core"][0]))
            out = block.copy()
            store = ((out["kind"] == StepKind.TRANSFER) & (out["operand"] == Operand.OFMAP)
                     & (out["src"] == Level.GLB) & (out["dst"] == Level.DRAM))
            out["dst"][store] = Level.GLB
            out["dst_core"][store] = f.core
            yield into_inbox(out, store, "dst_addr", base, f)
    return steps


def _pulled(blocks: Blocks, f: Forward, base: int, last: bool) -> Blocks:
    """A reader's steps with its ifmap loads from the tensor's DRAM image (`f.words` words from word `base`) taken
    from the inbox in its own GLB instead (`into_inbox`); the last reader frees the inbox after its last step."""
    def steps() -> Iterator[np.ndarray]:
        group, core = -1, f.core
        for block in blocks():
            if not len(block):
                continue
            out = block.copy()
            load = ((out["kind"] == StepKind.TRANSFER) & (out["operand"] == Operand.IFMAP)
                    & (out["src"] == Level.DRAM) & (out["src_addr"] >= base) & (out["src_addr"] < base + f.words))
            out["src"][load] = Level.GLB
            group = int(out["group"][-1])
            yield into_inbox(out, load, "src_addr", base, f)
        if last and group >= 0:
            yield _inbox_step(StepKind.FREE, f, group, core)
    return steps


def into_inbox(block: np.ndarray, chosen: np.ndarray, field: str, base: int, f: Forward) -> np.ndarray:
    """`block` with the `chosen` transfers' `field` (their address in one image of `f`'s tensor, from `base`)
    moved into `f`'s inbox. The inbox keeps rows, as a line buffer does: row r of the tensor (all its channels,
    channel after channel, each `width` words) in slot r mod `ring_rows` (all rows: the whole tensor), so a
    tile's run of words (one span from its first, like a DRAM transfer's) stays in the rows it moves; a run
    passing the buffer's last slot goes on from its first, as a second transfer."""
    plane = f.words // f.channels
    width = plane // f.rows
    channel, within = np.divmod(block[field] - base, plane)
    row, column = np.divmod(within, width)
    at = ((row % f.ring_rows) * f.channels + channel) * width + column
    over = np.where(chosen, np.maximum(0, at + block["words"] - f.inbox_words), 0)
    block[field] = np.where(chosen, f.inbox_word + at, block[field])
    if not over.any():
        return block
    wraps = np.flatnonzero(over)
    rest = block[wraps].copy()
    kept = block["words"][wraps] - over[wraps]
    block["words"][wraps] = block["coded_words"][wraps] = kept
    other = "src_addr" if field == "dst_addr" else "dst_addr"
    rest[field], rest["words"], rest["coded_words"] = f.inbox_word, over[wraps], over[wraps]
    rest[other] += kept
    return np.insert(block, wraps + 1, rest)


def _whole_tensors(regions: tuple[tuple[int, int, int], ...], addr: DramLayout, image: int,
                   band: bool) -> tuple[tuple[int, int, int], ...]:
    """A part's DRAM regions with its tensors declared as its image's whole tensors: its consumers read its output
    whole, and a band of rows reads rows of every channel of its (one) input (a tensor's region is one, however
    many cores read or write parts of it)."""
    output = (addr.ofmap + image * addr.ofmap_image_words, addr.ofmap_image_words)
    ifmap = (addr.ifmap[0] + image * addr.ifmap_image_words[0], addr.ifmap_image_words[0])
    return tuple((op, *output) if op in (int(Operand.PSUM), int(Operand.OFMAP)) else
                 (op, *ifmap) if band and op == int(Operand.IFMAP) else (op, base, words)
                 for op, base, words in regions)


def image_layout(addr: DramLayout, part: WorkPart, images: int) -> DramLayout:
    """Where work `part` finds its tensors in the layout of `images` images: its image's slice of every activation
    tensor (and of a lowered ifmap matrix), the filters and output channels of its part."""
    whole, layer, image = part.whole, part.layer, part.image
    per_channel = whole.out_shape.elements // max(1, whole.out_shape.c)
    filters_per_channel = whole.weight_params // max(1, whole.out_shape.c)
    lowered = isinstance(part.entry, LoopNest) and part.entry.lowering == "im2col" and addr.lowered >= 0
    per_image_lowered = addr.lowered_words // images  # a part on a core that does not lower reads the ifmap
    ifmaps = tuple(b + image * w for b, w in zip(addr.ifmap, addr.ifmap_image_words, strict=True))
    ofmap = addr.ofmap + image * addr.ofmap_image_words + part.first_channel * per_channel
    rows = layer.out_shape.h != whole.out_shape.h  # a band of rows: its rows of every channel of the tensors
    if rows:
        ifmaps = (ifmaps[0] + part.first_input_row * whole.in_shape.w, *ifmaps[1:])
        ofmap += part.first_row * whole.out_shape.w
    return DramLayout(ifmaps, addr.ifmap_image_words, addr.filter + part.first_channel * filters_per_channel,
                      ofmap, layer.out_shape.elements, layer.weight_params,
                      addr.lowered + image * per_image_lowered if lowered else -1,
                      per_image_lowered if lowered else 0,
                      whole.in_shape.elements // whole.in_shape.c if rows else 0,
                      whole.out_shape.elements // whole.out_shape.c if rows else 0)


def _lowered_words(graph: Graph, entries: dict[tuple[str, int, int], LayerMapping], images: int) -> dict[str, int]:
    """Words of the im2col matrix (all images) of every layer some part of which is lowered."""
    lowered = {key[0] for key, e in entries.items() if isinstance(e, LoopNest) and e.lowering == "im2col"}
    out = {}
    for name in lowered:
        p = nest_problem(graph.layer(name), images, "im2col")
        out[name] = p.dims["G"] * p.dims["C"] * p.in_h * p.in_w
    return out


def _word_bytes(graph: Graph, hw: Accelerator) -> dict[str, int] | None:
    """Each layer's word in bytes when the layers run at different words (None: one word)."""
    views = {l.name: layer_hardware(hw, l.word_bits).word_bytes for l in graph}
    return views if len(set(views.values())) > 1 else None


__all__ = [
    "ALLOCATION_RULES",
    "WorkPart",
    "allocate",
    "balanced_stages",
    "boundary_tiles",
    "check_allocation",
    "depth_first_order",
    "forward_problem",
    "forwards",
    "fused_forwards",
    "image_layout",
    "inbox_rows",
    "inbox_words",
    "input_from",
    "into_inbox",
    "line_buffer_tiles",
    "mapped_view",
    "multicore_schedule",
    "part_layer",
    "part_mappings",
    "producers",
    "reads_rows_of",
    "split_parts",
    "splittable",
    "work_parts",
]
