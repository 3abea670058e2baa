"""Performing one step of a schedule on the machine and recording it: the one path every execution policy uses.

A step is performed at the cycle it is requested: every component it needs books it at once (`book`, no simpy
event) and it ends when its source, destination and bus are all done. Its ends are units of the tree: a per-core
level (GLB, line buffer, RF, PE array) on the core its `src_core`/`dst_core` names, a shared one (L2, DRAM) for
every core. A transfer between two cores' buffers crosses the link joining them, or the fewest links through other
cores (a mesh: `Machine.route`): the source is read when the transfer is requested, each link carries the words as
soon as its direction is free and the first words have reached it (cut-through: a hop starts `latency` after the
hop before it started, or later when its direction is busy), and the destination is written from when they start to
arrive (the last hop's start plus its latency). Each hop is one link record. Words are the work's width
(`word_bytes`); every record names the unit it happened at.

Records (see `hwsim.trace.schema`; op codes `hwsim.vocab.Op`): DRAM one per burst (or one per transaction when
asked; a level that keeps tiles coded moves and records a transfer's coded words), GLB / L2 / line buffer one per
transfer, NoC one per bus transfer (op write), link one per transfer (op write), RF one per transfer (fill, or read
for psums going out), and per pass at level `pe`: the MACs (operand other, op update, address = active PEs; exactly
one per pass, so it also times the pass), non-MAC ops (other, write), the MACs' RF reads per operand (read), psum
RF writes (psum, update), words handed PE to PE (fill; psum: spatial reduction, ifmap and filter: systolic
forwarding), and what zero ifmap words spared when the array gates or skips them (skip: the MACs, operand other;
their filter RF reads, operand filter; with zero_gating_psums their psum RF reads and writes, operand psum): the
recorder makes a pass's records from the pass and its COMPUTE step (`Recorder.pe_pass`).
"""

from __future__ import annotations

from typing import Any

import simpy

from hwsim.errors import HwsimError
from hwsim.sim.component import Port
from hwsim.sim.machine import NAMED_LEVELS, PLACED_LEVELS, Machine
from hwsim.sim.recorder import Recorder
from hwsim.sim.space import Space
from hwsim.sparsity.codec import Links
from hwsim.vocab import LEVEL_NAMES, NO_ADDRESS, Level, Op, Operand, StepField

READ, WRITE, FILL, UPDATE = int(Op.READ), int(Op.WRITE), int(Op.FILL), int(Op.UPDATE)
_DRAM, _L2, _GLB, _LINE_BUFFER, _RF = (int(Level.DRAM), int(Level.L2), int(Level.GLB), int(Level.LINE_BUFFER),
                                      int(Level.RF))
_PSUM, _OFMAP = int(Operand.PSUM), int(Operand.OFMAP)
_BUS_OF_OPERAND = ("ifmap", "filter", "psum", "psum")  # NoC bus of each operand (`hwsim.vocab.BUS_OF_OPERAND`)
_OUT_BUS = ("ifmap", "filter", "psum_out", "psum_out")  # ... of each leaving the RF (psums, ofmaps: psum_out)
_BUFFER_LEVELS = (_GLB, _LINE_BUFFER)  # per-core levels a transfer between cores may join

F = StepField
OPERAND, SRC, DST, WORDS, SRC_ADDR, DST_ADDR = F.OPERAND, F.SRC, F.DST, F.WORDS, F.SRC_ADDR, F.DST_ADDR
CODED_WORDS, SRC_CORE, DST_CORE = F.CODED_WORDS, F.SRC_CORE, F.DST_CORE

Step = tuple[Any, ...]  # one STEP_DTYPE row as a tuple


