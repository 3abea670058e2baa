"""The simple and jedec DRAM models side by side: request patterns, AlexNet per layer, and the cost of simulating.

1. Patterns: 20,000 requests of 64 B, all made at cycle 0 in order (a stream the channel queues):
   sequential reads, random reads (uniform over 1 GiB), and sequential reads and writes alternating.
   Each at two peak bandwidths, on matched pairs: the jedec model on a standard device, and the simple
   model with the same peak bandwidth, burst and unloaded latency (tRCD + CL + tBL):
   - 12.8 GB/s: two lpddr4-3200 channels (x32 LPDDR4, as edge-soc-l2);
   - 19.2 GB/s: one ddr4-2400-x16 channel (as eyeriss-v1-ddr).
   Also the simple model as eyeriss-v1 ships it (1.6 GB/s, 50 ns) with in_flight 32 and with in_flight 1
   (latency paid in turn, the timing before latencies overlapped).
   Printed: achieved bandwidth, its fraction of peak, and jedec / simple time.
2. AlexNet on eyeriss-v1-ddr (jedec) and on the same accelerator with the simple model matched as above: per
   layer its DRAM bytes and transactions, the DRAM time (the layer's DRAM transactions, as the jedec run's
   trace has them, requested at once on each model alone) and the simulated layer time.
3. Cost: wall and CPU time of `simulate` of AlexNet with each model, and of ResNet-50 with jedec.

Ratios are measured in one run on one machine; nothing here is asserted.
Usage: python tools/bench_dram.py [--requests N] [--skip-resnet]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import simpy

import hwsim.trace
from hwsim.flows.simulate import simulate_network
from hwsim.hardware import Accelerator, load_config
from hwsim.hardware.loader import Overrides, parse_config, resolve_config
from hwsim.metrics import derive
from hwsim.sim.dram import DramModel, build_dram
from hwsim.vocab import Op

REQUEST_BYTES = 64
RANDOM_SPAN_BYTES = 1 << 30
CLOCK = "1 GHz"  # core clock of the pattern runs: 1 ns cycles


@dataclass(frozen=True)
class Setup:
    """A DRAM to run the patterns on: its label and accelerator."""

    label: str
    hw: Accelerator


def jedec_setup(preset: str, channels: int) -> Accelerator:
    """eyeriss-v1-ddr at a 1 GHz core with `channels` channels of `preset`."""
    text = resolve_config("eyeriss-v1-ddr").read_text()
    values = (("clock", CLOCK), ("dram.preset", preset), ("dram.channels", channels))
    return parse_config(text, "eyeriss-v1-ddr", Overrides("bench", values))


def simple_twin(hw: Accelerator) -> Accelerator:
    """`hw` with the simple model: the jedec DRAM's channels, peak bandwidth, burst and unloaded latency."""
    d = hw.dram
    return replace(hw, dram=replace(d, model="simple", scheduler="fcfs", address_map="burst_interleave",
                                    page_policy="open", ranks=1, preset="", device=None, timing=None, power=None,
                                    source="matched to the jedec device"))


def setups() -> list[tuple[str, Setup, Setup]]:
    """(bandwidth label, simple, jedec) pairs, and eyeriss-v1's own simple DRAM with and without overlap."""
    pairs = []
    for label, preset, channels in (("12.8 GB/s", "lpddr4-3200", 2), ("19.2 GB/s", "ddr4-2400-x16", 1)):
        jedec = jedec_setup(preset, channels)
        pairs.append((label, Setup("simple", simple_twin(jedec)), Setup(f"jedec {preset} x{channels}", jedec)))
    eyeriss = load_config("eyeriss-v1")
    serial = replace(eyeriss, dram=replace(eyeriss.dram, in_flight=1))
    pairs.append(("1.6 GB/s", Setup("simple, in_flight 1", serial), Setup("simple, in_flight 32", eyeriss)))
    return pairs


Pattern = Callable[[DramModel, int], None]


def sequential(dram: DramModel, n: int) -> None:
    for k in range(n):
        dram.reserve_read(REQUEST_BYTES * k, REQUEST_BYTES, 0)


