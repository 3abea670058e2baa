"""The trace validator: the physics of a simulation checked from its trace alone.

`hwsim check` compares counts, which a timing bug leaves equal. These rules read nothing but the trace (its
records, occupancy events, the schedule's groups and the hardware it holds as data) and share no code with
the simulator; each says what the hardware allows and finds every record that breaks it:

- bandwidth: no component moves more than its width allows. A DRAM burst record lasts at least one burst
  slot (burst × channels / bandwidth), and the bytes of the bursts starting in any window of
  `WINDOW_CYCLES` cycles stay within bandwidth × window + one burst per channel (each channel's bursts follow
  one another on its bus). An SRAM transfer (GLB, L2, line buffer) lasts at least ⌈words / width⌉ (+ the L2's
  latency), a NoC transfer ⌈words × word bits / bus bits⌉, and a pass's MACs and operations fit its cycles on
  its active PEs.
- ports: a resource never serves more records at once than it has servers: GLB records ≤ ports and ≤ 1 per
  bank (bank = ⌊address / (size / banks)⌋), the L2 and line buffer one at a time, each NoC bus one, the PE
  array one pass, each direction of a link one transfer (which holds it ⌈words × word bits / width⌉ cycles;
  its record ends `latency` later). Every unit (each core's GLB, NoC buses, PE array) on its own.
- dram_latency: a DRAM transaction's first burst starts at least the configured minimum latency after the
  earliest cycle it can have been requested: a load after the previous group's loads have ended (or the
  layer's start), a store after its pass.
- dependencies: a layer starts after the layers it waits for (the schedule's graph) and the layer before it on
  its core have ended; a group's loads start after the previous group's loads end;
  its pass starts after its loads and its filters' RF fills end; its stores start after the pass ends; a read
  of psums, and the pass it feeds, start after every earlier write of psums to any of its words has ended.
- occupancy: a buffer never holds more than its capacity (GLB partitions, the line buffer, the L2's named
  buffers together).
- addresses: every on-chip transfer lies inside its buffer; every DRAM transfer (a run of one step's bursts)
  inside its layer's region for its operand, where the schedule declared regions; and the declared regions,
  in bytes at each layer's word, of different tensors never overlap (regions starting at one byte are one
  tensor, seen by its writer and its readers).
- levels: every level a group's steps move data through (the schedule's groups say which) holds records of
  that group, for every level the trace records; every step with RF records has a NoC record (its bus transfer).
- units: every record is at a unit of its level (a GLB record at a GLB), and a per-core unit is its layer's
  core's, unless the step crosses a link to or from that core.
- jedec, dram_commands: a JEDEC DRAM's commands keep the device's timing (tRCD, tRP, tRAS, tRC, tRTP, tWR,
  tCCD_S/L, tRRD_S/L, tFAW, tWTR_S/L, tRTW, refresh every tREFI for tRFC), and they are the commands behind
  the trace's bursts and DRAM counters (`hwsim.check.dram_commands`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import partial
from itertools import pairwise
from typing import overload

import numpy as np

from hwsim.check.dram_commands import commands_rule, jedec_rule
from hwsim.hardware.dram import dram_kind
from hwsim.hardware.loader import from_dict
from hwsim.hardware.precision import layer_hardware
from hwsim.hardware.schema import Accelerator, Link
from hwsim.hardware.tree import core_hardware, unit_core
from hwsim.trace import Trace
from hwsim.trace.schema import RECORD_DTYPE
from hwsim.vocab import BUS_OF_OPERAND, NO_ADDRESS, OTHER, TRACE_OPERAND_NAMES, Op, Operand

WINDOW_SHIFT = 8
WINDOW_CYCLES = 1 << WINDOW_SHIFT  # the DRAM bandwidth rule sums the bytes of the bursts starting in windows this long
RULES = ("bandwidth", "ports", "dram_latency", "dependencies", "occupancy", "addresses", "levels", "units", "jedec",
         "dram_commands")
_STEP_BITS = 40  # a (layer, step) key is layer << 40 | step
_NONE = np.iinfo(np.int64).min // 4  # "no bound" in a max
_LATE = np.iinfo(np.int64).max // 4  # "no record" in a min
_SRAM_LEVELS = ("l2", "glb", "line_buffer")
_EXAMPLES = 3  # violations spelled out per rule
_RECORD_FIELDS = RECORD_DTYPE.names or ()


@dataclass(frozen=True)
class RuleResult:
    """One rule over a whole trace: how many things it checked, how many broke it, and the first few."""

    rule: str
    checked: int
    violations: int
    examples: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.violations == 0


@dataclass(frozen=True)
class Validation:
    """Every rule's result for one trace."""

    path: str
    rules: tuple[RuleResult, ...]
    notes: tuple[str, ...] = ()  # what could not be checked, and why

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rules)


class _Tally:
    """Accumulates the checked items and violations of each rule."""

    def __init__(self) -> None:
        self.checked = dict.fromkeys(RULES, 0)
        self.violations = dict.fromkeys(RULES, 0)
        self.examples: dict[str, list[str]] = {rule: [] for rule in RULES}
        self.notes: list[str] = []

    def add(self, rule: str, bad: np.ndarray, describe: Callable[[int], str]) -> None:
        """Count the items of a vectorised check (`bad`: True where broken), describing the first few broken."""
        self.checked[rule] += len(bad)
        where = np.flatnonzero(bad)
        self.violations[rule] += len(where)
        room = _EXAMPLES - len(self.examples[rule])
        self.examples[rule].extend(describe(int(i)) for i in where[:max(0, room)])

    def result(self, path: str) -> Validation:
        return Validation(path, tuple(RuleResult(r, self.checked[r], self.violations[r], tuple(self.examples[r]))
                                      for r in RULES), tuple(self.notes))


class _Records:
    """A level's records as contiguous columns (numpy's field views of 56-byte records are strided and slow):
    `rec["words"]` is a column, `rec[mask]` or `rec[i]` the selected records."""

    def __init__(self, columns: dict[str, np.ndarray]) -> None:
        self.columns = columns
        self._key: np.ndarray | None = None
        self._runs: np.ndarray | None = None

    def key(self) -> np.ndarray:
        """Each record's (layer, step) as one sortable integer, layer << 40 | step."""
        if self._key is None:
            self._key = (self.columns["layer"].astype(np.int64) << _STEP_BITS) | self.columns["step"]
        return self._key

    def runs(self) -> np.ndarray:
        """Where each run of records of one step begins, in file order (a transfer's DRAM bursts follow one
        another): what per-step work reduces first, to sort and compare far fewer rows."""
        if self._runs is None:
            layer, step = self.columns["layer"], self.columns["step"]
            change = np.empty(len(step), bool)
            change[:1] = True
            np.not_equal(step[1:], step[:-1], out=change[1:])
            change[1:] |= layer[1:] != layer[:-1]
            self._runs = np.flatnonzero(change)
        return self._runs

    def __len__(self) -> int:
        return len(self.columns["start_cycle"])

    @overload
    def __getitem__(self, key: str) -> np.ndarray: ...
    @overload
    def __getitem__(self, key: np.ndarray | int) -> _Records: ...

    def __getitem__(self, key: str | np.ndarray | int) -> np.ndarray | _Records:
        if isinstance(key, str):
            return self.columns[key]
        return _Records({name: column[key] for name, column in self.columns.items()})


