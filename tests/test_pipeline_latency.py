"""The latency estimate with double buffering (`hwsim.analytic.pipeline`), derived by hand on a layer small enough
to follow every word: whether the next GLB tiles fit beside the live ones decides whether their loads hide."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwsim.analytic.nest_counts import nest_counts
from hwsim.analytic.pipeline import pipeline_latency
from hwsim.hardware import load_config
from hwsim.hardware.energy import with_glb_data_size
from hwsim.mapping.dataflows import dataflow_of
from hwsim.mapping.nest.format import Array, Loop, LoopNest, Storage
from hwsim.mapping.nest.problem import nest_problem
from hwsim.mapping.nest.validate import check_nest
from hwsim.workload import GraphBuilder
from hwsim.workload.ir import Layer

# A 1x1 convolution, C = M = 4 channels, 4 x 4 outputs, one image, on eyeriss-v1 with one GLB port
# (tests/configs/eyeriss-v1-one-port.yaml: 16-bit words, DRAM 8 B per cycle and 50 ns = 10 cycles of latency at
# 200 MHz, GLB one port of 4 words, 64-bit ifmap, filter and psum buses):
#
#   dram  P=2                      two bands of 2 output rows
#   glb   (no loops)               keeps ifmap and psum; filters bypass it (DRAM -> RFs)
#   array rows C=4, cols P=2, stream Q=4
#   rf    M=4                      4 filter words, 1 ifmap word, 4 psums per PE
#
# GLB tiles per band: ifmap 4 ch x 2 rows x 4 cols = 32 words, psums 4 x 2 x 4 = 32; both live (the RFs take the
# ifmap column by column, not whole). When the band advances, the next band's two tiles need 32 + 32 more words:
# live + next = 128 words.
#
# Words: DRAM reads the ifmap once (64) and the filters once (16, straight to the RFs) and takes the ofmap once
# (64): 144 words = 288 B = 36 cycles. GLB: ifmap filled 64 and read 64 (the window slides, each word sent
# once), psums updated 64 (C is spread on the rows: no partial sum returns) and read 64 for DRAM: 256 words / 4 =
# 64 cycles, the busiest resource. Compute: 2 passes of 4 x 2 x 4 x 4 = 128 MACs on 4 x 2 PEs = 16 cycles each,
# 32, plus the filters' load before the passes, 16 words x 16 bit / 64 bit = 4 cycles: 36.
# A load of a 32-word tile from DRAM: 64 B / 8 = 8 cycles + 10 latency = 18. The first ifmap tile cannot hide: 18.
# If the next band's tiles do not fit, its ifmap load and its psum tile's load and write-back wait: 18 + 2 x 18 =
# 54 cycles, once (the band advances once).
BUSIEST, FIRST_LOAD, PASSES, WAIT = 64, 18, 36, 18 + 2 * 18
ONE_PORT = Path(__file__).parent / "configs" / "eyeriss-v1-one-port.yaml"


def _layer_and_nest() -> tuple[Layer, LoopNest]:
    b = GraphBuilder("tiny")
    x = b.input("x", 4, 4, 4)
    y = b.conv("c", x, 4, 1)
    b.output("o", y)
    layer = b.build().layer("c")
    dims = {"N": 1, "G": 1, "M": 4, "C": 4, "P": 4, "Q": 4, "R": 1, "S": 1}
    nest = LoopNest("c", dims, (Storage("dram", (Loop("P", 2),)),
                                Storage("glb", (), frozenset({"ifmap", "psum"}))),
                    Array((Loop("C", 4),), (Loop("P", 2),), (Loop("Q", 4),)),
                    Storage("rf", (Loop("M", 4),)))
    return layer, nest


@pytest.mark.parametrize("glb_words, exposed", [(128, 0), (127, WAIT)])
def test_next_tiles_hide_only_when_they_fit_beside_the_live_ones(glb_words: int, exposed: int) -> None:
    hw = with_glb_data_size(load_config(ONE_PORT), glb_words * 2)
    layer, nest = _layer_and_nest()
    check_nest(nest, nest_problem(layer, 1), hw, dataflow_of(hw))
    counts = nest_counts(layer, nest, 1, hw)
    latency = pipeline_latency(layer, nest, 1, hw, counts)
    assert latency.bound_cycles == BUSIEST
    assert latency.pass_cycles == PASSES
    assert latency.first_load_cycles == FIRST_LOAD
    assert latency.exposed_cycles == exposed
    assert latency.estimate_cycles == BUSIEST + exposed + FIRST_LOAD
    assert set(latency.waits) == ({"glb.ifmap", "glb.psum"} if exposed else set())
