"""NeuPart: where to cut a CNN between a battery-powered client and the cloud.

The client runs layers 1..i on its accelerator (energy from CNNergy), sends
the one tensor live after layer i to the cloud, and the cloud finishes. The
client pays (NeuPart eq. 1)

    E_cost(i) = E_client(1..i) + E_trans(i),   E_trans = P_tx · D_RLC(i) / B_e

and the optimum is the cut that minimises it. Everything but the link is
fixed by the network and the hardware, so `partition_model` precomputes the
cut points once (the paper's offline step) and `evaluate_partition` prices
them for a link (rate B_e, power P_tx) at run time.

Modelling choices (see also `graph_adapter` for the CNNergy layers):

- Cut points: fully cloud (the input image is sent), after every layer in
  execution order whose output is the only tensor live across the cut
  (pools and LRNs included, as the paper's P1/P2/P3; cuts inside a fire or
  inception module or a residual block are skipped), and fully on the client
  (nothing is sent: the result the cloud would return is negligible).
- Transmitted bits (eq. 25): D_RLC = D_raw · (1 − sparsity) · (1 + α), with
  α = 1/3 for 16-bit data with 5-bit runs and 3/5 for 8-bit data with 4-bit
  runs: three (or five) run + value pairs per 64-bit word, the same packing
  as CNNergy's DRAM traffic. Intermediate tensors have the accelerator's word
  width. Where RLC would expand a tensor (sparsity below α / (1 + α), e.g. a
  dense image) the sender sends it raw; the paper's formula assumes sparse
  data ("this overhead only applies to the few nonzeros").
- The input: the paper sends the image JPEG-compressed and applies eq. 25
  with the compressed image's sparsity (SparsityIn, image-dependent; its
  quartile values are not in our copy of the paper). Here the image is
  8-bit pixels and `input_sparsity` plays SparsityIn; 0 sends the raw image.
  The JPEG encoding energy is neglected, as in the paper.
- Delay (eq. 26): Σ client latency(1..i) + D_RLC / B_e + Σ cloud latency(i+1..N).
  The client's latency is its MACs at the accelerator's measured throughput
  (`control.reference_throughput`, 23.1 GMAC/s for Eyeriss v1: the same time
  CNNergy's clock energy is charged for); the cloud is a TPU at 92 TOPS,
  2 operations per MAC. Unweighted layers take no time.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from hwsim.analytic.cnnergy import RLC_WORD_BITS, cnnergy_network, compression_factor
from hwsim.analytic.graph_adapter import DEFAULT_MAX_BATCH, AdaptedLayer, SparsityModel, adapt_graph
from hwsim.errors import ConfigError, NetworkError
from hwsim.hardware.schema import Accelerator
from hwsim.workload.ir import Graph, LayerKind

CLOUD_OPS_PER_S = 92e12
"""The cloud: Google's TPU (Jouppi et al., ISCA 2017), 92 TeraOps/s peak."""

OPS_PER_MAC = 2
"""A MAC is two operations (multiply, add) in the TPU's TOPS."""

IMAGE_PIXEL_BITS = 8
"""The input image as the camera delivers it: 8-bit pixels, whatever the accelerator's word width."""

J_PER_PJ = 1e-12

CLOUD, SPLIT, CLIENT = "cloud", "split", "client"


# ----- transmission -----------------------------------------------------------------------------


def rlc_overhead(word_bits: int) -> float:
    """α: extra bits per non-zero data bit, 64 / (c · Bw) − 1 (1/3 at 16 bit, 3/5 at 8 bit)."""
    return RLC_WORD_BITS / (compression_factor(word_bits) * word_bits) - 1.0


def rlc_bits(raw_bits: float, sparsity: float, word_bits: int) -> float:
    """NeuPart eq. 25: the non-zero share of the raw bits plus the run-length overhead."""
    return raw_bits * (1.0 - sparsity) * (1.0 + rlc_overhead(word_bits))


