"""The validator's JEDEC rules (`hwsim.check.dram_commands`) on hand-built command sequences, each breaking one
timing by a cycle, and on simulations of the jedec model that must keep them all.

The device is the `ddr4-3200-x16` preset (JESD79-4B DDR4-3200AA), one channel, one rank, in its command clock:

    CL 22, CWL 16, tRCD 22, tRP 22, tRAS 52, tRC 74, tCCD_S 4, tCCD_L 8, tRRD_S 9, tRRD_L 11, tFAW 48,
    tWTR_S 4, tWTR_L 12, tRTW 12, tRTP 12, tWR 24, tBL 4, tRFC 560, tREFI 12480;

2 bank groups × 4 banks, bank b in bank group b mod 2 (banks 0, 2 share group 0; banks 1, 3 group 1). The core
clock is eyeriss-v1's 200 MHz: one core cycle is 8 command-clock cycles (1.6 GHz).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import small_zoo_graph

import hwsim.trace
from hwsim.check.dram_commands import commands_rule, jedec_rule
from hwsim.check.validate import validate_trace
from hwsim.flows.check import check_network
from hwsim.hardware.loader import parse_config
from hwsim.hardware.schema import Accelerator
from hwsim.vocab import DRAM_COMMAND_DTYPE, DRAM_COMMAND_NAMES, NO_BANK, Op

SIMPLE_KEYS = ("bandwidth", "latency", "burst", "turnaround", "energy", "source")
REFI = 12480


def _yaml(**keys: object) -> str:
    """eyeriss-v1 with the jedec DRAM model of the preset, `keys` under dram."""
    given = {"model": "jedec", "preset": "ddr4-3200-x16", "address_map": "RoCoBaRaCh", **keys}
    lines = "".join(f"  {k}: {v}\n" for k, v in given.items())
    lines += "".join(f"  {k}: ~\n" for k in SIMPLE_KEYS)
    return f"base: eyeriss-v1\nname: ddr-test\ndram:\n{lines}"


def _hw(**keys: object) -> Accelerator:
    return parse_config(_yaml(**keys), "test.yaml")


HW = _hw()


def _commands(*rows: tuple[int, str, int, int]) -> np.ndarray:
    """Commands (cycle, name, bank, row) on channel 0, rank 0; a REF has no bank."""
    out = np.zeros(len(rows), dtype=DRAM_COMMAND_DTYPE)
    for i, (cycle, name, bank, row) in enumerate(rows):
        ref = name == "REF"
        out[i] = (cycle, DRAM_COMMAND_NAMES.index(name), 0, 0, NO_BANK if ref else bank % 2,
                  NO_BANK if ref else bank, -1 if ref else row)
    return out


def _broken(commands: np.ndarray, hw: Accelerator = HW) -> tuple[int, int, list[str]]:
    """(items checked, violations, the first few described) of the jedec rule."""
    found: dict[str, list[int | str]] = {"checked": [0], "bad": [0], "text": []}

    def add(rule: str, bad: np.ndarray, describe: object) -> None:
        assert rule == "jedec"
        found["checked"][0] += len(bad)
        found["bad"][0] += int(bad.sum())
        found["text"] += [describe(int(i)) for i in np.flatnonzero(bad)]  # type: ignore[operator]

    jedec_rule(add, commands, hw)
    return found["checked"][0], found["bad"][0], found["text"]


def test_a_well_timed_sequence_keeps_every_timing() -> None:
    # ACT b0 at 0, b1 at 9 (tRRD_S); RD b0 at 22 (tRCD), RD b1 at 31 (tRCD; tCCD_S after 22); WR b0 at 43
    # (tRTW 12 after the RD at 31); its data ends 43 + 16 + 4 = 63: RD b1 at 67 (tWTR_S 4, other bank group).
    # PRE b0 at 87 (tWR: 63 + 24; tRAS: 52), ACT b0 at 109 (tRP: 87 + 22; tRC: 74). PRE b1 at 79 (tRTP: 67 + 12),
    # PRE b0 at 161 (tRAS: 109 + 52), REF at 183 (tRP), ACT b2 at 743 (tRFC: 183 + 560).
    checked, bad, text = _broken(_commands(
        (0, "ACT", 0, 5), (9, "ACT", 1, 7), (22, "RD", 0, 5), (31, "RD", 1, 7), (43, "WR", 0, 5), (67, "RD", 1, 7),
        (79, "PRE", 1, 7), (87, "PRE", 0, 5), (109, "ACT", 0, 6), (161, "PRE", 0, 6), (183, "REF", 0, 0),
        (743, "ACT", 2, 1)))
    assert bad == 0, text
    assert checked > 0


@pytest.mark.parametrize(("rows", "expected"), [
    # a column command 21 after its ACT: tRCD is 22
    ([(0, "ACT", 0, 0), (21, "RD", 0, 0)], ["tRCD"]),
    ([(0, "RD", 0, 0)], ["closed bank"]),
    ([(0, "ACT", 0, 0), (22, "RD", 0, 1)], ["row not open"]),
    # PRE at 60 (tRAS met), ACT 21 later: tRP is 22 (tRC 81 ≥ 74 met)
    ([(0, "ACT", 0, 0), (60, "PRE", 0, 0), (81, "ACT", 0, 1)], ["tRP"]),
    # PRE at 50 breaks tRAS (52); the ACT tRP later at 72 breaks tRC (74)
    ([(0, "ACT", 0, 0), (50, "PRE", 0, 0), (72, "ACT", 0, 1)], ["tRAS", "tRC"]),
    # PRE 11 after a read: tRTP is 12
    ([(0, "ACT", 0, 0), (45, "RD", 0, 0), (56, "PRE", 0, 0)], ["tRTP"]),
    # a write at 22 ends its data at 42: PRE at 65 is before 42 + tWR 24 = 66
    ([(0, "ACT", 0, 0), (22, "WR", 0, 0), (65, "PRE", 0, 0)], ["tWR"]),
    ([(0, "ACT", 0, 0), (100, "ACT", 0, 1)], ["with a row open"]),
    # banks 0 and 1 are in different bank groups: column commands 3 apart (tCCD_S 4)
    ([(0, "ACT", 0, 0), (9, "ACT", 1, 0), (31, "RD", 0, 0), (34, "RD", 1, 0)], ["tCCD_S"]),
    # banks 0 and 2 share bank group 0: column commands 7 apart (tCCD_L 8)
    ([(0, "ACT", 0, 0), (11, "ACT", 2, 0), (33, "RD", 0, 0), (40, "RD", 2, 0)], ["tCCD_L"]),
    ([(0, "ACT", 0, 0), (8, "ACT", 1, 0)], ["tRRD_S"]),
    ([(0, "ACT", 0, 0), (10, "ACT", 2, 0)], ["tRRD_L"]),
    # five ACTs 9 apart (same-group pairs 18 apart): the fifth at 36 is within tFAW 48 of the first
    ([(0, "ACT", 0, 0), (9, "ACT", 1, 0), (18, "ACT", 2, 0), (27, "ACT", 3, 0), (36, "ACT", 4, 0)], ["tFAW"]),
    # write data of bank 0 ends at 42: a read of bank 1 (other group) at 45 is before 42 + tWTR_S 4
    ([(0, "ACT", 0, 0), (9, "ACT", 1, 0), (22, "WR", 0, 0), (45, "RD", 1, 0)], ["tWTR_S"]),
    # ... a read of bank 2 (same group) at 53 is before 42 + tWTR_L 12 (and after 42 + tWTR_S)
    ([(0, "ACT", 0, 0), (11, "ACT", 2, 0), (22, "WR", 0, 0), (53, "RD", 2, 0)], ["tWTR_L"]),
    # a write 11 after a read: tRTW is 12
    ([(0, "ACT", 0, 0), (22, "RD", 0, 0), (33, "WR", 0, 0)], ["tRTW"]),
    ([(0, "ACT", 0, 0), (100, "REF", 0, 0)], ["REF with a bank of its rank open"]),
    # REF 21 after the last PRE (tRP 22; tRC after the ACT met: 81 ≥ 74)
    ([(0, "ACT", 0, 0), (60, "PRE", 0, 0), (81, "REF", 0, 0)], ["tRP"]),
    # an ACT 559 after a REF: tRFC is 560
    ([(0, "REF", 0, 0), (559, "ACT", 0, 0)], ["tRFC"]),
    # by cycle 10 tREFI, at least 10 − 8 = 2 refreshes are due: none issued
    ([(10 * REFI, "ACT", 0, 0)], ["refresh 1", "refresh 2"]),
])
def test_each_timing_broken_by_one_cycle_is_caught(rows: list[tuple[int, str, int, int]],
                                                   expected: list[str]) -> None:
    _, bad, text = _broken(_commands(*rows))
    assert bad == len(expected), text
    for fragment, found in zip(expected, sorted(text, key=lambda t: [f in t for f in expected].index(True))):
        assert fragment in found


def test_refreshes_due_and_issued_in_time_pass() -> None:
    # by 10 tREFI two refreshes are due (eight may be postponed): issued at 1 and 2 tREFI, nothing is late
    _, bad, text = _broken(_commands((REFI, "REF", 0, 0), (2 * REFI, "REF", 0, 0), (10 * REFI, "ACT", 0, 0)))
    assert bad == 0, text
    # the second one 9 tREFI late (at 11 tREFI > (2 + 8) tREFI), the trace ending at 12 tREFI: refreshes 2, 3 and
    # 4 are due and late or missing (4 due = 12 − 8)
    _, bad, text = _broken(_commands((REFI, "REF", 0, 0), (11 * REFI, "REF", 0, 0), (12 * REFI, "ACT", 0, 0)))
    assert bad == 3, text


def test_commands_match_the_bursts_and_counters() -> None:
    commands = _commands((0, "ACT", 0, 0), (22, "RD", 0, 0))
    counters = {"activates": 1.0, "precharges": 0.0, "refreshes": 0.0, "read_bursts": 1.0, "write_bursts": 0.0}
    # the read's data starts CL = 22 after its RD: DRAM cycle 44 = core cycle 44 / 8 = 5.5, recorded as 5
    records = {"op": np.array([Op.READ], np.uint8), "start_cycle": np.array([5])}
    found: list[str] = []

    def add(rule: str, bad: np.ndarray, describe: object) -> None:
        found.extend(describe(int(i)) for i in np.flatnonzero(bad))  # type: ignore[operator]

    commands_rule(add, commands, HW, records, counters)
    assert found == []
    commands_rule(add, commands, HW, {"op": records["op"], "start_cycle": np.array([8])}, counters)
    assert len(found) == 1 and "starts at cycle 8" in found[0]
    found.clear()
    commands_rule(add, commands, HW, records, {**counters, "activates": 0.0})
    assert found == ["1 ACT commands issued, the trace's activates counter says 0"]
    found.clear()
    commands_rule(add, commands, HW, {"op": np.zeros(0, np.uint8), "start_cycle": np.zeros(0, np.int64)}, counters)
    assert found == ["1 RD commands but 0 read burst records"]


@pytest.mark.parametrize("dram", [
    {"page_policy": "open", "scheduler": "frfcfs"},
    {"page_policy": "closed", "scheduler": "fcfs", "channels": 2, "ranks": 2},
])
def test_simulated_jedec_traces_keep_every_timing(tmp_path: Path, dram: dict[str, object]) -> None:
    """AlexNet (small input) on the jedec model, open and closed page, one and two channels and ranks: every
    command the trace holds keeps the device's timing and matches the bursts and counters."""
    path = tmp_path / "hw.yaml"
    path.write_text(_yaml(**dram))
    report = check_network(small_zoo_graph("alexnet"), str(path), trace_path=tmp_path / "t.h5")
    assert report.ok
    with hwsim.trace.open(tmp_path / "t.h5") as trace:
        commands = trace.dram_commands()
        assert commands is not None
        kinds = np.bincount(commands["command"], minlength=5)
        assert all(kinds[DRAM_COMMAND_NAMES.index(k)] > 0 for k in ("ACT", "PRE", "RD", "WR"))
        result = {r.rule: r for r in validate_trace(trace).rules}
    assert result["jedec"].checked > len(commands) and result["jedec"].ok
    assert result["dram_commands"].checked > 0 and result["dram_commands"].ok
