"""A trace's DRAM traffic in the input formats of DRAM simulators, to replay hwsim's bursts in the tool one trusts.

The trace's `dram` level has one record per burst (its data cycles, op, word address); each becomes one
request of the burst's aligned byte address, in the order the bursts moved their data:

- Ramulator 2 (`LoadStoreTrace` frontend): one line `LD 0xADDR` (read) or `ST 0xADDR` (write) per
  request, two space-separated tokens; the frontend issues them as fast as the memory accepts.
- DRAMsim3 (trace frontend): one line `0xADDR READ|WRITE CYCLE` per request, CYCLE the memory clock
  cycle it is added at (non-decreasing). hwsim issues a burst at its data cycle less an unloaded
  access (jedec: tRCD + CL for reads, tRCD + CWL for writes; simple: the latency), on the DRAM clock
  (jedec: the device's command clock; simple: the core clock).
- DRAMPower (command trace, `<timestamp>,<command>,<bank>` per line, timestamp in DRAM clock cycles,
  bank within the rank; one file per channel and rank): the commands the jedec model issued, as the trace
  keeps them. A trace without them (written before traces held commands) has them rebuilt from the
  records and the address map: RD/WR at the data cycle less CL/CWL; an
  ACT tRCD before the first burst of a row its bank has not open (a PRE tRP before that if another row
  was open; closed page: a PRE after each bank's last burst to a row, tRTP after a read, CWL + tBL + tWR
  after a write); every tREFI a PREA and a REF. It needs the jedec model (banks and rows).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hwsim.errors import HwsimError
from hwsim.hardware.dram import dram_kind
from hwsim.hardware.jedec import Timing
from hwsim.hardware.kinds import DRAM_ADDRESS_MAPS
from hwsim.hardware.loader import from_dict
from hwsim.hardware.schema import Accelerator
from hwsim.trace.reader import Trace
from hwsim.vocab import DRAM_COMMAND_NAMES, DramCommand, Op

LINES_PER_WRITE = 1 << 16  # lines formatted and written at a time


@dataclass(frozen=True)
class DramRequests:
    """Every DRAM burst of a trace in the order its data moved: aligned byte address, write or read, and the
    DRAM clock cycle its data started."""

    address: np.ndarray
    is_write: np.ndarray
    data_cycle: np.ndarray
    hardware: Accelerator
    commands: np.ndarray | None = None  # the DRAM commands the trace keeps (DRAM_COMMAND_DTYPE; None: none kept)

    def __len__(self) -> int:
        return len(self.address)


def dram_requests(trace: Trace) -> DramRequests:
    """The trace's DRAM bursts as requests (see the module doc)."""
    if "dram" not in trace.levels:
        raise HwsimError(f"{trace.path}: the trace has no dram level; simulate with it recorded "
                         "(--trace-levels including dram)")
    hw = from_dict(json.loads(trace.attrs["hardware_json"]), where=f"trace {trace.path}: hardware_json")
    burst = hw.dram.burst_bytes
    parts = [(b["start_cycle"], b["op"] != Op.READ, b["address"] * trace.layer_word_bytes[b["layer"]],
              b["end_cycle"] - b["start_cycle"]) for b in trace.records("dram")]
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return DramRequests(empty, np.zeros(0, dtype=bool), empty, hw)
    start, is_write, byte_address, _ = (np.concatenate(c) for c in zip(*parts))
    order = np.argsort(start, kind="stable")
    address = byte_address[order] // burst * burst
    commands = trace.dram_commands()
    return DramRequests(address, is_write[order], _dram_cycles(start[order], hw), hw,
                        commands if commands is not None and len(commands) else None)


def _dram_cycles(core_cycles: np.ndarray, hw: Accelerator) -> np.ndarray:
    """Core cycles as cycles of the DRAM clock (the device's command clock; the core clock for the simple model)."""
    clock_hz = dram_kind(hw.dram.model).command_clock_hz(hw)
    if clock_hz == hw.clock_hz:
        return core_cycles.astype(np.int64)
    return np.floor(core_cycles * (clock_hz / hw.clock_hz)).astype(np.int64)


def _write_lines(path: str | Path, lines: Iterator[str]) -> None:
    """Write `lines` (each with its newline) to `path` through a temporary file renamed into place."""
    tmp = f"{path}.partial"
    with open(tmp, "w", encoding="ascii") as f:
        f.writelines(lines)
    os.replace(tmp, path)


def _chunks(n: int) -> Iterator[slice]:
    for lo in range(0, n, LINES_PER_WRITE):
        yield slice(lo, min(n, lo + LINES_PER_WRITE))


def write_ramulator(requests: DramRequests, path: str | Path) -> int:
    """Ramulator 2 LoadStoreTrace lines; the number of requests written."""
    def lines() -> Iterator[str]:
        for s in _chunks(len(requests)):
            yield "".join(f"{'ST' if w else 'LD'} 0x{a:x}\n"
                          for a, w in zip(requests.address[s].tolist(), requests.is_write[s].tolist()))
    _write_lines(path, lines())
    return len(requests)


def issue_cycles(requests: DramRequests) -> np.ndarray:
    """The DRAM cycle each request is issued at: its data cycle less an unloaded access, non-decreasing."""
    dram = requests.hardware.dram
    kind = dram_kind(dram.model)
    latency = np.where(requests.is_write, kind.issue_latency_cycles(dram, True), kind.issue_latency_cycles(dram, False))
    return np.maximum.accumulate(np.maximum(requests.data_cycle - latency, 0)) if len(requests) else latency


