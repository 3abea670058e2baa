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
from hwsim.flows.simulate import peak_occupancy, simulate_run
from hwsim.metrics import derive
from hwsim.sim.executor import RecordOptions, simulate
from hwsim.sim.machine import Machine
from hwsim.sim.run import trace_attrs
from hwsim.trace import TraceWriter
from hwsim.trace.schema import OPERANDS, OPS, TraceError
from hwsim.trace.sinks import CountingSink, NullSink, Tee
from hwsim.vocab import TRACE_LEVELS

CASES = [("alexnet", "eyeriss-v1"), ("mobilenetv2", "scalesim-12x14-ws"), ("resnet18", "eyeriss-v1-ddr")]


def _run(network: str, config: str, path: Path) -> tuple[CountingSink, list[int]]:
    spec = resolve_run(small_zoo_graph(network), config)
    schedule = spec.schedule()
    machine = Machine.build(spec.hardware)
    buffers = machine.buffer_names() + schedule.named_buffers()
    counts = CountingSink(len(schedule.layers), len(machine.units.names), len(buffers))
    with TraceWriter(path, TRACE_LEVELS, [w.name for w in schedule.layers], buffers,
                     trace_attrs(schedule, spec.hardware, spec.sparsity), units=machine.units.names) as writer:
        result = simulate(schedule, machine, Tee(writer, counts), RecordOptions())
    return counts, [run.end_cycle for run in result.layers]


@pytest.mark.parametrize(("network", "config"), CASES)
def test_the_counting_sink_holds_what_the_trace_holds(network: str, config: str, tmp_path: Path) -> None:
    counts, ends = _run(network, config, tmp_path / "t.h5")
    with hwsim.trace.open(tmp_path / "t.h5") as trace:
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


@pytest.mark.parametrize(("network", "config"), [*CASES, ("resnet18", "eyeriss-8bit")])
def test_the_report_counted_as_it_ran_is_the_one_its_trace_gives(network: str, config: str, tmp_path: Path) -> None:
    sim = simulate_run(resolve_run(small_zoo_graph(network), config), tmp_path / "t.h5")
    with hwsim.trace.open(tmp_path / "t.h5") as trace:
        read_back = derive(trace)
        peaks = peak_occupancy(trace)
    assert sim.peak_occupancy_bytes == peaks and peaks
    assert [l.name for l in sim.metrics.layers] == [l.name for l in read_back.layers]
    for counted, summed in zip(sim.metrics.layers, read_back.layers, strict=True):
        assert np.array_equal(counted.transfers, summed.transfers), counted.name
        assert counted.compute == summed.compute, counted.name
        assert (counted.passes, counted.start_cycle, counted.end_cycle, counted.compute_cycles) == \
            (summed.passes, summed.start_cycle, summed.end_cycle, summed.compute_cycles), counted.name
        assert counted.energy_pj == summed.energy_pj and counted.dram_counters == summed.dram_counters, counted.name
        assert np.array_equal(counted.level_operand_pj, summed.level_operand_pj), counted.name


def test_a_run_without_a_trace_reports_what_a_traced_run_reports(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    spec = resolve_run(small_zoo_graph("alexnet"), "eyeriss-v1")
    untraced = simulate_run(spec, keep_trace=False)
    assert untraced.trace is None and list(tmp_path.iterdir()) == []  # not even the default traces/ file
    traced = simulate_run(spec, tmp_path / "t.h5")
    assert untraced.totals == traced.totals and untraced.peak_occupancy_bytes == traced.peak_occupancy_bytes
