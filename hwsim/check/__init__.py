"""Analytic against simulated: every count equal, energy equal, latency at or above the bound."""

from hwsim.check.compare import CheckReport, CountRow, LayerCheck, compare

__all__ = ["CheckReport", "CountRow", "LayerCheck", "compare"]
