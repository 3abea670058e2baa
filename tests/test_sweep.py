"""`hwsim sweep`: sweep files, points and their ids, evaluation, resume, executors, Pareto fronts."""

from __future__ import annotations

import functools
import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from conftest import CONFIGS, REPO, assert_one_line_error, reference

from hwsim.analytic.estimate import estimate_network
from hwsim.errors import ConfigError
from hwsim.hardware import load_config
from hwsim.hardware.energy import COMPONENTS, TIME_PRICED
from hwsim.hardware.loader import Overrides
from hwsim.mapping.mapper import default_mapping
from hwsim.sweep.pareto import pareto_front
from hwsim.sweep.results import read_table
from hwsim.sweep.run import evaluate, point_hardware
from hwsim.sweep.spec import load_sweep, parse_sweep
from hwsim.workload import zoo

SWEEPS = CONFIGS / "sweeps"


def _write(path: Path, doc: dict) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _small(tmp_path: Path, name: str = "small.yaml", **extra: object) -> Path:
    """Four fast points: the phases example on Eyeriss v1 with two PE-column counts and two GLB sizes."""
    doc = {"name": "small", "config": "eyeriss-v1", "networks": ["phases_example"], "mode": "estimate",
           "axes": {"pe_array.cols": [7, 14], "glb.data_size": ["16 KiB", "32 KiB"]},
           "outputs": {"table": "csv"}, **extra}
    return _write(tmp_path / name, doc)


# Two runs of a point do the same float64 arithmetic (in this process, a pool worker or a Dask worker), so
# their numbers should agree to the last bit; what may legitimately differ is the order of a sum. Every figure
# is a sum of at most ~10^4 positive terms (layers × levels × operands × access kinds), and reordering such
# a sum moves it by at most n·ε ≈ 10^4 × 1.1e-16 ≈ 1e-12 of its value: the tolerance below.
SAME_ARITHMETIC_REL = 1e-12


def _table(out: Path, name: str = "results.csv") -> list[dict]:
    """The results table sorted by point id, without the wall time (the only column that may differ)."""
    rows = read_table(out / name)
    for row in rows:
        row.pop("wall_s")
    return sorted(rows, key=lambda r: r["point_id"])


def _assert_same_rows(ours: list[dict], theirs: list[dict]) -> None:
    """Equal rows: text and missing values exactly, numbers within SAME_ARITHMETIC_REL."""
    assert [r["point_id"] for r in ours] == [r["point_id"] for r in theirs]
    for a, b in zip(ours, theirs):
        assert a.keys() == b.keys(), a["point_id"]
        for key, value in a.items():
            if isinstance(value, (int, float)) and isinstance(b[key], (int, float)):
                assert value == pytest.approx(b[key], rel=SAME_ARITHMETIC_REL, abs=0), (a["point_id"], key)
            else:
                assert value == b[key], (a["point_id"], key)


def _assert_same_table(out: Path, reference: Path) -> None:
    _assert_same_rows(_table(out), _table(reference))


# ----- sweep files and points --------------------------------------------------------------------------


def test_product_with_a_zipped_group(tmp_path: Path) -> None:
    sweep = parse_sweep({"config": "eyeriss-v1", "networks": ["phases_example"],
                         "axes": {"pe_array.rows": [8, 12],
                                  "zip": {"pe_array.cols": [7, 14], "glb.data_size": ["16 KiB", "32 KiB"]}}},
                        "s.yaml", tmp_path)
    assert [p.settings for p in sweep.points] == [
        (("pe_array.rows", 8), ("pe_array.cols", 7), ("glb.data_size", "16 KiB")),
        (("pe_array.rows", 8), ("pe_array.cols", 14), ("glb.data_size", "32 KiB")),
        (("pe_array.rows", 12), ("pe_array.cols", 7), ("glb.data_size", "16 KiB")),
        (("pe_array.rows", 12), ("pe_array.cols", 14), ("glb.data_size", "32 KiB")),
    ]
    assert sweep.axis_keys == ("pe_array.rows", "pe_array.cols", "glb.data_size")


