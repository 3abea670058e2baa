"""The trace validator (`hwsim trace validate`, run by `hwsim check`): each rule on small hand-built traces whose
violations are counted by hand, real simulations that must pass, and deliberate simulator bugs it must catch.

Hardware of the hand-built traces: eyeriss-v1 with one GLB port and psums handed back after each pass on the
psum bus — 16-bit words; DRAM 8 B/cycle on 1 channel, 64-byte bursts (a burst slot is 64 / 8 = 8 cycles),
latency 50 ns at 200 MHz = 10 cycles; GLB 108 KiB = 55,296 words in 27 banks of 2,048 words, 1 port of 4
words/cycle, 8 KiB filter partition (data partition 100 KiB = 102,400 B); 64-bit NoC buses (4 words/cycle);
12 × 14 = 168 PEs of 1 MAC/cycle.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hwsim.trace
from hwsim.check.validate import RULES, Validation, _layer_windows, min_dram_latency_cycles, validate_trace
from hwsim.hardware import load_config
from hwsim.hardware.loader import from_dict, to_dict
from hwsim.hardware.tree import UnitTable
from hwsim.trace.schema import NO_STEP, empty_groups, empty_occupancy, empty_records
from hwsim.trace.writer import TraceWriter
from hwsim.vocab import BUS_OF_OPERAND, TRACE_LEVELS, Op, Operand

READ, WRITE, FILL, UPDATE = int(Op.READ), int(Op.WRITE), int(Op.FILL), int(Op.UPDATE)
IFMAP, FILTER, PSUM, OFMAP, OTHER = 0, 1, 2, 3, 4
BIT = {level: 1 << k for k, level in enumerate(TRACE_LEVELS)}
Record = tuple[int, int, int, int, int, int, int]  # start, end, op, operand, step, address, words (layer 0)
LOCAL = (1 << 40) - 1  # a hand record's step below bit 40, its layer above (`_write`)


def _hardware(**glb: Any) -> dict[str, Any]:
    data = to_dict(load_config("eyeriss-v1"))
    data["glb"].update({"ports": 1, **glb})
    data["noc"].update({"psum_out_bus_bits": 0, "psum_out_streamed": False})
    return data


def _write(path: Path, records: dict[str, list[Record]], groups: list[tuple[int, int, int]],
           occupancy: list[tuple[int, int, int]] = (), regions: dict[str, Any] | None = None,
           hardware: dict[str, Any] | None = None, layers: int = 1) -> Path:
    """A complete trace on eyeriss-v1 holding exactly these records, groups (first step, compute step, level bits)
    and occupancy events (buffer id, cycle, bytes): one layer ("conv"), or `layers` layers each waiting for the one
    before ("conv", "conv1", …), a record's layer the step's 41st bit and up and a group's likewise."""
    attrs = {"network": "hand", "hardware": "eyeriss-v1", "hardware_json": json.dumps(hardware or _hardware()),
             "clock_hz": 200e6, "word_bits": 16, "batch": 1, "dram_records": "burst",
             "dram_regions_json": json.dumps(regions if regions is not None else {})}
    units = UnitTable.of(from_dict(hardware or _hardware()))
    names = ["conv", *(f"conv{k}" for k in range(1, layers))]
    with TraceWriter(path, TRACE_LEVELS, names, ["glb.data", "glb.filter", "line_buffer"], attrs,
                     units=units.names) as writer:
        for level, rows in records.items():
            block = empty_records(len(rows))
            for i, (start, end, op, operand, step, address, words) in enumerate(rows):
                block[i] = (start, end, op, operand, step >> 40, step & LOCAL, address, words,
                            _unit(units, level, operand))
            for layer in range(layers):  # the writer indexes a layer's rows: they go layer after layer
                writer.append(level, block[block["layer"] == layer])
        g = empty_groups(len(groups))
        for i, (first, compute, bits) in enumerate(groups):
            g[i] = (first >> 40, first & LOCAL, compute & LOCAL if compute >= 0 else compute, bits)
        writer.append_groups(g)
        occ = empty_occupancy(len(occupancy))
        for i, (buffer, cycle, nbytes) in enumerate(occupancy):
            occ[i] = (buffer, cycle, nbytes, 0)
        writer.append_occupancy(occ)
    return path


