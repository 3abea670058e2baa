"""The words every part of hwsim shares: storage levels, operands, access kinds, trace codes, the step
layout, and integer helpers.

This module is the bottom of the package (it imports only numpy), so the
workload, hardware, mapping, analytic, simulator, trace and metrics layers
all speak one vocabulary, Timeloop's where the field has one:

- `Level`: where data is stored, from off-chip inwards.
- `Operand`: the data spaces of a convolution (ifmap, filter, psum, ofmap);
  trace records add `OTHER` (PE-array work that moves no operand).
- `Access`: what happens at a level (read, fill from the parent, update of a
  psum from the child). Trace records encode their `op` as `Op` (read,
  write, fill, update), where a NoC transfer or a non-MAC operation is a
  `write`; `ACCESS_OF_OP` maps the one onto the other.
- `STEP_DTYPE`: one step of a schedule; `StepField` gives each field's
  position in the tuples `ndarray.tolist()` yields, derived from the dtype
  so the two cannot drift apart.
"""

from __future__ import annotations

from enum import IntEnum
from typing import overload

import numpy as np


class Level(IntEnum):
    """Storage levels, from off-chip inwards (a larger value is nearer the MACs)."""

    DRAM = 0
    L2 = 1
    GLB = 2
    LINE_BUFFER = 3
    RF = 4


class Operand(IntEnum):
    """The data a step moves or a buffer holds; trace records add OTHER (index 4)."""

    IFMAP = 0
    FILTER = 1
    PSUM = 2
    OFMAP = 3


class Access(IntEnum):
    """Timeloop's access kinds at a level: a read, a fill (written from the parent), an update (a psum
    written back from the child)."""

    READ = 0
    FILL = 1
    UPDATE = 2


class Op(IntEnum):
    """The `op` code of a trace record: an `Access`, or a write that is none of them (a NoC transfer, a
    non-MAC operation), or work a zero spared (at level `pe`: MACs and filter RF reads a zero ifmap word gated or
    skipped)."""

    READ = 0
    WRITE = 1
    FILL = 2
    UPDATE = 3
    SKIP = 4


class StepKind(IntEnum):
    """What a schedule step does (see `hwsim.mapping.schedule`)."""

    TRANSFER = 0
    COMPUTE = 1
    ALLOC = 2
    FREE = 3


def _names(enum: type[IntEnum]) -> tuple[str, ...]:
    return tuple(member.name.lower() for member in enum)


LEVEL_NAMES = _names(Level)  # ("dram", "l2", "glb", "line_buffer", "rf")
OPERAND_NAMES = _names(Operand)  # ("ifmap", "filter", "psum", "ofmap")
ACCESS_NAMES = _names(Access)  # ("read", "fill", "update")
OP_NAMES = _names(Op)  # ("read", "write", "fill", "update", "skip"): trace `op` code = index
TRACE_OPERAND_NAMES = (*OPERAND_NAMES, "other")  # trace `operand` code = index
OTHER = len(OPERAND_NAMES)  # the trace operand code of PE-array work that moves no operand
TRACE_LEVELS = ("dram", "l2", "glb", "line_buffer", "noc", "rf", "pe", "link")  # one trace dataset each; pe: passes,
# link: transfers between cores
BANDWIDTH_LEVELS = ("dram", "l2", "glb", "line_buffer", "noc", "link")  # trace levels whose words per cycle are
# bandwidth
ACCESS_OF_OP = {Op.READ: Access.READ, Op.FILL: Access.FILL, Op.UPDATE: Access.UPDATE}  # Op.WRITE: none
OP_OF_ACCESS = {access: op for op, access in ACCESS_OF_OP.items()}
NOC_BUSES = ("ifmap", "filter", "psum", "psum_out")  # the buses between the GLB and the PEs (psum_out: psums
# leaving the array, on the psum bus unless the NoC has its own for them)
BUS_OF_OPERAND = {Operand.IFMAP: "ifmap", Operand.FILTER: "filter", Operand.PSUM: "psum", Operand.OFMAP: "psum"}
ACCESS_SHAPE = (len(Level), len(Operand), len(Access))  # the [level, operand, access] count tables

class DramCommand(IntEnum):
    """A JEDEC command a DRAM model issued (the `command` code of `DRAM_COMMAND_DTYPE`). The order is the one
    commands of one cycle take: a precharge or refresh closes a bank before an activate opens it, and an activate
    comes before the column commands to its row."""

    PRE = 0
    REF = 1
    ACT = 2
    RD = 3
    WR = 4


DRAM_COMMAND_NAMES = tuple(c.name for c in DramCommand)  # ("PRE", "REF", "ACT", "RD", "WR"): code = index
NO_BANK = 0xFFFF  # bank and bank group of a command that has none (an all-bank REF)
DRAM_COMMAND_DTYPE = np.dtype([
    ("cycle", np.int64),  # DRAM clock cycle (the device's command clock) the command issued at
    ("command", np.uint8),  # DramCommand
    ("channel", np.uint16),  # channel
    ("rank", np.uint16),  # rank within the channel
    ("group", np.uint16),  # bank group within the channel (rank · groups per rank + group); NO_BANK for REF
    ("bank", np.uint16),  # bank within the channel (rank · banks per rank + bank); NO_BANK for REF
    ("row", np.int64),  # row ACT opens, RD/WR reads or writes, PRE closes; -1 for REF
])


