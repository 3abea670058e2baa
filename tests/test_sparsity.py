"""Run-length coding of tiles: hand-made tensors against counts derived here, and a literal encoder against the
vectorised one."""

from __future__ import annotations

import numpy as np
import pytest

from hwsim.hardware.schema import Compression
from hwsim.sparsity.codec import codec, format_errors, rlc_pairs

EYERISS = Compression()  # 5-bit runs, 16-bit values, 3 pairs per 64-bit word
RLC16 = codec(EYERISS, 16)


def literal_pairs(values: list[int], run_bits: int = 5) -> list[tuple[int, int]]:
    """The encoder as the Eyeriss paper states it, one word at a time: zeros count into the run; a nonzero, or a
    zero once the run is full, closes the pair; leftover zeros close one last pair (run − 1, 0)."""
    full = (1 << run_bits) - 1
    pairs, run = [], 0
    for v in values:
        if v == 0 and run < full:
            run += 1
        else:
            pairs.append((run, v))
            run = 0
    if run:
        pairs.append((run - 1, 0))
    return pairs


def decode(pairs: list[tuple[int, int]]) -> list[int]:
    out: list[int] = []
    for run, value in pairs:
        out += [0] * run + [value]
    return out


def test_all_zeros() -> None:
    tile = np.zeros(100, dtype=np.int16)
    # 100 zeros: three pairs (31, 0) cover 96, the last four are (3, 0): 4 pairs, two 64-bit words = 8 words.
    assert rlc_pairs(tile, 5).tolist() == [4]
    assert RLC16.coded_words(tile).tolist() == [8]
    assert literal_pairs([0] * 100) == [(31, 0)] * 3 + [(3, 0)]


def test_no_zeros_moves_raw() -> None:
    tile = np.arange(1, 11, dtype=np.int16)
    # Ten nonzeros: ten pairs, ⌈10 / 3⌉ = 4 coded words = 16 words, more than the 10 raw words: the tile moves raw.
    assert rlc_pairs(tile, 5).tolist() == [10]
    assert RLC16.coded_words(tile).tolist() == [10]


def test_runs_longer_than_31() -> None:
    cases = {31: 1, 32: 2, 63: 2, 64: 3, 70: 3}  # zeros before one nonzero: 1 + ⌊zeros / 32⌋ pairs
    for zeros, pairs in cases.items():
        tile = np.array([0] * zeros + [7])
        assert rlc_pairs(tile, 5).tolist() == [pairs], zeros
        assert len(literal_pairs(tile.tolist())) == pairs
    # 70 zeros and a 7: (31, 0) (31, 0) (6, 7).
    assert literal_pairs([0] * 70 + [7]) == [(31, 0), (31, 0), (6, 7)]


def test_a_pair_split_across_words() -> None:
    # (0, 1) (1, 2) (2, 3) fill the first 64-bit word; (0, 4) and the trailing (14, 0) start a second: 8 words.
    tile = [1, 0, 2, 0, 0, 3, 4] + [0] * 15
    assert literal_pairs(tile) == [(0, 1), (1, 2), (2, 3), (0, 4), (14, 0)]
    assert RLC16.coded_words(np.array([tile])).tolist() == [8]
    # The escape of a 40-zero run is the second pair, its value the fourth: 1, (31, 0), (8, 5), 6 -> 2 words.
    tile = [1] + [0] * 40 + [5, 6]
    assert literal_pairs(tile) == [(0, 1), (31, 0), (8, 5), (0, 6)]
    assert rlc_pairs(np.array(tile), 5).tolist() == [4]
    assert RLC16.coded_words(np.array(tile)).tolist() == [8]
    # Trailing zeros after a full run: 1 then 33 zeros: (0, 1) (31, 0) (0, 0): three pairs, one word = 4 words.
    assert literal_pairs([1] + [0] * 33) == [(0, 1), (31, 0), (0, 0)]
    assert RLC16.coded_words(np.array([1] + [0] * 33)).tolist() == [4]


def test_rows_are_coded_separately_and_match_a_literal_encoder() -> None:
    rng = np.random.default_rng(7)
    for density in (0.0, 0.02, 0.3, 0.9, 1.0):
        tiles = (rng.random((40, 257)) < density) * rng.integers(1, 100, (40, 257))
        expected = [len(literal_pairs(row.tolist())) for row in tiles]
        assert rlc_pairs(tiles, 5).tolist() == expected
        for row in tiles:
            assert decode(literal_pairs(row.tolist())) == row.tolist()  # the literal encoder is lossless


def test_expected_words_of_a_zero_fraction() -> None:
    # 1000 words, 75 % zeros: 250 nonzeros need 250 pairs (at least ⌈1000 / 32⌉ = 32): 84 coded words = 336 words.
    assert RLC16.expected_words(np.array([1000]), 0.75).tolist() == [336]
    # All zeros: ⌈1000 / 32⌉ = 32 pairs, 11 coded words = 44 words; dense: raw.
    assert RLC16.expected_words(np.array([1000]), 1.0).tolist() == [44]
    assert RLC16.expected_words(np.array([1000]), 0.0).tolist() == [1000]
    # 8-bit data, CNNergy's 4-bit runs and five 12-bit pairs per 64-bit word (8 data words each).
    rlc8 = codec(Compression(run_bits=4, value_bits=8, pairs_per_word=5), 8)
    assert rlc8.expected_words(np.array([100]), 0.5).tolist() == [80]  # 50 pairs, 10 coded words


def test_format_errors_name_the_field() -> None:
    assert format_errors(EYERISS, 16, "dram.compression") == []
    errors = format_errors(Compression(pairs_per_word=4), 16, "dram.compression")
    assert len(errors) == 1 and errors[0].startswith("dram.compression.pairs_per_word: 4 pairs of 21 bit need 84")
    assert format_errors(Compression(), 8, "l2.compression")[0].startswith("l2.compression.value_bits")


@pytest.mark.parametrize("name", ["none", "rlc"])
def test_codecs_by_name(name: str) -> None:
    coded = codec(Compression(format=name), 16).coded_words(np.zeros((2, 9)))
    assert coded.tolist() == ([9, 9] if name == "none" else [4, 4])
