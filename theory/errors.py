"""Exceptions shared by every package, and the one range check that produces them.

Every user-facing error names the parameter, the value it got and the valid range, in one line, so
that the command-line tools can print ``str(error)`` and exit non-zero without a traceback.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

__all__ = [
    "DivergenceError",
    "IterationLimitError",
    "ParameterError",
    "UnreachableTargetError",
    "check_array",
    "check_range",
    "show_value",
]


class ParameterError(ValueError):
    """A parameter is outside its valid range (the message names parameter, value and range)."""


class IterationLimitError(ParameterError):
    """A target so close to a bound's floor that its iteration count exceeds the int64 range."""


class UnreachableTargetError(ValueError):
    """A target accuracy ``eps`` at or below a bound's asymptotic floor.

    Attributes
    ----------
    eps : float
        The requested target.
    floor : float
        The bound's asymptotic error floor; only targets ``eps > floor`` are reachable.
    algorithm : str
        The registry entry whose floor it is.
    """

    def __init__(self, algorithm: str, eps: float, floor: float):
        self.algorithm, self.eps, self.floor = algorithm, float(eps), float(floor)
        super().__init__(
            f"eps={eps:.6g} is unreachable for {algorithm}: its asymptotic error floor is "
            f"{floor:.6g}; choose eps > {floor:.6g}"
        )


class DivergenceError(FloatingPointError):
    """A simulation blew up; the message names the step, the quantity and the learning rate."""

    def __init__(self, step: int, quantity: str, value: float, lr: float):
        self.step, self.quantity, self.value, self.lr = step, quantity, value, lr
        super().__init__(
            f"diverged at step {step}: {quantity} = {value:.6g} with learning rate lr={lr:g}; "
            "lower the learning rate"
        )


def check_range(
    name: str,
    value,
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
    integer: bool = False,
):
    """Return ``value`` if it is a finite number in the interval, else raise ParameterError.

    Parameters
    ----------
    name : str
        The parameter's user-facing name (a flag or TOML key).
    value : int or float
        The value to check.
    low, high : float, optional
        Interval ends (``None``: unbounded on that side).
    low_open, high_open : bool
        Whether the interval excludes that end.
    integer : bool
        Whether the value must be an integer.
    """
    lo = "(" if low_open or low is None else "["  # an infinite end is always open
    hi = ")" if high_open or high is None else "]"
    left = "-inf" if low is None else f"{low:g}"
    right = "inf" if high is None else f"{high:g}"
    rng = f"{lo}{left}, {right}{hi}"
    kind = "an integer" if integer else "a finite number"
    shown = show_value(value)
    # a Python int of any size is finite (math.isfinite would overflow converting it to float)
    finite = isinstance(value, Integral) or (isinstance(value, Real) and math.isfinite(value))
    if isinstance(value, bool) or not isinstance(value, Real) or not finite:
        raise ParameterError(f"{name}={shown} is not {kind}; valid range {rng}")
    if integer and int(value) != value:
        raise ParameterError(f"{name}={shown} is not an integer; valid range {rng}")
    bad_low = low is not None and (value <= low if low_open else value < low)
    bad_high = high is not None and (value >= high if high_open else value > high)
    if bad_low or bad_high:
        raise ParameterError(f"{name}={shown} is out of range; valid range {rng}")
    return int(value) if integer else value


#: longest repr of a value an error message shows in full
_SHOWN_CHARS = 40


def show_value(value) -> str:
    """``repr(value)`` for an error message, shortened when it is long (a 400-digit integer).

    >>> show_value(10**400)
    '1000000000...0000000000 (401 digits)'
    """
    if isinstance(value, Integral) and not isinstance(value, bool):
        digits = str(abs(int(value)))
        if len(digits) > _SHOWN_CHARS:
            sign = "-" if value < 0 else ""
            return f"{sign}{digits[:10]}...{digits[-10:]} ({len(digits)} digits)"
        return repr(int(value)) if type(value) is not int else repr(value)
    text = repr(value)
    if len(text) > _SHOWN_CHARS:
        return f"{text[:_SHOWN_CHARS - 10]}... ({type(value).__name__} of {len(text)} characters)"
    return text


def check_array(name: str, value, low: float | None = None, high: float | None = None,
                **interval: bool) -> np.ndarray:
    """:func:`check_range` element-wise: ``value`` as a float array, every element checked.

    ``interval`` holds :func:`check_range`'s keywords ``low_open``, ``high_open``, ``integer``.
    The error names the first offending element, as :func:`check_range` would for it alone.
    """
    low_open, high_open, integer = (interval.pop(k, False)
                                    for k in ("low_open", "high_open", "integer"))
    if interval:
        raise TypeError(f"check_array() got unexpected keywords {sorted(interval)}")
    try:
        arr = np.asarray(value, dtype=float)
    except OverflowError:  # an integer beyond the float range: check_range names it
        check_range(name, value, low, high, low_open=low_open, high_open=high_open,
                    integer=integer)
        raise ParameterError(
            f"{name}={show_value(value)} is beyond the float range (about 1.8e308)"
        ) from None
    except (TypeError, ValueError, RecursionError):
        raise ParameterError(
            f"{name}={show_value(value)} is not a number or an array of numbers"
        ) from None
    ok = np.isfinite(arr)
    if low is not None:
        ok &= arr > low if low_open else arr >= low
    if high is not None:
        ok &= arr < high if high_open else arr <= high
    if integer:
        ok &= arr == np.round(arr)
    if not ok.all():
        given = np.asarray(value)
        source = given if given.dtype.kind in "iu" else arr  # report an integer as given
        bad = source[~ok].flat[0].item()
        check_range(name, bad, low, high, low_open=low_open, high_open=high_open, integer=integer)
    return arr
