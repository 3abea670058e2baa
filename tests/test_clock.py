"""The simulation clock's `skip_to`: a wait skipped only when no other event is due at or before its cycle, so
processes act at the same cycles and in the same order as with simpy's timeouts."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import simpy

from hwsim.sim.clock import Clock


def _waiter(env: Clock, name: str, cycles: list[int], log: list[tuple[int, str]],
            skip: bool) -> Generator[simpy.Event, Any, None]:
    """Go to each of `cycles` in turn (skipping the wait where allowed), noting (clock, name) on arrival."""
    for cycle in cycles:
        if cycle > env.now and not (skip and env.skip_to(cycle)):
            yield env.timeout(cycle - env.now)
        log.append((int(env.now), name))


def _run(skip: bool) -> tuple[list[tuple[int, str]], int]:
    env, log = Clock(), []
    env.process(_waiter(env, "a", [10, 12, 20], log, skip))
    env.process(_waiter(env, "b", [5, 7, 12, 30], log, skip))
    env.run()
    return log, int(env.now)


def test_skipping_waits_keeps_every_cycle_and_the_order() -> None:
    # by hand: b reaches 5 and 7 before a's 10; both wait for 12, b first (its wait was made at 7, a's at 10, and
    # simpy serves equal cycles in the order they were asked for); then a at 20, b at 30
    expected = [(5, "b"), (7, "b"), (10, "a"), (12, "b"), (12, "a"), (20, "a"), (30, "b")]
    assert _run(skip=False) == (expected, 30)
    assert _run(skip=True) == (expected, 30)


def test_a_skip_is_refused_while_an_event_is_due_at_or_before_the_cycle() -> None:
    env = Clock()
    env.timeout(5)
    assert not env.skip_to(5) and not env.skip_to(9) and env.now == 0
    assert env.skip_to(4) and env.now == 4
