"""The simpy model of the accelerator: one module (or folder) per hardware component, on a common base.

Every component derives from `hwsim.sim.component.Component` (reservation
state, declared statistics, the process wrapper); those that move words at an
address from `Port` (DRAM, SRAM/L2, line buffer, NoC bus, link direction).
`hwsim.sim.machine.Machine` builds them from the accelerator's tree of units
(each core's, the shared L2 and DRAM, the links). Implementations and their
policies are chosen by name from the config through the registries of
`hwsim.hardware.kinds`: `dram.model`, `dram.address_map`, `dram.scheduler`,
`dram.row_buffer.policy`, `dram.page_policy`, `noc.model`, a link's `model`,
the SRAMs' `scheduler`. A transaction names the width of its words and
books its resources when it is requested (`book`, `reserve_read`,
`reserve_write`, `reserve`): first come, first served under `fcfs`, with the
exact per-burst or per-transfer records returned at once as one
`RECORD_DTYPE` block and no simpy event; `reserved_end_cycle` is when it ends.
The process methods (`read`, `write`, `transfer`, `compute`) reserve when they
start and wait with one timeout. Buffer space (`Space`) is claimed and
released at a cycle; a claim that does not fit waits for releases.
"""

from typing import TYPE_CHECKING

from hwsim import lazy
from hwsim.vocab import NO_ADDRESS

_HOMES = {  # the module of each public name: imported when the name is first used, so that looking up a policy
    # (`hwsim.sim.policy`, `hwsim.sim.dram.policies`) while a config is checked does not load simpy and every model
    "component": ("Component", "Port", "Stat"),
    "dram": ("Dram", "DramModel", "JedecDram", "SimpleDram", "build_dram"),
    "line_buffer": ("LineBuffer",),
    "noc": ("Bus", "Noc"),
    "pe_array": ("PeArray",),
    "space": ("Space",),
    "sram": ("Sram",),
    "timing": ("RECORD_DTYPE",),
}
__getattr__ = lazy.exports(__name__, _HOMES)

if TYPE_CHECKING:
    from hwsim.sim.component import Component, Port, Stat
    from hwsim.sim.dram import Dram, DramModel, JedecDram, SimpleDram, build_dram
    from hwsim.sim.line_buffer import LineBuffer
    from hwsim.sim.noc import Bus, Noc
    from hwsim.sim.pe_array import PeArray
    from hwsim.sim.space import Space
    from hwsim.sim.sram import Sram
    from hwsim.sim.timing import RECORD_DTYPE

__all__ = ["NO_ADDRESS", "RECORD_DTYPE", "Bus", "Component", "Dram", "DramModel", "JedecDram", "LineBuffer", "Noc",
           "PeArray", "Port", "SimpleDram", "Space", "Sram", "Stat", "build_dram"]