@dataclass
class _Steps:
    """Per (layer, step) of the trace: the span of its records, its first DRAM burst, which levels recorded it,
    its operand, whether it fills a storage level, and the key (layer << 40 | step), sorted by key."""

    key: np.ndarray
    start: np.ndarray
    end: np.ndarray
    dram_start: np.ndarray
    level_bits: np.ndarray  # uint16
    operand: np.ndarray  # uint8
    fills: np.ndarray  # 1 where the step fills or updates a storage level (a load into a buffer, not the RFs); uint8


@dataclass(frozen=True)
class _Tree:
    """The trace's hardware as units: each unit's level and core, and each core at each layer's word."""

    hw: Accelerator
    words: tuple[int, ...]  # each layer's word in bits
    unit_level: tuple[str, ...]  # per unit: the trace level its records belong to
    unit_core: np.ndarray  # per unit: its core, -1 for a shared unit or a link
    links: dict[int, Link]  # link unit -> its link
    unit_names: tuple[str, ...]

    def views(self, core: int) -> tuple[Accelerator, ...]:
        """Core `core` (a shared unit: the first) as a one-core accelerator at each layer's word."""
        view = core_hardware(self.hw, max(core, 0))
        return tuple(layer_hardware(view, bits) for bits in self.words)


def _tree(trace: Trace, hw: Accelerator) -> _Tree:
    """The units of the trace's table, by the names the simulator gives them (`hwsim.hardware.tree`)."""
    cores = tuple(c.name for c in hw.all_cores)
    levels, owners, links = [], [], {}
    for k, name in enumerate(trace.unit_names):
        core = unit_core(name, cores)
        link = next((l for l in hw.links if name.startswith(l.name + ".") and ">" in name), None)
        if link is not None:
            links[k] = link
        level = "link" if link is not None else name.split(".")[1] if core is not None else name
        levels.append(level)
        owners.append(-1 if core is None else core)
    return _Tree(hw, tuple(8 * int(b) for b in trace.layer_word_bytes), tuple(levels),
                 np.array(owners, dtype=np.int64), links, tuple(trace.unit_names))


def validate_trace(trace: Trace) -> Validation:
    """Check the trace against every rule (module docstring): each level's records whole for its components' rules,
    then the steps and groups of a window of layers at a time (`_step_rules`), then occupancy and DRAM commands."""
    hw = from_dict(json.loads(trace.attrs["hardware_json"]), where=f"trace {trace.path}: hardware_json")
    tree = _tree(trace, hw)
    tally = _Tally()
    recorded = set(trace.levels)
    names = trace.layers
    dram_bursts: dict[str, np.ndarray] | None = None
    psum_access: dict[str, _Records] = {}
    crossing = _crossing_steps(trace, tree) if "link" in recorded else {}
    for level in trace.group_level_bits:
        if level not in recorded:
            continue
        if level == "pe":  # the most records (up to a dozen a pass), of which the rules need a few: streamed
            _pe_level(tally, trace, tree, crossing, names)
            continue
        rec = _Records(trace.columns(level))
        _units_rule(tally, level, rec, tree, trace, crossing)
        units = np.unique(rec["unit"]).tolist()
        for unit in units:  # a level of one unit (DRAM, a core's PE array) is checked without a copy of it
            _component_rules(tally, level, rec if len(units) == 1 else rec[rec["unit"] == unit], tree, unit, trace,
                             names)
        if level in ("dram", *_SRAM_LEVELS):
            psum = rec[rec["operand"] == Operand.PSUM]
            psum_access[level] = psum[(psum["op"] == Op.READ) | (psum["op"] == Op.UPDATE)]
        if level == "dram" and trace.attrs.get("dram_records", "burst") == "burst":
            dram_bursts = {"op": rec["op"], "start_cycle": rec["start_cycle"]}
        del rec
    _step_rules(tally, trace, hw, recorded, psum_access)
    _occupancy_rule(tally, trace, tree)
    if "dram" in recorded and hw.dram.timing is not None and hw.dram.device is not None:
        _command_rules(tally, trace, hw, dram_bursts)
    return tally.result(trace.path)


def _command_rules(tally: _Tally, trace: Trace, hw: Accelerator, bursts: dict[str, np.ndarray] | None) -> None:
    """The JEDEC rules over the trace's DRAM commands (a trace from before they were recorded: a note)."""
    commands = trace.dram_commands()
    if commands is None:
        tally.notes.append("jedec, dram_commands: the trace holds no DRAM commands (written by an older hwsim); "
                           "re-run the simulation to check the JEDEC timing")
        return
    counters: dict[str, float] = {}
    for layer in json.loads(str(trace.attrs.get("dram_stats_json", "{}"))).get("layers", {}).values():
        for key, value in layer.items():
            counters[key] = counters.get(key, 0.0) + float(value)
    jedec_rule(tally.add, commands, hw)
    commands_rule(tally.add, commands, hw, bursts, counters)


def _by_layer(views: tuple[Accelerator, ...], rec: _Records, value: Callable[[Accelerator], int]) -> np.ndarray:
    """`value` of the accelerator each record's layer ran on (its word: mixed precision), per record (one value
    for every layer: a read-only view of it, no column of tens of millions held)."""
    table = np.array([value(v) for v in views], dtype=np.int64)
    if len(table) and (table == table[0]).all():
        return np.broadcast_to(table[0], len(rec))
    return np.take(table, rec.columns["layer"])


def _pe_level(tally: _Tally, trace: Trace, tree: _Tree, crossing: dict[int, set[int]], names: tuple[str, ...]) -> None:
    """The pe level a block at a time: each block's records under the units rule, its pass, other-operation and skip
    records (operand other: what `_pe_rules` reads) kept for the component rules, which then run as over the whole
    level."""
    kept: list[dict[str, np.ndarray]] = []
    work = np.array([Op.UPDATE, Op.WRITE, Op.SKIP])
    for block in trace.column_blocks("pe"):
        rec = _Records({name: block[name] for name in _RECORD_FIELDS})
        _units_rule(tally, "pe", rec, tree, trace, crossing)
        kept.append(rec[(rec["operand"] == OTHER) & np.isin(rec["op"], work)].columns)
    whole = _Records({name: np.concatenate([k[name] for k in kept]) if kept else np.zeros(0, RECORD_DTYPE[name])
                      for name in _RECORD_FIELDS})
    del kept
    units = np.unique(whole["unit"]).tolist()
    for unit in units:
        _component_rules(tally, "pe", whole if len(units) == 1 else whole[whole["unit"] == unit], tree, unit, trace,
                         names)


def _level_table(tables: list[_Steps]) -> _Steps:
    """Step tables of consecutive blocks of one level as `_step_table` of the whole level: per step the first
    start, last end, the operand of its first record, whether any record fills."""
    if len(tables) == 1:
        return tables[0]
    key = np.concatenate([t.key for t in tables]) if tables else np.zeros(0, np.int64)
    if not len(key):
        empty = np.zeros(0, np.int64)
        return _Steps(empty, empty, empty, empty, empty, empty, empty)
    order = np.argsort(key, kind="stable")  # a step's rows in block order: its first record's operand first
    key = key[order]
    cuts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])

    def joined(field: str) -> np.ndarray:
        return np.concatenate([getattr(t, field) for t in tables])[order]
    start = np.minimum.reduceat(joined("start"), cuts)
    return _Steps(key[cuts], start, np.maximum.reduceat(joined("end"), cuts),
                  np.minimum.reduceat(joined("dram_start"), cuts), joined("level_bits")[cuts],
                  joined("operand")[cuts], np.maximum.reduceat(joined("fills"), cuts))


