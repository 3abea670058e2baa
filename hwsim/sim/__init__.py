"""The simpy model of the accelerator: one module per hardware component.

Each component is built from `(env, cfg, word_bytes)`; its transactions are
simpy processes that time a whole transfer or pass with a few events and
return the exact per-burst or per-transfer records as one `RECORD_DTYPE` block.
"""

from hwsim.sim.dram import Dram
from hwsim.sim.line_buffer import LineBuffer
from hwsim.sim.noc import Noc
from hwsim.sim.pe_array import PeArray
from hwsim.sim.sram import Sram
from hwsim.sim.timing import NO_ADDRESS, RECORD_DTYPE, Space, Stat

__all__ = ["NO_ADDRESS", "RECORD_DTYPE", "Dram", "LineBuffer", "Noc", "PeArray", "Space", "Sram", "Stat"]
