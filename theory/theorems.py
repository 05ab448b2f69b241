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
:func:`theory.complexity.evaluate_complexity`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from . import local_sgd
from .errors import ParameterError
from .schedules import MODES
from .symbols import (
    B,
    D,
    Delta,
    G2_bar,
    G_inf,
    K,
    L,
    L_s,
    M,
    T,
    W_max,
    alpha,
    b,
    beta,
    kappa_2,
    lam,
    n,
    p2_bar,
    q_max,
    q_min,
    rho,
    sigma2,
    tau,
    theta,
)

__all__ = [
    "ALGORITHMS", "Bound", "GRADIENT_SIGNALS", "LATEX_NAMES", "MIXED_ENTRIES", "PROVENANCES",
    "REGISTRY",
    "WRITE_SEMANTICS",
    "ap_b_floor_factor", "ap_general_parts", "ap_inv_step_cap", "ap_kappa", "ap_kappa_3", "ap_root",
    "bound_for", "bounds_for", "get_bound",
]

PROVENANCES = ("paper", "companion", "derived", "literature")
#: how the weights are updated: exactly, through the device's response functions, Tiki-Taka's
#: two arrays, or per block (``mixed``: some stages analog, some digital; Theorem 2M)
ALGORITHMS = ("digital", "analog", "tiki-taka", "mixed")
#: how the samples of one update are written: one update of the batch-mean gradient (Theorems
#: 2-4'), or one update of -(alpha/n) g_i per sample, in order (Corollary 3PS)
WRITE_SEMANTICS = ("batch-mean", "per-sample")
#: the gradient signal a bound assumes: unbiased (A2) or with a bias of norm at most beta
#: (A2_beta, Proposition IO); the planner's guarantees (:func:`bounds_for`) are the unbiased ones
GRADIENT_SIGNALS = ("unbiased", "biased")

#: LaTeX names of the symbols (sympy would print ``sigma2`` as :math:`\\sigma_2`)
LATEX_NAMES = {
    sigma2: r"\sigma^2", G_inf: r"G_\infty", q_min: r"q_{\min}", q_max: r"q_{\max}",
    W_max: r"W_{\max}", L_s: "L_s", kappa_2: r"\kappa_2", lam: r"\lambda",
    p2_bar: r"\overline{p^2}", G2_bar: r"\overline{G^2}", beta: r"\beta",
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
        ``"tiki-taka"`` (two analog arrays and transfers, :mod:`simulate.device.tiki_taka`).
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
        default) or ``"biased"`` (A2_beta: a bias of norm at most ``beta``, Proposition IO).
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
        if self.provenance == "derived" and not self.proof:
            raise ParameterError(f"bound {self.name!r} is derived but names no proof")
        for attr in ("rate_a", "rate_c", "floor", "inv_step_cap", "batch", "min_iterations"):
            if getattr(self, attr).free_symbols & {K, alpha}:
                raise ParameterError(f"bound {self.name!r}: {attr} must not depend on K or alpha")

    @property
    def best_step(self) -> sp.Expr:
        r"""The best admissible step, a function of ``K``.

        .. math:: \min(1/\mathrm{inv\_step\_cap},\ \alpha_{\mathrm{opt}}(K))
        """
        return sp.Min(1 / self.inv_step_cap, self.noise_step)

    @property
    def parameters(self) -> tuple[str, ...]:
        """Sorted names of the constants the bound depends on (every free symbol but K, alpha)."""
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


# ------------------------------------------------------------------------------------------------
# builders (each formula written once)

def _analog(batch: sp.Expr) -> dict[str, sp.Expr]:
    r"""Theorem 2 of docs/theory.md for a gradient of ``batch`` samples (Steps 1-5 there).

    Also Corollary 3 (``batch = B b``). Rate form by Proposition 5 (a).

    .. math::

        \frac{2\Delta}{\alpha q_{\min} K} + \frac{L\alpha q_{\max}^2\sigma^2}{n q_{\min}}
        + \frac{G_\infty^2\sigma^2}{\theta n q_{\min}^2},
        \qquad \alpha \le \frac{(1-\theta) q_{\min}}{L q_{\max}^2}.
    """
    inv_cap = L * q_max**2 / ((1 - theta) * q_min)
    noise_step = sp.sqrt(2 * Delta * batch / (K * L * q_max**2 * sigma2))
    return dict(
        expr=2 * Delta / (alpha * q_min * K) + L * alpha * q_max**2 * sigma2 / (batch * q_min)
        + G_inf**2 * sigma2 / (theta * batch * q_min**2),
        inv_step_cap=inv_cap,
        rate_a=2 * q_max * sp.sqrt(2 * Delta * L * sigma2 / batch) / q_min,
        rate_c=2 * Delta * inv_cap / q_min,
        floor=G_inf**2 * sigma2 / (theta * batch * q_min**2),
        noise_step=noise_step,
        batch=batch,
    )


def _analog_per_sample(batch: sp.Expr) -> dict[str, sp.Expr]:
    r"""Corollary 3PS of docs/theory.md: analog SGD with one write per sample (Steps 1-5 there).

    The ``batch`` samples of an update (``n`` or ``B b``) are written one after the other, each
    with desired increment :math:`-(\alpha/n) g_i`; every noise term keeps the per-sample
    variance, so the bound is Theorem 2's at a batch of 1 (the mini-batch divides nothing), with
    ``batch`` samples per iteration:

    .. math::

        \frac{2\Delta}{\alpha q_{\min} K} + \frac{L\alpha q_{\max}^2\sigma^2}{q_{\min}}
        + \frac{G_\infty^2\sigma^2}{\theta q_{\min}^2},
        \qquad \alpha \le \frac{(1-\theta) q_{\min}}{L q_{\max}^2}.
    """
    return dict(_analog(sp.Integer(1)), batch=batch)


