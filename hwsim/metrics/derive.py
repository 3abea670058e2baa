"""Derive per-layer statistics from a trace file, not from the simulator's counters.

Counts per layer × level × operand × access come from summing the `words`
of the records at each memory level (op read / fill / update); the PE
array's work from the `pe` records (see `hwsim.sim.executor` for the record
conventions). Energy prices those counts with the energy table of the
accelerator stored in the trace. Latency of a layer is the span of its
records; utilization is its MACs over that span times the array's peak.

DRAM commands are the exception: the records show bursts, not the activates, precharges and refreshes behind
them, so the trace keeps the DRAM model's counters per layer (attribute `dram_stats_json`), and a jedec DRAM's
energy is priced from those commands (`hwsim.hardware.dram`) rather than per word.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import numpy as np

from hwsim.hardware.dram import dram_kind
from hwsim.hardware.energy import ComputeCounts, energy_table
from hwsim.hardware.loader import from_dict
from hwsim.hardware.precision import layer_hardware
from hwsim.hardware.schema import Accelerator
from hwsim.hardware.tree import core_hardware
from hwsim.trace.reader import Trace
from hwsim.trace.sinks import CountingSink, exact_bincount
from hwsim.vocab import (
    ACCESS_OF_OP,
    ACCESS_SHAPE,
    LEVEL_NAMES,
    OP_NAMES,
    OTHER,
    TRACE_OPERAND_NAMES,
    Level,
    Op,
    Operand,
)

# The trace levels each energy component is priced from (`energy_table(...).price`): a run that did not record
# one of them cannot derive the component (`--trace-levels`), and says so rather than print 0.
COMPONENT_LEVELS: dict[str, frozenset[str]] = {
    "mac": frozenset({"pe"}), "inter_pe": frozenset({"pe"}), "clock": frozenset({"pe", "glb", "dram"}),
    "static": frozenset({"pe", "glb", "dram"}),  # clock and static: over the layer's span (its loads, pass, stores)
    "rf": frozenset({"pe", "rf"}), "glb": frozenset({"glb"}), "l2": frozenset({"l2"}),
    "line_buffer": frozenset({"line_buffer"}), "dram": frozenset({"dram"}), "link": frozenset({"link"}),
}
COMPONENT_LEVELS["control"] = frozenset().union(*COMPONENT_LEVELS.values())  # a share of all the others
UTILIZATION_LEVELS = frozenset({"pe", "glb", "dram"})  # the passes, and the loads and stores that bound a layer's span


def not_traced(components: Iterable[str], levels: frozenset[str], hw: Accelerator) -> tuple[str, ...]:
    """The components (energy components, or "utilization") a trace of `levels` cannot derive on `hw` (an L2,
    line buffers or links `hw` does not have are nothing to trace)."""
    need = {**COMPONENT_LEVELS, "utilization": UTILIZATION_LEVELS}
    absent = {"l2": hw.l2 is None, "line_buffer": hw.line_buffer is None, "link": not hw.links}
    return tuple(c for c in components if not absent.get(c, False) and not need.get(c, frozenset()) <= levels)


@dataclass(frozen=True)
class LayerMetrics:
    """One layer as its records tell it."""

    name: str
    transfers: np.ndarray  # [level, operand, access] words (hwsim.vocab.ACCESS_SHAPE)
    compute: ComputeCounts
    passes: int  # passes on the PE array (their MAC records)
    start_cycle: int  # first record's start (-1: no records)
    end_cycle: int  # last record's end
    energy_pj: dict[str, float]
    level_operand_pj: np.ndarray  # [level, operand]
    utilization: float  # MACs / (span · PEs · MACs per cycle)
    word_bytes: int  # of the word the layer ran at
    compute_cycles: int = 0  # Σ over passes of their cycles on the PE array
    dram_energy_pj: dict[str, float] = field(default_factory=dict)  # by command (jedec DRAM); empty: priced per bit
    dram_counters: dict[str, float] = field(default_factory=dict)  # the DRAM model's counters in the layer
    core: int = 0  # the core it ran on

    @property
    def cycles(self) -> int:
        return max(0, self.end_cycle - self.start_cycle)

    @property
    def dram_bytes(self) -> int:
        """Bytes the layer moved to and from DRAM (words at its own word)."""
        return int(self.transfers[Level.DRAM].sum()) * self.word_bytes


@dataclass(frozen=True)
class TraceMetrics:
    """All layers of a trace, with the accelerator it ran on."""

    network: str
    hardware: Accelerator
    batch: int
    layers: tuple[LayerMetrics, ...]

    def layer(self, name: str) -> LayerMetrics:
        return next(l for l in self.layers if l.name == name)

    @property
    def cycles(self) -> int:
        return max((l.end_cycle for l in self.layers), default=0)


@dataclass
class _Sums:
    """What `_accumulate` gathers per layer."""

    counts: np.ndarray  # [layer, level, operand, access] words
    pe: np.ndarray  # [layer, op, operand] pe counts
    first: np.ndarray  # first record's start
    last: np.ndarray  # last record's end
    passes: np.ndarray  # pass records (one per pass: its MACs)
    pass_cycles: np.ndarray  # Σ of their durations
    link_words: np.ndarray  # [layer, unit] words carried over links


def _accumulate(trace: Trace, n_layers: int) -> _Sums:
    """Words per [layer, level, operand, access], pe counts per [layer, op, operand], per-layer spans, and the
    passes with their cycles: each block of records reduced with bincounts."""
    units = len(trace.unit_names)
    counts = np.zeros((n_layers, *ACCESS_SHAPE), dtype=np.int64)
    pe = np.zeros((n_layers, len(OP_NAMES), len(TRACE_OPERAND_NAMES)), dtype=np.int64)
    passes = np.zeros(n_layers, dtype=np.int64)
    pass_cycles = np.zeros(n_layers, dtype=np.int64)
    first = np.full(n_layers, np.iinfo(np.int64).max, dtype=np.int64)
    last = np.full(n_layers, -1, dtype=np.int64)
    link_words = np.zeros((n_layers, units), dtype=np.int64)
    access = np.full(len(OP_NAMES), -1, dtype=np.int64)
    for op, a in ACCESS_OF_OP.items():
        access[op] = a
    for level in trace.levels:
        for block in trace.records(level):
            if not len(block):
                continue
            layer = block["layer"].astype(np.int64)
            _spans(layer, block["start_cycle"], block["end_cycle"], first, last)
            words = block["words"].astype(np.int64)
            if level == "link":
                link_words += exact_bincount(layer * units + block["unit"], words, link_words.size).reshape(
                    link_words.shape)
            elif level == "pe":
                key = (layer * len(OP_NAMES) + block["op"]) * len(TRACE_OPERAND_NAMES) + block["operand"]
                pe += exact_bincount(key, words, pe.size).reshape(pe.shape)
                mine = (block["op"] == Op.UPDATE) & (block["operand"] == OTHER)
                passes += np.bincount(layer[mine], minlength=n_layers)
                pass_cycles += exact_bincount(layer[mine], (block["end_cycle"] - block["start_cycle"])[mine],
                                              n_layers)
            elif level in LEVEL_NAMES:
                a = access[block["op"]]
                keep = a >= 0
                per_layer = counts.shape[1] * counts.shape[2] * counts.shape[3]
                key = (layer[keep] * per_layer + LEVEL_NAMES.index(level) * counts.shape[2] * counts.shape[3]
                       + block["operand"][keep].astype(np.int64) * counts.shape[3] + a[keep])
                counts += exact_bincount(key, words[keep], counts.size).reshape(counts.shape)
    return _Sums(counts, pe, first, last, passes, pass_cycles, link_words)


def _spans(layer: np.ndarray, start: np.ndarray, end: np.ndarray, first: np.ndarray, last: np.ndarray) -> None:
    """Widen each layer's [first, last] to cover these records (a block holds few layers: one mask each)."""
    for one in np.unique(layer).tolist():
        mine = layer == one
        first[one] = min(first[one], int(start[mine].min()))
        last[one] = max(last[one], int(end[mine].max()))