def _unit(units: UnitTable, level: str, operand: int) -> int:
    """The unit of a record at `level` on the one core: dram, core0.glb, core0.noc.<bus>, ..."""
    if level in ("dram", "l2"):
        return units.id(level)
    if level == "noc":
        return units.core_unit(0, f"noc.{BUS_OF_OPERAND[Operand(operand)]}")
    return units.core_unit(0, level)


def _validate(path: Path) -> Validation:
    with hwsim.trace.open(path) as trace:
        return validate_trace(trace)


def _violations(v: Validation) -> dict[str, int]:
    return {r.rule: r.violations for r in v.rules if r.violations}


LOAD_PASS_STORE = BIT["dram"] | BIT["glb"] | BIT["noc"] | BIT["rf"] | BIT["pe"]


def _group(start: int) -> dict[str, list[Record]]:
    """One well-timed group at `start`: step 0 loads 32 words DRAM → GLB (first burst after the 10-cycle
    latency, 8 cycles; GLB fill 8 cycles), step 1 streams 8 ifmap words GLB → RF (2 cycles each side), step 2 is
    the pass (168 MACs on 168 PEs: 1 cycle at least), step 3 stores 8 psum words RF → GLB."""
    s = start
    return {"dram": [(s + 10, s + 18, READ, IFMAP, 0, 0, 32)],
            "glb": [(s + 10, s + 18, FILL, IFMAP, 0, 0, 32), (s + 18, s + 20, READ, IFMAP, 1, 0, 8),
                    (s + 30, s + 32, UPDATE, PSUM, 3, 100, 8)],
            "noc": [(s + 18, s + 20, WRITE, IFMAP, 1, -1, 8), (s + 30, s + 32, WRITE, PSUM, 3, -1, 8)],
            "rf": [(s + 18, s + 20, FILL, IFMAP, 1, 0, 8), (s + 30, s + 32, READ, PSUM, 3, 0, 8)],
            "pe": [(s + 20, s + 30, UPDATE, OTHER, 2, 168, 168)]}


def test_a_well_timed_hand_trace_passes_every_rule(tmp_path: Path) -> None:
    v = _validate(_write(tmp_path / "t.h5", _group(0), [(0, 2, LOAD_PASS_STORE)],
                         regions={"conv": [[IFMAP, 0, 32]]}))
    assert v.ok, _violations(v)
    assert [r.rule for r in v.rules] == list(RULES)
    assert all(r.checked > 0 for r in v.rules if r.rule not in ("occupancy", "jedec", "dram_commands"))  # no JEDEC DRAM


def test_minimum_dram_latency_is_the_configured_one() -> None:
    assert min_dram_latency_cycles(load_config("eyeriss-v1")) == 10  # 50 ns at 200 MHz
    # DDR4-2400: CWL 12 nCK at 1.2 GHz is the fastest data after a request: 12 / 1.2 GHz × 200 MHz = 2 cycles
    assert min_dram_latency_cycles(load_config("configs/eyeriss-v1-ddr.yaml")) == 2


def test_bandwidth_a_dram_burst_shorter_than_its_slot(tmp_path: Path) -> None:
    records = _group(0)
    records["dram"] = [(10, 14, READ, IFMAP, 0, 0, 32)]  # 64 B in 4 cycles: twice the 8 B/cycle
    assert _violations(_validate(_write(tmp_path / "t.h5", records, [(0, 2, LOAD_PASS_STORE)]))) == {"bandwidth": 1}


def test_bandwidth_dram_window(tmp_path: Path) -> None:
    """Bursts of 64 B starting in cycles 0..255: at most 8 B × 256 + one burst = 2,112 B = 33 bursts."""
    def bursts(n: int) -> dict[str, list[Record]]:
        rows = [(10 + 7 * (i % 30), 18 + 7 * (i % 30), READ, IFMAP, 0, 32 * i, 32) for i in range(n)]
        return {"dram": rows, "glb": [(10, 10 + 8 * n, FILL, IFMAP, 0, 0, 32 * n)]}
    ok = _validate(_write(tmp_path / "ok.h5", bursts(33), [(0, NO_STEP, BIT["dram"] | BIT["glb"])]))
    assert _violations(ok) == {}
    bad = _validate(_write(tmp_path / "bad.h5", bursts(34), [(0, NO_STEP, BIT["dram"] | BIT["glb"])]))
    assert _violations(bad) == {"bandwidth": 1}


