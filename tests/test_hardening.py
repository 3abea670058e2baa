"""Hostile input and faults: every config value finite and in its physical range, YAML read with bounds, no
NaN or infinity written anywhere, SIGTERM and a full disk leave nothing half-written, a sweep's workers die
with it. Each case is one line on stderr and exit code 2 (or the signal's code), never a traceback or a hang."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import CONFIGS, REPO, assert_one_line_error

from hwsim.cli.main import MAX_ERROR_CHARS, one_line
from hwsim.errors import NonFiniteError, require_finite
from hwsim.files import MAX_YAML_DEPTH
from hwsim.trace.seal import seal

EYERISS = (CONFIGS / "eyeriss-v1.yaml").read_text()
SWEEP = (CONFIGS / "sweeps" / "cnnergy-glb.yaml").read_text()

# A billion laughs: nine levels of nine aliases expand to 9**9 = 387,420,489 scalars from 90 written ones.
ALIAS_BOMB = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['x'] * 9)}]\n"
    for prev, name in zip(["", *"abcdefgh"], "abcdefghi")
)

BAD_VALUES = [
    # (replace, with, fragments the one-line error must contain)
    ("clock: 200 MHz", "clock: 1e30 Hz", ["clock", "beyond the largest frequency", "1e+11 Hz"]),
    ("clock: 200 MHz", "clock: 10 Hz", ["clock", "below the smallest frequency", "1000 Hz"]),
    ("  burst: 64 B", "  burst: 1e400 B", ["dram.burst", "not a finite number"]),
    ("  other_fraction: 0.15", "  other_fraction: .nan", ["control.other_fraction", "not a finite number"]),
    ("  macs_per_cycle: 1", "  macs_per_cycle: 1e-30", ["pe_array.macs_per_cycle", "whole number"]),
    ("  ports: 3", "  ports: 1e-30", ["glb.ports", "whole number"]),
    ("  macs_per_cycle: 1", "  macs_per_cycle: 9223372036854775808", ["pe_array.macs_per_cycle", "largest count"]),
    # 2**12 x 2**12 PEs (each within the count range) x 2**9 MACs = 2**33 MACs per cycle > 2**32
    ("  rows: 12\n  cols: 14\n  macs_per_cycle: 1", "  rows: 4096\n  cols: 4096\n  macs_per_cycle: 512",
     ["pe_array", "MACs per cycle"]),
    ("  clock_power: 106.3 mW", "  clock_power: 1e300 W", ["control.clock_power", "largest power"]),
    ("  size: 108 KiB", "  size: 2048 GiB", ["glb.size", "largest size"]),
    ("name: eyeriss-v1", "name: !custom eyeriss-v1", ["name", "tag cannot hold"]),
    ("  rows: 12", "  rows: !!int twelve", ["pe_array.rows", "tag cannot hold"]),
    ("name: eyeriss-v1", "name: !!timestamp yesterday", ["name", "tag cannot hold"]),
]


@pytest.mark.parametrize(("old", "new", "fragments"), BAD_VALUES)
def test_config_values_outside_their_range_are_one_line_errors(cli, tmp_path: Path, old: str, new: str,
                                                               fragments: list[str]) -> None:
    assert old in EYERISS, old
    path = tmp_path / "bad.yaml"
    path.write_text(EYERISS.replace(old, new, 1))
    assert_one_line_error(cli("config", "validate", str(path)), str(path), *fragments)


def _hostile_files(text: str) -> dict[str, bytes]:
    """The same document damaged the ways a careless editor or an attacker damages YAML."""
    return {
        "utf16": text.encode("utf-16"),
        "latin1": text.replace("\n", "\n# caf\xe9\n", 1).encode("latin-1"),
        "nul": text[:40].encode() + b"\0" + text[40:].encode(),
        "deep_flow": (text + "\nx: " + "[" * 5000 + "]" * 5000 + "\n").encode(),
        "deep_block": (text + "\n" + "".join("  " * i + f"k{i}:\n" for i in range(MAX_YAML_DEPTH + 5))).encode(),
        "alias_bomb": (ALIAS_BOMB + text).encode(),
        "control_character": (text[:40] + "\x19" + text[40:]).encode(),
    }


FILE_FRAGMENTS = {
    "utf16": "NUL byte", "latin1": "not UTF-8", "nul": "NUL byte at byte 40", "deep_flow": "nested deeper than 64",
    "deep_block": "nested deeper than 64", "alias_bomb": "expands to more than 1,000,000 nodes",
    "control_character": "unacceptable character #x0019",
}


def test_a_batch_past_the_bound_is_refused_before_any_work(cli) -> None:
    assert_one_line_error(cli("simulate", "alexnet", "--hw", "eyeriss-v1", "--batch", "1000000000"),
                          "--batch", "exceed the 4096")


@pytest.mark.parametrize("damage", sorted(FILE_FRAGMENTS))
def test_hostile_config_files_are_one_line_errors(cli, tmp_path: Path, damage: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes(_hostile_files(EYERISS)[damage])
    result = cli("config", "validate", str(path))
    assert_one_line_error(result, str(path), FILE_FRAGMENTS[damage])
    assert len(result.err) < MAX_ERROR_CHARS + 100


@pytest.mark.parametrize("damage", sorted(FILE_FRAGMENTS))
def test_hostile_sweep_files_are_one_line_errors(cli, tmp_path: Path, damage: str) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_bytes(_hostile_files(SWEEP)[damage])
    assert_one_line_error(cli("sweep", str(path), "--out", str(tmp_path / "out")), str(path), FILE_FRAGMENTS[damage])
    assert not (tmp_path / "out" / "results.csv").exists()


def test_require_finite_names_the_bad_number_and_where() -> None:
    require_finite({"a": [1, 2.5, "x", None, True, np.int64(3), np.arange(3.0)]}, "fine")
    with pytest.raises(NonFiniteError, match=r"doc: a result is nan at energy\[1\]\.dram"):
        require_finite({"energy": [{"dram": 1.0}, {"dram": float("nan")}]}, "doc")
    with pytest.raises(NonFiniteError, match="a result is inf"):
        require_finite(np.array([1.0, np.inf]), "doc")
    with pytest.raises(NonFiniteError, match="a result is -inf"):
        require_finite(np.float64("-inf"), "doc")


def test_no_nan_reaches_a_json_document(cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """An energy forced to NaN in the middle of the estimate stops at the totals, as one line."""
    import hwsim.flows.estimate as estimate_flow

    real = estimate_flow.estimate_totals

    def poisoned(*args: object) -> object:
        totals = real(*args)  # type: ignore[arg-type]
        return type(totals)({**totals.energy_by_component_pj, "dram": float("nan")}, totals.latency_cycles,
                            totals.dram_bytes, totals.macs)

    monkeypatch.setattr(estimate_flow, "estimate_totals", poisoned)
    result = cli("estimate", "alexnet", "--hw", "eyeriss-v1", "--json")
    assert_one_line_error(result, "nan at dram")
    assert "NaN" not in result.out


def test_error_lines_are_bounded_and_single() -> None:
    text = "first line\nsecond " + "x" * 10_000
    line = one_line(text)
    assert "\n" not in line
    assert len(line) <= MAX_ERROR_CHARS
    assert line.startswith("first line second xxx") and line.endswith(f"({len('first line second ') + 10_000:,} "
                                                                     "characters)")
    assert one_line("short\tone") == "short one"


def test_a_full_disk_is_one_line_and_leaves_no_partial_trace(cli, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk fills as the finished trace is moved into place: one line naming the trace, nothing left."""
    import hwsim.trace.writer as writer

    def full(src: str, dst: str) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(writer.os, "replace", full)
    out = tmp_path / "run.h5"
    result = cli("simulate", "phases_example", "--hw", "eyeriss-v1", "--out", str(out))
    assert_one_line_error(result, str(out), "No space left on device", "free space")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def _hwsim(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "hwsim.cli.main", *args], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_sigterm_leaves_no_partial_trace(tmp_path: Path) -> None:
    """SIGTERM mid-simulation ends like Ctrl-C: the hidden partial trace is removed; exit 143 = 128 + SIGTERM."""
    out = tmp_path / "run.h5"
    proc = _hwsim("simulate", "resnet50", "--hw", "eyeriss-v1", "--out", str(out))
    deadline = time.monotonic() + 60
    # the output lock (.run.h5.lock) comes first, the partial trace a moment later: wait for the trace itself
    while (not any(p.name.endswith(".partial") for p in tmp_path.iterdir()) and proc.poll() is None
           and time.monotonic() < deadline):
        time.sleep(0.05)
    assert any(p.name.endswith(".partial") for p in tmp_path.iterdir()), (proc.poll(), sorted(tmp_path.iterdir()))
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert err.strip() == "hwsim: terminated"
    assert list(tmp_path.iterdir()) == []


