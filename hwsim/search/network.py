"""A whole network searched layer by layer: layers of one shape searched once, results cached on disk, the
unique shapes spread over `jobs` processes; every other layer keeps its default (streamed) mapping.

`--budget SECONDS` sets the effort, not a clock: the screened samples per unique
shape follow from the budget at a fixed rate (`SAMPLES_PER_SECOND`, measured on
a 2-core machine), so the same budget and seed give the same mapping on any
machine, the time taken only roughly following the budget.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from hwsim.errors import HwsimError
from hwsim.hardware.energy import energy_table
from hwsim.hardware.precision import layer_hardware
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.dataflows import dataflow_of
from hwsim.mapping.mapper import NO_STEPS, check_mapping, layer_mapping
from hwsim.mapping.nest.format import LayerMapping, LoopNest, NetworkMapping
from hwsim.mapping.nest.problem import has_nest, lowering_for, nest_problem
from hwsim.search.cache import SearchCache, cache_key, default_cache_dir
from hwsim.search.cost import LayerCost, exact_cost, rank
from hwsim.search.layer import Effort, LayerSearch, search_layer, shape_signature
from hwsim.sparsity.profile import DENSE, DENSE_LAYER, LayerZeros, SparsityProfile
from hwsim.workload.ir import Graph, Layer

SAMPLES_PER_SECOND = 1000  # samples per second of budget and unique shape (each screens 1.5 candidates: 1500/s)
MIN_SAMPLES, MAX_SAMPLES = 200, 20000
DEFAULT_EFFORT = Effort()
Progress = Callable[[int, int, str], None]  # (shapes done, shapes in all, last layer done)


@dataclass(frozen=True)
class SearchSettings:
    """How `hwsim map` (and `--mapper search`) searches: objective, effort, seed, processes, cache folder."""

    objective: str = "energy"
    effort: Effort = DEFAULT_EFFORT
    seed: int = 0
    jobs: int = 1
    cache_dir: Path | None = None  # None: default_cache_dir(); see use_cache
    use_cache: bool = True
    budget_s: float | None = None  # when given, sets the effort's samples (effort_for_budget)
    sparsity: SparsityProfile | None = None  # the layers' zeros the exact ranking prices (None: dense)


def effort_for_budget(budget_s: float, shapes: int, base: Effort = DEFAULT_EFFORT) -> Effort:
    """The effort a budget buys for `shapes` unique layer shapes (module docstring)."""
    samples = int(budget_s * SAMPLES_PER_SECOND / max(1, shapes))
    return dataclasses.replace(base, samples=max(MIN_SAMPLES, min(MAX_SAMPLES, samples)))


@dataclass(frozen=True)
class LayerChoice:
    """One weighted layer's searched nest beside the rule mapping."""

    layer: str
    nest: LoopNest
    cost: LayerCost
    rule_cost: LayerCost | None  # None: the rules cannot map it on this hardware
    source: str  # "searched", "cache" or "same shape as <layer>"


@dataclass(frozen=True)
class SearchedMapping:
    """A network's searched mapping and, per weighted layer, what the search chose."""

    mapping: NetworkMapping
    objective: str
    choices: tuple[LayerChoice, ...]
    seconds: float
    shapes: int  # unique layer shapes
    searched: int  # of them searched now (the others came from the cache)


def weighted_layers(graph: Graph) -> list[Layer]:
    return [l for l in graph if has_nest(l)]


def unique_shapes(graph: Graph, hw: Accelerator, batch: int) -> int:
    """How many weighted layers of distinct shape `graph` has (each is searched once)."""
    return len({_signature(l, hw, batch) for l in weighted_layers(graph)})


def _signature(layer: Layer, hw: Accelerator, batch: int, zeros: LayerZeros = DENSE_LAYER) -> tuple[object, ...]:
    """What a layer's search depends on: its shape and lowering, the word it runs at where that is not `hw`'s
    (mixed precision), and its zeros where they are not dense."""
    lowering = lowering_for(layer, dataflow_of(hw).lowering)
    signature = shape_signature(nest_problem(layer, batch, lowering), lowering)
    word = layer_hardware(hw, layer.word_bits).precision_bits
    if word != hw.precision_bits:
        signature = (*signature, ("word_bits", word))
    return signature if zeros == DENSE_LAYER else (*signature, zeros)


Job = tuple[Layer, Accelerator, int, str, Effort, int, LayerZeros]


def _search_one(args: Job) -> LayerSearch:
    layer, hw, batch, objective, effort, seed, zeros = args
    return search_layer(layer, hw, batch, objective, energy_table(hw), effort, seed, zeros)