def test_bandwidth_glb_noc_and_pe(tmp_path: Path) -> None:
    records = _group(0)
    records["glb"][1] = (18, 19, READ, IFMAP, 1, 0, 8)  # 8 words need 2 cycles at 4 words/cycle
    records["noc"][0] = (18, 19, WRITE, IFMAP, 1, -1, 8)  # 8 × 16 bits need 2 cycles on a 64-bit bus
    records["pe"] = [(20, 21, UPDATE, OTHER, 2, 100, 168)]  # 168 MACs on 100 PEs need 2 cycles
    v = _validate(_write(tmp_path / "t.h5", records, [(0, 2, LOAD_PASS_STORE)]))
    assert _violations(v) == {"bandwidth": 3}


def test_ports_one_glb_port_and_one_bank(tmp_path: Path) -> None:
    """Two GLB transfers overlapping in cycles 11..13: one port allows one. With two ports they still share bank
    0 (words 0..2,047) unless the second moves to bank 1 (word 2,048)."""
    def records(address: int) -> dict[str, list[Record]]:
        rows = _group(0)
        rows["glb"].append((11, 13, READ, FILTER, 0, address, 8))
        return rows
    one_port = _validate(_write(tmp_path / "a.h5", records(2048), [(0, 2, LOAD_PASS_STORE)]))
    assert _violations(one_port) == {"ports": 1}
    two_ports = _hardware(ports=2)
    same_bank = _validate(_write(tmp_path / "b.h5", records(8), [(0, 2, LOAD_PASS_STORE)], hardware=two_ports))
    assert _violations(same_bank) == {"ports": 1}
    other_bank = _validate(_write(tmp_path / "c.h5", records(2048), [(0, 2, LOAD_PASS_STORE)], hardware=two_ports))
    assert _violations(other_bank) == {}


def test_ports_noc_bus_and_pe_array(tmp_path: Path) -> None:
    records = _group(0)
    records["noc"].append((19, 21, WRITE, IFMAP, 1, -1, 8))  # the ifmap bus is busy until 20
    records["noc"].append((19, 21, WRITE, FILTER, 1, -1, 8))  # the filter bus is free: fine
    records["pe"].append((25, 27, UPDATE, OTHER, 2, 168, 168))  # a second pass while the first runs
    v = _validate(_write(tmp_path / "t.h5", records, [(0, 2, LOAD_PASS_STORE)]))
    assert _violations(v) == {"ports": 2}


def test_dram_latency(tmp_path: Path) -> None:
    """Group 1's load cannot be requested before group 0's loads end (cycle 18): its first burst at 27 is one
    cycle short of the 10-cycle latency (its GLB fill, at 40, waits for the port); the store's DRAM write at 35
    comes 3 cycles after its pass ended at 32."""
    records = _group(0)
    records["dram"].append((27, 35, READ, IFMAP, 4, 32, 32))
    records["glb"].append((40, 48, FILL, IFMAP, 4, 32, 32))
    records["glb"].append((32, 34, READ, OFMAP, 3, 200, 8))
    records["dram"].append((35, 43, UPDATE, OFMAP, 3, 64, 8))
    v = _validate(_write(tmp_path / "t.h5", records, [(0, 2, LOAD_PASS_STORE), (4, NO_STEP, BIT["dram"] | BIT["glb"])]))
    assert _violations(v) == {"dram_latency": 2}