def _analog_biased(batch: sp.Expr) -> dict[str, sp.Expr]:
    r"""Proposition IO of docs/theory.md: analog SGD with a gradient bias of norm at most ``beta``.

    Steps 1-5 there with the signal's variance :math:`\sigma_n^2 = \sigma^2/n` (``batch`` =
    ``n``); rate form by Proposition 5 (a) with :math:`P = 2\Delta/q_{\min}`,
    :math:`Q = L q_{\max}^2(\sigma^2/n + 2\beta^2)/q_{\min}`, :math:`R = 0`:

    .. math::

        \frac{2\Delta}{\alpha q_{\min} K}
        + \frac{L\alpha q_{\max}^2(\sigma^2/n + 2\beta^2)}{q_{\min}}
        + \frac{(q_{\max}\beta + G_\infty\sqrt{\sigma^2/n})^2}{\theta q_{\min}^2},
        \qquad \alpha \le \frac{(1-\theta) q_{\min}}{2 L q_{\max}^2}.

    At ``beta = 0`` it is Theorem 2's expression with half its step cap.
    """
    variance = sigma2 / batch + 2 * beta**2  # Step 4: sigma_n^2 + 2 beta^2
    inv_cap = 2 * L * q_max**2 / ((1 - theta) * q_min)
    floor = (q_max * beta + G_inf * sp.sqrt(sigma2 / batch)) ** 2 / (theta * q_min**2)
    return dict(
        expr=2 * Delta / (alpha * q_min * K) + L * alpha * q_max**2 * variance / q_min + floor,
        inv_step_cap=inv_cap,
        rate_a=2 * q_max * sp.sqrt(2 * Delta * L * variance) / q_min,
        rate_c=2 * Delta * inv_cap / q_min,
        floor=floor,
        noise_step=sp.sqrt(2 * Delta / (K * L * q_max**2 * variance)),
        batch=batch,
    )


def _digital() -> dict[str, sp.Expr]:
    """Theorem 1 of docs/theory.md (Steps 1-4): Ghadimi-Lan form, batch ``n``, ``alpha <= 1/L``.

    Rate form by Proposition 5 (a): ``a = 2 sqrt(2 Delta L sigma2/n)``, ``c = 2 Delta L``.
    """
    noise_step = sp.sqrt(2 * Delta * n / (K * L * sigma2))
    return dict(
        expr=2 * Delta / (alpha * K) + L * alpha * sigma2 / n,
        inv_step_cap=L,
        rate_a=2 * sp.sqrt(2 * Delta * L * sigma2 / n),
        rate_c=2 * Delta * L,
        floor=sp.Integer(0),
        noise_step=noise_step,
        batch=n,
    )


def _companion() -> dict[str, sp.Expr]:
    r"""NeurIPS 2025 analog-SGD theorem (paper-notes section 3), soft bounds, F_max = 1, batch n.

    The published variance is per gradient; a gradient of ``n`` samples has ``sigma2/n``.
    """
    spread = (tau - W_max) * (tau + W_max)  # tau^2 - W_max^2, factored so its sign is evident
    s_min = spread / tau**2  # 1 - W_max^2/tau^2
    floor = 2 * (sigma2 / n) * W_max**2 / spread  # r/(1 - r) with r = W_max^2/tau^2
    noise_step = sp.sqrt(Delta * n / (sigma2 * L * K))
    return dict(
        expr=4 / s_min * sp.sqrt(Delta * sigma2 * L / (n * K)) + floor,
        inv_step_cap=4 * L,
        rate_a=4 / s_min * sp.sqrt(Delta * sigma2 * L / n),
        rate_c=sp.Integer(0),
        floor=floor,
        noise_step=noise_step,
        batch=n,
        min_iterations=16 * L * Delta * n / sigma2,
    )


def _tiki_taka(batch: sp.Expr) -> dict[str, sp.Expr]:
    r"""The companion's Tiki-Taka statement (NeurIPS 2024) at its published order, batch ``batch``.

    Exact convergence (no floor) at the rate of SGD; the constants are not verified here, so the
    unknown constant :math:`C_{TT}` is set to 1 (stated in the conditions):

    .. math::

        \sqrt{rac{L\Delta\sigma^2}{n K}} + rac{L\Delta}{K}, \qquad lpha \le 1/L .
    """
    return _literature(batch, sp.Integer(1))


def _tiki_taka_reset(batch: sp.Expr) -> dict[str, sp.Expr]:
    r"""Corollary TT0 of docs/theory.md: Tiki-Taka with gamma = 0, slice all, a digital fast
    buffer reset after each transfer, transfer every ``T`` updates (Steps 1-5 there).

    C is analog SGD (Theorem 2, :func:`_analog`) with step :math:`\eta = \rho\alpha^2 T`
    (:math:`\beta = \rho\alpha`, ``rho = transfer_lr``), a gradient of ``batch * T`` samples
    and :math:`J = K/T` writes; ``K`` counts updates (a multiple of ``T``):

    .. math::

        \frac{2\Delta}{\rho\alpha^2 q_{\min} K}
        + \frac{L\rho\alpha^2 q_{\max}^2\sigma^2}{n q_{\min}}
        + \frac{G_\infty^2\sigma^2}{\theta n T q_{\min}^2},
        \qquad \rho\alpha^2 T \le \frac{(1-\theta) q_{\min}}{L q_{\max}^2}.

    Rate form: Theorem 2's at ``batch * T`` and ``J`` writes, rewritten in updates
    (:math:`a_2/\sqrt J = a_2\sqrt T/\sqrt K`, :math:`c_2/J = c_2 T/K`): ``a`` is Theorem 2's at
    ``batch``, ``c`` is ``T`` times Theorem 2's, the floor Theorem 2's at ``batch * T``.
    """
    base = _analog(batch * T)
    eta = rho * alpha**2 * T  # Step 3: the step of C's write
    writes = K / T  # Step 4: J = K/T writes of C in K updates
    return dict(
        base,
        expr=base["expr"].subs({alpha: eta, K: writes}, simultaneous=True),
        # sqrt(rho T L q_max^2/((1 - theta) q_min)), with sqrt(1 - theta) apart (readable LaTeX)
        inv_step_cap=q_max * sp.sqrt(rho * T * L / q_min) / sp.sqrt(1 - theta),
        rate_a=base["rate_a"] * sp.sqrt(T),
        rate_c=base["rate_c"] * T,
        noise_step=sp.sqrt(base["noise_step"].subs(K, writes) / (rho * T)),
        batch=batch,
    )


