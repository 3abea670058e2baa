"""Accelerator descriptions: typed components, units, YAML loading and validation. The loader is imported when
one of its names is first used (`hwsim.hardware.units` alone stays light)."""

from typing import TYPE_CHECKING

from hwsim import lazy

_HOMES = {  # the module of each public name: imported when the name is first used
    "loader": ("describe", "load_config", "resolve_config", "shipped_configs", "to_dict"),
    "schema": ("Accelerator",),
}
__getattr__ = lazy.exports(__name__, _HOMES)

if TYPE_CHECKING:
    from hwsim.hardware.loader import describe, load_config, resolve_config, shipped_configs, to_dict
    from hwsim.hardware.schema import Accelerator

__all__ = ["Accelerator", "describe", "load_config", "resolve_config", "shipped_configs", "to_dict"]
