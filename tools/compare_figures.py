"""Proof that two revisions of hwsim give the same figures: every number `estimate` and `simulate` print, and
every count a simulation's trace holds, for every zoo network on every shipped config.

The base revision (default: dd22e2991d6a, the commit before the refactor) runs from a git worktree outside the
repository (`/tmp/hwsim-base-<commit>`, created once and reused); the head revision is the checkout this file
lives in, uncommitted changes included (or, with `--head REV`, a worktree of REV). Both run with this
interpreter, `PYTHONPATH=<revision root>` and `python -P` (so `import hwsim` and the shipped configs resolve to
that revision; checked once per revision), in a scratch working directory.

Per network and config, on both revisions:

- `hwsim estimate NETWORK --hw CONFIG --json` at the network's default input: every number of the document
  (per layer counts per level, operand and access, PE work, energy per component, latency bound cycles, DRAM
  bytes; the totals), flattened to rows `estimate/NETWORK/CONFIG/<json path>`;
- `hwsim simulate NETWORK --hw CONFIG --json --out TRACE.h5` at the input of `SIMULATION_INPUTS` (reduced for
  networks whose simulation at the default input takes more than about 30 s on some config): every number of
  the document, rows `simulate/NETWORK/CONFIG/<json path>`, and from the trace, read by the same revision's
  `hwsim.metrics.derive(hwsim.trace.open(path))` in its own subprocess, each layer's nonzero words per level,
  operand and access, its nonzero PE work counts, energy per component, start and end cycles and passes, rows
  `simulate/NETWORK/CONFIG/trace/LAYER/...`.

Lists of named records (layers, DRAM statistics) are keyed by name. Integers compare exactly, floats with a
relative tolerance of 1e-12; a row present on one side only differs. A run that fails is one status row
`.../status` holding its exit code and the first line of its stderr (a traceback's last line); two failures
with the same code and message are equal, and the rows of a run whose status differs are not compared; a run
that outlived `--timeout` or whose trace this file could not read differs even when both sides did so, since
nothing of it was compared. The trace path, wall times and version strings are ignored; text (notes, warnings,
units, descriptions, mapping strings) is compared and listed apart, not counted as figures. Paths of the
revisions' roots are written as `<root>` in text and errors.

    python tools/compare_figures.py                       # all networks x all configs: base vs this checkout
    python tools/compare_figures.py --quick               # 3 networks x 4 configs
    python tools/compare_figures.py --base REV --head REV --networks alexnet,resnet18 --configs eyeriss-v1 \\
        --jobs 2 --keep /tmp/figures                      # keep both sides' rows as JSON

`--jobs N` runs N subprocesses at a time. All networks on all configs are 896 runs, about 5,600 s of runs: 47
minutes on two cores shared with other work (diannao-nlr, scalesim-12x14-ws, eyeriss-v1-ddr and eyeriss-v1 are
45 % of it); `--quick` is 48 runs, about 4 minutes. Exit code 0 when no figure row differs, 1 when some does, 2 on a
setup error (a revision that does not resolve, a worktree in the way, `import hwsim` resolving elsewhere); on
Ctrl-C or SIGTERM the runs under way are stopped, the runs both revisions finished are compared, and the exit
code is 130 or 143.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from revisions import SetupError, resolve_commit, revision_env, worktree

HEAD_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BASE = "dd22e2991d6aabfb5743cb384884395a27d94f41"  # the commit before the refactor

# Simulation input (WxH) per network whose simulation at the default input takes more than about 30 s on one
# of the shipped configs: about the largest input that keeps the slowest config near 30 s, or near a minute
# where the fully connected layers (AlexNet, VGG on scalesim-12x14-ws) or the array without register files
# (diannao-nlr) set a floor. Times are one run's (trace read included), two runs at a time on two cores shared
# with other work, so they vary by up to 2x with the load; the slowest configs are diannao-nlr and
# scalesim-12x14-ws, then eyeriss-v1-ddr (jedec DRAM). Estimates run at the default input.
SIMULATION_INPUTS: dict[str, tuple[str, str]] = {  # network: (input, why)
    "alexnet": ("163x163", "227x227 takes 106 s on diannao-nlr, 94 s on scalesim-12x14-ws; 163x163 60 s on both"),
    "vgg16": ("64x64", "224x224 takes 52 s on eyeriss-v1, 112x112 400 s on diannao-nlr; 64x64 110 s there"),
    "vgg19": ("64x64", "224x224 takes 60 s on eyeriss-v1; 64x64 175 s on diannao-nlr, 80 s on scalesim-12x14-ws"),
    "vgg_e5": ("112x112", "224x224 takes 72 s on scalesim-12x14-ws; 112x112 64 s on diannao-nlr, 7 s there"),
    "resnet18": ("160x160", "224x224 takes over 120 s on diannao-nlr; 160x160 52 s"),
    "resnet50": ("128x128", "224x224 takes 62 s on scalesim-12x14-ws; 128x128 22 s"),
    "densenet121": ("128x128", "224x224 takes 110 s on diannao-nlr; 128x128 41 s"),
    "tiny_yolov2": ("224x224", "416x416 takes 95 s on scalesim-12x14-ws; 224x224 32 s"),
    "mobilenetv2_ssdlite": ("160x160", "224x224 takes 94 s on shidiannao-os; 160x160 57 s"),
    "srgan": ("64x36", "1280x720 is 2 TMACs: hours; 64x36 takes 28 s on scalesim-12x14-ws"),
    "dmcnn_vd": ("64x36", "1280x720 is 615 GMACs: hours; 128x72 takes 350 s on diannao-nlr; 64x36 40 s"),
    "fsrcnn": ("160x90", "1280x720 is 11.5 GMACs; 192x108 takes 50 s on scalesim-12x14-is; 160x90 36 s"),
}

QUICK_NETWORKS = ("alexnet", "resnet18", "mobilenetv2")
QUICK_CONFIGS = ("eyeriss-v1", "eyeriss-v1-ddr", "scalesim-12x14-ws", "depthfirst-edge")

REL_TOL = 1e-12  # floats: energies are sums of floats
LISTED = 50  # differing figure rows printed
LISTED_TEXT = 20  # differing text rows printed
TOP_LEVEL_IGNORED = frozenset({"trace"})  # simulate's trace path
IGNORED_KEYS = frozenset({"version", "hwsim_version", "wall_s", "wall_seconds", "wall_time_s", "elapsed_s"})
OK = "ok"
TRACE_READ = "trace read "  # a status: this file's trace reader failed
TIMEOUT = "timeout after "  # a status: the run outlived --timeout

Scalar = int | float | bool | None
Rows = dict[str, Scalar]
Texts = dict[str, str]


class Terminated(BaseException):
    """SIGTERM, unwinding like Ctrl-C."""


# ----- revisions ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Revision:
    """One side of the comparison: where its hwsim lives and what it is."""

    side: str  # "base" or "head"
    label: str  # the commit, or "working tree"
    root: Path


_running: set[subprocess.Popen[str]] = set()  # the subprocesses under way, for stop_all
_running_lock = threading.Lock()


def run_python(root: Path, args: Sequence[str], cwd: Path, timeout: float | None = None,
               script: bool = False) -> subprocess.CompletedProcess[str]:
    """This interpreter on the revision at `root`. `-m` and `-c` run with -P, so the working directory is not
    on sys.path; a script (`script`) has its own directory there instead (tools/: no hwsim, and the sibling
    modules it imports)."""
    flags = [] if script else ["-P"]
    with subprocess.Popen([sys.executable, *flags, *args], cwd=cwd, env=revision_env(root), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as proc:
        with _running_lock:
            _running.add(proc)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
        finally:
            with _running_lock:
                _running.discard(proc)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def stop_all() -> None:
    """SIGTERM to every subprocess under way (hwsim removes its partial trace and exits 143)."""
    with _running_lock:
        for proc in _running:
            proc.terminate()


def check_import(rev: Revision, scratch: Path) -> str:
    """Where `import hwsim` resolves for the revision (`hwsim.__file__`); a SetupError unless it is the
    revision's own package. A package that is found there but fails to import is let through with a warning:
    its runs fail, and those failures are the comparison's rows."""
    expected = rev.root.resolve() / "hwsim" / "__init__.py"
    found = run_python(rev.root, ["-c", "import importlib.util; print(importlib.util.find_spec('hwsim').origin)"],
                       scratch)
    if found.returncode != 0 or Path(found.stdout.strip()).resolve() != expected:
        raise SetupError(f"{rev.side}: import hwsim resolves to "
                         f"{found.stdout.strip() or message(found.stderr)!r}, not {expected}")
    done = run_python(rev.root, ["-c", "import hwsim; print(hwsim.__file__)"], scratch)
    if done.returncode != 0:
        print(f"warning: {rev.side}: import hwsim fails: {message(done.stderr)}", file=sys.stderr)
        return found.stdout.strip()
    where = done.stdout.strip()
    if Path(where).resolve() != expected:
        raise SetupError(f"{rev.side}: hwsim.__file__ is {where}, not {expected}")
    return where