def _tiki_taka_reset_ap(theorem: dict[str, sp.Expr]) -> dict[str, sp.Expr]:
    r"""Corollary TT0-AP of docs/theory.md: Corollary TT0's variant through the asynchronous
    pipeline, from ``theorem`` (:func:`_analog_ap`, Theorem 4', or :func:`_analog_ap_b`, 4'B).

    The writes of C are Theorem 4''s iterates with step :math:`\eta = \rho\alpha^2 T`, micro-batch
    :math:`bT` (the window's ``T`` gradients of ``b`` samples), ``D`` the delay in writes
    (:func:`theory.schedules.write_delay`, :math:`\lceil (M-1)/T \rceil`) and :math:`J = K/T`
    writes; ``K`` counts updates. Rate form as for :func:`_tiki_taka_reset`: ``a`` times
    :math:`\sqrt T`, ``c`` times ``T``.
    """
    window = {b: b * T}
    eta = rho * alpha**2 * T  # the step of C's write
    part = {key: value.subs(window, simultaneous=True) for key, value in theorem.items()}
    return dict(
        part,
        expr=part["expr"].subs({alpha: eta, K: K / T}, simultaneous=True),
        inv_step_cap=sp.sqrt(rho * T * part["inv_step_cap"]),
        rate_a=part["rate_a"] * sp.sqrt(T),
        rate_c=part["rate_c"] * T,
        noise_step=sp.sqrt(part["noise_step"].subs(K, K / T) / (rho * T)),
        batch=b,
    )


def ap_kappa() -> sp.Expr:
    r"""The constant :math:`\kappa` of Theorem 4' (Step 2 at :math:`\kappa_2 = (1-\theta)/4`).

    .. math::

        \kappa = \frac{1 + \theta^2}{2(1 - \theta)} + \frac{r - 1}{4}, \qquad
        r = \frac{q_{\max}}{q_{\min}} \ge 1 .

    It bounds the exact Lemma A constant :math:`\kappa_3` (a ``max`` of two branches) from above;
    the registry uses :math:`\kappa` so that sympy can decide signs.
    """
    # written over the single denominator 1 - theta so that sympy keeps kappa together in products
    return ((1 + theta**2) / 2 + (q_max / q_min - 1) * (1 - theta) / 4) / (1 - theta)


def ap_root() -> sp.Expr:
    r""":math:`\sqrt{8\kappa/(1-\theta)}`, the factor of ``L_s D q_max`` in :func:`ap_inv_step_cap`.

    Written as :math:`\sqrt{2(2(1+\theta^2) + (r - 1)(1-\theta))}/(1-\theta)` (equal for
    ``theta < 1``) so that the LaTeX stays readable.
    """
    return sp.sqrt(2 * (2 * (1 + theta**2) + (q_max / q_min - 1) * (1 - theta))) / (1 - theta)


def ap_inv_step_cap() -> sp.Expr:
    r""":math:`1/\alpha_{AP}` of Theorem 4', in a form that substitutes cleanly at ``D = 0``.

    .. math::

        \frac{1}{\alpha_{AP}} = \frac{q_{\max}^2 L}{(1-\theta) q_{\min}}\,(1 + \min(D, 1))
        + L_s D q_{\max}\sqrt{\frac{8\kappa}{1 - \theta}}
        \quad (\kappa = \text{:func:`ap_kappa`}).

    At ``D = 0`` it is Theorem 2's (Corollary 3's) :math:`L q_{\max}^2/((1-\theta)q_{\min})`.
    """
    return (
        q_max**2 * L * (1 + sp.Min(D, 1)) / ((1 - theta) * q_min)
        + L_s * D * q_max * ap_root()
    )


def _analog_ap() -> dict[str, sp.Expr]:
    r"""Theorem 4' of docs/theory.md: asynchronous pipeline, micro-batch ``b``, maximal delay ``D``.

    ``D = 0`` is Theorem 2 with ``n = b``; ``D >= 1`` is Steps 0-6 there (``kappa_2 =
    (1 - theta)/4``, ``lambda = 1/2``). The staleness term (Steps 4 and 6) is

    .. math:: 4\kappa L_s^2\alpha^2 (q_{\max}\sqrt D + G_\infty D)^2 \sigma^2/b ,

    zero at ``D = 0``. Rate form by Proposition 5 (a): ``a`` and the floor as Corollary 3 at
    ``B = 1``; ``c = 2 Delta/(alpha_AP q_min)
    + 8 kappa (L_s^2 Delta/L)(sqrt(D) + (G_inf/q_max) D)^2``.
    """
    base = _analog(b)
    inv_cap = ap_inv_step_cap()
    kappa = ap_kappa()
    window = (q_max * sp.sqrt(D) + G_inf * D) ** 2  # Step 6: (sqrt(Y) + sqrt(X))^2, Y noise, X bias
    stale = 4 * kappa * L_s**2 * alpha**2 * window * sigma2 / b
    stale_c = 8 * kappa * L_s**2 * Delta * window / (L * q_max**2)
    return dict(
        base,
        expr=base["expr"] + stale,
        inv_step_cap=inv_cap,
        rate_c=2 * Delta * inv_cap / q_min + stale_c,
    )


