"""Simulate a schedule into a trace file and a counting sink at once (`Tee`): the executor's records go straight to
a `TraceWriter`, and the totals reports are priced from are kept while they go, so no report reads the trace back."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import hwsim
from hwsim.errors import HwsimError
from hwsim.hardware.loader import to_dict
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.nest.format import LoopNest, mapping_data
from hwsim.mapping.schedule import Schedule
from hwsim.sim.executor import SIM_LEVELS, LayerRun, RecordOptions, SimResult, simulate
from hwsim.sim.machine import Machine
from hwsim.sparsity.profile import DENSE, SparsityProfile
from hwsim.trace.sinks import CountingSink, Tee
from hwsim.trace.writer import TraceWriter, attrs_json
from hwsim.workload.ir import LayerKind


def trace_attrs(schedule: Schedule, hw: Accelerator, sparsity: SparsityProfile) -> dict[str, str | int | float]:
    """What makes a trace self-describing: hardware, network, schedule parameters, version, units."""
    attrs: dict[str, str | int | float] = {
        "network": schedule.network,
        "hardware": hw.name,
        "hardware_json": json.dumps(to_dict(hw)),
        "mapper": schedule.mapper,
        "batch": schedule.batch,
        "schedule_json": json.dumps({ls.name: ls.info.record() for ls in schedule.layers}, default=str),
        "sparsity_json": json.dumps(sparsity.record()),  # where the layers' zeros came from, and their fractions
        "hwsim_version": hwsim.__version__,
        "clock_hz": hw.clock_hz,
        "word_bits": hw.precision_bits,
        # the word each layer ran at, by layer index (mixed precision: not all the config's)
        "layer_word_bits_json": json.dumps([ls.word_bits or hw.precision_bits for ls in schedule.layers]),
        # the core each layer (unit of work) ran on, by layer index, and the works it waited for
        "layer_cores_json": json.dumps([ls.core for ls in schedule.layers]),
        "layer_after_json": json.dumps([list(schedule.waits_for(i)) for i in range(len(schedule.layers))]),
        # (operand, first word, words) of the DRAM regions each layer's accesses stay within, where declared
        "dram_regions_json": json.dumps({ls.name: ls.dram_regions for ls in schedule.layers if ls.dram_regions}),
    }
    if schedule.mapping is not None:  # the mapping as data: a check can recount it from the trace alone
        attrs["mapping_json"] = json.dumps(mapping_data(schedule.mapping))
    attrs["import_json"] = json.dumps(import_record(schedule))
    return attrs


def import_record(schedule: Schedule) -> dict[str, object]:
    """What the run leaves out: the network's MACs and the layers an import passed through at zero cost
    (ONNX ops hwsim cannot model, admitted with --allow-unknown), by op."""
    by_op: dict[str, list[str]] = {}
    for ls in schedule.layers:
        if ls.layer.kind is LayerKind.PASSTHROUGH:
            by_op.setdefault(ls.layer.op_type or "?", []).append(ls.layer.name)
    return {"macs": sum(ls.layer.macs for ls in schedule.layers),
            "passthrough_layers": sum(len(names) for names in by_op.values()), "passthrough_ops": by_op}


@dataclass(frozen=True)
class RecordedRun:
    """A simulation with the totals a counting sink kept while it ran (what reports are priced from), and the
    names its counters are indexed by."""

    result: SimResult
    counts: CountingSink
    layer_names: tuple[str, ...]
    layer_word_bytes: np.ndarray  # bytes of each layer's word, by layer index
    unit_names: tuple[str, ...]
    buffer_names: tuple[str, ...]

    def peak_occupancy_bytes(self) -> dict[str, int]:
        """The most bytes each buffer the schedule used held."""
        peaks = self.counts.peak_bytes()
        return {self.buffer_names[b]: int(peaks[b]) for b in self.counts.used_buffers()}

    def dram_stats(self) -> dict[str, dict[str, float]]:
        """The DRAM model's counters and cycles per layer name (as a trace keeps them)."""
        cycles = self.result.dram_cycles()
        return {run.name: {"cycles": cycles[run.name], **run.dram_counters} for run in self.result.layers}


