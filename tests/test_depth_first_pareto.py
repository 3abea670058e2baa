"""Depth-first Pareto optimiser: against brute force by hand, DP against exhaustive, and the CLI."""

from __future__ import annotations

import csv
import importlib.util
from itertools import chain, combinations, product
from pathlib import Path

import pytest
from conftest import assert_one_line_error

from hwsim.analytic.depth_first import WeightPolicy
from hwsim.search.depth_first import (
    TILING_FACTORS,
    candidate_cuts,
    depth_first_pareto,
    front_from_table,
    paper_greedy_points,
    point_cost,
    stack_table,
)
from hwsim.workload import Graph, GraphBuilder


def chain3() -> Graph:
    """3×32×16 → c1 3×3 (8 ch) → c2 3×3 stride 2 (8 ch) → c3 3×3 (4 ch): three compute layers."""
    b = GraphBuilder("chain3")
    x = b.input("x", 3, 32, 16)
    x = b.conv("c1", x, 8, 3, padding=1)
    x = b.conv("c2", x, 8, 3, stride=2, padding=1)
    x = b.conv("c3", x, 4, 3, padding=1)
    b.output("out", x)
    return b.build()


def ten_layers() -> Graph:
    """Ten compute layers with a 1×1, a pool, a stride and a short residual skip (some cuts forbidden)."""
    b = GraphBuilder("ten")
    x = b.input("x", 3, 48, 32)
    x = b.conv("c1", x, 8, 3, padding=1)
    x = b.conv("pw", x, 12, 1)
    y = b.conv("r1", x, 12, 3, padding=1)
    y = b.conv("r2", y, 12, 3, padding=1)
    x = b.add("add", [y, x])
    x = b.max_pool("pool", x, 2)
    x = b.conv("c3", x, 16, 3, padding=1)
    x = b.conv("s2", x, 16, 3, stride=2, padding=1)
    x = b.conv("c4", x, 8, 5, padding=2)
    x = b.conv("c5", x, 4, 3, padding=1)
    b.output("out", x)
    return b.build()


def non_dominated(points: list[tuple[int, int]]) -> set[tuple[int, int]]:
    """O(n²) filter: keep a point unless another is ≤ in both and < in one."""
    return {p for p in points
            if not any(q[0] <= p[0] and q[1] <= p[1] and q != p for q in points)}


def values(points) -> set[tuple[int, int]]:
    return {(p.on_chip_bytes, p.dram_bytes) for p in points}


def test_chain3_front_equals_brute_force_by_hand():
    g = chain3()
    layers = ["c1", "c2", "c3"]
    all_points = []
    for cuts in ([], ["c1"], ["c2"], ["c1", "c2"]):  # every cut subset
        for tiling in product(TILING_FACTORS, repeat=len(cuts) + 1):  # every factor per stack
            for weights in WeightPolicy:
                c = point_cost(g, cuts, list(tiling), weights)
                all_points.append((c.on_chip_bytes, c.dram_bytes))
    expected = non_dominated(all_points)
    result = depth_first_pareto(g)
    assert result.candidate_cuts == tuple(layers[:2])
    assert values(result.front) == expected
    # The untiled front: the same by hand with every factor 1.
    untiled = non_dominated([(c.on_chip_bytes, c.dram_bytes) for cuts in ([], ["c1"], ["c2"], ["c1", "c2"])
                             for w in WeightPolicy for c in (point_cost(g, cuts, 1, w),)])
    assert values(result.untiled_front) == untiled


def test_short_skip_positions_are_not_candidates():
    g = ten_layers()
    cuts = candidate_cuts(g)
    assert "r1" not in cuts and "pw" in cuts and "add" in cuts  # r1 → r2 → add must share a stack
    assert "r2" not in cuts


def test_dp_equals_exhaustive_on_ten_layers():
    g = ten_layers()
    table = stack_table(g, candidate_cuts(g))
    _, exhaustive = front_from_table(table, "exhaustive")
    _, dp = front_from_table(table, "dp")
    assert values(dp) == values(exhaustive)
    _, exhaustive1 = front_from_table(table, "exhaustive", (1,))
    _, dp1 = front_from_table(table, "dp", (1,))
    assert values(dp1) == values(exhaustive1)


