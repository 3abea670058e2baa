"""How a multi-core allocation is shown: which core runs which layer (or which output channels), each part's
closed-form bound and energy per image, each core's load, the pipeline bound, and what a search tried."""

from __future__ import annotations

from typing import Any

from hwsim.analytic.multicore import AllocationEstimate
from hwsim.cli.output import console, format_count, table
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.plans import AllocationPlan, CorePart
from hwsim.search.allocation import AllocationSearch


def _parts_text(parts: tuple[CorePart, ...]) -> str:
    """A layer's parts: its core, or each core's output channels or rows (a core's tiles as rows × count)."""
    if len(parts) == 1:
        return str(parts[0].core)
    if any(p.rows for p in parts):
        runs: list[tuple[str, int, int]] = []  # (core, rows, tiles) of consecutive equal parts
        for p in parts:
            if runs and runs[-1][:2] == (p.core, p.rows):
                runs[-1] = (p.core, p.rows, runs[-1][2] + 1)
            else:
                runs.append((p.core, p.rows, 1))
        return " + ".join(f"{core}:{rows}r" + (f"×{n}" if n > 1 else "") for core, rows, n in runs)
    return " + ".join(f"{p.core}:{p.channels}ch" for p in parts)


def print_allocation(plan: AllocationPlan, hw: Accelerator, closed: AllocationEstimate, out: str | None,
                     search: AllocationSearch | None) -> None:
    """The allocation table, the cores' loads, the bound and the search's record."""
    per_image = len(closed.estimate.layers) // max(1, plan.images)
    first = closed.estimate.layers[:per_image]
    t = table(f"{plan.network} on {hw.name}: allocation ({plan.rule}), {plan.images} image(s) streaming; closed form "
              "per image", [("layer", "left"), ("cores", "left"), ("bound cycles", "right"), ("bound by", "left"),
                           ("energy µJ", "right"), ("DRAM bytes", "right")])
    by_layer: dict[str, list[int]] = {}
    names = [n for n, _ in plan.layers]
    k = 0
    for name, parts in plan.layers:
        by_layer[name] = list(range(k, k + len(parts)))
        k += len(parts)
    for name in names:
        works = [first[i] for i in by_layer[name]]
        t.add_row(name, _parts_text(plan.parts(name)), format_count(max(w.latency.bound_cycles for w in works)),
                  "/".join(sorted({w.latency.bottleneck for w in works})),
                  f"{sum(w.total_pj for w in works) / 1e6:.2f}", format_count(sum(w.dram_bytes for w in works)))
    con = console()
    con.print(t)
    loads = ", ".join(f"{c.name} {format_count(cycles)}" for c, cycles in zip(hw.all_cores, closed.bound.core_cycles,
                                                                             strict=True))
    b = closed.bound
    con.print(f"cores' work at their bounds (cycles, all images): {loads}")
    con.print(f"pipeline bound {format_count(b.cycles)} cycles (longest chain of works {format_count(b.path_cycles)}, "
              f"shared DRAM {format_count(b.dram_cycles)}); energy {closed.estimate.total_pj() / 1e9:.4g} mJ for "
              f"{plan.images} image(s)")
    if search is not None:
        rules = ", ".join(f"{rule} {cost:.4g}" if cost is not None else f"{rule} does not fit"
                          for rule, cost in search.rules)
        con.print(f"search under {search.objective}: {search.cost:.4g} (fixed rules: {rules}); priced "
                  f"{search.priced} allocations, {search.refused} refused (a part its core cannot run)")
    con.print(f"written to {out}; replay it with --mapping {out}" if out else
              "write it with --out FILE.yaml to replay it with --mapping")


def allocation_document(plan: AllocationPlan, closed: AllocationEstimate, out: str | None,
                        search: AllocationSearch | None) -> dict[str, Any]:
    """The allocation, its works' closed forms and the bound as one JSON document."""
    b = closed.bound
    return {"allocation": plan.data(), "written_to": out,
            "works": [{"name": e.layer.name, "core": core, "bound_cycles": e.latency.bound_cycles,
                       "energy_pj": e.total_pj, "dram_bytes": e.dram_bytes}
                      for e, core in zip(closed.estimate.layers, closed.cores, strict=True)],
            "pipeline_bound": {"cycles": b.cycles, "path_cycles": b.path_cycles, "dram_cycles": b.dram_cycles,
                               "core_cycles": list(b.core_cycles)},
            "energy_pj": closed.estimate.total_pj(),
            "search": None if search is None else {"objective": search.objective, "cost": search.cost,
                                                   "rules": dict(search.rules), "priced": search.priced,
                                                   "refused": search.refused}}


__all__ = ["allocation_document", "print_allocation"]
