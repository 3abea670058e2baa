"""The flows called directly, as a notebook or the sweep runner calls them: estimate, simulate, check,
memory plans, phases and depth-first, against hand calculations, the papers' figures and each other's
independent computations."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from hwsim.errors import ConfigError, HwsimError
from hwsim.flows import (
    EstimateSettings,
    LayerTable,
    check_front_points,
    check_network,
    check_simulation,
    depth_first_front,
    estimate_cnnergy,
    estimate_mapping,
    glb_sizes,
    simulate_network,
    study_memory,
    study_phases,
    sweep_glb_size,
)
from hwsim.hardware import load_config
from hwsim.mapping.mapper import default_mapping
from hwsim.workload import zoo

REPO = Path(__file__).resolve().parents[1]
CNNERGY_TABLE = REPO / "tests" / "data" / "cnnergy-alexnet-layers.csv"

# The phases paper's example CNN (DSD'20, Table II): [1,32,32] -> conv 17x17, 4 filters -> [4,16,16]
# -> conv 5x5 stride 3, crop 1, 3 filters -> [3,4,4] -> dense -> [2,1,1]. MACs by hand: every output
# element times its window.
N2_MACS = 4 * 16 * 16 * (17 * 17 * 1)  # 295,936
N3_MACS = 3 * 4 * 4 * (5 * 5 * 4)  # 4,800
N4_MACS = 2 * (3 * 4 * 4)  # 96
EXAMPLE_MACS = N2_MACS + N3_MACS + N4_MACS  # 300,832
EYERISS_MAC_PJ = 1.694  # configs/eyeriss-v1.yaml pe_array.mac_energy
EYERISS_LANES = 12 * 14  # PEs, one MAC per cycle each


@pytest.fixture(scope="module")
def example():
    return zoo.build("phases_example", None)


@pytest.fixture(scope="module")
def eyeriss():
    return load_config("eyeriss-v1")


# ----- estimate ------------------------------------------------------------------------------------------


def test_estimate_rs_totals_by_hand(example, eyeriss) -> None:
    r = estimate_mapping(example, eyeriss)
    assert r.totals.macs == EXAMPLE_MACS
    # Dense (no zero gating): every MAC is priced at the array's MAC energy, nothing else is a MAC.
    assert r.totals.energy_by_component_pj["mac"] == pytest.approx(EXAMPLE_MACS * EYERISS_MAC_PJ, rel=1e-12)
    # No schedule beats every PE busy every cycle.
    assert r.totals.latency_cycles >= math.ceil(EXAMPLE_MACS / EYERISS_LANES)
    # Compulsory DRAM traffic at 16 bit: the image read once (1x32x32) and the two output values written.
    assert r.totals.dram_bytes >= 2 * (32 * 32 + 2)
    assert estimate_mapping(example, eyeriss, batch=2).totals.macs == 2 * EXAMPLE_MACS
    with pytest.raises(HwsimError, match="batch 0"):
        estimate_mapping(example, eyeriss, batch=0)


def test_estimate_takes_names_and_overrides_the_clock_power(eyeriss) -> None:
    by_name = estimate_mapping("phases_example", "eyeriss-v1")
    assert by_name.totals.macs == EXAMPLE_MACS
    # Clock energy is P_clk per MAC at the reference throughput: half the power, half the clock energy.
    half = estimate_mapping("phases_example", eyeriss, clock_power_w=eyeriss.control.clock_power_w / 2)
    assert half.totals.energy_by_component_pj["clock"] == pytest.approx(
        by_name.totals.energy_by_component_pj["clock"] / 2, rel=1e-12)
    assert half.hardware.control.clock_power_w == eyeriss.control.clock_power_w / 2


def test_estimate_cnnergy_reference_table_gives_the_papers_total() -> None:
    # CNNergy's reference AlexNet run: 10.91 mJ per image (tests/data/cnnergy-alexnet-layers.csv holds its inputs).
    c = estimate_cnnergy(LayerTable(str(CNNERGY_TABLE)), "eyeriss-v1")
    assert c.total().total_pj / 1e9 == pytest.approx(10.91, rel=0.01)
    assert len(c.names) == len(c.result.layers) == 8  # CONV1-5, FC6-8


def test_glb_sizes_and_the_energy_size_law(example) -> None:
    assert glb_sizes(8192, 65536) == (8192, 16384, 32768, 65536)
    assert glb_sizes(1000, 3000) == (1000, 2000, 3000)  # doubling, then the top
    assert glb_sizes(16384, 65536, 3) == (16384, 32768, 65536)  # geometric: x2 per step
    for low, high, points in ((0, 8192, None), (8192, 8192, None), (8192, 65536, 1)):
        with pytest.raises(ConfigError, match="0 < LOW < HIGH"):
            glb_sizes(low, high, points)
    # eyeriss-v1: 10.16 pJ per access at 100 KiB, E ~ S^0.5: 64 B -> 10.16 * 0.025, 25 KiB -> 10.16 / 2.
    s = sweep_glb_size(example, "eyeriss-v1", (64, 25 * 1024, 100 * 1024))
    assert [p.glb_read_energy_pj for p in s.points] == pytest.approx([0.254, 5.08, 10.16], rel=1e-12)
    tiny = s.points[0]
    assert tiny.energy_per_image_pj is None and "n2" in (tiny.error or "")
    assert s.optimum.data_bytes in (25 * 1024, 100 * 1024)
    with pytest.raises(ConfigError, match="no size in the range"):
        sweep_glb_size(example, "eyeriss-v1", (16, 32))
    with pytest.raises(HwsimError, match="cnnergy"):
        sweep_glb_size(LayerTable(str(CNNERGY_TABLE)), "eyeriss-v1", (100 * 1024,), EstimateSettings(model="mapping"))


# ----- simulate and check --------------------------------------------------------------------------------


def test_simulation_traces_the_workload_and_respects_the_bound(example, eyeriss, tmp_path: Path) -> None:
    sim = simulate_network(example, eyeriss, trace_path=tmp_path / "ex.h5")
    assert sim.trace.exists()
    assert sim.totals.macs == sim.network_macs == EXAMPLE_MACS  # PE records summed vs the IR
    assert sim.totals.latency_cycles == sim.result.cycles
    est = estimate_mapping(example, eyeriss)
    assert sim.totals.latency_cycles >= est.totals.latency_cycles  # the estimate is a lower bound
    assert sim.totals.dram_bytes == est.totals.dram_bytes  # closed form and trace agree word for word
    assert 0 < sim.peak_occupancy_bytes["glb.data"] <= eyeriss.glb.data_bytes


def test_simulation_of_some_levels_and_two_images(example, eyeriss, tmp_path: Path) -> None:
    sim = simulate_network(example, eyeriss, batch=2, trace_path=tmp_path / "b2.h5", levels=frozenset({"dram"}))
    assert sim.network_macs == 2 * EXAMPLE_MACS
    assert sim.totals.macs == 0  # the PE array's records were not kept
    assert sim.totals.dram_bytes == estimate_mapping(example, eyeriss, batch=2).totals.dram_bytes
    with pytest.raises(HwsimError, match="every level"):
        check_simulation(sim)
    with pytest.raises(HwsimError, match="batch 0"):
        simulate_network(example, eyeriss, batch=0, trace_path=tmp_path / "none.h5")
    assert not (tmp_path / "none.h5").exists()


def test_check_passes_and_can_fail(example, eyeriss, tmp_path: Path) -> None:
    report = check_network(example, eyeriss)
    assert report.ok and [l.name for l in report.layers] == ["n2", "n3", "n4"]  # the layers that compute
    two = simulate_network(example, eyeriss, batch=2, trace_path=tmp_path / "two.h5")
    assert check_simulation(two).ok
    # The trace of two images against the estimate of the mapping of one: every data count differs.
    wrong = check_simulation(dataclasses.replace(two, spec=dataclasses.replace(
        two.spec, batch=1, plan=default_mapping(example, eyeriss, 1))))
    assert not wrong.ok
    macs = [r for r in wrong.mismatches if r.level == "pe" and r.operand == "macs"]
    assert [(r.analytic, r.simulated) for r in macs] == [(N2_MACS, 2 * N2_MACS), (N3_MACS, 2 * N3_MACS),
                                                        (N4_MACS, 2 * N4_MACS)]


# ----- memory plans and phases ---------------------------------------------------------------------------


def test_memory_study_of_the_papers_example(example, tmp_path: Path) -> None:
    study = study_memory(example, "edge-soc-l2", bits=8, trace_dir=tmp_path)
    rows = {s.strategy: s for s in study.strategies}
    # 8-bit tensors: n1 1024 B, n2 1024 B, n3 48 B, n4 2 B.
    assert rows["edge"].total_bytes == 1024 + 1024 + 48 + 2  # one buffer per edge
    assert rows["bound"].total_bytes == rows["bound"].bound_bytes == 1024 + 1024  # n2's input and output live
    assert rows["phases"].total_bytes == 544 + 384 + 48 + 2  # the paper's phased buffers (Table II)
    assert rows["phases"].ratio_to_bound == pytest.approx(978 / 2048)
    assert study.l2_bytes == 2 * 1024 * 1024 and rows["edge"].fits_l2
    assert study.ok
    simulated = [s for s in study.strategies if s.simulation is not None]
    assert {s.strategy for s in simulated} == {"edge", "reuse", "greedy", "ceva", "phases"}
    assert all(s.simulation.trace.exists() for s in simulated)
    with pytest.raises(HwsimError, match="unknown strategy"):
        study_memory(example, "edge-soc-l2", strategies=("lifo",))


def test_phases_study_of_the_papers_example(example, tmp_path: Path) -> None:
    study = study_phases(example, "edge-soc-l2", trace_dir=tmp_path)
    assert dict(study.phases) == {"n1": 32, "n2": 16, "n3": 4, "n4": 1, "n5": 1}  # Table II / Algorithm 3
    assert list(study.phased.sizes.bytes_) == [544, 384, 48, 2]
    assert list(study.one_phase.sizes.bytes_) == [1024, 1024, 48, 2]
    assert study.ok and not study.csdf.deadlocked_actors
    assert study.simulation is not None and set(study.simulation) == {"one_phase", "phased"}
    # at 8 bit on the 16-bit eyeriss-v1 the phases run on the config rescaled to 8 bit: the buffers, in bytes,
    # are the 8-bit ones above (Table II), and the simulation confirms them
    rescaled = study_phases(example, "eyeriss-v1", bits=8, trace_dir=tmp_path / "v1")
    assert rescaled.hardware.name == "eyeriss-v1@8b" and rescaled.ok
    assert list(rescaled.phased.sizes.bytes_) == [544, 384, 48, 2]


# ----- depth-first ---------------------------------------------------------------------------------------


def test_depth_first_front_and_a_simulated_point(tmp_path: Path) -> None:
    graph = zoo.build("dmcnn-vd", (24, 32))
    study = depth_first_front(graph, bits=8)
    on_chip = [f.point.on_chip_bytes for f in study.front]
    dram = [f.point.dram_bytes for f in study.front]
    assert on_chip == sorted(on_chip) and dram == sorted(dram, reverse=True)  # a Pareto front: no point beats another
    (checked,) = check_front_points(graph, "depthfirst-edge", study.pareto.front, [0], trace_path=tmp_path / "p.h5")
    assert checked.position == 0 and checked.check.ok and (tmp_path / "p.h5").exists()
    with pytest.raises(HwsimError, match="the front has"):
        check_front_points(graph, "depthfirst-edge", study.pareto.front, [len(study.front)])