def listing(rev: Revision, args: Sequence[str], key: str, scratch: Path) -> list[str]:
    """Names a listing command of the revision prints (`zoo`, `config list`); empty if it fails."""
    done = run_python(rev.root, ["-m", "hwsim.cli.main", *args, "--json"], scratch)
    if done.returncode != 0:
        print(f"warning: {rev.side}: hwsim {' '.join(args)} failed: {message(done.stderr)}", file=sys.stderr)
        return []
    doc = json.loads(done.stdout)[key]
    return [n["name"] for n in doc] if isinstance(doc, list) else list(doc)


def union(*lists: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(name for names in lists for name in names))


def chosen(names: list[str], wanted: str | None, what: str) -> list[str]:
    if not wanted:
        return names
    picked = [n.strip() for n in wanted.split(",") if n.strip()]
    unknown = [n for n in picked if n not in names]
    if unknown:
        raise SetupError(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(names)})")
    return picked


# ----- runs ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """One command of one revision on one network and config."""

    rev: Revision
    command: str  # "estimate" or "simulate"
    network: str
    config: str
    scratch: Path  # working directory; a simulation's trace goes here
    timeout: float

    @property
    def key(self) -> str:
        return f"{self.command}/{self.network}/{self.config}"

    def argv(self) -> list[str]:
        argv = ["-m", "hwsim.cli.main", self.command, self.network, "--hw", self.config, "--json"]
        if self.command == "simulate":
            argv += ["--out", str(self.trace)]
            if self.network in SIMULATION_INPUTS:
                argv += ["--input", SIMULATION_INPUTS[self.network][0]]
        return argv

    @property
    def trace(self) -> Path:
        return self.scratch / f"{self.network}--{self.config}.h5"


