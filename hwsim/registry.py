"""Named implementations chosen from the config: the one `Registry` every layer of hwsim uses.

A `Registry` maps the names a config may write (`dram.model: simple`,
`dram.compression.format: rlc`, `pe_array.dataflow: row_stationary`) to the
classes or objects that implement them, the way Ramulator 2 registers
implementations: a new one is one module whose class carries one `register`
line. An implementation may declare its own config parameters (`params`: a
dataclass of `hwsim.hardware.schema.param` fields, as gem5 components declare
theirs); the config loader then accepts those keys in the section that chose
it and checks them by their units.

A registry may name its *homes*: the modules holding the built-in
implementations, imported the first time a name is looked up; a home that is
a package has every module in it imported, so a new implementation is one new
file in that folder. The hardware schema can thus check a config's names
without importing the simulator (whose modules fill the registry), and a
plug-in registers more names just by being imported. This module imports
nothing of hwsim but the error type.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Generic, TypeVar

from hwsim.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """Named implementations of one kind (`what`, e.g. "dram.model"), the built-in ones in the modules or packages
    `home`."""

    def __init__(self, what: str, home: str | tuple[str, ...] = ()) -> None:
        self.what = what
        self.homes = (home,) if isinstance(home, str) else home
        self._entries: dict[str, T] = {}
        self._params: dict[str, type] = {}
        self._unloaded = list(self.homes)  # homes not imported yet, in order

    def register(self, name: str, params: type | None = None) -> Callable[[T], T]:
        """Decorator: make `name` choose the decorated class (with its own config parameters `params`, a dataclass
        of `param` fields, if it has any)."""
        def add(entry: T) -> T:
            if name in self._entries:
                raise ValueError(f"{self.what}: {name!r} registered twice")
            self._entries[name] = entry
            if params is not None:
                self._params[name] = params
            return entry
        return add

    def get(self, name: str) -> T:
        """The implementation called `name` (its homes imported in order until one registers it); an unknown name
        is a config error listing the known ones."""
        self._load(until=name)
        entry = self._entries.get(name)
        if entry is None:
            raise ConfigError(f"{self.what}: unknown implementation {name!r}; use one of {', '.join(self.names())}")
        return entry

    def knows(self, name: str) -> bool:
        """Whether `name` is registered (the homes imported in order only until one registers it)."""
        self._load(until=name)
        return name in self._entries

    def names(self) -> tuple[str, ...]:
        """Every registered name, sorted."""
        self._load()
        return tuple(sorted(self._entries))

    def params(self, name: str) -> type | None:
        """The config parameters implementation `name` declares (None: it takes only its section's own)."""
        self._load(until=name)
        return self._params.get(name)

    def _load(self, until: str | None = None) -> None:
        """Import the homes (a package with every module in it), in order, until one has registered `until` (None:
        all of them), so the built-in implementations have registered themselves and a config naming a light one
        does not import the heavy ones."""
        while self._unloaded and (until is None or until not in self._entries):
            home = self._unloaded.pop(0)
            module = importlib.import_module(home)
            for found in pkgutil.iter_modules(getattr(module, "__path__", [])):
                importlib.import_module(f"{home}.{found.name}")


__all__ = ["Registry"]
