"""Layer-by-layer execution with the intermediate tensors where a memory plan put them.

One group per layer in graph order: allocate its output slots (at the plan's
word addresses, each in its buffer), read every input slot it consumes into
the GLB, run the layer's pass on the PE array, write its output to each of its
slots, then free the slots whose last consumer it was. Network inputs arrive
from DRAM and outputs leave for it. The plan itself comes from outside
(`hwsim.analytic.memplan`), as plain `TensorSlot`s, so the simulator checks it:
two live tensors placed on the same words are an error, and the trace shows
each buffer's occupancy and every address touched.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from hwsim.hardware.schema import Accelerator
from hwsim.mapping.phases import chunk_words, steps_block
from hwsim.mapping.plans import TensorSlot
from hwsim.mapping.schedule import PlannedInfo, Schedule, Work
from hwsim.vocab import Level, Operand, StepKind
from hwsim.workload.ir import Graph, Layer, LayerKind

NONE = 255


def planned_schedule(graph: Graph, hw: Accelerator, slots: Sequence[TensorSlot], buffer_names: Sequence[str],
                     name: str = "layer_by_layer") -> Schedule:
    """The layers one after another with their tensors in `slots` (see the module docstring)."""
    glb_words = max(1, hw.glb.data_bytes // hw.word_bytes)
    by_step = _slots_by_step(slots)

    def generate() -> Iterator[np.ndarray]:
        rows = [row for j, layer in enumerate(graph.layers)
                for row in _step_rows(j, layer, by_step, glb_words, hw.pe_array.pes)]
        if rows:
            yield steps_block(rows)

    info = PlannedInfo(buffers=tuple(buffer_names), slots=len(slots))
    stack = Work(graph.layers[0], info, generate, stack=tuple(graph.layers), pipelined=False,
                 word_bits=hw.precision_bits)
    return Schedule(graph.name, hw.name, name, 1, (stack,))


@dataclass(frozen=True)
class _SlotsByStep:
    """Per step (layer index): the slots it produces, the slots it reads (each once) and the slots it frees
    (those it is the last consumer of)."""

    produced: dict[int, list[TensorSlot]]
    read: dict[int, list[TensorSlot]]
    freed: dict[int, list[TensorSlot]]


def _slots_by_step(slots: Sequence[TensorSlot]) -> _SlotsByStep:
    by_step = _SlotsByStep({}, {}, {})
    for slot in slots:
        by_step.produced.setdefault(slot.producer, []).append(slot)
        for c in sorted(set(slot.consumers)):
            by_step.read.setdefault(c, []).append(slot)
        by_step.freed.setdefault(max(slot.consumers), []).append(slot)
    return by_step


Row = tuple[int, ...]  # a step as `steps_block` takes it


def _step_rows(j: int, layer: Layer, by_step: _SlotsByStep, glb_words: int, pes: int) -> list[Row]:
    """Step j: allocate the layer's output slots, bring a network input in or run the layer, then free the
    slots it was the last to read."""
    rows: list[Row] = [(StepKind.ALLOC, Operand.OFMAP, NONE, slot.level, j, slot.words, slot.address_words,
                        slot.buffer, 0, 0, 0) for slot in by_step.produced.get(j, [])]
    if layer.kind is LayerKind.INPUT:
        for slot in by_step.produced.get(j, []):
            if slot.level != Level.DRAM:
                rows.extend(_transfers(Operand.OFMAP, Level.DRAM, slot.level, j, slot.words, 0, slot.address_words,
                                       glb_words))
    else:
        rows.extend(_layer_run(j, layer, by_step, glb_words, pes))
    rows.extend((StepKind.FREE, Operand.IFMAP, NONE, slot.level, j, slot.words, slot.address_words, slot.buffer,
                 0, 0, 0) for slot in by_step.freed.get(j, []))
    return rows


def _layer_run(j: int, layer: Layer, by_step: _SlotsByStep, glb_words: int, pes: int) -> list[Row]:
    """A layer's inputs slots -> GLB, its pass on the PE array, its output GLB -> slots (and DRAM for a
    network output)."""
    rows: list[Row] = []
    for slot in by_step.read.get(j, []):
        rows.extend(_transfers(Operand.IFMAP, slot.level, Level.GLB, j, slot.words, slot.address_words, 0, glb_words))
    rows.append((StepKind.COMPUTE, Operand.IFMAP, NONE, NONE, j, 0, 0, 0, pes, layer.macs, layer.ops))
    for slot in by_step.produced.get(j, []):
        rows.extend(_transfers(Operand.OFMAP, Level.GLB, slot.level, j, slot.words, 0, slot.address_words, glb_words))
    if layer.kind is LayerKind.OUTPUT:
        rows.extend(_transfers(Operand.OFMAP, Level.GLB, Level.DRAM, j, layer.in_shape.elements, 0, 0, glb_words))
    return rows


def _transfers(operand: Operand, src: Level, dst: Level, group: int, words: int, src_addr: int, dst_addr: int,
               glb_words: int) -> list[Row]:
    """`words` from src to dst in GLB-sized chunks (addresses advance outside the GLB)."""
    out: list[Row] = []
    done = 0
    for chunk in chunk_words(words, glb_words):
        out.append((StepKind.TRANSFER, operand, src, dst, group, chunk, src_addr + done if src != Level.GLB else 0,
                    dst_addr + done if dst != Level.GLB else 0, 0, 0, 0))
        done += chunk
    return out
