"""Mappings as data: the file format round trip, `hwsim map` and `--mapping` replay, validation errors that
name the layer, the field and the numbers, and the systolic arrays' fold timing derived by hand."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml
from conftest import CONFIGS, assert_one_line_error, small_zoo_graph

from hwsim.flows import check_network, estimate_mapping, simulate_network
from hwsim.hardware import load_config
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.dataflows import DATAFLOWS
from hwsim.mapping.mapper import check_mapping, default_mapping
from hwsim.mapping.nest.format import (
    Loop,
    LoopNest,
    MappingError,
    NetworkMapping,
    Storage,
    load_mapping,
    mapping_data,
    mapping_from_data,
    save_mapping,
)
from hwsim.mapping.nest.problem import nest_problem
from hwsim.mapping.nest.validate import check_nest
from hwsim.vocab import Access, Level, Operand
from hwsim.workload import GraphBuilder, zoo
from hwsim.workload.ir import Graph

EYERISS = load_config("eyeriss-v1")


def small_conv() -> Graph:
    """3x6x6 input, five 3x3 filters, stride 1, no padding: a 5x4x4 output (K = 27, M = 5, T = 16)."""
    b = GraphBuilder("small")
    x = b.input("x", 3, 6, 6)
    b.output("o", b.conv("c", x, 5, 3))
    return b.build()


def array(dataflow: str, rows: int, cols: int) -> Accelerator:
    base = load_config("scalesim-12x14-ws")
    return dataclasses.replace(base, pe_array=dataclasses.replace(base.pe_array, rows=rows, cols=cols,
                                                                  dataflow=dataflow))


def nest_of(mapping: NetworkMapping, layer: str) -> LoopNest:
    entry = mapping.layer(layer)
    assert isinstance(entry, LoopNest)
    return entry


def with_nest(mapping: NetworkMapping, nest: LoopNest) -> NetworkMapping:
    return dataclasses.replace(mapping, layers=tuple(nest if l.layer == nest.layer else l for l in mapping.layers))


def replace_loops(s: Storage, **factors: int) -> Storage:
    return dataclasses.replace(s, loops=tuple(Loop(l.dim, factors.get(l.dim, l.factor)) for l in s.loops))


# ----- the format -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("network", "config"), [("alexnet", "eyeriss-v1"), ("resnet18", "scalesim-32x32-ws"),
                                                 ("fsrcnn", "diannao-nlr"), ("mobilenetv2", "shidiannao-os")])
def test_mappings_round_trip_through_yaml_and_json(network: str, config: str, tmp_path: Path) -> None:
    graph = zoo.build(network, (64, 64)) if network == "fsrcnn" else zoo.build(network)
    mapping = default_mapping(graph, load_config(config), 2)
    assert mapping_from_data(json.loads(json.dumps(mapping_data(mapping)))) == mapping
    for name in ("m.yaml", "m.json"):
        save_mapping(mapping, tmp_path / name)
        assert load_mapping(tmp_path / name) == mapping


def test_map_writes_what_estimate_simulate_and_check_replay(cli, tmp_path: Path) -> None:
    out = tmp_path / "alexnet.yaml"
    mapped = cli("map", "alexnet", "--hw", "eyeriss-v1", "--out", str(out), "--json")
    assert mapped.code == 0, mapped.err
    assert yaml.safe_load(out.read_text())["format"] == "hwsim-mapping 1"
    default = cli("estimate", "alexnet", "--hw", "eyeriss-v1", "--json").json()
    replayed = cli("estimate", "alexnet", "--hw", "eyeriss-v1", "--mapping", str(out), "--json").json()
    assert replayed["layers"] == default["layers"]  # type: ignore[index]
    checked = cli("check", "alexnet", "--hw", "eyeriss-v1", "--mapping", str(out), "--trace", str(tmp_path / "a.h5"))
    assert checked.code == 0, checked.out[-2000:]


def test_an_edited_mapping_runs_as_written_and_checks(tmp_path: Path) -> None:
    # AlexNet conv3 on Eyeriss (13x13x256 ifmap, 384 3x3 filters, pad 1): the rule mapping loops M=22 outside
    # C=16 at DRAM, the GLB keeping a 16-channel ifmap tile (4 sets x 4 channels per PE) of the whole 13x13 map.
    # The ifmap's innermost loop with a factor above 1 is C, so each of the 22 filter tiles reads the whole
    # ifmap again: 22 x 13·13·256 words.
    graph = zoo.build("alexnet")
    mapping = default_mapping(graph, EYERISS)
    nest = nest_of(mapping, "conv3")
    dram = nest.storage[0]
    assert [str(l) for l in dram.loops if l.factor > 1] == ["M=22", "C=16"]
    ifmap_words, ofmap_words = 13 * 13 * 256, 13 * 13 * 384
    rules = estimate_mapping(graph, EYERISS, mapping=mapping).estimate.layers
    conv3 = next(l for l in rules if l.layer.name == "conv3")
    assert conv3.counts.transfers[Level.DRAM, Operand.IFMAP, Access.READ] == 22 * ifmap_words
    assert conv3.counts.transfers[Level.DRAM, Operand.PSUM, Access.READ] == 0
    # Swap the order, C outside M: the ifmap tile stays in the GLB across the 22 filter tiles (read once), and
    # the psums of all 384 filters wait in DRAM between channel tiles: read back for C tiles 2..16 and written
    # after each, the last time as the ofmap.
    swapped = dataclasses.replace(dram, loops=tuple(sorted(dram.loops, key=lambda l: l.dim != "C")))
    edited = with_nest(mapping, dataclasses.replace(nest, storage=(swapped, *nest.storage[1:])))
    path = tmp_path / "edited.yaml"
    save_mapping(edited, path)
    est = estimate_mapping(graph, EYERISS, mapping=str(path)).estimate.layers
    t = next(l for l in est if l.layer.name == "conv3").counts.transfers
    assert t[Level.DRAM, Operand.IFMAP, Access.READ] == ifmap_words
    assert t[Level.DRAM, Operand.PSUM, Access.READ] == 15 * ofmap_words
    assert t[Level.DRAM, Operand.PSUM, Access.UPDATE] == 15 * ofmap_words
    assert t[Level.DRAM, Operand.OFMAP, Access.UPDATE] == ofmap_words
    assert t[Level.DRAM, Operand.FILTER, Access.READ] == 384 * 256 * 3 * 3  # each filter word once either way
    report = check_network(graph, EYERISS, mapping=edited, trace_path=tmp_path / "e.h5")
    assert report.ok, report.mismatches


# ----- validation -----------------------------------------------------------------------------------------


def check_one(nest: LoopNest, graph: Graph, hw: Accelerator = EYERISS, batch: int = 1) -> str:
    with pytest.raises(MappingError) as caught:
        check_nest(nest, nest_problem(graph.layer(nest.layer), batch, nest.lowering), hw,
                   DATAFLOWS.get(hw.pe_array.dataflow))
    return str(caught.value)


def conv3_nest() -> tuple[LoopNest, Graph]:
    graph = zoo.build("alexnet")
    return nest_of(default_mapping(graph, EYERISS), "conv3"), graph


def test_factors_that_do_not_cover_a_dim_are_named() -> None:
    nest, graph = conv3_nest()
    short = dataclasses.replace(nest, storage=(replace_loops(nest.storage[0], C=15), *nest.storage[1:]))
    # C = 256 = 16 DRAM tiles x 4 sets x 4 channels per PE; 15 tiles cover 240.
    assert check_one(short, graph) == "layer 'conv3': C: the factors [15, 4, 4] cover 240 of 256; raise a factor of C"
    long = dataclasses.replace(nest, storage=(replace_loops(nest.storage[0], C=18), *nest.storage[1:]))
    assert "C: the outermost factor 18 exceeds the 16 tiles 256 needs" in check_one(long, graph)


def test_spatial_fan_out_beyond_the_array_is_named() -> None:
    nest, graph = conv3_nest()
    # rows R=3 x C=4 x M=1 = 12 PEs; C=8 sets (and 8 DRAM tiles of 8 x 4 channels) need 24 rows of Eyeriss' 12.
    wide = dataclasses.replace(nest, array=dataclasses.replace(nest.array, rows=(Loop("R", 3), Loop("C", 8),
                                                                                 Loop("M", 1))),
                               storage=(replace_loops(nest.storage[0], C=8), *nest.storage[1:]))
    assert "array.rows: R=3 × C=8 × M=1 spreads 24 PEs, the array has 12 rows" in check_one(wide, graph)


def test_register_file_capacity_is_checked_per_operand() -> None:
    nest, graph = conv3_nest()
    # The RF loops C=4, M=18, S=3: ifmap 4·3 = 12 words (RF 12), filters 4·18·3 = 216 (RF 224), psums 18 (RF 24).
    rf = nest.rf
    more_m = dataclasses.replace(nest, rf=replace_loops(rf, M=25), storage=(replace_loops(nest.storage[0], M=16),
                                                                            *nest.storage[1:]))
    assert "rf: a PE keeps 300 filter words, its filter RF holds 224" in check_one(more_m, graph)
    more_c = dataclasses.replace(nest, rf=replace_loops(rf, C=5, M=10),
                                 storage=(replace_loops(nest.storage[0], C=13, M=39), *nest.storage[1:]))
    assert "rf: a PE keeps 15 ifmap words, its ifmap RF holds 12; shrink the rf loops of C, S" in \
        check_one(more_c, graph)


def test_glb_capacity_is_checked() -> None:
    nest, graph = conv3_nest()
    # Hold all 22 filter tiles' psums in the GLB (22 x 18 = 396 ≥ 384 filters x 13·13 = 64,896 words) beside
    # the 16-channel ifmap tile (16 x 13·13 = 2,704 words), filters bypassing it: 67,600 of 51,200 words.
    dram = replace_loops(nest.storage[0], M=1)
    glb = Storage("glb", (*nest.storage[1].loops, Loop("M", 22)), frozenset({"ifmap", "psum"}))
    message = check_one(dataclasses.replace(nest, storage=(dram, glb)), graph)
    assert "glb: ifmap 2,704 + psum 64,896 need 67,600 words, its data partition holds 51,200" in message


def test_the_phases_example_wide_kernel_is_split_never_clamped() -> None:
    graph = zoo.build("phases_example")
    mapping = default_mapping(graph, EYERISS)
    nest = nest_of(mapping, "n2")  # a 17x17 kernel; the ifmap RF holds 12 words
    rf_s = [l.factor for l in nest.rf.loops if l.dim == "S"]
    assert rf_s == [9] and [l.factor for l in nest.storage[0].loops if l.dim == "S"] == [2]  # 17 = 2 folds of 9
    whole = dataclasses.replace(nest, rf=replace_loops(nest.rf, S=17),
                                storage=(replace_loops(nest.storage[0], S=1), *nest.storage[1:]))
    assert "rf: a PE keeps 17 ifmap words, its ifmap RF holds 12" in check_one(whole, graph)


def test_dataflow_constraints_are_named() -> None:
    graph = small_conv()
    hw = array("weight_stationary", 4, 4)
    nest = nest_of(default_mapping(graph, hw), "c")
    rf_loop = dataclasses.replace(nest, rf=dataclasses.replace(nest.rf, loops=(Loop("M", 1),)),
                                  array=dataclasses.replace(nest.array, rows=(Loop("M", 4),), cols=(Loop("C", 4),)))
    message = check_one(rf_loop, graph, hw)
    assert "array.rows: M=4 is not allowed on a weight_stationary array" in message


def test_a_mapping_of_another_network_or_dataflow_is_refused() -> None:
    graph = zoo.build("alexnet")
    mapping = default_mapping(graph, EYERISS)
    with pytest.raises(MappingError, match="the mapping is of network 'alexnet', not 'resnet18'"):
        check_mapping(mapping, zoo.build("resnet18"), EYERISS)
    with pytest.raises(MappingError, match="dataflow 'row_stationary', but scalesim-32x32-ws runs 'weight_stationary'"):
        check_mapping(mapping, graph, load_config("scalesim-32x32-ws"))


@pytest.mark.parametrize(("edit", "fragments"), [
    (lambda d: d["layers"][0]["dram"].update(loops=["M=2", "Q"]), ("layers[0].dram.loops[1]", "not a loop")),
    (lambda d: d["layers"][0].update(dram={"loops": [], "kept": []}), ("layers[0].dram.kept", "unknown key")),
    (lambda d: d.update(format="hwsim-mapping 0"), ("format", "this hwsim reads 'hwsim-mapping 1'")),
    (lambda d: d["layers"][0]["array"]["delivery"].update(ifmap="broadcast"), ("layers[0].array.delivery.ifmap",)),
    (lambda d: d["layers"][0]["dims"].update(C=4), ("layer 'conv1'", "dims.C: the mapping says 4, the layer has 3")),
])
def test_a_bad_mapping_file_is_one_line_naming_file_and_field(cli, tmp_path: Path, edit, fragments) -> None:
    data = mapping_data(default_mapping(zoo.build("alexnet"), EYERISS))
    edit(data)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    result = cli("estimate", "alexnet", "--hw", "eyeriss-v1", "--mapping", str(path))
    assert_one_line_error(result, *fragments)


def test_a_mapping_for_another_batch_is_refused(cli, tmp_path: Path) -> None:
    out = tmp_path / "b2.yaml"
    assert cli("map", "alexnet", "--hw", "eyeriss-v1", "--batch", "2", "--out", str(out)).code == 0
    result = cli("estimate", "alexnet", "--hw", "eyeriss-v1", "--batch", "4", "--mapping", str(out))
    assert_one_line_error(result, "made for batch 2, asked for 4")
    assert cli("estimate", "alexnet", "--hw", "eyeriss-v1", "--mapping", str(out), "--json").json()["batch"] == 2


# ----- systolic timing by hand ------------------------------------------------------------------------------

# The small conv as SCALE-Sim sees it on a 4x4 array: its im2col GEMM has K = 3·3·3 = 27 window rows, M = 5
# filters and T = 4·4 = 16 output pixels. A fold of T' streamed steps takes 2R + C + T' − 2 cycles (weight and
# input stationary) or R + C + T' − 2 (output stationary) on an R x C array (SCALE-Sim's compute model; its report
# gives the last cycle's index, one less than these counts):
#   WS: rows ← K, cols ← M, stream T:  ⌈27/4⌉·⌈5/4⌉ = 14 folds × (8 + 4 + 16 − 2 = 26) = 364
#   OS: rows ← T, cols ← M, stream K:  ⌈16/4⌉·⌈5/4⌉ =  8 folds × (4 + 4 + 27 − 2 = 33) = 264
#   IS: rows ← K, cols ← T, stream M:  ⌈27/4⌉·⌈16/4⌉ = 28 folds × (8 + 4 + 5 − 2 = 15) = 420
FOLD_CYCLES = {"weight_stationary": (14, 364), "output_stationary": (8, 264), "input_stationary": (28, 420)}


@pytest.mark.parametrize("dataflow", sorted(FOLD_CYCLES))
def test_systolic_compute_cycles_by_hand(dataflow: str, tmp_path: Path) -> None:
    graph, hw = small_conv(), array(dataflow, 4, 4)
    folds, cycles = FOLD_CYCLES[dataflow]
    est = next(l for l in estimate_mapping(graph, hw).estimate.layers if l.layer.name == "c")
    assert (est.counts.passes, est.counts.compute_cycles, est.counts.macs) == (folds, cycles, 27 * 5 * 16)
    sim = simulate_network(graph, hw, trace_path=tmp_path / "s.h5")
    run = next(l for l in sim.result.layers if l.name == "c")
    assert (run.passes, run.compute_cycles) == (folds, cycles)


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_config_maps_and_checks_alexnet_conv_layers(path: Path) -> None:
    hw = load_config(path.stem)
    graph = zoo.build("alexnet")
    mapping = default_mapping(graph, hw)
    check_mapping(mapping, graph, hw)
    assert {l.layer for l in mapping.layers if isinstance(l, LoopNest)} >= {"conv1", "conv2", "fc8"}


def test_a_pass_that_delivers_its_tile_again_stays_inside_the_buffer(tmp_path: Path) -> None:
    # AlexNet conv3 at batch 4 with the images streamed inside the output columns (stream Q=13, N=4): the
    # window cannot slide across images, so each pass delivers its 8-channel ifmap tile's columns once per
    # (column, image): 4 · 8 · 13 · 37 = 15,392 words from a 5,408-word GLB tile, 45,504 words into the GLB's
    # 51,200-word data partition after the 43,264 psum words. The pass's reads must stay inside the partition.
    graph = zoo.build("alexnet")
    data = mapping_data(default_mapping(graph, EYERISS, 4))
    conv3 = next(l for l in data["layers"] if l["layer"] == "conv3")
    conv3.update(dram={"loops": ["M=6", "C=32"], "keeps": ["ifmap", "filter", "psum"]},
                 glb={"loops": ["M=2"], "keeps": ["ifmap", "psum"]},
                 array={"rows": ["R=3", "C=2", "M=2"], "cols": ["P=13"], "stream": ["Q=13", "N=4"],
                        "delivery": {"ifmap": "multicast", "filter": "multicast"}},
                 rf={"loops": ["C=4", "M=16", "S=3"], "keeps": ["ifmap", "filter", "psum"]})
    mapping = mapping_from_data(data)
    est = next(l for l in estimate_mapping(graph, EYERISS, mapping=mapping).estimate.layers
               if l.layer.name == "conv3")
    passes = 6 * 32 * 2  # DRAM M=6 x C=32, GLB M=2
    # columns 0 and 12 see one padding column each: 13 positions x 3 columns − 2 = 37 columns read per row
    assert est.counts.transfers[Level.GLB, Operand.IFMAP, Access.READ] == passes * 4 * 8 * 13 * 37
    report = check_network(graph, EYERISS, mapping=mapping, trace_path=tmp_path / "c3.h5")
    assert report.ok, report.mismatches


def _odd_shapes() -> Graph:
    """Layers the zoo lacks: transposed convolutions (U-Net's 2×2 stride 2, 3×3 and 4×4 stride 2, an 8×8 stride 4),
    grouped, depthwise and dilated convolutions, 1×N and N×1 kernels, a 1-D signal's 1×80 stride 4."""
    b = GraphBuilder("odd")
    x = b.input("x", 64, 28, 28)
    for name, k, s in (("up2", 2, 2), ("up3", 3, 2), ("up4", 4, 2), ("up8", 8, 4)):
        b.output(f"{name}_out", b.conv_transpose(name, x, 32, k, stride=s))
    for name, conv in (("grouped", dict(kernel=3, padding=1, groups=4)), ("depthwise", dict(kernel=3, groups=64)),
                       ("dilated", dict(kernel=3, padding=6, dilation=6)), ("one_by_n", dict(kernel=(1, 7))),
                       ("n_by_one", dict(kernel=(7, 1))), ("strided", dict(kernel=5, stride=3))):
        b.output(f"{name}_out", b.conv(name, x, 64, **conv))
    signal = b.input("signal", 1, 1, 8000)
    b.output("m5_out", b.conv("m5", signal, 128, (1, 80), stride=(1, 4)))
    return b.build()


@pytest.mark.parametrize("config", sorted(p.stem for p in CONFIGS.glob("*.yaml")))
def test_the_rule_mapper_never_emits_a_mapping_its_checker_refuses(config: str) -> None:
    """Every layer of every zoo network (at about 64 pixels) and of the odd shapes above, on every shipped config:
    the dataflow's rule either maps it to a nest the checker accepts, or refuses it itself with a MappingError
    naming the hardware limit (a GLB too small for one output row, a psum RF smaller than the outputs a transposed
    convolution's pixel owns); it never emits a nest the checker then refuses."""
    from hwsim.mapping.mapper import NO_STEPS, check_layer, layer_hardware, layer_mapping

    hw = load_config(config)
    for graph in [*(small_zoo_graph(n) for n in zoo.names()), _odd_shapes()]:
        for layer in graph:
            if layer.kind in NO_STEPS:
                continue
            at_word = layer_hardware(hw, layer.word_bits)
            try:
                entry = layer_mapping(layer, at_word, 1)
            except MappingError as exc:
                assert "raise glb.size" in str(exc) or "psum RF of at least" in str(exc), str(exc)
                continue
            mapping = NetworkMapping(graph.name, hw.name, hw.pe_array.dataflow, 1, (entry,))
            check_layer(mapping, layer, at_word)
