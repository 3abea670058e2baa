"""Does `hwsim check` notice a simulator that breaks the hardware's timing? Fifteen deliberate bugs, one at a time.

Each bug is a small edit of the simulator's source, applied to a scratch copy of the package (this checkout is
never touched); `hwsim check NET --hw CONFIG --json` then runs on that copy in a fresh process. For each bug the
tool prints whether the counts comparison still passes, which validator rules broke and one example, and
whether `hwsim check` as a whole failed (exit 1). A bug that no rule notices is reported as MISSED and makes the
tool exit 1.

The JEDEC bugs run on a config with the jedec DRAM model (eyeriss-v1-ddr) whatever --hw says; the GLB port and
psum-wait bugs on tests/configs/eyeriss-v1-one-port.yaml (eyeriss-v1 has three GLB ports and returns a pass's psums
while it runs, where those two bugs change no cycle).

Usage: python tools/timing_bugs.py [--net alexnet] [--hw eyeriss-v1] [--input WxH] [--only NAME,NAME]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


JEDEC_HW = "eyeriss-v1-ddr"  # a shipped config whose DRAM is the jedec model
ONE_PORT_HW = str(ROOT / "tests" / "configs" / "eyeriss-v1-one-port.yaml")  # one GLB port, psums after each pass


@dataclass(frozen=True)
class Bug:
    """One deliberate timing bug: in `path`, `old` (which must occur exactly once) becomes `new`."""

    name: str
    what: str
    path: str
    old: str
    new: str
    hw: str = ""  # the config it shows on (default: --hw)


BUGS = (
    Bug("dram_2x_bandwidth", "DRAM moves bursts at twice its configured bandwidth", "hwsim/sim/dram/simple.py",
        'channel_rate = exact_rate(cfg.bandwidth_bytes_per_cycle, f"{name}.bandwidth") / cfg.channels',
        'channel_rate = exact_rate(cfg.bandwidth_bytes_per_cycle, f"{name}.bandwidth") / cfg.channels * 2'),
    Bug("dram_no_latency", "DRAM access latency removed", "hwsim/sim/dram/simple.py",
        "latency = np.full(len(bursts), self.cfg.latency_cycles * tpc, dtype=np.int64)",
        "latency = np.full(len(bursts), 0, dtype=np.int64)"),
    Bug("glb_port_ignored", "GLB transfers start without waiting for a free port", "hwsim/sim/sram.py",
        "port, start_cycle = self._scheduler.pick_server(banks_ready, self._port_free_at)",
        "port, start_cycle = self._scheduler.pick_server(banks_ready, self._port_free_at)[0], banks_ready",
        ONE_PORT_HW),
    Bug("psums_not_awaited", "passes do not wait for the psums they read to be stored", "hwsim/sim/executor.py",
        "yield from self.stored.wait_for(writer)\n            waited",
        "yield from self.stored.wait_for(-1)\n            waited", ONE_PORT_HW),
    Bug("psum_wait_by_start_address", "a pass waits only for psum stores that begin at the address it reads, not "
        "for every store overlapping its words (the simulator's behaviour before this tool existed)",
        "hwsim/sim/executor.py", "if lv == level and first < end and address < last), default=-1)",
        "if lv == level and first == address), default=-1)", ONE_PORT_HW),
    Bug("psums_streamed_early", "psums streamed out of the RFs from when the array is free, before their pass "
        "starts", "hwsim/sim/executor.py",
        "for k in self._streamed_out(g):\n                end = max(end, runner.transfer(first + k, steps[k], ready))",
        "for k in self._streamed_out(g):\n                end = max(end, runner.transfer(first + k, steps[k], at))"),
    Bug("glb_banks_not_swept", "a GLB transfer frees its banks when it starts, not as its words leave them",
        "hwsim/sim/sram.py", "[start_cycle + left for left in leave]", "[start_cycle for left in leave]"),
    Bug("filters_before_their_loads", "a pass loads its filters into the RFs before its own filter loads land",
        "hwsim/sim/executor.py", "from_loads = steps[k][SRC] in filled", "from_loads = False"),
    Bug("noc_records_dropped", "NoC records are never written", "hwsim/sim/runner.py",
        'self.noc_rows, self.rf_rows = rec.rows.get("noc"), rec.rows.get("rf")',
        'self.noc_rows, self.rf_rows = None, rec.rows.get("rf")'),
    Bug("dram_wrong_address", "a load reads DRAM at its on-chip destination's address", "hwsim/sim/runner.py",
        "side_end = self._side(src, src_core, True, s[SRC_ADDR], moved, READ, operand, index, at)",
        "side_end = self._side(src, src_core, True, s[DST_ADDR] if src == _DRAM else s[SRC_ADDR], moved, READ, "
        "operand, index, at)"),
    Bug("dram_tccd_l_ignored", "jedec: column commands to one bank group tCCD_S apart, not tCCD_L",
        "hwsim/sim/dram/banks.py", "gaps = np.where(group[1:] == group[:-1], max(t.ccd_l, t.bl), max(t.ccd_s, t.bl))",
        "gaps = np.where(group[1:] == group[:-1], max(t.ccd_s, t.bl), max(t.ccd_s, t.bl))", JEDEC_HW),
    Bug("dram_no_refresh", "jedec: the banks are never refreshed", "hwsim/sim/dram/banks.py",
        "self.next_refresh = t.refi\n", "self.next_refresh = 1 << 62\n", JEDEC_HW),
    Bug("dram_trcd_ignored", "jedec: a column command follows its ACT at once (tRCD ignored)",
        "hwsim/sim/dram/banks.py", "bank_ready[a.bank] = a.act + t.rcd", "bank_ready[a.bank] = a.act", JEDEC_HW),
    Bug("dram_trp_ignored", "jedec: an ACT follows the PRE of its bank at once (tRP ignored)",
        "hwsim/sim/dram/banks.py", "self.act_ready[bank] if pre is None else pre + t.rp,",
        "self.act_ready[bank] if pre is None else pre,", JEDEC_HW),
    Bug("dram_acts_not_counted", "jedec: activates are not counted (nor priced)", "hwsim/sim/dram/banks.py",
        "tally.activates += len(acts)", "tally.activates += 0", JEDEC_HW),
)


def scratch_copy(bug: Bug, into: Path) -> Path:
    """The package copied under `into` with `bug` applied; the directory to put on PYTHONPATH."""
    shutil.copytree(ROOT / "hwsim", into / "hwsim", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "configs", into / "configs")  # shipped configs are found beside the package
    target = into / bug.path
    text = target.read_text()
    if text.count(bug.old) != 1:
        raise SystemExit(f"{bug.name}: {bug.path} no longer holds the line the bug edits exactly once; update "
                         "tools/timing_bugs.py")
    target.write_text(text.replace(bug.old, bug.new))
    return into


def run_check(pythonpath: Path, net: str, hw: str, size: str = "") -> tuple[int, dict[str, object]]:
    """`hwsim check NET --hw HW [--input SIZE] --json` with the package at `pythonpath`; (exit code, its
    document)."""
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    resize = ["--input", size] if size else []
    done = subprocess.run([sys.executable, "-m", "hwsim.cli.main", "check", net, "--hw", hw, *resize, "--json"],
                          capture_output=True, text=True, env=env, cwd=pythonpath, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"hwsim check failed to run (exit {done.returncode}): {done.stderr.strip()[-400:]}")
    return done.returncode, json.loads(done.stdout)


def report(name: str, code: int, doc: dict[str, object]) -> bool:
    """Print one line per run; whether some rule (or count) noticed."""
    validation = doc.get("validation") or {}
    assert isinstance(validation, dict)
    broken = [r for r in validation.get("rules", []) if r["violations"]]
    counts_ok = not doc.get("mismatches")
    rules = ", ".join(f"{r['rule']} ({r['violations']:,})" for r in broken) or "none"
    print(f"{name:22s} exit {code}  counts {'equal' if counts_ok else 'DIFFER'}  rules broken: {rules}")
    for r in broken:
        print(f"{'':24s}{r['rule']}: {r['examples'][0] if r['examples'] else ''}")
    return code == 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--net", default="alexnet")
    parser.add_argument("--hw", default="eyeriss-v1")
    parser.add_argument("--input", default="", metavar="WxH", help="the network's input size (default its own)")
    parser.add_argument("--only", default="", help="comma-separated bug names (default: all)")
    args = parser.parse_args()
    chosen = [b for b in BUGS if not args.only or b.name in args.only.split(",")]
    for hw in dict.fromkeys(b.hw or args.hw for b in chosen):
        print(f"hwsim check {args.net} --hw {hw}, with each bug applied in a scratch copy of the package")
        code, doc = run_check(ROOT, args.net, hw, args.input)
        if not report("(no bug)", code, doc) and code == 0:
            print(f"{'':24s}the unmodified simulator passes")
    missed = []
    for bug in chosen:
        with tempfile.TemporaryDirectory(prefix=f"hwsim-bug-{bug.name}-") as tmp:
            code, doc = run_check(scratch_copy(bug, Path(tmp)), args.net, bug.hw or args.hw, args.input)
            if not report(bug.name, code, doc):
                missed.append(bug.name)
    print("MISSED: " + ", ".join(missed) if missed else f"all {len(chosen)} bugs caught")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