# --- units: every record where its layer ran ---------------------------------------------------------------


def _crossing_steps(trace: Trace, tree: _Tree) -> dict[int, set[int]]:
    """Per (layer, step) key of a link transfer, the cores its link joins (records there may be on them)."""
    cores = tuple(c.name for c in tree.hw.all_cores)
    rec = _Records(trace.columns("link"))
    out: dict[int, set[int]] = {}
    for key, unit in zip(rec.key().tolist(), rec["unit"].tolist()):
        link = tree.links.get(unit)
        if link is not None:
            out.setdefault(key, set()).update(cores.index(end) for end in link.between if end in cores)
    return out


def _units_rule(tally: _Tally, level: str, rec: _Records, tree: _Tree, trace: Trace,
                crossing: dict[int, set[int]]) -> None:
    """A record's unit belongs to its level, and a per-core unit to its layer's core or to a core its step's link
    reaches."""
    unit = rec["unit"]  # (as stored: a per-record column of a level of tens of millions stays narrow)
    names = trace.unit_names
    known = unit < len(tree.unit_level)
    level_ok = np.array([lv == level for lv in tree.unit_level], dtype=bool)
    clipped = np.minimum(unit, len(level_ok) - 1)
    tally.add("units", ~known | ~level_ok[clipped],
              lambda i: f"a {level} record at unit {names[int(unit[i])] if known[i] else unit[i]}, which is not a "
                        f"{level} unit: " + _where(rec, i, trace.layers))
    core = tree.unit_core.astype(np.int32)[clipped]
    home = trace.layer_cores.astype(np.int32)[rec["layer"]]
    del clipped
    away = np.flatnonzero((core >= 0) & (core != home))
    if not len(away):
        return
    keys = rec.key()
    bad = np.zeros(len(rec), bool)
    bad[away] = [int(core[i]) not in crossing.get(int(keys[i]), ()) for i in away.tolist()]
    tally.add("units", bad, lambda i: f"layer {trace.layers[int(rec['layer'][i])]} ran on core "
                                      f"{int(home[i])} but has a record at {names[int(unit[i])]} with no link to it "
                                      f"in its step: " + _where(rec, i, trace.layers))


# --- components: bandwidth, ports, addresses ---------------------------------------------------------------


def _component_rules(tally: _Tally, level: str, rec: _Records, tree: _Tree, unit: int, trace: Trace,
                     names: tuple[str, ...]) -> None:
    """The rules of one unit's records (its core's config at each layer's word)."""
    if not len(rec) or unit >= len(tree.unit_level) or tree.unit_level[unit] != level:
        return  # the units rule reports records at a unit that is not theirs
    views = tree.views(int(tree.unit_core[unit]))
    if level == "dram":
        _dram_rules(tally, rec, tree.hw, _by_layer(views, rec, lambda v: v.word_bytes), trace, names)
    elif level in _SRAM_LEVELS:
        _sram_rules(tally, level, rec, views, names)
    elif level == "noc":
        _noc_rules(tally, rec, views[0], tree.unit_names[unit].rsplit(".", 1)[-1],
                   _by_layer(views, rec, lambda v: v.precision_bits), names)
    elif level == "pe":
        _pe_rules(tally, rec, views[0], names)
    elif level == "link":
        _link_rules(tally, rec, tree.links[unit], _by_layer(views, rec, lambda v: v.precision_bits), names)


