"""The shipped mapping of AlexNet on Eyeriss v1 as the chip ran it (configs/mappings/eyeriss-v1-alexnet-jssc.yaml)
against the paper it comes from: Chen et al., JSSC 2017, its table of row-stationary mapping parameters and GLB
allocation per layer (m, n, e, p, q, r, t; ifmap and psum KB) and Table V's active PEs.

Every expected figure is the paper's, or arithmetic on the paper's parameters written out below.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from hwsim.analytic.nest_counts import nest_counts
from hwsim.hardware import load_config
from hwsim.mapping.mapper import check_mapping
from hwsim.mapping.nest.format import LoopNest, load_mapping
from hwsim.mapping.nest.problem import nest_problem
from hwsim.mapping.nest.validate import tile_words
from hwsim.workload import zoo

MAPPING = Path(__file__).resolve().parents[1] / "configs" / "mappings" / "eyeriss-v1-alexnet-jssc.yaml"

# layer: (M, C, E, R, U, W, pad) of the paper's table (M and C per group as it lists them; W the padded ifmap
# width; pad AlexNet's), its mapping (m, n, e, p, q, r, t), its GLB allocation in KB (ifmap, psum) and Table V's
# active PEs
PAPER = {
    "conv1": ((96, 3, 55, 11, 4, 227, 0), (96, 1, 7, 16, 1, 1, 2), (15.5, 72.1), 154),
    "conv2": ((256, 48, 27, 5, 1, 31, 2), (64, 1, 27, 16, 2, 1, 1), (3.8, 91.1), 135),
    "conv3": ((384, 256, 13, 3, 1, 15, 1), (64, 4, 13, 16, 4, 1, 4), (7.0, 84.5), 156),
    "conv4": ((384, 192, 13, 3, 1, 15, 1), (64, 4, 13, 16, 3, 2, 2), (10.5, 84.5), 156),
    "conv5": ((256, 192, 13, 3, 1, 15, 1), (64, 4, 13, 16, 3, 2, 2), (10.5, 84.5), 156),
}
BATCH = 4


def _nest(name: str) -> LoopNest:
    entry = load_mapping(MAPPING).layer(name)
    assert isinstance(entry, LoopNest)
    return entry


def test_the_file_is_a_valid_mapping_of_alexnet_on_eyeriss_v1() -> None:
    check_mapping(load_mapping(MAPPING), zoo.build("alexnet"), load_config("eyeriss-v1"))


@pytest.mark.parametrize("name", list(PAPER))
def test_its_glb_tiles_are_the_papers_allocation(name: str) -> None:
    (_, _, big_e, big_r, u, width, pad), (m, n, e, _, q, r, _), (ifmap_kb, psum_kb), _ = PAPER[name]
    rows = (e - 1) * u + big_r  # the ifmap rows e output rows read, padding included
    paper_ifmap, psum = n * q * r * rows * width, m * e * big_e * n  # 16-bit words, as the paper allocates
    assert abs(2 * paper_ifmap / 1024 - ifmap_kb) <= 0.1 and abs(2 * psum / 1024 - psum_kb) <= 0.1
    glb = tile_words(_nest(name), nest_problem(zoo.build("alexnet").layer(name), BATCH))["glb"]
    # hwsim keeps no padding in the GLB: the same tile without its pad rows and columns
    assert (glb["ifmap"], glb["psum"]) == (n * q * r * (rows - 2 * pad) * (width - 2 * pad), psum)


@pytest.mark.parametrize("name", list(PAPER))
def test_its_passes_and_their_cycles_are_the_papers(name: str) -> None:
    (big_m, big_c, big_e, big_r, _, _, _), (_, n, e, p, q, r, t), _, active = PAPER[name]
    layer = zoo.build("alexnet").layer(name)
    counts = nest_counts(layer, _nest(name), BATCH, load_config("eyeriss-v1"))
    # a pass: p·t filters by q·r channels of e output rows of n images; passes ⌈M/(p·t)⌉·⌈C/(q·r)⌉·⌈E/e⌉·N/n
    passes = math.ceil(big_m / (p * t)) * math.ceil(big_c / (q * r)) * math.ceil(big_e / e) * BATCH // n
    assert counts.passes == passes
    # each pass spreads its MACs over Table V's active PEs, R·e·r·t of them (CONV1's last strip has 6 rows on
    # 6/7 of the PEs: the same cycles), one MAC per PE and cycle
    assert big_r * e * r * t == active  # CONV2's set of 5 × 27 folded onto 2 × 14 columns
    macs_per_pass = p * t * q * r * big_r * big_r * e * big_e * n
    assert counts.compute_cycles == passes * math.ceil(macs_per_pass / active)