@dataclass
class Outcome:
    """What a job gave: its status (OK or the failure), its figure and text rows, and its wall time."""

    job: Job
    status: str = OK
    rows: Rows = field(default_factory=dict)
    texts: Texts = field(default_factory=dict)
    seconds: float = 0.0


def first_line(stderr: str) -> str:
    return next((line.strip() for line in stderr.splitlines() if line.strip()), "")


def message(stderr: str) -> str:
    """The first line of stderr; for a traceback, its last line (the exception), which says more."""
    line = first_line(stderr)
    if line.startswith("Traceback"):
        line = next(l.strip() for l in reversed(stderr.splitlines()) if l.strip())
    return line


def scrub(text: str, rev: Revision) -> str:
    """Text without the paths that differ between revisions and runs."""
    return text.replace(str(rev.root), "<root>")


def failed(done: subprocess.CompletedProcess[str], rev: Revision, what: str = "") -> str:
    return f"{what}exit {done.returncode}: {scrub(message(done.stderr), rev)}"


def run_job(job: Job) -> Outcome:
    out = Outcome(job)
    start = time.monotonic()
    try:
        done = run_python(job.rev.root, job.argv(), job.scratch, job.timeout)
        if done.returncode != 0:
            out.status = failed(done, job.rev)
        else:
            flatten(json.loads(done.stdout), job.key, out.rows, out.texts, job.rev)
            if job.command == "simulate":
                read_trace_rows(job, out)
    except subprocess.TimeoutExpired:
        out.status = f"{TIMEOUT}{job.timeout:g} s"
    finally:
        job.trace.unlink(missing_ok=True)
    out.seconds = time.monotonic() - start
    return out


def read_trace_rows(job: Job, out: Outcome) -> None:
    """The trace's counts, read by the revision that wrote it (this file's --read-trace mode)."""
    done = run_python(job.rev.root, [str(Path(__file__).resolve()), "--read-trace", str(job.trace)], job.scratch,
                      job.timeout, script=True)
    if done.returncode != 0:
        out.status = failed(done, job.rev, TRACE_READ)
        return
    doc = json.loads(done.stdout)
    expected = job.rev.root.resolve() / "hwsim" / "__init__.py"
    if Path(doc["hwsim"]).resolve() != expected:
        out.status = f"{TRACE_READ}by {doc['hwsim']}, not {expected}"
        return
    for layer in doc["layers"]:
        flatten(layer["figures"], f"{job.key}/trace/{layer['name']}", out.rows, out.texts, job.rev)