def record_run(schedule: Schedule, hw: Accelerator, path: str | Path | None,
               levels: frozenset[str] = frozenset(SIM_LEVELS), sparsity: SparsityProfile | None = None,
               progress: Callable[[int, LayerRun], None] | None = None,
               per_transaction: frozenset[str] = frozenset()) -> RecordedRun:
    """Run `schedule` counting every record of `levels` and, unless `path` is None, writing them to the trace at
    `path` (complete only on success); levels in `per_transaction` get one record per transaction instead of one
    per DRAM burst."""
    check_work(schedule)
    names = tuple(ls.name for ls in schedule.layers)
    machine = Machine.build(hw)
    buffers = machine.buffer_names() + schedule.named_buffers()  # named buffer k after the cores' buffers
    counts = CountingSink(len(names), len(machine.units.names), len(buffers))
    options = RecordOptions(levels, per_transaction)
    if path is None:
        result = simulate(schedule, machine, counts, options, progress)
    else:
        attrs = trace_attrs(schedule, hw, sparsity or DENSE)
        attrs["dram_records"] = "transaction" if "dram" in per_transaction else "burst"
        attrs["named_buffers_from"] = len(machine.buffer_names())
        with TraceWriter(path, [l for l in SIM_LEVELS if l in levels], list(names), buffers, attrs,
                         units=machine.units.names) as writer:
            result = simulate(schedule, machine, Tee(writer, counts), options, progress)
            writer.add_attrs({DRAM_STATS_ATTR: attrs_json(dram_stats_document(result))})
    word_bytes = np.array([(ls.word_bits or hw.precision_bits) // 8 for ls in schedule.layers], dtype=np.int64)
    return RecordedRun(result, counts, names, word_bytes, tuple(machine.units.names), tuple(buffers))


def simulate_to_trace(schedule: Schedule, hw: Accelerator, path: str | Path,
                      levels: frozenset[str] = frozenset(SIM_LEVELS), sparsity: SparsityProfile | None = None,
                      progress: Callable[[int, LayerRun], None] | None = None,
                      per_transaction: frozenset[str] = frozenset()) -> SimResult:
    """Run `schedule` and write every record of `levels` to the trace at `path` (complete only on success);
    levels in `per_transaction` get one record per transaction instead of one per DRAM burst."""
    return record_run(schedule, hw, path, levels, sparsity, progress, per_transaction).result


MAX_SIMULATED_TILES = 1_000_000  # tiles (storage-loop iterations) one run may simulate: about a minute, not hours


def check_work(schedule: Schedule) -> None:
    """Refuse up front a loop-nest schedule whose tiles would take hours to simulate (a buffer of a few bytes,
    a huge input), naming its largest layer and how to proceed, instead of running until killed."""
    if schedule.mapping is None:
        return
    nests = [m for m in schedule.mapping.layers if isinstance(m, LoopNest)]
    tiles = sum(nest.storage_iterations() for nest in nests)
    if tiles <= MAX_SIMULATED_TILES:
        return
    largest = max(nests, key=LoopNest.storage_iterations)
    raise HwsimError(f"{schedule.network} on {schedule.hardware}: the mapping moves {tiles:,} tiles "
                     f"({largest.layer} alone {largest.storage_iterations():,}), beyond the {MAX_SIMULATED_TILES:,} "
                     "one simulation takes; enlarge the buffers, give a smaller input (--input WxH), or use "
                     "`hwsim estimate`")


DRAM_STATS_ATTR = "dram_stats_json"


def dram_stats_document(result: SimResult) -> dict[str, object]:
    """The DRAM model's counters per layer with their units and descriptions, and each layer's cycles: what a
    trace keeps so that DRAM energy can be priced by command and DRAM behaviour reported (row hits, bank and
    bus use, refresh) without the simulator."""
    slices = result.dram_cycles()
    return {
        "units": {s.attr: s.unit for s in result.dram_stats},
        "descriptions": {s.attr: s.description for s in result.dram_stats},
        "layers": {run.name: {"cycles": slices[run.name], **run.dram_counters} for run in result.layers},
    }
