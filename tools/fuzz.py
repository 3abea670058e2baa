"""Seeded mutation fuzzing of hwsim's inputs: hardware configs, sweep files, ONNX graphs and trace files.

Each mutant is one damaged input; the commands that read that kind of input run on it as fresh processes
(`python -m hwsim.cli.main ...`) with a time limit and an address-space limit, and each run is classified:

- ok: exit 0 (or the exit 1 of `sweep` and `trace validate`, a verdict: a point failed and its error is in
  the table, a rule is broken) and no NaN or infinity in its output;
- error: exit 2 and exactly one stderr line starting `hwsim` (the one-line error contract);
- traceback, hang (past --timeout), memory (past --memory-gb), nonfinite (exit 0 with nan/inf printed),
  other (any other exit code or stderr shape).

It prints the count of each outcome per family and writes every run that is neither ok nor error to
OUT/bad.txt with the mutation, the command and the end of stderr. Examples:

    python tools/fuzz.py --mutants 500 --jobs 2 --out /tmp/fuzz     # >= 2,000 mutants
    python tools/fuzz.py --families config,trace --mutants 20 --seed 7
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import h5py
import numpy as np

from hwsim.trace.seal import seal

if TYPE_CHECKING:
    from onnx import ModelProto

REPO = Path(__file__).resolve().parents[1]
FAMILIES = ("config", "sweep", "onnx", "trace", "hostile")
OUTCOMES = ("ok", "error", "traceback", "hang", "memory", "nonfinite", "other")
# commands whose exit 1 is a verdict printed on stdout, not a failure: a sweep that recorded a failed point with
# its error in the table, a trace that breaks a validator rule
VERDICTS = (("sweep",), ("trace", "validate"))
NONFINITE = re.compile(r"(?<![A-Za-z_])(nan|inf|-inf|infinity)(?![A-Za-z_])", re.IGNORECASE)


@dataclass(frozen=True)
class Run:
    """One command on one mutant."""

    family: str
    mutation: str
    argv: tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    run: Run
    kind: str
    stderr_tail: str


# ----- mutations ------------------------------------------------------------------------------------------

HOSTILE_NUMBERS = ["0", "-1", "1e400", "-1e400", ".nan", ".inf", "1e-30", "9223372036854775808", "1e300", "0.5",
                   "2.5", "'x'", "[]", "{}", "null", "true", "!!int abc", "!custom 3", "!!timestamp x", "1e30 Hz",
                   "-4 KiB", "1e30 pJ", "0 B", "1 B", "3 GHz"]
ALIAS_BOMB = "".join(f"b{k}: &b{k} [{', '.join([f'*b{k - 1}'] * 9) if k else ', '.join(['x'] * 9)}]\n"
                     for k in range(9))


def mutate_yaml(text: str, rng: random.Random) -> tuple[str | bytes, str]:
    """A damaged copy of a YAML document and what was done to it."""
    lines = text.splitlines()
    value_lines = [i for i, line in enumerate(lines) if re.match(r"^\s*[A-Za-z_.]+:\s*\S", line)
                   and not line.lstrip().startswith("#")]
    choice = rng.random()
    if choice < 0.55 and value_lines:
        i = rng.choice(value_lines)
        key = lines[i].split(":", 1)[0]
        value = rng.choice(HOSTILE_NUMBERS)
        lines[i] = f"{key}: {value}"
        return "\n".join(lines) + "\n", f"line {i + 1}: {key.strip()} = {value}"
    if choice < 0.65 and value_lines:
        i = rng.choice(value_lines)
        removed = lines.pop(i)
        return "\n".join(lines) + "\n", f"deleted line {i + 1} ({removed.strip()[:40]})"
    if choice < 0.72:
        return text.encode(rng.choice(["utf-16", "utf-32"])), "re-encoded as UTF-16/32"
    if choice < 0.77:
        k = rng.randrange(len(text))
        return text[:k].encode() + b"\0" + text[k:].encode(), f"NUL byte at {k}"
    if choice < 0.82:
        return text + "\nx: " + "[" * 5000 + "]" * 5000 + "\n", "nested 5,000 deep"
    if choice < 0.87:
        return ALIAS_BOMB + text, "alias bomb (9**9 expansion)"
    if choice < 0.92:
        k = rng.randrange(len(text))
        return text[:k], f"cut at character {k}"
    data = bytearray(text.encode())
    for _ in range(rng.choice([1, 3, 10])):
        data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data), "random bytes replaced"


def conv_graph(rng: random.Random) -> tuple[ModelProto, str]:
    """A small ONNX graph (conv, pool, fc) on an image or, one time in three, on a clip of 4 frames (3-D windows),
    with one attribute, shape or initializer damaged."""
    from onnx import TensorProto, helper, numpy_helper

    clip = rng.random() < 1 / 3
    axes = 3 if clip else 2
    attrs: dict[str, Any] = {"kernel_shape": [3] * axes, "strides": [1] * axes, "pads": [1] * (2 * axes),
                             "dilations": [1] * axes, "group": 1}
    hw = [1, 3, 4, 32, 32] if clip else [1, 3, 32, 32]
    weights = np.zeros((8, 3, *[3] * axes), np.float32)
    kind = rng.choice(["attr", "attr", "attr", "shape", "init", "cycle", "missing", "pool"])
    what = kind
    if kind == "attr":
        key = rng.choice(sorted(attrs))
        value = rng.choice([[0] * axes, [-1] * axes, [1000] * axes, [10**9] * axes, [1.5] * axes, [2, 2], [2] * 4,
                            0, -2, 7])
        attrs[key] = value if key != "group" or isinstance(value, int) else rng.choice([0, -1, 5, 1000])
        what = f"Conv {key} = {attrs[key]}"
    elif kind == "shape":
        dim = rng.choice([0, -5, 2**31, 46341, 10**12])
        hw[rng.randrange(1, len(hw))] = dim
        what = f"input dims {hw}"
    conv = helper.make_node("Conv", ["x", "W"], ["c"], **attrs)
    pool_attrs: dict[str, Any] = {"kernel_shape": [2] * axes, "strides": [2] * axes}
    if kind == "pool":
        pool_attrs[rng.choice(["kernel_shape", "strides"])] = rng.choice([[0] * axes, [-3] * axes, [1000] * axes])
        what = f"MaxPool {pool_attrs}"
    what = f"{'clip: ' if clip else ''}{what}"
    pool = helper.make_node("MaxPool", ["c"], ["p"], **pool_attrs)
    flat = helper.make_node("Flatten", ["p"], ["f"])
    fc = helper.make_node("Gemm", ["f", "F"], ["y"], transB=1)
    w = numpy_helper.from_array(weights, "W")
    f = numpy_helper.from_array(np.zeros((10, 8 * 16 * 16 * (2 if clip else 1)), np.float32), "F")
    if kind == "init":
        w.raw_data = w.raw_data[:rng.choice([0, 10, 100])]
        what = "truncated initializer W"
    nodes = [conv, pool, flat, fc]
    if kind == "cycle":
        nodes = [helper.make_node("Add", ["y", "x"], ["x2"]), *nodes]
        conv.input[0] = "x2"
        what = "cycle through the first node"
    if kind == "missing":
        conv.input[1] = "nowhere"
        what = "Conv reads a tensor nothing produces"
    graph = helper.make_graph(nodes, "fuzz", [helper.make_tensor_value_info("x", TensorProto.FLOAT, hw)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w, f])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), what


def damage_trace(source: Path, target: Path, rng: random.Random) -> str:
    """A damaged copy of a trace and what was done to it."""
    shutil.copy(source, target)
    choice = rng.random()
    if choice < 0.35:
        data = bytearray(target.read_bytes())
        flips = rng.choice([1, 4, 32, 256])
        for _ in range(flips):
            k = rng.randrange(len(data))
            data[k] ^= 1 << rng.randrange(8)
        target.write_bytes(bytes(data))
        return f"{flips} bits flipped"
    if choice < 0.45:
        cut = rng.random()
        with open(target, "r+b") as stream:
            stream.truncate(int(target.stat().st_size * cut))
        return f"truncated to {cut:.2f}"
    what = _damage_hdf5(target, choice, rng)
    if rng.random() < 0.5:  # as if written so: the checks behind the seal must catch it
        seal(str(target))
        return what + ", resealed"
    return what


def _damage_hdf5(target: Path, choice: float, rng: random.Random) -> str:
    """Damage a trace through HDF5 itself: a dataset deleted or shortened, a value or an attribute changed."""
    with h5py.File(target, "r+") as file:
        if choice < 0.6:
            names = [n for n in ("levels/dram", "levels/pe", "names/layers", "names/buffers", "index/dram",
                                 "occupancy") if n in file]
            name = rng.choice(names)
            if rng.random() < 0.5:
                del file[name]
                return f"deleted {name}"
            if isinstance(file[name], h5py.Dataset) and file[name].chunks and len(file[name]) > 2:
                file[name].resize((len(file[name]) // 2, *file[name].shape[1:]))
                return f"shortened {name}"
            del file[name]
            return f"deleted {name}"
        if choice < 0.8:
            dataset = rng.choice(["levels/dram", "levels/glb", "occupancy"])
            rows = file[dataset][...]
            column = rng.choice(list(rows.dtype.names or ()))
            value = rng.choice([-1, 250, 999, 2**31 - 1, -(2**40), 2**62])
            if len(rows):
                k = rng.randrange(len(rows))
                info = np.iinfo(rows.dtype[column])
                rows[column][k] = min(max(value, info.min), info.max)
                file[dataset][...] = rows
            return f"{dataset}.{column} = {value}"
        if choice < 0.85:
            return _damage_tables(file, rng)
        key = rng.choice(["hwsim_trace_version", "clock_hz", "word_bits", "batch", "hardware_json", "schedule_json",
                          "mapping_json", "levels", "ops", "complete"])
        if rng.random() < 0.3:
            del file.attrs[key]
            return f"attribute {key} deleted"
        hostile: object = rng.choice([0, -1, 99, "three", float("nan"), float("inf"), "{bad json", ""])
        file.attrs[key] = hostile
        return f"attribute {key} = {hostile!r}"


def _damage_tables(file: h5py.File, rng: random.Random) -> str:
    """A name table with a repeated name, or a layer index of the wrong shape."""
    if rng.random() < 0.5:
        names = file["names/layers"][()]
        if len(names) > 1:
            names[1] = names[0]
        del file["names/layers"]
        file.create_dataset("names/layers", data=names)
        return "layer names repeated"
    level = rng.choice([n for n in ("index/dram", "index/glb", "index/pe") if n in file] or ["index/dram"])
    index = file[level][()] if level in file else np.zeros((1, 2), np.int64)
    if level in file:
        del file[level]
    file.create_dataset(level, data=index.reshape(-1)[:max(1, index.size - 1)])
    return f"{level} flattened"


# ----- the runs ------------------------------------------------------------------------------------------

def write_yaml_mutant(sources: list[Path], path: Path, rng: random.Random) -> str:
    """A damaged copy of one of `sources` written to `path`; returns what was done to which file."""
    source = rng.choice(sources)
    text, what = mutate_yaml(source.read_text(), rng)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return f"{source.name}: {what}"


def config_runs(out: Path, rng: random.Random, n: int) -> list[Run]:
    sources = sorted((REPO / "configs").glob("*.yaml"))
    runs: list[Run] = []
    for k in range(n):
        path = out / f"config-{k}.yaml"
        mutation = write_yaml_mutant(sources, path, rng)
        runs.append(Run("config", mutation, ("config", "validate", str(path))))
        if rng.random() < 0.5:
            runs.append(Run("config", mutation, ("estimate", "alexnet", "--hw", str(path))))
        else:
            runs.append(Run("config", mutation, ("simulate", "phases_example", "--hw", str(path), "--out",
                                                 str(out / f"config-{k}.h5"))))
    return runs


def sweep_runs(out: Path, rng: random.Random, n: int) -> list[Run]:
    sources = sorted((REPO / "configs" / "sweeps").glob("*.yaml"))
    runs: list[Run] = []
    for k in range(n):
        path = out / f"sweep-{k}.yaml"
        mutation = write_yaml_mutant(sources, path, rng)
        runs.append(Run("sweep", mutation, ("sweep", str(path), "--out", str(out / f"sweep-{k}"))))
    return runs


def onnx_runs(out: Path, rng: random.Random, n: int) -> list[Run]:
    from onnx import save

    runs: list[Run] = []
    for k in range(n):
        model, what = conv_graph(rng)
        path = out / f"graph-{k}.onnx"
        save(model, path)
        command = rng.choice(["info", "estimate", "simulate"])
        extra = {"info": (), "estimate": ("--hw", "eyeriss-v1"),
                 "simulate": ("--hw", "eyeriss-v1", "--out", str(out / f"graph-{k}.h5"))}[command]
        runs.append(Run("onnx", what, (command, str(path), *extra)))
    return runs


def trace_runs(out: Path, rng: random.Random, n: int) -> list[Run]:
    source = out / "source.h5"
    subprocess.run([sys.executable, "-m", "hwsim.cli.main", "simulate", "phases_example", "--hw", "eyeriss-v1",
                    "--out", str(source), "--json"], cwd=REPO, check=True, capture_output=True)
    runs: list[Run] = []
    for k in range(n):
        path = out / f"trace-{k}.h5"
        what = damage_trace(source, path, rng)
        command = rng.choice([("trace", "summary", str(path)),
                              ("trace", "query", str(path), "--level", "dram", "--limit", "5"),
                              ("trace", "export", str(path), "--perfetto", str(out / f"trace-{k}.json")),
                              ("trace", "validate", str(path)),
                              ("trace", "query", str(path), "--layer", "0", "--limit", "5"),
                              ("report", str(path), "--html", str(out / f"trace-{k}.html"))])
        runs.append(Run("trace", what, command))
    return runs


def _sweep_file(path: Path, axes: str) -> Path:
    path.write_text(f"config: eyeriss-v1\nnetworks: [phases_example]\naxes:\n{axes}")
    return path


def _lrn_graph(size: int) -> ModelProto:
    from onnx import TensorProto, helper

    node = helper.make_node("LRN", ["x"], ["y"], size=size)
    graph = helper.make_graph([node], "lrn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def hostile_runs(out: Path, rng: random.Random, n: int) -> list[Run]:
    """The hostile inputs known to have broken hwsim once, each run as it was reported (n is not used): sweep
    ranges to infinity or NaN, a sweep of 10**8 points, FIFOs and /dev/zero as inputs, an LRN of size 0, a 1 KiB
    GLB with a 512 B filter partition."""
    from onnx import save

    runs: list[Run] = []
    for what, axes in (("to: .inf", "  pe_array.rows: {from: 1, to: .inf, step: 1}\n"),
                       ("step: .nan", "  pe_array.rows: {from: 1, to: 9, step: .nan}\n"),
                       ("1e308 by 1e-308", "  pe_array.rows: {from: 1, to: 1e308, step: 1e-308}\n"),
                       ("log2 to .inf", "  pe_array.rows: {from: 1, to: .inf, scale: log2}\n"),
                       ("two 1..9999 axes", "  pe_array.rows: {from: 1, to: 9999, step: 1}\n"
                                            "  pe_array.cols: {from: 1, to: 9999, step: 1}\n")):
        path = _sweep_file(out / f"hostile-sweep-{len(runs)}.yaml", axes)
        runs.append(Run("hostile", f"sweep {what}", ("sweep", str(path), "--out", str(out / "s"), "--limit", "2")))
    for suffix in (".onnx", ".yaml"):
        os.mkfifo(out / f"fifo{suffix}")
        (out / f"zero{suffix}").symlink_to("/dev/zero")
    for argv in (("info", str(out / "fifo.onnx")), ("info", str(out / "zero.onnx")),
                 ("sweep", str(out / "fifo.yaml")), ("sweep", str(out / "zero.yaml")),
                 ("estimate", "alexnet", "--hw", str(out / "fifo.yaml")),
                 ("estimate", "alexnet", "--hw", "eyeriss-v1", "--mapping", str(out / "fifo.yaml"))):
        runs.append(Run("hostile", "a special file as input", argv))
    for size in (0, -1):
        save(_lrn_graph(size), out / f"lrn{size}.onnx")
        runs.append(Run("hostile", f"LRN size {size}", ("info", str(out / f"lrn{size}.onnx"))))
    tiny = out / "tiny-glb.yaml"
    text = (REPO / "configs" / "eyeriss-v1.yaml").read_text()
    tiny.write_text(re.sub(r"(?m)^  size: 108 KiB", "  size: 1 KiB", re.sub(r"(?m)^  filter: 8 KiB.*$",
                                                                             "  filter: 512 B", text)))
    for net in ("alexnet", "resnet18"):
        runs.append(Run("hostile", f"1 KiB GLB, 512 B filters, {net}", ("estimate", net, "--hw", str(tiny))))
        runs.append(Run("hostile", f"1 KiB GLB, 512 B filters, {net}",
                        ("simulate", net, "--hw", str(tiny), "--out", str(out / f"tiny-{net}.h5"))))
    return runs


MAKERS: dict[str, Callable[[Path, random.Random, int], list[Run]]] = {
    "config": config_runs, "sweep": sweep_runs, "onnx": onnx_runs, "trace": trace_runs, "hostile": hostile_runs}


def _limit_memory(memory_bytes: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    return apply


def execute(run: Run, timeout_s: float, memory_bytes: int) -> Outcome:
    """Run one command and classify how it ended."""
    try:
        proc = subprocess.run([sys.executable, "-m", "hwsim.cli.main", *run.argv], cwd=REPO, capture_output=True,
                              text=True, timeout=timeout_s, preexec_fn=_limit_memory(memory_bytes), check=False)
    except subprocess.TimeoutExpired:
        return Outcome(run, "hang", "")
    lines = proc.stderr.strip().splitlines()
    tail = "\n".join(lines[-3:])[-400:]
    if "MemoryError" in proc.stderr or "Cannot allocate memory" in proc.stderr:
        kind = "memory"
    elif "Traceback" in proc.stderr:
        kind = "traceback"
    elif proc.returncode == 0 or (proc.returncode == 1 and any(run.argv[:len(v)] == v for v in VERDICTS)):
        kind = "nonfinite" if NONFINITE.search(proc.stdout) else "ok"
    elif proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("hwsim"):
        kind = "error"
    else:
        kind = "other"
    return Outcome(run, kind, tail)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--families", default=",".join(FAMILIES), help="comma-separated, from " + ", ".join(FAMILIES))
    parser.add_argument("--mutants", type=int, default=25, help="mutants per family (default 25)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2, help="runs at once (default 2)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before a run counts as a hang")
    parser.add_argument("--memory-gb", type=float, default=4.0, help="address-space limit of each run (GB)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/hwsim-fuzz"), help="where mutants and results go")
    parser.add_argument("--json", action="store_true", help="print the counts as one JSON document")
    args = parser.parse_args()
    families = [f for f in args.families.split(",") if f]
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown:
        parser.error(f"unknown families {unknown}; use {', '.join(FAMILIES)}")
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    rng = random.Random(args.seed)
    runs = [run for family in families for run in MAKERS[family](args.out, rng, args.mutants)]
    memory = int(args.memory_gb * 1e9)
    with ThreadPoolExecutor(args.jobs) as pool:
        outcomes = list(pool.map(lambda r: execute(r, args.timeout, memory), runs))
    counts = {f: Counter(o.kind for o in outcomes if o.run.family == f) for f in families}
    with open(args.out / "bad.txt", "w") as report:
        for o in outcomes:
            if o.kind not in ("ok", "error"):
                report.write(f"[{o.kind}] {o.run.family}: {o.run.mutation}\n  hwsim {' '.join(o.run.argv)}\n"
                             f"  {o.stderr_tail}\n")
    if args.json:
        print(json.dumps({f: dict(c) for f, c in counts.items()}))
    else:
        print(f"{'family':8} {'runs':>6} " + " ".join(f"{k:>9}" for k in OUTCOMES))
        for f in families:
            print(f"{f:8} {sum(counts[f].values()):>6} " + " ".join(f"{counts[f][k]:>9}" for k in OUTCOMES))
        bad = sum(c[k] for c in counts.values() for k in OUTCOMES[2:])
        mutants = sum(args.mutants for f in families if f != "hostile")
        print(f"{len(runs)} runs over {mutants} mutants and the known hostile inputs (seed {args.seed}); "
              f"{bad} neither ok nor a one-line error (listed in {args.out / 'bad.txt'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
