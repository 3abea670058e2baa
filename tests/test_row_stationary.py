"""Row-stationary mapping: hand-derived parameters and schedule invariants on every zoo network."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import small_zoo_graph

from hwsim.hardware import load_config
from hwsim.mapping.dataflows.row_stationary import RsParams
from hwsim.mapping.dataflows.row_stationary import rs_params as nest_rs_params
from hwsim.mapping.mapper import check_mapping, default_mapping
from hwsim.mapping.nest.problem import nest_problem
from hwsim.mapping.nest_schedule import network_schedule
from hwsim.vocab import Level, Operand, StepKind
from hwsim.workload import GraphBuilder, LayerKind, zoo
from hwsim.workload.ir import Layer

EYERISS = load_config("eyeriss-v1")


def rs_params(layer: Layer, batch: int = 1) -> RsParams:
    """CNNergy's rules for `layer` on Eyeriss."""
    return nest_rs_params(nest_problem(layer, batch), EYERISS)
GLB_WORDS = 100 * 1024 // 2  # CNNergy's 100 KB ifmap+psum GLB in 16-bit words
FILTER_WORDS = 8 * 1024 // 2  # the 8 KB filter partition


def test_alexnet_conv1_params_by_hand() -> None:
    m = rs_params(zoo.build("alexnet").layer("conv1"))
    # R = 11 on 12 PE rows: one set; q = min(C=3, 12 // 11) = 1; p = min(24, (224 // 11) // 1) = 20.
    # q < C and C = 3 >= q·sets = 1, so the default rule: chP = q·sets = 1, fP = p = 20.
    assert (m.folds, m.sets, m.q, m.p, m.chP, m.fP, m.rule) == (1, 1, 1, 20, 1, 20, "default")
    # The whole 55x55 ofmap band needs 1·227·227 + 20·55·55 = 112,029 words > 51,200: halve y_oc to 28
    # (119·227 + 20·28·55 = 57,813, still too big), then to 14 (63·227 + 20·14·55 = 29,701 fits).
    assert GLB_WORDS < 112_029 and GLB_WORDS < 57_813 and GLB_WORDS >= 29_701
    assert (m.y_of, m.y_oc, m.x_oc, m.n) == (14, 14, 55, 1)


def test_alexnet_conv2_grouped_params_by_hand() -> None:
    m = rs_params(zoo.build("alexnet").layer("conv2"))
    # One group: C = 48, M = 128, R = 5: sets = 12 // 5 = 2, q = 12 // 5 = 2, p = (224 // 5) // 2 = 22.
    # C = 48 >= q·sets = 4: chP = 4, fP = 22. Band: 4·31·31 + 22·27·27 = 19,882 words fit.
    assert (m.sets, m.q, m.p, m.chP, m.fP, m.rule) == (2, 2, 22, 4, 22, "default")
    assert (m.y_oc, m.x_oc) == (27, 27)


def test_psum_rf_caps_filters_per_set_on_resnet50_conv1() -> None:
    m = rs_params(zoo.build("resnet50").layer("conv1"))
    # R = S = 7, C = 3: one set of 7 rows fits 12 (sets = 1); q = min(3, 12 // 7) = 1; the filter RF alone would
    # allow (224 // 7) // 1 = 32 filters, but each needs a psum word and the psum RF holds 24: p = 24.
    # q < C = 3 >= q·sets: the default rule, chP = 1, fP = p = 24.
    assert (m.sets, m.q, m.p, m.chP, m.fP, m.rule) == (1, 1, 24, 1, 24, "default")


def test_rule_1_and_4_for_few_channels() -> None:
    b = GraphBuilder("t")
    x = b.input("x", 2, 8, 8)
    b.output("o", b.conv("c", x, 16, 3, padding=1))
    m = rs_params(b.build().layer("c"))
    # q = min(C=2, 12 // 3) = 2 >= C: rule 1, chP = 2, p = (224 // 3) // 2 = 37 -> 24 (psum RF),
    # fP = p·sets = 24·4 = 96 > M = 16: rule 4, fP = 16.
    assert (m.q, m.chP, m.fP, m.rule) == (2, 2, 16, "1+4")


