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
import hashlib
import importlib.util
import math
import sys
import typing
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml

import hwsim
from hwsim.errors import ConfigError
from hwsim.files import compose_yaml, construct_yaml, read_text, require_regular_file
from hwsim.hardware.dram import dram_kind, dram_presets
from hwsim.hardware.kinds import CODECS
from hwsim.hardware.schema import CORE_SECTIONS, MAX_CORES, Accelerator, ParamInfo
from hwsim.hardware.units import parse_quantity
from hwsim.vocab import WORD_BITS, WORD_BITS_TEXT

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
    if path.exists() and not path.is_dir():
        require_regular_file(path, str(spec), ConfigError, "config file")  # a pipe or device: refused by type
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
    all_fields = {yaml_key(f): f for f in dataclasses.fields(cls)}
    fields = {key: f for key, f in all_fields.items() if not f.metadata["info"].model_params}
    holder = next((f for f in all_fields.values() if f.metadata["info"].model_params), None)
    given, extra = _given_keys(node, fields, path, ctx, holder is not None)
    if holder is not None and extra:
        _refuse_unknown(holder, fields, given, extra, path, ctx)
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
        value_node = given[key][1]
        values[f.name] = _value(f, hints[f.name], value_node, _join(path, key), ctx)
        if f.name == "clock_hz":
            ctx.clock_hz = values[f.name]
    if holder is not None:
        values[holder.name] = _model_params(holder, fields, values, extra, node, path, ctx)
    return cls(**values)


def _given_keys(node: yaml.MappingNode, fields: Mapping[str, dataclasses.Field[Any]], path: str, ctx: _Context,
                takes_params: bool) -> tuple[dict[str, tuple[yaml.Node, yaml.Node]], list[tuple[yaml.Node, yaml.Node]]]:
    """The section's own keys given in `node`, and (for a section whose chosen model may declare parameters) the
    other pairs; an unknown key is an error otherwise, as is a key given twice."""
    given: dict[str, tuple[yaml.Node, yaml.Node]] = {}
    extra: list[tuple[yaml.Node, yaml.Node]] = []
    for key_node, value_node in node.value:
        key = str(key_node.value)
        if key in given or any(str(k.value) == key for k, _ in extra):
            raise ConfigError(f"{_where(ctx, key_node, _join(path, key))}: key given twice; keep one")
        if key in fields:
            given[key] = (key_node, value_node)
        elif takes_params:
            extra.append((key_node, value_node))
        else:
            raise ConfigError(f"{_where(ctx, key_node, _join(path, key))}: unknown key; {_key_hint(key, fields)}")
    return given, extra


def _refuse_unknown(holder: dataclasses.Field[Any], fields: Mapping[str, dataclasses.Field[Any]],
                    given: Mapping[str, tuple[yaml.Node, yaml.Node]], extra: list[tuple[yaml.Node, yaml.Node]],
                    path: str, ctx: _Context) -> None:
    """Keys the section does not know, when the model it chooses declares no parameters of its own: the first is
    an unknown key (before any missing one is named)."""
    chooser = next(f for f in fields.values() if f.name == holder.metadata["info"].model_params)
    registry = chooser.metadata["info"].choices
    chosen_node = given.get(yaml_key(chooser))
    chosen = str(chosen_node[1].value) if chosen_node is not None else chooser.default
    if registry is not None and registry.knows(chosen) and registry.params(chosen) is None:
        key_node = extra[0][0]
        key = str(key_node.value)
        raise ConfigError(f"{_where(ctx, key_node, _join(path, key))}: unknown key; {_key_hint(key, fields)}")


def _key_hint(key: str, keys: Iterable[str]) -> str:
    close = difflib.get_close_matches(key, list(keys), n=1, cutoff=0.5)
    return f"did you mean '{close[0]}'?" if close else f"valid keys: {', '.join(keys)}"


def _model_params(holder: dataclasses.Field[Any], fields: Mapping[str, dataclasses.Field[Any]],
                  values: Mapping[str, Any], extra: list[tuple[yaml.Node, yaml.Node]], node: yaml.MappingNode,
                  path: str, ctx: _Context) -> Any:
    """The parameters the section's chosen implementation declares, built from the keys the section does not
    know itself (None when it declares none; then such a key is unknown)."""
    chooser = next(f for f in fields.values() if f.name == holder.metadata["info"].model_params)
    registry = chooser.metadata["info"].choices
    chosen = values.get(chooser.name, chooser.default)
    params = registry.params(chosen) if registry is not None else None
    if params is None:
        if extra:
            key_node = extra[0][0]
            key = str(key_node.value)
            raise ConfigError(f"{_where(ctx, key_node, _join(path, key))}: unknown key; {_key_hint(key, fields)}")
        return None
    if not extra and all(f.default is not dataclasses.MISSING for f in dataclasses.fields(params)):
        return params()
    own = yaml.MappingNode("tag:yaml.org,2002:map", extra, node.start_mark, node.end_mark)
    return _build(params, own, path, ctx)


