"""Layers without a loop nest (pooling, element-wise, concat, resize, ...): their tensors stream through the GLB.

Per image, the inputs are cut into `tiles` near-equal pieces (larger ones
first, as np.array_split), each small enough that its input pieces and its
output piece fit the GLB together; a piece goes DRAM → GLB → array, the array
performs its share of `Layer.ops` on min(ops, PEs) PEs, and the output piece
returns array → GLB → DRAM.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from hwsim.hardware.schema import Accelerator
from hwsim.mapping.layout import DramLayout
from hwsim.mapping.schedule import buffer_steps, empty_steps, set_transfers
from hwsim.sparsity.codec import Links
from hwsim.sparsity.layer import LayerSparsity
from hwsim.vocab import Level, Operand, StepKind, ceil_div
from hwsim.workload.ir import Layer


def stream_tiles(layer: Layer, hw: Accelerator) -> int:
    """Pieces per image so that every input piece and its output piece fit the GLB together."""
    words = [s.elements for s in layer.in_shapes] + [layer.out_shape.elements]
    glb = hw.glb.data_bytes // hw.word_bytes
    n = max(1, ceil_div(sum(words), glb))
    while sum(ceil_div(w, n) for w in words) > glb:  # np.array_split puts the remainder first
        n += 1
    return n


def split_sizes(total: int, parts: int) -> np.ndarray:
    """Sizes of `parts` near-equal pieces of `total`, larger ones first (as np.array_split)."""
    base, extra = divmod(total, parts)
    return base + (np.arange(parts) < extra).astype(np.int64)


def _offsets(sizes: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(sizes)[:-1]])


def stream_steps(layer: Layer, hw: Accelerator, addr: DramLayout, batch: int, tiles: int,
                 sparsity: LayerSparsity | None = None) -> Iterator[np.ndarray]:
    """Per image and piece: ALLOC, one DRAM → GLB load per input, the inputs GLB → RF, COMPUTE, the output
    RF → GLB and GLB → DRAM, FREE. Pieces moving to or from a DRAM that keeps tiles coded take their coded
    words (`sparsity`: measured values or the layer's zero fractions; every image alike)."""
    ins = [split_sizes(s.elements, tiles) for s in layer.in_shapes]
    out = split_sizes(layer.out_shape.elements, tiles)
    coded_in, coded_out = _coded_pieces(hw, ins, out, sparsity or LayerSparsity())
    ops = split_sizes(layer.ops, tiles)
    in_total = np.sum(ins, axis=0)
    claim = in_total + out
    glb_in = np.cumsum([np.zeros(tiles, np.int64), *ins], axis=0)  # GLB address of each input piece
    for image in range(batch):
        group = image * tiles + np.arange(tiles)
        columns = [buffer_steps(StepKind.ALLOC, Operand.IFMAP, Level.GLB, group, claim, np.zeros(tiles, np.int64))]
        for i, sizes in enumerate(ins):
            columns.append(_transfers(Operand.IFMAP, Level.DRAM, Level.GLB, group, sizes,
                                      addr.ifmap[i] + image * addr.ifmap_image_words[i] + _offsets(sizes), glb_in[i],
                                      coded_in[i]))
        columns.append(_transfers(Operand.IFMAP, Level.GLB, Level.RF, group, in_total, 0, 0))
        compute = empty_steps(tiles)
        compute["kind"] = StepKind.COMPUTE
        compute["group"] = group
        compute["ops"] = ops
        compute["active_pes"] = np.clip(ops, 1, hw.pe_array.pes)
        columns.append(compute)
        columns.append(_transfers(Operand.OFMAP, Level.RF, Level.GLB, group, out, 0, in_total))
        columns.append(_transfers(Operand.OFMAP, Level.GLB, Level.DRAM, group, out, in_total,
                                  addr.ofmap + image * addr.ofmap_image_words + _offsets(out), coded_out))
        columns.append(buffer_steps(StepKind.FREE, Operand.IFMAP, Level.GLB, group, claim, np.zeros(tiles, np.int64)))
        yield np.stack(columns, axis=1).reshape(-1)


def _coded_pieces(hw: Accelerator, ins: list[np.ndarray], out: np.ndarray,
                  sparsity: LayerSparsity) -> tuple[list[np.ndarray], np.ndarray]:
    """The coded words of every input piece and output piece (their words where DRAM moves them raw)."""
    links = Links.of(hw)
    codec_in, codec_out = links.coded("ifmap", "dram", "glb"), links.coded("ofmap", "glb", "dram")
    coded_in = [sizes if codec_in is None else sparsity.piece_words(i, "ifmap", codec_in, sizes)
                for i, sizes in enumerate(ins)]
    coded_out = out if codec_out is None else sparsity.piece_words(len(ins), "ofmap", codec_out, out)
    return coded_in, coded_out


def _transfers(operand: Operand, src: Level, dst: Level, group: np.ndarray, words: np.ndarray,
               src_addr: np.ndarray | int, dst_addr: np.ndarray | int, coded: np.ndarray | None = None) -> np.ndarray:
    block = empty_steps(len(group))
    set_transfers(block, operand, src, dst, group, words, src_addr, dst_addr)
    if coded is not None:
        block["coded_words"] = coded
    return block
