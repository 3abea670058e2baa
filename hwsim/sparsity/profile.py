"""Where each layer's zeros come from: per layer and operand, the fraction of zero words.

A `SparsityProfile` gives every layer a `LayerZeros`: the zero fractions of
its input tensor (ifmap), its filters and its output tensor after the fused
activation (ofmap), and the fraction of its MACs whose ifmap word is zero
(padding included: those are the MACs zero gating and zero skipping spare).
Three sources, and the profile says which it is (`kind`, `source`), which the
trace records:

- `profile`: a file, one row per layer (CSV with the columns layer, ifmap,
  filter, ofmap and optionally zero_macs; or YAML, `layers:` mapping each
  layer to those keys). A layer the file does not name is dense; a name the
  network lacks is an error;
- `measured`: the network run once on a real input (`hwsim.sparsity.onnx_run`):
  every activation and weight tensor counted, and the tensors kept, so the
  step generator codes each tile's actual values and counts each pass's zero
  MACs exactly;
- `defaults` (or a named preset of measured figures): the rules of
  `hwsim.analytic.graph_adapter.SparsityModel` by activation kind — a dense
  input, `relu_sparsity` zeros after a ReLU-family activation, pools and
  shape-only layers keeping their input's zeros, dense filters.

Without a zero_macs figure it is the zero fraction of the padded ifmap
(CNNergy's convention: the padding ring is zeros).
"""

from __future__ import annotations

import csv
import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

import numpy as np

from hwsim.errors import HwsimError
from hwsim.files import load_yaml, read_text
from hwsim.sparsity.tiles import Geometry, LayerTiles
from hwsim.workload.ir import Graph, Layer, LayerKind

PROFILE_COLUMNS = ("layer", "ifmap", "filter", "ofmap", "zero_macs")
KINDS = ("dense", "defaults", "preset", "profile", "measured")


class SparsityError(HwsimError):
    """A sparsity profile or a measured input cannot be used."""


@dataclass(frozen=True)
class LayerZeros:
    """Zero fractions of one layer's operands, and of its MACs (ifmap word zero, padding included)."""

    ifmap: float = 0.0
    filter: float = 0.0
    ofmap: float = 0.0
    zero_macs: float = 0.0
    inputs: tuple[float, ...] = ()  # a layer of several inputs (add, concat): each one's, `ifmap` their mean

    def input(self, index: int) -> float:
        """The zero fraction of input `index` (every input's `ifmap` when the inputs are not told apart)."""
        return self.inputs[index] if index < len(self.inputs) else self.ifmap

    def record(self) -> dict[str, float | list[float]]:
        fractions: dict[str, float | list[float]] = {"ifmap": self.ifmap, "filter": self.filter, "ofmap": self.ofmap,
                                                     "zero_macs": self.zero_macs}
        return {**fractions, "inputs": list(self.inputs)} if self.inputs else fractions


DENSE_LAYER = LayerZeros()


class Tensors(Protocol):
    """The tensors a measured profile keeps, as its readers use them: `hwsim.sparsity.measured.MeasuredTensors`
    (which makes the profile, so the profile knows it by this interface rather than by its module)."""

    @property
    def source(self) -> str: ...
    @property
    def activations(self) -> Mapping[str, np.ndarray]: ...
    @property
    def weights(self) -> Mapping[str, np.ndarray]: ...
    def layer_tiles(self, layer: Layer, problem: Geometry, conv: Geometry, im2col: bool) -> LayerTiles: ...
    def flat(self, tensor: str) -> np.ndarray: ...


@dataclass(frozen=True)
class SparsityProfile:
    """Per-layer zero fractions, where they come from, and (measured) the tensors themselves."""

    kind: str  # one of KINDS
    source: str  # one line: the file, the preset, the rule, the measured model and input
    layers: Mapping[str, LayerZeros] = field(default_factory=lambda: MappingProxyType({}))
    tensors: Tensors | None = None

    def zeros(self, layer: str) -> LayerZeros:
        """The layer's zero fractions (dense if the profile does not name it)."""
        return self.layers.get(layer, DENSE_LAYER)

    @property
    def is_dense(self) -> bool:
        return all(z == DENSE_LAYER for z in self.layers.values())

    def record(self) -> dict[str, Any]:
        """As plain data (trace attribute, JSON report)."""
        return {"kind": self.kind, "source": self.source,
                "layers": {name: z.record() for name, z in self.layers.items()}}


DENSE = SparsityProfile("dense", "dense: no zeros anywhere")


