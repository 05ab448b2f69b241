r"""Calibration (issue 14, item 2): fit the theorems' form to simulated ensembles of one problem.

A **design** is a small set of points ``(mode, M, B, b, lr)`` on one oracle problem
(:class:`CalibrationProblem`: quadratic or least squares with given dimension, noise, device and
root seed). Each step is a fraction of the mode's proved step cap on the weight region
``[-W, W]`` (:func:`simulate.verification.checks.region_step_cap` of ``analog_sgd_sp`` /
``analog_sgd_ap``), so the design covers the steps a plan can run at. Every point is one ensemble of
``R`` seeds, run through the cached sweep runner (:func:`simulate.execution.sweep.run_sweep`: local
processes or Dask, with progress; function :func:`calibration_run`).

**Tiki-Taka.** With :attr:`CalibrationProblem.algorithm` ``"tiki-taka"`` the same design (and
the same steps, fractions of the analog cap) runs Tiki-Taka with the problem's transfer settings;
the fit is the same form (its floor coefficient free, it may come out nil), the file records the
algorithm and the transfers (``problem``), and every cycle count of the held-out check includes
the transfers (:func:`theory.schedules.transfer_cycles`).

**Observations.** For each point the ensemble mean running average
:math:`\bar g(K) = \frac1R\sum_r\frac1K\sum_{k<K}\lVert\nabla f(W^{(r)}_k)\rVert^2` gives, at
:data:`TARGETS` targets :math:`\epsilon_j` log-spaced between ``1.1`` times the curve's minimum
and half of its start :math:`S = \bar g(1)`, the first ``K_j`` with :math:`\bar g(K_j) \le
\epsilon_j` (:func:`simulate.verification.prediction.first_hit`, the measure of cycles to eps of
:mod:`simulate.verification.prediction`).

**Fit.** Per mode, the coefficients :math:`c \ge 0` of :mod:`theory.calibration` minimise the sum
of squared log residuals :math:`\log\hat g(K_j; c) - \log\epsilon_j` (``scipy.optimize.
least_squares``, trust region reflective, on :math:`\log c`).

**Intervals.** A bootstrap over seeds: each of ``resamples`` replicates resamples the ``R`` seeds
of every point with replacement (:func:`simulate.verification.prediction.bootstrap_means` with
:func:`simulate.rng.bootstrap_generator` of the root seed: the same bits every time), recomputes
the hitting times of the same targets and refits; the interval of each coefficient is the central
``ci_level`` percentile interval of the refits (widened to hold the fit itself, which a
coefficient at its lower bound ``1e-12``, i.e. a term the data do not show, can leave), and the
refits are kept (a forecast's interval is
that of the joint fit, :func:`theory.calibration.forecast_iterations`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import least_squares

from theory.calibration import (
    CALIBRATED_ALGORITHMS,
    COEFFICIENTS,
    Calibration,
    ModeFit,
    model_terms,
    problem_fingerprint,
)
from theory.errors import ParameterError, check_range
from theory.schedules import transfer_cycles, transfer_event_cycles

from ..config import ORACLE_PROBLEMS, SimConfig, device_from_config
from ..device import oracle_tiles
from ..engine import run
from ..execution import package_version, run_sweep
from ..pipeline import cycles_after
from ..problems import make_problem
from ..rng import bootstrap_generator
from .checks import config_for, region_step_cap
from .prediction import bootstrap_means, first_hit, running_average

__all__ = [
    "ASYNC_DESIGN",
    "CALIBRATE_FORMAT",
    "CALIBRATION_QUICK",
    "CALIBRATION_STANDARD",
    "CalibrationProblem",
    "DesignPoint",
    "FRACTIONS",
    "HELDOUT_TOLERANCE",
    "HeldOut",
    "SUITE_FRACTIONS",
    "SYNC_DESIGN",
    "SuiteForecast",
    "TARGETS",
    "calibrate",
    "calibration_run",
    "design",
    "draw_instance",
    "fit_calibration",
    "grid_target",
    "heldout_check",
    "hitting_run",
    "observations",
    "problem_of",
    "simulate_grid",
    "suite_forecasts",
]

#: bumped when the meaning of a cached calibration run changes (part of every sweep point)
CALIBRATE_FORMAT = 1
#: the registry entry whose step cap sets the design's steps, per mode
_CAP_BOUND = {"sync": "analog_sgd_sp", "async": "analog_sgd_ap"}
#: (M, B, b) of the synchronous design points
SYNC_DESIGN = ((1, 1, 1), (2, 4, 1), (4, 2, 2), (8, 8, 1))
#: (M, B, b) of the asynchronous design points (B = 1: one update per micro-batch)
ASYNC_DESIGN = ((2, 1, 1), (4, 1, 2), (8, 1, 1), (16, 1, 1))
#: the steps of the design as fractions of the mode's step cap
FRACTIONS = (0.1, 0.3, 0.9)
#: hitting-time targets per design point
TARGETS = 8
#: the settings of the standard and the quick design (``steps`` K, ensemble ``seeds`` R,
#: bootstrap ``resamples``)
CALIBRATION_STANDARD = {"steps": 3000, "seeds": 32, "resamples": 200}
CALIBRATION_QUICK = {"steps": 1500, "seeds": 12, "resamples": 50,
         "sync": ((2, 4, 1), (8, 1, 1)), "async": ((2, 1, 1), (8, 1, 1)), "fractions": (0.2, 0.8)}
#: lower bound of every coefficient in the fit (log space): below it a term is nil
_TINY = 1e-12
#: the :class:`CalibrationProblem` fields of Tiki-Taka runs (recorded only for tiki-taka)
_TRANSFER_FIELDS = ("algorithm", "transfer_every", "transfer_slice")


@dataclass(frozen=True)
class CalibrationProblem:
    """The oracle problem a calibration describes (the :class:`SimConfig` fields that fix it).

    Attributes
    ----------
    problem : {"quadratic", "least-squares"}
    dim : int
        Dimension of the quadratic (at least the largest ``M`` of the design).
    sigma2 : float
        Per-sample gradient-noise variance.
    device : str
        Device preset or family (:class:`SimConfig`).
    tau : float or None
        Range of a family device (``None``: the preset's own).
    weight_bound : float
        ``W``: the device constants are those on ``[c - W, c + W]`` around the device's centre
        ``c`` (weight units), as ``aimc-pipeline plan --weight-bound`` computes them.
    theta : float
        The Young split recorded with the constants (for the fingerprint; the planner's).
    seed : int
        Root seed of the problem and of the ensembles.
    algorithm : {"analog", "tiki-taka"}
        The algorithm of the runs (:data:`theory.calibration.CALIBRATED_ALGORITHMS`).
        ``tiki-taka`` runs the same design with :mod:`simulate.device.tiki_taka` (A and C on the
        run's device, ``transfer_lr`` and ``tt_gamma`` at the :class:`SimConfig` defaults) and the
        steps of the analog design (fractions of the analog step cap: A takes analog SGD's
        update).
    transfer_every, transfer_slice : int, str
        Tiki-Taka's period ``T`` and slice (:class:`SimConfig`; unused for analog). Recorded in
        :meth:`to_dict` only for ``tiki-taka`` (an analog calibration's file is unchanged).
    """

    problem: str = "quadratic"
    dim: int = 16
    sigma2: float = 1.0
    device: str = "softbounds"
    tau: float | None = 1.0
    weight_bound: float = 0.6
    theta: float = 0.5
    seed: int = 0
    algorithm: str = "analog"
    transfer_every: int = 1
    transfer_slice: str = "column"

    def __post_init__(self):
        if self.problem not in ORACLE_PROBLEMS:
            raise ParameterError(f"problem={self.problem!r} cannot be calibrated here; valid: "
                                 f"{', '.join(ORACLE_PROBLEMS)}")
        if self.algorithm not in CALIBRATED_ALGORITHMS:
            raise ParameterError(f"algorithm={self.algorithm!r} cannot be calibrated; valid: "
                                 f"{', '.join(CALIBRATED_ALGORITHMS)}")
        check_range("weight_bound", self.weight_bound, 0, None, low_open=True)
        check_range("theta", self.theta, 0, 1, low_open=True, high_open=True)
        self.config("sync", 1, 1, 1, 0.1, 10, 2)  # validates dim, sigma2, device, tau, seed

    def config(self, mode: str, stages: int, micro_batches: int, micro_batch_size: int,
               lr: float, steps: int, seeds: int) -> SimConfig:
        """The ensemble of one design point (expected update, every iterate logged): analog,
        or Tiki-Taka with the transfer settings."""
        config = config_for(
            _CAP_BOUND[mode], problem=self.problem, dim=self.dim, sigma2=self.sigma2,
            device=self.device, tau=self.tau, seed=self.seed, stages=stages,
            micro_batches=micro_batches, micro_batch_size=micro_batch_size, lr=lr, steps=steps,
            seeds=seeds, log_every=1,
        )
        if self.algorithm == "analog":
            return config
        return replace(config, algorithm=self.algorithm, transfer_every=self.transfer_every,
                       transfer_slice=self.transfer_slice)

    def region(self) -> tuple[float, float]:
        """``[c - W, c + W]``, the weight region of the device constants."""
        device = device_from_config(self.config("sync", 1, 1, 1, 0.1, 10, 2))
        try:
            centre = float(device.symmetric_point())
        except ParameterError:
            centre = 0.5 * (device.w_min + device.w_max)
        return centre - self.weight_bound, centre + self.weight_bound

    def constants(self) -> dict:
        """The problem's constants by symbol name: exact ``L``, ``Delta``, ``sigma2`` (``L_s =
        L``), ``theta``, and ``q_min``, ``q_max``, ``G_inf`` on :meth:`region`."""
        config = self.config("sync", 1, 1, 1, 0.1, 10, 2)
        problem = make_problem(config)
        device = device_from_config(config)
        dc = device.constants(*self.region())
        return {"L": float(problem.L), "L_s": float(problem.L), "Delta": float(problem.Delta),
                "sigma2": float(problem.sigma2), "theta": float(self.theta),
                "q_min": float(dc.q_min), "q_max": float(dc.q_max), "G_inf": float(dc.G_inf)}

    def to_dict(self) -> dict:
        """The fields as a JSON-ready dict (the algorithm and transfer fields only for
        Tiki-Taka, so that an analog calibration's file is what it was)."""
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        if self.algorithm == "analog":
            for name in _TRANSFER_FIELDS:
                out.pop(name)
        return out

    def event_cycles(self, stages: int) -> int:
        """``c_T`` of the runs at ``stages`` stages (0 for analog): the one rule
        :func:`theory.schedules.transfer_event_cycles` on the stage blocks' tiles
        (:func:`simulate.device.tiki_taka.oracle_tiles`)."""
        if self.algorithm == "analog":
            return 0
        config = self.config("sync", stages, 1, 1, 0.1, 10, 2)
        per_stage: dict[int, list[int]] = {}
        for tile in oracle_tiles(make_problem(config).blocks):
            per_stage.setdefault(tile.stage, []).append(tile.columns)
        return transfer_event_cycles(per_stage.values(), self.transfer_slice)


@dataclass(frozen=True)
class DesignPoint:
    """One point of a design: a pipeline, a step and the ensemble's length.

    Attributes
    ----------
    mode : {"sync", "async"}
    stages, micro_batches, micro_batch_size : int
        ``M``, ``B`` (1 for async), ``b``.
    lr : float
        Step size (4 significant digits).
    steps, seeds : int
        ``K`` and ``R``.
    """

    mode: str
    stages: int
    micro_batches: int
    micro_batch_size: int
    lr: float
    steps: int
    seeds: int

    def to_dict(self) -> dict:
        """``{"mode", "M", "B", "b", "lr", "steps", "seeds"}``."""
        return {"mode": self.mode, "M": self.stages, "B": self.micro_batches,
                "b": self.micro_batch_size, "lr": self.lr, "steps": self.steps,
                "seeds": self.seeds}


def design(spec: CalibrationProblem, *, sync: Sequence = SYNC_DESIGN,
           async_: Sequence = ASYNC_DESIGN, fractions: Sequence[float] = FRACTIONS,
           steps: int = CALIBRATION_STANDARD["steps"], seeds: int = CALIBRATION_STANDARD["seeds"]
           ) -> tuple[DesignPoint, ...]:
    """Every ``(mode, M, B, b)`` of ``sync`` and ``async_`` at every step ``fraction`` of its cap.

    The cap is :func:`simulate.verification.checks.region_step_cap` of the mode's bound on
    :meth:`CalibrationProblem.region` (the supremum over theta; the analog cap for Tiki-Taka
    runs too); a step is rounded to 4 significant digits.
    """
    check_range("steps", steps, 10, None, integer=True)
    check_range("seeds", seeds, 2, None, integer=True)
    points = []
    for mode, rows in (("sync", sync), ("async", async_)):
        for stages, count, b in rows:
            count = count if mode == "sync" else 1
            # the analog run's cap (Tiki-Taka's A takes analog SGD's update)
            base = replace(spec, algorithm="analog").config(mode, stages, count, b, 0.1, steps,
                                                            seeds)
            cap = region_step_cap(_CAP_BOUND[mode], base, *spec.region())
            for fraction in fractions:
                check_range("fraction", fraction, 0, 1, low_open=True)
                lr = float(f"{fraction * cap:.4g}")
                points.append(DesignPoint(mode=mode, stages=int(stages), micro_batches=int(count),
                                          micro_batch_size=int(b), lr=lr, steps=int(steps),
                                          seeds=int(seeds)))
    if not points:
        raise ParameterError("design: no points (give sync or async rows)")
    return tuple(points)


def calibration_run(point: dict) -> dict:
    """Sweep function: the per-seed running averages of one design point.

    ``point = {"config": SimConfig.to_dict(), "format": CALIBRATE_FORMAT}``; returns
    ``{"running": ndarray (R, K)}``, entry ``[r, K - 1]`` the running average of seed ``r`` after
    ``K`` updates (every iterate logged).
    """
    config = SimConfig(**point["config"])
    trace = run(replace(config, log_every=1))
    return {"running": running_average(trace.grad_norm2[:, :-1])}


def _points_of(spec: CalibrationProblem, points: Sequence[DesignPoint]) -> list[dict]:
    return [{"config": spec.config(p.mode, p.stages, p.micro_batches, p.micro_batch_size, p.lr,
                                   p.steps, p.seeds).to_dict(), "format": CALIBRATE_FORMAT}
            for p in points]


def _targets(mean: np.ndarray) -> np.ndarray:
    """The hitting-time targets of one mean curve (empty when it barely descends)."""
    low, high = 1.1 * float(np.min(mean)), float(mean[0]) / 2.0
    if not high > low:
        return np.empty(0)
    return np.geomspace(low, high, TARGETS)


def observations(points: Sequence[DesignPoint], means: Sequence[np.ndarray],
                 targets: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """Per mode, the rows ``(M, B, b, lr, K, eps)`` of the reached targets of every point."""
    rows: dict[str, list] = {"sync": [], "async": []}
    for p, mean, eps in zip(points, means, targets, strict=True):
        for e in eps:
            k = int(first_hit(mean, e))
            if k:
                rows[p.mode].append((p.stages, p.micro_batches, p.micro_batch_size, p.lr, k, e))
    return {mode: np.asarray(r, dtype=float).reshape(-1, 6) for mode, r in rows.items()}


def _residuals(x: np.ndarray, mode: str, obs: np.ndarray, start: float) -> np.ndarray:
    m, big_b, b, lr, k, eps = obs.T
    terms = model_terms(mode, np.exp(x), k, lr=lr, M=m, B=big_b, b=b, start=start)
    return np.log(sum(terms.values())) - np.log(eps)


def _start(mode: str, obs: np.ndarray) -> np.ndarray:
    """Initial coefficients: the transient alone explains the median observation, each other
    term a tenth of the smallest target."""
    m, big_b, b, lr, k, eps = obs.T
    n = b * (big_b if mode == "sync" else 1.0)
    low = float(np.min(eps))
    c_k = float(np.median(lr * k * eps))
    c_noise = 0.1 * low * float(np.median(n / lr))
    c_floor = 0.1 * low * float(np.median(n))
    start = [c_k, c_noise, c_floor]
    if mode == "async":
        delay = np.maximum(m - 1, 1.0)
        start.append(0.1 * low * float(np.median(b / (lr**2 * delay))))
    return np.log(np.maximum(start, 10 * _TINY))


def _fit(mode: str, obs: np.ndarray, start: float, x0: np.ndarray | None = None
         ) -> tuple[np.ndarray, float]:
    """Least squares in log space; returns ``(log coefficients, rms of the log residuals)``."""
    width = len(COEFFICIENTS[mode])
    if obs.shape[0] < width:
        raise ParameterError(
            f"design: {obs.shape[0]} reached targets for mode {mode!r}, fewer than its {width} "
            "coefficients; valid: more design points or steps"
        )
    x0 = _start(mode, obs) if x0 is None else np.clip(x0, math.log(_TINY), None)
    result = least_squares(_residuals, x0, args=(mode, obs, start), method="trf",
                           bounds=(math.log(_TINY), np.inf), x_scale=1.0)
    rms = float(np.sqrt(np.mean(result.fun**2)))
    return result.x, rms


def fit_calibration(spec: CalibrationProblem, points: Sequence[DesignPoint],
                    running: Sequence[np.ndarray], *,
                    resamples: int = CALIBRATION_STANDARD["resamples"], ci_level: float = 0.95,
                    created_by: dict | None = None) -> Calibration:
    """The :class:`~theory.calibration.Calibration` of ``points`` from their per-seed running
    averages ``running[i]`` (shape ``(R, K)``; see the module docstring for fit and bootstrap)."""
    check_range("resamples", resamples, 0, None, integer=True)
    running = [np.asarray(r, dtype=float) for r in running]
    means = [r.mean(axis=0) for r in running]
    targets = [_targets(mean) for mean in means]
    obs = observations(points, means, targets)
    start = float(np.median([mean[0] for mean in means]))  # every run starts at W_0
    modes = [mode for mode in ("sync", "async") if any(p.mode == mode for p in points)]
    best = {mode: _fit(mode, obs[mode], start) for mode in modes}
    draws: dict[str, list] = {mode: [] for mode in modes}
    rng = bootstrap_generator(spec.seed)
    for _ in range(resamples):
        resampled = [bootstrap_means(r, rng, 1)[0] for r in running]
        again = observations(points, resampled, targets)
        for mode in modes:
            if again[mode].shape[0] >= len(COEFFICIENTS[mode]):
                draws[mode].append(np.exp(_fit(mode, again[mode], start, best[mode][0])[0]))
    tail = (1.0 - ci_level) / 2
    fits = {}
    for mode in modes:
        values = np.exp(best[mode][0])
        sample = np.asarray(draws[mode]).reshape(-1, values.size)
        if sample.shape[0]:  # (widened to hold the fit: at the bound 1e-12 the two may differ)
            low, high = (np.quantile(sample, q, axis=0, method="inverted_cdf")
                         for q in (tail, 1.0 - tail))
            low, high = np.minimum(low, values), np.maximum(high, values)
        else:
            low = high = values
        fits[mode] = ModeFit(mode=mode, values=tuple(values), low=tuple(low), high=tuple(high),
                             draws=tuple(tuple(row) for row in sample),
                             residual_rms=best[mode][1], observations=int(obs[mode].shape[0]))
    constants = spec.constants()
    problem = {**spec.to_dict(), **constants, "start": start}
    return Calibration(
        fits=fits, problem=problem, fingerprint=problem_fingerprint(constants),
        design=tuple(p.to_dict() for p in points),
        seeds={"root": spec.seed, "R": sorted({p.seeds for p in points}), "resamples": resamples},
        version=package_version(), created_by=dict(created_by or {}), ci_level=ci_level,
    )


def calibrate(spec: CalibrationProblem, points: Sequence[DesignPoint] | None = None, *,
              resamples: int = CALIBRATION_STANDARD["resamples"], ci_level: float = 0.95, jobs=None,
              scheduler=None, cache=True, progress: bool | None = None,
              created_by: dict | None = None) -> Calibration:
    """Run the design's ensembles as one cached sweep (:func:`calibration_run`) and fit them.

    ``points`` defaults to :func:`design` of ``spec``; ``jobs``, ``scheduler``, ``cache`` and
    ``progress`` are those of :func:`simulate.execution.sweep.run_sweep`.
    """
    points = design(spec) if points is None else tuple(points)
    sweep = run_sweep(calibration_run, _points_of(spec, points), jobs=jobs, scheduler=scheduler,
                      cache=cache, progress=progress, desc="calibrate")
    running = [result["running"] for result in sweep.results]
    return fit_calibration(spec, points, running, resamples=resamples, ci_level=ci_level,
                           created_by=created_by)


# ------------------------------------------------------------------------------------------------
# the held-out check (issue 14, item 4): does the calibrated choice really reach eps first?

#: the held-out criterion: a choice succeeds when its simulated cycles to eps are within this
#: factor of the best simulated configuration's
HELDOUT_TOLERANCE = 1.15
#: a held-out simulation doubles its length from this many updates until it reaches eps
_FIRST_STEPS = 256
#: ... and gives up (unreached) beyond this many
_MAX_STEPS = 2**16


def hitting_run(point: dict) -> dict:
    """Sweep function: the first ``K`` at which the ensemble mean running average reaches
    ``point["eps"]`` (0: not within ``point["max_steps"]``), doubling the run from
    :data:`_FIRST_STEPS` updates (a run's iterates are a prefix of a longer run's).

    ``point = {"config": SimConfig.to_dict(), "eps": float, "max_steps": int, "format": ...}``;
    returns ``{"iterations": int, "steps": int}``.
    """
    config = SimConfig(**point["config"])
    eps, limit = float(point["eps"]), int(point["max_steps"])
    steps = min(_FIRST_STEPS, limit)
    while True:
        trace = run(replace(config, steps=steps, log_every=1))
        k = int(first_hit(running_average(trace.grad_norm2[:, :-1]).mean(axis=0), eps))
        if k or steps >= limit:
            return {"iterations": k, "steps": steps}
        steps = min(2 * steps, limit)


@dataclass(frozen=True)
class HeldOut:
    """One held-out instance: the grid, what each planner chose and what simulation says.

    Attributes
    ----------
    spec : CalibrationProblem
        The drawn problem.
    eps : float
        The target (squared-gradient units).
    grid : tuple of (str, int, int)
        The judged ``(mode, M, B)`` (``b = 1``), none of them in the calibration's design.
    steps : tuple of float
        The step of each grid point: the guarantee's best step for ``eps``
        (:func:`theory.complexity.evaluate_guarantee`), the step a plan runs at.
    simulated, guaranteed, predicted : tuple of float
        Cycles to ``eps``: simulated (``inf``: not reached), proved and calibrated.
    calibrated_choice, theory_choice : int
        Index of the grid point each planner picks (fewest predicted / guaranteed cycles).
    design : tuple of (str, int, int, int)
        The ``(mode, M, B, b)`` the calibration was fitted on.
    """

    spec: CalibrationProblem
    eps: float
    grid: tuple
    steps: tuple
    simulated: tuple
    guaranteed: tuple
    predicted: tuple
    calibrated_choice: int
    theory_choice: int
    design: tuple = ()

    @property
    def best(self) -> float:
        """The fewest simulated cycles over the grid."""
        return min(self.simulated)

    def success(self, choice: int) -> bool:
        """The choice reaches eps within :data:`HELDOUT_TOLERANCE` of the best simulated time."""
        return self.simulated[choice] <= HELDOUT_TOLERANCE * self.best

    @property
    def calibrated_success(self) -> bool:
        """:meth:`success` of the calibrated planner's choice."""
        return self.success(self.calibrated_choice)

    @property
    def theory_success(self) -> bool:
        """:meth:`success` of the theory-only planner's choice."""
        return self.success(self.theory_choice)


def draw_instance(rng: np.random.Generator) -> tuple[CalibrationProblem, tuple, tuple, tuple]:
    """A random held-out instance: the problem, the judged grid and the calibration design rows.

    The device is, with probabilities 1/2, 1/4, 1/4: soft bounds with ``tau`` log-uniform in
    [2, 8], the ECRAM or the capacitor linear-step preset; ``sigma2`` log-uniform in [0.05, 0.5];
    a quadratic of dimension 16 with a drawn root seed; device constants on ``[-0.6, 0.6]``
    around the device's centre. The grid has the stage counts ``{m, 4m}`` (``m`` in {1, 2, 3})
    and the micro-batches ``{1, B_hi}`` (``B_hi`` in {4, 8}); the design uses the stage counts
    ``{m + 1, 3m}`` and micro-batches {1, 2, 3} at other (M, B) or ``b = 2``: no grid point.
    """
    kind = int(rng.choice(4))
    sigma2 = float(f"{math.exp(rng.uniform(math.log(0.05), math.log(0.5))):.3g}")
    tau = float(f"{math.exp(rng.uniform(math.log(2.0), math.log(8.0))):.3g}")
    device = {0: "softbounds", 1: "softbounds", 2: "ecram-linearstep",
              3: "capacitor-linearstep"}[kind]
    spec = CalibrationProblem(problem="quadratic", dim=16, sigma2=sigma2, device=device,
                              tau=tau if kind < 2 else None, weight_bound=0.6,
                              seed=int(rng.integers(0, 2**31)))
    m = int(rng.choice([1, 2, 3]))
    b_hi = int(rng.choice([4, 8]))
    grid = tuple([("sync", stages, count) for stages in (m, 4 * m) for count in (1, b_hi)]
                 + [("async", stages, 1) for stages in (m, 4 * m)])
    sync = ((m + 1, 2, 1), (3 * m, 3, 1), (m + 1, 1, 2))
    async_ = ((m + 1, 1, 1), (3 * m, 1, 1), (3 * m, 1, 2))
    return spec, grid, sync, async_


def grid_target(spec: CalibrationProblem, grid: Sequence[tuple]) -> tuple[float, list]:
    r"""The target of a grid of ``(mode, M, B)`` (``b = 1``) and the guarantee at each point.

    :math:`\epsilon = \sqrt{F S}` with ``F`` the largest proved floor over the grid and ``S``
    the start :math:`\lVert\nabla f(W_0)\rVert^2`, so every point has a guarantee and a step
    (:func:`theory.complexity.evaluate_guarantee` with the problem's constants); returns ``eps``
    and the guarantees (their ``step`` is the step a plan runs at, their ``cycles`` the proved
    cycles).
    """
    from theory.complexity import evaluate_guarantee

    values = spec.constants()
    problem = make_problem(spec.config("sync", 1, 1, 1, 0.1, 10, 2))
    start = float(np.sum(problem.grad(problem.w0) ** 2))
    floors = [float(evaluate_guarantee(mode, start, on_unreachable="status", **values, M=m, B=c,
                                       b=1, n=c).floor) for mode, m, c in grid]
    eps = math.sqrt(max(floors) * start)
    return eps, [evaluate_guarantee(mode, eps, **values, M=m, B=c, b=1, n=c)
                 for mode, m, c in grid]


def simulate_grid(spec: CalibrationProblem, grid: Sequence[tuple], steps: Sequence[float],
                  eps: float, *, seeds: int, jobs=None, scheduler=None, cache=True,
                  progress: bool | None = None) -> tuple[float, ...]:
    """Simulated cycles to ``eps`` of every ``(mode, M, B)`` (``b = 1``) at its step, one cached
    sweep of :func:`hitting_run` (``inf``: not reached within :data:`_MAX_STEPS` updates)."""
    hits = run_sweep(hitting_run, [
        {"config": spec.config(mode, m, c, 1, lr, 10, seeds).to_dict(), "eps": eps,
         "max_steps": _MAX_STEPS, "format": CALIBRATE_FORMAT}
        for (mode, m, c), lr in zip(grid, steps, strict=True)],
        jobs=jobs, scheduler=scheduler, cache=cache, progress=progress, desc="grid to eps")
    out = []
    for (mode, m, c), hit in zip(grid, hits.results, strict=True):
        k = int(hit["iterations"])
        transfers = int(transfer_cycles(k, spec.transfer_every, spec.event_cycles(m)))
        out.append(float(cycles_after(mode, m, c, k) + transfers) if k else math.inf)
    return tuple(out)


def heldout_check(seed: int, *, seeds: int = 8, steps: int = 2000,
                  fractions: Sequence[float] = (0.05, 0.2, 0.6), resamples: int = 0,
                  jobs=1, scheduler=None, cache=False, progress: bool | None = False,
                  algorithm: str = "analog", transfer_every: int = 1,
                  transfer_slice: str = "column") -> HeldOut:
    """Draw instance ``seed`` (:func:`draw_instance`), calibrate on its design, and judge both
    planners on its grid (see :class:`HeldOut`; target and steps from :func:`grid_target`).

    ``algorithm="tiki-taka"`` runs the same instance (same draw) with Tiki-Taka and the
    transfer settings, calibration and grid alike; every cycle count then includes the
    transfers (:func:`theory.schedules.transfer_cycles`). Without a proved Tiki-Taka bound the
    steps are the analog guarantee's (the planner's rule) and ``guaranteed`` is the analog
    guarantee's cycles plus the transfers (a reference, not a Tiki-Taka guarantee).
    """
    from theory.calibration import predicted_cycles

    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x4E1D]))
    spec, grid, sync, async_ = draw_instance(rng)
    if algorithm != "analog":
        spec = replace(spec, algorithm=algorithm, transfer_every=transfer_every,
                       transfer_slice=transfer_slice)
    eps, guarantees = grid_target(spec, grid)
    lrs = tuple(float(g.step) for g in guarantees)
    points = design(spec, sync=sync, async_=async_, fractions=fractions, steps=steps,
                    seeds=seeds)
    options = dict(jobs=jobs, scheduler=scheduler, cache=cache, progress=progress)
    cal = calibrate(spec, points, resamples=resamples, **options)
    simulated = simulate_grid(spec, grid, lrs, eps, seeds=seeds, **options)
    transfers = [int(transfer_cycles(int(g.iterations_int), spec.transfer_every,
                                     spec.event_cycles(m)))
                 for g, (_, m, _) in zip(guarantees, grid, strict=True)]
    guaranteed = tuple(float(g.cycles) + t for g, t in zip(guarantees, transfers, strict=True))
    predicted = tuple(predicted_cycles(cal, mode, eps, m, c, 1, lr=lr,
                                       event_cycles=spec.event_cycles(m)).cycles
                      for (mode, m, c), lr in zip(grid, lrs, strict=True))
    return HeldOut(spec=spec, eps=eps, grid=grid, steps=lrs, simulated=simulated,
                   guaranteed=guaranteed, predicted=predicted,
                   calibrated_choice=int(np.argmin(predicted)),
                   theory_choice=int(np.argmin(guaranteed)),
                   design=tuple(sorted({(p.mode, p.stages, p.micro_batches, p.micro_batch_size)
                                        for p in points})))


# ------------------------------------------------------------------------------------------------
# the calibration read on a verification suite (the numbers beside docs/verification.md's)

#: step fractions of a suite's calibrations: none is a fraction of the suites' checks
SUITE_FRACTIONS = (0.15, 0.3, 0.7)
#: the calibrated modes of the registry's pipeline entries
_ENTRY_MODE = {"analog_sgd_sp": "sync", "analog_sgd_ap": "async", "analog_sgd_ap_b": "async"}


def problem_of(config: SimConfig, weight_bound: float = 0.5) -> CalibrationProblem:
    """The :class:`CalibrationProblem` a check's configuration runs on (its problem, dimension,
    noise, device, ``tau`` and root seed)."""
    return CalibrationProblem(problem=config.problem, dim=config.dim, sigma2=config.sigma2,
                              device=config.device, tau=config.tau, weight_bound=weight_bound,
                              seed=config.seed)


@dataclass(frozen=True)
class SuiteForecast:
    """The calibration read on the pipeline checks of a suite (:func:`suite_forecasts`).

    Attributes
    ----------
    ratios : dict
        ``{entry: [calibrated / simulated cycles to each check's eps, ...]}`` over the checks with
        a target the simulation reached.
    bound_ratios : dict
        The same checks' bound / simulated ratios
        (:attr:`simulate.verification.prediction.Prediction.ratio`).
    mode_pairs, stage_pairs : (int, int)
        ``(agreeing, ranked)`` pairs of :func:`simulate.verification.suites.ranking_agreement` that
        the calibration ranks like the simulation (SP vs AP; M vs M').
    calibrations : int
        Problems calibrated (one per distinct problem of the checks).
    """

    ratios: dict
    bound_ratios: dict
    mode_pairs: tuple[int, int]
    stage_pairs: tuple[int, int]
    calibrations: int


def suite_forecasts(checks: Sequence, *, steps: int = CALIBRATION_STANDARD["steps"],
                    seeds: int = CALIBRATION_STANDARD["seeds"], resamples: int = 0, jobs=None,
                    scheduler=None, cache=True, progress: bool | None = None) -> SuiteForecast:
    """Calibrate the problem of every pipeline check (SP, AP, 4'B) with a target and compare.

    Each distinct problem gets the standard design at :data:`SUITE_FRACTIONS` (no design point
    is a checked run); each check's calibrated cycles to its own ``eps`` at its own step
    (:func:`theory.calibration.predicted_cycles`) are divided by its simulated cycles; the pairs
    of :func:`simulate.verification.suites.ranking_agreement` between two such checks are ranked
    again with the calibrated cycles at the pair's common target.
    """
    from theory.calibration import predicted_cycles

    from .suites import ranking_agreement

    checks = list(checks)
    usable = [i for i, c in enumerate(checks) if c.bound_name in _ENTRY_MODE
              and c.prediction is not None and c.prediction.eps is not None]
    problems: dict[CalibrationProblem, Calibration] = {}
    options = dict(jobs=jobs, scheduler=scheduler, cache=cache, progress=progress)
    checked = {(c.config.mode, c.config.stages, c.config.micro_batches,
                c.config.micro_batch_size, c.config.lr) for c in checks}
    for i in usable:
        spec = problem_of(checks[i].config)
        if spec not in problems:
            points = design(spec, fractions=SUITE_FRACTIONS, steps=steps, seeds=seeds)
            overlap = [p for p in points if (p.mode, p.stages, p.micro_batches,
                                             p.micro_batch_size, p.lr) in checked]
            points = tuple(p for p in points if p not in overlap)
            problems[spec] = calibrate(spec, points, resamples=resamples, **options)

    def forecast(i: int, eps: float) -> float:
        c = checks[i].config
        return predicted_cycles(problems[problem_of(c)], _ENTRY_MODE[checks[i].bound_name], eps,
                                c.stages, c.micro_batches, c.micro_batch_size, lr=c.lr).cycles

    ratios: dict[str, list] = {}
    bound_ratios: dict[str, list] = {}
    for i in usable:
        p = checks[i].prediction
        if p.simulated_cycles is None:
            continue
        ratios.setdefault(checks[i].bound_name, []).append(forecast(i, p.eps) /
                                                           p.simulated_cycles)
        bound_ratios.setdefault(checks[i].bound_name, []).append(p.ratio)
    counts = {"mode": [0, 0], "stages": [0, 0]}
    inside = set(usable)
    for pair in ranking_agreement(checks).pairs:
        if pair.first not in inside or pair.second not in inside:
            continue
        a, b = forecast(pair.first, pair.eps), forecast(pair.second, pair.eps)
        s_a, s_b = pair.simulated
        agree = ((a > b) - (a < b)) == ((s_a > s_b) - (s_a < s_b))
        counts[pair.kind][0] += int(agree)
        counts[pair.kind][1] += 1
    return SuiteForecast(ratios=ratios, bound_ratios=bound_ratios,
                         mode_pairs=tuple(counts["mode"]), stage_pairs=tuple(counts["stages"]),
                         calibrations=len(problems))
