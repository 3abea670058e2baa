"""Mappings as data: one loop nest per layer, in the vocabulary of Timeloop, saved as YAML or JSON.

A layer's work is the 10-deep loop nest of a grouped convolution over the
dims `DIMS`: N images, G groups, M output channels and C input channels per
group, F output frames, P × Q output rows and columns, T kernel frames, R × S
kernel rows and columns (F = T = 1 but for the 3-D convolutions of a clip; a
file without them means 1; a fully
connected layer is a convolution whose kernel covers its input; a transposed
convolution runs over its input grid, each input pixel scattering into R × S
outputs). A `LoopNest` splits every dim into factors placed, outer to inner:

- temporal loops at the storage levels above the PE array (`dram`, then the
  optional `l2`, then `glb`): each iterates over the tiles its child holds;
- the PE array: `stream` (temporal loops the array runs inside one *pass*,
  its operands streaming in and out while it computes), then `rows` and
  `cols` (spatial fan-out over the PEs);
- `rf`: temporal loops inside each PE, over the words its register file holds.

A pass is one iteration of all loops at the storage levels: the simulator
runs it as one COMPUTE on the array. The tile of a dim at a point of the nest
is the product of the factors inside that point; tiles are cut on a uniform
grid and the last one is clipped to the dim (a ragged tail: factor products
may exceed the dim, and an iteration whose range is empty is skipped). Each
storage level `keeps` some operands (the others bypass it and move between
its parent and child directly; DRAM keeps everything).

A nest may instead cover the layer's im2col GEMM (`lowering: im2col`, as
SCALE-Sim's systolic arrays compute): its dims are then C = K (C·T·R·S, the
window), P = N·F·P·Q (the output pixels) and M, the others 1; the
ifmap is the im2col matrix (each window element once per output pixel it
feeds, at every level), the filters and outputs are the layer's.

Operands are `ifmap`, `filter` and `psum` (partial sums; a finished one
written to DRAM is the ofmap). What each touches (`relevant`) follows the
layer; `REDUCTION` dims are summed into the outputs. How a level's operand
tile moves, from the mapping alone:

- *Visits.* Over the temporal loops above a level, let j be the innermost loop
  relevant to the operand with a factor above 1. Every iteration of the loops
  out to j (and no other) is a visit: the tile is filled whole, so a run of
  innermost irrelevant loops keeps it resident (Timeloop's reuse rule); a
  halo shared by neighbouring tiles is fetched again for each.
- *Streaming.* Inside a pass, when loop j is a stream loop that slides the
  ifmap's window (over F, P, Q, T, R or S) and the RF keeps the ifmap, only the
  words the window gains are delivered (Eyeriss' sliding window).
- *Partial sums.* A psum tile is read from its parent on every visit but the
  first (partial sums exist only once a reduction loop outside j has
  advanced) and written back at the end of every visit: as the ofmap when the
  parent is DRAM and every reduction loop outside j is at its last value.
- *The array.* Operands reach the PEs through the array (`delivery`):
  `multicast` (a bus: each distinct word once per tile), `forward_cols` /
  `forward_rows` (systolic: every row, resp. column, is a lane fed from the
  edge; a word is read once per lane and hops PE to PE along it) or
  `unicast` (each PE is loaded with its own words). Partial sums over
  reduction dims spread on the array are added PE to PE.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from hwsim.errors import HwsimError
from hwsim.files import DocumentReader, load_yaml, read_text, write_atomically

FORMAT = "hwsim-mapping 1"
LOWERINGS = ("conv", "im2col")  # the problem a nest covers: the convolution, or its im2col GEMM
DIMS = ("N", "G", "M", "C", "F", "P", "Q", "T", "R", "S")
OPERANDS = ("ifmap", "filter", "psum")
INPUT_OPERANDS = ("ifmap", "filter")
REDUCTION = frozenset({"C", "T", "R", "S"})  # dims summed into each output
WINDOWS = (("F", "T"), ("P", "R"), ("Q", "S"))  # (output dim, kernel dim) of each axis the window slides along
RELEVANT = {  # dims whose index selects the operand's data, direct convolutions
    "ifmap": frozenset({"N", "G", "C", "F", "P", "Q", "T", "R", "S"}),
    "filter": frozenset({"G", "M", "C", "T", "R", "S"}),
    "psum": frozenset({"N", "G", "M", "F", "P", "Q"}),
}
RELEVANT_TRANSPOSED = {**RELEVANT, "ifmap": frozenset({"N", "G", "C", "F", "P", "Q"})}  # P, Q index the input grid
SLIDING = frozenset({"F", "P", "Q", "T", "R", "S"})  # dims along which the ifmap window of a direct convolution slides
DELIVERIES = ("multicast", "forward_cols", "forward_rows", "unicast")
STORAGE_LEVELS = ("dram", "l2", "glb")  # above the array, outer to inner
LEVELS = (*STORAGE_LEVELS, "rf")


class MappingError(HwsimError):
    """A mapping does not fit its network or its hardware, or a mapping file is malformed."""


@dataclass(frozen=True)
class Loop:
    """One loop: `factor` iterations over `dim`."""

    dim: str
    factor: int

    def __str__(self) -> str:
        return f"{self.dim}={self.factor}"


Loops = tuple[Loop, ...]


@dataclass(frozen=True)
class Storage:
    """A storage level's temporal loops (outer to inner) and the operands it keeps."""

    level: str
    loops: Loops
    keeps: frozenset[str] = frozenset(OPERANDS)


