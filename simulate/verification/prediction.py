r"""Prediction error of a check (issue 14, item 1): cycles to eps, guaranteed versus simulated.

A check (:func:`simulate.verification.checks.check_bound`) compares the bound with the measured
average at the run's ``K``. Read as a *prediction*, the same bound says how long the run needs to
reach a target. Every registry bound depends on ``K`` only through :math:`2\Delta/(\alpha q_{\min}
K)` (``q_min = 1`` digitally), so at the run's step :math:`\alpha` = ``lr``, its tightest
:math:`\theta` and the constants that held it decreases to its **floor**
:math:`F = \lim_{K\to\infty}\mathcal B(\theta, K, \alpha)`. Every run **starts** at
:math:`S = \lVert\nabla f(W_0)\rVert^2` (the ensemble mean running average at ``K = 1``; the
same for every seed). The target of a check is the geometric midpoint of the two,

.. math::

    \epsilon = \sqrt{F\,S}, \qquad
    K_{\mathrm{pred}} = \min\{K' \ge 1 : \mathcal B(\theta, K', \alpha) \le \epsilon\},

    K_{\mathrm{sim}} = \min\Bigl\{K \ge 1 : \frac1R\sum_{r=1}^{R}
    \frac1K\sum_{k<K}\lVert\nabla f(W_k^{(r)})\rVert^2 \le \epsilon\Bigr\}

(halfway, on a log scale, between where every run starts and the best the guarantee promises
at this step; ``K_pred`` may exceed the run, ``K_sim`` is searched within it). When
:math:`F \ge S` no target below the start is ever guaranteed at this step: the check is
**vacuous** (:attr:`Prediction.vacuous`, no target, no ratio; summaries count such checks apart).
(The bound's own value at the run's ``K`` is no use as the target: at the suites' ``K`` it is
within a few per cent of ``F``, so ``K_pred`` would be the run's length whatever happened.)

Both ``K`` are converted to clock cycles by the schedule's closed form
(:func:`simulate.pipeline.staleness.cycles_after`: ``2MBK`` none, ``2(B + M - 1)K`` sync,
``2(K + M - 1)`` async) and to samples (``n K``, ``n`` the samples per update). The **prediction
ratio** is ``predicted cycles / simulated cycles``; where the bound holds for the ensemble mean at
``K_pred`` (the theorems hold at every ``K``) it is ``>= 1``, and its size is how much longer than
necessary the guarantee says one must run.

**Confidence interval.** A percentile bootstrap over seeds (:mod:`simulate.verification.stats`):
:data:`~simulate.verification.stats.BOOTSTRAP_RESAMPLES` resamples of the ``R`` seeds with
replacement (counts from a multinomial draw of :func:`simulate.rng.bootstrap_generator` of the
run's root seed, so the interval has the same bits every time), ``K_sim`` of each resample's mean
running average, and the :data:`~simulate.verification.stats.CI_LEVEL` central interval of those
(a resample that does not reach ``eps`` within the run counts as beyond it; an
end beyond the run is ``None``).

For a comparison at a larger target (:func:`simulate.verification.ranking.ranking_agreement`) a
:class:`Prediction` keeps the ensemble mean running average up to ``K_sim``
(:attr:`Prediction.running`): the first ``K`` of any larger target lies in that prefix.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from theory.admissible import compiled_bound

from ..pipeline import cycles_after
from ..rng import bootstrap_generator
from .stats import BOOTSTRAP_RESAMPLES, percentile_interval, resample_counts

__all__ = [
    "Prediction",
    "bound_floor",
    "first_hit",
    "predict",
    "predicted_iterations",
    "running_average",
    "target",
]

#: predictions beyond this many iterations are reported as unreachable (exact in a float)
_MAX_PREDICTED = 2**53


def running_average(grad_norm2: np.ndarray) -> np.ndarray:
    r"""Running averages :math:`\frac1K\sum_{k<K} g_k` for ``K = 1..T`` along the last axis.

    ``grad_norm2`` holds :math:`\lVert\nabla f(W_k)\rVert^2` at iterates ``k = 0..T-1``
    (squared-gradient units); the result has the same shape, entry ``K - 1`` for ``K``.
    """
    grad_norm2 = np.asarray(grad_norm2, dtype=float)
    return np.cumsum(grad_norm2, axis=-1) / np.arange(1, grad_norm2.shape[-1] + 1)


def first_hit(curve, eps) -> np.ndarray:
    """The smallest ``K >= 1`` with ``curve[..., K - 1] <= eps`` along the last axis; 0 where the
    curve never gets there (int64, the shape of ``curve`` without its last axis). ``eps``
    broadcasts against ``curve`` (``levels[:, None]``: one row per level of one curve)."""
    hit = np.asarray(curve, dtype=float) <= eps
    return np.where(hit.any(axis=-1), hit.argmax(axis=-1) + 1, 0).astype(np.int64)


def bound_floor(name: str, constants: Mapping) -> float:
    r"""The bound's limit :math:`K \to \infty` at the check's step and theta (``constants`` of a
    :attr:`simulate.verification.checks.Check`: the bound's parameters, ``theta``, ``alpha``)."""
    return _bound_at(name, constants, math.inf)


def _bound_at(name: str, constants: Mapping, k) -> float:
    theta = constants.get("theta")
    return float(compiled_bound(name).value(0.0 if theta is None else float(theta), k,
                                            float(constants["alpha"]), constants))


def predicted_iterations(name: str, constants: Mapping, eps: float) -> int | None:
    r"""The guarantee's iterations to ``eps`` at the check's step: the smallest ``K' >= 1`` with
    :math:`\mathcal B(\theta, K', \alpha) \le \epsilon`.

    ``constants`` is a :attr:`simulate.verification.checks.Check.constants`. The bound decreases in
    ``K`` (through :math:`2\Delta/(\alpha q_{\min} K)` only), so ``K'`` is found by doubling and
    bisection; ``None`` when ``eps`` is at or below the floor (:func:`bound_floor`) or ``K'``
    would exceed ``2**53``.
    """
    if _bound_at(name, constants, math.inf) >= eps:
        return None
    hi = 1
    while _bound_at(name, constants, hi) > eps:
        hi *= 2
        if hi > _MAX_PREDICTED:
            return None
    lo = hi // 2  # bound(lo) > eps (or lo = 0), bound(hi) <= eps
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if _bound_at(name, constants, mid) <= eps else (mid, hi)
    return hi


@dataclass(frozen=True)
class Prediction:
    """Cycles and samples to ``eps``: the guarantee at the run's step versus the simulation.

    Attributes
    ----------
    floor : float
        The bound's limit ``K -> inf`` at the run's step and theta (squared-gradient units).
    start : float
        ``||grad f(W_0)||^2``, the ensemble mean running average at ``K = 1``.
    eps : float or None
        The target ``sqrt(floor * start)``; ``None`` when vacuous (``floor >= start``).
    predicted_iterations, predicted_cycles, predicted_samples : int or None
        :func:`predicted_iterations` at ``eps`` (may exceed the run) and its clock cycles and
        training samples.
    simulated_iterations, simulated_cycles, simulated_samples : int or None
        The first ``K`` at which the ensemble mean running average is ``<= eps``, in iterations,
        cycles and samples (``None``: not within the run).
    ci_low, ci_high : int or None
        The bootstrap interval of ``simulated_cycles`` (``None``: beyond the run).
    ratio : float or None
        ``predicted_cycles / simulated_cycles`` (``>= 1`` where the bound holds).
    ratio_low, ratio_high : float or None
        The interval of the ratio: ``predicted_cycles / ci_high``, ``predicted_cycles / ci_low``.
    resamples : int
        Bootstrap resamples.
    running : tuple of float
        The ensemble mean running average for ``K = 1..simulated_iterations`` (empty when not
        reached): what a comparison at a larger target needs.
    """

    floor: float
    start: float
    eps: float | None
    predicted_iterations: int | None
    predicted_cycles: int | None
    predicted_samples: int | None
    simulated_iterations: int | None
    simulated_cycles: int | None
    simulated_samples: int | None
    ci_low: int | None
    ci_high: int | None
    ratio: float | None
    ratio_low: float | None
    ratio_high: float | None
    resamples: int
    running: tuple[float, ...] = ()

    @property
    def vacuous(self) -> bool:
        """The guarantee's floor at this step is at or above the start: it never promises a
        target below ``||grad f(W_0)||^2`` (no target, no ratio)."""
        return self.eps is None

    def to_dict(self) -> dict:
        """JSON-ready fields (``running`` as a list)."""
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        out["running"] = list(self.running)
        return out

    @classmethod
    def from_dict(cls, data: Mapping) -> Prediction:
        """Inverse of :meth:`to_dict`."""
        data = dict(data)
        data["running"] = tuple(float(v) for v in data["running"])
        return cls(**data)


def target(floor: float, start: float) -> float | None:
    """The target of a check, ``sqrt(floor * start)``; ``None`` when ``floor >= start``."""
    return None if floor >= start else math.sqrt(floor * start)


def _cycles(mode: str, stages: int, micro_batches: int, k: int | None) -> int | None:
    return None if k is None else int(cycles_after(mode, stages, micro_batches, k))


def predict(name: str, config, constants: Mapping, grad_norm2: np.ndarray) -> Prediction:
    """The :class:`Prediction` of a check (see the module docstring).

    Parameters
    ----------
    name : str
        Registry entry.
    config : SimConfig
        The run (mode, stages, micro-batches, samples per update, root seed).
    constants : mapping
        The check's constants (:func:`predicted_iterations`).
    grad_norm2 : ndarray, shape (R, K)
        :math:`\\lVert\\nabla f(W_k)\\rVert^2` of every seed at iterates ``k = 0..K-1``.
    """
    mode, m, b = config.mode, config.stages, config.micro_batches
    n = config.samples_per_update
    per_seed = running_average(grad_norm2)
    mean = per_seed.mean(axis=0)
    floor, start = bound_floor(name, constants), float(mean[0])
    eps = target(floor, start)
    none = dict.fromkeys(("predicted_iterations", "predicted_cycles", "predicted_samples",
                          "simulated_iterations", "simulated_cycles", "simulated_samples",
                          "ci_low", "ci_high", "ratio", "ratio_low", "ratio_high"))
    if eps is None:
        return Prediction(floor=floor, start=start, eps=None, resamples=0, **none)
    k_pred = predicted_iterations(name, constants, eps)
    k_sim = int(first_hit(mean, eps)) or None
    rng = bootstrap_generator(config.seed)
    r, steps = per_seed.shape
    hits = np.concatenate([first_hit(counts @ per_seed / r, eps)
                           for counts in resample_counts(rng, r)])
    hits = np.where(hits == 0, steps + 1, hits)  # not reached: beyond the run
    lo, hi = (int(v) for v in percentile_interval(hits))
    lo_k, hi_k = (None if v > steps else v for v in (lo, hi))
    p_cycles = _cycles(mode, m, b, k_pred)
    s_cycles, ci_low, ci_high = (_cycles(mode, m, b, v) for v in (k_sim, lo_k, hi_k))

    def over(x):
        return None if x is None or p_cycles is None else p_cycles / x

    return Prediction(
        floor=floor, start=start, eps=eps, predicted_iterations=k_pred,
        predicted_cycles=p_cycles, predicted_samples=None if k_pred is None else k_pred * n,
        simulated_iterations=k_sim, simulated_cycles=s_cycles,
        simulated_samples=None if k_sim is None else k_sim * n, ci_low=ci_low, ci_high=ci_high,
        ratio=over(s_cycles), ratio_low=over(ci_high), ratio_high=over(ci_low),
        resamples=BOOTSTRAP_RESAMPLES,
        running=tuple(float(v) for v in mean[:k_sim]) if k_sim else (),
    )
