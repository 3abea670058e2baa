"""HDF5 traces of every memory access: the schema, a chunked writer and a streaming reader.

    with TraceWriter("traces/run.h5", levels=["dram", "glb"], layers=["conv1"], buffers=["glb"],
                     attrs={"network": "alexnet"}) as writer:
        writer.append("glb", block)  # RECORD_DTYPE array
    with hwsim.trace.open("traces/run.h5") as trace:
        for block in trace.records("glb", layer="conv1", operand="psum"):
            ...
"""

from hwsim.trace.reader import Trace, open  # shadows the builtin here only: callers write hwsim.trace.open
from hwsim.trace.schema import (
                                OCCUPANCY_DTYPE,
                                OPERANDS,
                                OPS,
                                RECORD_DTYPE,
                                TRACE_VERSION,
                                UNITS,
                                TraceError,
                                empty_occupancy,
                                empty_records,
)
from hwsim.trace.writer import TraceWriter, attrs_json
from hwsim.vocab import TRACE_LEVELS

__all__ = ["OCCUPANCY_DTYPE", "OPERANDS", "OPS", "RECORD_DTYPE", "TRACE_LEVELS", "TRACE_VERSION", "UNITS", "Trace",
           "TraceError", "TraceWriter", "attrs_json", "empty_occupancy", "empty_records", "open"]
