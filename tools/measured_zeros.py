"""Measured zeros on a real network and a real image: per layer, the zeros onnxruntime finds and the DRAM bytes
they save on eyeriss-v1 (zero gating, run-length coded DRAM tiles), simulated.

1. A throwaway virtual environment outside the repository (default ~/.cache/hwsim-sparsity/venv) gets torch,
   torchvision and scikit-image once; in it, torchvision's ResNet-18 with random initialisation (seed 0) is
   exported to ONNX with its weights (legacy exporter, opset 17), and scikit-image's `astronaut` sample picture
   is written as a PNG. Nothing of it enters the repository.
2. Here (hwsim's environment, with the `measure` extra): `hwsim simulate resnet18.onnx --activations-from
   astronaut.png` through the API: the network runs once with onnxruntime, every activation and weight tensor is
   counted, each DRAM tile is coded from its own values; beside it the dense run.
3. Printed per layer: the zero fractions of its input (ifmap), filters and output (ofmap), the share of its MACs
   whose ifmap word is zero, DRAM bytes dense and measured, and `hwsim check`'s comparison of the coded DRAM words
   (exact per tile in the simulation) with the closed form's average (the layer's zero fraction) — the gap the
   check's tolerance covers.

Usage: python tools/measured_zeros.py [--cache DIR] [--hw CONFIG] [--batch N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from throwaway_env import env_python

from hwsim.flows.check import check_simulation
from hwsim.flows.inputs import measure_activations
from hwsim.flows.simulate import simulate_network
from hwsim.vocab import Level, Operand
from hwsim.workload.onnx_import import load_onnx

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["torch==2.14.1", "torchvision==0.29.1", "scikit-image", "pillow", "onnx"]
EXPORT = """
import sys, torch, torchvision
from PIL import Image
from skimage import data
torch.manual_seed(0)
model = torchvision.models.resnet18(weights=None).eval()
torch.onnx.export(model, torch.randn(1, 3, 224, 224), sys.argv[1], opset_version=17, dynamo=False)
Image.fromarray(data.astronaut()).save(sys.argv[2])
"""


def default_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hwsim-sparsity"


def export(cache: Path) -> tuple[Path, Path]:
    """The exported network and the picture, made once in the throwaway environment."""
    model, picture = cache / "resnet18.onnx", cache / "astronaut.png"
    if model.exists() and picture.exists():
        return model, picture
    print(f"the export environment in {cache / 'venv'} (created once) ...", flush=True)
    python = env_python(cache / "venv", [PACKAGES])
    subprocess.run([str(python), "-c", EXPORT, str(model), str(picture)], check=True)
    return model, picture


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=default_cache(), help="where the environment and exports go")
    parser.add_argument("--hw", default="eyeriss-v1", help="accelerator config (default eyeriss-v1)")
    parser.add_argument("--batch", type=int, default=1, help="images per run, each the measured image (default 1)")
    args = parser.parse_args()
    cache = args.cache.resolve()
    if cache.is_relative_to(ROOT):
        sys.exit(f"--cache {cache} is inside the repository; exports and environments stay outside it")
    cache.mkdir(parents=True, exist_ok=True)
    model, picture = export(cache)
    graph = load_onnx(model).graph
    profile = measure_activations(model, picture, graph)
    with tempfile.TemporaryDirectory() as tmp:
        dense = simulate_network(graph, args.hw, args.batch, Path(tmp) / "dense.h5")
        sim = simulate_network(graph, args.hw, args.batch, Path(tmp) / "measured.h5", sparsity=profile)
        report = check_simulation(sim)
    print(f"{graph.name} on {args.hw}, batch {args.batch}; zeros {profile.source}")
    print(f"{'layer':44s} {'ifmap':>6s} {'filter':>6s} {'ofmap':>6s} {'0-MACs':>6s} | {'DRAM dense':>10s} "
          f"{'measured':>10s} | {'coded DRAM words: exact':>23s} {'average':>9s} {'gap':>6s}")
    checks = {l.name: l for l in report.layers}
    gaps = []
    for m in (m for m in sim.metrics.layers if m.name in checks):
        z = profile.zeros(m.name)
        words = int(m.transfers[Level.DRAM].sum())
        coded = [r for r in checks[m.name].counts if r.level == "dram" and r.operand in ("ifmap", "ofmap")]
        exact, average = sum(r.simulated for r in coded), sum(r.analytic for r in coded)
        gap = (exact - average) / average if average else 0.0
        gaps.append(abs(gap))
        dense_bytes = int(dense.metrics.layer(m.name).transfers[Level.DRAM].sum()) * sim.hardware.word_bytes
        print(f"{m.name[:44]:44s} {z.ifmap:6.1%} {z.filter:6.1%} {z.ofmap:6.1%} {z.zero_macs:6.1%} | "
              f"{dense_bytes:10,d} {words * sim.hardware.word_bytes:10,d} | {exact:23,d} {average:9,d} {gap:+6.1%}")
    total_dense, total = dense.totals.dram_bytes, sim.totals.dram_bytes
    ifmap_reads = sum(int(m.transfers[Level.DRAM, Operand.IFMAP].sum()) for m in sim.metrics.layers)
    print(f"DRAM bytes: dense {total_dense:,}, measured {total:,} ({total / total_dense:.1%}); ifmap words read "
          f"{ifmap_reads:,}; largest gap between the exact and the average coded words {max(gaps):.1%}; "
          f"check {'PASS' if report.ok else 'FAIL'} (coded words within ±{report.layers[0].tolerance:.0%})")


if __name__ == "__main__":
    main()
