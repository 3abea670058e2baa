"""CNNergy, faithful form: the analytic energy model of a row-stationary accelerator.

CNNergy (Mannan et al., the model behind NeuPart) estimates the energy of a
CNN layer on an Eyeriss-like accelerator in two steps:

1. `cnnergy_schedule` picks, by fixed rules, how much of the layer one
   *pass* of the PE array covers (channels `chP`, filters `fP`, an ifmap
   region `x_if × y_if`) and how many passes and images the GLB holds.
2. `cnnergy_energy` counts the data moved and the MACs of one pass, prices
   them with the energy table, and multiplies by the number of passes.

"Faithful" means the model reproduces the reference implementation's
numbers, including its quirks: pass counts are fractional (AlexNet CONV1 has
4.8 filter passes), the GLB halving loops halve exactly (27.5 ofmap rows),
and the ofmap is RLC-compressed even when it is dense. The equations are
those restated in the project's reference notes (cnnergy.md); where the
restatement is terse, the public MATLAB reference (CNNergy,
src/Analytical_Model.m) decided: with all channels in one pass and no room
for a whole image, y_oc stays E; rule 6 always drops at least one filter.
`tests/test_cnnergy.py` reproduces the reference AlexNet run per layer and
component. An integer-tiled variant (what a simulator executes) is a
separate model, not this one.

Symbols follow the paper: R filter size, M filters, H padded ifmap size,
C channels, U stride, E ofmap size, n images per batch, J × K PE array,
Bw bits per word. Sizes in KB are 1024 bytes.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TypeVar

from hwsim.errors import ConfigError, NetworkError
from hwsim.hardware.schema import Accelerator

RLC_WORD_BITS = 64
"""DRAM traffic is RLC-packed into 64-bit words (the reference's 64/Bw factor)."""

RLC_VALUES_PER_WORD = {16: 3, 8: 5}
"""CNNergy's compression factor c: non-zero values per 64-bit RLC word
(three 5-bit-run + 16-bit pairs, or five 4-bit-run + 8-bit pairs)."""

BYTES_PER_KB = 1024

T = TypeVar("T")


# ----- inputs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CnnergyLayer:
    """One layer as CNNergy sees it: a square convolution (FC as an R = H conv).

    `H` is the *padded* ifmap size. `sp_if` / `sp_of` are the fractions of
    zeros in the ifmap / ofmap. `n` is the batch the energy is computed for
    (the reference's "batch used"). `first_layer` marks the network input,
    whose ifmap is read from DRAM uncompressed.
    """

    name: str
    R: int
    M: int
    H: int
    C: int
    U: int
    E: int
    sp_if: float
    sp_of: float
    n: int
    first_layer: bool = False

    def __post_init__(self) -> None:
        for key in ("R", "M", "H", "C", "U", "E", "n"):
            if getattr(self, key) < 1:
                raise NetworkError(f"layer {self.name!r}: {key} must be at least 1, got {getattr(self, key)}")
        for key in ("sp_if", "sp_of"):
            if not 0.0 <= getattr(self, key) <= 1.0:
                raise NetworkError(f"layer {self.name!r}: {key} is a fraction of zeros in [0, 1], "
                                   f"got {getattr(self, key)}")
        if self.H < self.R:
            raise NetworkError(f"layer {self.name!r}: padded ifmap H={self.H} is smaller than the filter R={self.R}")
        expected_e = (self.H - self.R) // self.U + 1
        if expected_e != self.E:
            raise NetworkError(f"layer {self.name!r}: E={self.E} but (H - R) // U + 1 = {expected_e}; "
                               f"H must be the padded ifmap size")

    @property
    def macs(self) -> int:
        """Dense multiply-accumulates for one image (R²·E²·C·M)."""
        return self.R * self.R * self.E * self.E * self.C * self.M


@dataclass(frozen=True)
class CnnergyHardware:
    """The accelerator numbers CNNergy reads, under the model's names, energies per word."""

    rows: int  # J
    cols: int  # K
    filter_rf_words: int
    ifmap_rf_words: int
    psum_rf_words: int
    glb_kb: float  # GLB share for ifmap + psum
    word_bits: int  # Bw
    mac_pj: float
    rf_pj: float
    inter_pe_pj: float
    glb_pj: float
    dram_pj: float  # per word: pJ/bit × Bw
    other_fraction: float  # other control as a share of the total

    @classmethod
    def from_accelerator(cls, acc: Accelerator) -> CnnergyHardware:
        """Read J, K, the RF sizes, the GLB data share and the energy table from a config."""
        pe = acc.pe_array
        if pe.rf is None:
            raise ConfigError(f"{acc.name}: CNNergy models a row-stationary PE with register files; the config "
                              "has no pe_array.rf section")
        return cls(rows=pe.rows, cols=pe.cols, filter_rf_words=pe.rf.filter_words,
                   ifmap_rf_words=pe.rf.ifmap_words, psum_rf_words=pe.rf.psum_words,
                   glb_kb=acc.glb.data_bytes / BYTES_PER_KB, word_bits=acc.precision_bits,
                   mac_pj=pe.mac_energy_pj, rf_pj=pe.rf.access_energy_pj, inter_pe_pj=acc.noc.inter_pe_energy_pj,
                   glb_pj=acc.glb.read_energy_pj, dram_pj=acc.dram.energy_pj_per_bit * acc.precision_bits,
                   other_fraction=acc.control.other_fraction)

    def kb(self, words: float) -> float:
        """KB occupied by `words` words of Bw bits."""
        return words * self.word_bits / 8 / BYTES_PER_KB


def compression_factor(word_bits: int) -> int:
    """CNNergy's RLC factor c: 3 for 16-bit data, 5 for 8-bit (defined for no other width)."""
    try:
        return RLC_VALUES_PER_WORD[word_bits]
    except KeyError:
        raise ConfigError(f"CNNergy defines RLC compression for 8- and 16-bit data only, "
                          f"not {word_bits}-bit; set precision to 8 or 16 bit") from None


def rlc_words_per_word(word_bits: int, sparsity: float) -> float:
    """DRAM words moved per raw word of a tensor with `sparsity` zeros, RLC-compressed.

    Non-zeros are packed c to a 64-bit word: (1 − sp)/c · (64/Bw).
    """
    return (1.0 - sparsity) / compression_factor(word_bits) * (RLC_WORD_BITS / word_bits)


# ----- scheduling -------------------------------------------------------------------------------


@dataclass(frozen=True)
class CnnergyMapping:
    """The schedule of one layer: what one pass covers and what the GLB holds.

    Counts are floats where the reference lets them be fractional (p, fP,
    chP under rule 3, x_if/x_oc/y_oc after halving). `proposed_batch` is the
    batch the GLB could hold (the reference's first run); the energy uses the
    layer's own `n`.
    """

    sets: int  # sets per pass, floor(J / R)
    q: int  # channels per set
    p: float  # filters per set
    ch_pass: float  # chP: channels per pass
    f_pass: float  # fP: filters per pass
    all_channels: bool  # z: every channel fits in one pass
    rules: tuple[int, ...]  # the exception rules (1..6) that fired
    pe_rows_used: int  # h = ceil(R·chP / q): PE rows a psum crosses
    x_if: float  # ifmap width per pass
    y_if: int  # ifmap height per pass
    y_of: int  # ofmap rows per pass (K columns, or all E)
    x_oc: float  # ofmap width held in the GLB
    y_oc: float  # ofmap height held in the GLB
    ifmap_kb: float  # one image's ifmap for one pass, x_if × y_if × chP
    psum_kb: float  # one image's psums, x_oc × y_oc × fP (with z the reference lets them use the rest)
    n_max: float  # images whose ifmap + psums fit the GLB (before the y_oc halving)
    proposed_batch: int


@dataclass(frozen=True)
class _PeAllocation:
    sets: int
    q: int
    p: float
    ch_pass: float
    f_pass: float
    all_channels: bool
    rules: tuple[int, ...]


def _allocate_pe_array(layer: CnnergyLayer, hw: CnnergyHardware) -> _PeAllocation:
    """Channels and filters per pass: the defaults and exception rules 1–5.

    A set is R PE rows; each PE's ifmap RF holds q filter rows (channels),
    its filter RF p·q rows, so one pass convolves chP = q·sets channels with
    fP = p filters unless a rule applies.
    """
    r = layer.R
    sets = hw.rows // r
    q = hw.ifmap_rf_words // r
    if sets < 1 or q < 1:
        raise ConfigError(f"layer {layer.name!r}: CNNergy needs R={r} filter rows to fit the {hw.rows} PE rows "
                          f"and the {hw.ifmap_rf_words}-word ifmap RF")
    rows_per_filter_rf = hw.filter_rf_words // r
    p: float = rows_per_filter_rf // q
    ch_pass: float = q * sets
    f_pass: float = p
    all_channels = False
    rules: list[int] = []
    if q >= layer.C:  # rule 1: all channels in one set, spare sets take more filters
        q = layer.C
        ch_pass = layer.C
        p = rows_per_filter_rf // layer.C
        f_pass = p * sets
        all_channels = True
        rules.append(1)
    elif q < layer.C < q * sets:  # rule 2: all channels in fewer sets, the rest take more filters
        ch_pass = layer.C
        filter_sets = sets // math.ceil(layer.C / q)
        f_pass = p * filter_sets
        all_channels = True
        rules.append(2)
    if r == 1 and layer.E != 1 and not all_channels:  # rule 3: 1×1 conv, fixed 72 channels per pass
        ch_pass = 72
        filter_sets = sets // math.ceil(72 / q)
        if layer.M <= 18:
            p = layer.M
            f_pass = layer.M
        elif layer.M < 36:
            p = layer.M / filter_sets
            f_pass = layer.M
        else:
            f_pass = p * filter_sets
        rules.append(3)
    if f_pass > layer.M:  # rule 4: fewer filters than a pass could take
        p = layer.M / sets
        f_pass = layer.M
        rules.append(4)
    if p > hw.psum_rf_words:  # rule 5: a PE holds one psum row per filter
        p = hw.psum_rf_words
        f_pass = hw.psum_rf_words * sets
        rules.append(5)
    return _PeAllocation(sets, q, p, ch_pass, f_pass, all_channels, tuple(rules))


def _ifmap_region(layer: CnnergyLayer, hw: CnnergyHardware) -> tuple[int, int]:
    """(y_if, y_of): the K PE columns cover K ofmap rows, or the whole ifmap if it is shorter."""
    rows_for_k = layer.U * (hw.cols - 1) + layer.R
    if rows_for_k >= layer.H:
        return layer.H, layer.E
    return rows_for_k, hw.cols


@dataclass(frozen=True)
class _OfmapHeight:
    y_oc: float
    f_pass: float
    proposed_batch: int
    rule6: bool


def _fit_ofmap_height(layer: CnnergyLayer, hw: CnnergyHardware, alloc: _PeAllocation, x_oc: float, y_of: int,
                      ifmap_kb: float, n_max: float) -> _OfmapHeight:
    """How many ofmap rows (y_oc) the GLB holds psums for, and the batch it proposes.

    With n_max ≥ 1 images fitting, the whole height; with all channels in
    one pass (z) too, the psums then simply take what the ifmap leaves;
    otherwise y_oc is halved (exactly) until ifmap + psums fit. Rule 6 then
    raises y_oc to one pass's y_of so no PE column idles and, when z = 0,
    drops filters until the psums fit again. As in the reference, rule 6
    drops at least one filter (its loop tests after decrementing).
    """
    y_oc: float = layer.E
    f_pass = alloc.f_pass
    if n_max >= 1:
        return _OfmapHeight(y_oc, f_pass, math.floor(n_max), False)
    if not alloc.all_channels:
        while ifmap_kb + hw.kb(x_oc * y_oc * f_pass) > hw.glb_kb:
            y_oc /= 2
    if y_oc >= y_of:
        return _OfmapHeight(y_oc, f_pass, 1, False)
    if not alloc.all_channels:
        f_pass -= 1
        while ifmap_kb + hw.kb(x_oc * y_of * f_pass) > hw.glb_kb:
            f_pass -= 1
        if f_pass <= 0:
            raise ConfigError(f"layer {layer.name!r}: {hw.glb_kb:g} KB of GLB cannot hold one pass's ifmap and "
                              f"the psums of one filter; enlarge glb.size")
    return _OfmapHeight(y_of, f_pass, 1, True)


def cnnergy_schedule(layer: CnnergyLayer, hw: Accelerator) -> CnnergyMapping:
    """The reference's scheduling rules for one layer on `hw`.

    Rules 1–5 fix chP and fP (`_allocate_pe_array`); the K PE columns fix
    one pass's rows (`_ifmap_region`). Then the GLB (ifmap + psums, KB)
    decides the rest: while one pass's ifmap alone does not fit, x_if is
    halved (exactly, so x_oc may be fractional); `_fit_ofmap_height` picks
    y_oc and the proposed batch.
    """
    params = CnnergyHardware.from_accelerator(hw)
    alloc = _allocate_pe_array(layer, params)
    y_if, y_of = _ifmap_region(layer, params)
    x_if: float = layer.H
    x_oc: float = layer.E
    ifmap_kb = params.kb(x_if * y_if * alloc.ch_pass)
    psum_kb = params.kb(layer.E * layer.E * alloc.f_pass)
    while ifmap_kb >= params.glb_kb:
        x_if /= 2
        if x_if < layer.R:
            raise ConfigError(f"layer {layer.name!r}: {params.glb_kb:g} KB of GLB cannot hold one ifmap row band "
                              f"of {alloc.ch_pass:g} channels; enlarge glb.size")
        x_oc = (x_if - layer.R) / layer.U + 1
        ifmap_kb = params.kb(x_if * y_if * alloc.ch_pass)
        psum_kb = params.kb(x_oc * layer.E * alloc.f_pass)
    n_max = params.glb_kb / (ifmap_kb + psum_kb)
    height = _fit_ofmap_height(layer, params, alloc, x_oc, y_of, ifmap_kb, n_max)
    rules = alloc.rules + ((6,) if height.rule6 else ())
    return CnnergyMapping(sets=alloc.sets, q=alloc.q, p=alloc.p, ch_pass=alloc.ch_pass, f_pass=height.f_pass,
                          all_channels=alloc.all_channels, rules=rules,
                          pe_rows_used=math.ceil(layer.R * alloc.ch_pass / alloc.q), x_if=x_if, y_if=y_if,
                          y_of=y_of, x_oc=x_oc, y_oc=height.y_oc, ifmap_kb=ifmap_kb,
                          psum_kb=params.kb(x_oc * height.y_oc * height.f_pass), n_max=n_max,
                          proposed_batch=height.proposed_batch)


# ----- energy -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CnnergyEnergy:
    """Energy of a layer (or a sum of layers) for one image, in pJ, by component.

    The components split the reference's per-pass expression
    `e_MAC·NZ + e_RF·(3·NZ + NZ − IPE + MACs − NZ) + e_IPE·IPE` as MAC = the
    e_MAC term, RF = the e_RF term, inter-PE = the e_IPE term. In the RF
    term a non-zero MAC reads ifmap, filter and psum (3·NZ) and writes its
    psum unless the psum goes to the next PE up instead (NZ − IPE); a zero
    ifmap is still read, the rest is skipped (MACs − NZ). A filter word
    costs e_DRAM + e_GLB: the e_GLB share is GLB, the e_DRAM share DRAM. GLB
    also holds the ifmap reads (e_GLB·Il) and psum traffic (e_GLB·ps, twice
    after the first channel pass). DRAM holds the ifmap reads (compressed
    except for the first layer) and the compressed ofmap write-back.
    """

    mac_pj: float
    rf_pj: float
    inter_pe_pj: float
    glb_filter_pj: float
    glb_ifmap_pj: float
    glb_psum_pj: float
    dram_filter_pj: float
    dram_ifmap_pj: float
    dram_ofmap_pj: float
    clock_pj: float
    other_control_pj: float

    @property
    def glb_pj(self) -> float:
        """All GLB accesses: filter staging, ifmap reads, psum reads and writes."""
        return self.glb_filter_pj + self.glb_ifmap_pj + self.glb_psum_pj

    @property
    def dram_pj(self) -> float:
        """All DRAM accesses: filters, ifmap reads, ofmap write-back."""
        return self.dram_filter_pj + self.dram_ifmap_pj + self.dram_ofmap_pj

    @property
    def on_chip_pj(self) -> float:
        """MAC, RF, inter-PE and GLB: what the other-control share is taken of (with the clock)."""
        return self.mac_pj + self.rf_pj + self.inter_pe_pj + self.glb_pj

    @property
    def without_control_pj(self) -> float:
        """Total without clock and other control (what EyTool reports)."""
        return self.on_chip_pj + self.dram_pj

    @property
    def total_pj(self) -> float:
        return self.without_control_pj + self.clock_pj + self.other_control_pj

    def __add__(self, other: CnnergyEnergy) -> CnnergyEnergy:
        return CnnergyEnergy(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))


