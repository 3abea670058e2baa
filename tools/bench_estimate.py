"""Wall time of `hwsim estimate` on ResNet-50 and friends, beside interpreter start-up and `hwsim info`.

All commands are timed in one run (median of --repeat), so the ratios are comparable; the target of
the analytic-model issue is 1 s for ResNet-50 on a 2-core machine.
Usage: python tools/bench_estimate.py [--repeat N]
"""

from __future__ import annotations

import argparse
import sys

from bench_info import print_timings

TARGET_S = 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    hwsim = [sys.executable, "-m", "hwsim.cli.main"]
    cases = {
        "python -c pass (start-up)": [sys.executable, "-c", "pass"],
        "hwsim info resnet50 --json": [*hwsim, "info", "resnet50", "--json"],
        "hwsim estimate resnet50 --hw eyeriss-v1 --json": [*hwsim, "estimate", "resnet50", "--hw", "eyeriss-v1",
                                                           "--json"],
        "hwsim estimate resnet50 --hw eyeriss-v1 (table)": [*hwsim, "estimate", "resnet50", "--hw", "eyeriss-v1"],
        "hwsim estimate vgg16 --hw eyeriss-v1 --json": [*hwsim, "estimate", "vgg16", "--hw", "eyeriss-v1", "--json"],
        "hwsim estimate mobilenetv2 --hw eyeriss-v1 --json": [*hwsim, "estimate", "mobilenetv2", "--hw",
                                                              "eyeriss-v1", "--json"],
        "hwsim estimate alexnet --model cnnergy --sweep (7 sizes)": [
            *hwsim, "estimate", "alexnet", "--hw", "eyeriss-8bit", "--model", "cnnergy", "--sweep",
            "glb.size=8KB..512KB", "--json"],
    }
    print_timings(cases, args.repeat, TARGET_S)

if __name__ == "__main__":
    main()
