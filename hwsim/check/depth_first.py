"""Cross-check a depth-first point: the closed-form model against the trace of a simulation of its schedule.

The analytic side (`hwsim.analytic.depth_first.depth_first_cost`) sums Eqs. 1–3
over a stack's feature maps (each FM's line buffer sized for its own need) and
the stacks' DRAM traffic; the simulated side is read from the trace the
simulator wrote: per stack, the sum over its line-buffer rings of each ring's
peak occupancy (what the rings must be provisioned with) and the words of every
DRAM record. Both must be equal, byte for byte. The trace also gives the
simultaneous peak of the whole line buffer, which is lower when the rings never
fill at once (parallel branches at different resolutions, or stacks whose line
lag exceeds the scan length).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hwsim.analytic.depth_first import DepthFirstCost
from hwsim.check.validate import Validation, validate_trace
from hwsim.mapping.depth_first.plan import DepthFirstMapping, WeightPolicy
from hwsim.mapping.plans import DepthFirstPlan
from hwsim.trace import open as open_trace

DEFAULT_LEVELS = frozenset({"dram", "line_buffer", "pe"})  # what a depth-first point's simulation records


@dataclass(frozen=True)
class StackCheck:
    """One stack: line-buffer bytes and DRAM bytes per inference, analytic beside simulated."""

    name: str
    tiling: int
    analytic_line_buffer_bytes: int
    simulated_line_buffer_bytes: int  # the sum of the rings' peaks
    simulated_simultaneous_peak_bytes: int  # the peak of the whole line buffer
    analytic_dram_bytes: int
    simulated_dram_bytes: int
    cycles: int

    @property
    def ok(self) -> bool:
        return (self.analytic_line_buffer_bytes == self.simulated_line_buffer_bytes
                and self.analytic_dram_bytes == self.simulated_dram_bytes)


@dataclass(frozen=True)
class DepthFirstCheck:
    """A whole point: its stacks and the network totals (line buffers: the largest stack)."""

    mapping: DepthFirstMapping
    stacks: tuple[StackCheck, ...]
    trace: str
    validation: Validation | None = None  # the trace's physics (`hwsim.check.validate`)

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.stacks) and (self.validation is None or self.validation.ok)

    @property
    def analytic_line_buffer_bytes(self) -> int:
        return max(s.analytic_line_buffer_bytes for s in self.stacks)

    @property
    def simulated_line_buffer_bytes(self) -> int:
        return max(s.simulated_line_buffer_bytes for s in self.stacks)

    @property
    def simulated_simultaneous_peak_bytes(self) -> int:
        return max(s.simulated_simultaneous_peak_bytes for s in self.stacks)

    @property
    def analytic_dram_bytes(self) -> int:
        return sum(s.analytic_dram_bytes for s in self.stacks)

    @property
    def simulated_dram_bytes(self) -> int:
        return sum(s.simulated_dram_bytes for s in self.stacks)

    @property
    def cycles(self) -> int:
        return sum(s.cycles for s in self.stacks)


def compare_point(plan: DepthFirstPlan, cost: DepthFirstCost, trace_path: str | Path, stack_cycles: Sequence[int],
                  word_bytes: int) -> DepthFirstCheck:
    """A simulated point's trace (one unit of work per stack, DRAM recorded per transaction) against the model's
    `cost` of it, and the trace's physics; `stack_cycles` are the simulated cycles of each stack."""
    stacks = len(cost.stacks)
    rings, peaks, dram_words = _trace_totals(trace_path, stacks)
    with open_trace(trace_path) as trace:
        physics = validate_trace(trace)
        names = trace.layers
    checks = tuple(StackCheck(names[i], stack.tiling, stack.line_buffer_bytes + stack.skip_buffer_bytes,
                              int(rings[i]), int(peaks[i]), stack.dram_bytes, int(dram_words[i]) * word_bytes,
                              stack_cycles[i]) for i, stack in enumerate(cost.stacks))
    mapping = DepthFirstMapping(plan.cuts, plan.tiling, WeightPolicy(plan.weights), plan.max_short_skip_layers)
    return DepthFirstCheck(mapping, checks, str(trace_path), physics)


def _trace_totals(path: str | Path, stacks: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per stack, from the trace alone: the sum of the line-buffer rings' peaks, the whole line buffer's
    peak (bytes) and the DRAM words moved."""
    peaks = np.zeros(stacks, dtype=np.int64)
    words = np.zeros(stacks, dtype=np.int64)
    with open_trace(path) as trace:
        events = trace.occupancy()
        whole = events[events["buffer"] == trace.buffers.index("line_buffer")]
        np.maximum.at(peaks, whole["layer"], whole["bytes"])
        ring_ids = [i for i, name in enumerate(trace.buffers) if name.startswith("line_buffer.ring")]
        ring_peaks = np.zeros((stacks, len(trace.buffers)), dtype=np.int64)
        rings = events[np.isin(events["buffer"], ring_ids)]
        np.maximum.at(ring_peaks, (rings["layer"], rings["buffer"]), rings["bytes"])
        for block in trace.records("dram"):
            np.add.at(words, block["layer"], block["words"])
    return ring_peaks.sum(axis=1), peaks, words
