"""NeuPart: the IR → CNNergy adapter, cut points, RLC transmission, the optimum, and `hwsim partition`.

Expected values come from the CNNergy reference run and the NeuPart paper (tests/data: cnnergy-alexnet-*.csv,
cnnergy-alexnet.yaml, neupart.yaml, each naming its source) or hand calculation written out here.
"""

from __future__ import annotations

import pytest
from conftest import assert_one_line_error, reference, reference_rows

from hwsim.analytic.graph_adapter import (
    ALEXNET_MEASURED,
    SparsityModel,
    adapt_graph,
    batch_ladder,
    cnnergy_layers,
    padded_sparsity,
    preset_fits,
)
from hwsim.analytic.neupart import (
    CLIENT,
    CLOUD,
    SPLIT,
    Link,
    encoded_bits,
    evaluate_partition,
    optimum_changes,
    partition_model,
    rate_sweep,
    rlc_bits,
    rlc_overhead,
    single_tensor_cuts,
)
from hwsim.cli.cmd_partition import power_arg, rate_arg, sweep_arg
from hwsim.errors import ConfigError
from hwsim.hardware import load_config
from hwsim.workload import zoo

EYERISS = load_config("eyeriss-v1")
EYERISS_8BIT = load_config("eyeriss-8bit")
MJ = 1e-3  # J per mJ
MBPS = 1e6

# The papers' layer names and the zoo's: In is the image, P3 the last pool.
ZOO_NAMES = {"In": "data", "C1": "conv1", "P1": "pool1", "C2": "conv2", "P2": "pool2", "C3": "conv3", "C4": "conv4",
             "C5": "conv5", "P3": "pool5", "FC1": "fc6", "FC2": "fc7", "FC3": "fc8"}
# The reference AlexNet layers: R, M, H (padded), C, U, E, sp_if, sp_of, n (batch used).
REFERENCE_ALEXNET = {ZOO_NAMES[row.pop("name")]: tuple(row.values())
                     for row in reference("cnnergy-alexnet-layers.csv")}
# The reference's energy per image, mJ, with control: C1, C2 and the total.
REFERENCE_OUTPUT = reference_rows("cnnergy-alexnet-energy.csv", "layer")
REFERENCE_C1_MJ, REFERENCE_C2_MJ = REFERENCE_OUTPUT["C1"]["total"], REFERENCE_OUTPUT["C2"]["total"]
REFERENCE_RUN = reference("cnnergy-alexnet.yaml")
REFERENCE_TOTAL_MJ = REFERENCE_RUN["total_mj"]
REFERENCE_REL_TOL = 0.01
PAPER = reference("neupart.yaml")


@pytest.fixture(scope="module")
def alexnet():
    return zoo.build("alexnet")


@pytest.fixture(scope="module")
def alexnet_model(alexnet):
    return partition_model(alexnet, EYERISS, ALEXNET_MEASURED)


# ----- the adapter ------------------------------------------------------------------------------


def test_adapter_reproduces_the_reference_alexnet_table(alexnet) -> None:
    layers = cnnergy_layers(alexnet, ALEXNET_MEASURED, EYERISS)
    assert len(layers) == len(alexnet)
    adapted = {graph_layer.name: layer for graph_layer, layer in zip(alexnet, layers) if layer is not None}
    assert list(adapted) == list(REFERENCE_ALEXNET)  # pools, LRNs, softmax, input/output: None
    for name, (r, m, h, c, u, e, sp_if, sp_of, n) in REFERENCE_ALEXNET.items():
        layer = adapted[name]
        assert (r, m, h, c, u, e) == (layer.R, layer.M, layer.H, layer.C, layer.U, layer.E), name
        assert (layer.sp_if, layer.sp_of, layer.n) == (sp_if, sp_of, n), name
        assert layer.first_layer == (name == "conv1")


def test_adapter_shapes_do_not_depend_on_sparsity(alexnet) -> None:
    # Same R, M, H, C, U, E with the ReLU defaults; only the zeros (and so nothing in the shape) change.
    for layer in cnnergy_layers(alexnet, SparsityModel(), EYERISS):
        if layer is not None:
            assert REFERENCE_ALEXNET[layer.name][:6] == (layer.R, layer.M, layer.H, layer.C, layer.U, layer.E)


