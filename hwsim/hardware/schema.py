"""The accelerator description: one frozen dataclass per hardware concept.

The config tree mirrors the component tree. Every numeric field is declared
with `param(dimension, description)`: the YAML key is the field name without
its unit suffix (`size_bytes` is written `size: 108 KiB`), the value carries
its unit, and the description is what `hwsim config show` prints. Every
component that has energies names where they came from in `source`.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field
from typing import Any

from hwsim.hardware.units import (
    BANDWIDTH,
    BITS,
    BYTES,
    COUNT,
    CYCLES,
    ENERGY,
    ENERGY_PER_BIT,
    FRACTION,
    FREQUENCY,
    POWER,
    THROUGHPUT,
    WORDS,
    Dimension,
)


@dataclass(frozen=True)
class ParamInfo:
    """What the loader and `config show` know about one field."""

    dim: Dimension | None  # None: a string, bool or nested section
    description: str
    integer: bool
    positive: bool  # > 0 (otherwise >= 0)
    maximum: float | None
    choices: tuple[str, ...] = ()  # the names a text field accepts (an implementation chosen by name)
    boolean: bool = False  # a yes/no switch, written true or false


def param(dim: Dimension | None, description: str, default: Any = MISSING, *, integer: bool = False,
          positive: bool = True, maximum: float | None = None) -> Any:
    """A config field with its dimension, description and bounds."""
    info = ParamInfo(dim, description, integer, positive, maximum)
    return field(default=default, metadata={"info": info})


def section(description: str, default: Any = MISSING) -> Any:
    """A nested component (or an optional one when `default` is None)."""
    return field(default=default, metadata={"info": ParamInfo(None, description, False, False, None)})


def text(description: str, default: Any = MISSING) -> Any:
    return field(default=default, metadata={"info": ParamInfo(None, description, False, False, None)})


def flag(description: str, default: bool = False) -> Any:
    """A switch written `true` or `false` (a hardware feature that is there or not)."""
    return field(default=default, metadata={"info": ParamInfo(None, description, False, False, None, (), True)})


def choice(description: str, choices: tuple[str, ...], default: str) -> Any:
    """A text field naming one of `choices`: the implementation (model, policy) the simulator uses."""
    return field(default=default, metadata={"info": ParamInfo(None, description, False, False, None, choices)})


SCHEDULER_CHOICES = ("fcfs",)  # hwsim.sim.policy.SCHEDULERS
CODEC_CHOICES = ("none", "rlc")  # hwsim.sparsity.codec.CODECS
DATAFLOW_CHOICES = ("row_stationary", "weight_stationary", "output_stationary", "input_stationary",
                    "no_local_reuse")  # hwsim.mapping.dataflows


@dataclass(frozen=True, kw_only=True)
class RegisterFiles:
    """Per-PE scratchpads of the row-stationary PE (Eyeriss: 224/12/24 words)."""

    filter_words: int = param(WORDS, "filter scratchpad per PE", integer=True)
    ifmap_words: int = param(WORDS, "ifmap scratchpad per PE", integer=True)
    psum_words: int = param(WORDS, "partial-sum scratchpad per PE", integer=True)
    access_energy_pj: float = param(ENERGY, "energy of one RF word read or write")


@dataclass(frozen=True, kw_only=True)
class PeArray:
    """The 2-D array of processing elements, each with a MAC unit and RFs."""

    rows: int = param(COUNT, "PE rows (J in CNNergy)", integer=True)
    cols: int = param(COUNT, "PE columns (K in CNNergy)", integer=True)
    macs_per_cycle: int = param(COUNT, "MACs one PE completes per cycle", 1, integer=True)
    fill_drain_cycles: int = param(CYCLES, "pipeline fill plus drain per processing pass", 0, integer=True,
                                   positive=False)
    mac_energy_pj: float = param(ENERGY, "energy of one multiply-accumulate")
    dataflow: str = choice("which loop nests the array runs and how a pass is timed: row_stationary (Eyeriss), "
                           "weight_stationary, output_stationary, input_stationary (systolic, SCALE-Sim's timing), "
                           "no_local_reuse (DianNao-style, no RF reuse)", DATAFLOW_CHOICES, "row_stationary")
    zero_gating: bool = flag("Eyeriss' data gating: a MAC whose ifmap word is zero is gated, and so is its filter RF "
                             "read (energy: neither is spent; cycles: unchanged, the pass keeps its slots)")
    zero_skipping: bool = flag("a sparse array's zero skipping: the MACs of zero ifmap words are skipped (energy as "
                               "gating; cycles: a pass lasts ⌈(MACs − skipped + ops) / (PEs · MACs per cycle)⌉, "
                               "skips spread evenly over its PEs; rate-timed dataflows only)")
    rf: RegisterFiles | None = section("per-PE register files (omit for no_local_reuse: operands reach the MACs "
                                       "from the array, nothing is reused in a PE)", None)
    source: str = text("where the MAC and RF energies come from")

    @property
    def pes(self) -> int:
        """Number of processing elements."""
        return self.rows * self.cols


@dataclass(frozen=True, kw_only=True)
class Noc:
    """On-chip network between GLB and PEs: the ifmap, filter and psum multicast buses."""

    ifmap_bus_bits: int = param(BITS, "width of the GLB→PE ifmap multicast bus", integer=True)
    filter_bus_bits: int = param(BITS, "width of the filter multicast bus", integer=True)
    psum_bus_bits: int = param(BITS, "width of the psum bus between GLB and PE columns", integer=True)
    inter_pe_energy_pj: float = param(ENERGY, "energy of moving one word between neighbouring PEs")
    model: str = choice("NoC model: buses (one ifmap, one filter and one psum multicast bus)", ("buses",), "buses")
    scheduler: str = choice("order in which each bus serves its transfers", SCHEDULER_CHOICES, "fcfs")
    source: str = text("where the NoC energy comes from")


@dataclass(frozen=True, kw_only=True)
class Glb:
    """The global buffer (SRAM) between DRAM and the PE array."""

    size_bytes: int = param(BYTES, "total GLB capacity", integer=True)
    filter_bytes: int = param(BYTES, "part of the capacity reserved for filters", 0, integer=True,
                              positive=False)
    banks: int = param(COUNT, "independent SRAM banks (size must divide evenly)", integer=True)
    ports: int = param(COUNT, "access ports shared by all banks", 1, integer=True)
    words_per_port: int = param(WORDS, "words one port moves per cycle", integer=True)
    read_energy_pj: float = param(ENERGY, "energy of reading one word")
    write_energy_pj: float = param(ENERGY, "energy of writing one word")
    energy_size_exponent: float = param(FRACTION, "x in E(S) = E·(S/size)^x, the CACTI-like law "
                                                  "used when a sweep changes the size", 0.5, positive=False,
                                        maximum=2.0)
    scheduler: str = choice("order in which the ports serve transfers", SCHEDULER_CHOICES, "fcfs")
    source: str = text("where the GLB energies come from")

    @property
    def data_bytes(self) -> int:
        """Capacity left for ifmaps and psums."""
        return self.size_bytes - self.filter_bytes


@dataclass(frozen=True, kw_only=True)
class L2:
    """An optional on-chip L2 SRAM between the GLB and DRAM (edge SoCs)."""

    size_bytes: int = param(BYTES, "L2 capacity", integer=True)
    banks: int = param(COUNT, "independent banks", 1, integer=True)
    bandwidth_bytes_per_cycle: float = param(BANDWIDTH, "L2 ↔ GLB bandwidth")
    latency_cycles: int = param(CYCLES, "access latency", 1, integer=True, positive=False)
    read_energy_pj: float = param(ENERGY, "energy of reading one word")
    write_energy_pj: float = param(ENERGY, "energy of writing one word")
    scheduler: str = choice("order in which the port serves transfers", SCHEDULER_CHOICES, "fcfs")
    source: str = text("where the L2 energies come from")


@dataclass(frozen=True, kw_only=True)
class LineBuffer:
    """Optional line buffers that keep a few rows per feature map (depth-first execution)."""

    size_bytes: int = param(BYTES, "line-buffer capacity over all feature maps", integer=True)
    words_per_port: int = param(WORDS, "words the line buffer moves per cycle", integer=True)
    read_energy_pj: float = param(ENERGY, "energy of reading one word")
    write_energy_pj: float = param(ENERGY, "energy of writing one word")
    scheduler: str = choice("order in which the port serves transfers", SCHEDULER_CHOICES, "fcfs")
    source: str = text("where the line-buffer energies come from")


@dataclass(frozen=True, kw_only=True)
class RowBuffer:
    """Optional DRAM row-buffer model: hits are cheaper than misses."""

    row_bytes: int = param(BYTES, "bytes of one open DRAM row", integer=True)
    hit_latency_cycles: int = param(CYCLES, "latency of an access to the open row", integer=True)
    miss_latency_cycles: int = param(CYCLES, "latency of an access that opens a new row", integer=True)
    policy: str = choice("open: a channel's last row stays open and later accesses to it hit; closed: every "
                         "access opens its row", ("open", "closed"), "open")


@dataclass(frozen=True, kw_only=True)
class Compression:
    """How tiles are coded on a link to a level that stores them compressed (Eyeriss: run-length coding of ifmaps
    and ofmaps on its DRAM link, three pairs of a 5-bit zero run and a 16-bit value per 64-bit word)."""

    format: str = choice("tile code: rlc (pairs of a zero run and the next value, packed into coded words; a tile "
                         "the code would enlarge moves raw) or none", CODEC_CHOICES, "rlc")
    run_bits: int = param(BITS, "width of a pair's zero-run field: a pair covers up to 2^run_bits − 1 zeros and "
                                "one value", 5, integer=True)
    value_bits: int = param(BITS, "width of a pair's value field (the data word)", 16, integer=True)
    pairs_per_word: int = param(COUNT, "pairs packed into one coded word", 3, integer=True)
    word_bits: int = param(BITS, "width of one coded word (its pairs plus flag bits): the unit the link moves, "
                                 "is priced and timed by", 64, integer=True)
    filters: bool = flag("code filter tiles too (pruned weights); ifmap and ofmap tiles are always coded, partial "
                         "sums never")


@dataclass(frozen=True, kw_only=True)
class Dram:
    """Off-chip DRAM."""

    channels: int = param(COUNT, "independent channels (bandwidth is split evenly)", 1, integer=True)
    bandwidth_bytes_per_cycle: float = param(BANDWIDTH, "peak bandwidth over all channels")
    latency_cycles: int = param(CYCLES, "access latency of a burst", integer=True, positive=False)
    burst_bytes: int = param(BYTES, "bytes per burst (the unit of transfer)", integer=True)
    turnaround_cycles: int = param(CYCLES, "bus idle cycles when switching between read and write", 0,
                                   integer=True, positive=False)
    energy_pj_per_bit: float = param(ENERGY_PER_BIT, "energy of moving one bit")
    row_buffer: RowBuffer | None = section("row-buffer hit/miss model (omit for a flat latency)", None)
    model: str = choice("DRAM model: simple (channels moving whole bursts, access latency, optional row buffer "
                        "and turnaround)", ("simple",), "simple")
    scheduler: str = choice("order in which each channel serves its transactions", SCHEDULER_CHOICES, "fcfs")
    address_map: str = choice("how byte addresses spread over channels: burst_interleave (burst k on channel "
                              "k mod channels)", ("burst_interleave",), "burst_interleave")
    source: str = text("where the DRAM energy comes from")


@dataclass(frozen=True, kw_only=True)
class Control:
    """Clock-tree and control overheads (CNNergy's control model)."""

    clock_power_w: float = param(POWER, "clock-network power at the reference throughput")
    reference_throughput_gmacs: float = param(THROUGHPUT, "throughput at which clock_power was measured")
    other_fraction: float = param(FRACTION, "other control energy as a share of the total (CNNergy: 0.15)",
                                  positive=False, maximum=0.99)
    source: str = text("where the control model comes from")


@dataclass(frozen=True, kw_only=True)
class Accelerator:
    """A whole accelerator: clock, data width, compute array and memory hierarchy."""

    name: str = text("short name used in reports and trace files")
    clock_hz: float = param(FREQUENCY, "core clock")
    precision_bits: int = param(BITS, "width of activations and weights (8, 16 or 32)", integer=True)
    pe_array: PeArray = section("the processing-element array")
    noc: Noc = section("the on-chip network")
    glb: Glb = section("the global buffer")
    dram: Dram = section("off-chip memory")
    control: Control = section("clock and control overheads")
    l2: L2 | None = section("optional on-chip L2", None)
    line_buffer: LineBuffer | None = section("optional line buffers", None)
    description: str = text("one line on what this configuration models", "")
    technology: str = text("process node and voltage the energies refer to", "")

    @property
    def word_bytes(self) -> int:
        """Bytes per data word."""
        return self.precision_bits // 8


COMPONENTS = (Accelerator, PeArray, RegisterFiles, Noc, Glb, L2, LineBuffer, Dram, RowBuffer, Compression,
              Control)
