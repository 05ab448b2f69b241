"""Numeric use of the theory for given hardware: parameters, presets, evaluation, planning.

- :mod:`bounds.params`: ``HardwareParams``, ``ProblemParams``, ``PipelineConfig``, presets, TOML;
- :mod:`bounds.timing`: the one timing model turning clock cycles into seconds;
- :mod:`bounds.evaluation`: ``evaluate`` one bound, ``compare`` all of them side by side;
- :mod:`bounds.planning`: the planner room (models, partitions, the exact search and its
  strategies, the relaxation, the results; ``plan``, ``plan_tiki_taka``, ``plan_modes``);
- :mod:`bounds.commands`: the ``aimc-pipeline bounds`` and ``plan`` commands (argparse only there).

This module re-exports the curated API; tests, figures and benchmarks import from here (or from
:mod:`bounds.planning` for the planner's internals). The names are imported on first use
(:func:`theory.lazy.attach`), so importing one module of the package does not import them
all.
"""

from theory.lazy import attach

#: module -> the names of the curated API it gives
_EXPORTS = {
    "theory.schedules": (
        "in_flight",
    ),
    ".evaluation": (
        "BASELINE", "FLOAT_RANGE", "TOO_MANY", "BoundResult", "Comparison", "compare", "evaluate",
        "theory_values",
    ),
    ".params": (
        "DEFAULT_EPS", "DEFAULT_PRESET", "PIPELINE_LIMITS", "PLAN_MODES", "PRESET_TIMING_KEYS",
        "STEP_CHOICES", "TIMING_KEYS", "BoundsConfig", "HardwareParams", "PipelineConfig",
        "PlanHardware", "PlanLimits", "ProblemParams", "TransferSettings", "check_keys",
        "dump_config", "from_preset", "load_config", "read_toml", "validate_timing",
    ),
    ".planning": (
        "FORECAST_ONLY", "GUARANTEED", "MODES", "NO_GUARANTEE", "OPTIMAL", "RELAXATION_FAILED",
        "AcceleratorKind", "Candidate", "ForecastRow", "KindsHardware", "Layer", "ModeComparison",
        "ModeGuarantee", "Model", "ModeLimits", "ModePlan", "Partition", "Plan", "PlanForecast",
        "RateTerms", "Relaxed", "SolveTimes", "TikiTakaPlan", "TikiTakaRow", "TransferCandidate",
        "best_partition", "forecast_plan", "list_models", "load_hardware", "load_model",
        "model_from_table", "plan", "plan_modes", "plan_tiki_taka", "single_kind", "time_grid",
        "with_digital",
    ),
    ".timing": (
        "ROUNDING_SLACK", "TimingModel",
    ),
}

__getattr__, __dir__, __all__ = attach(__name__, _EXPORTS)
