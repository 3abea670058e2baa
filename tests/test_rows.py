"""Whole-record copies (`hwsim.rows`): the rows they give, worked out by hand."""

from __future__ import annotations

import numpy as np

from hwsim.rows import interleaved, joined, taken

PAIR = np.dtype([("kind", "u1"), ("value", "<i8")])  # packed: the 9-byte rows steps and records have


def _block(values: list[int], kind: int) -> np.ndarray:
    out = np.zeros(len(values), dtype=PAIR)
    out["value"], out["kind"] = values, kind
    return out


def test_interleaved_takes_row_i_of_every_block_in_turn_where_kept() -> None:
    a, b, c = _block([1, 2, 3], 0), _block([10, 20, 30], 1), _block([100, 200, 300], 2)
    keeps = [np.array([True, False, True]), np.array([True, True, False]), np.array([False, False, True])]
    out = interleaved([a, b, c], keeps)
    # row 0: a's 1, b's 10 (c's dropped); row 1: b's 20 alone; row 2: a's 3, c's 300 (b's dropped)
    assert out["value"].tolist() == [1, 10, 20, 3, 300]
    assert out["kind"].tolist() == [0, 1, 1, 0, 2]


def test_interleaved_of_nothing_kept_or_no_rows_is_empty() -> None:
    a, b = _block([1, 2], 0), _block([3, 4], 1)
    assert len(interleaved([a, b], [np.zeros(2, bool), np.zeros(2, bool)])) == 0
    assert interleaved([a[:0], b[:0]], [np.zeros(0, bool), np.zeros(0, bool)]).dtype == PAIR


def test_joined_and_taken_keep_whole_rows() -> None:
    a, b = _block([1, 2], 0), _block([3], 1)
    both = joined([a, b])
    assert both["value"].tolist() == [1, 2, 3] and both["kind"].tolist() == [0, 0, 1]
    assert joined([a]) is a
    assert taken(both, np.array([2, 0]))["value"].tolist() == [3, 1]
    assert taken(both, np.array([False, True, True]))["kind"].tolist() == [0, 1]
