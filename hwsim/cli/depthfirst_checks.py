"""Simulated depth-first front points against the closed-form model, as JSON records and a table:
shared by `hwsim depthfirst --simulate` and `hwsim check --depthfirst`."""

from __future__ import annotations

from typing import Any

from hwsim.cli.output import console, table
from hwsim.cli.validation import print_validation, validation_document
from hwsim.flows.depth_first import PointCheck


def check_record(p: PointCheck) -> dict[str, Any]:
    c = p.check
    return {"point": p.position, "ok": c.ok, "trace": c.trace, "cuts": list(c.mapping.cuts),
            "tiling": list(c.mapping.tiling), "weights": str(c.mapping.weights), "cycles": c.cycles,
            "stacks": [{"name": s.name, "tiling": s.tiling, "ok": s.ok,
                        "analytic_line_buffer_bytes": s.analytic_line_buffer_bytes,
                        "simulated_line_buffer_bytes": s.simulated_line_buffer_bytes,
                        "simulated_simultaneous_peak_bytes": s.simulated_simultaneous_peak_bytes,
                        "analytic_dram_bytes": s.analytic_dram_bytes, "simulated_dram_bytes": s.simulated_dram_bytes,
                        "cycles": s.cycles} for s in c.stacks],
            "validation": validation_document(c.validation) if c.validation else None}


def print_checks(checks: tuple[PointCheck, ...], clock_hz: float) -> None:
    t = table("depth-first points simulated: line buffers (sum of the rings' peaks) and DRAM bytes, model vs "
              "simulation; the whole line buffer's simultaneous peak beside them",
              [("point", "right"), ("stacks", "right"), ("weights", "left"), ("line buffer model", "right"),
               ("simulated rings", "right"), ("simultaneous", "right"), ("DRAM model", "right"),
               ("DRAM simulated", "right"), ("latency", "right"), ("equal", "left"), ("physics", "left")])
    for p in checks:
        c = p.check
        t.add_row(str(p.position), str(len(c.stacks)), str(c.mapping.weights), f"{c.analytic_line_buffer_bytes:,} B",
                  f"{c.simulated_line_buffer_bytes:,} B", f"{c.simulated_simultaneous_peak_bytes:,} B",
                  f"{c.analytic_dram_bytes:,} B",
                  f"{c.simulated_dram_bytes:,} B", f"{c.cycles / clock_hz * 1e3:,.3f} ms",
                  "yes" if all(s.ok for s in c.stacks) else "[red]NO[/]",
                  "-" if c.validation is None else "holds" if c.validation.ok else "[red]BROKEN[/]")
    console().print(t)
    for p in checks:
        if p.check.validation is not None and not p.check.validation.ok:
            console().print(f"[red]point {p.position}:[/] the trace breaks the hardware's limits")
            print_validation(p.check.validation)
    for p in checks:
        for s in p.check.stacks:
            if not s.ok:
                console().print(f"[red]point {p.position}, stack {s.name}:[/] line buffer "
                                f"{s.analytic_line_buffer_bytes} vs {s.simulated_line_buffer_bytes} B, DRAM "
                                f"{s.analytic_dram_bytes} vs {s.simulated_dram_bytes} B")


__all__ = ["check_record", "print_checks"]