def random_reads(dram: DramModel, n: int) -> None:
    rng = np.random.default_rng(1)
    for k in rng.integers(0, RANDOM_SPAN_BYTES // REQUEST_BYTES, n).tolist():
        dram.reserve_read(REQUEST_BYTES * k, REQUEST_BYTES, 0)


def read_write(dram: DramModel, n: int) -> None:
    for k in range(n):
        (dram.reserve_write if k % 2 else dram.reserve_read)(REQUEST_BYTES * k, REQUEST_BYTES, 0)


PATTERNS: dict[str, Pattern] = {"sequential reads": sequential, "random reads": random_reads,
                                "read/write alternating": read_write}


def run_pattern(setup: Setup, pattern: Pattern, n: int) -> tuple[float, float]:
    """(achieved GB/s, fraction of peak) of `pattern` on `setup`'s DRAM."""
    hw = setup.hw
    dram = build_dram(simpy.Environment(), hw.dram, hw.word_bytes, clock_hz=hw.clock_hz)
    pattern(dram, n)
    seconds = dram.reserved_end_cycle / hw.clock_hz
    achieved = n * REQUEST_BYTES / seconds
    return achieved / 1e9, achieved / (hw.dram.bandwidth_bytes_per_cycle * hw.clock_hz)


def print_patterns(n: int) -> None:
    print(f"1. {n} requests of {REQUEST_BYTES} B made at once: achieved GB/s (fraction of peak)")
    print(f"{'peak':>10} {'pattern':<24} {'model A':<26}{'A':>16} {'model B':<26}{'B':>16} {'B/A time':>9}")
    for label, a, b in setups():
        for name, pattern in PATTERNS.items():
            (ga, fa), (gb, fb) = run_pattern(a, pattern, n), run_pattern(b, pattern, n)
            print(f"{label:>10} {name:<24} {a.label:<26}{ga:>8.2f} ({fa:>5.1%}) {b.label:<26}{gb:>8.2f} "
                  f"({fb:>5.1%}) {ga / gb:>8.2f}x")


def layer_transactions(path: Path) -> dict[str, list[tuple[bool, int, int]]]:
    """Per layer, its DRAM transactions in request order (is write, byte address, bytes): consecutive burst
    records of one schedule step and op form one transaction."""
    out = {}
    with hwsim.trace.open(path) as trace:
        word_bytes = int(trace.attrs["word_bits"]) // 8
        for i, name in enumerate(trace.layers):
            r = trace.select("dram", layer=i)
            if not len(r):
                continue
            key = r["step"] * 4 + r["op"]
            heads = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
            words = np.add.reduceat(r["words"], heads)
            out[name] = [(bool(r["op"][h] != Op.READ), int(r["address"][h]) * word_bytes, int(w) * word_bytes)
                         for h, w in zip(heads.tolist(), words.tolist())]
    return out


def replay_us(hw: Accelerator, transactions: list[tuple[bool, int, int]]) -> float:
    """Time (µs) `hw`'s DRAM takes for `transactions` requested at once, in order."""
    dram = build_dram(simpy.Environment(), hw.dram, hw.word_bytes, clock_hz=hw.clock_hz)
    for is_write, address, nbytes in transactions:
        (dram.reserve_write if is_write else dram.reserve_read)(address, nbytes, 0)
    return dram.reserved_end_cycle / hw.clock_hz * 1e6


def simulate_timed(network: str, hw: Accelerator, path: Path) -> tuple[float, float]:
    """(wall s, CPU s) of simulating `network` on `hw` into the trace `path`."""
    wall, cpu = time.perf_counter(), time.process_time()
    simulate_network(network, hw, trace_path=path)
    return time.perf_counter() - wall, time.process_time() - cpu


def print_alexnet(tmp: Path) -> dict[str, tuple[float, float]]:
    """AlexNet per layer with each model; returns the simulation costs."""
    jedec = load_config("eyeriss-v1-ddr")
    simple = simple_twin(jedec)
    costs = {"simple (eyeriss-v1-ddr twin)": simulate_timed("alexnet", simple, tmp / "s.h5"),
             "jedec (eyeriss-v1-ddr)": simulate_timed("alexnet", jedec, tmp / "j.h5"),
             "simple (eyeriss-v1)": simulate_timed("alexnet", load_config("eyeriss-v1"), tmp / "e.h5")}
    layer_us = {}
    for label, path in (("simple", tmp / "s.h5"), ("jedec", tmp / "j.h5")):
        with hwsim.trace.open(path) as trace:
            layer_us[label] = {l.name: l.cycles / jedec.clock_hz * 1e6 for l in derive(trace).layers}
    print("\n2. AlexNet on eyeriss-v1-ddr (19.2 GB/s). DRAM time: the layer's DRAM transactions (from the trace) "
          "requested at once, alone; layer time: simulated")
    print(f"{'layer':<7}{'DRAM MiB':>9}{'transactions':>13} {'DRAM µs simple':>15}{'jedec':>10}{'jedec/simple':>13}"
          f" {'layer µs simple':>16}{'jedec':>10}")
    for name, transactions in layer_transactions(tmp / "j.h5").items():
        nbytes = sum(n for _, _, n in transactions)
        s_us, j_us = replay_us(simple, transactions), replay_us(jedec, transactions)
        print(f"{name:<7}{nbytes / 2**20:>9.2f}{len(transactions):>13} {s_us:>15.1f}{j_us:>10.1f}{j_us / s_us:>12.2f}x"
              f" {layer_us['simple'].get(name, 0.0):>16.1f}{layer_us['jedec'].get(name, 0.0):>10.1f}")
    return costs


def print_costs(costs: dict[str, tuple[float, float]], tmp: Path, resnet: bool) -> None:
    if resnet:
        costs["jedec ResNet-50 (eyeriss-v1-ddr)"] = simulate_timed("resnet50", load_config("eyeriss-v1-ddr"),
                                                                   tmp / "r.h5")
        costs["simple ResNet-50 (eyeriss-v1)"] = simulate_timed("resnet50", load_config("eyeriss-v1"), tmp / "q.h5")
    print("\n3. Cost of hwsim's simulate (trace written, all levels)")
    for label, (wall, cpu) in costs.items():
        print(f"{label:<36} wall {wall:>7.2f} s   CPU {cpu:>7.2f} s")
    a = costs["jedec (eyeriss-v1-ddr)"]
    for base in ("simple (eyeriss-v1-ddr twin)", "simple (eyeriss-v1)"):
        b = costs[base]
        print(f"AlexNet jedec / {base}: wall {a[0] / b[0]:.2f}x, CPU {a[1] / b[1]:.2f}x")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=20000, help="requests per pattern (default 20000)")
    p.add_argument("--skip-resnet", action="store_true", help="leave ResNet-50 out of the cost")
    args = p.parse_args()
    print_patterns(args.requests)
    with tempfile.TemporaryDirectory(prefix="bench-dram-") as tmp:
        costs = print_alexnet(Path(tmp))
        print_costs(costs, Path(tmp), not args.skip_resnet)


if __name__ == "__main__":
    main()