DROPPING_CALLBACK = """
import os, signal, sys, time, weakref
import hwsim.cli.main as m
import hwsim.sim.run as run_module


class Held:
    pass


def signalled(_: object) -> None:  # a weakref callback: Python prints and drops an exception raised while it runs
    os.kill(os.getpid(), signal.SIGTERM)
    until = time.monotonic() + 0.2
    while time.monotonic() < until:  # the handler runs here, inside the callback
        pass


held = Held()
ref = weakref.ref(held, signalled)
simulate = run_module.simulate


def simulate_after_the_callback(*args: object) -> object:  # mid-run: the partial trace is open
    global held
    held = None
    return simulate(*args)


run_module.simulate = simulate_after_the_callback
sys.exit(m.main(sys.argv[1:]))
"""


def test_sigterm_inside_a_weakref_callback_still_ends_the_command(tmp_path: Path) -> None:
    """SIGTERM handled while a weakref callback (or a destructor) runs: Python prints the handler's exception and
    drops it. The command must still end as terminated — exit 143, one line, no partial trace — not run on."""
    script = tmp_path / "drops.py"
    script.write_text(DROPPING_CALLBACK)
    out = tmp_path / "out"
    out.mkdir()
    done = subprocess.run([sys.executable, str(script), "simulate", "alexnet", "--hw", "eyeriss-v1", "--out",
                           str(out / "run.h5")], cwd=REPO, text=True, capture_output=True, timeout=120, check=False)
    assert done.returncode == 128 + signal.SIGTERM, done.stderr
    assert done.stderr.strip() == "hwsim: terminated"
    assert list(out.iterdir()) == []