def test_dependencies_pass_before_loads_store_before_pass(tmp_path: Path) -> None:
    records = _group(0)
    records["pe"] = [(15, 25, UPDATE, OTHER, 2, 168, 168)]  # before its load ends at 18
    records["glb"][2] = (24, 26, UPDATE, PSUM, 3, 100, 8)  # its store before the pass ends at 25
    records["noc"][1] = (24, 26, WRITE, PSUM, 3, -1, 8)
    records["rf"][1] = (24, 26, READ, PSUM, 3, 0, 8)
    v = _validate(_write(tmp_path / "t.h5", records, [(0, 2, LOAD_PASS_STORE)]))
    assert _violations(v) == {"dependencies": 2}


def test_dependencies_psums_read_before_they_were_stored(tmp_path: Path) -> None:
    """Group 0 stores psums at GLB word 100 in cycles 30..32. Group 1 (steps 4..7) reads them back in cycles
    27..29, before they are there, and its pass starts at 33: the read is early (27 < 32), the pass is not.
    Moving the pass to 30 makes it early too. (No port, bank or bus is shared at once.)"""
    def records(pass_start: int) -> dict[str, list[Record]]:
        rows = _group(0)
        rows["glb"].append((27, 29, READ, PSUM, 5, 100, 8))
        rows["noc"].append((27, 29, WRITE, PSUM, 5, -1, 8))
        rows["rf"].append((27, 29, FILL, PSUM, 5, 0, 8))
        rows["pe"].append((pass_start, pass_start + 2, UPDATE, OTHER, 6, 168, 168))
        return rows
    groups = [(0, 2, LOAD_PASS_STORE), (4, 6, BIT["glb"] | BIT["noc"] | BIT["rf"] | BIT["pe"])]
    early_read = _validate(_write(tmp_path / "a.h5", records(33), groups))
    assert _violations(early_read) == {"dependencies": 1}
    early_pass = _validate(_write(tmp_path / "b.h5", records(30), groups))
    assert _violations(early_pass) == {"dependencies": 2}


def _in_layer(layer: int, rows: dict[str, list[Record]]) -> dict[str, list[Record]]:
    """The records with their steps in layer `layer` (`_write`)."""
    return {level: [(*r[:4], r[4] | layer << 40, *r[5:]) for r in records] for level, records in rows.items()}


@pytest.mark.parametrize("window_records", [1 << 22, 1])
def test_dependencies_a_layer_before_the_one_it_waits_for_ended(tmp_path: Path, monkeypatch: Any,
                                                                window_records: int) -> None:
    """Layer conv ends at 32 (its store); conv1 waits for it. Started at 40, every rule holds; started at 20, its
    load (DRAM and GLB fill, 30..38) starts before 32 — one step early (the others start at 38 and later) — its
    first burst less than the 10-cycle latency after the 32 it could be asked for, and its fill shares the one
    GLB port and bank 0 (words 0..2,047) with conv's store at word 100 (30..32): two ports violations. The step
    rules read a window of layers at a time: the same counts with both layers in one window and with a window per
    layer (the layer's start carried across)."""
    monkeypatch.setattr("hwsim.check.validate.STEP_WINDOW_RECORDS", window_records)
    groups = [(0, 2, LOAD_PASS_STORE), (1 << 40, 1 << 40 | 2, LOAD_PASS_STORE)]

    def trace(name: str, start: int) -> Path:
        first, second = _group(0), _in_layer(1, _group(start))
        return _write(tmp_path / name, {level: first[level] + second[level] for level in first}, groups, layers=2)
    assert _violations(_validate(trace("a.h5", 40))) == {}
    assert _violations(_validate(trace("b.h5", 20))) == {"dependencies": 1, "dram_latency": 1, "ports": 2}
    with hwsim.trace.open(tmp_path / "b.h5") as t:
        assert _layer_windows(t, set(t.levels)) == ([(0, 2)] if window_records > 100 else [(0, 1), (1, 2)])


def test_occupancy_over_capacity(tmp_path: Path) -> None:
    """GLB data partition: 108 KiB − 8 KiB = 102,400 B."""
    fits = [(0, 0, 102_400), (0, 40, 0)]
    over = [(0, 0, 102_400), (0, 5, 102_402), (0, 40, 0)]
    assert _violations(_validate(_write(tmp_path / "a.h5", _group(0), [(0, 2, LOAD_PASS_STORE)], fits))) == {}
    v = _validate(_write(tmp_path / "b.h5", _group(0), [(0, 2, LOAD_PASS_STORE)], over))
    assert _violations(v) == {"occupancy": 1}