# ----- the trace reader (runs in a subprocess, on the revision that wrote the trace) ----------------------------


def trace_document(path: str) -> dict[str, Any]:
    """Per layer of the trace: nonzero words per level/operand/access, nonzero PE work counts, energy per
    component, start and end cycles, passes; through the stable API `hwsim.metrics.derive(hwsim.trace.open())`."""
    import hwsim
    import hwsim.metrics
    import hwsim.trace
    from hwsim.vocab import ACCESS_NAMES, LEVEL_NAMES, OPERAND_NAMES

    with hwsim.trace.open(path) as trace:
        metrics = hwsim.metrics.derive(trace)
    layers = []
    for layer in metrics.layers:
        words = {f"{LEVEL_NAMES[lv]}/{OPERAND_NAMES[op]}/{ACCESS_NAMES[ac]}": int(layer.transfers[lv, op, ac])
                 for lv in range(len(LEVEL_NAMES)) for op in range(len(OPERAND_NAMES))
                 for ac in range(len(ACCESS_NAMES)) if layer.transfers[lv, op, ac]}
        compute = {name: int(value) for name, value in dataclasses.asdict(layer.compute).items() if value}
        layers.append({"name": layer.name, "figures": {
            **words, "compute": compute, "energy_pj": {k: float(v) for k, v in layer.energy_pj.items()},
            "start_cycle": int(layer.start_cycle), "end_cycle": int(layer.end_cycle), "passes": int(layer.passes)}})
    return {"hwsim": hwsim.__file__, "layers": layers}


# ----- rows ---------------------------------------------------------------------------------------------------


def list_keys(items: list[Any]) -> list[str]:
    """Path segments for a list's items: their names when all are records with distinct names, else indices."""
    names = [item.get("name") if isinstance(item, dict) else None for item in items]
    if items and all(isinstance(n, str) and n for n in names) and len(set(names)) == len(names):
        return [str(n) for n in names]
    return [str(i) for i in range(len(items))]


