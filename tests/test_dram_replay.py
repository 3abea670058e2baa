"""`hwsim dram replay`: request traces in Ramulator 2's and DRAMsim3's formats timed on a config's DRAM, against
timings derived by hand in tests/test_dram_jedec.py (the `ddr4-3200-x16` preset, one channel and rank, in its
1.6 GHz command clock: CL 22, tRCD 22, tRP 22, tRAS 52, tCCD_S 4, tRRD_S 9, tFAW 48, tBL 4, 64-byte bursts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import assert_one_line_error

DDR = """base: eyeriss-v1
name: ddr-test
dram:
  model: jedec
  preset: ddr4-3200-x16
  address_map: {map}
  bandwidth: ~
  latency: ~
  burst: ~
  turnaround: ~
  energy: ~
  source: ~
"""


def _config(tmp_path: Path, address_map: str = "RoCoBaRaCh") -> str:
    path = tmp_path / f"ddr-{address_map}.yaml"
    path.write_text(DDR.format(map=address_map))
    return str(path)


def _replay(cli, trace: Path, hw: str, *extra: str) -> dict[str, object]:
    result = cli("dram", "replay", str(trace), "--hw", hw, "--json", *extra)
    assert result.code == 0, result.err
    doc: dict[str, object] = json.loads(result.out)
    return doc


def test_a_sequential_stream_takes_the_hand_derived_time(cli, tmp_path: Path) -> None:
    """2048 reads of consecutive 64-byte bursts, all at once (test_sequential_stream_bandwidth_by_hand): the
    last data ends at DRAM cycle 8354 = 5221.25 ns; 8 misses, 8 conflicts (row 1 of each bank), 2032 hits."""
    trace = tmp_path / "seq.trace"
    trace.write_text("".join(f"LD 0x{64 * k:x}\n" for k in range(2048)))
    doc = _replay(cli, trace, _config(tmp_path))
    assert (doc["format"], doc["requests"], doc["reads"], doc["writes"]) == ("ramulator", 2048, 2048, 0)
    assert doc["cycles"] == 8354 and doc["ns"] == pytest.approx(8354 / 1.6)
    assert doc["bandwidth_gb_s"] == pytest.approx(2048 * 64 / (8354 / 1.6))
    assert (doc["row_hits"], doc["row_misses"], doc["row_conflicts"]) == (2032, 8, 8)


def test_dramsim3_requests_are_made_at_their_cycles(cli, tmp_path: Path) -> None:
    """test_row_hit_and_row_miss, RoBaRaCoCh: a read of bank 0 row 0 at 0 (ACT 0, RD 22, data [44, 48)), the next
    column at 1000 (a hit: data [1022, 1026)), bank 1 at 2000 (a miss: data [2044, 2048)); decimal addresses
    are read too."""
    trace = tmp_path / "t.ds3"
    trace.write_text("0x0 READ 0\n64 READ 1000\n0x2000 READ 2000\n")
    doc = _replay(cli, trace, _config(tmp_path, "RoBaRaCoCh"))
    assert doc["format"] == "dramsim3"
    assert doc["cycles"] == 2048
    assert (doc["row_hits"], doc["row_misses"], doc["row_conflicts"]) == (1, 2, 0)


def test_writes_wait_in_their_queue_while_reads_are_served(cli, tmp_path: Path) -> None:
    """LD, ST, LD to one row of bank 0 (RoBaRaCoCh), all at once: the controller serves the two reads first (the
    write waits in its queue, below its watermark, until no read waits): ACT 0, RD 22 and 22 + tCCD_L 8 = 30;
    then the write, tRTW = 12 after the last RD: WR 42, its data [58, 62). Served in request order it would
    pay both turnarounds: RD 22, WR 34 (data to 54), RD 54 + tWTR_L 12 = 66, data ending at 92
    (test_read_to_write_and_write_to_read_turnaround)."""
    trace = tmp_path / "t.ram"
    trace.write_text("LD 0x0\nST 0x40\nLD 0x80\n")
    assert _replay(cli, trace, _config(tmp_path, "RoBaRaCoCh"), "--format", "ramulator")["cycles"] == 62


def test_a_later_row_hit_goes_before_an_older_row_switch(cli, tmp_path: Path) -> None:
    """Bank 0 (RoBaRaCoCh: row r of bank 0 starts at r · 8 banks · 8 KiB), all at once: row 0, row 1, row 0
    again. FR-FCFS serves both row-0 reads first: ACT 0, RD 22 and 22 + tCCD_L 8 = 30; then row 1: PRE at
    max(ACT + tRAS 52, RD 30 + tRTP 12) = 52, ACT 74, RD 96, data ending at 96 + 22 + 4 = 122: a hit, a miss and
    a conflict. In request order the third read would switch back (PRE 126, ACT 148, RD 170, end 196)."""
    trace = tmp_path / "t.ram"
    trace.write_text(f"LD 0x0\nLD 0x{8 * 8192:x}\nLD 0x40\n")
    doc = _replay(cli, trace, _config(tmp_path, "RoBaRaCoCh"))
    assert doc["cycles"] == 122
    assert (doc["row_hits"], doc["row_misses"], doc["row_conflicts"]) == (1, 1, 1)


def test_the_simple_model_replays_without_rows(cli, tmp_path: Path) -> None:
    """eyeriss-v1's simple DRAM: 8 B/cycle, 64-byte bursts, 10 cycles of latency: one read's data ends at
    10 + 64 / 8 = 18 core cycles (200 MHz: 90 ns); it has no rows to count."""
    trace = tmp_path / "one.trace"
    trace.write_text("LD 0x0\n")
    doc = _replay(cli, trace, "eyeriss-v1")
    assert doc["cycles"] == 18 and doc["ns"] == pytest.approx(90.0)
    assert doc["row_hits"] is None and doc["row_conflicts"] is None


@pytest.mark.parametrize(("text", "fragment"), [
    ("", "no requests"),
    ("LD\n", "expected `LD ADDR`"),
    ("XX 0x40\n", "expected `LD ADDR`"),
    ("LD 0xZZ\n", "is not a number"),
    ("0x0 READ 10\n0x40 READ 5\n", "before the previous one's"),
    ("0x0 READ 1\n0x40 READ 5 7\n", "expected `ADDR READ|WRITE CYCLE`"),
])
def test_bad_traces_are_one_line_errors(cli, tmp_path: Path, text: str, fragment: str) -> None:
    trace = tmp_path / "bad.trace"
    trace.write_text(text)
    assert_one_line_error(cli("dram", "replay", str(trace), "--hw", "eyeriss-v1"), str(trace), fragment)


def test_a_missing_trace_is_a_one_line_error(cli, tmp_path: Path) -> None:
    assert_one_line_error(cli("dram", "replay", str(tmp_path / "none"), "--hw", "eyeriss-v1"), "cannot read")