def _listed(hint: Any, node: yaml.Node, path: str, ctx: _Context) -> tuple[Any, ...]:
    """A YAML list of texts or of sections (the item type of the `tuple[X, ...]` hint)."""
    if isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null":
        return ()
    if not isinstance(node, yaml.SequenceNode):
        raise ConfigError(f"{_where(ctx, node, path)}: expected a list")
    if len(node.value) > MAX_LISTED:
        raise ConfigError(f"{_where(ctx, node, path)}: {len(node.value)} entries; give at most {MAX_LISTED}")
    item = typing.get_args(hint)[0]
    if isinstance(item, type) and dataclasses.is_dataclass(item):
        return tuple(_build(item, entry, f"{path}[{i}]", ctx) for i, entry in enumerate(node.value))
    out = []
    for i, entry in enumerate(node.value):
        where = _where(ctx, entry, f"{path}[{i}]")
        raw = construct_yaml(entry, where, ConfigError, ctx.loader) if isinstance(entry, yaml.ScalarNode) else None
        if not isinstance(raw, str) or not raw.strip():
            raise ConfigError(f"{where}: expected a non-empty text")
        out.append(raw)
    return tuple(out)


MAX_LISTED = 4096  # entries of one list (cores, links, plugins)


# The schema's classes never change: resolve their annotations once, not on every load.
_type_hints = functools.cache(typing.get_type_hints)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _value(f: dataclasses.Field[Any], hint: Any, node: yaml.Node, path: str, ctx: _Context) -> Any:
    info: ParamInfo = f.metadata["info"]
    if info.listed:
        return _listed(hint, node, path, ctx)
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
        if info.choices is not None and not info.choices.knows(raw):
            names = info.choices.names()
            close = difflib.get_close_matches(raw, names, n=1, cutoff=0.5)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise ConfigError(f"{where}: unknown choice {raw!r}; {hint}use one of {', '.join(names)}")
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
    kind = dram_kind(acc.dram.model)
    _raise_first(kind.errors(acc.dram), shown, overrides)
    acc = kind.with_derived_fields(acc)
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
    root = _with_plugins(root, shown, ctx)
    return _build(Accelerator, _with_cores(_with_preset(root, shown, ctx), ctx), "", ctx)


PLUGINS_KEY = "plugins"


def _with_plugins(root: yaml.Node, shown: str, ctx: _Context) -> yaml.Node:
    """Import the Python files `plugins:` names (relative to the config), so the implementations they register are
    known before the config is read; their paths are kept absolute."""
    index = _mapping_key(root, PLUGINS_KEY)
    if index is None:
        return root
    node = root.value[index][1]
    paths = _listed(tuple[str, ...], node, PLUGINS_KEY, ctx)
    folder = Path(ctx.overridden.get(id(node), shown).split(":")[0]).parent
    resolved = [str((folder / path).resolve()) for path in paths]
    for path, given in zip(resolved, node.value):
        load_plugin(path, _where(ctx, given, PLUGINS_KEY))
    listed = yaml.SequenceNode("tag:yaml.org,2002:seq", [
        yaml.ScalarNode("tag:yaml.org,2002:str", p, given.start_mark, given.end_mark)
        for p, given in zip(resolved, node.value)], node.start_mark, node.end_mark)
    pairs = list(root.value)
    pairs[index] = (pairs[index][0], listed)
    return yaml.MappingNode(root.tag, pairs, root.start_mark, root.end_mark)


def load_plugin(path: str, where: str) -> None:
    """Import the Python file at `path` once (a module registering implementations); a file that cannot be
    imported is a config error naming it."""
    name = "hwsim_plugin_" + hashlib.sha1(path.encode()).hexdigest()[:12]
    if name in sys.modules:
        return
    if not Path(path).is_file():
        raise ConfigError(f"{where}: {path} is not a file; give the path of a Python module (relative to the config)")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"{where}: {path} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - a plug-in's own failure, whatever it is, is one line naming it
        del sys.modules[name]
        raise ConfigError(f"{where}: importing {path} failed ({type(exc).__name__}: {exc})") from None


