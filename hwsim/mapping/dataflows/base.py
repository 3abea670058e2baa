"""A dataflow is a set of constraints on loop nests (which dims the array spreads and streams, what each PE
keeps, how operands reach the PEs) plus its default mapping of a layer — the way Timeloop's constraint files
and ZigZag's spatial unrollings describe an architecture's dataflow."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from hwsim.hardware.schema import Accelerator
from hwsim.mapping.nest.format import Loop, LoopNest, MappingError
from hwsim.mapping.nest.problem import Problem

DefaultMapper = Callable[[Problem, Accelerator], LoopNest]


@dataclass(frozen=True)
class Dataflow:
    """Constraints a loop nest must meet on an array of this dataflow, and its default mapping."""

    name: str
    lowering: str  # the problem its default mappings cover ("conv" or "im2col")
    rows: frozenset[str]  # dims the array may spread over its rows
    cols: frozenset[str]
    stream: frozenset[str]  # dims a pass may stream
    rf_keeps: frozenset[str]  # what each PE's RF holds (exactly)
    rf_loops: bool  # whether a PE iterates over words of its RF (row stationary) or does one MAC per stream step
    delivery: dict[str, str]  # how the ifmap and the filters reach the PEs
    default: DefaultMapper

    def violations(self, nest: LoopNest) -> Iterator[str]:
        """'<field>: <problem>; <fix>' for every constraint the nest breaks."""
        for where, allowed, loops in (("array.rows", self.rows, nest.array.rows),
                                      ("array.cols", self.cols, nest.array.cols),
                                      ("array.stream", self.stream, nest.array.stream)):
            yield from _outside(where, allowed, loops, self.name)
        if nest.rf.keeps != self.rf_keeps:
            keeps = ", ".join(sorted(self.rf_keeps)) or "nothing"
            yield f"rf.keeps: a {self.name} PE keeps {keeps}; write keeps: [{keeps if self.rf_keeps else ''}]"
        if not self.rf_loops and any(l.factor > 1 for l in nest.rf.loops):
            yield (f"rf.loops: a {self.name} PE does one MAC per stream step; move the RF loops to the stream or "
                   "the storage levels")
        for op, mode in self.delivery.items():
            if nest.array.delivery.get(op) != mode:
                yield f"array.delivery.{op}: a {self.name} array delivers it by {mode}; write {op}: {mode}"


def require_pixel_psums(problem: Problem, hw: Accelerator) -> int:
    """The outputs one grid pixel of one filter owns (`Problem.pixel_outputs`), which a PE keeping psums holds
    at once; a psum RF smaller than that is a MappingError naming the fix, before any nest is built."""
    owned = problem.pixel_outputs()
    room = hw.pe_array.rf.psum_words if hw.pe_array.rf is not None else 1
    if owned > room:
        raise MappingError(f"layer {problem.layer!r}: each input pixel of the transposed convolution scatters into "
                           f"{owned} outputs a PE keeps, beyond its {room}-word psum RF; give the config a psum RF "
                           f"of at least {owned} words (pe_array.rf.psum) or a dataflow that keeps no psums in "
                           "the PEs")
    return owned


def _outside(where: str, allowed: frozenset[str], loops: tuple[Loop, ...], name: str) -> Iterator[str]:
    for loop in loops:
        if loop.factor > 1 and loop.dim not in allowed:
            dims = "".join(sorted(allowed)) or "none"
            yield f"{where}: {loop} is not allowed on a {name} array (dims allowed: {dims}); move it to a storage level"


