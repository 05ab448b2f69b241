r"""The biased-gradient formulas (A2_beta): Proposition IO and its sharper form IO'.

Both bound analog SGD without a pipeline whose signal is :math:`h_k = \nabla f(W_k) + \beta_k +
\nu_k` with :math:`\lVert\beta_k\rVert \le \beta` (docs/theory.md, Propositions IO and IO'), and
both return the keyword parts of a :class:`~theory.theorems.Bound` as in
:mod:`theory.theorems.formulas`: :func:`analog_biased_parts` (Proposition IO, Lemmas 0.2/0.3,
Cauchy-Schwarz and Young on the bias) and :func:`analog_biased_sharp_parts` (Proposition IO',
Lemma A of Theorem 4' with the bias as its error term).
"""

from __future__ import annotations

import sympy as sp

from ..symbols import Delta, G_inf, K, L, alpha, beta, q_max, q_min, sigma2, theta
from .delayed import ap_kappa
from .formulas import analog_parts

__all__ = ["analog_biased_parts", "analog_biased_sharp_parts", "biased_sharp_factor"]


def analog_biased_parts(batch: sp.Expr) -> dict[str, sp.Expr]:
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


def biased_sharp_factor() -> sp.Expr:
    r"""The factor :math:`2\kappa` of :math:`\beta^2` in Proposition IO' (Step 5 there).

    .. math::

        2\kappa = \frac{1 + \theta^2}{1 - \theta} + \frac{r - 1}{2},
        \qquad r = \frac{q_{\max}}{q_{\min}},

    with :math:`\kappa` Theorem 4''s constant (:func:`theory.theorems.ap_kappa`, Lemma A at
    :math:`\kappa_2 = (1-\theta)/4`). It tends to 1 on a digital device (:math:`r = 1`,
    :math:`\theta \to 0`).
    """
    return 2 * ap_kappa()


def analog_biased_sharp_parts(batch: sp.Expr) -> dict[str, sp.Expr]:
    r"""Proposition IO' of docs/theory.md: Proposition IO with the bias paid by Lemma A.

    Steps 1-5 there (Step 2: Lemma A of Theorem 4' with :math:`e = \beta_k`, :math:`\kappa_2 =
    (1-\theta)/4`, :math:`\kappa_3 \le \kappa`): Theorem 2's expression at ``batch`` plus
    :math:`2\kappa\beta^2` (:func:`biased_sharp_factor`), at Proposition IO's step cap:

    .. math::

        \frac{2\Delta}{\alpha q_{\min} K} + \frac{L\alpha q_{\max}^2\sigma^2}{n q_{\min}}
        + \frac{G_\infty^2\sigma^2}{\theta n q_{\min}^2} + 2\kappa\beta^2,
        \qquad \alpha \le \frac{(1-\theta) q_{\min}}{2 L q_{\max}^2}.

    Rate form by Proposition 5 (a) with Theorem 2's :math:`P` and :math:`Q` (so Theorem 2's
    ``a`` and noise step), ``c = 2 Delta/(alpha_max q_min)`` and floor Theorem 2's plus
    :math:`2\kappa\beta^2`. At ``beta = 0`` it is Theorem 2 with half its step cap.
    """
    base = analog_parts(batch)
    bias = biased_sharp_factor() * beta**2  # Step 5: 2 c_3 beta^2 / q_min = 2 kappa beta^2
    inv_cap = 2 * base["inv_step_cap"]  # Step 4: alpha <= 2 kappa_2 q_min / (L q_max^2)
    return dict(
        base,
        expr=base["expr"] + bias,
        inv_step_cap=inv_cap,
        rate_c=2 * Delta * inv_cap / q_min,
        floor=base["floor"] + bias,
    )
