"""CNN → CSDF conversion (Minakova & Stefanov, DSD'20 Algorithm 1 / thesis Algorithm 4) and its analysis.

Every layer becomes an actor with one phase per band of output rows
(`hwsim.mapping.phases`); every edge a FIFO channel whose tokens are tensor
elements. Production U(p) = the rows phase p writes × row elements.
Consumption V(p) = the rows phase p needs beyond those the phases before it
took (the first phase takes its whole window, padding rows excluded and
cropped rows included; the last phase takes everything left). A layer whose
consecutive windows overlap gets a self-loop reuse channel per input: after
phase p it keeps the rows the next phase needs again, u(p) = kept rows × row
elements (0 at the last phase), v(p) = u(p − 1) (0 at the first). On the
paper's example: c33 U = [3×128, 1×0], V = [1×0, 3×128]; c23 V = [384, 192,
192, 256].

Buffer semantics (the paper's): a firing consumes its input tokens and
produces its output tokens in one instant; the buffer of edge (i, j) holds
the tokens of channel c_ij plus those of j's reuse channel for it (what the
consumer still needs, including the rows it reuses), and must be as large as
their largest sum over the execution. Tools that size every channel on its
own and claim a firing's output space when it starts (SDF3, Kiter) count the
reuse channel twice while it is being replaced (c33: 256 instead of 128);
`BufferSizes.claim_at_start_tokens` gives those per-channel sizes for the same
execution, to compare with SDF3. The execution is the demand-driven order on tokens: to fire an
actor's next phase, fire the producers it lacks tokens from, deepest first.

Throughput: each phase takes τ = τ_access + τ_kernel + τ_op (Eq. 2), from the
accelerator config as platform table: τ_op = ⌈(MACs + ops)/(PEs ·
MACs per PE-cycle)⌉, τ_kernel = the PE array's fill/drain cycles per pass (the
launch of a phase), τ_access = for every tensor transfer of the phase ⌈bytes /
bandwidth⌉ + latency, where the bandwidth is the slower of the buffer's level
(L2 or DRAM) and a GLB port. Phases run one after another, so the latency
is Σ τ.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from hwsim.errors import HwsimError
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.phased import PhasedGraph
from hwsim.vocab import ceil_div
from hwsim.workload.ir import LayerKind


@dataclass(frozen=True)
class Channel:
    """A FIFO channel: source and sink actors, production and consumption sequences in tokens."""

    name: str
    source: int  # actor (layer) index
    sink: int
    production: np.ndarray  # tokens per phase of the source
    consumption: np.ndarray  # tokens per phase of the sink
    edge: int  # the graph edge it models (a reuse channel: the edge whose rows it keeps)
    reuse: bool  # a self-loop keeping overlapping rows


@dataclass(frozen=True)
class Csdf:
    """The CSDF graph of a phased CNN."""

    name: str
    actors: tuple[str, ...]
    phases: tuple[int, ...]
    channels: tuple[Channel, ...]
    token_bytes: int

    def ports(self) -> tuple[list[list[int]], list[list[int]]]:
        """Per actor, the channels it consumes from and those it produces into."""
        ins: list[list[int]] = [[] for _ in self.actors]
        outs: list[list[int]] = [[] for _ in self.actors]
        for k, c in enumerate(self.channels):
            ins[c.sink].append(k)
            outs[c.source].append(k)
        return ins, outs


def to_csdf(pg: PhasedGraph, bits: int) -> Csdf:
    """Algorithm 1: one actor per layer, one channel per edge, a reuse self-loop per overlapping input."""
    channels: list[Channel] = []
    for e, edge in enumerate(pg.edges):
        producer = pg.layers[edge.producer]
        consumer = pg.layers[edge.consumer]
        need = consumer.need_end[edge.port]
        production = np.diff(producer.out_bounds) * edge.row_elements
        consumption = np.diff(need, prepend=0) * edge.row_elements
        channels.append(Channel(f"c_{edge.name}", edge.producer, edge.consumer, production, consumption, e, False))
        kept = (need - consumer.release_to[edge.port]) * edge.row_elements
        if kept.any():
            reuse_in = np.concatenate([[0], kept[:-1]])
            channels.append(Channel(f"r_{edge.name}", edge.consumer, edge.consumer, kept, reuse_in, e, True))
    actors = tuple(l.name for l in pg.graph.layers)
    return Csdf(pg.graph.name, actors, tuple(l.phases for l in pg.layers), tuple(channels), max(1, bits // 8))


# ----- consistency and deadlock ----------------------------------------------------------------------


def repetition_vector(g: Csdf) -> tuple[int, ...]:
    """Iterations of each actor's phase sequence per graph iteration: the smallest positive integers q
    with q_src · ΣU = q_sink · ΣV on every channel. Raises when the rates are inconsistent."""
    q: list[Fraction | None] = [None] * len(g.actors)
    links: list[list[tuple[int, Fraction]]] = [[] for _ in g.actors]
    for c in g.channels:
        produced, consumed = int(c.production.sum()), int(c.consumption.sum())
        if c.source == c.sink:
            if produced != consumed:
                raise HwsimError(f"{c.name}: the reuse channel produces {produced} and consumes {consumed} "
                                 "tokens per iteration; the CSDF graph is inconsistent")
            continue
        if produced == 0 or consumed == 0:
            raise HwsimError(f"{c.name}: a channel that produces {produced} and consumes {consumed} tokens "
                             "per iteration cannot be consistent")
        links[c.source].append((c.sink, Fraction(produced, consumed)))  # q_sink = q_source · ratio
        links[c.sink].append((c.source, Fraction(consumed, produced)))
    for start in range(len(g.actors)):
        if q[start] is not None:
            continue
        q[start] = Fraction(1)
        stack = [start]
        while stack:
            a = stack.pop()
            q_a = q[a]
            assert q_a is not None  # set before a was pushed
            for b, ratio in links[a]:
                want = q_a * ratio
                if q[b] is None:
                    q[b] = want
                    stack.append(b)
                elif q[b] != want:
                    raise HwsimError(f"actors {g.actors[a]} and {g.actors[b]}: their channels ask for "
                                     f"{want} and {q[b]} iterations; the CSDF graph is inconsistent")
    denominators = math.lcm(*(f.denominator for f in q if f is not None))
    ints = [int(f * denominators) for f in q if f is not None]
    divisor = math.gcd(*ints)
    return tuple(v // divisor for v in ints)


def deadlocked_actors(g: Csdf) -> tuple[str, ...]:
    """Actors that cannot finish one iteration with unbounded buffers (empty when the graph is live):
    any enabled phase fires until nothing can."""
    q = repetition_vector(g)
    total = [qi * p for qi, p in zip(q, g.phases)]
    tokens = [0] * len(g.channels)
    ins, outs = g.ports()
    fired = [0] * len(g.actors)
    progress = True
    while progress:
        progress = False
        for a in range(len(g.actors)):
            while fired[a] < total[a]:
                p = fired[a] % g.phases[a]
                if any(tokens[k] < g.channels[k].consumption[p] for k in ins[a]):
                    break
                for k in ins[a]:
                    tokens[k] -= int(g.channels[k].consumption[p])
                for k in outs[a]:
                    tokens[k] += int(g.channels[k].production[p])
                fired[a] += 1
                progress = True
    return tuple(name for name, f, t in zip(g.actors, fired, total) if f < t)


# ----- buffer sizes under the paper's semantics ------------------------------------------------------


@dataclass(frozen=True)
class BufferSizes:
    """Minimum buffers of the demand-driven execution: per edge, in tokens and bytes."""

    edges: tuple[int, ...]  # edge index of each entry
    tokens: tuple[int, ...]  # the largest sum of the edge's channel and reuse channel
    bytes_: tuple[int, ...]
    order: np.ndarray  # actor index of every firing
    claim_at_start_tokens: tuple[int, ...]  # per channel, its own peak when output space is claimed at firing start
    token_bytes: int

    @property
    def total_bytes(self) -> int:
        return sum(self.bytes_)

    @property
    def claim_at_start_total_bytes(self) -> int:
        """The sum of the per-channel sizes SDF3-like tools would report for this execution."""
        return sum(self.claim_at_start_tokens) * self.token_bytes


def buffer_sizes(g: Csdf, n_edges: int) -> BufferSizes:
    """Fire one iteration demand-driven on tokens; each edge's buffer is the peak of its channel's tokens
    plus its reuse channel's, sampled after every (atomic) firing."""
    ins, outs = g.ports()
    tokens = [0] * len(g.channels)
    held = [0] * n_edges
    peak = [0] * n_edges
    claimed_peak = [0] * len(g.channels)
    fired = [0] * len(g.actors)
    order: list[int] = []

    def lacking(a: int) -> int:
        """A source actor `a` lacks tokens from for its next phase, or −1."""
        p = fired[a]
        for k in ins[a]:
            c = g.channels[k]
            if tokens[k] < c.consumption[p]:
                if c.reuse or fired[c.source] >= g.phases[c.source]:
                    raise HwsimError(f"{g.actors[a]}: phase {p + 1} needs {c.consumption[p]} tokens of {c.name} "
                                     f"that will never come; the CSDF graph deadlocks")
                return c.source
        return -1

    def fire(a: int) -> None:
        p = fired[a]
        for k in outs[a]:  # output space claimed at the start, inputs released at the end
            claimed_peak[k] = max(claimed_peak[k], tokens[k] + int(g.channels[k].production[p]))
        touched = set()
        for k in ins[a]:
            c = g.channels[k]
            tokens[k] -= int(c.consumption[p])
            held[c.edge] -= int(c.consumption[p])
            touched.add(c.edge)
        for k in outs[a]:
            c = g.channels[k]
            tokens[k] += int(c.production[p])
            held[c.edge] += int(c.production[p])
            touched.add(c.edge)
        for e in touched:
            peak[e] = max(peak[e], held[e])
        fired[a] += 1
        order.append(a)

    sinks = [a for a in range(len(g.actors)) if not any(not g.channels[k].reuse for k in outs[a])]
    for sink in sinks:
        while fired[sink] < g.phases[sink]:
            stack = [sink]
            while stack:
                need = lacking(stack[-1])
                if need < 0:
                    fire(stack.pop())
                else:
                    stack.append(need)
    edges = tuple(range(n_edges))
    return BufferSizes(edges, tuple(peak), tuple(t * g.token_bytes for t in peak), np.array(order, dtype=np.int64),
                       tuple(claimed_peak), g.token_bytes)


