"""The mapper that searches: never worse than the rule mapping under its objective, deterministic for a seed,
cached, reachable from the CLI and sweep files, and right where the optimum is known by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import assert_one_line_error

from hwsim.errors import SweepError
from hwsim.hardware import load_config
from hwsim.hardware.energy import energy_table
from hwsim.mapping.nest.format import nest_data
from hwsim.search.cost import rank
from hwsim.search.layer import Effort, search_layer
from hwsim.search.network import SearchSettings, never_worse, search_network
from hwsim.sweep.run import evaluate
from hwsim.sweep.spec import parse_sweep
from hwsim.workload import GraphBuilder, zoo

QUICK = Effort(samples=200, exact=6, rounds=2, starts=1)  # enough to beat the rules on these layers, quickly
OBJECTIVES = ("energy", "latency", "edp", "dram")


@pytest.mark.parametrize("config, network, layers", [
    ("eyeriss-v1", "alexnet", ("conv1", "conv3", "fc7")),
    ("scalesim-12x14-ws", "resnet18", ("conv1", "layer2.0.conv1")),
    ("diannao-nlr", "alexnet", ("conv2", "fc8")),
])
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_searched_is_never_worse_than_the_rules(config: str, network: str, layers: tuple[str, ...],
                                               objective: str) -> None:
    hw = load_config(config)
    graph = zoo.build(network)
    for name in layers:
        found = search_layer(graph.layer(name), hw, 2, objective, energy_table(hw), QUICK)
        assert found.rule_cost is not None
        assert rank(objective, found.cost)[0] <= rank(objective, found.rule_cost)[0], name


def test_the_same_seed_gives_the_same_mapping() -> None:
    hw = load_config("eyeriss-v1")
    layer = zoo.build("alexnet").layer("conv2")
    first = search_layer(layer, hw, 4, "energy", energy_table(hw), QUICK, seed=7)
    again = search_layer(layer, hw, 4, "energy", energy_table(hw), QUICK, seed=7)
    assert nest_data(first.nest) == nest_data(again.nest)
    assert first.cost == again.cost


def _small_net() -> object:
    b = GraphBuilder("small")
    x = b.input("x", 4, 8, 8)
    y = b.conv("c1", x, 8, 3, padding=1)
    z = b.conv("c2", y, 8, 3, padding=1)  # a second layer of another shape (C = 8)
    w = b.conv("c3", z, 8, 3, padding=1)  # the same shape as c2: searched once
    b.output("o", w)
    return b.build()


def test_a_layer_that_fits_on_chip_moves_each_dram_word_once(tmp_path: Path) -> None:
    # c1: ifmap 4x8x8 = 256 words, filters 8x4x3x3 = 288, ofmap 8x8x8 = 512; eyeriss-v1 holds them all (100 KB of
    # ifmaps and psums, 8 KB of filters), so the fewest DRAM words are each read or written once: 1056.
    hw = load_config("eyeriss-v1")
    found = search_network(_small_net(), hw, 1, SearchSettings(objective="dram", effort=QUICK,  # type: ignore[arg-type]
                                                               cache_dir=tmp_path))
    c1 = next(c for c in found.choices if c.layer == "c1")
    assert c1.cost.dram_words == 256 + 288 + 512


def test_layers_of_one_shape_are_searched_once_and_cached(tmp_path: Path) -> None:
    hw = load_config("eyeriss-v1")
    settings = SearchSettings(objective="energy", effort=QUICK, cache_dir=tmp_path)
    first = search_network(_small_net(), hw, 1, settings)  # type: ignore[arg-type]
    assert (first.shapes, first.searched) == (2, 2)
    assert next(c for c in first.choices if c.layer == "c3").source == "same shape as c2"
    assert len(list((tmp_path / "mappings").rglob("*.json"))) == 2
    again = search_network(_small_net(), hw, 1, settings)  # type: ignore[arg-type]
    assert again.searched == 0 and {c.source for c in again.choices} <= {"cache", "same shape as c2"}
    assert [nest_data(c.nest) for c in again.choices] == [nest_data(c.nest) for c in first.choices]
    assert all(never_worse(c, "energy") for c in again.choices)


def test_a_change_to_the_cost_model_is_a_new_cache_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key hashes the search's code: a copy of the package with one byte of the cost model changed hashes
    otherwise (the CLI's code does not count), and a warm cache is not read under another code hash."""
    import shutil

    import hwsim.search.cache as cache

    root = tmp_path / "pkg"
    shutil.copytree(cache.PACKAGE_ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    before = cache.code_hash(root)
    (root / "cli" / "main.py").write_text((root / "cli" / "main.py").read_text() + "\n# a comment\n")
    assert cache.code_hash.__wrapped__(root) == before
    cost = root / "search" / "cost.py"
    cost.write_text(cost.read_text().replace("def ", "def  ", 1))
    assert cache.code_hash.__wrapped__(root) != before
    hw = load_config("eyeriss-v1")
    settings = SearchSettings(objective="energy", effort=QUICK, cache_dir=tmp_path / "cache")
    assert search_network(_small_net(), hw, 1, settings).searched == 2  # type: ignore[arg-type]
    assert search_network(_small_net(), hw, 1, settings).searched == 0  # type: ignore[arg-type]
    monkeypatch.setattr(cache, "code_hash", lambda: "another cost model")
    assert search_network(_small_net(), hw, 1, settings).searched == 2  # type: ignore[arg-type]


def test_check_states_the_search_costs_beside_the_closed_form(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """`check --mapper search` compares the costs the search ranked by with the closed form of the mappings it
    chose: equal for the search as it is; a cost model that takes the latency bound for the double-buffered
    latency fails on exactly that figure."""
    import dataclasses as dc

    import hwsim.search.layer as layer_search
    from hwsim.flows.check import check_run
    from hwsim.flows.run import resolve_run

    settings = SearchSettings(objective="latency", effort=QUICK, use_cache=False)  # the broken run must search
    graph = zoo.build("alexnet", (67, 67))  # layers whose loads are not all hidden: latency above the bound
    report = check_run(resolve_run(graph, "eyeriss-v1", 1, settings))
    assert report.ok and {r.figure for r in report.search} == {"energy_pj", "latency_cycles", "bound_cycles",
                                                              "dram_words"}
    exact = layer_search.exact_cost
    monkeypatch.setattr(layer_search, "exact_cost",
                        lambda *args: dc.replace(exact(*args), latency_cycles=exact(*args).bound_cycles))
    broken = check_run(resolve_run(graph, "eyeriss-v1", 1, settings))
    assert not broken.ok and not broken.mismatches  # the simulation still agrees with the closed form
    assert {r.figure for r in broken.search if not r.ok} == {"latency_cycles"}


def test_map_command_searches_and_writes_a_replayable_mapping(cli, tmp_path: Path) -> None:
    out = tmp_path / "m.yaml"
    result = cli("map", "phases_example", "--hw", "eyeriss-v1", "--objective", "latency", "--budget", "0.5",
                 "--cache", str(tmp_path / "cache"), "--out", str(out), "--json")
    assert result.code == 0, result.err
    doc = result.json()
    assert doc["search"]["objective"] == "latency" and doc["search"]["layers"]
    for layer in doc["search"]["layers"]:
        assert layer["searched"]["latency_cycles"] <= layer["rules"]["latency_cycles"]
    replay = cli("estimate", "phases_example", "--hw", "eyeriss-v1", "--mapping", str(out), "--json")
    assert replay.code == 0, replay.err
    table = cli("map", "phases_example", "--hw", "eyeriss-v1", "--objective", "energy", "--cache", "none")
    assert table.code == 0 and "searched / rules" in table.out


def test_estimate_with_the_search_and_bad_combinations(cli, tmp_path: Path) -> None:
    result = cli("estimate", "phases_example", "--hw", "eyeriss-v1", "--mapper", "search", "--objective", "dram",
                 "--cache", str(tmp_path), "--json")
    assert result.code == 0, result.err
    both = cli("simulate", "phases_example", "--hw", "eyeriss-v1", "--mapper", "search", "--mapping", "x.yaml")
    assert_one_line_error(both, "--mapping FILE and --mapper search")
    alone = cli("check", "phases_example", "--hw", "eyeriss-v1", "--objective", "latency")
    assert_one_line_error(alone, "add --mapper search")


def test_sweep_files_take_a_mapper_and_an_objective(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HWSIM_CACHE", str(tmp_path / "cache"))  # the default cache folder of a sweep's searches
    doc = {"config": "eyeriss-v1", "networks": ["phases_example"], "axes": {"pe_array.rows": [8, 12]},
           "mapper": "search", "objective": "edp"}
    searched = parse_sweep(doc, "s.yaml", tmp_path)
    assert {(p.mapper, p.objective) for p in searched.points} == {("search", "edp")}
    rules = parse_sweep({k: v for k, v in doc.items() if k not in ("mapper", "objective")}, "s.yaml", tmp_path)
    assert {p.point_id for p in rules.points}.isdisjoint({p.point_id for p in searched.points})
    with pytest.raises(SweepError, match="add mapper: search"):
        parse_sweep({**doc, "mapper": "rules"}, "s.yaml", tmp_path)
    row = evaluate(searched.points[0], None)
    assert row["status"] == "ok", row["error"]
    assert row["mapper"] == "search" and row["objective"] == "edp"
    assert list((tmp_path / "cache" / "mappings").rglob("*.json"))


@pytest.mark.parametrize("config", ["eyeriss-v1", "scalesim-12x14-ws"])
def test_a_searched_mapping_simulates_and_checks(cli, tmp_path: Path, config: str) -> None:
    cache = str(tmp_path / "cache")
    searched, rules = tmp_path / "searched.yaml", tmp_path / "rules.yaml"
    assert cli("map", "phases_example", "--hw", config, "--objective", "energy", "--budget", "0.5", "--cache", cache,
               "--out", str(searched)).code == 0
    assert cli("map", "phases_example", "--hw", config, "--out", str(rules)).code == 0
    assert searched.read_text() != rules.read_text()  # the check below runs a mapping the rules would not
    result = cli("check", "phases_example", "--hw", config, "--mapper", "search", "--objective", "energy",
                 "--budget", "0.5", "--cache", cache, "--json")
    assert result.code == 0, result.err
    doc = result.json()
    assert doc["ok"] and not doc["mismatches"] and len(doc["layers"]) == 3  # type: ignore[index]


def test_weights_larger_than_the_filter_partition_are_read_once_over_the_batch(tmp_path: Path) -> None:
    # An FC layer of 1024 -> 256 at batch 16 on diannao-nlr (no RFs; GLB: a 16 Ki-word filter partition and 38 Ki
    # words of data): 262144 weights cannot sit in the GLB at once, but 16 filters x 1024 channels = 16384 words
    # fill the filter partition exactly; with the 16 x 1024 inputs (16384 words) kept in the data partition and the
    # 16 images streamed past each filter tile, every DRAM word moves once: 262144 + 16384 + 16 x 256 = 282624.
    b = GraphBuilder("fc")
    x = b.input("x", 1024, 1, 1)
    y = b.fc("fc", x, 256)
    b.output("o", y)
    hw = load_config("diannao-nlr")
    found = search_layer(b.build().layer("fc"), hw, 16, "dram", energy_table(hw))
    assert found.cost.dram_words == 262144 + 16384 + 16 * 256


def test_the_objective_names_the_cli_offers_are_the_registered_objectives() -> None:
    from hwsim.search.cost import OBJECTIVES
    from hwsim.search.names import OBJECTIVE_NAMES

    assert set(OBJECTIVES.names()) == set(OBJECTIVE_NAMES)
