"""Plans as data: a depth-first point, a phase plan and a memory plan written with `--out` and replayed with
`hwsim simulate --mapping` give the same trace as the run that wrote them (every record's words per layer, level,
op and operand; the records' count and cycle span per level; the occupancy events), and a plan file that does not
fit is one line naming the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import assert_one_line_error

import hwsim.trace
from hwsim.mapping.mappers import MAPPERS
from hwsim.mapping.plans import DepthFirstPlan, PhasePlan, SlotPlan, load_plan, plan_document, plan_from_document


def _trace_figures(path: Path, levels: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Per level: words per [layer, op, operand], the records and their cycle span; the occupancy events."""
    out: dict[str, Any] = {}
    with hwsim.trace.open(path) as trace:
        for level in levels or trace.levels:
            r = trace.select(level)
            words = np.zeros((len(trace.layers), len(trace.ops), len(trace.operands)), np.int64)
            np.add.at(words, (r["layer"], r["op"], r["operand"]), r["words"])
            span = (int(r["start_cycle"].min()), int(r["end_cycle"].max())) if len(r) else None
            out[level] = (words.tolist(), len(r), span)
        out["occupancy"] = trace.occupancy().tolist()
    return out


def test_every_family_is_one_registered_mapper() -> None:
    assert set(MAPPERS.names()) == {"nest", "depth_first", "phases", "planned", "multicore"}
    assert MAPPERS.get("depth_first").dram_per_transaction and not MAPPERS.get("nest").dram_per_transaction


def test_a_depth_first_point_replays_to_the_same_trace(cli: Any, tmp_path: Path) -> None:
    plan, direct, replay = tmp_path / "df.yaml", tmp_path / "direct.h5", tmp_path / "replay.h5"
    done = cli("depthfirst", "fsrcnn", "--input", "96x64", "--simulate", "0", "--out", str(plan), "--trace",
               str(direct), "--json")
    assert done.code == 0, done.err
    written = load_plan(plan)
    assert isinstance(written, DepthFirstPlan) and written.input_shape == (1, 64, 96)
    assert written.cuts == tuple(done.json()["front"][0]["cuts"])  # type: ignore[index]
    assert cli("simulate", "fsrcnn", "--input", "96x64", "--hw", "depthfirst-edge", "--mapping", str(plan),
               "--out", str(replay), "--json").code == 0
    levels = ("dram", "line_buffer", "pe")  # what the depth-first check records
    assert _trace_figures(direct, levels) == _trace_figures(replay, levels)
    checked = cli("check", "fsrcnn", "--input", "96x64", "--hw", "depthfirst-edge", "--mapping", str(plan), "--json")
    assert checked.code == 0 and checked.json()["points"][0]["ok"]  # type: ignore[index]


def test_a_phase_plan_and_a_memory_plan_replay_to_the_same_trace(cli: Any, tmp_path: Path) -> None:
    phases, memory = tmp_path / "phases.yaml", tmp_path / "memory.yaml"
    assert cli("phases", "phases_example", "--hw", "edge-soc-l2", "--bits", "8", "--simulate", "--trace-dir",
               str(tmp_path / "p"), "--out", str(phases), "--json").code == 0
    plan = load_plan(phases)
    assert isinstance(plan, PhasePlan) and dict(plan.phases) == {"n1": 32, "n2": 16, "n3": 4, "n4": 1, "n5": 1}
    assert cli("simulate", "phases_example", "--hw", "edge-soc-l2", "--mapping", str(phases), "--out",
               str(tmp_path / "phases.h5")).code == 0
    assert _trace_figures(tmp_path / "p" / "phases_example-edge-soc-l2-phased.h5") == \
        _trace_figures(tmp_path / "phases.h5")
    assert cli("memplan", "phases_example", "--strategy", "ceva", "--simulate", "--trace-dir", str(tmp_path / "m"),
               "--out", str(memory), "--json").code == 0
    assert isinstance(load_plan(memory), SlotPlan)
    assert cli("simulate", "phases_example", "--hw", "edge-soc-l2", "--mapping", str(memory), "--out",
               str(tmp_path / "memory.h5")).code == 0
    assert _trace_figures(tmp_path / "m" / "phases_example-edge-soc-l2-ceva.h5") == \
        _trace_figures(tmp_path / "memory.h5")


def test_a_plan_round_trips_as_data() -> None:
    plan = DepthFirstPlan("srgan", "depthfirst-edge", (3, 64, 96), ("conv1",), (4, 1), "per_stack", 6)
    assert plan_from_document(plan_document(plan), "x") == plan


@pytest.mark.parametrize(("body", "fragment"), [
    ("plan: {cuts: [nope], tiling: [1, 1]}", "cut 'nope' is not a compute layer"),
    ("plan: {cuts: [], tiling: [1, 1]}", "plan.tiling: 2 factors for the 1 stacks"),
    ("plan: {cuts: [], tiling: [0]}", "plan.tiling[0]: 0 is not a whole number"),
    ("plan: {cuts: [], tiling: [1], colour: red}", "plan.colour: unknown key"),
])
def test_a_plan_that_does_not_fit_is_one_line_naming_the_file(cli: Any, tmp_path: Path, body: str,
                                                               fragment: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("format: hwsim-plan 1\nmapper: depth_first\nnetwork: fsrcnn\nhardware: depthfirst-edge\n"
                   f"input: [1, 64, 96]\n{body}\n")
    assert_one_line_error(cli("simulate", "fsrcnn", "--input", "96x64", "--hw", "depthfirst-edge", "--mapping",
                              str(bad)), str(bad), fragment)
    assert_one_line_error(cli("simulate", "fsrcnn", "--hw", "depthfirst-edge", "--mapping", str(bad)), str(bad))
