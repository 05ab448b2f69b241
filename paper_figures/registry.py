"""The figures the package can regenerate: name -> figure module (imported on demand)."""

from __future__ import annotations

import importlib
from types import ModuleType

from theory.errors import ParameterError

__all__ = ["FIGURES", "load_figure"]

#: figure name -> module providing NAME, DESCRIPTION, compute, plot, write
FIGURES: dict[str, str] = {
    "schedule": "paper_figures.schedule",
}


def load_figure(name: str) -> ModuleType:
    """Import the module of figure ``name``; an unknown name lists the valid ones."""
    if name not in FIGURES:
        raise ParameterError(f"figure={name!r} is unknown; valid: {', '.join(FIGURES)}")
    return importlib.import_module(FIGURES[name])
