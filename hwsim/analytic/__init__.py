"""Closed-form models of accelerators: energy, latency and buffer sizes from equations, not simulation.

Nothing here may import a simulator: the analytic answers are the independent
half of every cross-check.
"""

from typing import TYPE_CHECKING

from hwsim import lazy

_HOMES = {  # the module of each public name: imported when the name is first used (an estimate loads neither
    # NeuPart's partition model nor CNNergy's table reader unless it asks for them)
    "cnnergy": ("CnnergyEnergy", "CnnergyHardware", "CnnergyLayer", "CnnergyLayerResult", "CnnergyMapping",
                "CnnergyNetworkResult", "cnnergy_energy", "cnnergy_network", "cnnergy_schedule", "compression_factor",
                "read_layer_table"),
    "graph_adapter": ("ALEXNET_MEASURED", "AdaptedLayer", "SparsityModel", "adapt_graph", "cnnergy_layers"),
    "neupart": ("Link", "PartitionModel", "PartitionResult", "evaluate_partition", "partition_model", "rate_sweep"),
}
__getattr__ = lazy.exports(__name__, _HOMES)

if TYPE_CHECKING:
    from hwsim.analytic.cnnergy import (
        CnnergyEnergy,
        CnnergyHardware,
        CnnergyLayer,
        CnnergyLayerResult,
        CnnergyMapping,
        CnnergyNetworkResult,
        cnnergy_energy,
        cnnergy_network,
        cnnergy_schedule,
        compression_factor,
        read_layer_table,
    )
    from hwsim.analytic.graph_adapter import (
        ALEXNET_MEASURED,
        AdaptedLayer,
        SparsityModel,
        adapt_graph,
        cnnergy_layers,
    )
    from hwsim.analytic.neupart import (
        Link,
        PartitionModel,
        PartitionResult,
        evaluate_partition,
        partition_model,
        rate_sweep,
    )

__all__ = [
    "ALEXNET_MEASURED",
    "AdaptedLayer",
    "CnnergyEnergy",
    "CnnergyHardware",
    "CnnergyLayer",
    "CnnergyLayerResult",
    "CnnergyMapping",
    "CnnergyNetworkResult",
    "Link",
    "PartitionModel",
    "PartitionResult",
    "SparsityModel",
    "adapt_graph",
    "cnnergy_energy",
    "cnnergy_layers",
    "cnnergy_network",
    "cnnergy_schedule",
    "compression_factor",
    "evaluate_partition",
    "partition_model",
    "rate_sweep",
    "read_layer_table",
]
