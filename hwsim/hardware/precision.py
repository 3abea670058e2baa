"""An accelerator at another word width: how a config written for one precision runs a network at another
(`--bits N`, or the width a quantized graph declares).

The silicon stays; what a word is changes. The rules, those CNNergy uses for its 8-bit table:

- every size in bytes and every width in bits stays (GLB, L2, line buffer, DRAM, NoC buses, L2 and DRAM
  bandwidth): the same SRAMs and wires hold and move more words when a word is narrower;
- every count of words keeps its bytes: RF filter/ifmap/psum words and the GLB's and line buffer's words per
  port become the whole words their bytes hold (a 16-bit RF of 224 words holds 448 8-bit words, one of 3 words
  holds 1 32-bit word), and never fewer than one: a PE's single operand register, or a one-word port, widens
  with the word (a systolic PE at 16 bit still holds one weight);
- every energy of moving or storing one word (RF, GLB, L2, line buffer, inter-PE) scales with the bits: the
  energy per bit stays (DRAM is priced per bit or per command already);
- a MAC is a multiplier and an adder: the multiplier's share of its energy scales with bits², the rest with
  bits (CNNergy: 0.05 pJ add + 0.9 pJ multiply at 16 bit, 0.025 + 0.225 at 8 bit);
- a compression code keeps its coded word, run field and flag bits; its value field becomes the new word and
  as many pairs as then fit are packed;
- clock and control power stay (CNNergy keeps them at 8 bit).
"""

from __future__ import annotations

import functools
from dataclasses import replace
from fractions import Fraction

from hwsim.errors import ConfigError
from hwsim.hardware.loader import consistency_errors
from hwsim.hardware.schema import Accelerator, Compression, Core
from hwsim.vocab import WORD_BITS, WORD_BITS_TEXT


def _words(count: int, scale: Fraction) -> int:
    """The whole words `count` words' bytes hold at `scale` times as many words per byte; at least one."""
    return max(1, int(count * scale))


def _energy(energy_pj: float, ratio: Fraction) -> float:
    return energy_pj * float(ratio)


def mac_energy_pj(mac_pj: float, multiplier_share: float, ratio: Fraction) -> float:
    """A MAC's energy at `ratio` times the bits: multiplier by ratio², adder by ratio."""
    r = float(ratio)
    return mac_pj * (multiplier_share * r * r + (1.0 - multiplier_share) * r)


def _code(cfg: Compression | None, bits: int) -> Compression | None:
    """The same code with `bits`-bit values: its word, run field and flag bits kept, as many pairs as fit."""
    if cfg is None or cfg.format == "none":
        return cfg
    flag_bits = cfg.word_bits - cfg.pairs_per_word * (cfg.run_bits + cfg.value_bits)
    pairs = (cfg.word_bits - flag_bits) // (cfg.run_bits + bits)
    return replace(cfg, value_bits=bits, pairs_per_word=max(pairs, 1))


def layer_hardware(hw: Accelerator, word_bits: int | None) -> Accelerator:
    """The accelerator a layer running at `word_bits` sees: `hw` rescaled to that word (`hw` itself for None or
    its own word)."""
    return hw if word_bits is None else at_precision(hw, word_bits)


@functools.lru_cache(maxsize=256)
def at_precision(hw: Accelerator, bits: int) -> Accelerator:
    """`hw` with `bits`-bit words by the module's rules; `hw` itself when it already has them."""
    if bits not in WORD_BITS:
        raise ConfigError(f"{bits}-bit words: hwsim models {WORD_BITS_TEXT}-bit words; "
                          "give one of them")
    if bits == hw.precision_bits:
        return hw
    keep = Fraction(hw.precision_bits, bits)  # word counts: same bytes
    ratio = Fraction(bits, hw.precision_bits)  # per-word energies: same energy per bit
    l2 = hw.l2 and replace(hw.l2, read_energy_pj=_energy(hw.l2.read_energy_pj, ratio),
                           write_energy_pj=_energy(hw.l2.write_energy_pj, ratio),
                           compression=_code(hw.l2.compression, bits))
    first = _core_at(Core(name="", pe_array=hw.pe_array, noc=hw.noc, glb=hw.glb, line_buffer=hw.line_buffer),
                     keep, ratio)
    scaled = replace(hw, name=f"{hw.name}@{bits}b", precision_bits=bits, pe_array=first.pe_array, glb=first.glb,
                     l2=l2, line_buffer=first.line_buffer, noc=first.noc,
                     cores=tuple(_core_at(core, keep, ratio) for core in hw.cores),
                     links=tuple(replace(link, energy_pj=_energy(link.energy_pj, ratio)) for link in hw.links),
                     dram=replace(hw.dram, compression=_code(hw.dram.compression, bits)),
                     description=f"{hw.description or hw.name}, run at {bits} bit (hwsim's precision rules)")
    for problem in consistency_errors(scaled):
        raise ConfigError(f"{hw.name} at {bits} bit: {problem}")
    return scaled


def _core_at(core: Core, keep: Fraction, ratio: Fraction) -> Core:
    """A core's sections with `keep` times as many words per byte and per-word energies `ratio` times."""
    pe = core.pe_array
    rf = pe.rf and replace(pe.rf, filter_words=_words(pe.rf.filter_words, keep),
                           ifmap_words=_words(pe.rf.ifmap_words, keep),
                           psum_words=_words(pe.rf.psum_words, keep),
                           access_energy_pj=_energy(pe.rf.access_energy_pj, ratio))
    array = replace(pe, rf=rf, mac_energy_pj=mac_energy_pj(pe.mac_energy_pj, pe.multiplier_share, ratio))
    glb = replace(core.glb, words_per_port=_words(core.glb.words_per_port, keep),
                  read_energy_pj=_energy(core.glb.read_energy_pj, ratio),
                  write_energy_pj=_energy(core.glb.write_energy_pj, ratio))
    lb = core.line_buffer
    line_buffer = lb and replace(lb, words_per_port=_words(lb.words_per_port, keep),
                                 read_energy_pj=_energy(lb.read_energy_pj, ratio),
                                 write_energy_pj=_energy(lb.write_energy_pj, ratio))
    noc = replace(core.noc, inter_pe_energy_pj=_energy(core.noc.inter_pe_energy_pj, ratio))
    return replace(core, pe_array=array, glb=glb, line_buffer=line_buffer, noc=noc)


__all__ = ["at_precision", "layer_hardware", "mac_energy_pj"]
