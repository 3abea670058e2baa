"""Packages that import their modules when a name is first used (PEP 562), so a command pays only for what it
runs: `hwsim estimate` does not load the simulator because `hwsim.flows` also exports `simulate_network`."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def exports(package: str, homes: Mapping[str, tuple[str, ...]]) -> Callable[[str], Any]:
    """The `__getattr__` of `package`, which exports the names `homes` lists under each of its modules: the
    module is imported, and the value kept in the package, the first time the name is asked for."""
    module_of = {name: module for module, names in homes.items() for name in names}

    def find(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return find
