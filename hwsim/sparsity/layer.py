"""One layer's zeros as the step generator and the closed form read them: per pass, the MACs whose ifmap word is
zero; per transferred tile, the words it takes on a compressed link.

Both quantities have an *average* form, a function of the layer's zero fraction
and of the pass's MACs or the tile's words, which the step generator (profile,
defaults) and the closed form (`hwsim.analytic.nest_counts`) compute with the
same functions here, so their counts agree exactly:

    zero MACs of a pass = ⌊MACs · z⌋   (z: the layer's zero-MAC fraction),
    coded words of a tile = the codec's expectation (`hwsim.sparsity.codec`).

With measured tensors the step generator takes each pass's and each tile's
*exact* figure instead (`hwsim.sparsity.tiles`), and the check states the
difference from the average model with a tolerance.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np

from hwsim.sparsity.codec import Codec
from hwsim.sparsity.profile import DENSE_LAYER, LayerZeros
from hwsim.sparsity.tiles import LayerTiles, Ranges

TILE_OPERANDS = ("ifmap", "filter", "ofmap")  # what a compressed link codes (psums never)


def expected_zero_macs(macs: np.ndarray, fraction: float) -> np.ndarray:
    """Per pass of `macs` MACs: the zero MACs of the average model, ⌊MACs · fraction⌋."""
    result: np.ndarray = np.floor(np.asarray(macs, dtype=np.int64) * fraction).astype(np.int64)
    return result


@dataclass
class LayerSparsity:
    """One layer's zero fractions and, when measured, its tiles (module docstring)."""

    zeros: LayerZeros = DENSE_LAYER
    tiles: LayerTiles | None = None  # a loop-nest layer's measured tiles
    flats: tuple[np.ndarray, ...] | None = None  # a streamed layer's measured inputs, then its output, flattened
    _coded: dict[tuple[object, ...], int] = field(default_factory=dict, repr=False)

    @property
    def exact(self) -> bool:
        """Whether passes are counted from measured values (else the average model)."""
        return self.tiles is not None and self.tiles.exact

    def zero_macs(self, start: Mapping[str, np.ndarray], length: Mapping[str, np.ndarray],
                  macs: np.ndarray) -> np.ndarray:
        """Per pass: its MACs whose ifmap word is zero."""
        if self.tiles is not None and self.tiles.exact:
            return self.tiles.zero_macs(start, length)
        return expected_zero_macs(macs, self.zeros.zero_macs)

    def fraction(self, operand: str) -> float:
        """The zero fraction of a tiled operand's tensor ("ifmap", "filter" or "ofmap")."""
        value: float = getattr(self.zeros, operand)
        return value

    def coded_words(self, operand: str, codec: Codec, words: np.ndarray,
                    ranges: Mapping[str, tuple[np.ndarray, np.ndarray]] | None, keep: np.ndarray) -> np.ndarray:
        """Per transfer of `words` words of `operand`: the words it takes coded. Measured tensors and the tiles'
        `ranges` (per conv dim, [lo, hi) per transfer): the actual values of each tile that moves (`keep`), coded
        once per distinct tile; else the codec's expectation for the operand's zero fraction."""
        if self.tiles is None or ranges is None:
            return codec.expected_words(words, self.fraction(operand))
        out = np.array(words, dtype=np.int64)
        for i in np.flatnonzero(keep & (out > 0)).tolist():
            tile = {d: (int(lo[i]), int(hi[i])) for d, (lo, hi) in ranges.items() if d != "N"}  # images alike
            key = (operand, id(codec), *sorted(tile.items()))
            if key not in self._coded:
                values = self._values(operand, tile)
                self._coded[key] = int(codec.coded_words(values[None, :])[0]) if values.size else 0
            out[i] = self._coded[key]
        return out

    def piece_words(self, tensor: int, operand: str, codec: Codec, sizes: np.ndarray) -> np.ndarray:
        """The coded words of consecutive pieces of `sizes` words of a streamed layer's tensor number `tensor` (its
        inputs, then its output) holding `operand` ("ifmap" or "ofmap"): from the measured values, else the
        codec's expectation for the operand's zero fraction."""
        if self.flats is None:
            fraction = self.zeros.input(tensor) if operand == "ifmap" else self.fraction(operand)
            return codec.expected_words(sizes, fraction)
        values, edges = self.flats[tensor], np.concatenate([[0], np.cumsum(sizes)]).tolist()
        return np.array([codec.coded_words(values[None, a:b])[0] if b > a else 0 for a, b in pairwise(edges)],
                        dtype=np.int64)

    def _values(self, operand: str, tile: Ranges) -> np.ndarray:
        assert self.tiles is not None
        if operand == "ifmap":
            return self.tiles.ifmap_values(tile)
        if operand == "ofmap":
            return self.tiles.ofmap_values(tile)
        return self.tiles.filter_values(tile)
