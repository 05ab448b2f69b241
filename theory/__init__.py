"""Symbolic theory of pipeline-parallel analog training: schedules, devices, bounds, complexities.

Everything here is sympy (compiled to numpy with ``lambdify`` where numbers are needed); the
numeric packages :mod:`bounds` and :mod:`simulate` build on it and never restate a formula.

- :mod:`theory.schedules`: closed forms of the ``none``/``sync``/``async`` pipeline schedules;
- :mod:`theory.devices`: response-function families, devices and presets;
- :mod:`theory.theorems`: the registry of bounds, each with its provenance and proof;
- :mod:`theory.complexity`: iterations, samples and cycles to a target ``eps``.
"""

from .complexity import (
    ComplexityResult,
    cycles_expr,
    evaluate_complexity,
    evaluate_guarantee,
    iterations_expr,
    latex_table,
    samples_expr,
)
from .devices import Device, DeviceConstants, list_presets, load_preset, make_device
from .errors import DivergenceError, ParameterError, UnreachableTargetError, check_range
from .schedules import MODES, Schedule, cycles_for_iterations, schedule
from .theorems import REGISTRY, Bound, get_bound

__all__ = [
    "Bound",
    "ComplexityResult",
    "Device",
    "DeviceConstants",
    "DivergenceError",
    "MODES",
    "ParameterError",
    "REGISTRY",
    "Schedule",
    "UnreachableTargetError",
    "check_range",
    "cycles_expr",
    "cycles_for_iterations",
    "evaluate_complexity",
    "evaluate_guarantee",
    "get_bound",
    "iterations_expr",
    "latex_table",
    "list_presets",
    "load_preset",
    "make_device",
    "samples_expr",
    "schedule",
]