def encoded_bits(raw_bits: float, sparsity: float, word_bits: int) -> tuple[float, str]:
    """(bits sent, "rlc" or "raw"): RLC unless it would make the data larger than raw."""
    compressed = rlc_bits(raw_bits, sparsity, word_bits)
    return (compressed, "rlc") if compressed < raw_bits else (raw_bits, "raw")


@dataclass(frozen=True)
class Link:
    """The client's uplink: effective bit rate B_e and transmission power P_tx."""

    rate_bps: float
    ptx_w: float

    def __post_init__(self) -> None:
        if not self.rate_bps > 0:
            raise ConfigError(f"the bit rate must be positive, got {self.rate_bps} bit/s")
        if not self.ptx_w > 0:
            raise ConfigError(f"the transmission power must be positive, got {self.ptx_w} W")

    def time_s(self, bits: float) -> float:
        """Time to send `bits`."""
        return bits / self.rate_bps

    def energy_j(self, bits: float) -> float:
        """NeuPart eq. 24: E_trans = P_tx · bits / B_e."""
        return self.ptx_w * self.time_s(bits)


# ----- latency ----------------------------------------------------------------------------------


def client_latency_s(macs: float, hw: Accelerator) -> float:
    """A layer's time on the client: its MACs at the accelerator's measured throughput."""
    return macs / (hw.control.reference_throughput_gmacs * 1e9)


def cloud_latency_s(macs: float) -> float:
    """A layer's time in the cloud: 2 operations per MAC at the TPU's 92 TOPS."""
    return macs * OPS_PER_MAC / CLOUD_OPS_PER_S


# ----- cut points -------------------------------------------------------------------------------


def single_tensor_cuts(graph: Graph) -> list[int]:
    """Positions i (into graph.layers) after which layer i's output is the only live tensor.

    A tensor is live after position i if it is written at or before i and
    read after i. Input and output marker layers are never such positions.
    """
    last_read = {layer.output: -1 for layer in graph}
    for index, layer in enumerate(graph):
        for tensor in layer.inputs:
            last_read[tensor] = index
    live: set[str] = set()
    cuts = []
    for index, layer in enumerate(graph):
        live = {t for t in live if last_read[t] > index}
        if last_read[layer.output] > index:
            live.add(layer.output)
        if live == {layer.output} and layer.kind not in (LayerKind.INPUT, LayerKind.OUTPUT):
            cuts.append(index)
    return cuts


@dataclass(frozen=True)
class LayerCost:
    """One graph layer's share of the client's energy and of each side's time."""

    name: str
    kind: str
    macs: int
    client_energy_j: float  # 0 for layers CNNergy does not price
    client_latency_s: float
    cloud_latency_s: float
    batch: int | None  # CNNergy's n, None for unweighted layers


@dataclass(frozen=True)
class CutPoint:
    """A place to split the network: what the client has spent and what it must send.

    `after` names the last layer the client runs (the input layer for the
    fully-cloud cut); energies and latencies are cumulative.
    """

    position: int
    after: str
    side: str  # CLOUD (send the image), SPLIT, or CLIENT (send nothing)
    elements: int
    raw_bits: float
    sparsity: float
    tx_bits: float
    encoding: str  # "rlc", "raw" or "none"
    client_energy_j: float
    client_latency_s: float
    cloud_latency_s: float


@dataclass(frozen=True)
class PartitionModel:
    """Everything about the cuts that does not depend on the link (NeuPart's offline part)."""

    network: str
    hardware: str
    word_bits: int
    sparsity: str
    input_sparsity: float
    layers: tuple[LayerCost, ...]
    cuts: tuple[CutPoint, ...]


def _layer_costs(graph: Graph, adapted: Sequence[AdaptedLayer | None], hw: Accelerator) -> list[LayerCost]:
    """CNNergy energy (× copies) and both latencies of every graph layer."""
    priced = [a for a in adapted if a is not None]
    results = iter(cnnergy_network([a.layer for a in priced], hw).layers)
    costs = []
    for layer, adaptation in zip(graph, adapted):
        if adaptation is None:
            costs.append(LayerCost(layer.name, str(layer.kind), layer.macs, 0.0, 0.0, cloud_latency_s(layer.macs),
                                   None))
            continue
        energy_pj = next(results).energy.total_pj * adaptation.copies
        costs.append(LayerCost(layer.name, str(layer.kind), layer.macs, energy_pj * J_PER_PJ,
                               client_latency_s(adaptation.macs, hw), cloud_latency_s(layer.macs),
                               adaptation.layer.n))
    return costs


