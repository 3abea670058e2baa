"""The fuzz harness on a small seeded budget: every mutant of every family (configs, sweep files, ONNX graphs,
traces) and every hostile input known to have broken hwsim ends as a success with finite numbers or as a
one-line error; never a traceback, a hang, a memory blow-up or a NaN. `python tools/fuzz.py --mutants 500`
runs the full campaign."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO

OUTCOMES_ALLOWED = {"ok", "error"}


def test_seeded_mutants_end_ok_or_as_one_line_errors(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "fuzz.py"), "--mutants", "6", "--seed", "20",
                           "--jobs", "2", "--timeout", "120", "--out", str(tmp_path), "--json"],
                          capture_output=True, text=True, timeout=900, cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stderr
    counts = json.loads(proc.stdout)
    assert set(counts) == {"config", "sweep", "onnx", "trace", "hostile"}
    runs = sum(sum(family.values()) for name, family in counts.items() if name != "hostile")
    assert runs == 6 * 2 + 6 * 3  # a config mutant runs twice (validate, then estimate or simulate)
    # every input known to have broken hwsim once (5 sweep ranges, 6 special files, 2 LRN sizes, a 1 KiB GLB
    # estimated and simulated for 2 networks) is now refused in one line
    assert counts["hostile"] == {"error": 17}
    bad = {family: {k: v for k, v in c.items() if k not in OUTCOMES_ALLOWED} for family, c in counts.items()}
    assert all(not b for b in bad.values()), (bad, (tmp_path / "bad.txt").read_text())
    assert sum(c.get("error", 0) for c in counts.values()) > 0  # the mutants do damage: errors are reported