@dataclass(frozen=True)
class RunCounts:
    """What a report is priced from, whether summed from a trace's records or kept by a counting sink while the
    simulation ran: the accelerator, each layer's name and word, the units' names and the sums."""

    network: str
    hardware: Accelerator
    batch: int
    layer_names: tuple[str, ...]
    layer_word_bytes: np.ndarray  # bytes of each layer's word, by layer index
    unit_names: tuple[str, ...]
    sums: _Sums
    dram_stats: dict[str, dict[str, float]]  # the DRAM model's counters per layer name
    layer_cores: np.ndarray | None = None  # the core each layer ran on (None: all on core 0)


def derive(trace: Trace) -> TraceMetrics:
    """Per-layer counts, energy, latency and utilization of the trace (its records read back and summed)."""
    hw = from_dict(json.loads(trace.attrs["hardware_json"]), where=f"trace {trace.path}: hardware_json")
    names = tuple(trace.layers)
    return price(RunCounts(str(trace.attrs.get("network", "")), hw, int(trace.attrs.get("batch", 1)), names,
                           trace.layer_word_bytes, tuple(trace.unit_names), _accumulate(trace, len(names)),
                           _dram_stats(trace), trace.layer_cores))


def counted_sums(counts: CountingSink, layers: int) -> _Sums:
    """The sums `_accumulate` takes from a trace, from the totals a counting sink kept while the run wrote it."""
    sums = _Sums(np.zeros((layers, *ACCESS_SHAPE), dtype=np.int64),
                 np.zeros((layers, len(OP_NAMES), len(TRACE_OPERAND_NAMES)), dtype=np.int64),
                 np.full(layers, np.iinfo(np.int64).max, dtype=np.int64), np.full(layers, -1, dtype=np.int64),
                 np.zeros(layers, dtype=np.int64), np.zeros(layers, dtype=np.int64),
                 np.zeros((layers, counts.units), dtype=np.int64))
    for i in range(layers):
        first, last = counts.span(i)
        if last >= 0:
            sums.first[i], sums.last[i] = first, last
        sums.passes[i], sums.pass_cycles[i] = counts.passes(i), counts.pass_cycles(i)
        sums.pe[i] = counts.words("pe", i).sum(axis=0)
        sums.link_words[i] = counts.words("link", i).sum(axis=(1, 2))
        for level, name in enumerate(LEVEL_NAMES):
            by_op = counts.words(name, i).sum(axis=0)  # [op, operand]
            for op, access in ACCESS_OF_OP.items():
                sums.counts[i, level, :, access] = by_op[op, :len(Operand)]
    return sums


