"""Off-chip DRAM models, chosen by `dram.model` (`hwsim.hardware.kinds.DRAM_MODELS`): `simple` (channels moving
whole bursts with pipelined access latency, optional row buffers and turnaround) and `jedec` (ranks, bank groups
and banks under JEDEC timing, refresh, a scheduler and a page policy). A model is a `Port` whose amounts and
addresses are bytes and whose records are one per burst; `build_dram` makes the configured one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hwsim import lazy

_HOMES = {  # imported when a name is first used: the policies module alone stays light (no simpy, no model)
    "base": ("DramModel",),
    "jedec": ("JedecDram",),
    "simple": ("SimpleDram",),
    "build": ("Dram", "build_dram"),
}
__getattr__ = lazy.exports(__name__, _HOMES)

if TYPE_CHECKING:
    from hwsim.sim.dram.base import DramModel
    from hwsim.sim.dram.build import Dram, build_dram
    from hwsim.sim.dram.jedec import JedecDram
    from hwsim.sim.dram.simple import SimpleDram

__all__ = ["Dram", "DramModel", "JedecDram", "SimpleDram", "build_dram"]
