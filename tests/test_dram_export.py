"""DRAM traffic exported for Ramulator 2, DRAMsim3 and DRAMPower, each read back by a parser written from the tool's
documented trace format (the trace: `ddr_trace` in conftest, AlexNet at 64x64 on eyeriss-v1-ddr)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from conftest import assert_one_line_error, dram_bursts

import hwsim.trace
from hwsim.hardware.loader import load_config

# DRAMPower's command trace (README, "Command Traces"): <timestamp>,<command>,<bank>, timestamp in clock cycles,
# commands from its MemCommand list, bank the target bank (0 for commands not aimed at one bank).
DRAMPOWER_COMMANDS = {"ACT", "RD", "WR", "RDA", "WRA", "PRE", "PREA", "REF", "PDN_F_ACT", "PDN_S_ACT", "PDN_F_PRE",
                      "PDN_S_PRE", "PUP_ACT", "PUP_PRE", "SREN", "SREX", "NOP"}


def parse_ramulator(path: Path) -> list[tuple[bool, int]]:
    """Ramulator 2's LoadStoreTrace: two space-separated tokens per line, LD or ST, then the address (0x… hex or
    decimal)."""
    requests = []
    for line in path.read_text().splitlines():
        tokens = line.split(" ")
        assert len(tokens) == 2 and tokens[0] in ("LD", "ST"), line
        address = int(tokens[1], 16) if tokens[1].lower().startswith("0x") else int(tokens[1])
        requests.append((tokens[0] == "ST", address))
    return requests


def parse_dramsim3(path: Path) -> list[tuple[int, bool, int]]:
    """DRAMsim3's trace: `hex_addr op cycle` per line (>> hex, >> string, >> dec); WRITE, write, P_MEM_WR, BOFF
    are writes, other ops reads; the frontend adds a transaction once its cycle is reached, in file order."""
    requests = []
    for line in path.read_text().splitlines():
        address, op, cycle = line.split()
        requests.append((int(address, 16), op in ("WRITE", "write", "P_MEM_WR", "BOFF"), int(cycle)))
    return requests


def parse_drampower(path: Path, banks: int) -> list[tuple[int, str, int]]:
    """DRAMPower's command trace, checked as its tool checks a trace: timestamps in order, and each command legal
    in its bank's state (no read or write to a closed bank, no activate of an open one)."""
    commands, open_banks, last = [], set(), 0
    for line in path.read_text().splitlines():
        stamp, command, bank = line.split(",")
        t, b = int(stamp), int(bank)
        assert command in DRAMPOWER_COMMANDS and 0 <= b < banks and t >= last, line
        if command == "ACT":
            assert b not in open_banks, f"{line}: bank already open"
            open_banks.add(b)
        elif command in ("RD", "WR"):
            assert b in open_banks, f"{line}: bank closed"
        elif command == "PRE":
            assert b in open_banks, f"{line}: precharge of a closed bank"
            open_banks.discard(b)
        elif command in ("PREA", "REF"):
            assert command == "PREA" or not open_banks, f"{line}: refresh with banks open"
            open_banks.clear()
        commands.append((t, command, b))
        last = t
    return commands


def test_exports_replay_every_burst(cli, ddr_trace: Path, tmp_path: Path) -> None:
    bursts, reads = dram_bursts(ddr_trace)
    ram, ds3, dp = tmp_path / "x.ram", tmp_path / "x.ds3", tmp_path / "x.dp"
    result = cli("trace", "export", str(ddr_trace), "--ramulator", str(ram), "--dramsim3", str(ds3),
                 "--drampower", str(dp))
    assert result.code == 0, result.err
    ramulator = parse_ramulator(ram)
    assert len(ramulator) == bursts and sum(not w for w, _ in ramulator) == reads
    assert all(a % 64 == 0 for _, a in ramulator)  # burst-aligned byte addresses (64-byte bursts)
    dramsim3 = parse_dramsim3(ds3)
    assert len(dramsim3) == bursts and sum(not w for _, w, _ in dramsim3) == reads
    cycles = [c for _, _, c in dramsim3]
    assert cycles == sorted(cycles) and cycles[0] >= 0
    assert [a for a, _, _ in dramsim3] == [a for _, a in ramulator]
    hw = load_config("eyeriss-v1-ddr")
    assert hw.dram.device is not None
    commands = parse_drampower(dp, hw.dram.device.banks)
    assert sum(c in ("RD", "WR") for _, c, _ in commands) == bursts
    assert sum(c == "RD" for _, c, _ in commands) == reads


def test_drampower_activates_match_the_model(ddr_trace: Path, tmp_path: Path) -> None:
    """The exported commands are the model's; rebuilt from the bursts alone (a trace without commands) they open
    a row where the model did: as many ACTs as the model counted either way."""
    from hwsim.metrics.dram_export import dram_requests, write_drampower

    with hwsim.trace.open(ddr_trace) as trace:
        requests = dram_requests(trace)
        activates = sum(layer["activates"] for layer in json.loads(trace.attrs["dram_stats_json"])["layers"].values())
    assert requests.commands is not None
    (path,) = write_drampower(requests, tmp_path / "c.trace")
    assert path.read_text().count(",ACT,") == activates
    (rebuilt,) = write_drampower(dataclasses.replace(requests, commands=None), tmp_path / "r.trace")
    assert rebuilt.read_text().count(",ACT,") == activates


def test_exports_of_a_simple_dram(cli, tmp_path: Path) -> None:
    trace = tmp_path / "s.h5"
    assert cli("simulate", "alexnet", "--input", "64x64", "--hw", "eyeriss-v1", "--out", str(trace),
               "--trace-levels", "dram").code == 0
    bursts, _ = dram_bursts(trace)
    ram = tmp_path / "s.ram"
    assert cli("trace", "export", str(trace), "--ramulator", str(ram)).code == 0
    assert len(parse_ramulator(ram)) == bursts
    # the simple model has no banks or rows to rebuild commands from
    assert_one_line_error(cli("trace", "export", str(trace), "--drampower", str(tmp_path / "p")),
                          "needs the jedec DRAM model")
    assert_one_line_error(cli("trace", "export", str(trace)), "give at least one of --perfetto")
