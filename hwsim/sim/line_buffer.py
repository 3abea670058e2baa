"""Line buffers for depth-first execution: rows of feature maps held in one SRAM.

Space is a `Space` (simpy Container) of size_bytes / word_bytes words whose
level is the occupancy in words (pixels of one channel); allocating blocks
while it is full. Reads and writes go through one port at words_per_port
words per cycle: W words take ⌈W / words_per_port⌉ cycles.

The port keeps the cycle it is next free. A transfer reserves it when it is
requested and starts at max(request cycle, port free): first come, first
served like a queue, but with no simpy events (`reserve_read`,
`reserve_write`), or one timeout (`read`, `write`, processes).
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
    one_record,
    wait_for_reservation,
)


class LineBuffer:
    """The line-buffer SRAM: space with occupancy and a single port. `reserve_read`/`reserve_write` time
    and reserve a transfer at once; `read`/`write` are processes doing the same and waiting until it ends."""

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
        self.port_free_at_cycle = 0  # end of the last transfer reserved
        self.reserved_end_cycle = 0  # cycle the latest reservation ends (its request cycle if empty)
        self.read_transfers = 0
        self.write_transfers = 0
        self.words_read = 0
        self.words_written = 0
        self.busy_port_cycles = 0
        self.port_stall_cycles = 0

    def transfer_cycles(self, words: int) -> int:
        """Cycles the port needs for `words`: ⌈W / words_per_port⌉."""
        return ceil_div(words, self.cfg.words_per_port)

    def reserve_read(self, words: int, address_words: int = NO_ADDRESS) -> np.ndarray:
        """Reserve the port for reading `words` requested now; returns a one-record block.
        Yields no event: the read ends at `reserved_end_cycle`."""
        check_count(words, "size", self.name)
        return self._reserve(True, words, address_words)

    def reserve_write(self, words: int, address_words: int = NO_ADDRESS) -> np.ndarray:
        """Reserve the port for writing `words` requested now; returns a one-record block.
        Yields no event: the write ends at `reserved_end_cycle`."""
        check_count(words, "size", self.name)
        return self._reserve(False, words, address_words)

    def read(self, words: int, address_words: int = NO_ADDRESS) -> Generator[simpy.Event, Any, np.ndarray]:
        """Process reading `words` (reserved when it starts); returns `reserve_read`'s record once it ends."""
        check_count(words, "size", self.name)
        return wait_for_reservation(self.env, self, self._reserve, True, words, address_words)

    def write(self, words: int, address_words: int = NO_ADDRESS) -> Generator[simpy.Event, Any, np.ndarray]:
        """Process writing `words` (reserved when it starts); returns `reserve_write`'s record once it ends."""
        check_count(words, "size", self.name)
        return wait_for_reservation(self.env, self, self._reserve, False, words, address_words)

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

    def _reserve(self, is_read: bool, words: int, address_words: int) -> np.ndarray:
        now = int(self.env.now)
        if is_read:
            self.read_transfers += 1
            self.words_read += words
        else:
            self.write_transfers += 1
            self.words_written += words
        if words == 0:
            self.reserved_end_cycle = now
            return empty_records()
        start_cycle = max(now, self.port_free_at_cycle)
        duration_cycles = self.transfer_cycles(words)
        self.port_free_at_cycle = self.reserved_end_cycle = start_cycle + duration_cycles
        self.busy_port_cycles += duration_cycles
        self.port_stall_cycles += start_cycle - now
        return one_record(start_cycle, start_cycle + duration_cycles, address_words, words)
