"""Runs at another word width: the precision rules, `--bits`, and a quantized graph run at its own width.

Expected values come from CNNergy's 8-bit table (written by hand into configs/eyeriss-8bit.yaml, not derived
by code), from the MAC split CNNergy gives (0.05 pJ add + 0.9 pJ multiply at 16 bit), and from word counts of
small networks worked out below.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import onnx
import onnx_modern as M
import pytest
from conftest import assert_one_line_error

from hwsim.flows import check_network, estimate_mapping, map_network, simulate_network
from hwsim.hardware import load_config
from hwsim.hardware.precision import at_precision
from hwsim.workload.network import load_network
from hwsim.workload.onnx_import import load_onnx
from hwsim.workload.precision import graph_bits

EYERISS_MAC_PJ = 1.694  # configs/eyeriss-v1.yaml: (0.05 + 0.9) pJ at 45 nm × 1.7833


def unsourced(section: Any) -> Any:
    """A config section without the text that says where its numbers come from."""
    return replace(section, source="")


def test_the_rules_rebuild_cnnergys_8bit_table() -> None:
    """eyeriss-v1 at 8 bit is the hand-written eyeriss-8bit in every size, width, word count and energy."""
    scaled, hand = at_precision(load_config("eyeriss-v1"), 8), load_config("eyeriss-8bit")
    assert scaled.precision_bits == 8 and scaled.name == "eyeriss-v1@8b"
    assert scaled.pe_array.rf == hand.pe_array.rf  # 448/24/48 words at 0.847 pJ
    assert unsourced(scaled.glb) == unsourced(hand.glb)  # same bytes, 8 words per 64-bit port, 5.08 pJ
    assert unsourced(scaled.noc) == unsourced(hand.noc)  # same buses, inter-PE 1.694 pJ
    assert scaled.dram.energy_pj_per_bit == hand.dram.energy_pj_per_bit == 21.175
    assert unsourced(scaled.control) == unsourced(hand.control)
    assert scaled.pe_array.mac_energy_pj == pytest.approx(hand.pe_array.mac_energy_pj, abs=5e-5)  # 0.4458 pJ


def test_a_mac_scales_its_multiplier_with_bits_squared_and_its_adder_with_bits() -> None:
    """CNNergy's 16-bit MAC is 0.05 add + 0.9 multiply: at 8 bit 0.025 + 0.225 (5/19 of it), at 32 bit
    0.1 + 3.6 (74/19 of it)."""
    hw = load_config("eyeriss-v1")
    assert at_precision(hw, 8).pe_array.mac_energy_pj == pytest.approx(EYERISS_MAC_PJ * 5 / 19)
    assert at_precision(hw, 32).pe_array.mac_energy_pj == pytest.approx(EYERISS_MAC_PJ * 74 / 19)
    assert at_precision(hw, 32).glb.read_energy_pj == pytest.approx(2 * 10.16)


def test_word_counts_keep_their_bytes_and_a_single_register_widens() -> None:
    wide = at_precision(load_config("eyeriss-v1"), 32)
    rf = wide.pe_array.rf
    assert rf is not None and (rf.filter_words, rf.ifmap_words, rf.psum_words) == (112, 6, 12)  # 224/12/24 halved
    assert wide.glb.words_per_port == 2  # one 64-bit line: four 16-bit words, two 32-bit ones
    assert (wide.glb.size_bytes, wide.noc.ifmap_bus_bits) == (108 * 1024, 64)
    systolic = at_precision(load_config("scalesim-12x14-ws"), 16)  # one 8-bit register per operand
    rf = systolic.pe_array.rf
    assert rf is not None and (rf.filter_words, rf.ifmap_words, rf.psum_words) == (1, 1, 1)
    assert systolic.glb.words_per_port == 7  # 14 bytes a cycle


def test_a_code_packs_as_many_pairs_as_its_word_holds() -> None:
    """Eyeriss' RLC word: 64 bit = 3 × (5-bit run + 16-bit value) + 1 flag bit. At 8 bit a pair is 13 bit and
    ⌊63 / 13⌋ = 4 fit; at 32 bit ⌊63 / 37⌋ = 1."""
    hw = load_config("eyeriss-v1")
    code8, code32 = at_precision(hw, 8).dram.compression, at_precision(hw, 32).dram.compression
    assert code8 is not None and (code8.value_bits, code8.pairs_per_word, code8.word_bits) == (8, 4, 64)
    assert code32 is not None and (code32.value_bits, code32.pairs_per_word) == (32, 1)


def test_one_mapping_at_half_the_bits_prices_each_access_at_half() -> None:
    """The same mapping at 8 bit instead of 16 moves the same words: every count stays, DRAM bytes halve, and the
    energy of each access halves (energy per bit kept) except a MAC's, 5/19 of it."""
    hw = load_config("eyeriss-v1")
    mapping = map_network("alexnet", hw, bits=16).mapping
    wide = estimate_mapping("alexnet", hw, mapping=mapping, bits=16)
    narrow = estimate_mapping("alexnet", hw, mapping=mapping, bits=8)
    for a, b in zip(wide.estimate.layers, narrow.estimate.layers, strict=True):
        assert (a.counts.transfers == b.counts.transfers).all() and a.counts.macs == b.counts.macs
    assert narrow.totals.dram_bytes * 2 == wide.totals.dram_bytes
    for component in ("rf", "glb", "dram", "inter_pe"):
        assert narrow.estimate.total_pj(component) == pytest.approx(wide.estimate.total_pj(component) / 2)
    assert narrow.estimate.total_pj("mac") == pytest.approx(wide.estimate.total_pj("mac") * 5 / 19)