def test_top_level_zip_and_configs_times_networks(tmp_path: Path) -> None:
    sweep = parse_sweep({"config": ["eyeriss-v1", "eyeriss-8bit"], "networks": ["phases_example", "fsrcnn"],
                         "combine": "zip", "axes": {"pe_array.rows": [8, 12, 16], "batch": [1, 2, 4]}},
                        "s.yaml", tmp_path)
    assert len(sweep.points) == 2 * 2 * 3
    assert [(p.config.name, p.network.name, p.batch) for p in sweep.points[:4]] == [
        ("eyeriss-v1", "phases_example", 1), ("eyeriss-v1", "phases_example", 2),
        ("eyeriss-v1", "phases_example", 4), ("eyeriss-v1", "fsrcnn", 1)]


def test_ranges_linear_and_doubling(tmp_path: Path) -> None:
    sweep = parse_sweep({"config": "eyeriss-v1", "networks": ["phases_example"], "combine": "zip",
                         "axes": {"glb.data_size": {"from": "8 KiB", "to": "40 KiB", "scale": "log2"},
                                  "pe_array.cols": {"from": 8, "to": 20, "step": 4}}}, "s.yaml", tmp_path)
    # doubling 8, 16, 32, then the end of the range, 40; linear 8, 12, 16, 20
    assert [dict(p.settings)["glb.data_size"] for p in sweep.points] == ["8 KiB", "16 KiB", "32 KiB", "40 KiB"]
    assert [dict(p.settings)["pe_array.cols"] for p in sweep.points] == [8, 12, 16, 20]


def test_point_ids_survive_reordering_and_follow_content(tmp_path: Path) -> None:
    def ids(axes: dict, batch: int = 1) -> list[str]:
        doc = {"config": "eyeriss-v1", "networks": ["phases_example"], "batch": batch, "axes": axes}
        return [p.point_id for p in parse_sweep(doc, "s.yaml", tmp_path).points]

    a = ids({"pe_array.rows": [8, 12], "pe_array.cols": [7, 14]})
    b = ids({"pe_array.cols": [14, 7], "pe_array.rows": [12, 8]})
    assert sorted(a) == sorted(b) and len(set(a)) == 4
    assert all(len(i) == 12 and int(i, 16) >= 0 for i in a)
    # A batch given as an axis or as the sweep's batch is the same point; another batch is another point.
    assert ids({"pe_array.rows": [8], "batch": [2]}) == ids({"pe_array.rows": [8]}, batch=2)
    assert ids({"pe_array.rows": [8]}, batch=2) != ids({"pe_array.rows": [8]}, batch=1)


def test_settings_reach_the_hardware(tmp_path: Path) -> None:
    sweep = parse_sweep({"config": "eyeriss-v1", "networks": ["phases_example"],
                         "axes": {"pe_array.rows": [8], "dram.bandwidth": ["12.8 GB/s"],
                                  "glb.data_size": ["32 KiB"]}}, "s.yaml", tmp_path)
    hw = point_hardware(sweep.points[0])
    assert hw.pe_array.rows == 8 and hw.pe_array.cols == 14
    # per second over the 200 MHz clock; the text "12.8 GB/s" is parsed and divided, one or two roundings
    assert hw.dram.bandwidth_bytes_per_cycle == pytest.approx(12.8e9 / 200e6, rel=1e-15)
    assert hw.glb.data_bytes == 32 * 1024 and hw.glb.size_bytes == 40 * 1024  # the 8 KiB filter part kept
    # GLB access energy follows E(S) = E·(S / 100 KiB)^0.5 from Eyeriss v1's 10.16 pJ (CNNergy's table)
    glb_pj = reference("cnnergy-energy-per-op.yaml")["pj_65nm_1v"]["glb"]
    assert hw.glb.read_energy_pj == pytest.approx(glb_pj * math.sqrt(32 / 100), rel=1e-12)