def ap_kappa_3() -> sp.Expr:
    r"""The exact Lemma A constant :math:`\kappa_3(\kappa_2, \theta, r)` of Theorem 4' (Step 2).

    .. math::

        \kappa_3 = \kappa_2 + \frac14\max\Bigl(\frac{(1 - 2\kappa_2)^2}{(1-\theta)/2 - \kappa_2},
        \frac{(r - 2\kappa_2)^2}{r - (1+\theta)/2 - \kappa_2}\Bigr),
        \qquad 0 < \kappa_2 < (1-\theta)/2 .
    """
    r = q_max / q_min
    return kappa_2 + sp.Max(
        (1 - 2 * kappa_2) ** 2 / ((1 - theta) / 2 - kappa_2),
        (r - 2 * kappa_2) ** 2 / (r - (1 + theta) / 2 - kappa_2),
    ) / 4


def ap_general_parts(kappa_3: sp.Expr | None = None) -> dict[str, sp.Expr]:
    r"""Theorem 4' in its general form, for ``D >= 1``: free proof parameters ``kappa_2``, ``lam``.

    Not a registry entry (the ``max`` in :func:`ap_kappa_3` is slow for the symbolic tests); for a
    numeric optimisation of the proof parameters, like ``theta``: every
    :math:`\theta \in (0,1)`, :math:`\kappa_2 \in (0, (1-\theta)/2)`, :math:`\lambda \in (0,1)`
    gives a valid bound. Keys ``expr``, ``inv_step_cap``, ``rate_a``, ``rate_c``, ``floor``,
    ``noise_step`` as in :class:`Bound`; at ``kappa_2 = (1 - theta)/4``, ``lam = 1/2`` it is at
    most ``analog_sgd_ap`` (equal with :math:`\kappa_3` replaced by :math:`\kappa`).

    Parameters
    ----------
    kappa_3 : sympy.Expr, optional
        Lemma A's constant, :func:`ap_kappa_3` by default; any upper bound of it is valid too.

    .. math::

        \frac{1}{\alpha_{AP}} = \frac{L q_{\max}^2}{2\kappa_2 q_{\min}}
        + L_s D q_{\max}\sqrt{\frac{\kappa_3}{\lambda\kappa_2}}, \qquad
        \text{extra term} = \frac{2\kappa_3}{1-\lambda} L_s^2\alpha^2
        (q_{\max}\sqrt D + G_\infty D)^2\sigma^2/b .
    """
    base = _analog(b)
    kappa_3 = ap_kappa_3() if kappa_3 is None else kappa_3
    inv_cap = L * q_max**2 / (2 * kappa_2 * q_min) + L_s * D * q_max * sp.sqrt(
        kappa_3 / (lam * kappa_2))
    window = (q_max * sp.sqrt(D) + G_inf * D) ** 2
    coefficient = 2 * kappa_3 / (1 - lam) * L_s**2 * window
    stale_c = coefficient * 2 * Delta / (L * q_max**2)  # R P/Q with P = 2 Delta/q, Q = L p^2/q
    parts = {key: base[key] for key in ("rate_a", "floor", "noise_step")}
    return dict(
        parts,
        expr=base["expr"] + coefficient * alpha**2 * sigma2 / b,
        inv_step_cap=inv_cap,
        rate_c=2 * Delta * inv_cap / q_min + stale_c,
    )


def ap_b_floor_factor() -> sp.Expr:
    r"""Factor of Corollary 3's floor in variant B: :math:`1 + \min(D,1)\,\theta(1-\theta)/r^2`.

    It is at most ``5/4`` and exactly 1 at ``D = 0`` (no staleness, nothing charged).
    """
    return 1 + sp.Min(D, 1) * theta * (1 - theta) * q_min**2 / q_max**2


def _analog_ap_b() -> dict[str, sp.Expr]:
    r"""Theorem 4'B of docs/theory.md: Theorem 4' with the staleness bias charged to the floor.

    Same cap as Theorem 4'; weights ``lambda = (1/2, 1/4, 1/4)``; the bias part is at most
    :math:`\theta(1-\theta)/r^2` times the floor, the rest is strictly linear in ``D``:

    .. math:: 8\kappa L_s^2\alpha^2 D q_{\max}^2\sigma^2/b, \qquad
        c_B = \frac{2\Delta}{q_{\min}\alpha_{AP}} + \frac{16\kappa L_s^2\Delta D}{L}.
    """
    base = _analog(b)
    inv_cap = ap_inv_step_cap()
    kappa = ap_kappa()
    floor = ap_b_floor_factor() * base["floor"]
    stale = 8 * kappa * L_s**2 * alpha**2 * D * q_max**2 * sigma2 / b
    return dict(
        base,
        expr=base["expr"] - base["floor"] + floor + stale,
        inv_step_cap=inv_cap,
        rate_c=2 * Delta * inv_cap / q_min + 16 * kappa * L_s**2 * Delta * D / L,
        floor=floor,
    )


