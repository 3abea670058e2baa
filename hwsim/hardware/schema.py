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

from hwsim.hardware.kinds import (
    CODECS,
    DATAFLOWS,
    DRAM_ADDRESS_MAPS,
    DRAM_MODELS,
    DRAM_SCHEDULERS,
    LINK_MODELS,
    NOC_MODELS,
    PAGE_POLICIES,
    ROW_POLICIES,
    SCHEDULERS,
)
from hwsim.hardware.units import (
    BANDWIDTH,
    BITS,
    BYTES,
    COUNT,
    CURRENT,
    CYCLES,
    DRAM_CLOCKS,
    ENERGY,
    ENERGY_PER_BIT,
    FRACTION,
    FREQUENCY,
    POWER,
    THROUGHPUT,
    VOLTAGE,
    WORDS,
    Dimension,
)
from hwsim.registry import Registry


@dataclass(frozen=True)
class ParamInfo:
    """What the loader and `config show` know about one field."""

    dim: Dimension | None  # None: a string, bool or nested section
    description: str
    integer: bool
    positive: bool  # > 0 (otherwise >= 0)
    maximum: float | None
    choices: Registry[Any] | None = None  # the registry whose names a text field accepts (an implementation)
    boolean: bool = False  # a yes/no switch, written true or false
    model_params: str = ""  # the field holds the parameters the implementation named by this sibling field declares
    listed: bool = False  # a YAML list: of texts, or of sections (the field's type is a tuple of them)


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
    return field(default=default, metadata={"info": ParamInfo(None, description, False, False, None, None, True)})


def choice(description: str, choices: Registry[Any], default: str) -> Any:
    """A text field naming one of the implementations (model, policy) registered in `choices`."""
    return field(default=default, metadata={"info": ParamInfo(None, description, False, False, None, choices)})


def texts(description: str, default: tuple[str, ...] = ()) -> Any:
    """A list of texts (names, paths)."""
    return field(default=default, metadata={"info": ParamInfo(None, description, False, False, None, listed=True)})


def sections(description: str) -> Any:
    """A list of components of one kind (cores, links); empty by default."""
    return field(default=(), metadata={"info": ParamInfo(None, description, False, False, None, listed=True)})


def model_params(description: str, chooser: str) -> Any:
    """The parameters the implementation chosen by sibling field `chooser` declares (`Registry.register(...,
    params=...)`): written as keys of the same section, held as that dataclass (None when it declares none)."""
    return field(default=None, metadata={"info": ParamInfo(None, description, False, False, None,
                                                           model_params=chooser)})


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
    multiplier_share: float = param(FRACTION, "share of mac_energy spent in the multiplier, the rest in the adder "
                                              "(CNNergy at 45 nm: 0.9 of 0.95 pJ); a run at another precision "
                                              "scales the multiplier with bits², the adder with bits",
                                    18 / 19, positive=False, maximum=1.0)
    dataflow: str = choice("which loop nests the array runs and how a pass is timed: row_stationary (Eyeriss), "
                           "weight_stationary, output_stationary, input_stationary (systolic, SCALE-Sim's timing), "
                           "no_local_reuse (DianNao-style, no RF reuse)", DATAFLOWS, "row_stationary")
    zero_gating: bool = flag("Eyeriss' data gating: a MAC whose ifmap word is zero is gated, and so is its filter RF "
                             "read (energy: neither is spent; cycles: unchanged, the pass keeps its slots)")
    zero_gating_psums: bool = flag("a gated or skipped MAC leaves its psum in place: its psum RF read and write are "
                                   "spared too (CNNergy's e_RF·(3·NZ + NZ − IPE + MACs − NZ); energy only)")
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
    """On-chip network between GLB and PEs: the ifmap, filter and psum multicast buses (and a psum output bus)."""

    ifmap_bus_bits: int = param(BITS, "width of the GLB→PE ifmap multicast bus", integer=True)
    filter_bus_bits: int = param(BITS, "width of the filter multicast bus", integer=True)
    psum_bus_bits: int = param(BITS, "width of the psum bus between GLB and PE columns", integer=True)
    psum_out_bus_bits: int = param(BITS, "width of a separate PE→GLB bus for the psums leaving the array (Eyeriss' "
                                         "psum GON); 0: psums in and out share the psum bus", 0, integer=True,
                                   positive=False)
    psum_out_streamed: bool = flag("the array hands each output's psum back as its PE column finishes it (Eyeriss), "
                                   "so a pass's psum stores run with the pass; off: they follow its last MAC")
    inter_pe_energy_pj: float = param(ENERGY, "energy of moving one word between neighbouring PEs")
    model: str = choice("NoC model: buses (one ifmap, one filter and one psum multicast bus)", NOC_MODELS, "buses")
    params: Any = model_params("the parameters the NoC model declares", "model")
    scheduler: str = choice("order in which each bus serves its transfers", SCHEDULERS, "fcfs")
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
    scheduler: str = choice("order in which the ports serve transfers", SCHEDULERS, "fcfs")
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
    scheduler: str = choice("order in which the port serves transfers", SCHEDULERS, "fcfs")
    compression: Compression | None = section("keep ifmap and ofmap tiles coded in the L2 (omit: raw): the L2's "
                                              "reads and fills of them move, and are priced and timed by, the "
                                              "coded words; space is still claimed for the raw tile", None)
    source: str = text("where the L2 energies come from")


