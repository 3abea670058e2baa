"""Speed of the simpy components: transactions per wall second and simulated bytes per wall second.

On `depthfirst-edge` (two LPDDR4 channels with row buffers), one requester runs
100k transactions of each pattern, each both ways:

- *process*: through the component's process (`env.process(dram.read(…))`),
  one simpy process per transaction, as a caller that waits for it alone;
- *reserve*: `reserve_…` then one `env.timeout` to its end, no process.

The patterns: DRAM reads of consecutive 4 KiB tiles, PE-array passes, and a
DRAM → GLB tile transfer (the data streams from one into the other, so it
ends when both do): the process way starts a process on each and waits for
`all_of` them, the reserve way reserves on both and waits with one timeout.
Prints the best of a few repeats beside the speed of bare simpy (one timeout
per event) on the same machine, and the simpy events one transaction costs.
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
from hwsim.sim import Dram, PeArray, Sram

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


def dram_reads(hw: Accelerator, reserve: bool) -> Job:
    """Reads of consecutive 4 KiB tiles; the process returns the burst records produced."""
    def job(env: simpy.Environment, count: int) -> Generator[simpy.Event, Any, int]:
        dram = Dram(env, hw.dram, hw.word_bytes)
        records = 0
        for i in range(count):
            if reserve:
                block = dram.reserve_read(i * TILE_BYTES, TILE_BYTES)
                yield env.timeout(dram.reserved_end_cycle - env.now)
            else:
                block = yield env.process(dram.read(i * TILE_BYTES, TILE_BYTES))
            records += len(block)
        return records
    return job


def pe_passes(hw: Accelerator, reserve: bool) -> Job:
    """Passes of a 3x3 conv row (9·56 MACs per PE) on the whole array; returns the MACs done."""
    def job(env: simpy.Environment, count: int) -> Generator[simpy.Event, Any, int]:
        pe = PeArray(env, hw.pe_array)
        macs = 0
        for _ in range(count):
            if reserve:
                block = pe.reserve(9 * 56 * pe.cfg.pes, 0, pe.cfg.pes)
                yield env.timeout(pe.reserved_end_cycle - env.now)
            else:
                block = yield env.process(pe.compute(9 * 56 * pe.cfg.pes, 0, pe.cfg.pes))
            macs += int(block["words"][0])
        return macs
    return job


def tile_transfers(hw: Accelerator, reserve: bool) -> Job:
    """DRAM → GLB transfers of consecutive 4 KiB tiles (GLB addresses wrap); returns the records produced."""
    def job(env: simpy.Environment, count: int) -> Generator[simpy.Event, Any, int]:
        dram = Dram(env, hw.dram, hw.word_bytes)
        glb = Sram(env, hw.glb, hw.word_bytes)
        tile_words = TILE_BYTES // hw.word_bytes
        slots = glb.size_words // tile_words
        records = 0
        for i in range(count):
            glb_address = (i % slots) * tile_words
            if reserve:
                src = dram.reserve_read(i * TILE_BYTES, TILE_BYTES)
                dst = glb.reserve_write(glb_address, tile_words)
                yield env.timeout(max(dram.reserved_end_cycle, glb.reserved_end_cycle) - env.now)
            else:
                read = env.process(dram.read(i * TILE_BYTES, TILE_BYTES))
                write = env.process(glb.write(glb_address, tile_words))
                done = yield read & write
                src, dst = done[read], done[write]
            records += len(src) + len(dst)
        return records
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
    print(f"{'bare simpy timeouts':36s} {args.count / seconds:10,.0f} events/s (this machine's simpy speed)")
    for reserve in (False, True):
        way = "reserve" if reserve else "process"
        job = dram_reads(hw, reserve)
        seconds, records, cycles = best_run(job, args.count, args.repeat)
        print(f"{'DRAM 4 KiB tile reads, ' + way:36s} {args.count / seconds:10,.0f} transactions/s, "
              f"{args.count * TILE_BYTES / seconds / 1e6:,.1f} MB/s simulated, "
              f"{events_per_transaction(job):.1f} events and {records / args.count:.0f} burst records "
              f"per read; {args.count:,} reads = {cycles:,} cycles in {seconds:.2f} s")
    for reserve in (False, True):
        way = "reserve" if reserve else "process"
        job = pe_passes(hw, reserve)
        seconds, macs, cycles = best_run(job, args.count, args.repeat)
        print(f"{'PE-array passes, ' + way:36s} {args.count / seconds:10,.0f} transactions/s, "
              f"{macs / seconds / 1e9:,.2f} GMAC/s simulated, {events_per_transaction(job):.1f} events "
              f"per pass; {args.count:,} passes = {cycles:,} cycles in {seconds:.2f} s")
    for reserve in (False, True):
        way = "reserve, 1 timeout" if reserve else "2 processes + all_of"
        job = tile_transfers(hw, reserve)
        seconds, records, cycles = best_run(job, args.count, args.repeat)
        print(f"{'DRAM→GLB tiles, ' + way:36s} {args.count / seconds:10,.0f} transactions/s, "
              f"{args.count * TILE_BYTES / seconds / 1e6:,.1f} MB/s simulated, "
              f"{events_per_transaction(job):.1f} events and {records / args.count:.0f} records per "
              f"transfer; {args.count:,} transfers = {cycles:,} cycles in {seconds:.2f} s")


if __name__ == "__main__":
    main()
