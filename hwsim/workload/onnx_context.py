"""What an ONNX op handler sees of the importer: `ImportContext`, and the `Handler` type.

A handler reads a node's inputs as the importer tracks them and adds layers
through the importer's `GraphBuilder`. The handlers (`onnx_layers`,
`onnx_quant`, the window ops of `onnx_import`) are typed against this
interface; `onnx_import`'s importer implements it and dispatches to them, so
the handler modules do not import the importer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from hwsim.workload.builder import GraphBuilder
from hwsim.workload.ir import FrameWindow, Layer, Padding
from hwsim.workload.onnx_fold import OnnxNode
from hwsim.workload.onnx_values import Feature, Inputs, Value


class ImportContext(Protocol):
    """The importer as a handler uses it: its builder and value tables, and the steps a handler takes."""

    @property
    def b(self) -> GraphBuilder: ...
    @property
    def values(self) -> dict[str, Value]: ...  # ONNX value -> its meaning so far
    @property
    def consumers(self) -> Counter[str]: ...  # ONNX value -> data reads of it
    @property
    def weight_sources(self) -> dict[str, tuple[str, bool]]: ...  # weighted layer -> (ONNX weight, transposed)
    @property
    def batch(self) -> int: ...
    @property
    def input_changed(self) -> bool: ...  # whether --input changed a size the file fixes

    # naming and recording outputs
    def where(self, node: OnnxNode) -> str: ...
    def layer_name(self, node: OnnxNode, k: int = 0) -> str: ...
    def produce(self, node: OnnxNode, k: int, tensor: str, dims: Sequence[int] | None = None,
                layout: str = "NCHW") -> None: ...
    def produce_vector(self, node: OnnxNode, tensor: str) -> None: ...
    def alias(self, node: OnnxNode, x: Feature, dims: Sequence[int] | None = None, layout: str | None = None,
              k: int = 0) -> None: ...
    def relayout(self, node: OnnxNode, x: Feature, new: tuple[int, ...]) -> None: ...

    # reading node inputs
    def known_dims(self, name: str) -> tuple[int, ...] | None: ...
    def const(self, node: OnnxNode, ins: Inputs, index: int) -> np.ndarray | None: ...
    def consts(self, node: OnnxNode, ins: Inputs) -> list[np.ndarray | None]: ...
    def from_shape(self, name: str) -> np.ndarray: ...
    def weight_dims(self, v: Value | None, rank: int) -> tuple[int, ...]: ...
    def image(self, node: OnnxNode, v: Value | None, windows_ok: bool = False) -> Feature: ...
    def window_padding(self, node: OnnxNode, x: Feature, kernel: tuple[int, int], stride: tuple[int, int],
                       dilation: tuple[int, int], depth: tuple[int, int, int]) -> tuple[Padding, FrameWindow]: ...

    # fusion, and another handler's work
    def fusable(self, x: Feature) -> Layer | None: ...
    def pointwise(self, node: OnnxNode, x: Feature, bn: bool = False, activation: str | None = None,
                  bias: bool = False) -> None: ...
    def run(self, handler: Handler, node: OnnxNode, ins: Inputs) -> None: ...


Handler = Callable[[ImportContext, OnnxNode, Inputs], None]
