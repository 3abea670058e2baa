"""Depth-first schedules simulated: line-buffer peaks and DRAM bytes read from the trace, against values
derived by hand from Eqs. 1–3 and against the closed-form model on Pareto points of the paper's networks.

All graphs are 8-bit (depthfirst-edge), so a byte is one feature. The hand values are the ones
`tests/test_depth_first.py` derives for the analytic model; here the simulator must reach them by
walking the schedule's lines.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import assert_one_line_error

from hwsim.check.depth_first import DepthFirstCheck
from hwsim.flows.depth_first import check_point
from hwsim.hardware import load_config
from hwsim.mapping.depth_first import (
    DepthFirstMapping,
    WeightPolicy,
    depth_first_schedule,
)
from hwsim.mapping.depth_first import steps as depth_first_steps
from hwsim.search.depth_first import candidate_cuts, depth_first_pareto
from hwsim.vocab import Level, StepKind
from hwsim.workload import Graph, GraphBuilder
from hwsim.workload.network import load_network

HW = load_config("depthfirst-edge")


def simulate(graph: Graph, tmp_path: Path, cuts: tuple[str, ...] = (), tiling: tuple[int, ...] = (1,),
             weights: WeightPolicy = WeightPolicy.ON_CHIP, max_short: int = 8) -> DepthFirstCheck:
    return check_point(graph, HW, DepthFirstMapping(cuts, tiling, weights, max_short), tmp_path / "df.h5")


def convs(n: int, h: int = 32, w: int = 16) -> Graph:
    b = GraphBuilder("convs")
    x = b.input("x", 3, h, w)
    for i in range(1, n + 1):
        x = b.conv(f"c{i}", x, 8, 3, padding=1)
    b.output("out", x)
    return b.build()


def test_eq1_untiled_stack(tmp_path: Path) -> None:
    c = simulate(convs(2), tmp_path)
    # Eq. 1 per FM: (3−1)·16 + (3−1) = 34 pixels; x has 3 channels, c1 8: 102 + 272 B.
    assert c.simulated_line_buffer_bytes == 34 * 3 + 34 * 8
    assert c.simulated_simultaneous_peak_bytes == 34 * 3 + 34 * 8  # both rings full at once, mid-map
    # DRAM: the input read once (3·32·16), the output written once (8·32·16).
    assert c.simulated_dram_bytes == 3 * 512 + 8 * 512
    assert c.ok


def test_cut_stacks_run_one_after_another(tmp_path: Path) -> None:
    c = simulate(convs(2), tmp_path, cuts=("c1",), tiling=(1, 1))
    assert [s.simulated_line_buffer_bytes for s in c.stacks] == [34 * 3, 34 * 8]
    assert [s.simulated_dram_bytes for s in c.stacks] == [1536 + 4096, 4096 + 4096]
    assert c.ok


def test_eq2_eq3_tiled_stack(tmp_path: Path) -> None:
    c = simulate(convs(3), tmp_path, tiling=(2,))
    # Widest tiles (see test_depth_first): x 11, c1 10, c2 9 columns; Eq. 2 rings 2·w + 2.
    assert c.simulated_line_buffer_bytes == (2 * 11 + 2) * 3 + (2 * 10 + 2) * 8 + (2 * 9 + 2) * 8
    # Eq. 3: (2−1)·32·(3−1) = 64 boundary pixels per FM: x fetched again (3 ch), c1 and c2 offloaded
    # and fetched back (8 ch each, twice).
    assert c.simulated_dram_bytes == 3 * 512 + 8 * 512 + 64 * 3 + 2 * 64 * 8 + 2 * 64 * 8
    assert c.ok


def test_strided_and_pooled_stack(tmp_path: Path) -> None:
    b = GraphBuilder("strided")
    x = b.input("x", 4, 32, 16)
    y = b.conv("s2", x, 8, 3, stride=2, padding=1)
    y = b.conv("c", y, 8, 3, padding=1)
    b.output("out", b.max_pool("pool", y, 2))
    c = simulate(b.build(), tmp_path)
    # Eq. 1 ignores strides: x 2·16 + 2 = 34 px × 4, s2 2·8 + 2 = 18 px × 8, the 2×2 pool 1·8 + 1 = 9 px × 8.
    assert c.simulated_line_buffer_bytes == 34 * 4 + 18 * 8 + 9 * 8
    tiled = simulate(b.build(), tmp_path, tiling=(2,))
    # Eq. 3 with k − S: one column of x (3×3 stride 2), two of s2, none for the 2×2 pool.
    assert tiled.simulated_dram_bytes - c.simulated_dram_bytes == 32 * 1 * 4 + 2 * 16 * 2 * 8
    assert c.ok and tiled.ok


def test_pixel_shuffle_upsample_and_one_by_one(tmp_path: Path) -> None:
    b = GraphBuilder("upscale")
    x = b.input("x", 8, 16, 8)
    y = b.depth_to_space("shuffle", x, 2)  # 2×32×16
    y = b.upsample("up", y, 2)  # 2×64×32
    y = b.conv("c", y, 2, 3, padding=1)
    b.output("out", b.conv("pw", y, 4, 1))
    c = simulate(b.build(), tmp_path)
    # One shuffled line waits (16 px × 2 ch), the upsampler replays its 16-wide line (16 × 2),
    # the conv keeps 2·32 + 2 = 66 px × 2 ch, the 1×1 conv one pixel × 2 ch.
    assert c.simulated_line_buffer_bytes == 32 + 32 + 132 + 2
    assert c.ok


def residual(convs_in_block: int) -> Graph:
    b = GraphBuilder("residual")
    x = b.input("x", 4, 32, 16)
    y = b.conv("pre", x, 4, 3, padding=1)
    z = y
    for i in range(convs_in_block):
        z = b.conv(f"r{i}", z, 4, 3, padding=1)
    z = b.add("add", [z, y])
    b.output("out", b.conv("post", z, 4, 3, padding=1))
    return b.build()


def test_short_skip_is_held_as_long_as_its_delay(tmp_path: Path) -> None:
    # Three 3×3 convs delay the add by 3 lines + 3 pixels: `pre` is held 3·16 + 3 = 51 px (× 4 ch)
    # instead of its conv's 34; every other FM keeps 34 px, the add's conv input 1 px.
    c = simulate(residual(3), tmp_path)
    assert c.simulated_line_buffer_bytes == (34 * 4) * 4 + 51 * 4 + 1 * 4
    assert c.simulated_simultaneous_peak_bytes == c.simulated_line_buffer_bytes
    assert c.ok


def test_long_skip_goes_through_dram(tmp_path: Path) -> None:
    short = simulate(residual(2), tmp_path)
    long = simulate(residual(2), tmp_path, max_short=2)
    # `pre` (2048 B) is written once more and read once more at the add.
    assert long.simulated_dram_bytes - short.simulated_dram_bytes == 2 * 2048
    assert short.ok and long.ok


def test_weights_per_stack_are_fetched_every_inference(tmp_path: Path) -> None:
    c = simulate(convs(2), tmp_path, weights=WeightPolicy.PER_STACK)
    # c1 8·3·9 + 8 bias = 224, c2 8·8·9 + 8 = 584 bytes of parameters.
    assert c.simulated_dram_bytes == 3 * 512 + 8 * 512 + 224 + 584
    assert c.ok


def test_schedule_computes_every_mac_once() -> None:
    g = load_network("dmcnn-vd", (24, 32)).graph
    s = depth_first_schedule(g, HW, DepthFirstMapping(("conv5",), (4, 2), WeightPolicy.ON_CHIP))
    macs = sum(int(ls.steps()["macs"].sum()) for ls in s.layers)
    assert macs == g.total_macs
    for ls in s.layers:  # every allocation is freed by the end of the stack
        steps = ls.steps()
        alloc = steps["words"][steps["kind"] == StepKind.ALLOC].sum()
        assert alloc == steps["words"][steps["kind"] == StepKind.FREE].sum() > 0


SIZES = {"dmcnn-vd": (24, 32), "srgan": (24, 32)}


@pytest.mark.parametrize("block_steps", [1, 1 << 14], ids=["a-tile-a-block", "tiles-in-one-block"])
def test_tiles_load_their_columns_tile_after_tile(block_steps: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 3x3 'same' conv over lines of 6 pixels (3 channels, 12 lines) in 2 tiles: tile 0 computes columns 0..2
    and reads input columns 0..3, tile 1 computes 3..5 and reads 2..5 (its halo re-read from the stack input).
    Line r starts at word 18·r (6 pixels of 3 channels), so tile 0 loads 12 words at 18·r and tile 1 12 words at
    18·r + 6, every line of tile 0 before any of tile 1, whether a block holds one tile or both."""
    monkeypatch.setattr(depth_first_steps, "TILE_BLOCK_STEPS", block_steps)
    work = depth_first_schedule(convs(1, h=6, w=12), HW, DepthFirstMapping((), (2,), WeightPolicy.ON_CHIP)).layers[0]
    blocks = list(work.blocks())
    steps = np.concatenate(blocks)
    loads = steps[(steps["kind"] == StepKind.TRANSFER) & (steps["src"] == Level.DRAM)
                  & (steps["dst"] == Level.LINE_BUFFER)]
    expected = [(18 * r + 6 * tile, 12) for tile in (0, 1) for r in range(12)]
    assert list(zip(loads["src_addr"].tolist(), loads["words"].tolist())) == expected
    assert len(blocks) == (2 if block_steps == 1 else 1)
    # one group per computed line of each tile (12 lines, 2 tiles), numbered on across blocks
    assert np.array_equal(np.unique(steps["group"]), np.arange(24)) and np.all(np.diff(steps["group"]) >= 0)


