"""Depth-first line-buffer model (Goetschalckx & Verhelst 2019): Eqs. 1–3 and the layer-by-layer bound, by hand.

All graphs are 8-bit, so one byte is one feature. Maps are taller than wide,
so lines run along the width W (min(W, H)) and are scanned down the height.
"""

from __future__ import annotations

import pytest

from hwsim.analytic.depth_first import (
    DepthFirstError,
    WeightPolicy,
    boundary_pixels,
    layer_by_layer_dram_bytes,
    layer_by_layer_on_chip_bytes,
    line_buffer_pixels,
)
from hwsim.errors import HwsimError
from hwsim.search.depth_first import point_cost
from hwsim.workload import Graph, GraphBuilder


def two_convs(convs: int = 2) -> Graph:
    """3×32×16 input (H=32, W=16), then `convs` 3×3 'same' convs to 8 channels."""
    b = GraphBuilder("two_convs")
    x = b.input("x", 3, 32, 16)
    for i in range(1, convs + 1):
        x = b.conv(f"c{i}", x, 8, 3, padding=1)
    b.output("out", x)
    return b.build()


def buffer(cost, tensor):
    return next(b for b in cost.stacks[0].buffers if b.tensor == tensor)


def test_equations_as_written():
    assert line_buffer_pixels(3, 3, 16) == 2 * 16 + 2  # Eq. 1
    assert line_buffer_pixels(1, 1, 16) == 1  # a 1×1 layer: one pixel
    assert line_buffer_pixels(3, 3, 16, tiling=2, overhead_pixels=3) == 2 * 8 + 2 + 2 * 3  # Eq. 2, O = (k−1)·3
    assert boundary_pixels(4, 100, 3, 1) == 3 * 100 * 2  # Eq. 3
    assert boundary_pixels(4, 100, 2, 2) == 0  # 2×2 stride-2 pool: no overlap


def test_two_3x3_convs_untiled_one_stack():
    cost = point_cost(two_convs())
    # Eq. 1 per FM: (3−1)·16 + (3−1) = 34 pixels; x has 3 channels, c1 has 8.
    assert buffer(cost, "x").line_buffer_pixels == 34
    assert buffer(cost, "c1").line_buffer_pixels == 34
    assert cost.stacks[0].line_buffer_bytes == 34 * 3 + 34 * 8  # 374
    # Weights: c1 8·3·9 + 8 bias = 224, c2 8·8·9 + 8 = 584; all on chip.
    assert cost.model_bytes == 224 + 584
    assert cost.on_chip_bytes == 374 + 808
    # DRAM: input 3·32·16 read once, output 8·32·16 written once; nothing else.
    assert cost.dram_bytes == 3 * 512 + 8 * 512
    per_stack = point_cost(two_convs(), weights=WeightPolicy.PER_STACK)
    assert per_stack.on_chip_bytes == 374 + 808
    assert per_stack.dram_bytes == 3 * 512 + 8 * 512 + 808  # weights refetched every inference


def test_cut_sends_the_feature_map_through_dram():
    cost = point_cost(two_convs(), cuts=["c1"])
    # Stack 1 buffers x (34·3 = 102 B), stack 2 buffers c1 (34·8 = 272 B): the max counts, plus the model.
    assert [s.line_buffer_bytes for s in cost.stacks] == [102, 272]
    assert cost.on_chip_bytes == 272 + 808
    # Stack 1: read x 1536, write c1 4096; stack 2: read c1 4096, write c2 4096.
    assert [s.dram_bytes for s in cost.stacks] == [1536 + 4096, 4096 + 4096]
    assert cost.dram_bytes == point_cost(two_convs(), cuts=[1]).dram_bytes  # index 1 is c1


def test_strided_conv_and_pool():
    b = GraphBuilder("strided")
    x = b.input("x", 4, 32, 16)
    y = b.conv("s2", x, 8, 3, stride=2, padding=1)  # 8×16×8
    y = b.conv("c", y, 8, 3, padding=1)  # 8×16×8
    y = b.max_pool("pool", y, 2)  # 8×8×4
    b.output("out", y)
    cost = point_cost(b.build())
    # x: Eq. 1 on the 16-wide input, the stride does not change it: 2·16 + 2 = 34 px × 4 ch.
    assert buffer(cost, "x").line_buffer_pixels == 34
    # s2's output is 8 wide: 2·8 + 2 = 18 px × 8 ch.
    assert buffer(cost, "s2").line_buffer_pixels == 18
    # the 2×2 pool needs (2−1)·8 + (2−1) = 9 px × 8 ch.
    assert buffer(cost, "c").line_buffer_pixels == 9
    assert cost.stacks[0].line_buffer_bytes == 34 * 4 + 18 * 8 + 9 * 8
    # Tiling 2: Eq. 3 per FM, boundary length = the scanned side (H), overlap k − S along the line.
    tiled = point_cost(b.build(), tiling=2)
    assert buffer(tiled, "x").boundary_pixels == 1 * 32 * (3 - 2)  # stride-2 3×3: one column
    assert buffer(tiled, "s2").boundary_pixels == 1 * 16 * (3 - 1)
    assert buffer(tiled, "c").boundary_pixels == 0  # 2×2 stride 2 pool: tiles do not overlap
    # x is in DRAM already (refetched only), s2 is offloaded and refetched: 32·4 + 2·32·8 extra bytes.
    assert tiled.dram_bytes - cost.dram_bytes == 32 * 4 + 2 * 32 * 8


