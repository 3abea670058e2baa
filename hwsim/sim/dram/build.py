"""Building the DRAM model a config names (`dram.model`, through `hwsim.hardware.kinds.DRAM_MODELS`)."""

from __future__ import annotations

import simpy

from hwsim.hardware import schema
from hwsim.hardware.dram import dram_kind
from hwsim.sim.dram.base import DramModel
from hwsim.sim.dram.simple import SimpleDram

Dram = SimpleDram  # the default model


def build_dram(env: simpy.Environment, cfg: schema.Dram, word_bytes: int, name: str = "dram",
               clock_hz: float | None = None) -> DramModel:
    """The DRAM model the config names, counting cycles of the core clock `clock_hz`."""
    model: type[DramModel] = dram_kind(cfg.model).component_class()
    return model(env, cfg, word_bytes, name, clock_hz)


__all__ = ["Dram", "build_dram"]
