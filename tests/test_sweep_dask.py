"""`hwsim sweep --executor dask`: on a running cluster (a scheduler and two workers started here on loopback), and
on a LocalCluster the sweep starts itself, which leaves no process running after the sweep, finished or killed.

Every wait is bounded (WAIT_LIMIT_S): a test that cannot make progress fails instead of hanging. The bounds are
limits on hangs on a loaded machine, not speed claims.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from conftest import REPO

import hwsim.sweep.executors as executors
from hwsim.sweep.spec import load_sweep

distributed = pytest.importorskip("dask.distributed")

WAIT_LIMIT_S = 120.0
PYTHON = sys.executable
DASK = str(Path(sys.executable).with_name("dask"))

# `hwsim sweep` in a fresh interpreter with a LocalCluster for any number of points (the size threshold lifted):
# what a sweep large enough to start one does, with a few seconds of points
# The sweep as a terminal's foreground command runs it: a test run launched in the background (`cmd &`, as CI
# may be) ignores SIGINT, and its children inherit that, so the child gives itself Python's handling back (as
# tests/test_simulate.py's interrupted run does).
FORCE_LOCAL_CLUSTER = """
import signal
import sys
signal.signal(signal.SIGINT, signal.default_int_handler)
import hwsim.sweep.executors as executors
executors.LOCAL_CLUSTER_MIN_S_PER_WORKER = 0.0
from hwsim.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def _sweep_file(path: Path, mode: str, pe_rows: list[int], network: object = "phases_example") -> Path:
    """A sweep of `network` on Eyeriss v1: len(pe_rows) × 6 PE-column counts × 2 GLB sizes points."""
    doc = {"name": path.stem, "config": "eyeriss-v1", "networks": [network], "mode": mode,
           "axes": {"pe_array.rows": pe_rows, "pe_array.cols": [7, 8, 10, 12, 14, 16],
                    "glb.data_size": ["16 KiB", "32 KiB"]},
           "outputs": {"table": "csv", "traces": False}}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _rows(out: Path) -> dict[str, dict]:
    """The rows a sweep appended to OUT/points.jsonl by point id, without the wall time (the one value that
    differs between two runs of a point)."""
    rows = {}
    for line in (out / "points.jsonl").read_text().splitlines():
        row = json.loads(line)
        row.pop("wall_s")
        rows[row["point_id"]] = row
    return rows


def _wait_for(condition: Callable[[], bool], what: str, proc: subprocess.Popen | None = None) -> None:
    """Poll `condition` until it holds; fail after WAIT_LIMIT_S, or as soon as `proc` has exited without it."""
    deadline = time.monotonic() + WAIT_LIMIT_S
    while not condition():
        if proc is not None and proc.poll() is not None and not condition():
            pytest.fail(f"{what}: the process exited with {proc.returncode} first")
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {WAIT_LIMIT_S:.0f} s")
        time.sleep(0.02)


# ----- processes, read from /proc ---------------------------------------------------------------------------


def _stat(pid: int) -> tuple[str, int, int] | None:
    """A process's state, parent and process group, or None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[1]), int(fields[2])


def _processes() -> Iterator[tuple[int, str, int, int]]:
    """(pid, state, parent, process group) of every process."""
    for name in os.listdir("/proc"):
        if name.isdigit() and (stat := _stat(int(name))) is not None:
            yield int(name), *stat


def _running(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z"  # a zombie has exited; only its exit status waits to be read


def _descendants(root: int) -> set[int]:
    """The running processes whose parent chain includes `root`."""
    children: dict[int, list[int]] = {}
    for pid, state, parent, _ in _processes():
        if state != "Z":
            children.setdefault(parent, []).append(pid)
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _group(pgid: int) -> set[int]:
    """The running processes of process group `pgid` (a worker re-parented after its parent died stays in it)."""
    return {pid for pid, state, _, group in _processes() if group == pgid and state != "Z"}


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _spawned_workers(root: int) -> set[int]:
    """Descendants of `root` started by multiprocessing's spawn: a LocalCluster's worker processes."""
    return {pid for pid in _descendants(root) if "spawn_main" in _cmdline(pid)}


def _assert_nothing_left(pgid: int, seen: set[int]) -> None:
    """No process of the sweep's process group and none of the processes `seen` under it keeps running (waiting
    at most WAIT_LIMIT_S for the last ones to exit)."""
    deadline = time.monotonic() + WAIT_LIMIT_S
    while (left := _group(pgid) | {p for p in seen if _running(p)}) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left, {pid: _cmdline(pid) for pid in left}


class Sweep:
    """`hwsim sweep ARGV` with a LocalCluster, in its own session (so its process group is its own), its output
    in files (a pipe nobody reads while it runs could stall it)."""

    def __init__(self, argv: list[str], folder: Path) -> None:
        self.stdout, self.stderr = folder / "sweep.out", folder / "sweep.err"
        with self.stdout.open("w") as out, self.stderr.open("w") as err:
            self.proc = subprocess.Popen([PYTHON, "-c", FORCE_LOCAL_CLUSTER, "sweep", *argv], cwd=REPO,
                                         start_new_session=True, stdout=out, stderr=err)
        self.pid = self.proc.pid

    def wait(self) -> int:
        """Its exit code, waiting at most WAIT_LIMIT_S."""
        return self.proc.wait(timeout=WAIT_LIMIT_S)

    def kill_all(self) -> None:
        """SIGKILL to its whole process group if it still runs (a failed test's cleanup)."""
        if self.proc.poll() is None:
            os.killpg(self.pid, signal.SIGKILL)
            self.proc.wait(timeout=WAIT_LIMIT_S)

    def err(self) -> str:
        return self.stderr.read_text()


# ----- a running cluster --------------------------------------------------------------------------------------


def _start(argv: list[str], log: Path) -> subprocess.Popen:
    with log.open("w") as sink:
        return subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)