@dataclass(frozen=True)
class Array:
    """The PE array: spatial loops over rows and columns, the stream loops of a pass, and how each input
    operand is delivered to the PEs."""

    rows: Loops
    cols: Loops
    stream: Loops
    delivery: Mapping[str, str] = field(default_factory=lambda: {"ifmap": "multicast", "filter": "multicast"})


@dataclass(frozen=True)
class LoopNest:
    """The mapping of one weighted layer: its dims, the storage levels above the array (dram first), the
    array and the RF."""

    layer: str
    dims: Mapping[str, int]
    storage: tuple[Storage, ...]
    array: Array
    rf: Storage
    lowering: str = "conv"

    def __post_init__(self) -> None:
        """A dim the nest does not name has extent 1 (a 2-D layer's F and T)."""
        object.__setattr__(self, "dims", {**{d: self.dims.get(d, 1) for d in DIMS}, **self.dims})

    def level(self, name: str) -> Storage | None:
        """The storage level called `name` (dram, l2, glb or rf), or None if the nest has none."""
        if name == "rf":
            return self.rf
        return next((s for s in self.storage if s.level == name), None)

    def all_loops(self) -> Iterable[Loop]:
        """Every loop of the nest, outer to inner: the storage levels, the stream, the rows, the columns, the RF."""
        for storage in self.storage:
            yield from storage.loops
        yield from self.array.stream
        yield from self.array.rows
        yield from self.array.cols
        yield from self.rf.loops

    def key(self) -> tuple[object, ...]:
        """The nest as a hashable value, without its layer's name: equal keys, equal work (caches use it)."""
        storage = tuple((s.level, s.loops, tuple(sorted(s.keeps))) for s in self.storage)
        array = (self.array.rows, self.array.cols, self.array.stream, tuple(sorted(self.array.delivery.items())))
        return (tuple(self.dims[d] for d in DIMS), self.lowering, storage, array, self.rf.loops,
                tuple(sorted(self.rf.keeps)))

    def storage_iterations(self) -> int:
        """Iterations of the storage levels' loops together: the tiles the layer moves, each one or a few
        simulated steps, so the work of simulating the nest is known before it starts."""
        product = 1
        for storage in self.storage:
            for loop in storage.loops:
                product *= loop.factor
        return product

    def factor_product(self, dim: str) -> int:
        """Π of the factors of `dim` over the whole nest."""
        product = 1
        for loop in self.all_loops():
            if loop.dim == dim:
                product *= loop.factor
        return product