ZERO_ENERGY = CnnergyEnergy(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


def clock_energy_pj(macs: float, clock_power_w: float, throughput_gmacs: float) -> float:
    """Clock-tree energy: its power for the time the (dense) MACs take at the reference throughput."""
    seconds = macs / (throughput_gmacs * 1e9)
    return clock_power_w * seconds * 1e12


def other_control_energy_pj(on_chip_pj: float, clock_pj: float, other_fraction: float) -> float:
    """Other control as `other_fraction` of a total that excludes DRAM: f/(1 − f)·(on-chip + clock)."""
    return other_fraction / (1.0 - other_fraction) * (on_chip_pj + clock_pj)


def cnnergy_energy(layer: CnnergyLayer, mapping: CnnergyMapping, hw: Accelerator, clock_power_w: float,
                   throughput_gmacs: float) -> CnnergyEnergy:
    """Energy per image of `layer` under `mapping` on `hw`, per component.

    One pass moves fl = fP·chP·R² filter words, Il = x_if·y_if·chP ifmap
    words (Il_ov = x_if·(y_if − (R − U))·chP from DRAM for each further
    pass down the rows, which reuses the overlap) and ps = fP·x_oc·y_of
    psums, and does R²·x_oc·y_of·fP·chP MACs. A filter load serves
    y_pass = y_oc/y_of passes of each of the n images, so the batch only
    amortises filter traffic; all other terms are the same per image. The
    first of the C/chP channel passes only writes psums, later ones read
    and write them. All of this repeats (M/fP)·(E/y_oc)·(E/x_oc) times;
    every count stays fractional, as in the reference.
    """
    params = CnnergyHardware.from_accelerator(hw)
    m = mapping
    r = layer.R
    filter_words = m.f_pass * m.ch_pass * r * r
    ifmap_words = m.x_if * m.y_if * m.ch_pass
    ifmap_overlap_words = m.x_if * (m.y_if - (r - layer.U)) * m.ch_pass
    psum_words = m.f_pass * m.x_oc * m.y_of
    macs = r * r * m.x_oc * m.y_of * m.f_pass * m.ch_pass
    nonzero_macs = macs * (1.0 - layer.sp_if)
    inter_pe_hops = (m.pe_rows_used - 1) * m.x_oc * m.f_pass * m.y_of
    rf_accesses = 3 * nonzero_macs + nonzero_macs - inter_pe_hops + macs - nonzero_macs

    y_pass = m.y_oc / m.y_of
    channel_passes = layer.C / m.ch_pass
    blocks = (layer.M / m.f_pass) * (layer.E / m.y_oc) * (layer.E / m.x_oc)
    filter_loads_per_image = channel_passes * blocks / layer.n
    band_loads = channel_passes * blocks  # ifmap bands from DRAM, per image
    array_passes = y_pass * channel_passes * blocks  # per image
    psum_moves = y_pass * (2 * channel_passes - 1) * blocks  # write on the first channel pass, then read + write

    dram_per_ifmap_word = 1.0 if layer.first_layer else rlc_words_per_word(params.word_bits, layer.sp_if)
    band_dram_words = (ifmap_words + (y_pass - 1) * ifmap_overlap_words) * dram_per_ifmap_word
    ofmap_dram_words = layer.E * layer.E * layer.M * rlc_words_per_word(params.word_bits, layer.sp_of)

    mac_pj = params.mac_pj * nonzero_macs * array_passes
    rf_pj = params.rf_pj * rf_accesses * array_passes
    inter_pe_pj = params.inter_pe_pj * inter_pe_hops * array_passes
    glb_filter_pj = params.glb_pj * filter_words * filter_loads_per_image
    glb_ifmap_pj = params.glb_pj * ifmap_words * array_passes
    glb_psum_pj = params.glb_pj * psum_words * psum_moves
    clock_pj = clock_energy_pj(layer.macs, clock_power_w, throughput_gmacs)
    on_chip_pj = mac_pj + rf_pj + inter_pe_pj + glb_filter_pj + glb_ifmap_pj + glb_psum_pj
    return CnnergyEnergy(mac_pj=mac_pj, rf_pj=rf_pj, inter_pe_pj=inter_pe_pj, glb_filter_pj=glb_filter_pj,
                         glb_ifmap_pj=glb_ifmap_pj, glb_psum_pj=glb_psum_pj,
                         dram_filter_pj=params.dram_pj * filter_words * filter_loads_per_image,
                         dram_ifmap_pj=params.dram_pj * band_dram_words * band_loads,
                         dram_ofmap_pj=params.dram_pj * ofmap_dram_words, clock_pj=clock_pj,
                         other_control_pj=other_control_energy_pj(on_chip_pj, clock_pj, params.other_fraction))


# ----- a whole network --------------------------------------------------------------------------


@dataclass(frozen=True)
class CnnergyLayerResult:
    """One layer's schedule and energy."""

    layer: CnnergyLayer
    mapping: CnnergyMapping
    energy: CnnergyEnergy


@dataclass(frozen=True)
class CnnergyNetworkResult:
    """Per-layer results in order, and their sum."""

    layers: tuple[CnnergyLayerResult, ...]

    @property
    def total(self) -> CnnergyEnergy:
        """Energy per image summed over all layers."""
        total = ZERO_ENERGY
        for result in self.layers:
            total = total + result.energy
        return total

    @property
    def proposed_batches(self) -> list[int]:
        """The batch each layer's GLB could hold (the reference's first run)."""
        return [result.mapping.proposed_batch for result in self.layers]


def cnnergy_network(layers: Iterable[CnnergyLayer], hw: Accelerator, clock_power_w: float | None = None,
                    throughput_gmacs: float | None = None) -> CnnergyNetworkResult:
    """Schedule and price every layer; the clock model defaults to `hw.control`."""
    power_w = hw.control.clock_power_w if clock_power_w is None else clock_power_w
    gmacs = hw.control.reference_throughput_gmacs if throughput_gmacs is None else throughput_gmacs
    results = []
    for layer in layers:
        mapping = cnnergy_schedule(layer, hw)
        results.append(CnnergyLayerResult(layer, mapping, cnnergy_energy(layer, mapping, hw, power_w, gmacs)))
    return CnnergyNetworkResult(tuple(results))


# ----- the layer table (CSV) --------------------------------------------------------------------

INT_COLUMNS = ("R", "M", "H", "C", "U", "E", "n")
FLOAT_COLUMNS = ("sp_if", "sp_of")
REQUIRED_COLUMNS = ("name", "R", "M", "H", "C", "U", "E", "sp_if", "sp_of", "n")
FIRST_COLUMN = "first"
_TRUE = frozenset({"1", "true", "yes", "y"})
_FALSE = frozenset({"0", "false", "no", "n", ""})


def _parse_int(cell: str) -> int:
    return int(cell.strip())


def _parse_float(cell: str) -> float:
    value = float(cell.strip())
    if not math.isfinite(value):
        raise ValueError(cell)
    return value


def _parse_bool(cell: str) -> bool:
    text = cell.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(cell)


def _check_header(path: Path, line: int, header: Sequence[str]) -> list[str]:
    """The stripped column names; missing, unknown or repeated columns are errors."""
    columns = [name.strip() for name in header]
    allowed = (*REQUIRED_COLUMNS, FIRST_COLUMN)
    for index, name in enumerate(columns, start=1):
        if name not in allowed:
            raise NetworkError(f"{path}:{line}: column {index} {name!r} is not a CNNergy column; "
                               f"expected {','.join(REQUIRED_COLUMNS)} and optionally {FIRST_COLUMN}")
        if columns.index(name) != index - 1:
            raise NetworkError(f"{path}:{line}: column {name!r} appears twice")
    missing = [name for name in REQUIRED_COLUMNS if name not in columns]
    if missing:
        raise NetworkError(f"{path}:{line}: missing column(s) {', '.join(missing)}; "
                           f"the header must name {','.join(REQUIRED_COLUMNS)}")
    return columns


def _cell(path: Path, line: int, cells: dict[str, str], key: str, parse: Callable[[str], T], kind: str) -> T:
    """One parsed cell; a bad one is an error naming the file, line and column."""
    try:
        return parse(cells[key])
    except ValueError:
        raise NetworkError(f"{path}:{line}: column {key!r}: {cells[key]!r} is not {kind}") from None


def _parse_row(path: Path, line: int, columns: list[str], row: list[str], first_by_default: bool) -> CnnergyLayer:
    """One CSV row as a layer."""
    if len(row) != len(columns):
        raise NetworkError(f"{path}:{line}: {len(row)} cells, the header has {len(columns)} columns")
    cells = dict(zip(columns, row))
    ints = {key: _cell(path, line, cells, key, _parse_int, "an integer") for key in INT_COLUMNS}
    floats = {key: _cell(path, line, cells, key, _parse_float, "a number") for key in FLOAT_COLUMNS}
    first = (_cell(path, line, cells, FIRST_COLUMN, _parse_bool, "a boolean (1/0, true/false)")
             if FIRST_COLUMN in cells else first_by_default)
    name = cells["name"].strip()
    if not name:
        raise NetworkError(f"{path}:{line}: column 'name' is empty")
    try:
        return CnnergyLayer(name=name, R=ints["R"], M=ints["M"], H=ints["H"], C=ints["C"], U=ints["U"],
                            E=ints["E"], sp_if=floats["sp_if"], sp_of=floats["sp_of"], n=ints["n"],
                            first_layer=first)
    except NetworkError as exc:
        raise NetworkError(f"{path}:{line}: {exc}") from None


def read_layer_table(path: str | Path) -> list[CnnergyLayer]:
    """Layers from a CSV with header `name,R,M,H,C,U,E,sp_if,sp_of,n` (any column order).

    The header is the first line that is neither blank nor a `#` comment;
    such lines are skipped everywhere. The first row's ifmap is taken as
    the network input (read from DRAM uncompressed) unless an optional
    `first` column (1/0, true/false; empty = false) is present: then it
    alone decides, row by row. Bad input raises a one-line `NetworkError`
    naming the file, line and column.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise NetworkError(f"{path}: cannot read the CNNergy layer table: {exc}") from None
    reader = csv.reader(io.StringIO(text, newline=""))
    columns: list[str] | None = None
    layers: list[CnnergyLayer] = []
    try:
        for row in reader:
            line = reader.line_num
            if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
                continue
            if columns is None:
                columns = _check_header(path, line, row)
                continue
            layers.append(_parse_row(path, line, columns, row, first_by_default=not layers))
    except csv.Error as exc:  # a NUL byte, say
        raise NetworkError(f"{path}:{reader.line_num}: malformed CSV: {exc}") from None
    if columns is None:
        raise NetworkError(f"{path}: no header; expected the header {','.join(REQUIRED_COLUMNS)}")
    if not layers:
        raise NetworkError(f"{path}: no layer rows after the header")
    return layers
