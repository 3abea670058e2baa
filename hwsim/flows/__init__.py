"""hwsim's flows: what the `hwsim` commands compute, as typed functions for the sweep runner, notebooks
and scripts. Each takes plain arguments (a network name, .onnx path or `Graph`; a config name, YAML path
or `Accelerator`; a batch, ...) and returns a frozen dataclass; none prints.

    from hwsim.flows import estimate_mapping, simulate_network, check_simulation
    est = estimate_mapping("alexnet", "eyeriss-v1")
    sim = simulate_network("alexnet", "eyeriss-v1", trace_path="traces/alexnet.h5")
    report = check_simulation(sim)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hwsim import lazy

_HOMES = {  # the flow module of each public name: imported when the name is first used
    "check": ("TraceCheck", "check_network", "check_run", "check_simulation", "check_trace"),
    "depth_first": ("DepthFirstGains", "DepthFirstStudy", "FrontPoint", "PointCheck", "check_depth_first",
        "check_front_points", "depth_first_front", "pick_points"),
    "estimate": ("CnnergyEstimate", "EstimateSettings", "GlbSizePoint", "GlbSizeSweep", "LayerTable",
        "MappingEstimate", "estimate_cnnergy", "estimate_mapping", "estimate_run", "glb_sizes", "sweep_glb_size"),
    "inputs": ("as_graph", "as_hardware", "choose_sparsity"),
    "mapping": ("MappedNetwork", "map_network"),
    "memplan": ("MemoryStudy", "StrategyMemory", "study_memory"),
    "partition": ("Partition", "partition_network"),
    "phases": ("BufferSimulation", "PhasedResult", "PhasesStudy", "phases_sdf3_xml", "study_phases"),
    "run": ("RunSpec", "resolve_run"),
    "simulate": ("Simulation", "simulate_network", "simulate_run"),
    "totals": ("RunTotals",),
    "trace_stats": ("TraceQuery", "TraceSummary", "query_trace", "summarize_trace"),
}
__getattr__ = lazy.exports(__name__, _HOMES)

if TYPE_CHECKING:
    from hwsim.flows.check import TraceCheck, check_network, check_run, check_simulation, check_trace
    from hwsim.flows.depth_first import (
        DepthFirstGains,
        DepthFirstStudy,
        FrontPoint,
        PointCheck,
        check_depth_first,
        check_front_points,
        depth_first_front,
        pick_points,
    )
    from hwsim.flows.estimate import (
        CnnergyEstimate,
        EstimateSettings,
        GlbSizePoint,
        GlbSizeSweep,
        LayerTable,
        MappingEstimate,
        estimate_cnnergy,
        estimate_mapping,
        estimate_run,
        glb_sizes,
        sweep_glb_size,
    )
    from hwsim.flows.inputs import as_graph, as_hardware, choose_sparsity
    from hwsim.flows.mapping import MappedNetwork, map_network
    from hwsim.flows.memplan import MemoryStudy, StrategyMemory, study_memory
    from hwsim.flows.partition import Partition, partition_network
    from hwsim.flows.phases import (
        BufferSimulation,
        PhasedResult,
        PhasesStudy,
        phases_sdf3_xml,
        study_phases,
    )
    from hwsim.flows.run import RunSpec, resolve_run
    from hwsim.flows.simulate import Simulation, simulate_network, simulate_run
    from hwsim.flows.totals import RunTotals
    from hwsim.flows.trace_stats import (
        TraceQuery,
        TraceSummary,
        query_trace,
        summarize_trace,
    )


__all__ = [
    "BufferSimulation",
    "CnnergyEstimate",
    "DepthFirstGains",
    "DepthFirstStudy",
    "EstimateSettings",
    "FrontPoint",
    "GlbSizePoint",
    "GlbSizeSweep",
    "LayerTable",
    "MappedNetwork",
    "MappingEstimate",
    "MemoryStudy",
    "Partition",
    "PhasedResult",
    "PhasesStudy",
    "PointCheck",
    "RunSpec",
    "RunTotals",
    "Simulation",
    "StrategyMemory",
    "TraceCheck",
    "TraceQuery",
    "TraceSummary",
    "as_graph",
    "as_hardware",
    "check_depth_first",
    "check_front_points",
    "check_network",
    "check_run",
    "check_simulation",
    "check_trace",
    "choose_sparsity",
    "depth_first_front",
    "estimate_cnnergy",
    "estimate_mapping",
    "estimate_run",
    "glb_sizes",
    "map_network",
    "partition_network",
    "phases_sdf3_xml",
    "pick_points",
    "query_trace",
    "resolve_run",
    "simulate_network",
    "simulate_run",
    "study_memory",
    "study_phases",
    "summarize_trace",
    "sweep_glb_size",
]
