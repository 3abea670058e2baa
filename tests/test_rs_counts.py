"""Closed-form counts of the row-stationary default mapping (CNNergy's rules as a loop nest): hand-derived
small layers, and equality with the step stream the generator emits for every zoo network."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import small_zoo_graph

from hwsim.analytic.counts import LayerCounts
from hwsim.analytic.estimate import layer_counts as mapped_counts
from hwsim.hardware import load_config
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.mapper import layer_mapping
from hwsim.mapping.nest_schedule import network_schedule
from hwsim.vocab import Access, Level, Operand, StepKind
from hwsim.workload import GraphBuilder, zoo
from hwsim.workload.ir import Layer

EYERISS = load_config("eyeriss-v1")
R, F, U = Access.READ, Access.FILL, Access.UPDATE


def _conv(c: int, m: int, hw_in: int, k: int, padding: int = 0, groups: int = 1):
    b = GraphBuilder("t")
    x = b.input("x", c, hw_in, hw_in)
    b.output("o", b.conv("c", x, m, k, padding=padding, groups=groups))
    return b.build().layer("c")


def layer_counts(layer: Layer, hw: Accelerator, batch: int = 1) -> LayerCounts:
    """The closed-form counts of hwsim's default mapping of `layer`."""
    return mapped_counts(layer, layer_mapping(layer, hw, batch), hw, batch)


def _words(counts: LayerCounts, level: Level, operand: Operand, access: Access) -> int:
    return int(counts.accesses[level, operand, access])


def test_tiny_conv_by_hand() -> None:
    # C=2, M=4, 5x5 input, 3x3 kernel, no padding -> 3x3 ofmap. R=3: 4 sets, q = min(2, 12//3) = 2 = C
    # (rule 1), p = min(24, (224//3)//2 = 37) = 24, fP = 24·4 = 96 > M (rule 4): fP = 4. One band, one pass.
    c = layer_counts(_conv(2, 4, 5, 3), EYERISS)
    filters = 4 * 2 * 3 * 3  # 72 words, 144 B: staged through the 8 KiB filter partition
    assert _words(c, Level.DRAM, Operand.FILTER, R) == filters
    assert _words(c, Level.GLB, Operand.FILTER, F) == filters
    assert _words(c, Level.GLB, Operand.FILTER, R) == filters
    assert _words(c, Level.RF, Operand.FILTER, F) == filters
    assert _words(c, Level.DRAM, Operand.IFMAP, R) == 2 * 5 * 5  # the whole input once
    assert _words(c, Level.GLB, Operand.IFMAP, R) == 2 * 5 * 5  # one pass reads all 5 rows
    assert _words(c, Level.GLB, Operand.PSUM, R) == 0  # a single channel tile: psums start at zero
    assert _words(c, Level.GLB, Operand.PSUM, U) == 4 * 3 * 3
    assert _words(c, Level.DRAM, Operand.OFMAP, U) == 4 * 3 * 3
    macs = 4 * 2 * 9 * 9
    assert (c.macs, c.rf_filter_reads, c.rf_ifmap_reads) == (macs, macs, macs)
    # A psum crosses R·ceil(C/q) = 3 PEs vertically: 2 hops per output word.
    assert c.inter_pe_words == 2 * 36 and c.rf_psum_writes == macs - 72
    # 1 set of 3 PE rows x 3 columns = 9 PEs share 648 MACs: 72 cycles.
    assert (c.passes, c.compute_cycles) == (1, 72)


def test_channel_tiles_and_padding_by_hand() -> None:
    # C=20, M=8, 6x6 input, pad 1 -> 6x6 ofmap. q = 4, sets = 4, q·sets = 16 < C: default rule, chP = 16,
    # p = min(24, 74//4 = 18) = 18 -> fP = 18 > M: fP = 8. Channel tiles of 16 and 4 channels.
    c = layer_counts(_conv(20, 8, 6, 3, padding=1), EYERISS)
    grid = 8 * 6 * 6
    assert _words(c, Level.GLB, Operand.PSUM, R) == 1 * grid  # the second tile reads the first's psums
    assert _words(c, Level.GLB, Operand.PSUM, U) == 2 * grid
    assert _words(c, Level.DRAM, Operand.IFMAP, R) == 20 * 6 * 6  # padding rows are not fetched
    assert _words(c, Level.DRAM, Operand.FILTER, R) == 8 * 20 * 9
    # Hops: tile 1 chains 3·ceil(16/4) = 12 PEs (11 hops), tile 2 chains 3·1 = 3 (2 hops).
    assert c.inter_pe_words == (11 + 2) * grid
    # Tile 1: 8·16·9·36 MACs on ceil(16/4)·1·3·6 = 72 PEs = 576 cycles; tile 2: 8·4·9·36 on 18 PEs = 576.
    assert (c.passes, c.compute_cycles) == (2, 1152)


