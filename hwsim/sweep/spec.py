"""Sweep files: parse and validate the YAML into frozen dataclasses, and expand it into points.

A sweep file names base configs, networks, a mode and parameter axes:

    name: resnet50-pe-array
    config: eyeriss-v1            # a shipped config or a path (relative to the sweep file); or a list
    networks: [resnet50]          # zoo names or .onnx paths; or {name: NET, input: WxH}
    mode: estimate                # estimate (closed-form) or simulate (cycle-level, a trace per point)
    mapper: search                # rules (default): the dataflow's rules; search: each point's best mapping
    objective: energy             # what the search minimises: energy, latency, edp or dram
    batch: 1                      # images per run unless an axis `batch` sets it
    axes:
      pe_array.rows: [8, 12, 16]
      pe_array.cols: {from: 8, to: 32, step: 8}
      glb.data_size: {from: 8 KiB, to: 512 KiB, scale: log2}
      zip: {noc.ifmap_bus: [32 bit, 64 bit], noc.filter_bus: [32 bit, 64 bit]}
    combine: product              # product (default) or zip of the axes above
    outputs: {table: auto, traces: true}

An axis key is a dotted YAML path of the hardware config with values written as in the config
("64 KiB", "8 B/cycle"), `batch`, or `glb.data_size` (the GLB's ifmap+psum capacity, its access
energy following the config's size law, as `hwsim estimate --sweep` does). A `zip:` or `product:`
key groups axes combined the other way. Each point's id is a short hash of what it computes
(config, network, input, mode, batch, settings), so results survive reordering the file.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hwsim.errors import ConfigError, NetworkError, SweepError
from hwsim.files import load_yaml, read_text
from hwsim.hardware.loader import Overrides, check_overrides, resolve_config
from hwsim.hardware.units import BYTES, parse_quantity
from hwsim.search.names import MAPPERS, OBJECTIVE_NAMES
from hwsim.vocab import MAX_BATCH
from hwsim.workload.network import is_onnx_path, load_network, parse_input_size

Scalar = str | int | float
Settings = tuple[tuple[str, Scalar], ...]

MODES = ("estimate", "simulate")
COMBINE = ("product", "zip")
TABLE_FORMATS = ("auto", "parquet", "csv")
BATCH = "batch"  # an axis of the mapping, not of the hardware
GLB_DATA_SIZE = "glb.data_size"  # ifmap+psum capacity with the energy-size law (hwsim.hardware.energy)
TOP_KEYS = ("name", "description", "config", "networks", "mode", "batch", "mapper", "objective", "axes", "combine",
            "outputs")
RANGE_KEYS = ("from", "to", "step", "scale")
SCALES = ("linear", "log2")
MAX_AXIS_VALUES = 10_000
MAX_POINTS = 100_000  # points of one sweep: counted before any is expanded, so a 10**8-point file is one line
ID_CHARS = 12


@dataclass(frozen=True)
class Outputs:
    """What a sweep writes beside `points.jsonl`."""

    table: str  # auto (Parquet if pyarrow is installed, else CSV), parquet or csv
    traces: bool  # simulate mode: keep each point's trace as OUT/traces/<point id>.h5


@dataclass(frozen=True)
class BaseConfig:
    """A hardware config as the sweep names it, with its text (workers need not see the file)."""

    name: str
    source: str  # the path errors name
    text: str


@dataclass(frozen=True)
class NetworkSpec:
    """A network to run: zoo name or .onnx path, and an optional input resolution 'WxH'."""

    name: str
    input_size: str | None


@dataclass(frozen=True)
class Point:
    """One evaluation: everything a worker needs, and its stable id."""

    point_id: str
    sweep_file: str
    config: BaseConfig
    network: NetworkSpec
    mode: str
    batch: int
    settings: Settings  # axis key -> value as written, in the file's axis order (batch included)
    mapper: str = "rules"  # rules, or search: the point runs the best mapping found on its hardware
    objective: str = "energy"  # what the search minimises

    def hardware_overrides(self) -> Settings:
        """The settings that are keys of the hardware YAML."""
        return tuple((k, v) for k, v in self.settings if k not in (BATCH, GLB_DATA_SIZE))


@dataclass(frozen=True)
class Sweep:
    """A parsed sweep file and its points."""

    path: str
    name: str
    mode: str
    axis_keys: tuple[str, ...]
    outputs: Outputs
    points: tuple[Point, ...]


# ----- reading ----------------------------------------------------------------------------------------


def load_sweep(path: str | Path) -> Sweep:
    """Read, validate and expand a sweep file; bad input raises SweepError or ConfigError naming the
    file, the field and the fix."""
    shown = str(path)
    doc = load_yaml(read_text(path, shown, SweepError, "sweep file"), shown, SweepError)
    if not isinstance(doc, dict):
        raise SweepError(f"{shown}: expected a mapping with config, networks, mode and axes; see configs/sweeps/")
    return parse_sweep(doc, shown, Path(path).resolve().parent)


def parse_sweep(doc: dict[str, Any], shown: str, folder: Path) -> Sweep:
    """The sweep described by the mapping `doc` read from `shown`; relative paths are taken from `folder`."""
    for key in doc:
        if key not in TOP_KEYS:
            raise SweepError(f"{shown}: {key}: unknown key; {_hint(str(key), TOP_KEYS)}")
    for key in ("config", "networks", "axes"):
        if key not in doc:
            raise SweepError(f"{shown}: {key}: missing; add it (see configs/sweeps/ for examples)")
    mode = _choice(doc.get("mode", "estimate"), MODES, shown, "mode")
    combine = _choice(doc.get("combine", "product"), COMBINE, shown, "combine")
    batch = _positive_int(doc.get("batch", 1), f"{shown}: batch")
    configs = tuple(_base_config(c, shown, folder) for c in _as_list(doc["config"], shown, "config"))
    networks = tuple(_network(n, shown, folder) for n in _as_list(doc["networks"], shown, "networks"))
    if not isinstance(doc["axes"], dict) or not doc["axes"]:
        raise SweepError(f"{shown}: axes: expected a mapping of keys to values, e.g. pe_array.rows: [8, 12, 16]")
    axes = _parse_group(doc["axes"], combine, shown, "axes")
    _check_size(_size(axes) * len(configs) * len(networks), shown)
    keys = _axis_keys(axes)
    if GLB_DATA_SIZE in keys and "glb.size" in keys:
        raise SweepError(f"{shown}: axes: give glb.size or glb.data_size, not both")
    for config in configs:
        _check_axes(axes, config, shown)
    name = doc.get("name") or Path(shown).stem
    if not isinstance(name, str):
        raise SweepError(f"{shown}: name: {name!r} is not a text; give the sweep a name such as cnnergy-glb")
    mapper = _choice(doc.get("mapper", "rules"), MAPPERS, shown, "mapper")
    if "objective" in doc and mapper != "search":
        raise SweepError(f"{shown}: objective: a search's objective; add mapper: search or drop it")
    objective = _choice(doc.get("objective", "energy"), OBJECTIVE_NAMES, shown, "objective")
    points = _points(shown, configs, networks, (mode, mapper, objective), batch, _expand(axes, shown))
    return Sweep(shown, name, mode, keys, _outputs(doc.get("outputs", {}), shown), points)


def _hint(key: str, valid: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.5)
    return f"did you mean '{close[0]}'?" if close else f"valid keys: {', '.join(valid)}"


def _choice(value: object, valid: tuple[str, ...], shown: str, key: str) -> str:
    if value not in valid:
        raise SweepError(f"{shown}: {key}: {value!r} is not one of {', '.join(valid)}; pick one")
    return str(value)


def _positive_int(value: object, where: str) -> int:
    """A batch: a whole number from 1 to MAX_BATCH."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_BATCH:
        raise SweepError(f"{where}: {value!r} is not a positive whole number up to {MAX_BATCH}; give e.g. 4")
    return value


