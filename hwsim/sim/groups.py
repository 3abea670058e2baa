"""A work's steps as the executor walks them: groups of step tuples, one processing pass each."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import numpy as np

from hwsim.mapping.schedule import Work
from hwsim.sim.structure import GroupLog
from hwsim.vocab import MOVE_FIELDS, StepField, StepKind

STEPS_AT_ONCE = 1 << 14  # steps of a block turned into tuples at a time
Step = tuple[Any, ...]  # one STEP_DTYPE row as a tuple
_COMPUTE = int(StepKind.COMPUTE)
KIND, GROUP = StepField.KIND, StepField.GROUP


@dataclass(slots=True)
class Group:
    """One processing pass: its index in the layer, the layer index of its first step, its steps, and the
    position of its COMPUTE among them (len(steps) if it has none); its loads note the levels filters go to
    (`filled`) and whether its pass reads psums back (`reads_psums`)."""

    index: int
    first: int
    steps: list[Step]
    compute: int
    filled: set[int] = field(default_factory=set)
    reads_psums: bool = False
    landed: int = 0  # the cycle its loads land (once issued)
    shape: tuple[Any, ...] | None = None  # its steps as a skip compares them (`hwsim.sim.steady`; () none)


def groups(layer: Work, log: GroupLog) -> Iterator[Group]:
    """The layer's groups in order, each with the index of its first step in the layer; every block is noted in
    `log` for the trace. A block's steps become tuples STEPS_AT_ONCE at a time (a block may hold hundreds of
    thousands, some 350 B each as tuples), a group spanning pieces or blocks joined as it goes."""
    offset = 0
    index = 0
    pending: list[Step] = []
    pending_start = 0
    for block in layer.blocks():
        log.add(block, offset)
        for lo in range(0, len(block), STEPS_AT_ONCE):
            piece = block[lo:lo + STEPS_AT_ONCE]
            steps = step_tuples(piece)
            cuts = np.flatnonzero(np.diff(piece["group"])) + 1
            bounds = [0, *cuts.tolist(), len(steps)]
            for a, b in pairwise(bounds):
                part = steps[a:b]
                if pending and pending[0][GROUP] == part[0][GROUP]:
                    pending.extend(part)
                    continue
                if pending:
                    yield Group(index, pending_start, pending, compute_index(pending))
                    index += 1
                pending, pending_start = part, offset + lo + a
        offset += len(block)
    if pending:
        yield Group(index, pending_start, pending, compute_index(pending))


def step_tuples(block: np.ndarray) -> list[Step]:
    """A block's steps as tuples, a COMPUTE's of every field, any other's of `MOVE_FIELDS` alone (the fields before
    the compute ones): numpy turns a structured row into a tuple field by field, twice as slow as zipping columns."""
    steps = list(zip(*[block[name].tolist() for name in MOVE_FIELDS], strict=True))
    computes = np.flatnonzero(block["kind"] == _COMPUTE)
    for i, full in zip(computes.tolist(), block[computes].tolist(), strict=True):
        steps[i] = full
    return steps


def compute_index(steps: list[Step]) -> int:
    for i, s in enumerate(steps):
        if s[KIND] == _COMPUTE:
            return i
    return len(steps)


