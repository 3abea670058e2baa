"""Property test of the loop-nest mapping: for random small layers and random valid mappings of every dataflow,
three independent counts agree —

- the brute-force oracle (tests/nest_oracle.py: walks every loop iteration, counts element sets),
- the closed form (hwsim.analytic.nest_counts: tile analysis of the mapping as data),
- the simulation (the step generator's schedule run by the simulator, counted from its trace by `derive`),

word for word per level, operand and access, MACs, RF reads and writes, PE-to-PE hops, passes and the array's
compute cycles (the dataflow's pass timing: rate-limited, or a systolic fold's skewed fill and drain).

The DRAM transfers per operand and direction and the sum of their start offsets in their tensors agree between
the closed form (`hwsim.analytic.nest_addresses`) and the trace (`hwsim.metrics.addresses`).

The room the validator reserves per level and operand (`tile_words`, what capacities are checked against and
the simulator allocates) must hold the largest tile the oracle finds a visit (an RF: one PE) holding.
"""

from __future__ import annotations

import dataclasses
import random
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from nest_oracle import Oracle, OracleCounts
from nest_random import big_hardware, random_layer, random_nest

import hwsim.trace
from hwsim.analytic.nest_addresses import dram_transfer_sums
from hwsim.analytic.nest_counts import NestCounter
from hwsim.check.validate import validate_trace
from hwsim.hardware.schema import Accelerator
from hwsim.mapping.dataflows import DATAFLOWS
from hwsim.mapping.nest.format import LoopNest, MappingError
from hwsim.mapping.nest.problem import nest_problem
from hwsim.mapping.nest.steps import L2_BUFFERS, NestSteps, TensorAddresses
from hwsim.mapping.nest.validate import check_nest, tile_words
from hwsim.mapping.schedule import NestInfo, Schedule, Work
from hwsim.metrics import derive
from hwsim.metrics.addresses import dram_transfer_offsets
from hwsim.sim.run import simulate_to_trace
from hwsim.vocab import ACCESS_NAMES, LEVEL_NAMES, OPERAND_NAMES, Operand
from hwsim.workload.ir import Layer

LAYERS_PER_DATAFLOW = 200
MAX_LOOP_POINTS = 60_000  # the oracle walks every point: keep each case small
TIMING = {"row_stationary": "rate", "no_local_reuse": "rate", "weight_stationary": "systolic",
          "input_stationary": "systolic", "output_stationary": "systolic_os"}


@dataclasses.dataclass
class Case:
    layer: Layer
    nest: LoopNest
    batch: int
    hw: Accelerator


def _points(nest: LoopNest) -> int:
    return int(np.prod([l.factor for l in nest.all_loops()]))


def draw_cases(dataflow: str, seed: int, n: int) -> tuple[list[Case], int]:
    """`n` random layers, each with a random nest the dataflow allows and `check_nest` accepts (draws it rejects
    are counted and drawn again)."""
    rng = random.Random(seed)
    cases: list[Case] = []
    rejected = 0
    while len(cases) < n:
        layer = dataclasses.replace(random_layer(rng), name=f"c{len(cases)}")
        batch = 1 + (rng.random() < 0.3)
        with_l2 = rng.random() < 0.3
        hw = big_hardware(dataflow, with_l2)
        nest = random_nest(rng, layer, dataflow, batch, with_l2)
        if _points(nest) > MAX_LOOP_POINTS:
            continue
        try:
            check_nest(nest, nest_problem(layer, batch, nest.lowering), hw, DATAFLOWS.get(dataflow))
        except MappingError:
            rejected += 1
            continue
        cases.append(Case(layer, nest, batch, hw))
    return cases, rejected


def table(t: np.ndarray) -> dict[tuple[str, str, str], int]:
    return {(LEVEL_NAMES[l], OPERAND_NAMES[o], ACCESS_NAMES[a]): int(t[l, o, a])
            for l, o, a in zip(*np.nonzero(t), strict=True)}


def oracle_summary(o: OracleCounts) -> dict[str, object]:
    return {"transfers": table(o.transfers), "macs": o.macs, "hops": o.inter_pe, "passes": o.passes,
            "compute_cycles": o.compute_cycles}


