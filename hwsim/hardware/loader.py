"""Loading a hardware YAML into an `Accelerator`, with errors that point at the line.

The loader walks the dataclass schema: every YAML key must be a field (else
the closest valid key is suggested), every numeric value is parsed in its
field's dimension, and cross-field rules (sizes that must divide, fit or
grow up the hierarchy) run once the tree is built. Errors name the file, the
line, the YAML path and the fix.

A config may start from another (`base:`, keys merged; a key set to null
removes the base's), and `dram.preset` lays a standard DRAM device's sections
under the config's `dram` keys (`hwsim.hardware.dram`); a jedec DRAM's burst,
bandwidth, latency and energy per bit are then derived from the device.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import sys
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml

import hwsim
from hwsim.errors import ConfigError
from hwsim.files import compose_yaml, construct_yaml, read_text
from hwsim.hardware.dram import dram_errors, dram_presets, with_device_fields
from hwsim.hardware.precision import WORD_BITS, WORD_BITS_TEXT
from hwsim.hardware.schema import Accelerator, ParamInfo
from hwsim.hardware.units import parse_quantity
from hwsim.sparsity.codec import format_errors

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_Section = TypeVar("_Section", bound="DataclassInstance")  # a schema dataclass

SHIPPED_DIRS = (
    Path(hwsim.__file__).resolve().parents[1] / "configs",  # a source checkout or editable install
    Path(sys.prefix) / "share" / "hwsim" / "configs",  # a wheel install (data-files)
)


def shipped_configs() -> dict[str, Path]:
    """Configs that come with hwsim, by name (file stem)."""
    found: dict[str, Path] = {}
    for folder in SHIPPED_DIRS:
        if folder.is_dir():
            for path in sorted(folder.glob("*.yaml")):
                found.setdefault(path.stem, path)
    return found


def resolve_config(spec: str | Path) -> Path:
    """A config path from a file path or the name of a shipped config."""
    path = Path(spec)
    if path.is_file():
        return path
    shipped = shipped_configs()
    if str(spec) in shipped:
        return shipped[str(spec)]
    if str(spec).endswith(".yaml") and path.stem in shipped and not path.parent.name:
        return shipped[path.stem]
    names = ", ".join(shipped) or "none found"
    hint = difflib.get_close_matches(path.stem, list(shipped), n=1)
    guess = f"did you mean '{hint[0]}'? " if hint else ""
    raise ConfigError(f"{spec}: no such config file; {guess}give a path or a shipped config name ({names})")


@dataclass(frozen=True)
class Overrides:
    """Values set over a config's keys (dotted YAML paths such as `glb.size`, written as in the YAML:
    "64 KiB", 12), and where they come from, which errors about them name instead of a line."""

    source: str
    values: tuple[tuple[str, object], ...]

    def describe(self) -> str:
        return ", ".join(f"{key}={value}" for key, value in self.values)


@dataclass
class _Context:
    file: str
    loader: yaml.SafeLoader
    clock_hz: float | None = None
    overridden: dict[int, str] = field(default_factory=dict)  # id(node) -> where its value came from


def _where(ctx: _Context, node: yaml.Node, path: str) -> str:
    source = ctx.overridden.get(id(node))
    if source is not None:
        return f"{source}: {path}"
    return f"{ctx.file}:{node.start_mark.line + 1}: {path}"


def yaml_key(f: dataclasses.Field[Any]) -> str:
    """The YAML key of a field: its name without the unit suffix."""
    info: ParamInfo = f.metadata["info"]
    if info.dim is not None and info.dim.suffix:
        return f.name.removesuffix(info.dim.suffix)
    return f.name


def _section_type(hint: Any) -> type[DataclassInstance] | None:
    """The dataclass of a (possibly optional) nested section, else None."""
    for candidate in (hint, *typing.get_args(hint)):
        if isinstance(candidate, type) and dataclasses.is_dataclass(candidate):
            return candidate
    return None


def _build(cls: type[_Section], node: yaml.Node, path: str, ctx: _Context) -> _Section:
    if not isinstance(node, yaml.MappingNode):
        raise ConfigError(f"{_where(ctx, node, path or '(top level)')}: expected a mapping of keys to values")
    fields = {yaml_key(f): f for f in dataclasses.fields(cls)}
    given: dict[str, tuple[yaml.Node, yaml.Node]] = {}
    for key_node, value_node in node.value:
        key = str(key_node.value)
        if key not in fields:
            close = difflib.get_close_matches(key, list(fields), n=1, cutoff=0.5)
            hint = f"did you mean '{close[0]}'?" if close else f"valid keys: {', '.join(fields)}"
            raise ConfigError(f"{_where(ctx, key_node, _join(path, key))}: unknown key; {hint}")
        if key in given:
            raise ConfigError(f"{_where(ctx, key_node, _join(path, key))}: key given twice; keep one")
        given[key] = (key_node, value_node)
    hints = _type_hints(cls)
    values: dict[str, Any] = {}
    for key, f in fields.items():
        if key not in given:
            if f.default is dataclasses.MISSING:
                info: ParamInfo = f.metadata["info"]
                raise ConfigError(
                    f"{_where(ctx, node, _join(path, key))}: missing; add it "
                    f"({info.description}{', e.g. ' + repr(info.dim.example) if info.dim else ''})"
                )
            continue
        key_node, value_node = given[key]
        values[f.name] = _value(f, hints[f.name], value_node, _join(path, key), ctx)
        if f.name == "clock_hz":
            ctx.clock_hz = values[f.name]
    return cls(**values)


# The schema's classes never change: resolve their annotations once, not on every load.
_type_hints = functools.cache(typing.get_type_hints)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _value(f: dataclasses.Field[Any], hint: Any, node: yaml.Node, path: str, ctx: _Context) -> Any:
    info: ParamInfo = f.metadata["info"]
    nested = _section_type(hint)
    if nested is not None:
        if isinstance(node, yaml.ScalarNode) and node.value in ("", "null", "~") and f.default is None:
            return None
        return _build(nested, node, path, ctx)
    if not isinstance(node, yaml.ScalarNode):
        raise ConfigError(f"{_where(ctx, node, path)}: expected a single value, not a list or mapping")
    where = _where(ctx, node, path)
    raw = construct_yaml(node, where, ConfigError, ctx.loader)
    if info.boolean:
        if not isinstance(raw, bool):
            raise ConfigError(f"{where}: expected true or false")
        return raw
    if info.dim is None:
        if not isinstance(raw, str) or (f.name in ("name", "source") and not raw.strip()):
            raise ConfigError(f"{where}: expected a non-empty text")
        if info.choices and raw not in info.choices:
            close = difflib.get_close_matches(raw, info.choices, n=1, cutoff=0.5)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise ConfigError(f"{where}: unknown choice {raw!r}; {hint}use one of {', '.join(info.choices)}")
        return raw
    value = parse_quantity(raw, info.dim, ctx.clock_hz, where)
    return _check_number(value, info, where)


def _check_number(value: float, info: ParamInfo, where: str) -> float | int:
    """`value` within the field's bounds and its dimension's physical range (finite, never past what 64-bit
    arithmetic downstream can hold), as an int for integer fields."""
    dim = info.dim
    assert dim is not None  # only called for dimensioned fields
    unit = f" {dim.base}" if dim.base else ""
    if not math.isfinite(value):
        raise ConfigError(f"{where}: {value} is not a finite number; give a {dim.name} such as {dim.example!r}")
    if value > dim.highest:
        raise ConfigError(f"{where}: {value:g}{unit} is beyond the largest {dim.name} hwsim accepts "
                          f"({dim.highest:g}{unit}); give a realistic value such as {dim.example!r}")
    if 0 < value < dim.lowest:
        raise ConfigError(f"{where}: {value:g}{unit} is below the smallest {dim.name} hwsim accepts "
                          f"({dim.lowest:g}{unit}); give a realistic value such as {dim.example!r}")
    if info.positive and 0 < value < 0.5 and info.integer:
        raise ConfigError(f"{where}: {value:g} must be positive and a whole number; give 1 or more")
    if info.positive and value <= 0:
        raise ConfigError(f"{where}: {value:g} must be positive; give a value above zero")
    if value < 0:
        raise ConfigError(f"{where}: {value:g} is negative; give zero or more")
    if info.maximum is not None and value > info.maximum:
        raise ConfigError(f"{where}: {value:g} exceeds the maximum {info.maximum:g}")
    if info.integer:
        if abs(value - round(value)) > 1e-9 * max(1.0, abs(value)):
            raise ConfigError(f"{where}: {value:g} must be a whole number ({info.dim.base if info.dim else ''})")
        return round(value)
    return value


def load_config(spec: str | Path, overrides: Overrides | None = None) -> Accelerator:
    """Read, parse and validate a hardware config (a path or a shipped name), with `overrides` set over
    its keys."""
    path = resolve_config(spec)
    shown = str(spec) if Path(spec).is_file() else str(path)
    return parse_config(read_text(path, shown, ConfigError, "config"), shown, overrides)


def parse_config(text_: str, shown: str, overrides: Overrides | None = None) -> Accelerator:
    """Parse and validate config YAML `text_` read from `shown` (named in errors), with `overrides`; a jedec
    DRAM's burst, bandwidth, latency and energy per bit are derived from its device (`hwsim.hardware.dram`)."""
    acc = _parse(text_, shown, overrides)
    _raise_first(dram_errors(acc.dram), shown, overrides)
    acc = with_device_fields(acc)
    _raise_first(consistency_errors(acc), shown, overrides)
    return acc