def _children(pid: int) -> list[int]:
    """Processes whose parent is `pid`, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux's /proc to find the workers")
def test_sweep_workers_die_with_a_killed_sweep(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("name: kill\nconfig: eyeriss-v1\nnetworks: [alexnet]\nmode: simulate\nbatch: 1\n"
                     "axes:\n  pe_array.rows: [6, 8, 12, 16]\ncombine: product\n")
    proc = _hwsim("sweep", str(sweep), "--jobs", "2", "--out", str(tmp_path / "out"))
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while len(workers) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
        workers = _children(proc.pid)
    assert len(workers) == 2
    proc.kill()  # SIGKILL: the sweep's process can clean nothing up itself
    proc.communicate(timeout=60)
    deadline = time.monotonic() + 30
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    survivors = [w for w in workers if _alive(w)]
    for worker in survivors:  # a failing run must not leave orphans behind on the machine
        os.kill(worker, signal.SIGKILL)
    assert not survivors


def _conv_model(path: Path, attrs: dict[str, object], input_hw: tuple[int, int] = (32, 32)) -> Path:
    """One 3x3 conv (3 -> 8 channels) on a 1x3xHxW input, weights zero, with the given Conv attributes."""
    from onnx import TensorProto, helper, numpy_helper, save

    weights = numpy_helper.from_array(np.zeros((8, 3, 3, 3), np.float32), "W")
    node = helper.make_node("Conv", ["x", "W"], ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, *input_hw])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [weights])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


BAD_CONVS = [
    # (Conv attributes, input H x W, fragments of the one-line error)
    ({"strides": [0, 0]}, (32, 32), ["stride (0, 0)", "between 1 and 65536"]),
    ({"strides": [-1, -1]}, (32, 32), ["stride (-1, -1)"]),
    ({"strides": [10**9, 10**9]}, (32, 32), ["stride (1000000000, 1000000000)"]),
    ({"dilations": [0, 0]}, (32, 32), ["dilation (0, 0)"]),
    ({"kernel_shape": [0, 0]}, (32, 32), ["kernel (0, 0)"]),
    ({"pads": [70000, 70000, 70000, 70000]}, (32, 32), ["padding (70000, 70000, 70000, 70000)", "within 65536"]),
    ({"strides": [1.5, 1.5]}, (32, 32), ["attribute strides", "not a list of integers"]),
    ({"group": 0}, (32, 32), ["0 groups"]),
    # 46341 x 46341 = 2,147,488,281 pixels > 2**31 (x 3 channels = 6,442,464,843 elements)
    ({}, (46341, 46341), ["3x46341x46341", "6,442,464,843 elements", "--input"]),
]


@pytest.mark.parametrize(("attrs", "input_hw", "fragments"), BAD_CONVS)
@pytest.mark.parametrize("command", ["info", "estimate", "simulate"])
def test_bad_onnx_attributes_and_huge_inputs_are_one_line_errors(cli, tmp_path: Path, command: str,
                                                                  attrs: dict[str, object], input_hw: tuple[int, int],
                                                                  fragments: list[str]) -> None:
    model = _conv_model(tmp_path / "m.onnx", attrs, input_hw)
    hardware = [] if command == "info" else ["--hw", "eyeriss-v1"]
    trace = ["--out", str(tmp_path / "t.h5")] if command == "simulate" else []
    assert_one_line_error(cli(command, str(model), *hardware, *trace), *fragments)
    assert not (tmp_path / "t.h5").exists()


def test_a_valid_conv_model_still_imports(cli, tmp_path: Path) -> None:
    """The same builder without damage: 8 x 30 x 30 outputs x 27 MACs = 194,400 MACs."""
    result = cli("info", str(_conv_model(tmp_path / "m.onnx", {})), "--json")
    assert result.code == 0, result.err
    assert "194400" in result.out.replace(",", "").replace(" ", "")


def test_a_pad_larger_than_the_input_is_valid(cli, tmp_path: Path) -> None:
    """torchvision's ASPP: a 3x3 conv of dilation 36 pads a 33x33 map by 36 on each side. ONNX's rule gives
    33 + 72 - 36 * 2 - 1 + 1 = 33 rows and columns, so 8 x 33 x 33 outputs x 27 MACs = 235,224 MACs; the
    outer taps read only padding, and the simulated trace still passes every check."""
    model = _conv_model(tmp_path / "aspp.onnx", {"dilations": [36, 36], "pads": [36, 36, 36, 36]}, (33, 33))
    result = cli("info", str(model), "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["totals"]["macs"] == 235_224
    checked = cli("check", str(model), "--hw", "eyeriss-v1")
    assert checked.code == 0, checked.err
    assert "PASS" in checked.out


def test_a_simulation_too_large_to_finish_is_refused_up_front(cli, tmp_path: Path) -> None:
    """A 256-byte GLB on depthfirst-edge leaves VGG-E5's rule mapping tiles of a few words: millions of them,
    hours of simulation. The run is refused before it starts, naming the work and how to proceed."""
    config = tmp_path / "tiny-glb.yaml"
    text = (CONFIGS / "depthfirst-edge.yaml").read_text()
    assert "  size: 512 KiB" in text
    config.write_text(text.replace("  size: 512 KiB", "  size: 256 B", 1))
    out = tmp_path / "t.h5"
    result = cli("simulate", "vgg_e5", "--hw", str(config), "--out", str(out))
    assert_one_line_error(result, "vgg_e5", "tiles", "beyond the 1,000,000", "--input", "hwsim estimate")
    assert list(tmp_path.iterdir()) == [config]


@pytest.fixture(scope="module")
def small_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A complete trace of the five-layer phases example on eyeriss-v1, written once for the damage tests."""
    from hwsim.cli.main import main

    path = tmp_path_factory.mktemp("trace") / "small.h5"
    assert main(["simulate", "phases_example", "--hw", "eyeriss-v1", "--out", str(path), "--json"]) == 0
    return path