NO_LEVEL = 255  # src/dst of steps that have none (COMPUTE; src of ALLOC/FREE)
NO_ADDRESS = -1  # address of records that have none (NoC transfers, PE-array passes)

STEP_DTYPE = np.dtype([
    ("kind", np.uint8),  # StepKind
    ("operand", np.uint8),  # Operand (COMPUTE: unused)
    ("src", np.uint8),  # Level or NO_LEVEL
    ("dst", np.uint8),  # Level or NO_LEVEL
    ("group", np.int64),  # processing pass this step belongs to
    ("words", np.int64),  # words moved (TRANSFER) or claimed/released (ALLOC/FREE)
    ("coded_words", np.int64),  # TRANSFER: the words it takes at an end that keeps tiles coded (= words otherwise)
    ("src_addr", np.int64),  # first word address read in src
    ("dst_addr", np.int64),  # first word address written in dst
    ("src_core", np.uint8),  # the core of src's unit when src is a per-core level (GLB, line buffer, RF)
    ("dst_core", np.uint8),  # the core of dst's unit likewise; COMPUTE: the core whose PE array runs the pass
    ("active_pes", np.int32),  # COMPUTE: PEs busy in this pass
    ("macs", np.int64),  # COMPUTE: multiply-accumulates
    ("ops", np.int64),  # COMPUTE: non-MAC operations (comparisons, adds)
    ("rf_filter_reads", np.int64),  # COMPUTE: filter words read from RFs
    ("rf_ifmap_reads", np.int64),  # COMPUTE: ifmap words read from RFs
    ("rf_psum_reads", np.int64),  # COMPUTE: psum words read from RFs
    ("rf_psum_writes", np.int64),  # COMPUTE: psum words written to RFs
    ("inter_pe_words", np.int64),  # COMPUTE: psum words handed PE to PE (spatial reduction)
    ("inter_pe_ifmap_words", np.int64),  # COMPUTE: ifmap words forwarded PE to PE (systolic lanes)
    ("inter_pe_filter_words", np.int64),  # COMPUTE: filter words forwarded PE to PE (systolic lanes)
    ("stream_length", np.int64),  # COMPUTE: iterations the array streams in this pass (a systolic fold's T)
    ("zero_macs", np.int64),  # COMPUTE: of its MACs, those whose ifmap word is zero (gated or skipped by the array)
])

_STEP_NAMES: tuple[str, ...] = STEP_DTYPE.names or ()
MOVE_FIELDS = _STEP_NAMES[:_STEP_NAMES.index("dst_core") + 1]  # all a step other than a COMPUTE uses: the first
# fields, so its tuple may stop there (the simulator's are built so: a third of the conversion)


def _step_field(name: str) -> int:
    return _STEP_NAMES.index(name)


class StepField:
    """Position of each `STEP_DTYPE` field in a step tuple (`block.tolist()` rows), looked up in the dtype."""

    KIND = _step_field("kind")
    OPERAND = _step_field("operand")
    SRC = _step_field("src")
    DST = _step_field("dst")
    GROUP = _step_field("group")
    WORDS = _step_field("words")
    CODED_WORDS = _step_field("coded_words")
    SRC_ADDR = _step_field("src_addr")
    DST_ADDR = _step_field("dst_addr")
    ACTIVE_PES = _step_field("active_pes")
    MACS = _step_field("macs")
    OPS = _step_field("ops")
    RF_FILTER_READS = _step_field("rf_filter_reads")
    RF_IFMAP_READS = _step_field("rf_ifmap_reads")
    RF_PSUM_READS = _step_field("rf_psum_reads")
    RF_PSUM_WRITES = _step_field("rf_psum_writes")
    INTER_PE_WORDS = _step_field("inter_pe_words")
    INTER_PE_IFMAP_WORDS = _step_field("inter_pe_ifmap_words")
    INTER_PE_FILTER_WORDS = _step_field("inter_pe_filter_words")
    STREAM_LENGTH = _step_field("stream_length")
    ZERO_MACS = _step_field("zero_macs")
    SRC_CORE = _step_field("src_core")
    DST_CORE = _step_field("dst_core")


WORD_BITS = (8, 16, 32)  # the word widths hwsim models
WORD_BITS_TEXT = "8, 16 or 32"
MAX_BATCH = 4096  # images one run may process: beyond, a run's records and cycles outgrow memory and int64


@overload
def ceil_div(numerator: int, denominator: int) -> int: ...
@overload
def ceil_div(numerator: np.ndarray, denominator: int | np.ndarray) -> np.ndarray: ...
@overload
def ceil_div(numerator: int, denominator: np.ndarray) -> np.ndarray: ...


def ceil_div(numerator: int | np.ndarray, denominator: int | np.ndarray) -> int | np.ndarray:
    """⌈numerator / denominator⌉ for integers or integer arrays (denominator > 0), exactly."""
    return -(-numerator // denominator)


def round_up(value: int, multiple: int) -> int:
    """The smallest multiple of `multiple` that is ≥ `value`."""
    return ceil_div(value, multiple) * multiple
