"""Symbolic theory of pipeline-parallel analog training: schedules, devices, bounds, complexities.

Everything here is sympy (compiled to numpy with ``lambdify`` where numbers are needed); the
numeric packages :mod:`bounds` and :mod:`simulate` build on it and never restate a formula.

- :mod:`theory.schedules`: closed forms of the ``none``/``sync``/``async`` pipeline schedules;
- :mod:`theory.devices`: response-function families, devices and presets;
- :mod:`theory.theorems`: the registry of bounds, each with its provenance and proof;
- :mod:`theory.complexity`: iterations, samples and cycles to a target ``eps``;
- :mod:`theory.vocabulary`: the names of modes, algorithms, write semantics and presets (no
  sympy), :mod:`theory.errors`, :mod:`theory.limits`, :mod:`theory.fileio`,
  :mod:`theory.tables`, :mod:`theory.userfiles` (files users give): what every package shares.

Names are imported on first use (PEP 562, Scientific Python SPEC 1: :func:`theory.lazy.attach`),
so ``import theory`` loads neither sympy nor the registry; ``theory.MODES`` stays sympy-free,
``theory.REGISTRY`` builds the registry. :mod:`theory.symbols`, :mod:`theory.admissible`,
:mod:`theory.calibration` (its form: :mod:`theory.calibration_model`; its file:
:mod:`theory.calibration_file`), :mod:`theory.step_choice`, :mod:`theory.local_sgd`,
:mod:`theory.local_floor` (Corollary LF) and
:mod:`theory.commands` are used by their module path.
"""

from .lazy import attach

#: submodule -> the names ``theory`` re-exports from it
_NAMES = {
    ".vocabulary": (
        "ALGORITHMS", "CALIBRATED_ALGORITHMS", "CALIBRATED_MODES", "GRADIENT_SIGNALS",
        "MIXED_ENTRIES", "MODES", "PROVENANCES", "TRANSFER_SLICES", "WRITE_SEMANTICS",
        "list_presets",
    ),
    ".errors": (
        "DivergenceError", "IterationLimitError", "ParameterError", "UnreachableTargetError",
        "check_array", "check_range", "show_value",
    ),
    ".limits": (
        "MAX_ARRAY_BYTES", "MAX_BYTES_PER_ACTIVATION", "MAX_COUNT", "MAX_DEVICE_PULSES",
        "MAX_FILE_BYTES", "MAX_FILE_DEPTH", "MAX_GANTT_CELLS", "MAX_GRID_POINTS",
        "MAX_INTEGER_DIGITS", "MAX_LAYER_SIZE", "MAX_MODEL_LAYERS",
        "MAX_PULSES_PER_UPDATE", "MAX_TIMELINE_CELLS", "MAX_TOML_DEPTH", "MAX_UPDATES",
        "check_size",
    ),
    ".ranges": ("PARAMETER_RANGES",),
    ".fileio": ("atomic_write", "check_writable_dir", "strict_json", "to_json_value"),
    ".tables": ("markdown_table", "text_table"),
    ".compiled": ("CompiledExpr", "compile_expr"),
    ".schedules": (
        "CYCLES_PER_COLUMN", "QUANTITIES", "Schedule", "columns_moved", "cycles_after",
        "cycles_for_iterations", "evaluate_schedule", "in_flight", "in_flight_expr", "max_delay",
        "schedule", "transfer_cycles", "transfer_event_cycles", "write_delay",
    ),
    ".devices": ("Device", "DeviceConstants", "load_preset", "make_device", "preset_table"),
    ".mixed": (
        "Block", "MixedConstants", "SHARE_TOLERANCE", "digital_block", "mixed_constants",
        "shares_from_sizes",
    ),
    ".theorems": (
        "Bound", "LATEX_NAMES", "REGISTRY", "ap_b_floor_factor", "ap_general_parts",
        "ap_inv_step_cap", "ap_kappa", "ap_kappa_3", "ap_root", "bound_for", "bounds_for",
        "get_bound", "registry",
    ),
    ".complexity": (
        "BELOW_FLOOR", "ComplexityResult", "FloatRangeError", "REACHABLE",
        "SETTING_PREFIX", "TOO_MANY", "conditions_met", "cycles_expr", "evaluate_complexity",
        "evaluate_guarantee", "evaluate_mixed", "guarantee_entries", "iterations_expr",
        "latex_table", "samples_expr", "setting_conditions", "solve_rate",
    ),
}

#: the submodules reachable as ``theory.NAME`` before anything imported them
_SUBMODULES = (
    "admissible", "calibration", "calibration_file", "calibration_model", "commands", "compiled",
    "complexity", "devices", "errors", "fileio", "lazy", "limits", "local_sgd", "mixed", "ranges",
    "schedules", "step_choice", "symbols", "tables", "theorems", "userfiles", "vocabulary",
)

__getattr__, __dir__, __all__ = attach(__name__, _NAMES, _SUBMODULES)
