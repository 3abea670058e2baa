"""The components of one accelerator in one simpy environment, built from its tree of units by model name.

Per core: its GLB, NoC buses, PE array and optional line buffer; shared: the DRAM and the optional L2; and
each link's two directions. Every component knows the number of its unit (`hwsim.hardware.tree.UnitTable`),
which the executor stamps on its records. Components are built once and never re-configured: a transaction
says the width of its words (the word of the work it belongs to), and an SRAM looks up its rates for that width
from the config rescaled to it (`hwsim.hardware.precision.at_precision`).

Besides the components, the machine keeps what spans them: the named buffers that ALLOC/FREE steps in the
line buffer, the L2 or DRAM carry (a depth-first ring, a phased edge buffer, a planned buffer), logged as
occupancy per id, and the live placed allocations of the L2 and DRAM (an ALLOC with a word address places its
words there; two live allocations that overlap are an impossible mapping).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import simpy

from hwsim.errors import HwsimError
from hwsim.hardware.kinds import LINK_MODELS, NOC_MODELS
from hwsim.hardware.precision import at_precision
from hwsim.hardware.schema import Accelerator
from hwsim.hardware.tree import UnitTable, core_hardware
from hwsim.sim.clock import Clock
from hwsim.sim.component import Component
from hwsim.sim.dram import DramModel, build_dram
from hwsim.sim.line_buffer import LineBuffer
from hwsim.sim.link import LinkDirection, PointToPointLink
from hwsim.sim.noc import Noc
from hwsim.sim.pe_array import PeArray
from hwsim.sim.space import Space
from hwsim.sim.sram import Sram, SramConfig
from hwsim.vocab import LEVEL_NAMES, Level, Operand

NAMED_LEVELS = (int(Level.DRAM), int(Level.L2), int(Level.LINE_BUFFER))  # their ALLOC/FREE steps carry a buffer id
PLACED_LEVELS = (int(Level.DRAM), int(Level.L2))  # their ALLOC steps may place words at an address
CORE_BUFFERS = ("glb.data", "glb.filter", "line_buffer")  # occupancy buffers of each core, in id order


@dataclass
class CoreUnits:
    """One core's components, and the core as a one-core accelerator (what its work was mapped onto)."""

    index: int
    name: str
    hw: Accelerator
    glb: Sram
    noc: Noc
    pe: PeArray
    line_buffer: LineBuffer | None
    rf_unit: int  # the unit number of its register files (no component: RF transfers ride the NoC)

    def require_line_buffer(self) -> LineBuffer:
        if self.line_buffer is None:
            raise HwsimError(f"{self.hw.name}: the schedule uses line buffers but the config has no "
                             "line_buffer section; add one")
        return self.line_buffer

    def spaces(self) -> list[Space | None]:
        """Its occupancy buffers: GLB data, GLB filter, line buffer (None without one)."""
        return [self.glb.spaces["data"], self.glb.spaces["filter"],
                self.line_buffer.space if self.line_buffer else None]


def _at_word(hw: Accelerator, pick: Callable[[Accelerator], SramConfig | None]) -> Callable[[int], SramConfig]:
    """An SRAM's config at words of `wb` bytes: `hw` rescaled by the precision rules, then the SRAM's section."""
    def config(wb: int) -> SramConfig:
        chosen = pick(at_precision(hw, 8 * wb))
        assert chosen is not None, "the rescaled config keeps its sections"
        return chosen
    return config


def _stamp(component: Component, unit: int) -> None:
    component.unit = unit


