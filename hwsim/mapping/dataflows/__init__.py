"""Dataflows, chosen by `pe_array.dataflow`: the loop nests an array can run and its default mapping of a layer.

row_stationary (Eyeriss, CNNergy's rules), weight_stationary, output_stationary
and input_stationary (systolic arrays with SCALE-Sim's folding and timing),
no_local_reuse (DianNao-style, no register files).
"""

from __future__ import annotations

from hwsim.hardware.kinds import DATAFLOWS
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.dataflows import no_local_reuse, row_stationary, systolic
from hwsim.mapping.dataflows.base import Dataflow


def dataflow_of(hw: Accelerator) -> Dataflow:
    """The dataflow the config's PE array runs."""
    chosen: Dataflow = DATAFLOWS.get(hw.pe_array.dataflow)
    return chosen


__all__ = ["DATAFLOWS", "Dataflow", "dataflow_of", "no_local_reuse", "row_stationary", "systolic"]
