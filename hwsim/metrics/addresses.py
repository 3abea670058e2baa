"""Where a trace's DRAM transfers start: per layer, operand and direction, the transfers and the sum of their
start offsets in the layer's DRAM region for that operand (what `hwsim check` compares with the closed form's
`hwsim.analytic.nest_addresses`). A transfer is a run of one schedule step's DRAM records (its bursts follow
one another in the file); it starts at the lowest word of the run."""

from __future__ import annotations

import json

import numpy as np

from hwsim.trace.reader import Trace

STEP_BITS = 40  # a record's (layer, step) as one key: layer << STEP_BITS | step

TraceAddressSums = dict[str, dict[tuple[str, str], tuple[int, int]]]  # layer -> (operand, op) -> (transfers, Σ)


def _bases(trace: Trace) -> dict[tuple[int, int], int]:
    """(layer id, operand code) -> the first word of its first declared DRAM region."""
    regions = json.loads(str(trace.attrs.get("dram_regions_json", "{}")))
    out: dict[tuple[int, int], int] = {}
    for k, name in enumerate(trace.layers):
        for operand, base, _ in regions.get(name, ()):
            out.setdefault((k, int(operand)), int(base))
    return out


def dram_transfer_offsets(trace: Trace) -> TraceAddressSums:
    """Per layer with declared regions: (operand, op) -> (DRAM transfers, Σ start offsets in their region)."""
    bases = _bases(trace)
    keys: list[np.ndarray] = []
    lows: list[np.ndarray] = []
    codes: list[np.ndarray] = []
    for block in trace.records("dram"):  # reduce each block to its runs of one step first
        key = (block["layer"].astype(np.int64) << STEP_BITS) | block["step"]
        runs = np.r_[0, np.flatnonzero(key[1:] != key[:-1]) + 1]
        keys.append(key[runs])
        lows.append(np.minimum.reduceat(block["address"], runs))
        codes.append((block["op"][runs].astype(np.int64) << 8) | block["operand"][runs])
    out: TraceAddressSums = {}
    if not keys:
        return out
    key, low, code = np.concatenate(keys), np.concatenate(lows), np.concatenate(codes)
    order = np.argsort(key, kind="stable")  # a step's bursts may interleave with another's: one transfer per step
    key, low, code = key[order], low[order], code[order]
    steps = np.r_[0, np.flatnonzero(key[1:] != key[:-1]) + 1]
    start, layer, code = np.minimum.reduceat(low, steps), key[steps] >> STEP_BITS, code[steps]
    groups, inverse = np.unique((layer << 16) | code, return_inverse=True)
    counts = np.bincount(inverse)
    totals = np.zeros(len(groups), dtype=np.int64)
    np.add.at(totals, inverse, start)
    for group, count, total in zip(groups.tolist(), counts.tolist(), totals.tolist()):
        k, op, operand = group >> 16, (group >> 8) & 0xFF, group & 0xFF
        base = bases.get((k, operand))
        if base is not None:
            sums = out.setdefault(trace.layers[k], {})
            sums[(trace.operands[operand], trace.ops[op])] = (count, total - count * base)
    return out


__all__ = ["TraceAddressSums", "dram_transfer_offsets"]
