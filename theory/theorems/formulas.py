r"""The formulas of the registry without a pipeline delay, each written once (as ``parts``).

Every function returns the keyword parts of a :class:`~theory.theorems.Bound` (``expr``,
``inv_step_cap``, ``rate_a``, ``rate_c``, ``floor``, ``noise_step``, ``batch`` and, where a
theorem needs it, ``min_iterations``) for one theorem of ``docs/theory.md`` or one published
order: Theorem 1 (:func:`digital_parts`), Theorem 2 and Corollary 3 (:func:`analog_parts`),
Corollary 3PS (:func:`analog_per_sample_parts`), the companion theorems (:func:`companion_parts`,
:func:`tiki_taka_parts`), Corollary TT0 (:func:`tiki_taka_reset_parts`), Theorem 2M (a), (b)
(:func:`analog_mixed_parts`) and the literature rows (:func:`literature_parts`). The
asynchronous pipeline's are in :mod:`theory.theorems.delayed`, the biased-gradient rows
(Propositions IO and IO') in :mod:`theory.theorems.biased`.
"""

from __future__ import annotations

import sympy as sp

from ..symbols import (
    Delta,
    G2_bar,
    G2_iter,
    G_inf,
    K,
    L,
    T,
    W_max,
    alpha,
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
    "analog_mixed_parts",
    "analog_parts",
    "analog_per_sample_parts",
    "companion_parts",
    "digital_parts",
    "literature_parts",
    "local_floor_parts",
    "tiki_taka_parts",
    "tiki_taka_reset_parts",
]


def analog_parts(batch: sp.Expr) -> dict[str, sp.Expr]:
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


def analog_per_sample_parts(batch: sp.Expr) -> dict[str, sp.Expr]:
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
    return dict(analog_parts(sp.Integer(1)), batch=batch)


def digital_parts() -> dict[str, sp.Expr]:
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


def companion_parts() -> dict[str, sp.Expr]:
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


def tiki_taka_parts(batch: sp.Expr) -> dict[str, sp.Expr]:
    r"""The companion's Tiki-Taka statement (NeurIPS 2024) at its published order, batch ``batch``.

    Exact convergence (no floor) at the rate of SGD; the constants are not verified here, so the
    unknown constant :math:`C_{TT}` is set to 1 (stated in the conditions):

    .. math::

        \sqrt{\frac{L\Delta\sigma^2}{n K}} + \frac{L\Delta}{K}, \qquad \alpha \le 1/L .
    """
    return literature_parts(batch, sp.Integer(1))


def tiki_taka_reset_parts(batch: sp.Expr) -> dict[str, sp.Expr]:
    r"""Corollary TT0 of docs/theory.md: Tiki-Taka with gamma = 0, slice all, a digital fast
    buffer reset after each transfer, transfer every ``T`` updates (Steps 1-5 there).

    C is analog SGD (Theorem 2, :func:`analog_parts`) with step :math:`\eta = \rho\alpha^2 T`
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
    base = analog_parts(batch * T)
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




def analog_mixed_parts(batch: sp.Expr) -> dict[str, sp.Expr]:
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

    With ``p2_bar = q_max**2``, ``G2_bar = G_inf**2`` it is :func:`analog_parts` exactly.
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




def local_floor_parts(parts: dict[str, sp.Expr]) -> dict[str, sp.Expr]:
    r"""Theorem LF of docs/theory.md: a row's ``parts`` with the worst case of :math:`|G|` replaced
    by the iterate average (Steps 1-3 there).

    .. math:: G_\infty \to \sqrt{\overline{G^2}_K}, \qquad \overline{G^2} \to \overline{G^2}_K,
        \qquad \overline{G^2}_K = \frac1K\sum_{k<K}\mathbb{E}\sum_i s_i G_i(W_k)^2

    (``G2_iter``, :math:`s_i` the noise's share of coordinate :math:`i`, A2S). Every other
    symbol, the step cap (free of :math:`G`) and ``batch`` are unchanged; at
    ``G2_iter = G_inf**2`` (``G2_bar``) it is ``parts`` exactly.
    """
    local = {G_inf: sp.sqrt(G2_iter), G2_bar: G2_iter}
    return {key: sp.sympify(value).subs(local, simultaneous=True) for key, value in parts.items()}


def literature_parts(batch: sp.Expr, delay_factor: sp.Expr) -> dict[str, sp.Expr]:
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
