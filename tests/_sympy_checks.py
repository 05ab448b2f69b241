"""sympy verdicts the symbolic tests share (imported by the test modules, not collected)."""

from __future__ import annotations

import sympy as sp


def is_zero(expr) -> bool:
    """Whether ``expr`` simplifies to 0."""
    return sp.simplify(sp.sympify(expr)) == 0


def nonneg(expr) -> bool | None:
    """sympy's verdict on ``expr >= 0`` after putting it over one denominator (then simplifying)."""
    verdict = sp.factor(sp.together(expr)).is_nonnegative
    if verdict is None:
        verdict = sp.factor(sp.simplify(expr)).is_nonnegative
    return verdict
