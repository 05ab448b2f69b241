"""The valid range of every constant of the bounds, and the relations between them.

:data:`PARAMETER_RANGES` gives each symbol name of :mod:`theory.symbols` that a bound may use its
range; :func:`parameter_array` checks one value (or array) against it and
:func:`check_relations` the ranges across parameters (``q_min <= q_max``, ``W_max < tau``, A3's
``G_inf <= (q_max - q_min)/2`` and Theorem 2M's block sums). :mod:`theory.complexity` checks
every input with them before a bound is evaluated.
"""

from __future__ import annotations

import numpy as np

from .errors import ParameterError, check_array

__all__ = ["PARAMETER_RANGES", "check_relations", "parameter_array"]

#: the kinds of range a parameter has: (low, high, low_open, high_open, integer)
_POSITIVE = (0.0, None, True, False, False)
_NONNEGATIVE = (0.0, None, False, False, False)
_UNIT_OPEN = (0.0, 1.0, True, True, False)
_COUNT = (1, None, False, False, True)
_COUNT_FROM_ZERO = (0, None, False, False, True)

#: valid range of every parameter (a kind above)
PARAMETER_RANGES: dict[str, tuple] = {
    **dict.fromkeys(("L", "L_s", "Delta", "sigma2", "q_min", "q_max", "tau", "W_max"), _POSITIVE),
    "G_inf": _NONNEGATIVE,
    "p2_bar": _POSITIVE,
    "G2_bar": _NONNEGATIVE,
    "G2_iter": _NONNEGATIVE,  # Theorem LF's iterate average of the noise-weighted G^2
    "beta": _NONNEGATIVE,
    "theta": _UNIT_OPEN,
    **dict.fromkeys(("n", "b", "B", "M"), _COUNT),
    "D": _COUNT_FROM_ZERO,
    # the local-SGD row (theory.local_sgd): replicas, averaging period, programming noise
    **dict.fromkeys(("R", "P"), _COUNT),
    "nu": _NONNEGATIVE,
    # Tiki-Taka's accumulate-and-transfer variant (Corollary TT0): transfer period, rate
    "T": _COUNT,
    "rho": _POSITIVE,
}


def parameter_array(name: str, value) -> np.ndarray:
    """``value`` as a float array, every element checked against :data:`PARAMETER_RANGES`."""
    low, high, low_open, high_open, integer = PARAMETER_RANGES.get(
        name, (0.0, None, True, False, False)
    )
    return check_array(
        name, value, low, high, low_open=low_open, high_open=high_open, integer=integer
    )


#: relative rounding slack of the A3 relation (constants computed from a device in floats)
_A3_SLACK = 1e-12


def check_relations(values: dict[str, np.ndarray]) -> None:
    """Cross-parameter ranges: ``q_min <= q_max``, ``W_max < tau``, ``G_inf <= (q_max-q_min)/2``."""
    pairs = (("q_min", "q_max", np.greater), ("W_max", "tau", np.greater_equal))
    for low_name, high_name, bad_if in pairs:
        if low_name in values and high_name in values:
            lo, hi = np.broadcast_arrays(values[low_name], values[high_name])
            op = "<=" if bad_if is np.greater else "<"
            _refuse_first(bad_if(lo, hi), lambda i, lo=lo, hi=hi, a=low_name, b=high_name, op=op: (
                f"{a}={lo.flat[i].item():g} is out of range; valid range: {a} {op} {b} = "
                f"{hi.flat[i].item():g}"))
    if {"G_inf", "q_min", "q_max"} <= set(values):
        # A3: G = (q_- - q_+)/2 with q_+, q_- in [q_min, q_max], so |G| <= (q_max - q_min)/2
        g, lo, hi = np.broadcast_arrays(values["G_inf"], values["q_min"], values["q_max"])
        limit = (hi - lo) / 2
        _refuse_first(g > limit * (1 + _A3_SLACK) + _A3_SLACK * hi, lambda i: (
            f"G_inf={g.flat[i].item():g} is out of range; valid range: G_inf <= "
            f"(q_max - q_min)/2 = {limit.flat[i].item():g} (A3: the responses lie in "
            "[q_min, q_max])"))
    _check_block_sums(values)


def _refuse_first(bad: np.ndarray, message) -> None:
    """Raise ``ParameterError(message(i))`` for the first flat index ``i`` where ``bad`` holds
    (``message`` is called at once, with its arrays bound)."""
    if bad.any():
        raise ParameterError(message(int(np.flatnonzero(bad)[0])))


def _check_block_sums(values: dict[str, np.ndarray]) -> None:
    """Theorem 2M: ``q_min^2 <= p2_bar <= q_max^2`` and ``G2_bar <= ((q_max - q_min)/2)^2``
    (noise-weighted means of per-block values that lie in those ranges); Theorem LF's ``G2_iter``
    is such a mean too."""
    if not {"q_min", "q_max"} <= set(values):
        return
    for name in ("p2_bar", "G2_bar", "G2_iter"):
        if name not in values:
            continue
        x, lo, hi = np.broadcast_arrays(values[name], values["q_min"], values["q_max"])
        if name == "p2_bar":
            low, high, text = lo * lo, hi * hi, "q_min^2 <= p2_bar <= q_max^2"
        else:
            low, high, text = np.zeros_like(lo), ((hi - lo) / 2) ** 2, \
                f"{name} <= ((q_max - q_min)/2)^2"
        slack = _A3_SLACK * (1 + high)
        bad = (x < low * (1 - _A3_SLACK) - slack) | (x > high * (1 + _A3_SLACK) + slack)
        _refuse_first(bad, lambda i, name=name, x=x, low=low, high=high, text=text: (
            f"{name}={x.flat[i].item():g} is out of range; valid range: {text} = "
            f"[{low.flat[i].item():g}, {high.flat[i].item():g}] (noise-weighted mean over "
            "the blocks, theory.mixed)"))
