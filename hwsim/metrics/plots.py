"""Pictures of a trace: bandwidth per level, buffer occupancy, energy per layer, and a timeline.

Every figure is computed from the trace alone (streamed, like `derive` and
`bandwidth`), drawn with matplotlib (the `plot` extra) on the Agg backend and
written through `write`, which saves to a temporary name and renames.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hwsim.errors import HwsimError
from hwsim.metrics.derive import bandwidth, derive
from hwsim.trace.reader import Trace
from hwsim.vocab import BANDWIDTH_LEVELS, LEVEL_NAMES

PLOT_KINDS = ("bandwidth", "occupancy", "energy", "timeline")
TIME_BINS = 400  # bins over the run for rates and utilization
OPERAND_HATCHES = {"ifmap": "", "filter": "//", "psum": "..", "ofmap": "xx"}


def require_matplotlib() -> None:
    """Fail early, with the fix, when the `plot` extra is missing."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise HwsimError("plots need matplotlib, which is not installed; install it with pip install hwsim[plot]")


def plot(trace: Trace, kind: str, save: Callable[[Any], None]) -> None:
    """Draw `kind` for `trace` and hand the figure to `save` (which writes it)."""
    if kind not in PLOT_KINDS:
        raise HwsimError(f"unknown plot kind {kind!r}; use one of {', '.join(PLOT_KINDS)}")
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5))
    {"bandwidth": _bandwidth, "occupancy": _occupancy, "energy": _energy, "timeline": _timeline}[kind](trace, ax)
    ax.set_title(f"{trace.attrs.get('network')} on {trace.attrs.get('hardware')}: {kind}")
    fig.tight_layout()
    save(fig)
    plt.close(fig)


def _ms(cycles: np.ndarray | int, trace: Trace) -> Any:
    return np.asarray(cycles) / trace.clock_hz * 1e3


def _span_cycles(trace: Trace) -> int:
    return max((int(b["end_cycle"].max()) for level in trace.levels for b in trace.records(level) if len(b)),
               default=1)


def _bandwidth(trace: Trace, ax: Any) -> None:
    """GB/s per level over time (each record's words spread evenly over its cycles)."""
    bin_cycles = max(1, _span_cycles(trace) // TIME_BINS)
    seconds_per_bin = bin_cycles / trace.clock_hz
    for level in BANDWIDTH_LEVELS:
        if level in trace.levels and trace.n_records(level):
            starts, moved_bytes = bandwidth(trace, level, bin_cycles)
            ax.step(_ms(starts, trace), moved_bytes / seconds_per_bin / 1e9, where="post", label=level)
    ax.set_xlabel("time (ms)")
    ax.set_ylabel(f"bandwidth (GB/s, {bin_cycles:,}-cycle bins)")
    ax.legend()


def _occupancy(trace: Trace, ax: Any) -> None:
    """Bytes held in each buffer over time, as logged at every allocation and free."""
    events = trace.occupancy()
    for b, name in enumerate(trace.buffers):
        mine = events[events["buffer"] == b]
        if len(mine) and mine["bytes"].max() > 0:
            ax.step(_ms(mine["cycle"], trace), mine["bytes"] / 1024, where="post", label=name)
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("occupancy (KiB)")
    ax.legend()


def _energy(trace: Trace, ax: Any) -> None:
    """Per layer, energy stacked by level (colour) and operand (hatch), then MACs, RF, clock and control."""
    metrics = derive(trace)
    layers = [l for l in metrics.layers if sum(l.energy_pj.values()) > 0]
    x = np.arange(len(layers))
    bottom = np.zeros(len(layers))
    colours = iter(["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink",
                    "tab:gray", "tab:olive", "tab:cyan"])
    operands = list(OPERAND_HATCHES)
    for li, level in enumerate(LEVEL_NAMES):
        if level == "rf":
            continue  # the RFs are priced with the MACs below
        colour = next(colours)
        for oi, operand in enumerate(operands):
            uj = np.array([l.level_operand_pj[li, oi] for l in layers]) / 1e6
            if uj.any():
                ax.bar(x, uj, bottom=bottom, color=colour, hatch=OPERAND_HATCHES[operand], edgecolor="white",
                       label=f"{level} {operand}")
                bottom += uj
    for component in ("mac", "rf", "inter_pe", "clock", "control"):
        uj = np.array([l.energy_pj.get(component, 0.0) for l in layers]) / 1e6
        if uj.any():
            ax.bar(x, uj, bottom=bottom, color=next(colours), label=component)
            bottom += uj
    ax.set_xticks(x, [l.name for l in layers], rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("energy (µJ)")
    ax.legend(fontsize=7, ncol=2)


def plt_colours(n: int) -> list[str]:
    """`n` distinguishable matplotlib colours (tab10, cycled)."""
    return [f"C{k % 10}" for k in range(n)]


def _timeline(trace: Trace, ax: Any) -> None:
    """Each layer's span as a bar (coloured by its core when there are several), with each PE array's busy share
    over time beneath: dips are stalls (the array waiting for data, buffer space, stores or another core)."""
    metrics = derive(trace)
    layers = [l for l in metrics.layers if l.end_cycle > l.start_cycle >= 0]
    cores = tuple(name.split(".", 1)[0] for name in trace.unit_names if name.endswith(".pe"))
    several = len(cores) > 1
    palette = plt_colours(max(1, len(cores)))
    for row, l in enumerate(layers):
        ax.broken_barh([(float(_ms(l.start_cycle, trace)), float(_ms(l.cycles, trace)))], (row + 0.1, 0.8),
                       color=palette[l.core % len(palette)] if several else "tab:blue")
    ax.set_yticks(np.arange(len(layers)) + 0.5, [f"{l.name} ({cores[l.core]})" if several else l.name
                                                 for l in layers], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time (ms)")
    if "pe" in trace.levels and trace.n_records("pe"):
        bin_cycles = max(1, _span_cycles(trace) // TIME_BINS)
        busy = np.zeros((max(1, len(cores)), 0))
        pe_units = [trace.unit_names.index(f"{c}.pe") for c in cores] if several else []
        for block in trace.records("pe", operand="other"):  # one record per pass for its MACs, one for its ops
            starts, ends = block["start_cycle"], block["end_cycle"]
            which = np.searchsorted(pe_units, block["unit"]) if several else np.zeros(len(block), dtype=np.int64)
            need = int(ends.max() // bin_cycles) + 2
            busy = np.pad(busy, ((0, 0), (0, max(0, need - busy.shape[1]))))
            last = (np.maximum(ends, starts + 1) - 1) // bin_cycles
            for b in range(int((last - starts // bin_cycles).max()) + 1):
                k = starts // bin_cycles + b
                live = k <= last
                overlap = np.minimum(ends, (k + 1) * bin_cycles) - np.maximum(starts, k * bin_cycles)
                np.add.at(busy, (which[live], k[live]), np.maximum(overlap[live], 0))
        util = ax.twinx()
        times = _ms(np.arange(busy.shape[1]) * bin_cycles, trace)
        for c in range(busy.shape[0]):
            util.step(times, np.minimum(1.0, busy[c] / bin_cycles), where="post", linewidth=0.8,
                      color=palette[c % len(palette)] if several else "tab:red",
                      label=f"{cores[c]} PE array busy" if several else "PE array busy")
        util.set_ylim(0, 1.05)
        util.set_ylabel("PE array busy (share of each bin)", color="tab:red")
        if several:
            util.legend(fontsize=7, loc="lower right")
