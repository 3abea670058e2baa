"""Compare a mapping's closed-form counts with the metrics derived from a simulation trace.

Per layer: the words read / filled / updated at every level for every
operand, the PE array's work (MACs, ops, RF accesses of the MACs, words handed
PE to PE), its passes and the cycles they take must be equal; the energy equal within `ENERGY_RTOL` (both price the
same counts with the same table, so only rounding may differ); the simulated
latency must be at or above the analytic lower bound. The clock and static power are drawn over a layer's time
(and other control is a share that includes the clock): the closed form prices them over its latency bound, so
its counts are priced again over the simulated cycles for the comparison, which the latency row checks apart.
A jedec DRAM's simulated energy is priced by the commands
it issued (row hits cost less than misses), which the closed form does not know: its energy comparison leaves
DRAM out (the words moved to and from DRAM are still compared). A simulation with
measured zeros compares the counts the zeros change (`ZERO_DEPENDENT`), the
energy and the bound within `MEASURED_RTOL`, and says so on each such row.

Where the check has them (`Addresses`), a nest-mapped layer's DRAM transfers per operand and direction and the
sum of their start offsets in their tensor are compared too, exactly: the closed form derives them from the
mapping and the tensors' DRAM layout (`hwsim.analytic.nest_addresses`), the trace from its records
(`hwsim.metrics.addresses`), so a tile moved from the wrong place fails even when it moves the right words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Protocol

import numpy as np

from hwsim.analytic.estimate import NetworkEstimate
from hwsim.check.validate import Validation
from hwsim.hardware.dram import dram_kind
from hwsim.hardware.energy import COMPONENTS, ComputeCounts, energy_table
from hwsim.hardware.precision import layer_hardware
from hwsim.hardware.tree import core_hardware
from hwsim.metrics.derive import TraceMetrics
from hwsim.vocab import ACCESS_NAMES, LEVEL_NAMES, OPERAND_NAMES

ENERGY_RTOL = 1e-9
MEASURED_RTOL = 0.10
"""With measured tensors the simulation takes each pass's zero MACs and each tile's coded words from the values,
the closed form from the layer's average (`hwsim.sparsity.layer`): those counts, the energy and the latency bound
agree within this relative tolerance instead of exactly (a stated bound, not evidence of equality)."""
ZERO_DEPENDENT = frozenset({("pe", "gated_macs"), ("pe", "gated_filter_reads"), ("pe", "gated_psum_accesses"),
                            ("pe", "compute_cycles"),
                            *((level, op) for level in ("dram", "l2") for op in ("ifmap", "filter", "ofmap"))})
"""(level, operand) of the counts the zeros change: the PE array's gated work and its cycles, and the coded words
at a compressing level."""


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
    tolerance: float = 0.0  # relative: 0 for exact counts, MEASURED_RTOL for measured zeros against the average

    @property
    def ok(self) -> bool:
        return abs(self.analytic - self.simulated) <= self.tolerance * max(abs(self.analytic), abs(self.simulated))

    @property
    def evidence(self) -> str:
        """exact: two computations equal; tolerance: measured values against the average model."""
        return "exact" if self.tolerance == 0 else "tolerance"


@dataclass(frozen=True)
class LayerCheck:
    """A layer's counts, energy and latency, analytic beside simulated."""

    name: str
    counts: tuple[CountRow, ...]
    analytic_pj: float
    simulated_pj: float
    bound_cycles: int
    simulated_cycles: int
    tolerance: float = 0.0  # MEASURED_RTOL when simulated with measured zeros

    @property
    def energy_ok(self) -> bool:
        rtol = max(ENERGY_RTOL, self.tolerance)
        return abs(self.simulated_pj - self.analytic_pj) <= rtol * max(abs(self.analytic_pj), 1e-30)

    @property
    def latency_ok(self) -> bool:
        return self.simulated_cycles >= self.bound_cycles * (1.0 - self.tolerance)

    @property
    def ok(self) -> bool:
        return self.energy_ok and self.latency_ok and all(r.ok for r in self.counts)


SEARCH_RTOL = 1e-9
"""A search ranks candidates by the closed form of each (`hwsim.search.cost.exact_cost`): the costs it states for
the mappings it chose must be the closed form's of those mappings with the layer's zeros, equal but for rounding.
A difference is a search ranking by something else (a cost model that drops the zeros, a latency that is not the
double-buffered estimate)."""


@dataclass(frozen=True)
class SearchRow:
    """One figure the search stated for a layer's chosen mapping beside the closed form's of that mapping."""

    layer: str
    figure: str  # energy_pj, latency_cycles, bound_cycles or dram_words
    searched: float
    closed_form: float

    @property
    def ok(self) -> bool:
        return abs(self.searched - self.closed_form) <= SEARCH_RTOL * max(abs(self.searched), abs(self.closed_form))


@dataclass(frozen=True)
class PipelineCheck:
    """A multi-core run's latency against its pipeline bound (`hwsim.analytic.multicore`), the words its links
    carried against the closed count from the allocation, and the schedule's graph against the data edges the
    closed form derives from the parts' geometry (a work, or a tile, reading rows a producer's tile writes must
    wait for it: the validator then checks from the trace that it did)."""

    bound_cycles: int
    simulated_cycles: int
    bottleneck: str  # what sets the bound: the longest chain of works ("path") or the shared DRAM ("dram")
    link_words_closed: int
    link_words_simulated: int
    edges_checked: int = 0  # data edges (a work reading what another writes) the closed form derives
    missing_edges: tuple[str, ...] = ()  # those the schedule the trace declares does not have ("reader <- producer")

    @property
    def ok(self) -> bool:
        return (self.simulated_cycles >= self.bound_cycles and self.link_words_closed == self.link_words_simulated
                and not self.missing_edges)


