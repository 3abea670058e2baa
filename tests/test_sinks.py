"""The sink seam: one simulation handed to the HDF5 writer and a counting sink at once (`Tee`) leaves counters equal
to the totals summed from the trace, record by record, on several networks and configs, and the report priced from
those counters equals the one derived by reading the trace back; a null sink times the same run to the same cycles;
and the trace format's version is named when an older trace is refused."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
from conftest import small_zoo_graph

import hwsim.trace
from hwsim.flows import resolve_run
from hwsim.flows.run import RunSpec
from hwsim.flows.simulate import counted_metrics, peak_occupancy, simulate_run
from hwsim.metrics import TraceMetrics, derive
from hwsim.sim.executor import simulate
from hwsim.sim.machine import Machine
from hwsim.sim.run import RecordedRun, record_run
from hwsim.trace import TraceWriter
from hwsim.trace.schema import OPERANDS, OPS, TraceError
from hwsim.trace.sinks import CountingSink, NullSink, exact_bincount
from hwsim.vocab import Op, Operand

CASES = [("alexnet", "eyeriss-v1"), ("mobilenetv2", "scalesim-12x14-ws"), ("resnet18", "eyeriss-v1-ddr")]


def _run(network: str, config: str, path: Path) -> tuple[RunSpec, RecordedRun]:
    """The network simulated into a trace and a counting sink at once (`record_run` tees them)."""
    spec = resolve_run(small_zoo_graph(network), config)
    return spec, record_run(spec.schedule(), spec.hardware, path)


def _same_report(counted: TraceMetrics, summed: TraceMetrics) -> None:
    """Every per-layer figure of two reports equal."""
    assert [l.name for l in counted.layers] == [l.name for l in summed.layers]
    for a, b in zip(counted.layers, summed.layers, strict=True):
        assert np.array_equal(a.transfers, b.transfers) and a.compute == b.compute, a.name
        assert (a.passes, a.start_cycle, a.end_cycle, a.compute_cycles) == \
            (b.passes, b.start_cycle, b.end_cycle, b.compute_cycles), a.name
        assert a.energy_pj == b.energy_pj and a.dram_counters == b.dram_counters, a.name
        assert np.array_equal(a.level_operand_pj, b.level_operand_pj), a.name


@pytest.mark.parametrize(("network", "config"), CASES)
def test_the_counting_sink_holds_what_the_trace_holds(network: str, config: str, tmp_path: Path) -> None:
    spec, run = _run(network, config, tmp_path / "t.h5")
    counts, ends = run.counts, [r.end_cycle for r in run.result.layers]
    with hwsim.trace.open(tmp_path / "t.h5") as trace:
        # the report priced from the counters is the one derived by reading the trace back
        _same_report(counted_metrics(spec, run), derive(trace))
        assert run.peak_occupancy_bytes() == peak_occupancy(trace) != {}
        units = len(trace.unit_names)
        for level in trace.levels:
            r = trace.select(level)
            words = np.zeros((len(trace.layers), units, len(OPS), len(OPERANDS)), np.int64)
            records = np.zeros_like(words)
            np.add.at(words, (r["layer"], r["unit"], r["op"], r["operand"]), r["words"])
            np.add.at(records, (r["layer"], r["unit"], r["op"], r["operand"]), 1)
            for layer in range(len(trace.layers)):
                assert np.array_equal(counts.words(level, layer), words[layer]), (level, layer)
                assert np.array_equal(counts.records(level, layer), records[layer]), (level, layer)
        for layer in range(len(trace.layers)):
            spans = [trace.select(level, layer=layer) for level in trace.levels]
            spans = [s for s in spans if len(s)]
            expected = ((min(int(s["start_cycle"].min()) for s in spans), max(int(s["end_cycle"].max()) for s in spans))
                        if spans else (-1, -1))
            assert counts.span(layer) == expected
            pe = trace.select("pe", layer=layer)
            passes = pe[(pe["op"] == OPS.index("update")) & (pe["operand"] == OPERANDS.index("other"))]
            assert counts.passes(layer) == len(passes)
            assert counts.pass_cycles(layer) == int((passes["end_cycle"] - passes["start_cycle"]).sum())
        occ = trace.occupancy()
        peaks = [int(occ["bytes"][occ["buffer"] == b].max(initial=0)) for b in range(len(trace.buffers))]
        assert list(counts.peak_bytes()) == peaks
    spec = resolve_run(small_zoo_graph(network), config)
    quiet = simulate(spec.schedule(), Machine.build(spec.hardware), NullSink())
    assert [run.end_cycle for run in quiet.layers] == ends  # what is recorded never changes the timing


def test_a_trace_of_another_format_is_refused_naming_its_version(tmp_path: Path) -> None:
    path = tmp_path / "old.h5"
    with TraceWriter(path, ["glb"], ["conv1"], [], {}) as writer:
        writer.append("glb", np.zeros(0, dtype=hwsim.trace.RECORD_DTYPE))
    with h5py.File(path, "r+") as f:  # an older writer's version (the seal no longer matches: open unsealed)
        f.attrs["hwsim_trace_version"] = 4
    with pytest.raises(TraceError, match=r"format version 4, written by an older hwsim; this one reads version 5"):
        hwsim.trace.open(path, allow_incomplete=True)


def test_a_run_without_a_trace_reports_what_a_traced_run_reports(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    spec = resolve_run("phases_example", "eyeriss-v1")
    untraced = simulate_run(spec, keep_trace=False)
    assert untraced.trace is None and list(tmp_path.iterdir()) == []  # not even the default traces/ file
    traced = simulate_run(spec, tmp_path / "t.h5")
    assert untraced.totals == traced.totals and untraced.peak_occupancy_bytes == traced.peak_occupancy_bytes


def test_exact_bincount_sums_exactly_where_float64_would_round() -> None:
    keys = np.array([0, 0, 0, 1, 2, 2])
    # 2^52 + 2^52 + 3 = 2^53 + 3: not a float64 (one bincount in floats gives 2^53 + 4); negatives summed too
    values = np.array([1 << 52, 1 << 52, 3, 7, -3, 1], dtype=np.int64)
    assert exact_bincount(keys, values, 4).tolist() == [(1 << 53) + 3, 7, -2, 0]
    small = np.array([5, 6, 1 << 40, 9], dtype=np.int64)  # sums far below 2^53: the one-bincount path
    assert exact_bincount(np.array([3, 3, 1, 0]), small, 4).tolist() == [9, 1 << 40, 0, 11]
    assert exact_bincount(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), 2).tolist() == [0, 0]


def test_a_block_of_several_layers_is_counted_per_layer() -> None:
    sink = CountingSink(layers=3, units=2, buffers=0)
    block = np.zeros(4, dtype=hwsim.trace.RECORD_DTYPE)
    block["layer"] = [2, 0, 2, 2]
    block["unit"] = [1, 1, 1, 0]
    block["op"], block["operand"] = int(Op.READ), int(Operand.IFMAP)
    block["words"] = [10, 20, 30, 40]
    block["start_cycle"] = [5, 1, 3, 9]
    block["end_cycle"] = [6, 4, 12, 10]
    sink.append("glb", block)
    read_ifmap = (int(Op.READ), int(Operand.IFMAP))
    assert sink.words("glb", 2)[(slice(None), *read_ifmap)].tolist() == [40, 10 + 30]  # per unit
    assert sink.words("glb", 0)[(slice(None), *read_ifmap)].tolist() == [0, 20]
    assert sink.records("glb", 2)[(slice(None), *read_ifmap)].tolist() == [1, 2]
    assert (sink.span(2), sink.span(0), sink.span(1)) == ((3, 12), (1, 4), (-1, -1))
