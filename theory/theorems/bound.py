r"""One registry entry, :class:`Bound`: a convergence bound, its step condition, rate form and
provenance, and how it prints in LaTeX (:data:`LATEX_NAMES`).

The formulas are written in :mod:`theory.theorems.formulas` and
:mod:`theory.theorems.delayed`; :mod:`theory.theorems.entries` makes the registry of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import sympy as sp

from ..errors import ParameterError
from ..symbols import (
    G2_bar,
    G2_iter,
    G_inf,
    K,
    L_s,
    W_max,
    alpha,
    beta,
    kappa_2,
    lam,
    p2_bar,
    q_max,
    q_min,
    sigma2,
)
from ..vocabulary import (
    ALGORITHMS,
    FLOOR_KINDS,
    GRADIENT_SIGNALS,
    MODES,
    PROVENANCES,
    WRITE_SEMANTICS,
)

__all__ = ["Bound", "LATEX_NAMES", "LHS_LATEX"]

#: LaTeX names of the symbols (sympy would print ``sigma2`` as :math:`\\sigma_2`)
LATEX_NAMES = {
    sigma2: r"\sigma^2", G_inf: r"G_\infty", q_min: r"q_{\min}", q_max: r"q_{\max}",
    W_max: r"W_{\max}", L_s: "L_s", kappa_2: r"\kappa_2", lam: r"\lambda",
    p2_bar: r"\overline{p^2}", G2_bar: r"\overline{G^2}", beta: r"\beta",
    G2_iter: r"\overline{G^2}_K",
}

#: the left-hand side every bound bounds (LaTeX; no ``|`` so it can sit inside a Markdown table)
LHS_LATEX = r"\frac{1}{K}\sum_{k=0}^{K-1}\mathbb{E}\lVert\nabla f(W_k)\rVert^2"


@dataclass(frozen=True)
class Bound:
    r"""One registry entry: a convergence bound, its step condition, rate form and provenance.

    Attributes
    ----------
    name : str
        Registry key.
    provenance : str
        ``"paper"``, ``"companion"``, ``"derived"`` or ``"literature"``.
    reference : str
        Citation (paper, section) or the docs/theory.md theorem.
    proof : str or None
        Heading of the proof in ``docs/theory.md`` (e.g. ``"Theorem 2"``); required for ``derived``.
    expr : sympy.Expr
        Bound on :math:`\frac1K\sum_{k<K}\mathbb{E}\lVert\nabla f(W_k)\rVert^2` in ``K``,
        ``alpha`` and the constants.
    inv_step_cap : sympy.Expr
        :math:`1/\alpha_{\max}`: the bound holds for :math:`\alpha \le 1/\mathrm{inv\_step\_cap}`.
    rate_a, rate_c, floor : sympy.Expr
        Free of ``K`` and ``alpha``; at ``best_step``,
        ``expr <= rate_a/sqrt(K) + rate_c/K + floor``.
    batch : sympy.Expr
        Samples per iteration: ``n`` (digital, analog), ``B*b`` (SP), ``b`` (AP).
    mode : str
        Pipeline schedule of :mod:`theory.schedules` (``"none"``, ``"sync"``, ``"async"``).
    algorithm : str
        ``"digital"`` (exact updates), ``"analog"`` (the device's response functions) or
        ``"tiki-taka"`` (two analog arrays and transfers, :mod:`simulate.tiki_taka`).
    conditions : tuple of str
        Assumptions and conditions used (A1-A4, the step cap, a minimal ``K``).
    noise_step : sympy.Expr
        :math:`\alpha_{\mathrm{opt}}(K)`, the unconstrained minimiser of the step-dependent terms
        (the "noise balance" step); see :attr:`best_step`.
    min_iterations : sympy.Expr
        Smallest ``K`` for which the bound is established (0 unless a theorem needs more).
    write : str
        The write semantics the bound is proved for (:data:`WRITE_SEMANTICS`): ``"batch-mean"``
        (the default; one update of the batch's mean gradient) or ``"per-sample"`` (one update
        per sample, Corollary 3PS).
    gradient : str
        The gradient signal the bound assumes (:data:`GRADIENT_SIGNALS`): ``"unbiased"`` (A2, the
        default) or ``"biased"`` (A2_beta: a bias of norm at most ``beta``, Propositions IO, IO').
    floor_kind : str
        What the floor's :math:`|G|` is taken over (:data:`FLOOR_KINDS`): ``"worst-case"`` (the
        sup of A3 on the visited region, the default) or ``"iterate-average"`` (Theorem LF: the
        iterate average ``G2_iter`` of :math:`\lVert G(W_k)\rVert_\infty^2`, a measured quantity;
        the ``*_local`` rows).
    """

    name: str
    provenance: str
    reference: str
    proof: str | None
    expr: sp.Expr
    inv_step_cap: sp.Expr
    rate_a: sp.Expr
    rate_c: sp.Expr
    floor: sp.Expr
    batch: sp.Expr
    mode: str
    algorithm: str
    conditions: tuple[str, ...]
    noise_step: sp.Expr
    min_iterations: sp.Expr = field(default=sp.Integer(0))
    write: str = "batch-mean"
    gradient: str = "unbiased"
    floor_kind: str = "worst-case"

    def __post_init__(self):
        if self.provenance not in PROVENANCES:
            raise ParameterError(
                f"provenance={self.provenance!r} is unknown; valid: {', '.join(PROVENANCES)}"
            )
        if self.mode not in MODES:
            raise ParameterError(f"mode={self.mode!r} is unknown; valid: {', '.join(MODES)}")
        if self.algorithm not in ALGORITHMS:
            raise ParameterError(
                f"algorithm={self.algorithm!r} is unknown; valid: {', '.join(ALGORITHMS)}"
            )
        if self.write not in WRITE_SEMANTICS:
            raise ParameterError(
                f"write={self.write!r} is unknown; valid: {', '.join(WRITE_SEMANTICS)}"
            )
        if self.gradient not in GRADIENT_SIGNALS:
            raise ParameterError(
                f"gradient={self.gradient!r} is unknown; valid: {', '.join(GRADIENT_SIGNALS)}"
            )
        if self.floor_kind not in FLOOR_KINDS:
            raise ParameterError(
                f"floor_kind={self.floor_kind!r} is unknown; valid: {', '.join(FLOOR_KINDS)}"
            )
        if self.provenance == "derived" and not self.proof:
            raise ParameterError(f"bound {self.name!r} is derived but names no proof")
        for attr in ("rate_a", "rate_c", "floor", "inv_step_cap", "batch", "min_iterations"):
            if getattr(self, attr).free_symbols & {K, alpha}:
                raise ParameterError(f"bound {self.name!r}: {attr} must not depend on K or alpha")

    @cached_property
    def best_step(self) -> sp.Expr:
        r"""The best admissible step, a function of ``K``.

        .. math:: \min(1/\mathrm{inv\_step\_cap},\ \alpha_{\mathrm{opt}}(K))
        """
        return sp.Min(1 / self.inv_step_cap, self.noise_step)

    @cached_property
    def parameters(self) -> tuple[str, ...]:
        """Sorted names of the constants the bound depends on (every free symbol but K, alpha).

        Cached on first use, like :attr:`best_step`: a bound is frozen, and the free-symbol walk
        over its eight expressions is the main cost of evaluating a registry row.
        """
        exprs = (
            self.expr, self.inv_step_cap, self.rate_a, self.rate_c, self.floor, self.best_step,
            self.batch, self.min_iterations,
        )
        free = set().union(*(sp.sympify(e).free_symbols for e in exprs)) - {K, alpha}
        return tuple(sorted(s.name for s in free))

    def latex(self) -> str:
        """One LaTeX string: the bound, its step condition and its asymptotic floor."""
        def tex(expr):
            return sp.latex(expr, symbol_names=LATEX_NAMES)

        text = (
            rf"{LHS_LATEX} \le {tex(self.expr)} \quad \text{{for }} \alpha \le "
            rf"{tex(1 / self.inv_step_cap)}, \quad \text{{floor}} = {tex(self.floor)}"
        )
        if self.min_iterations != 0:
            text += rf", \quad K \ge {tex(self.min_iterations)}"
        return text
