"""The config's energy table: picojoules per word access at each level, per MAC, per PE-to-PE hop.

Both sides of a cross-check price accesses with this one table (the analytic
models their closed-form counts, the metrics the counts of a trace), so a
difference between them is a difference in counts, never in prices. Levels
are indexed as `hwsim.vocab.Level` (DRAM, L2, GLB, line buffer, RF) and
accesses as Timeloop's (`hwsim.vocab.Access`: read, fill, update); writes
into a level (fills and updates) cost its write energy.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from hwsim.hardware.schema import Accelerator
from hwsim.vocab import LEVEL_NAMES, Level, Operand

COMPONENTS = ("mac", "rf", "inter_pe", "glb", "l2", "line_buffer", "dram", "clock", "static", "control")
TIME_PRICED = ("clock", "static", "control")  # priced over a layer's cycles (control: a share that includes the clock)


@dataclass(frozen=True)
class ComputeCounts:
    """What the passes of a layer did on the PE array: their dense work, and what zero ifmap words spared."""

    macs: int  # multiply-accumulates the passes cover
    ops: int  # non-MAC operations
    rf_filter_reads: int  # filter words the MACs read from RFs
    rf_ifmap_reads: int  # ifmap words the MACs read from RFs
    rf_psum_reads: int  # psum words the MACs read from RFs
    rf_psum_writes: int  # psum words the MACs wrote to RFs
    inter_pe_words: int  # psum words handed PE to PE (spatial reduction)
    inter_pe_ifmap_words: int = 0  # ifmap words forwarded PE to PE (systolic arrays)
    inter_pe_filter_words: int = 0  # filter words forwarded PE to PE (systolic arrays)
    gated_macs: int = 0  # of the MACs, those a zero ifmap word gated or skipped (zero_gating, zero_skipping)
    gated_filter_reads: int = 0  # of the filter RF reads, those gated or skipped with their MACs
    gated_psum_accesses: int = 0  # of the psum RF reads and writes, those spared with them (zero_gating_psums)

    @property
    def hops(self) -> int:
        """Words moved between neighbouring PEs, all operands."""
        return self.inter_pe_words + self.inter_pe_ifmap_words + self.inter_pe_filter_words


@dataclass(frozen=True)
class EnergyTable:
    """Energies of one accelerator, all in pJ."""

    word_pj: np.ndarray  # [level, access]: one word read, filled or updated (0 for absent levels)
    mac_pj: float  # one multiply-accumulate; a non-MAC operation (compare, add) is priced the same
    inter_pe_pj: float  # one psum word forwarded to a neighbouring PE
    clock_pj_per_cycle: float  # clock network energy per cycle the layer takes (P_clk / f_clk)
    static_pj_per_cycle: float  # static (leakage) energy per cycle (P_static / f_clk)
    other_fraction: float  # other control energy as a share of the on-chip total

    def other_control_pj(self, on_chip_pj: float) -> float:
        """CNNergy's other control: fraction f of the total, i.e. f/(1-f) of the rest of on-chip energy."""
        return self.other_fraction / (1.0 - self.other_fraction) * on_chip_pj

    def price(self, transfers: np.ndarray, compute: ComputeCounts,
              cycles: int) -> tuple[dict[str, float], np.ndarray]:
        """Energy by component and by [level, operand] of one layer taking `cycles` (pJ).

        `transfers[level, operand, access]` are the words the layer's transfers
        read, filled and updated. A MAC a zero ifmap word gated or skipped
        (Eyeriss' zero gating) costs no MAC energy, and neither does its filter
        RF read; its ifmap RF read still happens (it is how the zero is seen); its
        psum RF read and write are spared where the counts say so
        (`zero_gating_psums`). The clock and static power are drawn for the layer's
        `cycles` (the simulated span, or a closed form's own latency); other control is
        CNNergy's share of the on-chip total with the clock (static power left out).
        """
        by_level = np.einsum("loa,la->lo", transfers.astype(np.float64), self.word_pj)
        rf = Level.RF
        rf_pj = self.word_pj[rf, 0]
        by_level[rf, Operand.FILTER] += rf_pj * (compute.rf_filter_reads - compute.gated_filter_reads)
        by_level[rf, Operand.IFMAP] += rf_pj * compute.rf_ifmap_reads
        by_level[rf, Operand.PSUM] += rf_pj * (compute.rf_psum_reads + compute.rf_psum_writes
                                               - compute.gated_psum_accesses)
        energy = {
            "mac": self.mac_pj * (compute.macs - compute.gated_macs + compute.ops),
            "rf": float(by_level[rf].sum()),
            "inter_pe": self.inter_pe_pj * compute.hops,
            **{name: float(by_level[i].sum()) for i, name in enumerate(LEVEL_NAMES) if name != "rf"},
            "clock": self.clock_pj_per_cycle * cycles,
        }
        energy["control"] = self.other_control_pj(sum(v for k, v in energy.items() if k != "dram"))
        energy["static"] = self.static_pj_per_cycle * cycles
        return {name: energy[name] for name in COMPONENTS}, by_level


def _read_write(read_pj: float, write_pj: float) -> list[float]:
    return [read_pj, write_pj, write_pj]


def energy_table(hw: Accelerator) -> EnergyTable:
    """The per-access energies `hw` states (no hidden defaults: absent levels cost nothing, never used). A jedec
    DRAM's per-bit energy is derived from its device (a sequential stream's, `hwsim.hardware.dram`); a
    simulation prices its commands instead (`hwsim.metrics.derive`)."""
    dram_word_pj = hw.dram.energy_pj_per_bit * hw.precision_bits
    rows = [
        [dram_word_pj] * 3,
        _read_write(hw.l2.read_energy_pj, hw.l2.write_energy_pj) if hw.l2 else [0.0] * 3,
        _read_write(hw.glb.read_energy_pj, hw.glb.write_energy_pj),
        _read_write(hw.line_buffer.read_energy_pj, hw.line_buffer.write_energy_pj) if hw.line_buffer
        else [0.0] * 3,
        [hw.pe_array.rf.access_energy_pj if hw.pe_array.rf else 0.0] * 3,
    ]
    return EnergyTable(np.array(rows, dtype=np.float64), hw.pe_array.mac_energy_pj, hw.noc.inter_pe_energy_pj,
                       hw.control.clock_power_w / hw.clock_hz * 1e12, hw.control.static_power_w / hw.clock_hz * 1e12,
                       hw.control.other_fraction)


def with_glb_data_size(hw: Accelerator, data_bytes: int) -> Accelerator:
    """`hw` whose GLB holds `data_bytes` of ifmaps and psums (CNNergy's "GLB size"; the filter partition
    is kept beside it), its access energies scaled by the config's CACTI-like law
    E(S) = E·(S / S_config)^energy_size_exponent."""
    glb = hw.glb
    scale = (data_bytes / glb.data_bytes) ** glb.energy_size_exponent
    size_bytes = data_bytes + glb.filter_bytes
    banks = glb.banks if size_bytes % glb.banks == 0 else 1
    return replace(hw, glb=replace(glb, size_bytes=size_bytes, banks=banks, read_energy_pj=glb.read_energy_pj * scale,
                                   write_energy_pj=glb.write_energy_pj * scale))
