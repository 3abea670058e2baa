"""The kinds of things a config chooses by name, one `Registry` each: the schema's name lists are theirs.

Two sorts of registries:

- *Component models* (`dram.model`, `noc.model`, `links[].model`): a `ComponentKind` each, registered with the
  config parameters the model adds to its section. A kind names its simulator class by import path
  (`component`), so the hardware package never imports the simulator; a DRAM model's kind
  (`hwsim.hardware.dram.DramKind`) also says what the model means for the rest of hwsim (its cross-field rules,
  the fields it derives, how its energy is priced, how soon data can come back). The built-in DRAM kinds live in
  `hwsim.hardware.dram`; a new model is one module that defines its simulator class and registers its kind here.
- *Policies and formats* (schedulers, DRAM address maps, page and row policies, burst orders, tile codes,
  dataflows): the implementations themselves, registered by the modules that define them (the registry's home,
  imported the first time a name is looked up).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from hwsim.errors import ConfigError
from hwsim.registry import Registry


@dataclass(frozen=True)
class ComponentKind:
    """A component model: a one-line description, and its simulator class as "module:Class"."""

    description: str
    component: str

    def component_class(self) -> Any:
        """The simulator class that implements the model (imported on demand)."""
        module, _, name = self.component.partition(":")
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"model implementation {self.component!r} cannot be loaded ({exc}); check the "
                              "module that registers it") from None


# Component models: the built-in kinds are registered in hwsim.hardware (a description and the class that implements
# each, imported when a simulation builds one); a new model is one more module in the simulator folder named second
DRAM_MODELS: Registry[Any] = Registry("dram.model", home=("hwsim.hardware.dram", "hwsim.sim.dram"))
NOC_MODELS: Registry[ComponentKind] = Registry("noc.model", home=("hwsim.hardware.components", "hwsim.sim.noc"))
LINK_MODELS: Registry[ComponentKind] = Registry("links.model", home=("hwsim.hardware.components", "hwsim.sim.link"))

# Policies and formats: their modules register the implementations (Any: each module's own type).
SCHEDULERS: Registry[Any] = Registry("scheduler", home="hwsim.sim.policy")
DRAM_SCHEDULERS: Registry[Any] = Registry("dram.scheduler", home="hwsim.sim.dram.policies")
DRAM_ADDRESS_MAPS: Registry[Any] = Registry("dram.address_map", home="hwsim.hardware.jedec")
PAGE_POLICIES: Registry[Any] = Registry("dram.page_policy", home="hwsim.sim.dram.policies")
ROW_POLICIES: Registry[Any] = Registry("dram.row_buffer.policy", home="hwsim.sim.dram.policies")
CODECS: Registry[Any] = Registry("compression.format", home="hwsim.sparsity.codec")
DATAFLOWS: Registry[Any] = Registry("pe_array.dataflow", home="hwsim.mapping.dataflows")


__all__ = ["CODECS", "DATAFLOWS", "DRAM_ADDRESS_MAPS", "DRAM_MODELS", "DRAM_SCHEDULERS", "LINK_MODELS", "NOC_MODELS",
           "PAGE_POLICIES", "ROW_POLICIES", "SCHEDULERS", "ComponentKind"]
