"""The `hwsim` commands: each one's module under hwsim.cli and its one-line summary. Kept apart from the
command modules so that `hwsim --help` lists every command without importing any of them (a command's module,
and what it imports — the simulator, ONNX, the analytic models — loads only when that command runs)."""

COMMAND_MODULES = {  # in `hwsim --help` order
    "zoo": "cmd_zoo", "info": "cmd_info", "config": "cmd_config", "map": "cmd_map", "estimate": "cmd_estimate",
    "partition": "cmd_partition", "simulate": "cmd_simulate", "check": "cmd_check", "depthfirst": "cmd_depthfirst",
    "memplan": "cmd_memory", "phases": "cmd_memory", "trace": "cmd_trace", "report": "cmd_report",
    "sweep": "cmd_sweep", "dram": "cmd_dram",
}

COMMAND_HELP = {  # what `hwsim --help` says of each command; its module's parser says the same
    "zoo": 'list the built-in networks, or export one to ONNX',
    "info": 'per-layer shapes, MACs, parameters and activation sizes of a network',
    "config": 'validate or show a hardware configuration',
    "map": ('the loop-nest mapping hwsim runs a network with (the rules, or searched under an objective), '
            'checked; write it to replay or edit'),
    "estimate": 'closed-form energy, access counts and latency bounds per layer',
    "partition": 'NeuPart: the client-energy-optimal cut between client and cloud',
    "simulate": 'simulate a network cycle by cycle, write its HDF5 trace, report from it',
    "check": "a mapping's closed-form counts, energy and latency bound against its simulation",
    "depthfirst": 'Pareto front of depth-first schedules (cuts, tiling, weights) against the layer-by-layer bound',
    "memplan": 'memory of the intermediate tensors under each planner, the bound, phases, and L2/DDR placement',
    "phases": 'phases per layer, the CSDF graph, its minimum buffers and throughput',
    "trace": 'inspect an HDF5 trace: summary, or a filtered query of its records',
    "report": ('one self-contained HTML page about a trace: configuration, layers, energy, bandwidth, '
               'occupancy, cross-check'),
    "sweep": "evaluate a sweep file's points in parallel (resumable); 'sweep pareto' finds the front",
    "dram": "time a DRAM request trace (Ramulator 2 or DRAMsim3 format) on a config's DRAM",
}