def _analog_mixed(batch: sp.Expr) -> dict[str, sp.Expr]:
    r"""Theorem 2M (a), (b) of docs/theory.md: Theorem 2 / Corollary 3 with per-block constants.

    ``q_min``, ``q_max`` are the worst block's (:math:`\min_m q_{\min,m}`,
    :math:`\max_m q_{\max,m}`), ``p2_bar`` :math:`= \sum_m s_m q_{\max,m}^2` and ``G2_bar``
    :math:`= \sum_m s_m G_{\infty,m}^2` the noise-weighted sums
    (:func:`theory.mixed.mixed_constants`;
    digital blocks: 1, 1, 1, 0). Steps 1-5 there:

    .. math::

        \frac{2\Delta}{\alpha q_{\min} K} + \frac{L\alpha\overline{p^2}\sigma^2}{n q_{\min}}
        + \frac{\overline{G^2}\sigma^2}{\theta n q_{\min}^2},
        \qquad \alpha \le \frac{(1-\theta) q_{\min}}{L q_{\max}^2}.

    With ``p2_bar = q_max**2``, ``G2_bar = G_inf**2`` it is :func:`_analog` exactly.
    """
    inv_cap = L * q_max**2 / ((1 - theta) * q_min)
    noise_step = sp.sqrt(2 * Delta * batch / (K * L * p2_bar * sigma2))
    floor = G2_bar * sigma2 / (theta * batch * q_min**2)
    return dict(
        expr=2 * Delta / (alpha * q_min * K) + L * alpha * p2_bar * sigma2 / (batch * q_min)
        + floor,
        inv_step_cap=inv_cap,
        rate_a=2 * sp.sqrt(2 * Delta * L * p2_bar * sigma2 / batch) / q_min,
        rate_c=2 * Delta * inv_cap / q_min,
        floor=floor,
        noise_step=noise_step,
        batch=batch,
    )


def _analog_ap_mixed() -> dict[str, sp.Expr]:
    r"""Theorem 2M (c) of docs/theory.md: Theorem 4' with per-block constants (micro-batch ``b``).

    Cap and :math:`\kappa` of Theorem 4' at the worst block's ``q_min``, ``q_max``; the noise and
    bias of the window are noise-weighted sums (Steps 0, 3, 4 blockwise):

    .. math::

        4\kappa L_s^2\alpha^2\bigl(\sqrt{D\,\overline{p^2}} + D\sqrt{\overline{G^2}}\bigr)^2
        \sigma^2/b .

    With ``p2_bar = q_max**2``, ``G2_bar = G_inf**2`` it is :func:`_analog_ap` exactly.
    """
    base = _analog_mixed(b)
    inv_cap = ap_inv_step_cap()
    kappa = ap_kappa()
    window = (sp.sqrt(D * p2_bar) + D * sp.sqrt(G2_bar)) ** 2
    stale = 4 * kappa * L_s**2 * alpha**2 * window * sigma2 / b
    stale_c = 8 * kappa * L_s**2 * Delta * window / (L * p2_bar)  # R P/Q
    return dict(
        base,
        expr=base["expr"] + stale,
        inv_step_cap=inv_cap,
        rate_c=2 * Delta * inv_cap / q_min + stale_c,
    )


def _literature(batch: sp.Expr, delay_factor: sp.Expr) -> dict[str, sp.Expr]:
    r"""A published order :math:`K \asymp L\Delta\sigma^2/(n\epsilon^2) + \kappa L\Delta/\epsilon`.

    Unknown constants are set to 1.
    With ``a = sqrt(L Delta sigma2 / batch)`` and ``c = kappa L Delta`` the exact inversion of
    ``a/sqrt(K) + c/K = eps`` satisfies ``a^2/eps^2 + c/eps <= K(eps) <= a^2/eps^2 + 2c/eps``
    (Proposition 5), so the order is reproduced within a factor 2. The step cap is the usual
    ``1/(kappa L)`` and the noise step ``sqrt(Delta batch/(L sigma2 K))``, both up to constants.
    """
    inv_cap = delay_factor * L
    noise_step = sp.sqrt(Delta * batch / (L * sigma2 * K))
    rate_a = sp.sqrt(L * Delta * sigma2 / batch)
    rate_c = delay_factor * L * Delta
    return dict(
        expr=rate_a / sp.sqrt(K) + rate_c / K,
        inv_step_cap=inv_cap,
        rate_a=rate_a,
        rate_c=rate_c,
        floor=sp.Integer(0),
        noise_step=noise_step,
        batch=batch,
    )


_A1 = "A1: f is L-smooth and bounded below, Delta = f(W_0) - f*"
_A2 = "A2: unbiased stochastic gradient, variance <= sigma2 per sample (sigma2/batch per batch)"
_A3 = "A3: response functions in [q_min, q_max] and |G| <= G_inf on the region the weights visit"
_A4 = (
    "A4: ||g_k - grad f(W_k; xi_k)|| <= L_s ||W_hat_k - W_k|| with the error F_k-measurable "
    "(exact for the oracle problems with L_s = L; an assumption for networks)"
)
_THETA = "0 < theta < 1 (free Young split)"
_AP_CONDITIONS = (
    _A1, _A2, _A3, _A4, _THETA, "D = M - 1 (maximal stage delay)",
    "kappa = (1 + theta^2)/(2 (1 - theta)) + (q_max/q_min - 1)/4",
)
_AP_CAP = (
    "alpha <= 1/(L q_max^2 (1 + min(D, 1))/((1 - theta) q_min) "
    "+ L_s D q_max sqrt(8 kappa/(1 - theta)))"
)
_ORDER = "order only: the unknown constants of the published rate are set to 1"
_TT_CONDITIONS = (
    _A1, _A2,
    "both arrays soft bounds (linear response, range tau) with saturation bounded away from "
    "tau along the run (a condition on the iterates, as the companion's S_min)",
    "transfer of the whole fast array after every update (T = 1, slice all) with rates alpha "
    "and beta as the theorem prescribes; column round robin (T >= 1) is not covered",
    "uncertain: the published constants (and their dependence on tau, beta, gamma) are not "
    "verified here; the row uses C_TT = 1 in the rate a = C_TT sqrt(L Delta sigma2/n), "
    "c = L Delta, which is NOT a valid bound: bench/tiki_taka.py measures the simulated average "
    "at 3.6-3.9 times it without pipeline and 2.8-3.2 times it in the synchronous pipeline "
    "(oracle quadratic, tau = 0.4, K = 500-8000, 8 seeds; --quick: 2.8-3.8), i.e. C_TT ~ 4 "
    "there; not checked by the suites (a measurement, not a guarantee)",
)
_TT0_CONDITIONS = (
    _A1, _A2, _A3.replace("the weights visit", "C visits"), _THETA,
    "Corollary TT0 variant: gamma = 0 (the forward reads C), transfer slice all, digital fast "
    "buffer (A += dw exactly: fast_device digital), A reset to 0 after each transfer "
    "(transfer_reset), expected update of C",
    "transfer every T updates with beta = rho alpha (rho = transfer_lr): each write of C is the "
    "analog update of -rho alpha^2 T times the mean of the window's T gradients",
    "K (updates) a multiple of T: K/T writes of C",
    "alpha <= sqrt((1 - theta) q_min/(rho T L q_max^2)) (Theorem 2's cap on the step "
    "rho alpha^2 T)",
    # machine-checked by the planner (theory.complexity.conditions_met)
    "setting tt_gamma=0", "setting transfer_slice=all", "setting fast_device=digital",
    "setting transfer_reset=true",
)

