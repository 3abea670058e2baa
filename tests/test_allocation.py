"""Layers allocated to cores: the fixed rules by hand, the allocation file and its one-line errors, a two-stage
pipeline timed by hand, the pipeline bound by hand, and every shipped multi-core config checked (closed form
against the trace, the trace's physics, the bound) under every rule."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hand_steps import steps
from test_multicore import TWO_CORES, _pass

import hwsim.sim.run
import hwsim.trace
from hwsim.analytic.multicore import pipeline_bound
from hwsim.check.validate import validate_trace
from hwsim.flows.check import check_allocated, check_run
from hwsim.flows.cores import core_timelines
from hwsim.flows.inputs import as_hardware
from hwsim.flows.run import resolve_run
from hwsim.flows.simulate import simulate_run
from hwsim.hardware.loader import parse_config
from hwsim.mapping.multicore import (
    allocate,
    balanced_stages,
    check_allocation,
    forwards,
    multicore_schedule,
    row_band,
    split_parts,
)
from hwsim.mapping.nest.format import MappingError
from hwsim.mapping.plans import AllocationPlan, AllocationRequest, CorePart, PartMapping, load_plan, save_plan
from hwsim.mapping.schedule import Schedule, Work, WorkInfo
from hwsim.sim.run import simulate_to_trace
from hwsim.workload import zoo

ROOT = Path(__file__).resolve().parents[1]
MULTICORE_CONFIGS = ("quad-eyeriss-mesh", "hetero-edge", "chiplet-2x2")


def test_stages_balance_the_slowest_stage_by_hand() -> None:
    # costs 3, 3, 3, 1 on two equal cores: {3 | 3 3 1} 7, {3 3 | 3 1} 6, {3 3 3 | 1} 9: the second is best.
    assert balanced_stages([3, 3, 3, 1], [1, 1]) == [0, 0, 1, 1]
    # a core twice as wide takes twice the cost: {4 4 | 4} gives 8/2 = 4 and 4/1 = 4.
    assert balanced_stages([4, 4, 4], [2, 1]) == [0, 0, 1]
    # more cores than items: a core may get no stage.
    assert sorted(set(balanced_stages([5, 5], [1, 1, 1]))) in ([0, 1], [0, 2], [1, 2])


def test_split_gives_channels_by_lanes_with_largest_remainders() -> None:
    layer = zoo.build("phases_example").layer("n2")  # a convolution
    ten = layer.__class__(**{**layer.__dict__, "out_shape": layer.out_shape._replace(c=10)})
    # 10 channels over four equal cores: 2.5 each, remainders tie, the first two take the extra one.
    assert split_parts(ten, ["a", "b", "c", "d"], [1, 1, 1, 1]) == (CorePart("a", 3), CorePart("b", 3),
                                                                      CorePart("c", 2), CorePart("d", 2))
    # lanes 3:1 of 10 channels: 7.5 and 2.5, tie broken to the first: 8 and 2.
    assert split_parts(ten, ["a", "b"], [3, 1]) == (CorePart("a", 8), CorePart("b", 2))


def _quad() -> Any:
    return as_hardware(ROOT / "configs" / "quad-eyeriss-mesh.yaml")


def test_an_allocation_file_round_trips_and_replays(tmp_path: Path) -> None:
    graph, hw = zoo.build("phases_example"), _quad()
    plan = allocate(graph, hw, 3, "split")
    path = tmp_path / "alloc.yaml"
    save_plan(plan, path)
    assert load_plan(path) == plan
    spec = resolve_run(graph, hw, None, str(path))
    assert spec.batch == 3 and spec.plan == plan
    tiled = _tiled_plan(2)  # tiles (a core's bands of one layer) and a forwarded tensor round-trip too
    save_plan(tiled, path)
    assert load_plan(path) == tiled


@pytest.mark.parametrize("layers, problem", [
    ({"n2": "core0", "n3": "core9", "n4": "core1"}, "core 'core9'; quad-eyeriss-mesh has core0, core1"),
    ({"n2": "core0", "n3": "core1"}, "no core for layer 'n4'"),
    ({"n2": "core0", "n3": "core1", "n4": "core1", "n7": "core2"}, "plan.layers.n7: not a layer with steps"),
    ({"n2": [{"core": "core0", "channels": 1}, {"core": "core1", "channels": 1}], "n3": "core1", "n4": "core1"},
     "the parts' channels add up to 2 over 2 parts"),
    ({"n2": [{"core": "core0", "rows": 8}, {"core": "core0", "rows": 4}], "n3": "core1", "n4": "core1"},
     "the parts' rows add up to 12 over 2 parts; make them add up to the layer's 16"),
])
def test_a_wrong_allocation_is_one_line_naming_the_field(layers: dict[str, Any], problem: str) -> None:
    graph, hw = zoo.build("phases_example"), _quad()
    parts = {name: (CorePart(v, 0),) if isinstance(v, str) else
             tuple(CorePart(p["core"], p.get("channels", 0), p.get("rows", 0)) for p in v)
             for name, v in layers.items()}
    plan = AllocationPlan(graph.name, hw.name, (1, 32, 32), 1, "given", tuple(parts.items()))
    with pytest.raises(MappingError) as caught:
        check_allocation(plan, graph, hw)
    assert problem in str(caught.value) and "\n" not in str(caught.value)


def test_a_broken_allocation_file_exits_2_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "alloc.yaml"
    path.write_text("format: hwsim-plan 1\nmapper: multicore\nnetwork: phases_example\nhardware: quad-eyeriss-mesh\n"
                    "input: [1, 32, 32]\nplan: {images: 2, layers: {n2: [{core: core0}]}}\n")
    done = subprocess.run([sys.executable, "-m", "hwsim.cli.main", "simulate", "phases_example", "--hw",
                           str(ROOT / "configs" / "quad-eyeriss-mesh.yaml"), "--mapping", str(path), "--no-trace"],
                          capture_output=True, text=True, cwd=tmp_path, check=False)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "plan.layers.n2[0]: give the part's channels" in lines[0], lines
    assert "Traceback" not in done.stderr


def _image_work(core: int, image: int, rows: np.ndarray, after: tuple[int, ...]) -> Work:
    """Image `image` of a hand-written work on core `core` (named after phases_example's layer `core` + 1)."""
    layer = zoo.build("phases_example").layers[1 + core]
    named = layer.__class__(**{**layer.__dict__, "name": f"{layer.name}#{image}"})
    return Work(named, WorkInfo(), lambda: iter([rows]), core=core, after=after, word_bits=16)


def test_two_stages_pipeline_by_hand(tmp_path: Path) -> None:
    # Stage 0 on `left` (core 0): a 160-MAC pass on 16 PEs, 10 cycles per image; stage 1 on `right`: 240 MACs,
    # 15 cycles, after stage 0 of the same image. Two images, in schedule order image after image:
    #   left:  #0 [0, 10), #1 [10, 20)
    #   right: #0 waits for left #0, [10, 25); #1 waits for left #1 (ended 20) and right #0 (ended 25): [25, 40).
    # Right waits 10 cycles before its first work and never again (busy 30); left is busy 20 and idle 20.
    hw = parse_config(TWO_CORES, "two-cores.yaml")
    left, right = steps(_pass(0, 160)), steps(_pass(1, 240))
    works = (_image_work(0, 0, left, ()), _image_work(1, 0, right, (0,)), _image_work(0, 1, left, ()),
             _image_work(1, 1, right, (2,)))
    result = simulate_to_trace(Schedule("hand", hw.name, "hand", 2, works), hw, tmp_path / "p.h5")
    assert [(r.start_cycle, r.end_cycle) for r in result.layers] == [(0, 10), (10, 25), (10, 20), (25, 40)]
    left, right = core_timelines(result, hw)
    assert (left.busy_cycles, left.waiting_cycles, left.idle_cycles) == (20, 0, 20)
    assert (right.busy_cycles, right.waiting_cycles, right.idle_cycles) == (30, 10, 0)
    with hwsim.trace.open(tmp_path / "p.h5") as trace:
        assert validate_trace(trace).ok


def test_the_pipeline_bound_by_hand() -> None:
    # phases_example: n2 -> n3 -> n4, allocated n2 on core0, n3 on core1, n4 on core0, two images; each work's
    # bound given: n2 4, n3 10, n4 3 cycles, 100 DRAM bytes each. Works in order: n2#0 n3#0 n4#0 n2#1 n3#1 n4#1.
    #   n2#0: 0 -> 4 (core0); n3#0: after n2#0: 4 -> 14 (core1); n4#0: after n3#0 and core0's n2#0: 14 -> 17;
    #   n2#1: after core0's n4#0: 17 -> 21; n3#1: after n2#1 and core1's n3#0 (14): 21 -> 31; n4#1: 31 -> 34.
    # Path 34. DRAM: 6 x 100 bytes at the quad config's peak (LPDDR4-3200 x32: 12.8 GB/s at 200 MHz, 64 B per
    # cycle): 600 / 64 -> 10 cycles. Core loads: core0 2 x (4 + 3) = 14, core1 20.
    graph, hw = zoo.build("phases_example"), _quad()
    plan = AllocationPlan(graph.name, hw.name, (1, 32, 32), 2, "given",
                          (("n2", (CorePart("core0", 0),)), ("n3", (CorePart("core1", 0),)),
                           ("n4", (CorePart("core0", 0),))))
    parts = tuple(PartMapping(name, core, 0, 0, None) for name, core in (("n2", 0), ("n3", 1), ("n4", 0)))  # type: ignore[arg-type]
    bounds = [4, 10, 3] * 2
    works = [SimpleNamespace(latency=SimpleNamespace(bound_cycles=b), dram_bytes=100) for b in bounds]
    assert hw.dram.bandwidth_bytes_per_cycle == 64
    bound = pipeline_bound(graph, hw, plan, parts, works, [0, 1, 0] * 2)  # type: ignore[arg-type]
    assert (bound.path_cycles, bound.dram_cycles, bound.core_cycles) == (34, 10, (14, 20, 0, 0))
    assert bound.cycles == 34 and bound.bottleneck == "path"


CASES = [(net, size, config, rule) for net, size in (("phases_example", None), ("squeezenet11", (32, 32)))
         for config in MULTICORE_CONFIGS for rule in ("round_robin", "stages", "split", "split_rows", "fused")]


@pytest.mark.parametrize("net, size, config, rule", CASES,
                         ids=[f"{n}-{c}-{r}" for n, _, c, r in CASES])
def test_every_multicore_config_checks_under_every_rule(net: str, size: tuple[int, int] | None, config: str,
                                                        rule: str) -> None:
    spec = resolve_run(zoo.build(net, size), as_hardware(ROOT / "configs" / f"{config}.yaml"), 3,
                       AllocationRequest(rule))
    report = check_run(spec)
    assert report.ok, (report.mismatches[:3], report.pipeline,
                       [r for r in report.validation.rules if r.violations] if report.validation else None)
    assert report.pipeline is not None and report.pipeline.simulated_cycles >= report.pipeline.bound_cycles > 0
    assert isinstance(spec.plan, AllocationPlan)
    assert len(report.layers) == 3 * sum(len(parts) for _, parts in spec.plan.layers)  # every work compared


def test_a_consumer_started_before_its_producer_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Deliberate bug: the simulation ignores the schedule's edges (n3 and n4 start at once with n2, on their own
    # cores), while the trace keeps the graph the schedule declares. The validator, from the trace alone, finds
    # the consumers' records before their producers ended.
    graph, hw = zoo.build("phases_example"), _quad()
    plan = AllocationPlan(graph.name, hw.name, (1, 32, 32), 1, "given",
                          (("n2", (CorePart("core0", 0),)), ("n3", (CorePart("core1", 0),)),
                           ("n4", (CorePart("core2", 0),))))
    honest = multicore_schedule(plan, graph, hw)
    assert [w.after for w in honest.layers] == [(), (0,), (1,)] and [w.core for w in honest.layers] == [0, 1, 2]
    early = Schedule(honest.network, honest.hardware, honest.mapper, 1,
                     tuple(w.__class__(**{**w.__dict__, "after": ()}) for w in honest.layers))
    declared = hwsim.sim.run.trace_attrs
    monkeypatch.setattr(hwsim.sim.run, "trace_attrs", lambda schedule, *rest: declared(honest, *rest))
    path = tmp_path / "early.h5"
    simulate_to_trace(early, hw, path)
    with hwsim.trace.open(path) as trace:
        assert json.loads(trace.attrs["layer_after_json"]) == [[], [0], [1]]
        v = validate_trace(trace)
    dependencies = next(r for r in v.rules if r.rule == "dependencies")
    assert not v.ok and dependencies.violations > 0, v
    monkeypatch.undo()
    with hwsim.trace.open(simulate_to_trace_path(honest, hw, tmp_path / "honest.h5")) as trace:
        assert validate_trace(trace).ok  # the same works with their edges kept


def simulate_to_trace_path(schedule: Schedule, hw: Any, path: Path) -> Path:
    simulate_to_trace(schedule, hw, path)
    return path


def test_two_stages_over_one_link_by_hand(tmp_path: Path) -> None:
    # `left` computes (160 MACs on 16 PEs: 10 cycles) and pushes its 40 output words from its GLB into right's GLB;
    # `right` then computes 80 MACs (5 cycles). Two images. A push: the GLB read 40 / 4 = 10 cycles, the link
    # 40 x 16 / 64 = 10 cycles and 6 of latency, right's GLB written from the first arrival for 10 cycles.
    #   left  #0: pass [0, 10), push [10, 26)            left #1: pass [26, 36), push [36, 52)
    #   right #0: after left #0: [26, 31)                right #1: after left #1 and right #0: [52, 57)
    # The link carries 2 x 40 = 80 words; right waits 26 + (52 - 31) = 47 cycles for left, is busy 10; left is
    # busy 52 and idle the last 5.
    hw = parse_config(TWO_CORES, "two-cores.yaml")
    push = {"kind": 0, "operand": 3, "src": 2, "dst": 2, "words": 40, "coded_words": 40, "src_core": 0,
            "dst_core": 1}

    from hwsim.vocab import Level, Operand, StepKind
    assert (push["kind"], push["operand"], push["src"]) == (StepKind.TRANSFER, Operand.OFMAP, Level.GLB)
    left, right = steps(_pass(0, 160), push), steps(_pass(1, 80))
    works = (_image_work(0, 0, left, ()), _image_work(1, 0, right, (0,)), _image_work(0, 1, left, ()),
             _image_work(1, 1, right, (2,)))
    result = simulate_to_trace(Schedule("hand", hw.name, "hand", 2, works), hw, tmp_path / "l.h5")
    assert [(r.start_cycle, r.end_cycle) for r in result.layers] == [(0, 26), (26, 31), (26, 52), (52, 57)]
    lc, rc = core_timelines(result, hw)
    assert (lc.busy_cycles, lc.waiting_cycles, lc.idle_cycles) == (52, 0, 5)
    assert (rc.busy_cycles, rc.waiting_cycles, rc.idle_cycles) == (10, 47, 0)
    with hwsim.trace.open(tmp_path / "l.h5") as trace:
        link = trace.select("link")
        assert link["words"].sum() == 80 and list(zip(link["start_cycle"].tolist(), link["end_cycle"].tolist())) == [
            (10, 26), (36, 52)]
        assert validate_trace(trace).ok


def test_fused_stages_forward_over_the_mesh_and_agree_with_the_closed_form() -> None:
    # phases_example fused on the quad mesh: n2 on core2, n3 and n4 on core3 (stages by MACs); n2's 16 output
    # rows are fewer than two bands as tall as Eyeriss's 14 columns, so no layer is cut into tiles. n2's output,
    # read only by n3 on another core, is pushed into core3's GLB: 4 x 16 x 16 = 1,024 words per image over the
    # one link h23, three images: 3,072 link words, and no n2 ofmap nor n3 ifmap word in DRAM.
    graph, hw = zoo.build("phases_example"), _quad()
    spec = resolve_run(graph, hw, 3, AllocationRequest("fused"))
    assert isinstance(spec.plan, AllocationPlan) and spec.plan.forwarded == ("n2",)
    assert dict(spec.plan.layers)["n2"] == (CorePart("core2", 0),) and dict(spec.plan.layers)["n3"][0].core == "core3"
    assert graph.layer("n2").out_shape.elements == 4 * 16 * 16
    report = check_run(spec)
    assert report.ok and report.pipeline is not None
    assert report.pipeline.link_words_closed == report.pipeline.link_words_simulated == 3 * 1024
    counts = {(r.layer, r.level, r.operand, r.access): r.simulated for l in report.layers for r in l.counts}
    assert counts.get(("n2#1", "dram", "ofmap", "update"), 0) == 0 and counts.get(("n3#1", "dram", "ifmap", "read"),
                                                                                   0) == 0
    assert counts[("n2#1", "glb", "ofmap", "fill")] == 1024


def _tiled_plan(images: int, forwarded: tuple[str, ...] = ("n2",)) -> AllocationPlan:
    """phases_example with n2 in 4 tiles of 4 rows on core2 and n3 in 4 tiles of 1 row on core3."""
    return AllocationPlan("phases_example", "quad-eyeriss-mesh", (1, 32, 32), images, "given",
                          (("n2", (CorePart("core2", 0, 4),) * 4), ("n3", (CorePart("core3", 0, 1),) * 4),
                           ("n4", (CorePart("core3", 0),))), forwarded)


def test_tiles_forwarded_into_a_line_buffer_by_hand(tmp_path: Path) -> None:
    # n3 (kernel 5, stride 3, padding -1: output row r reads input rows 3r + 1 .. 3r + 5) in 4 one-row tiles
    # reads n2's 4 tiles of 4 rows (rows 0-3, 4-7, 8-11, 12-15): its row 0 reads rows 1-5 (n2's tiles 0, 1),
    # row 1 rows 4-8 (tiles 1, 2), row 2 rows 7-11 (tiles 1, 2), row 3 rows 10-14 (tiles 2, 3).
    # Line buffer: per n3 tile, from its first input row to the end of the n2 tile completing its last:
    # 8 - 1 = 7, 12 - 4 = 8, 12 - 7 = 5, 16 - 10 = 6 rows; the most, 8, plus one n2 tile (4) = 12 of the 16 rows,
    # 4 channels x 12 rows x 16 = 768 words in core3's GLB. n2's last tile writes rows 12-15 into the slots of
    # rows 0-3, which n3's first tile (rows 1-5) reads: it waits for it.
    graph, hw = zoo.build("phases_example"), _quad()
    plan = _tiled_plan(2)
    check_allocation(plan, graph, hw)
    (sent,) = forwards(plan, graph, hw)
    assert (sent.rows, sent.ring_rows, sent.inbox_words) == (16, 12, 768)
    schedule = multicore_schedule(plan, graph, hw)
    names = [w.name for w in schedule.layers]
    # listed depth first: each n3 tile right after the last n2 tile it reads
    assert names[:9] == ["n2@core2.t0#0", "n2@core2.t1#0", "n3@core3.t0#0", "n2@core2.t2#0", "n3@core3.t1#0",
                         "n3@core3.t2#0", "n2@core2.t3#0", "n3@core3.t3#0", "n4#0"]
    waits = {w.name: {names[j] for j in w.after or ()} for w in schedule.layers}
    assert waits["n3@core3.t0#0"] == {"n2@core2.t0#0", "n2@core2.t1#0"}
    assert waits["n3@core3.t1#0"] == waits["n3@core3.t2#0"] == {"n2@core2.t1#0", "n2@core2.t2#0"}
    assert waits["n3@core3.t3#0"] == {"n2@core2.t2#0", "n2@core2.t3#0"}
    assert waits["n2@core2.t3#0"] == {"n3@core3.t0#0"}  # its line-buffer slots
    assert waits["n4#0"] == {f"n3@core3.t{t}#0" for t in range(4)}
    assert waits["n2@core2.t0#1"] == {f"n3@core3.t{t}#0" for t in range(4)}  # the next image's buffer
    result = simulate_run(resolve_run(graph, hw, 2, plan), tmp_path / "t.h5")
    report = check_allocated(result)
    assert report.ok and report.pipeline is not None
    assert report.pipeline.link_words_closed == report.pipeline.link_words_simulated == 2 * 1024
    counts = {(r.layer, r.level, r.operand, r.access): r.simulated for l in report.layers for r in l.counts}
    assert all(counts[(f"n2@core2.t{t}#1", "glb", "ofmap", "fill")] == 4 * 4 * 16 for t in range(4))
    run = {r.name: (r.start_cycle, r.end_cycle) for r in result.result.layers}
    # n3's first tile runs as soon as n2's second tile is in, while n2 computes its third
    assert run["n3@core3.t0#0"][0] >= run["n2@core2.t1#0"][1] and run["n3@core3.t0#0"][0] < run["n2@core2.t2#0"][1]
    assert run["n2@core2.t3#0"][0] >= run["n3@core3.t0#0"][1]
    with hwsim.trace.open(tmp_path / "t.h5") as trace:  # every word the line buffer received lies inside it
        glb = trace.select("glb")
        core3 = [k for k, n in enumerate(trace.unit_names) if n == "core3.glb"]
        pushed = glb[(glb["unit"] == core3[0]) & np.isin(glb["layer"], [names.index(f"n2@core2.t{t}#0")
                                                                         for t in range(4)])]
        assert len(pushed) and pushed["words"].sum() == 1024
        assert (pushed["address"] >= sent.inbox_word).all()
        assert (pushed["address"] + pushed["words"] <= sent.inbox_word + 768).all()


def test_fused_tiles_from_the_command_line_align_the_producer_depth_first(cli: Any, tmp_path: Path) -> None:
    # --allocate fused --tiles 4 on phases_example: n2 (core2) and n3 (core3) meet at the boundary. n3's 4 rows
    # become 4 one-row tiles reading input rows 1-5, 4-8, 7-11, 10-14; n2's tiles end where they do: rows 0-5,
    # 6-8, 9-11, 12-14 and the last row, 15 (6, 3, 3, 3, 1 rows). Line buffer: 6 - 1, 9 - 4, 12 - 7, 15 - 10 = 5
    # rows, plus n2's tallest tile (6) = 11 rows.
    out = tmp_path / "fused.yaml"
    done = cli("map", "phases_example", "--hw", str(ROOT / "configs" / "quad-eyeriss-mesh.yaml"), "--allocate",
               "fused", "--tiles", "4", "--batch", "2", "--out", str(out))
    assert done.code == 0, done.err
    plan = load_plan(out)
    assert isinstance(plan, AllocationPlan) and plan.forwarded == ("n2",)
    assert [p.rows for p in plan.parts("n2")] == [6, 3, 3, 3, 1] and [p.rows for p in plan.parts("n3")] == [1] * 4
    graph, hw = zoo.build("phases_example"), _quad()
    (sent,) = forwards(plan, graph, hw)
    assert sent.ring_rows == 11
    report = check_run(resolve_run(graph, hw, None, str(out)))
    assert report.ok and report.pipeline is not None and report.pipeline.link_words_simulated == 2 * 1024
    wrong = cli("simulate", "phases_example", "--hw", str(ROOT / "configs" / "quad-eyeriss-mesh.yaml"),
                "--allocate", "stages", "--tiles", "4")
    assert wrong.code == 2 and "--tiles 4 sets the fused rule's tiles; use --allocate fused" in wrong.err


def test_a_consumer_tile_started_one_tile_early_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Deliberate bug: n3's second tile (input rows 4-8) runs without waiting for n2's third tile (rows 8-11), as
    # if it read rows 4-7 only; the trace declares the schedule's true edges. The validator, from the trace
    # alone, finds its records before the tile it waits for ended.
    graph, hw = zoo.build("phases_example"), _quad()
    honest = multicore_schedule(_tiled_plan(1), graph, hw)
    names = [w.name for w in honest.layers]
    early_after = tuple(j for j in honest.layers[names.index("n3@core3.t1")].after or ()
                        if names[j] != "n2@core2.t2")
    early = Schedule(honest.network, honest.hardware, honest.mapper, 1,
                     tuple(w.__class__(**{**w.__dict__, "after": early_after}) if w.name == "n3@core3.t1" else w
                           for w in honest.layers))
    declared = hwsim.sim.run.trace_attrs
    monkeypatch.setattr(hwsim.sim.run, "trace_attrs", lambda schedule, *rest: declared(honest, *rest))
    result = simulate_to_trace(early, hw, tmp_path / "early.h5")
    run = {r.name: r.start_cycle for r in result.layers}
    assert run["n3@core3.t1"] < run["n2@core2.t3"]  # it did run early, before n2's third tile ended
    with hwsim.trace.open(tmp_path / "early.h5") as trace:
        v = validate_trace(trace)
    broken = {r.rule for r in v.rules if r.violations}  # its DRAM loads, too, came before they could be asked
    assert not v.ok and "dependencies" in broken and broken <= {"dependencies", "dram_latency"}, v
    monkeypatch.undo()
    simulate_to_trace(honest, hw, tmp_path / "honest.h5")
    with hwsim.trace.open(tmp_path / "honest.h5") as trace:
        assert validate_trace(trace).ok


def test_a_tile_waiting_without_its_last_halo_row_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # Deliberate bug in the mapper: a tile of n3 waits for the n2 tiles holding its input rows but its last (the
    # schedule's edges, the trace's declared graph and the order all agree with the bug, so the run keeps them
    # and the validator has nothing to say). n3's second tile (input rows 4-8) then waits for n2's tile 1 only,
    # not tile 2 (rows 8-11). The closed form derives the edges itself from the tiles' rows and finds the
    # schedule short of that one, in each of the two images.
    import hwsim.mapping.multicore as multicore

    def one_row_short(graph: Any, reader: Any, producer: Any) -> bool:
        if reader.layer.out_shape.h == reader.whole.out_shape.h:
            return True
        low, high = reader.first_input_row, reader.first_input_row + reader.layer.in_shape.h - 1
        return bool(producer.first_row < high and low < producer.first_row + producer.layer.out_shape.h)

    monkeypatch.setattr(multicore, "reads_rows_of", one_row_short)
    report = check_run(resolve_run(zoo.build("phases_example"), _quad(), 2, _tiled_plan(2)))
    assert not report.ok and report.validation is not None and report.validation.ok and report.pipeline is not None
    assert report.pipeline.missing_edges == ("n3@core3.t1#0 <- n2@core2.t2#0", "n3@core3.t1#1 <- n2@core2.t2#1")
    # per image, 2 edges into each of n3's 4 tiles and 4 into n4
    assert report.pipeline.edges_checked == 2 * (4 * 2 + 4)
    monkeypatch.undo()
    honest = check_run(resolve_run(zoo.build("phases_example"), _quad(), 2, _tiled_plan(2)))
    assert honest.ok and honest.pipeline is not None and not honest.pipeline.missing_edges


def test_a_link_at_twice_its_width_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # Deliberate bug: every link direction carries twice the bits per cycle its config gives.
    from hwsim.sim.link.point_to_point import LinkDirection
    from hwsim.vocab import ceil_div

    def doubled(self: LinkDirection, words: int, word_bytes: int | None = None) -> int:
        return ceil_div(words * 8 * (self.word_bytes if word_bytes is None else word_bytes), 2 * self.cfg.width_bits)

    monkeypatch.setattr(LinkDirection, "transfer_cycles", doubled)
    report = check_run(resolve_run(zoo.build("phases_example"), _quad(), 2, AllocationRequest("fused")))
    assert report.validation is not None and not report.ok
    assert [r.rule for r in report.validation.rules if r.violations] == ["bandwidth"]


def test_an_inbox_the_readers_glb_cannot_hold_is_one_line_before_simulating(tmp_path: Path) -> None:
    # core3's GLB shrunk to 2 KiB with 1 KiB for filters: n2's output (1,024 16-bit words, 2 KiB) cannot be
    # forwarded into it. The fused rule leaves it in DRAM; a plan that forwards it anyway is refused in one line.
    text = (ROOT / "configs" / "quad-eyeriss-mesh.yaml").read_text().replace(
        "cores: 4 ", "cores: [{name: core0}, {name: core1}, {name: core2}, "
                     "{name: core3, glb: {size: 2 KiB, filter: 1 KiB, banks: 1}}] ")
    config = tmp_path / "small.yaml"
    config.write_text(text)
    graph, hw = zoo.build("phases_example"), as_hardware(config)
    assert allocate(graph, hw, 2, "fused").forwarded == ()
    plan = tmp_path / "plan.yaml"
    plan.write_text("format: hwsim-plan 1\nmapper: multicore\nnetwork: phases_example\nhardware: small\n"
                    "input: [1, 32, 32]\nplan: {images: 2, forwarded: [n2], layers: {n2: core2, n3: core3, "
                    "n4: core3}}\n")
    done = subprocess.run([sys.executable, "-m", "hwsim.cli.main", "simulate", "phases_example", "--hw", str(config),
                           "--mapping", str(plan), "--out", str(tmp_path / "t.h5")],
                          capture_output=True, text=True, cwd=tmp_path, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "core3's GLB (2 KiB" in lines[0] and "plan.forwarded" in lines[0], lines
    assert not list(tmp_path.glob("t.h5*"))  # nothing simulated, nothing written


def test_a_tensor_that_cannot_be_forwarded_is_named() -> None:
    graph, hw = zoo.build("phases_example"), _quad()
    plan = AllocationPlan(graph.name, hw.name, (1, 32, 32), 1, "given",
                          (("n2", (CorePart("core0", 0),)), ("n3", (CorePart("core0", 0),)),
                           ("n4", (CorePart("core1", 0),))), ("n2",))
    with pytest.raises(MappingError, match=r"plan.forwarded\[0\]: n2's output cannot be forwarded: its readers do "
                                           "not all run on one other core"):
        check_allocation(plan, graph, hw)


def test_the_perfetto_export_has_a_process_per_core(tmp_path: Path) -> None:
    from hwsim.metrics.perfetto import write_perfetto

    spec = resolve_run(zoo.build("phases_example"), _quad(), 2, AllocationRequest("fused"))
    sim = simulate_run(spec, tmp_path / "f.h5")
    out = tmp_path / "f.json"
    with hwsim.trace.open(tmp_path / "f.h5") as trace, out.open("w") as f:
        write_perfetto(trace, f)
    events = json.loads(out.read_text())["traceEvents"]
    processes = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert processes == {1: "quad-eyeriss-mesh running phases_example", 2: "core core0", 3: "core core1",
                         4: "core core2", 5: "core core3"}
    # every work's span sits in its core's process; link records in the accelerator's, on their direction's thread
    core_pid = {name: pid for pid, name in processes.items()}
    for e in events:
        if e.get("cat") == "layer":
            run = next(r for r in sim.result.layers if r.name == e["name"])
            assert e["pid"] == core_pid[f"core core{run.core}"]
    links = [e for e in events if e.get("cat") == "link"]
    assert links and all(e["pid"] == 1 and e["args"]["unit"] == "h23.core2>core3" for e in links)


def test_a_layer_split_by_rows_over_two_cores_by_hand() -> None:
    # phases_example's n2: a 17 x 17 window, stride 1, no padding, 1 x 32 x 32 -> 4 x 16 x 16. Rows 0-7 on core0
    # read input rows 0 .. 7 + 16 = 23 (24 rows), rows 8-15 on core1 input rows 8 .. 31 (24 rows): the halo is rows
    # 8 .. 23, 16 rows x 32 = 512 words both read (2 x 768 - 1,024). Core1's band starts 8 rows (256 words) into
    # the input and its outputs 8 rows (8 x 16 = 128 words) into each output channel, so each of its DRAM transfers
    # starts that much further than core0's same transfer.
    graph, hw = zoo.build("phases_example"), _quad()
    n2 = graph.layer("n2")
    first, low0 = row_band(n2, "a", 0, 8)
    second, low1 = row_band(n2, "b", 8, 8)
    assert (first.in_shape.h, low0, second.in_shape.h, low1) == (24, 0, 24, 8)
    assert first.padding == second.padding == n2.padding and first.out_shape.h == second.out_shape.h == 8
    assert first.in_shape.elements + second.in_shape.elements - n2.in_shape.elements == 512
    plan = AllocationPlan(graph.name, hw.name, (1, 32, 32), 1, "given",
                          (("n2", (CorePart("core0", 0, 8), CorePart("core1", 0, 8))), ("n3", (CorePart("core2", 0),)),
                           ("n4", (CorePart("core2", 0),))))
    report = check_run(resolve_run(graph, hw, None, plan))
    assert report.ok, report.mismatches[:3]
    dram = {(r.layer, r.operand, r.access): r.simulated for l in report.layers for r in l.counts if r.level == "dram"}
    for operand, access, shift in (("ifmap", "read", 256), ("ofmap", "update", 128)):
        transfers = dram[("n2@core0", operand, f"{access} transfers")]
        assert transfers == dram[("n2@core1", operand, f"{access} transfers")] > 0
        assert dram[("n2@core1", operand, f"{access} start offsets")] == \
            dram[("n2@core0", operand, f"{access} start offsets")] + transfers * shift
    # every word of the output written once, by one of the two cores
    assert dram[("n2@core0", "ofmap", "update")] + dram[("n2@core1", "ofmap", "update")] == 4 * 16 * 16


def test_a_band_reading_its_rows_from_the_top_of_the_input_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # Deliberate bug: the simulated bands forget where their input rows start (every band reads from row 0).
    import hwsim.mapping.multicore as multicore

    honest = multicore.image_layout

    def forgetful(addr: Any, part: Any, images: int) -> Any:
        return honest(addr, part.__class__(**{**part.__dict__, "first_input_row": 0}), images)

    monkeypatch.setattr(multicore, "image_layout", forgetful)
    report = check_run(resolve_run(zoo.build("phases_example"), _quad(), 1, AllocationRequest("split_rows")))
    assert not report.ok and any(r.access == "read start offsets" and r.operand == "ifmap" for r in report.mismatches)


def test_one_part_must_be_the_whole_layer() -> None:
    graph, hw = zoo.build("phases_example"), _quad()
    plan = AllocationPlan(graph.name, hw.name, (1, 32, 32), 1, "given",
                          (("n2", (CorePart("core0", 0, 5),)), ("n3", (CorePart("core1", 0),)),
                           ("n4", (CorePart("core1", 0),))))
    whole = r"plan.layers.n2: one part computes the whole layer \(4 channels, 16 rows\)"
    with pytest.raises(MappingError, match=whole):
        check_allocation(plan, graph, hw)


def test_map_writes_each_cores_mapping_beside_the_allocation_and_replay_reads_them(cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "alloc.yaml"
    done = cli("map", "phases_example", "--hw", str(ROOT / "configs" / "quad-eyeriss-mesh.yaml"), "--allocate",
               "split_rows", "--batch", "2", "--out", str(out))
    assert done.code == 0, done.err
    plan = load_plan(out)
    assert isinstance(plan, AllocationPlan)
    assert [core for core, _ in plan.mappings] == ["core0", "core1", "core2", "core3"]
    assert all(Path(path).exists() and Path(path).parent == tmp_path for _, path in plan.mappings)
    graph, hw = zoo.build("phases_example"), _quad()
    replayed = check_run(resolve_run(graph, hw, None, str(out)))
    by_rules = check_run(resolve_run(graph, hw, 2, AllocationRequest("split_rows")))
    assert replayed.ok and replayed.pipeline is not None and by_rules.pipeline is not None
    assert replayed.pipeline.simulated_cycles == by_rules.pipeline.simulated_cycles  # the files hold the rules' nests
    # a nest edited into one that does not fit its part is refused, naming the file: the replay reads them
    core0 = tmp_path / "alloc.core0.yaml"
    core0.write_text(core0.read_text().replace("M: 4, C: 1", "M: 5, C: 1", 1))
    with pytest.raises(MappingError, match=r"plan.mappings: .*alloc.core0.yaml: .*n2@core0"):
        resolve_run(graph, hw, None, str(out))
