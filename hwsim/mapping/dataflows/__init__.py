"""Dataflows, chosen by `pe_array.dataflow`: the loop nests an array can run and its default mapping of a layer.

row_stationary (Eyeriss, CNNergy's rules), weight_stationary, output_stationary
and input_stationary (systolic arrays with SCALE-Sim's folding and timing),
no_local_reuse (DianNao-style, no register files).
"""

from __future__ import annotations

from hwsim.hardware.schema import Accelerator
from hwsim.mapping.dataflows import no_local_reuse, row_stationary, systolic
from hwsim.mapping.dataflows.base import DATAFLOWS, Dataflow


def dataflow_of(hw: Accelerator) -> Dataflow:
    """The dataflow the config's PE array runs."""
    return DATAFLOWS.get(hw.pe_array.dataflow)


__all__ = ["DATAFLOWS", "Dataflow", "dataflow_of", "no_local_reuse", "row_stationary", "systolic"]