def _raise_first(messages: Iterator[str], shown: str, overrides: Overrides | None) -> None:
    for message in messages:
        if overrides is not None:
            raise ConfigError(f"{shown} with {overrides.describe()} ({overrides.source}): {message}")
        raise ConfigError(f"{shown}: {message}")


def check_overrides(text_: str, shown: str, overrides: Overrides) -> None:
    """Raise ConfigError if an override names an unknown key or gives a bad value. Cross-field rules are
    not checked: they depend on the values the other overrides take together."""
    _parse(text_, shown, overrides)


def _parse(text_: str, shown: str, overrides: Overrides | None) -> Accelerator:
    ctx = _Context(shown, yaml.SafeLoader(""))
    root = _with_base(_compose(text_, shown), shown, ctx, ())
    if overrides is not None:
        for key, value in overrides.values:
            root = _override(root, key.split("."), value, overrides.source, ctx)
    return _build(Accelerator, _with_preset(root, shown, ctx), "", ctx)


PRESET_KEY = "preset"  # dram.preset names a device whose sections lie under the config's dram keys


def _with_preset(root: yaml.Node, shown: str, ctx: _Context) -> yaml.Node:
    """`root` with the device preset `dram.preset` names laid under its `dram` section: every key the config gives
    replaces the preset's (mappings merged key by key). Errors about a preset's keys name its file and line."""
    dram_index = _mapping_key(root, "dram")
    if dram_index is None:
        return root
    dram = root.value[dram_index][1]
    preset_index = _mapping_key(dram, PRESET_KEY)
    if preset_index is None:
        return root
    value = dram.value[preset_index][1]
    name = str(value.value) if isinstance(value, yaml.ScalarNode) else ""
    presets = dram_presets()
    if name not in presets:
        close = difflib.get_close_matches(name, list(presets), n=1, cutoff=0.5)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise ConfigError(f"{_where(ctx, value, 'dram.preset')}: unknown device {name!r}; {hint}use one of "
                          f"{', '.join(presets)}")
    path = presets[name]
    preset = _compose(path.read_text(encoding="utf-8"), str(path))
    _mark(preset, str(path), ctx)
    pairs = list(root.value)
    pairs[dram_index] = (pairs[dram_index][0], _merge(preset, dram))
    return yaml.MappingNode(root.tag, pairs, root.start_mark, root.end_mark)


