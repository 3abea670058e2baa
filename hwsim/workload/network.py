"""One entry point for every command that takes a NETWORK argument."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hwsim.errors import NetworkError
from hwsim.workload.ir import Graph


@dataclass(frozen=True)
class LoadedNetwork:
    """A graph plus what the loader had to say about it."""

    graph: Graph
    warnings: tuple[str, ...] = ()


def parse_input_size(text: str) -> tuple[int, int]:
    """'WxH' (or a single side for a square) as (height, width)."""
    parts = text.lower().replace("×", "x").split("x")
    try:
        sizes = [int(p) for p in parts]
    except ValueError:
        sizes = []
    if len(sizes) == 1:
        sizes = sizes * 2
    if len(sizes) != 2 or min(sizes) <= 0:
        raise NetworkError(f"--input {text!r}: give the input resolution as WIDTHxHEIGHT, e.g. 3840x2160")
    width, height = sizes
    return (height, width)


def is_onnx_path(spec: str) -> bool:
    """Whether `spec` names a file rather than a zoo network."""
    return spec.lower().endswith(".onnx") or Path(spec).is_file()


def load_network(spec: str, input_hw: tuple[int, int] | None = None, allow_unknown: bool = False) -> LoadedNetwork:
    """A zoo network by name, or an ONNX file by path."""
    if is_onnx_path(spec):
        from hwsim.workload.onnx_import import load_onnx

        result = load_onnx(spec, allow_unknown=allow_unknown, input_hw=input_hw)
        return LoadedNetwork(result.graph, result.warnings)
    from hwsim.workload import zoo

    return LoadedNetwork(zoo.build(spec, input_hw))
