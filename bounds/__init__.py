"""Numeric use of the theory for given hardware: parameters, presets, evaluation, planning.

- :mod:`bounds.params`: ``HardwareParams``, ``ProblemParams``, ``PipelineConfig``, presets, TOML;
- :mod:`bounds.timing`: the one timing model turning clock cycles into seconds;
- :mod:`bounds.evaluate`: ``evaluate`` one bound, ``compare`` all of them side by side;
- :mod:`bounds.models`, :mod:`bounds.partition`, :mod:`bounds.relaxation`, :mod:`bounds.planner`:
  the planner (with a calibration: predicted beside guaranteed time; ``plan_tiki_taka`` for
  Tiki-Taka runs, transfers counted);
- :mod:`bounds.hardware`, :mod:`bounds.modes`, :mod:`bounds.mode_planner`: accelerator kinds, the
  data-parallel and hybrid cycle models, the per-mode comparison;
- :mod:`bounds.commands`: the ``aimc-pipeline bounds`` and ``plan`` commands (argparse only there).
"""

from theory.schedules import in_flight

from .evaluate import BoundResult, Comparison, compare, evaluate
from .models import Layer, Model, list_models, load_model
from .params import (
    BoundsConfig,
    HardwareParams,
    PipelineConfig,
    PlanHardware,
    PlanLimits,
    ProblemParams,
    TransferSettings,
    dump_config,
    from_preset,
    load_config,
)
from .partition import Partition, best_partition
from .plan_result import Candidate, Plan, RateTerms, SolveTimes, TikiTakaPlan
from .planner import plan, plan_tiki_taka, time_grid
from .relaxation import Relaxed
from .timing import TimingModel

__all__ = [
    "BoundResult",
    "BoundsConfig",
    "Candidate",
    "Comparison",
    "HardwareParams",
    "Layer",
    "Model",
    "Partition",
    "PipelineConfig",
    "Plan",
    "PlanHardware",
    "PlanLimits",
    "ProblemParams",
    "RateTerms",
    "Relaxed",
    "SolveTimes",
    "TikiTakaPlan",
    "TimingModel",
    "TransferSettings",
    "best_partition",
    "compare",
    "dump_config",
    "evaluate",
    "from_preset",
    "in_flight",
    "list_models",
    "load_config",
    "load_model",
    "plan",
    "plan_tiki_taka",
    "time_grid",
]
