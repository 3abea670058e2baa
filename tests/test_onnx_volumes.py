"""3-D convolution networks (video: N×C×D×H×W clips): windows over frames, rows and columns as loop nests with an
output-frame dim F and a kernel-frame dim T, with hand-counted MACs and words, simulated and checked on
row-stationary, systolic and no-local-reuse configs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_one_line_error
from onnx import TensorProto, helper, numpy_helper, save

from hwsim.analytic.nest_counts import nest_counts
from hwsim.hardware import load_config
from hwsim.mapping.nest.format import Array, Loop, LoopNest, Storage
from hwsim.vocab import Access, Level, Operand
from hwsim.workload import GraphBuilder
from hwsim.workload.ir import FrameWindow, LayerKind, Shape
from hwsim.workload.onnx_import import load_onnx


def _clip_model(path: Path, nodes: list, weights: dict[str, tuple[int, ...]], dims: list) -> Path:
    """A graph on a clip input x of `dims` (N, C, D, H, W) with output y; weights are zero tensors."""
    inits = [numpy_helper.from_array(np.zeros(shape, np.float32), name) for name, shape in weights.items()]
    graph = helper.make_graph(nodes, path.stem, [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def r2plus1d_like(path: Path, frames: int = 8) -> Path:
    """A 3x3x3 stem (stride 1x2x2, pad 1), a 2x2x2 max pool, an R(2+1)D block (a 1x3x3 spatial then a 3x1x1
    temporal conv), a global average pool and a classifier."""
    nodes = [helper.make_node("Conv", ["x", "W1"], ["c1"], strides=[1, 2, 2], pads=[1, 1, 1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2, 2], strides=[2, 2, 2]),
             helper.make_node("Conv", ["p1", "W2"], ["c2"], pads=[0, 1, 1, 0, 1, 1]),
             helper.make_node("Conv", ["c2", "W3"], ["c3"], pads=[1, 0, 0, 1, 0, 0]),
             helper.make_node("GlobalAveragePool", ["c3"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "Wfc"], ["y"], transB=1)]
    weights = {"W1": (8, 3, 3, 3, 3), "W2": (16, 8, 1, 3, 3), "W3": (16, 16, 3, 1, 1), "Wfc": (5, 16)}
    return _clip_model(path, nodes, weights, [1, 3, frames, 16, 16])


def test_an_r2plus1d_like_network_by_hand(tmp_path: Path) -> None:
    """c1: frames (8 + 2 - 3)/1 + 1 = 8, rows (16 + 2 - 3)/2 + 1 = 8: 8x8x8x8 outputs, 3x3x3x3 = 81 taps each:
    4,096 x 81 = 331,776 MACs. p1: 8x4x4x4, ops 512 outputs x 8 = 4,096. c2 (1x3x3): 16x4x4x4 = 1,024 outputs x
    8 x 9 = 73,728. c3 (3x1x1, pad 1 in frames): 1,024 x 16 x 3 = 49,152. fc: 16 x 5 = 80."""
    graph = load_onnx(r2plus1d_like(tmp_path / "clip.onnx")).graph
    c1, p1, c2, c3 = (graph.layer(n) for n in ("c1", "p1", "c2", "c3"))
    assert (c1.kind, c1.in_shapes[0], c1.out_shape) == (LayerKind.CONV, Shape(3, 16, 16, 8), Shape(8, 8, 8, 8))
    assert (c1.kernel, c1.stride, c1.frames, c1.activation) == ((3, 3), (2, 2), FrameWindow(3, 1, 1, 1, 1), "relu")
    assert p1.out_shape == Shape(8, 4, 4, 4) and p1.ops == 512 * 8
    assert (c2.frames, c2.out_shape) == (FrameWindow(), Shape(16, 4, 4, 4))
    assert (c3.frames, c3.kernel, c3.out_shape) == (FrameWindow(3, 1, 1, 1, 1), (1, 1), Shape(16, 4, 4, 4))
    assert [l.macs for l in (c1, c2, c3)] == [331_776, 73_728, 49_152]
    assert c1.params == 8 * 3 * 27  # the filter's 3 frames count as weights too
    assert graph.total_macs == 331_776 + 73_728 + 49_152 + 80


def test_a_reduce_mean_over_frames_rows_and_columns_is_a_global_pool(tmp_path: Path) -> None:
    """S3D's head: AveragePool 2x7x7 (stride 1) over a 4x2x7x7 clip leaves 4x1x1x1 (ops 4 x 98), then a mean
    over axes 2, 3, 4."""
    nodes = [helper.make_node("AveragePool", ["x"], ["a"], kernel_shape=[2, 7, 7], strides=[1, 1, 1]),
             helper.make_node("ReduceMean", ["a"], ["y"], axes=[2, 3, 4], keepdims=0)]
    graph = load_onnx(_clip_model(tmp_path / "head.onnx", nodes, {}, [1, 4, 2, 7, 7])).graph
    pool = next(l for l in graph if l.kind is LayerKind.AVG_POOL)
    assert (pool.out_shape, pool.ops) == (Shape(4, 1, 1, 1), 4 * 2 * 7 * 7)
    assert any(l.kind is LayerKind.GLOBAL_AVG_POOL for l in graph)


def test_info_shows_the_frame_axis(cli, tmp_path: Path) -> None:
    path = r2plus1d_like(tmp_path / "clip.onnx")
    doc = cli("info", str(path), "--json").json()
    c1 = next(l for l in doc["layers"] if l["name"] == "c1")
    assert (c1["in_shapes"], c1["out_shape"]) == ([[3, 8, 16, 16]], [8, 8, 8, 8])  # C, D, H, W as in ONNX
    assert c1["frames"] == {"kernel": 3, "stride": 1, "dilation": 1, "front": 1, "back": 1}
    text = cli("info", str(path)).out
    assert "3x3x3/1x2x2" in text and "CxDxHxW" in text


def test_a_clip_without_a_frame_count_or_a_3d_transposed_conv_is_one_line(cli, tmp_path: Path) -> None:
    path = r2plus1d_like(tmp_path / "clip.onnx")
    from onnx import load
    model = load(path)
    model.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "frames"
    save(model, path)
    assert_one_line_error(cli("info", str(path)), "symbolic frame count", "fixed clip length")
    nodes = [helper.make_node("ConvTranspose", ["x", "W"], ["y"], strides=[1, 2, 2])]
    tconv = _clip_model(tmp_path / "tconv.onnx", nodes, {"W": (3, 4, 1, 2, 2)}, [1, 3, 4, 8, 8])
    assert_one_line_error(cli("info", str(tconv)), "3-D transposed convolution")


def _temporal_conv() -> tuple:
    """A 3x1x1 conv (1 channel, 1 filter) over a 1x4x4x4 clip: 2 output frames of 16 pixels, 3 taps each."""
    b = GraphBuilder("t")
    x = b.input("x", 1, 4, 4, frames=4)
    b.output("o", b.conv("c", x, 1, 1, frames=FrameWindow(kernel=3)))
    return b.build().layer("c")


def _dims(**given: int) -> dict[str, int]:
    return {d: given.get(d, 1) for d in ("N", "G", "M", "C", "F", "P", "Q", "T", "R", "S")}


@pytest.mark.parametrize("dram_loops, glb_loops, ifmap_words, filter_words", [
    # every (output frame, kernel frame) pair a visit: 2 x 3 frames of 16 words; a filter tap per visit
    ((Loop("F", 2), Loop("T", 3)), (), 2 * 3 * 16, 2 * 3),
    # one output frame a visit, its 3 kernel frames in the GLB tile: frames 0-2, then 1-3; the filter's 3 taps
    # stay while F (which the filter ignores) advances
    ((Loop("F", 2),), (Loop("T", 3),), 2 * 3 * 16, 3),
    # the whole clip in the GLB at once: the 4 frames once
    ((), (Loop("F", 2), Loop("T", 3)), 4 * 16, 3),
])
def test_the_dram_words_of_a_temporal_conv_follow_its_frame_loops(dram_loops, glb_loops, ifmap_words,
                                                                   filter_words) -> None:
    """Words DRAM → GLB by hand for three placements of the F and T loops; the PEs take 16 pixels a pass."""
    layer = _temporal_conv()
    hw = load_config("eyeriss-v1")
    nest = LoopNest("c", _dims(F=2, P=4, Q=4, T=3), (Storage("dram", dram_loops), Storage("glb", glb_loops)),
                    Array((), (Loop("P", 4),), (Loop("Q", 4),)), Storage("rf", ()))
    counts = nest_counts(layer, nest, 1, hw)
    assert counts.transfers[Level.DRAM, Operand.IFMAP, Access.READ] == ifmap_words
    assert counts.transfers[Level.DRAM, Operand.FILTER, Access.READ] == filter_words
    assert (counts.macs, counts.passes) == (2 * 16 * 3, 2 * 3)


@pytest.mark.parametrize("hw", ["eyeriss-v1", "scalesim-12x14-ws", "scalesim-32x32-os", "scalesim-12x14-is",
                                "shidiannao-os", "diannao-nlr"])
def test_a_clip_network_simulates_and_checks(cli, tmp_path: Path, hw: str) -> None:
    result = cli("check", str(r2plus1d_like(tmp_path / "clip.onnx", frames=4)), "--hw", hw)
    assert result.code == 0, result.err
    assert result.out.rstrip().endswith("PASS")


def test_the_searching_mapper_maps_a_clip(cli, tmp_path: Path) -> None:
    """The mapspace tiles and orders F and T at the storage levels like any dim: a searched mapping of a clip
    network checks."""
    result = cli("check", str(r2plus1d_like(tmp_path / "clip.onnx", frames=4)), "--hw", "eyeriss-v1",
                 "--mapper", "search", "--budget", "5")
    assert result.code == 0, result.err
    assert result.out.rstrip().endswith("PASS")


def test_a_mapping_file_without_frame_dims_reads_them_as_one(tmp_path: Path) -> None:
    """Mapping files written before clips had no F or T: they mean 1."""
    from hwsim.mapping.nest.format import mapping_from_data
    data = {"format": "hwsim-mapping 1", "network": "n", "hardware": "h", "dataflow": "d", "batch": 1,
            "layers": [{"layer": "c", "dims": {"N": 1, "G": 1, "M": 2, "C": 3, "P": 4, "Q": 4, "R": 3, "S": 3},
                        "dram": {"loops": ["M=2"]}}]}
    nest = mapping_from_data(data).layers[0]
    assert isinstance(nest, LoopNest)
    assert (nest.dims["F"], nest.dims["T"]) == (1, 1)
    assert dataclasses.asdict(nest.storage[0])["loops"] == ({"dim": "M", "factor": 2},)
    assert json.dumps(nest.dims)  # plain data