def price(run: RunCounts) -> TraceMetrics:
    """Per-layer counts, energy, latency and utilization of `run`'s sums, each layer priced on the core it ran on
    at its own word."""
    hw = run.hardware
    cores = run.layer_cores if run.layer_cores is not None else np.zeros(len(run.layer_names), dtype=np.int64)
    views = {(int(c), int(b)): layer_hardware(core_hardware(hw, int(c)), 8 * int(b))
             for c, b in set(zip(cores.tolist(), run.layer_word_bytes.tolist(), strict=True))}
    tables = {key: energy_table(view) for key, view in views.items()}  # each layer priced at its own word
    link_pj = {b: _link_energy_pj(layer_hardware(hw, 8 * b), run.unit_names) for _, b in views}
    sums = run.sums
    counts, pe, first, last = sums.counts, sums.pe, sums.first, sums.last
    layers = []
    for i, name in enumerate(run.layer_names):
        p = pe[i]
        compute = ComputeCounts(int(p[Op.UPDATE, OTHER]), int(p[Op.WRITE, OTHER]), int(p[Op.READ, Operand.FILTER]),
                                int(p[Op.READ, Operand.IFMAP]), int(p[Op.READ, Operand.PSUM]),
                                int(p[Op.UPDATE, Operand.PSUM]), int(p[Op.FILL, Operand.PSUM]),
                                int(p[Op.FILL, Operand.IFMAP]), int(p[Op.FILL, Operand.FILTER]),
                                int(p[Op.SKIP, OTHER]), int(p[Op.SKIP, Operand.FILTER]),
                                int(p[Op.SKIP, Operand.PSUM]))
        word_bytes, core = int(run.layer_word_bytes[i]), int(cores[i])
        view = views[(core, word_bytes)]
        lanes = view.pe_array.pes * view.pe_array.macs_per_cycle
        start = int(first[i]) if last[i] >= 0 else -1
        end = int(last[i]) if last[i] >= 0 else -1
        span = max(0, end - start)
        energy, by_level = tables[(core, word_bytes)].price(counts[i], compute, span)  # clock, static: the span
        if hw.links:
            energy["link"] = float(sums.link_words[i] @ link_pj[word_bytes])
        layers.append(LayerMetrics(name, counts[i], compute, int(sums.passes[i]), start, end, energy, by_level,
                                   compute.macs / (span * lanes) if span else 0.0, word_bytes,
                                   int(sums.pass_cycles[i]), core=core))
    return TraceMetrics(run.network, hw, run.batch,
                        tuple(_priced_by_command(l, hw, run.dram_stats.get(l.name)) for l in layers))


