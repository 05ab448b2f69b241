"""The import graph of the package: no circles, and every import in the layered direction.

Layers (docs/architecture.md): ``theory`` at the bottom; ``bounds`` and ``simulate`` each on
``theory`` only (``simulate`` never imports ``bounds`` and the reverse); ``paper_figures`` on top.
Every ``import`` statement counts, also one hidden inside a function body (that is how circles
were hidden before), and the graph is between modules, so a package ``__init__`` that imports its
submodules is part of it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("theory", "bounds", "simulate", "paper_figures")
#: package -> the packages it may import (besides itself)
ALLOWED = {
    "theory": set(),
    "bounds": {"theory"},
    "simulate": {"theory"},
    "paper_figures": {"theory", "bounds", "simulate"},
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {
        _module_name(path): path
        for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
    }


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the package modules it imports (``from pkg import sub`` counts as ``pkg.sub``)."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, is_package, node)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.add(sub if sub in modules else base)
        graph[name] = {t for t in targets if t.split(".")[0] in PACKAGES and t != name}
    return graph


GRAPH = _imports(_modules())


def test_the_graph_was_read():
    expected = {"theory.compiled", "bounds.planning.planner", "simulate.engine",
                "paper_figures.cli"}
    assert expected <= set(GRAPH)
    assert "theory.errors" in GRAPH["theory.complexity"]


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_follow_the_layers(module):
    package = module.split(".")[0]
    upward = sorted(
        t for t in GRAPH[module]
        if t.split(".")[0] != package and t.split(".")[0] not in ALLOWED[package]
    )
    assert not upward, f"{module} imports against the layer direction: {upward}"


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_circles():
    cycle = _find_cycle(GRAPH)
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_a_circle():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_private_name_crosses_a_module_boundary():
    private = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level or (
                    node.module or "").split(".")[0] in PACKAGES):
                private += [f"{name}: {a.name}" for a in node.names
                            if a.name.startswith("_") and not a.name.startswith("__")]
    assert not private, f"private names imported across modules: {private}"


def test_no_lambdify_outside_theory():
    offenders = [
        name for name, path in _modules().items()
        if not name.startswith("theory") and "lambdify" in path.read_text()
    ]
    assert not offenders, f"sympy is compiled outside theory.compiled: {offenders}"


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if not m.endswith("__main__")))
def test_every_module_declares_a_sorted_all_of_names_it_has(module):
    import importlib

    loaded = importlib.import_module(module)
    names = getattr(loaded, "__all__", None)
    assert names is not None, f"{module} has no __all__"
    assert list(names) == sorted(names), f"{module}.__all__ is not sorted"
    assert not [n for n in names if not hasattr(loaded, n)], f"{module}.__all__ names a ghost"


#: the rooms of ``simulate`` (and its top modules) -> the others each may import
#: (docs/architecture.md): the device knows no run record, no problem and no schedule; the
#: execution room knows nothing about training
SIMULATE_ROOMS = {
    "simulate.execution": set(),
    "simulate.device": set(),
    "simulate.rng": set(),
    "simulate.trace": set(),
    "simulate.pipeline": {"simulate.rng"},
    "simulate.problems": {"simulate.device", "simulate.pipeline", "simulate.rng", "simulate.trace"},
    "simulate.specs": {"simulate.device", "simulate.problems"},
    "simulate.config": {"simulate.device", "simulate.problems", "simulate.specs"},
    "simulate.engine": {"simulate.config", "simulate.device", "simulate.problems",
                        "simulate.trace"},
    "simulate.verification": {"simulate.config", "simulate.device", "simulate.engine",
                              "simulate.execution", "simulate.pipeline", "simulate.problems",
                              "simulate.rng", "simulate.trace"},
}


def _room(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _against_the_rooms(module: str, graph: dict[str, set[str]]) -> list[str]:
    """The imports of ``module`` into a ``simulate`` room it may not use."""
    room = _room(module)
    return sorted(
        t for t in graph[module]
        if t.startswith("simulate.") and _room(t) != room and _room(t) not in SIMULATE_ROOMS[room]
    )


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if _room(m) in SIMULATE_ROOMS))
def test_simulate_rooms_import_only_the_rooms_below(module):
    against = _against_the_rooms(module, GRAPH)
    assert not against, f"{module} ({_room(module)}) imports {against}"


def test_the_room_rule_catches_an_upward_import():
    graph = {"simulate.device.x": {"simulate.config", "simulate.device.y", "theory.errors"},
             "simulate.problems.z": {"simulate.verification.checks", "simulate.device"}}
    assert _against_the_rooms("simulate.device.x", graph) == ["simulate.config"]
    assert _against_the_rooms("simulate.problems.z", graph) == ["simulate.verification.checks"]


def test_every_simulate_module_is_in_a_room():
    top = {_room(m) for m in GRAPH if m.startswith("simulate.")}
    assert top - set(SIMULATE_ROOMS) == {"simulate.__main__", "simulate.commands"}


def test_simulate_has_few_top_modules_and_its_rooms():
    top = sorted(p.name for p in (ROOT / "simulate").glob("*.py"))
    rooms = sorted(p.name for p in (ROOT / "simulate").iterdir()
                   if (p / "__init__.py").exists() and p.name != "commands")
    assert len(top) <= 10, top
    assert len(rooms) >= 4, rooms


#: the packages whose ``__init__`` re-exports lazily (:func:`theory.lazy.attach`)
LAZY_PACKAGES = sorted(name for name, path in _modules().items()
                       if path.name == "__init__.py" and "attach(__name__" in path.read_text())


def test_the_lazy_packages_were_found():
    assert {"theory", "bounds", "simulate", "simulate.verification"} <= set(LAZY_PACKAGES)


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_no_lazy_name_is_also_a_submodule(package):
    """A lazily re-exported name must not be a submodule's name too: once anything imports that
    submodule, Python binds the module to the package attribute and the name's lazy lookup never
    runs (``from simulate.verification import calibrate`` would give the module)."""
    import importlib
    import pkgutil

    loaded = importlib.import_module(package)
    submodules = {info.name for info in pkgutil.iter_modules(loaded.__path__)}
    assert not set(loaded.__all__) & submodules