def test_the_rescaled_config_simulates_like_the_hand_written_one(tmp_path: Path) -> None:
    """Dense, the two 8-bit Eyeriss configs differ only in zero gating and the DRAM code (neither acts on dense
    data) and the MAC's fourth digit: same cycles, same DRAM bytes, same energy to 1e-4."""
    scaled = simulate_network("resnet18", "eyeriss-v1", trace_path=tmp_path / "a.h5", bits=8)
    hand = simulate_network("resnet18", "eyeriss-8bit", trace_path=tmp_path / "b.h5")
    assert scaled.hardware.name == "eyeriss-v1@8b"
    assert scaled.result.cycles == hand.result.cycles
    assert scaled.totals.dram_bytes == hand.totals.dram_bytes
    total = sum(hand.totals.energy_by_component_pj.values())
    assert sum(scaled.totals.energy_by_component_pj.values()) == pytest.approx(total, rel=1e-4)


def _simulate(cli, model: Path, out: Path, *more: str) -> dict:
    result = cli("simulate", str(model), "--hw", "eyeriss-v1", "--out", str(out), "--json", *more)
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_an_int8_qdq_graph_runs_at_8_bit_like_its_float_twin_with_bits_8(cli, tmp_path: Path) -> None:
    """onnxruntime's QDQ graph of three convs on a 16-bit config runs at the 8 bit it declares, its ReLUs fused
    across the Q/DQ pairs, exactly as its float twin with --bits 8.

    DRAM words, each tensor moved once (every layer fits the GLB): input 3·16·16 = 768, weights 3·3·3·8 + 3·3·8·8
    + 8·4 = 824, conv1's and conv2's outputs 8·16·16 = 2048 written and read back (4 × 2048), conv3's 4·16·16 =
    1024 written: 10,808 words, 10,808 bytes at 8 bit, 21,616 at 16."""
    quant, twin = tmp_path / "q.onnx", tmp_path / "f.onnx"
    onnx.save(M.qdq_convs(True), str(quant))
    onnx.save(M.qdq_convs(False), str(twin))
    for model in (quant, twin):
        fused = [l.activation for l in load_onnx(model).graph if l.activation is not None]
        assert len(fused) == 2, model
    q = _simulate(cli, quant, tmp_path / "q.h5")
    f = _simulate(cli, twin, tmp_path / "f.h5", "--bits", "8")
    assert q["word_bits"] == f["word_bits"] == 8 and q["hardware"] == "eyeriss-v1@8b"
    assert q["cycles"] == f["cycles"]
    assert q["totals"]["dram_bytes"] == f["totals"]["dram_bytes"] == 10_808
    assert q["notes"][0].startswith("running at 8 bit (3 layers quantized in the graph)") and q["warnings"] == []
    wide = _simulate(cli, quant, tmp_path / "w.h5", "--bits", "16")
    assert wide["word_bits"] == 16 and wide["totals"]["dram_bytes"] == 21_616
    assert wide["notes"][0] == "3 layers declare 8-bit operands and run at 16 bit, as --bits asks"
    assert q["notes"][1].startswith("3 layers accumulate in 32 bit: hwsim keeps their psums at the layer's word")
    assert _simulate(cli, twin, tmp_path / "t.h5")["word_bits"] == 16  # a float graph keeps the config's word


