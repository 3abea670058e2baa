"""How a pass hands psums back and when its filters load, by hand: a one-core machine built from YAML runs steps
written by hand, and every cycle below is derived from the config in `ONE_CORE`'s docstring.

The config: 16-bit words. A 4 × 4 PE array (16 PEs, 1 MAC per cycle); an 8 KiB GLB of two 4 KiB banks (2,048
words each) and three ports moving 4 words per cycle; 64-bit NoC buses (4 words per cycle), psums out of the
array on a bus of their own; DRAM: one channel of 8 B per cycle, 64-byte bursts (8 cycles each), 10 cycles of
latency to the first data.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hand_steps import steps

import hwsim.trace
from hwsim.check.validate import validate_trace
from hwsim.hardware.loader import parse_config
from hwsim.mapping.schedule import Schedule, Work, WorkInfo
from hwsim.sim.run import simulate_to_trace
from hwsim.vocab import Level, Operand, StepKind
from hwsim.workload import zoo

ONE_CORE = """
name: one-core
clock: 200 MHz
precision: 16 bit
pe_array: {rows: 4, cols: 4, mac_energy: 1 pJ, source: by hand,
           rf: {filter: 64 words, ifmap: 16 words, psum: 200 words, access_energy: 1 pJ}}
noc: {ifmap_bus: 64 bit, filter_bus: 64 bit, psum_bus: 64 bit, psum_out_bus: OUT_BUS, psum_out_streamed: STREAMED,
      inter_pe_energy: 1 pJ, source: by hand}
