r"""The design of a calibration (issue 14, item 2): the problem, its points and their cached
ensembles.

A **design** is a small set of points ``(mode, M, B, b, lr)`` on one oracle problem
(:class:`CalibrationProblem`: quadratic or least squares with given dimension, noise, device and
root seed). Each step is a fraction of the mode's proved step cap on the weight region
``[-W, W]`` (:func:`simulate.verification.checks.region_step_cap` of ``analog_sgd_sp`` /
``analog_sgd_ap``), so the design covers the steps a plan can run at. Every point is one ensemble of
``R`` seeds, run through the cached sweep runner (:func:`simulate.execution.sweep.run_sweep`: local
processes or Dask, with progress; function :func:`calibration_run`, points
:func:`design_sweep_points`). The fit is :mod:`simulate.verification.calibration_fit`.

**Tiki-Taka.** With :attr:`CalibrationProblem.algorithm` ``"tiki-taka"`` the same design (and
the same steps, fractions of the analog cap) runs Tiki-Taka with the problem's transfer settings;
the fit is the same form (its floor coefficient free, it may come out nil), the file records the
algorithm and the transfers (``problem``), and every cycle count of the held-out check
(:mod:`simulate.verification.heldout`) includes the transfers
(:func:`theory.schedules.transfer_cycles`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace

from theory.errors import ParameterError, check_range
from theory.limits import MAX_ARRAY_BYTES, check_size
from theory.schedules import transfer_event_cycles
from theory.step_choice import stability_limit
from theory.vocabulary import CALIBRATED_ALGORITHMS

from ..config import SimConfig, device_from_config
from ..device import PinnedWarning, oracle_tiles
from ..engine import run
from ..problems import ORACLE_PROBLEMS, make_problem
from .calibration_settings import (
    ASYNC_DESIGN,
    CALIBRATION_STANDARD,
    FRACTIONS,
    STABILITY_FRACTIONS,
    SYNC_DESIGN,
    ProblemFields,
)
from .checks import config_for, region_step_cap
from .prediction import running_average

__all__ = [
    "CALIBRATE_FORMAT",
    "CalibrationProblem",
    "DesignPoint",
    "calibrated_pulse_type",
    "calibration_run",
    "design",
    "design_sweep_points",
    "device_region",
]

#: bumped when the meaning of a cached calibration run changes (part of every sweep point);
#: 2: the result records the run's pinned warning
CALIBRATE_FORMAT = 2
#: the registry entry whose step cap sets the design's steps, per mode
_CAP_BOUND = {"sync": "analog_sgd_sp", "async": "analog_sgd_ap"}
#: the :class:`CalibrationProblem` fields of Tiki-Taka runs (recorded only for tiki-taka)
_TRANSFER_FIELDS = ("transfer_every", "transfer_slice")


@dataclass(frozen=True)
class CalibrationProblem(ProblemFields):
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
        :meth:`to_dict` only for ``tiki-taka``.
    update : {"expected", "pulsed"}
        The analog update of the runs (:class:`SimConfig`; the theorems analyse the expected
        one).
    pulse_type : str or None
        The pulse counts of ``pulsed`` runs (:data:`simulate.config.PULSE_TYPES`; ``None``:
        :class:`SimConfig`'s default, ``stochastic``); ``None`` for ``expected``.
    write : {"batch-mean", "per-sample"}
        The write semantics of the runs (:class:`SimConfig`): one update of the batch-mean
        gradient, or one write per sample (Corollary 3PS); it sets the fitted form
        (:func:`theory.calibration.model_terms`).

    The algorithm, update, pulse type and write are always recorded (:meth:`to_dict`), and the
    calibration's fingerprint covers them (:func:`theory.calibration.problem_fingerprint`).
    """

    def __post_init__(self):
        if self.problem not in ORACLE_PROBLEMS:
            raise ParameterError(f"problem={self.problem!r} cannot be calibrated here; valid: "
                                 f"{', '.join(ORACLE_PROBLEMS)}")
        if self.algorithm not in CALIBRATED_ALGORITHMS:
            raise ParameterError(f"algorithm={self.algorithm!r} cannot be calibrated; valid: "
                                 f"{', '.join(CALIBRATED_ALGORITHMS)}")
        object.__setattr__(self, "pulse_type", calibrated_pulse_type(self.update,
                                                                     self.pulse_type))
        check_range("weight_bound", self.weight_bound, 0, None, low_open=True)
        try:  # sigma2 = 0 is a valid run, not a calibration (the run's own check is [0, inf))
            check_range("sigma2", self.sigma2, 0, None, low_open=True)
        except ParameterError as error:
            raise ParameterError(f"{error} (a calibration fits noise and floor terms "
                                 "proportional to sigma2)") from None
        check_range("theta", self.theta, 0, 1, low_open=True, high_open=True)
        config = self.config("sync", 1, 1, 1, 0.1, 10, 2)  # validates dim, device, tau, seed
        device, region = device_from_config(config), self.region()
        try:  # the constants' region must lie inside the device (before any run)
            device.constants(*region)
        except ParameterError as error:
            raise ParameterError(f"weight_bound={self.weight_bound:g} does not fit device "
                                 f"{self.device!r}: {error}") from None

    def config(self, mode: str, stages: int, micro_batches: int, micro_batch_size: int,
               lr: float, steps: int, seeds: int) -> SimConfig:
        """The ensemble of one design point (expected update, every iterate logged): analog,
        or Tiki-Taka with the transfer settings."""
        config = config_for(
            _CAP_BOUND[mode], problem=self.problem, dim=self.dim, sigma2=self.sigma2,
            device=self.device, tau=self.tau, seed=self.seed, stages=stages,
            micro_batches=micro_batches, micro_batch_size=micro_batch_size, lr=lr, steps=steps,
            seeds=seeds, log_every=1, update=self.update, write=self.write,
            **({} if self.pulse_type is None else {"pulse_type": self.pulse_type}),
        )
        if self.algorithm == "analog":
            return config
        return replace(config, algorithm=self.algorithm, transfer_every=self.transfer_every,
                       transfer_slice=self.transfer_slice)

    def region(self) -> tuple[float, float]:
        """``[c - W, c + W]``, the weight region of the device constants
        (:func:`device_region`)."""
        return device_region(self.config("sync", 1, 1, 1, 0.1, 10, 2), self.weight_bound)

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
        """The fields as a JSON-ready dict (the transfer fields only for Tiki-Taka)."""
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


