"""Timing of the simpy hardware components against formulas derived by hand in each test."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import pytest
import simpy

from hwsim.errors import HwsimError
from hwsim.hardware import schema
from hwsim.sim import NO_ADDRESS, RECORD_DTYPE, Dram, LineBuffer, Noc, PeArray, Sram

WORD_BYTES = 2


def dram_cfg(channels: int = 1, bandwidth: float = 8.0, latency: int = 10, turnaround: int = 0,
             row_buffer: schema.RowBuffer | None = None) -> schema.Dram:
    return schema.Dram(channels=channels, bandwidth_bytes_per_cycle=bandwidth, latency_cycles=latency,
                       burst_bytes=64, turnaround_cycles=turnaround, energy_pj_per_bit=1.0, row_buffer=row_buffer,
                       source="test")


def glb_cfg(ports: int = 2, banks: int = 4, filter_bytes: int = 0) -> schema.Glb:
    return schema.Glb(size_bytes=4096, filter_bytes=filter_bytes, banks=banks, ports=ports, words_per_port=4,
                      read_energy_pj=1.0, write_energy_pj=1.0, source="test")


def run(env: simpy.Environment, *gens: Generator[simpy.Event, Any, np.ndarray],
        at_cycles: tuple[int, ...] = ()) -> list[np.ndarray]:
    """Start each process (the i-th at cycle at_cycles[i], default 0), run to the end, return their records."""
    def delayed(gen: Generator[simpy.Event, Any, np.ndarray], cycle: int) -> Generator[simpy.Event, Any, np.ndarray]:
        yield env.timeout(cycle)
        return (yield env.process(gen))

    starts = at_cycles or (0,) * len(gens)
    procs = [env.process(delayed(g, c)) for g, c in zip(gens, starts)]
    env.run()
    return [np.asarray(p.value) for p in procs]


# --- DRAM ---------------------------------------------------------------------------------------


def test_dram_one_channel_pipelined_bursts() -> None:
    env = simpy.Environment()
    dram = Dram(env, dram_cfg(), WORD_BYTES)
    (rec,) = run(env, dram.read(0, 512))
    # 8 bursts of 64 B at 8 B/cycle with latency 10: burst i ends at 10 + 8(i+1); the last at 10 + 8·8 = 74
    assert rec.dtype == RECORD_DTYPE
    assert rec["end_cycle"].tolist() == [10 + 8 * (i + 1) for i in range(8)]
    assert rec["start_cycle"].tolist() == [10 + 8 * i for i in range(8)]
    assert rec["address"].tolist() == [32 * i for i in range(8)]  # word addresses (64 B = 32 words)
    assert rec["words"].tolist() == [32] * 8
    assert env.now == 74
    # the data bus carried 8 bursts of 8 cycles
    assert dram.bursts == 8 and dram.read_amount == 512 and dram.read_requests == 1 and dram.busy_channel_cycles == 64


def test_dram_partial_bursts_cost_a_whole_slot() -> None:
    env = simpy.Environment()
    dram = Dram(env, dram_cfg(), WORD_BYTES)
    (rec,) = run(env, dram.read(32, 100))
    # bytes 32..131 touch bursts 0 (32 B), 1 (64 B), 2 (4 B): three whole slots, 10 + 3·8 = 34
    assert rec["end_cycle"][-1] == 34
    assert rec["words"].tolist() == [16, 32, 2]
    assert rec["address"].tolist() == [16, 32, 64]


def test_dram_channels_interleave_by_burst() -> None:
    env = simpy.Environment()
    dram = Dram(env, dram_cfg(channels=2, bandwidth=16.0), WORD_BYTES)
    (rec,) = run(env, dram.read(0, 512))
    # 8 bursts, burst k on channel k mod 2: 4 per channel at 16/2 = 8 B/cycle, so both end at 10 + 4·8 = 42
    assert rec["end_cycle"].tolist() == [10 + 8 * (k // 2 + 1) for k in range(8)]
    assert env.now == 42


def test_dram_fractional_bandwidth_rounds_once() -> None:
    env = simpy.Environment()
    dram = Dram(env, dram_cfg(bandwidth=3.0), WORD_BYTES)
    (rec,) = run(env, dram.read(0, 192))
    # T = 64/3 cycles: burst i ends at 10 + ⌈(i+1)·64/3⌉ = 32, 53, 74 and starts at 10 + ⌊i·64/3⌋
    assert rec["end_cycle"].tolist() == [32, 53, 74]
    assert rec["start_cycle"].tolist() == [10, 31, 52]


def test_dram_lpddr4_rate_is_exact() -> None:
    env = simpy.Environment()
    dram = Dram(env, dram_cfg(channels=2, bandwidth=12.8e9 / 500e6, latency=40), 1)
    (rec,) = run(env, dram.read(0, 64 * 1000))
    # 25.6 B/cycle over 2 channels: T = 64 / 12.8 = 5 cycles; 500 bursts per channel end at 40 + 2500
    assert dram.burst_slot_cycles == 5.0
    assert env.now == 40 + 500 * 5
    assert rec["end_cycle"].max() == 2540


def test_dram_row_buffer_hits_and_misses() -> None:
    rb = schema.RowBuffer(row_bytes=256, hit_latency_cycles=4, miss_latency_cycles=12)
    env = simpy.Environment()
    dram = Dram(env, dram_cfg(row_buffer=rb), WORD_BYTES)
    first, again, across = run(env, dram.read(0, 256), dram.read(0, 256), dram.read(0, 512))
    # all requested at cycle 0. first: row 0 closed → miss, data from 0 + 12, four 8-cycle slots: 12 + 32 = 44
    assert first["end_cycle"][-1] == 44
    # again: row 0 open → hit, latency 4 overlapped with first's transfer: data from max(0 + 4, 44) = 44, ends 76
    assert again["end_cycle"][-1] == 76
    # across: row 0 hits from max(4, 76) = 76 to 108; row 1 opens: its first burst waits miss − hit = 8 after
    # the bus frees (the channel's bank opens the row), from 108 + 8 = 116 to 116 + 32 = 148
    assert across["end_cycle"].tolist() == [76 + 8 * (i + 1) for i in range(4)] + \
        [116 + 8 * (i + 1) for i in range(4)]
    assert dram.row_miss_bursts == 2 and dram.row_hit_bursts == 16 - 2


def test_dram_closed_page_pays_every_row_opening() -> None:
    rb = schema.RowBuffer(row_bytes=256, hit_latency_cycles=4, miss_latency_cycles=12, policy="closed")
    env = simpy.Environment()
    dram = Dram(env, dram_cfg(row_buffer=rb), WORD_BYTES)
    first, again, across = run(env, dram.read(0, 256), dram.read(0, 256), dram.read(0, 512))
    # closed page: every run opens its row: first 12 + 32 = 44; again opens row 0 anew, miss − hit = 8 after
    # the bus frees: 44 + 8 + 32 = 84; across opens row 0 (84 + 8 + 32 = 124) and row 1 (124 + 8 + 32 = 164)
    assert first["end_cycle"][-1] == 44
    assert again["end_cycle"][-1] == 84
    assert across["end_cycle"][-1] == 164
    assert dram.row_miss_bursts == 4 and dram.row_hit_bursts == 16 - 4


def test_dram_row_buffer_far_addresses() -> None:
    rb = schema.RowBuffer(row_bytes=256, hit_latency_cycles=4, miss_latency_cycles=12)
    env = simpy.Environment()
    dram = Dram(env, dram_cfg(channels=2, bandwidth=16.0, row_buffer=rb), WORD_BYTES)
    # channel-local rows are 256 B: burst k is in row ⌊⌊k/2⌋·64/256⌋; byte 8192 is burst 128, row 16
    a, b, c = run(env, dram.read(0, 64), dram.read(8192, 64), dram.read(8192 + 128, 64))
    assert a["end_cycle"][0] == 12 + 8  # miss on channel 0
    assert b["end_cycle"][0] == 20 + (12 - 4) + 8  # row 16 on channel 0: opens after a's burst, miss − hit = 8
    assert c["end_cycle"][0] == 36 + 8  # burst 130, channel 0, row 16 still open: hit, its latency long overlapped


def test_dram_turnaround() -> None:
    env = simpy.Environment()
    dram = Dram(env, dram_cfg(turnaround=5), WORD_BYTES)
    w, r, r2, late = run(env, dram.write(0, 64), dram.read(0, 64), dram.read(64, 64), dram.write(0, 64),
                         at_cycles=(0, 0, 0, 200))
    # write: 10 + 8 = 18; read after write: the bus turns around for 5 after the write, data 23 to 31
    # (its latency 10 ran meanwhile); read after read: right behind it, 31 to 39
    assert w["end_cycle"][0] == 18
    assert r["end_cycle"][0] == 31
    assert r2["end_cycle"][0] == 39
    # a write long after the last read (gap ≥ turnaround) pays nothing: 200 + 18
    assert late["end_cycle"][0] == 218
    assert dram.turnaround_stall_cycles == 5


def test_dram_two_requesters_share_a_channel() -> None:
    env = simpy.Environment()
    dram = Dram(env, dram_cfg(), WORD_BYTES)
    a, b = run(env, dram.read(0, 512), dram.read(4096, 512))
    # each alone takes 10 + 64 = 74 cycles; on one channel b's latency overlaps a's transfer and its bursts
    # follow a's on the bus: 74 + 64 = 138. b's first burst waited 74 − (0 + 10) = 64 for the bus
    assert a["end_cycle"][-1] == 74
    assert b["end_cycle"][-1] == 138
    assert dram.queue_stall_cycles == 64


def test_dram_request_arriving_at_a_release_queues_behind_the_waiter() -> None:
    env = simpy.Environment()
    dram = Dram(env, dram_cfg(), WORD_BYTES)

    def late() -> Generator[simpy.Event, Any, np.ndarray]:
        # waits in two steps so it wakes at cycle 74 between a's release and b's grant
        yield env.timeout(1)
        yield env.timeout(73)
        return (yield env.process(dram.read(8192, 512)))

    c_proc = env.process(late())
    a, b = run(env, dram.read(0, 512), dram.read(4096, 512))
    # c arrives at 74, when a's bursts are done and b's have the bus until 138: c's go after b's, first come,
    # first served: 138 + 64 = 202
    assert [r["end_cycle"][-1] for r in (a, b, np.asarray(c_proc.value))] == [74, 138, 202]


def test_dram_different_channels_run_in_parallel() -> None:
    env = simpy.Environment()
    dram = Dram(env, dram_cfg(channels=2, bandwidth=16.0), WORD_BYTES)
    a, b = run(env, dram.read(0, 64), dram.read(64, 64))  # bursts 0 and 1: channels 0 and 1
    assert a["end_cycle"][0] == b["end_cycle"][0] == 10 + 8


def test_dram_waits_only_for_the_busy_channel() -> None:
    env = simpy.Environment()
    dram = Dram(env, dram_cfg(channels=2, bandwidth=16.0), WORD_BYTES)
    a, b = run(env, dram.read(0, 64), dram.read(0, 128))
    # b's burst 1 takes the free channel 1 at once (10 + 8 = 18); its burst 0 follows a's on channel 0's bus,
    # 18 to 26 (its latency overlapped a's transfer), after waiting 18 − 10 = 8 for the bus
    assert a["end_cycle"].tolist() == [18]
    assert b["end_cycle"].tolist() == [26, 18]
    assert dram.queue_stall_cycles == 8


def test_dram_bad_accesses() -> None:
    dram = Dram(simpy.Environment(), dram_cfg(), WORD_BYTES)
    with pytest.raises(HwsimError, match="aligned"):
        dram.read(1, 64)
    with pytest.raises(HwsimError, match="size"):
        dram.write(0, -64)
    with pytest.raises(HwsimError, match="burst"):  # 3-byte words do not fill a 64-byte burst
        Dram(simpy.Environment(), dram_cfg(), 3).read(0, 66)


# --- SRAM (GLB and L2) ---------------------------------------------------------------------------


def test_glb_transfer_time() -> None:
    env = simpy.Environment()
    glb = Sram(env, glb_cfg(), WORD_BYTES)
    (rec,) = run(env, glb.read(10, 65))
    # 65 words at 4 words/cycle: ⌈65/4⌉ = 17 cycles
    assert rec.tolist() == [(0, 17, 10, 65)]
    assert glb.bank_words == 4096 // 4 // 2


def test_glb_bank_conflict_serialises() -> None:
    env = simpy.Environment()
    glb = Sram(env, glb_cfg(ports=2), WORD_BYTES)
    a, b = run(env, glb.read(0, 64), glb.write(100, 64))  # both in bank 0 (words 0..511)
    # 64 words = 16 cycles each; same bank: 16 then 32, 16 cycles of bank-conflict stall
    assert (a["end_cycle"][0], b["start_cycle"][0], b["end_cycle"][0]) == (16, 16, 32)
    assert glb.bank_conflict_stall_cycles == 16 and glb.port_stall_cycles == 0


def test_glb_parallel_banks_with_two_ports() -> None:
    env = simpy.Environment()
    glb = Sram(env, glb_cfg(ports=2), WORD_BYTES)
    a, b = run(env, glb.read(0, 64), glb.read(512, 64))  # banks 0 and 1
    assert a["end_cycle"][0] == b["end_cycle"][0] == 16
    assert glb.bank_conflict_stall_cycles == 0


def test_a_transfer_sweeps_its_banks_and_a_second_follows_it_bank_by_bank() -> None:
    env = simpy.Environment()
    glb = Sram(env, glb_cfg(ports=2), WORD_BYTES)  # 512-word banks, 4 words per cycle and port
    a, b = run(env, glb.read(0, 1024), glb.write(0, 1024))  # both over banks 0 and 1
    # the read holds bank 0 for cycles 0-128 and bank 1 for 128-256; the write enters bank 1 128 cycles after
    # its start, so it may start at max(128 - 0, 256 - 128) = 128 and ends 256 cycles later
    assert (a["start_cycle"][0], a["end_cycle"][0]) == (0, 256)
    assert (b["start_cycle"][0], b["end_cycle"][0]) == (128, 384)
    assert glb.bank_conflict_stall_cycles == 128


def test_one_port_holds_every_bank_to_the_end() -> None:
    env = simpy.Environment()
    glb = Sram(env, glb_cfg(ports=1), WORD_BYTES)
    _, b = run(env, glb.read(0, 1024), glb.write(1000, 8))  # the second in bank 1, behind the first on the port
    assert (b["start_cycle"][0], b["end_cycle"][0]) == (256, 258)


def test_glb_one_port_serialises_different_banks() -> None:
    env = simpy.Environment()
    glb = Sram(env, glb_cfg(ports=1), WORD_BYTES)
    a, b = run(env, glb.read(0, 64), glb.read(512, 64))
    # the sum of the two: 16 + 16 = 32
    assert (a["end_cycle"][0], b["end_cycle"][0]) == (16, 32)
    assert glb.port_stall_cycles == 16


def test_glb_transfer_spanning_banks_blocks_both() -> None:
    env = simpy.Environment()
    glb = Sram(env, glb_cfg(ports=2), WORD_BYTES)
    # words 500..539 span banks 0 and 1 (10 cycles); the next transfer in bank 1 waits for it
    a, b = run(env, glb.read(500, 40), glb.read(600, 8))
    assert (a["end_cycle"][0], b["start_cycle"][0], b["end_cycle"][0]) == (10, 10, 12)


def test_l2_bandwidth_and_latency() -> None:
    l2 = schema.L2(size_bytes=1 << 20, banks=8, bandwidth_bytes_per_cycle=64.0, latency_cycles=12,
                   read_energy_pj=1.0, write_energy_pj=1.0, source="test")
    env = simpy.Environment()
    sram = Sram(env, l2, WORD_BYTES, "l2")
    a, b = run(env, sram.read(0, 100), sram.read(1 << 18, 100))
    # 64 B/cycle = 32 words/cycle: ⌈100/32⌉ + 12 = 16 cycles; one port, so the second ends at 32
    assert (a["end_cycle"][0], b["end_cycle"][0]) == (16, 32)


def test_glb_allocation_blocks_until_free() -> None:
    env = simpy.Environment()
    glb = Sram(env, glb_cfg(filter_bytes=1024), WORD_BYTES)
    # space is in bytes: 1,536 and 512 words of 2 bytes
    assert glb.spaces["data"].capacity_bytes == 3072 and glb.spaces["filter"].capacity_bytes == 1024
    granted: list[int] = []

    def owner() -> Generator[simpy.Event, Any, None]:
        yield glb.allocate(1000)
        yield env.timeout(50)
        yield glb.free(600)

    def fetcher() -> Generator[simpy.Event, Any, None]:
        yield env.timeout(1)
        yield glb.allocate(1000)  # 1000 + 1000 > 1536: waits for the free at cycle 50
        granted.append(int(env.now))

    def filters() -> Generator[simpy.Event, Any, None]:
        yield glb.allocate(512, "filter")  # its own partition: not blocked by the data
        granted.append(int(env.now))

    env.process(owner())
    env.process(fetcher())
    env.process(filters())
    env.run()
    assert granted == [0, 50]
    space = glb.spaces["data"]
    assert space.occupancy_bytes == 2800 and space.peak_bytes == 2800  # 1,400 words
    assert space.allocate_stall_cycles == 49
    assert space.occupancy_records().tolist() == [(0, 0), (0, 2000), (50, 800), (50, 2800)]


def test_sram_impossible_sizes() -> None:
    env = simpy.Environment()
    glb = Sram(env, glb_cfg(filter_bytes=1024), WORD_BYTES, "glb")
    with pytest.raises(HwsimError, match=r"glb data partition.*4000 bytes"):  # 2,000 words
        glb.allocate(2000)
    with pytest.raises(HwsimError, match="glb filter partition"):
        glb.allocate(513, "filter")
    with pytest.raises(HwsimError, match="past the end"):
        glb.read(2000, 100)
    with pytest.raises(HwsimError, match="only 0"):
        glb.free(1)
    with pytest.raises(HwsimError, match="banks"):
        Sram(env, schema.Glb(size_bytes=1000, banks=3, words_per_port=1, read_energy_pj=1.0,
                             write_energy_pj=1.0, source="test"), WORD_BYTES)


# --- NoC -----------------------------------------------------------------------------------------


def test_noc_bus_time_and_contention() -> None:
    cfg = schema.Noc(ifmap_bus_bits=64, filter_bus_bits=64, psum_bus_bits=32, inter_pe_energy_pj=1.0,
                     source="test")
    env = simpy.Environment()
    noc = Noc(env, cfg, WORD_BYTES)
    ifmap, filt, ifmap2, psum = run(env, noc.transfer("ifmap", 10), noc.transfer("filter", 10),
                                    noc.transfer("ifmap", 10), noc.transfer("psum", 10))
    # 10 words of 16 bit on 64 bits: ⌈160/64⌉ = 3 cycles; on the 32-bit psum bus ⌈160/32⌉ = 5
    assert ifmap.tolist() == [(0, 3, NO_ADDRESS, 10)]
    assert filt["end_cycle"][0] == 3  # another bus: in parallel
    assert ifmap2["end_cycle"][0] == 6  # same bus: 3 + 3
    assert psum["end_cycle"][0] == 5
    assert noc.buses["ifmap"].busy_cycles == 6 and noc.buses["ifmap"].written_amount == 20
    with pytest.raises(HwsimError, match="unknown bus"):
        noc.transfer("weights", 1)


# --- PE array ------------------------------------------------------------------------------------


def pe_cfg() -> schema.PeArray:
    rf = schema.RegisterFiles(filter_words=224, ifmap_words=12, psum_words=24, access_energy_pj=1.0)
    return schema.PeArray(rows=12, cols=14, macs_per_cycle=1, fill_drain_cycles=5, mac_energy_pj=1.0, rf=rf,
                          source="test")


def test_pe_array_pass_time_with_fill_drain() -> None:
    env = simpy.Environment()
    pe = PeArray(env, pe_cfg(), WORD_BYTES)
    a, b = run(env, pe.compute(1000, 20, 100), pe.compute(168 * 10, 0, 168))
    # ⌈(1000 + 20) / 100⌉ + 5 = 16; the second pass waits: 16 + 10 + 5 = 31
    assert a.tolist() == [(0, 16, NO_ADDRESS, 1020)]
    assert (b["start_cycle"][0], b["end_cycle"][0]) == (16, 31)
    assert pe.busy_cycles == 31 and pe.idle_cycles == 0
    assert pe.utilization == pytest.approx((1000 + 1680) / (31 * 168))
    env.run(until=100)
    assert pe.idle_cycles == 69


def test_pe_array_impossible_passes() -> None:
    pe = PeArray(simpy.Environment(), pe_cfg(), WORD_BYTES)
    with pytest.raises(HwsimError, match="169 PEs"):
        pe.compute(10, 0, 169)
    with pytest.raises(HwsimError, match="0 PEs"):
        pe.compute(10, 0, 0)
    with pytest.raises(HwsimError, match="macs"):
        pe.compute(-1, 0, 1)


# --- line buffer ---------------------------------------------------------------------------------


def test_line_buffer_port_and_space() -> None:
    cfg = schema.LineBuffer(size_bytes=4096, words_per_port=64, read_energy_pj=1.0, write_energy_pj=1.0,
                            source="test")
    env = simpy.Environment()
    lb = LineBuffer(env, cfg, WORD_BYTES)
    granted: list[int] = []

    def rows() -> Generator[simpy.Event, Any, None]:
        yield lb.allocate(2000)
        yield env.process(lb.write(NO_ADDRESS, 2000))  # ⌈2000/64⌉ = 32 cycles
        yield lb.free(1000)

    def next_rows() -> Generator[simpy.Event, Any, None]:
        yield lb.allocate(1000)  # 2000 + 1000 > 2048 words: waits for the free at 32
        granted.append(int(env.now))

    env.process(rows())
    env.process(next_rows())
    w, r = run(env, lb.write(NO_ADDRESS, 100), lb.read(NO_ADDRESS, 64), at_cycles=(1, 1))
    # the port is shared: 100 words take ⌈100/64⌉ = 2 cycles behind the 32, the read 1 more
    assert (w["end_cycle"][0], r["end_cycle"][0]) == (34, 35)
    assert granted == [32]
    assert lb.space.peak_bytes == 4000  # 2,000 words
    with pytest.raises(HwsimError, match=r"line_buffer.*8192 bytes"):  # 4,096 words
        lb.allocate(4096)


# --- reservations --------------------------------------------------------------------------------

# (cycle, method name, args) of overlapping requests per component; same-cycle requests in list order
RESERVE_CASES: dict[str, list[tuple[int, str, tuple[Any, ...]]]] = {
    "dram": [(0, "read", (0, 512)), (0, "write", (64, 256)), (3, "read", (8192, 128)), (3, "read", (0, 64)),
             (40, "write", (4096, 1000)), (74, "read", (256, 0)), (75, "read", (128, 2048)), (400, "read", (0, 64))],
    "glb": [(0, "read", (0, 64)), (0, "write", (100, 64)), (0, "read", (512, 64)), (2, "write", (500, 40)),
            (2, "read", (1024, 200)), (10, "read", (600, 8)), (10, "write", (0, 0)), (60, "read", (1500, 48))],
    "noc": [(0, "transfer", ("ifmap", 10)), (0, "transfer", ("ifmap", 30)), (1, "transfer", ("psum", 10)),
            (1, "transfer", ("ifmap", 0)), (5, "transfer", ("filter", 7)), (20, "transfer", ("ifmap", 4))],
    "pe": [(0, "compute", (1000, 20, 100)), (0, "compute", (1680, 0, 168)), (7, "compute", (5, 5, 1)),
           (80, "compute", (168, 0, 168))],
    "line_buffer": [(0, "write", (NO_ADDRESS, 2000)), (1, "read", (7, 100)), (1, "write", (NO_ADDRESS, 64)),
                    (50, "read", (NO_ADDRESS, 0)), (60, "read", (NO_ADDRESS, 640))],
}

PROCESS_TO_RESERVE = {"read": "reserve_read", "write": "reserve_write", "transfer": "reserve", "compute": "reserve"}


def make_component(kind: str, env: simpy.Environment) -> Any:
    rb = schema.RowBuffer(row_bytes=256, hit_latency_cycles=4, miss_latency_cycles=12)
    lb = schema.LineBuffer(size_bytes=4096, words_per_port=64, read_energy_pj=1.0, write_energy_pj=1.0,
                           source="test")
    noc = schema.Noc(ifmap_bus_bits=64, filter_bus_bits=64, psum_bus_bits=32, inter_pe_energy_pj=1.0,
                     source="test")
    return {"dram": lambda: Dram(env, dram_cfg(channels=2, bandwidth=16.0, turnaround=5, row_buffer=rb), WORD_BYTES),
            "glb": lambda: Sram(env, glb_cfg(ports=2), WORD_BYTES),
            "noc": lambda: Noc(env, noc, WORD_BYTES),
            "pe": lambda: PeArray(env, pe_cfg(), WORD_BYTES),
            "line_buffer": lambda: LineBuffer(env, lb, WORD_BYTES)}[kind]()


def stats_of(component: Any) -> dict[str, float]:
    return {name: stat.value for name, stat in component.stats().items()}


@pytest.mark.parametrize("kind", sorted(RESERVE_CASES))
def test_reservations_match_processes(kind: str) -> None:
    requests = RESERVE_CASES[kind]
    env = simpy.Environment()
    comp = make_component(kind, env)
    by_process = run(env, *(getattr(comp, method)(*args) for _, method, args in requests),
                     at_cycles=tuple(cycle for cycle, _, _ in requests))
    process_stats, process_end = stats_of(comp), env.now

    env = simpy.Environment()
    comp = make_component(kind, env)
    by_reservation: list[np.ndarray] = []
    ends: list[int] = []

    def driver() -> Generator[simpy.Event, Any, None]:
        for cycle, method, args in requests:
            if cycle > env.now:
                yield env.timeout(cycle - env.now)
            by_reservation.append(getattr(comp, PROCESS_TO_RESERVE[method])(*args))
            ends.append(comp.reserved_end_cycle)

    env.process(driver())
    env.run()
    assert [r.tolist() for r in by_reservation] == [r.tolist() for r in by_process]
    for (cycle, _, _), records, end in zip(requests, by_reservation, ends):
        assert end == (records["end_cycle"].max() if len(records) else cycle)
    env.run(until=max(ends))  # the statistics are those of the same run, which reservations do not advance
    assert env.now == process_end
    assert stats_of(comp) == process_stats


def test_dram_same_cycle_reservations_add_up_without_events() -> None:
    env = simpy.Environment()
    dram = Dram(env, dram_cfg(), WORD_BYTES)
    a = dram.reserve_read(0, 512)
    b = dram.reserve_read(4096, 512)
    # both requested at cycle 0 on the one channel: a's data 10 to 74; b's latency overlaps it and its
    # bursts follow on the bus, 74 to 74 + 64 = 138, having waited 74 − 10 = 64 beyond its latency
    assert (a["end_cycle"][-1], b["start_cycle"][0], b["end_cycle"][-1]) == (74, 74, 138)
    assert dram.reserved_end_cycle == 138 and dram.queue_stall_cycles == 64
    assert env.peek() == float("inf")  # nothing was scheduled: a reservation costs no simpy event


def test_reservation_starts_when_the_bank_is_free() -> None:
    env = simpy.Environment()
    glb = Sram(env, glb_cfg(ports=2), WORD_BYTES)
    glb.reserve_write(0, 64)  # bank 0 busy until cycle 16
    env.run(until=5)
    rec = glb.reserve_read(100, 8)  # requested at 5, bank 0 still busy: starts at 16, ends 16 + 2
    assert rec.tolist() == [(16, 18, 100, 8)]
    assert glb.bank_conflict_stall_cycles == 11 and glb.port_stall_cycles == 0
    # the other port was free all along and stays free for a transfer on another bank requested now
    assert glb.reserve_read(512, 8).tolist() == [(5, 7, 512, 8)]


def test_sram_port_wait_after_the_banks() -> None:
    env = simpy.Environment()
    glb = Sram(env, glb_cfg(ports=1), WORD_BYTES)
    glb.reserve_read(0, 64)  # bank 0 and the port until 16
    glb.reserve_read(512, 64)  # bank 1 free, the port until 32: port stall 16
    rec = glb.reserve_read(0, 8)  # bank 0 free at 16, the port at 32: 16 bank-conflict + 16 port stall
    assert rec.tolist() == [(32, 34, 0, 8)]
    assert glb.bank_conflict_stall_cycles == 16 and glb.port_stall_cycles == 16 + 16


def test_pe_array_idle_counts_reserved_passes() -> None:
    env = simpy.Environment()
    pe = PeArray(env, pe_cfg(), WORD_BYTES)
    pe.reserve(1000, 20, 100)  # cycles 0..16
    assert pe.idle_cycles == 0 and pe.busy_cycles == 16
    env.run(until=30)
    assert pe.reserve(1680, 0, 168).tolist() == [(30, 45, NO_ADDRESS, 1680)]
    assert pe.idle_cycles == 14


def test_transfer_as_one_event() -> None:
    env = simpy.Environment()
    dram = Dram(env, dram_cfg(), WORD_BYTES)
    glb = Sram(env, glb_cfg(), WORD_BYTES)
    done: list[tuple[int, list[Any], list[Any]]] = []

    def transfer() -> Generator[simpy.Event, Any, None]:
        # DRAM → GLB: the data streams from one into the other, so both are reserved at once
        src = dram.reserve_read(0, 256)
        dst = glb.reserve_write(0, 128)
        yield env.timeout(max(dram.reserved_end_cycle, glb.reserved_end_cycle) - env.now)
        done.append((int(env.now), src["end_cycle"].tolist(), dst.tolist()))

    env.process(transfer())
    env.run()
    assert done == [(42, [18, 26, 34, 42], [(0, 32, 0, 128)])]
    with pytest.raises(HwsimError, match="aligned"):
        dram.reserve_read(1, 64)
    with pytest.raises(HwsimError, match="past the end"):
        glb.reserve_write(2000, 100)