@dataclass(frozen=True, kw_only=True)
class LineBuffer:
    """Optional line buffers that keep a few rows per feature map (depth-first execution)."""

    size_bytes: int = param(BYTES, "line-buffer capacity over all feature maps", integer=True)
    words_per_port: int = param(WORDS, "words the line buffer moves per cycle", integer=True)
    read_energy_pj: float = param(ENERGY, "energy of reading one word")
    write_energy_pj: float = param(ENERGY, "energy of writing one word")
    scheduler: str = choice("order in which the port serves transfers", SCHEDULERS, "fcfs")
    source: str = text("where the line-buffer energies come from")


@dataclass(frozen=True, kw_only=True)
class RowBuffer:
    """Optional DRAM row-buffer model: hits are cheaper than misses."""

    row_bytes: int = param(BYTES, "bytes of one open DRAM row", integer=True)
    hit_latency_cycles: int = param(CYCLES, "latency of an access to the open row", integer=True)
    miss_latency_cycles: int = param(CYCLES, "latency of an access that opens a new row", integer=True)
    policy: str = choice("open: a channel's last row stays open and later accesses to it hit; closed: every "
                         "access opens its row", ROW_POLICIES, "open")


@dataclass(frozen=True, kw_only=True)
class Compression:
    """How tiles are coded on a link to a level that stores them compressed (Eyeriss: run-length coding of ifmaps
    and ofmaps on its DRAM link, three pairs of a 5-bit zero run and a 16-bit value per 64-bit word)."""

    format: str = choice("tile code: rlc (pairs of a zero run and the next value, packed into coded words; a tile "
                         "the code would enlarge moves raw) or none", CODECS, "rlc")
    run_bits: int = param(BITS, "width of a pair's zero-run field: a pair covers up to 2^run_bits − 1 zeros and "
                                "one value", 5, integer=True)
    value_bits: int = param(BITS, "width of a pair's value field (the data word)", 16, integer=True)
    pairs_per_word: int = param(COUNT, "pairs packed into one coded word", 3, integer=True)
    word_bits: int = param(BITS, "width of one coded word (its pairs plus flag bits): the unit the link moves, "
                                 "is priced and timed by", 64, integer=True)
    filters: bool = flag("code filter tiles too (pruned weights); ifmap and ofmap tiles are always coded, partial "
                         "sums never")


@dataclass(frozen=True, kw_only=True)
class DramDevice:
    """What a JEDEC DRAM channel is made of (`dram.model: jedec`): its clock, width, burst and banks."""

    standard: str = text("the JEDEC standard the device follows (DDR4, LPDDR4, LPDDR5, HBM2), named in exports")
    command_clock_hz: float = param(FREQUENCY, "command clock CK of the device (1/tCK); every timing is in its "
                                               "cycles (nCK)")
    width_bits: int = param(BITS, "data bus width of one channel (all devices of a rank side by side)", integer=True)
    burst_length: int = param(COUNT, "data beats of one read or write command (BL)", integer=True)
    bank_groups: int = param(COUNT, "bank groups per rank (1 where the standard has none)", integer=True)
    banks_per_group: int = param(COUNT, "banks in each bank group", integer=True)
    row_bytes: int = param(BYTES, "bytes of one row across the channel width (page size × devices per rank)",
                           integer=True)
    rows_per_bank: int = param(COUNT, "rows in each bank", integer=True)
    devices_per_rank: int = param(COUNT, "devices side by side in a rank (whose currents add up)", integer=True)
    source: str = text("the standard and datasheet the organisation comes from")

    @property
    def burst_bytes(self) -> int:
        """Bytes one read or write command moves."""
        return self.width_bits * self.burst_length // 8

    @property
    def banks(self) -> int:
        """Banks per rank."""
        return self.bank_groups * self.banks_per_group