def calibrated_pulse_type(update: str, pulse_type: str | None) -> str | None:
    """The pulse type a calibration records: :class:`SimConfig`'s default for a ``pulsed`` update
    given none, ``None`` for the expected update (which fires no pulses; a pulse type given for
    it is an error)."""
    if update == "pulsed" and pulse_type is None:
        return SimConfig().pulse_type
    if update != "pulsed" and pulse_type is not None:
        raise ParameterError(f"pulse_type={pulse_type!r} applies to update='pulsed' only (the "
                             "expected update fires no pulses)")
    return pulse_type


def device_region(config: SimConfig, weight_bound: float) -> tuple[float, float]:
    """``[c - W, c + W]`` around the centre ``c`` of ``config``'s device (its symmetric point,
    else the middle of its range): the weight region a calibration's device constants are
    computed on, as ``plan --weight-bound`` computes them."""
    device = device_from_config(config)
    try:
        centre = float(device.symmetric_point())
    except ParameterError:
        centre = 0.5 * (device.w_min + device.w_max)
    return centre - weight_bound, centre + weight_bound


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
           steps: int = CALIBRATION_STANDARD["steps"], seeds: int = CALIBRATION_STANDARD["seeds"],
           stability: Sequence[float] = STABILITY_FRACTIONS) -> tuple[DesignPoint, ...]:
    """Every ``(mode, M, B, b)`` of ``sync`` and ``async_`` at every step ``fraction`` of its cap,
    and every ``async_`` row also at every ``stability`` fraction of the stability limit
    :func:`theory.step_choice.stability_limit` (``D = M - 1``, the problem's ``L`` and the
    region's ``q_max``): the larger ``alpha D`` at which the staleness terms show.

    The cap is :func:`simulate.verification.checks.region_step_cap` of the mode's bound on
    :meth:`CalibrationProblem.region` (the supremum over theta; the cap of analog SGD with the
    expected batch-mean update for Tiki-Taka, pulsed and per-sample runs too: Corollary 3PS has
    Theorem 2's cap, so the synchronous per-sample steps are within their proved cap; the
    asynchronous per-sample cap of Theorem 4'PS is smaller, by up to 0.58 at D = 1); a step is
    rounded to 4 significant digits.
    """
    check_range("steps", steps, 10, None, integer=True)
    check_range("seeds", seeds, 2, None, integer=True)
    # every update is logged (the hitting times need it): the trace is steps + 2 values a seed
    check_size("steps", steps, need=8 * (steps + 2), limit=MAX_ARRAY_BYTES,
               what="bytes of trace per seed (a calibration logs every update)")
    check_size("seeds", seeds, need=8 * seeds * (steps + 2), limit=MAX_ARRAY_BYTES,
               what="bytes of ensemble trace", hint="fewer seeds or steps")
    largest = max((int(row[0]) for rows in (sync, async_) for row in rows), default=1)
    if spec.problem == "quadratic" and spec.dim < largest:
        raise ParameterError(
            f"dim={spec.dim} is out of range for this design: its largest pipeline has {largest} "
            f"stages, one coordinate block each; valid range [{largest}, inf)")
    points = []
    constants = spec.constants() if stability and async_ else {}
    for mode, rows in (("sync", sync), ("async", async_)):
        for stages, count, b in rows:
            count = count if mode == "sync" else 1
            # the analog run's cap (Tiki-Taka's A takes analog SGD's update)
            base = replace(spec, algorithm="analog", update="expected", pulse_type=None,
                           write="batch-mean").config(mode, stages, count, b, 0.1, steps, seeds)
            cap = region_step_cap(_CAP_BOUND[mode], base, *spec.region())
            steps_of = [fraction * cap for fraction in fractions]
            if mode == "async" and stability:
                limit = stability_limit(int(stages) - 1, constants["L"], constants["q_max"])
                for fraction in stability:
                    check_range("stability fraction", fraction, 0, 1, low_open=True,
                                high_open=True)
                steps_of += [fraction * limit for fraction in stability]
            for fraction in fractions:
                check_range("fraction", fraction, 0, 1, low_open=True)
            for step in steps_of:
                lr = float(f"{step:.4g}")
                points.append(DesignPoint(mode=mode, stages=int(stages), micro_batches=int(count),
                                          micro_batch_size=int(b), lr=lr, steps=int(steps),
                                          seeds=int(seeds)))
    if not points:
        raise ParameterError("design: no points (give sync or async rows)")
    return tuple(points)


