"""A simulation hands its logs on as it goes and the step generator counts tiles in slices, so memory does not grow
with the input: the trace and the steps must be the same however small the slices are."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

import hwsim.mapping.nest.tiles as tiles
import hwsim.sim.executor as executor
from hwsim.hardware import load_config
from hwsim.mapping.depth_first import DepthFirstMapping, WeightPolicy, depth_first_schedule
from hwsim.mapping.nest_schedule import network_schedule
from hwsim.mapping.schedule import Schedule
from hwsim.sim.machine import Machine
from hwsim.sim.run import record_run
from hwsim.sim.space import Space
from hwsim.sim.structure import GroupLog
from hwsim.trace.schema import GROUP_DTYPE
from hwsim.vocab import STEP_DTYPE, StepKind
from hwsim.workload import zoo
from hwsim.workload.network import load_network

EYERISS = load_config("eyeriss-v1")
EDGE = load_config("depthfirst-edge")


def _datasets(path: Path) -> dict[str, np.ndarray]:
    with h5py.File(path, "r") as f:
        names: list[str] = []
        f.visit(lambda n: names.append(n) if isinstance(f[n], h5py.Dataset) else None)
        return {n: f[n][()] for n in names}


def _per_buffer(events: np.ndarray) -> dict[int, list[tuple[int, int, int]]]:
    """Each buffer's occupancy events in order (what a reader of one buffer sees)."""
    return {int(b): events[events["buffer"] == b][["cycle", "bytes", "layer"]].tolist()
            for b in np.unique(events["buffer"])}


def _run_twice(schedule: Schedule, hw_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The schedule simulated as usual and handing its logs on after every group: the same records, groups, DRAM
    commands and per-buffer occupancy, and the same counted totals."""
    hw = load_config(hw_name)
    usual = record_run(schedule, hw, tmp_path / "usual.h5")
    monkeypatch.setattr(executor, "HAND_ON_STEPS", 1)
    eager = record_run(schedule, hw, tmp_path / "eager.h5")
    a, b = _datasets(tmp_path / "usual.h5"), _datasets(tmp_path / "eager.h5")
    assert a.keys() == b.keys()
    for name in a:
        if name != "occupancy":
            assert np.array_equal(a[name], b[name]), name
    assert _per_buffer(a["occupancy"]) == _per_buffer(b["occupancy"])
    assert usual.result.cycles == eager.result.cycles
    assert usual.peak_occupancy_bytes() == eager.peak_occupancy_bytes()
    for layer in range(len(usual.layer_names)):
        assert usual.counts.groups(layer) == eager.counts.groups(layer)
        for level in ("dram", "glb", "line_buffer", "pe"):
            assert np.array_equal(usual.counts.words(level, layer), eager.counts.words(level, layer))


@pytest.mark.parametrize("hw_name", ["eyeriss-v1", "eyeriss-v1-ddr"])
def test_handing_on_as_a_layer_runs_keeps_the_trace(hw_name: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    graph = zoo.build("alexnet", (64, 64))
    _run_twice(network_schedule(graph, load_config(hw_name), 1), hw_name, tmp_path, monkeypatch)


def test_handing_on_a_depth_first_stack_keeps_the_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    graph = load_network("dmcnn_vd", (24, 32)).graph
    convs = [layer.name for layer in graph.layers if layer.name.startswith("conv")]
    mapping = DepthFirstMapping((convs[3],), (4, 2), WeightPolicy.PER_STACK)
    _run_twice(depth_first_schedule(graph, EDGE, mapping), "depthfirst-edge", tmp_path, monkeypatch)


def test_a_space_forgets_what_was_taken() -> None:
    machine = Machine.build(EYERISS)
    space: Space = machine.glb.spaces["data"]
    space.claim(64, at=0)
    first = space.take_occupancy()
    space.release(64, at=5)
    assert first.tolist() == [(0, 0), (0, 64)]
    assert space.take_occupancy().tolist() == [(5, 0)]
    assert len(space.occupancy_records()) == 0


def test_group_rows_taken_in_parts_are_the_rows() -> None:
    block = np.zeros(9, dtype=STEP_DTYPE)
    block["group"] = [0, 0, 1, 1, 1, 2, 2, 3, 3]
    block["kind"] = StepKind.ALLOC
    block["kind"][[1, 4, 8]] = StepKind.COMPUTE
    whole = GroupLog(0)
    whole.add(block, 0)
    parts = GroupLog(0)
    taken = []
    for lo, hi in ((0, 3), (3, 4), (4, 8), (8, 9)):  # group 1 spans three blocks, group 3 two
        parts.add(block[lo:hi], lo)
        taken.append(parts.take())
    rows = np.concatenate([*taken, parts.rows()])
    assert rows.dtype == GROUP_DTYPE
    assert rows.tolist() == whole.rows().tolist()
    assert rows["compute_step"].tolist() == [1, 4, -1, 8]


# (window elements, array cells) at once: one pass at a time on SRGAN; on the others slices of a few passes whose
# edges fall anywhere in a chunk (one pass at a time there took two minutes on ResNet-18's systolic schedule)
@pytest.mark.parametrize("network,size,hw_name,window,cells", [("srgan", (18, 32), "eyeriss-v1", 1, 7),
                                                               ("alexnet", (67, 67), "eyeriss-v1", 13, 997),
                                                               ("resnet18", (48, 48), "scalesim-12x14-ws", 13, 4096)])
def test_tiles_counted_in_slices_are_the_same_steps(network: str, size: tuple[int, int], hw_name: str, window: int,
                                                    cells: int, monkeypatch: pytest.MonkeyPatch) -> None:
    hw = load_config(hw_name)
    graph = zoo.build(network, size)
    usual = [work.steps() for work in network_schedule(graph, hw, 1).layers]
    monkeypatch.setattr(tiles, "WINDOW_ELEMENTS", window)
    monkeypatch.setattr(tiles, "ARRAY_CELLS", cells)
    sliced = [work.steps() for work in network_schedule(graph, hw, 1).layers]
    assert len(usual) == len(sliced)
    for a, b in zip(usual, sliced):
        assert np.array_equal(a, b)