def test_batch_ladder_gives_the_reference_batches() -> None:
    # The reference run: AlexNet proposed [1,2,7,7,7,316,316,316], used [1,2,6,6,6,18,18,18].
    proposed = [row["proposed_batch"] for row in REFERENCE_OUTPUT.values()]
    used = [layer[-1] for layer in REFERENCE_ALEXNET.values()]
    assert batch_ladder(proposed, max(used)) == used
    # By hand: rungs 1 -> 3 (<= 3) -> 9 (largest multiple of 3 <= 10); 4 falls back to 3.
    assert batch_ladder([3, 10, 4], 18) == [3, 9, 3]
    assert batch_ladder([5, 40], 1) == [1, 1]


def test_default_sparsity_rules(alexnet) -> None:
    zeros = SparsityModel(relu_sparsity=0.5).tensor_sparsities(alexnet)
    assert zeros["data"] == 0.0  # the image's pixels are dense
    assert zeros["conv1"] == zeros["norm1"] == zeros["pool1"] == 0.5  # ReLU, then zero-preserving LRN and pool
    assert zeros["fc8"] == zeros["prob"] == 0.0  # linear fc8, softmax
    # conv3 reads pool2 (13x13, 0.5 zeros) padded to 15x15: (0.5*169 + 225 - 169) / 225.
    assert padded_sparsity(alexnet.layer("conv3"), 0.5) == pytest.approx((0.5 * 169 + 56) / 225)


def test_concat_sparsity_is_element_weighted() -> None:
    graph = zoo.build("googlenet")
    model = SparsityModel(relu_sparsity=0.6)
    zeros = model.tensor_sparsities(graph)
    concat = next(layer for layer in graph if layer.kind.value == "concat")
    assert zeros[concat.output] == pytest.approx(0.6)  # all branches end in a ReLU (or a pool of one)


def test_measured_preset_fits_only_alexnet(alexnet) -> None:
    assert preset_fits(ALEXNET_MEASURED, alexnet)
    assert not preset_fits(ALEXNET_MEASURED, zoo.build("squeezenet11"))
    # The pool outputs nobody measured take the sp_if of the layer reading them.
    zeros = ALEXNET_MEASURED.tensor_sparsities(alexnet)
    assert (zeros["pool1"], zeros["pool2"], zeros["pool5"]) == (0.3870, 0.7250, 0.7113)
    assert zeros["norm2"] == 0.8066  # conv2's sp_of through the LRN


def test_depthwise_is_one_group_priced_groups_times() -> None:
    graph = zoo.build("mobilenetv2")
    layer = next(l for l in graph if l.is_depthwise)
    adapted = next(a for a in adapt_graph(graph, SparsityModel(), EYERISS) if a and a.source == layer.name)
    assert (adapted.layer.C, adapted.layer.M) == (1, 1)
    assert adapted.copies == layer.groups
    assert adapted.macs == layer.macs  # 3x3 taps x one channel x E^2, per channel


def test_transposed_conv_charges_only_real_macs() -> None:
    graph = zoo.build("fsrcnn")
    deconv = graph.layer("deconv")  # 56 x 720 x 1280 -> 1 x 1440 x 2560, 9x9, stride 2
    adapted = next(a for a in adapt_graph(graph, SparsityModel(), EYERISS) if a and a.source == "deconv")
    true_macs = 56 * 720 * 1280 * 9 * 9 * 1  # every input pixel scatters into a 9x9 window of 1 channel
    assert deconv.macs == true_macs
    nonzero = adapted.macs * (1.0 - adapted.layer.sp_if)
    assert nonzero == pytest.approx(true_macs, rel=0.02)  # edges of the zero-stuffed map aside


def test_oversized_filter_is_lowered_to_1x1() -> None:
    graph = zoo.build("phases_example")  # n2: 17x17 kernel, taller than the 12 PE rows
    adapted = next(a for a in adapt_graph(graph, SparsityModel(), EYERISS) if a and a.source == "n2")
    assert (adapted.layer.R, adapted.layer.C, adapted.layer.H, adapted.layer.E) == (1, 17 * 17, 16, 16)
    assert adapted.macs == graph.layer("n2").macs


@pytest.mark.parametrize("name", zoo.names())
@pytest.mark.parametrize("hw", [EYERISS, EYERISS_8BIT], ids=["16bit", "8bit"])
def test_every_zoo_network_partitions(name: str, hw) -> None:
    graph = zoo.build(name)
    model = partition_model(graph, hw, SparsityModel())
    assert model.cuts[0].side == CLOUD and model.cuts[-1].side == CLIENT
    assert all(cut.side == SPLIT for cut in model.cuts[1:-1])
    assert model.cuts[-1].tx_bits == 0
    energies = [cut.client_energy_j for cut in model.cuts]
    assert energies == sorted(energies) and energies[-1] > 0
    assert evaluate_partition(model, Link(60 * MBPS, 0.5)).optimum.total_energy_j > 0


