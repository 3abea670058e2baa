"""The names a user picks a mapper and a search objective by: plain constants with no imports, so the command
line can offer them without loading the search (hwsim.search.cost registers one objective per name)."""

from __future__ import annotations

MAPPERS = ("rules", "search")  # the dataflow's rule mapping, or the best mapping a search finds
OBJECTIVE_NAMES = ("energy", "latency", "edp", "dram")  # what a search minimises per layer
# how a multi-core run's layers are given to its cores: a fixed rule (`hwsim.mapping.multicore`) or a search
ALLOCATIONS = ("round_robin", "stages", "split", "split_rows", "fused", "search")
ALLOCATION_OBJECTIVES = ("latency", "energy", "edp")  # what an allocation search minimises over the whole run

__all__ = ["ALLOCATIONS", "ALLOCATION_OBJECTIVES", "MAPPERS", "OBJECTIVE_NAMES"]
