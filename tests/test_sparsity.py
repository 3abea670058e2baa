"""Sparsity: run-length coding of hand-made tensors against counts derived here (and a literal encoder), profile
files, and a small ReLU network measured with onnx's reference runner against loops written here."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import sparse_net
from conftest import assert_one_line_error

import hwsim.trace
from hwsim.analytic.graph_adapter import SPARSITY_PRESETS
from hwsim.flows.check import check_simulation
from hwsim.flows.inputs import SPARSITY_CHOICES
from hwsim.flows.simulate import simulate_network
from hwsim.hardware.loader import Overrides, load_config
from hwsim.hardware.schema import Compression
from hwsim.mapping.nest.problem import nest_problem
from hwsim.sparsity import names
from hwsim.sparsity.codec import RunLength, codec, rlc_pairs
from hwsim.sparsity.onnx_run import measure_onnx
from hwsim.sparsity.profile import LayerZeros, SparsityError, read_profile
from hwsim.vocab import OTHER, Op
from hwsim.workload import zoo
from hwsim.workload.onnx_import import load_onnx

EYERISS = Compression()  # 5-bit runs, 16-bit values, 3 pairs per 64-bit word
RLC16 = codec(EYERISS, 16)


def literal_pairs(values: list[int], run_bits: int = 5) -> list[tuple[int, int]]:
    """The encoder as the Eyeriss paper states it, one word at a time: zeros count into the run; a nonzero, or a
    zero once the run is full, closes the pair; leftover zeros close one last pair (run − 1, 0)."""
    full = (1 << run_bits) - 1
    pairs, run = [], 0
    for v in values:
        if v == 0 and run < full:
            run += 1
        else:
            pairs.append((run, v))
            run = 0
    if run:
        pairs.append((run - 1, 0))
    return pairs


def decode(pairs: list[tuple[int, int]]) -> list[int]:
    out: list[int] = []
    for run, value in pairs:
        out += [0] * run + [value]
    return out


def test_all_zeros() -> None:
    tile = np.zeros(100, dtype=np.int16)
    # 100 zeros: three pairs (31, 0) cover 96, the last four are (3, 0): 4 pairs, two 64-bit words = 8 words.
    assert rlc_pairs(tile, 5).tolist() == [4]
    assert RLC16.coded_words(tile).tolist() == [8]
    assert literal_pairs([0] * 100) == [(31, 0)] * 3 + [(3, 0)]


def test_no_zeros_moves_raw() -> None:
    tile = np.arange(1, 11, dtype=np.int16)
    # Ten nonzeros: ten pairs, ⌈10 / 3⌉ = 4 coded words = 16 words, more than the 10 raw words: the tile moves raw.
    assert rlc_pairs(tile, 5).tolist() == [10]
    assert RLC16.coded_words(tile).tolist() == [10]


def test_runs_longer_than_31() -> None:
    cases = {31: 1, 32: 2, 63: 2, 64: 3, 70: 3}  # zeros before one nonzero: 1 + ⌊zeros / 32⌋ pairs
    for zeros, pairs in cases.items():
        tile = np.array([0] * zeros + [7])
        assert rlc_pairs(tile, 5).tolist() == [pairs], zeros
        assert len(literal_pairs(tile.tolist())) == pairs
    # 70 zeros and a 7: (31, 0) (31, 0) (6, 7).
    assert literal_pairs([0] * 70 + [7]) == [(31, 0), (31, 0), (6, 7)]


def test_a_pair_split_across_words() -> None:
    # (0, 1) (1, 2) (2, 3) fill the first 64-bit word; (0, 4) and the trailing (14, 0) start a second: 8 words.
    tile = [1, 0, 2, 0, 0, 3, 4] + [0] * 15
    assert literal_pairs(tile) == [(0, 1), (1, 2), (2, 3), (0, 4), (14, 0)]
    assert RLC16.coded_words(np.array([tile])).tolist() == [8]
    # The escape of a 40-zero run is the second pair, its value the fourth: 1, (31, 0), (8, 5), 6 -> 2 words.
    tile = [1] + [0] * 40 + [5, 6]
    assert literal_pairs(tile) == [(0, 1), (31, 0), (8, 5), (0, 6)]
    assert rlc_pairs(np.array(tile), 5).tolist() == [4]
    assert RLC16.coded_words(np.array(tile)).tolist() == [8]
    # Trailing zeros after a full run: 1 then 33 zeros: (0, 1) (31, 0) (0, 0): three pairs, one word = 4 words.
    assert literal_pairs([1] + [0] * 33) == [(0, 1), (31, 0), (0, 0)]
    assert RLC16.coded_words(np.array([1] + [0] * 33)).tolist() == [4]


def test_rows_are_coded_separately_and_match_a_literal_encoder() -> None:
    rng = np.random.default_rng(7)
    for density in (0.0, 0.02, 0.3, 0.9, 1.0):
        tiles = (rng.random((40, 257)) < density) * rng.integers(1, 100, (40, 257))
        expected = [len(literal_pairs(row.tolist())) for row in tiles]
        assert rlc_pairs(tiles, 5).tolist() == expected
        for row in tiles:
            assert decode(literal_pairs(row.tolist())) == row.tolist()  # the literal encoder is lossless


def test_expected_words_of_a_zero_fraction() -> None:
    # 1000 words, 75 % zeros: 250 nonzeros need 250 pairs (at least ⌈1000 / 32⌉ = 32): 84 coded words = 336 words.
    assert RLC16.expected_words(np.array([1000]), 0.75).tolist() == [336]
    # All zeros: ⌈1000 / 32⌉ = 32 pairs, 11 coded words = 44 words; dense: raw.
    assert RLC16.expected_words(np.array([1000]), 1.0).tolist() == [44]
    assert RLC16.expected_words(np.array([1000]), 0.0).tolist() == [1000]
    # 8-bit data, CNNergy's 4-bit runs and five 12-bit pairs per 64-bit word (8 data words each).
    rlc8 = codec(Compression(run_bits=4, value_bits=8, pairs_per_word=5), 8)
    assert rlc8.expected_words(np.array([100]), 0.5).tolist() == [80]  # 50 pairs, 10 coded words


def test_format_errors_name_the_field() -> None:
    assert RunLength.config_errors(EYERISS, 16, "dram.compression") == []
    errors = RunLength.config_errors(Compression(pairs_per_word=4), 16, "dram.compression")
    assert len(errors) == 1 and errors[0].startswith("dram.compression.pairs_per_word: 4 pairs of 21 bit need 84")
    assert RunLength.config_errors(Compression(), 8, "l2.compression")[0].startswith("l2.compression.value_bits")


@pytest.mark.parametrize("name", ["none", "rlc"])
def test_codecs_by_name(name: str) -> None:
    coded = codec(Compression(format=name), 16).coded_words(np.zeros((2, 9)))
    assert coded.tolist() == ([9, 9] if name == "none" else [4, 4])


# ----- where zeros come from ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sparse(tmp_path_factory: pytest.TempPathFactory):
    """The small ReLU network of sparse_net, imported, and its tensors measured with onnx's reference runner."""
    folder = tmp_path_factory.mktemp("sparse")
    path = sparse_net.build(folder / "net.onnx")
    np.save(folder / "in.npy", sparse_net.image())
    result = load_onnx(path)
    return path, result, measure_onnx(path, result, folder / "in.npy", runner="reference"), folder


