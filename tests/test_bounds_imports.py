"""The bounds package's house rules, read from its source: import direction, no circles, no
private names across modules, no lambdify, argparse only in bounds/commands/."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "bounds"
MODULES = sorted(PACKAGE.rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, tuple[str, ...]]]:
    """``(absolute module, imported names)`` of every import in ``path``, wherever it is."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            out.append((base, tuple(alias.name for alias in node.names)))
    return out


def _graph() -> dict[str, set[str]]:
    names = {_module_name(p) for p in MODULES}
    graph = {}
    for path in MODULES:
        targets = set()
        for module, imported in _imports(path):
            targets |= {module} & names
            targets |= {f"{module}.{n}" for n in imported} & names  # from pkg import module
        graph[_module_name(path)] = targets - {_module_name(path)}
    return graph


def test_bounds_imports_only_theory_and_itself():
    for path in MODULES:
        for module, _ in _imports(path):
            top = module.split(".")[0]
            assert top not in ("simulate", "paper_figures"), f"{path}: imports {module}"


def test_no_import_circle_inside_bounds():
    graph = _graph()
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if nxt.startswith(node + "."):  # a package importing its own submodule
                continue
            assert state.get(nxt) != 1, "import circle: " + " -> ".join([*stack, node, nxt])
            if nxt not in state:
                visit(nxt, [*stack, node])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])


def test_relaxation_never_imports_the_planner():
    planner = {"bounds.planning.planner", "bounds.planning.search", "bounds.planning.tiki_taka"}
    assert not planner & _graph()["bounds.planning.relaxation"]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_name_crosses_a_module(path):
    for module, imported in _imports(path):
        if module.split(".")[0] in ("bounds", "theory"):
            private = [n for n in imported if n.startswith("_") and n != "__version__"]
            assert not private, f"{path}: imports {private} from {module}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_lambdify_and_argparse_only_in_commands(path):
    text = path.read_text(encoding="utf-8")
    assert "lambdify" not in text
    if "commands" not in path.relative_to(PACKAGE).parts:
        assert "argparse" not in {m for m, _ in _imports(path)}, f"{path} imports argparse"
