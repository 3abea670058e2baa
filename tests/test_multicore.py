"""Two cores, by hand: a two-core machine built from YAML runs two independent works at the same time (a schedule
graph with no edge between them), shares its one DRAM channel between them, and chains a pair across a link.
Every cycle and link word below is derived by hand from the config in the docstring of `TWO_CORES`.

The config: 200 MHz, 16-bit words. Each core: a 4 × 4 PE array (16 PEs, 1 MAC per cycle), an 8 KiB GLB of one bank
and one port moving 4 words per cycle, 64-bit NoC buses. DRAM: one channel of 8 B per cycle, 64-byte bursts (a burst
holds the bus 64 / 8 = 8 cycles), a latency of 10 cycles to the first data. The link `bridge` joins the two cores:
64 bits per cycle in each direction (4 16-bit words per cycle) and 6 cycles of latency, 2 pJ per word.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hand_steps import steps

import hwsim.trace
from hwsim.check.validate import validate_trace
from hwsim.errors import HwsimError
from hwsim.hardware.loader import parse_config
from hwsim.mapping.schedule import Schedule, Work, WorkInfo
from hwsim.metrics import derive
from hwsim.sim.executor import simulate
from hwsim.sim.machine import Machine
from hwsim.sim.run import simulate_to_trace
from hwsim.trace.sinks import CountingSink, NullSink
from hwsim.vocab import Level, Operand, StepKind
from hwsim.workload import zoo

TWO_CORES = """
name: two-cores
clock: 200 MHz
precision: 16 bit
pe_array: {rows: 4, cols: 4, mac_energy: 1 pJ, source: by hand,
           rf: {filter: 16 words, ifmap: 16 words, psum: 16 words, access_energy: 1 pJ}}
