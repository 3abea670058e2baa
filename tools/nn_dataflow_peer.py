"""nn_dataflow 2.1 beside hwsim's search: its per-layer schedules, its access counts, and its schedules translated
into hwsim loop nests.

nn_dataflow runs in a throwaway virtual environment (`DRIVER` below, fed a JSON spec). Each layer is scheduled on
its own by `nn_dataflow.core.Scheduling` on one node whose data live in DRAM (`NNDataflow` on a one-layer network
would pin the filters on chip: with every layer of the network in one segment it sets `no_time_mux`, and a
schedule whose DRAM-level loops leave the filters unchanged then fetches them zero times, so an FC layer's
weights would cost nothing). Options: exhaustive loop blocking, GBUF bypass allowed, energy goal, one process.

Hardware: a 12 x 14 array, the eyeriss-v1 GLB (108 KiB) and RF words (224 + 12 + 24). nn_dataflow has one
unified RF and one GBUF; `partitions` in the spec makes its search also reject blockings that overflow Eyeriss'
own partitions (RF filter 224, ifmap 12, psum 24 words; GLB filters 8 KiB, ifmaps and psums 100 KiB), the
hardware hwsim models, so its schedules are valid on eyeriss-v1.

Translation (`translate`): nn_dataflow's Eyeriss map strategy places a PE set of R kernel rows by P output rows,
replicated over channels (ifms) and filters (ofms) and folded; its loop blocking tiles the units it leaves
(channels, filters, images x width folds) at the DRAM, GBUF and RF levels, each level in an order. As an hwsim
row-stationary nest: DRAM and GLB loops with nn_dataflow's factors and orders (IFM -> C, OFM -> M, BAT -> N and
the width folds), the GLB keeping what the GBUF stores, array rows R x C sets x M sets, columns P (x M sets),
stream Q, RF loops C, M, N of its RF blocking and S. Spatial placements row stationary does not allow move:
output rows folded onto the array's rows become a loop innermost in the GLB (the filters stay in the RFs across
it; only the halo rows move twice); filters spread over both rows and columns keep the rows' share in each PE's
RF where it fits (the same words move), else in a loop innermost in the GLB (approximate: the psums of those
filters then leave the PEs between its steps). Each translation is validated by `check_nest` and priced by
hwsim's closed form; of the variants (also: the GLB keeping the psums nn_dataflow lets bypass its GBUF) the
cheapest valid one is reported.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from throwaway_env import cached_env_python

from hwsim.analytic.counts import LayerCounts
from hwsim.analytic.nest_counts import nest_counts
from hwsim.errors import HwsimError
from hwsim.hardware import load_config
from hwsim.hardware.energy import EnergyTable, energy_table
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.dataflows import dataflow_of
from hwsim.mapping.nest.format import Array, Loop, LoopNest, Loops, Storage
from hwsim.mapping.nest.problem import nest_problem
from hwsim.mapping.nest.validate import check_nest
from hwsim.search.cost import LayerCost, exact_cost
from hwsim.search.network import SearchedMapping, SearchSettings, search_network
from hwsim.vocab import Level, ceil_div
from hwsim.workload import zoo
from hwsim.workload.ir import Graph, Layer, LayerKind

PEER_PACKAGES = ("nn-dataflow==2.1", "sympy==1.6.2")
LEVELS = ("DRAM", "GBUF", "ITCN", "REGF")  # nn_dataflow's MemHierEnum order
CATEGORIES = ("filter", "ifmap", "psum")  # nn_dataflow's DataCategoryEnum order (FIL, IFM, OFM)

DRIVER = r'''
import json, sys, time
from nn_dataflow import util
from nn_dataflow.core import (Cost, ConvLayer, DataCategoryEnum as de, DataLayout, FCLayer, FmapPosition, FmapRange,
                              LoopBlockingScheme, MapStrategyEyeriss, MemHierEnum as me, NodeRegion, Option,
                              ParallelEnum as pe, PartitionScheme, PhyDim2, Resource, Scheduling,
                              SchedulingCondition, SchedulingConstraint)
spec = json.load(open(sys.argv[1]))
limits = spec.get("partitions")
if limits:  # reject blockings that overflow the partitioned RF and GLB (the search is otherwise unchanged)
    _init = LoopBlockingScheme.__init__
    def _init_partitioned(self, *args, **kwargs):
        _init(self, *args, **kwargs)
        if self.valid:
            regf = [self.data_size(self.BL.REGF, d) for d in range(de.NUM)]
            gbuf = [self.data_size(self.BL.GBUF, d) for d in range(de.NUM)]
            if (any(regf[d] > limits["regf"][d] for d in range(de.NUM)) or gbuf[de.FIL] > limits["gbuf_filter"]
                    or gbuf[de.IFM] + gbuf[de.OFM] > limits["gbuf_data"]):
                self.valid = False
    LoopBlockingScheme.__init__ = _init_partitioned
proc = NodeRegion(dim=PhyDim2(1, 1), origin=PhyDim2(0, 0), type=NodeRegion.PROC)
data = NodeRegion(dim=PhyDim2(1, 1), origin=PhyDim2(0, 0), type=NodeRegion.DRAM)
array = PhyDim2(*spec["array"])
resource = Resource(proc_region=proc, dram_region=data, src_data_region=data, dst_data_region=data,
                    dim_array=array, size_gbuf=spec["gbuf_words"], size_regf=spec["regf_words"],
                    array_bus_width=float("inf"), dram_bandwidth=float("inf"), no_time_mux=False)
hier = [0] * me.NUM
hier[me.DRAM], hier[me.GBUF], hier[me.ITCN], hier[me.REGF] = spec["pj"]
cost = Cost(mac_op=spec["mac_pj"], mem_hier=tuple(hier), noc_hop=0, idl_unit=0)
options = Option(sw_gbuf_bypass=(True, True, True), opt_goal="e", ntops=1, nprocesses=1)
one_node = PartitionScheme(order=tuple(range(pe.NUM)), pdims=(PhyDim2(1, 1),) * pe.NUM)
batch = spec["batch"]
out = {"seconds": 0.0, "cpu_seconds": 0.0, "layers": {}}
for l in spec["layers"]:
    layer = FCLayer(l["C"], l["M"], l["R"]) if l["fc"] else ConvLayer(l["C"], l["M"], l["P"], l["R"], l["stride"])
    frng = FmapRange(FmapPosition(b=0, n=0, h=0, w=0), FmapPosition(b=batch, n=l["C"], h=layer.hifm, w=layer.wifm))
    layout = DataLayout(frngs=(frng,), regions=(data,), parts=(one_node.projection(data, appl2frng=True),))
    condition = SchedulingCondition(resource=resource, constraint=SchedulingConstraint(), ifmap_layout=layout,
                                    sched_seq=(0, 0, 0))
    start, start_cpu = time.perf_counter(), time.process_time()
    top = Scheduling(layer, batch, cost, MapStrategyEyeriss).schedule_search(condition, options)[0]
    out["seconds"] += time.perf_counter() - start
    out["cpu_seconds"] += time.process_time() - start_cpu
    s = top.scheme
    ms = MapStrategyEyeriss(layer, batch, 1.0, array)
    sets = {}
    for (lcnt, _, _, rcnt), nld in zip(ms._gen_repl(), ms.gen_nested_loop_desc()):  # the replication chosen
        if tuple(nld.usize_gbuf) == tuple(s["unit_size"][0]) and tuple(nld.loopcnt) == tuple(map(util.prod,
                                                                                           zip(*s["tvals"]))):
            c, m = rcnt[de.IFM], rcnt[de.OFM]
            rows_m = next(rm for rc, rm in util.factorize(ms.repl.h, 2)
                          if (min(rc, layer.nifm), min(rm * ms.repl.w, layer.nofm)) == (c, m))
            sets = {"c_sets": c, "m_sets": m, "m_rows": rows_m}
    out["layers"][l["name"]] = {
        "cost": top.total_cost, "ops": s["ops"], "access": [list(a) for a in s["access"]],
        "tvals": [list(t) for t in s["tvals"]], "orders": [list(o) for o in s["orders"]],
        "gbuf_words": list(s["size"][0]), "regf_words": list(s["size"][1]),
        "fold": [ms.fold.h, ms.fold.w], "repl": [ms.repl.h, ms.repl.w], "flpeset": [ms.dim_flpeset.h,
        ms.dim_flpeset.w], "ppeset": [ms.dim_ppeset.h, ms.dim_ppeset.w], **sets}
print(json.dumps(out))
'''


@dataclass(frozen=True)
class PeerLayer:
    """One layer as nn_dataflow scheduled it (one tower of a grouped layer: `groups` multiplies its counts)."""

    name: str
    groups: int
    cost_pj: float  # its own energy: MACs and DRAM, GBUF, ITCN, REGF accesses priced by the spec's table
    macs: float
    access: tuple[tuple[float, ...], ...]  # [DRAM, GBUF, ITCN, REGF][filter, ifmap, psum] words
    tvals: tuple[tuple[int, ...], ...]  # [DRAM, GBUF, RF level][C units, M units, BAT units] blocking factors
    orders: tuple[tuple[int, ...], ...]  # [DRAM, GBUF level][C, M, BAT]: loop position, 0 innermost
    gbuf_words: tuple[int, ...]  # per category (filter, ifmap, psum): 0 when it bypasses the GBUF
    fold: tuple[int, int]  # PE-set folds (kernel rows, output rows)
    repl: tuple[int, int]  # PE-set replication (rows, columns)
    flpeset: tuple[int, int]  # a folded PE set (kernel rows, output rows)
    ppeset: tuple[int, int]  # the PEs one pass uses (rows, columns)
    c_sets: int  # channels replicated over the rows
    m_sets: int  # filters replicated over the rows and columns
    m_rows: int  # of them, sets over the rows

    def level_words(self, level: str) -> float:
        """Words nn_dataflow counts at one of its levels, all categories, all towers."""
        return sum(self.access[LEVELS.index(level)]) * self.groups


@dataclass(frozen=True)
class PeerRun:
    """One nn_dataflow run over the layers: its schedules, its search's wall and CPU seconds (user + sys, one
    process) and the CPU seconds of its whole process (start-up and imports too)."""

    layers: dict[str, PeerLayer]
    seconds: float
    cpu_seconds: float
    process_cpu_seconds: float


def peer_spec(layers: list[Layer], hw: Accelerator, batch: int, partitioned: bool) -> dict[str, Any]:
    """The driver's input: hwsim's conv and FC layers (one tower of a grouped layer; nn_dataflow has no groups),
    the array, GLB and RF words, the energies of eyeriss-v1 (`hw`) and, when `partitioned`, its partitions."""
    rf = hw.pe_array.rf
    assert rf is not None
    spec: dict[str, Any] = {
        "layers": [{"name": l.name, "C": l.in_shape.c // _groups(l), "M": l.out_shape.c // _groups(l),
                    "P": l.out_shape.h, "R": l.in_shape.h if l.kind is LayerKind.FC else l.kernel[0],
                    "stride": l.stride[0], "fc": l.kind is LayerKind.FC, "groups": _groups(l)} for l in layers],
        "batch": batch, "array": [hw.pe_array.rows, hw.pe_array.cols],
        "gbuf_words": hw.glb.size_bytes // hw.word_bytes,
        "regf_words": rf.filter_words + rf.ifmap_words + rf.psum_words,
        "pj": [hw.dram.energy_pj_per_bit * hw.precision_bits, hw.glb.read_energy_pj, hw.noc.inter_pe_energy_pj,
               rf.access_energy_pj],
        "mac_pj": hw.pe_array.mac_energy_pj}
    if partitioned:
        spec["partitions"] = {"regf": [rf.filter_words, rf.ifmap_words, rf.psum_words],
                              "gbuf_filter": hw.glb.filter_bytes // hw.word_bytes,
                              "gbuf_data": hw.glb.data_bytes // hw.word_bytes}
    return spec


def _groups(layer: Layer) -> int:
    return layer.groups if layer.kind is LayerKind.CONV else 1


def peer_python() -> Path:
    """The python of a throwaway virtual environment with nn_dataflow 2.1 (it needs sympy 1.6.2), kept under the
    peers' cache folder for these pins (made on the first run, reused after: tools/throwaway_env.py)."""
    return cached_env_python("nn-dataflow", [PEER_PACKAGES])