def flatten(node: Any, path: str, rows: Rows, texts: Texts, rev: Revision, top: bool = True) -> None:
    """JSON leaves as rows: numbers (and booleans, nulls) to `rows`, strings to `texts`."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in IGNORED_KEYS or (top and key in TOP_LEVEL_IGNORED):
                continue
            flatten(value, f"{path}/{key}", rows, texts, rev, False)
    elif isinstance(node, list):
        for key, value in zip(list_keys(node), node):
            flatten(value, f"{path}/{key}", rows, texts, rev, False)
    elif isinstance(node, str):
        texts[path] = scrub(node, rev)
    else:
        rows[path] = node


def same(a: Scalar | str, b: Scalar | str) -> bool:
    """Integers exactly, floats within REL_TOL, anything else (booleans, null, text) by equality."""
    numbers = (int, float)
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, numbers) or not isinstance(b, numbers):
        return type(a) is type(b) and a == b
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=0.0)


ABSENT = object()


def shown(value: object) -> str:
    if value is ABSENT:
        return "(absent)"
    return repr(value) if isinstance(value, float) else str(value)


@dataclass
class Comparison:
    """Rows compared and those that differ, figures and text apart."""

    rows: int = 0
    texts: int = 0
    differ: list[tuple[str, str, str]] = field(default_factory=list)
    text_differ: list[tuple[str, str, str]] = field(default_factory=list)
    skipped: int = 0  # rows of runs whose status differs


def compare_maps(a: dict[str, Any], b: dict[str, Any], out: list[tuple[str, str, str]]) -> int:
    """Appends the rows that differ; returns the rows compared."""
    keys = sorted(a.keys() | b.keys())
    for key in keys:
        x, y = a.get(key, ABSENT), b.get(key, ABSENT)
        if x is ABSENT or y is ABSENT or not same(x, y):
            out.append((key, shown(x), shown(y)))
    return len(keys)


def compare(base: dict[str, Outcome], head: dict[str, Outcome], finished_both: bool = False) -> Comparison:
    """Run by run; with `finished_both` (an interrupted comparison) only the runs both sides finished."""
    c = Comparison()
    for key in sorted(base.keys() & head.keys() if finished_both else base.keys() | head.keys()):
        b, h = base.get(key), head.get(key)
        b_status = b.status if b else "not run"
        h_status = h.status if h else "not run"
        c.rows += 1
        if b_status != h_status or b_status.startswith((TRACE_READ, TIMEOUT)):  # the latter: nothing compared
            c.differ.append((f"{key}/status", b_status, h_status))
            c.skipped += (len(b.rows) if b else 0) + (len(h.rows) if h else 0)
            continue
        if b is None or h is None or b_status != OK:
            continue
        c.rows += compare_maps(b.rows, h.rows, c.differ)
        c.texts += compare_maps(b.texts, h.texts, c.text_differ)
    return c


# ----- main ---------------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--base", default=DEFAULT_BASE, metavar="REV",
                   help=f"base revision, run from a worktree (default {DEFAULT_BASE[:12]})")
    p.add_argument("--head", default=None, metavar="REV",
                   help="head revision, run from a worktree (default: the checkout of this file, as it is)")
    p.add_argument("--networks", default=None, metavar="A,B", help="zoo networks (default all)")
    p.add_argument("--configs", default=None, metavar="X,Y", help="shipped configs (default all)")
    p.add_argument("--quick", action="store_true",
                   help=f"{', '.join(QUICK_NETWORKS)} on {', '.join(QUICK_CONFIGS)} (unless --networks or "
                        "--configs say otherwise)")
    p.add_argument("--jobs", type=int, default=2, metavar="N", help="runs at a time (default 2)")
    p.add_argument("--timeout", type=float, default=3600.0, metavar="SECONDS",
                   help="a run taking longer is a failure (default 3600)")
    p.add_argument("--keep", type=Path, default=None, metavar="DIR",
                   help="write both sides' rows to DIR/base.json and DIR/head.json")
    p.add_argument("--read-trace", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error("--jobs must be at least 1")
    return args


def revisions(args: argparse.Namespace) -> tuple[Revision, Revision]:
    base_commit = resolve_commit(args.base)
    base = Revision("base", base_commit[:12], worktree("base", base_commit))
    if args.head is None:
        return base, Revision("head", "working tree", HEAD_ROOT)
    head_commit = resolve_commit(args.head)
    return base, Revision("head", head_commit[:12], worktree("head", head_commit))


def plan(revs: tuple[Revision, Revision], networks: list[str], configs: list[str], scratch: Path,
         timeout: float) -> list[Job]:
    """Simulations first (the long ones), base and head side by side."""
    jobs = []
    for command in ("simulate", "estimate"):
        for network in networks:
            for config in configs:
                for rev in revs:
                    jobs.append(Job(rev, command, network, config, scratch / rev.side, timeout))
    return jobs


def run_all(jobs: list[Job], workers: int) -> tuple[dict[str, dict[str, Outcome]], int]:
    """Every job, `workers` subprocesses at a time; outcomes by side and run key, progress on stderr. On Ctrl-C
    or SIGTERM no run starts, those under way are stopped, and the outcomes so far come back with the exit code
    (130 or 143; else 0)."""
    results: dict[str, dict[str, Outcome]] = {"base": {}, "head": {}}
    interrupted = 0
    pool = ThreadPoolExecutor(max_workers=workers)  # threads that wait on the subprocesses doing the work
    try:
        futures = [pool.submit(run_job, job) for job in jobs]
        for done, future in enumerate(as_completed(futures), 1):
            o = future.result()
            results[o.job.rev.side][o.job.key] = o
            print(f"[{done:>{len(str(len(jobs)))}}/{len(jobs)}] {o.job.rev.side:4} {o.job.key:<50} "
                  f"{o.seconds:7.1f} s  {o.status}", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        interrupted = 130
    except Terminated:
        interrupted = 143
    finally:
        if interrupted:
            pool.shutdown(wait=False, cancel_futures=True)
            stop_all()
        pool.shutdown(wait=True, cancel_futures=True)
    return results, interrupted


def keep(directory: Path, rev: Revision, outcomes: dict[str, Outcome]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    doc = {"side": rev.side, "revision": rev.label, "root": str(rev.root),
           "runs": {k: {"status": o.status, "seconds": round(o.seconds, 3)} for k, o in sorted(outcomes.items())},
           "figures": dict(sorted(r for o in outcomes.values() for r in o.rows.items())),
           "texts": dict(sorted(r for o in outcomes.values() for r in o.texts.items()))}
    (directory / f"{rev.side}.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def print_rows(title: str, rows: list[tuple[str, str, str]], limit: int) -> None:
    print(f"{title}: {len(rows)}" + (f" (first {limit} listed)" if len(rows) > limit else ""))
    for path, b, h in rows[:limit]:
        print(f"  {path}\n      base {b}\n      head {h}")


def per_run(rows: list[tuple[str, str, str]]) -> dict[str, int]:
    """Rows by the run (command/network/config) they belong to."""
    runs: dict[str, int] = {}
    for path, _, _ in rows:
        run = "/".join(path.split("/")[:3])
        runs[run] = runs.get(run, 0) + 1
    return runs


def report(revs: tuple[Revision, Revision], results: dict[str, dict[str, Outcome]], c: Comparison,
           cpu_s: float, wall_s: float) -> None:
    print()
    for rev in revs:
        outcomes = results[rev.side]
        failures = sorted((k, o.status) for k, o in outcomes.items() if o.status != OK)
        print(f"{rev.side}: {len(outcomes)} runs, {len(failures)} failed")
        for key, status in failures:
            print(f"  {key}: {status}")
    slowest = sorted((o for side in results.values() for o in side.values()), key=lambda o: -o.seconds)[:5]
    print("slowest runs: " + ", ".join(f"{o.job.rev.side} {o.job.key} {o.seconds:.0f} s" for o in slowest))
    print(f"figure rows compared: {c.rows} ({c.skipped} rows of runs whose status differs not compared); "
          f"text rows compared: {c.texts}")
    print_rows("text rows that differ (not counted as figures)", c.text_differ, LISTED_TEXT)
    print_rows("figure rows that differ", c.differ, LISTED)
    if c.differ:
        print("figure rows that differ per run: " + ", ".join(f"{run} {n}" for run, n in per_run(c.differ).items()))
    print(f"CPU {cpu_s:.1f} s (user+sys of the child processes), wall {wall_s:.1f} s")


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def setup(args: argparse.Namespace, scratch: Path) -> tuple[tuple[Revision, Revision], list[str], list[str]]:
    """The two revisions (checked), and the networks and configs to run."""
    revs = revisions(args)
    for rev in revs:
        (scratch / rev.side).mkdir()
        print(f"{rev.side}: {rev.label} at {rev.root}, hwsim from {check_import(rev, scratch)}")
    networks = union(*(listing(rev, ["zoo"], "networks", scratch) for rev in revs))
    configs = union(*(listing(rev, ["config", "list"], "configs", scratch) for rev in revs))
    if not networks or not configs:
        raise SetupError("neither revision lists its zoo networks and shipped configs")
    networks = chosen(networks, args.networks or (",".join(QUICK_NETWORKS) if args.quick else None), "networks")
    configs = chosen(configs, args.configs or (",".join(QUICK_CONFIGS) if args.quick else None), "configs")
    return revs, networks, configs


def terminated(_signum: int, _frame: object) -> None:
    raise Terminated  # unwinds like Ctrl-C: subprocesses stopped, scratch directory removed


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.read_trace:
        json.dump(trace_document(args.read_trace), sys.stdout)
        return 0
    signal.signal(signal.SIGTERM, terminated)
    wall0, cpu0 = time.monotonic(), cpu_seconds()
    scratch = Path(tempfile.mkdtemp(prefix="compare-figures-"))
    try:
        revs, networks, configs = setup(args, scratch)
        print(f"{len(networks)} networks x {len(configs)} configs, estimate and simulate, on both revisions; "
              f"{args.jobs} runs at a time")
        print(f"networks: {', '.join(networks)}\nconfigs: {', '.join(configs)}")
        reduced = [n for n in networks if n in SIMULATION_INPUTS]
        print("estimate runs at each network's default input; simulate at it too, except with a reduced input for "
              + (f"{len(reduced)} networks:" if reduced else "none of these networks"))
        for n in reduced:
            print(f"  {n:<20} {SIMULATION_INPUTS[n][0]:>8}  ({SIMULATION_INPUTS[n][1]})")
        sys.stdout.flush()
        jobs = plan(revs, networks, configs, scratch, args.timeout)
        results, interrupted = run_all(jobs, args.jobs)
    except SetupError as exc:
        print(f"compare_figures: {exc}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if args.keep:
        for rev in revs:
            keep(args.keep, rev, results[rev.side])
    c = compare(results["base"], results["head"], bool(interrupted))
    report(revs, results, c, cpu_seconds() - cpu0, time.monotonic() - wall0)
    if interrupted:
        print(f"interrupted after {sum(map(len, results.values()))} of {len(jobs)} runs: compared the runs both "
              "revisions finished")
    print(f"{len(c.differ)} figure rows differ")
    return interrupted or (0 if not c.differ else 1)


if __name__ == "__main__":
    sys.exit(main())
