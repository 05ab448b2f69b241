"""The figures the package can regenerate: name -> figure module (imported on demand)."""

from __future__ import annotations

import importlib
from types import ModuleType

from theory import ParameterError

__all__ = ["FIGURES", "KNOWN", "ON_DEMAND", "load_figure"]

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
#: figures written only when named (not by ``all``): their ``--quick`` takes longer than the
#: whole ``all --quick``
ON_DEMAND: dict[str, str] = {
    "sp-ap-writes": "paper_figures.sp_ap_writes",
}
#: every figure that can be named: :data:`FIGURES` then :data:`ON_DEMAND`
KNOWN: dict[str, str] = {**FIGURES, **ON_DEMAND}


def load_figure(name: str) -> ModuleType:
    """Import the module of figure ``name`` (:data:`FIGURES` or :data:`ON_DEMAND`); an unknown
    name lists the valid ones."""
    if name not in KNOWN:
        raise ParameterError(f"figure={name!r} is unknown; valid: {', '.join(KNOWN)}")
    return importlib.import_module(KNOWN[name])