def _conv_relu(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """3×3 convolution, padding 1, stride 1, then ReLU, by explicit loops over the output."""
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1)))
    out = np.zeros((w.shape[0], x.shape[1], x.shape[2]))
    for m in range(w.shape[0]):
        for i in range(x.shape[1]):
            for j in range(x.shape[2]):
                out[m, i, j] = (padded[:, i:i + 3, j:j + 3] * w[m]).sum() + b[m]
    return np.maximum(out, 0)


def test_measured_tensors_are_the_networks_activations(sparse) -> None:
    _, _, measured, _ = sparse
    w = sparse_net.weights()
    c1 = _conv_relu(sparse_net.image().astype(np.float64), w["w1"], w["b1"])
    p1 = c1.reshape(8, 6, 2, 6, 2).max(axis=(2, 4))
    c2 = _conv_relu(p1, w["w2"], w["b2"])
    for name, expected in (("conv1", c1), ("pool1", p1), ("conv2", c2)):
        got = measured.activations[name]
        assert np.allclose(got, expected, atol=1e-4), name
        assert np.array_equal(got == 0, expected == 0), name  # the zeros themselves
    assert np.array_equal(measured.weights["conv2"], w["w2"])
    assert measured.weights["fc"].shape == (10, 288, 1, 1)