def calibration_run(point: dict) -> dict:
    """Sweep function: the per-seed running averages of one design point.

    ``point = {"config": SimConfig.to_dict(), "format": CALIBRATE_FORMAT}``; returns
    ``{"running": ndarray (R, K), "pinned": str}``, entry ``[r, K - 1]`` the running average of
    seed ``r`` after ``K`` updates (every iterate logged); ``pinned`` the run's
    :class:`~simulate.device.PinnedWarning` (``""`` without one), kept for the parent to report
    once instead of printed by the worker.
    """
    config = SimConfig(**point["config"])
    with warnings.catch_warnings(record=True) as caught:  # a worker's warning is not printed
        warnings.simplefilter("always", PinnedWarning)
        trace = run(replace(config, log_every=1))
    pinned = [str(w.message) for w in caught if issubclass(w.category, PinnedWarning)]
    return {"running": running_average(trace.grad_norm2[:, :-1]),
            "pinned": pinned[0] if pinned else ""}


def design_sweep_points(spec: CalibrationProblem, points: Sequence[DesignPoint]) -> list[dict]:
    """The sweep points of :func:`calibration_run` for ``points`` of ``spec``'s design."""
    return [{"config": spec.config(p.mode, p.stages, p.micro_batches, p.micro_batch_size, p.lr,
                                   p.steps, p.seeds).to_dict(), "format": CALIBRATE_FORMAT}
            for p in points]