# ----- cut points -------------------------------------------------------------------------------


def test_cuts_skip_the_inside_of_fire_modules() -> None:
    graph = zoo.build("squeezenet11")
    cut_names = {graph.layers[i].name for i in single_tensor_cuts(graph)}
    assert {"fire4_squeeze", "fire4_concat", "pool1", "pool3"} <= cut_names
    # After expand1x1 the squeeze output is still needed; after expand3x3 both expands are live.
    assert not cut_names & {"fire4_expand1x1", "fire4_expand3x3"}


def test_cuts_skip_the_inside_of_residual_blocks() -> None:
    graph = zoo.build("resnet18")
    cuts = single_tensor_cuts(graph)
    for index in cuts:
        layer = graph.layers[index]
        assert layer.kind.value != "conv" or layer.name == "conv1"  # only the stem conv is outside a block
    assert any(graph.layers[i].kind.value == "add" for i in cuts)


def test_alexnet_cut_points_follow_the_paper(alexnet_model) -> None:
    # The paper's In, C1, P1, C2, P2, C3, C4, C5, P3, FC1, FC2, FC3, plus our LRN outputs and the softmax.
    assert [cut.after for cut in alexnet_model.cuts] == [
        "data", "conv1", "norm1", "pool1", "conv2", "norm2", "pool2", "conv3", "conv4", "conv5", "pool5",
        "fc6", "fc7", "fc8", "prob"]
    assert set(ZOO_NAMES.values()) <= {cut.after for cut in alexnet_model.cuts}


# ----- transmission -----------------------------------------------------------------------------


def test_rlc_overheads_are_the_papers() -> None:
    for bits, (num, den) in PAPER["rlc_overhead"].items():
        assert rlc_overhead(bits) == pytest.approx(num / den), bits  # 1/3 for 16-bit data, 3/5 for 8-bit
    with pytest.raises(ConfigError):
        rlc_overhead(32)


def test_rlc_bits_and_transmission_energy_at_pool2_by_hand(alexnet_model) -> None:
    # pool2: 256 x 13 x 13 at 16 bit, 0.725 zeros (conv3's measured sp_if), 1/3 RLC overhead.
    raw_bits = 256 * 13 * 13 * 16  # 692,224
    expected_bits = raw_bits * (1 - 0.725) * (1 + 1 / 3)  # 253,815.5
    assert rlc_bits(raw_bits, 0.725, 16) == pytest.approx(expected_bits)
    cut = next(c for c in alexnet_model.cuts if c.after == "pool2")
    assert (cut.raw_bits, cut.tx_bits, cut.encoding) == (raw_bits, pytest.approx(expected_bits), "rlc")
    # 100 Mbps, 1 W: E = P·bits/rate = 253,815.5 / 1e8 J = 2.538 mJ.
    cost = evaluate_partition(alexnet_model, Link(100 * MBPS, 1.0)).costs[alexnet_model.cuts.index(cut)]
    assert cost.tx_energy_j == pytest.approx(expected_bits / 100e6)
    assert cost.tx_energy_j / MJ == pytest.approx(2.538, abs=0.001)


def test_dense_data_is_sent_raw(alexnet_model) -> None:
    assert encoded_bits(1000.0, 0.0, 8) == (1000.0, "raw")  # RLC would send 1.6x
    assert encoded_bits(1000.0, 0.5, 8) == (pytest.approx(800.0), "rlc")  # 0.5 x 1.6
    image = alexnet_model.cuts[0]  # fully cloud: the raw 227 x 227 x 3 image at 8 bit per pixel
    assert (image.tx_bits, image.encoding) == (227 * 227 * 3 * 8, "raw")


def test_input_sparsity_compresses_the_image(alexnet) -> None:
    model = partition_model(alexnet, EYERISS, ALEXNET_MEASURED, input_sparsity=0.75)
    assert model.cuts[0].tx_bits == pytest.approx(227 * 227 * 3 * 8 * 0.25 * 1.6)  # 8-bit RLC, alpha 3/5


