r"""The formulas of the asynchronous pipeline (maximal delay ``D``): Theorem 4' and its kin.

Theorem 4' (:func:`analog_ap_parts`) and its constants (:func:`ap_kappa`, :func:`ap_root`,
:func:`ap_inv_step_cap`; the exact Lemma A constant :func:`ap_kappa_3` and the general form
:func:`ap_general_parts`), Theorem 4'B (:func:`analog_ap_b_parts`, :func:`ap_b_floor_factor`),
Theorem 4'PS (per-sample writes, :func:`analog_ap_per_sample_parts`), Theorem 2M (c)
(:func:`analog_ap_mixed_parts`) and Corollary TT0-AP (:func:`tiki_taka_reset_ap_parts`). Each
returns the keyword parts of a :class:`~theory.theorems.Bound` or one sympy constant, as in
:mod:`theory.theorems.formulas`.
"""

from __future__ import annotations

import sympy as sp

from ..symbols import (
    D,
    Delta,
    G2_bar,
    G_inf,
    K,
    L,
    L_s,
    T,
    alpha,
    b,
    kappa_2,
    lam,
    p2_bar,
    q_max,
    q_min,
    rho,
    sigma2,
    theta,
)
from .formulas import analog_mixed_parts, analog_parts, analog_per_sample_parts

__all__ = [
    "analog_ap_b_parts",
    "analog_ap_mixed_parts",
    "analog_ap_parts",
    "analog_ap_per_sample_parts",
    "ap_b_floor_factor",
    "ap_general_parts",
    "ap_inv_step_cap",
    "ap_kappa",
    "ap_kappa_3",
    "ap_root",
    "tiki_taka_reset_ap_parts",
]


def tiki_taka_reset_ap_parts(theorem: dict[str, sp.Expr]) -> dict[str, sp.Expr]:
    r"""Corollary TT0-AP of docs/theory.md: Corollary TT0's variant through the asynchronous
    pipeline, from ``theorem`` (:func:`analog_ap_parts`, Theorem 4', or
    :func:`analog_ap_b_parts`, 4'B).

    The writes of C are Theorem 4''s iterates with step :math:`\eta = \rho\alpha^2 T`, micro-batch
    :math:`bT` (the window's ``T`` gradients of ``b`` samples), ``D`` the delay in writes
    (:func:`theory.schedules.write_delay`, :math:`\lceil (M-1)/T \rceil`) and :math:`J = K/T`
    writes; ``K`` counts updates. Rate form as for :func:`tiki_taka_reset_parts`: ``a`` times
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


def analog_ap_parts() -> dict[str, sp.Expr]:
    r"""Theorem 4' of docs/theory.md: asynchronous pipeline, micro-batch ``b``, maximal delay ``D``.

    ``D = 0`` is Theorem 2 with ``n = b``; ``D >= 1`` is Steps 0-6 there (``kappa_2 =
    (1 - theta)/4``, ``lambda = 1/2``). The staleness term (Steps 4 and 6) is

    .. math:: 4\kappa L_s^2\alpha^2 (q_{\max}\sqrt D + G_\infty D)^2 \sigma^2/b ,

    zero at ``D = 0``. Rate form by Proposition 5 (a): ``a`` and the floor as Corollary 3 at
    ``B = 1``; ``c = 2 Delta/(alpha_AP q_min)
    + 8 kappa (L_s^2 Delta/L)(sqrt(D) + (G_inf/q_max) D)^2``.
    """
    base = analog_parts(b)
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

    .. math::

        \frac{1}{\alpha_{AP}} = \frac{L q_{\max}^2}{2\kappa_2 q_{\min}}
        + L_s D q_{\max}\sqrt{\frac{\kappa_3}{\lambda\kappa_2}}, \qquad
        \text{extra term} = \frac{2\kappa_3}{1-\lambda} L_s^2\alpha^2
        (q_{\max}\sqrt D + G_\infty D)^2\sigma^2/b .

    Parameters
    ----------
    kappa_3 : sympy.Expr, optional
        Lemma A's constant, :func:`ap_kappa_3` by default; any upper bound of it is valid too.
    """
    base = analog_parts(b)
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


def analog_ap_b_parts() -> dict[str, sp.Expr]:
    r"""Theorem 4'B of docs/theory.md: Theorem 4' with the staleness bias charged to the floor.

    Same cap as Theorem 4'; weights ``lambda = (1/2, 1/4, 1/4)``; the bias part is at most
    :math:`\theta(1-\theta)/r^2` times the floor, the rest is strictly linear in ``D``:

    .. math:: 8\kappa L_s^2\alpha^2 D q_{\max}^2\sigma^2/b, \qquad
        c_B = \frac{2\Delta}{q_{\min}\alpha_{AP}} + \frac{16\kappa L_s^2\Delta D}{L}.
    """
    base = analog_parts(b)
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


def analog_ap_per_sample_parts() -> dict[str, sp.Expr]:
    r"""Theorem 4'PS of docs/theory.md: the asynchronous pipeline with one write per sample.

    The ``b`` samples of an update are read at the stale point and written one after the other
    (Corollary 3PS's writes). ``D = 0`` is Corollary 3PS with ``n = b``; ``D >= 1`` is Steps 0-6
    there: Theorem 4''s cap, the floor and the ``O(alpha)`` term of one sample (Corollary 3PS),
    and the staleness term (Step 4 in the filtration of the writes, Step 6)

    .. math:: 4\kappa L_s^2\alpha^2 (q_{\max}\sqrt{D/b} + G_\infty D)^2 \sigma^2 ,

    whose noise part keeps the ``1/b`` (the writes' martingale differences add up) and whose
    bias part does not. At ``b = 1`` it is :func:`analog_ap_parts` at ``b = 1``. Rate form by
    Proposition 5 (a) with :math:`P = 2\Delta/q_{\min}`, :math:`Q = L q_{\max}^2\sigma^2/q_{\min}`:
    ``c = 2 Delta/(alpha_AP q_min) + 8 kappa (L_s^2 Delta/L)(sqrt(D/b) + (G_inf/q_max) D)^2``.
    """
    base = analog_per_sample_parts(b)
    inv_cap = ap_inv_step_cap()
    kappa = ap_kappa()
    window = (q_max * sp.sqrt(D / b) + G_inf * D) ** 2  # Step 6 with Y = D p^2/b, X = D^2 G^2
    stale = 4 * kappa * L_s**2 * alpha**2 * window * sigma2
    stale_c = 8 * kappa * L_s**2 * Delta * window / (L * q_max**2)  # R P/Q
    return dict(
        base,
        expr=base["expr"] + stale,
        inv_step_cap=inv_cap,
        rate_c=2 * Delta * inv_cap / q_min + stale_c,
    )


def analog_ap_mixed_parts() -> dict[str, sp.Expr]:
    r"""Theorem 2M (c) of docs/theory.md: Theorem 4' with per-block constants (micro-batch ``b``).

    Cap and :math:`\kappa` of Theorem 4' at the worst block's ``q_min``, ``q_max``; the noise and
    bias of the window are noise-weighted sums (Steps 0, 3, 4 blockwise):

    .. math::

        4\kappa L_s^2\alpha^2\bigl(\sqrt{D\,\overline{p^2}} + D\sqrt{\overline{G^2}}\bigr)^2
        \sigma^2/b .

    With ``p2_bar = q_max**2``, ``G2_bar = G_inf**2`` it is :func:`analog_ap_parts` exactly.
    """
    base = analog_mixed_parts(b)
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

