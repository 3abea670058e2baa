"""Networks: the layer-graph IR, the ONNX importer and the built-in zoo."""

from hwsim.workload.builder import GraphBuilder
from hwsim.workload.ir import Graph, Layer, LayerKind, Padding, Shape

__all__ = ["Graph", "GraphBuilder", "Layer", "LayerKind", "Padding", "Shape"]