def test_client_energy_is_the_reference_cnnergy_sum(alexnet_model) -> None:
    by_name = {cut.after: cut for cut in alexnet_model.cuts}
    assert by_name["pool1"].client_energy_j / MJ == pytest.approx(REFERENCE_C1_MJ, rel=REFERENCE_REL_TOL)
    assert by_name["pool2"].client_energy_j / MJ == pytest.approx(REFERENCE_C1_MJ + REFERENCE_C2_MJ,
                                                                   rel=REFERENCE_REL_TOL)
    assert by_name["prob"].client_energy_j / MJ == pytest.approx(REFERENCE_TOTAL_MJ, rel=REFERENCE_REL_TOL)


# ----- the optimum ------------------------------------------------------------------------------


def test_alexnet_optimum_at_100mbps_1w_is_p2(alexnet_model) -> None:
    # Paper, Fig. 10: at 100 Mbps and 1 W the minimum is at the intermediate layer P2.
    result = evaluate_partition(alexnet_model, Link(100 * MBPS, 1.0))
    assert result.optimum.cut.after == ZOO_NAMES[PAPER["alexnet_100mbps_1w"]["optimum"]]
    assert result.optimum.cut.side == SPLIT
    # By hand: FCC = 1,236,696 bit / 1e8 bit/s x 1 W = 12.367 mJ; P2 = 2.013 + 3.071 + 2.538 mJ;
    # FISC = 10.91 mJ (the reference total). Paper (8-bit, JPEG input): 34.7 % and 26.6 %.
    fcc_mj, p2_mj = 227 * 227 * 3 * 8 / 100e6 / MJ, REFERENCE_C1_MJ + REFERENCE_C2_MJ + 2.538
    assert result.savings_vs_cloud_pct == pytest.approx(100 * (fcc_mj - p2_mj) / fcc_mj, abs=0.5)
    assert result.savings_vs_client_pct == pytest.approx(100 * (REFERENCE_TOTAL_MJ - p2_mj) / REFERENCE_TOTAL_MJ,
                                                         abs=0.5)


def test_alexnet_at_60mbps_half_watt_saves_over_both_ends(alexnet_model) -> None:
    # Paper: 47.4 % over fully cloud and 31.3 % over fully in situ (8-bit, quartile-I JPEG images).
    result = evaluate_partition(alexnet_model, Link(60 * MBPS, 0.5))
    assert result.optimum.cut.side == SPLIT
    assert result.savings_vs_cloud_pct > 0 and result.savings_vs_client_pct > 0


def test_alexnet_8bit_p2_gives_way_to_p1_between_85_and_100_mbps(alexnet) -> None:
    # Paper, Sec. VIII (8-bit, 0.5 W): "if B_e changes from 85 to 100 Mbps ... the optimal layer
    # changes from P2 to P1". The P1/P2 crossover does not depend on the input image.
    paper = PAPER["alexnet_rate_change_0_5w"]
    below, above = ZOO_NAMES[paper["below"]], ZOO_NAMES[paper["above"]]
    low, high = paper["from_mbps"] * MBPS, paper["to_mbps"] * MBPS
    model = partition_model(alexnet, EYERISS_8BIT, ALEXNET_MEASURED)
    assert evaluate_partition(model, Link(low, 0.5)).optimum.cut.after == below
    assert evaluate_partition(model, Link(high, 0.5)).optimum.cut.after == above
    points = rate_sweep(model, [r * MBPS for r in range(80, 106, 5)], 0.5)
    (change,) = optimum_changes(model, points, 0.5)
    assert (change.before, change.after) == (below, above)
    assert low < change.crossover_bps < high
    assert change.below_bps <= change.crossover_bps <= change.above_bps


def test_alexnet_delay_at_p2_by_hand(alexnet_model) -> None:
    # Client: conv1 + conv2 MACs at Eyeriss' 23.1 GMAC/s; link: 253,815.5 bit at 100 Mbps;
    # cloud: the remaining MACs at 92 TOPS, 2 operations per MAC.
    client_macs = 96 * 55 * 55 * 3 * 11 * 11 + 256 * 27 * 27 * 48 * 5 * 5
    cloud_macs = (384 * 13 * 13 * 256 * 9 + 384 * 13 * 13 * 192 * 9 + 256 * 13 * 13 * 192 * 9
                  + 4096 * 9216 + 4096 * 4096 + 1000 * 4096)
    client_macs_per_s = REFERENCE_RUN["throughput_gmacs"] * 1e9
    cloud_ops_per_s = PAPER["cloud_throughput_tera_ops"] * 1e12
    expected_s = (client_macs / client_macs_per_s + 256 * 13 * 13 * 16 * 0.275 * 4 / 3 / 100e6
                  + cloud_macs * 2 / cloud_ops_per_s)
    result = evaluate_partition(alexnet_model, Link(100 * MBPS, 1.0))
    assert result.optimum.delay_s == pytest.approx(expected_s)