def _as_list(value: object, shown: str, key: str) -> list[Any]:
    items = value if isinstance(value, list) else [value]
    if not items:
        raise SweepError(f"{shown}: {key}: empty; give at least one")
    return items


def _base_config(value: object, shown: str, folder: Path) -> BaseConfig:
    if not isinstance(value, str) or not value.strip():
        raise SweepError(f"{shown}: config: {value!r}; give a shipped config name (eyeriss-v1) or a YAML path")
    local = folder / value
    try:
        path = local if local.is_file() else resolve_config(value)
    except ConfigError as exc:
        raise SweepError(f"{shown}: config: {exc}") from None
    try:
        return BaseConfig(value, str(path), path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SweepError(f"{shown}: config: {path}: cannot read ({exc.strerror})") from None


def _network(value: object, shown: str, folder: Path) -> NetworkSpec:
    if isinstance(value, dict):
        unknown = set(value) - {"name", "input"}
        if unknown or "name" not in value:
            raise SweepError(f"{shown}: networks: {value!r}; write a network as NAME or {{name: NAME, input: WxH}}")
        name, input_size = value["name"], value.get("input")
    else:
        name, input_size = value, None
    if not isinstance(name, str) or not name.strip():
        raise SweepError(f"{shown}: networks: {name!r}; give a zoo name (hwsim zoo) or an .onnx path")
    if is_onnx_path(name) and (folder / name).is_file():
        name = str(folder / name)
    if input_size is not None:
        input_size = str(input_size)
    try:  # every network is built once here, so a typo stops the sweep before it starts
        load_network(name, parse_input_size(input_size) if input_size else None)
    except NetworkError as exc:
        raise SweepError(f"{shown}: networks: {exc}") from None
    return NetworkSpec(name, input_size)


def _outputs(value: object, shown: str) -> Outputs:
    if not isinstance(value, dict) or set(value) - {"table", "traces"}:
        raise SweepError(f"{shown}: outputs: {value!r}; write it as {{table: auto|parquet|csv, traces: true|false}}")
    traces = value.get("traces", True)
    if not isinstance(traces, bool):
        raise SweepError(f"{shown}: outputs.traces: {traces!r}; give true or false")
    return Outputs(_choice(value.get("table", "auto"), TABLE_FORMATS, shown, "outputs.table"), traces)


# ----- axes -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Axis:
    """One key and the values it takes."""

    key: str
    values: tuple[Scalar, ...]


@dataclass(frozen=True)
class Group:
    """Axes (or groups) combined as a product or a zip."""

    combine: str
    members: tuple[Axis | Group, ...]


def _parse_group(mapping: dict[Any, Any], combine: str, shown: str, where: str) -> Group:
    members: list[Axis | Group] = []
    for raw_key, value in mapping.items():
        key = str(raw_key)
        if key in COMBINE:
            if not isinstance(value, dict) or not value:
                raise SweepError(f"{shown}: {where}.{key}: expected a mapping of axes, e.g. "
                                 f"{key}: {{pe_array.rows: [8, 16], pe_array.cols: [8, 16]}}")
            members.append(_parse_group(value, key, shown, f"{where}.{key}"))
        else:
            members.append(Axis(key, _axis_values(value, shown, f"{where}.{key}", key)))
    if combine == "zip" and len({_size(m) for m in members}) > 1:
        sizes = ", ".join(f"{_axis_keys(m)[0]}: {_size(m)}" for m in members)
        raise SweepError(f"{shown}: {where}: zipped axes need the same number of values ({sizes}); "
                         "make them equal or combine them as a product")
    return Group(combine, tuple(members))


def _size(member: Axis | Group) -> int:
    """How many settings `member` expands to, without expanding it (a zip's members are equally long)."""
    if isinstance(member, Axis):
        return len(member.values)
    sizes = [_size(m) for m in member.members]
    return sizes[0] if member.combine == "zip" else math.prod(sizes)


def _check_size(points: int, shown: str) -> None:
    if points > MAX_POINTS:
        raise SweepError(f"{shown}: axes: {points:,} points (axes x configs x networks), beyond the {MAX_POINTS:,} "
                         "one sweep runs; take larger steps or fewer values, or split the sweep into several files")


def _axis_keys(member: Axis | Group) -> tuple[str, ...]:
    if isinstance(member, Axis):
        return (member.key,)
    return tuple(k for m in member.members for k in _axis_keys(m))


def _axis_values(value: object, shown: str, where: str, key: str) -> tuple[Scalar, ...]:
    given: tuple[object, ...]
    if isinstance(value, dict):
        given = _range(value, shown, where)
    else:
        given = tuple(value) if isinstance(value, list) else (value,)
    if not given:
        raise SweepError(f"{shown}: {where}: no values; give a list or a range {{from: A, to: B, step: S}}")
    values: list[Scalar] = []
    for v in given:
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise SweepError(f"{shown}: {where}: {v!r} is not a single value; write numbers or texts "
                             "such as '64 KiB'")
        values.append(v)
    if len(set(values)) != len(values):
        raise SweepError(f"{shown}: {where}: a value is listed twice; remove the repeat")
    if key == BATCH:
        for v in values:
            _positive_int(v, f"{shown}: {where}")
    return tuple(values)


_NUMBER_UNIT = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(\S*)\s*$")


def _number_unit(value: object, shown: str, where: str) -> tuple[float, str]:
    """A range bound as (number, unit text)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number, unit = float(value), ""
    else:
        match = _NUMBER_UNIT.match(str(value))
        if match is None:
            raise SweepError(f"{shown}: {where}: {value!r} is not a number with an optional unit; write e.g. '8 KiB'")
        number, unit = float(match.group(1)), match.group(2)
    if not math.isfinite(number):
        raise SweepError(f"{shown}: {where}: {value!r} is not a finite number; write a bound such as 64 or '8 KiB'")
    return number, unit


def _format(number: float, unit: str) -> Scalar:
    """A range value written like the bounds: a number, or 'number unit'."""
    rounded = round(number, 9)
    whole = float(rounded).is_integer()
    if not unit:
        return int(rounded) if whole else rounded
    return f"{int(rounded) if whole else rounded} {unit}"


def _range(spec: dict[Any, Any], shown: str, where: str) -> tuple[Scalar, ...]:
    """{from, to, step} (linear) or {from, to, scale: log2} (doubling; `to` is included)."""
    unknown = [k for k in spec if k not in RANGE_KEYS]
    if unknown or "from" not in spec or "to" not in spec:
        raise SweepError(f"{shown}: {where}: write a range as {{from: A, to: B, step: S}} or "
                         "{from: A, to: B, scale: log2}")
    scale = _choice(spec.get("scale", "linear"), SCALES, shown, f"{where}.scale")
    (low, unit), (high, high_unit) = (_number_unit(spec[k], shown, f"{where}.{k}") for k in ("from", "to"))
    if high_unit != unit:
        raise SweepError(f"{shown}: {where}: from and to are in different units ({unit or 'none'}, "
                         f"{high_unit or 'none'}); write both in the same unit")
    if not low < high:
        raise SweepError(f"{shown}: {where}: from {spec['from']!r} must be below to {spec['to']!r}")
    if scale == "log2":
        if "step" in spec or low <= 0:
            raise SweepError(f"{shown}: {where}: a log2 range doubles from a positive 'from' and takes no step")
        count = math.floor(math.log2(high / low) + 1e-9) + 1
        numbers = [low * 2**k for k in range(min(count, MAX_AXIS_VALUES))]
        if not math.isclose(numbers[-1], high):
            numbers.append(high)
    else:
        if "step" not in spec:
            raise SweepError(f"{shown}: {where}: a linear range needs a step, e.g. step: 4 (or scale: log2)")
        step, step_unit = _number_unit(spec["step"], shown, f"{where}.step")
        if step_unit != unit or step <= 0:
            raise SweepError(f"{shown}: {where}.step: give a positive step in the unit of from and to")
        values = (high - low) / step + 1
        if not values <= MAX_AXIS_VALUES:  # an infinite quotient (1e308 / 1e-308) included
            raise SweepError(f"{shown}: {where}: {values:.6g} values; keep an axis within {MAX_AXIS_VALUES} "
                             "(a larger step)")
        count = math.floor(values + 1e-9)
        numbers = [low + k * step for k in range(count)]
    return tuple(_format(n, unit) for n in numbers)


def _check_axes(group: Group, config: BaseConfig, shown: str) -> None:
    """Every value of every hardware axis on `config` alone: unknown keys and bad values stop the sweep."""
    for member in group.members:
        if isinstance(member, Group):
            _check_axes(member, config, shown)
            continue
        for value in member.values:
            if member.key == BATCH:
                continue
            if member.key == GLB_DATA_SIZE:
                size = parse_quantity(value, BYTES, None, f"{shown}: axes: {GLB_DATA_SIZE}")
                if size <= 0 or not size.is_integer():
                    raise SweepError(f"{shown}: axes: {GLB_DATA_SIZE}: {value!r}; give a positive whole "
                                     "number of bytes, e.g. '64 KiB'")
                continue
            check_overrides(config.text, config.source, Overrides(f"{shown}: axes", ((member.key, value),)))


def _expand(member: Axis | Group, shown: str) -> list[Settings]:
    """The settings a member takes, in order: each value of an axis; a group's product or zip."""
    if isinstance(member, Axis):
        return [((member.key, v),) for v in member.values]
    parts = [_expand(m, shown) for m in member.members]
    combos = zip(*parts) if member.combine == "zip" else itertools.product(*parts)
    return [tuple(kv for part in combo for kv in part) for combo in combos]


# ----- points -----------------------------------------------------------------------------------------


def point_id(config: BaseConfig, network: NetworkSpec, mode: str, batch: int, settings: Settings,
             mapper: str = "rules", objective: str = "energy") -> str:
    """A short hash of what a point computes: the same point keeps its id when the file is reordered (a point of
    the rule mapping keeps the id it had before searches existed)."""
    text_sha = hashlib.sha256(config.text.encode()).hexdigest()
    identity: dict[str, object] = {"config": config.name, "config_sha256": text_sha, "network": network.name,
                                   "input": network.input_size, "mode": mode, "batch": batch,
                                   "settings": sorted((k, v) for k, v in settings if k != BATCH)}
    if mapper != "rules":
        identity["mapper"], identity["objective"] = mapper, objective
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:ID_CHARS]


def _points(shown: str, configs: tuple[BaseConfig, ...], networks: tuple[NetworkSpec, ...],
            how: tuple[str, str, str], batch: int, settings: list[Settings]) -> tuple[Point, ...]:
    """Every point; `how` is (mode, mapper, objective)."""
    mode, mapper, objective = how
    points = []
    for config, network, s in itertools.product(configs, networks, settings):
        b = int(dict(s).get(BATCH, batch))
        points.append(Point(point_id(config, network, mode, b, s, mapper, objective), shown, config, network, mode,
                            b, s, mapper, objective))
    ids = [p.point_id for p in points]
    if len(set(ids)) != len(ids):
        raise SweepError(f"{shown}: some points repeat (the same config, network and settings twice); "
                         "remove the repeated config or network")
    return tuple(points)


__all__ = [
    "BATCH",
    "GLB_DATA_SIZE",
    "MODES",
    "BaseConfig",
    "NetworkSpec",
    "Outputs",
    "Point",
    "Sweep",
    "load_sweep",
    "parse_sweep",
    "point_id",
]
