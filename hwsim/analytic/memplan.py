"""Layer-by-layer memory planners for the intermediate tensors, and the L2/DDR placement knapsack.

The network runs one layer per step in graph order. Tensor t lives from the
step of its producer through the step of its last consumer (a layer reads its
inputs while it writes its output, so both are live in its step). Planners
(all sizes in bytes):

- `edge`: one buffer per graph edge (producer → consumer), the deep-learning
  framework baseline of the phases paper (its Ex1: 1024 + 1024 + 48 + 2).
- `reuse`: TensorRT-style buffer reuse: a tensor takes a buffer whose last
  tensor is dead (the smallest that fits, else the largest free one, grown),
  else a new buffer; memory is the sum of the buffers.
- `greedy`: greedy-by-size offsets in one arena (TFLite's planner, Pisarchyk &
  Lee 2020): tensors by decreasing size, each at the lowest-waste gap among
  the offsets of the tensors it overlaps in time; memory is the arena's extent.
- `ceva`: CEVA's buffer ids: each output takes the lowest free id, an id is as
  large as the largest tensor it ever holds, memory is the sum over ids; then
  id swaps at branch points (relabel two ids from a step on, where neither
  holds a tensor across it) while they shrink the sum; then merge buffers: an
  id moves inside another whose live content leaves room for it at every step
  it is used.
- `bound`: the lower bound of any layer-by-layer plan, the peak over steps of
  the bytes live in that step.

The placement of buffers in a small on-chip L2 against DDR is a 0-1 knapsack
(CEVA): weight = buffer bytes, value = the traffic it serves (bytes written
and read), capacity = the L2, solved by dynamic programming in O(n·W) at a
granularity of `granule_bytes` (sizes round up, the capacity down).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hwsim.errors import HwsimError
from hwsim.mapping.plans import TensorSlot
from hwsim.vocab import Level, ceil_div
from hwsim.workload.ir import Graph

STRATEGIES = ("edge", "reuse", "greedy", "ceva", "bound")
MAX_SWAP_PASSES = 8  # improvement passes of the CEVA branch-point swaps
GRANULE_BYTES = 1024  # default knapsack weight unit: the DP table has n · L2/granule cells


@dataclass(frozen=True)
class Tensor:
    """An intermediate tensor: its producer's step, its consumers' steps, its bytes."""

    name: str
    size_bytes: int
    birth_step: int  # the producer's step
    consumer_steps: tuple[int, ...]  # one per consuming edge, in graph order

    @property
    def death_step(self) -> int:
        """The step of its last consumer (it is live through it)."""
        return max(self.consumer_steps)

    @property
    def traffic_bytes(self) -> int:
        """Bytes moved through its buffer: written once, read once per consuming edge."""
        return self.size_bytes * (1 + len(self.consumer_steps))


@dataclass(frozen=True)
class Slot:
    """Where a tensor lives: which buffer, at which byte offset of the plan's memory, for which consumers."""

    tensor: int  # index into the plan's tensors
    buffer: int  # index into the plan's buffers
    offset_bytes: int
    consumer_steps: tuple[int, ...]  # the consuming edges served from this slot


@dataclass(frozen=True)
class Buffer:
    """A region of memory the plan reserves: its name, offset and size."""

    name: str
    offset_bytes: int
    size_bytes: int
    traffic_bytes: int  # bytes written and read through it over one inference


@dataclass(frozen=True)
class MemoryPlan:
    """A planner's answer: the buffers, the slot of every tensor, the memory it needs."""

    strategy: str
    tensors: tuple[Tensor, ...]
    buffers: tuple[Buffer, ...]
    slots: tuple[Slot, ...]
    total_bytes: int  # memory reserved for intermediate tensors
    bound_bytes: int  # the layer-by-layer lower bound (peak live bytes)
    details: dict[str, int]  # intermediate results (CEVA: before swaps, before merging)

    @property
    def ratio_to_bound(self) -> float:
        return self.total_bytes / self.bound_bytes if self.bound_bytes else 1.0


