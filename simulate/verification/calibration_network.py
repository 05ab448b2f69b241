r"""Calibration of a digits network (issue 27, item 6): cycles to a test accuracy or a loss.

:class:`NetworkCalibrationProblem` is one of the networks of :data:`theory.networks.
NETWORK_PROBLEMS` on one device, with a **target**: a test accuracy ``A`` to reach or a training
loss to get below. The fitted measure is the ensemble mean of the test error :math:`1 -
\mathrm{accuracy}` (on the 360 test images) or of the training loss (nats, on the fixed loss
subset of :func:`simulate.problems.digits.loss_subset`), whose level at the target is
:math:`\epsilon` = :func:`theory.networks.target_level` (``1 - A``, or the loss).

**Design** (:func:`network_design`, the tables :data:`~simulate.verification.
calibration_settings.NETWORK_CALIBRATION`): per mode a few pipelines ``(M, B, b)`` at a few
fixed steps (a network has no proved step cap), every point with the same training-sample budget
(updates ``K = samples / n``) and the same seeds; each point is one cached sweep point of the
speedup study's run (:func:`simulate.verification.tuning.study_run`: per-seed curves at
``LOG_POINTS`` logging points, diverged seeds marked).

**Observations.** On each point's mean curve, the first logging step at which it is at or below
each of :data:`LEVELS` levels :math:`\epsilon_j`, log-spaced from the target's :math:`\epsilon`
up to :math:`\sqrt{\epsilon S}` (:math:`S` the measure at :math:`W_0`): the hitting times of the
form of :mod:`theory.calibration`, as the oracle calibration's, so the fit, its bootstrap over
seeds and the file are those of :func:`simulate.verification.calibration_fit.fit_calibration`.
A level the mean curve does not reach within the budget is **censored**: it is recorded (per
point ``reached`` and ``updates`` of the target itself, and the censored levels counted) and never
fitted as reached. A point with a diverged seed is censored whole (its mean is not the
ensemble's).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from theory.calibration import Calibration, problem_fingerprint
from theory.errors import ParameterError, check_range
from theory.networks import NETWORK_PROBLEMS, NETWORK_TARGETS, target_level

from ..config import SimConfig, device_from_config
from ..execution import run_sweep
from ..problems import NetworkSpec
from .calibration_design import DesignPoint, calibrated_pulse_type, device_region
from .calibration_fit import fit_calibration
from .calibration_settings import NETWORK_CALIBRATION, NETWORK_TARGET
from .tuning import study_point, study_run

__all__ = [
    "LEVELS",
    "LOG_POINTS",
    "NetworkCalibration",
    "NetworkCalibrationProblem",
    "calibrate_network",
    "network_design",
    "network_observations",
]

#: hitting-time levels per design point (the target's and the ones above it)
LEVELS = 4
#: logging points of every run (the resolution of a hitting time: 1/64 of the budget)
LOG_POINTS = 64


@dataclass(frozen=True)
class NetworkCalibrationProblem:
    """A digits network, its device and the target a calibration measures the cycles to.

    Attributes
    ----------
    problem : {"digits-mlp", "digits-resmlp"}
        The network (:data:`theory.networks.NETWORK_PROBLEMS`; the default
        :class:`~simulate.problems.network.NetworkSpec`).
    target : {"accuracy", "loss"}
        Reach a test accuracy (``>=``) or a training loss (``<=``).
    target_value : float or None
        The accuracy in (0, 1) or the loss in nats (``None``: the network's default of
        :data:`~simulate.verification.calibration_settings.NETWORK_TARGET`, an accuracy).
    device, tau
        The device of the analog weights (:class:`~simulate.config.SimConfig`).
    weight_bound : float
        ``W``: the device constants recorded are those on ``[c - W, c + W]`` around the device's
        centre ``c`` (as the oracle calibration's, and ``plan --weight-bound``'s).
    theta : float
        The Young split recorded with the constants (the plan's).
    seed : int
        Root seed of the runs (seed ``r`` of every point starts from the same weights).
    data : str
        The data set of the runs (``SimConfig.data``).
    update, pulse_type, write
        As :class:`~simulate.verification.calibration_design.CalibrationProblem` (analog SGD
        only: the file records them and its fingerprint covers them).
    """

    problem: str = "digits-resmlp"
    target: str = "accuracy"
    target_value: float | None = None
    device: str = "softbounds"
    tau: float | None = 1.0
    weight_bound: float = 0.6
    theta: float = 0.5
    seed: int = 0
    data: str = "digits"
    update: str = "expected"
    pulse_type: str | None = None
    write: str = "batch-mean"

    def __post_init__(self):
        if self.problem not in NETWORK_PROBLEMS:
            raise ParameterError(f"problem={self.problem!r} is not a network; valid: "
                                 f"{', '.join(NETWORK_PROBLEMS)}")
        if self.target not in NETWORK_TARGETS:
            raise ParameterError(f"target={self.target!r} is unknown; valid: "
                                 f"{', '.join(NETWORK_TARGETS)}")
        if self.target_value is None:
            kind, value = NETWORK_TARGET[self.problem]
            if kind != self.target:
                raise ParameterError(f"target={self.target!r} has no default value; give "
                                     "target_value (a training loss in nats)")
            object.__setattr__(self, "target_value", float(value))
        target_level(self.target, self.target_value)  # the range of an accuracy or a loss
        object.__setattr__(self, "target_value", float(self.target_value))
        object.__setattr__(self, "pulse_type", calibrated_pulse_type(self.update,
                                                                     self.pulse_type))
        check_range("weight_bound", self.weight_bound, 0, None, low_open=True)
        check_range("theta", self.theta, 0, 1, low_open=True, high_open=True)
        config = self.config("sync", 1, 1, 1, 0.1, 10, 2)  # validates device, tau, data, seed
        try:  # the constants' region must lie inside the device (before any run)
            device_from_config(config).constants(*device_region(config, self.weight_bound))
        except ParameterError as error:
            raise ParameterError(f"weight_bound={self.weight_bound:g} does not fit device "
                                 f"{self.device!r}: {error}") from None

    @property
    def eps(self) -> float:
        """The fitted measure's level at the target (:func:`theory.networks.target_level`)."""
        return target_level(self.target, self.target_value)

    def config(self, mode: str, stages: int, micro_batches: int, micro_batch_size: int,
               lr: float, steps: int, seeds: int) -> SimConfig:
        """The ensemble of one design point (``LOG_POINTS`` logging points)."""
        return SimConfig(
            problem=self.problem, data=self.data, mode=mode, algorithm="analog",
            device=self.device, tau=self.tau, seed=self.seed, stages=stages,
            micro_batches=micro_batches if mode == "sync" else 1,
            micro_batch_size=micro_batch_size, lr=lr, steps=steps, seeds=seeds,
            log_every=max(1, steps // LOG_POINTS), update=self.update, write=self.write,
            **({} if self.pulse_type is None else {"pulse_type": self.pulse_type}))

    def constants(self) -> dict:
        """The constants a network calibration knows: ``theta`` and the device's ``q_min``,
        ``q_max``, ``G_inf`` on the region (``L``, ``Delta``, ``sigma2`` of a network are
        unknown and not recorded)."""
        config = self.config("sync", 1, 1, 1, 0.1, 10, 2)
        dc = device_from_config(config).constants(*device_region(config, self.weight_bound))
        return {"theta": float(self.theta), "q_min": float(dc.q_min),
                "q_max": float(dc.q_max), "G_inf": float(dc.G_inf)}

    def to_dict(self) -> dict:
        """The fields, the network's architecture (the default :class:`NetworkSpec`) and the
        algorithm, JSON-ready: the calibration file's ``problem`` (its fingerprint covers them)."""
        spec = NetworkSpec()
        return {**{name: getattr(self, name) for name in self.__dataclass_fields__},
                "algorithm": "analog", "layers": spec.layers, "width": spec.width,
                "activation": spec.activation}


def network_design(spec: NetworkCalibrationProblem, settings: dict | None = None
                   ) -> tuple[DesignPoint, ...]:
    """Every ``(mode, M, B, b)`` row of ``settings`` at every step of its mode, with the
    sample budget's updates ``ceil(samples / n)`` (at least 10) and ``settings["seeds"]`` seeds
    (``settings``: the network's :data:`~simulate.verification.calibration_settings.
    NETWORK_CALIBRATION` by default)."""
    settings = NETWORK_CALIBRATION[spec.problem] if settings is None else settings
    samples = check_range("samples", settings["samples"], 10, None, integer=True)
    seeds = check_range("seeds", settings["seeds"], 2, None, integer=True)
    points = []
    for mode in ("sync", "async"):
        for stages, count, b in settings.get(mode, ()):
            count = int(count) if mode == "sync" else 1
            check_range("stages", stages, 1, NetworkSpec().layers, integer=True)
            steps = max(10, math.ceil(samples / (count * int(b))))
            for lr in settings["steps"][mode]:
                check_range("lr", lr, 0, None, low_open=True)
                points.append(DesignPoint(mode=mode, stages=int(stages), micro_batches=count,
                                          micro_batch_size=int(b), lr=float(lr), steps=steps,
                                          seeds=seeds))
    if not points:
        raise ParameterError("design: no points (give sync or async rows)")
    return tuple(points)


def _measure(spec: NetworkCalibrationProblem, result: dict) -> np.ndarray:
    """The per-seed fitted measure of one point's run, shape (R, T): test error or loss."""
    if spec.target == "accuracy":
        return 1.0 - np.asarray(result["test_accuracy"], dtype=float)
    return np.asarray(result["loss"], dtype=float)


def _dense(curves: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """The logged curves as one value per update: ``[r, K - 1]`` the value at the last logging
    point at or before ``K`` updates (the start :math:`W_0`'s for ``K`` below the first logging
    step after 0), so the first ``K`` at or below a level is the logging step that first is."""
    updates = np.arange(1, int(steps[-1]) + 1)
    return curves[:, np.searchsorted(steps, updates, side="right") - 1]


def _levels(eps: float, start: float) -> np.ndarray:
    """The :data:`LEVELS` levels of one point: from ``eps`` up to ``sqrt(eps S)``."""
    top = math.sqrt(eps * start) if start > eps else eps
    return np.geomspace(eps, top, LEVELS)


@dataclass(frozen=True)
class NetworkCalibration:
    """A network calibration and what its design reached (:func:`calibrate_network`).

    Attributes
    ----------
    calibration : theory.calibration.Calibration
        The fit (its ``design`` rows carry ``reached`` and ``updates`` of the target).
    reached, censored : dict
        Per mode, the hitting times fitted (levels reached) and the levels not reached within
        the budget (censored: recorded, not fitted).
    diverged : int
        Design points with a diverged seed (censored whole).
    """

    calibration: Calibration
    reached: dict
    censored: dict
    diverged: int


def network_observations(spec: NetworkCalibrationProblem, points: Sequence[DesignPoint],
                         results: Sequence[dict]) -> tuple[list, list, list, dict, int]:
    """Per point the dense mean-able curves, the levels, the target's design row; and the
    reached and censored counts per mode, and the points with a diverged seed.

    A point with a diverged seed gets no levels (censored whole).
    """
    curves = [_measure(spec, r) for r in results]
    finite = [np.isfinite(c).all() for c in curves]
    start = float(np.median([c[:, 0].mean() for c, ok in zip(curves, finite, strict=True)
                             if ok] or [np.nan]))
    if not math.isfinite(start):
        raise ParameterError("design: every point has a diverged seed; valid: smaller steps")
    dense, levels, rows = [], [], []
    counts = {"reached": {}, "censored": {}}
    for p, c, result, ok in zip(points, curves, results, finite, strict=True):
        steps = np.asarray(result["step"], dtype=np.int64)
        d = _dense(np.where(np.isfinite(c), c, start), steps)
        eps_j = _levels(spec.eps, start) if ok else np.empty(0)
        mean = d.mean(axis=0)
        hit = [bool((mean <= e).any()) for e in eps_j]
        reached_target = bool(ok and hit[0])
        first = int(np.argmax(mean <= spec.eps)) + 1 if reached_target else None
        rows.append({**p.to_dict(), "reached": reached_target, "updates": first,
                     "diverged": not ok})
        for name, n in (("reached", sum(hit)), ("censored", LEVELS - sum(hit))):
            counts[name][p.mode] = counts[name].get(p.mode, 0) + int(n)
        dense.append(d)
        levels.append(eps_j)
    return dense, levels, rows, counts, sum(not ok for ok in finite)


def calibrate_network(spec: NetworkCalibrationProblem, points: Sequence[DesignPoint] | None = None,
                      *, resamples: int = 200, ci_level: float = 0.95, jobs=None, scheduler=None,
                      cache=True, progress: bool | None = None,
                      created_by: dict | None = None) -> NetworkCalibration:
    """Run the design of a network (one cached sweep of :func:`~simulate.verification.tuning.
    study_run`) and fit the form of :mod:`theory.calibration` to its hitting times (module
    docstring); ``jobs``, ``scheduler``, ``cache``, ``progress`` as
    :func:`simulate.execution.sweep.run_sweep`'s."""
    check_range("resamples", resamples, 0, None, integer=True)
    points = network_design(spec) if points is None else tuple(points)
    configs = [spec.config(p.mode, p.stages, p.micro_batches, p.micro_batch_size, p.lr,
                           p.steps, p.seeds) for p in points]
    sweep = run_sweep(study_run, [study_point(c) for c in configs], jobs=jobs,
                      scheduler=scheduler, cache=cache, progress=progress,
                      desc="calibrate network")
    dense, levels, rows, counts, diverged = network_observations(spec, points, sweep.results)
    cal = fit_calibration(spec, points, dense, targets=levels, resamples=resamples,
                          ci_level=ci_level, created_by=created_by)
    budget = {"budget": int(max(p.steps * p.micro_batch_size * p.micro_batches
                                for p in points))}
    problem = {**cal.problem, **budget}
    cal = replace(cal, design=tuple(rows), problem=problem,
                  fingerprint=problem_fingerprint(problem))
    return NetworkCalibration(calibration=cal, reached=counts["reached"],
                              censored=counts["censored"], diverged=diverged)
