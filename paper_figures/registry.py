"""The figures the package can regenerate: name -> figure module (imported on demand)."""

from __future__ import annotations

import importlib
import inspect
from types import ModuleType

from theory.errors import ParameterError

__all__ = ["FIGURES", "accepts_sweep_options", "load_figure"]

#: figure name -> module providing NAME, DESCRIPTION, compute, plot, write (cheap ones first)
FIGURES: dict[str, str] = {
    "schedule": "paper_figures.schedule",
    "complexity": "paper_figures.complexity",
    "plan": "paper_figures.plan",
    "theory-vs-sim": "paper_figures.theory_vs_sim",
    "asymptotic": "paper_figures.asymptotic",
    "training": "paper_figures.training",
    "speedup": "paper_figures.speedup",
}


def accepts_sweep_options(module: ModuleType) -> bool:
    """Whether the figure's ``write`` takes the sweep keywords ``jobs``, ``scheduler``, ``cache``.

    Figures that simulate run their points through :func:`simulate.sweep.run_sweep` and accept
    them; purely analytic figures (``schedule``, ``plan``) do not.
    """
    parameters = inspect.signature(module.write).parameters
    return all(name in parameters for name in ("jobs", "scheduler", "cache")) or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )


def load_figure(name: str) -> ModuleType:
    """Import the module of figure ``name``; an unknown name lists the valid ones."""
    if name not in FIGURES:
        raise ParameterError(f"figure={name!r} is unknown; valid: {', '.join(FIGURES)}")
    return importlib.import_module(FIGURES[name])