def test_a_graph_of_mixed_widths_runs_each_layer_at_its_own(cli, tmp_path: Path) -> None:
    """qdq_mixed: conv1 (int8, 3 → 4, 3×3) and conv2 (float weights on an int8 input, 4 → 8, 1×1) run at 8 bit,
    conv3 (int16, 8 → 2, 1×1) at 16, on the 16-bit eyeriss-v1 kept as it is.

    DRAM words per layer on an 8×8 map, each tensor once: conv1 192 in + 108 weights + 256 out = 556 (bytes at 8
    bit: 556); conv2 256 + 32 + 512 = 800 (800 B); conv3 512 + 16 + 128 = 656 words, 1,312 B at 16 bit."""
    path = tmp_path / "mixed.onnx"
    onnx.save(M.qdq_mixed(), str(path))
    assert graph_bits(load_onnx(path).graph) == 16
    doc = _simulate(cli, path, tmp_path / "m.h5")
    assert doc["hardware"] == "eyeriss-v1" and doc["notes"][0].startswith("mixed precision")
    layers = {l["name"]: (l["word_bits"], l["dram_bytes"]) for l in doc["layers"]}
    assert list(layers.values()) == [(8, 556), (8, 800), (16, 1312)]
    assert doc["totals"]["dram_bytes"] == 556 + 800 + 1312
    assert json.loads(cli("trace", "validate", str(tmp_path / "m.h5"), "--json").out)["ok"]


@pytest.mark.parametrize("hw", ["eyeriss-v1", "eyeriss-8bit", "tpu-like-ws", "edge-soc-l2"])
def test_a_mixed_graph_checks(hw: str, tmp_path: Path) -> None:
    """Counts, energy, the latency bound and the trace's physics hold with each layer at its own word, from a
    16-bit or an 8-bit config, a systolic array and an L2."""
    path = tmp_path / "mixed.onnx"
    onnx.save(M.qdq_mixed(), str(path))
    report = check_network(load_onnx(path).graph, hw, trace_path=tmp_path / "m.h5")
    assert report.ok and report.validation is not None and report.validation.ok


