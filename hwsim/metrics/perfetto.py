"""Chrome / Perfetto trace-event JSON from an hwsim trace (loadable in ui.perfetto.dev and chrome://tracing).

One process, the accelerator, with one thread (track) per component: the
layers, each DRAM channel, the L2, the GLB, the line buffers, each NoC bus,
the RFs and the PE array. A multi-core trace has a process per core besides (its works, GLB, line buffer, NoC
buses, RFs and PE array as its threads), the accelerator's process keeping the shared units and a thread per
link direction. Every access record becomes a complete event
("ph": "X", times in microseconds of accelerator time) named op:operand with
the layer, step, address and words as arguments. Counter tracks ("ph": "C")
carry each level's bandwidth per time bin and each buffer's occupancy.

The file is written as the records stream past (bounded memory) and at most
`max_events` access events are exported, the earliest first per level; the
metadata says how many were left out.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

import numpy as np

from hwsim.metrics.derive import bandwidth
from hwsim.trace.reader import Code, Trace, Window
from hwsim.vocab import BANDWIDTH_LEVELS, TRACE_LEVELS

PID = 1
COUNTER_BINS = 400
TRACKS = ("layers", *TRACE_LEVELS)  # tid = 1 + index (DRAM: per channel)
CHANNEL_TID0 = 100  # DRAM channel c is tid CHANNEL_TID0 + c
BUS_TID0 = 200  # NoC bus of operand o is tid BUS_TID0 + o
LINK_TID0 = 300  # the link direction of unit u is tid LINK_TID0 + u (in the accelerator's process)
CORE_PID0 = 2  # with several cores, core k's process is CORE_PID0 + k


def write_perfetto(trace: Trace, out: IO[str], layer: Code | None = None, window_cycles: Window | None = None,
                   max_events: int = 1_000_000) -> dict[str, int]:
    """Write the trace-event JSON to `out`; returns {"events": written access events, "dropped": left out}."""
    clock_hz = trace.clock_hz
    us_per_cycle = 1e6 / clock_hz
    hw = json.loads(trace.attrs.get("hardware_json", "{}"))
    dram = hw.get("dram", {})
    channels = int(dram.get("channels", 1))
    burst_words = max(1, int(dram.get("burst_bytes", 64)) * 8 // int(trace.attrs.get("word_bits", 8)))
    out.write('{"displayTimeUnit": "ns", "otherData": ')
    json.dump({"network": trace.attrs.get("network"), "hardware": trace.attrs.get("hardware"),
               "mapper": trace.attrs.get("mapper"), "clock_hz": clock_hz, "time_unit": "us of accelerator time"},
              out)
    out.write(', "traceEvents": [\n')
    first = True

    def emit(event: dict[str, Any]) -> None:
        nonlocal first
        out.write(("" if first else ",\n") + json.dumps(event, separators=(",", ":")))
        first = False

    places = _Places(trace)
    for event in _metadata_events(trace, places, channels):
        emit(event)
    for event in _layer_events(trace, us_per_cycle, places):
        emit(event)
    written = dropped = 0
    levels = [level for level in trace.levels if trace.n_records(level)]
    for i, level in enumerate(levels):
        budget = (max_events - written) // (len(levels) - i)  # what earlier levels left over is shared on
        kept = 0
        for block in trace.records(level, layer, None, None, window_cycles):
            take = block[:max(0, budget - kept)]
            dropped += len(block) - len(take)
            kept += len(take)
            for event in _access_events(trace, level, take, us_per_cycle, channels, burst_words, places):
                emit(event)
            written += len(take)
    for event in _counter_events(trace, us_per_cycle):
        emit(event)
    emit({"ph": "M", "name": "hwsim_export", "pid": PID, "tid": 0,
          "args": {"access_events": written, "left_out": dropped}})
    out.write("\n]}\n")
    return {"events": written, "dropped": dropped}


class _Places:
    """Which process each unit's and each layer's events go to: the accelerator's, or with several cores their
    core's."""

    def __init__(self, trace: Trace) -> None:
        hw = json.loads(trace.attrs.get("hardware_json", "{}"))
        self.cores = tuple(str(c.get("name", f"core{k}")) for k, c in enumerate(hw.get("cores") or []))
        several = len(self.cores) > 1
        self.pids = [CORE_PID0 + self.cores.index(name.split(".", 1)[0])
                     if several and "." in name and ">" not in name and name.split(".", 1)[0] in self.cores else PID
                     for name in trace.unit_names] or [PID]
        self.layer_pids = [CORE_PID0 + int(c) if several else PID for c in trace.layer_cores.tolist()]


