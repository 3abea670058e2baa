"""The Schedule IR: what a mapper decided, as data the simulator and the analytic models both read.

A `Schedule` is a graph of units of work (`Work`: a layer, or a stack of
layers run together, on one core, with the works it waits for, `after`, and
the word it runs at), each an ordered stream of *steps*, produced lazily in
numpy blocks (a 4K depth-first layer has millions of steps; they are never
Python objects). A step's per-core ends (GLB, line buffer, RF, PE array) are
on the cores `src_core` and `dst_core` name: the work's own, or another core's
for a transfer over the link between them; the L2 and DRAM are shared. What a
mapper decided for a work is typed data (`WorkInfo` and its kinds), kept in
the trace. Every step is one row of `STEP_DTYPE`:

- TRANSFER: `words` of `operand` move from level `src` to level `dst`
  (DRAM, L2, GLB, line buffer, RF; GLB↔RF transfers ride the NoC), starting
  at word addresses `src_addr` / `dst_addr`; at an end that keeps tiles coded
  (`hwsim.sparsity.codec.Links`) they take `coded_words` (set by the mapper;
  `set_transfers` makes it `words`). Moving a psum from a child
  level up to its parent is an *update* at the parent, any other write a
  *fill* (Timeloop's vocabulary, see `access_kind`).
- COMPUTE: one processing pass on the PE array: `active_pes`, `macs` and
  non-MAC `ops` (pooling comparisons, element-wise adds), the RF accesses per
  operand and the psum words forwarded between neighbouring PEs.
- ALLOC / FREE: `words` of space claimed or released in level `dst` for
  `operand` (buffer occupancy, the unit a tile cannot be fetched without).

`group` numbers the processing passes of a layer. The execution contract:
a COMPUTE of group g waits for every earlier step of group g; the steps of
group g+1 that precede its COMPUTE (its loads) may run while group g
computes when the hardware double-buffers and its ALLOC fits; steps after a
COMPUTE in the same group (its stores) may overlap later groups. Steps of
the same group keep their order on the level they use. A layer schedule that
is not `pipelined` runs its groups strictly one after another (a group's
loads start when the previous group's stores have ended; its stores one after
another): there nothing waits for space, so an allocation that does not fit
is an impossible mapping.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from hwsim.mapping.nest.format import NetworkMapping
from hwsim.vocab import NO_LEVEL, STEP_DTYPE, Access, Level, Operand, StepKind
from hwsim.workload.ir import Layer


def empty_steps(n: int) -> np.ndarray:
    """A zeroed block of `n` steps with src/dst set to NO_LEVEL."""
    block = np.zeros(n, dtype=STEP_DTYPE)
    block["src"] = NO_LEVEL
    block["dst"] = NO_LEVEL
    return block


def set_transfers(view: np.ndarray, operand: Operand, src: Level, dst: Level, group: np.ndarray | int,
                  words: np.ndarray | int, src_addr: np.ndarray | int, dst_addr: np.ndarray | int) -> None:
    """Fill a (possibly 2-D) view of steps as TRANSFERs; the arguments broadcast."""
    view["kind"] = StepKind.TRANSFER
    view["operand"] = operand
    view["src"] = src
    view["dst"] = dst
    view["group"] = group
    view["words"] = words
    view["coded_words"] = words
    view["src_addr"] = src_addr
    view["dst_addr"] = dst_addr


def transfers(operand: Operand, src: Level, dst: Level, group: np.ndarray, words: np.ndarray,
              src_addr: np.ndarray, dst_addr: np.ndarray) -> np.ndarray:
    """A block of TRANSFER steps, one per element of the (equal-length) arrays."""
    block = empty_steps(len(words))
    set_transfers(block, operand, src, dst, group, words, src_addr, dst_addr)
    return block


def buffer_steps(kind: StepKind, operand: Operand, level: Level, group: np.ndarray, words: np.ndarray,
                 addr: np.ndarray) -> np.ndarray:
    """A block of ALLOC or FREE steps in `level`."""
    block = empty_steps(len(words))
    block["kind"] = kind
    block["operand"] = operand
    block["dst"] = level
    block["group"] = group
    block["words"] = words
    block["dst_addr"] = addr
    return block


def access_kind(operand: Operand, src: Level, dst: Level) -> tuple[Access, Access]:
    """(access at src, access at dst) of a transfer: psums moving outwards update their parent."""
    outward = dst < src
    if operand in (Operand.PSUM, Operand.OFMAP) and outward:
        return Access.READ, Access.UPDATE
    return Access.READ, Access.FILL


@dataclass(frozen=True)
class WorkInfo:
    """What a mapper decided for one unit of work, as typed data for reports and the trace (`record`); `buffers`
    names the buffer ids its ALLOC/FREE steps carry (id k is `buffers[k]`)."""

    buffers: tuple[str, ...] = ()

    def record(self) -> dict[str, object]:
        """The decisions as plain data (the trace's `schedule_json`)."""
        return {"mapping": "none"}


@dataclass(frozen=True)
class StreamInfo(WorkInfo):
    """A layer without a loop nest, streamed in `tiles` pieces."""

    tiles: int = 1

    def record(self) -> dict[str, object]:
        return {"mapping": "stream", "tiles": self.tiles}


@dataclass(frozen=True)
class NestInfo(WorkInfo):
    """A loop nest's loops per storage level (outer to inner, as written), on the array and in the RFs."""

    lowering: str = "conv"
    storage: tuple[tuple[str, str], ...] = ()  # (level, loops)
    array_rows: tuple[str, ...] = ()
    array_cols: tuple[str, ...] = ()
    array_stream: tuple[str, ...] = ()
    rf: str = ""

    def record(self) -> dict[str, object]:
        return {"mapping": "nest", "lowering": self.lowering, **dict(self.storage),
                "array": {"rows": list(self.array_rows), "cols": list(self.array_cols),
                          "stream": list(self.array_stream)},
                "rf": self.rf, **({"buffers": self.buffers} if self.buffers else {})}


@dataclass(frozen=True)
class StackInfo(WorkInfo):
    """A depth-first stack: its layers, tiling factor, weight policy, line orientation and rings (the tensors its
    line buffers hold, id k = `buffers[k]`), each ring's row width and lead."""

    layers: tuple[str, ...] = ()
    tiling: int = 1
    weights: str = ""
    lines_along: str = ""
    rings: tuple[str, ...] = ()
    ring_width_pixels: tuple[tuple[str, int], ...] = ()
    lead_pixels: tuple[tuple[str, int], ...] = ()

    def record(self) -> dict[str, object]:
        return {"layers": list(self.layers), "tiling": self.tiling, "weights": self.weights,
                "lines_along": self.lines_along, "rings": list(self.rings),
                "ring_width_pixels": dict(self.ring_width_pixels), "lead_pixels": dict(self.lead_pixels)}


@dataclass(frozen=True)
class PhasedInfo(WorkInfo):
    """A phased execution: phases per layer, firings, and the edge buffers (id k = `buffers[k]`)."""

    phases: tuple[tuple[str, int], ...] = ()
    firings: int = 0
    edges: tuple[str, ...] = ()

    def record(self) -> dict[str, object]:
        return {"phases": dict(self.phases), "firings": self.firings, "buffers": self.buffers,
                "edges": list(self.edges)}


@dataclass(frozen=True)
class PlannedInfo(WorkInfo):
    """A layer-by-layer run with its tensors where a memory plan put them (`slots` of them)."""

    slots: int = 0

    def record(self) -> dict[str, object]:
        return {"slots": self.slots, "buffers": self.buffers}


@dataclass(frozen=True)
class Work:
    """One unit of the schedule: a layer (or a stack of layers run together) on one core, with the units of
    work it waits for.

    `blocks()` yields the steps in order as `STEP_DTYPE` arrays; it can be called again and yields the same steps
    (mappers generate, not store). A step's per-core ends (GLB, line buffer, RF, PE array) are on the core its
    `src_core`/`dst_core` name: the work's `core`, or another core's for a transfer over a link. `after` lists
    the indices of the works it waits for (None: the one before it, a chain); a core runs its works one at a time,
    in schedule order. Its words are `word_bits` wide (None: the accelerator's word).
    """

    layer: Layer
    info: WorkInfo
    generate: Callable[[], Iterator[np.ndarray]] = field(repr=False)
    stack: tuple[Layer, ...] = ()  # the layers run together (depth-first stack); empty for one layer
    pipelined: bool = True  # False: each group starts once the one before has finished (no overlap)
    dram_regions: tuple[tuple[int, int, int], ...] = ()  # (operand, first word, words) its DRAM accesses stay
    # within, per tensor; empty: not declared
    core: int = 0
    after: tuple[int, ...] | None = None
    word_bits: int | None = None

    @property
    def name(self) -> str:
        """The layer's name, or "first..last" for a stack of several layers."""
        if len(self.stack) > 1:
            return f"{self.stack[0].name}..{self.stack[-1].name}"
        return self.layer.name

    def blocks(self) -> Iterator[np.ndarray]:
        return self.generate()

    def steps(self) -> np.ndarray:
        """All steps at once (tests and small layers; the simulator streams `blocks`)."""
        parts = list(self.blocks())
        return np.concatenate(parts) if parts else empty_steps(0)


def on_core(blocks: Callable[[], Iterator[np.ndarray]], core: int) -> Callable[[], Iterator[np.ndarray]]:
    """`blocks` with every step's ends on core `core` (a mapper writes steps for one core; this places them)."""
    if core == 0:
        return blocks

    def placed() -> Iterator[np.ndarray]:
        for block in blocks():
            moved = block.copy()
            moved["src_core"] = core
            moved["dst_core"] = core
            yield moved
    return placed


@dataclass(frozen=True)
class Schedule:
    """A whole network mapped onto one accelerator: units of work and what each waits for (a graph)."""

    network: str
    hardware: str
    mapper: str  # "nest:<dataflow>", "depth_first", "csdf_phases", ...
    batch: int  # images processed per run
    layers: tuple[Work, ...]
    mapping: NetworkMapping | None = None  # the loop-nest mapping the steps come from, when there is one

    def layer(self, name: str) -> Work:
        for ls in self.layers:
            if ls.name == name:
                return ls
        raise KeyError(name)

    def waits_for(self, index: int) -> tuple[int, ...]:
        """The works work `index` waits for: its `after`, else the one before it."""
        after = self.layers[index].after
        if after is not None:
            return after
        return (index - 1,) if index > 0 else ()

    def named_buffers(self) -> tuple[str, ...]:
        """The names of the buffer ids ALLOC/FREE steps carry, over all works (the longest list)."""
        return max((w.info.buffers for w in self.layers), key=len, default=())
