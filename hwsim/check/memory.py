"""Memory schedules checked against their analysis: phased (CSDF) buffers and layer-by-layer plans.

From the trace alone: each named buffer's peak occupancy (an edge buffer of
a phased schedule, a planner's buffer), the simultaneous peak of all of them
(the live bytes), and the extent of the addresses written in the L2 and DRAM
(what a plan's arena must span). The analysis side is `hwsim.analytic.csdf`
(token counting on the CSDF graph) and `hwsim.analytic.memplan` (planners);
the simulator never sees their sizes, only the schedule.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hwsim.analytic.csdf import BufferSizes
from hwsim.analytic.memplan import MemoryPlan
from hwsim.trace.reader import open as open_trace

ADDRESSED_LEVELS = ("l2", "dram")


@dataclass(frozen=True)
class TraceMemory:
    """What a memory schedule's trace shows."""

    buffer_peak_bytes: dict[str, int]  # per named buffer
    live_peak_bytes: int  # the largest sum of the named buffers at one instant
    extent_bytes: dict[str, int]  # per level (l2, dram): one past the highest byte address transfers touched


def trace_memory(path: str | Path) -> TraceMemory:
    """Peaks per named buffer, their simultaneous peak and the address extent, from a trace."""
    with open_trace(path) as trace:
        ring0 = trace.first_named_buffer
        names = trace.buffers[ring0:]
        events = trace.occupancy()
        events = events[events["buffer"] >= ring0]
        order = np.argsort(events["cycle"], kind="stable")
        events = events[order]
        peaks = np.zeros(len(names), dtype=np.int64)
        np.maximum.at(peaks, events["buffer"] - ring0, events["bytes"])
        held = np.zeros(len(names), dtype=np.int64)
        change = np.empty(len(events), dtype=np.int64)
        for k, (b, after) in enumerate(zip((events["buffer"] - ring0).tolist(), events["bytes"].tolist())):
            change[k] = after - held[b]
            held[b] = after
        live = int(np.cumsum(change).max()) if len(change) else 0
        word_bytes = int(trace.attrs["word_bits"]) // 8
        extent = dict.fromkeys(ADDRESSED_LEVELS, 0)
        for level in ADDRESSED_LEVELS:
            if level not in trace.levels:
                continue
            for block in trace.records(level):
                if len(block):
                    extent[level] = max(extent[level], int((block["address"] + block["words"]).max()) * word_bytes)
    return TraceMemory(dict(zip(names, peaks.tolist())), live, extent)


@dataclass(frozen=True)
class BufferCheck:
    name: str
    analytic_bytes: int
    simulated_bytes: int

    @property
    def equal(self) -> bool:
        return self.analytic_bytes == self.simulated_bytes


def compare_phased(sizes: BufferSizes, buffer_names: tuple[str, ...], seen: TraceMemory) -> tuple[BufferCheck, ...]:
    """Each edge buffer: the CSDF size against the simulated peak."""
    return tuple(BufferCheck(name, b, seen.buffer_peak_bytes.get(name, 0))
                 for name, b in zip(buffer_names, sizes.bytes_))


def compare_plan(plan: MemoryPlan, buffer_names: tuple[str, ...], seen: TraceMemory,
                 in_l2: tuple[bool, ...]) -> tuple[BufferCheck, ...]:
    """A plan's buffers against their simulated peaks, the bytes it puts in the L2 against the L2 addresses
    touched (the whole plan when it is all in one level, where the image's DRAM transfers stay inside it),
    its bound against the simultaneous peak. A greedy arena holds several tensors at once: its peak is the
    live bytes."""
    checks = []
    if plan.strategy not in ("greedy", "edge"):
        checks += [BufferCheck(name, b.size_bytes, seen.buffer_peak_bytes.get(name, 0))
                   for name, b in zip(buffer_names, plan.buffers)]
    if all(in_l2) or not any(in_l2):
        checks.append(BufferCheck("extent (total)", plan.total_bytes, max(seen.extent_bytes.values())))
    else:
        l2_bytes = sum(b.size_bytes for b, x in zip(plan.buffers, in_l2) if x)
        checks.append(BufferCheck("L2 extent", l2_bytes, seen.extent_bytes["l2"]))
    if plan.strategy != "edge":  # one buffer per edge keeps a copy per consumer: more than the live tensors
        checks.append(BufferCheck("live peak (bound)", plan.bound_bytes, seen.live_peak_bytes))
    return tuple(checks)
