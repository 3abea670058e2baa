"""Whole-record copies of numpy structured arrays (records, steps): numpy copies, masks and joins a structured
array field by field, five times slower than the same bytes moved as whole rows."""

from __future__ import annotations

import numpy as np


def opaque(block: np.ndarray) -> np.ndarray:
    """`block` seen as fixed-size byte strings, one per record (a view, no copy)."""
    return block.view(np.dtype((np.void, block.dtype.itemsize)))


def joined(parts: list[np.ndarray]) -> np.ndarray:
    """Blocks of one structured dtype, one after another (the only block itself, uncopied)."""
    if len(parts) == 1:
        return parts[0]
    out: np.ndarray = np.concatenate([opaque(p) for p in parts]).view(parts[0].dtype)
    return out


def taken(block: np.ndarray, index: np.ndarray) -> np.ndarray:
    """The records of `block` at `index` (integer positions or a boolean mask), in that order."""
    out: np.ndarray = opaque(block)[index].view(block.dtype)
    return out


def interleaved(blocks: list[np.ndarray], keeps: list[np.ndarray]) -> np.ndarray:
    """Row i of every block in turn, for i = 0, 1, …, each where its mask in `keeps` holds: blocks of one
    structured dtype and one length. Each block's kept rows go straight to their places (no stacked copy)."""
    keep = np.stack(keeps, axis=1)
    place = (np.cumsum(keep.ravel()) - 1).reshape(keep.shape)
    out = np.empty(int(place[-1, -1]) + 1 if place.size else 0, dtype=blocks[0].dtype)
    rows = opaque(out)
    for j, (block, kept) in enumerate(zip(blocks, keeps, strict=True)):
        rows[place[kept, j]] = opaque(block)[kept]
    return out


__all__ = ["interleaved", "joined", "opaque", "taken"]
