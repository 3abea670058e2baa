"""What every whole-network run reports, whether estimated in closed form or simulated."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hwsim.errors import require_finite


@dataclass(frozen=True)
class RunTotals:
    """A network run of `batch` images: energy by component (`hwsim.hardware.energy.COMPONENTS`), latency
    (the analytic bound, or the simulated cycles), DRAM traffic and MACs."""

    energy_by_component_pj: Mapping[str, float]
    latency_cycles: int
    dram_bytes: int
    macs: int

    def __post_init__(self) -> None:
        require_finite(dict(self.energy_by_component_pj), "the run's energy by component (pJ)")

    @property
    def energy_pj(self) -> float:
        """All components together."""
        return sum(self.energy_by_component_pj.values())


__all__ = ["RunTotals"]