def test_addresses_glb_past_its_end_and_dram_outside_the_region(tmp_path: Path) -> None:
    records = _group(0)
    records["glb"][1] = (18, 20, READ, IFMAP, 1, 55_290, 8)  # words 55,290..55,297 of 55,296
    records["dram"][0] = (10, 18, READ, IFMAP, 0, 16, 32)  # words 16..47, the ifmap region is 0..31
    v = _validate(_write(tmp_path / "t.h5", records, [(0, 2, LOAD_PASS_STORE)], regions={"conv": [[IFMAP, 0, 32]]}))
    assert _violations(v) == {"addresses": 2}


def test_addresses_two_tensors_sharing_dram(tmp_path: Path) -> None:
    """Regions in bytes (16-bit words: 2 B each): the ifmap at words 0..31 is bytes 0..63; filters declared at
    words 30..39 (bytes 60..79) overlap it by 4 bytes; the ofmap at words 40..47 (bytes 80..95) touches neither;
    a psum region at the ofmap's base is that same tensor. One overlap."""
    regions = {"conv": [[IFMAP, 0, 32], [FILTER, 30, 10], [OFMAP, 40, 8], [PSUM, 40, 4]]}
    v = _validate(_write(tmp_path / "t.h5", _group(0), [(0, 2, LOAD_PASS_STORE)], regions=regions))
    assert _violations(v) == {"addresses": 1}
    assert "byte 60 overlaps the one ending at byte 64" in next(r for r in v.rules if r.rule == "addresses").examples[0]


def test_levels_a_group_without_its_noc_records(tmp_path: Path) -> None:
    records = _group(0)
    del records["noc"]
    v = _validate(_write(tmp_path / "t.h5", records, [(0, 2, LOAD_PASS_STORE)]))
    # the group moves data through the NoC but holds no NoC record (1), and its two RF steps (1 and 3) each lack
    # their bus transfer (2)
    assert _violations(v) == {"levels": 3}


def test_levels_one_step_without_its_noc_record(tmp_path: Path) -> None:
    # step 1's ifmap bus transfer missing, step 3's psum transfer kept: the group still has NoC records, so only
    # the per-step rule sees it (a sink that dropped one operand's NoC records)
    records = _group(0)
    records["noc"] = [r for r in records["noc"] if r[4] != 1]
    v = _validate(_write(tmp_path / "t.h5", records, [(0, 2, LOAD_PASS_STORE)]))
    assert _violations(v) == {"levels": 1}


@pytest.mark.parametrize(("network", "config"), [
    ("alexnet", "eyeriss-v1"), ("resnet18", "configs/eyeriss-v1-ddr.yaml"), ("phases_example", "tpu-like-ws"),
    ("mobilenetv2", "configs/edge-soc-l2.yaml"),
])
def test_real_simulations_obey_the_physics(cli: Any, tmp_path: Path, network: str, config: str) -> None:
    """Simulations on four configs (Eyeriss with its simple DRAM, a JEDEC DDR4, a systolic array, an L2) pass
    every rule, and `hwsim trace validate` says so."""
    trace = tmp_path / "t.h5"
    assert cli("simulate", network, "--hw", config, "--out", str(trace), "--json").code == 0
    result = cli("trace", "validate", str(trace), "--json")
    doc = json.loads(result.out)
    assert result.code == 0 and doc["ok"], [r for r in doc["rules"] if r["violations"]]
    assert all(r["checked"] > 0 for r in doc["rules"] if r["rule"] in ("bandwidth", "ports", "dependencies"))


