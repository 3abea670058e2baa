"""Non-dominated points of a sweep for two metrics, and their plot.

Point a dominates point b when a is no worse in both metrics and better in one (lower is better,
unless a metric is maximised). The front is every point no other point dominates; points with equal
values in both metrics are all kept.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

Row = dict[str, object]

ALIASES = {"energy": "energy_pj", "energy_per_image": "energy_per_image_pj", "latency": "latency_cycles",
           "time": "latency_s", "dram": "dram_bytes", "util": "utilization"}


def column(name: str) -> str:
    """The table column a short name stands for (energy -> energy_pj, latency -> latency_cycles, ...)."""
    return ALIASES.get(name, name)


def value(row: Row, key: str) -> float | None:
    """`row[key]` as a finite number, else None."""
    v = row.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def pareto_front(rows: Sequence[Row], x: str, y: str, maximize_x: bool = False,
                 maximize_y: bool = False) -> list[int]:
    """Indices into `rows` of the non-dominated rows for columns `x` and `y`, by increasing x (or
    decreasing when maximised); rows without finite numbers in both are left out."""
    sx, sy = (-1.0 if maximize_x else 1.0), (-1.0 if maximize_y else 1.0)
    scored = []
    for i, row in enumerate(rows):
        vx, vy = value(row, x), value(row, y)
        if vx is not None and vy is not None:
            scored.append((sx * vx, sy * vy, i))
    scored.sort()
    front: list[int] = []
    best_y = math.inf
    last: tuple[float, float] | None = None
    for fx, fy, i in scored:
        if fy < best_y or (fx, fy) == last:  # better y than every smaller x, or a copy of the last front point
            front.append(i)
            best_y, last = fy, (fx, fy)
    return front


def plot_front(rows: Sequence[Row], front: Sequence[int], x: str, y: str, title: str,
               save: Callable[[Any], None]) -> None:
    """Every point in grey, the front highlighted and joined; the figure goes to `save`."""
    from hwsim.metrics.plots import require_matplotlib

    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [value(r, x) for r in rows]
    ys = [value(r, y) for r in rows]
    fig, ax = plt.subplots(figsize=(8, 5))
    ax.scatter([a for a, b in zip(xs, ys) if a is not None and b is not None],
               [b for a, b in zip(xs, ys) if a is not None and b is not None], color="0.7", s=14, label="all points")
    front_xs = [v for i in front if (v := xs[i]) is not None]  # every front row has both numbers
    front_ys = [v for i in front if (v := ys[i]) is not None]
    ax.plot(front_xs, front_ys, color="tab:red", marker="o", markersize=5,
            label=f"Pareto front ({len(front)} points)")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    save(fig)
    plt.close(fig)


__all__ = ["ALIASES", "column", "pareto_front", "plot_front"]
