"""The built-in NoC and link models as the config knows them: a description and the simulator class that
implements each ("module:Class", imported only when a simulation builds one), so that checking a config does not
import the simulator. A model added as a new module under `hwsim/sim/noc` or `hwsim/sim/link` registers itself
there; this module holds the built-in ones."""

from __future__ import annotations

from hwsim.hardware.kinds import LINK_MODELS, NOC_MODELS, ComponentKind

NOC_MODELS.register("buses")(ComponentKind(
    "one ifmap, one filter and one psum multicast bus between the GLB and the PEs (and a psum output bus)",
    "hwsim.sim.noc.buses:Noc"))

LINK_MODELS.register("point_to_point")(ComponentKind(
    "a full-duplex point-to-point link: each direction carries one transfer at a time, width bits per cycle, "
    "after a fixed latency", "hwsim.sim.link.point_to_point:PointToPointLink"))
