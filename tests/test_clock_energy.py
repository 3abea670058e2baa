"""The clock and static power are drawn over a layer's time: the simulated span on the simulated side, the latency
bound in the closed form; CNNergy's faithful model keeps its clock per MAC (tests/test_cnnergy.py).

eyeriss-v1 at 200 MHz: P_clk = 106.3 mW is 106.3e-3 / 200e6 J = 531.5 pJ per cycle; a static power of 50 mW is
250 pJ per cycle. Other control is 0.15 / 0.85 of the on-chip dynamic energy with the clock (static left out).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hwsim.flows import check_simulation, estimate_mapping, simulate_network

CLOCK_PJ_PER_CYCLE = 531.5
STATIC_PJ_PER_CYCLE = 250.0
OTHER = 0.15 / 0.85


@pytest.fixture(scope="module")
def leaky(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("hw") / "leaky.yaml"
    path.write_text("base: eyeriss-v1\nname: eyeriss-leaky\ncontrol:\n  static_power: 50 mW\n")
    return str(path)


def test_simulated_clock_and_static_energy_follow_the_simulated_time(leaky: str, tmp_path: Path) -> None:
    sim = simulate_network("phases_example", leaky, trace_path=tmp_path / "t.h5")
    assert sum(layer.cycles > 0 for layer in sim.metrics.layers) >= 3
    for layer in sim.metrics.layers:  # a layer with no records (an input) takes no time: no clock either
        e = layer.energy_pj
        assert e["clock"] == pytest.approx(CLOCK_PJ_PER_CYCLE * layer.cycles, rel=1e-12)
        assert e["static"] == pytest.approx(STATIC_PJ_PER_CYCLE * layer.cycles, rel=1e-12)
        dynamic = sum(v for k, v in e.items() if k not in ("dram", "static", "control"))
        assert e["control"] == pytest.approx(OTHER * dynamic, rel=1e-12)
    # the closed form, priced again over the simulated cycles, agrees with the trace: check passes
    assert check_simulation(sim).ok


def test_the_closed_form_draws_them_over_its_latency_bound(leaky: str) -> None:
    est = estimate_mapping("phases_example", leaky)
    for layer in est.estimate.layers:
        bound = layer.latency.bound_cycles
        assert layer.energy_pj["clock"] == pytest.approx(CLOCK_PJ_PER_CYCLE * bound, rel=1e-12)
        assert layer.energy_pj["static"] == pytest.approx(STATIC_PJ_PER_CYCLE * bound, rel=1e-12)