# ----- throughput ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PhaseTiming:
    """Σ τ over the firings, by part (cycles), and the throughput it allows."""

    access_cycles: int
    kernel_cycles: int
    op_cycles: int
    firings: int
    clock_hz: float

    @property
    def cycles(self) -> int:
        return self.access_cycles + self.kernel_cycles + self.op_cycles

    @property
    def fps(self) -> float:
        return self.clock_hz / self.cycles if self.cycles else math.inf


def _transfer_cycles(bytes_: int, level_bytes_per_cycle: float, latency_cycles: int, glb_port: float) -> int:
    if bytes_ == 0:
        return 0
    return math.ceil(bytes_ / min(level_bytes_per_cycle, glb_port)) + latency_cycles


def phase_cycles(pg: PhasedGraph, hw: Accelerator,
                 in_dram: frozenset[int] = frozenset()) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per layer, (τ_access, τ_kernel, τ_op) of each of its phases in cycles (Eq. 2); edges in `in_dram`
    are buffered in DRAM, the rest in the L2 (DRAM when the config has none)."""
    wb = hw.word_bytes
    glb_port = hw.glb.words_per_port * wb
    chunk_bytes = max(1, hw.glb.data_bytes // wb) * wb
    lanes = hw.pe_array.pes * hw.pe_array.macs_per_cycle

    def moved(bytes_: int, e: int) -> int:
        if hw.l2 is None or e in in_dram:
            bw, latency = hw.dram.bandwidth_bytes_per_cycle, hw.dram.latency_cycles
        else:
            bw, latency = hw.l2.bandwidth_bytes_per_cycle, hw.l2.latency_cycles
        full, rest = divmod(bytes_, chunk_bytes)
        return full * _transfer_cycles(chunk_bytes, bw, latency, glb_port) + _transfer_cycles(rest, bw, latency,
                                                                                               glb_port)

    out = {}
    for j, (layer, pl) in enumerate(zip(pg.graph.layers, pg.layers)):
        rows_out = np.diff(pl.out_bounds)
        access = np.zeros(pl.phases, dtype=np.int64)
        for e in pg.inputs_of[j]:
            edge = pg.edges[e]
            read_rows = pl.need_end[edge.port] - pl.read_first[edge.port]
            access += [moved(int(r) * edge.row_elements * wb, e) for r in read_rows]
        for e in pg.outputs_of[j]:
            access += [moved(int(r) * pg.edges[e].row_elements * wb, e) for r in rows_out]
        kernel = np.zeros(pl.phases, dtype=np.int64)
        op = np.zeros(pl.phases, dtype=np.int64)
        if layer.kind is not LayerKind.INPUT:
            h_out = max(1, layer.out_shape.h)
            kernel += hw.pe_array.fill_drain_cycles
            op += [ceil_div(layer.macs * r // h_out + layer.ops * r // h_out, lanes) for r in rows_out.tolist()]
        out[layer.name] = (access, kernel, op)
    return out


def phase_timing(pg: PhasedGraph, hw: Accelerator, in_dram: frozenset[int] = frozenset()) -> PhaseTiming:
    """Eq. 2 summed over every phase of every layer (see `phase_cycles`)."""
    parts = phase_cycles(pg, hw, in_dram).values()
    return PhaseTiming(sum(int(a.sum()) for a, _, _ in parts), sum(int(k.sum()) for _, k, _ in parts),
                       sum(int(o.sum()) for _, _, o in parts), pg.firings, hw.clock_hz)


# ----- SDF3 export -----------------------------------------------------------------------------------


def _rates(values: np.ndarray) -> str:
    return ",".join(str(int(v)) for v in values)


def sdf3_xml(g: Csdf, execution_cycles: dict[str, list[int]] | None = None) -> str:
    """The CSDF graph in SDF3's XML format (sdf3 type="csdf"): actors with rate sequences per port,
    channels with no initial tokens, per-phase execution times when given, and the token size."""
    root = ET.Element("sdf3", {"type": "csdf", "version": "1.0"})
    app = ET.SubElement(root, "applicationGraph", {"name": g.name})
    graph = ET.SubElement(app, "csdf", {"name": g.name, "type": g.name})
    actors = [ET.SubElement(graph, "actor", {"name": a, "type": a}) for a in g.actors]
    for k, c in enumerate(g.channels):
        ET.SubElement(actors[c.source], "port", {"name": f"out{k}", "type": "out", "rate": _rates(c.production)})
        ET.SubElement(actors[c.sink], "port", {"name": f"in{k}", "type": "in", "rate": _rates(c.consumption)})
    for k, c in enumerate(g.channels):
        ET.SubElement(graph, "channel", {"name": c.name, "srcActor": g.actors[c.source], "srcPort": f"out{k}",
                                         "dstActor": g.actors[c.sink], "dstPort": f"in{k}", "initialTokens": "0"})
    props = ET.SubElement(app, "csdfProperties")
    for a, phases in zip(g.actors, g.phases):
        ap = ET.SubElement(props, "actorProperties", {"actor": a})
        proc = ET.SubElement(ap, "processor", {"type": "accelerator", "default": "true"})
        times = (execution_cycles or {}).get(a, [1] * phases)
        ET.SubElement(proc, "executionTime", {"time": ",".join(str(t) for t in times)})
    for c in g.channels:
        cp = ET.SubElement(props, "channelProperties", {"channel": c.name})
        ET.SubElement(cp, "tokenSize", {"sz": str(g.token_bytes)})
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
