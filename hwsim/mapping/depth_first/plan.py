"""A depth-first plan as data: the choices a depth-first mapping is made of (cuts, tiling, weight policy) and
the layout they make of a network (`DepthFirstLayout`: its stacks, the skips that go through DRAM, and each
stack's geometry: orientation, every FM's tile boundaries, ring leads, each layer's window on its inputs).

The mapper works the layout out (`hwsim.mapping.depth_first.stacks.depth_first_layout`); the step generator and
the closed-form model (`hwsim.analytic.depth_first`) both read it as data and count from it on their own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
import numpy.typing as npt

from hwsim.errors import HwsimError
from hwsim.vocab import ceil_div
from hwsim.workload.ir import Layer, LayerKind

Cut = int | str

MERGE_KINDS = frozenset({LayerKind.ADD, LayerKind.MUL, LayerKind.CONCAT})
NOT_COMPUTE = frozenset({LayerKind.INPUT, LayerKind.OUTPUT})


class DepthFirstError(HwsimError):
    """A depth-first request that cannot be mapped or modelled (bad cut, tiling factor, precision)."""


class WeightPolicy(StrEnum):
    """Where the model's parameters live (sec. 5)."""

    ON_CHIP = "on_chip"  # whole model on chip, loaded once: no DRAM bytes per inference
    PER_STACK = "per_stack"  # only the running stack's parameters, refetched every inference


@dataclass(frozen=True)
class DepthFirstMapping:
    """The choices behind a depth-first schedule."""

    cuts: tuple[str, ...]
    tiling: tuple[int, ...]
    weights: WeightPolicy
    max_short_skip_layers: int = 8


WINDOW_KINDS = frozenset({LayerKind.CONV, LayerKind.MAX_POOL, LayerKind.AVG_POOL})
GLOBAL_KINDS = frozenset({LayerKind.GLOBAL_AVG_POOL, LayerKind.GLOBAL_MAX_POOL, LayerKind.FC})