def test_estimate_row_equals_the_estimate_of_the_edited_config(tmp_path: Path) -> None:
    sweep = parse_sweep({"config": "eyeriss-v1", "networks": ["phases_example"], "batch": 2,
                         "axes": {"pe_array.rows": [8]}}, "s.yaml", tmp_path)
    row = evaluate(sweep.points[0], None)
    base = load_config("eyeriss-v1")
    hw = replace(base, pe_array=replace(base.pe_array, rows=8))  # the same edit, without YAML
    graph = zoo.build("phases_example")
    e = estimate_network(graph, hw, default_mapping(graph, hw, 2))
    assert row["status"] == "ok" and row["error"] is None
    # integers exactly; floats within SAME_ARITHMETIC_REL (the same model on a config built another way)
    same = functools.partial(pytest.approx, rel=SAME_ARITHMETIC_REL, abs=0)
    assert row["energy_pj"] == same(e.total_pj()) and row["energy_dram_pj"] == same(e.total_pj("dram"))
    assert row["energy_per_image_pj"] == same(e.total_pj() / 2)
    assert row["latency_cycles"] == e.cycles and row["latency_s"] == same(e.cycles / 200e6)
    macs = sum(l.counts.macs for l in e.layers)
    assert row["macs"] == macs == 2 * zoo.build("phases_example").total_macs
    assert row["utilization"] == same(macs / (e.cycles * 8 * 14))
    assert row["pe_rows"] == 8 and row["glb_bytes"] == 108 * 1024


def test_a_quantized_network_is_swept_at_its_declared_word(tmp_path: Path) -> None:
    """An INT8 QDQ graph on the 16-bit eyeriss-v1 runs at 8 bit in a sweep as in `hwsim estimate`: the row says
    8 bit, and its DRAM bytes are the 10,808 words of tests/test_precision.py's hand count, one byte each."""
    import onnx
    import onnx_modern as M

    model = tmp_path / "q.onnx"
    onnx.save(M.qdq_convs(True), str(model))
    sweep = parse_sweep({"config": "eyeriss-v1", "networks": [str(model)], "axes": {"pe_array.rows": [12]}},
                        "s.yaml", tmp_path)
    row = evaluate(sweep.points[0], None)
    assert row["status"] == "ok", row["error"]
    assert row["word_bits"] == 8 and row["dram_bytes"] == 10_808


def test_overrides_errors_name_their_source() -> None:
    with pytest.raises(ConfigError, match=r"^s.yaml: axes: glb.siz: unknown key; did you mean 'size'\?"):
        load_config("eyeriss-v1", Overrides("s.yaml: axes", (("glb.siz", "8 KiB"),)))
    with pytest.raises(ConfigError, match=r"^s.yaml: axes: precision: 8 needs a unit"):
        load_config("eyeriss-v1", Overrides("s.yaml: axes", (("precision", 8),)))
    with pytest.raises(ConfigError, match=r"with glb.size=64 KiB \(s.yaml: axes\): glb.banks: 27 banks"):
        load_config("eyeriss-v1", Overrides("s.yaml: axes", (("glb.size", "64 KiB"),)))
    assert load_config("eyeriss-v1").glb.size_bytes == 108 * 1024  # the cached tree was not changed