def _mapping_key(node: yaml.Node, key: str) -> int | None:
    """Position of `key` among the pairs of mapping `node` (None: absent, or `node` is not a mapping)."""
    if not isinstance(node, yaml.MappingNode):
        return None
    return next((i for i, (k, _) in enumerate(node.value) if str(k.value) == key), None)


BASE_KEY = "base"  # a config may start from another (a shipped name or a path relative to it) and change keys
# (or remove them: a key set to null, ~)


def _with_base(root: yaml.Node, shown: str, ctx: _Context, chain: tuple[str, ...]) -> yaml.Node:
    """`root` over the config its `base:` names (recursively): every key it gives replaces the base's, mappings
    merged key by key. Errors about a base's keys name the base file and line."""
    if not isinstance(root, yaml.MappingNode):
        return root
    pairs = [(k, v) for k, v in root.value if str(k.value) != BASE_KEY]
    base_value = next((v for k, v in root.value if str(k.value) == BASE_KEY), None)
    own = yaml.MappingNode(root.tag, pairs, root.start_mark, root.end_mark)
    if base_value is None:
        return own
    where = f"{shown}:{base_value.start_mark.line + 1}: base"
    if not isinstance(base_value, yaml.ScalarNode) or not str(base_value.value).strip():
        raise ConfigError(f"{where}: give the name of a shipped config or a path")
    spec = str(base_value.value)
    relative = Path(shown).parent / spec
    path = relative if relative.is_file() else resolve_config(spec)
    if str(path) in chain or str(path) == shown:
        raise ConfigError(f"{where}: {spec} is its own base (a cycle); remove one of the base keys")
    try:
        base_text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read {path} ({exc.strerror})") from None
    base = _with_base(_compose(base_text, str(path)), str(path), ctx, (*chain, shown))
    _mark(base, str(path), ctx)
    return _merge(base, own)


