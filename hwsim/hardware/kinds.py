"""The kinds of things a config chooses by name, one `Registry` each: the schema's name lists are theirs.

Two sorts of registries:

- *Component models* (`dram.model`, `noc.model`, `links[].model`): a `ComponentKind` each, registered with the
  config parameters the model adds to its section. A kind names its simulator class by import path
  (`component`), so the hardware package never imports the simulator; a `DramKind` also says what the model
  means for the rest of hwsim (its cross-field rules, the fields it derives, how its energy is priced, how soon
  data can come back). The built-in DRAM kinds live in `hwsim.hardware.dram`; a new model is one module that
  defines its simulator class and registers its kind here.
- *Policies and formats* (schedulers, DRAM address maps, page and row policies, burst orders, tile codes,
  dataflows): the implementations themselves, registered by the modules that define them (the registry's home,
  imported the first time a name is looked up).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hwsim.errors import ConfigError
from hwsim.registry import Registry

if TYPE_CHECKING:
    from hwsim.hardware.schema import Accelerator, Dram


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


@dataclass(frozen=True)
class DramKind(ComponentKind):
    """A DRAM model. This base describes a model timed and priced by its section's own fields (bandwidth,
    latency, burst, energy per bit), as `simple` is; a model that derives them or prices its commands overrides
    the methods."""

    def errors(self, dram: Dram) -> Iterator[str]:
        """Cross-field rules of the section under this model: '<yaml path>: <problem>; <fix>'. This base needs the
        fields it is timed and priced by."""
        for field, key in (("bandwidth_bytes_per_cycle", "bandwidth"), ("burst_bytes", "burst"),
                           ("energy_pj_per_bit", "energy")):
            if not getattr(dram, field):
                yield (f"dram.{key}: missing; the {dram.model} model needs it (or set dram.model: jedec with a "
                       "dram.preset)")
        if not dram.source.strip():
            yield "dram.source: missing; say where the DRAM energy comes from"

    def with_derived_fields(self, acc: Accelerator) -> Accelerator:
        """`acc` with the fields this model derives (burst, bandwidth, latency, energy per bit) filled in."""
        return acc

    @property
    def prices_commands(self) -> bool:
        """Whether a simulation prices this DRAM by the commands it issued (else per bit, as the estimate)."""
        return False

    def energy_by_command_pj(self, dram: Dram, clock_hz: float, counters: Mapping[str, float],
                             cycles: float) -> dict[str, float]:
        """The energy of a stretch of `cycles` core cycles in which the model's counters grew by `counters`, by
        command (only for a model that `prices_commands`)."""
        raise ConfigError(f"dram.model {dram.model}: priced per bit, not by command")

    def first_data_cycles(self, acc: Accelerator) -> int:
        """The least time, in core cycles, from a request to its first data (the trace validator's floor)."""
        dram = acc.dram
        if dram.row_buffer is not None:
            return min(dram.row_buffer.hit_latency_cycles, dram.row_buffer.miss_latency_cycles)
        return dram.latency_cycles

    def command_clock_hz(self, acc: Accelerator) -> float:
        """The clock its request traces count cycles of (the device's command clock, or the core's)."""
        return acc.clock_hz

    def issue_latency_cycles(self, dram: Dram, is_write: bool) -> int:
        """An unloaded access in cycles of `command_clock_hz`: what a replayed request is issued ahead of its data."""
        return dram.latency_cycles


DRAM_MODELS: Registry[DramKind] = Registry("dram.model", home="hwsim.hardware.dram")
NOC_MODELS: Registry[ComponentKind] = Registry("noc.model")
LINK_MODELS: Registry[ComponentKind] = Registry("links.model")

NOC_MODELS.register("buses")(ComponentKind(
    "one ifmap, one filter and one psum multicast bus between the GLB and the PEs", "hwsim.sim.noc:Noc"))
LINK_MODELS.register("point_to_point")(ComponentKind(
    "a full-duplex point-to-point link: each direction carries one transfer at a time, width bits per cycle, "
    "after a fixed latency", "hwsim.sim.link:PointToPointLink"))

# Policies and formats: their modules register the implementations (Any: each module's own type).
SCHEDULERS: Registry[Any] = Registry("scheduler", home="hwsim.sim.policy")
DRAM_SCHEDULERS: Registry[Any] = Registry("dram.scheduler", home="hwsim.sim.dram.policies")
DRAM_ADDRESS_MAPS: Registry[Any] = Registry("dram.address_map", home="hwsim.hardware.jedec")
PAGE_POLICIES: Registry[Any] = Registry("dram.page_policy", home="hwsim.sim.dram.policies")
ROW_POLICIES: Registry[Any] = Registry("dram.row_buffer.policy", home="hwsim.sim.dram.policies")
CODECS: Registry[Any] = Registry("compression.format", home="hwsim.sparsity.codec")
DATAFLOWS: Registry[Any] = Registry("pe_array.dataflow", home="hwsim.mapping.dataflows")


__all__ = ["CODECS", "DATAFLOWS", "DRAM_ADDRESS_MAPS", "DRAM_MODELS", "DRAM_SCHEDULERS", "LINK_MODELS", "NOC_MODELS",
           "PAGE_POLICIES", "ROW_POLICIES", "SCHEDULERS", "ComponentKind", "DramKind"]