def write_dramsim3(requests: DramRequests, path: str | Path) -> int:
    """DRAMsim3 trace lines; the number of requests written."""
    cycles = issue_cycles(requests)

    def lines() -> Iterator[str]:
        for s in _chunks(len(requests)):
            yield "".join(f"0x{a:x} {'WRITE' if w else 'READ'} {c}\n" for a, w, c in
                          zip(requests.address[s].tolist(), requests.is_write[s].tolist(), cycles[s].tolist()))
    _write_lines(path, lines())
    return len(requests)


def drampower_paths(path: str | Path, channels: int, ranks: int) -> list[list[Path]]:
    """The command trace file of each channel and rank: `path` itself for one, else NAME.chC.rR.SUFFIX."""
    p = Path(path)
    if channels * ranks == 1:
        return [[p]]
    return [[p.with_name(f"{p.stem}.ch{c}.r{r}{p.suffix}") for r in range(ranks)] for c in range(channels)]


def write_drampower(requests: DramRequests, path: str | Path) -> list[Path]:
    """DRAMPower command traces, one per channel and rank; the files written."""
    hw = requests.hardware
    dram = hw.dram
    if dram.device is None or dram.timing is None:
        raise HwsimError(f"{hw.name}: a DRAMPower command trace needs the jedec DRAM model's banks and rows; "
                         "simulate on a config with dram.model: jedec (e.g. dram.preset: ddr4-3200-x16)")
    if requests.commands is not None:
        return _write_recorded(requests.commands, path, dram.channels, dram.ranks, dram.device.banks)
    where = DRAM_ADDRESS_MAPS.get(dram.address_map)(dram).locate(requests.address // dram.device.burst_bytes)
    t = Timing.of(dram.timing)
    column = requests.data_cycle - np.where(requests.is_write, t.cwl, t.cl)
    end = int(column.max()) + t.cl + t.bl if len(requests) else 0
    files = drampower_paths(path, dram.channels, dram.ranks)
    banks = dram.device.banks
    for ch in range(dram.channels):
        for rank in range(dram.ranks):
            mine = np.flatnonzero((where.channel == ch) & (where.rank == rank))
            commands = _commands(column[mine], requests.is_write[mine], where.bank[mine] % banks, where.row[mine],
                                 t, dram.page_policy == "open", end)
            _write_lines(files[ch][rank], (f"{c},{name},{b}\n" for c, name, b in commands))
    return [f for rank_files in files for f in rank_files]


def _write_recorded(commands: np.ndarray, path: str | Path, channels: int, ranks: int, banks: int) -> list[Path]:
    """The commands the model issued, one file per channel and rank, in cycle order (a cycle's commands in
    the order PRE, REF, ACT, RD, WR)."""
    files = drampower_paths(path, channels, ranks)
    ordered = commands[np.lexsort((commands["command"], commands["cycle"]))]
    for ch in range(channels):
        for rank in range(ranks):
            mine = ordered[(ordered["channel"] == ch) & (ordered["rank"] == rank)]
            bank = np.where(mine["command"] == DramCommand.REF, 0, mine["bank"].astype(np.int64) % banks)
            _write_lines(files[ch][rank], (f"{c},{DRAM_COMMAND_NAMES[k]},{b}\n" for c, k, b in
                                           zip(mine["cycle"].tolist(), mine["command"].tolist(), bank.tolist())))
    return [f for rank_files in files for f in rank_files]


def _commands(column: np.ndarray, is_write: np.ndarray, bank: np.ndarray, row: np.ndarray, t: Timing,
              open_page: bool, end: int) -> list[tuple[int, str, int]]:
    """The commands of one rank's bursts (in data order) and its refreshes up to cycle `end`, by timestamp."""
    commands: list[tuple[int, int, str, int]] = []  # (cycle, order within the cycle, command, bank)
    open_row: dict[int, int] = {}
    refresh = t.refi
    next_same_bank_row = _next_row_of_bank(bank, row)
    for i, (c, w, b, r) in enumerate(zip(column.tolist(), is_write.tolist(), bank.tolist(), row.tolist())):
        while refresh <= c:
            if open_row:
                commands.append((refresh, 0, "PREA", 0))
                open_row.clear()
            commands.append((refresh, 1, "REF", 0))
            refresh += t.refi
        if open_row.get(b) != r:
            if b in open_row:
                commands.append((c - t.rcd - t.rp, 2, "PRE", b))
            commands.append((c - t.rcd, 3, "ACT", b))
            open_row[b] = r
        commands.append((c, 4, "WR" if w else "RD", b))
        if not open_page and next_same_bank_row[i] != r:
            commands.append((c + (t.cwl + t.bl + t.wr if w else t.rtp), 5, "PRE", b))
            del open_row[b]
    while refresh <= end:
        commands.append((refresh, 1, "REF", 0))
        refresh += t.refi
    commands.sort(key=lambda x: (x[0], x[1]))
    return [(max(0, c), name, b) for c, _, name, b in commands]


def _next_row_of_bank(bank: np.ndarray, row: np.ndarray) -> np.ndarray:
    """For each burst the row of the next burst to the same bank (−1: none)."""
    out = np.full(len(bank), -1, dtype=np.int64)
    order = np.argsort(bank, kind="stable")
    same = bank[order][1:] == bank[order][:-1]
    out[order[:-1][same]] = row[order][1:][same]
    return out


__all__ = [
    "DramRequests",
    "dram_requests",
    "drampower_paths",
    "issue_cycles",
    "write_drampower",
    "write_dramsim3",
    "write_ramulator",
]
