"""The jedec DRAM model's timing and energy against the datasheet, derived by hand in each test; the small-request
stream of both models; presets and config errors.

Unless a test says otherwise the device is the `ddr4-3200-x16` preset (JESD79-4B DDR4-3200AA, Micron 8 Gb x16),
one channel, one rank, with no core clock given, so the simulation counts DRAM clock cycles (tCK = 0.625 ns):

    CL 22, CWL 16, tRCD 22, tRP 22, tRAS 52, tRC 74, tCCD_S 4, tCCD_L 8, tRRD_S 9, tRRD_L 11, tFAW 48,
    tWTR_S 4, tWTR_L 12, tRTW 12, tRTP 12, tWR 24, tBL 4 (BL8 on 64 bit: a 64-byte burst), tRFC 560,
    tREFI 12480; 2 bank groups × 4 banks, 8 KiB rows (128 bursts).

A read's data occupies [RD + CL, RD + CL + tBL); a write's [WR + CWL, WR + CWL + tBL).
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import simpy
from conftest import small_zoo_graph

import hwsim.trace
from hwsim.errors import ConfigError
from hwsim.flows.check import check_network
from hwsim.hardware import schema
from hwsim.hardware.dram import DRAM_ENERGY_PARTS, command_energy, dram_energy_pj, dram_presets
from hwsim.hardware.loader import load_config, parse_config
from hwsim.metrics import derive
from hwsim.sim.dram import JedecDram, SimpleDram

WORD_BYTES = 2
SIMPLE_KEYS = ("bandwidth", "latency", "burst", "turnaround", "energy", "source")
ROW = 8192  # bytes of a row; RoBaRaCoCh: burst k = column k mod 128, bank ⌊k/128⌋ mod 8, row ⌊k/1024⌋
BANK = ROW  # RoBaRaCoCh: the next bank's row 0 starts one row of bytes further
BANK_ROW = 8 * ROW  # RoBaRaCoCh: the same bank's next row


def jedec_cfg(**keys: object) -> schema.Dram:
    """eyeriss-v1 with a jedec DRAM (ddr4-3200-x16 unless `preset` says otherwise) and `keys` under dram."""
    given = {"model": "jedec", "preset": "ddr4-3200-x16", "address_map": "RoBaRaCoCh", **keys}
    lines = "".join(f"  {k}: {v}\n" for k, v in given.items())
    lines += "".join(f"  {k}: ~\n" for k in SIMPLE_KEYS if k not in given)  # drop eyeriss-v1's simple DRAM
    return parse_config(f"base: eyeriss-v1\ndram:\n{lines}", "test.yaml").dram


def dram(**keys: object) -> JedecDram:
    return JedecDram(simpy.Environment(), jedec_cfg(**keys), WORD_BYTES)


def read_at(d: JedecDram, address: int, cycle: int, amount: int = 64) -> list[tuple[int, int]]:
    """The (start, end) data cycles of the bursts of a read requested at `cycle`."""
    rec = d.reserve_read(address, amount, cycle)
    return list(zip(rec["start_cycle"].tolist(), rec["end_cycle"].tolist()))


def test_preset_timing_is_the_datasheet() -> None:
    t = jedec_cfg().timing
    assert t is not None
    assert (t.tcl_nck, t.tcwl_nck, t.trcd_nck, t.trp_nck, t.tras_nck, t.trc_nck) == (22, 16, 22, 22, 52, 74)
    assert (t.tccd_s_nck, t.tccd_l_nck, t.trrd_s_nck, t.trrd_l_nck, t.tfaw_nck) == (4, 8, 9, 11, 48)
    assert (t.twtr_s_nck, t.twtr_l_nck, t.trtw_nck, t.trtp_nck, t.twr_nck, t.tbl_nck) == (4, 12, 12, 12, 24, 4)
    assert (t.trfc_nck, t.trefi_nck) == (560, 12480)


def test_row_hit_and_row_miss() -> None:
    d = dram()
    # miss: bank 0 closed: ACT at 0, RD at tRCD = 22, data from 22 + CL = 44 for tBL = 4
    assert read_at(d, 0, 0) == [(44, 48)]
    # hit: the next column of the open row, long after: RD at 1000, data 1000 + 22
    assert read_at(d, 64, 1000) == [(1022, 1026)]
    # miss in another bank (closed) at 2000: ACT 2000, RD 2022, data 2044
    assert read_at(d, BANK, 2000) == [(2044, 2048)]
    assert (d.row_hit_bursts, d.row_miss_bursts, d.row_conflict_bursts, d.activates) == (1, 2, 0, 2)


def test_bank_conflict() -> None:
    d = dram()
    assert read_at(d, 0, 0) == [(44, 48)]
    # row 1 of bank 0 requested at once: PRE waits for tRAS after the ACT (0 + 52; tRTP after RD: 22 + 12 = 34),
    # ACT at 52 + tRP = 74 (= tRC after the first ACT), RD at 74 + 22 = 96, data 96 + 22 = 118
    assert read_at(d, BANK_ROW, 0) == [(118, 122)]
    # back to row 0 long after: PRE at 1000, ACT 1022, RD 1044, data 1066: a conflict costs tRP + tRCD + CL + tBL
    assert read_at(d, 0, 1000) == [(1066, 1070)]
    assert (d.row_conflict_bursts, d.activates, d.precharges) == (2, 3, 2)


def test_tfaw_limits_four_activates() -> None:
    d = dram()
    # five reads to the row 0 of banks 0..4 (groups alternate: bank b is in group b mod 2) at cycle 0.
    # ACTs tRRD_S = 9 apart: 0, 9, 18, 27 (same group two apart: 18 ≥ tRRD_L = 11); the fifth would be at 36
    # but four ACTs fit in tFAW = 48: it waits for 0 + 48. RD = ACT + 22, data = RD + 22
    ends = [read_at(d, b * BANK, 0)[0] for b in range(5)]
    assert [start for start, _ in ends] == [44, 53, 62, 71, 48 + 44]


def test_refresh_stalls_requests() -> None:
    d = dram()
    assert read_at(d, 0, 0) == [(44, 48)]
    # the first refresh is due at tREFI = 12480: bank 0 (ACT 0, RD 22) may precharge at once (tRAS and tRTP long
    # met), the REF follows tRP later at 12502 and blocks every bank until 12502 + tRFC = 13062. A read of the
    # open row requested at 12500 finds it closed: ACT 13062, RD 13084, data 13106
    assert read_at(d, 64, 12500) == [(13106, 13110)]
    assert d.refreshes == 1 and d.refresh_stall_dram_cycles == 13062 - 12500
    # the second refresh (due 24960: PRE of bank 0, REF 24982, busy to 25542) closes the row again: ACT at 26000
    assert read_at(d, 128, 26000) == [(26044, 26048)]
    assert d.refreshes == 2 and d.row_hit_bursts == 0 and d.precharges == 2


def test_a_request_far_in_the_future_books_the_idle_refreshes_at_once() -> None:
    # a read at 0, then one 1000 tREFI later (+5): 1000 refreshes are due by then, each ending tRFC after its due
    # cycle (the first closes bank 0, the rest find every bank closed). The last, due at 12,480,000, blocks the
    # banks until 12,480,560: ACT then, RD 22 later, data from 12,480,604
    for logged in (False, True):  # booked at once, or one by one with every REF command kept
        d = dram()
        d.record_commands(logged)
        read_at(d, 0, 0)
        assert read_at(d, 64, 12480 * 1000 + 5) == [(12480604, 12480608)]
        assert d.refreshes == 1000 and d.refresh_dram_cycles == 1000 * 560
        assert d.refresh_stall_dram_cycles == 560 - 5


def test_refresh_waits_for_the_open_rows_to_close() -> None:
    d = dram()
    # bank 0 opened just before the refresh due at 12480: ACT 12440, RD 12462, data 12484
    assert read_at(d, 0, 12440) == [(12484, 12488)]
    # its PRE waits for tRAS (12440 + 52 = 12492; tRTP: 12462 + 12 = 12474), the REF for tRP after it (12514),
    # the banks for tRFC after that (13074): a read of bank 1 requested at 12500 activates at 13074, RD 13096
    assert read_at(d, BANK, 12500) == [(13118, 13122)]
    assert d.refresh_stall_dram_cycles == 13074 - 12500


def test_read_to_write_and_write_to_read_turnaround() -> None:
    d = dram()
    assert read_at(d, 0, 0) == [(44, 48)]  # RD at 22
    # write to the open row at once: WR ≥ RD + tRTW = 34 (tCCD_L: 30), data 34 + CWL = 50
    w = d.reserve_write(64, 64, 0)
    assert (int(w["start_cycle"][0]), int(w["end_cycle"][0])) == (50, 54)
    # read in the same bank group: RD ≥ write data end + tWTR_L = 54 + 12 = 66, data 88
    assert read_at(d, 128, 0) == [(88, 92)]


def test_sequential_stream_bandwidth_by_hand() -> None:
    """2048 reads of 64 B, one after another from address 0, all requested at cycle 0, bursts spread over the
    banks (RoCoBaRaCh: burst k in bank k mod 8, bank group k mod 2, column ⌊k/8⌋ mod 128, row ⌊k/1024⌋).

    Row 0: ACTs at 0, 9, 18, 27 (tRRD_S), then tFAW: 48, 57, 66, 75; RDs 22 later: 22, 31, 40, 49, 70, 79, 88,
    97. Then every burst hits, the groups alternate, so RDs follow tCCD_S = 4 apart: RD_k = 101 + 4 (k − 8) up
    to RD_1023 = 4161. Row 1: bank b's last RD of row 0 was RD_{1016+b} = 4133 + 4b; its PRE is tRTP = 12
    later, its ACT tRP = 22 after that, but ACTs are also tRRD_S = 9 apart and four per tFAW = 48:
    ACT = 4167, 4176, 4185, 4194, then 4167 + 48 = 4215, 4224, 4233, 4242; RD = ACT + 22 (4189 … 4264).
    Then hits again: RD_k = 4268 + 4 (k − 1032), RD_2047 = 8328, its data ends 8328 + 22 + 4 = 8354.
    The bus carried 2048 · 4 = 8192 cycles of data in 8354: 98 % of peak.
    """
    d = dram(address_map="RoCoBaRaCh")
    for k in range(2048):
        d.reserve_read(64 * k, 64, 0)
    assert d.reserved_end_cycle == 8354
    assert 2048 * 4 / d.reserved_end_cycle >= 0.90
    assert (d.row_miss_bursts, d.row_conflict_bursts, d.row_hit_bursts) == (8, 8, 2048 - 16)


def test_row_switching_reads_are_bound_by_tfaw() -> None:
    """64-byte reads each to a new row, banks in turn (bank k mod 8, row k): the worst case of random reads,
    every one a row conflict. ACTs are tRRD_S = 9 apart, four per tFAW = 48: ACT_k = 48 ⌊k/4⌋ + 9 (k mod 4).
    A bank's next ACT comes 8 ACTs = 96 cycles later, after its PRE (ACT + tRAS = 52) + tRP = 74: never
    waits. The 400th read's data ends at ACT_399 + tRCD + CL + tBL = 4779 + 48 = 4827: 400 · 4 / 4827 = 33 %
    of peak (4 bursts per tFAW)."""
    d = dram()
    for k in range(400):
        d.reserve_read((k % 8) * BANK + (k // 8 + 1) * BANK_ROW, 64, 0)
    assert d.reserved_end_cycle == 48 * 99 + 27 + 22 + 22 + 4
    assert d.row_hit_bursts == 0


def test_random_reads_stay_under_the_activate_bound() -> None:
    """Random 64-byte reads over 1 GiB: almost every one opens a row, so the bursts cannot outpace four
    activates per tFAW = 48 cycles: at most 4 · tBL / tFAW = 1/3 of peak."""
    d = dram(address_map="RoCoBaRaCh", scheduler="frfcfs")
    rng = np.random.default_rng(7)
    for a in rng.integers(0, (1 << 30) // 64, 2000).tolist():
        d.reserve_read(64 * a, 64, 0)
    fraction = 2000 * 4 / d.reserved_end_cycle
    assert 0.1 < fraction <= 4 * 4 / 48


def test_small_requests_reach_the_bus_rate_in_both_models() -> None:
    """20,000 reads of 64 B in a row, all requested at cycle 0.

    simple (eyeriss-v1: 8 B/cycle, latency 10, one channel): each burst takes T = 8 cycles of the bus; with 32
    in flight the latencies overlap, so the data stream runs from 10 to 10 + 20000 · 8: 99.99 % of peak.
    Serialised (in_flight 1: a request enters when the previous one is done) each pays 10 + 8: 8/18 = 44 %.
    jedec (ddr4-3200-x16, RoCoBaRaCh): 98 % between row switches (test above); in 20,000 bursts = 80,000
    cycles of data 6 refreshes each block tRFC = 560 and close the rows (re-opening them costs about what a
    row switch does, < 110 cycles): ≥ 80000 / (80000 + 20 · 71 + 6 · (560 + 110)) = 94 % ≥ 85 %."""
    hw = load_config("eyeriss-v1")
    simple = SimpleDram(simpy.Environment(), hw.dram, hw.word_bytes)
    serial = SimpleDram(simpy.Environment(), replace(hw.dram, in_flight=1), hw.word_bytes)
    jedec = dram(address_map="RoCoBaRaCh", scheduler="frfcfs")
    for k in range(20000):
        for d in (simple, serial, jedec):
            d.reserve_read(64 * k, 64, 0)
    assert simple.reserved_end_cycle == 10 + 20000 * 8
    assert serial.reserved_end_cycle == 20000 * (10 + 8)
    assert 20000 * 4 / jedec.reserved_end_cycle >= 0.85


def test_simple_model_in_flight_bound() -> None:
    """Two bursts in flight, latency 10, T = 8: burst i enters when burst i − 2 has delivered its data, so its
    data starts at s_i = max(end_{i−2} + 10, end_{i−1}), end_i = s_i + 8:
    s_0 = 10, s_1 = max(0 + 10, 18) = 18, s_2 = max(18 + 10, 26) = 28, s_3 = max(26 + 10, 36) = 36,
    s_4 = max(36 + 10, 44) = 46, s_5 = max(44 + 10, 54) = 54: a pair every 18 cycles, 16/18 = 89 % of peak."""
    hw = load_config("eyeriss-v1")
    d = SimpleDram(simpy.Environment(), replace(hw.dram, in_flight=2), hw.word_bytes)
    starts = [int(d.reserve_read(64 * k, 64, 0)["start_cycle"][0]) for k in range(6)]
    assert starts == [10, 18, 28, 36, 46, 54]


def test_frfcfs_serves_open_row_hits_before_switching_rows() -> None:
    """RoCoBaRaCh: burst k in bank k mod 8, row ⌊k/1024⌋. Bank 0 has row 1 open (a read of burst 1024); then
    one transfer of bursts 1016–1031: row 0 of banks 0–7, then row 1 of banks 0–7.
    FCFS serves them in address order: bank 0 switches to row 0 (conflict), banks 1–7 open row 0 (misses),
    bank 0 switches back to row 1 (conflict) and banks 1–7 to row 1 (7 conflicts): 9 conflicts.
    FR-FCFS serves burst 1024 first, a hit on bank 0's open row; then row 0 (bank 0 conflict, banks 1–7 misses)
    and row 1 of banks 1–7 (7 conflicts): 8 conflicts and a hit."""
    def counts(scheduler: str) -> tuple[float, float, float]:
        d = dram(address_map="RoCoBaRaCh", scheduler=scheduler)
        d.reserve_read(1024 * 64, 64, 0)
        d.reserve_read(1016 * 64, 16 * 64, 1000)
        return d.row_hit_bursts, d.row_miss_bursts, d.row_conflict_bursts

    assert counts("fcfs") == (0, 1 + 7, 9)
    assert counts("frfcfs") == (1, 1 + 7, 8)


def test_energy_by_command_from_the_datasheet() -> None:
    """ddr4-3200-x16: 4 devices, VDD 1.2 V (IDD0 95, IDD2N 37, IDD3N 61, IDD4R 302, IDD4W 283, IDD5B 280 mA),
    VPP 2.5 V (IPP0 4, IPP3N 3, IPP5B 28 mA), tCK 0.625 ns.
    E_RD = 4 · 1.2 · (302 − 61) · 4 · 0.625 = 2892 pJ (VPP: IPP4R = IPP3N, nothing)
    E_ACT = 4 · (1.2 · (95 − 61) + 2.5 · (4 − 3)) · 52 · 0.625 = 5629 pJ
    E_PRE = 4 · (1.2 · (95 − 37) + 2.5 · (4 − 3)) · (74 − 52) · 0.625 = 3965.5 pJ
    E_REF = 4 · (1.2 · (280 − 61) + 2.5 · (28 − 3)) · 560 · 0.625 = 455420 pJ
    A row hit costs E_RD; a miss E_ACT + E_RD; a conflict E_PRE + E_ACT + E_RD."""
    cfg = jedec_cfg()
    e = command_energy(cfg)
    assert e.read_pj == pytest.approx(2892.0)
    assert e.activate_pj == pytest.approx(5629.0)
    assert e.precharge_pj == pytest.approx(3965.5)
    assert e.refresh_pj == pytest.approx(455420.0)
    assert e.active_standby_mw == pytest.approx(4 * (1.2 * 61 + 2.5 * 3))

    def burst_pj(counters: dict[str, float]) -> float:
        parts = dram_energy_pj(cfg, 1e9, counters, 0)
        return sum(parts.values())

    hit = burst_pj({"read_bursts": 1})
    miss = burst_pj({"read_bursts": 1, "activates": 1})
    conflict = burst_pj({"read_bursts": 1, "activates": 1, "precharges": 1})
    assert hit == pytest.approx(2892.0) and miss == pytest.approx(2892.0 + 5629.0)
    assert hit < miss < conflict == pytest.approx(2892.0 + 5629.0 + 3965.5)


def test_derived_fields_of_a_jedec_config() -> None:
    """eyeriss-v1-ddr: DDR4-2400 x16 at 1200 MHz under a 200 MHz core. Burst 64 bit × BL8 = 64 B; peak
    64 B / tBL (4 nCK) = 16 B per DRAM cycle = 16 · 1200/200 = 96 B per core cycle (19.2 GB/s); latency
    tRCD + CL + tBL = 36 nCK = 30 ns = 6 core cycles."""
    hw = load_config("eyeriss-v1-ddr")
    assert hw.dram.burst_bytes == 64 and hw.dram.bandwidth_bytes_per_cycle == pytest.approx(96.0)
    assert hw.dram.latency_cycles == 6


PRESETS = ("ddr4-2400-x8", "ddr4-2400-x16", "ddr4-3200-x8", "ddr4-3200-x16", "lpddr4-3200", "lpddr5-6400", "hbm2")


def test_the_presets_are_the_ones_dram_preset_lists() -> None:
    description = next(f for f in dataclasses.fields(schema.Dram) if f.name == "preset").metadata["info"].description
    assert set(dram_presets()) == set(PRESETS) and all(name in description for name in PRESETS)


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_loads_with_its_sources(preset: str) -> None:
    cfg = jedec_cfg(preset=preset)
    assert cfg.device is not None and cfg.timing is not None and cfg.power is not None
    assert cfg.device.source and cfg.timing.source and cfg.power.source


def test_a_config_overrides_a_preset_key() -> None:
    assert jedec_cfg(timing="{tcl: 24 nCK}").timing.tcl_nck == 24  # type: ignore[union-attr]


@pytest.mark.parametrize(("keys", "message"), [
    ({"preset": "ddr5-4800"}, r"test.yaml:\d+: dram.preset: unknown device 'ddr5-4800'; .*use one of ddr4"),
    ({"bandwidth": "12 GB/s"}, "dram.bandwidth: the jedec model derives it from dram.device and dram.timing; "
                               "remove it"),
    ({"turnaround": "4 cycles"}, "dram.turnaround: only the simple model uses it; remove it"),
    ({"timing": "{tccd_l: 2 nCK}"}, "dram.timing.tccd_l: 2 nCK is below tccd_s"),
    # ddr4-3200-x16: tRCD 22, tRP 22, tRAS 52, tRC 74 = tRAS + tRP, tRRD_S 9 (JESD79-4B)
    ({"timing": "{tras: 20 nCK, trc: 42 nCK}"}, "dram.timing.tras: 20 nCK is below trcd .22 nCK."),
    ({"timing": "{trc: 73 nCK}"}, r"dram.timing.trc: 73 nCK is below tRAS \+ tRP .74 nCK."),
    ({"timing": "{tfaw: 8 nCK}"}, "dram.timing.tfaw: 8 nCK is below trrd_s .9 nCK."),
])
def test_bad_jedec_configs_are_one_line_errors(keys: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        jedec_cfg(**keys)
    assert "\n" not in str(err.value)


def test_check_passes_with_dram_energy_priced_by_command(tmp_path: Path) -> None:
    """The counts and the latency bound are checked as for the simple model; the jedec DRAM's energy comes from
    its commands (unknown to the closed form), so the energy comparison leaves DRAM out. The trace's DRAM energy
    is its commands priced by `dram_energy_pj`: activates, precharges, reads, writes, refreshes, background."""
    report = check_network(small_zoo_graph("alexnet"), "eyeriss-v1-ddr", trace_path=tmp_path / "c.h5")
    assert report.ok and report.energy_leaves_out == ("dram",)
    with hwsim.trace.open(tmp_path / "c.h5") as trace:
        metrics = derive(trace)
    for layer in metrics.layers:
        assert set(layer.dram_energy_pj) == set(DRAM_ENERGY_PARTS)
        assert layer.energy_pj["dram"] == pytest.approx(sum(layer.dram_energy_pj.values()))
