"""Real networks as users export them, through hwsim: MACs against an independent count, estimate, simulate.

1. A throwaway virtual environment outside the repository (default ~/.cache/hwsim-real-models/venv,
   created on first use, reused after) gets torch, torchvision, timm, onnxruntime and onnxscript.
2. `tools/export_real_models.py` runs in it: it exports each network with random weights (legacy
   and dynamo exporters, onnxruntime's static QDQ quantization) and counts its MACs on the
   PyTorch side with FlopCounterMode (FLOPs / 2 of conv, mm, addmm, bmm, baddbmm, attention's
   products included; a quantized model takes its float twin's count).
3. Here, with hwsim's own interpreter, each export goes through `hwsim info`, `hwsim estimate`
   and `hwsim simulate` (DRAM level traced, traces in the cache directory).
4. A table: network, exporter, hwsim MACs, independent MACs, their ratio, whether estimate and
   simulate succeeded, and the wall time of the three commands. Then each INT8 QDQ model beside
   its float twin on the same config (default the 16-bit eyeriss-v1): the QDQ model at the width
   its graph declares, the twin with `--bits 8`; cycles, DRAM bytes and the word each ran at.
5. The mixed-precision model (ResNet-18 INT8 with conv1 and fc left in float) through `hwsim check`: each layer
   at its own word, its layers per word, cycles and DRAM bytes beside the float twin's at 8 and at 16 bit
   (the mixed run lies between them), and the check's verdict.

Exit code 1 if any network fails a command or its MACs differ by more than 1 %, an INT8 model's
cycles or DRAM bytes differ from its float twin's by more than 1 %, or the mixed model's check fails.
Usage: python tools/check_real_models.py [--cache DIR] [--venv DIR] [--only NAME,...] [--hw CONFIG]
       [--no-simulate]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from throwaway_env import env_python

ROOT = Path(__file__).resolve().parents[1]
EXPORTER = ROOT / "tools" / "export_real_models.py"
# The releases this machine keeps on disk (x86_64, Python 3.11); other machines may need other pins.
EXPORT_PACKAGES = (["torch==2.14.1", "torchvision==0.29.1"], ["timm", "onnxruntime", "onnxscript", "onnx"])
MAC_TOLERANCE = 0.01
INT8_TOLERANCE = 0.01


@dataclass(frozen=True)
class Outcome:
    ok: bool
    doc: dict[str, Any]  # the command's --json document, empty on failure
    error: str  # the last line of stderr on failure
    seconds: float


@dataclass(frozen=True)
class Row:
    name: str
    network: str
    exporter: str
    hwsim_macs: int | None
    independent_macs: int
    info: Outcome
    estimate: Outcome | None
    simulate: Outcome | None

    @property
    def ratio(self) -> float | None:
        return None if self.hwsim_macs is None else self.hwsim_macs / self.independent_macs

    @property
    def steps(self) -> list[tuple[str, Outcome]]:
        return [(s, o) for s, o in (("info", self.info), ("estimate", self.estimate), ("simulate", self.simulate))
                if o is not None]

    @property
    def seconds(self) -> float:
        return sum(o.seconds for _, o in self.steps)

    @property
    def passed(self) -> bool:
        return self.ratio is not None and abs(self.ratio - 1) <= MAC_TOLERANCE and all(o.ok for _, o in self.steps)


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hwsim-real-models"


def ensure_venv(venv: Path) -> Path:
    """The export environment's Python, creating the environment (minutes, several GB) on first use."""
    if not (venv / ".hwsim-env-ready").exists():
        print(f"creating the export environment in {venv} (once) ...", flush=True)
    return env_python(venv, EXPORT_PACKAGES, quiet=False)