noc: {ifmap_bus: 64 bit, filter_bus: 64 bit, psum_bus: 64 bit, inter_pe_energy: 1 pJ, source: by hand}
glb: {size: 8 KiB, banks: 1, ports: 1, words_per_port: 4, read_energy: 2 pJ, write_energy: 2 pJ, source: by hand}
dram: {channels: 1, bandwidth: 8 B/cycle, latency: 10 cycles, burst: 64 B, energy: 10 pJ/bit, source: by hand}
control: {clock_power: 1 mW, reference_throughput: 1 GMAC/s, other_fraction: 0.1, source: by hand}
cores: [{name: left}, {name: right}]
links: [{name: bridge, between: [left, right], width: 64 bit, latency: 6 cycles, energy: 2 pJ, source: by hand}]
"""

LAYERS = zoo.build("phases_example").layers[1:3]  # any two layers: the works below are written by hand




def _pass(core: int, macs: int, group: int = 0) -> dict[str, int]:
    return {"kind": StepKind.COMPUTE, "group": group, "macs": macs, "active_pes": 16, "dst_core": core,
            "src_core": core}


def _load(core: int, words: int, address: int, group: int = 0) -> dict[str, int]:
    return {"kind": StepKind.TRANSFER, "operand": Operand.IFMAP, "src": Level.DRAM, "dst": Level.GLB, "group": group,
            "words": words, "coded_words": words, "src_addr": address, "src_core": core, "dst_core": core}


def _work(steps: np.ndarray, core: int, after: tuple[int, ...] | None) -> Work:
    """Work on `core` (core k takes layer k's name), waiting for the works `after`."""
    return Work(LAYERS[core], WorkInfo(), lambda: iter([steps]), core=core, after=after, word_bits=16)


def _run(works: tuple[Work, ...], tmp_path: Path) -> tuple[list[tuple[int, int]], Path]:
    hw = parse_config(TWO_CORES, "two-cores.yaml")
    path = tmp_path / "two.h5"
    result = simulate_to_trace(Schedule("hand", hw.name, "hand", 1, works), hw, path)
    return [(run.start_cycle, run.end_cycle) for run in result.layers], path


def test_two_independent_works_run_at_the_same_time(tmp_path: Path) -> None:
    # Each pass: 160 MACs on 16 PEs = 10 cycles. No edge between the works: both start at 0 and end at 10, on
    # different cores (one core would take 20).
    spans, path = _run((_work(steps(_pass(0, 160)), 0, ()), _work(steps(_pass(1, 160)), 1, ())), tmp_path)
    assert spans == [(0, 10), (0, 10)]
    with hwsim.trace.open(path) as trace:
        pe = trace.select("pe")
        assert sorted(trace.unit_names[u] for u in pe["unit"].tolist()) == ["left.pe", "right.pe"]
        assert validate_trace(trace).ok


def test_two_cores_share_the_dram_channel(tmp_path: Path) -> None:
    # Each work loads 64 words (128 B: 2 bursts) into its GLB, then runs a 10-cycle pass. Both ask DRAM at cycle 0;
    # the left work asked first. Left: bursts [10, 18) and [18, 26) (the latency, then back to back); its GLB write
    # of 64 words takes 64 / 4 = 16 cycles, [0, 16): loaded at 26, pass [26, 36). Right: its bursts wait for the bus,
    # [26, 34) and [34, 42); loaded at 42, pass [42, 52). One core would run them one after another: 72 cycles.
    left = steps(_load(0, 64, 0), _pass(0, 160))
    right = steps(_load(1, 64, 64), _pass(1, 160))
    spans, path = _run((_work(left, 0, ()), _work(right, 1, ())), tmp_path)
    assert spans == [(0, 36), (0, 52)]
    with hwsim.trace.open(path) as trace:
        dram = trace.select("dram")
        assert list(zip(dram["start_cycle"].tolist(), dram["end_cycle"].tolist())) == [(10, 18), (18, 26), (26, 34),
                                                                                       (34, 42)]
        assert validate_trace(trace).ok


def test_a_chained_pair_across_a_link(tmp_path: Path) -> None:
    # Left: a 10-cycle pass [0, 10), then it sends 40 words from its GLB to the right core's GLB. The read takes
    # 40 / 4 = 10 cycles [10, 20); the link carries 40 × 16 / 64 = 10 cycles from 10, free at 20, the last word
    # arriving 6 later: [10, 26); the right GLB writes from the first arrival, 10 + 6 = 16, for 10 cycles: [16, 26).
    # Left ends at 26. Right waits for it (after = left), then runs an 80-MAC pass: 80 / 16 = 5 cycles, [26, 31).
    send = {"kind": StepKind.TRANSFER, "operand": Operand.OFMAP, "src": Level.GLB, "dst": Level.GLB, "words": 40,
            "coded_words": 40, "src_core": 0, "dst_core": 1}
    spans, path = _run((_work(steps(_pass(0, 160), send), 0, ()), _work(steps(_pass(1, 80)), 1, (0,))), tmp_path)
    assert spans == [(0, 26), (26, 31)]
    with hwsim.trace.open(path) as trace:
        link = trace.select("link")
        assert link.tolist() == [(10, 26, 1, 3, 0, 1, -1, 40, trace.unit_names.index("bridge.left>right"))]
        glb = trace.select("glb")
        assert sorted(zip(glb["start_cycle"].tolist(), glb["end_cycle"].tolist(),
                          (trace.unit_names[u] for u in glb["unit"].tolist()))) == [(10, 20, "left.glb"),
                                                                                   (16, 26, "right.glb")]
        assert validate_trace(trace).ok
        metrics = derive(trace)
    assert metrics.layers[0].energy_pj["link"] == 40 * 2.0  # 40 words at 2 pJ each


def test_a_work_never_starts_before_what_it_waits_for_and_sinks_agree(tmp_path: Path) -> None:
    # The same pair on a null sink and on a counting sink times the same; the counting sink holds the link's words.
    hw = parse_config(TWO_CORES, "two-cores.yaml")
    send = {"kind": StepKind.TRANSFER, "operand": Operand.OFMAP, "src": Level.GLB, "dst": Level.GLB, "words": 40,
            "coded_words": 40, "src_core": 0, "dst_core": 1}
    works = (_work(steps(_pass(0, 160), send), 0, ()), _work(steps(_pass(1, 80)), 1, (0,)))
    schedule = Schedule("hand", hw.name, "hand", 1, works)
    quiet = simulate(schedule, Machine.build(hw), NullSink())
    machine = Machine.build(hw)
    counts = CountingSink(len(works), len(machine.units.names), len(machine.buffer_names()))
    counted = simulate(schedule, machine, counts)
    assert [r.end_cycle for r in quiet.layers] == [r.end_cycle for r in counted.layers] == [26, 31]
    link = machine.units.id("bridge.left>right")
    assert int(counts.words("link", 0)[link].sum()) == 40 and counts.span(1) == (26, 31)


def test_a_transfer_between_cores_without_a_link_is_an_error(tmp_path: Path) -> None:
    lonely = TWO_CORES.replace("links: [{name: bridge, between: [left, right], width: 64 bit, latency: 6 cycles, "
                               "energy: 2 pJ, source: by hand}]\n", "")
    hw = parse_config(lonely, "lonely.yaml")
    send = {"kind": StepKind.TRANSFER, "operand": Operand.OFMAP, "src": Level.GLB, "dst": Level.GLB, "words": 40,
            "coded_words": 40, "src_core": 0, "dst_core": 1}
    with pytest.raises(HwsimError, match="no link joins them"):
        simulate_to_trace(Schedule("hand", hw.name, "hand", 1, (_work(steps(send), 0, ()),)), hw, tmp_path / "x.h5")
    assert list(tmp_path.iterdir()) == []  # nothing half-written left behind