CORES_KEY = "cores"


def _with_cores(root: yaml.Node, ctx: _Context) -> yaml.Node:
    """`cores: N` (N copies of the top-level core sections) or a list of cores, each merged over those sections,
    spelled out as a list of whole cores; the top-level core sections become the first core's."""
    index = _mapping_key(root, CORES_KEY)
    if index is None or not isinstance(root, yaml.MappingNode):
        return root
    value = root.value[index][1]
    template = yaml.MappingNode("tag:yaml.org,2002:map", [(k, v) for k, v in root.value
                                                          if str(k.value) in CORE_SECTIONS], root.start_mark,
                                root.end_mark)
    cores = [_named(_merge(template, item), k, ctx) for k, item in enumerate(_core_items(value, ctx))]
    first = {str(k.value): (k, v) for k, v in cores[0].value if str(k.value) in CORE_SECTIONS}
    pairs = [(k, v) for k, v in root.value if str(k.value) not in CORE_SECTIONS and str(k.value) != CORES_KEY]
    pairs += [*first.values(), (root.value[index][0], yaml.SequenceNode("tag:yaml.org,2002:seq", cores,
                                                                        value.start_mark, value.end_mark))]
    return yaml.MappingNode(root.tag, pairs, root.start_mark, root.end_mark)


def _core_items(value: yaml.Node, ctx: _Context) -> list[yaml.Node]:
    """The entries of `cores:`: N empty ones for a count, else the list's."""
    where = _where(ctx, value, CORES_KEY)
    if isinstance(value, yaml.SequenceNode):
        if not value.value or len(value.value) > MAX_CORES:
            raise ConfigError(f"{where}: give 1 to {MAX_CORES} cores")
        return list(value.value)
    raw = construct_yaml(value, where, ConfigError, ctx.loader) if isinstance(value, yaml.ScalarNode) else None
    if not isinstance(raw, int) or isinstance(raw, bool) or not 1 <= raw <= MAX_CORES:
        raise ConfigError(f"{where}: give a number of identical cores from 1 to {MAX_CORES}, or a list of cores")
    return [yaml.MappingNode("tag:yaml.org,2002:map", [], value.start_mark, value.end_mark) for _ in range(raw)]


def _named(core: yaml.Node, index: int, ctx: _Context) -> yaml.MappingNode:
    """Core `index`, `core`, with `name: coreINDEX` unless it names itself."""
    if not isinstance(core, yaml.MappingNode):
        raise ConfigError(f"{_where(ctx, core, f'{CORES_KEY}[{index}]')}: each core is a mapping of its name and the "
                          "sections that differ (pe_array, noc, glb, line_buffer)")
    name = f"core{index}"
    if _mapping_key(core, "name") is not None:
        return core
    key = yaml.ScalarNode("tag:yaml.org,2002:str", "name", core.start_mark, core.end_mark)
    value = yaml.ScalarNode("tag:yaml.org,2002:str", name, core.start_mark, core.end_mark)
    return yaml.MappingNode(core.tag, [(key, value), *core.value], core.start_mark, core.end_mark)


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
    """Cross-field rules: each yields '<yaml path>: <problem>; <fix>' (a listed core's paths start `cores[k].`)."""
    bits = acc.precision_bits
    if bits not in WORD_BITS:
        yield f"precision: {bits} bit is not supported; use {WORD_BITS_TEXT} bit"
    cores = _core_views(acc)
    for prefix, core in cores:
        yield from (prefix + problem for problem in _core_errors(core))
    dram, word = acc.dram, bits // 8
    if dram.burst_bytes and (dram.burst_bytes & (dram.burst_bytes - 1) or dram.burst_bytes % word):
        yield f"dram.burst: {dram.burst_bytes} B must be a power of two and a whole number of words"
    if dram.row_buffer is not None and dram.burst_bytes:
        rb = dram.row_buffer
        if rb.row_bytes % dram.burst_bytes:
            yield "dram.row_buffer.row: the row size must be a multiple of dram.burst"
        if rb.hit_latency_cycles > rb.miss_latency_cycles:
            yield "dram.row_buffer.hit_latency: a row hit cannot be slower than a miss; swap the two"
    for prefix, core in cores:
        if acc.l2 is not None and acc.l2.size_bytes <= core.glb.size_bytes:
            yield (f"l2.size: {acc.l2.size_bytes} B is not larger than the {prefix}GLB ({core.glb.size_bytes} B); "
                   "an L2 must be the bigger level")
    if acc.l2 is not None and acc.l2.size_bytes % acc.l2.banks:
        yield "l2.banks: the banks do not divide l2.size evenly"
    for prefix, core in cores:
        if core.line_buffer is not None and core.line_buffer.size_bytes % word:
            yield f"{prefix}line_buffer.size: not a whole number of words"
    yield from _sparsity_errors(acc, cores)
    if acc.clock_hz < 1e6:
        yield f"clock: {acc.clock_hz:g} Hz is implausibly slow; did you mean MHz?"
    yield from _tree_errors(acc)


