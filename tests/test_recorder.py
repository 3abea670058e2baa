"""The recorder's pass records: a PE-array pass held as one row becomes the records the trace schema describes, by
hand for a pass without zeros spared and two with (one on an array that counts the psums they spare)."""

from __future__ import annotations

import numpy as np

from hwsim.mapping.schedule import empty_steps
from hwsim.sim.recorder import Recorder
from hwsim.vocab import OTHER, Op, Operand, StepKind


def _compute(**fields: int) -> tuple[int, ...]:
    step = empty_steps(1)
    step["kind"] = StepKind.COMPUTE
    for name, value in fields.items():
        step[name] = value
    row: tuple[int, ...] = step.tolist()[0]
    return row


def test_a_pass_becomes_its_records_in_slot_order() -> None:
    blocks: list[tuple[str, np.ndarray]] = []
    rec = Recorder(frozenset({"pe"}), lambda level, block: blocks.append((level, block)), layer=3)
    rec.pe_pass(10, 20, 7, 5, 0, True, _compute(active_pes=12, macs=2592, ops=4, rf_filter_reads=2592,
                                                 rf_ifmap_reads=2592, rf_psum_reads=2592, rf_psum_writes=2394,
                                                 inter_pe_words=198))
    # spared 100 MACs; psum writes below the spared count: min(100, 50) + min(100, 40) psum words spared
    rec.pe_pass(20, 31, 9, 5, 100, True, _compute(active_pes=6, macs=300, rf_filter_reads=300, rf_ifmap_reads=300,
                                                  rf_psum_reads=50, rf_psum_writes=40, inter_pe_filter_words=8))
    rec.pe_pass(31, 40, 11, 6, 3, False, _compute(active_pes=1, macs=5, rf_filter_reads=2, rf_psum_reads=5))  # no
    # spared psums counted: two skip records
    rec.flush()
    [(level, block)] = blocks
    got = [tuple(r) for r in block[["start_cycle", "end_cycle", "op", "operand", "layer", "step", "address", "words",
                                    "unit"]].tolist()]
    R, W, U, Fl, S = int(Op.READ), int(Op.WRITE), int(Op.UPDATE), int(Op.FILL), int(Op.SKIP)
    f, i, p = int(Operand.FILTER), int(Operand.IFMAP), int(Operand.PSUM)
    assert level == "pe" and got == [
        (10, 20, U, OTHER, 3, 7, 12, 2592, 5), (10, 20, W, OTHER, 3, 7, 12, 4, 5), (10, 20, R, f, 3, 7, -1, 2592, 5),
        (10, 20, R, i, 3, 7, -1, 2592, 5), (10, 20, R, p, 3, 7, -1, 2592, 5), (10, 20, U, p, 3, 7, -1, 2394, 5),
        (10, 20, Fl, p, 3, 7, -1, 198, 5),
        (20, 31, U, OTHER, 3, 9, 6, 300, 5), (20, 31, R, f, 3, 9, -1, 300, 5), (20, 31, R, i, 3, 9, -1, 300, 5),
        (20, 31, R, p, 3, 9, -1, 50, 5), (20, 31, U, p, 3, 9, -1, 40, 5), (20, 31, Fl, f, 3, 9, -1, 8, 5),
        (20, 31, S, OTHER, 3, 9, -1, 100, 5), (20, 31, S, f, 3, 9, -1, 100, 5), (20, 31, S, p, 3, 9, -1, 50 + 40, 5),
        (31, 40, U, OTHER, 3, 11, 1, 5, 6), (31, 40, R, f, 3, 11, -1, 2, 6), (31, 40, R, p, 3, 11, -1, 5, 6),
        (31, 40, S, OTHER, 3, 11, -1, 3, 6), (31, 40, S, f, 3, 11, -1, 2, 6)]