def test_squeezenet_optimum_is_an_intermediate_fire_layer() -> None:
    # Paper, Fig. 10 (100 Mbps, 1 W): an intermediate fire squeeze layer (Fs4) is optimal. With ReLU-default
    # zeros rather than the paper's measured ones the optimum here is fire6_squeeze: a squeeze layer, not Fs4.
    assert PAPER["squeezenet_100mbps_1w"]["optimum"].startswith("Fs")  # F: fire module, s: its squeeze
    model = partition_model(zoo.build("squeezenet11"), EYERISS, SparsityModel())
    result = evaluate_partition(model, Link(100 * MBPS, 1.0))
    assert result.optimum.cut.side == SPLIT
    assert result.optimum.cut.after.startswith("fire") and result.optimum.cut.after.endswith("_squeeze")
    assert result.savings_vs_cloud_pct > 0 and result.savings_vs_client_pct > 0


def test_link_rejects_non_positive_values() -> None:
    with pytest.raises(ConfigError):
        Link(0.0, 1.0)
    with pytest.raises(ConfigError):
        Link(1e6, -1.0)


# ----- the command ------------------------------------------------------------------------------


def test_argument_parsers() -> None:
    assert rate_arg("60Mbps") == 60e6
    assert rate_arg("1Gbps") == 1e9
    assert rate_arg("500 kbit/s") == 500e3
    assert power_arg("0.5W") == 0.5
    assert power_arg("500mW") == pytest.approx(0.5)
    rates = sweep_arg("1:200")
    assert (len(rates), rates[0], rates[-1]) == (200, 1e6, 200e6)
    assert sweep_arg("10:20:5") == [10e6, 15e6, 20e6]


def test_cli_json_is_one_document(cli) -> None:
    result = cli("partition", "alexnet", "--hw", "eyeriss-v1", "--rate", "100Mbps", "--ptx", "1W", "--json")
    assert result.code == 0, result.err
    doc = result.json()  # the whole stdout parses as one JSON value
    assert doc["sparsity"]["model"] == "alexnet-measured"
    assert doc["optimum"]["after"] == "pool2"
    assert doc["cuts"][0]["side"] == "cloud" and doc["cuts"][-1]["side"] == "client"
    assert doc["savings_pct"]["vs_fully_cloud"] > 0 and doc["sweep"] is None


def test_cli_sweep_reports_where_the_optimum_moves(cli) -> None:
    result = cli("partition", "alexnet", "--hw", "eyeriss-8bit", "--rate", "60Mbps", "--ptx", "500mW",
                 "--sweep-rate", "80:105:5", "--json")
    assert result.code == 0, result.err
    changes = result.json()["sweep"]["changes"]
    assert [(c["from"], c["to"]) for c in changes] == [("pool2", "pool1")]


def test_cli_table_highlights_the_optimum(cli) -> None:
    result = cli("partition", "squeezenet11", "--hw", "eyeriss-v1", "--rate", "100Mbps", "--ptx", "1W",
                 "--sweep-rate", "1:200")
    assert result.code == 0, result.err
    assert "optimum" in result.out and "less than fully cloud" in result.out
    assert "the optimum moves from" in result.out


@pytest.mark.parametrize("flag, value", [("--rate", "fast"), ("--rate", "60"), ("--rate", "-5Mbps"),
                                         ("--ptx", "2 horses"), ("--sweep-rate", "200:1"),
                                         ("--input-sparsity", "1.5")])
def test_cli_bad_values_give_one_line_errors(cli, flag: str, value: str) -> None:
    args = {"--rate": "60Mbps", "--ptx": "0.5W", flag: value}
    argv = ["partition", "alexnet", "--hw", "eyeriss-v1"] + [f"{key}={text}" for key, text in args.items()]
    assert_one_line_error(cli(*argv), flag, value)


def test_cli_unknown_config_is_one_line(cli) -> None:
    assert_one_line_error(cli("partition", "alexnet", "--hw", "eyeriss-v9", "--rate", "60Mbps", "--ptx", "1W"),
                          "eyeriss-v9")
