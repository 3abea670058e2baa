"""What the DRAM did over a run, from the counters the trace keeps per layer (`dram_stats_json`): row hits,
misses and conflicts, bank and data-bus utilisation, achieved against peak bandwidth, refresh time and energy
by command. Every statistic carries its unit and what it measures."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from hwsim.hardware.dram import DRAM_ENERGY_PARTS, dram_kind
from hwsim.hardware.schema import Accelerator
from hwsim.metrics.derive import LayerMetrics


@dataclass(frozen=True)
class DramStat:
    """One DRAM statistic of a run."""

    name: str
    value: float
    unit: str
    description: str


def total_counters(layers: Iterable[LayerMetrics]) -> dict[str, float]:
    """The DRAM counters (and cycles) of every layer added up."""
    total: dict[str, float] = {}
    for l in layers:
        for key, value in l.dram_counters.items():
            total[key] = total.get(key, 0.0) + value
    return total


def dram_report(hw: Accelerator, layers: Iterable[LayerMetrics]) -> tuple[DramStat, ...]:
    """The run's DRAM statistics (empty for a trace without DRAM counters)."""
    layers = tuple(layers)
    c = total_counters(layers)
    if not c:
        return ()
    dram = hw.dram
    seconds = c.get("cycles", 0.0) / hw.clock_hz
    moved = c.get("read_amount", 0.0) + c.get("written_amount", 0.0)
    peak = dram.bandwidth_bytes_per_cycle * hw.clock_hz
    achieved = moved / seconds if seconds else 0.0
    stats = [
        DramStat("bytes_moved", moved, "B", "bytes read and written (as asked: partial bursts count their part)"),
        DramStat("bursts", c.get("bursts", 0.0), "count", "bursts moved (partial bursts count whole)"),
        DramStat("achieved_bandwidth", achieved / 1e9, "GB/s", "bytes moved over the run's time"),
        DramStat("peak_bandwidth", peak / 1e9, "GB/s", "all channels' peak bandwidth"),
        DramStat("bandwidth_fraction", achieved / peak if peak else 0.0, "fraction",
                 "achieved over peak bandwidth over the whole run (compute time included)"),
    ]
    if dram_kind(dram.model).prices_commands and dram.device is not None:
        stats += _jedec_stats(hw, c, seconds, layers)
    elif dram.row_buffer is not None:
        stats += _row_stats(c.get("row_hit_bursts", 0.0), c.get("row_miss_bursts", 0.0), None)
    return tuple(stats)


def _row_stats(hits: float, misses: float, conflicts: float | None) -> list[DramStat]:
    bursts = hits + misses + (conflicts or 0.0)
    out = [DramStat("row_hits", hits, "count", "bursts to their bank's open row"),
           DramStat("row_misses", misses, "count", "bursts that opened a row in a closed bank")]
    if conflicts is not None:
        out.append(DramStat("row_conflicts", conflicts, "count",
                            "bursts that closed another open row to open theirs"))
    out.append(DramStat("row_hit_rate", hits / bursts if bursts else 0.0, "fraction", "row hits over bursts"))
    return out


def _jedec_stats(hw: Accelerator, c: Mapping[str, float], seconds: float,
                 layers: tuple[LayerMetrics, ...]) -> list[DramStat]:
    dram = hw.dram
    assert dram.device is not None
    tck_s = 1 / dram.device.command_clock_hz
    dram_cycles = seconds / tck_s
    banks = dram.channels * dram.ranks * dram.device.banks
    stats = _row_stats(c.get("row_hit_bursts", 0.0), c.get("row_miss_bursts", 0.0), c.get("row_conflict_bursts", 0.0))
    stats += [
        DramStat("activates", c.get("activates", 0.0), "count", "ACT commands"),
        DramStat("precharges", c.get("precharges", 0.0), "count", "PRE commands (auto and before refresh included)"),
        DramStat("refreshes", c.get("refreshes", 0.0), "count", "REF commands (one per rank every tREFI)"),
        DramStat("refresh_time", c.get("refresh_dram_cycles", 0.0) * tck_s * 1e6, "µs",
                 "time channels spent refreshing, summed over channels"),
        DramStat("refresh_stall_time", c.get("refresh_stall_dram_cycles", 0.0) * tck_s * 1e6, "µs",
                 "time requests waited for a refresh to end"),
        DramStat("data_bus_utilisation", c.get("data_bus_dram_cycles", 0.0) / (dram.channels * dram_cycles)
                 if dram_cycles else 0.0, "fraction", "share of the channels' time their data buses moved bursts"),
        DramStat("bank_utilisation", c.get("bank_busy_dram_cycles", 0.0) / (banks * dram_cycles)
                 if dram_cycles else 0.0, "fraction",
                 "share of the banks' time spent activating, precharging or moving data"),
    ]
    for part in DRAM_ENERGY_PARTS:
        energy = sum(l.dram_energy_pj.get(part, 0.0) for l in layers)
        stats.append(DramStat(f"energy_{part}", energy / 1e6, "µJ", f"DRAM energy of {part} (DRAMPower's method)"))
    return stats


__all__ = ["DramStat", "dram_report", "total_counters"]