@pytest.mark.parametrize("axes, fragments", [
    ({"glb.siz": ["8 KiB"]}, ["bad.yaml", "glb.siz", "size"]),
    ({"glb.size": ["8 KiX"]}, ["bad.yaml", "glb.size", "KiB"]),
    ({"glb.data_size": ["8 pJ"]}, ["bad.yaml", "glb.data_size", "KiB"]),
    ({"pe_array.rows": {"from": 4, "to": 16, "step": 0}}, ["bad.yaml", "pe_array.rows", "positive step"]),
    ({"zip": {"pe_array.rows": [8, 12], "pe_array.cols": [7]}}, ["bad.yaml", "axes.zip", "same number"]),
    ({"pe_array.rows": [8, 8]}, ["bad.yaml", "pe_array.rows", "twice"]),
    ({"batch": [0]}, ["bad.yaml", "batch", "positive"]),
    ({"pe_array.rows": {"from": 1, "to": float("inf"), "step": 1}}, ["pe_array.rows.to", "not a finite number"]),
    ({"pe_array.rows": {"from": 1, "to": 9, "step": float("nan")}}, ["pe_array.rows.step", "not a finite number"]),
    ({"pe_array.rows": {"from": 1, "to": float("inf"), "scale": "log2"}}, ["pe_array.rows.to", "finite"]),
    # (1e308 - 1) / 1e-308 overflows to infinity: refused as too many values, not an OverflowError
    ({"pe_array.rows": {"from": 1, "to": 1e308, "step": 1e-308}}, ["pe_array.rows", "inf values", "10000"]),
    # 9,999 x 9,999 = 99,980,001 points: counted, not expanded
    ({"pe_array.rows": {"from": 1, "to": 9999, "step": 1}, "pe_array.cols": {"from": 1, "to": 9999, "step": 1}},
     ["bad.yaml", "99,980,001 points", "100,000"]),
])
def test_bad_axes_are_one_line_errors(cli, tmp_path: Path, axes: dict, fragments: list[str]) -> None:
    path = _write(tmp_path / "bad.yaml", {"config": "eyeriss-v1", "networks": ["phases_example"], "axes": axes})
    assert_one_line_error(cli("sweep", str(path), "--out", str(tmp_path / "out")), *fragments)
    assert not (tmp_path / "out").exists()


