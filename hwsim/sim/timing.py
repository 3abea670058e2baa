"""Arithmetic the simulator components share: the access-record block, exact rates, counts.

All times are integer cycles of the core clock. Rates such as 25.6 bytes
per cycle are kept as exact fractions, so long transfers see the exact
bandwidth and nothing drifts with float error.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from hwsim.errors import HwsimError
from hwsim.vocab import ceil_div

RECORD_DTYPE = np.dtype([
    ("start_cycle", np.int64),  # first cycle of the access (data on the port, bus or PE array)
    ("end_cycle", np.int64),  # cycle the access completes (exclusive)
    ("address", np.int64),  # first word address touched, NO_ADDRESS where there is none
    ("words", np.int64),  # words moved (PE array: MACs + ops of the pass)
])

MAX_RATE_DENOMINATOR = 1_000_000  # rates such as 25.6 B/cycle become exact fractions (128/5)


def one_record(start_cycle: int, end_cycle: int, address: int, words: int) -> np.ndarray:
    """A block holding a single access record."""
    block = np.empty(1, dtype=RECORD_DTYPE)
    block[0] = (start_cycle, end_cycle, address, words)
    return block


def empty_records() -> np.ndarray:
    """A block of no records (a zero-word transfer)."""
    return np.empty(0, dtype=RECORD_DTYPE)


def exact_rate(per_cycle: float, what: str) -> Fraction:
    """`per_cycle` as an exact fraction, so burst and port times do not drift with float error."""
    if not per_cycle > 0:
        raise HwsimError(f"{what}: rate {per_cycle} per cycle must be positive")
    return Fraction(per_cycle).limit_denominator(MAX_RATE_DENOMINATOR)


def cycles_at_rate(amount: int, per_cycle: Fraction) -> int:
    """Whole cycles to move `amount` units at `per_cycle` units per cycle: ⌈amount / rate⌉."""
    return ceil_div(amount * per_cycle.denominator, per_cycle.numerator)


def check_count(value: int, what: str, owner: str) -> None:
    """A word, byte or operation count must be a non-negative integer."""
    if type(value) is int and value >= 0:
        return
    if int(value) != value or value < 0:
        raise HwsimError(f"{owner}: {what} must be a non-negative whole number, got {value}")
