"""Line buffers for depth-first execution: rows of feature maps held in one SRAM.

Space is a `Space` (simpy Container) of size_bytes / word_bytes words whose
level is the occupancy in words (pixels of one channel). Reads and writes
go through one port (a simpy Resource) at words_per_port words per cycle:
W words take ⌈W / words_per_port⌉ cycles.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import simpy

from hwsim.hardware import schema
from hwsim.sim.timing import (
    NO_ADDRESS,
    Space,
    Stat,
    StatInfo,
    ceil_div,
    check_count,
    collect_stats,
    empty_records,
    hold,
    one_record,
)


class LineBuffer:
    """The line-buffer SRAM: space with occupancy and a single port; `read`/`write` are processes."""

    STATS = (
        StatInfo("read_transfers", "count", "read transfers requested"),
        StatInfo("write_transfers", "count", "write transfers requested"),
        StatInfo("words_read", "words", "words read"),
        StatInfo("words_written", "words", "words written"),
        StatInfo("busy_port_cycles", "cycles", "cycles the port was moving data"),
        StatInfo("port_stall_cycles", "cycles", "cycles transfers waited for the port"),
    )

    def __init__(self, env: simpy.Environment, cfg: schema.LineBuffer, word_bytes: int,
                 name: str = "line_buffer") -> None:
        self.env = env
        self.cfg = cfg
        self.name = name
        self.word_bytes = word_bytes
        self.space = Space(env, cfg.size_bytes // word_bytes, name)
        self._port = simpy.Resource(env, capacity=1)
        self.read_transfers = 0
        self.write_transfers = 0
        self.words_read = 0
        self.words_written = 0
        self.busy_port_cycles = 0
        self.port_stall_cycles = 0

    def transfer_cycles(self, words: int) -> int:
        """Cycles the port needs for `words`: ⌈W / words_per_port⌉."""
        return ceil_div(words, self.cfg.words_per_port)

    def read(self, words: int, address_words: int = NO_ADDRESS) -> Generator[simpy.Event, Any, np.ndarray]:
        """Process reading `words`; returns a one-record block."""
        check_count(words, "size", self.name)
        self.read_transfers += 1
        self.words_read += words
        return self._transfer(words, address_words)

    def write(self, words: int, address_words: int = NO_ADDRESS) -> Generator[simpy.Event, Any, np.ndarray]:
        """Process writing `words`; returns a one-record block."""
        check_count(words, "size", self.name)
        self.write_transfers += 1
        self.words_written += words
        return self._transfer(words, address_words)

    def allocate(self, words: int) -> simpy.Event:
        """Event firing once `words` are claimed (waits while the buffer is full)."""
        return self.space.allocate(words)

    def free(self, words: int) -> simpy.Event:
        """Event releasing `words`."""
        return self.space.free(words)

    def stats(self, prefix: str = "") -> dict[str, Stat]:
        """Port and space statistics with units and descriptions."""
        out = collect_stats(self, self.STATS, prefix)
        out.update(self.space.stats(f"{prefix}space."))
        return out

    def _transfer(self, words: int, address_words: int) -> Generator[simpy.Event, Any, np.ndarray]:
        if words == 0:
            return empty_records()
        requested_cycle = int(self.env.now)
        duration_cycles = self.transfer_cycles(words)
        start_cycle = yield from hold(self.env, self._port, duration_cycles)
        self.busy_port_cycles += duration_cycles
        self.port_stall_cycles += start_cycle - requested_cycle
        return one_record(start_cycle, start_cycle + duration_cycles, address_words, words)