def _zero_macs_by_loops(x: np.ndarray, m: int, r: range, s: range, p: range, q: range, c: range) -> int:
    """MACs of filters × (channels c, output rows p, columns q, kernel rows r, columns s) whose ifmap word is
    zero, 3×3 window padding 1 stride 1: one by one."""
    zeros = 0
    for ci in c:
        for pi in p:
            for qi in q:
                for ri in r:
                    for si in s:
                        h, w = pi + ri - 1, qi + si - 1
                        inside = 0 <= h < x.shape[1] and 0 <= w < x.shape[2]
                        zeros += (not inside) or x[ci, h, w] == 0
    return zeros * m


def test_zero_macs_of_a_layer_and_of_passes(sparse) -> None:
    _, result, measured, _ = sparse
    conv2 = result.graph.layer("conv2")
    x = measured.activations["pool1"]
    whole = _zero_macs_by_loops(x, 8, range(3), range(3), range(6), range(6), range(8))
    assert measured.layer_zeros(conv2).zero_macs == whole / conv2.macs
    problem = nest_problem(conv2, 1)
    tiles = measured.layer_tiles(conv2, problem, problem, im2col=False)
    # Three passes: different channels, rows, columns, kernel rows and filters.
    start = {"N": [0, 0, 0], "G": [0, 0, 0], "M": [0, 2, 5], "C": [0, 3, 1], "P": [0, 2, 4], "Q": [1, 0, 3],
             "R": [0, 1, 2], "S": [0, 0, 1]}
    length = {"N": [1, 1, 1], "G": [1, 1, 1], "M": [2, 3, 1], "C": [3, 5, 7], "P": [2, 3, 2], "Q": [4, 6, 3],
              "R": [3, 2, 1], "S": [3, 3, 2]}
    got = tiles.zero_macs({d: np.array(v) for d, v in start.items()}, {d: np.array(v) for d, v in length.items()})
    expected = [_zero_macs_by_loops(x, length["M"][i], *(range(start[d][i], start[d][i] + length[d][i])
                                                         for d in "RSPQC")) for i in range(3)]
    assert got.tolist() == expected


def test_tile_values_in_streaming_order(sparse) -> None:
    _, result, measured, _ = sparse
    conv2 = result.graph.layer("conv2")
    problem = nest_problem(conv2, 1)
    tiles = measured.layer_tiles(conv2, problem, problem, im2col=False)
    x = measured.activations["pool1"]
    # Output rows 2-3 with kernel rows 0-2 read ifmap rows 1-4 (padding 1); output columns 0-5 read columns 0-5.
    t = {"G": (0, 1), "C": (2, 4), "P": (2, 4), "R": (0, 3), "Q": (0, 6), "S": (0, 3)}
    assert np.array_equal(tiles.ifmap_values(t), x[2:4, 1:5, 0:6].reshape(-1))
    y = measured.activations["conv2"]
    assert np.array_equal(tiles.ofmap_values({"G": (0, 1), "M": (1, 3), "P": (0, 6), "Q": (2, 5)}),
                          y[1:3, :, 2:5].reshape(-1))
    w = measured.weights["conv2"]
    assert np.array_equal(tiles.filter_values({"G": (0, 1), "M": (4, 8), "C": (0, 8), "R": (0, 3), "S": (0, 3)}),
                          w[4:8].reshape(-1))


