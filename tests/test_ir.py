"""The IR's shape rules and derived counts, against hand calculation."""

from __future__ import annotations

import pytest

from hwsim.errors import NetworkError, ShapeError
from hwsim.workload import GraphBuilder, LayerKind, Padding, Shape
from hwsim.workload.builder import same_padding, window_out


@pytest.mark.parametrize(
    ("size", "pad", "k", "s", "d", "ceil", "expected"),
    [
        (227, 0, 11, 4, 1, False, 55),  # AlexNet conv1: (227-11)/4+1
        (224, 0, 11, 4, 1, False, 54),  # floor(213/4)+1
        (55, 0, 3, 2, 1, False, 27),
        (112, 0, 3, 2, 1, True, 56),  # GoogLeNet pool: ceil(109/2)+1 = 56
        (14, 0, 3, 2, 1, True, 7),  # ceil(11/2)+1 = 7
        (5, 2, 2, 2, 1, True, 3),  # last window would start in the end padding: ceil(5/2)+1=4 -> 3
        (32, 0, 3, 1, 2, False, 28),  # dilation 2: span 5
        (16, -2, 5, 3, 1, False, 4),  # phases example n3: (16-2-5)/3+1
    ],
)
def test_window_out(size: int, pad: int, k: int, s: int, d: int, ceil: bool, expected: int) -> None:
    assert window_out(size, pad, k, s, d, ceil) == expected


def test_same_padding_matches_tensorflow() -> None:
    # TF SAME, stride 2, k 3 on 224: out 112, total pad (111*2+3-224)=1 -> (0, 1) upper
    assert same_padding(224, 3, 2, 1, upper=True) == (0, 1)
    assert same_padding(224, 3, 2, 1, upper=False) == (1, 0)
    assert same_padding(13, 2, 1, 1, upper=True) == (0, 1)  # Tiny-YOLO's 2x2/1 max pool


def _net() -> GraphBuilder:
    b = GraphBuilder("t")
    b.input("x", 8, 10, 12)
    return b


def test_grouped_depthwise_and_dilated_conv_counts() -> None:
    b = _net()
    g = b.conv("g", "x", 16, 3, padding=1, groups=2, bias=True)
    dw = b.conv("dw", g, 16, 3, stride=2, padding=(1, 1, 0, 0), groups=16, bias=False, bn=True)
    b.output("y", dw)
    graph = b.build()
    grouped, depthwise = graph.layer("g"), graph.layer("dw")
    assert grouped.out_shape == Shape(16, 10, 12)
    assert grouped.macs == 16 * 10 * 12 * (8 // 2) * 9
    assert grouped.params == 16 * 4 * 9 + 16
    assert depthwise.is_depthwise and not grouped.is_depthwise
    # asymmetric padding: H = (10+1-3)//2+1 = 5, W = (12+1-3)//2+1 = 6
    assert depthwise.out_shape == Shape(16, 5, 6)
    assert depthwise.macs == 16 * 5 * 6 * 9
    assert depthwise.params == 16 * 9 + 2 * 16  # weights + BN scale and shift


def test_negative_padding_crops() -> None:
    b = GraphBuilder("crop")
    b.input("x", 4, 16, 16)
    y = b.conv("c", "x", 3, 5, stride=3, padding=-1, bias=False)
    assert b.shape(y) == Shape(3, 4, 4)
    assert b.layer("c").padding == Padding(-1, -1, -1, -1)


def test_transposed_conv_shape_and_macs() -> None:
    b = GraphBuilder("deconv")
    b.input("x", 56, 10, 20)
    y = b.conv_transpose("up", "x", 1, 9, stride=2, padding=4, output_padding=1)
    # (10-1)*2 - 8 + 9 + 1 = 20 ; (20-1)*2 - 8 + 9 + 1 = 40
    assert b.shape(y) == Shape(1, 20, 40)
    assert b.layer("up").macs == 56 * 10 * 20 * 1 * 81


def test_fc_pool_concat_add_pixel_shuffle() -> None:
    b = _net()
    p = b.max_pool("p", "x", 2)
    a = b.avg_pool("a", "x", 2)
    c = b.concat("c", [p, a])
    s = b.add("s", [p, a], activation="relu")
    d = b.depth_to_space("d", c, 2)
    u = b.upsample("u", s, 2)
    f = b.fc("f", d, 10)
    b.output("o1", u)
    b.output("o2", f)
    g = b.build()
    assert g.layer("c").out_shape == Shape(16, 5, 6)
    assert g.layer("c").inputs == ("p", "a")
    assert g.layer("d").out_shape == Shape(4, 10, 12)
    assert g.layer("u").out_shape == Shape(8, 10, 12)
    assert g.layer("f").macs == 4 * 10 * 12 * 10
    assert g.layer("f").params == 480 * 10 + 10
    assert g.layer("p").ops == 8 * 5 * 6 * 4
    assert [l.name for l in g.consumers("p")] == ["c", "s"]
    assert g.layer("f").ofmap_bytes(16) == 20
    assert g.layer("c").ifmap_bytes(8) == 2 * 8 * 5 * 6
    assert len(g.of_kind(LayerKind.OUTPUT)) == 2


def test_shape_errors_are_reported() -> None:
    b = _net()
    with pytest.raises(ShapeError, match="does not fit"):
        b.conv("big", "x", 4, 11)
    p = b.max_pool("p", "x", 2)
    with pytest.raises(ShapeError, match="spatial sizes differ"):
        b.concat("bad", ["x", p])
    with pytest.raises(ShapeError, match="groups"):
        b.conv("g", "x", 6, 1, groups=4)
    with pytest.raises(NetworkError, match="duplicate"):
        b.max_pool("p", "x", 2)
    with pytest.raises(NetworkError, match="precision"):
        b.layer("p").ofmap_bytes(12)
