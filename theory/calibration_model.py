r"""The form of a calibration: its coefficients, terms, floor, inverse and the proofs' products.

:mod:`theory.calibration` (whose module docstring states the form) re-exports everything here;
this module holds the model itself, without the file:

.. math::

    \hat g(K) = \frac{c_K}{\alpha K + c_K/S} + \frac{c_{\mathrm{noise}}\alpha}{n}
              + \frac{c_{\mathrm{floor}}}{n} + \frac{c_{s1}\alpha^2 D}{b}
              + \frac{c_{s2}\alpha^2 D^2}{b}

(per-sample writes: :math:`c_{\mathrm{floor}}` and :math:`c_{s2}\alpha^2D^2` not divided by the
batch), :func:`model_terms` its terms, :func:`model_floor` its limit :math:`F` in ``K``,
:func:`iterations_to` its exact inverse :math:`K(\epsilon)`, :func:`term_shares` each term's
share of :math:`\hat g`, and :func:`theory_coefficients` what the proofs put where the form has
free coefficients.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

import numpy as np
import sympy as sp

from .compiled import compile_expr
from .errors import ParameterError
from .symbols import B as B_sym
from .symbols import D as D_sym
from .symbols import K as K_sym
from .symbols import alpha, n
from .symbols import b as b_sym
from .theorems import get_bound
from .vocabulary import CALIBRATED_MODES, WRITE_SEMANTICS

__all__ = ["BIAS_FORMS", "COEFFICIENTS", "MODEL_TERMS", "PROOF_FORMS", "TERM_OF",
           "iterations_to", "model_floor", "model_terms", "proof_label", "term_shares",
           "theory_coefficients", "valid_mode", "valid_write"]

#: the free coefficients of each mode, in order
COEFFICIENTS: dict[str, tuple[str, ...]] = {
    "sync": ("c_K", "c_noise", "c_floor"),
    "async": ("c_K", "c_noise", "c_floor", "c_s1", "c_s2"),
}
#: the names of the model's terms (:func:`model_terms`), in the order of the coefficients
MODEL_TERMS = ("transient", "noise", "floor", "staleness", "bias")
#: the term each coefficient scales
TERM_OF = dict(zip(COEFFICIENTS["async"], MODEL_TERMS, strict=True))

#: the registry entry whose form each (mode, write) model takes (its coefficients are the proved
#: ones): Corollary 3 and Theorem 4'B for batch-mean writes, Corollary 3PS and Theorem 4'PS for
#: per-sample writes
PROOF_FORMS = {("sync", "batch-mean"): "analog_sgd_sp", ("async", "batch-mean"): "analog_sgd_ap_b",
               ("sync", "per-sample"): "analog_sgd_sp_per_sample",
               ("async", "per-sample"): "analog_sgd_ap_per_sample"}
#: the entry whose :math:`\alpha^2 D^2` bias gives :math:`c_{s2}`: Theorem 4' for batch-mean
#: writes (4'B charges that bias to its floor, which holds only while
#: :math:`L_s^2D^2\alpha^2 \le (1-\theta)/(8\kappa q_{\max}^2)`; the design's larger steps pass
#: it), Theorem 4'PS itself for per-sample writes
BIAS_FORMS = {("async", "batch-mean"): "analog_sgd_ap",
              ("async", "per-sample"): "analog_sgd_ap_per_sample"}


def valid_mode(mode: str) -> str:
    """``mode`` if it is calibrated, else a one-line :class:`ParameterError`."""
    if mode not in CALIBRATED_MODES:
        raise ParameterError(f"mode={mode!r} is not calibrated; valid: "
                             f"{', '.join(CALIBRATED_MODES)}")
    return mode


def valid_write(write: str) -> str:
    """``write`` if it is a write semantics, else a one-line :class:`ParameterError`."""
    if write not in WRITE_SEMANTICS:
        raise ParameterError(f"write={write!r} is not valid; valid: {', '.join(WRITE_SEMANTICS)}")
    return write


def _staleness_parts(expr: sp.Expr) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    r"""The :math:`\alpha^2` part of ``expr`` split by the power of ``D``: the coefficients of
    :math:`D`, :math:`D^{3/2}` and :math:`D^2`."""
    part = sp.expand(sp.expand(expr).coeff(alpha, 2))
    one, cross, two = sp.Integer(0), sp.Integer(0), sp.Integer(0)
    for term in sp.Add.make_args(part):
        exponent = term.as_powers_dict().get(D_sym, 0)
        rest = sp.factor(term / D_sym**exponent)
        if exponent == 1:
            one += rest
        elif exponent == sp.Rational(3, 2):
            cross += rest
        elif exponent == 2:
            two += rest
        else:
            raise ParameterError(f"staleness term {term} has D^{exponent}: not in the form")
    return sp.factor(one), sp.factor(cross), sp.factor(two)


def _young(expr: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
    r"""``(s1, s2)`` with :math:`a D + x D^{3/2} + c D^2 \le s_1 D + s_2 D^2`: ``(a, c)`` without
    a cross term, else Young's split :math:`2\sqrt{aD}\sqrt{c}D \le aD + cD^2` applied to the
    square :math:`(\sqrt{aD} + \sqrt c D)^2` (``x^2 = 4ac``, which the registered entries have),
    ``(2a, 2c)``."""
    one, cross, two = _staleness_parts(expr)
    if cross == 0:
        return one, two
    return 2 * one, 2 * two


@cache
def _proved_coefficients(mode: str, write: str = "batch-mean") -> tuple[sp.Expr, ...]:
    r"""The products of constants the registry entry of ``(mode, write)`` has where the model has
    free coefficients (the ``alpha^-1 K^-1``, ``alpha`` and ``alpha^0`` parts, times the
    batch where the form divides by it; :math:`c_{s1}`, :math:`c_{s2}` from :func:`_young` of the
    :math:`\alpha^2` part, of :data:`BIAS_FORMS` for :math:`c_{s2}`). Per-sample entries are read
    at one sample per write for the noise (the form's ``1/n``, which Corollary 3PS and Theorem
    4'PS do not have, is 1 there)."""
    bound = get_bound(PROOF_FORMS[mode, valid_write(write)])
    if write == "per-sample":
        expr = sp.expand(bound.expr.subs({B_sym: 1}))
        batch_noise, batch_floor = sp.Integer(1), sp.Integer(1)
    elif mode == "sync":
        expr = sp.expand(bound.expr.subs(B_sym * b_sym, n).subs(B_sym, n / b_sym))
        batch_noise = batch_floor = n
    else:
        expr = sp.expand(bound.expr)
        batch_noise = batch_floor = b_sym
    transient = sp.factor(expr.coeff(K_sym, -1) * alpha)
    rest = sp.expand(expr - transient / (alpha * K_sym))
    noise = rest.coeff(alpha, 1) * batch_noise
    floor = rest.coeff(alpha, 0) * batch_floor
    out = [transient, noise, floor]
    if mode == "async":
        out = [sp.factor(x.subs({D_sym: 1, b_sym: 1} if write == "per-sample" else {D_sym: 1}))
               for x in out]  # Min(1, D) = 1 of 4'B's floor for D >= 1
        s1, _ = _young(expr)
        _, s2 = _young(get_bound(BIAS_FORMS[mode, write]).expr)
        out += [s1 * b_sym, s2 * (b_sym if write == "batch-mean" else 1)]
    return tuple(sp.factor(x) for x in out)


def theory_coefficients(mode: str, values: Mapping[str, float],
                        write: str = "batch-mean") -> dict[str, float]:
    r"""What the proofs put where the model has free coefficients, for these constants.

    Read off the registry entry :data:`PROOF_FORMS` of the mode and write (batch-mean:
    Corollary 3 for ``sync``, Theorem 4'B for ``async``; per-sample: Corollary 3PS and Theorem
    4'PS), at ``values["theta"]``: :math:`c_K = 2\Delta/q_{\min}`,
    :math:`c_{\mathrm{noise}} = L q_{\max}^2\sigma^2/q_{\min}`,
    :math:`c_{\mathrm{floor}} = G_\infty^2\sigma^2/(\theta q_{\min}^2)` (times 4'B's factor
    :math:`1 + \theta(1-\theta)q_{\min}^2/q_{\max}^2` for batch-mean ``async``),
    :math:`c_{s1} = 8\kappa L_s^2 q_{\max}^2\sigma^2` (4'B, and 4'PS after Young's split
    :math:`(\sqrt{aD} + \sqrt c D)^2 \le 2aD + 2cD^2` of its staleness square) and
    :math:`c_{s2} = 8\kappa L_s^2 G_\infty^2\sigma^2` (the :math:`D^2` part of that split, of
    Theorem 4' for batch-mean writes: :data:`BIAS_FORMS`). The fitted coefficients divided by
    these say how much of each worst case the problem really has.
    """
    valid_mode(mode)
    return {name: float(compile_expr(expr)(values)) for name, expr in
            zip(COEFFICIENTS[mode], _proved_coefficients(mode, write), strict=True)}


def proof_label(mode: str, write: str = "batch-mean") -> str:
    """The proof whose products :func:`theory_coefficients` gives (``"Theorem 4'PS"``, ...)."""
    return get_bound(PROOF_FORMS[valid_mode(mode), valid_write(write)]).proof


def _coefficient_arrays(mode: str, coefficients) -> list[np.ndarray]:
    """The coefficients of ``mode`` as arrays (a trailing axis of draws is allowed), padded with
    zeros to the five of :data:`MODEL_TERMS`."""
    names = COEFFICIENTS[mode]
    if not isinstance(coefficients, Mapping) and len(coefficients) != len(names):
        raise ParameterError(f"coefficients: {mode} needs {len(names)} ({', '.join(names)}), "
                             f"got {len(coefficients)}")
    values = [np.asarray(coefficients[name] if isinstance(coefficients, Mapping)
                         else coefficients[i], dtype=float) for i, name in enumerate(names)]
    return values + [np.zeros(())] * (len(MODEL_TERMS) - len(values))


def _samples(mode: str, B, b):
    return np.asarray(b, dtype=float) * (np.asarray(B, dtype=float) if mode == "sync" else 1.0)


def model_terms(mode: str, coefficients, K, *, lr, M, B=1, b=1, start=None,
                write: str = "batch-mean") -> dict[str, np.ndarray]:
    r"""The five terms of :math:`\hat g(K)` (module docstring) by :data:`MODEL_TERMS` name.

    ``coefficients`` is a mapping by :data:`COEFFICIENTS` name or a sequence in that order
    (arrays broadcast with ``K``, ``lr``, ``M``, ``B``, ``b``); ``staleness`` and ``bias`` are 0
    for ``sync``; ``start`` is :math:`S` (``None``: the unsaturated transient
    :math:`c_K/(\alpha K)`). ``write="per-sample"`` is the per-sample form: the floor
    :math:`c_{\mathrm{floor}}` and the bias :math:`c_{s2}\alpha^2D^2` are not divided by the
    batch (Theorem 4'PS: a write's bias does not average over the writes).
    """
    valid_mode(mode)
    c_k, c_noise, c_floor, c_s1, c_s2 = _coefficient_arrays(mode, coefficients)
    lr = np.asarray(lr, dtype=float)
    n = _samples(mode, B, b)
    delay = np.maximum(np.asarray(M, dtype=float) - 1.0, 0.0) if mode == "async" else 0.0
    each = valid_write(write) == "per-sample"
    b = np.asarray(b, dtype=float)
    return {
        "transient": c_k / (lr * np.asarray(K, dtype=float)
                            + (0.0 if start is None else c_k / float(start))),
        "noise": c_noise * lr / n,
        "floor": c_floor / (1.0 if each else n),
        "staleness": c_s1 * lr**2 * delay / b,
        "bias": c_s2 * lr**2 * delay**2 / (1.0 if each else b),
    }


def model_floor(mode: str, coefficients, *, lr, M, B=1, b=1, write: str = "batch-mean"
                ) -> np.ndarray:
    """:math:`F`, the model's limit ``K -> inf`` at step ``lr`` (squared-gradient units)."""
    terms = model_terms(mode, coefficients, np.inf, lr=lr, M=M, B=B, b=b, write=write)
    return terms["noise"] + terms["floor"] + terms["staleness"] + terms["bias"]


def iterations_to(mode: str, coefficients, eps, *, lr, M, B=1, b=1, start=None,
                  write: str = "batch-mean") -> np.ndarray:
    r"""The model's whole updates to ``eps``: :math:`\lceil(c_K/(\epsilon - F) - c_K/S)/\alpha
    \rceil` (at least 1; ``inf`` where :math:`\epsilon \le F`; without ``start`` no
    :math:`c_K/S`). Arrays broadcast (a trailing axis of coefficient draws too)."""
    coeffs = _coefficient_arrays(mode, coefficients)
    gap = np.asarray(eps, dtype=float) - model_floor(mode, coefficients, lr=lr, M=M, B=B, b=b,
                                                     write=write)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = (coeffs[0] / gap - (0.0 if start is None else coeffs[0] / float(start))) / np.asarray(
            lr, dtype=float)
    return np.where(gap > 0, np.maximum(np.ceil(k), 1.0), np.inf)


def term_shares(terms: Mapping[str, float]) -> dict[str, float]:
    """Each term's share of their sum (``nan`` where the sum is not finite and positive)."""
    total = float(sum(float(v) for v in terms.values()))
    ok = np.isfinite(total) and total > 0
    return {name: float(v) / total if ok else float("nan") for name, v in terms.items()}