def test_each_layer_of_a_mixed_run_costs_what_it_costs_at_its_word_alone(tmp_path: Path) -> None:
    """A layer's mapping, counts and prices follow its own word only: in the mixed run each layer's energy (clock
    and control apart, which follow the run's cycles) is that of the same layer in a run of the whole graph at its
    word, and the 8-bit layers, whose tensors lie where an all-8-bit run puts them, take the same cycles."""
    graph = load_onnx(_saved(M.qdq_mixed(), tmp_path / "mixed.onnx")).graph
    mixed = simulate_network(graph, "eyeriss-v1", trace_path=tmp_path / "m.h5")
    alone = {bits: simulate_network(graph, "eyeriss-v1", trace_path=tmp_path / f"{bits}.h5", bits=bits)
             for bits in (8, 16)}
    runs = {bits: {r.name: r for r in sim.result.layers} for bits, sim in alone.items()}
    priced = ("mac", "rf", "inter_pe", "glb", "dram")
    for layer, bits in (("c1", 8), ("c2", 8), ("y_1", 16)):
        got, want = mixed.metrics.layer(layer), alone[bits].metrics.layer(layer)
        assert got.word_bytes * 8 == bits
        assert [got.energy_pj[c] for c in priced] == pytest.approx([want.energy_pj[c] for c in priced])
        assert (got.transfers == want.transfers).all()
    mixed_runs = {r.name: r for r in mixed.result.layers}
    assert [mixed_runs[n].cycles for n in ("c1", "c2")] == [runs[8][n].cycles for n in ("c1", "c2")]


def test_a_layer_the_quantizer_left_in_float_runs_at_the_configs_word(cli, tmp_path: Path) -> None:
    """qdq_then_float: conv1 (int8, 3 → 4, 1×1) at 8 bit, conv2 (float, 4 → 2, 1×1, reading conv1's output with no
    Q/DQ pair) at eyeriss-v1's 16. On a 4×4 image: conv1 moves 48 + 12 + 64 = 124 words, 124 B; conv2 64 + 8 + 32
    = 104 words, 208 B."""
    doc = _simulate(cli, _saved(M.qdq_then_float(), tmp_path / "qf.onnx"), tmp_path / "qf.h5")
    assert [(l["name"], l["word_bits"], l["dram_bytes"]) for l in doc["layers"]] == [("conv1", 8, 124),
                                                                                      ("conv2", 16, 208)]
    assert doc["notes"][0].startswith("mixed precision (1 layer quantized in the graph): layers run at their own "
                                      "word, 1 at 8 bit, 1 at 16 bit")


def _saved(model: onnx.ModelProto, path: Path) -> Path:
    onnx.save(model, str(path))
    return path


def test_a_bad_width_is_one_line(cli) -> None:
    result = cli("simulate", "alexnet", "--hw", "eyeriss-v1", "--bits", "12")
    assert result.code == 2 and "--bits" in result.err and "8, 16 or 32" in result.err


def test_check_passes_at_each_width(tmp_path: Path) -> None:
    """The analytic side and the trace agree, and the trace keeps the physics, on configs rescaled both ways."""
    for hw, bits in (("eyeriss-v1", 8), ("eyeriss-v1", 32), ("tpu-like-ws", 16), ("edge-soc-l2", 16)):
        graph = load_network("alexnet" if hw != "edge-soc-l2" else "resnet18", (67, 67)).graph
        report = check_network(graph, hw, bits=bits, trace_path=tmp_path / f"{hw}-{bits}.h5")
        assert report.ok, (hw, bits)


def test_info_counts_bytes_at_the_declared_width(cli, tmp_path: Path) -> None:
    path = tmp_path / "q.onnx"
    onnx.save(M.qdq_convs(True), str(path))
    doc = json.loads(cli("info", str(path), "--json").out)
    assert doc["bits"] == 8 and doc["totals"]["param_bytes"] == 824  # one byte per int8 weight


def test_an_unusable_rescale_is_one_line(cli, tmp_path: Path) -> None:
    """A GLB of 6 banks of 3 bytes holds no whole 32-bit word in a bank: the rescale names it."""
    config = tmp_path / "odd.yaml"
    config.write_text("base: eyeriss-8bit\nname: odd\nglb:\n  size: 18 B\n  filter: 0 B\n  banks: 6\n")
    assert_one_line_error(cli("estimate", "alexnet", "--hw", str(config), "--bits", "32"), str(config),
                          "odd at 32 bit: glb.size: 18 B is not a whole number of 32-bit words")
