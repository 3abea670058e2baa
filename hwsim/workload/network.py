"""One entry point for every command that takes a NETWORK argument."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from hwsim.errors import NetworkError
from hwsim.workload.ir import Graph


@dataclass(frozen=True)
class LoadedNetwork:
    """A graph plus what the loader had to say about it.

    `unmodelled` maps each ONNX op hwsim could not model (admitted with
    --allow-unknown) to the zero-cost pass-through layers it became.
    """

    graph: Graph
    warnings: tuple[str, ...] = ()
    unmodelled: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def import_summary(self) -> dict[str, object]:
        """Plain data (JSON, trace attributes) on what the import kept: the network's MACs, and the
        layers passed through at zero cost per op, whose work those MACs leave out."""
        return {
            "macs": self.graph.total_macs,
            "passthrough_layers": sum(len(names) for names in self.unmodelled.values()),
            "unmodelled_ops": {op: list(names) for op, names in self.unmodelled.items()},
        }


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
        return LoadedNetwork(result.graph, result.warnings, result.unmodelled)
    from hwsim.workload import zoo

    return LoadedNetwork(zoo.build(spec, input_hw))
