"""Stochastic simulation of digital and analog SGD through pipelines, and pipeline timelines.

- :mod:`simulate.timeline`: dependency-driven discrete-event timelines of the schedules;
- :mod:`simulate.analog`: digital, expected-analog and pulse-level updates (closed-form n-pulse
  maps, aihwkit's pulse trains with update and BL management);
- :mod:`simulate.mvm`: the analog forward/backward products with aihwkit's IO non-idealities;
- :mod:`simulate.tiki_taka`: Tiki-Taka's two arrays and transfers;
- :mod:`simulate.replicas`: data-parallel and hybrid replicas averaged and programmed back;
- :mod:`simulate.problems`, :mod:`simulate.networks`, :mod:`simulate.digits`: oracle problems and
  digits networks written stage by stage;
- :mod:`simulate.staleness`: what the engine and the networks share (per-stage delays, cycles, the
  ring buffer of stale weight versions, the divergence rule);
- :mod:`simulate.engine`: ``run(config, seed) -> Trace`` for every mode, algorithm and problem;
- :mod:`simulate.sweep`, :mod:`simulate.cache`: cached, resumable sweeps (local pool or Dask);
- :mod:`simulate.verify`: every bound against simulation, as ``(empirical, bound)`` checks;
- :mod:`simulate.prediction`: a check read as a prediction (cycles to eps, guaranteed vs
  simulated);
- :mod:`simulate.suites`: the verification suites as case tables, and how often the guarantee
  ranks two checks like the simulation;
- :mod:`simulate.calibrate`: the calibration of the theorems' rate form to simulated ensembles;
- :mod:`simulate.tuning`: the speedup study's protocol (tuned steps, time to target, CIs).
"""

from .analog import Updater, digital_update, expected_update, pulsed_update
from .cache import CorruptEntryError, ResultCache
from .config import SimConfig, device_from_config
from .digits import DigitsData, load_digits_split
from .engine import make_problem, run
from .networks import NetworkRun, NetworkSpec, run_network, train_network
from .prediction import Prediction
from .problems import LeastSquares, OracleProblem, Quadratic
from .staleness import PinnedWarning, StaleVersions, cycles_after, forward_delays
from .suites import RankingAgreement, ranking_agreement, run_suite
from .sweep import SweepError, SweepResult, run_sweep
from .timeline import Event, Timeline, build_timeline
from .trace import RunConstants, Trace
from .verify import Check, check_bound, cycles_to_eps, empirical_floor

__all__ = [
    "Check",
    "CorruptEntryError",
    "DigitsData",
    "Event",
    "LeastSquares",
    "NetworkRun",
    "NetworkSpec",
    "OracleProblem",
    "PinnedWarning",
    "Prediction",
    "Quadratic",
    "RankingAgreement",
    "ResultCache",
    "RunConstants",
    "SimConfig",
    "StaleVersions",
    "SweepError",
    "SweepResult",
    "Timeline",
    "Trace",
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
