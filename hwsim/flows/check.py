"""`hwsim check`'s comparison: the closed-form counts of the simulated mapping against the counts summed from
the simulation's trace.

What it proves, per layer: the words read, filled and updated at every level for every operand, and
the PE array's work (MACs, ops, the MACs' RF accesses, PE-to-PE hops), are equal in two computations
(the closed form reads the mapping as data; the trace is what the simulator did with the steps the
mapping's generator emitted). Energy prices both sides' counts with the same table, so its equality
is a consistency line, not separate evidence. Latency is checked only as a lower bound: the simulated
cycles must be at or above the analytic bound.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

import hwsim.trace
from hwsim.analytic.estimate import NetworkEstimate, estimate_network
from hwsim.analytic.multicore import AllocationEstimate
from hwsim.analytic.nest_addresses import AddressSums, dram_transfer_sums
from hwsim.analytic.pipeline import pipeline_latency
from hwsim.check import CheckReport, compare
from hwsim.check.compare import Addresses, PipelineCheck, SearchRow
from hwsim.check.depth_first import DepthFirstCheck
from hwsim.check.validate import validate_trace
from hwsim.errors import HwsimError
from hwsim.flows.allocation import closed_allocation
from hwsim.flows.depth_first import check_point
from hwsim.flows.inputs import HardwareLike, MappingLike, NetworkLike, SparsityLike
from hwsim.flows.run import RunSpec, resolve_run
from hwsim.flows.simulate import ALL_LEVELS, Progress, Simulation, simulate_run
from hwsim.hardware.precision import layer_hardware
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.nest.format import LoopNest, NetworkMapping, mapping_from_data
from hwsim.mapping.plans import AllocationPlan, DepthFirstPlan
from hwsim.metrics import TraceMetrics
from hwsim.metrics.addresses import dram_transfer_offsets
from hwsim.search.network import SearchedMapping
from hwsim.sparsity.profile import profile_from_record
from hwsim.trace import Trace
from hwsim.vocab import Level
from hwsim.workload import zoo
from hwsim.workload.ir import Graph

PASS, FAIL, NOT_AVAILABLE = "PASS", "FAIL", "not available"


def closed_form_addresses(graph: Graph, hw: Accelerator, mapping: NetworkMapping) -> dict[str, AddressSums]:
    """Per nest-mapped layer, its DRAM transfers and their start offsets from the mapping as data."""
    out = {}
    for entry in mapping.layers:
        if isinstance(entry, LoopNest):
            layer = graph.layer(entry.layer)
            out[entry.layer] = dram_transfer_sums(layer, entry, mapping.batch, layer_hardware(hw, layer.word_bits))
    return out


def search_rows(search: SearchedMapping, estimate: NetworkEstimate, mapping: NetworkMapping,
                hw: Accelerator) -> tuple[SearchRow, ...]:
    """Per searched layer, the costs the search stated for its choice beside the closed form's of that mapping:
    energy and DRAM words with the layer's zeros, the latency bound, the double-buffered latency."""
    by_name = {e.layer.name: e for e in estimate.layers}
    rows = []
    for choice in search.choices:
        e, nest = by_name[choice.layer], mapping.layer(choice.layer)
        assert isinstance(nest, LoopNest)
        latency = pipeline_latency(e.layer, nest, mapping.batch, layer_hardware(hw, e.layer.word_bits), e.counts)
        closed = {"energy_pj": e.total_pj, "latency_cycles": latency.estimate_cycles,
                  "bound_cycles": e.latency.bound_cycles, "dram_words": int(e.counts.transfers[Level.DRAM].sum())}
        rows += [SearchRow(choice.layer, figure, float(value), float(closed[figure]))
                 for figure, value in choice.cost.as_data().items()]
    return tuple(rows)