def profile_from_record(record: Mapping[str, Any] | None) -> SparsityProfile | None:
    """A profile as `SparsityProfile.record` wrote it (a trace's attribute), without measured tensors; None for
    none."""
    if not record:
        return None
    layers = {name: LayerZeros(float(z["ifmap"]), float(z["filter"]), float(z["ofmap"]), float(z["zero_macs"]),
                               tuple(float(v) for v in z.get("inputs", ())))
              for name, z in record["layers"].items()}
    return SparsityProfile(str(record["kind"]), str(record["source"]), MappingProxyType(layers))


def padded_sparsity(layer: Layer, sparsity: float) -> float:
    """Zero fraction of the padded ifmap: the tensor's zeros plus the padding ring, and a clip's padded frames (crops
    add none)."""
    shape = layer.in_shape
    padded_h = shape.h + layer.padding.top + layer.padding.bottom
    padded_w = shape.w + layer.padding.left + layer.padding.right
    padded_d = shape.d + layer.frames.front + layer.frames.back
    padded_area, area = padded_d * padded_h * padded_w, shape.d * shape.h * shape.w
    if padded_area <= area:
        return sparsity
    return (sparsity * area + padded_area - area) / padded_area


def default_zero_macs(layer: Layer, ifmap: float) -> float:
    """A layer's zero-MAC fraction when only its ifmap tensor's is known: the padded ifmap's for a convolution."""
    return padded_sparsity(layer, ifmap) if layer.kind is LayerKind.CONV else ifmap


def _fraction(value: object, where: str) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise SparsityError(f"{where}: {value!r} is not a number; give the fraction of zeros in [0, 1]") from None
    if not 0.0 <= number <= 1.0:
        raise SparsityError(f"{where}: {number:g} is not a fraction of zeros; give a value in [0, 1]")
    return number


def _layer_zeros(row: Mapping[str, object], layer: Layer, where: str) -> LayerZeros:
    unknown = sorted(set(row) - set(PROFILE_COLUMNS))
    if unknown:
        raise SparsityError(f"{where}: unknown column {unknown[0]!r}; use {', '.join(PROFILE_COLUMNS[1:])}")
    value = {k: _fraction(row[k], f"{where}: {k}") for k in PROFILE_COLUMNS[1:] if row.get(k) not in (None, "")}
    ifmap = value.get("ifmap", 0.0)
    return LayerZeros(ifmap, value.get("filter", 0.0), value.get("ofmap", 0.0),
                      value.get("zero_macs", default_zero_macs(layer, ifmap)))


def _rows(path: Path) -> Iterable[tuple[str, Mapping[str, object]]]:
    """(where, row) of every layer row of a CSV or YAML profile."""
    text = read_text(path, str(path), SparsityError, "sparsity profile")
    if path.suffix.lower() == ".csv":
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip() and not line.startswith("#")]
        reader = csv.DictReader(line for _, line in lines)
        if reader.fieldnames is None or "layer" not in reader.fieldnames:
            raise SparsityError(f"{path}: the first row must name the columns ({', '.join(PROFILE_COLUMNS)})")
        for (n, _), row in zip(lines[1:], reader):
            yield f"{path}:{n}", {k: v for k, v in row.items() if k is not None}
        return
    data = load_yaml(text, str(path), SparsityError)
    layers = data.get("layers") if isinstance(data, dict) else None
    if not isinstance(layers, dict):
        raise SparsityError(f"{path}: expected `layers:` mapping each layer to its ifmap, filter and ofmap zeros")
    for name, row in layers.items():
        if not isinstance(row, dict):
            raise SparsityError(f"{path}: layers.{name}: expected a mapping of ifmap, filter, ofmap to fractions")
        yield f"{path}: layers.{name}", {"layer": name, **row}


def read_profile(path: str | Path, graph: Graph) -> SparsityProfile:
    """A profile file (CSV or YAML, module docstring) for `graph`."""
    path = Path(path)
    if path.suffix.lower() not in (".csv", ".yaml", ".yml"):
        raise SparsityError(f"{path}: a sparsity profile is a .csv or .yaml file")
    names = {l.name: l for l in graph}
    layers: dict[str, LayerZeros] = {}
    for where, given in _rows(path):
        row = dict(given)
        name = str(row.pop("layer", "") or "")
        if name not in names:
            close = difflib.get_close_matches(name, list(names), n=1)
            hint = f"did you mean {close[0]!r}?" if close else "name a layer of the network (hwsim info)"
            raise SparsityError(f"{where}: {graph.name} has no layer {name!r}; {hint}")
        if name in layers:
            raise SparsityError(f"{where}: layer {name!r} given twice; keep one row")
        layers[name] = _layer_zeros(row, names[name], where)
    return SparsityProfile("profile", f"profile {path}", MappingProxyType(layers))