def _set_code(column: str, value: int, dataset: str = "levels/dram") -> object:
    def damage(file: object) -> None:
        rows = file[dataset][...]  # type: ignore[index]
        rows[column][3] = value
        file[dataset][...] = rows  # type: ignore[index]
    return damage


def _set_attr(key: str, value: object) -> object:
    def damage(file: object) -> None:
        file.attrs[key] = value  # type: ignore[attr-defined]
    return damage


def _rename_hardware_key(file: object) -> None:
    text = file.attrs["hardware_json"]  # type: ignore[attr-defined]
    file.attrs["hardware_json"] = text.replace("bandwidth_bytes_per_cycle", "bandwidth_bytes]per_cycle", 1)  # type: ignore[attr-defined]


TRACE_DAMAGE = {
    # damage: (how, fragment of the one-line error)
    "op code past the table": (_set_code("op", 250), "op code past"),
    "operand code past the table": (_set_code("operand", 200), "operand code past"),
    "layer id past the table": (_set_code("layer", 999), "layer id outside"),
    "negative layer id": (_set_code("layer", -3), "layer id outside"),
    "record ending before it starts": (_set_code("end_cycle", -5), "ending before it starts"),
    "record starting before cycle 0": (_set_code("start_cycle", -(2**40)), "starting before cycle 0"),
    "batch infinite": (_set_attr("batch", float("inf")), "batch"),
    "buffer id past the table": (_set_code("buffer", 999, "occupancy"), "buffer id past"),
    "version not an integer": (_set_attr("hwsim_trace_version", "three"), "not an integer"),
    "clock of zero": (_set_attr("clock_hz", 0.0), "clock_hz"),
    "clock NaN": (_set_attr("clock_hz", float("nan")), "clock_hz"),
    "unreadable JSON attribute": (_set_attr("schedule_json", "{not json"), "schedule_json"),
    "hardware record with a damaged key": (_rename_hardware_key, "unknown field"),
    "layer table deleted": (lambda f: f.__delitem__("names/layers"), "damaged"),  # type: ignore[attr-defined]
    "a layer's word of 12 bit": (_set_attr("layer_word_bits_json", "[12, 16, 16, 16, 16]"),
                                 "layer_word_bits_json"),
    "a word for one layer of five": (_set_attr("layer_word_bits_json", "[16]"), "layer_word_bits_json"),
}