def _cut(position: int, side: str, graph: Graph, costs: Sequence[LayerCost], sent: tuple[int, float, float],
         word_bits: int) -> CutPoint:
    """A cut after `position` sending (elements, raw bits, sparsity) at `word_bits` per datum."""
    elements, raw_bits, sparsity = sent
    tx_bits, encoding = encoded_bits(raw_bits, sparsity, word_bits) if raw_bits else (0.0, "none")
    return CutPoint(position=position, after=graph.layers[position].name, side=side, elements=elements,
                    raw_bits=raw_bits, sparsity=sparsity, tx_bits=tx_bits, encoding=encoding,
                    client_energy_j=sum(c.client_energy_j for c in costs[:position + 1]),
                    client_latency_s=sum(c.client_latency_s for c in costs[:position + 1]),
                    cloud_latency_s=sum(c.cloud_latency_s for c in costs[position + 1:]))


def _boundaries(graph: Graph) -> tuple[int, int]:
    """(last leading input layer, last layer that is not an output marker): the two end cuts."""
    kinds = [layer.kind for layer in graph]
    if not kinds or kinds[0] is not LayerKind.INPUT:
        raise NetworkError(f"network {graph.name!r}: a partition needs the input layers first")
    first_compute = next((i for i, kind in enumerate(kinds) if kind is not LayerKind.INPUT), len(kinds))
    last_compute = max((i for i, kind in enumerate(kinds) if kind is not LayerKind.OUTPUT), default=-1)
    if first_compute > last_compute:
        raise NetworkError(f"network {graph.name!r} has no layer to partition")
    return first_compute - 1, last_compute


def partition_model(graph: Graph, hw: Accelerator, sparsity: SparsityModel, input_sparsity: float = 0.0,
                    max_batch: int = DEFAULT_MAX_BATCH) -> PartitionModel:
    """The candidate cuts of `graph` on client `hw`, in execution order, fully cloud first.

    `input_sparsity` is the zero fraction of the image as sent (the paper's
    SparsityIn of the JPEG-compressed image; 0 = raw pixels).
    """
    if not 0.0 <= input_sparsity <= 1.0:
        raise ConfigError(f"the input sparsity is a fraction of zeros in [0, 1], got {input_sparsity}")
    costs = _layer_costs(graph, adapt_graph(graph, sparsity, hw, max_batch), hw)
    zeros = sparsity.tensor_sparsities(graph)
    cloud_end, client_end = _boundaries(graph)
    image_elements = sum(layer.out_shape.elements for layer in graph.inputs)
    cuts = [_cut(cloud_end, CLOUD, graph, costs,
                 (image_elements, float(image_elements * IMAGE_PIXEL_BITS), input_sparsity), IMAGE_PIXEL_BITS)]
    for position in single_tensor_cuts(graph):
        if cloud_end < position < client_end:
            out = graph.layers[position]
            sent = (out.ofmap_elements, float(out.ofmap_elements * hw.precision_bits), zeros[out.output])
            cuts.append(_cut(position, SPLIT, graph, costs, sent, hw.precision_bits))
    cuts.append(_cut(client_end, CLIENT, graph, costs, (0, 0.0, 0.0), hw.precision_bits))
    return PartitionModel(network=graph.name, hardware=hw.name, word_bits=hw.precision_bits, sparsity=sparsity.name,
                          input_sparsity=input_sparsity, layers=tuple(costs), cuts=tuple(cuts))


# ----- pricing a link ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CutCost:
    """A cut priced for one link: the client's energy and the inference delay."""

    cut: CutPoint
    tx_energy_j: float
    total_energy_j: float
    delay_s: float