#: Corollary TT0-AP: the variant's conditions, A4, and the delay counted in writes of C
_TT0_AP_CONDITIONS = (
    *_TT0_CONDITIONS, _A4,
    "D = ceil((M - 1)/T): the maximal delay in writes of C (theory.schedules.write_delay; any "
    "larger D is also valid)",
    "cycles 2 (K + M - 1) + (K/T) c_T (transfers counted on top)",
)


_A2_PS = (
    "A2 per sample: each sample's gradient noise has mean 0 and variance <= sigma2 given the "
    "earlier samples of its update (independent samples)"
)
_A3_PS = (
    "A3 on the region the weights visit, the weights between the writes of one update included"
)
_PER_SAMPLE = "per-sample writes: n updates of -(alpha/n) g_i, all g_i read at W_k"
_A2_BETA = (
    "A2_beta: signal grad f(W_k) + beta_k + nu_k with beta_k F_k-measurable, ||beta_k|| <= beta, "
    "E_k nu_k = 0, E_k ||nu_k||^2 <= sigma2/n"
)

_MIXED = (
    "per block m (stage): A3 with q_min_m, q_max_m, G_inf_m (digital: 1, 1, 0) and noise share "
    "s_m (E||nu^(m)||^2 <= s_m sigma2/batch, sum s_m = 1); q_min = min_m q_min_m, q_max = max_m "
    "q_max_m, p2_bar = sum_m s_m q_max_m^2, G2_bar = sum_m s_m G_inf_m^2 (theory.mixed)"
)
#: the per-block entries (Theorem 2M), one per schedule
MIXED_ENTRIES = ("analog_sgd_mixed", "analog_sgd_sp_mixed", "analog_sgd_ap_mixed")


def _make(
    name: str, *, provenance: str, reference: str, mode: str, algorithm: str,
    conditions: list[str], parts: dict[str, sp.Expr], proof: str | None = None,
    write: str = "batch-mean", gradient: str = "unbiased",
) -> Bound:
    return Bound(
        name=name, provenance=provenance, reference=reference, proof=proof, mode=mode,
        algorithm=algorithm, conditions=tuple(conditions), write=write, gradient=gradient,
        **parts,
    )


