"""The figures the package can regenerate: name -> figure module (imported on demand)."""

from __future__ import annotations

import importlib
from types import ModuleType

from theory import ParameterError

__all__ = ["FIGURES", "load_figure"]

#: figure name -> module providing NAME, DESCRIPTION, USES_SWEEP, compute, plot, write (cheap
#: ones first). ``USES_SWEEP`` declares whether ``compute``/``write`` take the sweep keywords
#: ``jobs``, ``scheduler``, ``cache`` (figures that simulate run through
#: :func:`simulate.execution.sweep.run_sweep`; analytic ones do not).
FIGURES: dict[str, str] = {
    "schedule": "paper_figures.schedule",
    "complexity": "paper_figures.complexity",
    "plan": "paper_figures.plan",
    "modes": "paper_figures.modes",
    "theory-vs-sim": "paper_figures.theory_vs_sim",
    "asymptotic": "paper_figures.asymptotic",
    "training": "paper_figures.training",
    "speedup": "paper_figures.speedup",
    "tiki-taka": "paper_figures.tiki_taka",
}


def load_figure(name: str) -> ModuleType:
    """Import the module of figure ``name``; an unknown name lists the valid ones."""
    if name not in FIGURES:
        raise ParameterError(f"figure={name!r} is unknown; valid: {', '.join(FIGURES)}")
    return importlib.import_module(FIGURES[name])
