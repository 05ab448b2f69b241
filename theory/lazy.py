"""Lazy re-exports for a package ``__init__`` (PEP 562; Scientific Python SPEC 1).

A package lists which submodule holds each name it re-exports; a name is imported on first
access, so that importing the package costs nothing and a command's ``--help`` does not load
sympy. This is the shape of ``lazy_loader.attach``:

>>> __getattr__, __dir__, __all__ = attach("theory", {".vocabulary": ("MODES",)})
>>> __getattr__("MODES")
('none', 'sync', 'async')
>>> __all__
['MODES']
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping

__all__ = ["attach"]


def attach(
    package: str, names: Mapping[str, Iterable[str]], submodules: Iterable[str] = (),
) -> tuple[Callable[[str], object], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` of a package whose names are imported on first use.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    names : mapping of str to iterable of str
        Module (relative to ``package``, e.g. ``".errors"``, or absolute) -> the names it gives.
    submodules : iterable of str
        Submodules reachable as attributes (``package.sub``) before anything imported them.

    Returns
    -------
    tuple
        The module-level ``__getattr__`` and ``__dir__`` functions and the sorted ``__all__``
        (the names, not the submodules).

    Raises
    ------
    ValueError
        If two submodules give the same name.
    """
    where: dict[str, str] = {}
    for module, given in names.items():
        for name in given:
            if name in where:
                raise ValueError(f"{package}: {name!r} is given by {where[name]} and {module}")
            where[name] = module
    subs = frozenset(submodules)

    def __getattr__(name: str):
        if name in where:  # imported once, then kept in the package
            value = getattr(importlib.import_module(where[name], package), name)
            setattr(sys.modules[package], name, value)
            return value
        if name in subs:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*where, *subs})

    return __getattr__, __dir__, sorted(where)