def _mark(node: yaml.Node, file: str, ctx: _Context) -> None:
    """Name `file` and the line in errors about `node` and everything under it (a base's nodes)."""
    if id(node) not in ctx.overridden:
        ctx.overridden[id(node)] = f"{file}:{node.start_mark.line + 1}"
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            _mark(key, file, ctx)
            _mark(value, file, ctx)


def _merge(base: yaml.Node, own: yaml.Node) -> yaml.Node:
    """`own` over `base`: mappings merge key by key, anything else replaces; a key `own` sets to null (~) that
    `base` gives is removed (a config drops what its base states, e.g. the simple DRAM's bandwidth)."""
    if not (isinstance(base, yaml.MappingNode) and isinstance(own, yaml.MappingNode)):
        return own
    merged = {str(k.value): (k, v) for k, v in base.value}
    for key, value in own.value:
        name = str(key.value)
        if name in merged and _is_null(value):
            del merged[name]
            continue
        merged[name] = (key, _merge(merged[name][1], value) if name in merged else value)
    return yaml.MappingNode(own.tag, list(merged.values()), own.start_mark, own.end_mark)


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"


@functools.lru_cache(maxsize=16)
def _compose(text_: str, shown: str) -> yaml.Node:
    """The YAML node tree of a config text (cached: a sweep parses one text hundreds of times; the tree
    is never modified, overrides copy the nodes on their path)."""
    root = compose_yaml(text_, shown, ConfigError)
    if root is None:
        raise ConfigError(f"{shown}: the file is empty; start from a shipped config (hwsim config show eyeriss-v1)")
    return root


