"""Replayed groups (`hwsim.sim.replay`) against the same groups booked in full, step by step.

A sequential work's repeating groups are booked once and replayed from templates. Replay is an optimisation and
must change nothing: every dataset of the trace (records of every level, groups, occupancy) byte for byte, and
every figure of the report, equal those of a run that books every group in full — on depth-first stacks (DMCNN-VD
at its least on-chip memory, SRGAN at its least DRAM traffic: the line buffer, DRAM loads and stores at addresses
that walk across rows and channels, the front's model check and trace validation). Each run must also replay most
of its groups, or the comparison would prove nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from conftest import trace_datasets

import hwsim.sim.replay as replay_module
from hwsim.sim.replay import GroupReplay

RUNS = {
    "dmcnn_vd min-memory": ["depthfirst", "dmcnn_vd", "--input", "160x90", "--simulate", "min-memory"],
    "srgan min-dram": ["depthfirst", "srgan", "--input", "160x90", "--simulate", "min-dram"],
}


def _count_replays(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A one-item list that counts the groups replayed from now on."""
    replayed = [0]
    book = GroupReplay.replay

    def counting(self: GroupReplay, *group: Any) -> bool:
        done = book(self, *group)
        replayed[0] += done
        return done
    monkeypatch.setattr(GroupReplay, "replay", counting)
    return replayed


def _run(cli: Any, monkeypatch: pytest.MonkeyPatch, args: list[str], where: Path, on: bool) -> tuple[Any, int]:
    """The command's JSON (without its timing and paths) and how many groups it replayed."""
    monkeypatch.setattr(replay_module, "REPLAY", on)
    replayed = _count_replays(monkeypatch)
    where.mkdir()
    result = cli(*args, "--trace", str(where / "t.h5"), "--json")
    assert result.code == 0, result.err
    text = result.out.replace(str(where), "DIR")
    doc = json.loads(text)
    doc.pop("seconds", None)
    return doc, replayed[0]


@pytest.mark.parametrize("run", sorted(RUNS))
def test_replayed_groups_equal_groups_booked_in_full(cli: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                     run: str) -> None:
    full, none = _run(cli, monkeypatch, RUNS[run], tmp_path / "full", False)
    replayed, count = _run(cli, monkeypatch, RUNS[run], tmp_path / "replayed", True)
    assert none == 0
    assert replayed == full
    traces = sorted(p.relative_to(tmp_path / "full") for p in (tmp_path / "full").rglob("*.h5"))
    assert traces
    groups = 0
    for trace in traces:
        a, b = trace_datasets(tmp_path / "full" / trace), trace_datasets(tmp_path / "replayed" / trace)
        assert a.keys() == b.keys()
        assert [name for name in a if a[name] != b[name]] == [], trace
        with h5py.File(tmp_path / "full" / trace, "r") as f:
            groups += len(f["groups"])
    assert count > 0.8 * groups, (count, groups)  # most groups were replayed: the comparison covers them


def _row_walk(groups: int) -> Any:
    """A sequential work of `groups` groups on depthfirst-edge (8-bit words; DRAM: 2 channels, 64 B bursts
    interleaved, 2 KiB rows per channel, a row hit 40 ns = 20 cycles, a miss 80 ns = 40): group k loads the 64
    words (one burst) at word 64 k into the GLB, moves them to the RFs, and runs a pass. Burst k lands on channel
    k mod 2, in its row ⌊k / 64⌋ (32 bursts of a channel per 2 KiB row): every group hits the row the one two
    before left open, but for the first of each row, a miss. One shape per channel, two DRAM states each."""
    from hwsim.hardware import load_config
    from hwsim.mapping.schedule import Schedule, Work, WorkInfo, empty_steps, transfers
    from hwsim.vocab import Level, Operand, StepKind
    from hwsim.workload import zoo

    hw = load_config("depthfirst-edge")
    layer = zoo.build("phases_example").layer("n2")

    def steps() -> Any:
        k = np.arange(groups)
        compute = empty_steps(groups)
        compute["kind"], compute["group"], compute["macs"], compute["active_pes"] = StepKind.COMPUTE, k, 64, 64
        block = np.concatenate([transfers(Operand.IFMAP, Level.DRAM, Level.GLB, k, np.full(groups, 64), 64 * k,
                                          np.zeros(groups, np.int64)),
                                transfers(Operand.IFMAP, Level.GLB, Level.RF, k, np.full(groups, 64),
                                          np.zeros(groups, np.int64), np.zeros(groups, np.int64)), compute])
        yield block[np.argsort(block["group"], kind="stable")]

    return Schedule("walk", hw.name, "hand", 1, (Work(layer, WorkInfo(), steps, pipelined=False),)), hw


def test_row_hits_and_misses_are_replayed_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk over DRAM rows (`_row_walk`, 200 groups: misses at groups 0, 1, 64, 65, 128, 129, 192, 193) gives
    the trace of booking every group in full, with most groups replayed; a miss's load starts 20 cycles later after
    its group's start than a hit's."""
    from hwsim.sim.run import simulate_to_trace

    schedule, hw = _row_walk(200)
    replayed = _count_replays(monkeypatch)
    for on, name in ((False, "full.h5"), (True, "replayed.h5")):
        monkeypatch.setattr(replay_module, "REPLAY", on)
        simulate_to_trace(schedule, hw, tmp_path / name, per_transaction=frozenset({"dram"}))
    full, replayed_trace = trace_datasets(tmp_path / "full.h5"), trace_datasets(tmp_path / "replayed.h5")
    assert [name for name in full if full[name] != replayed_trace[name]] == []
    assert replayed[0] > 150
    with h5py.File(tmp_path / "full.h5", "r") as f:
        dram = f["levels/dram"][()]
    took = np.sort(dram["start_cycle"])  # group k's load starts its latency after the group starts
    gap = np.diff(took)  # a group's span (the same for all) plus the next load's latency: 20 cycles more for a miss
    assert sorted(set(gap.tolist())) == [int(gap.min()), int(gap.min()) + 20]
    assert (np.flatnonzero(gap > gap.min()) + 1).tolist() == [1, 64, 65, 128, 129, 192, 193]
