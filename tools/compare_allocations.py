"""The allocation search against the fixed rules on the zoo: per network and multi-core config, each rule's cost
and the search's under one objective, priced by the allocation's closed form (the pipeline bound for latency),
and with --simulate the simulated cycles of the best fixed rule and of the search's allocation side by side.

    python tools/compare_allocations.py --objective latency --batch 8 --input 64x64
    python tools/compare_allocations.py --nets resnet18 --configs quad-eyeriss-mesh --simulate

The search starts from the fixed rules and keeps only improvements, so under its own objective it is never worse
than the best of them; a line saying WORSE would be a bug. Simulated cycles can differ from the bound's ranking
(contention, the DRAM's schedule): printed, not asserted.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hwsim.flows.inputs import as_hardware  # noqa: E402
from hwsim.flows.run import resolve_run  # noqa: E402
from hwsim.flows.simulate import simulate_run  # noqa: E402
from hwsim.mapping.plans import AllocationPlan  # noqa: E402
from hwsim.search.allocation import search_allocation  # noqa: E402
from hwsim.workload import zoo  # noqa: E402
from hwsim.workload.network import parse_input_size  # noqa: E402

NETS = ("alexnet", "resnet18", "resnet50", "mobilenetv2", "squeezenet11", "googlenet", "vgg16", "tiny_yolov2")
CONFIGS = ("quad-eyeriss-mesh", "hetero-edge", "chiplet-2x2")


def simulated_cycles(graph_name: str, size: tuple[int, int] | None, config: str, plan: AllocationPlan) -> int:
    spec = resolve_run(zoo.build(graph_name, size), as_hardware(ROOT / "configs" / f"{config}.yaml"), None, plan)
    return simulate_run(spec, keep_trace=False).result.cycles


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nets", default=",".join(NETS), help="comma-separated zoo networks")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated multi-core configs")
    parser.add_argument("--objective", default="latency", choices=("latency", "energy", "edp"))
    parser.add_argument("--batch", type=int, default=8, help="images streaming through the cores (default 8)")
    parser.add_argument("--input", default=None, metavar="WxH", help="resize every network's input")
    parser.add_argument("--simulate", action="store_true",
                        help="also simulate the best fixed rule's allocation and the search's")
    args = parser.parse_args()
    size = parse_input_size(args.input) if args.input else None
    worse = 0
    header = f"{'network':<14} {'config':<18} " + " ".join(f"{r:>12}" for r in
                                                             ("round_robin", "stages", "split", "fused",
                                                              "by bound", "search", "search/best"))
    print(f"{args.objective} (closed form) per allocation, batch {args.batch}"
          + (f", input {args.input}" if args.input else ""))
    print(header + ("  simulated best rule / search cycles" if args.simulate else ""))
    for net in (n.strip() for n in args.nets.split(",") if n.strip()):
        graph = zoo.build(net, size)
        for config in (c.strip() for c in args.configs.split(",") if c.strip()):
            hw = as_hardware(ROOT / "configs" / f"{config}.yaml")
            started = time.process_time()
            found = search_allocation(graph, hw, args.batch, args.objective)
            costs = dict(found.rules)
            best_rule = min((c for c in costs.values() if c is not None), default=None)
            ratio = found.cost / best_rule if best_rule else float("nan")
            worse += best_rule is not None and found.cost > best_rule
            cells = [f"{costs.get(r):>12.4g}" if costs.get(r) is not None else f"{'-':>12}"
                     for r in ("round_robin", "stages", "split", "fused", "stages by bound")]
            line = (f"{net:<14} {config:<18} " + " ".join(cells) + f" {found.cost:>12.4g} {ratio:>12.3f}"
                    + ("" if found.cost <= (best_rule or found.cost) else "  WORSE"))
            if args.simulate:
                from hwsim.mapping.multicore import allocate

                rule = min((r for r, c in found.rules if c is not None and r != "stages by bound"),
                           key=lambda r: costs[r] or 0.0)
                best_plan = allocate(graph, hw, args.batch, rule)
                line += (f"  {rule} {simulated_cycles(net, size, config, best_plan):,} / "
                         f"{simulated_cycles(net, size, config, found.plan):,}")
            print(line + f"  ({time.process_time() - started:.1f} CPU-s, {found.priced} priced)", flush=True)
    print(f"search worse than the best fixed rule: {worse} case(s)")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