def _link_rules(tally: _Tally, rec: _Records, link: Link, word_bits: np.ndarray, names: tuple[str, ...]) -> None:
    """A link transfer holds its direction ⌈words × word bits / width⌉ cycles and ends `latency` after; one at a
    time per direction."""
    start, end, words = rec["start_cycle"], rec["end_cycle"], rec["words"]
    busy = -(-(words * word_bits) // link.width_bits)
    tally.add("bandwidth", (end - start) < busy + link.latency_cycles,
              lambda i: f"link {link.name} transfer lasts {int(end[i] - start[i])} cycles, its words need "
                        f"{int(busy[i])} and the latency {link.latency_cycles}: " + _where(rec, i, names))
    _concurrency(tally, "link", start, end - link.latency_cycles, None, 1,
                 "one transfer per direction")


def _where(rec: _Records, i: int, names: tuple[str, ...]) -> str:
    r = rec[i]
    return (f"layer {names[int(r['layer'])]} step {int(r['step'])}: {int(r['words'])} words at "
            f"{int(r['address'])}, cycles {int(r['start_cycle'])}..{int(r['end_cycle'])}")


_CHUNK_RECORDS = 1 << 20  # the DRAM and SRAM rules work through a level this many records at a time (their
# temporaries)


def _dram_rules(tally: _Tally, rec: _Records, hw: Accelerator, word_bytes: np.ndarray, trace: Trace,
                names: tuple[str, ...]) -> None:
    _dram_bandwidth(tally, rec, hw, word_bytes, trace, names)
    runs = rec.runs()  # addresses per run of one step's records (a transfer's bursts, contiguous): the words it spans
    regions = json.loads(str(trace.attrs.get("dram_regions_json", "{}")))
    declared = np.array([names[k] in regions for k in range(len(names))], dtype=bool)
    tables = _region_tables(regions, names, len(trace.operands))
    negative, outside = np.zeros(len(runs), bool), np.zeros(len(runs), bool)
    for r0 in range(0, len(runs), _CHUNK_RECORDS):  # a chunk of runs at a time: few temporaries of a long level
        r1 = min(r0 + _CHUNK_RECORDS, len(runs))
        lo, hi, layer, operand = _run_spans(rec, runs, r0, r1)
        negative[r0:r1] = lo < 0
        inside = ~declared[layer]
        pair = layer.astype(np.int64) * len(trace.operands) + operand
        for first, last in tables:
            inside |= (lo >= first.ravel()[pair]) & (hi <= last.ravel()[pair])
        outside[r0:r1] = ~inside
    tally.add("addresses", negative,
              lambda k: "dram transfer at a negative address: " + _where(rec, int(runs[k]), names))
    _disjoint_regions(tally, regions, names, trace.layer_word_bytes)
    present = np.bincount(rec["layer"], minlength=len(names)) > 0
    undeclared = [names[k] for k in np.flatnonzero(present & ~declared).tolist()]
    if undeclared:
        tally.notes.append(f"DRAM regions: {len(undeclared)} layers with DRAM records declare none (e.g. "
                           f"{undeclared[0]}): their DRAM addresses are checked only for sign")

    def text(k: int) -> str:
        lo, hi, _, operand = _run_spans(rec, runs, k, k + 1)
        return (f"dram {trace.operands[int(operand[0])]} transfer (words {int(lo[0])}..{int(hi[0])}) outside its "
                f"layer's regions: " + _where(rec, int(runs[k]), names))
    tally.add("addresses", outside, text)


def _run_spans(rec: _Records, runs: np.ndarray, r0: int, r1: int) -> tuple[np.ndarray, ...]:
    """Runs r0 … r1 - 1 of the records (`runs`: where each begins): the first word each spans, one past its last,
    its layer and operand."""
    a, b = int(runs[r0]), int(runs[r1]) if r1 < len(runs) else len(rec)
    cuts = runs[r0:r1] - a
    address, words = rec["address"][a:b], rec["words"][a:b]
    lo = np.minimum.reduceat(address, cuts)
    hi = np.maximum.reduceat(address + words, cuts)
    return lo, hi, rec["layer"][a:b][cuts], rec["operand"][a:b][cuts]


def _dram_bandwidth(tally: _Tally, rec: _Records, hw: Accelerator, word_bytes: np.ndarray, trace: Trace,
                    names: tuple[str, ...]) -> None:
    """A burst lasts at least its slot and the bursts starting in a window fit its bandwidth; a transaction (one
    record each) lasts at least its bytes' time at the full bandwidth. Per record in chunks."""
    dram = hw.dram
    rate = Fraction(dram.bandwidth_bytes_per_cycle).limit_denominator(1_000_000)  # bytes per cycle, all channels
    start, end, n = rec["start_cycle"], rec["end_cycle"], len(rec)
    bursts = trace.attrs.get("dram_records", "burst") == "burst"
    slot = Fraction(dram.burst_bytes * dram.channels) / rate  # cycles a burst holds its channel's bus
    spare = np.ceil(dram.channels * dram.burst_bytes / float(rate))
    short = np.zeros(n, bool)
    for a in range(0, n, _CHUNK_RECORDS):
        b = min(a + _CHUNK_RECORDS, n)
        least = int(slot) if bursts else np.ceil(rec["words"][a:b] * word_bytes[a:b] / float(rate)) - spare
        short[a:b] = (end[a:b] - start[a:b]) < least
    if bursts:
        tally.add("bandwidth", short, lambda i: f"dram burst lasts {int(end[i] - start[i])} cycles, a burst slot is "
                                                f"{float(slot):.3g}: " + _where(rec, i, names))
        moved = np.bincount(start >> WINDOW_SHIFT, weights=rec["words"] * word_bytes)
        cap = float(rate * WINDOW_CYCLES) + dram.channels * dram.burst_bytes
        tally.add("bandwidth", moved > cap,
                  lambda w: f"dram moves {int(moved[w])} B in cycles {w * WINDOW_CYCLES}..{(w + 1) * WINDOW_CYCLES}, "
                            f"at most {cap:.0f} B fit at {float(rate):.3g} B/cycle")
    else:
        tally.add("bandwidth", short, lambda i: f"dram transaction of {int(rec['words'][i] * word_bytes[i])} B lasts "
                                                f"{int(end[i] - start[i])} cycles: " + _where(rec, i, names))


def _disjoint_regions(tally: _Tally, regions: dict[str, list[list[int]]], names: tuple[str, ...],
                      word_bytes: np.ndarray) -> None:
    """Different tensors' DRAM regions never share a byte: regions that start at the same byte are one tensor
    (its writer's and its readers' views, which may differ in length with their words), the widest taken."""
    ends: dict[int, int] = {}
    for k, name in enumerate(names):
        for _, base, words in regions.get(name, ()):
            if words:
                first = int(base) * int(word_bytes[k])
                ends[first] = max(ends.get(first, first), first + int(words) * int(word_bytes[k]))
    starts = np.array(sorted(ends), dtype=np.int64)
    stops = np.array([ends[s] for s in starts.tolist()], dtype=np.int64)
    reach = np.maximum.accumulate(stops)
    tally.add("addresses", starts[1:] < reach[:-1],
              lambda i: f"dram region at byte {int(starts[i + 1])} overlaps the one ending at byte "
                        f"{int(reach[i])}: two tensors share DRAM")


def _region_tables(regions: dict[str, list[list[int]]], names: tuple[str, ...],
                   operands: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The declared regions as tables [layer, operand] -> (first word, one past the last), one table per region
    of a (layer, operand) pair; an empty slot admits nothing."""
    tables: list[tuple[np.ndarray, np.ndarray]] = []
    slot: dict[tuple[int, int], int] = {}
    for k, name in enumerate(names):
        for operand, base, words in regions.get(name, ()):
            r = slot[(k, operand)] = slot.get((k, operand), -1) + 1
            if r == len(tables):
                tables.append((np.ones((len(names), operands), np.int64), np.zeros((len(names), operands), np.int64)))
            tables[r][0][k, operand], tables[r][1][k, operand] = base, base + words
    return tables


def _sram_words_per_cycle(level: str, hw: Accelerator) -> Fraction:
    """Words a GLB, L2 or line buffer moves per cycle at `hw`'s word."""
    if level == "glb":
        return Fraction(hw.glb.words_per_port)
    if level == "l2":
        assert hw.l2 is not None
        return Fraction(hw.l2.bandwidth_bytes_per_cycle).limit_denominator(1_000_000) / hw.word_bytes
    assert hw.line_buffer is not None
    return Fraction(hw.line_buffer.words_per_port)


def _sram_rules(tally: _Tally, level: str, rec: _Records, views: tuple[Accelerator, ...],
                names: tuple[str, ...]) -> None:
    hw = views[0]
    if level == "glb":
        latency, ports, banks, size = 0, hw.glb.ports, hw.glb.banks, hw.glb.size_bytes
    elif level == "l2":
        cfg_2 = hw.l2
        if cfg_2 is None:
            tally.add("addresses", np.ones(1, bool), lambda i: "the trace has l2 records but its hardware no l2")
            return
        latency, ports, banks, size = cfg_2.latency_cycles, 1, cfg_2.banks, cfg_2.size_bytes
    else:
        cfg_l = hw.line_buffer
        if cfg_l is None:
            tally.add("addresses", np.ones(1, bool), lambda i: "the trace has line_buffer records but its hardware "
                                                               "no line buffer")
            return
        latency, ports, banks, size = 0, 1, 1, cfg_l.size_bytes
    wb = _by_layer(views, rec, lambda v: v.word_bytes)
    numerator = _by_layer(views, rec, lambda v: _sram_words_per_cycle(level, v).numerator)
    denominator = _by_layer(views, rec, lambda v: _sram_words_per_cycle(level, v).denominator)
    start, end, words, address = rec["start_cycle"], rec["end_cycle"], rec["words"], rec["address"]
    short, outside = np.zeros(len(rec), bool), np.zeros(len(rec), bool)
    for a in range(0, len(rec), _CHUNK_RECORDS):  # a chunk at a time: few temporaries of a long level
        b = min(a + _CHUNK_RECORDS, len(rec))
        short[a:b] = (end[a:b] - start[a:b]) < -(-(words[a:b] * denominator[a:b]) // numerator[a:b]) + latency
        there = address[a:b]
        outside[a:b] = (there != NO_ADDRESS) & ((there < 0) | (there + words[a:b] > size // wb[a:b]))

    def least(i: int) -> int:
        return int(-(-(words[i] * denominator[i]) // numerator[i]) + latency)
    tally.add("bandwidth", short, lambda i: f"{level} transfer lasts {int(end[i] - start[i])} cycles, its words "
                                            f"need {least(i)}: " + _where(rec, i, names))
    _concurrency(tally, level, start, end, None, ports, f"{ports} port(s)")
    tally.add("addresses", outside, lambda i: f"{level} access outside its {int(size // wb[i])} words: "
                                              + _where(rec, i, names))
    located = address != NO_ADDRESS
    if banks > 1:
        bank_words = size // banks // wb
        at = np.flatnonzero(located & (words > 0))
        first, last = address[at] // bank_words[at], (address[at] + words[at] - 1) // bank_words[at]
        spans = last - first + 1
        which = np.repeat(at, spans)
        bank = np.repeat(first, spans) + np.arange(len(which)) - np.repeat(np.cumsum(spans) - spans, spans)
        # a transfer sweeps its banks in address order: it holds each while its words there pass
        into = np.maximum(0, bank * bank_words[which] - address[which])
        upto = np.minimum(words[which], (bank + 1) * bank_words[which] - address[which])
        held_from = start[which] + into * denominator[which] // numerator[which]
        held_to = start[which] - (-(upto * denominator[which]) // numerator[which]) + latency
        _concurrency(tally, level, held_from, held_to, bank, 1, "one transfer per bank")


def _noc_rules(tally: _Tally, rec: _Records, hw: Accelerator, bus: str, word_bits: np.ndarray,
               names: tuple[str, ...]) -> None:
    """One bus's records (the unit `CORE.noc.BUS`): each carries operands that bus takes, at its width, one
    transfer at a time."""
    widths = {"ifmap": hw.noc.ifmap_bus_bits, "filter": hw.noc.filter_bus_bits, "psum": hw.noc.psum_bus_bits,
              "psum_out": hw.noc.psum_out_bus_bits}
    if not widths.get(bus):
        tally.add("units", np.ones(1, bool), lambda i: f"noc unit {bus!r} is not a bus of the hardware")
        return
    takes = np.array([BUS_OF_OPERAND[o] == bus.removesuffix("_out") for o in Operand] + [False])
    start, end, words = rec["start_cycle"], rec["end_cycle"], rec["words"]
    tally.add("units", ~takes[rec["operand"]], lambda i: f"the {bus} bus carried a "
                                                        f"{TRACE_OPERAND_NAMES[int(rec['operand'][i])]} transfer: "
                                                        + _where(rec, i, names))
    least = -(-(words * word_bits) // widths[bus])
    tally.add("bandwidth", (end - start) < least,
              lambda i: f"noc transfer lasts {int(end[i] - start[i])} cycles, its words need {int(least[i])} on "
                        f"the {bus} bus: " + _where(rec, i, names))
    _concurrency(tally, "noc", start, end, None, 1, "one transfer per bus")


def _pe_rules(tally: _Tally, rec: _Records, hw: Accelerator, names: tuple[str, ...]) -> None:
    passes = rec[(rec["op"] == Op.UPDATE) & (rec["operand"] == len(Operand))]  # one per pass: its MACs
    passes = passes[np.argsort(_key(passes), kind="stable")]
    ops = rec[(rec["op"] == Op.WRITE) & (rec["operand"] == len(Operand))]
    skipped = rec[(rec["op"] == Op.SKIP) & (rec["operand"] == len(Operand))]
    work = passes["words"].copy()
    key = _key(passes)
    for extra, sign in ((ops, 1), (skipped, -1 if hw.pe_array.zero_skipping else 0)):
        at = np.minimum(np.searchsorted(key, _key(extra)), max(len(key) - 1, 0))
        np.add.at(work, at, sign * extra["words"])
    start, end, active = passes["start_cycle"], passes["end_cycle"], passes["address"]
    pes = hw.pe_array.pes
    tally.add("bandwidth", (active < 1) | (active > pes) | (work > (end - start) * active * hw.pe_array.macs_per_cycle),
              lambda i: f"pe pass of {int(work[i])} MACs and operations on {int(active[i])} of {pes} PEs lasts "
                        f"{int(end[i] - start[i])} cycles: " + _where(passes, i, names))
    _concurrency(tally, "pe", start, end, None, 1, "one pass at a time")


def _concurrency(tally: _Tally, level: str, start: np.ndarray, end: np.ndarray, server: np.ndarray | None,
                 capacity: int, what: str) -> None:
    """At most `capacity` records of each `server` (None: one server) hold it in any cycle ([start, end)
    intervals). A start and an end are sort keys: per server, by cycle, ends before starts (cycles < 2**40,
    servers < 2**22). Sorted apart, the count held at the j-th start is j + 1 less the ends sorted before it (each
    record's start and end fall in the same server, so lower servers' starts and ends cancel): two sorts and a
    search, no index arrays, so a level of tens of millions of records is checked at once. Every end and start is
    a checked item."""
    n = len(start)
    if not n:
        return
    starts = start.astype(np.int64)  # a copy: sorted in place
    starts <<= 1
    starts |= 1  # a start: after the ends of its cycle
    ends = end.astype(np.int64)
    ends <<= 1
    if server is not None:
        lifted = server.astype(np.int64) << 41
        starts |= lifted
        ends |= lifted
        del lifted
    starts.sort()
    ends.sort()
    held = np.arange(1, n + 1, dtype=np.int64)
    for a in range(0, n, _CHUNK_RECORDS):  # (one search of every start would hold a second column of counts)
        held[a:a + _CHUNK_RECORDS] -= np.searchsorted(ends, starts[a:a + _CHUNK_RECORDS], side="right")
    del ends
    busy = np.zeros(2 * n, bool)  # the ends never break the rule
    np.greater(held, capacity, out=busy[n:])

    def text(i: int) -> str:
        key = int(starts[i - n])
        return (f"{level}: {int(held[i - n])} transfers at once at cycle {(key & ((1 << 41) - 1)) >> 1} (server "
                f"{key >> 41}), {what}")
    tally.add("ports", busy, text)


# --- steps and groups: dependencies, DRAM latency, levels --------------------------------------------------


def _key(rec: _Records) -> np.ndarray:
    """Each record's (layer, step) as one sortable integer."""
    return rec.key()


def _step_table(rec: _Records, bit: int, is_dram: bool, storage: bool) -> _Steps:
    """Per step of one level's records: first start, last end (and the first DRAM burst), the level's bit,
    whether it fills a storage level."""
    if not len(rec):
        empty = np.zeros(0, np.int64)
        return _Steps(empty, empty, empty, empty, empty, empty, empty)
    runs = rec.runs()  # runs of one step first: far fewer rows to sort
    key, operand = rec.key()[runs], rec["operand"][runs].astype(np.uint8)
    start = np.minimum.reduceat(rec["start_cycle"], runs)
    end = np.maximum.reduceat(rec["end_cycle"], runs)
    op = rec["op"]
    filling = (np.logical_or.reduceat((op == Op.FILL) | (op == Op.UPDATE), runs).astype(np.uint8) if storage
               else np.zeros(len(runs), np.uint8))
    order = np.argsort(key, kind="stable")
    key = key[order]
    cuts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    start = np.minimum.reduceat(start[order], cuts)
    end = np.maximum.reduceat(end[order], cuts)
    fills = np.maximum.reduceat(filling[order], cuts)
    # a level's constant columns as read-only views of one value: a table per level is held until they merge
    dram = start if is_dram else np.broadcast_to(np.int64(_LATE), len(cuts))
    return _Steps(key[cuts], start, end, dram, np.broadcast_to(np.uint16(1 << bit), len(cuts)),
                  operand[order][cuts], fills)


def _merge_steps(parts: list[_Steps]) -> _Steps:
    """One row per step over every level's rows. Each level's table holds a step once, sorted: each is placed
    in the union of their steps and folded in (first start, last end, first DRAM burst, levels, the least
    operand, whether any level fills), without sorting every level's rows together."""
    if not parts:
        empty = np.zeros(0, np.int64)
        return _Steps(empty, empty, empty, empty, empty, empty, empty)
    key = np.concatenate([p.key for p in parts])
    key.sort(kind="stable")  # sorted runs, merged (timsort)
    key = key[np.r_[True, key[1:] != key[:-1]]] if len(key) else key
    n = len(key)
    merged = _Steps(key, np.full(n, _LATE), np.full(n, _NONE), np.full(n, _LATE), np.zeros(n, np.uint16),
                    np.full(n, np.iinfo(np.uint8).max, np.uint8), np.zeros(n, np.uint8))
    for p in parts:
        at = np.searchsorted(key, p.key)
        merged.start[at] = np.minimum(merged.start[at], p.start)
        merged.end[at] = np.maximum(merged.end[at], p.end)
        merged.dram_start[at] = np.minimum(merged.dram_start[at], p.dram_start)
        merged.level_bits[at] |= p.level_bits.astype(np.uint16, copy=False)
        merged.operand[at] = np.minimum(merged.operand[at], p.operand)
        merged.fills[at] = np.maximum(merged.fills[at], p.fills)
    return merged


def _group_max(values: np.ndarray, group: np.ndarray, n: int) -> np.ndarray:
    out = np.full(n, _NONE)
    np.maximum.at(out, group, values)
    return out


def _group_min(values: np.ndarray, group: np.ndarray, n: int) -> np.ndarray:
    out = np.full(n, _LATE)
    np.minimum.at(out, group, values)
    return out


def in_step_order(groups: np.ndarray) -> np.ndarray:
    """The schedule's groups by layer, then first step: works on several cores end, and hand on their groups, in
    the order they finish."""
    key = (groups["layer"].astype(np.int64) << _STEP_BITS) | groups["first_step"]
    if len(key) < 2 or np.all(np.diff(key) > 0):
        return groups
    ordered: np.ndarray = groups[np.argsort(key, kind="stable")]
    return ordered


def _step_groups(tally: _Tally, steps: _Steps, groups: np.ndarray, names: tuple[str, ...]) -> np.ndarray | None:
    """Per step, the index of its group (None, with the violation tallied, when the groups are out of order or
    a step belongs to none)."""
    n = len(groups)
    first_key = (groups["layer"].astype(np.int64) << _STEP_BITS) | groups["first_step"]
    if n and np.any(np.diff(first_key) <= 0):
        tally.add("dependencies", np.ones(1, bool), lambda i: "the trace's groups are not in layer and step order")
        return None
    g = np.searchsorted(first_key, steps.key, side="right") - 1
    layer_of_step = (steps.key >> _STEP_BITS).astype(np.int32)
    orphan = (g < 0) | (groups["layer"][np.maximum(g, 0)] != layer_of_step) if n else np.ones(len(steps.key), bool)
    tally.add("dependencies", orphan, lambda i: f"layer {names[int(layer_of_step[i])]} step "
                                                f"{int(steps.key[i] & ((1 << _STEP_BITS) - 1))} has records but "
                                                "belongs to no group of the schedule")
    return None if not n or orphan.any() else g.astype(np.int32 if n < 1 << 31 else np.int64)  # a step's group: a
    # narrow column (the group rules hold several of tens of millions of steps)


STEP_WINDOW_RECORDS = 1 << 22  # the step rules read the records of consecutive layers this many at a time (at least
# one layer's): their per-step tables, some 100 B a step at the peak, stay bounded whatever the input


def _step_rules(tally: _Tally, trace: Trace, hw: Accelerator, recorded: set[str],
                psum_access: dict[str, _Records]) -> None:
    """The group rules over a window of consecutive layers at a time (each window's steps read from every level,
    `_window_steps`), the layers' start cycles carried from window to window; then the psum rule over the whole
    schedule, with every group's pass start."""
    groups = in_step_order(trace.groups())
    first_key = (groups["layer"].astype(np.int64) << _STEP_BITS) | groups["first_step"]
    pass_start = np.full(len(groups), _LATE)
    clock = _LayerClock(trace)
    for first, end in _layer_windows(trace, recorded):
        steps = _window_steps(trace, recorded, first, end)
        g0, g1 = np.searchsorted(groups["layer"], [first, end]).tolist()
        _group_rules(tally, steps, _Window(groups[g0:g1], g0, first, end), hw, trace, recorded, clock,
                     pass_start[g0:g1])
    _psum_rule(tally, psum_access, first_key, groups["compute_step"], trace.layers, pass_start)


def _layer_windows(trace: Trace, recorded: set[str]) -> list[tuple[int, int]]:
    """Consecutive layers (first, end) whose records over the recorded levels number about STEP_WINDOW_RECORDS, at
    least one layer a window (from the layer index; without one, one window of every layer)."""
    n = len(trace.layers)
    held = np.zeros(n, np.int64)
    for level in recorded:
        rows = trace.layer_rows(level)
        if rows is None:
            return [(0, n)] if n else []
        held += rows[:, 1] - rows[:, 0]
    windows, first, count = [], 0, 0
    for i, records in enumerate(held.tolist()):
        count += records
        if count >= STEP_WINDOW_RECORDS:
            windows.append((first, i + 1))
            first, count = i + 1, 0
    if first < n:
        windows.append((first, n))
    return windows


_STEP_FIELDS = ("layer", "step", "start_cycle", "end_cycle", "op", "operand")  # what a step table reads


def _window_steps(trace: Trace, recorded: set[str], first: int, end: int) -> _Steps:
    """One row per step of layers first … end - 1 over every recorded level: each level's blocks into step tables,
    joined per level, merged."""
    parts = []
    for bit, level in enumerate(trace.group_level_bits):
        if level not in recorded:
            continue
        storage = level in ("dram", *_SRAM_LEVELS)
        parts.append(_level_table([_step_table(_Records({name: block[name] for name in _STEP_FIELDS}), bit,
                                               level == "dram", storage)
                                   for block in trace.layers_blocks(level, first, end)]))
    return _merge_steps(parts)


@dataclass(frozen=True)
class _Window:
    """The groups of layers first … end - 1 (in step order), the first of them group g0 of the trace."""

    groups: np.ndarray
    g0: int
    first: int
    end: int


class _LayerClock:
    """Per layer, the earliest it can start: when the layers it waits for (`layer_after_json`, else the one before
    it) and the layer before it on its core have ended, each ended when its last record did (or, with none, when
    it could start). Worked out window by window in layer order: a layer waits only for layers before it."""

    def __init__(self, trace: Trace) -> None:
        n = len(trace.layers)
        self.after = json.loads(str(trace.attrs.get("layer_after_json", "null"))) or [[i - 1] if i else []
                                                                                      for i in range(n)]
        self.cores = trace.layer_cores
        self.start, self.finish = np.zeros(n, np.int64), np.zeros(n, np.int64)
        self.previous_on_core: dict[int, int] = {}

    def advance(self, steps: _Steps, first: int, end: int) -> np.ndarray:
        """The start of every layer up to `end` (later layers' 0), given the steps of layers first … end - 1."""
        layer = steps.key >> _STEP_BITS
        bounds = np.searchsorted(layer, np.arange(first, end + 1))
        last_end = [int(steps.end[a:b].max()) if b > a else _NONE for a, b in pairwise(bounds.tolist())]
        for i in range(first, end):
            core = int(self.cores[i])
            waits = [int(j) for j in self.after[i] if 0 <= int(j) < i] + ([self.previous_on_core[core]]
                                                                          if core in self.previous_on_core else [])
            self.start[i] = max((int(self.finish[j]) for j in waits), default=0)
            self.finish[i] = max(int(self.start[i]), last_end[i - first])
            self.previous_on_core[core] = i
        return self.start


def _group_rules(tally: _Tally, steps: _Steps, window: _Window, hw: Accelerator, trace: Trace, recorded: set[str],
                 clock: _LayerClock, pass_start: np.ndarray) -> None:
    """The dependency, DRAM latency and levels rules of one window's steps and groups; its groups' pass starts
    written into `pass_start` (for the psum rule)."""
    names, groups, g0 = trace.layers, window.groups, window.g0
    n = len(groups)
    layer_start = clock.advance(steps, window.first, window.end)
    found = _step_groups(tally, steps, groups, names)
    if found is None:
        return
    g = found
    first_key = (groups["layer"].astype(np.int64) << _STEP_BITS) | groups["first_step"]
    layer_of_step = (steps.key >> _STEP_BITS).astype(np.int32)
    near = steps.fills == 0  # a load that fills no buffer feeds the RFs (its storage records are reads)
    is_pass, is_store = _passes_and_stores(steps, groups, g, first_key)
    is_load = ~is_pass & ~is_store
    far_load = is_load & ~near
    filter_fill = is_load & near & (steps.operand == Operand.FILTER)
    streams = is_load & near & ~filter_fill
    streamed_out = _streamed_out(steps, is_store, layer_of_step, hw, trace)

    layer = groups["layer"].astype(np.int64)
    loads_end = _group_max(np.where(far_load, steps.end, _NONE), g, n)
    before = _previous_in_layer(loads_end, layer)  # the latest end of an earlier group's loads in the layer
    load_floor = np.maximum(before, layer_start[layer])
    pass_start[:] = _group_min(np.where(is_pass, steps.start, _LATE), g, n)
    pass_end = _group_max(np.where(is_pass | streams | streamed_out, steps.end, _NONE), g, n)
    filters_end = _group_max(np.where(filter_fill, steps.end, _NONE), g, n)
    filter_loads_end = _group_max(np.where(far_load & (steps.operand == Operand.FILTER), steps.end, _NONE), g, n)

    def step_text(i: int) -> str:
        return (f"layer {names[int(layer_of_step[i])]} step {int(steps.key[i] & ((1 << _STEP_BITS) - 1))} "
                f"(group {g0 + int(g[i])})")

    tally.add("dependencies", steps.start < layer_start[layer_of_step],
              lambda i: f"{step_text(i)} starts at {int(steps.start[i])}, before the layers it waits for ended at "
                        f"{int(layer_start[layer_of_step[i]])}")
    tally.add("dependencies", far_load & (steps.start < before[g]),
              lambda i: f"{step_text(i)}, a load, starts at {int(steps.start[i])} before the previous group's "
                        f"loads ended at {int(before[g[i]])}")
    tally.add("dependencies", filter_fill & (steps.start < filter_loads_end[g]),
              lambda i: f"{step_text(i)}, filters into the RFs, starts at {int(steps.start[i])} before the group's "
                        f"filter loads ended at {int(filter_loads_end[g[i]])}")
    has_pass = pass_start < _LATE
    tally.add("dependencies", has_pass & (pass_start < np.maximum(loads_end, filters_end)),
              lambda k: f"layer {names[int(layer[k])]} group {g0 + k}: its pass starts at {int(pass_start[k])}, "
                        f"before its loads and filters are in at {int(max(loads_end[k], filters_end[k]))}")
    tally.add("dependencies", is_store & ~streamed_out & (steps.start < pass_end[g]),
              lambda i: f"{step_text(i)}, a store, starts at {int(steps.start[i])} before its pass ended at "
                        f"{int(pass_end[g[i]])}")
    tally.add("dependencies", streamed_out & (steps.start < pass_start[g]),
              lambda i: f"{step_text(i)}, psums streamed out of the RFs, starts at {int(steps.start[i])} before its "
                        f"pass started at {int(pass_start[g[i]])}")
    store_floor = np.where(streamed_out, pass_start[g], pass_end[g])
    _latency_rule(tally, steps, g, far_load, is_store, load_floor, store_floor, hw, step_text)
    _levels_rule(tally, steps, g, window, trace, recorded)


def _passes_and_stores(steps: _Steps, groups: np.ndarray, g: np.ndarray,
                       first_key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per step of group `g`: whether it is its group's COMPUTE (the pass), and whether it comes after it (a
    store), from each group's COMPUTE key (no per-step step-number or compute columns)."""
    compute_key = np.where(groups["compute_step"] >= 0, first_key - groups["first_step"] + groups["compute_step"], -1)
    computes = compute_key[g]
    return steps.key == computes, (computes >= 0) & (steps.key > computes)


def _streamed_out(steps: _Steps, is_store: np.ndarray, layer_of_step: np.ndarray, hw: Accelerator,
                  trace: Trace) -> np.ndarray:
    """Per step: a store leaving the RFs while its pass runs — on a core whose NoC hands psums back during the
    pass (`noc.psum_out_streamed`)."""
    if "rf" not in trace.group_level_bits:
        return np.zeros(len(is_store), dtype=bool)
    streams = np.array([core_hardware(hw, int(core)).noc.psum_out_streamed for core in trace.layer_cores], dtype=bool)
    from_rf = (steps.level_bits & (1 << trace.group_level_bits.index("rf"))) != 0
    result: np.ndarray = is_store & from_rf & streams[layer_of_step]
    return result


def _previous_in_layer(values: np.ndarray, layer: np.ndarray) -> np.ndarray:
    """For each group, the max of `values` over the earlier groups of its layer (_NONE for a layer's first)."""
    if not len(values):
        return values
    first = np.r_[True, layer[1:] != layer[:-1]]
    segment = np.cumsum(first) - 1  # the layer's rank: cycles < 2**40 leave room for 2**22 layers
    big = np.int64(1) << 41
    lifted = np.maximum(values, -1) + 1 + segment * big  # a running max that restarts with each layer
    running = np.maximum.accumulate(lifted)
    out = np.r_[_NONE, running[:-1] - segment[1:] * big - 1]
    out[first] = _NONE
    return np.where(out < 0, _NONE, out)


def _psum_rule(tally: _Tally, access: dict[str, _Records], first_key: np.ndarray, compute_step: np.ndarray,
               names: tuple[str, ...], pass_start: np.ndarray) -> None:
    """A psum read starts after every psum write that precedes it in the schedule at the same level and overlaps
    its words has ended; a read that feeds a pass (one before its group's COMPUTE) also holds the pass back
    until then. Per level, the transfers (runs of one step's records) are swept in schedule order over the
    words they span, each word remembering when the last write to it ended."""
    for level, rec in access.items():
        if not len(rec) or not (rec["op"] == Op.UPDATE).any() or not (rec["op"] == Op.READ).any():
            continue
        runs = rec.runs()
        key, writes = rec.key()[runs], rec["op"][runs] == Op.UPDATE
        lo = np.minimum.reduceat(rec["address"], runs)
        hi = np.maximum.reduceat(rec["address"] + rec["words"], runs)
        start, end = np.minimum.reduceat(rec["start_cycle"], runs), np.maximum.reduceat(rec["end_cycle"], runs)
        bounds = np.unique(np.concatenate((lo, hi)))  # the words, in segments no transfer splits
        first_seg, end_seg = np.searchsorted(bounds, lo), np.searchsorted(bounds, hi)
        written = np.full(len(bounds), _NONE)  # per segment: when the last write to it so far ended
        writer_end = np.full(len(runs), _NONE)
        for k in np.argsort(key, kind="stable").tolist():
            a, b = int(first_seg[k]), int(end_seg[k])
            if writes[k]:
                written[a:b] = end[k]
            elif b > a:
                writer_end[k] = written[a:b].max()
        reads = ~writes
        tally.add("dependencies", reads & (start < writer_end),
                  partial(_late_read, level, start, writer_end, runs, rec, names))
        group = np.searchsorted(first_key, key, side="right") - 1
        feeds = reads & (group >= 0) & ((key & ((1 << _STEP_BITS) - 1)) < compute_step[np.maximum(group, 0)])
        pass_at = np.where(feeds, pass_start[np.maximum(group, 0)], _LATE)
        tally.add("dependencies", feeds & (pass_at < writer_end),
                  partial(_early_pass, level, pass_at, writer_end, runs, rec, names))


def _late_read(level: str, start: np.ndarray, writer_end: np.ndarray, first: np.ndarray, rec: _Records,
               names: tuple[str, ...], k: int) -> str:
    return (f"{level} psum read starts at {int(start[k])} before the earlier write of those words ended at "
            f"{int(writer_end[k])}: " + _where(rec, int(first[k]), names))


def _early_pass(level: str, pass_at: np.ndarray, writer_end: np.ndarray, first: np.ndarray, rec: _Records,
                names: tuple[str, ...], k: int) -> str:
    return (f"a pass starts at {int(pass_at[k])}, before the {level} psums it reads were stored (at "
            f"{int(writer_end[k])}): " + _where(rec, int(first[k]), names))


def _latency_rule(tally: _Tally, steps: _Steps, g: np.ndarray, far_load: np.ndarray, is_store: np.ndarray,
                  load_floor: np.ndarray, store_floor: np.ndarray, hw: Accelerator,
                  step_text: Callable[[int], str]) -> None:
    """A DRAM transaction's first burst comes the minimum latency after the earliest cycle it can be requested:
    a load's, once the previous group's loads have ended; a store's, once its pass has ended (streamed out of
    the RFs: once its pass has started), `store_floor` per step."""
    latency = min_dram_latency_cycles(hw)
    floor = np.where(far_load, load_floor[g], np.where(is_store, store_floor, _NONE))
    has_dram = steps.dram_start < _LATE
    tally.add("dram_latency", has_dram & (far_load | is_store) & (steps.dram_start < floor + latency),
              lambda i: f"{step_text(i)}: its first DRAM burst starts at {int(steps.dram_start[i])}, but it cannot be "
                        f"requested before {int(floor[i])} and DRAM needs {latency} cycles")


def min_dram_latency_cycles(hw: Accelerator) -> int:
    """The least time, in core cycles, from a DRAM request to its first data: the configured latency (a row
    hit's with a row buffer); for a JEDEC device the CAS latency (read CL, write CWL) of a hit."""
    return dram_kind(hw.dram.model).first_data_cycles(hw)


def _levels_rule(tally: _Tally, steps: _Steps, g: np.ndarray, window: _Window, trace: Trace,
                 recorded: set[str]) -> None:
    """Every recorded level a group moves data through holds records of that group."""
    groups = window.groups
    mask = sum(1 << k for k, level in enumerate(trace.group_level_bits) if level in recorded)
    seen = np.zeros(len(groups), np.int64)
    np.bitwise_or.at(seen, g, steps.level_bits)
    missing = groups["levels"].astype(np.int64) & mask & ~seen

    def text(k: int) -> str:
        lost = [lv for b, lv in enumerate(trace.group_level_bits) if missing[k] >> b & 1]
        return (f"layer {trace.layers[int(groups['layer'][k])]} group {window.g0 + k} moves data through "
                f"{', '.join(lost)} but the trace holds no record of it there")
    tally.add("levels", missing != 0, text)
    if {"rf", "noc"} <= recorded:  # a step's RF end rides a NoC bus: its RF records come with a NoC record
        rf, noc = (1 << trace.group_level_bits.index(lv) for lv in ("rf", "noc"))
        bare = ((steps.level_bits & rf) != 0) & ((steps.level_bits & noc) == 0)
        tally.add("levels", bare, lambda i: f"layer {trace.layers[int(steps.key[i] >> _STEP_BITS)]} step "
                                            f"{int(steps.key[i] & ((1 << _STEP_BITS) - 1))} fills or empties RFs "
                                            "but the trace holds no NoC transfer of it")


# --- occupancy ----------------------------------------------------------------------------------------------


def _capacities(hw: Accelerator, buffers: tuple[str, ...], prefix: str) -> dict[str, int]:
    """Bytes each traced buffer of a core (names starting `prefix`) may hold at `hw`'s word; named buffers by the
    level their name starts with, together; the shared L2 with the first core's."""
    wb = hw.word_bytes
    glb = hw.glb
    caps = {f"{prefix}glb.data": (glb.size_bytes - glb.filter_bytes) // wb * wb,
            f"{prefix}glb.filter": glb.filter_bytes // wb * wb}
    if hw.line_buffer is not None:
        caps[f"{prefix}line_buffer"] = hw.line_buffer.size_bytes // wb * wb
    if hw.l2 is not None and not prefix:
        caps["l2"] = hw.l2.size_bytes // wb * wb
    return {name: caps[name] for name in caps if name in buffers or any(b.startswith(name + ".") for b in buffers)}


def _occupancy_rule(tally: _Tally, trace: Trace, tree: _Tree) -> None:
    """A buffer never holds more than its capacity (at the word of the layer holding it); the named buffers of one
    level (`l2.*`, `line_buffer.*`) together never hold more than the level."""
    events = trace.occupancy()
    buffers = trace.buffers
    cores = tree.hw.all_cores
    for k, core in enumerate(cores):
        prefix = f"{core.name}." if len(cores) > 1 else ""
        caps = [_capacities(v, buffers, prefix) for v in tree.views(k)]
        if k == 0 and prefix:  # the L2 and the named buffers are shared
            caps = [{**c, **_capacities(v, buffers, "")} for c, v in zip(caps, tree.views(k))]
        for name in caps[0]:
            _buffer_capacity(tally, events, buffers, name, [c[name] for c in caps])


def _buffer_capacity(tally: _Tally, events: np.ndarray, buffers: tuple[str, ...], name: str,
                     cap_by_layer: list[int]) -> None:
    """Buffer `name`, and the named buffers `name.*` together, within their capacity at each layer's word."""
    for ids in ([k for k, b in enumerate(buffers) if b == name],
                [k for k, b in enumerate(buffers) if b.startswith(name + ".")]):
        if not ids:
            continue
        mine = events[np.isin(events["buffer"], ids)]
        cycle, total, layer = _held_together(mine)
        cap = np.array(cap_by_layer, dtype=np.int64)[layer]
        what = name if len(ids) == 1 else f"{name}'s {len(ids)} named buffers"
        tally.add("occupancy", total > cap, partial(_overfull, what, total, cycle, cap))


def _overfull(what: str, total: np.ndarray, cycle: np.ndarray, cap: np.ndarray, i: int) -> str:
    return f"{what} hold {int(total[i])} B at cycle {int(cycle[i])}; the capacity is {int(cap[i])} B"


def _held_together(events: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(cycle, bytes held by all the events' buffers together, layer) after each event, in cycle order: each
    event's change from its buffer's previous event, frees before claims within a cycle."""
    n = len(events)
    by_buffer = np.lexsort((np.arange(n), events["buffer"]))
    held = events["bytes"][by_buffer]
    same = np.r_[False, events["buffer"][by_buffer][1:] == events["buffer"][by_buffer][:-1]]
    change = np.empty(n, np.int64)
    change[by_buffer] = held - np.where(same, np.r_[0, held[:-1]], 0)
    order = np.lexsort((change, events["cycle"]))
    return events["cycle"][order], np.cumsum(change[order]), events["layer"][order]
