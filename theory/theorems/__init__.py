r"""The theorem registry: every convergence bound of the package, with its provenance and proof.

Each :class:`Bound` states an upper bound on the average squared gradient norm after ``K`` updates,

.. math::

    \frac{1}{K}\sum_{k=0}^{K-1}\mathbb{E}\,\lVert\nabla f(W_k)\rVert^2 \le
    \mathrm{expr}(K, \alpha) \qquad \text{for } \alpha \le 1/\mathrm{inv\_step\_cap},

and its *rate form*: with the best admissible constant step
:math:`\alpha = \min(\alpha_{\max}, \alpha_{\mathrm{opt}}(K))` (``best_step``),

.. math::

    \mathrm{expr} \le \frac{a}{\sqrt{K}} + \frac{c}{K} + \mathrm{floor},

with ``a = rate_a``, ``c = rate_c`` and ``floor`` free of ``K`` and ``alpha``;
:mod:`theory.complexity` inverts it exactly. Provenance labels (theory-spec): ``paper``,
``companion`` (the authors' NeurIPS 2025 analog-SGD theorem), ``derived`` (proved in
``docs/theory.md``; ``proof`` names the heading) and ``literature`` (published orders, unknown
constants set to 1).

Units: ``Delta`` in loss units, ``L`` in loss per squared weight unit, ``sigma2`` and the bound in
squared gradient units (loss/weight)^2, ``alpha`` in weight^2/loss, ``K`` counts updates.
All symbols come from :mod:`theory.symbols`; their names are the keyword names of

The registry is built on first use (:func:`registry`, cached; :data:`REGISTRY` is the same
dictionary), not at import. The package's rooms:

- :mod:`theory.theorems.bound`: :class:`Bound`, one entry, and its LaTeX;
- :mod:`theory.theorems.formulas`: the formulas without a pipeline delay (Theorems 1, 2, 2M (a),
  (b), Corollaries 3, 3PS, TT0, the companion and literature rows) and Theorem LF's
  substitution of the worst-case floor by the iterate average (``local_floor_parts``, the
  ``*_local`` rows, ``Bound.floor_kind = "iterate-average"``);
- :mod:`theory.theorems.biased`: the biased-gradient formulas (Propositions IO and IO');
- :mod:`theory.theorems.delayed`: the asynchronous pipeline's (Theorems 4', 4'B, 4'PS, 2M (c),
  Corollary TT0-AP) and their constants (:func:`ap_kappa`, :func:`ap_inv_step_cap`, ...);
- :mod:`theory.theorems.entries`: the table of rows, :func:`registry`, :func:`get_bound`,
  :func:`bounds_for`, :func:`bound_for`, :func:`names` (the rows' names, no entry built).
"""

from __future__ import annotations

from ..vocabulary import (
    ALGORITHMS,
    FLOOR_KINDS,
    GRADIENT_SIGNALS,
    MIXED_ENTRIES,
    PROVENANCES,
    WRITE_SEMANTICS,
)
from .bound import LATEX_NAMES, LHS_LATEX, Bound
from .delayed import (
    ap_b_floor_factor,
    ap_general_parts,
    ap_inv_step_cap,
    ap_kappa,
    ap_kappa_3,
    ap_root,
)
from .entries import bound_for, bounds_for, get_bound, names, registry

__all__ = [
    "ALGORITHMS", "Bound", "FLOOR_KINDS", "GRADIENT_SIGNALS", "LATEX_NAMES", "LHS_LATEX",
    "MIXED_ENTRIES", "PROVENANCES", "REGISTRY", "WRITE_SEMANTICS",
    "ap_b_floor_factor", "ap_general_parts", "ap_inv_step_cap", "ap_kappa", "ap_kappa_3", "ap_root",
    "bound_for", "bounds_for", "get_bound", "names", "registry",
]


def __getattr__(name: str):
    """``REGISTRY``: every bound by name (:func:`registry`, built on first access)."""
    if name == "REGISTRY":
        return registry()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), "REGISTRY"})
