r"""Do a calibration's forecast intervals cover what simulation gives? Held-out coverage on a
broad set unlike the package's own grid (issue 27, item 4).

:func:`broad_instance` draws a problem unlike :func:`simulate.verification.heldout.
draw_instance`'s (the quadratic of dimension 16 on three devices, batch-mean writes, the
expected update, every point at the guarantee's step): a quadratic or least squares of
dimension 8 - 32, one of six devices, the expected or the pulsed update, batch-mean or
per-sample writes, and judged points at steps drawn anywhere from 5 % of the proved cap to 60 %
of the stability limit (async: :func:`theory.step_choice.stability_limit`). The calibration is
fitted on a design with none of the judged ``(mode, M, B, b)``; :func:`broad_coverage`
simulates every judged point to a target (:func:`simulate.verification.heldout.hitting_run`)
and returns each forecast with its interval (:class:`CoveragePoint`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from theory.calibration import model_floor, predicted_cycles
from theory.errors import ParameterError
from theory.step_choice import stability_limit

from ..execution import run_sweep
from ..pipeline import cycles_after
from .calibration_design import CALIBRATE_FORMAT, CalibrationProblem, design
from .calibration_fit import calibrate
from .checks import region_step_cap
from .heldout import HELDOUT_FRACTIONS, HELDOUT_MAX_STEPS, hitting_run

__all__ = ["BROAD_DEVICES", "CoveragePoint", "broad_coverage", "broad_instance"]

#: the devices of the broad set (``tau`` drawn for the soft-bounds family only)
BROAD_DEVICES = ("softbounds", "reram-softbounds", "ecram-linearstep", "capacitor-linearstep",
                 "asymmetric-softbounds", "linear-step")


@dataclass(frozen=True)
class CoveragePoint:
    """One judged point: its forecast interval and its simulated cycles to ``eps``.

    Attributes
    ----------
    mode : str
    stages, micro_batches, micro_batch_size : int
    lr, eps : float
    simulated : float
        Simulated cycles to ``eps`` (``inf``: not reached within the simulation's limit).
    predicted, low, high : float
        The forecast and its interval, cycles (:func:`theory.calibration.predicted_cycles`).
    level : float
        The interval's claimed coverage.
    """

    mode: str
    stages: int
    micro_batches: int
    micro_batch_size: int
    lr: float
    eps: float
    simulated: float
    predicted: float
    low: float
    high: float
    level: float

    @property
    def covered(self) -> bool:
        """The interval holds the simulated cycles."""
        return self.low <= self.simulated <= self.high


def broad_instance(rng: np.random.Generator) -> tuple[CalibrationProblem, tuple, tuple, tuple]:
    """A random problem of the broad set, its judged points ``(mode, M, B, b, fraction)``
    (``fraction`` of the cap for sync, of the stability limit for async) and its design rows
    (none a judged pipeline)."""
    m = int(rng.choice([2, 3]))
    while True:
        device = str(rng.choice(BROAD_DEVICES))
        update = str(rng.choice(["expected", "pulsed"]))
        try:
            spec = CalibrationProblem(
                problem=str(rng.choice(["quadratic", "least-squares"])),
                dim=int(rng.integers(max(8, 3 * m), 33)),
                sigma2=float(f"{math.exp(rng.uniform(math.log(0.05), math.log(1.0))):.3g}"),
                device=device,
                tau=(float(f"{math.exp(rng.uniform(math.log(1.5), math.log(8.0))):.3g}")
                     if device == "softbounds" else None),
                weight_bound=0.6, seed=int(rng.integers(0, 2**31)), update=update,
                write=str(rng.choice(["batch-mean", "per-sample"])))
            break
        except ParameterError:  # a device whose range does not hold the region: draw again
            continue
    points = (("sync", m, int(rng.choice([2, 4])), 1, float(rng.uniform(0.1, 1.0))),
              ("sync", 2 * m, 1, 2, float(rng.uniform(0.05, 1.0))),
              ("async", m, 1, 1, float(math.exp(rng.uniform(math.log(0.02), math.log(0.6))))),
              ("async", 2 * m + 1, 1, 2, float(math.exp(rng.uniform(math.log(0.02),
                                                                    math.log(0.6))))))
    sync = ((m + 1, 2, 1), (3 * m, 3, 1), (m + 1, 1, 2))
    async_ = ((m + 1, 1, 1), (3 * m, 1, 1), (3 * m, 1, 2))
    return spec, points, sync, async_


def broad_coverage(seed: int, *, seeds: int = 8, steps: int = 2000, jobs=1, cache=False,
                   progress: bool | None = False) -> tuple[CoveragePoint, ...]:
    r"""Calibrate broad instance ``seed`` (:func:`broad_instance`) and judge its points.

    The target is :math:`\epsilon = \sqrt{2F_{\max}S}` with :math:`F_{\max}` the largest
    calibrated floor over the judged points at their steps and ``S`` the calibration's start
    (so every forecast is finite); points the simulation does not bring to ``eps`` within its
    limit are returned with ``simulated = inf``.
    """
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0xC0FE]))
    spec, judged, sync, async_ = broad_instance(rng)
    points = design(spec, sync=sync, async_=async_, fractions=HELDOUT_FRACTIONS, steps=steps,
                    seeds=seeds)
    options = dict(jobs=jobs, cache=cache, progress=progress)
    cal = calibrate(spec, points, resamples=0, **options)
    constants = spec.constants()
    steps_of = []
    for mode, m, big_b, b, fraction in judged:
        if mode == "async":
            steps_of.append(fraction * stability_limit(m - 1, constants["L"],
                                                       constants["q_max"]))
        else:
            base = replace(spec, update="expected", pulse_type=None, write="batch-mean")
            cap = region_step_cap("analog_sgd_sp", base.config(mode, m, big_b, b, 0.1, 10, 2),
                                  *spec.region())  # the design's cap (its batch-mean rule)
            steps_of.append(fraction * cap)
    steps_of = [float(f"{lr:.4g}") for lr in steps_of]
    floors = [float(model_floor(mode, cal.fit(mode).values, lr=lr, M=m, B=big_b, b=b,
                                write=cal.write))
              for (mode, m, big_b, b, _), lr in zip(judged, steps_of, strict=True)]
    eps = math.sqrt(2.0 * max(floors) * cal.start)
    hits = run_sweep(hitting_run, [
        {"config": spec.config(mode, m, big_b, b, lr, 10, seeds).to_dict(), "eps": eps,
         "max_steps": HELDOUT_MAX_STEPS, "format": CALIBRATE_FORMAT}
        for (mode, m, big_b, b, _), lr in zip(judged, steps_of, strict=True)],
        desc="broad to eps", **options)
    out = []
    for (mode, m, big_b, b, _), lr, hit in zip(judged, steps_of, hits.results, strict=True):
        k = int(hit["iterations"])
        f = predicted_cycles(cal, mode, eps, m, big_b, b, lr=lr)
        out.append(CoveragePoint(
            mode=mode, stages=m, micro_batches=big_b, micro_batch_size=b, lr=lr, eps=eps,
            simulated=float(cycles_after(mode, m, big_b, k)) if k else math.inf,
            predicted=f.cycles, low=f.low, high=f.high, level=f.level))
    return tuple(out)