def _rule_cost(layer: Layer, hw: Accelerator, batch: int, zeros: LayerZeros = DENSE_LAYER) -> LayerCost | None:
    try:
        rule = layer_mapping(layer, hw, batch)
    except HwsimError:  # the rules cannot map it: the table shows none
        return None
    assert isinstance(rule, LoopNest)
    return exact_cost(layer, rule, batch, hw, energy_table(hw), zeros)


def search_network(graph: Graph, hw: Accelerator, batch: int = 1, settings: SearchSettings = SearchSettings(),
                   progress: Progress | None = None) -> SearchedMapping:
    """The best mapping found per layer of `graph` under `settings.objective` (module docstring)."""
    start = time.perf_counter()
    cache = SearchCache((settings.cache_dir or default_cache_dir()) if settings.use_cache else None)
    profile = settings.sparsity or DENSE
    firsts: dict[tuple[object, ...], Layer] = {}
    for l in weighted_layers(graph):
        firsts.setdefault(_signature(l, hw, batch, profile.zeros(l.name)), l)
    effort = settings.effort if settings.budget_s is None else effort_for_budget(settings.budget_s, len(firsts),
                                                                                     settings.effort)
    keys = {sig: cache_key(sig, hw, settings.objective, effort, settings.seed) for sig in firsts}
    found: dict[tuple[object, ...], tuple[LoopNest, LayerCost, LayerCost | None, str]] = {}
    todo = []
    for sig, l in firsts.items():
        hit = cache.get(keys[sig], l.name)
        if hit is not None:
            found[sig] = (*hit, _rule_cost(l, layer_hardware(hw, l.word_bits), batch, profile.zeros(l.name)), "cache")
        else:
            todo.append(sig)
    jobs = [(firsts[sig], layer_hardware(hw, firsts[sig].word_bits), batch, settings.objective, effort, settings.seed,
             profile.zeros(firsts[sig].name)) for sig in todo]
    done = len(found)
    for sig, result in zip(todo, _run(jobs, settings.jobs)):
        cache.put(keys[sig], result.nest, result.cost)
        found[sig] = (result.nest, result.cost, result.rule_cost, "searched")
        done += 1
        if progress is not None:
            progress(done, len(firsts), firsts[sig].name)
    mapping, choices = _assemble(graph, hw, batch, firsts, found, profile)
    check_mapping(mapping, graph, hw)
    return SearchedMapping(mapping, settings.objective, choices, time.perf_counter() - start, len(firsts), len(todo))


def _run(jobs: list[Job], processes: int) -> Iterator[LayerSearch]:
    """Each job's search, in order, as it finishes."""
    if processes <= 1 or len(jobs) <= 1:
        yield from (_search_one(j) for j in jobs)
        return
    with ProcessPoolExecutor(max_workers=min(processes, len(jobs))) as pool:
        yield from pool.map(_search_one, jobs)


def _assemble(graph: Graph, hw: Accelerator, batch: int, firsts: dict[tuple[object, ...], Layer],
              found: dict[tuple[object, ...], tuple[LoopNest, LayerCost, LayerCost | None, str]],
              profile: SparsityProfile) -> tuple[NetworkMapping, tuple[LayerChoice, ...]]:
    entries: list[LayerMapping] = []
    choices = []
    for l in graph:
        if l.kind in NO_STEPS:
            continue
        if not has_nest(l):
            entries.append(layer_mapping(l, layer_hardware(hw, l.word_bits), batch))
            continue
        sig = _signature(l, hw, batch, profile.zeros(l.name))
        nest, cost, rule_cost, source = found[sig]
        first = firsts[sig]
        if first is not l:
            source = f"same shape as {first.name}"
        nest = dataclasses.replace(nest, layer=l.name)
        entries.append(nest)
        choices.append(LayerChoice(l.name, nest, cost, rule_cost, source))
    return NetworkMapping(graph.name, hw.name, hw.pe_array.dataflow, batch, tuple(entries)), tuple(choices)


def never_worse(choice: LayerChoice, objective: str) -> bool:
    """Whether the searched nest is at least as good as the rule mapping under `objective`."""
    return choice.rule_cost is None or rank(objective, choice.cost)[0] <= rank(objective, choice.rule_cost)[0]


__all__ = ["LayerChoice", "SearchSettings", "SearchedMapping", "effort_for_budget", "never_worse", "search_network",
           "unique_shapes", "weighted_layers"]
