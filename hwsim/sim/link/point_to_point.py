"""Links between units (`links[].model: point_to_point`): each direction carries one transfer at a time.

A transfer of W words of word_bits on a link of width bits per cycle holds its direction for
⌈W·word_bits / width⌉ cycles from when it starts (the request, or when the direction is free: first come,
first served), and its last word arrives `latency` cycles after it left: the transfer ends at
start + ⌈W·word_bits / width⌉ + latency. The two directions are independent (a full-duplex link).
"""

from __future__ import annotations

import simpy

from hwsim.hardware import schema
from hwsim.sim.component import Port, Stat, Statistic
from hwsim.sim.policy import scheduler
from hwsim.vocab import ceil_div


class LinkDirection(Port):
    """One direction of a link; transfers carry words and have no address."""

    read_amount = Statistic("words", "words received (none: a link only carries)")
    written_amount = Statistic("words", "words carried")
    busy_cycles = Statistic("cycles", "cycles the direction was carrying data")
    queue_stall_cycles = Statistic("cycles", "cycles transfers waited for the direction")

    def __init__(self, env: simpy.Environment, cfg: schema.Link, word_bytes: int, name: str) -> None:
        super().__init__(env, name, word_bytes)
        self.cfg = cfg
        self._scheduler = scheduler("fcfs")
        self.free_at_cycle = 0

    def transfer_cycles(self, words: int, word_bytes: int | None = None) -> int:
        """Cycles the direction is held by `words` words: ⌈W·word_bits / width⌉."""
        return ceil_div(words * 8 * (self.word_bytes if word_bytes is None else word_bytes), self.cfg.width_bits)

    def _book(self, is_read: bool, address: int, amount: int, now: int, word_bytes: int) -> int:
        start_cycle = self._scheduler.start_cycle(now, self.free_at_cycle)
        duration_cycles = self.transfer_cycles(amount, word_bytes)
        self.free_at_cycle = start_cycle + duration_cycles
        self.reserved_end_cycle = self.free_at_cycle + self.cfg.latency_cycles
        self.busy_cycles += duration_cycles
        self.queue_stall_cycles += start_cycle - now
        return start_cycle


class PointToPointLink:
    """A link's two directions, by (from, to) unit name."""

    def __init__(self, env: simpy.Environment, cfg: schema.Link, word_bytes: int) -> None:
        self.cfg = cfg
        a, b = cfg.between
        self.directions = {(a, b): LinkDirection(env, cfg, word_bytes, f"{cfg.name}.{a}>{b}"),
                           (b, a): LinkDirection(env, cfg, word_bytes, f"{cfg.name}.{b}>{a}")}

    def stats(self, prefix: str = "") -> dict[str, Stat]:
        """Statistics of both directions, keyed `<direction>.<stat>`."""
        out: dict[str, Stat] = {}
        for direction in self.directions.values():
            out.update(direction.stats(f"{prefix}{direction.name}."))
        return out


__all__ = ["LinkDirection", "PointToPointLink"]
