"""Accelerator descriptions: typed components, units, YAML loading and validation."""

from hwsim.hardware.loader import describe, load_config, resolve_config, shipped_configs, to_dict
from hwsim.hardware.schema import Accelerator

__all__ = ["Accelerator", "describe", "load_config", "resolve_config", "shipped_configs", "to_dict"]
