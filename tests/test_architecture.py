"""The package's shape, read from its source: no import cycle between modules (imports inside functions and for
type checking count), packages importing only those below them (DESIGN: the flow's stages), the analytic models
reading mappings through the plan formats alone, and one `Registry`."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "hwsim"

# What each package may import (besides itself): the stages below it in the flow. The bottom modules (errors,
# vocab, registry, files, the package's __init__) import nothing of hwsim but one another as listed.
ALLOWED = {
    "errors": set(),
    "vocab": set(),
    "rows": set(),  # whole-record copies of structured arrays
    "registry": {"errors"},
    "files": {"errors"},
    "lazy": set(),  # packages that import their modules on first use
    "hwsim": set(),  # hwsim/__init__.py: the version
    "workload": {"errors", "vocab", "files"},
    "hardware": {"errors", "vocab", "registry", "files", "hwsim", "lazy"},
    "trace": {"errors", "vocab", "files", "rows"},
    "sparsity": {"errors", "vocab", "registry", "files", "workload", "hardware"},
    "mapping": {"errors", "vocab", "rows", "registry", "files", "workload", "hardware", "sparsity"},
    "analytic": {"errors", "vocab", "lazy", "workload", "hardware", "sparsity", "mapping"},
    "search": {"errors", "vocab", "registry", "files", "workload", "hardware", "sparsity", "mapping", "analytic"},
    "sim": {"errors", "vocab", "rows", "registry", "hwsim", "lazy", "workload", "hardware", "sparsity", "mapping",
            "trace"},
    "metrics": {"errors", "vocab", "hardware", "trace"},
    "check": {"errors", "vocab", "hardware", "mapping", "analytic", "metrics", "trace"},
}
# The analytic models read a mapping only as data: these modules hold the plan formats.
PLAN_FORMATS = {"hwsim.mapping.nest.format", "hwsim.mapping.plans", "hwsim.mapping.depth_first.plan",
                "hwsim.mapping.phased"}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """Every hwsim module `path` imports, anywhere in the file (a name imported from a package that is a module
    of its own counts as that module)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "hwsim":
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                yield child if child in modules else node.module
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.split(".")[0] == "hwsim")


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: {m for m in _imports(path, modules) if m != name} for name, path in modules.items()}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "hwsim"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next((c for c in children if c in graph), None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_itself_round_a_cycle() -> None:
    assert _cycles(_graph()) == []


def test_packages_import_only_what_lies_below_them() -> None:
    wrong = sorted(f"{module} imports {target}" for module, targets in _graph().items() for target in targets
                   if _package(module) in ALLOWED and _package(target) != _package(module)
                   and _package(target) not in ALLOWED[_package(module)])
    assert wrong == []


def test_the_analytic_models_read_mappings_as_data_and_metrics_never_touch_the_simulator() -> None:
    graph = _graph()
    mapper_internals = sorted(f"{m} imports {t}" for m, ts in graph.items() for t in ts
                              if _package(m) == "analytic" and _package(t) == "mapping" and t not in PLAN_FORMATS)
    assert mapper_internals == []
    assert not any(_package(t) == "sim" for m, ts in graph.items() if _package(m) in ("metrics", "search")
                   for t in ts)


def test_one_registry() -> None:
    defining = [path for path in PACKAGE.rglob("*.py") if "class Registry" in path.read_text(encoding="utf-8")]
    assert defining == [PACKAGE / "registry.py"]
    importers = sorted(str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
                       for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                       if isinstance(node, ast.ImportFrom) and any(a.name == "Registry" for a in node.names)
                       and node.module != "hwsim.registry")
    assert importers == []


@pytest.mark.parametrize("package", ["hwsim.flows", "hwsim.hardware", "hwsim.analytic", "hwsim.sim", "hwsim.sim.dram"])
def test_a_lazy_package_exports_each_name_from_its_module_on_first_use(package: str) -> None:
    """A package that imports its modules on first use (`hwsim.lazy`) names every public name in its homes; each
    resolves to the object its module defines, and `__all__` lists exactly those names (and the package's own)."""
    import importlib

    lazy_package = importlib.import_module(package)
    homes = {name: module for module, names in lazy_package._HOMES.items() for name in names}
    own = {name for name in lazy_package.__all__ if name in vars(lazy_package) and name not in homes}
    assert sorted(homes) == sorted(set(lazy_package.__all__) - own)
    for name, module in homes.items():
        assert getattr(lazy_package, name) is getattr(importlib.import_module(f"{package}.{module}"), name)


def test_the_estimate_flow_does_not_import_the_other_flows_or_the_trace() -> None:
    """`hwsim estimate` runs `hwsim.flows.estimate`: importing it, in a fresh interpreter, loads neither the
    simulate, check and depth-first flows nor the trace package and h5py (the package's `__init__` imports
    nothing eagerly)."""
    import subprocess
    import sys

    code = ("import sys, hwsim.flows.estimate; print(' '.join(m for m in ('hwsim.flows.simulate', "
            "'hwsim.flows.check', 'hwsim.flows.depth_first', 'hwsim.trace', 'h5py') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert loaded == []


def test_estimating_a_network_loads_neither_the_simulator_nor_the_search() -> None:
    """A closed-form estimate on a shipped config checks the config's model names through the registries without
    importing the simulator (simpy, its components and DRAM models), the mapping search, the step generators or the
    other mapper families, NeuPart, the faithful CNNergy model or rich (a command's output): a registry imports
    its homes only until one registers the name asked for,
    the built-in NoC, link and DRAM kinds live in `hwsim.hardware`, and a mapper family is imported when one of
    its plans is first checked or scheduled."""
    import subprocess
    import sys

    code = ("import sys; from hwsim.flows.estimate import estimate_mapping; "
            "estimate_mapping('alexnet', 'eyeriss-v1'); estimate_mapping('alexnet', 'eyeriss-v1-ddr'); "
            "print(' '.join(m for m in ('simpy', 'hwsim.sim.component', 'hwsim.sim.dram.simple', "
            "'hwsim.sim.dram.jedec', 'hwsim.sim.noc.buses', 'hwsim.search.network', 'hwsim.search.layer', "
            "'hwsim.mapping.nest.steps', 'hwsim.mapping.depth_first', 'hwsim.mapping.phases', "
            "'hwsim.mapping.planned', 'hwsim.analytic.neupart', 'hwsim.analytic.cnnergy', 'rich') "
            "if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert loaded == []