def test_profile_files(tmp_path, sparse) -> None:
    _, result, _, _ = sparse
    graph = result.graph
    csv_file = tmp_path / "p.csv"
    csv_file.write_text("# measured elsewhere\nlayer,ifmap,filter,ofmap\nconv2,0.4,0.25,0.5\nfc,0.5,,0\n")
    profile = read_profile(csv_file, graph)
    assert profile.kind == "profile" and str(csv_file) in profile.source
    conv2 = profile.zeros("conv2")
    # conv2's 6×6 ifmap padded to 8×8: 0.4·36 zeros plus the 28 of the ring, of 64.
    assert (conv2.ifmap, conv2.filter, conv2.ofmap) == (0.4, 0.25, 0.5)
    assert conv2.zero_macs == pytest.approx((0.4 * 36 + 28) / 64)
    assert profile.zeros("conv1") == LayerZeros()  # not named: dense
    yaml_file = tmp_path / "p.yaml"
    yaml_file.write_text("layers:\n  conv1: {ofmap: 0.6, zero_macs: 0.1}\n")
    assert read_profile(yaml_file, graph).zeros("conv1") == LayerZeros(0.0, 0.0, 0.6, 0.1)
    for text, message in (("layer,ifmap\nconv9,0.1\n", "has no layer 'conv9'; did you mean"),
                          ("layer,ifmap\nconv1,1.5\n", "p.csv:2: ifmap: 1.5 is not a fraction"),
                          ("layer,ifmap,zeros\nconv1,0.1,0\n", "unknown column 'zeros'")):
        csv_file.write_text(text)
        with pytest.raises(SparsityError, match=message):
            read_profile(csv_file, graph)


# ----- zero gating and zero skipping in the simulated path ----------------------------------------------------


def _hw(**switches: object):
    return load_config("eyeriss-v1", Overrides("test", tuple((f"pe_array.{k}", v) for k, v in switches.items())))