@pytest.mark.parametrize("dilation, taps, q, s_folds", [(2, 3, 2, 1), (6, 3, 1, 2), (12, 3, 12, 3)])
def test_dilated_filter_rows_fit_the_ifmap_rf(dilation: int, taps: int, q: int, s_folds: int) -> None:
    """A PE slides over the ifmap columns its filter row spans, (S − 1)·d + 1, not S (DeepLab's atrous convs)."""
    b = GraphBuilder("t")
    x = b.input("x", 16, 40, 40)
    b.output("o", b.conv("c", x, 8, taps, padding=dilation, dilation=dilation))
    layer = b.build().layer("c")
    m = rs_params(layer)
    # The 12-word ifmap RF holds (12 − 1) // d + 1 taps' span. d = 2: 3 taps span 5 columns, no fold, q = 12 // 5 = 2.
    # d = 6: 2 taps fit, so 2 folds of ⌈3/2⌉ = 2 taps spanning 7 columns, q = 12 // 7 = 1. d = 12: 1 tap fits,
    # 3 folds of 1 tap spanning 1 column, q = min(C = 16, 12) = 12.
    assert (m.s_folds, m.q) == (s_folds, q)
    assert m.q * ((m.s_rf - 1) * dilation + 1) <= 12  # the q channels' windows fit the RF
    graph = b.build()
    check_mapping(default_mapping(graph, EYERISS), graph, EYERISS)  # no RF overflows


@pytest.mark.parametrize("name", zoo.names())
def test_schedule_invariants_on_every_zoo_network(name: str) -> None:
    graph = small_zoo_graph(name)
    schedule = network_schedule(graph, EYERISS)
    for ls in schedule.layers:
        steps = ls.steps()
        layer = ls.layer
        compute = steps[steps["kind"] == StepKind.COMPUTE]
        assert compute["macs"].sum() == layer.macs, layer.name
        assert compute["ops"].sum() == (0 if layer.macs else layer.ops), layer.name
        assert (compute["active_pes"] <= EYERISS.pe_array.pes).all(), layer.name
        if layer.kind in (LayerKind.INPUT, LayerKind.OUTPUT):
            assert len(steps) == 0
            continue
        # Every allocation is freed, and neither GLB partition ever holds more than its capacity.
        for operands, capacity in (((Operand.IFMAP, Operand.PSUM), GLB_WORDS), ((Operand.FILTER,), FILTER_WORDS)):
            mine = np.isin(steps["operand"], operands)
            alloc = mine & (steps["kind"] == StepKind.ALLOC)
            free = mine & (steps["kind"] == StepKind.FREE)
            delta = np.where(alloc, steps["words"], 0) - np.where(free, steps["words"], 0)
            assert delta.sum() == 0, layer.name
            assert np.cumsum(delta).max(initial=0) <= capacity, layer.name
        # Each ofmap word reaches DRAM exactly once.
        out = steps[(steps["kind"] == StepKind.TRANSFER) & (steps["dst"] == Level.DRAM)]
        assert out["words"].sum() == layer.out_shape.elements, layer.name
        # Weighted layers read every filter word from DRAM at least once.
        filt = steps[(steps["kind"] == StepKind.TRANSFER) & (steps["operand"] == Operand.FILTER)
                     & (steps["src"] == Level.DRAM)]
        if layer.weight_params:
            assert filt["words"].sum() >= layer.weight_params, layer.name
        # Groups never decrease along the stream.
        assert (np.diff(steps["group"]) >= 0).all() or layer.macs == 0, layer.name


def test_filter_reloads_follow_the_band_count() -> None:
    # AlexNet conv1: 55 ofmap rows in bands of 14 -> 4 bands, each reloads every filter word once.
    ls = network_schedule(zoo.build("alexnet"), EYERISS).layer("conv1")
    steps = ls.steps()
    filt = steps[(steps["kind"] == StepKind.TRANSFER) & (steps["operand"] == Operand.FILTER)
                 & (steps["src"] == Level.DRAM)]
    assert filt["words"].sum() == 4 * 96 * 3 * 11 * 11
