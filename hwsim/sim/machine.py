"""The components of one accelerator in one simpy environment, built from its config by model name.

Besides the components, the machine keeps what spans them: the named buffers
that ALLOC/FREE steps in the line buffer, the L2 or DRAM carry (a depth-first
ring, a phased edge buffer, a planned buffer), logged as occupancy per id, and
the live placed allocations of the L2 and DRAM (an ALLOC with a word address
places its words there; two live allocations that overlap are an impossible
mapping).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import simpy

from hwsim.errors import HwsimError
from hwsim.hardware.schema import Accelerator
from hwsim.sim.dram import DramModel, build_dram
from hwsim.sim.line_buffer import LineBuffer
from hwsim.sim.noc import NOC_MODELS, Noc
from hwsim.sim.pe_array import PeArray
from hwsim.sim.space import Space
from hwsim.sim.sram import Sram
from hwsim.vocab import LEVEL_NAMES, Level, Operand

NAMED_LEVELS = (int(Level.DRAM), int(Level.L2), int(Level.LINE_BUFFER))  # their ALLOC/FREE steps carry a buffer id
PLACED_LEVELS = (int(Level.DRAM), int(Level.L2))  # their ALLOC steps may place words at an address


@dataclass
class Machine:
    """The components of one accelerator in one simpy environment."""

    env: simpy.Environment
    hw: Accelerator
    dram: DramModel
    glb: Sram
    noc: Noc
    pe: PeArray
    line_buffer: LineBuffer | None = None
    l2: Sram | None = None
    ring_words: dict[int, int] = field(default_factory=dict)  # named buffer id -> words held
    ring_log: list[tuple[int, int, int]] = field(default_factory=list)  # (cycle, id, words after a change)
    placed: dict[int, dict[int, int]] = field(default_factory=dict)  # level -> live allocations: address -> words

    @classmethod
    def build(cls, hw: Accelerator) -> Machine:
        env = simpy.Environment()
        wb = hw.word_bytes
        line_buffer = LineBuffer(env, hw.line_buffer, wb) if hw.line_buffer else None
        l2 = Sram(env, hw.l2, wb, "l2") if hw.l2 else None
        noc = NOC_MODELS.get(hw.noc.model)(env, hw.noc, wb)
        return cls(env, hw, build_dram(env, hw.dram, wb, clock_hz=hw.clock_hz), Sram(env, hw.glb, wb, "glb"), noc,
                   PeArray(env, hw.pe_array, wb), line_buffer, l2)

    def use(self, hw: Accelerator) -> None:
        """Run what follows on `hw`, this machine's config at another word (mixed precision: the next layer runs
        at its own word): the same silicon, every word-counted size and rate at that word."""
        if hw.precision_bits != self.hw.precision_bits:
            wb = hw.word_bytes
            self.glb.use_word(hw.glb, wb)
            for sram, cfg in ((self.l2, hw.l2), (self.line_buffer, hw.line_buffer)):
                if sram is not None and cfg is not None:
                    sram.use_word(cfg, wb)
            self.noc.use_word(wb)
            self.dram.use_word(wb)
            self.pe.word_bytes = wb
        self.hw = hw

    def ring_change(self, ring: int, words: int, cycle: int) -> None:
        """Log a named buffer's occupancy after an ALLOC (+words) or FREE (−words) at `cycle`."""
        held = self.ring_words[ring] = self.ring_words.get(ring, 0) + words
        self.ring_log.append((cycle, ring, held))

    def place(self, level: int, address: int, words: int) -> None:
        """Claim words address … address + words of `level`; an overlap with a live allocation is an error."""
        live = self.placed.setdefault(level, {})
        for start, size in live.items():
            if start < address + words and address < start + size:
                raise HwsimError(f"{LEVEL_NAMES[level]}: words {address}..{address + words} overlap the live "
                                 f"allocation at {start}..{start + size}; the memory plan puts two live tensors "
                                 "in one place")
        live[address] = words

    def unplace(self, level: int, address: int) -> None:
        self.placed.get(level, {}).pop(address, None)

    def stall_cycles(self) -> dict[str, int]:
        """Cycles transactions have queued so far, by cause: DRAM channels (incl. read/write turnaround),
        GLB ports and bank conflicts, NoC buses, GLB space (claims waiting for frees)."""
        return {
            "dram": self.dram.stall_cycles(),
            "glb_port": int(self.glb.port_stall_cycles),
            "glb_bank": int(self.glb.bank_conflict_stall_cycles),
            "noc": int(sum(bus.queue_stall_cycles for bus in self.noc.buses.values())),
            "glb_space": int(sum(space.allocate_stall_cycles for space in self.glb.spaces.values())),
            "line_buffer_port": int(self.line_buffer.port_stall_cycles) if self.line_buffer else 0,
            "l2_port": int(self.l2.port_stall_cycles) if self.l2 else 0,
        }

    def require_line_buffer(self) -> LineBuffer:
        if self.line_buffer is None:
            raise HwsimError(f"{self.hw.name}: the schedule uses line buffers but the config has no "
                             "line_buffer section; add one")
        return self.line_buffer

    def require_l2(self) -> Sram:
        if self.l2 is None:
            raise HwsimError(f"{self.hw.name}: the schedule uses an L2 but the config has no l2 section; add one")
        return self.l2

    def space(self, level: int, operand: int) -> Space | None:
        """The buffer space an ALLOC/FREE step claims: a GLB partition (filters in the filter partition when the
        GLB has one), the line buffer, the L2, or none (DRAM is not bounded)."""
        if level == Level.LINE_BUFFER:
            return self.require_line_buffer().space
        if level == Level.L2:
            return self.require_l2().spaces["data"]
        if level == Level.DRAM:
            return None
        filters = self.glb.spaces["filter"]
        return filters if operand == Operand.FILTER and filters.capacity_words else self.glb.spaces["data"]

    def buffer_spaces(self) -> list[Space | None]:
        """The spaces traced as occupancy buffers 0, 1, 2: GLB data, GLB filter, line buffer."""
        return [self.glb.spaces["data"], self.glb.spaces["filter"],
                self.line_buffer.space if self.line_buffer else None]
