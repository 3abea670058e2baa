"""The Schedule IR: what a mapper decided, as data the simulator and the analytic models both read.

A `Schedule` is, per layer, an ordered stream of *steps*, produced lazily in
numpy blocks (a 4K depth-first layer has millions of steps; they are never
Python objects). Every step is one row of `STEP_DTYPE`:

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
from typing import Any

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
class LayerSchedule:
    """The steps of one layer and the mapping parameters that produced them.

    `blocks()` yields the steps in order as `STEP_DTYPE` arrays; it can be
    called again and yields the same steps (mappers generate, not store).
    `params` are the mapper's choices (tile sizes, passes, batch), plain
    data for reports and trace attributes.
    """

    layer: Layer
    params: dict[str, Any]
    generate: Callable[[], Iterator[np.ndarray]] = field(repr=False)
    stack: tuple[Layer, ...] = ()  # the layers run together (depth-first stack); empty for one layer
    pipelined: bool = True  # False: each group starts once the one before has finished (no overlap)
    dram_regions: tuple[tuple[int, int, int], ...] = ()  # (operand, first word, words) its DRAM accesses stay
    # within, per tensor; empty: not declared

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


@dataclass(frozen=True)
class Schedule:
    """A whole network mapped onto one accelerator."""

    network: str
    hardware: str
    mapper: str  # "nest:<dataflow>", "depth_first", "csdf_phases", ...
    batch: int  # images processed per run
    layers: tuple[LayerSchedule, ...]
    mapping: NetworkMapping | None = None  # the loop-nest mapping the steps come from, when there is one

    def layer(self, name: str) -> LayerSchedule:
        for ls in self.layers:
            if ls.name == name:
                return ls
        raise KeyError(name)
