"""Compare a mapping's closed-form counts with the metrics derived from a simulation trace.

Per layer: the words read / filled / updated at every level for every
operand, the PE array's work (MACs, ops, RF accesses of the MACs, words handed
PE to PE), its passes and the cycles they take must be equal; the energy equal within `ENERGY_RTOL` (both price the
same counts with the same table, so only rounding may differ); the simulated
latency must be at or above the analytic lower bound. A jedec DRAM's simulated energy is priced by the commands
it issued (row hits cost less than misses), which the closed form does not know: its energy comparison leaves
DRAM out (the words moved to and from DRAM are still compared).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Protocol

import numpy as np

from hwsim.analytic.estimate import NetworkEstimate
from hwsim.hardware.energy import COMPONENTS, ComputeCounts
from hwsim.metrics.derive import TraceMetrics
from hwsim.vocab import ACCESS_NAMES, LEVEL_NAMES, OPERAND_NAMES

ENERGY_RTOL = 1e-9


class _Counted(Protocol):
    """What both sides give for a layer: words per level, operand and access, and the PE array's work."""

    @property
    def transfers(self) -> np.ndarray: ...

    @property
    def compute(self) -> ComputeCounts: ...

    @property
    def passes(self) -> int: ...

    @property
    def compute_cycles(self) -> int: ...


@dataclass(frozen=True)
class CountRow:
    """One compared count: a level × operand × access, or a PE-array quantity (level 'pe')."""

    layer: str
    level: str
    operand: str
    access: str
    analytic: int
    simulated: int

    @property
    def ok(self) -> bool:
        return self.analytic == self.simulated


@dataclass(frozen=True)
class LayerCheck:
    """A layer's counts, energy and latency, analytic beside simulated."""

    name: str
    counts: tuple[CountRow, ...]
    analytic_pj: float
    simulated_pj: float
    bound_cycles: int
    simulated_cycles: int

    @property
    def energy_ok(self) -> bool:
        return abs(self.simulated_pj - self.analytic_pj) <= ENERGY_RTOL * max(abs(self.analytic_pj), 1e-30)

    @property
    def latency_ok(self) -> bool:
        return self.simulated_cycles >= self.bound_cycles

    @property
    def ok(self) -> bool:
        return self.energy_ok and self.latency_ok and all(r.ok for r in self.counts)


@dataclass(frozen=True)
class CheckReport:
    network: str
    hardware: str
    layers: tuple[LayerCheck, ...]
    energy_leaves_out: tuple[str, ...] = ()  # components the energy comparison leaves out (a jedec DRAM's)

    @property
    def ok(self) -> bool:
        return all(l.ok for l in self.layers)

    @property
    def mismatches(self) -> list[CountRow]:
        return [r for l in self.layers for r in l.counts if not r.ok]


def _count_rows(name: str, analytic: _Counted, simulated: _Counted) -> list[CountRow]:
    a_t, s_t = analytic.transfers, simulated.transfers
    rows = [CountRow(name, LEVEL_NAMES[lv], OPERAND_NAMES[op], ACCESS_NAMES[ac], int(a_t[lv, op, ac]),
                     int(s_t[lv, op, ac]))
            for lv in range(len(LEVEL_NAMES)) for op in range(len(OPERAND_NAMES)) for ac in range(len(ACCESS_NAMES))
            if a_t[lv, op, ac] or s_t[lv, op, ac]]
    a_c, s_c = analytic.compute, simulated.compute
    rows += [CountRow(name, "pe", f.name, "", getattr(a_c, f.name), getattr(s_c, f.name)) for f in fields(a_c)
             if getattr(a_c, f.name) or getattr(s_c, f.name)]
    # The passes and the cycles the array spends on them: the dataflow's pass timing, computed per pass by the
    # closed form and by the simulated PE array (independent of bandwidth: every pass lasts what its work says).
    rows += [CountRow(name, "pe", "passes", "", analytic.passes, simulated.passes),
             CountRow(name, "pe", "compute_cycles", "", analytic.compute_cycles, simulated.compute_cycles)]
    return rows


def compare(estimate: NetworkEstimate, metrics: TraceMetrics) -> CheckReport:
    """Every layer of the estimate against the same layer in the trace."""
    by_name = {l.name: l for l in metrics.layers}
    compared = [c for c in COMPONENTS if not (c == "dram" and metrics.hardware.dram.is_jedec)]
    checks = []
    for e in estimate.layers:
        m = by_name.get(e.layer.name)
        if m is None:
            raise KeyError(f"layer {e.layer.name!r} is not in the trace")
        checks.append(LayerCheck(e.layer.name, tuple(_count_rows(e.layer.name, e.counts, m)),
                                 sum(e.energy_pj[c] for c in compared), sum(m.energy_pj[c] for c in compared),
                                 e.latency.bound_cycles, m.cycles))
    return CheckReport(estimate.network, estimate.hardware, tuple(checks),
                       tuple(c for c in COMPONENTS if c not in compared))
