"""`hwsim trace summary` and `hwsim trace query` against the trace's records filtered independently here."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_one_line_error

import hwsim.trace


@pytest.fixture(scope="module")
def alexnet_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from hwsim.cli.main import main

    out = tmp_path_factory.mktemp("trace") / "alexnet.h5"
    assert main(["simulate", "alexnet", "--input", "64x64", "--hw", "eyeriss-v1", "--out", str(out),
                 "--trace-levels", "dram,glb,pe"]) == 0
    return out


def all_records(path: Path, level: str) -> np.ndarray:
    with hwsim.trace.open(path) as trace:
        return np.concatenate(list(trace.records(level)))


def test_summary_totals_every_level_and_layer(cli, alexnet_trace: Path) -> None:
    result = cli("trace", "summary", str(alexnet_trace), "--json")
    assert result.code == 0, result.err
    doc = result.json()
    assert set(doc["levels"]) == {"dram", "glb", "pe"}
    for level in ("dram", "glb"):
        records = all_records(alexnet_trace, level)
        assert doc["levels"][level]["records"] == len(records)
        assert doc["levels"][level]["words"] == int(records["words"].sum())
        assert doc["levels"][level]["last_cycle"] == int(records["end_cycle"].max())
        conv2 = next(i for i, l in enumerate(doc["layers"]) if l["name"] == "conv2")
        mine = records[records["layer"] == conv2]
        assert doc["layers"][conv2]["words"][level] == int(mine["words"].sum())
    assert doc["word_bytes"] == 2  # eyeriss-v1 is 16-bit
    assert "conv2" in cli("trace", "summary", str(alexnet_trace)).out


def test_query_filters_like_numpy(cli, alexnet_trace: Path, tmp_path: Path) -> None:
    records = all_records(alexnet_trace, "dram")
    with hwsim.trace.open(alexnet_trace) as trace:
        conv2, read, ifmap = trace.layers.index("conv2"), trace.ops.index("read"), trace.operands.index("ifmap")
    mine = records[records["layer"] == conv2]
    c0 = int(mine["start_cycle"].min())
    c1 = c0 + (int(mine["end_cycle"].max()) - c0) // 2
    keep = ((records["layer"] == conv2) & (records["op"] == read) & (records["operand"] == ifmap)
            & (records["start_cycle"] < c1) & (records["end_cycle"] > c0))
    out = tmp_path / "q.csv"
    result = cli("trace", "query", str(alexnet_trace), "--level", "dram", "--layer", "conv2", "--op", "read",
                 "--operand", "ifmap", "--cycles", f"{c0}:{c1}", "--limit", "5", "--csv", str(out), "--json")
    assert result.code == 0, result.err
    doc = result.json()
    assert 0 < doc["records"] == int(keep.sum()) < len(records)
    assert doc["words"] == int(records["words"][keep].sum())
    assert doc["bytes"] == 2 * doc["words"]
    assert len(doc["first_records"]) == 5
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == doc["records"]
    assert {r["layer"] for r in rows} == {"conv2"} and {r["op"] for r in rows} == {"read"}
    assert sum(int(r["words"]) for r in rows) == doc["words"]


def test_trace_commands_reject_bad_input(cli, alexnet_trace: Path, tmp_path: Path) -> None:
    assert_one_line_error(cli("trace", "query", str(alexnet_trace), "--level", "nope"), "no level 'nope'")
    assert_one_line_error(cli("trace", "query", str(alexnet_trace), "--layer", "nope"), "no layer 'nope'")
    assert_one_line_error(cli("trace", "query", str(alexnet_trace), "--cycles", "5:3"), "0 ≤ A < B")
    assert_one_line_error(cli("trace", "summary", str(tmp_path / "missing.h5")), "does not exist")
    assert_one_line_error(cli("trace", "query", str(alexnet_trace), "--csv", str(tmp_path / "no" / "q.csv")),
                          "cannot write")


@pytest.mark.parametrize("kind", ["bandwidth", "occupancy", "energy", "timeline"])
def test_every_plot_kind_is_drawn(cli, alexnet_trace: Path, tmp_path: Path, kind: str) -> None:
    import matplotlib.image

    out = tmp_path / f"{kind}.png"
    result = cli("trace", "plot", str(alexnet_trace), "--kind", kind, "--out", str(out))
    assert result.code == 0, result.err
    image = matplotlib.image.imread(out)
    assert image.shape[0] > 300 and image.shape[1] > 500
    assert image[..., :3].std() > 0.05  # not a blank canvas
    assert list(tmp_path.iterdir()) == [out]  # no temporary file left behind


def check_trace_event(event: dict) -> None:
    """The Chrome trace-event format's rules for the event types we write."""
    assert event["ph"] in {"X", "C", "M"}, event
    assert isinstance(event["name"], str) and event["name"]
    assert isinstance(event["pid"], int)
    if event["ph"] == "M":
        assert isinstance(event["args"], dict) and "tid" in event
        return
    assert isinstance(event["ts"], (int, float)) and event["ts"] >= 0
    if event["ph"] == "X":
        assert isinstance(event["tid"], int)
        assert isinstance(event["dur"], (int, float)) and event["dur"] >= 0
    else:
        assert event["args"] and all(isinstance(v, (int, float)) for v in event["args"].values())


