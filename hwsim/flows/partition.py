"""NeuPart: where to cut a network between a client accelerator and the cloud so that the client spends
the least energy (computing up to the cut with the faithful CNNergy model, then sending the cut's
RLC-compressed tensor), at one link and optionally over a sweep of bit rates."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hwsim.analytic.graph_adapter import DEFAULT_MAX_BATCH, SparsityModel
from hwsim.analytic.neupart import (
    Link,
    OptimumChange,
    PartitionModel,
    PartitionResult,
    SweepPoint,
    evaluate_partition,
    optimum_changes,
    partition_model,
    rate_sweep,
)
from hwsim.flows.inputs import HardwareLike, NetworkLike, as_graph, as_hardware


@dataclass(frozen=True)
class Partition:
    """Every candidate cut priced on one link, the optimum, and (when rates were swept) the optimum at
    each rate and the rates where it moves."""

    model: PartitionModel
    sparsity: SparsityModel
    result: PartitionResult
    sweep: tuple[SweepPoint, ...]
    changes: tuple[OptimumChange, ...]


def partition_network(network: NetworkLike, hw: HardwareLike, rate_bps: float, ptx_w: float,
                      sparsity: SparsityModel, input_sparsity: float = 0.0, max_batch: int = DEFAULT_MAX_BATCH,
                      sweep_rates_bps: Sequence[float] = ()) -> Partition:
    """The client-energy-optimal cut of `network` on client `hw` over a link of `rate_bps` bit/s sent at
    `ptx_w` W; `input_sparsity` is the zero fraction of the image as sent (0: raw 8-bit pixels),
    `max_batch` caps CNNergy's batch per layer."""
    model = partition_model(as_graph(network), as_hardware(hw), sparsity, input_sparsity, max_batch)
    result = evaluate_partition(model, Link(rate_bps, ptx_w))
    points = rate_sweep(model, sweep_rates_bps, ptx_w)
    return Partition(model, sparsity, result, tuple(points), tuple(optimum_changes(model, points, ptx_w)))


__all__ = ["Partition", "partition_network"]