def _passes(trace_path: Path, layer: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pass of `layer`: its MACs, active PEs and duration, and the MACs its skip record spared."""
    with hwsim.trace.open(trace_path) as t:
        pe = np.concatenate(list(t.records("pe", layer=layer)))
    macs = pe[(pe["op"] == Op.UPDATE) & (pe["operand"] == OTHER)]
    skip = pe[(pe["op"] == Op.SKIP) & (pe["operand"] == OTHER)]
    spared = dict(zip(skip["step"].tolist(), skip["words"].tolist()))
    return macs, np.array([spared.get(s, 0) for s in macs["step"].tolist()]), macs["end_cycle"] - macs["start_cycle"]


@pytest.mark.parametrize("switch", ["zero_gating", "zero_skipping"])
def test_each_pass_spares_the_floor_of_its_zero_macs(tmp_path, switch: str) -> None:
    """A profile's 60 % zero MACs on conv3 of AlexNet: each pass of W MACs on A PEs spares ⌊0.6·W⌋ MACs; gating
    keeps its ⌈W / A⌉ cycles, skipping takes ⌈(W − ⌊0.6·W⌋) / A⌉ (eyeriss-v1: one MAC per PE-cycle, no fill)."""
    profile = tmp_path / "p.csv"
    profile.write_text("layer,ifmap,zero_macs\nconv3,0.5,0.6\n")
    graph = zoo.build("alexnet")
    switches = {"zero_gating": False, switch: True}
    sim = simulate_network(graph, _hw(**switches), 1, tmp_path / "t.h5",
                           sparsity=read_profile(profile, graph))
    macs, spared, cycles = _passes(sim.trace, "conv3")
    work, active = macs["words"], macs["address"]
    assert np.array_equal(spared, np.floor(work * 0.6).astype(np.int64))
    done = work - spared if switch == "zero_skipping" else work
    assert np.array_equal(cycles, -(-done // active))
    assert sim.metrics.layer("conv3").compute.gated_macs == spared.sum()
    assert sim.metrics.layer("conv2").compute.gated_macs == 0  # not in the profile: dense
    assert check_simulation(sim).ok  # the closed form counts the same per pass


def test_measured_gating_counts_every_zero_mac(sparse, tmp_path) -> None:
    _, result, measured, _ = sparse
    profile = measured.profile(result.graph)
    sim = simulate_network(result.graph, "eyeriss-v1", 2, tmp_path / "t.h5", sparsity=profile)
    x = measured.activations["pool1"]
    exact = _zero_macs_by_loops(x, 8, range(3), range(3), range(6), range(6), range(8))
    assert sim.metrics.layer("conv2").compute.gated_macs == 2 * exact  # two images, every pass counted from values
    report = check_simulation(sim)
    assert report.ok and any(r.evidence == "tolerance" for l in report.layers for r in l.counts)
    with hwsim.trace.open(sim.trace) as t:
        recorded = json.loads(t.attrs["sparsity_json"])
    assert recorded["kind"] == "measured" and "net.onnx on in.npy" in recorded["source"]


# ----- compressed DRAM traffic ---------------------------------------------------------------------------------

RLC_CONFIG = "base: eyeriss-v1\ndram:\n  compression:\n    format: rlc\n"

# The rule mapping of the small network at batch 2, except conv2: DRAM splits the output rows in two halves and,
# inside them, the filters in two halves, so each image reads two ifmap tiles (rows 0-3 and 2-5 of all 8
# channels: 3 output rows, 3 kernel rows, padding 1) and writes four ofmap tiles (4 filters x 3 rows x 6 columns).
SMALL_MAPPING = """format: hwsim-mapping 1
network: net
hardware: eyeriss-v1
dataflow: row_stationary
batch: 2
layers:
- layer: conv1
  dims: {N: 2, G: 1, M: 8, C: 3, P: 12, Q: 12, R: 3, S: 3}
  dram: {loops: [G=1, M=1, N=1, P=1, Q=1, C=1, R=1, S=1], keeps: [ifmap, filter, psum]}
  glb: {loops: [P=1, N=2], keeps: [ifmap, filter, psum]}
  array: {rows: [R=3, C=1, M=1], cols: [P=12], stream: [Q=12], delivery: {ifmap: multicast, filter: multicast}}
  rf: {loops: [C=3, M=8, S=3], keeps: [ifmap, filter, psum]}
- {layer: pool1, streamed: 1}
- layer: conv2
  dims: {N: 2, G: 1, M: 8, C: 8, P: 6, Q: 6, R: 3, S: 3}
  dram: {loops: [G=1, P=2, M=2, N=1, Q=1, C=1, R=1, S=1], keeps: [ifmap, filter, psum]}
  glb: {loops: [P=1, N=2], keeps: [ifmap, filter, psum]}
  array: {rows: [R=3, C=2, M=1], cols: [P=3], stream: [Q=6], delivery: {ifmap: multicast, filter: multicast}}
  rf: {loops: [C=4, M=4, S=3], keeps: [ifmap, filter, psum]}
- layer: fc
  dims: {N: 2, G: 1, M: 10, C: 8, P: 1, Q: 1, R: 6, S: 6}
  dram: {loops: [G=1, M=1, N=1, P=1, Q=1, C=2, R=1, S=1], keeps: [ifmap, filter, psum]}
  glb: {loops: [P=1, N=2], keeps: [ifmap, filter, psum]}
  array: {rows: [R=6, C=2, M=1], cols: [P=1], stream: [Q=1], delivery: {ifmap: multicast, filter: multicast}}
  rf: {loops: [C=2, M=10, S=6], keeps: [ifmap, filter, psum]}
"""


def coded_words(tile: np.ndarray) -> int:
    """16-bit words a tile takes run-length coded (three pairs per 64-bit word = 4 words), or raw if fewer."""
    pairs = len(literal_pairs(tile.reshape(-1).tolist()))
    return min(tile.size, -(-pairs // 3) * 4)


def _dram_words(trace_path: Path, layer: str) -> dict[tuple[int, int], int]:
    """(op, operand) -> words of the layer's DRAM records."""
    with hwsim.trace.open(trace_path) as t:
        records = np.concatenate(list(t.records("dram", layer=layer)))
    out: dict[tuple[int, int], int] = {}
    for op, operand, words in zip(records["op"].tolist(), records["operand"].tolist(), records["words"].tolist()):
        out[(op, operand)] = out.get((op, operand), 0) + words
    return out


def test_simulated_dram_words_are_the_exact_rlc_of_each_tile(sparse, tmp_path) -> None:
    _, result, measured, _ = sparse
    (tmp_path / "hw.yaml").write_text(RLC_CONFIG)
    (tmp_path / "map.yaml").write_text(SMALL_MAPPING)
    sim = simulate_network(result.graph, tmp_path / "hw.yaml", 2, tmp_path / "t.h5", mapping=tmp_path / "map.yaml",
                           sparsity=measured.profile(result.graph))
    x, y = measured.activations["pool1"], measured.activations["conv2"]
    conv2 = _dram_words(sim.trace, "conv2")
    ifmap = 2 * (coded_words(x[:, 0:4, :]) + coded_words(x[:, 2:6, :]))
    ofmap = 2 * sum(coded_words(y[m:m + 4, p:p + 3, :]) for p in (0, 3) for m in (0, 4))
    assert conv2[(Op.READ, 0)] == ifmap < 2 * 2 * 8 * 4 * 6  # smaller than the raw tiles
    assert conv2[(Op.UPDATE, 3)] == ofmap
    assert conv2[(Op.READ, 1)] == 4 * 4 * 8 * 9  # raw filters: 4 of them per (row half, filter half) visit
    pool1 = _dram_words(sim.trace, "pool1")  # streamed in one piece per image
    assert pool1[(Op.READ, 0)] == 2 * coded_words(measured.activations["conv1"])
    assert pool1[(Op.UPDATE, 3)] == 2 * coded_words(x)
    conv1 = _dram_words(sim.trace, "conv1")
    assert conv1[(Op.READ, 0)] == 2 * 3 * 12 * 12  # the dense image moves raw
    total = sum(sum(_dram_words(sim.trace, l).values()) for l in ("conv1", "pool1", "conv2", "fc")) * 2
    assert sim.totals.dram_bytes == total  # what the report gives is the records' coded words


def test_average_compression_is_counted_exactly_by_the_closed_form(sparse, tmp_path) -> None:
    _, result, _, _ = sparse
    (tmp_path / "hw.yaml").write_text(RLC_CONFIG)
    (tmp_path / "map.yaml").write_text(SMALL_MAPPING)
    (tmp_path / "zeros.csv").write_text("layer,ifmap,ofmap\nconv1,0,0.5\npool1,0.5,0.4\nconv2,0.4,0.45\nfc,0.45,0\n")
    graph, profile = result.graph, read_profile(tmp_path / "zeros.csv", result.graph)

    def run(hw: str | Path, name: str, zeros: object = None):
        return simulate_network(graph, hw, 2, tmp_path / f"{name}.h5", mapping=tmp_path / "map.yaml", sparsity=zeros)

    sim = run(tmp_path / "hw.yaml", "coded", profile)
    report = check_simulation(sim)
    assert report.ok and not any(r.tolerance for l in report.layers for r in l.counts)  # exact, not a tolerance
    # conv2's two ifmap tiles per image (8 x 4 x 6 = 192 words each), 40 % zeros: ⌈192 · 0.6⌉ = 116 pairs, 39
    # coded words = 156 words each.
    assert sim.metrics.layer("conv2").transfers[0, 0, 0] == 2 * 2 * 156
    # A dense tile would grow coded (4 words per 3 values): it moves raw, so dense traffic is unchanged.
    dense, plain = run(tmp_path / "hw.yaml", "dense"), run("eyeriss-v1", "plain")
    for layer in ("conv1", "pool1", "conv2", "fc"):
        assert np.array_equal(dense.metrics.layer(layer).transfers, plain.metrics.layer(layer).transfers)


# ----- bad input ------------------------------------------------------------------------------------------------


def test_bad_sparsity_input_is_one_line(cli, tmp_path) -> None:
    assert_one_line_error(cli("simulate", "alexnet", "--hw", "eyeriss-v1", "--activations-from", "x.npy"),
                          "--activations-from", "not an .onnx file")
    assert_one_line_error(cli("estimate", "alexnet", "--hw", "eyeriss-v1", "--sparsity", "half"),
                          "--sparsity half", "profile file")
    (tmp_path / "hw.yaml").write_text(RLC_CONFIG + "    pairs_per_word: 4\n")
    assert_one_line_error(cli("config", "validate", str(tmp_path / "hw.yaml")), "dram.compression.pairs_per_word",
                          "84")
    (tmp_path / "ws.yaml").write_text("base: scalesim-12x14-ws\npe_array:\n  zero_skipping: true\n")
    assert_one_line_error(cli("config", "validate", str(tmp_path / "ws.yaml")), "pe_array.zero_skipping",
                          "zero_gating")


def test_the_sparsity_names_the_cli_offers_are_the_presets() -> None:
    assert tuple(SPARSITY_PRESETS) == names.PRESETS
    assert names.SPARSITY_CHOICES == SPARSITY_CHOICES
