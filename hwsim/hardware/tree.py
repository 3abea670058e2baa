"""The accelerator as a tree of units: its cores, the L2 and DRAM they share, and the links between them.

A *unit* is one thing a trace record happens at, named by its place in the tree: `dram`, `l2`, and per core
`CORE.glb`, `CORE.line_buffer`, `CORE.noc.ifmap` (and `.filter`, `.psum`, `.psum_out` when the NoC has a psum
output bus), `CORE.rf`, `CORE.pe`, and per link
and direction `LINK.A>B`. `UnitTable` numbers them: the simulator stamps every record with its unit's number,
and the trace keeps the names. `core_hardware` is one core seen as a single-core accelerator (its own sections
with the shared L2 and DRAM): what a mapper maps a layer onto and what a closed form prices it with.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

from hwsim.errors import ConfigError
from hwsim.hardware.schema import Accelerator
from hwsim.vocab import NOC_BUSES

SHARED_UNITS = ("dram", "l2")
CORE_UNITS = ("glb", "line_buffer", *(f"noc.{bus}" for bus in NOC_BUSES), "rf", "pe")


@functools.lru_cache(maxsize=256)
def core_hardware(hw: Accelerator, core: int) -> Accelerator:
    """Core `core` of `hw` as a one-core accelerator (the shared L2 and DRAM kept); `hw` itself when it has one
    core. Its name is `ACCELERATOR.CORE` for a multi-core accelerator."""
    cores = hw.all_cores
    if not 0 <= core < len(cores):
        raise ConfigError(f"{hw.name}: no core {core}; it has {len(cores)} (0 … {len(cores) - 1})")
    if not hw.cores:
        return hw
    c = cores[core]
    return replace(hw, name=f"{hw.name}.{c.name}", pe_array=c.pe_array, noc=c.noc, glb=c.glb,
                   line_buffer=c.line_buffer, cores=(), links=())


@dataclass(frozen=True)
class UnitTable:
    """The units of an accelerator, numbered: the names a trace keeps and the numbers its records carry."""

    names: tuple[str, ...]
    cores: tuple[str, ...]  # core names, by core index

    @classmethod
    def of(cls, hw: Accelerator) -> UnitTable:
        cores = tuple(c.name for c in hw.all_cores)
        names = ["dram", *(("l2",) if hw.l2 is not None else ())]
        for core, cfg in zip(cores, hw.all_cores):
            names += [f"{core}.{unit}" for unit in CORE_UNITS
                      if unit != "noc.psum_out" or cfg.noc.psum_out_bus_bits]  # a psum output bus of its own
        for link in hw.links:
            a, b = link.between
            names += [f"{link.name}.{a}>{b}", f"{link.name}.{b}>{a}"]
        return cls(tuple(names), cores)

    def id(self, name: str) -> int:
        """The number of unit `name`."""
        try:
            return self._index[name]
        except KeyError:
            raise ConfigError(f"no unit {name!r}; the accelerator has {', '.join(self.names)}") from None

    def core_unit(self, core: int, unit: str) -> int:
        """The number of core `core`'s `unit` (one of CORE_UNITS)."""
        return self.id(f"{self.cores[core]}.{unit}")

    @functools.cached_property
    def _index(self) -> dict[str, int]:
        return {name: k for k, name in enumerate(self.names)}


def unit_core(name: str, cores: tuple[str, ...]) -> int | None:
    """The index of the core unit `name` belongs to (None: a shared unit or a link)."""
    head = name.split(".", 1)[0]
    return cores.index(head) if head in cores and "." in name and ">" not in name else None


__all__ = ["CORE_UNITS", "SHARED_UNITS", "UnitTable", "core_hardware", "unit_core"]
