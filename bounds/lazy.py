"""Lazy re-exports for a package ``__init__`` (PEP 562, as Scientific Python's SPEC 1).

A name of the curated API is imported on first use, so ``import bounds`` (which every
``bounds`` module triggers, the command modules too) costs only what is used:
``aimc-pipeline plan --help`` builds its parser without importing the planner's search or cvxpy.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, tuple[str, ...]]
) -> tuple[list[str], Callable[[str], object], Callable[[], list[str]]]:
    """The ``__all__``, ``__getattr__`` and ``__dir__`` of a package that re-exports lazily.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : mapping of str to tuple of str
        Module (relative to ``package``, e.g. ``".params"``, or absolute) -> the names it gives.

    Returns
    -------
    tuple
        ``(__all__, __getattr__, __dir__)``: the sorted names, the module-level ``__getattr__``
        that imports a name's module on first use (and keeps the name in the package), and
        ``__dir__``.

    Raises
    ------
    ValueError
        A name is given by two modules.
    """
    where = {name: module for module, names in exports.items() for name in names}
    if len(where) != sum(len(names) for names in exports.values()):
        twice = sorted(n for n in where if sum(n in v for v in exports.values()) > 1)
        raise ValueError(f"{package}: names exported by two modules: {twice}")

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return sorted(where), __getattr__, __dir__
