"""Speed of the simpy components: transactions per wall second and simulated bytes per wall second.

Runs 100k DRAM reads of 4 KiB tiles (consecutive addresses; two LPDDR4
channels with row buffers, from `depthfirst-edge`) and 100k PE-array passes,
each from one requester through `env.process`, and prints the best of a few
repeats beside the speed of bare simpy (one timeout per event) on the same
machine, and the simpy events one transaction costs.
Usage: python tools/bench_components.py [--count N] [--repeat R] [--config NAME]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Generator
from typing import Any

import simpy
from simpy.events import NORMAL, EventPriority

from hwsim.hardware import Accelerator, load_config
from hwsim.sim import Dram, PeArray

TILE_BYTES = 4096
SAMPLE = 1000  # transactions of the event-counting run

Job = Callable[[simpy.Environment, int], Generator[simpy.Event, Any, int]]


class CountingEnvironment(simpy.Environment):
    """An environment that counts scheduled events (used on a small sample only)."""

    def __init__(self) -> None:
        super().__init__()
        self.scheduled_events = 0

    def schedule(self, event: simpy.Event, priority: EventPriority = NORMAL, delay: float = 0) -> None:
        self.scheduled_events += 1
        super().schedule(event, priority, delay)


def bare_timeouts(env: simpy.Environment, count: int) -> Generator[simpy.Event, Any, int]:
    """The calibration: `count` back-to-back timeouts of one process."""
    for _ in range(count):
        yield env.timeout(1)
    return count


def dram_reads(hw: Accelerator) -> Job:
    """Reads of consecutive 4 KiB tiles; the process returns the burst records produced."""
    def job(env: simpy.Environment, count: int) -> Generator[simpy.Event, Any, int]:
        dram = Dram(env, hw.dram, hw.word_bytes)
        records = 0
        for i in range(count):
            block = yield env.process(dram.read(i * TILE_BYTES, TILE_BYTES))
            records += len(block)
        return records
    return job


def pe_passes(hw: Accelerator) -> Job:
    """Passes of a 3x3 conv row (9·56 MACs per PE) on the whole array; returns the MACs done."""
    def job(env: simpy.Environment, count: int) -> Generator[simpy.Event, Any, int]:
        pe = PeArray(env, hw.pe_array, hw.word_bytes)
        macs = 0
        for _ in range(count):
            block = yield env.process(pe.compute(9 * 56 * pe.cfg.pes, 0, pe.cfg.pes))
            macs += int(block["words"][0])
        return macs
    return job


def best_run(job: Job, count: int, repeat: int) -> tuple[float, int, int]:
    """Fastest wall seconds over `repeat` runs, the process result and the cycles simulated."""
    best = float("inf")
    for _ in range(repeat):
        env = simpy.Environment()
        proc = env.process(job(env, count))
        start = time.perf_counter()
        env.run()
        best = min(best, time.perf_counter() - start)
    assert isinstance(proc.value, int)
    return best, proc.value, int(env.now)


def events_per_transaction(job: Job) -> float:
    env = CountingEnvironment()
    env.process(job(env, SAMPLE))
    env.run()
    return env.scheduled_events / SAMPLE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000, help="transactions per benchmark")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each benchmark; the fastest counts")
    parser.add_argument("--config", default="depthfirst-edge", help="hardware config name or file")
    args = parser.parse_args()
    hw = load_config(args.config)

    seconds, _, _ = best_run(bare_timeouts, args.count, args.repeat)
    print(f"{'bare simpy timeouts':24s} {args.count / seconds:10,.0f} events/s (this machine's simpy speed)")
    seconds, records, cycles = best_run(dram_reads(hw), args.count, args.repeat)
    print(f"{'DRAM 4 KiB tile reads':24s} {args.count / seconds:10,.0f} transactions/s, "
          f"{args.count * TILE_BYTES / seconds / 1e6:,.1f} MB/s simulated, "
          f"{events_per_transaction(dram_reads(hw)):.1f} events and {records / args.count:.0f} burst records "
          f"per read; {args.count:,} reads = {cycles:,} cycles in {seconds:.2f} s")
    seconds, macs, cycles = best_run(pe_passes(hw), args.count, args.repeat)
    print(f"{'PE-array passes':24s} {args.count / seconds:10,.0f} transactions/s, "
          f"{macs / seconds / 1e9:,.2f} GMAC/s simulated, {events_per_transaction(pe_passes(hw)):.1f} events "
          f"per pass; {args.count:,} passes = {cycles:,} cycles in {seconds:.2f} s")


if __name__ == "__main__":
    main()
