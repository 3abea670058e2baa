"""The simpy model of the accelerator: one module per hardware component.

Each component is built from `(env, cfg, word_bytes)`. Its resources keep the
cycle they are next free, and a transaction reserves them when it is
requested (`reserve_read`, `reserve_write`, `reserve`): first come, first
served, with the exact per-burst or per-transfer records returned at once as
one `RECORD_DTYPE` block and no simpy event; the component's
`reserved_end_cycle` is when it ends. A caller moving data through several
components reserves on each and waits once for the latest end. The process
methods (`read`, `write`, `transfer`, `compute`) reserve when they start and
wait with one timeout. Buffer space (`Space`) is a simpy Container:
allocating blocks while the buffer is full.
"""

from hwsim.sim.dram import Dram
from hwsim.sim.line_buffer import LineBuffer
from hwsim.sim.noc import Noc
from hwsim.sim.pe_array import PeArray
from hwsim.sim.sram import Sram
from hwsim.sim.timing import NO_ADDRESS, RECORD_DTYPE, Space, Stat

__all__ = ["NO_ADDRESS", "RECORD_DTYPE", "Dram", "LineBuffer", "Noc", "PeArray", "Space", "Sram", "Stat"]
