"""hwsim's JEDEC DRAM model beside Ramulator 2: the same request traces timed by both, side by side in one run.

Memory system (both sides): DDR4-2400 (Ramulator's DDR4_2400R, hwsim's ddr4-2400-x16 preset), 8 Gb x16 devices,
one channel of one rank (four devices, 64 bits, 64-byte BL8 bursts), address map RoCoBaRaCh (row, column, bank,
bank group, rank, channel from the most significant bit; the bank group is the lowest bank bit), FR-FCFS, open
page, all-bank refresh, read and write queues of 32 (writes drained from 80 % down to 20 % of their queue). hwsim
runs `configs/eyeriss-v1-ddr.yaml` through `hwsim dram replay` (`hwsim.flows.dram_replay`); Ramulator 2 runs
its Generic controller with its FRFCFS scheduler, OpenRowPolicy and AllBank refresh manager, fed by its
LoadStoreTrace frontend (every request at once, as fast as the controller takes them).

Traces:
- synthetic, REQUESTS requests of 64 B each within the rank's 4 GiB: sequential reads; random reads (seed 1);
  reads and writes alternating over sequential addresses; random reads and writes, half each (seed 2); 16-byte
  requests, four to each 64-byte line, sequential;
- AlexNet on eyeriss-v1-ddr (simulated, DRAM records only): each layer's bursts as requests in the order their
  data moved, one trace per layer, and the network as the sum of its layers.

Both report DRAM command-clock cycles until the last request is done: hwsim until the last data ends; Ramulator
until its last request completes (a read when its data has returned, a write when its WR issued). Judged: every
row within ±15 %.

Ramulator 2 is not installed by this tool: build v2.0a once in a throwaway folder (default
~/.cache/hwsim-peers/ramulator2, `--ramulator DIR`) with two local changes, and give DIR/run.sh TRACE that prints
its cycles: a RoCoBaRaCh address mapper (v2.0a ships RoBaRaCoCh, ChRaBaRoCo and MOP4CLXOR) and a run that lasts
until every request has completed (v2.0a stops once the frontend has queued its last request). Its dependencies
come from Debian (cmake, g++, libyaml-cpp-dev, libspdlog-dev) and p-ranav/argparse v2.9's header.

Usage: python tools/ramulator_peer.py [--requests 100000] [--ramulator DIR] [--only synthetic|alexnet]
"""

from __future__ import annotations

import argparse
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

import hwsim.trace
from hwsim.flows.dram_replay import read_requests, replay
from hwsim.flows.simulate import simulate_network
from hwsim.hardware import load_config
from hwsim.hardware.schema import Accelerator
from hwsim.vocab import Op

HW = "eyeriss-v1-ddr"
TOLERANCE = 0.15
DEFAULT_RAMULATOR = Path.home() / ".cache" / "hwsim-peers" / "ramulator2"
LINE = 64


def synthetic(requests: int, capacity_bytes: int) -> dict[str, list[str]]:
    """The synthetic traces' lines, by name."""
    lines = capacity_bytes // LINE
    rand = random.Random(1)
    rand_rw = random.Random(2)
    return {
        "sequential reads": [f"LD 0x{LINE * k:x}\n" for k in range(requests)],
        "random reads": [f"LD 0x{rand.randrange(lines) * LINE:x}\n" for _ in range(requests)],
        "read/write alternating": [f"{'ST' if k % 2 else 'LD'} 0x{LINE * k:x}\n" for k in range(requests)],
        "random read/write": [f"{'ST' if rand_rw.random() < 0.5 else 'LD'} 0x{rand_rw.randrange(lines) * LINE:x}\n"
                              for _ in range(requests)],
        "16-byte requests to one line": [f"LD 0x{16 * k:x}\n" for k in range(requests)],
    }


