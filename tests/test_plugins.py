"""A component model is one file: a toy DRAM model registered from tests/plugins/ and named by a config runs
through the loader, the simulator, the trace and `hwsim check`, with no module of hwsim edited."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hwsim.trace
from hwsim.errors import ConfigError
from hwsim.flows import check_simulation, simulate_network
from hwsim.hardware import load_config
from hwsim.hardware.loader import from_dict, to_dict

PLUGIN = Path(__file__).resolve().parent / "plugins" / "fixed_latency_dram.py"
LATENCY_CYCLES = 40


def _config(folder: Path, extra: str = "") -> Path:
    path = folder / "fixed.yaml"
    path.write_text(f"base: eyeriss-v1\nname: eyeriss-fixed-dram\nplugins: [{PLUGIN}]\n"
                    f"dram:\n  model: fixed_latency\n  access_latency: {LATENCY_CYCLES} cycles\n{extra}")
    return path


def test_a_config_names_a_model_registered_by_a_plugin_file(tmp_path: Path) -> None:
    hw = load_config(_config(tmp_path))
    assert hw.dram.model == "fixed_latency"
    assert hw.dram.params.access_latency_cycles == LATENCY_CYCLES  # the model's own key, parsed in its unit
    assert from_dict(to_dict(hw)) == hw  # a trace rebuilds it (the plugin imported first)
    with pytest.raises(ConfigError, match=r"dram.acess_latency: unknown key; did you mean 'access_latency'"):
        load_config(_config(tmp_path, "  acess_latency: 3 cycles\n"))


def test_the_toy_model_times_the_simulation_and_check_passes(tmp_path: Path) -> None:
    sim = simulate_network("phases_example", load_config(_config(tmp_path)), trace_path=tmp_path / "t.h5")
    with hwsim.trace.open(sim.trace) as trace:
        dram = trace.select("dram")
    # By hand: eyeriss-v1's DRAM moves 8 B per cycle, so a 64-byte burst holds the bus 64 / 8 = 8 cycles; the run's
    # first request is made at cycle 0 on an idle bus, so its first burst starts at 0 + 40.
    assert set((dram["end_cycle"] - dram["start_cycle"]).tolist()) == {8}
    assert int(dram["start_cycle"].min()) == LATENCY_CYCLES
    assert np.all(np.diff(np.sort(dram["start_cycle"])) >= 8)  # one bus: bursts never overlap
    report = check_simulation(sim)
    assert report.ok, report.mismatches
