"""Searched layer mappings kept on disk, keyed by what the search depends on: the layer's shape (its problem,
batch included), the hardware (every config field but its name and descriptions), the objective, the effort,
the seed and a hash of the code that decides what a search returns (`code_hash`: the mapspace, the cost model,
the closed form it prices with, the hardware model): a change there is a new key, never a stale mapping. A second
search of the same key reads the file instead.

The cache lives outside any repository: `--cache DIR`, else $HWSIM_CACHE, else $XDG_CACHE_HOME/hwsim, else
~/.cache/hwsim; one small JSON file per key under `mappings/`, written atomically.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
from pathlib import Path

from hwsim.errors import HwsimError
from hwsim.files import write_atomically
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.nest.format import LoopNest, mapping_from_data, nest_data
from hwsim.search.cost import LayerCost

PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # the hwsim package
SEARCH_CODE = ("search", "analytic", "mapping", "hardware", "sparsity", "workload/ir.py", "vocab.py")  # what a
# search's result depends on, under the package: its mapspace and cost model, the closed form and the hardware model
# that price a candidate, the nest checker, the layer IR
UNPRICED_FIELDS = ("name", "description", "technology")  # config text that changes nothing the search computes


def default_cache_dir() -> Path:
    """$HWSIM_CACHE, else $XDG_CACHE_HOME/hwsim, else ~/.cache/hwsim."""
    given = os.environ.get("HWSIM_CACHE")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "hwsim"


def hardware_data(hw: Accelerator) -> dict[str, object]:
    """The config as plain data without its names and descriptions."""
    data = dataclasses.asdict(hw)
    for name in UNPRICED_FIELDS:
        data.pop(name, None)
    return data


@functools.cache
def code_hash(root: Path = PACKAGE_ROOT) -> str:
    """SHA-256 of the Python sources under `root` that `SEARCH_CODE` names, path by path in sorted order."""
    digest = hashlib.sha256()
    for name in SEARCH_CODE:
        top = root / name
        for path in sorted(top.rglob("*.py")) if top.is_dir() else [top]:
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_key(signature: tuple[object, ...], hw: Accelerator, objective: str, effort: object, seed: int) -> str:
    """A hash of everything a layer's search depends on."""
    text = json.dumps([code_hash(), repr(signature), hardware_data(hw), objective, repr(effort), seed],
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class SearchCache:
    """Searched nests on disk (module docstring); `root` None keeps nothing."""

    def __init__(self, root: Path | None) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        assert self.root is not None
        return self.root / "mappings" / key[:2] / f"{key}.json"

    def get(self, key: str, layer: str) -> tuple[LoopNest, LayerCost] | None:
        """The cached nest (renamed to `layer`) and its cost, or None when absent or unreadable."""
        if self.root is None:
            return None
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
            doc = {"format": "hwsim-mapping 1", "network": "", "hardware": "", "dataflow": "", "batch": 1,
                   "layers": [{**data["nest"], "layer": layer}]}
            nest = mapping_from_data(doc, str(self._path(key))).layers[0]
            cost = LayerCost(**data["cost"])
        except (OSError, ValueError, KeyError, TypeError, HwsimError):
            return None
        return (nest, cost) if isinstance(nest, LoopNest) else None

    def put(self, key: str, nest: LoopNest, cost: LayerCost) -> None:
        if self.root is None:
            return
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps({"nest": nest_data(nest), "cost": cost.as_data()})
            write_atomically(str(path), lambda tmp: _write(tmp, text))
        except OSError as exc:
            raise HwsimError(f"{path}: cannot write the search cache ({exc.strerror}); give a writable --cache "
                             "DIR") from None


def _write(path: str, text: str) -> None:
    Path(path).write_text(text, encoding="utf-8")


__all__ = ["SearchCache", "cache_key", "code_hash", "default_cache_dir", "hardware_data"]
