"""How a tile is coded on a compressed link: exactly from its values, or in expectation from its zero fraction.

A *tile* is what one transfer moves: a run of data words in the order the
transfer streams them. A level whose config has a `compression` section keeps
tiles coded; the words a transfer moves at that end are the coded words,
counted in the accelerator's data words (a 64-bit coded word is four 16-bit
words), so DRAM time, DRAM energy and bandwidth all follow from them.

`rlc` (Eyeriss, JSSC 2017): the stream becomes pairs (zero run, value), a run
field of `run_bits` (runs of at most 2^run_bits − 1 = 31 zeros) and a value
field of one data word; `pairs_per_word` pairs fill a coded word of
`word_bits` (Eyeriss: 3 × (5 + 16) + 1 flag bit = 64). Encoding: zeros are
counted into the run; a non-zero value, or a zero that would overflow the
run, ends the pair (so a run of 32 zeros is the pair (31, 0)); zeros left at
the end of the tile are one pair (r − 1, 0). A tile of L words with nonzeros
after zero runs z₁ … z_k and t zeros at its end therefore takes

    pairs = k + Σᵢ ⌊zᵢ / 2^run_bits⌋ + ⌈t / 2^run_bits⌉,
    coded words = ⌈pairs / pairs_per_word⌉ · word_bits / data bits,

and a tile the code would enlarge (a dense image: 4/3 of its words at 16 bit)
moves raw, so a tile costs min(L, coded words): a one-bit mode per transfer,
not counted. A pair never straddles two coded words: a word's last pairs may
stay empty.

In expectation, a tile of L words with a fraction z of zeros takes
max(⌈L·(1 − z)⌉, ⌈L / 2^run_bits⌉) pairs: every nonzero needs one, and no pair
covers more than 2^run_bits words (CNNergy's (1 − z)/3 · 64/16 is the first
term without the rounding). The step generator (average sparsity) and the
closed form price tiles with this one function, so their counts agree
exactly; with measured tensors the step generator codes each tile's actual
values instead, and `hwsim check` reports the difference with a tolerance.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from hwsim.hardware.kinds import CODECS
from hwsim.hardware.schema import Accelerator, Compression


class Codec(ABC):
    """A tile code: the data words a tile takes on the link."""

    def __init__(self, cfg: Compression, data_bits: int) -> None:
        self.cfg, self.data_bits = cfg, data_bits

    @classmethod
    def config_errors(cls, cfg: Compression, data_bits: int, where: str) -> list[str]:
        """What makes a compression section unusable with `data_bits` words ('<where>.<field>: problem; fix')."""
        return []

    @abstractmethod
    def coded_words(self, tiles: np.ndarray) -> np.ndarray:
        """Per row of `tiles` (tiles × words, the values in streaming order): the data words it takes coded."""

    @abstractmethod
    def expected_words(self, words: np.ndarray, zero_fraction: float) -> np.ndarray:
        """Per tile of `words` data words with a fraction `zero_fraction` of zeros: the data words it takes coded
        (the average model)."""


@CODECS.register("none")
class Uncoded(Codec):
    """No code: a tile takes its words."""

    def coded_words(self, tiles: np.ndarray) -> np.ndarray:
        return np.full(tiles.shape[0], tiles.shape[1], dtype=np.int64)

    def expected_words(self, words: np.ndarray, zero_fraction: float) -> np.ndarray:
        return np.asarray(words, dtype=np.int64)


def rlc_pairs(tiles: np.ndarray, run_bits: int) -> np.ndarray:
    """Per row of `tiles` (tiles × words): the (zero run, value) pairs its run-length code takes (module
    docstring), vectorised over rows: one pass over the nonzeros, no Python loop per word."""
    tiles = np.atleast_2d(tiles)
    count, length = tiles.shape
    span = 1 << run_bits  # words one pair covers at most: a full run and its value
    rows, cols = np.nonzero(tiles)
    first = np.ones(len(rows), dtype=bool)
    first[1:] = rows[1:] != rows[:-1]
    before = np.empty_like(cols)
    before[0:1] = -1
    before[1:] = cols[:-1]
    runs = cols - np.where(first, -1, before) - 1  # zeros just before each nonzero
    pairs = np.bincount(rows, minlength=count).astype(np.int64)
    pairs += np.bincount(rows, weights=runs // span, minlength=count).astype(np.int64)
    last = np.full(count, -1, dtype=np.int64)
    np.maximum.at(last, rows, cols)
    trailing = length - 1 - last
    result: np.ndarray = pairs + -(-trailing // span)
    return result


@CODECS.register("rlc")
class RunLength(Codec):
    """Eyeriss' run-length code (module docstring)."""

    def __init__(self, cfg: Compression, data_bits: int) -> None:
        super().__init__(cfg, data_bits)
        self.words_per_coded = cfg.word_bits // data_bits

    @classmethod
    def config_errors(cls, cfg: Compression, data_bits: int, where: str) -> list[str]:
        """A pair's value is one data word, the pairs fit the coded word, and it holds whole data words."""
        errors: list[str] = []
        if cfg.value_bits != data_bits:
            errors.append(f"{where}.value_bits: a pair's value is one {data_bits}-bit data word, not "
                          f"{cfg.value_bits} bit; set value: {data_bits} bit")
        used = cfg.pairs_per_word * (cfg.run_bits + cfg.value_bits)
        if used > cfg.word_bits:
            errors.append(f"{where}.pairs_per_word: {cfg.pairs_per_word} pairs of {cfg.run_bits + cfg.value_bits} "
                          f"bit need {used} bit, the coded word has {cfg.word_bits}; lower pairs_per_word or widen "
                          "word")
        if cfg.word_bits % data_bits:
            errors.append(f"{where}.word: a coded word of {cfg.word_bits} bit is not a whole number of "
                          f"{data_bits}-bit data words; use a multiple")
        return errors

    def _packed(self, pairs: np.ndarray, raw: np.ndarray) -> np.ndarray:
        coded = -(-pairs // self.cfg.pairs_per_word) * self.words_per_coded
        result: np.ndarray = np.minimum(raw, coded)
        return result

    def coded_words(self, tiles: np.ndarray) -> np.ndarray:
        tiles = np.atleast_2d(tiles)
        raw = np.full(tiles.shape[0], tiles.shape[1], dtype=np.int64)
        return self._packed(rlc_pairs(tiles, self.cfg.run_bits), raw)

    def expected_words(self, words: np.ndarray, zero_fraction: float) -> np.ndarray:
        raw = np.asarray(words, dtype=np.int64)
        nonzero = np.ceil(raw * (1.0 - zero_fraction)).astype(np.int64)
        pairs = np.maximum(nonzero, -(-raw // (1 << self.cfg.run_bits)))
        return self._packed(pairs, raw)


def codec(cfg: Compression, data_bits: int) -> Codec:
    """The code a `compression` section configures, for data words of `data_bits`."""
    chosen: type[Codec] = CODECS.get(cfg.format)
    return chosen(cfg, data_bits)


CODED_LEVELS = ("dram", "l2")  # levels whose config may keep tiles coded
BUFFER_LEVELS = ("dram", "l2", "glb", "line_buffer")  # the ends between which a codec runs (not the PE array)


@dataclass(frozen=True)
class Links:
    """Which levels of an accelerator keep tiles coded, and the code: what a transfer moves at each end."""

    codec: Codec | None  # the one code of every compressing level (the loader makes them agree)
    levels: frozenset[str]  # the compressing levels, of CODED_LEVELS
    filters: bool  # filter tiles are coded too

    @classmethod
    def of(cls, hw: Accelerator) -> Links:
        configs = {"dram": hw.dram.compression, "l2": hw.l2.compression if hw.l2 is not None else None}
        on = {level: cfg for level, cfg in configs.items() if cfg is not None and cfg.format != "none"}
        if not on:
            return cls(None, frozenset(), False)
        cfg = next(iter(on.values()))
        return cls(codec(cfg, hw.precision_bits), frozenset(on), cfg.filters)

    def coded(self, operand: str, src: str, dst: str) -> Codec | None:
        """The code of a transfer of `operand` ("ifmap", "filter", "psum", "ofmap") from `src` to `dst` (level
        names), or None when it moves raw: only tiles of ifmaps, ofmaps (and filters if configured) between a
        compressing level and another buffer are coded."""
        if self.codec is None or operand == "psum" or (operand == "filter" and not self.filters):
            return None
        if src not in BUFFER_LEVELS or dst not in BUFFER_LEVELS:
            return None
        return self.codec if src in self.levels or dst in self.levels else None
