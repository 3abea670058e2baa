"""What the flows take: a network (a zoo name, an .onnx path or a `Graph`), an accelerator (a shipped
config name, a YAML path or an `Accelerator`) and the activation sparsity to price.

Passing a loaded `Graph` or `Accelerator` lets a notebook load once and run many flows; passing a name
loads it with the defaults (the network's own input size, unknown ONNX ops rejected).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Union

from hwsim.analytic.graph_adapter import SPARSITY_PRESETS, SparsityModel, preset_fits
from hwsim.errors import HwsimError
from hwsim.hardware import load_config
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.plans import AllocationRequest, Plan
from hwsim.sparsity.profile import SparsityError, SparsityProfile, read_profile
from hwsim.workload.ir import Graph
from hwsim.workload.network import is_onnx_path, load_network

if TYPE_CHECKING:  # the search engine is imported only by a run that searches
    from hwsim.search.network import SearchSettings

NetworkLike = Graph | str | Path
HardwareLike = Accelerator | str | Path
# a mapping or another mapper's plan, a file written with --out, a search to run (`--mapper search`), an allocation
# to make over a multi-core accelerator's cores (`--allocate`), or None: the dataflow's rules
MappingLike = Union[Plan, "SearchSettings", AllocationRequest, str, Path, None]

SparsityLike = SparsityModel | SparsityProfile | None  # defaults or a preset, a profile (file, measured), or dense

AUTO, RELU = "auto", "relu"
SPARSITY_CHOICES = (AUTO, RELU, *SPARSITY_PRESETS)


def as_graph(network: NetworkLike) -> Graph:
    """The graph of `network`: itself, or the zoo network or ONNX file it names."""
    if isinstance(network, Graph):
        return network
    return load_network(str(network)).graph


def as_hardware(hw: HardwareLike) -> Accelerator:
    """The accelerator `hw` is or names (a shipped config or a YAML path)."""
    return hw if isinstance(hw, Accelerator) else load_config(hw)


def check_batch(batch: int) -> int:
    """`batch`, a number of images ≥ 1."""
    if not isinstance(batch, int) or batch < 1:
        raise HwsimError(f"batch {batch!r}: give a number of images ≥ 1")
    return batch


def choose_sparsity(choice: str, relu_sparsity: float, graph: Graph) -> SparsityModel:
    """The sparsity model a choice names: `relu` (defaults after every ReLU), `auto` (a measured preset
    whose layers are exactly the graph's weighted layers, else the ReLU defaults), or a preset's name."""
    if choice == RELU:
        return SparsityModel(relu_sparsity=relu_sparsity)
    if choice == AUTO:
        fitting = [m for m in SPARSITY_PRESETS.values() if preset_fits(m, graph)]
        return replace(fitting[0], relu_sparsity=relu_sparsity) if fitting else SparsityModel(
            relu_sparsity=relu_sparsity)
    return replace(SPARSITY_PRESETS[choice], relu_sparsity=relu_sparsity)


NONE = "none"
PROFILE_SUFFIXES = (".csv", ".yaml", ".yml")


def sparsity_choice(choice: str, relu_sparsity: float, graph: Graph) -> SparsityLike:
    """What `--sparsity CHOICE` names: none (dense), auto, relu or a preset (`choose_sparsity`), or a profile file
    (.csv, .yaml)."""
    if choice == NONE:
        return None
    if choice in SPARSITY_CHOICES:
        return choose_sparsity(choice, relu_sparsity, graph)
    if Path(choice).suffix.lower() in PROFILE_SUFFIXES:
        return read_profile(choice, graph)
    raise SparsityError(f"--sparsity {choice}: give none, {', '.join(SPARSITY_CHOICES)} or a profile file "
                        "(.csv or .yaml, one row per layer)")


def measure_activations(network: str | Path, input_path: str | Path, graph: Graph,
                        input_hw: tuple[int, int] | None = None, allow_unknown: bool = False,
                        runner: str = "onnxruntime") -> SparsityProfile:
    """The measured profile of the ONNX file `network` (imported as `graph`) run once on `input_path`."""
    if not is_onnx_path(str(network)):
        raise SparsityError(f"--activations-from runs the network's ONNX graph with its weights; {network} is not "
                            "an .onnx file (a zoo network has no weights)")
    from hwsim.sparsity.onnx_run import measure_onnx
    from hwsim.workload.onnx_import import load_onnx

    result = load_onnx(network, allow_unknown=allow_unknown, input_hw=input_hw)
    return measure_onnx(network, result, input_path, runner).profile(graph)


def as_profile(sparsity: SparsityLike, graph: Graph) -> SparsityProfile | None:
    """Every layer's zeros under `sparsity`: a model's for `graph`, a profile as given, None for dense."""
    if isinstance(sparsity, SparsityModel):
        return sparsity.profile(graph)
    return sparsity


__all__ = [
    "AUTO",
    "NONE",
    "RELU",
    "SPARSITY_CHOICES",
    "HardwareLike",
    "MappingLike",
    "NetworkLike",
    "SparsityLike",
    "as_graph",
    "as_hardware",
    "as_profile",
    "check_batch",
    "choose_sparsity",
    "measure_activations",
    "sparsity_choice",
]
