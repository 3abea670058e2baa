"""What a trace file holds: record layouts, the code tables and units every reader and writer agree on.

A trace has one dataset of `RECORD_DTYPE` per level of `TRACE_LEVELS`, one dataset of
`OCCUPANCY_DTYPE` events, one of `GROUP_DTYPE` rows (the schedule's groups: which steps form each
processing pass with its loads and stores, what a validator needs to check dependencies), and tables
that turn the small integer codes of the records back into names (Timeloop's access vocabulary for `op`). A record
covers the cycles [start_cycle, end_cycle).
"""

from __future__ import annotations

import numpy as np

from hwsim.errors import HwsimError
from hwsim.vocab import DRAM_COMMAND_DTYPE as DRAM_COMMAND_DTYPE  # re-exported: the DRAM commands a trace holds
from hwsim.vocab import OP_NAMES, TRACE_OPERAND_NAMES

TRACE_VERSION = 5  # bumped when a reader of the old layout would misread the new one (2: 16-bit buffer ids; 3: op skip;
# 4: the schedule's groups; 5: every record names its unit, the trace its units and each layer's core)

OPS = OP_NAMES  # record `op` code = index (hwsim.vocab.Op)
OPERANDS = TRACE_OPERAND_NAMES  # record `operand` code = index (hwsim.vocab.Operand, then "other")

RECORD_DTYPE = np.dtype([
    ("start_cycle", np.int64),  # first cycle of the access
    ("end_cycle", np.int64),  # one past its last cycle
    ("op", np.uint8),  # index into OPS
    ("operand", np.uint8),  # index into OPERANDS
    ("layer", np.int32),  # index into the file's layer table
    ("step", np.int64),  # schedule step within the layer
    ("address", np.int64),  # first word address
    ("words", np.int64),  # words moved; noc/rf per-pass records: access count
    ("unit", np.uint16),  # index into the file's unit table: where in the tree it happened (core1.glb, dram, ...)
])

OCCUPANCY_DTYPE = np.dtype([
    ("buffer", np.uint16),  # index into the file's buffer table
    ("cycle", np.int64),  # when the allocation or free happened
    ("bytes", np.int64),  # occupancy after the event
    ("layer", np.int32),  # index into the file's layer table
])

GROUP_DTYPE = np.dtype([
    ("layer", np.int32),  # index into the file's layer table
    ("first_step", np.int64),  # the group's first schedule step within the layer
    ("compute_step", np.int64),  # its COMPUTE step (the pass), NO_STEP if it has none
    ("levels", np.uint16),  # bit k set: the group moves data through TRACE_LEVELS[k] (its steps' ends, the NoC for
    # an RF end, pe for a pass)
])
NO_STEP = -1  # compute_step of a group without a pass

UNITS = {
    "start_cycle": "cycles",
    "end_cycle": "cycles (exclusive)",
    "op": "code: index into attribute ops",
    "operand": "code: index into attribute operands",
    "layer": "index into names/layers",
    "step": "schedule step index within the layer",
    "address": "words",
    "words": "words (noc and rf per-pass records: accesses)",
    "unit": "index into names/units",
    "buffer": "index into names/buffers",
    "cycle": "cycles (dram_commands: cycles of the DRAM's command clock)",
    "bytes": "bytes",
    "first_step": "schedule step index within the layer",
    "compute_step": "schedule step index within the layer (-1: none)",
    "levels": "bit mask: bit k is level k of attribute group_level_bits",
    "command": "code: index into attribute dram_commands (PRE, REF, ACT, RD, WR)",
    "channel": "DRAM channel",
    "rank": "rank within the channel",
    "group": "bank group within the channel (65535: none, an all-bank REF)",
    "bank": "bank within the channel (65535: none, an all-bank REF)",
    "row": "row within the bank (-1: none)",
}


MAX_BUFFERS = 1 << 16  # distinct buffer names a trace can hold (the width of `buffer`)
MAX_UNITS = 1 << 16  # distinct units a trace can hold (the width of `unit`)
MAX_RECORD_WORDS = 1 << 40  # words one record may move (in magnitude): a tensor holds at most 2**31 elements, a
# batch 2**12 images; far enough below 2**63 that a whole trace's words sum exactly in int64


class TraceError(HwsimError):
    """A trace file is missing, malformed or incomplete, or a query names something the trace lacks."""


def empty_records(n: int) -> np.ndarray:
    """A zeroed block of `n` access records, to fill column by column."""
    return np.zeros(n, dtype=RECORD_DTYPE)


def empty_groups(n: int) -> np.ndarray:
    """A zeroed block of `n` group rows."""
    return np.zeros(n, dtype=GROUP_DTYPE)


def empty_occupancy(n: int) -> np.ndarray:
    """A zeroed block of `n` occupancy events."""
    return np.zeros(n, dtype=OCCUPANCY_DTYPE)
