r"""The statistics of seed ensembles, written once: the standard error of a seed mean, the
one-sided test of a bound, and the percentile bootstrap over seeds.

**Standard error.** Seeds are independent, so the mean :math:`\bar x` of ``R`` per-seed values
has the standard error

.. math:: \mathrm{se}(\bar x) = \frac{s}{\sqrt R}, \qquad
    s^2 = \frac{1}{R - 1}\sum_{r=1}^{R} (x_r - \bar x)^2

(:func:`standard_error`: numpy's ``std(ddof=1)`` divided by ``math.sqrt(R)``, the value of
``scipy.stats.sem`` without its import; ``nan`` below two seeds). A check passes when
:math:`\bar x \le \mathcal B + z\,\mathrm{se}` (:func:`one_sided_pass`).

**Bootstrap.** :data:`BOOTSTRAP_RESAMPLES` resamples of the ``R`` seeds with replacement: the
multinomial counts of :func:`resample_counts`, drawn from one generator (in the callers:
:func:`simulate.rng.bootstrap_generator` of the run's root seed) in a fixed order, so an interval
has the same bits every time; :func:`bootstrap_means` are the resampled means, and
:func:`percentile_interval` the :data:`CI_LEVEL` central interval of a statistic's resampled
values (inverted CDF: both ends are values that occurred).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "CI_LEVEL",
    "bootstrap_means",
    "one_sided_pass",
    "percentile_interval",
    "resample_counts",
    "standard_error",
]

#: bootstrap resamples of the seeds for the interval of the simulated cycles
BOOTSTRAP_RESAMPLES = 1000
#: central coverage of that interval
CI_LEVEL = 0.95
#: resamples drawn and reduced at once (bounds the memory to this many running-average curves)
_CHUNK = 100


def standard_error(values) -> float:
    r"""The standard error :math:`s / \sqrt R` of the mean of ``R`` independent values.

    Parameters
    ----------
    values : array_like of float
        One value per seed (all of them, whatever the shape).

    Returns
    -------
    float
        ``std(values, ddof=1) / sqrt(R)`` (the bits of ``scipy.stats.sem`` on a float64 vector:
        one ``std`` and one correctly rounded square root); ``nan`` when ``R < 2``.
    """
    values = np.asarray(values, dtype=float)
    if values.size < 2:
        return math.nan
    return float(values.std(ddof=1) / math.sqrt(values.size))


def one_sided_pass(empirical: float, stderr: float, bound: float, z: float) -> bool:
    r"""The one-sided check of a bound: :math:`\bar x \le \mathcal B + z\,\mathrm{se}`.

    Parameters
    ----------
    empirical : float
        The measured mean over seeds.
    stderr : float
        Its standard error (:func:`standard_error`).
    bound : float
        The bound at the run's constants.
    z : float
        The margin, in standard errors.
    """
    return bool(empirical <= bound + z * stderr)


def resample_counts(rng: np.random.Generator, seeds: int,
                    resamples: int = BOOTSTRAP_RESAMPLES) -> Iterator[np.ndarray]:
    """The bootstrap over seeds: ``resamples`` resamples of ``seeds`` seeds with replacement.

    Yields the multinomial counts in chunks of at most 100 resamples (arrays of shape
    ``(chunk, seeds)``, each row summing to ``seeds``), drawn from ``rng`` in a fixed order, so
    the same generator gives the same resamples. A statistic of resample ``j`` weights seed
    ``r`` by ``counts[j, r]`` (e.g. ``counts @ per_seed / seeds`` for the mean).
    """
    for first in range(0, resamples, _CHUNK):
        size = min(_CHUNK, resamples - first)
        yield rng.multinomial(seeds, np.full(seeds, 1.0 / seeds), size=size)


def bootstrap_means(per_seed: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
    r"""``size`` bootstrap resamples of the mean over seeds (axis 0) of ``per_seed`` (R, ...).

    Each resample draws the ``R`` seeds with replacement (the counts of
    :func:`resample_counts`), the resampled mean ``counts @ per_seed / R``. The result has shape
    ``(size, ...)``; the same ``rng`` state gives the same bits.
    """
    per_seed = np.asarray(per_seed, dtype=float)
    r = per_seed.shape[0]
    return np.concatenate([counts @ per_seed / r for counts in resample_counts(rng, r, size)])


def percentile_interval(values, level: float = CI_LEVEL, axis: int | None = None) -> tuple:
    """The ``level`` central percentile interval of bootstrap ``values`` (inverted CDF: both ends
    are values that occurred).

    Parameters
    ----------
    values : array_like
        The resampled values of a statistic.
    level : float
        Central coverage (default :data:`CI_LEVEL`).
    axis : int, optional
        The axis of the resamples (default: all values).

    Returns
    -------
    (low, high)
        The ends (arrays without ``axis`` when it is given).
    """
    tail = (1.0 - level) / 2
    lo, hi = np.quantile(np.asarray(values), [tail, 1.0 - tail], axis=axis,
                         method="inverted_cdf")
    return lo, hi
