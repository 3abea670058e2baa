"""Argument types and arguments that several commands share: the network arguments, positive
integers, fractions, positive numbers and byte sizes. Each type turns bad text into one argparse error
line naming the option's expected form."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING

from hwsim.errors import ConfigError, HwsimError
from hwsim.hardware.units import BYTES, parse_quantity
from hwsim.search.names import ALLOCATION_OBJECTIVES, ALLOCATIONS, MAPPERS, OBJECTIVE_NAMES
from hwsim.sparsity.names import DEFAULT_RELU_SPARSITY, SPARSITY_CHOICES
from hwsim.vocab import MAX_BATCH, WORD_BITS, WORD_BITS_TEXT
from hwsim.workload.network import parse_input_size

if TYPE_CHECKING:  # the flows are loaded by the command that runs, not by every command's parser
    from hwsim.flows.inputs import MappingLike, SparsityLike
    from hwsim.flows.run import RunSpec
    from hwsim.hardware.schema import Accelerator
    from hwsim.search.network import Progress as SearchProgress
    from hwsim.search.network import SearchSettings
    from hwsim.workload.ir import Graph


def input_size_arg(text: str) -> tuple[int, int]:
    """argparse type for --input WxH: (height, width)."""
    try:
        return parse_input_size(text)
    except HwsimError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_network_arguments(parser: argparse.ArgumentParser, required: bool = True) -> None:
    """NETWORK, --input and --allow-unknown: shared by every command that loads a network."""
    parser.add_argument("network", nargs=None if required else "?", default=None,
                        help="zoo network name (see `hwsim zoo`) or path to an .onnx file")
    parser.add_argument("--input", metavar="WxH", type=input_size_arg, default=None,
                        help="override the input resolution, e.g. 3840x2160")
    parser.add_argument("--allow-unknown", action="store_true",
                        help="treat ONNX ops hwsim cannot map as zero-cost pass-through layers (with a warning)")


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The network arguments, --hw (required), --batch, --mapping, the sparsity options and --json: what a simulating
    command takes."""
    add_network_arguments(parser)
    parser.add_argument("--hw", required=True, metavar="CONFIG", help="accelerator config: a path or a shipped name")
    parser.add_argument("--batch", type=batch_arg, default=None, metavar="N",
                        help="images per run (default: the batch an ONNX file declares, else 1)")
    add_mapping_argument(parser)
    add_bits_argument(parser)
    add_sparsity_arguments(parser, "none")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of tables")


def add_bits_argument(parser: argparse.ArgumentParser) -> None:
    """--bits N: the word width of the run."""
    parser.add_argument("--bits", type=bits_arg, default=None, metavar="N",
                        help="word width of the run, 8, 16 or 32: the config is rescaled by hwsim's precision rules "
                             "(same bytes and bus widths; word counts keep their bytes; per-word energies scale "
                             "with the bits, a MAC's multiplier with bits²); default: the width a quantized graph "
                             "declares, else the config's")


def bits_arg(text: str) -> int:
    """argparse type for --bits: a word width hwsim models."""
    if not text.strip().isdigit() or int(text) not in WORD_BITS:
        raise argparse.ArgumentTypeError(f"{text!r}: give a word width of {WORD_BITS_TEXT} bit")
    return int(text)


def run_config(args: argparse.Namespace, graph: Graph) -> tuple[Graph, Accelerator, tuple[str, ...]]:
    """`graph` with each layer's word (--bits, else the widths the graph declares, else the config's) and the config
    --hw names as the run prices it (`hwsim.flows.precision.run_precision`), and the notes that say how the words
    were chosen."""
    from hwsim.flows.precision import precision_notes, run_precision
    from hwsim.hardware import load_config

    hw = load_config(args.hw)
    try:
        return *run_precision(graph, hw, args.bits), precision_notes(graph, hw, args.bits)
    except ConfigError as exc:  # a rescaled config breaks a rule: name the file it came from
        raise ConfigError(f"{args.hw}: {exc}") from None


def run_spec(args: argparse.Namespace, graph: Graph, sparsity_default: str = "none",
             clock_power_w: float | None = None, throughput_gmacs: float | None = None,
             search_progress: SearchProgress | None = None) -> RunSpec:
    """The run the arguments ask for, resolved once (`hwsim.flows.run.resolve_run`): `graph` at the words --bits
    (else the graph's declared widths, else the config's) gives, the config --hw names as the run prices it, the
    batch, the plan (--mapping, --mapper search, else the rules), the zeros (--sparsity or --activations-from, else
    `sparsity_default`) and the clock overrides."""
    from hwsim.flows.run import resolve_run
    from hwsim.hardware import load_config

    hw = load_config(args.hw)
    mapping, zeros = mapping_request(args), sparsity_request(args, graph, sparsity_default)
    try:
        return resolve_run(graph, hw, args.batch, mapping, zeros, args.bits, clock_power_w, throughput_gmacs,
                           search_progress)
    except ConfigError as exc:  # a rescaled config breaks a rule: name the file it came from
        if str(exc).startswith(f"{args.hw}:"):
            raise
        raise ConfigError(f"{args.hw}: {exc}") from None


