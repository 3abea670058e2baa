"""Hardware configs: shipped files load with the published numbers; bad files give one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CONFIGS, assert_one_line_error, reference, run_hwsim

from hwsim.errors import ConfigError
from hwsim.hardware import load_config, shipped_configs
from hwsim.hardware.units import BANDWIDTH, BYTES, CYCLES, ENERGY, parse_quantity

EYERISS = (CONFIGS / "eyeriss-v1.yaml").read_text()


def test_all_shipped_configs_load() -> None:
    names = set(shipped_configs())
    assert {"eyeriss-v1", "eyeriss-8bit", "depthfirst-edge", "edge-soc-l2"} <= names
    for name in names:
        acc = load_config(name)
        assert acc.name == name


CNNERGY = reference("cnnergy-energy-per-op.yaml")
SCALE_45_TO_65 = (CNNERGY["scaling"]["node_nm"][1] / CNNERGY["scaling"]["node_nm"][0]) \
    / CNNERGY["scaling"]["voltage_45nm"] ** 2  # CNNergy's 45 nm -> 65 nm scaling, (65/45)/0.9²


def test_eyeriss_v1_matches_cnnergy_table() -> None:
    acc = load_config("eyeriss-v1")
    pj, s, eyeriss = CNNERGY["pj_45nm_0v9"], SCALE_45_TO_65, CNNERGY["eyeriss_v1"]
    assert acc.pe_array.pes == eyeriss["pe_rows"] * eyeriss["pe_cols"]
    rf = acc.pe_array.rf
    assert (rf.filter_words, rf.ifmap_words, rf.psum_words) == tuple(eyeriss["rf_words"].values())
    assert acc.pe_array.mac_energy_pj == pytest.approx(pj["mac"] * s, rel=1e-3)
    assert acc.noc.inter_pe_energy_pj == pytest.approx(pj["inter_pe"] * s, rel=1e-3)
    assert acc.glb.read_energy_pj == pytest.approx(pj["glb"] * s, rel=1e-3)
    assert acc.dram.energy_pj_per_bit * 16 == pytest.approx(pj["dram"] * s, rel=1e-3)
    for name, at_65nm in CNNERGY["pj_65nm_1v"].items():  # the table's own 65 nm column, to its 4 digits
        assert at_65nm == pytest.approx(pj[name] * s, rel=1e-3), name
    assert acc.glb.data_bytes == eyeriss["glb_ifmap_psum_kb"] * 1024  # of the 108 KB, for ifmap + psum
    assert acc.glb.size_bytes == eyeriss["glb_kb"] * 1024
    assert acc.clock_hz == eyeriss["clock_mhz"] * 1e6
    assert acc.dram.latency_cycles == 10  # 50 ns at 200 MHz
    assert acc.control.clock_power_w == pytest.approx(reference("cnnergy-alexnet.yaml")["clock_power_w"])


def test_eight_bit_energies_follow_cnnergy_scaling() -> None:
    acc = load_config("eyeriss-8bit")
    eight, s = CNNERGY["eight_bit_45nm"], SCALE_45_TO_65
    assert acc.pe_array.mac_energy_pj == pytest.approx((eight["add"] + eight["multiply"]) * s, rel=1e-3)
    assert acc.glb.read_energy_pj == pytest.approx(CNNERGY["pj_45nm_0v9"]["glb"] * s * eight["memory_factor"],
                                                   rel=1e-3)


@pytest.mark.parametrize(
    ("text", "dim", "clock", "expected"),
    [
        ("108 KiB", BYTES, None, 108 * 1024),
        ("2 MB", BYTES, None, 2 * 1024 * 1024),
        ("3 kB", BYTES, None, 3000),
        ("12.8 GB/s", BANDWIDTH, 500e6, 25.6),
        ("64 bit/cycle", BANDWIDTH, None, 8),
        ("80 ns", CYCLES, 800e6, 64),
        (12, CYCLES, None, 12),
        ("1.5 nJ", ENERGY, None, 1500),
    ],
)
def test_units(text: object, dim, clock, expected: float) -> None:
    assert parse_quantity(text, dim, clock, "x") == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "dim"),
    [("100 pJ", BYTES), ("100", BYTES), ("ten KiB", BYTES), ("5 KiB", ENERGY), (True, CYCLES)],
)
def test_wrong_units_are_rejected(text: object, dim) -> None:
    with pytest.raises(ConfigError):
        parse_quantity(text, dim, None, "f.yaml: glb.size")


def _variant(tmp_path: Path, old: str, new: str) -> Path:
    assert old in EYERISS, old
    path = tmp_path / "variant.yaml"
    path.write_text(EYERISS.replace(old, new, 1))
    return path


BAD_CONFIGS = [
    # (replace, with, fragments the one-line error must contain)
    ("  size: 108 KiB", "  sise: 108 KiB", ["glb.sise", "unknown key", "did you mean 'size'"]),
    ("  size: 108 KiB", "  size: -4 KiB", ["glb.size", "positive"]),
    ("  size: 108 KiB", "  size: 108 pJ", ["glb.size", "wrong unit", "KiB"]),
    ("  banks: 27 ", "  banks: 25 ", ["glb.banks", "divide"]),
    ("  burst: 64 B", "  burst: 48 B", ["dram.burst", "power of two"]),
    ("clock: 200 MHz\n", "", ["clock", "missing"]),
    ("  rows: 12", "  rows: 12.5", ["pe_array.rows", "whole number"]),
    ("  read_energy: 10.16 pJ", "  read_energy: [10.16 pJ]", ["glb.read_energy", "single value"]),
    ("precision: 16 bit", "precision: 12 bit", ["precision", "8, 16 or 32"]),
    ("name: eyeriss-v1", "name: eyeriss-v1\n  bad: [", ["not valid YAML"]),
]


@pytest.mark.parametrize(("old", "new", "fragments"), BAD_CONFIGS)
def test_bad_config_gives_one_line_error(cli, tmp_path: Path, old: str, new: str, fragments: list[str]) -> None:
    path = _variant(tmp_path, old, new)
    result = cli("config", "validate", str(path))
    assert_one_line_error(result, str(path), *fragments)


def test_error_names_the_line(cli, tmp_path: Path) -> None:
    path = _variant(tmp_path, "  size: 108 KiB", "  sise: 108 KiB")
    line = next(i for i, l in enumerate(path.read_text().splitlines(), 1) if "sise" in l)
    result = cli("config", "validate", str(path))
    assert f"{path}:{line}: glb.sise" in result.err


def test_missing_config_file(cli) -> None:
    result = cli("config", "validate", "no/such/eyeris-v1.yaml")
    assert_one_line_error(result, "no/such/eyeris-v1.yaml", "no such config file")


def test_shipped_name_typo_suggests(cli) -> None:
    result = cli("config", "show", "eyeris-v1")
    assert_one_line_error(result, "did you mean 'eyeriss-v1'")


def test_show_json_is_one_document(cli) -> None:
    result = cli("config", "show", "eyeriss-v1", "--json")
    assert result.code == 0
    doc = result.json()
    params = {p["path"]: p for p in doc["parameters"]}
    assert params["glb.size"]["value"] == 108 * 1024 and params["glb.size"]["unit"] == "B"
    assert all(p["description"] for p in doc["parameters"])
    assert doc["config"]["pe_array"]["rf"]["filter_words"] == 224


def test_cli_subprocess_error_has_no_traceback(tmp_path: Path) -> None:
    path = _variant(tmp_path, "  size: 108 KiB", "  size: -1 MiB")
    result = run_hwsim("config", "validate", str(path))
    assert_one_line_error(result, "glb.size")


def test_debug_shows_traceback(tmp_path: Path) -> None:
    path = _variant(tmp_path, "  size: 108 KiB", "  size: -1 MiB")
    result = run_hwsim("--debug", "config", "validate", str(path))
    assert result.code == 2 and "Traceback" in result.err