def simulate(cases: list[Case], tmp: Path) -> list[dict[str, object]]:
    """Run the cases' step generators on the simulator, one schedule per (hardware, batch); count each layer from
    the trace."""
    groups: dict[tuple[bool, int], list[int]] = defaultdict(list)
    for i, c in enumerate(cases):
        groups[(c.hw.l2 is not None, c.batch)].append(i)
    found: dict[int, dict[str, object]] = {}
    for (with_l2, batch), members in groups.items():
        hw = cases[members[0]].hw
        layers = []
        for i in members:
            c = cases[i]
            addr = TensorAddresses(0, c.layer.in_shape.elements, 1 << 24, 1 << 25, c.layer.out_shape.elements)
            steps = NestSteps(c.nest, nest_problem(c.layer, batch, c.nest.lowering), hw, addr)
            # each tensor's region reaches to the next one's base (an im2col matrix outgrows the ifmap)
            regions = ((int(Operand.IFMAP), 0, 1 << 24), (int(Operand.FILTER), 1 << 24, 1 << 24),
                       *((int(op), 1 << 25, 1 << 24) for op in (Operand.PSUM, Operand.OFMAP)))
            layers.append(Work(c.layer, NestInfo(buffers=L2_BUFFERS if with_l2 else ()), steps.blocks,
                               dram_regions=regions))
        path = tmp / f"l2{int(with_l2)}-b{batch}.h5"
        simulate_to_trace(Schedule("random", hw.name, f"nest:{hw.pe_array.dataflow}", batch, tuple(layers)), hw,
                          str(path))
        with hwsim.trace.open(str(path)) as tr:
            metrics = derive(tr).layers
            physics = validate_trace(tr)  # random mappings obey the hardware's timing too
            offsets = dram_transfer_offsets(tr)
        assert physics.ok, [(r.rule, r.examples) for r in physics.rules if not r.ok]
        for i, m in zip(members, metrics, strict=True):
            assert m.name == cases[i].layer.name
            found[i] = {"transfers": table(m.transfers), "compute": dataclasses.asdict(m.compute),
                        "passes": m.passes, "compute_cycles": m.compute_cycles,
                        "addresses": offsets.get(m.name, {})}
    return [found[i] for i in range(len(cases))]


@pytest.mark.parametrize("dataflow", sorted(TIMING))
def test_oracle_closed_form_and_simulation_agree(dataflow: str, tmp_path: Path) -> None:
    cases, rejected = draw_cases(dataflow, seed=sorted(TIMING).index(dataflow), n=LAYERS_PER_DATAFLOW)
    assert rejected < len(cases)  # the generator mostly draws valid nests: the cases are not a lucky few
    kinds = {c.layer.kind for c in cases}
    assert len(kinds) >= 3, kinds  # convolutions, FC, transposed convolutions all drawn
    clips = [c for c in cases if c.layer.in_shape.d > 1]
    assert len(clips) >= LAYERS_PER_DATAFLOW // 20  # 3-D convolutions and FCs over clips drawn too
    simulated = simulate(cases, tmp_path)
    for i, c in enumerate(cases):
        pe = c.hw.pe_array
        walked = Oracle(c.layer, c.nest, c.batch, pe.rows, pe.cols, TIMING[dataflow], pe.macs_per_cycle,
                        pe.fill_drain_cycles).count()
        oracle = oracle_summary(walked)
        counts = NestCounter(c.layer, c.nest, c.batch, c.hw).counts()
        closed = {"transfers": table(counts.transfers), "macs": counts.macs,
                  "hops": {"ifmap": counts.inter_pe_ifmap_words, "filter": counts.inter_pe_filter_words,
                           "psum": counts.inter_pe_words},
                  "passes": counts.passes, "compute_cycles": counts.compute_cycles}
        where = f"{dataflow} case {i}: {c.layer.kind} {dict(c.nest.dims)} {c.nest}"
        assert closed == oracle, where
        room = tile_words(c.nest, nest_problem(c.layer, c.batch, c.nest.lowering))
        for (level, op), words in walked.largest.items():
            if op in room.get(level, {}):
                assert words <= room[level][op], (level, op, words, room[level][op], where)
        sim = simulated[i]
        assert sim["transfers"] == closed["transfers"], where
        assert sim["compute"] == dataclasses.asdict(counts.compute), where
        assert (sim["passes"], sim["compute_cycles"]) == (counts.passes, counts.compute_cycles), where
        assert sim["addresses"] == dram_transfer_sums(c.layer, c.nest, c.batch, c.hw), where
