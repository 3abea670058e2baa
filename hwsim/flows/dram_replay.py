"""Replaying a DRAM request trace on a config's DRAM model: what `hwsim dram replay` prints.

Two request formats, the ones `hwsim trace export` writes and the DRAM simulators read:

- Ramulator 2's `LoadStoreTrace`: `LD ADDR` or `ST ADDR` per line (ADDR in hex with 0x, or decimal); every request
  is made at cycle 0, as Ramulator's frontend issues them as fast as the memory accepts.
- DRAMsim3's trace: `ADDR OP CYCLE` per line (OP READ or WRITE, or DRAMsim3's other write names), each request
  made at CYCLE of the DRAM clock; cycles must not decrease.

Each request moves one burst of the config's DRAM (the address rounded down to its burst), booked on a fresh model
in file order, in cycles of the DRAM's command clock (the core clock for the simple model). The result is when the
last data ended, the bandwidth over that time and, where the model keeps them, row hits, misses and conflicts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import simpy

from hwsim.errors import HwsimError
from hwsim.hardware.dram import dram_kind
from hwsim.hardware.schema import Accelerator
from hwsim.sim.dram import JedecDram, build_dram

FORMATS = ("auto", "ramulator", "dramsim3")
DRAMSIM3_WRITES = frozenset({"WRITE", "write", "P_MEM_WR", "BOFF"})  # what DRAMsim3's trace reader takes as writes
RAMULATOR_OPS = {"LD": False, "ST": True}  # op -> is a write


@dataclass(frozen=True)
class Requests:
    """A request trace: byte addresses, writes, and the DRAM cycle each request is made at."""

    path: str
    format: str
    address: np.ndarray
    is_write: np.ndarray
    cycle: np.ndarray


@dataclass(frozen=True)
class Replay:
    """A request trace timed on a config's DRAM."""

    requests: Requests
    hardware: str
    model: str
    burst_bytes: int
    clock_hz: float  # the clock `end_cycles` counts (the DRAM's command clock; the core's for the simple model)
    end_cycles: int  # when the last request's data ended
    row_hits: int | None  # None: the model keeps no rows
    row_misses: int | None
    row_conflicts: int | None

    @property
    def end_ns(self) -> float:
        return self.end_cycles / self.clock_hz * 1e9

    @property
    def bytes_moved(self) -> int:
        return len(self.requests.address) * self.burst_bytes

    @property
    def bandwidth_gb_s(self) -> float:
        """Bytes moved over the time to the last data, in GB/s (10⁹ bytes per second)."""
        return self.bytes_moved / self.end_ns if self.end_cycles else 0.0

    def as_data(self) -> dict[str, object]:
        r = self.requests
        return {"file": r.path, "format": r.format, "hardware": self.hardware, "model": self.model,
                "requests": len(r.address), "reads": int((~r.is_write).sum()), "writes": int(r.is_write.sum()),
                "burst_bytes": self.burst_bytes, "bytes": self.bytes_moved, "clock_hz": self.clock_hz,
                "cycles": self.end_cycles, "ns": self.end_ns, "bandwidth_gb_s": self.bandwidth_gb_s,
                "row_hits": self.row_hits, "row_misses": self.row_misses, "row_conflicts": self.row_conflicts}


