r"""A ``literature`` local-SGD row for data-parallel and hybrid training of analog replicas.

``R`` replicas each take local steps on a gradient of ``n`` samples and are averaged every ``P``
steps; averaging analog replicas means reading every tile, taking the mean digitally and
programming it back with pulses, which leaves a programming error :math:`\xi` with
:math:`\mathbb{E}\,\xi = 0`, :math:`\mathbb{E}\lVert\xi\rVert^2 = \nu` per averaging. The row is

.. math::

    \frac1K\sum_{k<K}\mathbb{E}\lVert\nabla f(\bar W_k)\rVert^2 \le
    \frac{2\Delta}{\alpha q_{\min} K}
    + \frac{L\alpha q_{\max}^2\sigma^2}{R\,n\,q_{\min}}
    + \frac{G_\infty^2\sigma^2}{\theta\, n\, q_{\min}^2}
    + \frac{L^2\alpha^2 q_{\max}^2\sigma^2 (P - 1)}{n\, q_{\min}}
    + \frac{L\nu}{\alpha\, q_{\min} P},
    \qquad \alpha \le \min\Big(\frac{(1-\theta) q_{\min}}{L q_{\max}^2}, \frac{1}{2LP}\Big).

**Source and status.** Provenance ``literature`` (order only). The first, second and fourth
terms are local SGD with identical data, Wang and Joshi (2021), "Cooperative SGD: a unified
framework for the design and analysis of local-update SGD algorithms", JMLR 22(213), Theorem 1
for fully synchronous averaging: :math:`2\Delta/(\alpha K) + L\alpha\sigma^2/(Rn) +
L^2\alpha^2\sigma^2(P-1)/n` under :math:`\alpha L + \alpha^2 L^2 P(P-1) \le 1` (implied by
:math:`\alpha \le 1/(2LP)`); see also Stich (2019), "Local SGD converges fast and communicates
little", ICLR, for the convex case. The response constants ``q_min, q_max`` and the floor
:math:`G_\infty^2\sigma^2/(\theta n q_{\min}^2)` (one replica's batch, not divided by ``R``) enter
as in Theorem 2 of ``docs/theory.md``: **not proved** for local steps on analog replicas. The
last term is the **programming noise**: by the descent lemma each averaging adds at most
:math:`L\nu/2` to :math:`\mathbb{E} f`, there are at most :math:`K/P` of them, and the telescoped
sum of Theorem 2's Step 5 divided by :math:`\alpha q_{\min} K/2` gives :math:`L\nu/(\alpha q_{\min}
P)`. At ``R = 1``, ``P = 1``, ``nu = 0`` the row is Theorem 2's expression.

Because the noise term grows as the step shrinks, the row has no rate form at the best step; at a
fixed step it is :math:`c(\alpha)/K + F(\alpha)` and inverts exactly (:func:`iterations_at_step`);
the planner minimises over a grid of steps below the row's cap. The row is an order with analog
constants attached, not proved for analog replicas, so what it gives at any step is an
**estimate**, not a bound (:attr:`bounds.planning.kinds.ModePlan.basis`). :func:`parts` gives
the fixed-step rate form at the step cap (``rate_a = 0``), the shape a registry entry needs.

**Timing of one averaging** (the one rule, shared by :mod:`bounds.modes` in seconds and
:mod:`simulate.pipeline.replicas` in clock cycles): every tile is *read* one row per MVM,
:math:`r\,t_\mathrm{read}`, and the mean is *programmed* back row by row with closed-loop pulses,
at most :math:`n_p = \lceil (w_{\max} - w_{\min})/\Delta w_{\min}\rceil` pulses (a full-range
write) and one verify read per row, :math:`r\,(n_p t_\mathrm{pulse} + t_\mathrm{read})`
(:func:`averaging_phases`, :func:`full_range_pulses`); after ``k`` updates
:math:`\lfloor k/P\rfloor` averagings have run (:func:`averagings_after`).

Symbols here (not in :mod:`theory.symbols`): ``R`` replicas, ``P`` averaging period, ``nu``.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from .symbols import Delta, G_inf, K, L, alpha, eps, n, q_max, q_min, sigma2, theta

__all__ = [
    "CONDITIONS",
    "P",
    "R",
    "REFERENCE",
    "averaging_phases",
    "averagings_after",
    "expr",
    "floor_at_step",
    "full_range_pulses",
    "inv_step_cap",
    "iterations_at_step",
    "nu",
    "parts",
]

R = sp.Symbol("R", positive=True, integer=True)  #: replicas averaged
P = sp.Symbol("P", positive=True, integer=True)  #: local steps between averagings
nu = sp.Symbol("nu", nonnegative=True)  #: E||xi||^2 of the programming error per averaging

REFERENCE = (
    "Wang and Joshi 2021 (Cooperative SGD, JMLR 22(213), Theorem 1), local SGD with identical "
    "data; Stich 2019 (ICLR); analog constants as in Theorem 2 (order only) and the programming-"
    "noise term L nu/(alpha q_min P) from the descent lemma at each averaging"
)
CONDITIONS = (
    "A1, A2 (per replica, identical data), A3 on every replica",
    "averaging every P local steps of R replicas; the mean is programmed back with error xi, "
    "E xi = 0, E||xi||^2 = nu",
    "alpha <= min((1 - theta) q_min/(L q_max^2), 1/(2 L P))",
    "order only: the analog response constants enter as in Theorem 2, not proved for local steps",
)


def full_range_pulses(weight_range: float, dw_min: float) -> int:
    r""":math:`n_p = \lceil \mathrm{range}/\Delta w_{\min}\rceil`: the pulses of a full-range
    closed-loop write (``weight_range = w_max - w_min``, weight units; ``dw_min`` likewise)."""
    return math.ceil(weight_range / dw_min)


def averaging_phases(rows, pulses, read, pulse):
    r"""The read and the program phase of one averaging of a tile of ``rows`` rows.

    ``(rows * read, rows * (pulses * pulse + read))``: one MVM per row to read it, then per row
    ``pulses`` pulses of length ``pulse`` and one verify read of length ``read`` (any time unit:
    seconds in :mod:`bounds.modes`, clock cycles in :mod:`simulate.pipeline.replicas`). Vectorised.
    """
    return rows * read, rows * (pulses * pulse + read)


def averagings_after(updates, period):
    r""":math:`\lfloor k/P\rfloor`: averagings done after ``updates`` updates (every ``period``)."""
    return np.floor_divide(updates, period)


def _noise_free() -> sp.Expr:
    """Every term but the programming noise and the ``1/K`` term (the step-dependent floor)."""
    return (L * alpha * q_max**2 * sigma2 / (R * n * q_min)
            + G_inf**2 * sigma2 / (theta * n * q_min**2)
            + L**2 * alpha**2 * q_max**2 * sigma2 * (P - 1) / (n * q_min))


def floor_at_step() -> sp.Expr:
    r""":math:`F(\alpha)`: every term of :func:`expr` but :math:`2\Delta/(\alpha q_{\min} K)`."""
    return _noise_free() + L * nu / (alpha * q_min * P)


def expr() -> sp.Expr:
    """The bound (module docstring) in ``K``, ``alpha`` and the constants."""
    return 2 * Delta / (alpha * q_min * K) + floor_at_step()


def inv_step_cap() -> sp.Expr:
    r""":math:`1/\alpha_{\max} = \max(L q_{\max}^2/((1-\theta)q_{\min}),\ 2LP)`."""
    return sp.Max(L * q_max**2 / ((1 - theta) * q_min), 2 * L * P)


def iterations_at_step() -> sp.Expr:
    r"""The ``K`` at which :func:`expr` equals ``eps`` at a fixed step:
    :math:`K = 2\Delta/(\alpha q_{\min}(\epsilon - F(\alpha)))` (valid for
    :math:`\epsilon > F(\alpha)`; the bound decreases in ``K``)."""
    return 2 * Delta / (alpha * q_min * (eps - floor_at_step()))


def parts() -> dict[str, sp.Expr]:
    """The fixed-step rate form at the step cap, keyed like a registry entry's parts.

    ``rate_a = 0``, ``rate_c = 2 Delta inv_cap/q_min`` and ``floor = F(1/inv_cap)``; batch
    ``R n`` samples per step, all replicas' (what the simulator's trace counts); the replicas run
    in parallel, so the cycles of a step are one replica's (:func:`theory.complexity.cycles_expr`
    sets ``R = 1`` in the batch). Registered as ``local_sgd`` (:mod:`theory.theorems`; ranges
    of ``R``, ``P``, ``nu`` in :data:`theory.complexity.PARAMETER_RANGES`).
    """
    cap = inv_step_cap()
    return dict(
        expr=expr(),
        inv_step_cap=cap,
        rate_a=sp.Integer(0),
        rate_c=2 * Delta * cap / q_min,
        floor=floor_at_step().subs(alpha, 1 / cap),
        noise_step=1 / cap,
        batch=R * n,
    )
