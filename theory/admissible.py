r"""Admissible steps and the free constant :math:`\theta` of the registry's bounds.

Every analog bound of :mod:`theory.theorems` holds for each :math:`\theta \in (0, 1)` whose step
cap admits the step,

.. math:: \alpha\,\mathrm{inv\_step\_cap}(\theta) \le 1 .

``inv_step_cap`` grows with :math:`\theta` (it carries :math:`1/(1 - \theta)`), so the admissible
set is :math:`(0, \theta_{\max}]` with :math:`\theta_{\max}` the root of
:math:`\alpha\,\mathrm{inv\_step\_cap}(\theta) = 1`, and it is empty when the step exceeds

.. math:: \sup_{\theta \in (0,1)} 1/\mathrm{inv\_step\_cap}(\theta)
          = 1/\mathrm{inv\_step\_cap}(0^+)

(:func:`step_cap`). This module holds the numerics over :math:`\theta`, on the registry's
expressions compiled once through :func:`theory.compiled.compile_expr`:

- :func:`theta_max`: the largest admissible :math:`\theta` (``brentq``, then refined to the last
  float, so :math:`\alpha\,\mathrm{inv\_step\_cap}` is ``<= 1`` there and ``> 1`` one float above);
- :func:`tightest_theta`: the admissible :math:`\theta` minimising the bound at ``K``,
  :math:`\alpha` (bounded Brent over :math:`(0, \theta_{\max}]`, compared with the value at
  :math:`\theta_{\max}` itself; every admissible :math:`\theta` gives a valid bound, so the
  minimiser need not be exact to be valid). For Theorem 2 and Corollary 3 the bound decreases in
  :math:`\theta`, so :math:`\theta_{\max}` is optimal; for Theorem 4 the floor
  :math:`\propto 1/\theta` and the staleness term :math:`\propto 1/(1-\theta)` make it interior;
- :func:`predicted_cycles`: the :math:`\theta` of fewest predicted clock cycles to a target
  (:func:`theory.complexity.evaluate_complexity`).

Constants are passed as a mapping from symbol *name* (:mod:`theory.symbols`) to value; names a
bound does not use are ignored.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy.optimize import brentq, minimize_scalar

from .compiled import CompiledExpr, compile_expr
from .complexity import PARAMETER_RANGES, ComplexityResult, evaluate_complexity
from .errors import ParameterError, UnreachableTargetError
from .symbols import K, alpha, theta
from .theorems import bounds_for, get_bound

__all__ = [
    "CompiledBound",
    "PREDICT_THETA_MARGIN",
    "ROOT_TOL",
    "THETA_HIGH",
    "THETA_TINY",
    "THETA_XATOL",
    "compiled_bound",
    "predicted_cycles",
    "predicted_guarantee",
    "step_cap",
    "theta_max",
    "tightest_theta",
]

#: a theta this close to 0 stands for the limit theta -> 0+ (lower end of the Brent search)
THETA_TINY = 1e-12
#: the largest theta tried: the step cap vanishes at theta = 1, so the root lies below
#: (``1 - 1e-15`` is a few floats below 1.0)
THETA_HIGH = 1.0 - 1e-15
#: absolute and relative tolerance of the ``brentq`` root before its refinement to the last float
ROOT_TOL = 1e-14
#: Brent's ``xatol`` in :func:`tightest_theta`, relative to theta_max
THETA_XATOL = 1e-10
#: :func:`predicted_cycles` searches theta in ``[m, 1 - m]`` with ``xatol = m``, and reports the
#: floor of an unreachable target at ``theta = 1 - m`` (the smallest floor of the search)
PREDICT_THETA_MARGIN = 1e-6


@dataclass(frozen=True)
class CompiledBound:
    """Numpy evaluators of one registry entry.

    Attributes
    ----------
    name : str
        Registry entry.
    parameters : tuple of str
        Sorted names of every constant of ``value`` and ``inv_cap`` but ``theta``, ``K``, ``alpha``.
    uses_theta : bool
        Whether the bound depends on :math:`\\theta` (``False`` for ``digital_sgd``).
    value : CompiledExpr
        The bound, called ``value(theta, K, alpha, values)``.
    inv_cap : CompiledExpr
        ``inv_step_cap``, called ``inv_cap(theta, values)``.
    """

    name: str
    parameters: tuple[str, ...]
    uses_theta: bool
    value: CompiledExpr
    inv_cap: CompiledExpr


@cache
def compiled_bound(name: str) -> CompiledBound:
    """The bound ``name`` and its ``inv_step_cap``, compiled once (:class:`ParameterError` for an
    unknown name)."""
    bound = get_bound(name)
    value = compile_expr(bound.expr, leading=(theta, K, alpha))
    inv_cap = compile_expr(bound.inv_step_cap, leading=(theta,))
    free = value.expr.free_symbols | inv_cap.expr.free_symbols
    return CompiledBound(
        name=name,
        parameters=tuple(sorted({*value.parameters, *inv_cap.parameters})),
        uses_theta=theta in free,
        value=value,
        inv_cap=inv_cap,
    )


def step_cap(name: str, values: Mapping[str, float]) -> float:
    r"""Supremum of the admissible steps of bound ``name``: :math:`1/\mathrm{inv\_step\_cap}(0^+)`.

    Parameters
    ----------
    name : str
        Registry entry.
    values : mapping
        The constants of ``inv_step_cap`` (by symbol name).
    """
    return 1.0 / float(compiled_bound(name).inv_cap(0.0, values))


def _check_admissible(name: str, lr: float, values: Mapping[str, float]) -> None:
    sup_step = step_cap(name, values)
    if lr > sup_step:
        raise ParameterError(
            f"lr={lr:g} is inadmissible for {name}: no theta in (0, 1) admits it; valid range "
            f"lr < {sup_step:.6g} (the step cap at theta -> 0 with the constants that held)"
        )


def _bits(x: float) -> int:
    return int(np.float64(x).view(np.int64))


def _from_bits(bits: int) -> float:
    return float(np.int64(bits).view(np.float64))


def _last_admissible(h, lo: float, hi: float) -> float:
    """The largest float ``t`` in ``[lo, hi)`` with ``h(t) <= 0``, given ``h(lo) <= 0 < h(hi)``
    (bisection on the floats: non-negative floats are ordered as their bit patterns)."""
    a, b = _bits(lo), _bits(hi)
    while b - a > 1:
        mid = (a + b) // 2
        if h(_from_bits(mid)) <= 0:
            a = mid
        else:
            b = mid
    return _from_bits(a)


def _theta_max(c: CompiledBound, lr: float, values: Mapping[str, float]) -> float:
    def h(t: float) -> float:  # <= 0 exactly where theta = t admits lr
        return lr * float(c.inv_cap(t, values)) - 1.0

    if h(THETA_HIGH) <= 0:
        return THETA_HIGH
    if h(0.0) > 0:  # lr within a rounding error of the supremum: only theta -> 0+ is left
        return 0.0
    root = brentq(h, 0.0, THETA_HIGH, xtol=ROOT_TOL, rtol=ROOT_TOL)
    # bracket the last admissible float around the root, widening by doubling steps
    step = math.ulp(root)
    if h(root) <= 0:
        lo, hi = root, min(root + step, THETA_HIGH)
        while h(hi) <= 0:
            lo, step = hi, 2 * step
            hi = min(hi + step, THETA_HIGH)
    else:
        lo, hi = max(root - step, 0.0), root
        while h(lo) > 0:
            hi, step = lo, 2 * step
            lo = max(lo - step, 0.0)
    return _last_admissible(h, lo, hi)


def theta_max(name: str, lr: float, values: Mapping[str, float]) -> float:
    r"""The largest :math:`\theta \in (0, 1)` whose step cap admits ``lr``.

    The last float :math:`t` with :math:`\alpha\,\mathrm{inv\_step\_cap}(t) \le 1` (the next float
    above violates it), found by ``brentq`` and refined by bisection on the floats; at most
    :data:`THETA_HIGH`.

    Parameters
    ----------
    name : str
        Registry entry whose bound depends on :math:`\theta`.
    lr : float
        Step :math:`\alpha` (> 0).
    values : mapping
        The constants of ``inv_step_cap`` (by symbol name).

    Raises
    ------
    ParameterError
        If the bound has no :math:`\theta`, or no :math:`\theta \in (0, 1)` admits ``lr`` (the
        message gives :func:`step_cap`).
    """
    c = compiled_bound(name)
    if not c.uses_theta:
        raise ParameterError(f"bound={name!r} does not depend on theta")
    _check_admissible(name, lr, values)
    return _theta_max(c, lr, values)


def tightest_theta(
    name: str, lr: float, steps: int, constants: Mapping[str, float],
) -> tuple[float | None, float]:
    r"""The admissible :math:`\theta` minimising bound ``name`` at ``K = steps``, ``alpha = lr``.

    Parameters
    ----------
    name : str
        Registry entry.
    lr : float
        Step size :math:`\alpha` (> 0).
    steps : int
        Iterations ``K``.
    constants : mapping
        Every parameter of the bound but ``theta`` (names of :mod:`theory.symbols`).

    Returns
    -------
    (theta, bound) : (float or None, float)
        ``theta`` is ``None`` for bounds without it (``digital_sgd``).

    Raises
    ------
    ParameterError
        If no :math:`\theta \in (0, 1)` admits ``lr`` (the message gives the supremum of the
        admissible steps).
    """
    c = compiled_bound(name)

    def value(t: float) -> float:
        return float(c.value(t, steps, lr, constants))

    _check_admissible(name, lr, constants)
    if not c.uses_theta:
        return None, value(0.0)
    top = max(_theta_max(c, lr, constants), THETA_TINY)
    best = minimize_scalar(value, bounds=(THETA_TINY, top), method="bounded",
                           options={"xatol": THETA_XATOL * top})
    candidates = [(value(top), top)]
    if best.success and np.isfinite(best.fun):
        candidates.append((float(best.fun), float(best.x)))
    bound, best_theta = min(candidates)
    return best_theta, bound


def predicted_cycles(
    name: str, eps: float, constants: Mapping[str, float],
) -> tuple[ComplexityResult, float | None]:
    r"""The theory's cycles to ``eps`` (:func:`theory.complexity.evaluate_complexity`), best theta.

    Any :math:`\theta \in (0, 1)` gives a valid prediction; the one of fewest cycles is chosen by a
    bounded Brent minimisation of :math:`\log` cycles over
    :math:`\theta \in [m, 1 - m]`, :math:`m =` :data:`PREDICT_THETA_MARGIN` (targets below a
    theta's floor count as infinitely many cycles).

    Returns
    -------
    (result, theta) : (ComplexityResult, float or None)
        ``theta`` is ``None`` for bounds without it.

    Raises
    ------
    UnreachableTargetError
        If ``eps`` is below the floor at every theta of the search.
    """
    required = set(get_bound(name).parameters)
    values = {p: v for p, v in constants.items() if p in PARAMETER_RANGES}

    def at(t: float | None) -> ComplexityResult:
        kwargs = values | ({"theta": t} if t is not None else {})
        return evaluate_complexity(name, eps, **kwargs)

    if "theta" not in required:
        return at(None), None

    def cost(t: float) -> float:
        try:
            return math.log(float(at(t).cycles))
        except UnreachableTargetError:
            return math.inf

    margin = PREDICT_THETA_MARGIN
    best = minimize_scalar(cost, bounds=(margin, 1 - margin), method="bounded",
                           options={"xatol": margin})
    if not np.isfinite(best.fun):
        raise UnreachableTargetError(name, eps, float(at(1 - margin).floor))
    return at(float(best.x)), float(best.x)


def predicted_guarantee(
    mode: str, eps: float, constants: Mapping[str, float], algorithm: str = "analog",
    write: str = "batch-mean",
) -> tuple[str, ComplexityResult, float | None]:
    r"""The fewest predicted cycles to ``eps`` over the proved bounds of ``(algorithm, mode)``
    under the ``write`` semantics.

    Each entry of :func:`theory.theorems.bounds_for` is a valid guarantee (for ``async``: Theorem
    4' and 4'B); each is evaluated by :func:`predicted_cycles` (best theta) and the one of fewest
    cycles is returned with its name.

    Returns
    -------
    (name, result, theta) : (str, ComplexityResult, float or None)

    Raises
    ------
    UnreachableTargetError
        If no entry reaches ``eps`` (the first entry's floor is named).
    """
    found, first_error = [], None
    for bound in bounds_for(mode, algorithm, write):
        try:
            result, theta = predicted_cycles(bound.name, eps, constants)
        except UnreachableTargetError as error:
            first_error = first_error or error
            continue
        found.append((float(result.cycles), bound.name, result, theta))
    if not found:
        raise first_error
    _, name, result, theta = min(found, key=lambda item: item[0])
    return name, result, theta
