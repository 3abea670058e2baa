"""Schedules written by hand for the tests that derive every cycle themselves."""

from __future__ import annotations

import numpy as np

from hwsim.mapping.schedule import empty_steps


def steps(*rows: dict[str, int]) -> np.ndarray:
    """A block of steps, each a dict of STEP_DTYPE fields (the rest zero, levels none)."""
    block = empty_steps(len(rows))
    for i, row in enumerate(rows):
        for name, value in row.items():
            block[name][i] = value
    return block
