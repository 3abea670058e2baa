"""`hwsim estimate`: both models, the GLB sweep, every zoo network and light ONNX model, bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import onnx
import pytest
from conftest import DATA, assert_one_line_error, reference

from hwsim.workload import zoo

LIGHT = sorted((Path(onnx.__file__).parent / "backend" / "test" / "data" / "light").glob("*.onnx"))
CNNERGY_TABLE = DATA / "cnnergy-alexnet-layers.csv"
CNNERGY_RUN = reference("cnnergy-alexnet.yaml")  # the reference run's clock model and totals
PES = 12 * 14


def _strict_json(text: str) -> dict:
    """JSON that rejects NaN and Infinity (Python's json accepts them by default)."""
    def refuse(token: str) -> None:
        raise AssertionError(f"non-finite number {token} in the output")
    return json.loads(text, parse_constant=refuse)


def _check_document(doc: dict, total_macs: int) -> None:
    assert sum(l["macs"] for l in doc["layers"]) == doc["totals"]["macs"] == total_macs
    for layer in doc["layers"]:
        assert all(v >= 0 for v in layer["energy_pj"].values()), layer["name"]
        cycles = layer["latency_cycles"]
        # The bound is the busiest resource; the array needs at least MACs / PEs cycles.
        assert cycles["bound"] == max(cycles["compute"], cycles["dram"], cycles["glb"], cycles["noc"])
        assert cycles["compute"] >= math.ceil(layer["macs"] / PES), layer["name"]
        assert 0 <= layer["utilization"] <= 1, layer["name"]


@pytest.mark.parametrize("name", zoo.names())
def test_estimate_every_zoo_network(cli, name: str) -> None:
    result = cli("estimate", name, "--hw", "eyeriss-v1", "--json")
    assert result.code == 0, result.err
    _check_document(_strict_json(result.out), zoo.build(name).total_macs)


@pytest.mark.parametrize("path", LIGHT, ids=lambda p: p.stem)
def test_estimate_every_light_model(cli, path: Path) -> None:
    result = cli("estimate", str(path), "--hw", "eyeriss-v1", "--json")
    assert result.code == 0, result.err
    doc = _strict_json(result.out)
    assert doc["totals"]["total_energy_pj"] > 0
    assert sum(1 for l in doc["layers"] if l["kind"] == "conv") == sum(
        1 for n in onnx.load(str(path), load_external_data=False).graph.node if n.op_type == "Conv")


def test_estimate_table_names_every_layer(cli) -> None:
    result = cli("estimate", "alexnet", "--hw", "eyeriss-v1", "--batch", "4")
    assert result.code == 0, result.err
    for name in ("conv1", "conv5", "fc8", "total", "latency bound"):
        assert name in result.out


def test_dense_ofmap_traffic_by_hand(cli) -> None:
    doc = _strict_json(cli("estimate", "alexnet", "--hw", "eyeriss-v1", "--batch", "2", "--json").out)
    conv1 = next(l for l in doc["layers"] if l["name"] == "conv1")
    # Every ofmap word of both images leaves for DRAM once: 96 x 55 x 55 words each.
    assert conv1["accesses_words"]["dram"]["ofmap"]["update"] == 2 * 96 * 55 * 55


def test_zero_gating_lowers_mac_energy_only_by_the_density(cli) -> None:
    dense = _strict_json(cli("estimate", "alexnet", "--hw", "eyeriss-v1", "--json").out)
    sparse = _strict_json(cli("estimate", "alexnet", "--hw", "eyeriss-v1", "--sparsity", "alexnet-measured",
                              "--json").out)
    d3 = next(l for l in dense["layers"] if l["name"] == "conv3")
    s3 = next(l for l in sparse["layers"] if l["name"] == "conv3")
    zeros = s3["ifmap_zero_fraction"]
    assert zeros == 0.725  # the measured 72.5 % zeros of conv3's ifmap, used as given
    # eyeriss-v1 gates: each pass of W MACs spares ⌊W · 0.725⌋ of them, so the layer spares between
    # 0.725 · MACs − passes and 0.725 · MACs.
    macs, passes, gated = s3["macs"], s3["passes"], s3["gated_macs"]
    assert 0.725 * macs - passes < gated <= 0.725 * macs
    mac_pj = 1.694
    assert s3["energy_pj"]["mac"] == pytest.approx(d3["energy_pj"]["mac"] - mac_pj * gated, rel=1e-12)
    # a gated MAC spares its filter RF read and (zero_gating_psums) its psum RF read and write: 3 RF accesses
    assert s3["energy_pj"]["rf"] == pytest.approx(d3["energy_pj"]["rf"] - 3 * mac_pj * gated, rel=1e-12)
    # eyeriss-v1 codes ifmaps and ofmaps on its DRAM link: the sparse layer moves fewer DRAM words; the dense one
    # moves its tiles raw (coded they would grow).
    assert s3["accesses_words"]["dram"]["ifmap"]["read"] < 0.4 * d3["accesses_words"]["dram"]["ifmap"]["read"]
    assert d3["accesses_words"]["dram"]["ofmap"]["update"] == 384 * 13 * 13  # one image, every ofmap word raw


def test_cnnergy_layer_table_reproduces_the_reference(cli) -> None:
    clock_w = CNNERGY_RUN["clock_power_w"]
    result = cli("estimate", "--model", "cnnergy", "--layers", str(CNNERGY_TABLE), "--hw", "eyeriss-v1",
                 "--clock-power", str(clock_w), "--throughput-gmacs", str(CNNERGY_RUN["throughput_gmacs"]), "--json")
    assert result.code == 0, result.err
    totals = _strict_json(result.out)["totals"]["energy_per_image_pj"]
    # The reference run: 10.91 mJ per image, 6.31 mJ without clock and other control.
    assert totals["total"] / 1e9 == pytest.approx(CNNERGY_RUN["total_mj"], rel=0.01)
    without_control = (totals["total"] - totals["clock"] - totals["control"]) / 1e9
    assert without_control == pytest.approx(CNNERGY_RUN["without_control_mj"], rel=0.01)
    # Halving the clock power halves the clock share (the control model is linear in it).
    half = _strict_json(cli("estimate", "--model", "cnnergy", "--layers", str(CNNERGY_TABLE), "--hw", "eyeriss-v1",
                            "--clock-power", str(clock_w / 2), "--json").out)["totals"]["energy_per_image_pj"]
    assert half["clock"] == pytest.approx(totals["clock"] / 2, rel=1e-9)


def test_glb_sweep_minimum_is_moderate_for_8bit_alexnet(cli) -> None:
    result = cli("estimate", "alexnet", "--hw", "eyeriss-8bit", "--model", "cnnergy", "--sweep",
                 "glb.size=8KB..512KB", "--json")
    assert result.code == 0, result.err
    doc = _strict_json(result.out)
    sizes = [p["bytes"] for p in doc["points"]]
    assert sizes == [8192 * 2**k for k in range(7)]
    # Small GLBs spill to DRAM, large ones pay for every access: the minimum is in between.
    assert 8192 < doc["optimum_bytes"] < 512 * 1024
    first, last = doc["points"][0], doc["points"][-1]
    assert first["relative_to_optimum"] > 1.05 and last["relative_to_optimum"] > 1.0
    # The GLB energy per access follows E ~ S^0.5: 4x the size, 2x the energy per access.
    table = cli("estimate", "alexnet", "--hw", "eyeriss-8bit", "--sweep", "glb.size=25KB..100KB:2")
    assert table.code == 0 and "2.54" in table.out and "5.08" in table.out


def test_sweep_points_and_bad_specs(cli) -> None:
    doc = _strict_json(cli("estimate", "alexnet", "--hw", "eyeriss-v1", "--sweep", "glb.size=16KB..64KB:3",
                           "--json").out)
    assert [p["bytes"] for p in doc["points"]] == [16384, 32768, 65536]
    assert_one_line_error(cli("estimate", "alexnet", "--hw", "eyeriss-v1", "--sweep", "glb.banks=1..2"), "glb.size")
    assert_one_line_error(cli("estimate", "alexnet", "--hw", "eyeriss-v1", "--sweep", "glb.size=64KB..8KB"),
                          "LOW < HIGH")
    assert_one_line_error(cli("estimate", "alexnet", "--hw", "eyeriss-v1", "--sweep", "glb.size=8 pJ..9KB"),
                          "unit")


def test_estimate_bad_input(cli, tmp_path: Path) -> None:
    assert_one_line_error(cli("estimate", "--layers", str(CNNERGY_TABLE), "--hw", "eyeriss-v1"), "--model cnnergy")
    assert_one_line_error(cli("estimate", "--hw", "eyeriss-v1"), "name a network")
    bad = tmp_path / "bad.csv"
    bad.write_text("name,R,M\nC1,3,4\n")
    assert_one_line_error(cli("estimate", "--model", "cnnergy", "--layers", str(bad), "--hw", "eyeriss-v1"),
                          str(bad))
    assert_one_line_error(cli("estimate", "alexnet", "--hw", "nonexistent-chip"), "nonexistent-chip")