def test_a_layer_that_can_never_progress_stops_at_once_naming_the_buffer(tmp_path: Path) -> None:
    """Two groups each claim 30,000 of the GLB data partition's 51,200 words (100 KiB of 16-bit words: 60,000 of
    102,400 bytes) and nothing frees them: the second claim waits for space no step will release. The run stops with
    one error naming the layer, the buffer and the bytes, instead of waiting forever."""
    from hwsim.errors import HwsimError
    from hwsim.mapping.schedule import Schedule, Work, WorkInfo, buffer_steps, empty_steps, transfers
    from hwsim.sim.run import simulate_to_trace
    from hwsim.vocab import Level, StepKind
    from hwsim.workload import zoo

    layer = zoo.build("phases_example").layer("n2")
    hw = load_config("eyeriss-v1")

    def steps() -> Any:
        blocks = []
        for group in (0, 1):
            g = np.array([group])
            compute = empty_steps(1)
            compute["kind"], compute["group"], compute["macs"], compute["active_pes"] = StepKind.COMPUTE, group, 1, 1
            blocks += [buffer_steps(StepKind.ALLOC, Operand.IFMAP, Level.GLB, g, np.array([30_000]), np.array([0])),
                       transfers(Operand.IFMAP, Level.DRAM, Level.GLB, g, np.array([8]), np.array([0]),
                                 np.array([0])), compute]
        yield np.concatenate(blocks)

    schedule = Schedule("stuck", hw.name, "hand", 1, (Work(layer, WorkInfo(), steps),))
    with pytest.raises(HwsimError) as raised:
        simulate_to_trace(schedule, hw, tmp_path / "t.h5")
    message = str(raised.value)
    assert "layer n2 cannot make progress" in message and "glb data partition needs 60000 bytes" in message
    assert "60000 of 102400 held" in message and "\n" not in message
    assert list(tmp_path.iterdir()) == []  # nothing half-written left behind


def _timing_bugs() -> Any:
    """tools/timing_bugs.py as a module (the tools are scripts, not a package)."""
    import importlib.util
    import sys

    if "timing_bugs" not in sys.modules:
        spec = importlib.util.spec_from_file_location("timing_bugs",
                                                      Path(__file__).parents[1] / "tools" / "timing_bugs.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["timing_bugs"] = module  # dataclasses look their module up while the file runs
        spec.loader.exec_module(module)
    return sys.modules["timing_bugs"]


CAUGHT_BY = {  # each deliberate bug of tools/timing_bugs.py, and the rule that must break
    "dram_2x_bandwidth": "bandwidth",  # bursts of 64 B in 4 cycles where a slot is 8
    "dram_no_latency": "dram_latency",  # first data at the request, not 10 cycles after it
    "glb_port_ignored": "ports",  # two transfers on the one GLB port
    "psums_not_awaited": "dependencies",  # a pass starting before the psums it reads are stored
    "psum_wait_by_start_address": "dependencies",  # ... or before overlapping psums stored at another address
    "noc_records_dropped": "levels",  # groups moving data through the NoC without a NoC record
    "dram_wrong_address": "addresses",  # loads reading DRAM at GLB addresses, outside their tensors
    "psums_streamed_early": "dependencies",  # psums out of the RFs before their pass started
    "glb_banks_not_swept": "ports",  # two transfers in one GLB bank at once
    "filters_before_their_loads": "dependencies",  # filters read from the GLB before they were loaded into it
}


@pytest.mark.parametrize("bug", sorted(CAUGHT_BY))
def test_hwsim_check_catches_each_deliberate_timing_bug(tmp_path: Path, bug: str) -> None:
    """Each bug applied to a scratch copy of the simulator: the words moved still agree, so the validator must
    notice; `hwsim check` on AlexNet at 67x67 fails (exit 1) with the bug's rule broken. A load from the wrong
    DRAM address is also a difference in the DRAM transfers' start offsets the closed form derives."""
    tool = _timing_bugs()
    chosen = next(b for b in tool.BUGS if b.name == bug)
    code, doc = tool.run_check(tool.scratch_copy(chosen, tmp_path), "alexnet", chosen.hw or "eyeriss-v1", "67x67")
    broken = {r["rule"] for r in doc["validation"]["rules"] if r["violations"]}
    differ = {m["access"] for m in doc["mismatches"]}
    assert code == 1
    assert differ == ({"read start offsets"} if bug == "dram_wrong_address" else set()), differ
    assert CAUGHT_BY[bug] in broken, broken