def _stop(procs: list[subprocess.Popen]) -> None:
    """SIGTERM to each process group, then SIGKILL to any still running after a bounded wait."""
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)


def _scheduler_address(scheduler_file: Path) -> str | None:
    try:
        return str(json.loads(scheduler_file.read_text())["address"])
    except (OSError, ValueError, KeyError):
        return None  # not written yet, or half written


def test_sweep_on_a_running_loopback_cluster_gives_the_local_pool_rows(cli, tmp_path: Path) -> None:
    """`dask scheduler` and two `dask worker` processes (one thread each) on 127.0.0.1 with free ports: the sweep
    runs there unchanged, row for row equal to the local pool's, each worker one process for all its points."""
    path = _sweep_file(tmp_path / "loop.yaml", "estimate", [8, 12])  # 24 points
    local = cli("sweep", str(path), "--out", str(tmp_path / "local"), "--jobs", "2", "--json")
    assert local.code == 0, local.err
    assert local.json()["executor"] == executors.LOCAL
    scheduler_file = tmp_path / "scheduler.json"
    procs = [_start([DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                     "--scheduler-file", str(scheduler_file)], tmp_path / "scheduler.log")]
    try:
        _wait_for(lambda: _scheduler_address(scheduler_file) is not None, "the scheduler's address", procs[0])
        address = _scheduler_address(scheduler_file)
        assert address is not None and address.startswith("tcp://127.0.0.1:")
        procs += [_start([DASK, "worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--no-nanny",
                          "--no-dashboard", "--name", f"w{k}", "--death-timeout", "60"],
                         tmp_path / f"worker{k}.log") for k in range(2)]
        with distributed.Client(address, timeout=WAIT_LIMIT_S) as client:
            client.wait_for_workers(2, timeout=WAIT_LIMIT_S)
            pids_before = client.run(os.getpid)
            done = subprocess.run([PYTHON, "-m", "hwsim.cli.main", "sweep", str(path), "--out", str(tmp_path / "dask"),
                                   "--executor", "dask", "--scheduler", address, "--json"],
                                  cwd=REPO, capture_output=True, text=True, timeout=WAIT_LIMIT_S, check=False)
            assert done.returncode == 0, done.stderr
            summary = json.loads(done.stdout)
            pids_after = client.run(os.getpid)
            executed = client.run(lambda dask_worker: dask_worker.state.executed_count)
            imported = client.run(lambda: "hwsim.sweep.run" in sys.modules)
    finally:
        _stop(procs)
    assert (summary["executor"], summary["where"]) == (executors.CLUSTER, f"the Dask cluster at {address}")
    assert len(summary["evaluated"]) == 24 and summary["ok"] == 24
    assert _rows(tmp_path / "dask") == _rows(tmp_path / "local")  # every value, to the last bit
    # the two worker processes started here ran every point, each in the one interpreter that imported hwsim
    assert sorted(pids_before.values()) == sorted(pids_after.values()) == sorted(p.pid for p in procs[1:])
    assert sum(executed.values()) == 24 and all(imported.values())
    assert all(proc.returncode is not None for proc in procs)


# ----- a LocalCluster -----------------------------------------------------------------------------------------