@dataclass
class Machine:
    """The components of one accelerator in one simpy environment."""

    env: Clock
    hw: Accelerator
    units: UnitTable
    cores: tuple[CoreUnits, ...]
    dram: DramModel
    l2: Sram | None
    links: dict[tuple[str, str], LinkDirection]  # (from unit, to unit) -> that direction of their link
    ring_words: dict[int, int] = field(default_factory=dict)  # named buffer id -> bytes held
    ring_log: list[tuple[int, int, int]] = field(default_factory=list)  # (cycle, id, bytes after a change)
    placed: dict[int, dict[int, int]] = field(default_factory=dict)  # level -> live allocations: address -> words
    _routes: dict[tuple[str, str], tuple[LinkDirection, ...]] = field(default_factory=dict)  # routes found so far

    @classmethod
    def build(cls, hw: Accelerator) -> Machine:
        env, units, wb = Clock(), UnitTable.of(hw), hw.word_bytes
        several = len(hw.all_cores) > 1
        cores = tuple(_build_core(env, hw, k, units, several) for k in range(len(hw.all_cores)))
        dram = build_dram(env, hw.dram, wb, clock_hz=hw.clock_hz)
        _stamp(dram, units.id("dram"))
        l2 = None
        if hw.l2 is not None:
            l2 = Sram(env, hw.l2, wb, "l2", _at_word(hw, lambda h: h.l2))
            _stamp(l2, units.id("l2"))
        links: dict[tuple[str, str], LinkDirection] = {}
        for cfg in hw.links:
            link: PointToPointLink = LINK_MODELS.get(cfg.model).component_class()(env, cfg, wb)
            for ends, direction in link.directions.items():
                _stamp(direction, units.id(direction.name))
                links[ends] = direction
        return cls(env, hw, units, cores, dram, l2, links)

    @property
    def glb(self) -> Sram:
        """The first core's GLB (a single-core accelerator's)."""
        return self.cores[0].glb

    def link(self, source: str, target: str) -> LinkDirection | None:
        """The direction of the link from unit `source` to unit `target` (core names, l2, dram); None: no link."""
        return self.links.get((source, target))

    def route(self, source: str, target: str) -> tuple[LinkDirection, ...]:
        """The link directions a transfer from core `source` to core `target` crosses: the link joining them, else
        the fewest hops through other cores (a mesh), the first found in the config's link order (breadth first:
        deterministic); empty when no path joins them."""
        key = (source, target)
        if key not in self._routes:
            self._routes[key] = _shortest_route(self.links, {c.name for c in self.cores}, source, target)
        return self._routes[key]

    def buffer_names(self) -> tuple[str, ...]:
        """The occupancy buffers of the cores, in id order (a single core's unprefixed: glb.data, ...)."""
        several = len(self.cores) > 1
        return tuple(f"{c.name}.{b}" if several else b for c in self.cores for b in CORE_BUFFERS)

    def buffer_spaces(self) -> list[Space | None]:
        """The spaces of `buffer_names`, in the same order."""
        return [space for c in self.cores for space in c.spaces()]

    def untraced_spaces(self) -> list[Space]:
        """The spaces whose occupancy the trace does not keep (the L2's partitions: its named buffers are traced
        instead; a line buffer's unused filter partition): their logs are only to be emptied."""
        traced = {id(space) for space in self.buffer_spaces() if space is not None}
        srams = [self.l2] if self.l2 is not None else []
        srams += [unit for c in self.cores for unit in (c.glb, c.line_buffer) if unit is not None]
        return [space for sram in srams for space in sram.spaces.values() if id(space) not in traced]

    def ring_change(self, ring: int, nbytes: int, cycle: int) -> None:
        """Log a named buffer's occupancy after an ALLOC (+bytes) or FREE (−bytes) at `cycle`."""
        held = self.ring_words[ring] = self.ring_words.get(ring, 0) + nbytes
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

    def stall_cycles(self, core: int) -> dict[str, int]:
        """Cycles transactions have queued so far, by cause: DRAM channels (incl. read/write turnaround), the
        core's GLB ports and bank conflicts, NoC buses and GLB space (claims waiting for frees), its line buffer,
        the L2 port."""
        c = self.cores[core]
        return {
            "dram": self.dram.stall_cycles(),
            "glb_port": int(c.glb.port_stall_cycles),
            "glb_bank": int(c.glb.bank_conflict_stall_cycles),
            "noc": int(sum(bus.queue_stall_cycles for bus in c.noc.buses.values())),
            "glb_space": int(sum(space.allocate_stall_cycles for space in c.glb.spaces.values())),
            "line_buffer_port": int(c.line_buffer.port_stall_cycles) if c.line_buffer else 0,
            "l2_port": int(self.l2.port_stall_cycles) if self.l2 else 0,
        }

    def require_l2(self) -> Sram:
        if self.l2 is None:
            raise HwsimError(f"{self.hw.name}: the schedule uses an L2 but the config has no l2 section; add one")
        return self.l2

    def space(self, level: int, operand: int, core: int) -> Space | None:
        """The buffer space an ALLOC/FREE step claims: a GLB partition of core `core` (filters in the filter
        partition when the GLB has one), its line buffer, the L2, or none (DRAM is not bounded)."""
        if level == Level.LINE_BUFFER:
            return self.cores[core].require_line_buffer().space
        if level == Level.L2:
            return self.require_l2().spaces["data"]
        if level == Level.DRAM:
            return None
        spaces = self.cores[core].glb.spaces
        filters = spaces["filter"]
        return filters if operand == Operand.FILTER and filters.capacity_bytes else spaces["data"]


def _build_core(env: simpy.Environment, hw: Accelerator, k: int, units: UnitTable, several: bool) -> CoreUnits:
    """Core `k`'s components, named by their level (a single core's) or their unit (several cores')."""
    view, name = core_hardware(hw, k), hw.all_cores[k].name
    wb = hw.word_bytes

    def label(unit: str) -> str:
        return f"{name}.{unit}" if several else unit

    glb = Sram(env, view.glb, wb, label("glb"), _at_word(view, lambda h: h.glb))
    _stamp(glb, units.core_unit(k, "glb"))
    noc: Noc = NOC_MODELS.get(view.noc.model).component_class()(env, view.noc, wb, label("noc"))
    for bus_name, bus in noc.buses.items():
        _stamp(bus, units.core_unit(k, f"noc.{bus_name}"))
    pe = PeArray(env, view.pe_array, label("pe_array"))
    _stamp(pe, units.core_unit(k, "pe"))
    line_buffer = None
    if view.line_buffer is not None:
        line_buffer = LineBuffer(env, view.line_buffer, wb, label("line_buffer"),
                                 _at_word(view, lambda h: h.line_buffer))
        _stamp(line_buffer, units.core_unit(k, "line_buffer"))
    return CoreUnits(k, name, view, glb, noc, pe, line_buffer, units.core_unit(k, "rf"))


def _shortest_route(links: dict[tuple[str, str], LinkDirection], cores: set[str], source: str,
                    target: str) -> tuple[LinkDirection, ...]:
    """The fewest link directions from `source` to `target` passing only through cores (breadth first, links in
    config order); empty when none joins them."""
    came: dict[str, tuple[str, LinkDirection] | None] = {source: None}
    frontier = [source]
    while frontier and target not in came:
        following = []
        for node in frontier:
            for (a, b), direction in links.items():
                if a == node and b not in came and (b in cores or b == target):
                    came[b] = (a, direction)
                    following.append(b)
        frontier = [n for n in following if n in cores]
    if target not in came:
        return ()
    hops: list[LinkDirection] = []
    node = target
    while (step := came[node]) is not None:
        node, direction = step
        hops.append(direction)
    return tuple(reversed(hops))


__all__ = ["CORE_BUFFERS", "NAMED_LEVELS", "PLACED_LEVELS", "CoreUnits", "Machine"]
