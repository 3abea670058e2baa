"""What a search minimises: objectives chosen by name, and the exact cost of a layer's nest that ranks the final
candidates (the closed-form counts priced by the config's energy table, the latency with double buffering).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hwsim.analytic.nest_counts import NestCounter
from hwsim.analytic.pipeline import pipeline_latency
from hwsim.hardware.energy import EnergyTable
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.nest.format import LoopNest
from hwsim.registry import Registry
from hwsim.sparsity.profile import DENSE_LAYER, LayerZeros
from hwsim.vocab import Level
from hwsim.workload.ir import Layer


@dataclass(frozen=True)
class LayerCost:
    """A layer's nest priced exactly: what every objective reads."""

    energy_pj: float  # every component (MACs, RFs, hops, GLB, L2, DRAM, clock and static over the bound, control)
    latency_cycles: int  # hwsim.analytic.pipeline's estimate (double buffering)
    bound_cycles: int  # the busiest resource alone
    dram_words: int  # words read from and written to DRAM

    def as_data(self) -> dict[str, float]:
        return {"energy_pj": self.energy_pj, "latency_cycles": self.latency_cycles,
                "bound_cycles": self.bound_cycles, "dram_words": self.dram_words}


Objective = Callable[[float, float, float], float]  # (energy pJ, latency cycles, DRAM words) -> value to minimise
OBJECTIVES: Registry[Objective] = Registry("objective")
OBJECTIVES.register("energy")(lambda energy, latency, dram: energy)
OBJECTIVES.register("latency")(lambda energy, latency, dram: latency)
OBJECTIVES.register("edp")(lambda energy, latency, dram: energy * latency)  # energy-delay product
OBJECTIVES.register("dram")(lambda energy, latency, dram: dram)
OBJECTIVE_UNITS = {"energy": "pJ", "latency": "cycles", "edp": "pJ·cycles", "dram": "words"}


def rank(objective: str, cost: LayerCost) -> tuple[float, float, float]:
    """The sort key of a priced nest: the objective, then energy, then latency (ties broken the same way
    everywhere, so a search is deterministic)."""
    value = OBJECTIVES.get(objective)(cost.energy_pj, cost.latency_cycles, cost.dram_words)
    return value, cost.energy_pj, cost.latency_cycles


def exact_cost(layer: Layer, nest: LoopNest, batch: int, hw: Accelerator, table: EnergyTable,
               zeros: LayerZeros = DENSE_LAYER) -> LayerCost:
    """The closed form of `nest` with the layer's `zeros` (gated MACs, coded DRAM words): counts (`NestCounter`),
    energy, latency with double buffering."""
    counts = NestCounter(layer, nest, batch, hw, zeros).counts()
    latency = pipeline_latency(layer, nest, batch, hw, counts)
    energy, _ = table.price(counts.transfers, counts.compute, latency.bound_cycles)  # the closed form's time
    return LayerCost(sum(energy.values()), latency.estimate_cycles, latency.bound_cycles,
                     int(counts.transfers[Level.DRAM].sum()))


__all__ = ["OBJECTIVES", "OBJECTIVE_UNITS", "LayerCost", "exact_cost", "rank"]