def _core_views(acc: Accelerator) -> list[tuple[str, Accelerator]]:
    """Each core as a one-core accelerator, with the YAML path prefix of its sections ('' for a single core)."""
    if not acc.cores:
        return [("", acc)]
    return [(f"cores[{k}].", dataclasses.replace(acc, pe_array=c.pe_array, noc=c.noc, glb=c.glb,
                                                   line_buffer=c.line_buffer, cores=(), links=()))
            for k, c in enumerate(acc.cores)]


def _core_errors(acc: Accelerator) -> Iterator[str]:
    """Rules of one core's GLB, PE array and NoC."""
    bits = acc.precision_bits
    word = bits // 8
    glb = acc.glb
    if glb.size_bytes % glb.banks:
        yield f"glb.banks: {glb.banks} banks do not divide the {glb.size_bytes} B GLB evenly; change size or banks"
    if glb.filter_bytes >= glb.size_bytes:
        yield "glb.filter: the filter partition must be smaller than glb.size"
    if glb.size_bytes % word:
        yield f"glb.size: {glb.size_bytes} B is not a whole number of {bits}-bit words"
    yield from _array_errors(acc)
    for bus in ("ifmap_bus_bits", "filter_bus_bits", "psum_bus_bits", "psum_out_bus_bits"):
        width = getattr(acc.noc, bus)
        if width % bits:
            yield f"noc.{bus.removesuffix('_bits')}: {width} bit is not a multiple of the {bits}-bit word"


SHARED_UNITS = ("l2", "dram")  # the units a link may join beside the cores


def _tree_errors(acc: Accelerator) -> Iterator[str]:
    """The cores' names, and links joining two distinct units that exist, at most one link per pair."""
    names = [c.name for c in acc.all_cores]
    for k, name in enumerate(names):
        if not name.isidentifier() or name in SHARED_UNITS or name in names[:k]:
            yield (f"cores[{k}].name: {name!r} must be a unique identifier (letters, digits, _), not "
                   f"{' or '.join(SHARED_UNITS)}; rename it")
    units = {*names, "dram", *(("l2",) if acc.l2 is not None else ())}
    seen: set[frozenset[str]] = set()
    for k, link in enumerate(acc.links):
        ends = link.between
        if len(ends) != 2 or ends[0] == ends[1] or not set(ends) <= units:
            yield (f"links[{k}].between: {list(ends)} must name two different units of {', '.join(sorted(units))}; "
                   "fix the names")
        elif frozenset(ends) in seen:
            yield f"links[{k}].between: {ends[0]} and {ends[1]} are already linked; keep one link per pair"
        seen.add(frozenset(ends))
        if link.width_bits % acc.precision_bits:
            yield f"links[{k}].width: {link.width_bits} bit is not a multiple of the {acc.precision_bits}-bit word"
        if not link.name.isidentifier() or link.name in (l.name for l in acc.links[:k]):
            yield f"links[{k}].name: {link.name!r} must be a unique identifier (letters, digits, _); rename it"


def _sparsity_errors(acc: Accelerator, cores: list[tuple[str, Accelerator]]) -> Iterator[str]:
    """Rules of the zero features: skipping only where a pass is timed by its work; a usable code; DRAM and L2
    coding tiles alike when both do."""
    for prefix, core in cores:
        array = core.pe_array
        if array.zero_skipping and array.dataflow not in ("row_stationary", "no_local_reuse"):
            yield (f"{prefix}pe_array.zero_skipping: a {array.dataflow} systolic fold keeps its cycles whatever its "
                   "zeros; skipping is modelled for row_stationary and no_local_reuse, use zero_gating")
    dram, l2 = acc.dram.compression, acc.l2.compression if acc.l2 is not None else None
    for where, cfg in (("dram.compression", dram), ("l2.compression", l2)):
        if cfg is not None:
            yield from CODECS.get(cfg.format).config_errors(cfg, acc.precision_bits, where)
    if dram is not None and l2 is not None and dram != l2:
        yield "l2.compression: differs from dram.compression; a tile moves between them as it is, give both the same"


