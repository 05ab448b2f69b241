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
  with a ``status`` and a ``message``;
- :mod:`~bounds.planning.relaxation`: the geometric-programming relaxation (``Relaxed``);
- :mod:`~bounds.planning.hardware`, :mod:`~bounds.planning.modes`, :mod:`~bounds.planning.kinds`:
  accelerator kinds, the data-parallel and hybrid cycle models, the best plan of each mode
  (``plan_modes``).

The curated names users need are also exported by :mod:`bounds`.
"""

from .hardware import (
    ANALOG,
    DIGITAL,
    KIND_TYPES,
    AcceleratorKind,
    KindsHardware,
    load_hardware,
    single_kind,
    with_digital,
)
from .kinds import (
    COSTS,
    STEP_GRID,
    ModeComparison,
    ModeLimits,
    ModePlan,
    layer_arrays,
    plan_modes,
    segment_times,
)
from .models import (
    HOSTS,
    Layer,
    Model,
    list_models,
    load_model,
    model_from_table,
)
from .modes import (
    CONSERVATIVE_NOTE,
    MODES,
    averaging_time_s,
    guarantee_values,
    programming_noise,
    stage_averaging_time_s,
    stage_guarantee,
)
from .partition import (
    KindPartition,
    KindTable,
    Partition,
    best_partition,
    kind_partitions,
)
from .planner import (
    check_arguments,
    check_calibration,
    forecast_choices,
    forecast_plan,
    plan,
    time_grid,
)
from .relaxation import (
    FAILED,
    GP_OPTIMAL,
    INFEASIBLE,
    NO_MODE,
    OPTIMAL_INACCURATE,
    SKIPPED,
    SOLVED,
    SOLVER_ERROR,
    GPModel,
    Relaxed,
    build_gp,
    rate_monomials,
    solve_relaxation,
)
from .results import (
    A4_NOTE,
    GUARANTEE_NOTE,
    OPTIMAL,
    RELAXATION_FAILED,
    TERMS,
    Candidate,
    ForecastRow,
    Plan,
    PlanForecast,
    RateTerms,
    SolveTimes,
    format_seconds,
    partition_summary,
)
from .search import Grid, GridSearch, SearchResult
from .strategies import (
    AnalogBounds,
    Cost,
    ForecastObjective,
    GuaranteeObjective,
    Objective,
    PlainCost,
    ProvedBounds,
    TikiTakaBounds,
    TransferCost,
)
from .tiki_taka import plan_tiki_taka
from .tiki_taka_results import (
    FORECAST_ONLY,
    GUARANTEED,
    NO_GUARANTEE,
    ModeGuarantee,
    TikiTakaPlan,
    TikiTakaRow,
    TransferCandidate,
)

__all__ = [
    "A4_NOTE",
    "ANALOG",
    "AcceleratorKind",
    "AnalogBounds",
    "CONSERVATIVE_NOTE",
    "COSTS",
    "Candidate",
    "Cost",
    "DIGITAL",
    "FAILED",
    "FORECAST_ONLY",
    "ForecastObjective",
    "ForecastRow",
    "GPModel",
    "GP_OPTIMAL",
    "GUARANTEED",
    "GUARANTEE_NOTE",
    "Grid",
    "GridSearch",
    "GuaranteeObjective",
    "HOSTS",
    "INFEASIBLE",
    "KIND_TYPES",
    "KindPartition",
    "KindTable",
    "KindsHardware",
    "Layer",
    "MODES",
    "ModeComparison",
    "ModeGuarantee",
    "ModeLimits",
    "ModePlan",
    "Model",
    "NO_GUARANTEE",
    "NO_MODE",
    "OPTIMAL",
    "OPTIMAL_INACCURATE",
    "Objective",
    "Partition",
    "PlainCost",
    "Plan",
    "PlanForecast",
    "ProvedBounds",
    "RELAXATION_FAILED",
    "RateTerms",
    "Relaxed",
    "SKIPPED",
    "SOLVED",
    "SOLVER_ERROR",
    "STEP_GRID",
    "SearchResult",
    "SolveTimes",
    "TERMS",
    "TikiTakaBounds",
    "TikiTakaPlan",
    "TikiTakaRow",
    "TransferCandidate",
    "TransferCost",
    "averaging_time_s",
    "best_partition",
    "build_gp",
    "check_arguments",
    "check_calibration",
    "forecast_choices",
    "forecast_plan",
    "format_seconds",
    "guarantee_values",
    "kind_partitions",
    "layer_arrays",
    "list_models",
    "load_hardware",
    "load_model",
    "model_from_table",
    "partition_summary",
    "plan",
    "plan_modes",
    "plan_tiki_taka",
    "programming_noise",
    "rate_monomials",
    "segment_times",
    "single_kind",
    "solve_relaxation",
    "stage_averaging_time_s",
    "stage_guarantee",
    "time_grid",
    "with_digital",
]
