"""Evaluate one sweep point into a flat row of metrics (one line of `points.jsonl`, one table row).

`estimate` prices the mapping in closed form (dense activations, as `hwsim estimate` by default): the dataflow's
rule mapping, or with `mapper: search` the best mapping a search finds on the point's hardware under the sweep's
`objective` (so a sweep of designs compares each at its best mapping; searched layers are cached on disk, so
points of the same hardware share them); `simulate` runs the schedule cycle by cycle and prices the same metrics
from the totals counted as it ran, writing a trace only where the sweep keeps traces. A point that fails, for bad
input or any other exception, comes back as a row with status `error` and the message: a sweep never stops for
one point.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path

from hwsim.errors import ConfigError, HwsimError
from hwsim.flows.estimate import estimate_run
from hwsim.flows.mapping import SearchSettings
from hwsim.flows.run import resolve_run
from hwsim.flows.simulate import simulate_run
from hwsim.flows.totals import RunTotals
from hwsim.hardware.energy import COMPONENTS, with_glb_data_size
from hwsim.hardware.loader import Overrides, consistency_errors, parse_config
from hwsim.hardware.schema import Accelerator
from hwsim.hardware.units import BYTES, parse_quantity
from hwsim.sweep.spec import BATCH, GLB_DATA_SIZE, Point
from hwsim.workload.ir import Graph
from hwsim.workload.network import load_network, parse_input_size

Row = dict[str, object]

OK = "ok"
ERROR = "error"
POINT_COLUMNS = ("point_id", "status", "network", "input", "config", "mode", "batch", "mapper", "objective")
HARDWARE_COLUMNS = ("pe_rows", "pe_cols", "glb_bytes", "glb_data_bytes", "glb_read_energy_pj", "word_bits",
                    "clock_hz", "dram_bandwidth_bytes_per_cycle")
METRIC_COLUMNS = ("energy_pj", "energy_per_image_pj", *(f"energy_{c}_pj" for c in COMPONENTS), "latency_cycles",
                  "latency_s", "dram_bytes", "macs", "utilization")
TAIL_COLUMNS = ("trace", "error", "wall_s")


def table_columns(axis_keys: tuple[str, ...]) -> tuple[str, ...]:
    """Every column of a sweep's table: the point, its axis values as written, the hardware it ran on,
    the metrics, then trace, error and wall time."""
    axes = tuple(k for k in axis_keys if k != BATCH)  # the batch column holds it
    return (*POINT_COLUMNS, *axes, *HARDWARE_COLUMNS, *METRIC_COLUMNS, *TAIL_COLUMNS)


def is_axis_column(name: str) -> bool:
    """Whether a table column holds an axis' values (the columns table_columns puts after the point's)."""
    return name not in (*POINT_COLUMNS, *HARDWARE_COLUMNS, *METRIC_COLUMNS, *TAIL_COLUMNS)


def point_hardware(point: Point) -> Accelerator:
    """The base config with the point's settings applied (cross-field rules checked on the result)."""
    overrides = point.hardware_overrides()
    source = f"{point.sweep_file}: axes"
    hw = parse_config(point.config.text, point.config.source, Overrides(source, overrides) if overrides else None)
    data_size = dict(point.settings).get(GLB_DATA_SIZE)
    if data_size is not None:
        hw = with_glb_data_size(hw, int(parse_quantity(data_size, BYTES, None, f"{source}: {GLB_DATA_SIZE}")))
        for message in consistency_errors(hw):
            raise ConfigError(f"{point.config.source} with {GLB_DATA_SIZE}={data_size} ({source}): {message}")
    return hw


@functools.lru_cache(maxsize=8)
def _graph(network: str, input_size: str | None) -> Graph:
    """A network's graph, built once per worker process."""
    return load_network(network, parse_input_size(input_size) if input_size else None).graph


def _hardware_row(hw: Accelerator) -> Row:
    return {"pe_rows": hw.pe_array.rows, "pe_cols": hw.pe_array.cols, "glb_bytes": hw.glb.size_bytes,
            "glb_data_bytes": hw.glb.data_bytes, "glb_read_energy_pj": float(hw.glb.read_energy_pj),
            "word_bits": hw.precision_bits, "clock_hz": float(hw.clock_hz),
            "dram_bandwidth_bytes_per_cycle": float(hw.dram.bandwidth_bytes_per_cycle)}


def _metrics_row(t: RunTotals, hw: Accelerator, batch: int) -> Row:
    total_pj = t.energy_pj
    lanes = hw.pe_array.pes * hw.pe_array.macs_per_cycle
    return {"energy_pj": float(total_pj), "energy_per_image_pj": float(total_pj / batch),
            **{f"energy_{c}_pj": float(v) for c, v in t.energy_by_component_pj.items()},
            "latency_cycles": int(t.latency_cycles), "latency_s": t.latency_cycles / hw.clock_hz,
            "dram_bytes": int(t.dram_bytes), "macs": int(t.macs),
            "utilization": t.macs / (t.latency_cycles * lanes) if t.latency_cycles else 0.0}


def point_row(point: Point) -> Row:
    """The columns that describe a point (before it is evaluated)."""
    return {"point_id": point.point_id, "network": point.network.name, "input": point.network.input_size,
            "config": point.config.name, "mode": point.mode, "batch": point.batch, "mapper": point.mapper,
            "objective": point.objective if point.mapper == "search" else None,
            **{k: str(v) for k, v in point.settings if k != BATCH}}


def evaluate(point: Point, trace_dir: str | None) -> Row:
    """Run one point; its traces (simulate mode) go to `trace_dir`, or nowhere when it is None."""
    start_s = time.perf_counter()
    row = point_row(point)
    row["status"], row["error"], row["trace"] = OK, None, None
    try:
        # the run resolved once: a quantized network runs at the word its graph declares (hwsim.flows.precision)
        mapping = SearchSettings(objective=point.objective) if point.mapper == "search" else None
        spec = resolve_run(_graph(point.network.name, point.network.input_size), point_hardware(point), point.batch,
                           mapping)
        hw = spec.hardware
        row.update(_hardware_row(hw))
        if point.mode == "estimate":
            totals = estimate_run(spec).totals
        elif trace_dir is not None:
            path = Path(trace_dir) / f"{point.point_id}.h5"
            totals = simulate_run(spec, path).totals
            row["trace"] = str(Path("traces") / path.name)
        else:  # no trace kept: none written, the totals counted as the simulation ran
            totals = simulate_run(spec, keep_trace=False).totals
        row.update(_metrics_row(totals, hw, point.batch))
    except HwsimError as exc:  # bad input for this point only, e.g. a layer that cannot fit
        row["status"], row["error"] = ERROR, str(exc)
    except Exception as exc:  # noqa: BLE001 - a failing point is recorded, never stops the sweep
        row["status"], row["error"] = ERROR, f"{type(exc).__name__}: {exc}"
    row["wall_s"] = time.perf_counter() - start_s
    return row


__all__ = ["ERROR", "OK", "evaluate", "is_axis_column", "point_hardware", "point_row", "table_columns"]
