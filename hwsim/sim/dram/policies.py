"""DRAM policies chosen by name from the config: how the simple model maps addresses onto channels
(`dram.address_map`; the jedec model's maps are facts of the device, `hwsim.hardware.jedec`), what a row buffer
does between accesses (the simple model's `dram.row_buffer.policy`, the jedec model's `dram.page_policy`) and in
which order a channel serves its bursts (`dram.scheduler`).

All work on whole bursts: burst k holds bytes [k·b, (k+1)·b) of the address space (b = the burst size).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hwsim.hardware import schema
from hwsim.hardware.kinds import DRAM_SCHEDULERS, PAGE_POLICIES, ROW_POLICIES
from hwsim.registry import Registry


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


ADDRESS_MAPS: Registry[type[AddressMap]] = Registry("dram.address_map of the simple model")  # a subset of the jedec
# model's maps (`hwsim.hardware.kinds.DRAM_ADDRESS_MAPS`), which name the config's choices


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


def row_policy(cfg: schema.Dram) -> RowPolicy:
    """The row behaviour of a DRAM config: none without a row buffer, else the row buffer's policy."""
    rb = cfg.row_buffer
    if rb is None:
        return RowPolicy(0, cfg.latency_cycles, 0, False)
    policy: Callable[[schema.RowBuffer], RowPolicy] = ROW_POLICIES.get(rb.policy)
    return policy(rb)


@ROW_POLICIES.register("open")
def open_row(rb: schema.RowBuffer) -> RowPolicy:
    """Open page: a channel's last row stays open; a transaction starting in it is a hit (hit latency),
    every other run opens its row (miss latency)."""
    return RowPolicy(rb.row_bytes, rb.miss_latency_cycles, rb.miss_latency_cycles - rb.hit_latency_cycles, True)


@ROW_POLICIES.register("closed")
def closed_row(rb: schema.RowBuffer) -> RowPolicy:
    """Closed page: rows are closed after each access, so every run opens its row (miss latency)."""
    return RowPolicy(rb.row_bytes, rb.miss_latency_cycles, 0, False)


class BurstOrder(ABC):
    """In which order a channel serves the bursts it holds (its queue of `in_flight` bursts)."""

    @abstractmethod
    def order(self, bank: np.ndarray, row: np.ndarray, open_row: list[int], window: int) -> np.ndarray | None:
        """A permutation of the bursts (given oldest first) into service order; None keeps them in order."""


@DRAM_SCHEDULERS.register("fcfs")
class FirstComeFirstServedBursts(BurstOrder):
    """Oldest first: bursts are served in the order they are requested (address order within a transfer)."""

    def order(self, bank: np.ndarray, row: np.ndarray, open_row: list[int], window: int) -> np.ndarray | None:
        return None


@DRAM_SCHEDULERS.register("frfcfs")
class FirstReadyFirstComeFirstServed(BurstOrder):
    """FR-FCFS (Rixner et al., ISCA 2000): among the bursts a channel holds, those to a bank's open row go
    first, oldest first, and a burst that would close a row waits while later bursts still hit it. Each
    window of `in_flight` bursts is served by row generation: a burst's generation is the position of its
    row among the rows its bank is asked for in the window, in order of first request, with the bank's open
    row first; bursts of generation 0 (row hits and the first row of closed banks) go first, oldest first,
    then generation 1, and so on. Banks stay interleaved; only row switches are deferred."""

    def order(self, bank: np.ndarray, row: np.ndarray, open_row: list[int], window: int) -> np.ndarray | None:
        n = len(bank)
        key = bank * (int(row.max()) + 1) + row
        groups, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        group_bank = bank[first]
        if len(np.unique(group_bank)) == len(groups):
            return None  # one row per bank: nothing to defer
        window_of = np.arange(n) // window
        by_bank = np.lexsort((first, window_of[first], group_bank))  # groups by (bank, window, first request)
        gb, gw = group_bank[by_bank], window_of[first][by_bank]
        head = np.r_[True, (gb[1:] != gb[:-1]) | (gw[1:] != gw[:-1])]
        starts = np.flatnonzero(head)
        generation = np.empty(len(groups), dtype=np.int64)
        generation[by_bank] = np.arange(len(groups)) - np.repeat(starts, np.diff(np.r_[starts, len(groups)]))
        opened = np.array([open_row[b] for b in group_bank.tolist()]) == groups - group_bank * (int(row.max()) + 1)
        generation = np.where(opened, -1, generation)
        return np.lexsort((np.arange(n), generation[inverse], window_of))


@dataclass(frozen=True)
class PagePolicy:
    """What a bank does with its row once no burst it holds wants it."""

    keeps_rows_open: bool


PAGE_POLICIES.register("open")(PagePolicy(keeps_rows_open=True))
PAGE_POLICIES.register("closed")(PagePolicy(keeps_rows_open=False))