def check_simulation(sim: Simulation, search: SearchedMapping | None = None) -> CheckReport:
    """Every layer of the analytic estimate of the simulated network against the simulation's trace (its DRAM
    transfers' start offsets too), the trace's physics (the validator's rules), and, for a searched mapping, the
    costs the search stated against the closed form's."""
    if sim.trace is None:
        raise HwsimError(f"{sim.graph.name} on {sim.hardware.name}: simulated without a trace; checking reads "
                         "the trace, simulate with one kept")
    if sim.levels != ALL_LEVELS:
        raise HwsimError(f"{sim.trace}: records only {', '.join(sorted(sim.levels))}; checking needs every "
                         "level, simulate with the default levels")
    estimate = estimate_network(sim.graph, sim.hardware, sim.mapping, sim.sparsity)
    with hwsim.trace.open(sim.trace) as trace:
        addresses = Addresses(closed_form_addresses(sim.graph, sim.hardware, sim.mapping),
                              dram_transfer_offsets(trace))
        report = compare(estimate, sim.metrics, measured=sim.sparsity.tensors is not None, addresses=addresses)
        searched = search_rows(search, estimate, sim.mapping, sim.hardware) if search is not None else ()
        return dataclasses.replace(report, validation=validate_trace(trace), search=searched)


def check_run(spec: RunSpec, trace_path: str | Path | None = None,
              progress: Progress | None = None) -> CheckReport | DepthFirstCheck:
    """Simulate `spec` (the trace kept at `trace_path`, else in a temporary file) and check it against the closed
    form of its plan: a loop nest's counts (`check_simulation`), a depth-first point's line buffers and DRAM bytes
    (`hwsim.flows.depth_first.check_point`); and the trace's physics."""
    if isinstance(spec.plan, DepthFirstPlan):
        if trace_path is not None:
            return check_point(spec.graph, spec.hardware, spec.plan, trace_path, progress=progress)
        with tempfile.TemporaryDirectory(prefix="hwsim-check-") as tmp:
            return check_point(spec.graph, spec.hardware, spec.plan, Path(tmp) / "check.h5", progress=progress)
    if isinstance(spec.plan, AllocationPlan):
        if trace_path is not None:
            return check_allocated(simulate_run(spec, trace_path, progress=progress))
        with tempfile.TemporaryDirectory(prefix="hwsim-check-") as tmp:
            return _unkept(check_allocated(simulate_run(spec, Path(tmp) / "check.h5", progress=progress)))
    if not isinstance(spec.plan, NetworkMapping):
        raise HwsimError(f"{spec.graph.name}: a {spec.mapper.name} plan is checked by `hwsim phases --simulate` or "
                         "`hwsim memplan --simulate`, which compare its buffers with the trace")
    if trace_path is not None:
        return check_simulation(simulate_run(spec, trace_path, progress=progress), spec.search)
    with tempfile.TemporaryDirectory(prefix="hwsim-check-") as tmp:
        return _unkept(check_simulation(simulate_run(spec, Path(tmp) / "check.h5", progress=progress), spec.search))


def _unkept(report: CheckReport) -> CheckReport:
    """`report` saying its trace was a temporary one."""
    if report.validation is None:
        return report
    unkept = dataclasses.replace(report.validation, path="the check's trace (not kept: pass --trace FILE to keep it)")
    return dataclasses.replace(report, validation=unkept)


def check_allocated(sim: Simulation) -> CheckReport:
    """A multi-core allocation's simulation against its closed form: every work's counts, energy, latency bound and
    DRAM offsets on its core, the run's latency against the pipeline bound, the links' words against their closed
    count, and the trace's physics."""
    assert isinstance(sim.spec.plan, AllocationPlan) and sim.trace is not None
    closed = closed_allocation(sim.graph, sim.hardware, sim.spec.plan)
    with hwsim.trace.open(sim.trace) as trace:
        addresses = Addresses(closed.addresses, dram_transfer_offsets(trace))
        report = compare(closed.estimate, sim.metrics, addresses=addresses)
        links = sum(int(block["words"].sum()) for block in trace.records("link")) if "link" in trace.levels else 0
        checked, missing = _data_edges(closed, trace)
        pipeline = PipelineCheck(closed.bound.cycles, sim.result.cycles, closed.bound.bottleneck, closed.link_words,
                                 links, checked, missing)
        return dataclasses.replace(report, validation=validate_trace(trace), pipeline=pipeline)


