"""Random small layers and random valid loop nests under a dataflow's constraints (a seeded generator)."""

from __future__ import annotations

import dataclasses
import random

from hwsim.hardware import load_config
from hwsim.hardware.schema import L2, Accelerator, RegisterFiles
from hwsim.mapping.dataflows import DATAFLOWS
from hwsim.mapping.nest.format import DIMS, OPERANDS, Array, Loop, LoopNest, Storage
from hwsim.mapping.nest.problem import NEST_KINDS, lowering_for, nest_problem
from hwsim.workload import GraphBuilder
from hwsim.workload.ir import FrameWindow, Layer

PLACES = ("dram", "l2", "glb", "stream", "rows", "cols", "rf")


def random_layer(rng: random.Random) -> Layer:
    """A small CONV (strided, dilated, padded, grouped or depthwise; 2-D or over a clip's frames), FC (of a map or
    a clip) or transposed conv."""
    while True:
        try:
            return _layer(rng)
        except Exception:  # noqa: BLE001 - a random shape the builder rejects: draw again
            continue


def _layer(rng: random.Random) -> Layer:
    b = GraphBuilder("t")
    kind = rng.choice(["conv", "conv", "conv", "fc", "tconv", "dw", "conv3d", "fc3d"])
    if kind in ("fc", "fc3d"):
        frames = rng.randint(2, 3) if kind == "fc3d" else 1
        x = b.input("x", rng.randint(1, 4), rng.randint(1, 3), rng.randint(1, 3), frames)
        y = b.fc("c", x, rng.randint(1, 6))
    elif kind == "conv3d":
        x = b.input("x", rng.randint(1, 3), rng.randint(3, 6), rng.randint(3, 6), rng.randint(2, 5))
        k, kd = rng.randint(1, 3), rng.randint(1, 3)
        pad_d = rng.randint(0, kd - 1)
        window = FrameWindow(kd, rng.randint(1, 2), rng.randint(1, 2), pad_d, pad_d)
        y = b.conv("c", x, rng.randint(1, 4), k, stride=rng.randint(1, 2), padding=rng.randint(0, k - 1),
                   frames=window)
    elif kind == "tconv":
        x = b.input("x", rng.randint(1, 3), rng.randint(2, 5), rng.randint(2, 5))
        y = b.conv_transpose("c", x, rng.randint(1, 4), rng.randint(1, 3), stride=rng.randint(1, 3))
    else:
        c = rng.randint(1, 4)
        groups = c if kind == "dw" else 1
        x = b.input("x", c, rng.randint(3, 9), rng.randint(3, 9))
        k = rng.randint(1, 4)
        y = b.conv("c", x, groups * rng.randint(1, 3) if kind == "dw" else rng.randint(1, 5), k,
                   stride=rng.randint(1, 3), padding=rng.randint(0, k - 1) if k > 1 else 0,
                   dilation=rng.randint(1, 2), groups=groups)
    b.output("o", y)
    layer = b.build().layer("c")
    assert layer.kind in NEST_KINDS
    return layer


def big_hardware(dataflow: str, with_l2: bool) -> Accelerator:
    """A config whose capacities never bind on small layers: 64x64 PEs, a 4 MiB GLB, large RFs (none for no
    local reuse), optionally a 16 MiB L2."""
    base = load_config("eyeriss-v1")
    rf = None if dataflow == "no_local_reuse" else RegisterFiles(filter_words=4096, ifmap_words=4096,
                                                                   psum_words=4096, access_energy_pj=1.0)
    hw = dataclasses.replace(base, pe_array=dataclasses.replace(base.pe_array, rows=64, cols=64, dataflow=dataflow,
                                                                rf=rf),
                             glb=dataclasses.replace(base.glb, size_bytes=4 << 20, filter_bytes=0, banks=1))
    if with_l2:
        hw = dataclasses.replace(hw, l2=L2(size_bytes=16 << 20, banks=1, bandwidth_bytes_per_cycle=32.0,
                                           latency_cycles=2, read_energy_pj=1.0, write_energy_pj=1.0, source="test"))
    return hw


def _places(rng: random.Random, dim: str, with_l2: bool, allowed: dict[str, frozenset[str]]) -> list[str]:
    """Where a dim's loops go, outer to inner: a random subset of the places the dataflow allows it."""
    chosen = [p for p in PLACES if (p != "l2" or with_l2) and dim in allowed.get(p, frozenset(DIMS))
              and rng.random() < 0.45]
    if "rows" in chosen and "cols" in chosen:
        chosen.remove(rng.choice(["rows", "cols"]))
    return chosen or ["dram"]


def random_nest(rng: random.Random, layer: Layer, dataflow: str, batch: int, with_l2: bool) -> LoopNest:
    """A random loop nest of `layer` the dataflow allows (uniform grids, ragged tails, random orders and keeps)."""
    df = DATAFLOWS.get(dataflow)
    lowering = lowering_for(layer, df.lowering if rng.random() < 0.8 else "conv")
    dims = nest_problem(layer, batch, lowering).dims
    allowed = {"rows": df.rows, "cols": df.cols, "stream": df.stream,
               "rf": frozenset(DIMS) if df.rf_loops else frozenset()}
    loops: dict[str, list[Loop]] = {p: [] for p in PLACES}
    for d in DIMS:
        places = _places(rng, d, with_l2, allowed)
        inner = 1
        factors = {}
        for p in reversed(places[1:]):
            factors[p] = rng.randint(1, 3)
            inner *= factors[p]
        factors[places[0]] = -(-dims[d] // inner)
        for p in places:
            loops[p].append(Loop(d, factors[p]))
    for p in loops:
        rng.shuffle(loops[p])
    storage = [Storage("dram", tuple(loops["dram"]))]
    if with_l2:
        storage.append(Storage("l2", tuple(loops["l2"]), _keeps(rng)))
    storage.append(Storage("glb", tuple(loops["glb"]), _keeps(rng)))
    array = Array(tuple(loops["rows"]), tuple(loops["cols"]), tuple(loops["stream"]), dict(df.delivery))
    return LoopNest(layer.name, dims, tuple(storage), array, Storage("rf", tuple(loops["rf"]), df.rf_keeps),
                    lowering)


def _keeps(rng: random.Random) -> frozenset[str]:
    return frozenset(op for op in OPERANDS if rng.random() < 0.7)