def table_config(args: argparse.Namespace) -> Accelerator:
    """The config --hw names at --bits (a layer table declares no width)."""
    from hwsim.hardware import load_config
    from hwsim.hardware.precision import at_precision

    hw = load_config(args.hw)
    try:
        return at_precision(hw, args.bits) if args.bits else hw
    except ConfigError as exc:
        raise ConfigError(f"{args.hw}: {exc}") from None


def add_sparsity_arguments(parser: argparse.ArgumentParser, default: str) -> None:
    """--sparsity, --relu-sparsity and --activations-from: where the layers' zeros come from."""
    parser.add_argument("--sparsity", default=None, metavar="SOURCE",
                        help=f"the layers' zeros (zero gating, zero skipping, compression): none (dense), "
                             f"{', '.join(SPARSITY_CHOICES)} (defaults by activation, measured presets), or a "
                             f"profile FILE.csv/.yaml with one row per layer (default {default})")
    parser.add_argument("--relu-sparsity", type=fraction_arg, default=DEFAULT_RELU_SPARSITY, metavar="F",
                        help=f"zeros after a ReLU where nothing was measured (default {DEFAULT_RELU_SPARSITY})")
    parser.add_argument("--activations-from", metavar="INPUT", default=None,
                        help="measure the zeros: run the ONNX network once on INPUT (.npy array or image file) "
                             "with onnxruntime (pip install 'hwsim[measure]'); tiles are coded from their values")


def sparsity_request(args: argparse.Namespace, graph: Graph, default: str) -> SparsityLike:
    """The zeros the options ask for: measured with --activations-from, else --sparsity (or `default`)."""
    from hwsim.flows.inputs import measure_activations, sparsity_choice

    if args.activations_from is not None:
        if args.sparsity is not None:
            raise HwsimError("--sparsity and --activations-from both say where zeros come from; give one of them")
        return measure_activations(args.network, args.activations_from, graph, args.input, args.allow_unknown)
    return sparsity_choice(args.sparsity or default, args.relu_sparsity, graph)


def add_mapping_argument(parser: argparse.ArgumentParser) -> None:
    """--mapping FILE (replay a mapping written by `hwsim map`) or --mapper search (find one), and the search's
    settings."""
    parser.add_argument("--mapping", metavar="FILE.yaml", default=None,
                        help="run this mapping (written by `hwsim map`, YAML or JSON) instead of hwsim's default; "
                             "it is checked against the network and the hardware first")
    parser.add_argument("--mapper", choices=MAPPERS, default=None,
                        help="rules (default): the dataflow's rule mapping; search: the best mapping a search finds "
                             "under --objective")
    add_search_arguments(parser)
    add_allocation_argument(parser)


def add_allocation_argument(parser: argparse.ArgumentParser) -> None:
    """--allocate RULE: give a multi-core accelerator's cores the layers by a rule or a search."""
    parser.add_argument("--allocate", choices=ALLOCATIONS, default=None,
                        help="run on every core of a multi-core config: round_robin (layer k on core k mod n), "
                             "stages (contiguous stages, one per core: a pipeline), split (layers divided over the "
                             "cores by output channels), split_rows (by output rows, with halos), fused (the "
                             "stages, tensors between them pushed over the links into the next core's GLB instead "
                             "of DRAM) or search (the best allocation under --objective: latency, energy or edp); "
                             "--batch images stream through the cores. Replay a saved one with --mapping FILE "
                             "(written by hwsim map --allocate ... --out)")
    parser.add_argument("--tiles", type=positive_int, default=None, metavar="N",
                        help="with --allocate fused: cut each layer at a boundary between cores into N tiles, bands "
                             "of rows (at most one per row; default: at most 4, each as tall as its core's PE array "
                             "is wide); a reader's tiles then start as its producer's arrive, the tensor in a line "
                             "buffer in the reader's GLB where it fits")


