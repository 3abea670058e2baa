"""The base of every simulated component: reservation state, declared statistics, and the process wrapper.

A component's resources (channels, banks, ports, buses, the PE array) each
keep the cycle they are next free. A transaction *books* them when it is
requested (`book`, the executor's hot path): its exact timing follows from
that state, which is updated at once together with the statistics, and
`reserved_end_cycle` tells when it ends. Booking in request order serves each
resource in the order its scheduler (`hwsim.sim.policy`) says and costs no
simpy event. `reserve…` books and also returns the transaction's access
records as one `RECORD_DTYPE` block; the process methods (`read`, `write`,
`transfer`, `compute`) reserve when they start and wait with one timeout.

`Port` is the base of components that move words in read or write
transactions at an address (DRAM, SRAM, line buffer, NoC bus, link): a subclass
implements `_book` (and `_records` when a transaction has several records,
like DRAM bursts); the reserve and process methods come from here. Every
transaction says the width of its words (`word_bytes`, the word of the work it
belongs to; by default the component's own): the same silicon moves words of
every width, so nothing about a component changes when the next layer runs at
another precision.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, ClassVar, overload

import numpy as np
import simpy

from hwsim.sim.timing import check_count, empty_records, one_record


@dataclass(frozen=True)
class Stat:
    """One statistic of a component: value, unit and what it counts."""

    value: float
    unit: str
    description: str


@dataclass(frozen=True)
class StatInfo:
    """Declares a statistic kept (or computed, by a property) in attribute `attr` of a component."""

    attr: str
    unit: str
    description: str


class Statistic:
    """A counter a component declares in its class body with its unit and description
    (`bursts = Statistic("count", "burst slots used")`); it reads 0 until the component first adds to it,
    after which it is a plain instance attribute (no cost on the hot path)."""

    def __init__(self, unit: str, description: str) -> None:
        self.unit = unit
        self.description = description
        self.attr = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.attr = name

    @overload
    def __get__(self, obj: None, objtype: Any = None) -> Statistic: ...
    @overload
    def __get__(self, obj: object, objtype: Any = None) -> float: ...

    def __get__(self, obj: object | None, objtype: Any = None) -> Statistic | float:
        return self if obj is None else 0


def declared_stats(cls: type) -> tuple[StatInfo, ...]:
    """The counters (`Statistic`) declared by `cls` and its bases, in declaration order, then the derived
    statistics of its `DERIVED_STATS`."""
    counters = {}
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            if isinstance(value, Statistic):
                counters[name] = StatInfo(name, value.unit, value.description)
    return (*counters.values(), *getattr(cls, "DERIVED_STATS", ()))


def collect_stats(component: object, infos: tuple[StatInfo, ...], prefix: str = "") -> dict[str, Stat]:
    """The statistics `infos` of `component`, keyed by (prefixed) attribute name."""
    return {prefix + i.attr: Stat(getattr(component, i.attr), i.unit, i.description) for i in infos}


class Component:
    """A simulated component: its simpy environment, its name, where its latest reservation ends, and its
    statistics: counters declared as `Statistic` class attributes, derived ones as properties listed in
    `DERIVED_STATS`."""

    DERIVED_STATS: ClassVar[tuple[StatInfo, ...]] = ()

    def __init__(self, env: simpy.Environment, name: str) -> None:
        self.env = env
        self.name = name
        self.reserved_end_cycle = 0  # cycle the latest reservation ends (its request cycle if empty)
        self.unit = 0  # the number of its unit in the machine's `UnitTable`, stamped on its records

    def request_cycle(self, at: int | None) -> int:
        """The cycle a request is made: `at`, or now."""
        return int(self.env.now) if at is None else at

    def stats(self, prefix: str = "") -> dict[str, Stat]:
        """The declared statistics with units and descriptions."""
        return collect_stats(self, declared_stats(type(self)), prefix)

    def wait_until_reserved_end(self, records: np.ndarray) -> Generator[simpy.Event, Any, np.ndarray]:
        """Process tail: wait (one timeout, none if already over) until the latest reservation ends."""
        delay = self.reserved_end_cycle - int(self.env.now)
        if delay > 0:
            yield self.env.timeout(delay)
        return records


class Port(Component, ABC):
    """A component that moves `amount` units (words, or bytes for DRAM) in read or write transactions at an
    address, of words `word_bytes` wide (default: the component's `word_bytes`). Subclasses implement `_check` and
    `_book` (a transaction of at least one unit), and `_records` if a transaction has several records; they
    redeclare `read_amount`/`written_amount` with their unit."""

    read_requests = Statistic("count", "read transactions requested")
    write_requests = Statistic("count", "write transactions requested")
    read_amount = Statistic("units", "units read")
    written_amount = Statistic("units", "units written")

    def __init__(self, env: simpy.Environment, name: str, word_bytes: int) -> None:
        super().__init__(env, name)
        self.word_bytes = word_bytes  # the width of a transaction's words unless it says otherwise

    def book(self, is_read: bool, address: int, amount: int, request_cycle: int | None = None,
             word_bytes: int | None = None) -> int:
        """Reserve a transaction of words `word_bytes` wide requested at `request_cycle` (default now); its start
        cycle (it ends at `reserved_end_cycle`). The executor's fast path: no records are built, and a transaction
        `_plainly_valid` says is fine skips `_check`."""
        wb = self.word_bytes if word_bytes is None else word_bytes
        now = int(self.env.now) if request_cycle is None else request_cycle
        if not self._plainly_valid(address, amount, wb):
            self._check(address, amount, wb)
        if is_read:  # the request in the statistics
            self.read_requests += 1
            self.read_amount += amount
        else:
            self.write_requests += 1
            self.written_amount += amount
        if not amount:  # an empty transaction occupies nothing
            self.reserved_end_cycle = now
            return now
        return self._book(is_read, address, amount, now, wb)

    def _plainly_valid(self, address: int, amount: int, word_bytes: int) -> bool:
        """Whether a transaction is one of at least one unit that `_check` would pass, decided in one expression
        (the executor's every transfer); anything else goes through `_check`."""
        return type(amount) is int and amount > 0

    def reserve_read(self, address: int, amount: int, request_cycle: int | None = None,
                     word_bytes: int | None = None) -> np.ndarray:
        """Reserve a read requested now (or at `request_cycle`); its records. Yields no event: the read
        ends at `reserved_end_cycle`."""
        return self._reserve(True, address, amount, request_cycle, word_bytes)

    def reserve_write(self, address: int, amount: int, request_cycle: int | None = None,
                      word_bytes: int | None = None) -> np.ndarray:
        """Reserve a write requested now (or at `request_cycle`); its records."""
        return self._reserve(False, address, amount, request_cycle, word_bytes)

    def read(self, address: int, amount: int) -> Generator[simpy.Event, Any, np.ndarray]:
        """Process: reserve a read when it starts, return its records once it ends."""
        self._check(address, amount, self.word_bytes)
        return self._process(True, address, amount)

    def write(self, address: int, amount: int) -> Generator[simpy.Event, Any, np.ndarray]:
        """Process: reserve a write when it starts, return its records once it ends."""
        self._check(address, amount, self.word_bytes)
        return self._process(False, address, amount)

    def _process(self, is_read: bool, address: int, amount: int) -> Generator[simpy.Event, Any, np.ndarray]:
        records = self._reserve(is_read, address, amount, None, None)
        return (yield from self.wait_until_reserved_end(records))

    def _reserve(self, is_read: bool, address: int, amount: int, request_cycle: int | None,
                 word_bytes: int | None) -> np.ndarray:
        wb = self.word_bytes if word_bytes is None else word_bytes
        start_cycle = self.book(is_read, address, amount, request_cycle, wb)
        if amount == 0:
            return empty_records()
        return self._records(start_cycle, address, amount, wb)

    def _records(self, start_cycle: int, address: int, amount: int, word_bytes: int) -> np.ndarray:
        """The records of the transaction just booked: one, spanning it."""
        return one_record(start_cycle, self.reserved_end_cycle, address, amount)

    def _check(self, address: int, amount: int, word_bytes: int) -> None:
        """Reject an impossible transaction (raise HwsimError)."""
        check_count(amount, "size", self.name)

    @abstractmethod
    def _book(self, is_read: bool, address: int, amount: int, now: int, word_bytes: int) -> int:
        """Reserve a checked transaction of at least one unit of words `word_bytes` wide requested at cycle
        `now`; its start cycle."""
