"""What one layer's schedule does, in words, operations and cycles: the record every closed-form model fills
and the cross-check compares with the counts of a trace."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hwsim.hardware.energy import ComputeCounts
from hwsim.vocab import Access, Level, Operand


@dataclass(frozen=True)
class LayerCounts:
    """What one layer's schedule does, in words, operations and cycles (whole batch)."""

    layer: str
    transfers: np.ndarray  # [Level, Operand, Access] words moved by transfers (read at the source,
    # fill or update at the destination)
    macs: int  # multiply-accumulates
    ops: int  # non-MAC operations (pool comparisons, element-wise adds, ...)
    rf_filter_reads: int  # filter words the MACs read from RFs
    rf_ifmap_reads: int  # ifmap words the MACs read from RFs
    rf_psum_reads: int  # psum words the MACs read from RFs
    rf_psum_writes: int  # psum words the MACs write to RFs (the rest go to the next PE)
    inter_pe_words: int  # psum words handed PE to PE (spatial reduction)
    passes: int  # processing passes on the PE array
    compute_cycles: int  # Σ over passes of the array's pass time (the dataflow's timing)
    inter_pe_ifmap_words: int = 0  # ifmap words forwarded PE to PE (systolic)
    inter_pe_filter_words: int = 0  # filter words forwarded PE to PE (systolic)
    gated_macs: int = 0  # MACs a zero ifmap word gated or skipped
    gated_filter_reads: int = 0  # filter RF reads gated or skipped with them
    gated_psum_accesses: int = 0  # psum RF reads and writes spared with them (zero_gating_psums)

    @property
    def compute(self) -> ComputeCounts:
        """The passes' work in the energy table's terms."""
        return ComputeCounts(self.macs, self.ops, self.rf_filter_reads, self.rf_ifmap_reads, self.rf_psum_reads,
                             self.rf_psum_writes, self.inter_pe_words, self.inter_pe_ifmap_words,
                             self.inter_pe_filter_words, self.gated_macs, self.gated_filter_reads,
                             self.gated_psum_accesses)

    @property
    def accesses(self) -> np.ndarray:
        """[Level, Operand, Access] words including the RF accesses of the MACs (RF psum writes as updates)."""
        total = self.transfers.copy()
        rf = Level.RF
        total[rf, Operand.FILTER, Access.READ] += self.rf_filter_reads
        total[rf, Operand.IFMAP, Access.READ] += self.rf_ifmap_reads
        total[rf, Operand.PSUM, Access.READ] += self.rf_psum_reads
        total[rf, Operand.PSUM, Access.UPDATE] += self.rf_psum_writes
        return total


def add_transfer(table: np.ndarray, operand: Operand, src: Level, dst: Level, words: int,
                 dst_words: int | None = None) -> None:
    """Account `words` moved src → dst: a read at src, a fill at dst (an update for psums/ofmaps moving out);
    `dst_words` when the destination takes another count (one end keeps tiles coded)."""
    table[src, operand, Access.READ] += words
    outward = dst < src and operand in (Operand.PSUM, Operand.OFMAP)
    table[dst, operand, Access.UPDATE if outward else Access.FILL] += words if dst_words is None else dst_words
