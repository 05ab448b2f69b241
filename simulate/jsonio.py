"""The one converter of results to plain JSON values (numpy scalars and arrays, tuples, NaN).

:func:`to_json_value` walks dicts, lists, tuples and numpy arrays and returns plain Python: numpy
scalars become Python numbers, tuples and arrays lists, and booleans, integers, floats and strings
their exact built-in type. With ``strict=True`` (:func:`strict_json`) non-finite floats become
``None``, so ``json.dumps(..., allow_nan=False)`` writes strict JSON that every parser reads (NaN
marks a quantity that was not computed, e.g. the test accuracy of an oracle problem); with
``strict=False`` they stay floats, which is what the result cache stores
(:func:`simulate.cache.normalize_result`).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["strict_json", "to_json_value"]


def to_json_value(value, *, strict: bool = True):
    """``value`` as plain JSON values (see the module docstring); other objects are kept as is."""
    if isinstance(value, dict):
        return {k: to_json_value(v, strict=strict) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json_value(v, strict=strict) for v in value]
    if isinstance(value, np.ndarray):
        return to_json_value(value.tolist(), strict=strict)
    if isinstance(value, np.generic):
        return to_json_value(value.item(), strict=strict)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return None if strict and not math.isfinite(value) else float(value)
    if isinstance(value, str):
        return str(value)
    return value


def strict_json(value):
    """``value`` with numpy scalars and arrays as Python objects and non-finite floats as ``None``.

    NaN marks a quantity that was not computed (e.g. the test accuracy of an oracle problem);
    ``null`` keeps the output strict JSON, which every parser reads.
    """
    return to_json_value(value, strict=True)
