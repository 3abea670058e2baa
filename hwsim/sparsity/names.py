"""The names a user picks a sparsity source by, and the ReLU default: plain constants with no imports, so the
command line can offer them without loading the models (`hwsim.analytic.graph_adapter` defines the presets and
the default; a test ties the two)."""

from __future__ import annotations

NONE, AUTO, RELU = "none", "auto", "relu"
PRESETS = ("alexnet-measured",)  # hwsim.analytic.graph_adapter.SPARSITY_PRESETS
SPARSITY_CHOICES = (AUTO, RELU, *PRESETS)  # beside none and a profile file
DEFAULT_RELU_SPARSITY = 0.5  # hwsim.analytic.graph_adapter.DEFAULT_RELU_SPARSITY

__all__ = ["AUTO", "DEFAULT_RELU_SPARSITY", "NONE", "PRESETS", "RELU", "SPARSITY_CHOICES"]