def test_a_small_sweep_runs_on_the_local_pool_and_says_so(cli, tmp_path: Path) -> None:
    path = _sweep_file(tmp_path / "small.yaml", "estimate", [8])
    assert executors.estimated_seconds(load_sweep(path).points) < executors.LOCAL_CLUSTER_MIN_S_PER_WORKER
    result = cli("sweep", str(path), "--out", str(tmp_path / "out"), "--executor", "dask", "--jobs", "2")
    assert result.code == 0, result.err
    notes = [line for line in result.out.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "12 points" in notes[0] and "not on a Dask LocalCluster" in notes[0], result.out
    assert "on a local pool of 2 processes" in result.out
    doc = cli("sweep", str(path), "--out", str(tmp_path / "again"), "--executor", "dask", "--jobs", "2",
              "--json").json()
    assert (doc["executor"], doc["workers"], len(doc["notes"])) == (executors.LOCAL, 2, 1)


def test_a_finished_local_cluster_sweep_leaves_nothing_running(tmp_path: Path) -> None:
    path = _sweep_file(tmp_path / "done.yaml", "estimate", [8])
    sweep = Sweep([str(path), "--out", str(tmp_path / "out"), "--executor", "dask", "--jobs", "2", "--json"],
                  tmp_path)
    seen: set[int] = set()
    workers: set[int] = set()
    deadline = time.monotonic() + WAIT_LIMIT_S
    try:
        while sweep.proc.poll() is None and time.monotonic() < deadline:  # every process under the sweep while it
            seen |= _descendants(sweep.pid)  # runs, each to have exited after it
            workers |= _spawned_workers(sweep.pid)
            time.sleep(0.02)
        assert sweep.wait() == 0, sweep.err()
    finally:
        sweep.kill_all()
    doc = json.loads(sweep.stdout.read_text())
    assert (doc["executor"], doc["workers"], doc["ok"]) == (executors.LOCAL_CLUSTER, 2, 12)
    assert len(workers) >= 2, workers  # the LocalCluster's worker processes were seen
    _assert_nothing_left(sweep.pid, seen)


# a sweep that runs for a while: 24 simulated points of SqueezeNet at 32x32, ~0.5 CPU-s each
LONG_NETWORK = {"name": "squeezenet11", "input": "32x32"}
LONG_POINTS = 24


@pytest.mark.parametrize("signum, whole_group, running, code", [
    (signal.SIGINT, True, True, 130),  # Ctrl-C in a terminal: every process of the foreground group gets it
    (signal.SIGTERM, False, True, 128 + signal.SIGTERM),  # `kill PID`
    (signal.SIGKILL, False, True, -signal.SIGKILL),  # no cleanup at all: the workers notice their parent is gone
    (signal.SIGTERM, False, False, 128 + signal.SIGTERM),  # held until the cluster has started, then as above
    (signal.SIGINT, True, False, 130),
], ids=["SIGINT", "SIGTERM", "SIGKILL", "SIGTERM-starting", "SIGINT-starting"])
def test_a_killed_local_cluster_sweep_leaves_nothing_running(tmp_path: Path, signum: int, whole_group: bool,
                                                             running: bool, code: int) -> None:
    """Killed once points are coming in (`running`), or while the cluster starts (its worker processes spawned,
    no point finished): the sweep ends with its exit code, and none of its processes keeps running."""
    path = _sweep_file(tmp_path / "kill.yaml", "simulate", [8, 12], LONG_NETWORK)
    out = tmp_path / "out"
    log = out / "points.jsonl"
    sweep = Sweep([str(path), "--out", str(out), "--executor", "dask", "--jobs", "2"], tmp_path)
    try:
        if running:
            _wait_for(lambda: log.exists() and log.read_text().count("\n") >= 1, "the first point", sweep.proc)
        else:
            _wait_for(lambda: bool(_spawned_workers(sweep.pid)), "a worker process", sweep.proc)
        workers = _spawned_workers(sweep.pid)
        seen = _descendants(sweep.pid)
        assert sweep.proc.poll() is None, "the sweep finished before it could be killed"
        (os.killpg if whole_group else os.kill)(sweep.pid, signum)
        assert sweep.wait() == code, sweep.err()
    finally:
        sweep.kill_all()
    assert workers and (len(workers) == 2 or not running), workers  # the LocalCluster's worker processes ran
    lines = sweep.err().strip().splitlines()
    if signum != signal.SIGKILL and (running or not whole_group):
        # one line; only a Ctrl-C that reaches worker processes still importing makes them print their own
        assert lines == ["hwsim: interrupted" if signum == signal.SIGINT else "hwsim: terminated"], lines
    _assert_nothing_left(sweep.pid, seen)
    assert (1 if running else 0) <= len(_rows(out) if log.exists() else {}) < LONG_POINTS  # kept for a rerun
