"""Named implementations chosen from the config: the `Registry` every layer of hwsim shares.

A `Registry` maps the names a config may write (`dram.model: simple`,
`dram.compression.format: rlc`, `pe_array.dataflow: row_stationary`) to the
classes or objects that implement them, the way Ramulator 2 registers
implementations: a new one is one class and one `register` line. It lives
at the bottom of the package (it imports only the error type) so the
simulator, the mappers and the analytic models can all register theirs
without importing one another.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from hwsim.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """Named implementations of one kind (`what`, e.g. "dram.model")."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._entries: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: make `name` choose the decorated class."""
        def add(entry: T) -> T:
            if name in self._entries:
                raise ValueError(f"{self.what}: {name!r} registered twice")
            self._entries[name] = entry
            return entry
        return add

    def get(self, name: str) -> T:
        """The implementation called `name`; an unknown name is a config error listing the known ones."""
        entry = self._entries.get(name)
        if entry is None:
            raise ConfigError(f"{self.what}: unknown implementation {name!r}; use one of {', '.join(self.names())}")
        return entry

    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self._entries))