def _link_energy_pj(hw: Accelerator, units: tuple[str, ...]) -> np.ndarray:
    """Per unit of the trace, the energy of one word over it (a link direction; 0 elsewhere), at `hw`'s word."""
    energy = {f"{link.name}.{a}>{b}": link.energy_pj for link in hw.links
              for a, b in (link.between, tuple(reversed(link.between)))}
    return np.array([energy.get(name, 0.0) for name in units], dtype=np.float64)


def _dram_stats(trace: Trace) -> dict[str, dict[str, float]]:
    """The DRAM model's counters and cycles per layer the trace keeps (empty for a trace without them)."""
    raw = trace.attrs.get("dram_stats_json")
    return dict(json.loads(str(raw))["layers"]) if raw is not None else {}


def _priced_by_command(l: LayerMetrics, hw: Accelerator, counters: dict[str, float] | None) -> LayerMetrics:
    """A jedec DRAM's layer energy from its commands (`hwsim.hardware.dram`) instead of per word; the DRAM row of
    the level × operand energy is scaled to match. Per word for the simple model or a trace without counters."""
    if counters is None:
        return l
    kind = dram_kind(hw.dram.model)
    if not kind.prices_commands:
        return replace(l, dram_counters=counters)
    parts = kind.energy_by_command_pj(hw.dram, hw.clock_hz, counters, counters.get("cycles", 0))
    total = sum(parts.values())
    by_level = l.level_operand_pj.copy()
    per_word = by_level[Level.DRAM].sum()
    by_level[Level.DRAM] = by_level[Level.DRAM] * (total / per_word) if per_word else 0.0
    return replace(l, energy_pj={**l.energy_pj, "dram": total}, level_operand_pj=by_level, dram_energy_pj=parts,
                   dram_counters=counters)


def bandwidth(trace: Trace, level: str, bin_cycles: int) -> tuple[np.ndarray, np.ndarray]:
    """Bytes per bin of `bin_cycles` at `level` (each record's words, at its layer's word, spread evenly over its
    cycles): (bin start cycles, bytes per bin). Streams the records, so memory stays bounded."""
    total = np.zeros(0, dtype=np.float64)
    for block in trace.records(level):
        start, end = block["start_cycle"], np.maximum(block["end_cycle"], block["start_cycle"] + 1)
        need = int(end.max() // bin_cycles) + 1 if len(block) else 0
        if need > len(total):
            total = np.pad(total, (0, need - len(total)))
        rate = block["words"] * trace.layer_word_bytes[block["layer"]] / (end - start)
        # A record contributes rate·overlap to each bin it touches; most touch one or two bins.
        b0, b1 = start // bin_cycles, (end - 1) // bin_cycles
        for k in range(int((b1 - b0).max()) + 1 if len(block) else 0):
            b = b0 + k
            live = b <= b1
            lo = np.maximum(start, b * bin_cycles)
            hi = np.minimum(end, (b + 1) * bin_cycles)
            np.add.at(total, b[live], (rate * (hi - lo))[live])
    return np.arange(len(total)) * bin_cycles, total
