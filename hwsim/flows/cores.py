"""What each core of a multi-core run did, from the simulator's per-work timing, and what each link carried, from
the totals counted as it ran: the report's per-core and per-link tables."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hwsim.hardware.schema import Accelerator
from hwsim.sim.executor import SimResult


@dataclass(frozen=True)
class CoreTimeline:
    """One core over the run: busy (its works running), waiting (free, its next work waiting for another core's
    works), idle (done before the run's end), all in cycles summing to the run's; and, inside its works, the cycles
    its transactions queued for a resource (DRAM, GLB port, NoC: contention, shared or its own)."""

    core: str
    works: int
    busy_cycles: int
    waiting_cycles: int
    idle_cycles: int
    queued_cycles: int


@dataclass(frozen=True)
class LinkTraffic:
    """One direction of a link: the words it carried, the cycles they take at its width, and their energy."""

    direction: str
    words: int
    busy_cycles: int
    energy_pj: float


def core_timelines(result: SimResult, hw: Accelerator) -> tuple[CoreTimeline, ...]:
    """Per core: its works, busy, waiting and idle cycles, and queueing inside its works."""
    total = result.cycles
    out = []
    for k, core in enumerate(hw.all_cores):
        runs = sorted((r for r in result.layers if r.core == k), key=lambda r: r.start_cycle)
        busy = sum(r.cycles for r in runs)
        free_at, waiting = 0, 0
        for r in runs:
            waiting += max(0, r.start_cycle - free_at)
            free_at = max(free_at, r.end_cycle)
        queued = sum(sum(r.resource_stall_cycles.values()) for r in runs)
        out.append(CoreTimeline(core.name, len(runs), busy, waiting, total - free_at, queued))
    return tuple(out)


def link_traffic(hw: Accelerator, unit_names: tuple[str, ...], link_words: np.ndarray) -> tuple[LinkTraffic, ...]:
    """Per link direction (unit `LINK.A>B`): its words (`link_words`, per unit), the cycles they take at the link's
    width (⌈words · bits / width⌉) and their energy."""
    out = []
    for link in hw.links:
        a, b = link.between
        for direction in (f"{link.name}.{a}>{b}", f"{link.name}.{b}>{a}"):
            words = int(link_words[unit_names.index(direction)])
            out.append(LinkTraffic(direction, words, -(-words * hw.precision_bits // link.width_bits),
                                   words * link.energy_pj))
    return tuple(out)


__all__ = ["CoreTimeline", "LinkTraffic", "core_timelines", "link_traffic"]
