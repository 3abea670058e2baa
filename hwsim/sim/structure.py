"""The schedule's groups as the trace keeps them: which steps form each processing pass with its loads and stores,
and which levels each group moves data through.

The executor notes every block of steps it walks; a layer's rows (`hwsim.trace.schema.GROUP_DTYPE`) go to the
trace as the layer runs (`GroupLog.take`: every row but the last, which the next block may continue) and the
rest once it has run (`GroupLog.rows`), so a layer of millions of groups holds only the rows since the last
take. They are what a trace validator needs to tell a pass's loads from the previous pass's stores, and to know
which levels must hold records. They are worked out in numpy from the step blocks, apart from the executor's own
walk of the same steps.
"""

from __future__ import annotations

import numpy as np

from hwsim.trace.schema import GROUP_DTYPE, NO_STEP
from hwsim.vocab import LEVEL_NAMES, NO_LEVEL, TRACE_LEVELS, Level, StepKind

_BIT = np.zeros(NO_LEVEL + 1, dtype=np.uint16)  # step src/dst level -> its bit in GROUP_DTYPE.levels
BUFFER_LEVELS = (int(Level.GLB), int(Level.LINE_BUFFER))  # per-core levels a transfer between cores joins
for _level, _name in enumerate(LEVEL_NAMES):
    _BIT[_level] = 1 << TRACE_LEVELS.index(_name)
NOC_BIT = 1 << TRACE_LEVELS.index("noc")  # an RF end rides the NoC
PE_BIT = 1 << TRACE_LEVELS.index("pe")  # a pass
LINK_BIT = 1 << TRACE_LEVELS.index("link")  # a transfer between two cores' buffers


def step_level_bits(block: np.ndarray) -> np.ndarray:
    """The levels each step of `block` leaves records at, as bit masks: a transfer of words at both ends (and
    the NoC for an RF end, a link between two cores' buffers), a COMPUTE at pe; ALLOC and FREE at none (they change
    occupancy only)."""
    kind, src, dst = block["kind"], block["src"], block["dst"]
    moving = (kind == StepKind.TRANSFER) & (block["words"] > 0)
    near = (src == Level.RF) | (dst == Level.RF)
    buffers = np.isin(src, BUFFER_LEVELS) & np.isin(dst, BUFFER_LEVELS)
    across = np.where(buffers & (block["src_core"] != block["dst_core"]), LINK_BIT, 0)
    bits = np.where(moving, _BIT[src] | _BIT[dst] | np.where(near, NOC_BIT, 0) | across, 0).astype(np.uint16)
    bits[kind == StepKind.COMPUTE] = PE_BIT
    return bits


class GroupLog:
    """Collects the group rows of one layer from its step blocks, in order, until they are taken."""

    def __init__(self, layer: int) -> None:
        self.layer = layer
        self._parts: list[np.ndarray] = []
        self._last_group = -1  # schedule group id of the last row so far (a group may span blocks)
        self._open: np.ndarray | None = None  # the last row so far, which the next block may continue

    def add(self, block: np.ndarray, offset: int) -> None:
        """Note a block of steps whose first is step `offset` of the layer."""
        if not len(block):
            return
        group = block["group"]
        starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        rows = np.empty(len(starts), dtype=GROUP_DTYPE)
        rows["layer"] = self.layer
        rows["first_step"] = starts + offset
        rows["levels"] = np.bitwise_or.reduceat(step_level_bits(block), starts)
        rows["compute_step"] = NO_STEP
        computes = np.flatnonzero(block["kind"] == StepKind.COMPUTE)
        owner = np.searchsorted(starts, computes, side="right") - 1
        rows["compute_step"][owner[::-1]] = computes[::-1] + offset  # the first COMPUTE of each group
        if self._open is not None and int(group[0]) == self._last_group:  # continues the previous block's group
            last = self._open
            last["levels"] |= rows["levels"][0]
            if last["compute_step"][0] == NO_STEP:
                last["compute_step"] = rows["compute_step"][0]
            rows = rows[1:]
        self._last_group = int(group[-1])
        if len(rows):
            if self._open is not None:
                self._parts.append(self._open)
            self._parts.append(rows[:-1])
            self._open = rows[-1:].copy()

    def take(self) -> np.ndarray:
        """The rows noted since the last take that no later block can change (all but the last), forgotten."""
        taken = np.concatenate(self._parts) if self._parts else np.zeros(0, dtype=GROUP_DTYPE)
        self._parts = []
        return taken

    def rows(self) -> np.ndarray:
        """The layer's groups not taken yet, the last included (the layer has run)."""
        rest = [*self._parts, *([self._open] if self._open is not None else [])]
        return np.concatenate(rest) if rest else np.zeros(0, dtype=GROUP_DTYPE)