# The commands that read a part every command does not: the occupancy events (the Perfetto counters and the
# report's occupancy figure) and the accelerator record (the report's energy and cross-check).
DAMAGE_READERS = {"buffer id past the table": {"perfetto", "report", "validate"},
                  "hardware record with a damaged key": {"report", "validate"}}


@pytest.mark.parametrize("damage", sorted(TRACE_DAMAGE))
@pytest.mark.parametrize("command", ["summary", "query", "perfetto", "report", "validate"])
def test_damaged_traces_are_one_line_errors(cli, small_trace: Path, tmp_path: Path, damage: str,
                                            command: str) -> None:
    import shutil

    import h5py

    how, fragment = TRACE_DAMAGE[damage]
    path = tmp_path / "damaged.h5"
    shutil.copy(small_trace, path)
    with h5py.File(path, "r+") as file:
        how(file)  # type: ignore[operator]
    seal(str(path))  # as if written so: the checks behind the seal must catch it
    args = {"summary": ["trace", "summary", str(path)],
            "query": ["trace", "query", str(path), "--level", "dram", "--limit", "5"],
            "perfetto": ["trace", "export", str(path), "--perfetto", str(tmp_path / "out.json")],
            "report": ["report", str(path), "--html", str(tmp_path / "out.html")],
            "validate": ["trace", "validate", str(path)]}[command]
    result = cli(*args)
    if command not in DAMAGE_READERS.get(damage, {command}):
        assert result.code == 0, result.err  # the command never reads the damaged part: a sound answer
    else:
        assert_one_line_error(result, str(path), fragment)


