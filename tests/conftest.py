"""Shared fixtures: running the CLI in-process and as a real subprocess; a trace of a jedec DRAM run."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
import yaml

import hwsim.trace
from hwsim.cli.main import main
from hwsim.vocab import Op
from hwsim.workload import zoo
from hwsim.workload.ir import Graph

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"
DATA = Path(__file__).resolve().parent / "data"  # published figures the tests assert, each file with its source


def reference(name: str) -> Any:
    """A file of tests/data: YAML as loaded; CSV as a list of rows (dicts of int, float, text or None for an
    empty cell), its leading `#` lines (the provenance) skipped."""
    path = DATA / name
    if path.suffix != ".csv":
        return yaml.safe_load(path.read_text())
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    return [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(lines)]


def reference_rows(name: str, key: str) -> dict[str, dict[str, Any]]:
    """A CSV of tests/data as {row[key]: row}."""
    return {str(row[key]): row for row in reference(name)}


def _number(text: str) -> int | float | str | None:
    if not text.strip():
        return None  # an empty cell: a figure the source does not give
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json(self) -> object:
        return json.loads(self.out)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):
    """Run `hwsim ARGS...` in this process; returns exit code, stdout, stderr."""

    def run(*args: str) -> CliResult:
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse exits on usage errors
            code = int(exc.code or 0)
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


def run_hwsim(*args: str, timeout: float = 120) -> CliResult:
    """Run the installed `hwsim` entry point in a fresh interpreter."""
    proc = subprocess.run([sys.executable, "-m", "hwsim.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, check=False)
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def assert_one_line_error(result: CliResult, *fragments: str) -> None:
    """Exit code 2, exactly one line on stderr, no traceback, each fragment present."""
    assert result.code == 2, (result.code, result.err)
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert "Traceback" not in result.err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def small_zoo_graph(name: str) -> Graph:
    """A zoo network at about 64 pixels on its short side (at least 32x32): every layer, fewer pixels."""
    e = zoo.entry(name)
    h, w = e.default_hw
    scale = max(1, min(h, w) // 64)
    return zoo.build(name, (max(32, h // scale), max(32, w // scale)))


@pytest.fixture(scope="session")
def ddr_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trace of AlexNet at 64x64 on eyeriss-v1-ddr (the jedec DRAM), with the dram, glb and pe levels."""
    out = tmp_path_factory.mktemp("dram") / "alexnet-ddr.h5"
    assert main(["simulate", "alexnet", "--input", "64x64", "--hw", "eyeriss-v1-ddr", "--out", str(out),
                 "--trace-levels", "dram,glb,pe"]) == 0
    return out


def dram_bursts(path: Path) -> tuple[int, int]:
    """(bursts, read bursts) of a trace's DRAM records, counted from the records."""
    with hwsim.trace.open(path) as trace:
        records = np.concatenate(list(trace.records("dram")))
    return len(records), int((records["op"] == Op.READ).sum())


RUN_ATTRS = ("created", "command")  # the trace attributes that differ between any two runs


def trace_datasets(path: Path) -> dict[str, bytes]:
    """Every dataset's bytes and every attribute of a trace but `RUN_ATTRS` (the DRAM's counters, the run's stalls,
    ...): what two runs that must agree compare."""
    out: dict[str, bytes] = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: out.__setitem__(name, np.asarray(obj[()]).tobytes())
                     if isinstance(obj, h5py.Dataset) and obj.dtype.kind != "O" else None)
        out.update({f"@{key}": repr(value).encode() for key, value in f.attrs.items() if key not in RUN_ATTRS})
    return out