@dataclass(frozen=True)
class Streamed:
    """A layer without a loop nest (pooling, element-wise, ...): its inputs stream through the GLB in `tiles`
    pieces per image while the array performs its non-MAC operations."""

    layer: str
    tiles: int


LayerMapping = LoopNest | Streamed


@dataclass(frozen=True)
class NetworkMapping:
    """A whole network's mapping on one accelerator and dataflow, for `batch` images."""

    network: str
    hardware: str
    dataflow: str
    batch: int
    layers: tuple[LayerMapping, ...]

    def layer(self, name: str) -> LayerMapping:
        found = next((l for l in self.layers if l.layer == name), None)
        if found is None:
            raise MappingError(f"mapping of {self.network!r} has no layer {name!r}; write `hwsim map` again "
                               "for this network")
        return found


# ----- plain data ---------------------------------------------------------------------------------------


def _loops_text(loops: Loops) -> list[str]:
    return [str(l) for l in loops]


def _storage_data(s: Storage) -> dict[str, Any]:
    return {"loops": _loops_text(s.loops), "keeps": [o for o in OPERANDS if o in s.keeps]}


def nest_data(nest: LoopNest) -> dict[str, Any]:
    """A loop nest as plain data (what the YAML and JSON files hold)."""
    out: dict[str, Any] = {"layer": nest.layer, "lowering": nest.lowering, "dims": {d: nest.dims[d] for d in DIMS}}
    for s in nest.storage:
        out[s.level] = _storage_data(s)
    out["array"] = {"rows": _loops_text(nest.array.rows), "cols": _loops_text(nest.array.cols),
                    "stream": _loops_text(nest.array.stream), "delivery": dict(nest.array.delivery)}
    out["rf"] = _storage_data(nest.rf)
    return out


def mapping_data(mapping: NetworkMapping) -> dict[str, Any]:
    """A mapping as plain data."""
    layers: list[dict[str, Any]] = [nest_data(l) if isinstance(l, LoopNest) else {"layer": l.layer, "streamed": l.tiles}
                                    for l in mapping.layers]
    return {"format": FORMAT, "network": mapping.network, "hardware": mapping.hardware,
            "dataflow": mapping.dataflow, "batch": mapping.batch, "layers": layers}


def save_mapping(mapping: NetworkMapping, path: str | Path) -> None:
    """Write `mapping` as YAML (or JSON when the path ends in .json), atomically."""
    data = mapping_data(mapping)
    text = json.dumps(data, indent=1) if str(path).endswith(".json") else yaml.safe_dump(data, sort_keys=False,
                                                                                          width=120,
                                                                                          default_flow_style=None)
    write_atomically(str(path), lambda tmp: _write_text(tmp, text))


def _write_text(path: str, text: str) -> None:
    Path(path).write_text(text, encoding="utf-8")