def read_requests(path: str | Path, fmt: str = "auto") -> Requests:
    """The requests of a Ramulator 2 LoadStoreTrace or DRAMsim3 trace file (`fmt` auto: DRAMsim3 if its first line
    has three fields, else Ramulator)."""
    shown = str(path)
    try:
        lines = [(k + 1, line.split()) for k, line in enumerate(Path(path).read_text().splitlines())]
    except OSError as exc:
        raise HwsimError(f"{shown}: cannot read the request trace ({exc.strerror}); give a readable file") from None
    except UnicodeDecodeError:
        raise HwsimError(f"{shown}: not a text file; give a Ramulator 2 LoadStoreTrace or DRAMsim3 trace") from None
    rows = [(k, fields) for k, fields in lines if fields and not fields[0].startswith("#")]
    if not rows:
        raise HwsimError(f"{shown}: no requests; give a trace with one request per line (`LD 0x40` or "
                         "`0x40 READ 0`)")
    if fmt == "auto":
        fmt = "dramsim3" if len(rows[0][1]) == 3 else "ramulator"
    parse = _ramulator_row if fmt == "ramulator" else _dramsim3_row
    address, is_write, cycle = zip(*(parse(shown, k, fields) for k, fields in rows))
    cycles = np.array(cycle, dtype=np.int64)
    if len(cycles) > 1 and np.any(np.diff(cycles) < 0):
        k = rows[int(np.flatnonzero(np.diff(cycles) < 0)[0]) + 1][0]
        raise HwsimError(f"{shown}:{k}: the request's cycle is before the previous one's; a DRAMsim3 trace lists "
                         "requests in cycle order")
    return Requests(shown, fmt, np.array(address, dtype=np.int64), np.array(is_write, dtype=bool), cycles)


def _number(text: str, shown: str, k: int, what: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise HwsimError(f"{shown}:{k}: {what} {text!r} is not a number; write it in hex (0x40) or decimal") from None
    if not 0 <= value < 1 << 62:
        raise HwsimError(f"{shown}:{k}: {what} {value} is out of range; give 0 … 2^62")
    return value


def _ramulator_row(shown: str, k: int, fields: list[str]) -> tuple[int, bool, int]:
    if len(fields) != 2 or fields[0] not in RAMULATOR_OPS:
        raise HwsimError(f"{shown}:{k}: expected `LD ADDR` or `ST ADDR` (Ramulator 2 LoadStoreTrace), got "
                         f"{' '.join(fields)[:80]!r}")
    return _number(fields[1], shown, k, "address"), RAMULATOR_OPS[fields[0]], 0


def _dramsim3_row(shown: str, k: int, fields: list[str]) -> tuple[int, bool, int]:
    if len(fields) != 3:
        raise HwsimError(f"{shown}:{k}: expected `ADDR READ|WRITE CYCLE` (DRAMsim3 trace), got "
                         f"{' '.join(fields)[:80]!r}")
    return (_number(fields[0], shown, k, "address"), fields[1] in DRAMSIM3_WRITES,
            _number(fields[2], shown, k, "cycle"))


def replay(requests: Requests, hw: Accelerator) -> Replay:
    """Book every request, one burst each, in file order on a fresh model of `hw`'s DRAM (module doc)."""
    dram_cfg = hw.dram
    burst = dram_cfg.burst_bytes
    word_bytes = math.gcd(burst, max(1, hw.precision_bits // 8))
    model = build_dram(simpy.Environment(), dram_cfg, word_bytes)  # no core clock: cycles of the DRAM's own
    if isinstance(model, JedecDram):  # a controller's queues: reads by FR-FCFS, writes drained at watermarks
        end = model.serve_queued(requests.address // burst, requests.is_write, requests.cycle)
    else:
        end = 0
        for address, is_write, cycle in zip((requests.address // burst * burst).tolist(),
                                            requests.is_write.tolist(), requests.cycle.tolist()):
            model.book(not is_write, address, burst, cycle, word_bytes)
            end = max(end, model.reserved_end_cycle)
    stats = {name: stat.value for name, stat in model.stats().items()}
    has_banks = dram_kind(dram_cfg.model).prices_commands  # banks with rows; else a row buffer, if any
    kept = {"row_hit_bursts": has_banks or dram_cfg.row_buffer is not None, "row_conflict_bursts": has_banks}
    kept["row_miss_bursts"] = kept["row_hit_bursts"]
    hits, misses, conflicts = (int(stats[k]) if kept[k] and k in stats else None
                               for k in ("row_hit_bursts", "row_miss_bursts", "row_conflict_bursts"))
    return Replay(requests, hw.name, dram_cfg.model, burst, dram_kind(dram_cfg.model).command_clock_hz(hw), end,
                  hits, misses, conflicts)


__all__ = ["FORMATS", "Replay", "Requests", "read_requests", "replay"]