def test_bad_sweep_files_and_options(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the default output folder, results/NAME, would be here
    ok = {"config": "eyeriss-v1", "networks": ["phases_example"], "axes": {"pe_array.rows": [8]}}
    assert_one_line_error(cli("sweep", str(_write(tmp_path / "a.yaml", {**ok, "mdoe": "simulate"}))),
                          "a.yaml", "mdoe", "mode")
    assert_one_line_error(cli("sweep", str(_write(tmp_path / "b.yaml", {**ok, "networks": ["resnet51"]}))),
                          "b.yaml", "networks", "resnet50")
    assert_one_line_error(cli("sweep", str(_write(tmp_path / "c.yaml", {**ok, "mode": "guess"}))),
                          "c.yaml", "mode", "estimate")
    assert_one_line_error(cli("sweep", str(tmp_path / "missing.yaml")), "missing.yaml")
    (tmp_path / "d.yaml").write_text("axes: [1\n")
    assert_one_line_error(cli("sweep", str(tmp_path / "d.yaml")), "d.yaml", "YAML")
    assert_one_line_error(cli("sweep", str(tmp_path / "a.yaml"), "--x", "energy"), "--x", "pareto")
    assert_one_line_error(cli("sweep", str(_small(tmp_path)), "--executor", "dask", "--scheduler", "tcp://h:8786",
                              "--jobs", "2"), "--jobs", "remove")
    assert_one_line_error(cli("sweep", str(_small(tmp_path)), "--scheduler", "tcp://h:8786"), "--executor dask")
    assert not (tmp_path / "results").exists()


# ----- running, failing, resuming ------------------------------------------------------------------------


def test_failing_point_is_recorded_and_retried_on_request(cli, tmp_path: Path) -> None:
    path = _write(tmp_path / "f.yaml", {"config": "eyeriss-v1", "networks": ["phases_example"],
                                        "axes": {"glb.data_size": ["64 B", "32 KiB"]}, "outputs": {"table": "csv"}})
    out = tmp_path / "out"
    first = cli("sweep", str(path), "--out", str(out), "--jobs", "1", "--json")
    assert first.code == 1, first.err  # the table holds a failed point
    doc = first.json()
    assert (doc["points"], doc["ok"], doc["failed"]) == (2, 1, 1)
    rows = {r["glb.data_size"]: r for r in read_table(out / "results.csv")}
    assert rows["64 B"]["status"] == "error" and "64 B GLB" in rows["64 B"]["error"]
    assert rows["64 B"]["energy_pj"] is None and rows["32 KiB"]["status"] == "ok"
    again = cli("sweep", str(path), "--out", str(out), "--json").json()
    assert again["evaluated"] == [] and again["done_before"] == 2
    retry = cli("sweep", str(path), "--out", str(out), "--retry-failed", "--json").json()
    assert retry["evaluated"] == [rows["64 B"]["point_id"]]


def test_limit_then_resume_runs_only_the_missing_points(cli, tmp_path: Path) -> None:
    path = _small(tmp_path)
    fresh = cli("sweep", str(path), "--out", str(tmp_path / "fresh"), "--jobs", "1", "--json")
    assert fresh.code == 0, fresh.err
    all_ids = set(fresh.json()["evaluated"])
    part = cli("sweep", str(path), "--out", str(tmp_path / "out"), "--jobs", "1", "--limit", "1", "--json").json()
    assert len(part["evaluated"]) == 1 and part["remaining"] == 3
    rest = cli("sweep", str(path), "--out", str(tmp_path / "out"), "--jobs", "1", "--json").json()
    assert (rest["done_before"], rest["to_run"], rest["remaining"]) == (1, 3, 0)
    assert set(rest["evaluated"]) == all_ids - set(part["evaluated"])
    _assert_same_table(tmp_path / "out", tmp_path / "fresh")


# `hwsim sweep` in a fresh interpreter whose evaluation of every point after the first blocks until the process
# is killed: the kill lands after exactly one point, however fast or slow the machine.
STOP_AFTER_FIRST_POINT = """
import sys, threading
import hwsim.sweep.run as run
evaluate, started = run.evaluate, []
def evaluate_first_only(point, trace_dir=None):
    started.append(point)
    if len(started) > 1:
        threading.Event().wait()  # until killed
    return evaluate(point, trace_dir)
run.evaluate = evaluate_first_only
from hwsim.cli.main import main
sys.exit(main(sys.argv[1:]))
"""
WAIT_LIMIT_S = 120  # how long a wait below may last before the test gives up: a bound on hangs, not a speed claim


def _wait_until(condition: Callable[[], bool], proc: subprocess.Popen) -> bool:
    """Poll `condition` while `proc` runs, at most WAIT_LIMIT_S seconds; whether it came true."""
    deadline = time.monotonic() + WAIT_LIMIT_S
    while not condition():
        if proc.poll() is not None or time.monotonic() > deadline:
            return condition()
        time.sleep(0.01)
    return True


def test_killed_sweep_resumes_with_the_missing_points(cli, tmp_path: Path) -> None:
    path = _write(tmp_path / "k.yaml", {"name": "k", "config": "eyeriss-v1", "networks": ["resnet50"],
                                        "axes": {"pe_array.rows": [8, 10, 12, 14, 16, 18],
                                                 "pe_array.cols": [7, 10, 14, 16, 20, 24, 28, 32]},
                                        "outputs": {"table": "csv"}})
    out = tmp_path / "out"
    log = out / "points.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", STOP_AFTER_FIRST_POINT, "sweep", str(path), "--out", str(out),
                             "--jobs", "1", "--json"], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wrote = _wait_until(lambda: log.exists() and log.read_text().count("\n") >= 1, proc)
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else proc.returncode
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=WAIT_LIMIT_S)
    assert wrote, f"no point in {log} after {WAIT_LIMIT_S} s"
    done = {json.loads(line)["point_id"] for line in log.read_text().splitlines() if line.strip()}
    assert not (out / "results.csv").exists()  # no table until a run completes
    assert len(done) == 1
    rerun = cli("sweep", str(path), "--out", str(out), "--jobs", "1", "--json")
    assert rerun.code == 0, rerun.err
    doc = rerun.json()
    assert (doc["done_before"], doc["to_run"]) == (len(done), 48 - len(done))
    assert done.isdisjoint(doc["evaluated"]) and len(doc["evaluated"]) == 48 - len(done)
    fresh = cli("sweep", str(path), "--out", str(tmp_path / "fresh"), "--jobs", "1", "--json")
    assert fresh.code == 0
    _assert_same_table(out, tmp_path / "fresh")