def _metadata_events(trace: Trace, places: _Places, channels: int) -> Iterator[dict[str, Any]]:
    """The processes' and threads' names: the accelerator's (and each core's) tracks, DRAM channels, links."""
    yield {"ph": "M", "name": "process_name", "pid": PID, "tid": 0,
           "args": {"name": f"{trace.attrs.get('hardware')} running {trace.attrs.get('network')}"}}
    for pid in sorted(set(places.pids)):
        if pid != PID:
            yield {"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                   "args": {"name": f"core {places.cores[pid - CORE_PID0]}"}}
        for i, track in enumerate(TRACKS):
            if track not in ("dram", "noc", "link"):
                yield {"ph": "M", "name": "thread_name", "pid": pid, "tid": 1 + i, "args": {"name": track}}
        for o, operand in enumerate(trace.operands):
            yield {"ph": "M", "name": "thread_name", "pid": pid, "tid": BUS_TID0 + o,
                   "args": {"name": f"noc {operand} bus"}}
    for c in range(channels):
        yield {"ph": "M", "name": "thread_name", "pid": PID, "tid": CHANNEL_TID0 + c,
               "args": {"name": f"dram channel {c}"}}
    for u, name in enumerate(trace.unit_names):
        if ">" in name:
            yield {"ph": "M", "name": "thread_name", "pid": PID, "tid": LINK_TID0 + u, "args": {"name": f"link {name}"}}


def _layer_events(trace: Trace, us_per_cycle: float, places: _Places) -> Iterator[dict[str, Any]]:
    """One complete event per layer on its core's layers track, spanning its records."""
    n = len(trace.layers)
    first = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    last = np.full(n, -1, dtype=np.int64)
    for level in trace.levels:
        for block in trace.records(level):
            np.minimum.at(first, block["layer"], block["start_cycle"])
            np.maximum.at(last, block["layer"], block["end_cycle"])
    tid = 1 + TRACKS.index("layers")
    for i, name in enumerate(trace.layers):
        if last[i] >= 0:
            yield {"ph": "X", "name": name, "cat": "layer", "pid": places.layer_pids[i], "tid": tid,
                   "ts": first[i] * us_per_cycle, "dur": (last[i] - first[i]) * us_per_cycle}


def _access_events(trace: Trace, level: str, block: np.ndarray, us_per_cycle: float, channels: int,
                   burst_words: int, places: _Places) -> Iterator[dict[str, Any]]:
    ops, operands, layers, units = trace.ops, trace.operands, trace.layers, trace.unit_names
    for start, end, op, operand, layer, step, address, words, unit in block.tolist():
        if level == "dram":
            tid = CHANNEL_TID0 + (address // burst_words) % channels
        elif level == "noc":
            tid = BUS_TID0 + operand
        elif level == "link":
            tid = LINK_TID0 + unit
        else:
            tid = 1 + TRACKS.index(level)
        pid = places.pids[unit] if unit < len(places.pids) else PID
        yield {"ph": "X", "name": f"{ops[op]}:{operands[operand]}", "cat": level, "pid": pid, "tid": tid,
               "ts": start * us_per_cycle, "dur": max(0, end - start) * us_per_cycle,
               "args": {"layer": layers[layer], "step": step, "address": address, "words": words,
                        "unit": units[unit]}}


def _counter_events(trace: Trace, us_per_cycle: float) -> Iterator[dict[str, Any]]:
    """Bandwidth (bytes per µs = MB/s) per memory level per bin, and occupancy (bytes) per buffer."""
    ends = [int(b["end_cycle"].max()) for level in trace.levels for b in trace.records(level) if len(b)]
    bin_cycles = max(1, max(ends, default=1) // COUNTER_BINS)
    for level in BANDWIDTH_LEVELS:
        if level in trace.levels and trace.n_records(level):
            starts, moved_bytes = bandwidth(trace, level, bin_cycles)
            for cycle, b in zip(starts.tolist(), moved_bytes.tolist()):
                yield {"ph": "C", "name": f"{level} bandwidth (MB/s)", "pid": PID, "ts": cycle * us_per_cycle,
                       "args": {"value": b / (bin_cycles * us_per_cycle)}}
    events = trace.occupancy()
    for b, name in enumerate(trace.buffers):
        mine = events[events["buffer"] == b]
        for cycle, held in zip(mine["cycle"].tolist(), mine["bytes"].tolist()):
            yield {"ph": "C", "name": f"{name} occupancy (bytes)", "pid": PID, "ts": cycle * us_per_cycle,
                   "args": {"value": held}}
