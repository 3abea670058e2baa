"""Argument types and arguments that several commands share: the network arguments, positive
integers, fractions, positive numbers and byte sizes. Each type turns bad text into one argparse error
line naming the option's expected form."""

from __future__ import annotations

import argparse
import math

from hwsim.errors import HwsimError
from hwsim.hardware.units import BYTES, parse_quantity
from hwsim.workload.network import parse_input_size


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
    """The network arguments, --hw (required), --batch, --mapping and --json: what a simulating command takes."""
    add_network_arguments(parser)
    parser.add_argument("--hw", required=True, metavar="CONFIG", help="accelerator config: a path or a shipped name")
    parser.add_argument("--batch", type=positive_int, default=1, metavar="N", help="images per run (default 1)")
    add_mapping_argument(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of tables")


def add_mapping_argument(parser: argparse.ArgumentParser) -> None:
    """--mapping FILE: replay a mapping written by `hwsim map` instead of hwsim's default one."""
    parser.add_argument("--mapping", metavar="FILE.yaml", default=None,
                        help="run this mapping (written by `hwsim map`, YAML or JSON) instead of hwsim's default; "
                             "it is checked against the network and the hardware first")


def positive_int(text: str) -> int:
    """argparse type for a count such as --batch, --jobs or --limit: a positive integer."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)


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


__all__ = ["add_network_arguments", "add_run_arguments", "bytes_arg", "fraction_arg", "input_size_arg",
           "positive_float", "positive_int"]
