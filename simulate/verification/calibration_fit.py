r"""Calibration (issue 14, item 2): fit the theorems' form to simulated ensembles of one problem.

The design, its problem and its cached ensembles are :mod:`simulate.verification.calibration_design`
(:class:`~simulate.verification.calibration_design.CalibrationProblem`,
:func:`~simulate.verification.calibration_design.design`); :func:`calibrate` runs them and fits
them; the held-out check of the fit is :mod:`simulate.verification.heldout`.

**Observations.** For each point the ensemble mean running average
:math:`\bar g(K) = \frac1R\sum_r\frac1K\sum_{k<K}\lVert\nabla f(W^{(r)}_k)\rVert^2` gives, at
:data:`TARGETS` targets :math:`\epsilon_j` log-spaced between ``1.1`` times the curve's minimum
and half of its start :math:`S = \bar g(1)`, the first ``K_j`` with :math:`\bar g(K_j) \le
\epsilon_j` (:func:`simulate.verification.prediction.first_hit`, the measure of cycles to eps of
:mod:`simulate.verification.prediction`).

**Fit.** Per mode, the coefficients :math:`c \ge 0` of :mod:`theory.calibration` (of its
per-sample form when the problem's runs write per sample, :attr:`~simulate.verification.
CalibrationProblem.write`) minimise the sum of squared log residuals :math:`\log\hat g(K_j; c) -
\log\epsilon_j` (``scipy.optimize.least_squares``, trust region reflective, on :math:`\log c`).

**Intervals.** A bootstrap over seeds: each of ``resamples`` replicates resamples the ``R`` seeds
of every point with replacement (:func:`simulate.verification.stats.bootstrap_means` with
:func:`simulate.rng.bootstrap_generator` of the root seed: the same bits every time), recomputes
the hitting times of the same targets and refits; the interval of each coefficient is the central
``ci_level`` percentile interval of the refits (:func:`simulate.verification.stats.
percentile_interval`, widened to hold the fit itself, which a coefficient at its lower bound
``1e-12``, i.e. a term the data do not show, can leave), and the refits are kept (a forecast's
interval is that of the joint fit, :func:`theory.calibration.forecast_iterations`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np

from theory.calibration import COEFFICIENTS, Calibration, ModeFit, problem_fingerprint
from theory.errors import ParameterError, check_range

from ..device import PinnedWarning
from ..execution import package_version, run_sweep
from ..rng import bootstrap_generator
from .calibration_design import (
    CalibrationProblem,
    DesignPoint,
    calibration_run,
    design,
    design_sweep_points,
)
from .calibration_error import (
    fit_log,
    identified,
    largest_shares,
    pipeline_error_factor,
    profile_bound,
)
from .calibration_settings import CALIBRATION_STANDARD
from .prediction import first_hit
from .stats import bootstrap_means, percentile_interval

__all__ = [
    "TARGETS",
    "calibrate",
    "fit_calibration",
    "observations",
]

#: hitting-time targets per design point
TARGETS = 8


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
        hits = first_hit(mean, np.asarray(eps, dtype=float)[:, None])  # one row per target
        for e, k in zip(eps, hits.tolist(), strict=True):
            if k:
                rows[p.mode].append((p.stages, p.micro_batches, p.micro_batch_size, p.lr, k, e))
    return {mode: np.asarray(r, dtype=float).reshape(-1, 6) for mode, r in rows.items()}


def fit_calibration(spec: CalibrationProblem, points: Sequence[DesignPoint],
                    running: Sequence[np.ndarray], *,
                    resamples: int = CALIBRATION_STANDARD["resamples"], ci_level: float = 0.95,
                    prediction_level: float = 0.9, created_by: dict | None = None,
                    targets: Sequence[np.ndarray] | None = None) -> Calibration:
    """The :class:`~theory.calibration.Calibration` of ``points`` from their per-seed running
    averages ``running[i]`` (shape ``(R, K)``; see the module docstring for fit and bootstrap;
    shares, identifiability, profile bounds at ``ci_level`` and the error factor at
    ``prediction_level``: :mod:`simulate.verification.calibration_error`).

    ``targets[i]``: the levels of point ``i`` (default the module docstring's; a network's are
    its target's, :mod:`simulate.verification.calibration_network`: a level a curve does not
    reach is no observation)."""
    check_range("resamples", resamples, 0, None, integer=True)
    running = [np.asarray(r, dtype=float) for r in running]
    means = [r.mean(axis=0) for r in running]
    targets = ([_targets(mean) for mean in means] if targets is None
               else [np.asarray(t, dtype=float) for t in targets])
    obs = observations(points, means, targets)
    start = float(np.median([mean[0] for mean in means]))  # every run starts at W_0
    modes = [mode for mode in ("sync", "async") if any(p.mode == mode for p in points)]
    best = {mode: fit_log(mode, obs[mode], start, spec.write) for mode in modes}
    draws: dict[str, list] = {mode: [] for mode in modes}
    rng = bootstrap_generator(spec.seed)
    for _ in range(resamples):
        resampled = [bootstrap_means(r, rng, 1)[0] for r in running]
        again = observations(points, resampled, targets)
        for mode in modes:
            if again[mode].shape[0] >= len(COEFFICIENTS[mode]):
                draws[mode].append(np.exp(fit_log(mode, again[mode], start, spec.write,
                                                  best[mode][0])[0]))
    fits = {}
    for mode in modes:
        values = np.exp(best[mode][0])
        sample = np.asarray(draws[mode]).reshape(-1, values.size)
        if resamples and not sample.shape[0]:  # a file needs draws (theory.calibration_file)
            raise ParameterError(
                f"design: no bootstrap resample of mode {mode!r} reached {len(values)} targets, "
                "so its coefficients have no interval; valid: more seeds or steps")
        if sample.shape[0]:  # (widened to hold the fit: at the bound 1e-12 the two may differ)
            low, high = percentile_interval(sample, ci_level, axis=0)
            low, high = np.minimum(low, values), np.maximum(high, values)
        else:  # resamples=0 (point forecasts in memory, e.g. the held-out check): no interval
            low = high = values
        x, rss = best[mode]
        shares = largest_shares(mode, values, obs[mode], start, spec.write)
        known = identified(values, low, high, shares, interval=bool(sample.shape[0]))
        profile = tuple(float(high[i]) if ok else profile_bound(
            mode, obs[mode], start, spec.write, x, i, rss, ci_level) for i, ok in enumerate(known))
        factor, scores = pipeline_error_factor(mode, obs[mode], start, spec.write,
                                               prediction_level, x)
        fits[mode] = ModeFit(mode=mode, values=tuple(values), low=tuple(low), high=tuple(high),
                             draws=tuple(tuple(row) for row in sample),
                             residual_rms=math.sqrt(rss / obs[mode].shape[0]),
                             observations=int(obs[mode].shape[0]), shares=shares,
                             identified=known, profile_high=profile, error_factor=factor,
                             error_scores=scores)
    problem = {**spec.to_dict(), **spec.constants(), "start": start}
    return Calibration(
        fits=fits, problem=problem, fingerprint=problem_fingerprint(problem),
        design=tuple(p.to_dict() for p in points),
        seeds={"root": spec.seed, "R": sorted({p.seeds for p in points}), "resamples": resamples},
        version=package_version(), created_by=dict(created_by or {}), ci_level=ci_level,
        prediction_level=prediction_level,
    )


def calibrate(spec: CalibrationProblem, points: Sequence[DesignPoint] | None = None, *,
              resamples: int = CALIBRATION_STANDARD["resamples"], ci_level: float = 0.95, jobs=None,
              scheduler=None, cache=True, progress: bool | None = None,
              created_by: dict | None = None) -> Calibration:
    """Run the design's ensembles as one cached sweep (:func:`calibration_run`) and fit them.

    ``points`` defaults to :func:`design` of ``spec``; ``jobs``, ``scheduler``, ``cache`` and
    ``progress`` are those of :func:`simulate.execution.sweep.run_sweep`. Runs pinned at the
    device bounds give one :class:`~simulate.device.PinnedWarning` for the design (counting
    them), or, when the fit then fails, a note in its error.
    """
    check_range("resamples", resamples, 0, None, integer=True)  # before the sweep's work
    points = design(spec) if points is None else tuple(points)
    sweep = run_sweep(calibration_run, design_sweep_points(spec, points), jobs=jobs,
                      scheduler=scheduler, cache=cache, progress=progress, desc="calibrate")
    running = [result["running"] for result in sweep.results]
    pinned = [p for p, result in zip(points, sweep.results, strict=True) if result["pinned"]]
    note = (f"{len(pinned)} of {len(points)} design points ran pinned at the device bounds "
            f"(first: {pinned[0].mode} M={pinned[0].stages} lr={pinned[0].lr:g}): the device "
            "range, not the problem, decided their weights" if pinned else "")
    try:
        cal = fit_calibration(spec, points, running, resamples=resamples, ci_level=ci_level,
                              created_by=created_by)
    except ParameterError as error:  # the pinning is then the likely cause: one line says both
        if not pinned:
            raise
        raise ParameterError(f"{error}; {note}") from None
    if pinned:  # once, for the whole design (the command prints it as its one warning line)
        warnings.warn(note, PinnedWarning, stacklevel=2)
    return cal