def _build_registry() -> dict[str, Bound]:
    entries = [
        _make(
            "digital_sgd", provenance="derived", proof="Theorem 1",
            reference="Theorem 1 of docs/theory.md (Ghadimi and Lan 2013 form)",
            mode="none", algorithm="digital",
            conditions=[_A1, _A2, "alpha <= 1/L"], parts=_digital(),
        ),
        _make(
            "analog_sgd_companion", provenance="companion",
            reference="Wu et al., NeurIPS 2025 (arXiv 2502.06309), analog SGD theorem; "
            "paper-notes section 3; soft bounds, F_max = 1",
            mode="none", algorithm="analog",
            conditions=[
                _A1, _A2, "soft bounds: ||W_k||_inf <= W_max < tau (S_min = 1 - W_max^2/tau^2)",
                "alpha = sqrt(Delta n/(sigma2 L K)) <= 1/(4 L), i.e. K >= 16 L Delta n/sigma2 "
                "(automatic when eps - floor <= sigma2/(n S_min))",
                "per-gradient variance of the published theorem taken as sigma2/n",
            ],
            parts=_companion(),
        ),
        _make(
            "analog_sgd", provenance="derived", proof="Theorem 2",
            reference="Theorem 2 of docs/theory.md", mode="none", algorithm="analog",
            conditions=[_A1, _A2, _A3, _THETA, "alpha <= (1 - theta) q_min/(L q_max^2)"],
            parts=_analog(n),
        ),
        _make(
            "analog_sgd_sp", provenance="derived", proof="Corollary 3",
            reference="Corollary 3 of docs/theory.md (Theorem 2 with n = B b)",
            mode="sync", algorithm="analog",
            conditions=[
                _A1, _A2, _A3, _THETA, "alpha <= (1 - theta) q_min/(L q_max^2)", "n = B b",
            ],
            parts=_analog(B * b),
        ),
        _make(
            "analog_sgd_ap", provenance="derived", proof="Theorem 4'",
            reference="Theorem 4' of docs/theory.md", mode="async", algorithm="analog",
            conditions=[*_AP_CONDITIONS, _AP_CAP], parts=_analog_ap(),
        ),
        _make(
            "analog_sgd_ap_b", provenance="derived", proof="Theorem 4'B",
            reference="Theorem 4'B of docs/theory.md (Theorem 4' with the bias charged to the "
            "floor)",
            mode="async", algorithm="analog",
            conditions=[
                *_AP_CONDITIONS, _AP_CAP,
                "floor factor 1 + theta (1 - theta) q_min^2/q_max^2 for D >= 1 (1 at D = 0)",
            ],
            parts=_analog_ap_b(),
        ),
        _make(
            "analog_sgd_per_sample", provenance="derived", proof="Corollary 3PS",
            reference="Corollary 3PS of docs/theory.md (Theorem 2 with per-sample writes)",
            mode="none", algorithm="analog", write="per-sample",
            conditions=[_A1, _A2_PS, _A3_PS, _THETA, "alpha <= (1 - theta) q_min/(L q_max^2)",
                        _PER_SAMPLE],
            parts=_analog_per_sample(n),
        ),
        _make(
            "analog_sgd_sp_per_sample", provenance="derived", proof="Corollary 3PS",
            reference="Corollary 3PS of docs/theory.md (Corollary 3 with per-sample writes)",
            mode="sync", algorithm="analog", write="per-sample",
            conditions=[_A1, _A2_PS, _A3_PS, _THETA, "alpha <= (1 - theta) q_min/(L q_max^2)",
                        _PER_SAMPLE + " (n = B b)"],
            parts=_analog_per_sample(B * b),
        ),
        _make(
            "tiki_taka_companion", provenance="companion",
            reference="Wu, Gokmen, Rasch and Chen, NeurIPS 2024 (arXiv 2406.12774), Tiki-Taka "
            "convergence theorem: exact convergence to a critical point, no asymptotic error; "
            "paper-notes section 3",
            mode="none", algorithm="tiki-taka",
            conditions=[*_TT_CONDITIONS, "batch n per update"], parts=_tiki_taka(n),
        ),
        _make(
            "tiki_taka_sp", provenance="companion", proof="Proposition TT",
            reference="tiki_taka_companion at n = B b through Proposition TT of docs/theory.md "
            "(the synchronous pipeline keeps the non-pipelined iterates)",
            mode="sync", algorithm="tiki-taka",
            conditions=[*_TT_CONDITIONS, "n = B b (Proposition TT)",
                        "cycles 2 (B + M - 1) K + floor(K/T) c_T (transfers counted on top)"],
            parts=_tiki_taka(B * b),
        ),
        _make(
            "tiki_taka_reset", provenance="derived", proof="Corollary TT0",
            reference="Corollary TT0 of docs/theory.md (accumulate and transfer: Theorem 2 on C "
            "with step rho alpha^2 T, batch n T, K/T writes)",
            mode="none", algorithm="tiki-taka",
            conditions=[*_TT0_CONDITIONS, "batch n per update"], parts=_tiki_taka_reset(n),
        ),
        _make(
            "tiki_taka_reset_sp", provenance="derived", proof="Corollary TT0",
            reference="Corollary TT0 of docs/theory.md at n = B b (Proposition TT: the "
            "synchronous pipeline keeps the non-pipelined iterates)",
            mode="sync", algorithm="tiki-taka",
            conditions=[*_TT0_CONDITIONS, "n = B b (Proposition TT)",
                        "cycles 2 (B + M - 1) K + (K/T) c_T (transfers counted on top)"],
            parts=_tiki_taka_reset(B * b),
        ),
        _make(
            "tiki_taka_reset_ap", provenance="derived", proof="Corollary TT0-AP",
            reference="Corollary TT0-AP of docs/theory.md (Theorem 4' on the writes of C: step "
            "rho alpha^2 T, micro-batch b T, delay D = ceil((M - 1)/T) writes, K/T writes)",
            mode="async", algorithm="tiki-taka",
            conditions=list(_TT0_AP_CONDITIONS),
            parts=_tiki_taka_reset_ap(_analog_ap()),
        ),
        _make(
            "tiki_taka_reset_ap_b", provenance="derived", proof="Corollary TT0-AP",
            reference="Corollary TT0-AP of docs/theory.md with Theorem 4'B on the writes of C",
            mode="async", algorithm="tiki-taka",
            conditions=list(_TT0_AP_CONDITIONS),
            parts=_tiki_taka_reset_ap(_analog_ap_b()),
        ),
        _make(
            "analog_sgd_mixed", provenance="derived", proof="Theorem 2M",
            reference="Theorem 2M (a) of docs/theory.md (Theorem 2 with per-block constants)",
            mode="none", algorithm="mixed",
            conditions=[_A1, _A2, _MIXED, _THETA, "alpha <= (1 - theta) q_min/(L q_max^2)"],
            parts=_analog_mixed(n),
        ),
        _make(
            "analog_sgd_sp_mixed", provenance="derived", proof="Theorem 2M",
            reference="Theorem 2M (b) of docs/theory.md (Corollary 3 with per-block constants)",
            mode="sync", algorithm="mixed",
            conditions=[
                _A1, _A2, _MIXED, _THETA, "alpha <= (1 - theta) q_min/(L q_max^2)", "n = B b",
            ],
            parts=_analog_mixed(B * b),
        ),
        _make(
            "analog_sgd_ap_mixed", provenance="derived", proof="Theorem 2M",
            reference="Theorem 2M (c) of docs/theory.md (Theorem 4' with per-block constants)",
            mode="async", algorithm="mixed",
            conditions=[*(c for c in _AP_CONDITIONS if c != _A3), _MIXED, _AP_CAP],
            parts=_analog_ap_mixed(),
        ),
        _make(
            "analog_sgd_biased", provenance="derived", proof="Proposition IO",
            reference="Proposition IO of docs/theory.md (Theorem 2 with a biased gradient, "
            "bias norm <= beta)",
            mode="none", algorithm="analog", gradient="biased",
            conditions=[_A1, _A2_BETA, _A3, _THETA,
                        "alpha <= (1 - theta) q_min/(2 L q_max^2) (half Theorem 2's cap)"],
            parts=_analog_biased(n),
        ),
        _make(
            "literature_sgd", provenance="literature",
            reference="Ghadimi and Lan 2013: N = O(L Delta/eps + L Delta sigma2/eps^2)",
            mode="none", algorithm="digital",
            conditions=[_A1, _A2, _ORDER], parts=_literature(n, sp.Integer(1)),
        ),
        _make(
            "literature_delay_fixed", provenance="literature",
            reference="Stich and Karimireddy 2020; Arjevani, Shamir and Srebro 2020: "
            "O(L Delta sigma2/eps^2 + tau_d L Delta/eps)",
            mode="async", algorithm="digital",
            conditions=[
                _A1, _A2, _ORDER, "fixed delay tau_d = D; factor 1 + D so that D = 0 gives SGD",
            ],
            parts=_literature(b, 1 + D),
        ),
        _make(
            "literature_delay_arbitrary", provenance="literature",
            reference="Koloskova, Stich and Jaggi 2022, constant step: "
            "O(L Delta sigma2/eps^2 + sqrt(tau_max tau_avg) L Delta/eps)",
            mode="async", algorithm="digital",
            conditions=[
                _A1, _A2, _ORDER,
                "tau_max = D, tau_avg = D/2 (mean of the stage delays M - m over equal stages); "
                "factor 1 + sqrt(tau_max tau_avg) so that D = 0 gives SGD",
            ],
            parts=_literature(b, 1 + sp.sqrt(D * D / 2)),
        ),
        _make(
            "literature_async_sgd", provenance="literature",
            reference="Mishchenko et al. 2022, asynchronous SGD with n workers: "
            "O(L Delta sigma2/eps^2 + n L Delta/eps)",
            mode="async", algorithm="digital",
            conditions=[_A1, _A2, _ORDER, "workers = M (micro-batches in flight in the pipeline)"],
            parts=_literature(b, M),
        ),
        _make(
            "local_sgd", provenance="literature", reference=local_sgd.REFERENCE,
            mode="none", algorithm="analog",
            conditions=[*local_sgd.CONDITIONS, "rate form at the step cap (no rate form at the "
                        "best step: the programming noise grows as the step shrinks)"],
            parts=local_sgd.parts(),
        ),
    ]
    return {bound.name: bound for bound in entries}