class _Reader(DocumentReader):
    """Parses mapping data, naming the file and the field of every problem."""

    def __init__(self, source: str) -> None:
        super().__init__(source, MappingError)

    def loops(self, where: str, value: object) -> Loops:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self.fail(where, "expected a list of loops such as [M=6, C=2]")
        return tuple(self.loop(f"{where}[{i}]", item) for i, item in enumerate(value))

    def loop(self, where: str, item: object) -> Loop:
        text = str(item).replace(" ", "")
        dim, sep, factor = text.partition("=")
        if not sep or dim not in DIMS or not factor.isdigit() or int(factor) < 1:
            raise self.fail(where, f"{item!r} is not a loop; write DIM=FACTOR with DIM one of {''.join(DIMS)}")
        return Loop(dim, int(factor))

    def operands(self, where: str, value: object) -> frozenset[str]:
        if not isinstance(value, list) or any(v not in OPERANDS for v in value):
            raise self.fail(where, f"{value!r}: list the operands kept here, from {', '.join(OPERANDS)}")
        return frozenset(value)

    def storage(self, level: str, where: str, value: object) -> Storage:
        data = self.mapping_of(where, value)
        self.only(where, data, {"loops", "keeps"})
        keeps = self.operands(f"{where}.keeps", data.get("keeps", list(OPERANDS)))
        return Storage(level, self.loops(f"{where}.loops", data.get("loops")), keeps)

    def array(self, where: str, value: object) -> Array:
        data = self.mapping_of(where, value)
        self.only(where, data, {"rows", "cols", "stream", "delivery"})
        delivery = self.mapping_of(f"{where}.delivery", data.get("delivery", {}))
        for operand, mode in delivery.items():
            if operand not in INPUT_OPERANDS or mode not in DELIVERIES:
                raise self.fail(f"{where}.delivery.{operand}", f"{mode!r}: give ifmap and filter one of "
                                                               f"{', '.join(DELIVERIES)}")
        full = {"ifmap": "multicast", "filter": "multicast", **delivery}
        return Array(self.loops(f"{where}.rows", data.get("rows")), self.loops(f"{where}.cols", data.get("cols")),
                     self.loops(f"{where}.stream", data.get("stream")), full)

    def nest(self, where: str, data: dict[str, Any]) -> LoopNest:
        self.only(where, data, {"layer", "lowering", "dims", *STORAGE_LEVELS, "array", "rf"})
        lowering = data.get("lowering", "conv")
        if lowering not in LOWERINGS:
            raise self.fail(f"{where}.lowering", f"{lowering!r}; use one of {', '.join(LOWERINGS)}")
        dims_data = self.mapping_of(f"{where}.dims", data.get("dims"))
        dims = {d: self.integer(f"{where}.dims.{d}", dims_data.get(d, 1)) for d in DIMS}
        if "dram" not in data:
            raise self.fail(f"{where}.dram", "missing; every loop nest starts at DRAM")
        storage = tuple(self.storage(level, f"{where}.{level}", data[level]) for level in STORAGE_LEVELS
                        if level in data)
        return LoopNest(str(data["layer"]), dims, storage, self.array(f"{where}.array", data.get("array", {})),
                        self.storage("rf", f"{where}.rf", data.get("rf", {})), lowering)

    def layer(self, where: str, value: object) -> LayerMapping:
        data = self.mapping_of(where, value)
        if "layer" not in data:
            raise self.fail(f"{where}.layer", "missing; name the layer this entry maps")
        if "streamed" in data:
            self.only(where, data, {"layer", "streamed"})
            return Streamed(str(data["layer"]), self.integer(f"{where}.streamed", data["streamed"]))
        return self.nest(where, data)

    def mapping(self, value: object) -> NetworkMapping:
        data = self.mapping_of("(top level)", value)
        self.only("(top level)", data, {"format", "network", "hardware", "dataflow", "batch", "layers"})
        if data.get("format") != FORMAT:
            raise self.fail("format", f"{data.get('format')!r}; this hwsim reads {FORMAT!r} files (write them "
                                      "with `hwsim map`)")
        layers = data.get("layers")
        if not isinstance(layers, list):
            raise self.fail("layers", "expected a list with one entry per layer")
        return NetworkMapping(str(data.get("network", "")), str(data.get("hardware", "")),
                              str(data.get("dataflow", "")), self.integer("batch", data.get("batch", 1)),
                              tuple(self.layer(f"layers[{i}]", l) for i, l in enumerate(layers)))


def mapping_from_data(data: object, source: str = "mapping") -> NetworkMapping:
    """The inverse of `mapping_data`; a malformed document is a MappingError naming `source` and the field."""
    return _Reader(source).mapping(data)


def load_mapping(path: str | Path) -> NetworkMapping:
    """Read a mapping file written by `hwsim map` (YAML or JSON)."""
    text = read_text(path, str(path), MappingError, "mapping")
    if not str(path).endswith(".json"):
        return mapping_from_data(load_yaml(text, str(path), MappingError), str(path))
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise MappingError(f"{path}: not valid JSON ({first}); fix the syntax") from None
    return mapping_from_data(data, str(path))