class StepRunner:
    """Performs single steps of one work requested at a given cycle, with words `word_bytes` wide, and records
    them."""

    def __init__(self, m: Machine, rec: Recorder, word_bytes: int) -> None:
        self.m, self.rec, self.wb = m, rec, word_bytes
        self.want_pe, self.want_link = rec.wants("pe"), rec.wants("link")
        self.dram_per_burst = rec.wants("dram") and "dram" not in rec.per_transaction
        self.buses = [[c.noc.bus(name) for name in _BUS_OF_OPERAND] for c in m.cores]
        self.out_buses = [[c.noc.bus(name) for name in _OUT_BUS] for c in m.cores]
        self.coded_levels = frozenset(LEVEL_NAMES.index(level) for level in Links.of(m.hw).levels)
        self.level_rows = tuple(rec.rows.get(name) for name in LEVEL_NAMES)  # per level: its recorder's rows, None
        # where it is not recorded
        self.noc_rows, self.rf_rows = rec.rows.get("noc"), rec.rows.get("rf")
        self.glbs = [c.glb for c in m.cores]
        self.line_buffers = [c.line_buffer for c in m.cores]  # None where a core has none
        self.spaces: dict[tuple[int, int, int], Space | None] = {}  # `Machine.space` by (level, operand, core)
        self.passes = 0
        self.compute_cycles = 0

    def transfer(self, index: int, s: Step, at: int) -> int:
        """Book the source, destination and bus of a transfer requested at `at`, record it; its end cycle. An end
        that keeps tiles coded (DRAM, L2 with `compression`) moves the step's coded words."""
        operand, src, dst, words = s[OPERAND], s[SRC], s[DST], s[WORDS]
        if words == 0:
            return at
        src_core, dst_core = s[SRC_CORE], s[DST_CORE]
        if src_core != dst_core and src in _BUFFER_LEVELS and dst in _BUFFER_LEVELS:
            return self._across(index, s, at)
        end, coded = at, self.coded_levels
        if src != _RF:
            moved = s[CODED_WORDS] if src in coded else words
            side_end = self._side(src, src_core, True, s[SRC_ADDR], moved, READ, operand, index, at)
            if side_end > end:
                end = side_end
        if dst != _RF:
            outward = dst < src and operand in (_PSUM, _OFMAP)
            moved = s[CODED_WORDS] if dst in coded else words
            side_end = self._side(dst, dst_core, False, s[DST_ADDR], moved, UPDATE if outward else FILL, operand,
                                  index, at)
            if side_end > end:
                end = side_end
        else:  # the RF end rides its core's NoC
            return self._over_noc(index, s, at, end, True, dst_core)
        if src == _RF:
            return self._over_noc(index, s, at, end, False, src_core)
        return end

    def _over_noc(self, index: int, s: Step, at: int, end: int, filled: bool, core: int) -> int:
        """The NoC bus and RF records of a transfer into (`filled`) or out of core `core`'s RFs whose other end
        ends at `end`; the transfer's end cycle."""
        operand, words = s[OPERAND], s[WORDS]
        bus = (self.buses if filled else self.out_buses)[core][operand]
        start = bus.book(False, NO_ADDRESS, words, at, self.wb)
        bus_end = bus.reserved_end_cycle
        if bus_end > end:
            end = bus_end
        if self.noc_rows is not None:
            self.noc_rows.extend((start, bus_end, WRITE, operand, index, NO_ADDRESS, words, bus.unit))
        if self.rf_rows is not None:
            self.rf_rows.extend((at, end, FILL if filled else READ, operand, index,
                                 s[DST_ADDR] if filled else s[SRC_ADDR], words, self.m.cores[core].rf_unit))
        return end

    def _across(self, index: int, s: Step, at: int) -> int:
        """A transfer between two cores' buffers over the links between them (module docstring); its end cycle."""
        operand, words, a, b = s[OPERAND], s[WORDS], s[SRC_CORE], s[DST_CORE]
        source, target = self.m.cores[a].name, self.m.cores[b].name
        route = self.m.route(source, target)
        if not route:
            raise HwsimError(f"step {index} moves {words} words from core {source} to core {target}, but no link "
                             "joins them; add one to the config's links")
        read_end = self._side(s[SRC], a, True, s[SRC_ADDR], words, READ, operand, index, at)
        end, arrive = read_end, at
        for link in route:
            start = link.book(False, NO_ADDRESS, words, arrive, self.wb)
            if self.want_link:
                self.rec.row("link", start, link.reserved_end_cycle, WRITE, operand, index, NO_ADDRESS, words,
                             link.unit)
            arrive, end = start + link.cfg.latency_cycles, max(end, link.reserved_end_cycle)
        write_end = self._side(s[DST], b, False, s[DST_ADDR], words, FILL, operand, index, arrive)
        return max(end, write_end)

    def _side(self, level: int, core: int, is_read: bool, address: int, words: int, op: int, operand: int,
              index: int, at: int) -> int:
        """Book one end of a transfer (DRAM, L2, or core `core`'s GLB or line buffer) and record it; its end
        cycle."""
        m, rec, wb = self.m, self.rec, self.wb
        if level == _DRAM:
            dram = m.dram
            if self.dram_per_burst:
                start = dram.book(is_read, address * wb, words * wb, at, wb)
                if words:
                    rec.bursts("dram", dram.booked_bursts(start, address * wb, words * wb, wb), op, operand, index,
                               dram.unit)
                return dram.reserved_end_cycle
            start = dram.book(is_read, address * wb, words * wb, at, wb)
            component: Port = dram
        elif level == _GLB:
            component = self.glbs[core]
            start = component.book(is_read, address, words, at, wb)
        elif level == _LINE_BUFFER:
            component = self.line_buffers[core] or self._on_chip(level, core)  # (which says what is missing)
            address = NO_ADDRESS
            start = component.book(is_read, address, words, at, wb)
        else:
            component = self._on_chip(level, core)
            start = component.book(is_read, address, words, at, wb)
        end = component.reserved_end_cycle
        rows = self.level_rows[level]
        if rows is not None:
            rows.extend((start, end, op, operand, index, address, words, component.unit))
        return end

    def _on_chip(self, level: int, core: int) -> Port:
        """The line buffer of core `core` or the L2 (a GLB end is found in `glbs`)."""
        if level == _LINE_BUFFER:
            return self.m.cores[core].require_line_buffer()
        if level == _L2:
            return self.m.require_l2()
        raise HwsimError(f"level {Level(level).name} has no component in this simulator")

    def compute(self, index: int, s: Step, at: int) -> int:
        """Book the PE array of the step's core for a pass requested at `at`; record its work at level `pe` (and
        what zeros spared: op skip, the MACs and their filter RF reads); its end cycle."""
        active, pe = max(1, s[F.ACTIVE_PES]), self.m.cores[s[DST_CORE]].pe
        start = pe.book(s[F.MACS], s[F.OPS], active, at, s[F.STREAM_LENGTH], s[F.ZERO_MACS])
        end = pe.reserved_end_cycle
        self.passes += 1
        self.compute_cycles += end - start
        if self.want_pe:
            self.rec.pe_pass(start, end, index, pe.unit, pe.spared(s[F.ZERO_MACS]), pe.cfg.zero_gating_psums, s)
        return end

    def claim(self, s: Step, at: int, may_wait: bool) -> simpy.Event | None:
        """An ALLOC at `at`: place it (L2/DRAM with an address), claim its space, log its named buffer; None
        when granted at once, else the event of a claim waiting for space (only if `may_wait`): call
        `claimed` once it fires."""
        level = s[DST]
        if s[SRC_ADDR] >= 0 and level in PLACED_LEVELS:
            self.m.place(level, s[SRC_ADDR], s[WORDS])
        space = self._space(level, s[OPERAND], s[DST_CORE])
        waiting = space.claim(s[WORDS] * self.wb, at, may_wait) if space is not None else None
        if waiting is None:
            self.claimed(s, at)
        return waiting

    def _space(self, level: int, operand: int, core: int) -> Space | None:
        """The buffer space an ALLOC/FREE claims (`Machine.space`), found once per level, operand and core."""
        key = (level, operand, core)
        try:
            return self.spaces[key]
        except KeyError:  # the first time (None is an answer too)
            found = self.spaces[key] = self.m.space(level, operand, core)
            return found

    def claimed(self, s: Step, at: int) -> None:
        """Log an ALLOC granted at `at` in its named buffer."""
        if s[DST] in NAMED_LEVELS:
            self.m.ring_change(s[DST_ADDR], s[WORDS] * self.wb, at)

    def release(self, s: Step, at: int) -> None:
        """A FREE at `at` (never waits)."""
        level = s[DST]
        if s[SRC_ADDR] >= 0 and level in PLACED_LEVELS:
            self.m.unplace(level, s[SRC_ADDR])
        space = self._space(level, s[OPERAND], s[DST_CORE])
        if space is not None:
            space.release(s[WORDS] * self.wb, at)
        if level in NAMED_LEVELS:
            self.m.ring_change(s[DST_ADDR], -s[WORDS] * self.wb, at)


__all__ = ["Step", "StepRunner"]