def export(python: Path, exports: Path, only: str) -> dict[str, dict[str, Any]]:
    """Run the exporter in the export environment; its manifest, by model name."""
    cmd = [str(python), str(EXPORTER), str(exports)] + (["--only", only] if only else [])
    log = exports / "export.log"
    exports.mkdir(parents=True, exist_ok=True)
    with log.open("a") as out:
        done = subprocess.run(cmd, check=False, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        sys.exit(f"export failed (exit {done.returncode}); see {log}")
    manifest: dict[str, dict[str, Any]] = json.loads((exports / "manifest.json").read_text())
    wanted = set(only.split(",")) if only else set(manifest)
    return {name: entry for name, entry in manifest.items() if name in wanted}


def hwsim(*args: str) -> Outcome:
    """One hwsim command with --json, in this interpreter."""
    start = time.perf_counter()
    cmd = [sys.executable, "-m", "hwsim.cli.main", *args, "--json"]
    done = subprocess.run(cmd, check=False, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"exit {done.returncode}"]
        return Outcome(False, {}, lines[-1], seconds)
    return Outcome(True, json.loads(done.stdout), "", seconds)


def simulate(model: Path, hw: str, traces: Path, *more: str) -> Outcome:
    traces.mkdir(parents=True, exist_ok=True)
    trace = traces / f"{model.stem}-{hw}.h5"
    outcome = hwsim("simulate", str(model), "--hw", hw, "--trace-levels", "dram", "--out", str(trace), *more)
    trace.unlink(missing_ok=True)  # only the report is wanted; ViT's or DeepLab's traces are large
    return outcome


def check(entry: dict[str, Any], exports: Path, hw: str, traces: Path, run_simulate: bool) -> Row:
    model = exports / entry["file"]
    info = hwsim("info", str(model))
    estimate = hwsim("estimate", str(model), "--hw", hw) if info.ok else None
    # the run's MACs: every image of the batch the file declares (info counts one image)
    macs = int(estimate.doc["totals"]["macs"]) if estimate is not None and estimate.ok else None
    sim = simulate(model, hw, traces) if info.ok and run_simulate else None
    return Row(entry["name"], entry["network"], entry["exporter"], macs, int(entry["independent_macs"]), info,
               estimate, sim)


def mark(outcome: Outcome | None) -> str:
    return "-" if outcome is None else "ok" if outcome.ok else "FAIL"


def print_table(rows: list[Row]) -> None:
    print(f"{'network':30s} {'exporter':10s} {'hwsim MACs':>15s} {'independent':>15s} {'ratio':>8s} "
          f"{'estimate':>8s} {'simulate':>8s} {'wall s':>7s}")
    for r in rows:
        ratio = "-" if r.ratio is None else f"{r.ratio:.5f}"
        macs = "-" if r.hwsim_macs is None else f"{r.hwsim_macs:,}"
        print(f"{r.network:30s} {r.exporter:10s} {macs:>15s} {r.independent_macs:>15,} {ratio:>8s} "
              f"{mark(r.estimate):>8s} {mark(r.simulate):>8s} {r.seconds:7.1f}")
    for r in rows:
        for step, o in r.steps:
            if not o.ok:
                print(f"  {r.name} {step}: {o.error}")


def fused_activations(model: Path) -> int | None:
    """How many layers of `model` carry a fused activation (`hwsim info`)."""
    info = hwsim("info", str(model))
    return sum(1 for l in info.doc["layers"] if l["activation"]) if info.ok else None


def eight_bit_layers(model: Path) -> int | None:
    """Layers whose weights and activations the graph gives as 8 bit."""
    info = hwsim("info", str(model))
    if not info.ok:
        return None
    return sum(1 for l in info.doc["layers"]
               if l["precision"] and (l["precision"]["weight_bits"], l["precision"]["activation_bits"]) == (8, 8))


def compare_int8(manifest: dict[str, dict[str, Any]], exports: Path, hw: str, traces: Path) -> bool:
    """Each QDQ model (at the width its graph declares) beside its float twin with --bits 8, on `hw`: cycles, DRAM
    bytes, the word each ran at, and the layers with a fused activation in each (the QDQ pairs between a conv and
    its activation must not stop the fusion)."""
    pairs = [(e, manifest[e["twin"]]) for e in manifest.values()
             if e.get("twin") in manifest and e["exporter"] == "legacy+qdq"]
    if not pairs:
        return True
    print(f"\nINT8 QDQ at its declared width against the float twin with --bits 8, both on {hw}")
    print(f"{'network':26s} {'int8 cycles':>13s} {'fp32 cycles':>13s} {'ratio':>7s} "
          f"{'int8 DRAM B':>13s} {'fp32 DRAM B':>13s} {'ratio':>7s} {'bits':>5s} {'fused act.':>10s} "
          f"{'w8a8 layers':>11s}")
    passed = True
    for quant, twin in pairs:
        q_model, f_model = exports / quant["file"], exports / twin["file"]
        q, f = simulate(q_model, hw, traces), simulate(f_model, hw, traces, "--bits", "8")
        if not (q.ok and f.ok):
            print(f"{quant['network']:26s} simulate failed: {q.error or f.error}")
            passed = False
            continue
        cycles = (int(q.doc["cycles"]), int(f.doc["cycles"]))
        dram = (int(q.doc["totals"]["dram_bytes"]), int(f.doc["totals"]["dram_bytes"]))
        ratios = (cycles[0] / cycles[1], dram[0] / dram[1])
        fused = (fused_activations(q_model), fused_activations(f_model))
        bits = (int(q.doc["word_bits"]), int(f.doc["word_bits"]))
        passed &= all(abs(r - 1) <= INT8_TOLERANCE for r in ratios) and fused[0] == fused[1] and bits == (8, 8)
        print(f"{quant['network']:26s} {cycles[0]:>13,} {cycles[1]:>13,} {ratios[0]:7.4f} "
              f"{dram[0]:>13,} {dram[1]:>13,} {ratios[1]:7.4f} {f'{bits[0]}/{bits[1]}':>5s} "
              f"{f'{fused[0]}/{fused[1]}':>10s} "
              f"{eight_bit_layers(q_model)!s:>11s}")
    return passed


def check_mixed(manifest: dict[str, dict[str, Any]], exports: Path, hw: str, traces: Path) -> bool:
    """Each mixed-precision model on `hw`: its layers per word and `hwsim check`'s verdict; its cycles and DRAM
    bytes beside its float twin's with --bits 8 and --bits 16."""
    mixed = [e for e in manifest.values() if e["exporter"] == "legacy+qdq-mixed" and e.get("twin") in manifest]
    passed = True
    for entry in mixed:
        model, twin = exports / entry["file"], exports / manifest[entry["twin"]]["file"]
        runs = {"mixed": simulate(model, hw, traces)}
        for bits in ("8", "16"):
            runs[f"fp32 --bits {bits}"] = simulate(twin, hw, traces, "--bits", bits)
        verdict = hwsim("check", str(model), "--hw", hw)
        if not all(r.ok for r in runs.values()):
            print(f"{entry['network']}: simulate failed: {next(r.error for r in runs.values() if not r.ok)}")
            passed = False
            continue
        words: dict[int, int] = {}
        for layer in runs["mixed"].doc["layers"]:
            words[int(layer["word_bits"])] = words.get(int(layer["word_bits"]), 0) + 1
        shown = ", ".join(f"{count} at {bits} bit" for bits, count in sorted(words.items()))
        ok = verdict.ok and bool(verdict.doc.get("ok")) and len(words) > 1
        passed &= ok
        print(f"\n{entry['network']} on {hw}: layers with work {shown}; hwsim check "
              f"{'PASS' if ok else 'FAIL ' + verdict.error}")
        for name, run in runs.items():
            cycles, dram = int(run.doc["cycles"]), int(run.doc["totals"]["dram_bytes"])
            print(f"  {name:16s} {cycles:>13,} cycles {dram:>13,} DRAM B")
    return passed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=default_cache(),
                        help="where the export environment, the ONNX files and the traces go (outside the repo)")
    parser.add_argument("--venv", type=Path, default=None,
                        help="an existing environment with torch, torchvision, timm, onnxruntime and onnxscript")
    parser.add_argument("--only", default="", help="comma-separated model names, e.g. resnet18-qdq,swin_t-legacy")
    parser.add_argument("--hw", default="eyeriss-v1", help="config for estimate and simulate")
    parser.add_argument("--no-simulate", action="store_true", help="info and estimate only")
    args = parser.parse_args()
    cache: Path = args.cache.resolve()
    if cache.is_relative_to(ROOT):
        sys.exit(f"--cache {cache} is inside the repository; exports and environments stay outside it")
    python = args.venv / "bin" / "python" if args.venv else ensure_venv(cache / "venv")
    exports, traces = cache / "exports", cache / "traces"
    manifest = export(python, exports, args.only)
    rows = []
    for entry in manifest.values():
        rows.append(check(entry, exports, args.hw, traces, not args.no_simulate))
        print(f"  checked {entry['name']} ({rows[-1].seconds:.0f} s)", flush=True)
    print()
    print_table(rows)
    int8_ok = args.no_simulate or compare_int8(manifest, exports, args.hw, traces)
    mixed_ok = args.no_simulate or check_mixed(manifest, exports, args.hw, traces)
    return 0 if all(r.passed for r in rows) and int8_ok and mixed_ok else 1


if __name__ == "__main__":
    sys.exit(main())
