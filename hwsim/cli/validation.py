"""How the trace validator's result is shown: a rich table of its rules, or a JSON document."""

from __future__ import annotations

from typing import Any

from hwsim.check.validate import Validation
from hwsim.cli.output import console, format_count, table

PHYSICS = "physics (evidence: the trace alone against the hardware's limits, no simulator code)"
RULE_TEXT = {
    "bandwidth": "no transfer faster than its component's width, no window past DRAM bandwidth",
    "ports": "no port, bank, bus or PE array serving more than it can at once",
    "dram_latency": "DRAM data no sooner than its latency after the earliest request",
    "dependencies": "layers after what they wait for; loads, pass, stores in order; psums read after written",
    "occupancy": "no buffer over its capacity",
    "addresses": "every access inside its buffer or its tensor's DRAM region",
    "levels": "every level the schedule moves data through has records",
    "units": "every record at a unit of its level, on its layer's core (or one its link reaches)",
    "jedec": "DRAM commands keep the device's timing: tRCD, tRP, tRAS, tRC, tCCD, tRRD, tFAW, tWTR, tRTW, refresh",
    "dram_commands": "the DRAM commands are those behind the bursts and the DRAM counters",
}


def validation_document(v: Validation) -> dict[str, Any]:
    return {"file": v.path, "ok": v.ok, "notes": list(v.notes),
            "rules": [{"rule": r.rule, "checks": RULE_TEXT[r.rule], "checked": r.checked, "violations": r.violations,
                       "examples": list(r.examples)} for r in v.rules]}


def print_validation(v: Validation) -> None:
    out = console()
    t = table(f"trace validation: {v.path}", [("rule", "left"), ("what it checks", "left"), ("checked", "right"),
                                               ("violations", "right")])
    for r in v.rules:
        t.add_row(r.rule, RULE_TEXT[r.rule], format_count(r.checked), format_count(r.violations),
                  style=None if r.ok else "bold red")
    out.print(t)
    for r in v.rules:
        for example in r.examples:
            out.print(f"[red]{r.rule}[/red]: {example}", highlight=False)
    for note in v.notes:
        out.print(f"not checked: {note}", highlight=False)
    passed = sum(r.ok for r in v.rules)
    out.print(f"{PHYSICS}: {passed}/{len(v.rules)} rules hold")