def test_fully_connected_by_hand() -> None:
    # FC 4x2x2 -> 3: a 2x2 conv over a 2x2 map. sets = 6, q = min(4, 12//2) = 4 = C (rule 1),
    # p = min(24, 112//4 = 28) = 24, fP = 144 > 3 (rule 4): fP = 3.
    b = GraphBuilder("t")
    x = b.input("x", 4, 2, 2)
    b.output("o", b.fc("fc", x, 3))
    c = layer_counts(b.build().layer("fc"), EYERISS, batch=2)
    # Batch 2 fits the GLB in one image group, so the 48 filter words load once for both images.
    assert _words(c, Level.DRAM, Operand.FILTER, R) == 48
    assert _words(c, Level.DRAM, Operand.IFMAP, R) == 2 * 16
    assert _words(c, Level.DRAM, Operand.OFMAP, U) == 2 * 3
    assert c.macs == 2 * 48
    # One set of 2 PE rows, one column: 48 MACs on 2 PEs = 24 cycles per image; one hop per output.
    assert (c.passes, c.compute_cycles, c.inter_pe_words) == (2, 48, 2 * 3)


def test_depthwise_by_hand() -> None:
    # Depthwise 3x3 on 8 channels of 4x4, pad 1: 8 groups of C=1, M=1; each 1·1·9·16 = 144 MACs.
    c = layer_counts(_conv(8, 8, 4, 3, padding=1, groups=8), EYERISS)
    assert c.macs == 8 * 144
    assert _words(c, Level.DRAM, Operand.IFMAP, R) == 8 * 16
    assert _words(c, Level.DRAM, Operand.FILTER, R) == 8 * 9
    # Per group one pass on 1·1·3 rows x 4 columns = 12 PEs: 144 / 12 = 12 cycles.
    assert (c.passes, c.compute_cycles) == (8, 8 * 12)


def test_max_pool_streams_by_hand() -> None:
    b = GraphBuilder("t")
    x = b.input("x", 2, 4, 4)
    b.output("o", b.max_pool("p", x, 2, 2))
    c = layer_counts(b.build().layer("p"), EYERISS)
    assert _words(c, Level.DRAM, Operand.IFMAP, R) == 32 and _words(c, Level.DRAM, Operand.OFMAP, U) == 8
    # 8 outputs x 4 comparisons = 32 ops on 32 PEs: one cycle.
    assert (c.ops, c.passes, c.compute_cycles) == (32, 1, 1)


def _from_steps(steps: np.ndarray, mpc: int, fill_drain: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """Tally a step stream the way a simulator would: one access per transfer end, one pass per COMPUTE."""
    table = np.zeros((len(Level), len(Operand), len(Access)), dtype=np.int64)
    t = steps[steps["kind"] == StepKind.TRANSFER]
    outward = (t["dst"] < t["src"]) & np.isin(t["operand"], [Operand.PSUM, Operand.OFMAP])
    np.add.at(table, (t["src"], t["operand"], np.full(len(t), Access.READ)), t["words"])
    np.add.at(table, (t["dst"], t["operand"], np.where(outward, Access.UPDATE, Access.FILL)), t["words"])
    c = steps[steps["kind"] == StepKind.COMPUTE]
    lanes = c["active_pes"].astype(np.int64) * mpc
    cycles = int((-(-(c["macs"] + c["ops"]) // lanes)).sum()) + len(c) * fill_drain
    scalars = (int(c["macs"].sum()), int(c["ops"].sum()), int(c["rf_psum_writes"].sum()),
               int(c["inter_pe_words"].sum()), len(c), cycles)
    return table, scalars


@pytest.mark.parametrize("name", zoo.names())
def test_closed_form_equals_the_step_stream(name: str) -> None:
    graph = small_zoo_graph(name)
    batch = 3 if name in ("alexnet", "resnet18", "mobilenetv2") else 1
    hw = EYERISS
    for ls in network_schedule(graph, hw, batch).layers:
        mapped = ls.info.record()["mapping"] != "none"
        c = layer_counts(ls.layer, hw, batch) if mapped else mapped_counts(ls.layer, None, hw, 1)
        table, scalars = _from_steps(ls.steps(), hw.pe_array.macs_per_cycle, hw.pe_array.fill_drain_cycles)
        assert (c.transfers == table).all(), ls.layer.name
        assert (c.macs, c.ops, c.rf_psum_writes, c.inter_pe_words, c.passes, c.compute_cycles) == scalars, \
            ls.layer.name
