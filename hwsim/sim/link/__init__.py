"""Links between units, chosen by `links[].model` (`hwsim.hardware.kinds.LINK_MODELS`): one module each in this
folder, registering its kind (`point_to_point`). Every module here is imported when a config names a link model,
so a new model is one new file."""

from hwsim.sim.link.point_to_point import LinkDirection, PointToPointLink

__all__ = ["LinkDirection", "PointToPointLink"]
