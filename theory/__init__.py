"""Symbolic theory of pipeline-parallel analog training: schedules, devices, bounds, complexities.

Everything here is sympy (compiled to numpy with ``lambdify`` where numbers are needed); the
numeric packages :mod:`bounds` and :mod:`simulate` build on it and never restate a formula.
"""

from .errors import DivergenceError, ParameterError, UnreachableTargetError, check_range
from .schedules import MODES, Schedule, cycles_for_iterations, schedule

__all__ = sorted([
    "DivergenceError",
    "MODES",
    "ParameterError",
    "Schedule",
    "UnreachableTargetError",
    "check_range",
    "cycles_for_iterations",
    "schedule",
])