@dataclass(frozen=True, kw_only=True)
class DramTiming:
    """JEDEC timing parameters in command-clock cycles (nCK), as the standard's speed bin rounds them."""

    tcl_nck: int = param(DRAM_CLOCKS, "CL: read command to first read data", integer=True)
    tcwl_nck: int = param(DRAM_CLOCKS, "CWL: write command to first write data", integer=True)
    trcd_nck: int = param(DRAM_CLOCKS, "tRCD: activate to read or write in the bank", integer=True)
    trp_nck: int = param(DRAM_CLOCKS, "tRP: precharge to activate in the bank", integer=True)
    tras_nck: int = param(DRAM_CLOCKS, "tRAS: activate to precharge in the bank", integer=True)
    trc_nck: int = param(DRAM_CLOCKS, "tRC: activate to activate in the bank", integer=True)
    tccd_s_nck: int = param(DRAM_CLOCKS, "tCCD_S: column command to column command, other bank group", integer=True)
    tccd_l_nck: int = param(DRAM_CLOCKS, "tCCD_L: column command to column command, same bank group", integer=True)
    trrd_s_nck: int = param(DRAM_CLOCKS, "tRRD_S: activate to activate in the rank, other bank group", integer=True)
    trrd_l_nck: int = param(DRAM_CLOCKS, "tRRD_L: activate to activate in the rank, same bank group", integer=True)
    tfaw_nck: int = param(DRAM_CLOCKS, "tFAW: window in which a rank takes at most four activates", integer=True)
    twtr_s_nck: int = param(DRAM_CLOCKS, "tWTR_S: end of write data to a read command, other bank group", integer=True)
    twtr_l_nck: int = param(DRAM_CLOCKS, "tWTR_L: end of write data to a read command, same bank group", integer=True)
    trtw_nck: int = param(DRAM_CLOCKS, "tRTW: read command to write command on the channel (bus turnaround)",
                      integer=True)
    trtp_nck: int = param(DRAM_CLOCKS, "tRTP: read command to precharge in the bank", integer=True)
    twr_nck: int = param(DRAM_CLOCKS, "tWR: end of write data to precharge in the bank (write recovery)",
                         integer=True)
    tbl_nck: int = param(DRAM_CLOCKS, "tBL: cycles one burst occupies the data bus (BL / beats per clock)",
                         integer=True)
    trfc_nck: int = param(DRAM_CLOCKS, "tRFC: an all-bank refresh blocks the rank this long", integer=True)
    trefi_nck: int = param(DRAM_CLOCKS, "tREFI: a rank is refreshed once every this many cycles", integer=True)
    source: str = text("the speed bin and the standard or datasheet the timing comes from")


@dataclass(frozen=True, kw_only=True)
class DramRail:
    """One supply rail of a DRAM device and the IDD currents the datasheet gives on it (per device)."""

    voltage_v: float = param(VOLTAGE, "rail voltage")
    idd0_ma: float = param(CURRENT, "IDD0: one bank activate-to-precharge current (at tRC)")
    idd2n_ma: float = param(CURRENT, "IDD2N: precharge standby current (all banks closed)")
    idd3n_ma: float = param(CURRENT, "IDD3N: active standby current (a bank open)")
    idd4r_ma: float = param(CURRENT, "IDD4R: burst read current")
    idd4w_ma: float = param(CURRENT, "IDD4W: burst write current")
    idd5b_ma: float = param(CURRENT, "IDD5B: burst refresh current (refresh commands every tRFC)")


@dataclass(frozen=True, kw_only=True)
class DramPower:
    """The supply currents that price DRAM commands (DRAMPower's method, Micron TN-41-01)."""

    vdd: DramRail = section("the core supply (VDD, VDD2 on LPDDR)")
    aux: DramRail | None = section("a second supply with its own currents (DDR4 VPP, LPDDR VDD1), if any", None)
    source: str = text("the datasheet and part the currents come from")


