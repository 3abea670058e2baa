"""Line buffers for depth-first execution: rows of feature maps held in one SRAM.

A line buffer is an `Sram` with one bank and one port (see `hwsim.sim.sram`
for the timing: W words take ⌈W / words_per_port⌉ cycles, first come first
served, reserved at request time) and a single space of size_bytes /
word_bytes words whose level is the occupancy in words (pixels of one
channel); allocating blocks while it is full. Its transfers need no
address: rows are located by the depth-first mapper, not by bank.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import simpy

from hwsim.hardware import schema
from hwsim.sim.sram import Sram
from hwsim.sim.timing import NO_ADDRESS, Space, check_count, wait_for_reservation


class LineBuffer(Sram):
    """The line-buffer SRAM: space with occupancy and a single port. Arguments are (words, address),
    the address optional."""

    def __init__(self, env: simpy.Environment, cfg: schema.LineBuffer, word_bytes: int,
                 name: str = "line_buffer") -> None:
        super().__init__(env, cfg, word_bytes, name)

    @property
    def space(self) -> Space:
        """The buffer's one space (occupancy, peak, allocation stalls)."""
        return self.spaces["data"]

    def reserve_read(self, words: int, address_words: int = NO_ADDRESS) -> np.ndarray:  # type: ignore[override]
        """Reserve the port for reading `words` requested now; returns a one-record block."""
        check_count(words, "size", self.name)
        return self._reserve(True, address_words, words)

    def reserve_write(self, words: int, address_words: int = NO_ADDRESS) -> np.ndarray:  # type: ignore[override]
        """Reserve the port for writing `words` requested now; returns a one-record block."""
        check_count(words, "size", self.name)
        return self._reserve(False, address_words, words)

    def book(self, is_read: bool, address_words: int, words: int, request_cycle: int | None = None) -> int:
        """`Sram.book` without an address check: rows are not located by bank."""
        check_count(words, "size", self.name)
        return self._book(is_read, address_words, words, request_cycle)

    def read(self, words: int,  # type: ignore[override]
             address_words: int = NO_ADDRESS) -> Generator[simpy.Event, Any, np.ndarray]:
        """Process reading `words` (reserved when it starts); returns its record once it ends."""
        check_count(words, "size", self.name)
        return wait_for_reservation(self.env, self, self._reserve, True, address_words, words)

    def write(self, words: int,  # type: ignore[override]
              address_words: int = NO_ADDRESS) -> Generator[simpy.Event, Any, np.ndarray]:
        """Process writing `words` (reserved when it starts); returns its record once it ends."""
        check_count(words, "size", self.name)
        return wait_for_reservation(self.env, self, self._reserve, False, address_words, words)