def test_perfetto_export_follows_the_trace_event_format(cli, alexnet_trace: Path, tmp_path: Path) -> None:
    import json

    out = tmp_path / "t.json"
    result = cli("trace", "export", str(alexnet_trace), "--perfetto", str(out), "--max-events", "100000")
    assert result.code == 0, result.err
    doc = json.loads(out.read_text())
    assert doc["displayTimeUnit"] == "ns"
    events = doc["traceEvents"]
    for event in events:
        check_trace_event(event)
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {"layers", "glb", "pe", "dram channel 0"} <= names
    tracks = {e["tid"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert all(e["tid"] in tracks for e in events if e["ph"] == "X")  # every event on a named track
    access = [e for e in events if e["ph"] == "X" and e["cat"] != "layer"]
    (summary,) = [e for e in events if e["name"] == "hwsim_export"]
    total = sum(len(all_records(alexnet_trace, level)) for level in ("dram", "glb", "pe"))
    assert len(access) == summary["args"]["access_events"] <= 100000
    assert summary["args"]["access_events"] + summary["args"]["left_out"] == total
    layers = [e["name"] for e in events if e["ph"] == "X" and e["cat"] == "layer"]
    assert layers[:2] == ["conv1", "norm1"]
    assert any(e["ph"] == "C" and e["name"].startswith("dram bandwidth") for e in events)
    assert any(e["ph"] == "C" and e["name"].startswith("glb.data occupancy") for e in events)
    clock_hz = doc["otherData"]["clock_hz"]
    glb = all_records(alexnet_trace, "glb")
    first_glb = min(e["ts"] for e in access if e["cat"] == "glb")
    assert first_glb == pytest.approx(glb["start_cycle"].min() / clock_hz * 1e6)
    assert oct(out.stat().st_mode & 0o777) != oct(0o600)  # an ordinary file, not mkstemp's private one


def test_to_pandas_names_codes_and_keeps_every_record(alexnet_trace: Path) -> None:
    records = all_records(alexnet_trace, "dram")
    with hwsim.trace.open(alexnet_trace) as trace:
        frame = trace.to_pandas("dram", layer="conv2")
        conv2 = trace.layers.index("conv2")
    mine = records[records["layer"] == conv2]
    assert len(frame) == len(mine) and int(frame["words"].sum()) == int(mine["words"].sum())
    assert set(frame["layer"].unique()) == {"conv2"}
    assert set(frame["op"].unique()) <= {"read", "write", "fill", "update"}
    by_op = frame.groupby("op", observed=True)["words"].sum()
    assert int(by_op.sum()) == int(mine["words"].sum())


def test_html_report_is_self_contained(cli, alexnet_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = cli("report", str(alexnet_trace), "--html", str(out))
    assert result.code == 0, result.err
    page = out.read_text()
    assert page.startswith("<!doctype html>") and page.rstrip().endswith("</html>")
    assert "http://" not in page and "https://" not in page and "<script" not in page  # nothing to fetch
    assert page.count("src='data:image/png;base64,") == 4
    for layer in ("conv1", "conv2", "fc8"):
        assert f"<td>{layer}</td>" in page
    # simulated at 64×64, not AlexNet's default 224×224: the model is not compared with it
    assert "not available" in page and "another size" in page


def test_html_report_shows_the_cross_check(cli, tmp_path: Path) -> None:
    trace = tmp_path / "p.h5"
    assert cli("simulate", "phases_example", "--hw", "eyeriss-v1", "--out", str(trace)).code == 0
    out = tmp_path / "p.html"
    result = cli("report", str(trace), "--html", str(out))
    assert result.code == 0, result.err
    assert '<span class="pass">PASS</span>' in out.read_text()


CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars")  # no network: the machine refuses connections to Google's services
MATPLOTLIB_BLUE = np.array([0x1F, 0x77, 0xB4])  # the first colour of matplotlib's cycle: only the figures use it


def chromium() -> str:
    """The Chromium binary, or a skip that says why there is none (CI must have one: .ci/run installs it)."""
    import os
    import shutil

    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None and os.access("/usr/bin/chromium", os.X_OK):
        found = "/usr/bin/chromium"
    if found is not None:
        return found
    failed = os.environ.get("HWSIM_CHROMIUM_INSTALL_FAILED")
    if failed:
        pytest.skip(f"Chromium cannot be installed on this machine ({failed}); the page's structure is tested above")
    if os.environ.get("CI"):
        pytest.fail("CI has no Chromium although .ci/run installs Debian's chromium and records any failure")
    pytest.skip("Chromium is not installed here (apt-get install chromium; .ci/run installs it)")


def test_html_report_renders_in_headless_chromium(cli, alexnet_trace: Path, tmp_path: Path) -> None:
    import subprocess

    import matplotlib.image

    browser = chromium()
    out, shot = tmp_path / "r.html", tmp_path / "r.png"
    assert cli("report", str(alexnet_trace), "--html", str(out)).code == 0
    subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
                    "--window-size=1200,3600", out.as_uri()], check=True, timeout=120, capture_output=True)
    image = matplotlib.image.imread(shot)
    assert image.shape[:2] == (3600, 1200)
    rgb = np.rint(image[..., :3] * 255).astype(int)
    assert rgb.std() > 0.05 * 255  # text, tables and figures, not a blank page
    # The embedded PNG figures were decoded and drawn: their blue lines and bars appear in several places down
    # the page (energy bars, bandwidth and occupancy lines, timeline boxes), and nowhere else on it.
    blue_rows = np.flatnonzero((np.abs(rgb - MATPLOTLIB_BLUE).max(axis=-1) <= 8).sum(axis=1) >= 3)
    assert len(blue_rows) > 200, len(blue_rows)
    assert blue_rows.max() - blue_rows.min() > 1500  # from the first figure to the last