def add_search_arguments(parser: argparse.ArgumentParser) -> None:
    """--objective, --budget, --seed and --cache: how a mapping search runs."""
    parser.add_argument("--objective", choices=OBJECTIVE_NAMES, default=None,
                        help="what the search minimises per layer: energy (default), latency (with double "
                             "buffering), edp (energy x latency) or dram (words)")
    parser.add_argument("--budget", type=_seconds, default=None, metavar="SECONDS",
                        help="search effort for the whole network, in seconds at this machine's rate (the same "
                             "budget and seed give the same mapping); default: the standard effort")
    parser.add_argument("--seed", type=_seed, default=0, metavar="S", help="the search's random seed (default 0)")
    parser.add_argument("--cache", metavar="DIR", default=None,
                        help="where searched layers are kept (default $HWSIM_CACHE or ~/.cache/hwsim); "
                             "--cache none keeps nothing")


def _seconds(text: str) -> float:
    return positive_float(text, "--budget", "5")


def _seed(text: str) -> int:
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"--seed takes a whole number ≥ 0, e.g. 1; got {text!r}")
    return int(text)


def search_settings(args: argparse.Namespace, jobs: int = 1) -> SearchSettings:
    """The search the arguments of add_search_arguments describe."""
    from hwsim.search.network import SearchSettings

    cache = getattr(args, "cache", None)
    return SearchSettings(objective=args.objective or "energy", seed=args.seed, jobs=jobs,
                          cache_dir=Path(cache) if cache not in (None, "none") else None,
                          use_cache=cache != "none", budget_s=args.budget)


def mapping_request(args: argparse.Namespace) -> MappingLike:
    """What to run: the --mapping file, a search (--mapper search), an allocation (--allocate), or None for the
    rules."""
    allocating = getattr(args, "allocate", None)
    if allocating is not None:
        return allocation_request(args)
    searching = args.mapper == "search"
    if args.mapping is not None and searching:
        raise HwsimError("--mapping FILE and --mapper search both choose the mapping; give one of them")
    if not searching and (args.objective is not None or args.budget is not None):
        raise HwsimError("--objective and --budget set a search; add --mapper search")
    return search_settings(args) if searching else args.mapping


def allocation_request(args: argparse.Namespace) -> MappingLike:
    """The allocation --allocate asks for (--objective: a search's, latency unless given)."""
    from hwsim.mapping.plans import AllocationRequest

    if args.mapping is not None or args.mapper == "search":
        raise HwsimError("--allocate makes the run's plan; drop --mapping and --mapper (replay a saved allocation "
                         "with --mapping FILE alone)")
    objective = args.objective or "latency"
    if objective not in ALLOCATION_OBJECTIVES:
        raise HwsimError(f"--objective {objective}: an allocation search minimises "
                         f"{', '.join(ALLOCATION_OBJECTIVES)}")
    if args.objective is not None and args.allocate != "search":
        raise HwsimError(f"--objective sets a search; use --allocate search (not {args.allocate})")
    tiles = getattr(args, "tiles", None)
    if tiles is not None and args.allocate != "fused":
        raise HwsimError(f"--tiles {tiles} sets the fused rule's tiles; use --allocate fused (not {args.allocate})")
    return AllocationRequest(args.allocate, objective, tiles or 0)


def positive_int(text: str) -> int:
    """argparse type for a count such as --batch, --jobs or --limit: a positive integer."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)


def batch_arg(text: str) -> int:
    """argparse type for --batch: images per run, from 1 to MAX_BATCH."""
    value = positive_int(text)
    if value > MAX_BATCH:
        raise argparse.ArgumentTypeError(f"{text!r} images exceed the {MAX_BATCH} one run may process")
    return value


def fraction_arg(text: str) -> float:
    """argparse type for a fraction of zeros in [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a fraction of zeros in [0, 1]")
    return value


def positive_float(text: str, option: str, example: str) -> float:
    """A positive finite number for `option`."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{option} takes a positive number, e.g. {example}; got {text!r}")
    return value


def bytes_arg(text: str) -> int:
    """argparse type for a byte size such as 2MB or 512KiB."""
    try:
        value = int(parse_quantity(text, BYTES, None, text))
    except HwsimError as exc:
        raise argparse.ArgumentTypeError(f"{exc}; e.g. 2MB") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive size, e.g. 2MB")
    return value


__all__ = [
    "add_bits_argument",
    "add_mapping_argument",
    "add_network_arguments",
    "add_run_arguments",
    "add_search_arguments",
    "add_sparsity_arguments",
    "bits_arg",
    "bytes_arg",
    "fraction_arg",
    "input_size_arg",
    "mapping_request",
    "positive_float",
    "positive_int",
    "run_config",
    "run_spec",
    "search_settings",
    "sparsity_request",
    "table_config",
]
