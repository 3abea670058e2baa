"""Implementations chosen by name: the config's choices and the simulator's registries agree, an unknown name
is a one-line config error, and the component base keeps the component's statistics."""

from __future__ import annotations

import dataclasses

import pytest

from hwsim.errors import ConfigError
from hwsim.hardware.kinds import (
    CODECS,
    DATAFLOWS,
    DRAM_ADDRESS_MAPS,
    DRAM_MODELS,
    DRAM_SCHEDULERS,
    LINK_MODELS,
    NOC_MODELS,
    PAGE_POLICIES,
    ROW_POLICIES,
    SCHEDULERS,
)
from hwsim.hardware.loader import load_config, parse_config, resolve_config
from hwsim.hardware.schema import COMPONENTS, ParamInfo
from hwsim.sim.dram.policies import ADDRESS_MAPS
from hwsim.sim.executor import EXECUTION_POLICIES
from hwsim.sim.policy import FirstComeFirstServed

REGISTRY_OF_FIELD = {
    ("Dram", "model"): DRAM_MODELS, ("Dram", "scheduler"): DRAM_SCHEDULERS, ("Dram", "address_map"): DRAM_ADDRESS_MAPS,
    ("Dram", "page_policy"): PAGE_POLICIES,
    ("RowBuffer", "policy"): ROW_POLICIES, ("Noc", "model"): NOC_MODELS, ("Noc", "scheduler"): SCHEDULERS,
    ("Glb", "scheduler"): SCHEDULERS, ("L2", "scheduler"): SCHEDULERS, ("LineBuffer", "scheduler"): SCHEDULERS,
    ("PeArray", "dataflow"): DATAFLOWS, ("Compression", "format"): CODECS, ("Link", "model"): LINK_MODELS,
}


def _choice_fields() -> dict[tuple[str, str], object]:
    out = {}
    for cls in COMPONENTS:
        for f in dataclasses.fields(cls):
            info: ParamInfo = f.metadata["info"]
            if info.choices is not None:
                out[(cls.__name__, f.name)] = info.choices
    return out


def test_every_config_choice_is_read_from_the_registry_of_its_implementations() -> None:
    fields = _choice_fields()
    assert set(fields) == set(REGISTRY_OF_FIELD)
    for key, registry in fields.items():
        assert registry is REGISTRY_OF_FIELD[key], key
    assert {"jedec", "simple"} <= set(DRAM_MODELS.names())  # and any a plug-in registered (tests/plugins)
    assert set(DATAFLOWS.names()) == {"row_stationary", "weight_stationary", "output_stationary", "input_stationary",
                                      "no_local_reuse"}


def test_the_simple_dram_takes_a_subset_of_the_dram_choices() -> None:
    # dram.scheduler and dram.address_map list the jedec model's implementations; the simple model's are among them
    assert set(SCHEDULERS.names()) <= set(DRAM_SCHEDULERS.names())
    assert set(ADDRESS_MAPS.names()) <= set(DRAM_ADDRESS_MAPS.names())


def test_execution_policies_are_registered() -> None:
    assert EXECUTION_POLICIES.names() == ("pipelined", "sequential")


def test_unknown_choice_is_a_one_line_config_error() -> None:
    hw = load_config("eyeriss-v1")  # the shipped config loads with its defaults
    assert hw.dram.model == "simple" and hw.dram.scheduler == "fcfs"
    yaml_text = resolve_config("eyeriss-v1").read_text().replace("  burst: 64 B\n",
                                                                 "  burst: 64 B\n  scheduler: lottery\n")
    with pytest.raises(ConfigError) as err:
        parse_config(yaml_text, "x.yaml")
    message = str(err.value)
    assert "\n" not in message and "dram.scheduler" in message and "fcfs" in message and "x.yaml:" in message
    # a known name the configured model does not implement: one line naming the field and the fix
    frfcfs = yaml_text.replace("scheduler: lottery", "scheduler: frfcfs")
    with pytest.raises(ConfigError, match=r"^x.yaml: dram.scheduler: frfcfs needs model jedec; the simple model"):
        parse_config(frfcfs, "x.yaml")
    with pytest.raises(ConfigError, match="use one of burst_interleave"):
        ADDRESS_MAPS.get("row_major")


def test_first_come_first_served_by_hand() -> None:
    fcfs = FirstComeFirstServed()
    assert fcfs.start_cycle(5, 3) == 5 and fcfs.start_cycle(5, 9) == 9
    # three ports free at 2, 7 and 4; a request ready at 5 starts at 5 on the port free latest by then (4),
    # leaving the one free since 2 for others
    assert fcfs.pick_server(5, [2, 7, 4]) == (2, 5)
    # ready at 1: every port busy until 2 at least, so it starts at 2 on port 0
    assert fcfs.pick_server(1, [2, 7, 4]) == (0, 2)
    # ready at 9: every port free; it takes one of those free latest (7), the first of them, leaving 2 free longest
    assert fcfs.pick_server(9, [2, 7, 7]) == (1, 9)
    assert fcfs.pick_server(7, [7, 2, 7]) == (0, 7)
