"""DRAM policies chosen by name from the config: how addresses map onto channels and rows
(`dram.address_map`), and what a row buffer does between accesses (`dram.row_buffer.policy`).

Both work on whole bursts: burst k holds bytes [k·b, (k+1)·b) of the address
space (b = `dram.burst`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hwsim.hardware import schema
from hwsim.sim.policy import Registry


class AddressMap(ABC):
    """Where each burst lives: its channel and its byte offset within the channel."""

    def __init__(self, cfg: schema.Dram) -> None:
        self.channels = cfg.channels
        self.burst_bytes = cfg.burst_bytes

    @abstractmethod
    def locate(self, bursts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(channel, channel-local byte offset) of each burst index."""

    @abstractmethod
    def period_bytes(self, row_bytes: int) -> int:
        """A shift of the address space by this many bytes moves every burst by whole rows (or bursts, when
        `row_bytes` is 0) within the same channel: transactions that differ by it time alike."""


ADDRESS_MAPS: Registry[type[AddressMap]] = Registry("dram.address_map")


@ADDRESS_MAPS.register("burst_interleave")
class BurstInterleave(AddressMap):
    """Burst k goes to channel k mod C, at channel-local byte ⌊k/C⌋·b: consecutive bursts spread over the
    channels, so one long transfer uses them all."""

    def locate(self, bursts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return bursts % self.channels, (bursts // self.channels) * self.burst_bytes

    def period_bytes(self, row_bytes: int) -> int:
        return self.channels * (math.lcm(self.burst_bytes, row_bytes) if row_bytes else self.burst_bytes)


@dataclass(frozen=True)
class RowPolicy:
    """What a burst pays to reach its row. A channel's bursts split into runs, one per row touched in turn
    (a single run when rows are not modelled); each run pays `run_latency_cycles` before its first burst,
    except that a transaction whose first run is in the channel's open row pays `hit_saving_cycles` less
    (only when rows are kept open)."""

    row_bytes: int  # 0: rows are not modelled (a flat latency per transaction and channel)
    run_latency_cycles: int
    hit_saving_cycles: int
    keeps_open: bool


ROW_POLICIES: Registry[Callable[[schema.RowBuffer], RowPolicy]] = Registry("dram.row_buffer.policy")


def row_policy(cfg: schema.Dram) -> RowPolicy:
    """The row behaviour of a DRAM config: none without a row buffer, else the row buffer's policy."""
    rb = cfg.row_buffer
    if rb is None:
        return RowPolicy(0, cfg.latency_cycles, 0, False)
    return ROW_POLICIES.get(rb.policy)(rb)


@ROW_POLICIES.register("open")
def open_row(rb: schema.RowBuffer) -> RowPolicy:
    """Open page: a channel's last row stays open; a transaction starting in it is a hit (hit latency),
    every other run opens its row (miss latency)."""
    return RowPolicy(rb.row_bytes, rb.miss_latency_cycles, rb.miss_latency_cycles - rb.hit_latency_cycles, True)


@ROW_POLICIES.register("closed")
def closed_row(rb: schema.RowBuffer) -> RowPolicy:
    """Closed page: rows are closed after each access, so every run opens its row (miss latency)."""
    return RowPolicy(rb.row_bytes, rb.miss_latency_cycles, 0, False)