def alexnet_layers(folder: Path) -> dict[str, list[str]]:
    """AlexNet simulated on HW, each layer's DRAM bursts as LoadStoreTrace lines in data order."""
    trace_path = folder / "alexnet.h5"
    simulate_network("alexnet", HW, trace_path=trace_path, levels=frozenset({"dram"}))
    out = {}
    with hwsim.trace.open(trace_path) as trace:
        for k, name in enumerate(trace.layers):
            blocks = list(trace.records("dram", layer=name))
            if not blocks:
                continue
            rec = np.concatenate(blocks)
            rec = rec[np.argsort(rec["start_cycle"], kind="stable")]
            byte_address = rec["address"] * int(trace.layer_word_bytes[k]) // LINE * LINE
            out[f"alexnet {name}"] = [f"{'LD' if op == Op.READ else 'ST'} 0x{a:x}\n"
                                      for op, a in zip(rec["op"].tolist(), byte_address.tolist())]
    return out


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _timed(run: Callable[[], int]) -> tuple[int, float]:
    before = _cpu_seconds()
    return run(), _cpu_seconds() - before


def _replayed_cycles(trace: Path, hw: Accelerator) -> int:
    """hwsim's DRAM model replaying a Ramulator trace file: the cycle its last request ends."""
    return replay(read_requests(trace, "ramulator"), hw).end_cycles


def ramulator_cycles(run_sh: Path, trace: Path) -> int:
    done = subprocess.run([str(run_sh), str(trace)], capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{run_sh} {trace} failed: {done.stderr.strip()[-400:]}")
    return int(done.stdout.split()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=100_000, help="requests per synthetic trace")
    parser.add_argument("--ramulator", type=Path, default=DEFAULT_RAMULATOR, help="folder holding run.sh")
    parser.add_argument("--only", choices=("synthetic", "alexnet"), default=None)
    args = parser.parse_args()
    run_sh = args.ramulator / "run.sh"
    if not run_sh.is_file():
        raise SystemExit(f"{run_sh} not found: build Ramulator 2 there first (see this tool's docstring)")
    hw = load_config(HW)
    device = hw.dram.device
    assert device is not None
    capacity = hw.dram.channels * hw.dram.ranks * device.banks * device.rows_per_bank * device.row_bytes
    with tempfile.TemporaryDirectory(prefix="hwsim-ramulator-") as tmp:
        folder = Path(tmp)
        traces: dict[str, list[str]] = {}
        if args.only != "alexnet":
            traces.update(synthetic(args.requests, capacity))
        if args.only != "synthetic":
            started = time.time()
            traces.update(alexnet_layers(folder))
            print(f"AlexNet simulated on {HW} in {time.time() - started:.1f} s wall")
        print(f"{'trace':34s} {'requests':>9s} {'hwsim cycles':>13s} {'Ramulator':>11s} {'ratio':>6s}       "
              f"{'hwsim CPU-s':>11s} {'Ram. CPU-s':>10s}")
        out: list[bool] = []
        network = [0, 0]
        for name, lines in traces.items():
            path = folder / f"{len(out)}.trace"
            path.write_text("".join(lines))
            ours, our_cpu = _timed(partial(_replayed_cycles, path, hw))
            theirs, their_cpu = _timed(partial(ramulator_cycles, run_sh, path))
            ratio = ours / theirs
            ok = abs(ratio - 1) <= TOLERANCE
            out.append(ok)
            if name.startswith("alexnet"):
                network[0] += ours
                network[1] += theirs
            print(f"{name:34s} {len(lines):9,d} {ours:13,d} {theirs:11,d} {ratio:6.3f} {'ok ' if ok else 'OUT'}   "
                  f"{our_cpu:11.2f} {their_cpu:10.2f}")
        if network[1]:
            ratio = network[0] / network[1]
            ok = abs(ratio - 1) <= TOLERANCE
            out.append(ok)
            print(f"{'alexnet (sum of layers)':34s} {'':9s} {network[0]:13,d} {network[1]:11,d} {ratio:6.3f} "
                  f"{'ok ' if ok else 'OUT'}")
    print(f"{sum(out)}/{len(out)} within ±{TOLERANCE:.0%}")
    return 0 if all(out) else 1


if __name__ == "__main__":
    sys.exit(main())
