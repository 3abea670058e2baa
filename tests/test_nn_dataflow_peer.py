"""tools/nn_dataflow_peer.py without nn_dataflow: its reading and translation of nn_dataflow's schedules, run on
schedules nn_dataflow 2.1 printed once (tests/data/nn-dataflow-alexnet.json, AlexNet's conv and FC layers on
eyeriss-v1's 12x14 array limited to its RF and GLB partitions, batch 4; rewritten by `python
tools/nn_dataflow_peer.py --record FILE`), and the peers' throwaway environments kept between runs."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from hwsim.analytic.nest_counts import nest_counts
from hwsim.hardware import load_config
from hwsim.hardware.energy import energy_table
from hwsim.mapping.nest.format import nest_data
from hwsim.vocab import Level, Operand
from hwsim.workload import zoo

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "tests" / "data" / "nn-dataflow-alexnet.json"
BATCH = 4  # the recorded run's


def _tool(name: str) -> Any:
    """tools/NAME.py as a module (the tools are scripts, not a package: their own imports of each other resolve
    in tools/, which is on the path only while the module loads)."""
    if name not in sys.modules:
        sys.path.insert(0, str(ROOT / "tools"))
        try:
            importlib.import_module(name)
        finally:
            sys.path.remove(str(ROOT / "tools"))
    return sys.modules[name]


@pytest.fixture(scope="module")
def recorded() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(RECORDED.read_text())
    return doc


@pytest.fixture(scope="module")
def peers(recorded: dict[str, Any]) -> dict[str, Any]:
    return _tool("nn_dataflow_peer").peer_layers(recorded["schedules"], recorded["spec"])  # type: ignore[no-any-return]


def test_the_recording_is_the_run_the_tool_would_ask_for(recorded: dict[str, Any]) -> None:
    # the spec the tool builds today from AlexNet and eyeriss-v1 is the one nn_dataflow was given
    tool = _tool("nn_dataflow_peer")
    layers = [l for l in zoo.build("alexnet") if l.name in {s["name"] for s in recorded["spec"]["layers"]}]
    assert tool.peer_spec(layers, load_config("eyeriss-v1"), BATCH, partitioned=True) == recorded["spec"]
    assert list(recorded["schedules"]) == ["conv1", "conv2", "conv3", "conv4", "conv5", "fc6", "fc7", "fc8"]


def test_a_schedule_reads_as_nn_dataflow_counted_it(peers: dict[str, Any], recorded: dict[str, Any]) -> None:
    conv2 = peers["conv2"]  # one of two towers: nn_dataflow has no groups
    assert conv2.groups == 2 and conv2.fold == (1, 1) and conv2.flpeset == (5, 27) and conv2.ppeset == (10, 14)
    # DRAM: filters 614400 + ifmaps 184512 + psums 373248 words per tower
    assert conv2.level_words("DRAM") == 2 * (614400 + 184512 + 373248)
    levels = _tool("nn_dataflow_peer").peer_levels(conv2, recorded["spec"])
    # MACs: 27 x 27 outputs x 128 filters x 48 channels x 5 x 5 taps per tower and image, 2 towers, 4 images
    assert levels.words["MAC"] == 27 * 27 * 128 * 48 * 25 * 2 * BATCH
    assert levels.pj["DRAM"] == pytest.approx(levels.words["DRAM"] * 338.8, rel=1e-12)
    # priced level by level, each layer costs what nn_dataflow said it costs (its `cost`, per tower)
    for peer in peers.values():
        total = _tool("nn_dataflow_peer").peer_levels(peer, recorded["spec"]).total_pj
        assert total == pytest.approx(peer.cost_pj * peer.groups, rel=1e-12), peer.name


# Each nest below is worked out by hand from the recorded schedule (tvals[level] = C units, M units, BAT units
# for DRAM, GBUF and RF; orders[level] = the loop position of C, M, BAT, 0 innermost; BAT units = images x output
# row folds, images given to the inner levels first) and the translation's rules (module docstring of the tool).
EXPECTED = {
    # tvals [[1, 6, 16], [3, 1, 1], [1, 16, 1]], orders [[2, 0, 1], [0, 1, 2]], fold (1, 4): DRAM BAT 16 = 4 images
    # x 4 row folds, outside M 6 (C 1 dropped); GBUF C 3; a PE set of 11 kernel rows x 14 output rows; RF M 16;
    # only the ifmaps are kept in the GBUF (gbuf_words [0, 42903, 0])
    "conv1": {"dram": ["N=4", "P=4", "M=6"], "glb": ["C=3"], "keeps": ["ifmap"], "rows": ["R=11"], "cols": ["P=14"],
              "stream": ["Q=55"], "rf": ["M=16", "S=11"]},
    # flpeset 5 x 27 on ppeset 10 x 14: two row groups of 5 share the 27 output rows (P 2 innermost in the GLB,
    # 14 columns); tvals [[1, 8, 4], [48, 1, 1], [1, 16, 1]]: DRAM BAT 4 images outside M 8; GBUF C 48
    "conv2": {"dram": ["G=2", "N=4", "M=8"], "glb": ["C=48", "P=2"], "keeps": ["ifmap"], "rows": ["R=5"],
              "cols": ["P=14"], "stream": ["Q=27"], "rf": ["M=16", "S=5"]},
    # tvals [[8, 4, 2], [32, 2, 1], [1, 12, 2]], orders C 0, M 1, BAT 2 at both levels: DRAM N 2, M 4, C 8; GBUF
    # M 2, C 32; RF M 12 and the other 2 images; 4 filter sets over the rows (repl 4 x 1); GBUF keeps ifmaps, psums
    "conv3": {"dram": ["N=2", "M=4", "C=8"], "glb": ["M=2", "C=32"], "keeps": ["ifmap", "psum"],
              "rows": ["R=3", "M=4"], "cols": ["P=13"], "stream": ["Q=13"], "rf": ["M=12", "N=2", "S=3"]},
    # 28 filter sets, 2 over the rows and 14 over the columns: the rows' 2 join the RF's 7 (M 14 in the RF);
    # tvals [[1, 21, 1], [128, 1, 4], [2, 7, 1]], GBUF orders C 1, M 2, BAT 0: C 128 outside N 4
    "fc6": {"dram": ["M=21"], "glb": ["C=128", "N=4"], "keeps": ["ifmap", "psum"], "rows": ["R=6"], "cols": ["M=14"],
            "stream": [], "rf": ["C=2", "M=14", "S=6"]},
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_schedule_translates_into_the_nest_its_factors_give(peers: dict[str, Any], name: str) -> None:
    found = _tool("nn_dataflow_peer").translate(zoo.build("alexnet").layer(name), peers[name], BATCH)
    data = nest_data(found.nest)
    want = EXPECTED[name]
    assert data["dram"]["loops"] == want["dram"] and data["glb"]["loops"] == want["glb"]
    assert sorted(data["glb"]["keeps"]) == want["keeps"]
    assert [data["array"][k] for k in ("rows", "cols", "stream")] == [want["rows"], want["cols"], want["stream"]]
    assert data["rf"]["loops"] == want["rf"]


def test_every_translated_schedule_is_a_valid_nest_doing_what_nn_dataflow_counted(peers: dict[str, Any]) -> None:
    tool = _tool("nn_dataflow_peer")
    hw = load_config("eyeriss-v1")
    table, graph = energy_table(hw), zoo.build("alexnet")
    for name, peer in peers.items():
        layer = graph.layer(name)
        translated, cost, why = tool.priced_translation(layer, peer, BATCH, hw, table)
        assert cost is not None, f"{name}: {why}"
        counts = nest_counts(layer, translated.nest, BATCH, hw)
        assert counts.compute.macs == round(peer.macs * peer.groups), name
        # the filters cross the DRAM boundary as often in both models (nn_dataflow's access[DRAM][filter])
        assert counts.transfers[Level.DRAM, Operand.FILTER].sum() == round(peer.access[0][0] * peer.groups), name
        if name == "conv1" or name.startswith("fc"):  # no padding: nn_dataflow's ifmap reads are the real ones
            assert counts.transfers[Level.DRAM, Operand.IFMAP].sum() == round(peer.access[0][1] * peer.groups), name


def test_batch_units_split_into_images_and_row_folds() -> None:
    split = _tool("nn_dataflow_peer")._batch_split
    # conv1: BAT 16 at the DRAM, 1 below, 4 images, 4 row folds: the images go inner first, all 4 at the DRAM
    assert split((16, 1, 1), 4, 4) == [(4, 4), (1, 1), (1, 1)]
    # conv3: 2 images in the RF, the other 2 at the DRAM
    assert split((2, 1, 2), 4, 1) == [(2, 1), (1, 1), (2, 1)]
    assert split((3, 1, 1), 4, 4) is None  # 3 units are neither images nor row folds


def test_a_peer_environment_is_made_once_and_found_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    envs = _tool("throwaway_env")
    pins = [("peer-tool==1.0", "numpy<2.4")]
    made: list[Path] = []

    def fake_create(env_dir: Path, with_pip: bool) -> None:  # no pip, no network: a folder with a python
        made.append(env_dir)
        (env_dir / "bin").mkdir(parents=True)
        (env_dir / "pyvenv.cfg").write_text("")

    def fake_install(cmd: list[str], check: bool, stdout: int | None, stderr: int | None) -> None:
        assert cmd[1:4] == ["-m", "pip", "install"]

    monkeypatch.setattr(envs.venv, "create", fake_create)
    monkeypatch.setattr(envs.subprocess, "run", fake_install)
    first = envs.cached_env_python("peer", pins, tmp_path)
    again = envs.cached_env_python("peer", pins, tmp_path)
    assert first == again and made == [first.parent.parent]  # created once
    assert first.parent.parent.name == f"peer-{envs.env_key(pins)}"
    other = envs.cached_env_python("peer", [("peer-tool==1.1", "numpy<2.4")], tmp_path)
    assert other != first and len(made) == 2  # another pin, another environment; the first one kept
    assert (first.parent.parent / envs.STAMP).read_text() == "peer-tool==1.0\nnumpy<2.4\n"