def driver_output(python: Path, spec: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """What the driver prints for `spec` (nn_dataflow's schedules, its search's seconds) and the CPU seconds of
    its whole process."""
    before = _children_cpu()
    with tempfile.TemporaryDirectory(prefix="nn-dataflow-") as tmp:
        (Path(tmp) / "spec.json").write_text(json.dumps(spec))
        (Path(tmp) / "driver.py").write_text(DRIVER)
        done = subprocess.run([python, Path(tmp) / "driver.py", Path(tmp) / "spec.json"], check=True,
                              capture_output=True, text=True)
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return out, _children_cpu() - before


def _children_cpu() -> float:
    """User + sys seconds of the child processes waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_peer(python: Path, spec: dict[str, Any]) -> PeerRun:
    """nn_dataflow's schedules of the spec's layers (one process)."""
    out, process_cpu = driver_output(python, spec)
    return PeerRun(peer_layers(out["layers"], spec), float(out["seconds"]), float(out["cpu_seconds"]), process_cpu)


def peer_layers(schedules: dict[str, Any], spec: dict[str, Any]) -> dict[str, PeerLayer]:
    """The driver's schedules of the layers of `spec` (as it printed them, or as recorded by `record`)."""
    groups = {l["name"]: l["groups"] for l in spec["layers"]}
    return {name: _peer_layer(name, groups[name], r) for name, r in schedules.items()}


def _peer_layer(name: str, groups: int, r: dict[str, Any]) -> PeerLayer:
    def ints(values: list[Any]) -> tuple[int, ...]:
        return tuple(int(v) for v in values)

    return PeerLayer(name, groups, float(r["cost"]), float(r["ops"]),
                     tuple(tuple(float(v) for v in a) for a in r["access"]), tuple(ints(t) for t in r["tvals"]),
                     tuple(ints(o) for o in r["orders"]), ints(r["gbuf_words"]), _pair(r["fold"]), _pair(r["repl"]),
                     _pair(r["flpeset"]), _pair(r["ppeset"]), int(r["c_sets"]), int(r["m_sets"]), int(r["m_rows"]))


def _pair(values: list[Any]) -> tuple[int, int]:
    return int(values[0]), int(values[1])


# ----- translation into an hwsim loop nest -----------------------------------------------------------------


@dataclass(frozen=True)
class Translation:
    """nn_dataflow's schedule of a layer as an hwsim nest, or why it cannot be one; `notes` say what moved."""

    nest: LoopNest | None
    notes: tuple[str, ...]


def _batch_split(factors: tuple[int, ...], images: int, width_folds: int) -> list[tuple[int, int]] | None:
    """nn_dataflow's BAT units (images x output-row folds) per level (DRAM, GLB, RF) as (N, P) factors, images
    given to the inner levels first; None when a level's factor splits neither way."""
    out: list[tuple[int, int]] = []
    for t in reversed(factors):
        n = math.gcd(t, images)
        p = t // n
        if width_folds % p:
            return None
        images, width_folds = images // n, width_folds // p
        out.append((n, p))
    return out[::-1]


def _ordered(pairs: list[tuple[int, tuple[tuple[str, int], ...]]]) -> Loops:
    """Loops outer to inner from (nn_dataflow position, loops of that position) pairs (larger position outer)."""
    loops: list[Loop] = []
    for _, group in sorted(pairs, key=lambda e: -e[0]):
        loops += [Loop(d, f) for d, f in group if f > 1]
    return tuple(loops)


VARIANTS = tuple((psum, rf) for rf in (True, False) for psum in (False, True))  # (GLB keeps psums, rows' M in RF)


def translate(layer: Layer, peer: PeerLayer, batch: int, keeps_psum: bool = False,
              rows_m_in_rf: bool = True) -> Translation:
    """nn_dataflow's schedule of `layer` as a row-stationary nest (module docstring). `keeps_psum` also keeps
    the partial sums in the GLB (nn_dataflow lets them bypass its GBUF while its RF holds them);
    `rows_m_in_rf`: filters nn_dataflow spreads over rows and columns keep the rows' share in each PE's RF
    (the same words move, if the RF holds them), else in a loop innermost in the GLB."""
    d = nest_problem(layer, batch).dims
    notes: list[str] = []
    folds_on_rows = peer.ppeset[0] // (peer.flpeset[0] * peer.repl[0])
    m_cols, m_rows, m_rf = ceil_div(peer.m_sets, peer.m_rows), peer.m_rows, 1
    innermost = [("R", peer.fold[0]), ("P", folds_on_rows)]
    if folds_on_rows > 1:
        notes.append(f"output rows folded onto {folds_on_rows} row groups: P={folds_on_rows} innermost in the GLB "
                     "(halo rows sent once per group)")
    if m_rows > 1 and m_cols > 1:
        where = "in the RF" if rows_m_in_rf else "innermost in the GLB (approximate: their psums cycle there)"
        notes.append(f"filters over rows and columns: rows' M={m_rows} {where}")
        m_rf = m_rows if rows_m_in_rf else 1
        innermost += [] if rows_m_in_rf else [("M", m_rows)]
        m_rows = 1
    bat = _batch_split(tuple(t[2] for t in peer.tvals), d["N"], peer.fold[1])
    if bat is None or bat[2][1] > 1:
        return Translation(None, ("its batch units split output-row folds into the RF",))
    levels = []
    for level in (0, 1):
        t, order = peer.tvals[level], peer.orders[level]
        levels.append(_ordered([(order[0], (("C", t[0]),)), (order[1], (("M", t[1]),)),
                                (order[2], (("N", bat[level][0]), ("P", bat[level][1])))]))
    dram = Storage("dram", _loops(("G", d["G"])) + levels[0])
    keeps = frozenset(c for c, w in zip(CATEGORIES, peer.gbuf_words) if w > 0) | (
        {"psum"} if keeps_psum else frozenset())
    glb = Storage("glb", levels[1] + _loops(*innermost), keeps)
    array = Array(_loops(("R", peer.flpeset[0]), ("C", peer.c_sets), ("M", m_rows)),
                  _loops(("P", ceil_div(peer.flpeset[1], folds_on_rows)), ("M", m_cols)), _loops(("Q", d["Q"])),
                  {"ifmap": "multicast", "filter": "multicast"})
    t = peer.tvals[2]
    rf = Storage("rf", _loops(("C", t[0]), ("M", t[1] * m_rf), ("N", bat[2][0]), ("S", d["S"])),
                 frozenset(CATEGORIES))
    return Translation(LoopNest(layer.name, dict(d), (dram, glb), array, rf), tuple(notes))


def _loops(*pairs: tuple[str, int]) -> Loops:
    return tuple(Loop(dim, f) for dim, f in pairs if f > 1)


def priced_translation(layer: Layer, peer: PeerLayer, batch: int, hw: Accelerator,
                       table: EnergyTable) -> tuple[Translation, LayerCost | None, str]:
    """The translated schedule that hwsim prices lowest (`VARIANTS`: the GLB keeping what nn_dataflow's GBUF
    does, or psums too; filters spread over rows and columns with the rows' share in the RF, or in the GLB), its
    exact cost, and why none is valid on `hw` (check_nest's message) when none is."""
    problem = nest_problem(layer, batch)
    best: tuple[Translation, LayerCost | None, str] = (Translation(None, ()), None, "")
    for keeps_psum, rows_m_in_rf in VARIANTS:
        found = translate(layer, peer, batch, keeps_psum, rows_m_in_rf)
        if found.nest is None:
            return found, None, found.notes[0]
        try:
            check_nest(found.nest, problem, hw, dataflow_of(hw))
        except HwsimError as exc:
            best = best if best[1] is not None else (found, None, str(exc).split(": ", 1)[-1])
            continue
        cost = exact_cost(layer, found.nest, batch, hw, table)
        if best[1] is None or cost.energy_pj < best[1].energy_pj:
            notes = found.notes + (("psums kept in the GLB",) if keeps_psum else ())
            best = (Translation(found.nest, notes), cost, "")
    return best


# ----- access counts level by level -----------------------------------------------------------------------

ALIGNED = ("DRAM", "GLB", "array", "RF", "MAC")
ALIGNMENT = """\
Both price with eyeriss-v1's energies per 16-bit word: DRAM 338.8, GLB (nn_dataflow GBUF) 10.16, PE array
(nn_dataflow ITCN; hwsim's PE-to-PE hop) 3.388, RF 1.694, MAC 1.694 pJ; nn_dataflow's NoC hops between nodes
cost 0 (one node); hwsim's clock and control (which nn_dataflow does not model) are left out of 'own model'.
What each counts, level by level:
  DRAM   both: words read and written (nn_dataflow reads a padded ifmap: (P-1)*stride + R rows and columns).
  GLB    both: words read and written at the global buffer (nn_dataflow: 0 for a category it bypasses).
  array  nn_dataflow ITCN: every word into or out of each PE (a multicast word once per PE it reaches, each
         PE's psum row out); hwsim: RF fills and psum updates (a multicast word once, priced as an RF
         access) plus psums handed PE to PE (priced as a hop).
  RF     nn_dataflow: 4 per MAC (filter, ifmap, psum read and write); hwsim: the MACs' filter, ifmap and
         psum reads and psum writes, less the psums handed to the next PE.
  MAC    both: one per MAC.
Where the models differ most: nn_dataflow's Eyeriss map gives a unit one psum word in the RF (its 1-D row
convolution slides) yet counts the psums of a unit as staying in the RF across the channel loops above it, where a
PE would need its Q-wide psum row; hwsim's RF keeps the p x n psums of one output column and sends them out after
each stream step, so nn_dataflow's schedules counted by hwsim pay those round trips (GLB and array rows). And
nn_dataflow 'stock' uses storage Eyeriss does not have: up to 128 psums of the 260-word RF (Eyeriss: 24) and
the whole 108 KiB GBUF for filters (Eyeriss: an 8 KiB filter partition)."""


@dataclass(frozen=True)
class Levels:
    """Words and pJ at each aligned level."""

    words: dict[str, float]
    pj: dict[str, float]

    @property
    def total_pj(self) -> float:
        return sum(self.pj.values())


def hwsim_levels(counts: LayerCounts, table: EnergyTable) -> Levels:
    """hwsim's counts of one nest in the aligned levels (clock and control left out)."""
    energy, _ = table.price(counts.transfers, counts.compute, 0)  # no time: the clock left out
    t = counts.transfers
    fills = float(t[Level.RF].sum())
    fills_pj = float((t[Level.RF] * table.word_pj[Level.RF]).sum())
    c = counts.compute
    words = {"DRAM": float(t[Level.DRAM].sum()), "GLB": float(t[Level.GLB].sum()), "array": fills + c.hops,
             "RF": float(c.rf_filter_reads + c.rf_ifmap_reads + c.rf_psum_reads + c.rf_psum_writes),
             "MAC": float(c.macs)}
    pj = {"DRAM": energy["dram"], "GLB": energy["glb"], "array": fills_pj + energy["inter_pe"],
          "RF": energy["rf"] - fills_pj, "MAC": energy["mac"]}
    return Levels(words, pj)


def peer_levels(peer: PeerLayer, spec: dict[str, Any]) -> Levels:
    """nn_dataflow's counts of one layer (all towers) in the aligned levels, priced as it prices them."""
    names = dict(zip(("DRAM", "GLB", "array", "RF"), LEVELS))
    words = {level: peer.level_words(names[level]) for level in names}
    words["MAC"] = peer.macs * peer.groups
    pj = {level: words[level] * spec["pj"][LEVELS.index(names[level])] for level in names}
    pj["MAC"] = words["MAC"] * spec["mac_pj"]
    return Levels(words, pj)


# ----- side by side ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One layer compared: hwsim's searched nest, nn_dataflow's two runs, the partitioned run translated."""

    layer: Layer
    searched: LayerCost
    searched_levels: Levels
    stock: PeerLayer
    partitioned: PeerLayer
    translated: Translation
    translated_cost: LayerCost | None
    translated_levels: Levels | None
    why_not: str  # why the partitioned schedule is no valid hwsim nest (empty when it is)


@dataclass(frozen=True)
class Timed:
    """A search's wall and CPU seconds (user + sys)."""

    wall_s: float
    cpu_s: float


def timed_search(graph: Graph, hw: Accelerator, batch: int) -> tuple[SearchedMapping, Timed]:
    """hwsim's search of `graph` as bench_mapper runs it (energy, one process, no cache), timed."""
    start, start_cpu = time.perf_counter(), time.process_time()
    found = search_network(graph, hw, batch, SearchSettings(objective="energy", jobs=1, use_cache=False))
    return found, Timed(time.perf_counter() - start, time.process_time() - start_cpu)


def compare(batch: int, config: str = "eyeriss-v1") -> None:
    """Search AlexNet with hwsim and nn_dataflow (stock and with Eyeriss' partitions) and print the tables; hwsim
    searches before and after nn_dataflow (a drift in the machine's load weighs on both alike)."""
    hw = load_config(config)
    table = energy_table(hw)
    graph = zoo.build("alexnet")
    layers = [l for l in graph if l.kind in (LayerKind.CONV, LayerKind.FC)]
    specs = {kind: peer_spec(layers, hw, batch, kind == "partitioned") for kind in ("stock", "partitioned")}
    python = peer_python()
    ours, before = timed_search(graph, hw, batch)
    runs = {kind: run_peer(python, spec) for kind, spec in specs.items()}
    again, after = timed_search(graph, hw, batch)
    assert again.choices == ours.choices, "the search is deterministic"
    rows = [_row(layer, ours, runs, batch, hw, table) for layer in layers]
    print(f"\nAlexNet on {config}'s 12x14 array, batch {batch}, objective energy; nn_dataflow 2.1 'stock' (its "
          "unified 260-word RF and 108 KiB GBUF) and 'partitioned' (limited to Eyeriss' RF and GLB partitions)")
    _print_own_models(rows, specs["stock"])
    _print_under_hwsim(rows)
    _print_levels(rows, specs["stock"])
    _print_speed(rows, Timed((before.wall_s + after.wall_s) / 2, (before.cpu_s + after.cpu_s) / 2), runs,
                 specs["stock"])
    print(ALIGNMENT)


def _row(layer: Layer, ours: SearchedMapping, runs: dict[str, PeerRun], batch: int, hw: Accelerator,
         table: EnergyTable) -> Row:
    """One layer compared: hwsim's searched nest, nn_dataflow's schedules, the partitioned one translated."""
    nest = ours.mapping.layer(layer.name)
    assert isinstance(nest, LoopNest)
    part = runs["partitioned"].layers[layer.name]
    translated, cost, why = priced_translation(layer, part, batch, hw, table)
    levels = (hwsim_levels(nest_counts(layer, translated.nest, batch, hw), table)
              if cost and translated.nest is not None else None)
    return Row(layer, exact_cost(layer, nest, batch, hw, table), hwsim_levels(nest_counts(layer, nest, batch, hw),
                                                                              table),
               runs["stock"].layers[layer.name], part, translated, cost, levels, why)


def _print_speed(rows: list[Row], ours: Timed, runs: dict[str, PeerRun], spec: dict[str, Any]) -> None:
    """Each search's CPU and wall seconds beside the energy of what it chose, under its own model and (hwsim's
    and the translated partitioned schedules) under hwsim's."""
    valid = [r for r in rows if r.translated_cost is not None]
    own = {"stock": sum(peer_levels(r.stock, spec).total_pj for r in rows),
           "partitioned": sum(peer_levels(r.partitioned, spec).total_pj for r in rows)}
    under = {"partitioned": f"{sum(r.translated_cost.energy_pj for r in valid if r.translated_cost) / 1e6:,.1f}"
                            f" ({len(valid)}/{len(rows)} layers)", "stock": "-"}
    print("\nsearch speed and quality, one process each: CPU s = user + sys of the search alone (hwsim: the mean of "
          "a search before and one after nn_dataflow's), energy of the chosen mappings in µJ")
    print(f"{'search':24s} {'CPU s':>8s} {'wall s':>8s} {'CPU / hwsim':>12s} {'own model':>11s} "
          f"{'under hwsim':>24s}")
    print(f"{'hwsim':24s} {ours.cpu_s:8.2f} {ours.wall_s:8.2f} {1.0:12.2f} "
          f"{sum(r.searched_levels.total_pj for r in rows) / 1e6:11,.1f} "
          f"{sum(r.searched.energy_pj for r in valid) / 1e6:13,.1f} ({len(valid)}/{len(rows)} layers)")
    for kind, run in runs.items():
        print(f"{'nn_dataflow ' + kind:24s} {run.cpu_seconds:8.2f} {run.seconds:8.2f} "
              f"{run.cpu_seconds / ours.cpu_s:12.2f} {own[kind] / 1e6:11,.1f} {under[kind]:>24s}")
    print("own model: hwsim without clock and control; under hwsim: every component, nn_dataflow's partitioned "
          "schedules translated (table b).\nnn_dataflow's whole processes (start-up and imports too): "
          + ", ".join(f"{kind} {run.process_cpu_seconds:.2f} CPU s" for kind, run in runs.items()))


def _print_own_models(rows: list[Row], spec: dict[str, Any]) -> None:
    print("\n(a) each tool's best under its own model, µJ (hwsim without clock and control)")
    print(f"{'layer':6s} {'hwsim':>9s} {'nnd stock':>10s} {'ratio':>6s} {'nnd partitioned':>16s} {'ratio':>6s}")
    for r in rows:
        ours = r.searched_levels.total_pj
        stock, part = peer_levels(r.stock, spec).total_pj, peer_levels(r.partitioned, spec).total_pj
        print(f"{r.layer.name:6s} {ours / 1e6:9.1f} {stock / 1e6:10.1f} {ours / stock:6.3f} {part / 1e6:16.1f} "
              f"{ours / part:6.3f}")


def _print_under_hwsim(rows: list[Row]) -> None:
    print("\n(b) under hwsim's model (every component, µJ): hwsim's searched mapping beside nn_dataflow's "
          "partitioned schedule translated into an hwsim nest (validated by check_nest)")
    print(f"{'layer':6s} {'searched':>9s} {'nnd translated':>15s} {'ratio':>6s}  translation")
    for r in rows:
        if r.translated_cost is None:
            print(f"{r.layer.name:6s} {r.searched.energy_pj / 1e6:9.1f} {'-':>15s} {'-':>6s}  not valid: {r.why_not}")
            continue
        ratio = r.searched.energy_pj / r.translated_cost.energy_pj
        print(f"{r.layer.name:6s} {r.searched.energy_pj / 1e6:9.1f} {r.translated_cost.energy_pj / 1e6:15.1f} "
              f"{ratio:6.3f}  {'; '.join(r.translated.notes) or 'as scheduled'}")


def _print_levels(rows: list[Row], spec: dict[str, Any]) -> None:
    print("\naccess counts per level, millions of words (µJ): hwsim's searched nest | nn_dataflow partitioned, "
          "its own counts | the same schedule counted by hwsim | nn_dataflow stock, its own counts")
    for r in rows:
        cells = [r.searched_levels, peer_levels(r.partitioned, spec), r.translated_levels,
                 peer_levels(r.stock, spec)]
        print(f"{r.layer.name}")
        for level in ALIGNED:
            text = [f"{c.words[level] / 1e6:9.2f} ({c.pj[level] / 1e6:7.1f})" if c else f"{'-':>19s}"
                    for c in cells]
            print(f"  {level:6s} " + " | ".join(text))


# ----- a recorded schedule and the command line -----------------------------------------------------------


def record(path: Path, batch: int, config: str = "eyeriss-v1") -> None:
    """Write nn_dataflow's partitioned schedules of AlexNet (the spec it was given and what the driver printed,
    times left out) to `path`: the recorded schedule the translation's tests read without nn_dataflow."""
    hw = load_config(config)
    layers = [l for l in zoo.build("alexnet") if l.kind in (LayerKind.CONV, LayerKind.FC)]
    spec = peer_spec(layers, hw, batch, partitioned=True)
    out, _ = driver_output(peer_python(), spec)
    about = (f"nn_dataflow's schedules of AlexNet's conv and FC layers on {config}'s array, partitioned, batch "
             f"{batch}: written by tools/nn_dataflow_peer.py --record")
    lines = [f' "about": {json.dumps(about)},', f' "packages": {json.dumps(list(PEER_PACKAGES))},',
             f' "spec": {json.dumps(spec)},', ' "schedules": {',
             ",\n".join(f"  {json.dumps(name)}: {json.dumps(r)}" for name, r in out["layers"].items()), " }"]
    path.write_text("{\n" + "\n".join(lines) + "\n}\n")  # one line per layer: small, and diffs read well
    print(f"wrote {path} ({path.stat().st_size} bytes)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=4, help="images per run (default 4)")
    parser.add_argument("--config", default="eyeriss-v1", help="the hardware (default eyeriss-v1)")
    parser.add_argument("--record", type=Path, metavar="FILE.json",
                        help="instead: write nn_dataflow's partitioned schedules of AlexNet to FILE.json")
    args = parser.parse_args()
    if args.record:
        record(args.record, args.batch, args.config)
    else:
        compare(args.batch, args.config)


if __name__ == "__main__":
    main()
