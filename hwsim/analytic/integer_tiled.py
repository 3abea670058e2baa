"""Integer-tiled access counts of a row-stationary schedule, by closed form.

For the schedule `hwsim.mapping.row_stationary` emits, this computes per
layer the exact words read, filled and updated at every level for every
operand (Timeloop's vocabulary), the MACs, the RF accesses of the passes,
the PE-to-PE psum hops, the number of passes and their compute cycles, from
the mapping parameters alone: sums over the tile sizes and positions of the
loop nest, never a walk over its steps. The simulator, which executes the
steps, must count exactly the same.

Loop nest (per group): filter tiles (fP) → image groups (n) → y bands (y_oc)
→ x bands (x_oc) → channel tiles (chP) × kernel-row folds → passes of y_of
rows × images. Hence per layer, with G groups, B images, T channel×fold
tiles, N_b bands per filter tile and image group:
- filters: every band reloads all M·C·R·S filter words (DRAM → GLB filter
  partition → RF, or DRAM → RF when a pass's filters exceed the partition);
- ifmaps: every filter tile reloads the band's real (unpadded) input rows
  and columns into the GLB; each pass reads its own rows from the GLB;
- psums: every tile but the first reads the band's psums back from the
  GLB; every tile writes them (updates); the last leaves the ofmap;
- ofmaps: each output word leaves the GLB for DRAM once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hwsim.hardware.energy import ComputeCounts
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.row_stationary import (
    NO_STEPS,
    WEIGHTED,
    ConvProblem,
    RsParams,
    cols_in,
    conv_problem,
    filters_staged,
    rows_in,
    rs_params,
    split_sizes,
    stream_tiles,
    tiles,
)
from hwsim.vocab import ACCESS_SHAPE, Access, Level, Operand, ceil_div
from hwsim.workload.ir import Graph, Layer


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
    inter_pe_words: int  # psum words forwarded PE to PE
    passes: int  # processing passes on the PE array
    compute_cycles: int  # Σ over passes of ceil((MACs + ops) / (active PEs · MACs per cycle)) + fill/drain

    @property
    def compute(self) -> ComputeCounts:
        """The passes' work in the energy table's terms."""
        return ComputeCounts(self.macs, self.ops, self.rf_filter_reads, self.rf_ifmap_reads, self.rf_psum_reads,
                             self.rf_psum_writes, self.inter_pe_words)

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


def _add_transfer(table: np.ndarray, operand: Operand, src: Level, dst: Level, words: int) -> None:
    """Account `words` moved src → dst: a read at src, a fill at dst (an update for psums/ofmaps moving out)."""
    table[src, operand, Access.READ] += words
    outward = dst < src and operand in (Operand.PSUM, Operand.OFMAP)
    table[dst, operand, Access.UPDATE if outward else Access.FILL] += words


def _sizes(extent: int, size: int) -> np.ndarray:
    return np.array([b - a for a, b in tiles(extent, size)], dtype=np.int64)


def conv_counts(layer: Layer, p_: ConvProblem, m: RsParams, hw: Accelerator, batch: int) -> LayerCounts:
    """Closed-form counts of a row-stationary CONV / FC / transposed-conv layer (see module docstring)."""
    G, S = p_.groups, p_.S
    fp, cp, rp = _sizes(p_.M, m.fP), _sizes(p_.C, m.chP), _sizes(p_.R, m.r_fold)
    y_bands, x_bands = tiles(p_.E, m.y_oc), tiles(p_.F, m.x_oc)
    widths = np.array([b - a for a, b in x_bands], dtype=np.int64)
    image_groups = len(tiles(batch, m.n))
    folds, c_tiles = len(rp), len(cp)
    T = c_tiles * folds
    bands = image_groups * len(y_bands) * len(x_bands)  # per filter tile
    band_rows_in = sum(rows_in(p_, y0, y1) for y0, y1 in y_bands)
    band_cols_in = sum(cols_in(p_, x0, x1) for x0, x1 in x_bands)
    y_passes = [(y0 + a, y0 + b) for y0, y1 in y_bands for a, b in tiles(y1 - y0, m.y_of)]
    pass_rows_in = sum(rows_in(p_, a, b) for a, b in y_passes)
    grid = p_.M * p_.E * p_.F  # psum words per group and image over the output grid
    filter_words = G * bands * p_.M * p_.C * p_.R * S
    ifmap_fill = G * len(fp) * batch * p_.C * folds * band_rows_in * band_cols_in
    ifmap_pass = G * len(fp) * batch * p_.C * folds * pass_rows_in * band_cols_in
    ofmap = G * batch * p_.M * (p_.out_h or p_.E) * (p_.out_w or p_.F)

    table = np.zeros(ACCESS_SHAPE, dtype=np.int64)
    if filters_staged(hw, m, S):
        _add_transfer(table, Operand.FILTER, Level.DRAM, Level.GLB, filter_words)
        _add_transfer(table, Operand.FILTER, Level.GLB, Level.RF, filter_words)
    else:
        _add_transfer(table, Operand.FILTER, Level.DRAM, Level.RF, filter_words)
    _add_transfer(table, Operand.IFMAP, Level.DRAM, Level.GLB, ifmap_fill)
    _add_transfer(table, Operand.IFMAP, Level.GLB, Level.RF, ifmap_pass)
    _add_transfer(table, Operand.PSUM, Level.GLB, Level.RF, G * (T - 1) * batch * grid)
    _add_transfer(table, Operand.PSUM, Level.RF, Level.GLB, G * T * batch * grid)
    _add_transfer(table, Operand.OFMAP, Level.GLB, Level.DRAM, ofmap)

    macs = G * batch * p_.M * p_.C * p_.R * S * p_.E * p_.F
    chain = (rp[None, :] * ceil_div(cp, m.q)[:, None] - 1).sum()  # Σ over tiles of (PEs a psum crosses − 1)
    inter_pe = int(G * batch * grid * chain)
    passes = G * len(fp) * T * len(x_bands) * batch * len(y_passes)
    # A pass keeps ceil(fp/p)·ceil(cp/q)·rp·rows PEs busy with fp·cp·rp·S·rows·width MACs: rp and rows
    # cancel, so its cycles depend on the (filter tile, channel tile, x band) only.
    work = fp[:, None, None] * cp[None, :, None] * S * widths[None, None, :]
    lanes = ceil_div(fp, m.p)[:, None, None] * ceil_div(cp, m.q)[None, :, None] * hw.pe_array.macs_per_cycle
    cycles = int(ceil_div(work, lanes).sum()) * G * batch * len(y_passes) * folds
    compute_cycles = cycles + passes * hw.pe_array.fill_drain_cycles
    return LayerCounts(layer.name, table, macs, 0, macs, macs, macs, macs - inter_pe, inter_pe, passes,
                       compute_cycles)


def stream_counts(layer: Layer, hw: Accelerator, batch: int) -> LayerCounts:
    """Counts of a streaming (unweighted) layer: inputs DRAM → GLB → array, outputs array → GLB → DRAM."""
    ins = sum(s.elements for s in layer.in_shapes) * batch
    out = layer.out_shape.elements * batch
    table = np.zeros(ACCESS_SHAPE, dtype=np.int64)
    _add_transfer(table, Operand.IFMAP, Level.DRAM, Level.GLB, ins)
    _add_transfer(table, Operand.IFMAP, Level.GLB, Level.RF, ins)
    _add_transfer(table, Operand.OFMAP, Level.RF, Level.GLB, out)
    _add_transfer(table, Operand.OFMAP, Level.GLB, Level.DRAM, out)
    n = stream_tiles(layer, hw)
    ops = split_sizes(layer.ops, n)
    lanes = np.clip(ops, 1, hw.pe_array.pes) * hw.pe_array.macs_per_cycle
    cycles = int(ceil_div(ops, lanes).sum()) * batch
    passes = n * batch
    return LayerCounts(layer.name, table, 0, layer.ops * batch, 0, 0, 0, 0, 0, passes,
                       cycles + passes * hw.pe_array.fill_drain_cycles)


def layer_counts(layer: Layer, hw: Accelerator, batch: int = 1) -> LayerCounts:
    """The integer-tiled counts of `layer` as `hwsim.mapping.row_stationary` schedules it."""
    if layer.kind in NO_STEPS:
        return LayerCounts(layer.name, np.zeros(ACCESS_SHAPE, dtype=np.int64), 0, 0, 0, 0, 0, 0, 0, 0, 0)
    if layer.kind in WEIGHTED:
        return conv_counts(layer, conv_problem(layer), rs_params(layer, hw, batch), hw, batch)
    return stream_counts(layer, hw, batch)


def network_counts(graph: Graph, hw: Accelerator, batch: int = 1) -> list[LayerCounts]:
    """`layer_counts` of every layer of `graph`, in order."""
    return [layer_counts(layer, hw, batch) for layer in graph]