glb: {size: 8 KiB, banks: 2, ports: 3, words_per_port: 4, read_energy: 2 pJ, write_energy: 2 pJ, source: by hand}
dram: {channels: 1, bandwidth: 8 B/cycle, latency: 10 cycles, burst: 64 B, energy: 10 pJ/bit, source: by hand}
control: {clock_power: 1 mW, reference_throughput: 1 GMAC/s, other_fraction: 0.1, source: by hand}
"""

LAYER = zoo.build("phases_example").layers[1]  # any layer: the steps below are written by hand




def _move(operand: Operand, src: Level, dst: Level, words: int, group: int = 0, src_addr: int = 0,
          dst_addr: int = 0) -> dict[str, int]:
    return {"kind": StepKind.TRANSFER, "operand": operand, "src": src, "dst": dst, "group": group, "words": words,
            "coded_words": words, "src_addr": src_addr, "dst_addr": dst_addr}


def _pass(macs: int, group: int = 0) -> dict[str, int]:
    return {"kind": StepKind.COMPUTE, "group": group, "macs": macs, "active_pes": 16}


def _run(steps: np.ndarray, tmp_path: Path, out_bus: str = "64 bit", streamed: bool = True) -> tuple[int, Path]:
    text = ONE_CORE.replace("OUT_BUS", out_bus).replace("STREAMED", "true" if streamed else "false")
    hw = parse_config(text, "one-core.yaml")
    path = tmp_path / "one.h5"
    work = Work(LAYER, WorkInfo(), lambda: iter([steps]), word_bits=16)
    result = simulate_to_trace(Schedule("hand", hw.name, "hand", 1, (work,)), hw, path)
    return result.layers[0].end_cycle, path


# One pass: 32 filter words from DRAM straight into the RFs (one burst, its data at [10, 18); the filter bus
# [0, 8)): the filters are in at 18. Then 160 psum words read back from GLB word 0 (40 cycles of a port and of
# bank 0, and 40 of the psum bus), 1,600 MACs on 16 PEs (100 cycles) and the 160 finished psums written back to
# GLB word 0.
ONE_PASS = (_move(Operand.FILTER, Level.DRAM, Level.RF, 32), _move(Operand.PSUM, Level.GLB, Level.RF, 160),
            _pass(1600), _move(Operand.PSUM, Level.RF, Level.GLB, 160))


def test_streamed_psums_go_back_while_the_pass_runs(tmp_path: Path) -> None:
    # The pass starts at 18: the read [18, 58) on bank 0; the write-back goes with the pass, on the psum output
    # bus [18, 58) and, bank 0 being read until 58, into the GLB [58, 98). The MACs end at 118: the layer too.
    end, path = _run(steps(*ONE_PASS), tmp_path)
    assert end == 118
    with hwsim.trace.open(path) as trace:
        glb = trace.select("glb")
        assert sorted(zip(glb["start_cycle"].tolist(), glb["end_cycle"].tolist())) == [(18, 58), (58, 98)]
        noc = trace.select("noc")
        buses = {(trace.unit_names[u], s, e) for u, s, e in zip(noc["unit"].tolist(), noc["start_cycle"].tolist(),
                                                                  noc["end_cycle"].tolist())}
        assert buses == {("core0.noc.filter", 0, 8), ("core0.noc.psum", 18, 58), ("core0.noc.psum_out", 18, 58)}
        assert validate_trace(trace).ok


def test_psums_after_the_pass_when_not_streamed(tmp_path: Path) -> None:
    # The same pass, its psums handed back after the last MAC: the write-back [118, 158) on the GLB and the psum
    # bus (no output bus: psums in and out share it).
    end, path = _run(steps(*ONE_PASS), tmp_path, out_bus="0 bit", streamed=False)
    assert end == 158
    with hwsim.trace.open(path) as trace:
        assert "core0.noc.psum_out" not in trace.unit_names
        noc = trace.select("noc")
        assert sorted(zip(noc["start_cycle"].tolist(), noc["end_cycle"].tolist())) == [(0, 8), (18, 58), (118, 158)]
        assert validate_trace(trace).ok


def test_streamed_psums_on_the_shared_bus_wait_for_it(tmp_path: Path) -> None:
    # Streamed but without an output bus: the write-back follows the read on the psum bus, [58, 98), as on bank 0.
    end, path = _run(steps(*ONE_PASS), tmp_path, out_bus="0 bit")
    assert end == 118
    with hwsim.trace.open(path) as trace:
        noc = trace.select("noc")
        assert sorted(zip(noc["start_cycle"].tolist(), noc["end_cycle"].tolist())) == [(0, 8), (18, 58), (58, 98)]
        assert validate_trace(trace).ok


def test_filters_from_outside_the_loads_go_in_while_the_loads_land(tmp_path: Path) -> None:
    # Group 0: a 160-MAC pass, [0, 10). Group 1 loads 256 ifmap words from DRAM into GLB bank 0 (8 bursts, data
    # [10, 74), the GLB writing [0, 64)): its loads land at 74. Its 32 filter words come from GLB bank 1 (word
    # 2,048), which those loads do not fill: they go into the RFs as soon as the array is free, at 10 ([10, 18) on
    # a second port and on the filter bus), not at 74. Its 160-MAC pass waits for the loads: [74, 84).
    block = steps(_pass(160, 0), _move(Operand.IFMAP, Level.DRAM, Level.GLB, 256, 1),
                   _move(Operand.FILTER, Level.GLB, Level.RF, 32, 1, src_addr=2048), _pass(160, 1))
    end, path = _run(block, tmp_path)
    assert end == 84
    with hwsim.trace.open(path) as trace:
        noc = trace.select("noc")
        assert noc[["start_cycle", "end_cycle"]].tolist() == [(10, 18)]
        pe = trace.select("pe")
        passes = pe[pe["operand"] == len(Operand)]
        assert sorted(set(zip(passes["start_cycle"].tolist(), passes["end_cycle"].tolist()))) == [(0, 10), (74, 84)]
        assert validate_trace(trace).ok


def test_filters_a_group_loads_wait_for_its_loads(tmp_path: Path) -> None:
    # As above, but group 1 itself brings its filters into GLB bank 1 (32 words from DRAM: its burst follows the
    # ifmap's eight, data [74, 82)): its loads land at 82, the filters go in [82, 90), the pass [90, 100).
    block = steps(_pass(160, 0), _move(Operand.IFMAP, Level.DRAM, Level.GLB, 256, 1),
                   _move(Operand.FILTER, Level.DRAM, Level.GLB, 32, 1, src_addr=4096, dst_addr=2048),
                   _move(Operand.FILTER, Level.GLB, Level.RF, 32, 1, src_addr=2048), _pass(160, 1))
    end, path = _run(block, tmp_path)
    assert end == 100
    with hwsim.trace.open(path) as trace:
        noc = trace.select("noc")
        assert noc[["start_cycle", "end_cycle"]].tolist() == [(82, 90)]