def _override(node: yaml.Node, keys: list[str], value: object, source: str, ctx: _Context) -> yaml.Node:
    """A copy of mapping `node` with `value` at the dotted path `keys` (missing mappings are created);
    the nodes it adds are marked as coming from `source`, so errors about them name it."""
    if not isinstance(node, yaml.MappingNode):  # a scalar on the path: the schema check reports it
        node = yaml.MappingNode("tag:yaml.org,2002:map", [], node.start_mark, node.end_mark)
        ctx.overridden[id(node)] = source
    head, rest = keys[0], keys[1:]
    pairs = list(node.value)
    index = next((i for i, (k, _) in enumerate(pairs) if str(k.value) == head), None)
    if rest:
        child = pairs[index][1] if index is not None else None
        if child is None:
            child = yaml.MappingNode("tag:yaml.org,2002:map", [], node.start_mark, node.end_mark)
            ctx.overridden[id(child)] = source
        new_value = _override(child, rest, value, source, ctx)
    else:
        composed = yaml.compose(yaml.safe_dump(value), Loader=yaml.SafeLoader)
        assert composed is not None  # a dumped value is one document, never an empty stream
        new_value = composed
        ctx.overridden[id(new_value)] = source
    if index is None:
        key_node = yaml.ScalarNode("tag:yaml.org,2002:str", head, node.start_mark, node.end_mark)
        ctx.overridden[id(key_node)] = source
        pairs.append((key_node, new_value))
    else:
        pairs[index] = (pairs[index][0], new_value)
    copy = yaml.MappingNode(node.tag, pairs, node.start_mark, node.end_mark, node.flow_style)
    if id(node) in ctx.overridden:
        ctx.overridden[id(copy)] = ctx.overridden[id(node)]
    return copy


MAX_MACS_PER_CYCLE = 2**32  # MACs per cycle of the whole array: beyond, cycle and MAC counts leave int64's range


def _array_errors(acc: Accelerator) -> Iterator[str]:
    """The PE array's size within what the simulator's 64-bit counts hold."""
    array = acc.pe_array
    if array.rows * array.cols * array.macs_per_cycle > MAX_MACS_PER_CYCLE:
        yield (f"pe_array: {array.rows} x {array.cols} PEs x {array.macs_per_cycle} MACs per cycle exceed the "
               f"{MAX_MACS_PER_CYCLE:,} MACs per cycle hwsim simulates; give fewer PEs or MACs per PE")


def consistency_errors(acc: Accelerator) -> Iterator[str]:
    """Cross-field rules: each yields '<yaml path>: <problem>; <fix>'."""
    bits = acc.precision_bits
    if bits not in WORD_BITS:
        yield f"precision: {bits} bit is not supported; use {WORD_BITS_TEXT} bit"
    word = bits // 8
    glb = acc.glb
    if glb.size_bytes % glb.banks:
        yield f"glb.banks: {glb.banks} banks do not divide the {glb.size_bytes} B GLB evenly; change size or banks"
    if glb.filter_bytes >= glb.size_bytes:
        yield "glb.filter: the filter partition must be smaller than glb.size"
    if glb.size_bytes % word:
        yield f"glb.size: {glb.size_bytes} B is not a whole number of {bits}-bit words"
    yield from _array_errors(acc)
    for bus in ("ifmap_bus_bits", "filter_bus_bits", "psum_bus_bits"):
        width = getattr(acc.noc, bus)
        if width % bits:
            yield f"noc.{bus.removesuffix('_bits')}: {width} bit is not a multiple of the {bits}-bit word"
    dram = acc.dram
    if dram.burst_bytes and (dram.burst_bytes & (dram.burst_bytes - 1) or dram.burst_bytes % word):
        yield f"dram.burst: {dram.burst_bytes} B must be a power of two and a whole number of words"
    if dram.row_buffer is not None and dram.burst_bytes:
        rb = dram.row_buffer
        if rb.row_bytes % dram.burst_bytes:
            yield "dram.row_buffer.row: the row size must be a multiple of dram.burst"
        if rb.hit_latency_cycles > rb.miss_latency_cycles:
            yield "dram.row_buffer.hit_latency: a row hit cannot be slower than a miss; swap the two"
    if acc.l2 is not None and acc.l2.size_bytes <= glb.size_bytes:
        yield (f"l2.size: {acc.l2.size_bytes} B is not larger than the GLB ({glb.size_bytes} B); "
               "an L2 must be the bigger level")
    if acc.l2 is not None and acc.l2.size_bytes % acc.l2.banks:
        yield "l2.banks: the banks do not divide l2.size evenly"
    if acc.line_buffer is not None and acc.line_buffer.size_bytes % word:
        yield "line_buffer.size: not a whole number of words"
    yield from _sparsity_errors(acc)
    if acc.clock_hz < 1e6:
        yield f"clock: {acc.clock_hz:g} Hz is implausibly slow; did you mean MHz?"


