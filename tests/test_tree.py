"""Hardware as a tree of units: every shipped config loads unchanged as one core; `cores:` as a count or a list
merged over the top-level core sections; links between named units; each bad tree a one-line error naming the
file and the field; the tree's units and each core as a one-core accelerator."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwsim.errors import ConfigError
from hwsim.hardware import load_config, shipped_configs
from hwsim.hardware.loader import describe, from_dict, parse_config, to_dict
from hwsim.hardware.precision import at_precision
from hwsim.hardware.tree import UnitTable, core_hardware

TWO = """base: eyeriss-v1
name: two
cores:
  - {name: big}
  - {name: little, pe_array: {rows: 6, cols: 7}, glb: {size: 54 KiB}, line_buffer: ~}
links:
  - {name: bridge, between: [big, little], width: 64 bit, latency: 6 cycles, energy: 2 pJ}
"""


def _two(tmp_path: Path, text: str = TWO) -> Path:
    path = tmp_path / "two.yaml"
    path.write_text(text)
    return path


MULTICORE = {"quad-eyeriss-mesh": 4, "hetero-edge": 2, "chiplet-2x2": 4}  # the shipped multi-core configs, cores


def test_every_shipped_config_is_one_core_and_its_own_view() -> None:
    for name in shipped_configs():
        hw = load_config(name)
        if name in MULTICORE:
            assert len(hw.all_cores) == MULTICORE[name] and hw.links
            assert core_hardware(hw, 0).glb == hw.glb and core_hardware(hw, 0).cores == ()
            continue
        assert hw.cores == () and hw.links == () and len(hw.all_cores) == 1
        assert core_hardware(hw, 0) == hw  # nothing changes for a single core
        assert hw.all_cores[0].glb is hw.glb and hw.all_cores[0].name == "core0"


def test_a_list_of_cores_merges_each_over_the_top_level_sections(tmp_path: Path) -> None:
    hw = load_config(_two(tmp_path))
    big, little = hw.all_cores
    assert (big.name, little.name) == ("big", "little")
    assert (big.pe_array.rows, big.pe_array.cols, little.pe_array.rows, little.pe_array.cols) == (12, 14, 6, 7)
    assert little.pe_array.mac_energy_pj == big.pe_array.mac_energy_pj  # the rest of the section is the template's
    assert (big.glb.size_bytes, little.glb.size_bytes) == (108 * 1024, 54 * 1024)
    assert hw.glb == big.glb and hw.pe_array == big.pe_array  # the top level is the first core
    view = core_hardware(hw, 1)
    assert view.name == "two.little" and view.pe_array.pes == 42 and view.cores == () and view.dram == hw.dram
    assert hw.links[0].between == ("big", "little") and hw.links[0].width_bits == 64
    assert from_dict(to_dict(hw)) == hw
    paths = {path for path, *_ in describe(hw)}
    assert {"cores[1].pe_array.rows", "links[0].latency", "links[0].between"} <= paths


def test_a_count_of_cores_copies_them_and_precision_rescales_every_core_and_link(tmp_path: Path) -> None:
    hw = load_config(_two(tmp_path, "base: eyeriss-v1\ncores: 3\nlinks: [{name: l, between: [core0, core2], "
                                    "width: 32 bit, energy: 2 pJ}]\n"))
    assert [c.name for c in hw.all_cores] == ["core0", "core1", "core2"]
    assert len({c.glb for c in hw.all_cores}) == 1
    eight = at_precision(hw, 8)
    # 16 → 8 bit: words per port keep their bytes (4 → 8), per-word energies halve (2 pJ → 1 pJ)
    assert [c.glb.words_per_port for c in eight.all_cores] == [8, 8, 8] and eight.links[0].energy_pj == 1.0


def test_the_units_of_a_tree() -> None:
    hw = parse_config(TWO, "two.yaml")
    units = UnitTable.of(hw)
    assert units.names[:2] == ("dram", "big.glb") and "little.noc.psum" in units.names
    assert units.names[-2:] == ("bridge.big>little", "bridge.little>big")
    assert units.core_unit(1, "pe") == units.id("little.pe")


@pytest.mark.parametrize(("text", "fragment"), [
    ("base: eyeriss-v1\ncores: 0\n", "cores: give a number of identical cores from 1 to 256"),
    ("base: eyeriss-v1\ncores: [{name: a}, {name: a}]\n", "cores[1].name: 'a' must be a unique identifier"),
    ("base: eyeriss-v1\ncores: [{name: dram}]\n", "cores[0].name: 'dram' must be a unique identifier"),
    ("base: eyeriss-v1\ncores: [{name: a, glb: {banks: 5}}]\n", "cores[0].glb.banks: 5 banks do not divide"),
    ("base: eyeriss-v1\ncores: 2\nlinks: [{name: x, between: [core0, core9], width: 32 bit}]\n",
     "links[0].between: ['core0', 'core9'] must name two different units of core0, core1, dram"),
    ("base: eyeriss-v1\ncores: 2\nlinks: [{name: x, between: [core0, core1], width: 24 bit}]\n",
     "links[0].width: 24 bit is not a multiple of the 16-bit word"),
    ("base: eyeriss-v1\ncores: 2\nlinks: [{name: x, between: [core0, core1], widht: 32 bit}]\n",
     "links[0].widht: unknown key; did you mean 'width'?"),
    ("base: eyeriss-v1\nplugins: [nowhere.py]\n", "is not a file"),
    ("base: eyeriss-v1\ncores: [{name: a}, 3]\n", "cores[1]: each core is a mapping of its name"),
])
def test_a_bad_tree_is_one_line_naming_the_file_and_field(tmp_path: Path, text: str, fragment: str) -> None:
    path = _two(tmp_path, text)
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    message = str(raised.value)
    assert "\n" not in message and str(path) in message and fragment in message, message