@dataclass(frozen=True, kw_only=True)
class Dram:
    """Off-chip DRAM."""

    channels: int = param(COUNT, "independent channels (bandwidth is split evenly)", 1, integer=True)
    bandwidth_bytes_per_cycle: float = param(BANDWIDTH, "peak bandwidth over all channels (model simple; the jedec "
                                                        "model derives it from dram.device)", 0.0)
    latency_cycles: int = param(CYCLES, "access latency of a burst (model simple; jedec: tRCD + CL + tBL)", 0,
                                integer=True, positive=False)
    burst_bytes: int = param(BYTES, "bytes per burst, the unit of transfer (model simple; jedec: width × BL)", 0,
                             integer=True)
    turnaround_cycles: int = param(CYCLES, "bus idle cycles when switching between read and write (model simple)",
                                   0, integer=True, positive=False)
    energy_pj_per_bit: float = param(ENERGY_PER_BIT, "energy of moving one bit (model simple; the jedec model "
                                                     "prices commands from dram.power)", 0.0)
    row_buffer: RowBuffer | None = section("row-buffer hit/miss model of the simple model (omit for a flat latency)",
                                           None)
    model: str = choice("DRAM model: simple (channels moving whole bursts, access latency, optional row buffer "
                        "and turnaround) or jedec (ranks, bank groups, banks, JEDEC timing, refresh)",
                        DRAM_MODELS, "simple")
    scheduler: str = choice("order in which a channel serves queued bursts: fcfs (oldest first) or frfcfs "
                            "(row hits first, then oldest; model jedec)", DRAM_SCHEDULERS, "fcfs")
    address_map: str = choice("how byte addresses spread over channels (and ranks, banks, rows, columns: model "
                              "jedec), named most significant field first: burst_interleave (burst k on channel "
                              "k mod channels; jedec: then bank, rank, column, row), RoBaRaCoCh, RoCoBaRaCh, "
                              "ChRaBaRoCo", DRAM_ADDRESS_MAPS, "burst_interleave")
    in_flight: int = param(COUNT, "bursts a channel holds at once: their latencies overlap, and the scheduler "
                                  "picks among them", 32, integer=True)
    write_queue: int = param(COUNT, "writes a channel's controller buffers while it serves reads (model jedec, a "
                                    "request trace replayed: `hwsim dram replay`)", 32, integer=True)
    write_high_watermark: float = param(FRACTION, "share of the write queue at which the controller stops serving "
                                                  "reads and drains writes", 0.8, maximum=1.0)
    write_low_watermark: float = param(FRACTION, "share of the write queue a drain leaves; reads are served again",
                                       0.2, positive=False, maximum=1.0)
    preset: str = text("a standard device (jedec): ddr4-2400-x8, ddr4-2400-x16, ddr4-3200-x8, ddr4-3200-x16, "
                       "lpddr4-3200, lpddr5-6400, hbm2; its device, timing and power sections are filled in "
                       "and any of their keys may be given to override them", "")
    ranks: int = param(COUNT, "ranks sharing each channel's bus (model jedec)", 1, integer=True)
    page_policy: str = choice("open: a bank keeps its row open for later hits; closed: a bank precharges once no "
                              "queued burst wants its row (model jedec)", PAGE_POLICIES, "open")
    device: DramDevice | None = section("the device organisation (model jedec; a preset fills it in)", None)
    timing: DramTiming | None = section("JEDEC timing (model jedec; a preset fills it in)", None)
    power: DramPower | None = section("supply currents pricing each command (model jedec; a preset fills it in)",
                                      None)
    compression: Compression | None = section("keep ifmap and ofmap tiles coded in DRAM (omit: raw): the transfers "
                                              "between DRAM and an on-chip buffer move the coded words, so DRAM "
                                              "time, DRAM energy and bandwidth follow them; words streamed "
                                              "straight between DRAM and the PE array move raw", None)
    source: str = text("where the DRAM energy comes from", "")
    params: Any = model_params("the parameters the DRAM model declares", "model")


@dataclass(frozen=True, kw_only=True)
class Control:
    """Clock-tree, control and static overheads (CNNergy's control model; the clock and static power are drawn
    over the run's time, CNNergy's faithful model prices the clock per MAC at the reference throughput)."""

    clock_power_w: float = param(POWER, "clock-network power at the reference throughput")
    reference_throughput_gmacs: float = param(THROUGHPUT, "throughput at which clock_power was measured")
    other_fraction: float = param(FRACTION, "other control energy as a share of the total (CNNergy: 0.15)",
                                  positive=False, maximum=0.99)
    source: str = text("where the control model comes from")
    static_power_w: float = param(POWER, "static (leakage) power of the chip, drawn for the whole run; 0: not "
                                         "modelled", 0.0, positive=False)