def test_tiling_shrinks_lines_and_adds_overhead():
    g = two_convs(convs=3)
    cost = point_cost(g, tiling=2)
    # Line 16 → 16/2 = 8 output columns per tile. The leftmost tile reaches (k−1)/2 = 1 pixel
    # further per layer downstream (Eq. 2's O): c2 computes columns 0..8 (9), c1 0..9 (10),
    # x is read 0..10 (11). The second tile computes the rest and fetches back the k − S = 2
    # columns left of its share: c2 9..15 + 2 = 9, c1 10..15 + 2 = 8, x 11..15 + 2 = 7.
    # A ring row is the widest tile.
    assert buffer(cost, "x").line_pixels == 11
    assert buffer(cost, "c1").line_pixels == 10
    assert buffer(cost, "c2").line_pixels == 9
    assert buffer(cost, "x").line_buffer_pixels == 2 * 11 + 2  # 24 < 34 untiled
    assert buffer(cost, "c1").line_buffer_pixels == 2 * 10 + 2
    assert buffer(cost, "c2").line_buffer_pixels == 2 * 9 + 2
    assert cost.stacks[0].line_buffer_bytes == 24 * 3 + 22 * 8 + 20 * 8
    # Four tiles of 4: a middle tile computes 4 columns and fetches back 2, so 4 + max(O, 2) as Eq. 2.
    four = point_cost(g, tiling=4)
    assert [buffer(four, t).line_pixels for t in ("x", "c1", "c2")] == [4 + 3, 4 + 2, 4 + 2]
    # Eq. 3: (2−1)·32·(3−1) = 64 boundary pixels per FM; x only refetched, c1 and c2 offloaded + refetched.
    assert all(b.boundary_pixels == 64 for b in cost.stacks[0].buffers)
    assert cost.stacks[0].boundary_dram_bytes == 64 * 3 + 2 * 64 * 8 + 2 * 64 * 8
    assert cost.dram_bytes == 3 * 512 + 8 * 512 + 64 * 3 + 4 * 64 * 8


def test_one_by_one_layer_needs_one_pixel():
    b = GraphBuilder("pointwise")
    x = b.input("x", 4, 16, 8)
    y = b.conv("pw", x, 6, 1)
    y = b.conv("c", y, 6, 3, padding=1)
    b.output("out", y)
    cost = point_cost(b.build())
    assert buffer(cost, "x").line_buffer_pixels == 1  # 1×1 conv: one pixel of 4 channels
    assert buffer(cost, "pw").line_buffer_pixels == 2 * 8 + 2
    assert cost.stacks[0].line_buffer_bytes == 1 * 4 + 18 * 6


def test_upsample_and_pixel_shuffle():
    b = GraphBuilder("upscale")
    x = b.input("x", 8, 16, 8)
    y = b.depth_to_space("shuffle", x, 2)  # 2×32×16
    y = b.upsample("up", y, 2)  # 2×64×32
    y = b.conv("c", y, 2, 3, padding=1)
    b.output("out", y)
    cost = point_cost(b.build())
    # Pixel shuffle: one 8-wide input line becomes two 16-wide output lines; one output line
    # (16 px × 2 ch = 32 B) waits while the other is consumed = half an input line: 4 px × 8 ch.
    assert buffer(cost, "x").line_buffer_pixels == 4
    # Nearest upsample: the 16-wide input line is replayed for 2 output lines: 16 px × 2 ch.
    assert buffer(cost, "shuffle").line_buffer_pixels == 16
    # The conv on the 32-wide upsampled map: 2·32 + 2 = 66 px × 2 ch.
    assert buffer(cost, "up").line_buffer_pixels == 66
    assert cost.stacks[0].line_buffer_bytes == 4 * 8 + 16 * 2 + 66 * 2
    assert cost.dram_bytes == 8 * 16 * 8 + 2 * 64 * 32