# ----- how a layer's output positions depend on its input, per axis ------------------------------
@dataclass(frozen=True)
class AxisMap:
    """Input positions (lines or columns) a layer's outputs need along one axis.

    `first(y)`: the first input position output y needs; `end(y_end)`: one past
    the last input position any output before y_end needs (0 for y_end = 0).
    """

    kind: str  # "window", "replicate" (upsample, depth-to-space), "transposed", "whole"
    k: int = 1  # window extent, dilation included
    s: int = 1  # stride (window, transposed) or factor (replicate)
    pad: int = 0  # padding before the first position

    def first(self, y: int, n_in: int) -> int:
        if self.kind == "window":
            return min(n_in, max(0, self.s * y - self.pad))
        if self.kind == "replicate":
            return min(n_in, y // self.s)
        if self.kind == "transposed":
            return min(n_in, max(0, ceil_div(y + self.pad - self.k + 1, self.s)))
        return 0

    def end(self, y_end: int, n_in: int) -> int:
        if y_end <= 0:
            return 0
        if self.kind == "window":
            return max(0, min(n_in, self.s * (y_end - 1) - self.pad + self.k))
        if self.kind == "replicate":
            return min(n_in, ceil_div(y_end, self.s))
        if self.kind == "transposed":
            return max(0, min(n_in, (y_end - 1 + self.pad) // self.s + 1))
        return n_in

    def first_array(self, y: npt.NDArray[np.int64], n_in: int) -> np.ndarray:
        """`first` of every element of y."""
        if self.kind == "window":
            return np.minimum(np.maximum(self.s * y - self.pad, 0), n_in)
        if self.kind == "replicate":
            return np.minimum(n_in, y // self.s)
        if self.kind == "transposed":
            lowest: npt.NDArray[np.int64] = ceil_div(y + self.pad - self.k + 1, self.s)
            return np.minimum(np.maximum(lowest, 0), n_in)
        return np.zeros_like(y)

    def end_array(self, y_end: npt.NDArray[np.int64], n_in: int) -> np.ndarray:
        """`end` of every element of y_end."""
        if self.kind == "window":
            out = np.minimum(np.maximum(self.s * (y_end - 1) - self.pad + self.k, 0), n_in)
        elif self.kind == "replicate":
            out = np.minimum(n_in, ceil_div(y_end, self.s))
        elif self.kind == "transposed":
            out = np.minimum(np.maximum((y_end - 1 + self.pad) // self.s + 1, 0), n_in)
        else:
            out = np.full_like(y_end, n_in)
        return np.where(y_end <= 0, 0, out)

    @property
    def lead(self) -> int:
        """Pixels of the next line a streaming window holds beyond its full lines (the window's extent
        minus one; a point-wise layer holds the one pixel it works on)."""
        if self.kind == "window":
            return max(1, self.k - 1)
        if self.kind == "transposed":
            return ceil_div(self.k, self.s) - 1
        return 0


@dataclass
class StackPlan:
    """A stack's geometry: orientation, FMs, tile boundaries and widths, ring leads.

    Positions are in the stack's orientation: `scan[t]` lines of `line[t]`
    pixels, `channels[t]` values per pixel. For tile i of FM t, columns
    `bounds[t][i]` … `bounds[t][i+1]` are computed there and `starts[t][i]` …
    `bounds[t][i+1]` are held (the extra columns come from the tile before).
    """

    layers: tuple[Layer, ...]
    tiling: int
    scan_rows: bool
    inputs: dict[str, tuple[str, ...]]  # layer -> its inputs held on chip (long-skip edges excluded)
    dram_inputs: dict[str, tuple[str, ...]]  # layer -> its inputs read straight from DRAM
    consumers: dict[str, tuple[Layer, ...]]  # on-chip tensor -> its consumers in the stack
    external: tuple[str, ...]  # on-chip tensors produced before the stack (loaded from DRAM)
    leaving: frozenset[str]  # tensors made here that DRAM keeps (later stacks, outputs, long skips)
    scan: dict[str, int]
    line: dict[str, int]
    channels: dict[str, int]
    bounds: dict[str, npt.NDArray[np.int64]]  # [tiling + 1]
    starts: dict[str, npt.NDArray[np.int64]]  # [tiling]
    leads: dict[str, int] = field(default_factory=dict)
    maps: dict[str, tuple[AxisMap, AxisMap]] = field(default_factory=dict)  # layer -> (scan, line) input maps

    def widths(self, t: str) -> np.ndarray:
        """Held columns of t per tile."""
        return self.bounds[t][1:] - self.starts[t]

    def overlaps(self, t: str) -> np.ndarray:
        """Columns of t each tile fetches back from the tile before."""
        return self.bounds[t][:-1] - self.starts[t]

    def width(self, t: str, tile: int) -> int:
        """Columns of t held in `tile`: computed there plus those fetched back from the tile before."""
        return int(self.bounds[t][tile + 1] - self.starts[t][tile])

    def computed(self, t: str, tile: int) -> int:
        return int(self.bounds[t][tile + 1] - self.bounds[t][tile])

    def overlap(self, t: str, tile: int) -> int:
        """Columns of t that `tile` needs from the tile before (offloaded there, fetched back here)."""
        return int(self.bounds[t][tile] - self.starts[t][tile])

    def ring_width(self, t: str) -> int:
        """A ring row of t: its widest tile."""
        return int(self.widths(t).max())


@dataclass(frozen=True)
class DepthFirstLayout:
    """What a depth-first mapping makes of a network: its stacks (each with its geometry), in order, and the
    (tensor, merge layer) edges that go through DRAM."""

    stacks: tuple[StackPlan, ...]
    long_skips: frozenset[tuple[str, str]]

    @property
    def layers(self) -> tuple[Sequence[Layer], ...]:
        """Each stack's layers."""
        return tuple(s.layers for s in self.stacks)


__all__ = ["GLOBAL_KINDS", "MERGE_KINDS", "NOT_COMPUTE", "WINDOW_KINDS", "AxisMap", "Cut", "DepthFirstError",
           "DepthFirstLayout", "DepthFirstMapping", "StackPlan", "WeightPolicy"]
