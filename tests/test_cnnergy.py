"""CNNergy, faithful form: the reference AlexNet run, hand-derived schedules, the layer-table reader."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import DATA, reference, reference_rows

from hwsim.analytic.cnnergy import (
    CnnergyLayer,
    cnnergy_energy,
    cnnergy_network,
    cnnergy_schedule,
    compression_factor,
    read_layer_table,
    rlc_words_per_word,
)
from hwsim.errors import ConfigError, NetworkError
from hwsim.hardware import load_config

EYERISS = load_config("eyeriss-v1")
MJ = 1e9  # pJ per mJ

# The CNNergy reference run of AlexNet, from tests/data (each file names its source): the layers as it feeds
# them (name, R, M, H (padded), C, U, E, sp_if, sp_of, n), its settings and totals, and its output per layer.
LAYER_TABLE = DATA / "cnnergy-alexnet-layers.csv"
ALEXNET = [tuple(row.values()) for row in reference(LAYER_TABLE.name)]
RUN = reference("cnnergy-alexnet.yaml")
CLOCK_POWER_W, THROUGHPUT_GMACS = RUN["clock_power_w"], RUN["throughput_gmacs"]
COMPONENTS = ("mac", "rf", "inter_pe", "glb", "dram", "clock", "other_control", "total")
OUTPUT = reference_rows("cnnergy-alexnet-energy.csv", "layer")
REFERENCE_MJ = {name: tuple(row[c] for c in COMPONENTS) for name, row in OUTPUT.items()}
REL_TOL = 0.01
ROUNDING_MJ = RUN["printed_resolution_mj"] / 2  # half the last printed digit


def alexnet_layers() -> list[CnnergyLayer]:
    return [CnnergyLayer(*row, first_layer=index == 0) for index, row in enumerate(ALEXNET)]


@pytest.fixture(scope="module")
def alexnet_run():
    return cnnergy_network(alexnet_layers(), EYERISS, CLOCK_POWER_W, THROUGHPUT_GMACS)


def component_mj(energy, component: str) -> float:
    return getattr(energy, f"{component}_pj") / MJ


@pytest.mark.parametrize("name", list(REFERENCE_MJ))
def test_alexnet_layer_matches_reference(alexnet_run, name: str) -> None:
    (result,) = [r for r in alexnet_run.layers if r.layer.name == name]
    for component, expected in zip(COMPONENTS, REFERENCE_MJ[name]):
        ours = component_mj(result.energy, component)
        tolerance = max(REL_TOL * expected, ROUNDING_MJ)
        assert abs(ours - expected) <= tolerance, (name, component, ours, expected)


def test_alexnet_totals_match_reference(alexnet_run) -> None:
    total = alexnet_run.total
    assert total.total_pj / MJ == pytest.approx(RUN["total_mj"], rel=REL_TOL)
    # clock and other control excluded
    assert total.without_control_pj / MJ == pytest.approx(RUN["without_control_mj"], rel=REL_TOL)
    conv_mj = sum(r.energy.total_pj for r in alexnet_run.layers[:5]) / MJ
    assert conv_mj == pytest.approx(RUN["conv_mj"], rel=REL_TOL)


def test_alexnet_proposed_batches_match_reference_first_run(alexnet_run) -> None:
    # the first run proposes a batch per layer: [1, 2, 7, 7, 7, 316, 316, 316]
    assert alexnet_run.proposed_batches == [row["proposed_batch"] for row in OUTPUT.values()]


def test_components_add_up_and_control_is_fifteen_percent(alexnet_run) -> None:
    for result in alexnet_run.layers:
        e = result.energy
        assert e.total_pj == pytest.approx(e.mac_pj + e.rf_pj + e.inter_pe_pj + e.glb_pj + e.dram_pj
                                           + e.clock_pj + e.other_control_pj)
        # Other control is 15 % of everything but DRAM: f/(1 - f)·(on-chip + clock).
        share = e.other_control_pj / (e.on_chip_pj + e.clock_pj + e.other_control_pj)
        assert share == pytest.approx(RUN["other_control_share"])


def test_schedule_conv1_by_hand() -> None:
    layer = alexnet_layers()[0]  # R=11, M=96, H=227, C=3, U=4, E=55
    m = cnnergy_schedule(layer, EYERISS)
    assert m.sets == 1  # floor(J/R) = floor(12/11)
    assert m.q == 1  # floor(ifmapRF/R) = floor(12/11)
    assert m.p == 20  # floor(floor(224/11)/q) = floor(20/1)
    assert m.ch_pass == 1  # q·sets; rule 1 (q >= C: 1 >= 3) and rule 2 (q < C < q·sets: 3 < 1) do not fire
    assert m.f_pass == 20  # p; rule 4 (20 > 96) and rule 5 (20 > 24) do not fire
    assert not m.all_channels
    assert m.pe_rows_used == 11  # ceil(R·chP/q) = ceil(11·1/1)
    # U·(K-1) + R = 4·13 + 11 = 63 < H = 227: a pass covers 63 ifmap rows and K = 14 ofmap rows.
    assert (m.x_if, m.y_if, m.y_of) == (227, 63, 14)
    assert m.ifmap_kb == pytest.approx(227 * 63 * 1 * 2 / 1024)  # 27.93 KB
    # n_max = 100 / (27.93 + E·E·fP·2/1024 = 55·55·20·2/1024 = 118.16) = 0.684 < 1 and z = 0, so
    # y_oc is halved once: 27.93 + 55·27.5·20·2/1024 = 27.93 + 59.08 = 87.0 <= 100 KB.
    assert m.n_max == pytest.approx(100 / (227 * 63 * 2 / 1024 + 55 * 55 * 20 * 2 / 1024))
    assert m.proposed_batch == 1
    assert (m.x_oc, m.y_oc) == (55, 27.5)  # y_oc = 27.5 >= y_of = 14: no rule 6
    assert m.rules == ()


def test_schedule_conv2_by_hand() -> None:
    layer = alexnet_layers()[1]  # R=5, M=256, H=31, C=48, U=1, E=27
    m = cnnergy_schedule(layer, EYERISS)
    assert m.sets == 2  # floor(12/5)
    assert m.q == 2  # floor(12/5)
    assert m.p == 22  # floor(floor(224/5)/2) = floor(44/2)
    assert (m.ch_pass, m.f_pass) == (4, 22)  # q·sets = 2·2, p; no rule fires (C = 48 > q·sets = 4)
    assert m.pe_rows_used == 10  # ceil(5·4/2)
    # U·(K-1) + R = 13 + 5 = 18 < 31: y_if = 18, y_of = 14.
    assert (m.x_if, m.y_if, m.y_of) == (31, 18, 14)
    # ifmap 31·18·4·2/1024 = 4.36 KB, psums 27·27·22·2/1024 = 31.32 KB: n_max = 100/35.68 = 2.80.
    assert m.n_max == pytest.approx(100 / ((31 * 18 * 4 + 27 * 27 * 22) * 2 / 1024))
    assert m.proposed_batch == 2
    assert (m.x_oc, m.y_oc) == (27, 27)  # n_max >= 1: the whole ofmap height


def test_schedule_rules_1_and_4_small_channel_count() -> None:
    # VGG16 conv1: R=3, C=3, M=64, H=226 (padded), E=224.
    layer = CnnergyLayer("vgg_c1", 3, 64, 226, 3, 1, 224, 0.0, 0.5, 1, first_layer=True)
    m = cnnergy_schedule(layer, EYERISS)
    # sets = floor(12/3) = 4, q = floor(12/3) = 4 >= C = 3: rule 1 sets q = chP = 3,
    # p = floor(floor(224/3)/3) = floor(74/3) = 24, fP = p·sets = 96 > M = 64: rule 4 sets
    # p = M/sets = 16, fP = M = 64.
    assert (m.sets, m.q, m.ch_pass) == (4, 3, 3)
    assert (m.p, m.f_pass) == (16, 64)
    assert m.all_channels and m.rules == (1, 4)
    # n_max = 100 / (226·16·3·2/1024 + 224·224·64·2/1024) < 1 with z: one image, whole height.
    assert (m.proposed_batch, m.y_oc) == (1, 224)


def test_schedule_rule_3_one_by_one_conv() -> None:
    layer = CnnergyLayer("inception_1x1", 1, 64, 56, 192, 1, 56, 0.5, 0.5, 1)
    m = cnnergy_schedule(layer, EYERISS)
    # sets = 12, q = 12, p = floor(224/12) = 18; C = 192 >= q·sets = 144 so z = 0 and rule 3 fires:
    # chP = 72, s3 = floor(12/ceil(72/12)) = 2, M = 64 >= 36 so fP = p·s3 = 36.
    assert (m.ch_pass, m.f_pass, m.p) == (72, 36, 18)
    assert m.pe_rows_used == 6  # ceil(1·72/12)
    assert 3 in m.rules


def test_schedule_rule_6_drops_filters() -> None:
    # A VGG16 conv1_2-like layer: R=3, C=64, M=64, H=226, E=224.
    layer = CnnergyLayer("vgg_c2", 3, 64, 226, 64, 1, 224, 0.5, 0.5, 1)
    m = cnnergy_schedule(layer, EYERISS)
    # chP = 16, fP = 18; ifmap 226·16·16·2/1024 = 113 KB >= 100: x_if halves to 113,
    # x_oc = (113 - 3)/1 + 1 = 111, ifmap 56.5 KB. y_oc halves 224 -> ... -> 7 (56.5 + 111·7·18/512
    # = 83.8 KB fits) < y_of = 14: rule 6 sets y_oc = 14 and drops filters while
    # 56.5 + 111·14·fP/512 > 100, i.e. down to fP = 14.
    assert (m.x_if, m.x_oc) == (113, 111)
    assert m.y_oc == 14
    assert m.f_pass == 14
    assert m.rules == (6,)


def test_first_layer_ifmap_is_not_compressed() -> None:
    first = alexnet_layers()[0]
    later = replace(first, first_layer=False)
    m = cnnergy_schedule(first, EYERISS)
    e_first = cnnergy_energy(first, m, EYERISS, CLOCK_POWER_W, THROUGHPUT_GMACS)
    e_later = cnnergy_energy(later, m, EYERISS, CLOCK_POWER_W, THROUGHPUT_GMACS)
    # RLC packs 3 non-zero 16-bit values per 64-bit word: (1 - sp)/3·(64/16) DRAM words per word.
    assert e_later.dram_ifmap_pj == pytest.approx(e_first.dram_ifmap_pj * (1 - 0.0001) / 3 * 4)
    assert e_later.dram_filter_pj == e_first.dram_filter_pj
    assert e_later.dram_ofmap_pj == e_first.dram_ofmap_pj


def test_conv1_dram_by_hand() -> None:
    layer = alexnet_layers()[0]
    m = cnnergy_schedule(layer, EYERISS)
    e = cnnergy_energy(layer, m, EYERISS, CLOCK_POWER_W, THROUGHPUT_GMACS)
    e_dram = reference("cnnergy-energy-per-op.yaml")["pj_65nm_1v"]["dram"]  # 338.8 pJ per 16-bit word
    passes = (3 / 1) * (96 / 20) * (55 / 27.5) * (55 / 55)  # channel · filter · y · x = 28.8
    y_pass = 27.5 / 14
    ifmap_words = 227 * 63 + (y_pass - 1) * 227 * (63 - (11 - 4))  # first band, then only new rows
    assert e.dram_ifmap_pj == pytest.approx(e_dram * ifmap_words * passes)
    assert e.dram_filter_pj == pytest.approx(e_dram * 20 * 1 * 11 * 11 * passes)
    assert e.dram_ofmap_pj == pytest.approx(e_dram * 55 * 55 * 96 * (1 - 0.5102) / 3 * 4)
    assert e.clock_pj == pytest.approx(CLOCK_POWER_W * (11 * 11 * 55 * 55 * 3 * 96) / (THROUGHPUT_GMACS * 1e9) * 1e12)


def test_compression_factor() -> None:
    assert compression_factor(16) == 3
    assert compression_factor(8) == 5
    assert rlc_words_per_word(8, 0.0) == pytest.approx(8 / 5)  # five 8-bit values per 64-bit word
    with pytest.raises(ConfigError, match="32-bit"):
        compression_factor(32)


def test_eight_bit_config_runs() -> None:
    result = cnnergy_network(alexnet_layers(), load_config("eyeriss-8bit"))
    total = result.total
    assert 0 < total.total_pj < cnnergy_network(alexnet_layers(), EYERISS).total.total_pj
    assert all(math.isfinite(r.energy.total_pj) for r in result.layers)


# ----- the layer table ---------------------------------------------------------------------------

HEADER = "name,R,M,H,C,U,E,sp_if,sp_of,n"


def write_table(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "layers.csv"
    path.write_text(text)
    return path


def alexnet_csv() -> str:
    return "\n".join([HEADER, *(",".join(str(v) for v in row) for row in ALEXNET)]) + "\n"


def assert_one_line(exc: pytest.ExceptionInfo[NetworkError], *fragments: str) -> None:
    message = str(exc.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_read_layer_table_good_file(tmp_path: Path) -> None:
    layers = read_layer_table(write_table(tmp_path, "# AlexNet for CNNergy\n" + alexnet_csv()))
    assert layers == alexnet_layers() == read_layer_table(LAYER_TABLE)  # the shipped table, provenance and all
    assert [layer.first_layer for layer in layers] == [True] + [False] * 7
    total = cnnergy_network(layers, EYERISS).total  # clock model from the config: 0.1063 W, 23.1 GMAC/s
    assert total.total_pj / MJ == pytest.approx(RUN["total_mj"], rel=REL_TOL)


def test_read_layer_table_first_column_decides(tmp_path: Path) -> None:
    text = "name,R,M,H,C,U,E,sp_if,sp_of,n,first\n" \
           "C2,5,256,31,48,1,27,0.387,0.8066,2,0\n" \
           "C3,3,384,15,256,1,13,0.725,0.7244,6,true\n"
    layers = read_layer_table(write_table(tmp_path, text))
    assert [layer.first_layer for layer in layers] == [False, True]


def test_read_layer_table_unknown_column(tmp_path: Path) -> None:
    path = write_table(tmp_path, "name,R,M,H,C,U,E,sp_if,sp_of,n,stride\nC1,11,96,227,3,4,55,0,0.5,1,4\n")
    with pytest.raises(NetworkError) as exc:
        read_layer_table(path)
    assert_one_line(exc, str(path), ":1:", "'stride'")


def test_read_layer_table_missing_column(tmp_path: Path) -> None:
    path = write_table(tmp_path, "name,R,M,H,C,U,E,sp_if,n\nC1,11,96,227,3,4,55,0,1\n")
    with pytest.raises(NetworkError) as exc:
        read_layer_table(path)
    assert_one_line(exc, str(path), ":1:", "sp_of")


def test_read_layer_table_non_numeric_cell(tmp_path: Path) -> None:
    path = write_table(tmp_path, HEADER + "\nC1,11,96,227,3,4,55,0,0.5,1\nC2,5,lots,31,48,1,27,0.387,0.8,2\n")
    with pytest.raises(NetworkError) as exc:
        read_layer_table(path)
    assert_one_line(exc, str(path), ":3:", "column 'M'", "'lots'", "not an integer")


def test_read_layer_table_non_numeric_sparsity_with_newline(tmp_path: Path) -> None:
    path = write_table(tmp_path, HEADER + '\nC1,11,96,227,3,4,55,"0.\n5",0.5,1\n')
    with pytest.raises(NetworkError) as exc:
        read_layer_table(path)
    assert_one_line(exc, str(path), "column 'sp_if'", "not a number")


def test_read_layer_table_inconsistent_shape(tmp_path: Path) -> None:
    path = write_table(tmp_path, HEADER + "\nC1,11,96,224,3,4,55,0,0.5,1\n")
    with pytest.raises(NetworkError) as exc:
        read_layer_table(path)
    assert_one_line(exc, str(path), ":2:", "E=55", "padded")


def test_read_layer_table_ragged_row_and_empty(tmp_path: Path) -> None:
    path = write_table(tmp_path, HEADER + "\nC1,11,96,227\n")
    with pytest.raises(NetworkError) as exc:
        read_layer_table(path)
    assert_one_line(exc, ":2:", "4 cells")
    with pytest.raises(NetworkError) as exc:
        read_layer_table(write_table(tmp_path, HEADER + "\n"))
    assert_one_line(exc, "no layer rows")