def test_a_trace_changed_after_it_was_written_fails_its_seal(cli, small_trace: Path, tmp_path: Path) -> None:
    """One flipped bit anywhere, or an edit through HDF5, and the CRC-32 in the trace's first bytes no longer
    matches: refused before HDF5 reads the file (a damaged B-tree can crash the HDF5 library itself)."""
    import shutil

    import h5py

    flipped = tmp_path / "flipped.h5"
    data = bytearray(small_trace.read_bytes())
    data[len(data) // 2] ^= 0x10
    flipped.write_bytes(bytes(data))
    assert_one_line_error(cli("trace", "summary", str(flipped)), str(flipped), "do not match its checksum")
    assert_one_line_error(cli("trace", "validate", str(flipped)), str(flipped), "do not match its checksum")
    edited = tmp_path / "edited.h5"
    shutil.copy(small_trace, edited)
    with h5py.File(edited, "r+") as file:
        file.attrs["clock_hz"] = 1e9
    assert_one_line_error(cli("trace", "summary", str(edited)), str(edited), "changed after it was written")
    head = tmp_path / "head.h5"
    data = bytearray(small_trace.read_bytes())
    data[3] ^= 0x01  # the seal itself
    head.write_bytes(bytes(data))
    assert_one_line_error(cli("trace", "summary", str(head)), str(head), "seal", "damaged")


@pytest.mark.parametrize("cut", [0.3, 0.9])
def test_truncated_and_corrupted_traces_are_one_line_errors(cli, small_trace: Path, tmp_path: Path,
                                                            cut: float) -> None:
    import shutil

    path = tmp_path / "cut.h5"
    shutil.copy(small_trace, path)
    with open(path, "r+b") as stream:
        stream.truncate(int(path.stat().st_size * cut))
    assert_one_line_error(cli("trace", "summary", str(path)), str(path))


def test_graph_damage_is_a_one_line_error_naming_the_file(cli, tmp_path: Path) -> None:
    """A truncated weight (100 of 8·3·3·3·4 = 864 bytes), a node reading a tensor produced only downstream of
    itself (a cycle), and groups that do not divide the channels."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def save(name: str, nodes: list[object], weights: object) -> Path:
        graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                                  [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, None)],  # type: ignore[attr-defined]
                                  [weights])
        path = tmp_path / name
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
        return path

    cut = numpy_helper.from_array(np.zeros((8, 3, 3, 3), np.float32), "w")
    cut.raw_data = cut.raw_data[:100]
    truncated = save("cut.onnx", [helper.make_node("Conv", ["x", "w"], ["y"])], cut)
    assert_one_line_error(cli("info", str(truncated)), str(truncated), "initializer 'w'", "100 bytes", "864")
    w = numpy_helper.from_array(np.zeros((3, 3, 3, 3), np.float32), "w")
    cycle = save("cycle.onnx", [helper.make_node("Add", ["x", "a"], ["x2"]),
                                helper.make_node("Conv", ["x2", "w"], ["a"])], w)
    assert_one_line_error(cli("info", str(cycle)), str(cycle), "reads 'a'", "malformed")
    grouped = save("groups.onnx", [helper.make_node("Conv", ["x", "w"], ["y"], group=2)],
                   numpy_helper.from_array(np.zeros((4, 1, 3, 3), np.float32), "w"))
    assert_one_line_error(cli("info", str(grouped)), str(grouped), "2 groups", "3")


# Started as the console script starts it, with Python's own SIGINT handling (a shell's background jobs would
# otherwise inherit SIGINT as ignored).
_HWSIM_MAIN = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
               "from hwsim.cli.main import main; sys.exit(main())")


@pytest.mark.parametrize("delay_s", [0.15, 0.4])
def test_an_interrupt_during_start_up_is_one_line(delay_s: float) -> None:
    """Ctrl-C while the command's modules import, its arguments parse or the network loads: one line and exit
    130, never a traceback. If the command finished first it exits 0; if the signal came while the interpreter
    was exiting, after the whole result was written, Python has already given SIGINT its default action back
    (its own finalisation does so) and the process ends by the signal: that is allowed only with the result
    complete on stdout and nothing on stderr."""
    proc = subprocess.Popen([sys.executable, "-c", _HWSIM_MAIN, "estimate", "resnet50", "--hw", "eyeriss-v1"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(delay_s)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    text = err.decode()
    assert "Traceback" not in text
    assert proc.returncode in (130, 0, -signal.SIGINT), (proc.returncode, text)
    if proc.returncode == 130:
        assert text.strip() == "hwsim: interrupted"
    if proc.returncode == -signal.SIGINT:
        assert text == "" and b"per image" in out.splitlines()[-1], (out[-300:], text)


# A class body whose descriptor is interrupted while the class is made: Python 3.11 reports what `__set_name__`
# raised as a RuntimeError (as numpy's C import reports an interrupt as an ImportError), not as the interrupt.
_INTERRUPTED_IMPORT = """import os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
import hwsim.cli.main as cli

class Slow:
    def __set_name__(self, owner, name):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)

