"""Stochastic simulation of digital and analog SGD through pipelines, and pipeline timelines.

The package is five rooms (``docs/architecture.md``) and the run record that ties them together:

- :mod:`simulate.device`: one analog tile: digital, expected-analog and pulse-level updates
  (aihwkit's pulse trains with update and BL management, closed-form n-pulse maps and their
  compiled kernels), the IO non-idealities of its products, Tiki-Taka's two arrays, the
  pulse-response library;
- :mod:`simulate.pipeline`: discrete-event timelines of the schedules, per-stage delays and the
  ring buffer of stale weight versions, the divergence rule, data-parallel replicas;
- :mod:`simulate.problems`: the oracle problems and the digits networks, and their runs;
- :mod:`simulate.verification`: every bound against simulation as ``(empirical, bound)`` checks,
  the suites as case tables, predictions, the calibration and the speedup study's protocol;
- :mod:`simulate.execution`: cached, resumable sweeps (local pool or Dask) and progress bars;
- :class:`SimConfig` (:mod:`simulate.config`, composed of the parts of :mod:`simulate.specs`)
  and :func:`run` (:mod:`simulate.engine`): ``run(config, seed) -> Trace``
  for every mode, algorithm and problem.

Import from here or from a room (``from simulate.device import Updater``): module paths inside a
room may move.
"""

from .config import RULES, ConfigParts, NotApplicableError, SimConfig, device_from_config
from .device import PinnedWarning, Updater, digital_update, expected_update, pulsed_update
from .engine import run
from .execution import CorruptEntryError, ResultCache, SweepError, SweepResult, run_sweep
from .pipeline import Event, StaleVersions, Timeline, build_timeline, cycles_after, forward_delays
from .problems import (
    DigitsData,
    LeastSquares,
    NetworkRun,
    NetworkSpec,
    OracleProblem,
    Quadratic,
    load_digits_split,
    make_problem,
    run_network,
    train_network,
)
from .specs import (
    IOSpec,
    MixedSpec,
    PipelineSpec,
    ProblemSpec,
    ReplicaSpec,
    TikiTakaSpec,
    TrainingSpec,
    UpdateSpec,
)
from .trace import RunConstants, Trace
from .verification import (
    Check,
    Prediction,
    RankingAgreement,
    check_bound,
    cycles_to_eps,
    empirical_floor,
    ranking_agreement,
    run_suite,
)

__all__ = [
    "Check",
    "ConfigParts",
    "CorruptEntryError",
    "DigitsData",
    "Event",
    "IOSpec",
    "LeastSquares",
    "MixedSpec",
    "NetworkRun",
    "NetworkSpec",
    "NotApplicableError",
    "OracleProblem",
    "PinnedWarning",
    "PipelineSpec",
    "Prediction",
    "ProblemSpec",
    "Quadratic",
    "RULES",
    "RankingAgreement",
    "ReplicaSpec",
    "ResultCache",
    "RunConstants",
    "SimConfig",
    "StaleVersions",
    "SweepError",
    "SweepResult",
    "TikiTakaSpec",
    "Timeline",
    "Trace",
    "TrainingSpec",
    "UpdateSpec",
    "Updater",
    "build_timeline",
    "check_bound",
    "cycles_after",
    "cycles_to_eps",
    "device_from_config",
    "digital_update",
    "empirical_floor",
    "expected_update",
    "forward_delays",
    "load_digits_split",
    "make_problem",
    "pulsed_update",
    "ranking_agreement",
    "run",
    "run_network",
    "run_suite",
    "run_sweep",
    "train_network",
]