def _sparsity_errors(acc: Accelerator) -> Iterator[str]:
    """Rules of the zero features: skipping only where a pass is timed by its work; a usable code; DRAM and L2
    coding tiles alike when both do."""
    if acc.pe_array.zero_skipping and acc.pe_array.dataflow not in ("row_stationary", "no_local_reuse"):
        yield (f"pe_array.zero_skipping: a {acc.pe_array.dataflow} systolic fold keeps its cycles whatever its zeros; "
               "skipping is modelled for row_stationary and no_local_reuse, use zero_gating")
    dram, l2 = acc.dram.compression, acc.l2.compression if acc.l2 is not None else None
    for where, cfg in (("dram.compression", dram), ("l2.compression", l2)):
        if cfg is not None:
            yield from format_errors(cfg, acc.precision_bits, where)
    if dram is not None and l2 is not None and dram != l2:
        yield "l2.compression: differs from dram.compression; a tile moves between them as it is, give both the same"


def describe(acc: Any, prefix: str = "") -> Iterator[tuple[str, Any, str, str]]:
    """(yaml path, value in base unit, unit, description) for every field, depth first."""
    for f in dataclasses.fields(acc):
        info: ParamInfo = f.metadata["info"]
        value = getattr(acc, f.name)
        path = _join(prefix, yaml_key(f))
        if dataclasses.is_dataclass(value):
            yield from describe(value, path)
        elif value is not None:
            yield path, value, info.dim.base if info.dim else "", info.description


def to_dict(acc: Any) -> dict[str, Any]:
    """The config as plain data with unit-suffixed keys (for JSON and trace attributes)."""
    return dataclasses.asdict(acc)


def from_dict(data: Mapping[str, Any], cls: type = Accelerator, where: str = "accelerator record") -> Any:
    """The inverse of `to_dict` (a trace rebuilds the accelerator it was simulated on); every number is held to
    its field's bounds as a config's is, so a damaged record is a ConfigError naming the field, never a crash."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}; the record is damaged")
    hints = _type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(str(key) for key in data if key not in fields)
    if unknown:
        raise ConfigError(f"{where}: unknown field {unknown[0]!r}; the record is damaged")
    values: dict[str, Any] = {}
    for f in fields.values():
        if f.name not in data:
            continue
        section, value, path = _section_type(hints[f.name]), data[f.name], f"{where}.{f.name}"
        if section is not None and value is not None:
            values[f.name] = from_dict(value, section, path)
            continue
        info: ParamInfo = f.metadata["info"]
        if info.dim is not None:
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise ConfigError(f"{path}: {value!r} is not a number; the record is damaged")
            value = _check_number(float(value), info, path)
        values[f.name] = value
    try:
        built = cls(**values)
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}; the record is damaged") from None
    if isinstance(built, Accelerator):  # the record holds derived DRAM fields: only the cross-field rules apply
        _raise_first(consistency_errors(built), where, None)
    return built


__all__ = ["Overrides", "check_overrides", "describe", "from_dict", "load_config", "parse_config", "resolve_config",
           "shipped_configs", "to_dict"]