def test_rings_need_not_fill_at_once(tmp_path: Path) -> None:
    # SRGAN in one stack trails its input by about 40 lines (a 9×9 conv, 33 3×3 convs, two shuffles), more
    # than a 32-line scan: its first rings drain before its last ones fill. Each ring still reaches the
    # size the model gives it, but the whole line buffer never holds them all at once.
    c = simulate(load_network("srgan", (24, 32)).graph, tmp_path)
    assert c.ok
    assert c.simulated_simultaneous_peak_bytes < c.simulated_line_buffer_bytes


@pytest.mark.parametrize("network", sorted(SIZES))
def test_pareto_points_simulate_to_the_model(network: str, tmp_path: Path) -> None:
    graph = load_network(network, SIZES[network]).graph
    result = depth_first_pareto(graph)
    front = result.front
    picks = sorted({0, len(front) // 2, len(front) - 1})
    assert len(picks) == 3
    for i in picks:
        p = front[i]
        c = check_point(graph, HW, DepthFirstMapping(p.cuts, p.tiling, p.weights), tmp_path / f"p{i}.h5")
        assert c.ok, [s for s in c.stacks if not s.ok]
        assert c.simulated_dram_bytes == p.dram_bytes
        model = result.model_bytes if p.weights is WeightPolicy.ON_CHIP else 0  # PER_STACK counts weights per stack
        assert c.simulated_simultaneous_peak_bytes <= c.simulated_line_buffer_bytes <= p.on_chip_bytes - model
        assert np.isfinite(c.cycles) and c.cycles > 0


def test_ssdlite_heads_and_short_maps_simulate_to_the_model(tmp_path: Path) -> None:
    # MobileNetV2-SSDLite at 64×48: parallel box and class heads, inverted residuals, and maps of one to
    # three lines at the end, where Eq. 1's steady state never sets in. Whole network in one stack, and
    # cut into four stacks tiled 1, 2, 4, 1 with weights per stack.
    graph = load_network("mobilenetv2-ssdlite", (48, 64)).graph
    cuts = candidate_cuts(graph)
    picks = tuple(cuts[i * len(cuts) // 4] for i in (1, 2, 3))
    for mapping in (DepthFirstMapping((), (1,), WeightPolicy.ON_CHIP),
                    DepthFirstMapping(picks, (1, 2, 4, 1), WeightPolicy.PER_STACK)):
        c = check_point(graph, HW, mapping, tmp_path / "ssd.h5")
        assert c.ok, [s for s in c.stacks if not s.ok]


def test_cli_simulates_and_checks_front_points(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # `check` writes its traces under ./traces
    trace = tmp_path / "df.h5"
    result = cli("depthfirst", "dmcnn-vd", "--input", "32x24", "--simulate", "min-memory", "--trace", str(trace),
                 "--json")
    assert result.code == 0, result.err
    (point,) = result.json()["simulated"]
    assert point["ok"] and point["point"] == 0 and trace.exists()
    assert all(s["simulated_dram_bytes"] == s["analytic_dram_bytes"] for s in point["stacks"])
    result = cli("check", "dmcnn-vd", "--hw", "depthfirst-edge", "--input", "32x24", "--depthfirst", "3")
    assert result.code == 0, result.out + result.err
    assert result.out.count("yes") == 3


def test_cli_depth_first_bad_input(cli) -> None:
    assert_one_line_error(cli("depthfirst", "dmcnn-vd", "--input", "32x24", "--simulate", "999"),
                          "--simulate 999", "give 0 …")
    assert_one_line_error(cli("depthfirst", "dmcnn-vd", "--input", "32x24", "--simulate", "foo"),
                          "'foo'", "min-memory")
    assert_one_line_error(cli("depthfirst", "dmcnn-vd", "--input", "32x24", "--simulate", "0", "--hw", "eyeriss-v1"),
                          "eyeriss-v1", "line_buffer")
    assert_one_line_error(cli("check", "dmcnn-vd", "--hw", "depthfirst-edge", "--depthfirst", "0"),
                          "--depthfirst 0")