def test_process_pool_gives_the_in_process_results(cli, tmp_path: Path) -> None:
    path = _small(tmp_path)
    assert cli("sweep", str(path), "--out", str(tmp_path / "one"), "--jobs", "1").code == 0
    assert cli("sweep", str(path), "--out", str(tmp_path / "two"), "--jobs", "2").code == 0
    _assert_same_table(tmp_path / "two", tmp_path / "one")


def test_dask_local_cluster_gives_the_local_results(cli, tmp_path: Path) -> None:
    distributed = pytest.importorskip("dask.distributed")
    path = _small(tmp_path)
    assert cli("sweep", str(path), "--out", str(tmp_path / "local"), "--jobs", "1").code == 0
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
                                  scheduler_kwargs={"dashboard_address": ":0"}) as cluster:
        result = cli("sweep", str(path), "--out", str(tmp_path / "dask"), "--executor", "dask",
                     "--scheduler", cluster.scheduler_address, "--json")
    assert result.code == 0, result.err
    assert len(result.json()["evaluated"]) == 4
    _assert_same_table(tmp_path / "dask", tmp_path / "local")


def _worker_processes() -> set[int]:
    """Live child processes of this one that run a multiprocessing worker (not its resource tracker)."""
    import psutil  # a dependency of dask.distributed

    found = set()
    for child in psutil.Process().children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE and "spawn_main" in " ".join(child.cmdline()):
                found.add(child.pid)
        except psutil.NoSuchProcess:
            pass
    return found


