"""No long modules and no long functions in the four packages (issue 23's size rule).

A module of more than ``MAX_MODULE_LINES`` lines or a function (or method) spanning more than
``MAX_FUNCTION_LINES`` lines (its AST span, docstring included) is a room doing two jobs or a
routine that wants a state object; the limits are a budget, not a style preference.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("theory", "bounds", "simulate", "paper_figures")
MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 120
SOURCES = sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def long_functions(source: str, limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, int, int]]:
    """``(name, first line, lines)`` of every function in ``source`` longer than ``limit``."""
    return [
        (node.name, node.lineno, node.end_lineno - node.lineno + 1)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno + 1 > limit
    ]


def test_the_sources_were_found():
    assert len(SOURCES) > 50


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_is_too_long(path):
    lines = path.read_text().count("\n")
    assert lines <= MAX_MODULE_LINES, f"{path.relative_to(ROOT)} has {lines} lines"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_function_is_too_long(path):
    found = long_functions(path.read_text())
    assert not found, f"{path.relative_to(ROOT)}: {found}"


def test_a_long_function_is_found():
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    assert long_functions(f"def f():\n{body}") == [("f", 1, MAX_FUNCTION_LINES + 1)]
    assert long_functions("def g():\n    return 1\n") == []