def residual(convs: tuple[int, ...]) -> Graph:
    """x (4×32×16) → convs with the given kernels (4 channels) → add(·, x) → 3×3 conv."""
    b = GraphBuilder("residual")
    x = b.input("x", 4, 32, 16)
    y = b.conv("pre", x, 4, 3, padding=1)
    z = y
    for i, k in enumerate(convs):
        z = b.conv(f"r{i}", z, 4, k, padding=k // 2)
    z = b.add("add", [z, y])
    b.output("out", b.conv("post", z, 4, 3, padding=1))
    return b.build()


def test_short_skips_stay_on_chip_sized_by_their_delay():
    # Two 3×3 convs delay the add by 2 lines + 2 pixels = 2·(16 + 1) = 34 px: exactly the line
    # buffer the first conv keeps of `pre` (2·16 + 2), so the skip costs nothing extra.
    two = point_cost(residual((3, 3)))
    assert buffer(two, "pre").line_buffer_pixels == 34
    assert buffer(two, "pre").skip_buffer_pixels == 0
    # Three 3×3 convs: 3·17 = 51 px delay, 51 − 34 = 17 px more of 4 channels.
    three = point_cost(residual((3, 3, 3)))
    assert buffer(three, "pre").skip_buffer_pixels == 17
    assert three.stacks[0].skip_buffer_bytes == 17 * 4
    # Inverted-residual shape 1×1, 3×3, 1×1: 1 line + 1 px = 17 px delay, the 1×1 holds 1 px → 16 more.
    mobile = point_cost(residual((1, 3, 1)))
    assert buffer(mobile, "pre").line_buffer_pixels == 1
    assert buffer(mobile, "pre").skip_buffer_pixels == 16
    # No extra DRAM traffic for a short skip: input read, output written.
    assert mobile.dram_bytes == 4 * 512 + 4 * 512


def test_cut_before_a_residual_block_keeps_its_skip_on_chip():
    # Cut after `pre`: stack 2 reads pre once (2048 B) and feeds both r0 and the add from chip.
    cut = point_cost(residual((3, 3, 3)), cuts=["pre"])
    assert cut.stacks[1].buffers[0].tensor == "pre"
    assert cut.stacks[1].skip_buffer_bytes == 17 * 4
    assert [s.dram_bytes for s in cut.stacks] == [2048 + 2048, 2048 + 2048]


def test_long_skip_goes_through_dram():
    g = residual((3, 3))
    short = point_cost(g)
    long = point_cost(g, max_short_skip_layers=2)  # pre → add spans 3 layers
    # `pre` (4·32·16 = 2048 B) is written once and read back at the add; no skip buffer.
    assert long.dram_bytes - short.dram_bytes == 2 * 2048
    assert buffer(long, "pre").skip_buffer_pixels == 0
    # Cutting inside a long skip is allowed. Stacks (pre, r0) and (r1, add, post); every FM 2048 B.
    # Stack 1 reads x, writes pre (long skip) and r0 (cut); stack 2 reads r0 and pre, writes post.
    cut = point_cost(g, cuts=["r0"], max_short_skip_layers=2)
    assert [s.dram_bytes for s in cut.stacks] == [3 * 2048, 3 * 2048]


def test_bad_input_is_reported():
    with pytest.raises(DepthFirstError, match=r"after layer 'r0' splits the short skip from 'pre' to 'add'"
                                              r".*cut before 'r0' or after 'add'"):
        point_cost(residual((3, 3)), cuts=["r0"])
    with pytest.raises(DepthFirstError, match="tiling factor 0"):
        point_cost(two_convs(), tiling=0)
    with pytest.raises(DepthFirstError, match="2 tiling factors for 1 stacks"):
        point_cost(two_convs(), tiling=[1, 2])
    with pytest.raises(DepthFirstError, match="'nope' is not a compute layer"):
        point_cost(two_convs(), cuts=["nope"])
    with pytest.raises(DepthFirstError, match="empty stack"):
        point_cost(two_convs(), cuts=["c2"])
    with pytest.raises(HwsimError, match="precision 12 bit"):
        point_cost(two_convs(), bits=12)


def test_layer_by_layer_bound_limits():
    b = GraphBuilder("chain")
    x = b.input("x", 3, 8, 8)
    y = b.conv("a", x, 8, 3, padding=1)  # 512 B
    y = b.conv("b", y, 8, 3, padding=1)  # 512 B
    y = b.conv("c", y, 3, 3, padding=1)  # network output, 192 B
    b.output("out", y)
    g = b.build()
    # Tiny M: every intermediate FM is offloaded and refetched: 192 + 192 + 2·(512 + 512).
    assert layer_by_layer_dram_bytes(g, 0) == 2432
    # In between: 100 B of each FM stay on chip.
    assert layer_by_layer_dram_bytes(g, 100) == 384 + 2 * (412 + 412)
    # Huge M: only the input image and the final output.
    assert layer_by_layer_dram_bytes(g, 10**9) == 384
    assert layer_by_layer_on_chip_bytes(g, 384) == 512
    assert layer_by_layer_on_chip_bytes(g, 2032) == 100
    assert layer_by_layer_on_chip_bytes(g, 383) is None
    # 16-bit: every byte count doubles.
    assert layer_by_layer_dram_bytes(g, 0, bits=16) == 2 * 2432


def test_layer_by_layer_fuses_residual_adds():
    # pre (2048 B) feeds r0 and the add; r1's output is fused into the add: FMs pre, r0, add.
    g = residual((3, 3))
    assert layer_by_layer_dram_bytes(g, 0) == 2048 + 2048 + 2 * 3 * 2048