def test_dask_without_a_scheduler_starts_and_closes_a_local_cluster(cli, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("dask.distributed")
    import os
    import threading

    import hwsim.sweep.executors as executors

    # 64 estimates are far too little work to start a LocalCluster for (the local pool runs them, with a note:
    # tests/test_sweep_dask.py); with the threshold lifted they start one
    monkeypatch.setattr(executors, "LOCAL_CLUSTER_MIN_S_PER_WORKER", 0.0)
    path = SWEEPS / "cnnergy-glb.yaml"
    assert cli("sweep", str(path), "--out", str(tmp_path / "one"), "--jobs", "1").code == 0
    before, running = _worker_processes(), threading.Event()
    peak = [0]

    def watch() -> None:  # the most worker processes alive at once, sampled while the sweep runs (a worker a
        # loaded machine restarts is a new process, not one more worker)
        while not running.wait(0.02):
            peak[0] = max(peak[0], len(_worker_processes() - before))

    import dask.distributed

    asked: list[int] = []  # the workers each LocalCluster was started with

    class CountedCluster(dask.distributed.LocalCluster):
        def __init__(self, *, n_workers: int, **options: object) -> None:
            asked.append(n_workers)
            super().__init__(n_workers=n_workers, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(dask.distributed, "LocalCluster", CountedCluster)
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        result = cli("sweep", str(path), "--out", str(tmp_path / "dask"), "--executor", "dask", "--json")
    finally:
        running.set()
        watcher.join()
    assert result.code == 0, result.err
    assert len(result.json()["evaluated"]) == 64 and result.json()["executor"] == executors.LOCAL_CLUSTER
    _assert_same_table(tmp_path / "dask", tmp_path / "one")
    expected = min(len(os.sched_getaffinity(0)), 64)  # one worker process per CPU, at most one per point
    assert asked == [expected]
    # that many processes ran at once (a loaded machine may restart a worker while the one it replaces is still
    # exiting, so the sampled peak may hold one more, never fewer)
    assert peak[0] >= expected
    assert _gone(before)  # all of them closed with the sweep


def _gone(before: set[int], bound_s: float = 30.0) -> bool:
    """Whether every worker process started since `before` has exited, waiting at most `bound_s` for a loaded
    machine to reap them (a bound, not a speed claim)."""
    import time

    deadline = time.monotonic() + bound_s
    while _worker_processes() - before:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_simulate_mode_keeps_traces_that_agree_with_the_estimate(cli, tmp_path: Path) -> None:
    axes = {"pe_array.cols": [7, 14]}
    for mode in ("simulate", "estimate"):
        path = _write(tmp_path / f"{mode}.yaml", {"config": "eyeriss-v1", "networks": ["phases_example"],
                                                   "mode": mode, "axes": axes, "outputs": {"table": "csv"}})
        assert cli("sweep", str(path), "--out", str(tmp_path / mode), "--jobs", "1").code == 0
    simulated = {r["pe_array.cols"]: r for r in read_table(tmp_path / "simulate" / "results.csv")}
    estimated = {r["pe_array.cols"]: r for r in read_table(tmp_path / "estimate" / "results.csv")}
    for cols in ("7", "14"):
        s, e = simulated[cols], estimated[cols]
        assert (tmp_path / "simulate" / s["trace"]).is_file()
        assert s["trace"] == f"traces/{s['point_id']}.h5"
        # the simulator and the analytic model count the same accesses (`hwsim check`): the energy of the accesses
        # is equal; the clock (and control, a share that includes it) is drawn over each side's time, the
        # simulated latency and the bound below it
        per_access = [c for c in COMPONENTS if c not in TIME_PRICED]
        assert sum(float(s[f"energy_{c}_pj"]) for c in per_access) == pytest.approx(
            sum(float(e[f"energy_{c}_pj"]) for c in per_access), rel=1e-9)
        assert float(s["energy_clock_pj"]) > float(e["energy_clock_pj"]) > 0
        assert (s["dram_bytes"], s["macs"]) == (e["dram_bytes"], e["macs"])
        assert s["latency_cycles"] >= e["latency_cycles"]  # the estimate is a lower bound


def test_parquet_table(cli, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    path = _small(tmp_path, outputs={"table": "parquet"})
    assert cli("sweep", str(path), "--out", str(tmp_path / "pq"), "--jobs", "1").code == 0
    assert cli("sweep", str(_small(tmp_path, "csv.yaml")), "--out", str(tmp_path / "csv"), "--jobs", "1").code == 0
    _assert_same_rows(_table(tmp_path / "pq", "results.parquet"), _table(tmp_path / "csv"))


# ----- the shipped sweeps ----------------------------------------------------------------------------------


def test_shipped_sweeps_parse_expand_and_run() -> None:
    glb = load_sweep(SWEEPS / "cnnergy-glb.yaml")
    sizes = [dict(p.settings)["glb.data_size"] for p in glb.points]
    assert sizes == [f"{8 * k} KiB" for k in range(1, 65)]  # 8 KiB to 512 KiB in 8 KiB steps
    pe = load_sweep(SWEEPS / "resnet50-pe-array.yaml")
    assert len(pe.points) == 6 * 5
    base_8bit = load_config("eyeriss-8bit")
    for point in (glb.points[0], glb.points[-1], pe.points[0], pe.points[-1]):
        row = evaluate(point, None)
        assert row["status"] == "ok", row["error"]
    last = evaluate(glb.points[-1], None)
    assert last["glb_data_bytes"] == 512 * 1024
    assert last["glb_read_energy_pj"] == pytest.approx(
        base_8bit.glb.read_energy_pj * math.sqrt(512 * 1024 / base_8bit.glb.data_bytes), rel=1e-12)


# ----- Pareto -------------------------------------------------------------------------------------------


ROWS = [  # (x, y); the fronts are worked out by hand below
    {"point_id": "a", "x": 1, "y": 9}, {"point_id": "b", "x": 2, "y": 7}, {"point_id": "c", "x": 2, "y": 8},
    {"point_id": "d", "x": 3, "y": 7}, {"point_id": "e", "x": 4, "y": 3}, {"point_id": "f", "x": 4, "y": 3},
    {"point_id": "g", "x": 5, "y": 5}, {"point_id": "h", "x": 6, "y": 1}, {"point_id": "i", "x": None, "y": 0},
    {"point_id": "j", "x": 7, "y": float("nan")}, {"point_id": "k", "x": 8, "y": 6},
]


def _ids(front: list[int]) -> list[str]:
    return [str(ROWS[i]["point_id"]) for i in front]


def test_pareto_front_by_hand() -> None:
    # c is beaten by b (same x, higher y), d by b (same y, higher x), g and k by e; e and f tie; i, j lack numbers
    assert _ids(pareto_front(ROWS, "x", "y")) == ["a", "b", "e", "f", "h"]
    # large x, small y: k has the largest x, h the smallest y, and every other point loses to h
    assert _ids(pareto_front(ROWS, "x", "y", maximize_x=True)) == ["k", "h"]
    # small x, large y: a has both
    assert _ids(pareto_front(ROWS, "x", "y", maximize_y=True)) == ["a"]


def test_pareto_cli_json_and_plot(cli, tmp_path: Path) -> None:
    table = tmp_path / "results.csv"
    lines = ["point_id,status,network,energy_pj,latency_cycles,error"]
    lines += [f"{r['point_id']},ok,net,{r['x'] if r['x'] is not None else ''},{r['y']}," for r in ROWS]
    lines.append("z,error,net,,,layer does not fit")  # failed points are not candidates
    table.write_text("\n".join(lines) + "\n")
    doc = cli("sweep", "pareto", str(tmp_path), "--x", "energy", "--y", "latency", "--json").json()
    assert (doc["x"], doc["y"], doc["points"]) == ("energy_pj", "latency_cycles", len(ROWS))
    assert [r["point_id"] for r in doc["front"]] == ["a", "b", "e", "f", "h"]
    png = tmp_path / "front.png"
    shown = cli("sweep", "pareto", str(table), "--x", "energy_pj", "--y", "latency", "--maximize", "x",
                "--out", str(png))
    assert shown.code == 0, shown.err
    assert "k" in shown.out and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert_one_line_error(cli("sweep", "pareto", str(table), "--x", "energie", "--y", "latency"),
                          "energie", "energy_pj")
    assert_one_line_error(cli("sweep", "pareto", str(tmp_path / "none.csv"), "--x", "energy", "--y", "latency"),
                          "none.csv")
    assert_one_line_error(cli("sweep", "pareto", str(table)), "--x")


def test_two_sweeps_into_one_folder_do_not_interleave(cli, tmp_path: Path) -> None:
    """While a run holds the output folder, a second sweep into it stops in one line naming that run's pid and
    writes nothing there; once the folder is free the sweep runs."""
    from hwsim.errors import SweepError
    from hwsim.files import OutputLock

    out = tmp_path / "out"
    out.mkdir()
    with OutputLock(out, SweepError):
        assert_one_line_error(cli("sweep", str(_small(tmp_path)), "--out", str(out)),
                              str(out), f"another hwsim run (pid {os.getpid()}) is writing it")
        assert list(out.iterdir()) == []
    result = cli("sweep", str(_small(tmp_path)), "--out", str(out), "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["ok"] == 4