#: every bound, in a fixed order (derived first, then the literature rows)
REGISTRY: dict[str, Bound] = _build_registry()


def get_bound(name: str) -> Bound:
    """Return the registry entry ``name``; :class:`ParameterError` lists the valid names."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ParameterError(
            f"bound={name!r} is unknown; valid: {', '.join(REGISTRY)}"
        ) from None


def bounds_for(mode: str, algorithm: str = "analog",
               write: str = "batch-mean", gradient: str = "unbiased") -> tuple[Bound, ...]:
    """The ``derived`` entries proved for ``algorithm`` under the ``mode`` schedule, the
    ``write`` semantics and the ``gradient`` signal, in order.

    The default ``gradient="unbiased"`` (A2) gives the guarantees of the planner; ``"biased"``
    the entries for a gradient with a bias of norm at most ``beta`` (Proposition IO), which need
    a measured ``beta`` and are not planned with.

    These are the guarantees the package turns into iterations, cycles and plans; the first one is
    :func:`bound_for`'s answer. A digital update is linear in its increment, so per-sample digital
    writes sum to the batch-mean write exactly: ``write`` does not change the digital entries.

    Raises
    ------
    ParameterError
        For an unknown mode, algorithm or write semantics, or a combination without a derived
        bound (e.g. analog per-sample writes under ``async``).
    """
    if mode not in MODES:
        raise ParameterError(f"mode={mode!r} is unknown; valid: {', '.join(MODES)}")
    if algorithm not in ALGORITHMS:
        raise ParameterError(f"algorithm={algorithm!r} is unknown; valid: {', '.join(ALGORITHMS)}")
    if write not in WRITE_SEMANTICS:
        raise ParameterError(f"write={write!r} is unknown; valid: {', '.join(WRITE_SEMANTICS)}")
    if gradient not in GRADIENT_SIGNALS:
        raise ParameterError(
            f"gradient={gradient!r} is unknown; valid: {', '.join(GRADIENT_SIGNALS)}"
        )
    wanted = "batch-mean" if algorithm == "digital" else write
    found = tuple(
        bound for bound in REGISTRY.values()
        if bound.provenance == "derived" and bound.mode == mode and bound.algorithm == algorithm
        and bound.write == wanted and bound.gradient == gradient
    )
    if not found and gradient != "unbiased":
        biased = [x for x in REGISTRY.values() if x.gradient == gradient]
        raise ParameterError(
            f"no derived bound for gradient={gradient!r} with algorithm={algorithm!r}, "
            f"mode={mode!r}, write={write!r}; valid: "
            + ", ".join(f"{x.algorithm}/{x.mode}/{x.write}" for x in biased)
        )
    if not found:
        derived = [x for x in REGISTRY.values()
                   if x.provenance == "derived" and x.write in ("batch-mean", wanted)]
        pairs = sorted({(x.algorithm, x.mode) for x in derived
                        if x.write == wanted or x.algorithm == "digital"})
        semantics = "" if write == "batch-mean" else f" and write={write!r}"
        raise ParameterError(
            f"no derived bound for algorithm={algorithm!r} with mode={mode!r}{semantics}; valid "
            "pairs: " + ", ".join(f"{a}/{m}" for a, m in pairs)
        )
    return found


def bound_for(mode: str, algorithm: str = "analog", write: str = "batch-mean") -> Bound:
    """The registry's primary ``derived`` bound for ``algorithm`` under the ``mode`` schedule.

    ``("digital", "none")`` is Theorem 1, ``("analog", "none")`` Theorem 2, ``("analog", "sync")``
    Corollary 3 and ``("analog", "async")`` Theorem 4' (``bounds_for`` adds Theorem 4'B); with
    ``write="per-sample"``, ``("analog", "none")`` and ``("analog", "sync")`` are Corollary 3PS.
    """
    return bounds_for(mode, algorithm, write)[0]