@pytest.mark.parametrize("graph", [ten_layers(), "srgan"], ids=["ten", "srgan-96x64"])
def test_front_points_are_non_dominated_and_reproducible(graph):
    if isinstance(graph, str):
        from hwsim.workload.network import load_network

        graph = load_network(graph, (64, 96)).graph
    result = depth_first_pareto(graph)
    pts = [(p.on_chip_bytes, p.dram_bytes) for p in result.front]
    assert set(pts) == non_dominated(pts) and len(set(pts)) == len(pts)
    assert pts == sorted(pts) and [d for _, d in pts] == sorted((d for _, d in pts), reverse=True)
    for p in chain(result.front, result.untiled_front):
        c = point_cost(graph, p.cuts, list(p.tiling), p.weights)
        assert (c.on_chip_bytes, c.dram_bytes) == (p.on_chip_bytes, p.dram_bytes)
        assert set(p.cuts) <= set(result.candidate_cuts)
    assert all(t == 1 for p in result.untiled_front for t in p.tiling)
    # The paper's greedy doubling never finds a point the front misses (a few cut sets).
    for k in range(min(3, len(result.candidate_cuts) + 1)):
        for cuts in list(combinations(result.candidate_cuts, k))[:5]:
            for w in WeightPolicy:
                for q in paper_greedy_points(graph, list(cuts), w):
                    assert any(p.on_chip_bytes <= q.on_chip_bytes and p.dram_bytes <= q.dram_bytes
                               for p in result.front), (cuts, q)


def test_layer_by_layer_curve_covers_the_front():
    result = depth_first_pareto(chain3())
    sizes = {c.on_chip_bytes for c in result.layer_by_layer}
    assert {p.on_chip_bytes for p in result.front} <= sizes
    dram = [c.dram_bytes for c in result.layer_by_layer]
    assert dram == sorted(dram, reverse=True)  # the bound falls with memory


def test_cli_json_and_csv(cli, tmp_path: Path):
    out = tmp_path / "front.csv"
    r = cli("depthfirst", "vgg_e5", "--input", "64x48", "--json", "--pareto", str(out))
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["network"] == "vgg_e5" and doc["bits"] == 8 and doc["front"]
    assert doc["headline"]["bandwidth_gain_at_min_bandwidth"]["ratio"] >= 1
    with out.open() as f:
        rows = list(csv.DictReader(f))
    front = [r for r in rows if r["curve"] == "front"]
    assert [int(r["on_chip_bytes"]) for r in front] == [p["on_chip_bytes"] for p in doc["front"]]
    assert {r["curve"] for r in rows} == {"front", "untiled", "layer_by_layer"}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left behind
    table = cli("depthfirst", "vgg_e5", "--input", "64x48", "--bits", "16")
    assert table.code == 0 and "Pareto front" in table.out and "memory gain at equal bandwidth" in table.out


def test_cli_bad_input(cli, tmp_path: Path):
    assert_one_line_error(cli("depthfirst", "vgg_e6"), "vgg_e6")
    assert_one_line_error(cli("depthfirst", "vgg_e5", "--bits", "12"), "--bits")
    assert_one_line_error(cli("depthfirst", "vgg_e5", "--input", "0x5"), "--input")
    assert_one_line_error(cli("depthfirst", "vgg_e5", "--pareto", str(tmp_path / "no" / "f.csv")), "f.csv")
    assert_one_line_error(cli("depthfirst", "vgg_e5", "--hw", "eyeriss-v1", "--bits", "8"), "precision_bits 16")
    if importlib.util.find_spec("matplotlib") is None:
        assert_one_line_error(cli("depthfirst", "vgg_e5", "--plot", str(tmp_path / "p.png")), "pip install hwsim[plot]")
    else:
        assert cli("depthfirst", "vgg_e5", "--input", "64x48", "--plot", str(tmp_path / "p.png")).code == 0
        assert (tmp_path / "p.png").stat().st_size > 0