@dataclass(frozen=True, kw_only=True)
class Core:
    """One core: a PE array with its register files, the NoC between its GLB and its PEs, the GLB, and optional
    line buffers. Cores share the L2 and DRAM, and reach each other over links."""

    name: str = text("the core's name in reports and unit ids (core0, core1, ... unless given)")
    pe_array: PeArray = section("the core's processing-element array")
    noc: Noc = section("the core's on-chip network")
    glb: Glb = section("the core's global buffer")
    line_buffer: LineBuffer | None = section("the core's optional line buffers", None)


@dataclass(frozen=True, kw_only=True)
class Link:
    """A link between two units: cores (by name), the shared `l2` or `dram`. Each direction carries one transfer at
    a time, `width` bits per cycle, after `latency` cycles (a die-to-die link: wider latency, more energy)."""

    name: str = text("the link's name in reports and unit ids")
    between: tuple[str, ...] = texts("the two units it joins: core names, l2 or dram")
    width_bits: int = param(BITS, "bits the link carries per cycle in each direction", integer=True)
    latency_cycles: int = param(CYCLES, "cycles from a word entering the link to its leaving it", 0, integer=True,
                                positive=False)
    energy_pj: float = param(ENERGY, "energy of moving one word over the link (a word of the config's precision; "
                                     "another precision scales it with the bits)", 0.0, positive=False)
    model: str = choice("link model: point_to_point", LINK_MODELS, "point_to_point")
    params: Any = model_params("the parameters the link model declares", "model")
    source: str = text("where the link energy comes from", "")


@dataclass(frozen=True, kw_only=True)
class Accelerator:
    """A whole accelerator: clock, data width, its cores (compute array and on-chip buffers), the memory they
    share and the links between them. A single-core accelerator states its core's sections at the top level; a
    multi-core one lists `cores`, and the top-level sections are then its first core's."""

    name: str = text("short name used in reports and trace files")
    clock_hz: float = param(FREQUENCY, "core clock")
    precision_bits: int = param(BITS, "width of activations and weights (8, 16 or 32)", integer=True)
    pe_array: PeArray = section("the processing-element array (of the first core)")
    noc: Noc = section("the on-chip network (of the first core)")
    glb: Glb = section("the global buffer (of the first core)")
    dram: Dram = section("off-chip memory")
    control: Control = section("clock and control overheads")
    l2: L2 | None = section("optional on-chip L2, shared by the cores", None)
    line_buffer: LineBuffer | None = section("optional line buffers (of the first core)", None)
    cores: tuple[Core, ...] = sections("the cores of a multi-core accelerator: `cores: N` makes N copies of the "
                                       "top-level core sections (pe_array, noc, glb, line_buffer); a list gives each "
                                       "core's name and what differs from them (empty: one core, the top level's)")
    links: tuple[Link, ...] = sections("links between cores, and between a core and the L2 or DRAM")
    plugins: tuple[str, ...] = texts("Python files (relative to the config) imported before it is read: modules "
                                     "that register more implementations, such as a DRAM, NoC or link model")
    description: str = text("one line on what this configuration models", "")
    technology: str = text("process node and voltage the energies refer to", "")

    @property
    def word_bytes(self) -> int:
        """Bytes per data word."""
        return self.precision_bits // 8

    @property
    def all_cores(self) -> tuple[Core, ...]:
        """Its cores: those listed, else the one core the top-level sections describe."""
        if self.cores:
            return self.cores
        return (Core(name="core0", pe_array=self.pe_array, noc=self.noc, glb=self.glb, line_buffer=self.line_buffer),)


CORE_SECTIONS = ("pe_array", "noc", "glb", "line_buffer")  # the sections a core has of its own
MAX_CORES = 256  # cores one accelerator may have (a step names its core in 8 bits)

COMPONENTS = (Accelerator, Core, Link, PeArray, RegisterFiles, Noc, Glb, L2, LineBuffer, Dram, RowBuffer, DramDevice,
              DramTiming, DramRail, DramPower, Compression, Control)
