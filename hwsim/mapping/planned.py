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
from hwsim.mapping.schedule import LayerSchedule, Schedule
from hwsim.vocab import Level, Operand, StepKind
from hwsim.workload.ir import Graph, LayerKind

NONE = 255


@dataclass(frozen=True)
class TensorSlot:
    """Where one tensor lives for some of its consumers: its buffer, level and word address."""

    producer: int  # layer index (its step)
    consumers: tuple[int, ...]  # steps that read it from this slot
    words: int
    buffer: int  # buffer id (occupancy)
    address_words: int
    level: Level


def planned_schedule(graph: Graph, hw: Accelerator, slots: Sequence[TensorSlot], buffer_names: Sequence[str],
                     name: str = "layer_by_layer") -> Schedule:
    """The layers one after another with their tensors in `slots` (see the module docstring)."""
    glb_words = max(1, hw.glb.data_bytes // hw.word_bytes)
    pes = hw.pe_array.pes
    produced: dict[int, list[TensorSlot]] = {}
    read: dict[int, list[TensorSlot]] = {}
    freed: dict[int, list[TensorSlot]] = {}
    for slot in slots:
        produced.setdefault(slot.producer, []).append(slot)
        for c in sorted(set(slot.consumers)):
            read.setdefault(c, []).append(slot)
        freed.setdefault(max(slot.consumers), []).append(slot)

    def transfers(operand: Operand, src: Level, dst: Level, group: int, words: int, src_addr: int,
                  dst_addr: int) -> list[tuple[int, ...]]:
        out = []
        done = 0
        for chunk in chunk_words(words, glb_words):
            out.append((StepKind.TRANSFER, operand, src, dst, group, chunk, src_addr + done if src != Level.GLB else 0,
                        dst_addr + done if dst != Level.GLB else 0, 0, 0, 0))
            done += chunk
        return out

    def generate() -> Iterator[np.ndarray]:
        rows: list[tuple[int, ...]] = []
        for j, layer in enumerate(graph.layers):
            for slot in produced.get(j, []):
                rows.append((StepKind.ALLOC, Operand.OFMAP, NONE, slot.level, j, slot.words, slot.address_words,
                             slot.buffer, 0, 0, 0))
            if layer.kind is LayerKind.INPUT:
                for slot in produced.get(j, []):
                    if slot.level != Level.DRAM:
                        rows.extend(transfers(Operand.OFMAP, Level.DRAM, slot.level, j, slot.words, 0,
                                              slot.address_words))
            else:
                for slot in read.get(j, []):
                    rows.extend(transfers(Operand.IFMAP, slot.level, Level.GLB, j, slot.words, slot.address_words, 0))
                rows.append((StepKind.COMPUTE, Operand.IFMAP, NONE, NONE, j, 0, 0, 0, pes, layer.macs, layer.ops))
                for slot in produced.get(j, []):
                    rows.extend(transfers(Operand.OFMAP, Level.GLB, slot.level, j, slot.words, 0, slot.address_words))
                if layer.kind is LayerKind.OUTPUT:
                    rows.extend(transfers(Operand.OFMAP, Level.GLB, Level.DRAM, j, layer.in_shape.elements, 0, 0))
            for slot in freed.get(j, []):
                rows.append((StepKind.FREE, Operand.IFMAP, NONE, slot.level, j, slot.words, slot.address_words,
                             slot.buffer, 0, 0, 0))
        if rows:
            yield steps_block(rows)

    params = {"slots": len(slots), "buffers": tuple(buffer_names)}
    stack = LayerSchedule(graph.layers[0], params, generate, stack=tuple(graph.layers), pipelined=False)
    return Schedule(graph.name, hw.name, name, 1, (stack,))
