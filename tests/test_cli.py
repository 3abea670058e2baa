"""The `hwsim` command: JSON output, the info table, and one-line errors for bad networks."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import onnx
import pytest
from conftest import assert_one_line_error, run_hwsim
from onnx import TensorProto, helper

from hwsim.cli.commands import COMMAND_MODULES
from hwsim.cli.main import build_parser

LIGHT = Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data" / "light"
LIGHT_MODELS = sorted(LIGHT.glob("*.onnx"))


def test_nine_light_models_are_shipped() -> None:
    assert len(LIGHT_MODELS) == 9


@pytest.mark.parametrize("path", LIGHT_MODELS, ids=lambda p: p.stem)
def test_info_on_every_light_model(cli, path: Path) -> None:
    result = cli("info", str(path), "--json")
    assert result.code == 0, result.err
    doc = result.json()
    model = onnx.load(str(path), load_external_data=False)
    n_conv = sum(1 for n in model.graph.node if n.op_type == "Conv")
    assert sum(1 for l in doc["layers"] if l["kind"] == "conv") == n_conv
    assert doc["totals"]["macs"] > 0


def test_info_alexnet_table_and_json_agree(cli) -> None:
    table = cli("info", "alexnet")
    assert table.code == 0 and "conv1" in table.out
    doc = cli("info", "alexnet", "--json").json()
    conv1 = next(l for l in doc["layers"] if l["name"] == "conv1")
    assert conv1["macs"] == 96 * 55 * 55 * 3 * 11 * 11  # ofmap 96x55x55, 3x11x11 per output
    assert conv1["out_shape"] == [96, 55, 55]
    assert conv1["ofmap_bytes"] == 96 * 55 * 55 * 2  # 16-bit default


def test_info_input_override_and_bits(cli) -> None:
    doc = cli("info", "dmcnn_vd", "--input", "640x360", "--bits", "8", "--json").json()
    first = next(l for l in doc["layers"] if l["kind"] == "input")
    assert first["out_shape"][1:] == [360, 640]
    assert first["ofmap_bytes"] == first["out_shape"][0] * 360 * 640


def test_zoo_list_json(cli) -> None:
    doc = cli("zoo", "--json").json()
    names = {n["name"] for n in doc["networks"]}
    assert {"alexnet", "resnet50", "srgan", "dmcnn_vd", "phases_example"} <= names


def test_zoo_export_round_trip(cli, tmp_path: Path) -> None:
    out = tmp_path / "sq.onnx"
    assert cli("zoo", "export", "squeezenet11", str(out)).code == 0
    onnx.checker.check_model(onnx.load(str(out)))
    zoo_doc = cli("info", "squeezenet11", "--json").json()
    file_doc = cli("info", str(out), "--json").json()
    assert file_doc["totals"]["macs"] == zoo_doc["totals"]["macs"]
    assert file_doc["totals"]["params"] == zoo_doc["totals"]["params"]


def test_unknown_zoo_name(cli) -> None:
    assert_one_line_error(cli("info", "resnet51"), "resnet51", "resnet50")


def test_truncated_onnx(cli, tmp_path: Path) -> None:
    data = (LIGHT / "light_resnet50.onnx").read_bytes()
    bad = tmp_path / "truncated.onnx"
    bad.write_bytes(data[: len(data) // 2])
    assert_one_line_error(cli("info", str(bad)), str(bad))


def _model_with_unknown_op(path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 8, 8])
    node = helper.make_node("FancyWarp", ["x"], ["y"], name="warp0", domain="custom.ops")
    graph = helper.make_graph([node], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("custom.ops", 1)])
    onnx.save(model, str(path))


def test_unknown_op_error_and_allow_unknown(cli, tmp_path: Path) -> None:
    path = tmp_path / "unknown.onnx"
    _model_with_unknown_op(path)
    assert_one_line_error(cli("info", str(path)), "warp0", "FancyWarp", "--allow-unknown")
    ok = cli("info", str(path), "--allow-unknown", "--json")
    assert ok.code == 0
    doc = ok.json()
    assert any("FancyWarp" in w for w in doc["warnings"])
    assert any(l["kind"] == "passthrough" for l in doc["layers"])


def test_missing_onnx_file(cli) -> None:
    assert_one_line_error(cli("info", "nowhere/model.onnx"), "nowhere/model.onnx")


def test_bad_input_size(cli) -> None:
    assert_one_line_error(cli("info", "alexnet", "--input", "wide"), "--input")


def test_console_script_runs_as_subprocess() -> None:
    result = run_hwsim("info", "resnet50", "--json")
    assert result.code == 0, result.err
    assert '"network": "resnet50"' in result.out


def test_each_command_loads_only_its_module() -> None:
    """COMMAND_MODULES names every command the modules define, and the module named defines it."""

    def commands(parser: argparse.ArgumentParser) -> set[str]:
        (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        return set(sub.choices)

    assert commands(build_parser()) == set(COMMAND_MODULES)
    for command in COMMAND_MODULES:
        assert command in commands(build_parser(["--debug", command, "--help"]))
    assert commands(build_parser(["--version"])) == set()


def test_help_lists_every_command_without_loading_one() -> None:
    """`hwsim --help`, in a fresh interpreter, names every command with the summary its module's parser gives it,
    and imports no command module (nor numpy); an unknown command is still one line naming the choices."""
    import subprocess
    import sys

    code = ("import sys\nfrom hwsim.cli.main import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print('LOADED', *sorted(m for m in sys.modules if m.startswith('hwsim.cli.cmd_') or m == 'numpy'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "LOADED"
    full = build_parser()
    (sub,) = [a for a in full._actions if isinstance(a, argparse._SubParsersAction)]
    for action in sub._choices_actions:
        assert action.dest in out and " ".join(str(action.help).split()[:3]) in " ".join(out.split())
    result = run_hwsim("frobnicate")
    assert result.code == 2 and "invalid choice: 'frobnicate'" in result.err and "estimate" in result.err