# ----- tensors and lifetimes -------------------------------------------------------------------------


def tensors_of(graph: Graph, bits: int) -> tuple[Tensor, ...]:
    """Every layer output that some layer consumes, with its lifetime in graph-order steps."""
    step = {l.name: i for i, l in enumerate(graph.layers)}
    found: list[Tensor] = []
    for i, layer in enumerate(graph.layers):
        uses = tuple(step[c.name] for c in graph.consumers(layer.output) for t in c.inputs if t == layer.output)
        if uses:
            found.append(Tensor(layer.output, layer.ofmap_bytes(bits), i, tuple(sorted(uses))))
    return tuple(found)


def live_bytes_per_step(tensors: tuple[Tensor, ...], steps: int) -> np.ndarray:
    """Bytes live in each step: every tensor from its birth through its death step."""
    delta = np.zeros(steps + 1, dtype=np.int64)
    for t in tensors:
        delta[t.birth_step] += t.size_bytes
        delta[t.death_step + 1] -= t.size_bytes
    return np.cumsum(delta[:-1])


def lower_bound_bytes(tensors: tuple[Tensor, ...], steps: int) -> int:
    """The peak over steps of the live bytes: no layer-by-layer plan needs less."""
    live = live_bytes_per_step(tensors, steps)
    return int(live.max()) if len(live) else 0


def _overlap(a: Tensor, b: Tensor) -> bool:
    return a.birth_step <= b.death_step and b.birth_step <= a.death_step


# ----- planners ---------------------------------------------------------------------------------------


def plan_edges(tensors: tuple[Tensor, ...]) -> tuple[list[Buffer], list[Slot]]:
    """One buffer per edge, laid out one after another."""
    buffers: list[Buffer] = []
    slots: list[Slot] = []
    offset = 0
    for i, t in enumerate(tensors):
        for use in t.consumer_steps:
            slots.append(Slot(i, len(buffers), offset, (use,)))
            buffers.append(Buffer(f"{t.name}@{use}", offset, t.size_bytes, 2 * t.size_bytes))
            offset += t.size_bytes
    return buffers, slots


def assign_reuse(tensors: tuple[Tensor, ...]) -> list[int]:
    """TensorRT-style: per tensor in birth order, the best-fitting dead buffer, else the largest dead one
    (grown), else a new one. Returns the buffer index of each tensor."""
    sizes: list[int] = []
    free_after: list[int] = []  # the death step of the buffer's current tensor
    out = [0] * len(tensors)
    for t in sorted(range(len(tensors)), key=lambda i: (tensors[i].birth_step, i)):
        tensor = tensors[t]
        dead = [b for b in range(len(sizes)) if free_after[b] < tensor.birth_step]
        fitting = [b for b in dead if sizes[b] >= tensor.size_bytes]
        if fitting:
            chosen = min(fitting, key=lambda b: (sizes[b], b))
        elif dead:
            chosen = max(dead, key=lambda b: (sizes[b], -b))
            sizes[chosen] = tensor.size_bytes
        else:
            chosen = len(sizes)
            sizes.append(tensor.size_bytes)
            free_after.append(-1)
        free_after[chosen] = tensor.death_step
        out[t] = chosen
    return out


def greedy_by_size_offsets(tensors: tuple[Tensor, ...]) -> list[int]:
    """TFLite's greedy-by-size: largest tensors first; each goes in the smallest gap between the tensors
    already placed that overlap it in time, else after the highest of them. Returns byte offsets."""
    order = sorted(range(len(tensors)), key=lambda i: (-tensors[i].size_bytes, i))
    offsets = [-1] * len(tensors)
    placed: list[int] = []
    for i in order:
        t = tensors[i]
        neighbours = sorted((offsets[j], tensors[j].size_bytes) for j in placed if _overlap(t, tensors[j]))
        best_offset, best_gap = -1, None
        prev_end = 0
        for offset, size in neighbours:
            gap = offset - prev_end
            if gap >= t.size_bytes and (best_gap is None or gap < best_gap):
                best_offset, best_gap = prev_end, gap
            prev_end = max(prev_end, offset + size)
        offsets[i] = best_offset if best_gap is not None else prev_end
        placed.append(i)
    return offsets


