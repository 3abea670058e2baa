"""Skipped steady states (`hwsim.sim.steady`) against the same pipelined works simulated group by group.

A pipelined work's periods that repeat are made from the last one and the machine jumps past them. The skip is an
optimisation and must change nothing: every dataset of the trace (records of every level, groups, occupancy) byte
for byte, every attribute (the DRAM's counters, each layer's stalls) and every figure of the report equal those of
a run that simulates every group. The runs cover both states a checkpoint takes: AlexNet's fully connected layers
on eyeriss-v1, whose filter tiles wait for the space the group before frees (one or two groups in flight, periods
of one, two or four groups: a 288-B ifmap tile walks the 64-B bursts in two), and VGG-16's at 160x160, whose fc6
loads also run up to four groups ahead of the array while the prefetcher waits for them to land (periods of eight
groups: a 100-word ifmap tile steps through the 32-word bursts in eight, a 2,200-word filter tile in four). Each run
must also skip most of its fully connected layers' groups, or the comparison would prove nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import h5py
import pytest
from conftest import trace_datasets

import hwsim.sim.steady as steady_module
from hwsim.sim.steady import SteadyState

RUNS = {
    "alexnet eyeriss-v1": ["simulate", "alexnet", "--hw", "eyeriss-v1"],
    "vgg16 eyeriss-v1 160x160": ["simulate", "vgg16", "--hw", "eyeriss-v1", "--input", "160x160"],
}


def _count_skips(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Groups skipped per work from now on; each skip must leave the machine in the state it found it in, relative
    to the clock and to the last group stored (the clock, every component, the claim waiting, the events due and
    the groups in flight all moved on alike)."""
    skipped: dict[str, int] = {}
    skip = SteadyState._skip

    def counting(self: SteadyState, marks: Any) -> bool:
        before, state = self.skipped_groups, marks[-1].state
        done = skip(self, marks)
        if done:
            after = self._mark(SimpleNamespace(index=self.ex.stored.done_upto))  # type: ignore[arg-type]
            assert after is not None and after.state == state
        name = self.ex.layer.name  # type: ignore[attr-defined]
        skipped[name] = skipped.get(name, 0) + self.skipped_groups - before
        return done
    monkeypatch.setattr(SteadyState, "_skip", counting)
    return skipped


def _run(cli: Any, monkeypatch: pytest.MonkeyPatch, args: list[str], trace: Path,
         on: bool) -> tuple[Any, dict[str, int]]:
    """The command's JSON (without its timing and paths) and the groups it skipped per work."""
    monkeypatch.setattr(steady_module, "STEADY", on)
    skipped = _count_skips(monkeypatch)
    result = cli(*args, "--out", str(trace), "--json")
    assert result.code == 0, result.err
    doc = json.loads(result.out.replace(str(trace), "TRACE"))
    doc.pop("seconds", None)
    return doc, skipped


def _groups(trace: Path, layer: str) -> int:
    with h5py.File(trace, "r") as f:
        names = [name.decode() if isinstance(name, bytes) else str(name) for name in f["names/layers"][()]]
        return int((f["groups"]["layer"] == names.index(layer)).sum())


@pytest.mark.parametrize("run", sorted(RUNS))
def test_skipped_periods_equal_groups_simulated_one_by_one(cli: Any, monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path, run: str) -> None:
    full, none = _run(cli, monkeypatch, RUNS[run], tmp_path / "full.h5", False)
    assert not any(none.values())
    monkeypatch.undo()
    skipped_doc, skipped = _run(cli, monkeypatch, RUNS[run], tmp_path / "skipped.h5", True)
    assert skipped_doc == full
    a, b = trace_datasets(tmp_path / "full.h5"), trace_datasets(tmp_path / "skipped.h5")
    assert sorted(a) == sorted(b)
    assert [name for name in a if a[name] != b[name]] == []
    fc = {layer: _groups(tmp_path / "full.h5", layer) for layer in ("fc6", "fc7", "fc8")}
    assert all(skipped.get(layer, 0) > groups // 2 for layer, groups in fc.items()), (skipped, fc)
