"""Off-chip DRAM models, chosen by `dram.model` (`hwsim.hardware.kinds.DRAM_MODELS`): `simple` (channels moving
whole bursts with pipelined access latency, optional row buffers and turnaround) and `jedec` (ranks, bank groups
and banks under JEDEC timing, refresh, a scheduler and a page policy). A model is a `Port` whose amounts and
addresses are bytes and whose records are one per burst; `build_dram` makes the configured one."""

from __future__ import annotations

import simpy

from hwsim.hardware import schema
from hwsim.hardware.dram import dram_kind
from hwsim.sim.dram.base import DramModel
from hwsim.sim.dram.jedec import JedecDram
from hwsim.sim.dram.simple import SimpleDram

Dram = SimpleDram  # the default model


def build_dram(env: simpy.Environment, cfg: schema.Dram, word_bytes: int, name: str = "dram",
               clock_hz: float | None = None) -> DramModel:
    """The DRAM model the config names, counting cycles of the core clock `clock_hz`."""
    model: type[DramModel] = dram_kind(cfg.model).component_class()
    return model(env, cfg, word_bytes, name, clock_hz)


__all__ = ["Dram", "DramModel", "JedecDram", "SimpleDram", "build_dram"]
