"""`hwsim report FILE --html OUT.html`: one self-contained page about a simulation trace.

The run's configuration, a per-layer table, the energy breakdown, the DRAM's statistics, bandwidth and
occupancy over time (figures embedded as PNG data URIs, so the page needs
nothing else) and the cross-check against the analytic model:
row-stationary traces of zoo networks are compared with the integer-tiled
estimate (`hwsim check`), depth-first traces with the depth-first model.
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import json
from typing import Any

import hwsim
import hwsim.trace
from hwsim.cli.commands import COMMAND_HELP
from hwsim.cli.output import console, format_bytes, format_count, write_atomically
from hwsim.flows.check import check_trace
from hwsim.hardware.energy import COMPONENTS
from hwsim.metrics import TraceMetrics, derive
from hwsim.metrics.derive import not_traced
from hwsim.metrics.dram_stats import dram_report
from hwsim.metrics.plots import plot, require_matplotlib

FIGURES = ("energy", "bandwidth", "occupancy", "timeline")
STYLE = """body{font-family:sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#eee}td:first-child,th:first-child{text-align:left}.pass{color:#070;font-weight:bold}
.fail{color:#b00;font-weight:bold}.na{color:#777}img{max-width:100%;border:1px solid #ddd;margin:.5em 0}"""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("report", help=COMMAND_HELP["report"])
    p.add_argument("file", metavar="FILE.h5")
    p.add_argument("--html", metavar="OUT.html", required=True, help="page to write")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    require_matplotlib()
    with hwsim.trace.open(args.file) as trace:
        metrics = derive(trace)
        attrs = dict(trace.attrs)
        figures = {kind: _figure(trace, kind) for kind in FIGURES}
        check = cross_check(trace, metrics)
        levels = frozenset(trace.levels)
    page = render(args.file, attrs, metrics, figures, check, levels)
    write_atomically(args.html, lambda tmp: _write_text(tmp, page))
    console().print(f"report on {args.file} written to {args.html} (cross-check: {check['status']})")
    return 0


def _write_text(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _figure(trace: hwsim.trace.Trace, kind: str) -> str:
    """The figure as a PNG data URI."""
    buffer = io.BytesIO()
    plot(trace, kind, lambda fig: fig.savefig(buffer, format="png", dpi=100))
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def cross_check(trace: hwsim.trace.Trace, metrics: TraceMetrics) -> dict[str, Any]:
    """{"status": PASS | FAIL | not available, "detail": one line}: the analytic model against this trace."""
    check = check_trace(trace, metrics)
    return {"status": check.status, "detail": check.detail}


def _config_rows(attrs: dict[str, Any]) -> list[tuple[str, str]]:
    """The run's settings as (name, value with its unit): the clock in MHz, not a raw float of hertz."""
    rows = [(k, str(attrs.get(k))) for k in ("network", "hardware", "mapper", "batch")]
    rows.append(("clock", f"{float(attrs.get('clock_hz', 0)) / 1e6:g} MHz"))
    rows.append(("word", f"{attrs.get('word_bits')} bit"))
    rows.append(("hwsim version", str(attrs.get("hwsim_version"))))
    return rows


def render(path: str, attrs: dict[str, Any], metrics: TraceMetrics, figures: dict[str, str],
           check: dict[str, Any], levels: frozenset[str]) -> str:
    """The page; `levels`: those the trace recorded (what it cannot give reads "not traced")."""
    e = html.escape
    hw = metrics.hardware
    clock_hz = hw.clock_hz
    missing = not_traced((*COMPONENTS, "utilization"), levels, hw)
    total_pj = {c: sum(l.energy_pj.get(c, 0.0) for l in metrics.layers) for c in COMPONENTS if c not in missing}
    rows = []
    for l in metrics.layers:
        if l.end_cycle <= 0 and not sum(l.energy_pj.values()):
            continue
        utilization = "not traced" if "utilization" in missing else f"{l.utilization:.2f}"
        rows.append(f"<tr><td>{e(l.name)}</td><td>{format_count(l.cycles)}</td><td>{l.cycles / clock_hz * 1e3:.3f}</td>"
                    f"<td>{format_count(l.compute.macs)}</td><td>{utilization}</td>"
                    f"<td>{sum(l.energy_pj[c] for c in total_pj) / 1e6:,.1f}</td>"
                    f"<td>{format_bytes(l.dram_bytes)}</td></tr>")
    all_pj = max(1e-12, sum(total_pj.values()))
    energy_rows = "".join(f"<tr><td>{e(c)}</td><td>{pj / 1e6:,.1f}</td><td>{pj / all_pj:.1%}</td></tr>"
                          for c, pj in total_pj.items() if pj)
    energy_rows += "".join(f"<tr><td>{e(c)}</td><td>not traced</td><td></td></tr>" for c in missing
                           if c != "utilization")
    of = f" of the traced levels ({', '.join(sorted(levels))}; not traced: {', '.join(missing)})" if missing else ""
    dram_rows = "".join(f"<tr><td>{e(d.name)}</td><td>{d.value:,.4g}</td><td>{e(d.unit)}</td>"
                        f"<td style='text-align:left'>{e(d.description)}</td></tr>"
                        for d in dram_report(hw, metrics.layers))
    dram_section = (f"<h2>DRAM ({e(hw.dram.model)})</h2><table><tr><th>statistic</th><th>value</th><th>unit</th>"
                    f"<th>what</th></tr>{dram_rows}</table>" if dram_rows else "")
    status_class = {"PASS": "pass", "FAIL": "fail"}.get(check["status"], "na")
    config = "".join(f"<tr><td>{e(k)}</td><td>{e(v)}</td></tr>" for k, v in _config_rows(attrs))
    hardware_json = e(json.dumps(json.loads(attrs.get("hardware_json", "{}")), indent=2))
    images = "".join(f"<h2>{e(kind.capitalize())}</h2><img alt='{e(kind)}' src='{uri}'>"
                     for kind, uri in figures.items())
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>hwsim report: {e(str(attrs.get('network')))} on {e(hw.name)}</title>
<style>{STYLE}</style></head><body>
<h1>{e(str(attrs.get('network')))} on {e(hw.name)}</h1>
<p>Trace <code>{e(path)}</code>: {format_count(metrics.cycles)} cycles = {metrics.cycles / clock_hz * 1e3:,.3f} ms,
{sum(total_pj.values()) / 1e9:,.3f} mJ{e(of)}. Cross-check: <span class="{status_class}">{e(check['status'])}</span>
({e(check['detail'])}).</p>
<h2>Configuration</h2><table>{config}</table>
<details><summary>accelerator ({e(hw.description or hw.name)})</summary><pre>{hardware_json}</pre></details>
<h2>Layers</h2><table><tr><th>layer</th><th>cycles</th><th>ms</th><th>MACs</th><th>utilization</th>
<th>energy µJ</th><th>DRAM</th></tr>{''.join(rows)}</table>
<h2>Energy by component</h2><table><tr><th>component</th><th>µJ</th><th>share</th></tr>{energy_rows}</table>
{dram_section}
{images}
<p class="na">hwsim {e(hwsim.__version__)}</p>
</body></html>
"""