def ceva_ids(tensors: tuple[Tensor, ...]) -> list[int]:
    """Each tensor, in birth order, takes the lowest id no live tensor holds."""
    ids = [0] * len(tensors)
    busy_until: list[int] = []  # per id, the death step of its current tensor
    for t in sorted(range(len(tensors)), key=lambda i: (tensors[i].birth_step, i)):
        tensor = tensors[t]
        free = [k for k, until in enumerate(busy_until) if until < tensor.birth_step]
        k = free[0] if free else len(busy_until)
        if k == len(busy_until):
            busy_until.append(0)
        busy_until[k] = tensor.death_step
        ids[t] = k
    return ids


def _id_sizes(ids: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    out = np.zeros(int(ids.max()) + 1 if len(ids) else 0, dtype=np.int64)
    np.maximum.at(out, ids, sizes)
    return out


def swap_at_branch_points(tensors: tuple[Tensor, ...], ids: list[int]) -> list[int]:
    """Relabel ids a ↔ b for every tensor born at or after a step where neither id holds a tensor live
    across it, whenever that shrinks the sum of the ids' sizes; repeat until nothing improves."""
    births = np.array([t.birth_step for t in tensors], dtype=np.int64)
    deaths = np.array([t.death_step for t in tensors], dtype=np.int64)
    sizes = np.array([t.size_bytes for t in tensors], dtype=np.int64)
    current = np.array(ids, dtype=np.int64)
    n_ids = int(current.max()) + 1 if len(current) else 0
    best = int(_id_sizes(current, sizes).sum())
    for _ in range(MAX_SWAP_PASSES):
        improved = False
        for step in np.unique(births):
            across = current[(births < step) & (deaths >= step)]  # ids holding a tensor across this step
            candidates = [k for k in range(n_ids) if k not in set(across.tolist())]
            later = births >= step
            for x in range(len(candidates)):
                for y in range(x + 1, len(candidates)):
                    a, b = candidates[x], candidates[y]
                    trial = current.copy()
                    trial[later & (current == a)] = b
                    trial[later & (current == b)] = a
                    total = int(_id_sizes(trial, sizes).sum())
                    if total < best:
                        best, current, improved = total, trial, True
        if not improved:
            break
    swapped: list[int] = current.tolist()
    return swapped


@dataclass
class _Region:
    """A CEVA id while merging: its size, its content per step, the room guests take from its top."""

    size_bytes: int
    content: np.ndarray  # bytes its own tensors hold in each step
    top_bytes: np.ndarray  # bytes reserved from its top for guests in each step
    host: int = -1  # the id it was merged into, or -1
    offset_in_host: int = 0


def merge_buffers(tensors: tuple[Tensor, ...], ids: list[int], steps: int) -> list[_Region]:
    """CEVA's merge: an id moves inside another (at a fixed offset from its top) when, in every step the
    guest holds data, the host's own content plus its guests and this one fit in the host's size.
    Larger guests are tried first, each into the smallest host that takes it."""
    n_ids = max(ids) + 1 if ids else 0
    regions = [_Region(0, np.zeros(steps, dtype=np.int64), np.zeros(steps, dtype=np.int64)) for _ in range(n_ids)]
    for t, k in zip(tensors, ids):
        regions[k].size_bytes = max(regions[k].size_bytes, t.size_bytes)
        regions[k].content[t.birth_step:t.death_step + 1] = t.size_bytes
    hosts_used: set[int] = set()
    for g in sorted(range(n_ids), key=lambda k: (-regions[k].size_bytes, k)):
        guest = regions[g]
        if g in hosts_used:
            continue
        live = guest.content > 0
        for h in sorted(range(n_ids), key=lambda k: (regions[k].size_bytes, k)):
            host = regions[h]
            if h == g or host.host >= 0 or host.size_bytes < guest.size_bytes:
                continue
            top = int(host.top_bytes[live].max()) if live.any() else 0
            if np.all(host.content[live] + top + guest.size_bytes <= host.size_bytes):
                guest.host, guest.offset_in_host = h, host.size_bytes - top - guest.size_bytes
                host.top_bytes[live] = top + guest.size_bytes
                hosts_used.add(h)
                break
    return regions


def _shared_plan(tensors: tuple[Tensor, ...], assignment: list[int], sizes: list[int],
                 name: str) -> tuple[list[Buffer], list[Slot]]:
    """Buffers laid out one after another, each tensor at its buffer's offset."""
    offsets = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    traffic = [0] * len(sizes)
    for t, b in zip(tensors, assignment):
        traffic[b] += t.traffic_bytes
    buffers = [Buffer(f"{name}{k}", int(offsets[k]), int(sizes[k]), traffic[k]) for k in range(len(sizes))]
    slots = [Slot(i, b, int(offsets[b]), t.consumer_steps) for i, (t, b) in enumerate(zip(tensors, assignment))]
    return buffers, slots


def plan_memory(graph: Graph, strategy: str, bits: int) -> MemoryPlan:
    """Plan the intermediate tensors of `graph` at `bits` per element with one of STRATEGIES."""
    tensors = tensors_of(graph, bits)
    steps = len(graph.layers)
    bound = lower_bound_bytes(tensors, steps)
    details: dict[str, int] = {}
    if strategy == "edge":
        buffers, slots = plan_edges(tensors)
    elif strategy == "reuse":
        assignment = assign_reuse(tensors)
        sizes = _id_sizes(np.array(assignment), np.array([t.size_bytes for t in tensors])).tolist()
        buffers, slots = _shared_plan(tensors, assignment, sizes, "buffer")
    elif strategy == "greedy":
        offsets = greedy_by_size_offsets(tensors)
        extent = max((o + t.size_bytes for o, t in zip(offsets, tensors)), default=0)
        buffers = [Buffer("arena", 0, extent, sum(t.traffic_bytes for t in tensors))]
        slots = [Slot(i, 0, o, t.consumer_steps) for i, (o, t) in enumerate(zip(offsets, tensors))]
    elif strategy == "ceva":
        buffers, slots, details = _ceva(tensors, steps)
    elif strategy == "bound":
        buffers = [Buffer("live", 0, bound, sum(t.traffic_bytes for t in tensors))]
        slots = []
    else:
        raise HwsimError(f"memory strategy {strategy!r}: use one of {', '.join(STRATEGIES)}")
    total = max((b.offset_bytes + b.size_bytes for b in buffers), default=0)
    return MemoryPlan(strategy, tensors, tuple(buffers), tuple(slots), total, bound, details)


def _ceva(tensors: tuple[Tensor, ...], steps: int) -> tuple[list[Buffer], list[Slot], dict[str, int]]:
    sizes_of = np.array([t.size_bytes for t in tensors], dtype=np.int64)
    naive = ceva_ids(tensors)
    swapped = swap_at_branch_points(tensors, naive)
    regions = merge_buffers(tensors, swapped, steps)
    details = {"ids_bytes": int(_id_sizes(np.array(naive), sizes_of).sum()) if tensors else 0,
               "swapped_bytes": int(_id_sizes(np.array(swapped), sizes_of).sum()) if tensors else 0,
               "ids": len(regions), "merged_ids": sum(r.host >= 0 for r in regions)}
    kept = [k for k, r in enumerate(regions) if r.host < 0]
    base: dict[int, int] = {}
    offset = 0
    for k in kept:
        base[k] = offset
        offset += regions[k].size_bytes
    for k, r in enumerate(regions):
        if r.host >= 0:
            base[k] = base[r.host] + r.offset_in_host
    index = {k: i for i, k in enumerate(kept)}
    traffic = [0] * len(kept)
    slots = []
    for i, (t, k) in enumerate(zip(tensors, swapped)):
        owner = regions[k].host if regions[k].host >= 0 else k
        traffic[index[owner]] += t.traffic_bytes
        slots.append(Slot(i, index[owner], base[k], t.consumer_steps))
    buffers = [Buffer(f"id{k}", base[k], regions[k].size_bytes, traffic[index[k]]) for k in kept]
    return buffers, slots, details


# ----- L2 / DDR placement ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Placement:
    """Which buffers go to the L2: the knapsack's answer."""

    in_l2: tuple[bool, ...]  # per buffer
    l2_bytes: int  # bytes of the chosen buffers
    l2_traffic_bytes: int  # traffic they serve from the L2 (the knapsack's value)
    ddr_traffic_bytes: int  # traffic left in DDR
    capacity_bytes: int
    granule_bytes: int


def knapsack(weights: list[int], values: list[int], capacity: int) -> tuple[int, list[bool]]:
    """0-1 knapsack by dynamic programming over capacities 0..capacity, O(n·capacity) time and space:
    the best total value of items whose weights sum to at most `capacity`, and which items."""
    n = len(weights)
    best = np.zeros(capacity + 1, dtype=np.int64)
    took = np.zeros((n, capacity + 1), dtype=bool)
    for i, (w, v) in enumerate(zip(weights, values)):
        if w > capacity:
            continue
        with_item = best[:capacity + 1 - w] + v  # value at capacity c + w when item i joins the best at c
        better = with_item > best[w:]
        took[i, w:] = better
        best[w:] = np.where(better, with_item, best[w:])
    chosen = [False] * n
    c = capacity
    for i in range(n - 1, -1, -1):
        if took[i, c]:
            chosen[i] = True
            c -= weights[i]
    return int(best[capacity]), chosen


def place_in_l2(buffers: tuple[Buffer, ...], capacity_bytes: int, granule_bytes: int = GRANULE_BYTES) -> Placement:
    """Choose the buffers the L2 holds so that the traffic it serves is largest (CEVA's knapsack)."""
    if granule_bytes <= 0:
        raise HwsimError(f"--granularity {granule_bytes}: give a positive number of bytes, e.g. 1KB")
    weights = [ceil_div(b.size_bytes, granule_bytes) for b in buffers]
    values = [b.traffic_bytes for b in buffers]
    served, chosen = knapsack(weights, values, capacity_bytes // granule_bytes)
    total = sum(values)
    return Placement(tuple(chosen), sum(b.size_bytes for b, c in zip(buffers, chosen) if c), served,
                     total - served, capacity_bytes, granule_bytes)


def tensor_slots(plan: MemoryPlan, in_l2: tuple[bool, ...], word_bytes: int) -> list[TensorSlot]:
    """The plan as the simulator's slots: buffers in the L2 or DRAM as placed, laid one after another
    from address 0 of their level (a tensor keeps its offset within its buffer), in words."""
    base: list[int] = []
    used = {True: 0, False: 0}
    for b, x in zip(plan.buffers, in_l2):
        base.append(used[x])
        used[x] += b.size_bytes
    out = []
    for slot in plan.slots:
        t = plan.tensors[slot.tensor]
        address = base[slot.buffer] + slot.offset_bytes - plan.buffers[slot.buffer].offset_bytes
        level = Level.L2 if in_l2[slot.buffer] else Level.DRAM
        out.append(TensorSlot(t.birth_step, slot.consumer_steps, t.size_bytes // word_bytes, slot.buffer,
                              address // word_bytes, level))
    return out
