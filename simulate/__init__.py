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
room may move. Names are imported on first use (:func:`theory.lazy.attach`): ``import simulate``
loads neither numba's kernels nor sympy, and ``aimc-pipeline simulate --help`` neither.
"""

from theory.lazy import attach

#: module -> the names it gives
_EXPORTS = {
    ".config": (
        "RULES", "ConfigParts", "NotApplicableError", "SimConfig", "device_from_config",
    ),
    ".device": (
        "PinnedWarning", "Updater", "digital_update", "expected_update", "pulsed_update",
    ),
    ".engine": (
        "run",
    ),
    ".execution": (
        "CorruptEntryError", "ResultCache", "SweepError", "SweepResult", "run_sweep",
    ),
    ".pipeline": (
        "Event", "StaleVersions", "Timeline", "build_timeline", "cycles_after", "forward_delays",
    ),
    ".problems": (
        "DigitsData", "LeastSquares", "NetworkRun", "NetworkSpec", "OracleProblem", "Quadratic",
        "load_digits_split", "make_problem", "run_network", "train_network",
    ),
    ".specs": (
        "IOSpec", "MixedSpec", "PipelineSpec", "ProblemSpec", "ReplicaSpec", "TikiTakaSpec",
        "TrainingSpec", "UpdateSpec",
    ),
    ".trace": (
        "RunConstants", "Trace",
    ),
    ".verification": (
        "Check", "Prediction", "RankingAgreement", "check_bound", "cycles_to_eps",
        "empirical_floor", "ranking_agreement", "run_suite",
    ),
}

#: the rooms and modules reachable as ``simulate.NAME`` before anything imported them
_SUBMODULES = (
    "commands", "config", "device", "engine", "execution", "pipeline", "problems", "rng", "specs",
    "trace", "verification",
)

__getattr__, __dir__, __all__ = attach(__name__, _EXPORTS, _SUBMODULES)