def build_parser(argv):
    class Shape:
        width = Slow()

cli.build_parser = build_parser
sys.exit(cli.main(["estimate", "alexnet"]))
"""


def test_an_interrupt_that_comes_out_as_another_exception_is_one_line() -> None:
    """Ctrl-C inside an import or a class body can reach the command as another exception; it is still an
    interrupt: one line and exit 130."""
    proc = subprocess.run([sys.executable, "-c", _INTERRUPTED_IMPORT], cwd=REPO, capture_output=True, text=True,
                          timeout=60, check=False)
    assert (proc.returncode, proc.stderr) == (130, "hwsim: interrupted\n")


def test_a_reader_that_goes_away_is_not_an_error() -> None:
    """`hwsim info densenet121 --json | head -c 10`: the 190 KB document outgrows the pipe, the reader closes
    it, and hwsim stops quietly with exit 0 instead of a BrokenPipeError traceback."""
    proc = subprocess.Popen([sys.executable, "-c", _HWSIM_MAIN, "info", "densenet121", "--json"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(10).startswith(b"{")
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert err == ""


@pytest.mark.parametrize(("args", "what"), [
    (["info", "{fifo}.onnx"], "a named pipe (FIFO)"),
    (["info", "{zero}.onnx"], "a character device"),
    (["sweep", "{fifo}.yaml"], "a named pipe (FIFO)"),
    (["estimate", "alexnet", "--hw", "{fifo}.yaml"], "a named pipe (FIFO)"),
    (["estimate", "alexnet", "--hw", "eyeriss-v1", "--mapping", "{fifo}.yaml"], "a named pipe (FIFO)"),
])
def test_special_files_are_refused_before_they_are_opened(cli, tmp_path: Path, args: list[str], what: str) -> None:
    """Opening a FIFO for reading blocks until a writer comes and /dev/zero never ends: both are refused by
    their type, before any read, in one line."""
    for suffix in (".onnx", ".yaml"):
        os.mkfifo(tmp_path / f"fifo{suffix}")
        (tmp_path / f"zero{suffix}").symlink_to("/dev/zero")
    given = [a.format(fifo=tmp_path / "fifo", zero=tmp_path / "zero") for a in args]
    assert_one_line_error(cli(*given), str(tmp_path), what, "not a file")


@pytest.mark.parametrize("size", [0, -3, 70000])
def test_an_lrn_without_a_window_is_refused(cli, tmp_path: Path, size: int) -> None:
    """LRN sums over `size` neighbouring channels: a size below 1 (or past the kernel bound) is no window."""
    from onnx import TensorProto, helper, save

    node = helper.make_node("LRN", ["x"], ["y"], size=size)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "lrn.onnx")
    assert_one_line_error(cli("info", str(tmp_path / "lrn.onnx")), f"LRN size {size}", "between 1 and 65536")
