"""On-chip networks between a core's GLB and its PEs, chosen by `noc.model` (`hwsim.hardware.kinds.NOC_MODELS`):
one module each in this folder, registering its kind (`buses`: one ifmap, one filter and one psum multicast
bus). Every module here is imported when a config names a NoC model, so a new model is one new file."""

from hwsim.sim.noc.buses import BUSES, Bus, Noc

__all__ = ["BUSES", "Bus", "Noc"]
