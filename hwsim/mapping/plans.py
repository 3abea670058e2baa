"""Plans as data: what a mapper decided, in a file any run can replay.

Every mapper family's result is a plan: a loop-nest mapping (`hwsim.mapping.nest.format.NetworkMapping`,
written as `format: hwsim-mapping 1`), or one of the plans here, written as

    format: hwsim-plan 1
    mapper: depth_first            # depth_first | phases | planned
    network: srgan
    hardware: depthfirst-edge
    input: [3, 64, 96]             # C, H, W of the network input the plan was made for
    plan: {cuts: [...], tiling: [...], weights: on_chip, max_short_skip_layers: 8}

- `DepthFirstPlan`: the stacks' cuts, a tiling factor per stack, where the weights live, and the longest skip kept
  on chip (Goetschalckx & Verhelst);
- `PhasePlan`: the phases per layer (Minakova & Stefanov), the rule that derived them, the word they were sized
  at and the edge buffers placed in DRAM (the others in the L2);
- `SlotPlan`: every intermediate tensor's slots (buffer, level, word address) from a memory planner;
- `AllocationPlan`: which core of a multi-core accelerator runs which layer, or which output channels of it
  (`hwsim.mapping.multicore`), and how many images stream through the cores.

`save_plan` and `load_plan` write and read any of them (a loop-nest mapping through its own format); a file
that does not parse is one line naming the file and the field. The analytic models and the simulator read these
as data.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import yaml

from hwsim.files import DocumentReader, load_yaml, read_text, write_atomically
from hwsim.mapping.nest.format import FORMAT as NEST_FORMAT
from hwsim.mapping.nest.format import LayerMapping, MappingError, NetworkMapping, mapping_data, mapping_from_data
from hwsim.vocab import Level

PLAN_FORMAT = "hwsim-plan 1"


@dataclass(frozen=True)
class DepthFirstPlan:
    """A depth-first execution: stacks cut after `cuts`, each tiled by its factor, weights on chip or per stack."""

    mapper: ClassVar[str] = "depth_first"

    network: str
    hardware: str
    input_shape: tuple[int, int, int]
    cuts: tuple[str, ...]
    tiling: tuple[int, ...]
    weights: str  # "on_chip" or "per_stack"
    max_short_skip_layers: int = 8

    def data(self) -> dict[str, Any]:
        return {"cuts": list(self.cuts), "tiling": list(self.tiling), "weights": self.weights,
                "max_short_skip_layers": self.max_short_skip_layers}


@dataclass(frozen=True)
class PhasePlan:
    """A phased execution: phases per layer (derived by `rule`), edge buffers sized at `bits`, those named in
    `dram_edges` in DRAM and the others in the L2."""

    mapper: ClassVar[str] = "phases"

    network: str
    hardware: str
    input_shape: tuple[int, int, int]
    rule: str
    bits: int
    phases: tuple[tuple[str, int], ...]
    dram_edges: tuple[str, ...] = ()

    def data(self) -> dict[str, Any]:
        return {"rule": self.rule, "bits": self.bits, "phases": dict(self.phases),
                "dram_edges": list(self.dram_edges)}


@dataclass(frozen=True)
class TensorSlot:
    """Where one tensor lives for some of its consumers: its buffer, level and word address."""

    producer: int  # layer index (its step)
    consumers: tuple[int, ...]  # steps that read it from this slot
    words: int
    buffer: int  # buffer id (occupancy)
    address_words: int
    level: Level


@dataclass(frozen=True)
class SlotPlan:
    """A layer-by-layer run with every intermediate tensor in the slots a memory planner (`strategy`) chose."""

    mapper: ClassVar[str] = "planned"

    network: str
    hardware: str
    input_shape: tuple[int, int, int]
    strategy: str
    slots: tuple[TensorSlot, ...]
    buffers: tuple[str, ...]

    def data(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "buffers": list(self.buffers),
                "slots": [{"producer": s.producer, "consumers": list(s.consumers), "words": s.words,
                           "buffer": s.buffer, "address": s.address_words, "level": s.level.name.lower()}
                          for s in self.slots]}


@dataclass(frozen=True)
class CorePart:
    """The part of a layer one core computes: `channels` of its output channels, or `rows` of its output rows (the
    next ones after the parts before it), or all of it (both 0)."""

    core: str
    channels: int
    rows: int = 0


@dataclass(frozen=True)
class AllocationPlan:
    """Which core runs which layer: per layer with steps, its parts (one core: the whole layer; several: its
    output channels divided among them, in order); `images` stream through the cores one after another (a core
    runs its works in image order, so the cores form a pipeline); `rule` says how it was made; `forwarded` names
    the layers whose output tensor is pushed over the links into an inbox in its readers' GLB, where they read it
    (fusion across cores, `hwsim.mapping.multicore`); every other tensor passes through DRAM. Parts by rows may
    give a core several bands of a layer: its *tiles*, run one after another, each as soon as the rows it reads
    are there (depth-first across cores). `mappings` names, per core, a loop-nest mapping file whose entries
    (named as the parts: `layer`, `layer@core` for a split one, `layer@core.tT` for a core's T-th tile) map that
    core's parts; a core without one maps its parts by its dataflow's rules."""

    mapper: ClassVar[str] = "multicore"

    network: str
    hardware: str
    input_shape: tuple[int, int, int]
    images: int
    rule: str
    layers: tuple[tuple[str, tuple[CorePart, ...]], ...]
    forwarded: tuple[str, ...] = ()
    mappings: tuple[tuple[str, str], ...] = ()  # (core, hwsim-mapping file of its parts' nests); others: the rules

    @property
    def batch(self) -> int:
        return self.images

    def parts(self, layer: str) -> tuple[CorePart, ...]:
        """The parts of layer `layer` (empty: it has no steps)."""
        return dict(self.layers).get(layer, ())

    def data(self) -> dict[str, Any]:
        return {"images": self.images, "rule": self.rule,
                **({"forwarded": list(self.forwarded)} if self.forwarded else {}),
                **({"mappings": dict(self.mappings)} if self.mappings else {}),
                "layers": {name: parts[0].core if len(parts) == 1 else
                           [{"core": p.core, "rows": p.rows} if p.rows else {"core": p.core, "channels": p.channels}
                            for p in parts] for name, parts in self.layers}}


Plan = NetworkMapping | DepthFirstPlan | PhasePlan | SlotPlan | AllocationPlan


@dataclass(frozen=True)
class Forward:
    """A tensor pushed from its producer's core into an inbox in its consumers' core's GLB instead of DRAM: the
    producer layer, the layers that read it there, their core (index), the inbox's first GLB word on that core,
    the words of one image of the tensor, its channels, its rows per channel and how many rows the inbox holds at
    once (all of them, or a line buffer of `ring_rows` rows, row r in slot r mod `ring_rows`, for tiled readers)."""

    producer: str
    consumers: tuple[str, ...]
    core: int
    inbox_word: int
    words: int
    channels: int = 1
    rows: int = 1
    ring_rows: int = 1

    @property
    def inbox_words(self) -> int:
        """The words the inbox holds: the tensor's, or its line buffer's."""
        return self.words // self.rows * self.ring_rows


@dataclass(frozen=True)
class PartMapping:
    """A layer's part on a core as data: the layer, the core that runs it (its index), its first output channel
    and channel count, or its first output row and row count (0 and 0: the whole layer), and the loop nest (or
    streaming) its core's rules give it for one image (`hwsim.mapping.multicore.part_mappings` makes them; closed
    forms read them)."""

    layer: str
    core: int
    first_channel: int
    channels: int
    entry: LayerMapping
    first_row: int = 0
    rows: int = 0


def part_tiles(parts: tuple[CorePart, ...]) -> tuple[int | None, ...]:
    """Per part of a layer, its index among the parts its core computes when that core has several (its tile
    number), else None."""
    seen: dict[str, int] = {}
    for p in parts:
        seen[p.core] = seen.get(p.core, 0) + 1
    out, counted = [], dict.fromkeys(seen, 0)
    for p in parts:
        out.append(counted[p.core] if seen[p.core] > 1 else None)
        counted[p.core] += 1
    return tuple(out)


def work_name(layer: str, core: str, split: bool, image: int, images: int, tile: int | None = None) -> str:
    """A multi-core work's name: the layer's, `@core` for a part of a split layer, `.tTILE` for the TILE-th of
    several bands of rows a core computes one after another, `#image` when several images stream (the names the
    trace's layers and the closed form's works share)."""
    name = f"{layer}@{core}" if split else layer
    name = name if tile is None else f"{name}.t{tile}"
    return f"{name}#{image}" if images > 1 else name


@dataclass(frozen=True)
class AllocationRequest:
    """An allocation a run is to make for itself: by a fixed rule (round_robin, stages, split, ...) or a search
    (`search`) under `objective` (latency, energy or edp); `tiles`, for the fused rule, the bands of rows each
    layer at a boundary between cores is cut into (0: the rule's own choice)."""

    rule: str
    objective: str = "latency"
    tiles: int = 0


def plan_mapper(plan: Plan) -> str:
    """The mapper family a plan comes from (a loop-nest mapping's is `nest`)."""
    return "nest" if isinstance(plan, NetworkMapping) else plan.mapper


def plan_document(plan: Plan) -> dict[str, Any]:
    """The plan as the plain data a file holds."""
    if isinstance(plan, NetworkMapping):
        return mapping_data(plan)
    return {"format": PLAN_FORMAT, "mapper": plan.mapper, "network": plan.network, "hardware": plan.hardware,
            "input": list(plan.input_shape), "plan": plan.data()}


def save_plan(plan: Plan, path: str | Path) -> None:
    """Write `plan` as YAML (JSON for a .json path), atomically."""
    data = plan_document(plan)
    text = (json.dumps(data, indent=1) if str(path).endswith(".json")
            else yaml.safe_dump(data, sort_keys=False, width=120, default_flow_style=None))
    write_atomically(str(path), lambda tmp: _write_text(tmp, text))


def _write_text(path: str, text: str) -> None:
    Path(path).write_text(text, encoding="utf-8")


def load_plan(path: str | Path) -> Plan:
    """Read a plan file (a loop-nest mapping or a plan of another mapper)."""
    shown = str(path)
    text = read_text(path, shown, MappingError, "mapping")
    if shown.endswith(".json"):
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            first = (str(exc).splitlines() or [type(exc).__name__])[0]
            raise MappingError(f"{shown}: not valid JSON ({first}); fix the syntax") from None
    else:
        data = load_yaml(text, shown, MappingError)
    return plan_from_document(data, shown)


def plan_from_document(data: object, source: str) -> Plan:
    """The inverse of `plan_document`; a malformed document is a MappingError naming `source` and the field."""
    if isinstance(data, Mapping) and (data.get("format") == NEST_FORMAT
                                      or (data.get("format") != PLAN_FORMAT and "mapper" not in data)):
        return mapping_from_data(data, source)  # a loop-nest mapping (its reader names what is wrong)
    read = _Fields(source)
    top = read.mapping("(top level)", data)
    read.only("(top level)", top, {"format", "mapper", "network", "hardware", "input", "plan"})
    if top.get("format") != PLAN_FORMAT:
        raise read.fail("format", f"{top.get('format')!r}; this hwsim reads {NEST_FORMAT!r} and {PLAN_FORMAT!r} "
                                  "files (write them with hwsim map, depthfirst, phases or memplan --out)")
    header = (read.text("network", top.get("network")), read.text("hardware", top.get("hardware")),
              read.shape("input", top.get("input")))
    body = read.mapping("plan", top.get("plan"))
    mapper = top.get("mapper")
    if mapper == DepthFirstPlan.mapper:
        return _depth_first(read, header, body)
    if mapper == PhasePlan.mapper:
        return _phases(read, header, body)
    if mapper == SlotPlan.mapper:
        return _slots(read, header, body)
    if mapper == AllocationPlan.mapper:
        return _allocation(read, header, body)
    raise read.fail("mapper", f"{mapper!r}; use depth_first, phases, planned or multicore (a loop nest is a "
                              "hwsim-mapping file)")


Header = tuple[str, str, tuple[int, int, int]]


def _depth_first(read: _Fields, header: Header, body: dict[str, Any]) -> DepthFirstPlan:
    read.only("plan", body, {"cuts", "tiling", "weights", "max_short_skip_layers"})
    weights = body.get("weights", "on_chip")
    if weights not in ("on_chip", "per_stack"):
        raise read.fail("plan.weights", f"{weights!r}; use on_chip or per_stack")
    return DepthFirstPlan(*header, cuts=tuple(read.text(f"plan.cuts[{i}]", c) for i, c in
                                              enumerate(read.listed("plan.cuts", body.get("cuts", [])))),
                          tiling=tuple(read.integer(f"plan.tiling[{i}]", t) for i, t in
                                       enumerate(read.listed("plan.tiling", body.get("tiling")))),
                          weights=str(weights),
                          max_short_skip_layers=read.integer("plan.max_short_skip_layers",
                                                             body.get("max_short_skip_layers", 8), 0))


def _phases(read: _Fields, header: Header, body: dict[str, Any]) -> PhasePlan:
    read.only("plan", body, {"rule", "bits", "phases", "dram_edges"})
    phases = read.mapping("plan.phases", body.get("phases"))
    return PhasePlan(*header, rule=read.text("plan.rule", body.get("rule", "thesis")),
                     bits=read.integer("plan.bits", body.get("bits")),
                     phases=tuple((str(k), read.integer(f"plan.phases.{k}", v)) for k, v in phases.items()),
                     dram_edges=tuple(read.text(f"plan.dram_edges[{i}]", e) for i, e in
                                      enumerate(read.listed("plan.dram_edges", body.get("dram_edges", [])))))


def _slots(read: _Fields, header: Header, body: dict[str, Any]) -> SlotPlan:
    read.only("plan", body, {"strategy", "buffers", "slots"})
    levels = {"l2": Level.L2, "dram": Level.DRAM}
    slots = []
    for i, item in enumerate(read.listed("plan.slots", body.get("slots"))):
        where = f"plan.slots[{i}]"
        slot = read.mapping(where, item)
        read.only(where, slot, {"producer", "consumers", "words", "buffer", "address", "level"})
        if slot.get("level") not in levels:
            raise read.fail(f"{where}.level", f"{slot.get('level')!r}; use l2 or dram")
        slots.append(TensorSlot(read.integer(f"{where}.producer", slot.get("producer"), 0),
                                tuple(read.integer(f"{where}.consumers", c, 0)
                                      for c in read.listed(f"{where}.consumers", slot.get("consumers"))),
                                read.integer(f"{where}.words", slot.get("words"), 0),
                                read.integer(f"{where}.buffer", slot.get("buffer"), 0),
                                read.integer(f"{where}.address", slot.get("address"), 0), levels[slot["level"]]))
    return SlotPlan(*header, strategy=read.text("plan.strategy", body.get("strategy")), slots=tuple(slots),
                    buffers=tuple(read.text(f"plan.buffers[{i}]", b) for i, b in
                                  enumerate(read.listed("plan.buffers", body.get("buffers")))))


def _allocation(read: _Fields, header: Header, body: dict[str, Any]) -> AllocationPlan:
    read.only("plan", body, {"images", "rule", "forwarded", "mappings", "layers"})
    here = Path(read.source).parent
    mappings = tuple((str(core), str(here / read.text(f"plan.mappings.{core}", path)))
                     for core, path in read.mapping("plan.mappings", body.get("mappings", {})).items())
    layers: list[tuple[str, tuple[CorePart, ...]]] = []
    for name, given in read.mapping("plan.layers", body.get("layers")).items():
        where = f"plan.layers.{name}"
        if isinstance(given, str):
            layers.append((str(name), (CorePart(read.text(where, given), 0),)))
            continue
        parts = []
        for i, item in enumerate(read.listed(where, given)):
            part = read.mapping(f"{where}[{i}]", item)
            read.only(f"{where}[{i}]", part, {"core", "channels", "rows"})
            if ("channels" in part) == ("rows" in part):
                raise read.fail(f"{where}[{i}]", "give the part's channels (a split by output channels) or its rows "
                                                 "(by output rows), one of them")
            parts.append(CorePart(read.text(f"{where}[{i}].core", part.get("core")),
                                  read.integer(f"{where}[{i}].channels", part["channels"]) if "channels" in part
                                  else 0,
                                  read.integer(f"{where}[{i}].rows", part["rows"]) if "rows" in part else 0))
        if not parts:
            raise read.fail(where, "no cores; give a core name, or a list of {core, channels}")
        layers.append((str(name), tuple(parts)))
    return AllocationPlan(*header, images=read.integer("plan.images", body.get("images", 1)),
                          rule=read.text("plan.rule", body.get("rule", "given")), layers=tuple(layers),
                          forwarded=tuple(read.text(f"plan.forwarded[{i}]", name) for i, name in
                                          enumerate(read.listed("plan.forwarded", body.get("forwarded", [])))),
                          mappings=mappings)


class _Fields(DocumentReader):
    """Reads a plan document's fields, naming the file and the field of every problem."""

    def __init__(self, source: str) -> None:
        super().__init__(source, MappingError)

    def mapping(self, where: str, value: object) -> dict[str, Any]:
        return self.mapping_of(where, value)

    def listed(self, where: str, value: object) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(where, "expected a list")
        return value

    def text(self, where: str, value: object) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(where, f"{value!r} is not a non-empty text")
        return value

    def shape(self, where: str, value: object) -> tuple[int, int, int]:
        items = self.listed(where, value)
        if len(items) != 3:
            raise self.fail(where, f"{value!r}: give the input's channels, height and width, e.g. [3, 64, 96]")
        c, h, w = (self.integer(f"{where}[{i}]", v) for i, v in enumerate(items))
        return c, h, w


def plan_problems(plan: Plan, network: str, input_shape: tuple[int, int, int]) -> str:
    """Why `plan` does not fit the network `network` with input `input_shape` ('' when it does)."""
    if isinstance(plan, NetworkMapping):
        return ""
    if plan.network != network:
        return f"the plan is of network {plan.network!r}, not {network!r}; make one for {network}"
    if tuple(plan.input_shape) != tuple(input_shape):
        c, h, w = plan.input_shape
        return f"the plan was made for a {c}x{h}x{w} input, the network's is {'x'.join(map(str, input_shape))}; " \
               f"give --input {w}x{h}"
    return ""


__all__ = [
    "PLAN_FORMAT",
    "AllocationPlan",
    "AllocationRequest",
    "CorePart",
    "DepthFirstPlan",
    "Forward",
    "PartMapping",
    "PhasePlan",
    "Plan",
    "SlotPlan",
    "TensorSlot",
    "load_plan",
    "part_tiles",
    "plan_document",
    "plan_from_document",
    "plan_mapper",
    "plan_problems",
    "save_plan",
    "work_name",
]
