"""The DRAM statistics a trace keeps per layer (units and descriptions included) and `hwsim simulate` and
`hwsim report` show (the trace: `ddr_trace` in conftest, AlexNet at 64x64 on eyeriss-v1-ddr)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import dram_bursts

import hwsim.trace


def test_trace_keeps_dram_counters_with_units(ddr_trace: Path) -> None:
    with hwsim.trace.open(ddr_trace) as trace:
        doc = json.loads(trace.attrs["dram_stats_json"])
        bursts, reads = dram_bursts(ddr_trace)
    layers = doc["layers"]
    assert set(doc["units"]) == set(doc["descriptions"]) and "row_hit_bursts" in doc["units"]
    assert all(set(counters) == {"cycles", *doc["units"]} for counters in layers.values())
    assert sum(c["bursts"] for c in layers.values()) == bursts
    assert sum(c["read_bursts"] for c in layers.values()) == reads
    hits, misses, conflicts = (sum(c[k] for c in layers.values())
                               for k in ("row_hit_bursts", "row_miss_bursts", "row_conflict_bursts"))
    assert hits + misses + conflicts == bursts


def test_simulate_and_report_show_dram_statistics(cli, ddr_trace: Path, tmp_path: Path) -> None:
    result = cli("simulate", "alexnet", "--input", "64x64", "--hw", "eyeriss-v1-ddr", "--out",
                 str(tmp_path / "a.h5"), "--json")
    doc = json.loads(result.out)
    stats = {s["name"]: s for s in doc["dram"]}
    assert {"row_hits", "row_misses", "row_conflicts", "bank_utilisation", "achieved_bandwidth", "peak_bandwidth",
            "refresh_time"} <= set(stats)
    assert all(s["unit"] and s["description"] for s in stats.values())
    assert stats["peak_bandwidth"]["value"] == pytest.approx(19.2)  # DDR4-2400 × 8 bytes
    # DRAM energy is priced by command: the parts add up to the DRAM column
    for layer in doc["layers"]:
        assert sum(layer["dram_energy_pj_by_command"].values()) == pytest.approx(layer["energy_pj"]["dram"])
    page = tmp_path / "r.html"
    assert cli("report", str(ddr_trace), "--html", str(page)).code == 0
    html = page.read_text()
    assert "<h2>DRAM (jedec)</h2>" in html and re.search(r"<td>row_hit_rate</td><td>[0-9.]+</td>", html)