def cut_cost(cut: CutPoint, link: Link) -> CutCost:
    """E_cost = E_client + P_tx·bits/B_e; delay = client + transmission + cloud time."""
    tx_energy_j = link.energy_j(cut.tx_bits)
    return CutCost(cut=cut, tx_energy_j=tx_energy_j, total_energy_j=cut.client_energy_j + tx_energy_j,
                   delay_s=cut.client_latency_s + link.time_s(cut.tx_bits) + cut.cloud_latency_s)


def savings_pct(reference_j: float, energy_j: float) -> float:
    """How much less `energy_j` is than `reference_j`, in percent of the reference."""
    return 100.0 * (reference_j - energy_j) / reference_j if reference_j > 0 else 0.0


@dataclass(frozen=True)
class PartitionResult:
    """Every cut priced for a link, and the optimum (the first minimum in execution order)."""

    link: Link
    costs: tuple[CutCost, ...]
    best_index: int

    @property
    def optimum(self) -> CutCost:
        return self.costs[self.best_index]

    @property
    def fully_cloud(self) -> CutCost:
        """FCC: the image is sent, the client computes nothing."""
        return self.costs[0]

    @property
    def fully_client(self) -> CutCost:
        """FISC: the client computes everything and sends nothing."""
        return self.costs[-1]

    @property
    def savings_vs_cloud_pct(self) -> float:
        return savings_pct(self.fully_cloud.total_energy_j, self.optimum.total_energy_j)

    @property
    def savings_vs_client_pct(self) -> float:
        return savings_pct(self.fully_client.total_energy_j, self.optimum.total_energy_j)


def evaluate_partition(model: PartitionModel, link: Link) -> PartitionResult:
    """NeuPart's run-time step: price every cut for `link` and pick the cheapest for the client."""
    costs = tuple(cut_cost(cut, link) for cut in model.cuts)
    best = min(range(len(costs)), key=lambda i: (costs[i].total_energy_j, i))
    return PartitionResult(link=link, costs=costs, best_index=best)


# ----- rate sweep -------------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepPoint:
    """The optimum at one bit rate."""

    rate_bps: float
    optimum: str
    side: str
    total_energy_j: float
    savings_vs_cloud_pct: float
    savings_vs_client_pct: float


@dataclass(frozen=True)
class OptimumChange:
    """Between two sweep rates the optimum moves; `crossover_bps` is where the two cuts cost the same."""

    below_bps: float
    above_bps: float
    before: str
    after: str
    crossover_bps: float | None


def rate_sweep(model: PartitionModel, rates_bps: Iterable[float], ptx_w: float) -> list[SweepPoint]:
    """The optimal cut at each rate, at a fixed transmission power."""
    points = []
    for rate in rates_bps:
        result = evaluate_partition(model, Link(rate, ptx_w))
        points.append(SweepPoint(rate, result.optimum.cut.after, result.optimum.cut.side,
                                 result.optimum.total_energy_j, result.savings_vs_cloud_pct,
                                 result.savings_vs_client_pct))
    return points


def crossover_rate_bps(a: CutPoint, b: CutPoint, ptx_w: float) -> float | None:
    """The rate at which cuts a and b cost the client the same, if any.

    E_a + P·bits_a/r = E_b + P·bits_b/r gives r = P·(bits_a − bits_b)/(E_b − E_a).
    """
    energy_gap_j = b.client_energy_j - a.client_energy_j
    if energy_gap_j == 0:
        return None
    rate = ptx_w * (a.tx_bits - b.tx_bits) / energy_gap_j
    return rate if rate > 0 else None


def optimum_changes(model: PartitionModel, points: Sequence[SweepPoint], ptx_w: float) -> list[OptimumChange]:
    """Where along the sweep the optimum moves, with the exact crossover of the two cuts."""
    by_name = {cut.after: cut for cut in model.cuts}
    changes = []
    for low, high in pairwise(points):
        if low.optimum != high.optimum:
            crossover = crossover_rate_bps(by_name[low.optimum], by_name[high.optimum], ptx_w)
            changes.append(OptimumChange(low.rate_bps, high.rate_bps, low.optimum, high.optimum, crossover))
    return changes
