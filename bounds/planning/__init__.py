"""The planner room: what ``aimc-pipeline plan`` computes, from the model to the result objects.

- :mod:`~bounds.planning.models`: model descriptions (``Layer``, ``Model``, ``load_model``; the
  built-ins in ``model_data/``);
- :mod:`~bounds.planning.partition`: the exact layer-partition DP and the kinds DP;
- :mod:`~bounds.planning.strategies`: the search's strategies, an objective (the guarantee or a
  calibrated forecast) and a cost (the schedule's cycles, or those plus Tiki-Taka's transfers);
- :mod:`~bounds.planning.search`: ``GridSearch``, the one exact search (grids, lazy partition DPs,
  branch and bound);
- :mod:`~bounds.planning.planner`: ``plan``, ``time_grid``, ``forecast_plan`` (analog SGD);
  :mod:`~bounds.planning.tiki_taka`: ``plan_tiki_taka``;
- :mod:`~bounds.planning.results`, :mod:`~bounds.planning.tiki_taka_results`: what they return
  (``Plan``, ``Candidate``, ``PlanForecast``; ``TikiTakaPlan``, ``TransferCandidate``), each plan
  with a ``status``, a ``message`` and the problem constants it used
  (:mod:`~bounds.planning.constants`: ``ProblemConstants``, each constant with its source);
- :mod:`~bounds.planning.relaxation`: the geometric-programming relaxation (``Relaxed``);
- :mod:`~bounds.planning.hardware`, :mod:`~bounds.planning.modes`, :mod:`~bounds.planning.kinds`:
  accelerator kinds, the data-parallel and hybrid cycle models, the best plan of each mode
  (``plan_modes``).

The curated names users need are also exported by :mod:`bounds`. Names are imported on first
use (:func:`theory.lazy.attach`): importing one module of the room does not import the
others (the relaxation's cvxpy among them).
"""

from theory.lazy import attach

#: module -> the names it gives
_EXPORTS = {
    ".hardware": (
        "ANALOG", "DIGITAL", "KIND_TYPES", "AcceleratorKind", "KindsHardware", "load_hardware",
        "single_kind", "with_digital",
    ),
    ".constants": (
        "DEFAULT_SOURCE", "EPS_UNITS", "MODEL_PROBLEM_KEYS", "PLAN_CONSTANTS", "ProblemConstants",
    ),
    ".kinds": (
        "BASES", "COSTS", "STEP_GRID", "ModeComparison", "ModePlan", "layer_arrays", "plan_modes",
        "segment_times",
    ),
    ".search_size": ("check_search", "planned_model", "search_cost"),
    ".mode_limits": (
        "MODES", "ModeLimits",
    ),
    ".models": (
        "HOSTS", "Layer", "Model", "list_models", "load_model", "model_constants",
        "model_from_table",
    ),
    ".modes": (
        "CONSERVATIVE_NOTE", "MIXED_NOTE", "averaging_time_s", "guarantee_values",
        "programming_noise", "stage_averaging_time_s", "stage_guarantee", "stage_values",
    ),
    ".partition": (
        "KindPartition", "KindTable", "Partition", "best_partition", "kind_partitions",
    ),
    ".planner": (
        "check_arguments", "check_calibration", "check_step", "forecast_choices",
        "forecast_plan", "plan", "problem_constants", "time_grid",
    ),
    ".relaxation": (
        "FAILED", "GP_OPTIMAL", "INFEASIBLE", "NO_MODE", "OPTIMAL_INACCURATE", "SKIPPED", "SOLVED",
        "SOLVER_ERROR", "GPModel", "Relaxed", "build_gp", "rate_monomials", "solve_relaxation",
    ),
    ".results": (
        "A4_NOTE", "GUARANTEE_NOTE", "OPTIMAL", "RELAXATION_FAILED", "TERMS", "Candidate",
        "ForecastRow", "Plan", "PlanForecast", "RateTerms", "SolveTimes", "StepRecord",
        "format_seconds", "partition_summary",
    ),
    ".search": (
        "Grid", "GridSearch", "SearchResult",
    ),
    ".strategies": (
        "AnalogBounds", "Cost", "ForecastObjective", "ForecastStepObjective",
        "GuaranteeObjective", "Objective", "PlainCost", "ProvedBounds", "TikiTakaBounds",
        "TransferCost",
    ),
    ".tiki_taka": (
        "plan_tiki_taka",
    ),
    ".tiki_taka_results": (
        "FORECAST_ONLY", "GUARANTEED", "NO_GUARANTEE", "ModeGuarantee", "TikiTakaPlan",
        "TikiTakaRow", "TransferCandidate",
    ),
}

__getattr__, __dir__, __all__ = attach(__name__, _EXPORTS)
