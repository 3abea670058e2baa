"""The shared vocabulary: step-tuple positions follow STEP_DTYPE, names follow the enums, codes agree."""

from __future__ import annotations

import numpy as np

from hwsim.vocab import (
    ACCESS_NAMES,
    ACCESS_OF_OP,
    LEVEL_NAMES,
    OP_NAMES,
    OPERAND_NAMES,
    STEP_DTYPE,
    TRACE_OPERAND_NAMES,
    Op,
    StepField,
    ceil_div,
    round_up,
)


def _step_fields() -> dict[str, int]:
    return {name: getattr(StepField, name) for name in vars(StepField) if name.isupper()}


def test_every_step_field_has_a_position_and_each_names_its_own_field() -> None:
    positions = _step_fields()
    assert sorted(positions.values()) == list(range(len(STEP_DTYPE.names)))
    for name, index in positions.items():
        assert STEP_DTYPE.names[index] == name.lower(), name


def test_positions_read_the_values_written_by_name() -> None:
    steps = np.zeros(1, dtype=STEP_DTYPE)
    for value, name in enumerate(STEP_DTYPE.names, start=1):
        steps[name] = value
    row = steps.tolist()[0]
    for name, index in _step_fields().items():
        assert row[index] == STEP_DTYPE.names.index(name.lower()) + 1


def test_names_and_codes() -> None:
    assert LEVEL_NAMES == ("dram", "l2", "glb", "line_buffer", "rf")
    assert OPERAND_NAMES == ("ifmap", "filter", "psum", "ofmap")
    assert TRACE_OPERAND_NAMES == ("ifmap", "filter", "psum", "ofmap", "other")
    assert ACCESS_NAMES == ("read", "fill", "update")
    assert OP_NAMES == ("read", "write", "fill", "update", "skip")
    assert {OP_NAMES[op]: ACCESS_NAMES[a] for op, a in ACCESS_OF_OP.items()} == {
        "read": "read", "fill": "fill", "update": "update"}
    assert Op.WRITE not in ACCESS_OF_OP


def test_integer_helpers() -> None:
    assert [ceil_div(n, 4) for n in (0, 1, 4, 5, 8)] == [0, 1, 1, 2, 2]
    assert ceil_div(10**20 + 1, 10**10) == 10**10 + 1  # exact beyond float precision
    assert ceil_div(np.array([0, 3, 7]), 3).tolist() == [0, 1, 3]
    assert [round_up(n, 8) for n in (0, 1, 8, 9)] == [0, 8, 8, 16]