@dataclass(frozen=True)
class CheckReport:
    network: str
    hardware: str
    layers: tuple[LayerCheck, ...]
    energy_leaves_out: tuple[str, ...] = ()  # components the energy comparison leaves out (a jedec DRAM's)
    validation: Validation | None = None  # the trace's physics (`hwsim.check.validate`), when it was checked
    search: tuple[SearchRow, ...] = ()  # a searched mapping's stated costs against the closed form's
    pipeline: PipelineCheck | None = None  # a multi-core allocation's bound and link words

    @property
    def ok(self) -> bool:
        return (all(l.ok for l in self.layers) and (self.validation is None or self.validation.ok)
                and all(r.ok for r in self.search) and (self.pipeline is None or self.pipeline.ok))

    @property
    def mismatches(self) -> list[CountRow]:
        return [r for l in self.layers for r in l.counts if not r.ok]


def _count_rows(name: str, analytic: _Counted, simulated: _Counted, tolerance: float) -> list[CountRow]:
    """Every count either side has; those the zeros change (ZERO_DEPENDENT) within `tolerance`."""
    def row(level: str, operand: str, access: str, a: int, s: int) -> CountRow:
        return CountRow(name, level, operand, access, a, s, tolerance if (level, operand) in ZERO_DEPENDENT else 0.0)

    a_t, s_t = analytic.transfers, simulated.transfers
    rows = [row(LEVEL_NAMES[lv], OPERAND_NAMES[op], ACCESS_NAMES[ac], int(a_t[lv, op, ac]), int(s_t[lv, op, ac]))
            for lv in range(len(LEVEL_NAMES)) for op in range(len(OPERAND_NAMES)) for ac in range(len(ACCESS_NAMES))
            if a_t[lv, op, ac] or s_t[lv, op, ac]]
    a_c, s_c = analytic.compute, simulated.compute
    rows += [row("pe", f.name, "", getattr(a_c, f.name), getattr(s_c, f.name)) for f in fields(a_c)
             if getattr(a_c, f.name) or getattr(s_c, f.name)]
    # The passes and the cycles the array spends on them: the dataflow's pass timing, computed per pass by the
    # closed form and by the simulated PE array (independent of bandwidth: every pass lasts what its work says).
    rows += [row("pe", "passes", "", analytic.passes, simulated.passes),
             row("pe", "compute_cycles", "", analytic.compute_cycles, simulated.compute_cycles)]
    return rows


Sums = Mapping[tuple[str, str], tuple[int, int]]  # (operand, op) -> (DRAM transfers, Σ start offsets)


@dataclass(frozen=True)
class Addresses:
    """Per layer, the DRAM transfers and their start offsets: the closed form's (the nest-mapped layers) and the
    trace's."""

    analytic: Mapping[str, Sums]
    simulated: Mapping[str, Sums]


def _address_rows(name: str, analytic: Sums, simulated: Sums) -> list[CountRow]:
    rows = []
    for operand, op in sorted({*analytic, *simulated}):
        a, s = analytic.get((operand, op), (0, 0)), simulated.get((operand, op), (0, 0))
        rows += [CountRow(name, "dram", operand, f"{op} transfers", a[0], s[0]),
                 CountRow(name, "dram", operand, f"{op} start offsets", a[1], s[1])]
    return rows


def compare(estimate: NetworkEstimate, metrics: TraceMetrics, measured: bool = False,
            addresses: Addresses | None = None) -> CheckReport:
    """Every layer of the estimate against the same layer in the trace; `measured`: the simulation took its zeros
    from measured values, so the counts they change agree within MEASURED_RTOL; `addresses`: the DRAM transfers'
    start offsets of the layers it has on the closed form's side."""
    tolerance = MEASURED_RTOL if measured else 0.0
    by_name = {l.name: l for l in metrics.layers}
    by_command = dram_kind(metrics.hardware.dram.model).prices_commands
    compared = [c for c in COMPONENTS if not (c == "dram" and by_command)]
    checks = []
    tables = {}
    for e in estimate.layers:
        m = by_name.get(e.layer.name)
        if m is None:
            raise KeyError(f"layer {e.layer.name!r} is not in the trace")
        if (m.core, e.word_bytes) not in tables:  # priced on the core it ran on
            tables[(m.core, e.word_bytes)] = energy_table(layer_hardware(core_hardware(metrics.hardware, m.core),
                                                                         8 * e.word_bytes))
        rows = _count_rows(e.layer.name, e.counts, m, tolerance)
        if addresses is not None and e.layer.name in addresses.analytic:
            rows += _address_rows(e.layer.name, addresses.analytic[e.layer.name],
                                  addresses.simulated.get(e.layer.name, {}))
        at_simulated_time, _ = tables[(m.core, e.word_bytes)].price(e.counts.transfers, e.counts.compute, m.cycles)
        checks.append(LayerCheck(e.layer.name, tuple(rows),
                                 sum(at_simulated_time[c] for c in compared), sum(m.energy_pj[c] for c in compared),
                                 e.latency.bound_cycles, m.cycles, tolerance))
    return CheckReport(estimate.network, estimate.hardware, tuple(checks),
                       tuple(c for c in COMPONENTS if c not in compared))
