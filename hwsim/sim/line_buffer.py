"""Line buffers for depth-first execution: rows of feature maps held in one SRAM.

A line buffer is an `Sram` with one bank and one port (see `hwsim.sim.sram`
for the timing: W words take ⌈W / words_per_port⌉ cycles, served in request
order) and a single space of size_bytes whose level is the occupancy in bytes;
claims wait while it is full. Its
transfers need no address (`NO_ADDRESS`): rows are located by the depth-first
mapper, not by bank.
"""

from __future__ import annotations

import simpy

from hwsim.hardware import schema
from hwsim.sim.space import Space
from hwsim.sim.sram import ConfigAtWord, Sram


class LineBuffer(Sram):
    """The line-buffer SRAM: one port, one bank, one space."""

    def __init__(self, env: simpy.Environment, cfg: schema.LineBuffer, word_bytes: int,
                 name: str = "line_buffer", cfg_at_word: ConfigAtWord | None = None) -> None:
        super().__init__(env, cfg, word_bytes, name, cfg_at_word)

    @property
    def space(self) -> Space:
        """The buffer's one space (occupancy, peak, allocation stalls)."""
        return self.spaces["data"]