def _data_edges(closed: AllocationEstimate, trace: Trace) -> tuple[int, tuple[str, ...]]:
    """The data edges of the closed form (`PipelineBound.reads_from`) and those of them the trace's declared graph
    (`layer_after_json`, which the validator holds the run to) does not have, as "reader <- producer"."""
    names = [e.layer.name for e in closed.estimate.layers]
    declared = json.loads(str(trace.attrs.get("layer_after_json", "null"))) or []
    index = {name: k for k, name in enumerate(trace.layers)}
    waits = {trace.layers[k]: {trace.layers[j] for j in after} for k, after in enumerate(declared)}
    edges = [(names[k], names[j]) for k, sources in enumerate(closed.bound.reads_from) for j in sources]
    missing = tuple(f"{reader} <- {source}" for reader, source in edges
                    if reader not in index or source not in waits.get(reader, set()))
    return len(edges), missing


def check_network(network: NetworkLike, hw: HardwareLike, batch: int = 1, trace_path: str | Path | None = None,
                  progress: Progress | None = None, mapping: MappingLike = None,
                  sparsity: SparsityLike = None, bits: int | None = None) -> CheckReport:
    """Simulate `mapping` (default: hwsim's for `batch` images) with the zeros of `sparsity` and `bits`-bit words
    (default: the graph's, else the config's; trace kept at `trace_path`, else in a temporary file) and check it."""
    report = check_run(resolve_run(network, hw, batch, mapping, sparsity, bits), trace_path, progress)
    if not isinstance(report, CheckReport):
        raise HwsimError("check_network checks loop-nest mappings; check a depth-first plan with check_run")
    return report


@dataclass(frozen=True)
class TraceCheck:
    """The analytic model against an existing trace: PASS, FAIL or not available, and one line why."""

    status: str
    detail: str


def check_trace(trace: Trace, metrics: TraceMetrics) -> TraceCheck:
    """Check a trace of a zoo network at its default input, simulated from a loop-nest mapping (stored in the
    trace), against the mapping's closed form; other traces are not available (their network or input cannot
    be rebuilt from the trace)."""
    mapping_json = trace.attrs.get("mapping_json")
    network = str(trace.attrs.get("network", ""))
    try:
        graph = zoo.build(network, None)
    except HwsimError:
        return TraceCheck(NOT_AVAILABLE, f"network {network!r} is not in the zoo (an ONNX file?); run hwsim "
                                         "check on it")
    batch = int(trace.attrs.get("batch", 1))
    if graph.total_macs * batch != sum(l.compute.macs for l in metrics.layers):
        return TraceCheck(NOT_AVAILABLE, f"the trace's MACs differ from {network} at its default input: it was "
                                         "simulated at another size; run hwsim check with that --input")
    if mapping_json is None:
        return TraceCheck(NOT_AVAILABLE, f"no analytic cross-check for {trace.attrs.get('mapper')} traces here; use "
                                         "hwsim check --depthfirst")
    mapping = mapping_from_data(json.loads(str(mapping_json)), f"{trace.path}: mapping_json")
    sparsity = profile_from_record(json.loads(str(trace.attrs.get("sparsity_json", "null"))))
    addresses = Addresses(closed_form_addresses(graph, metrics.hardware, mapping), dram_transfer_offsets(trace))
    report = compare(estimate_network(graph, metrics.hardware, mapping, sparsity), metrics,
                     measured=sparsity is not None and sparsity.kind == "measured", addresses=addresses)
    if report.ok:
        return TraceCheck(PASS, f"{len(report.layers)} layers: every count equal, energy equal, latency at or "
                                "above the bound")
    bad = report.mismatches
    detail = (f"{len(bad)} counts differ, e.g. {bad[0].layer} {bad[0].level} {bad[0].operand} {bad[0].access}: "
              f"{bad[0].analytic} vs {bad[0].simulated}" if bad else "counts equal, but energy or latency differ")
    return TraceCheck(FAIL, detail)


__all__ = ["FAIL", "NOT_AVAILABLE", "PASS", "TraceCheck", "check_network", "check_run", "check_simulation",
           "check_trace"]