def describe(acc: Any, prefix: str = "") -> Iterator[tuple[str, Any, str, str]]:
    """(yaml path, value in base unit, unit, description) for every field, depth first; the entries of a list
    (cores, links) at `key[k]`, a model's own parameters at their section's path."""
    for f in dataclasses.fields(acc):
        info: ParamInfo = f.metadata["info"]
        value = getattr(acc, f.name)
        path = _join(prefix, yaml_key(f))
        if info.model_params:
            if value is not None:
                yield from describe(value, prefix)
        elif dataclasses.is_dataclass(value):
            yield from describe(value, path)
        elif info.listed and value and dataclasses.is_dataclass(value[0]):
            for k, entry in enumerate(value):
                yield from describe(entry, f"{path}[{k}]")
        elif info.listed:
            yield path, ", ".join(value), "", info.description
        elif value is not None:
            yield path, value, info.dim.base if info.dim else "", info.description


def to_dict(acc: Any) -> dict[str, Any]:
    """The config as plain data with unit-suffixed keys (for JSON and trace attributes)."""
    return dataclasses.asdict(acc)


def from_dict(data: Mapping[str, Any], cls: type = Accelerator, where: str = "accelerator record") -> Any:
    """The inverse of `to_dict` (a trace rebuilds the accelerator it was simulated on); every number is held to
    its field's bounds as a config's is, so a damaged record is a ConfigError naming the field, never a crash.
    The plug-ins an accelerator names are imported first, so their models' parameters can be rebuilt."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}; the record is damaged")
    hints = _type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(str(key) for key in data if key not in fields)
    if unknown:
        raise ConfigError(f"{where}: unknown field {unknown[0]!r}; the record is damaged")
    if cls is Accelerator:
        for path in _texts(data.get("plugins", ()), f"{where}.plugins"):
            load_plugin(path, f"{where}.plugins")
    values: dict[str, Any] = {}
    for f in fields.values():
        if f.name not in data:
            continue
        chooser = f.metadata["info"].model_params
        values[f.name] = (_record_params(fields[chooser], data, f"{where}.{f.name}") if chooser
                          else _record_value(f, hints[f.name], data, f"{where}.{f.name}"))
    try:
        built = cls(**values)
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}; the record is damaged") from None
    if isinstance(built, Accelerator):  # the record holds derived DRAM fields: only the cross-field rules apply
        _raise_first(consistency_errors(built), where, None)
    return built


def _record_value(f: dataclasses.Field[Any], hint: Any, data: Mapping[str, Any], path: str) -> Any:
    """One field of a record, rebuilt and checked like a config's."""
    info: ParamInfo = f.metadata["info"]
    value = data[f.name]
    section = _section_type(hint)
    if info.listed:
        item = typing.get_args(hint)[0]
        if isinstance(item, type) and dataclasses.is_dataclass(item):
            if not isinstance(value, (list, tuple)):
                raise ConfigError(f"{path}: {value!r} is not a list; the record is damaged")
            return tuple(from_dict(entry, item, f"{path}[{k}]") for k, entry in enumerate(value))
        return _texts(value, path)
    if section is not None and value is not None:
        return from_dict(value, section, path)
    if info.dim is not None:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ConfigError(f"{path}: {value!r} is not a number; the record is damaged")
        return _check_number(float(value), info, path)
    return value


def _record_params(chooser: dataclasses.Field[Any], data: Mapping[str, Any], path: str) -> Any:
    """The parameters of the model a record's `chooser` field names, rebuilt by the dataclass it declares."""
    value = data[path.rsplit(".", 1)[-1]]
    if value is None:
        return None
    registry = chooser.metadata["info"].choices
    params = registry.params(data.get(chooser.name, chooser.default)) if registry is not None else None
    if params is None:
        raise ConfigError(f"{path}: the model declares no parameters; the record is damaged")
    return from_dict(value, params, path)


def _texts(value: Any, path: str) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: {value!r} is not a list of texts; the record is damaged")
    return tuple(value)


__all__ = ["Overrides", "check_overrides", "describe", "from_dict", "load_config", "parse_config", "resolve_config",
           "shipped_configs", "to_dict"]
