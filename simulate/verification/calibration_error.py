r"""What a calibration knows: the least squares of the form, identifiability, profile bounds and
the model's own error (issue 27, item 4).

The observations of one mode are rows ``(M, B, b, lr, K, eps)`` (hitting times,
:func:`simulate.verification.calibration_fit.observations`); the fit minimises the squared log
residuals :math:`\log\hat g(K_j; c) - \log\epsilon_j` over :math:`\log c` (:func:`fit_log`).

**Shares** (:func:`largest_shares`): per coefficient, the largest share its term
(:data:`theory.calibration.TERM_OF`) has of the fitted :math:`\hat g` over the observations. A
term that is nowhere more than :data:`theory.calibration.SHARE_MIN` of the model moves no
residual by more than about that much, whatever its coefficient.

**Identified** (:func:`identified`): a share of at least ``SHARE_MIN``, and (with a bootstrap)
an interval that neither has zero width nor reaches the fit's lower bound ``1e-12``: a
percentile interval of refits that all sit at the bound reads as precision the data do not
have.

**Profile upper bound** (:func:`profile_bound`): for a coefficient not identified, the largest
value :math:`c_j` whose refit (the other coefficients free) keeps the residual sum of squares
within :math:`\mathrm{RSS}_{\min}(1 + F_{1,n-p}(\ell)/(n-p))` (the profile-likelihood F
threshold at level :math:`\ell`, ``n`` observations, ``p`` coefficients); found by bracketing
in factors of 10 and bisection in :math:`\log c_j`; ``inf`` when even :data:`_PROFILE_CAP`
stays inside.

**The model's own error** (:func:`pipeline_error_factor`): leave one pipeline ``(M, B, b)`` of
the mode out, refit on the rest, forecast the left-out pipeline's hitting times
(:func:`theory.calibration.iterations_to`) and score :math:`|\log K_{\mathrm{pred}} -
\log K_{\mathrm{sim}}|`. The split-conformal quantile of the scores at level :math:`\ell`, the
:math:`\lceil(m+1)\ell\rceil`-th smallest of ``m`` (``inf`` beyond ``m``), gives the factor
:math:`f = e^{q}`: a forecast's interval :math:`[K/f, Kf]` then covers a new pipeline's
simulated ``K`` with probability at least :math:`\ell` when pipelines are exchangeable (one
pipeline's hitting times share its seeds and are not, so the pipeline is the unit left out).
Fewer than :data:`MIN_PIPELINES` pipelines give no factor.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import least_squares
from scipy.special import fdtri  # the F quantile, scipy.stats.f.ppf's bits without its import

from theory.calibration import (
    COEFFICIENTS,
    SHARE_MIN,
    TERM_OF,
    iterations_to,
    model_terms,
)
from theory.errors import ParameterError

__all__ = [
    "MIN_PIPELINES",
    "TINY",
    "conformal_quantile",
    "fit_log",
    "identified",
    "largest_shares",
    "pipeline_error_factor",
    "profile_bound",
]

#: lower bound of every coefficient in the fit (log space): below it a term is nil
TINY = 1e-12
#: pipelines a mode needs for a leave-one-pipeline-out error factor
MIN_PIPELINES = 3
#: the largest coefficient a profile bound searches (above: ``inf``)
_PROFILE_CAP = 1e9
#: bisection steps of a profile bound (a factor 10 bracket to 10 / 2**12: 0.06 %)
_BISECTIONS = 12


def _residuals(x: np.ndarray, mode: str, obs: np.ndarray, start: float, write: str
               ) -> np.ndarray:
    m, big_b, b, lr, k, eps = obs.T
    terms = model_terms(mode, np.exp(np.minimum(x, 700.0)), k, lr=lr, M=m, B=big_b, b=b,
                        start=start, write=write)
    return np.log(sum(terms.values())) - np.log(eps)


def _jacobian(x: np.ndarray, mode: str, obs: np.ndarray, start: float, write: str
              ) -> np.ndarray:
    """The residuals' derivatives in the log coefficients: each term's share of the model (the
    saturated transient's times :math:`\alpha K/(\alpha K + c_K/S)`)."""
    m, big_b, b, lr, k, eps = obs.T
    c = np.exp(np.minimum(x, 700.0))
    terms = model_terms(mode, c, k, lr=lr, M=m, B=big_b, b=b, start=start, write=write)
    total = sum(terms.values())
    names = COEFFICIENTS[mode]
    out = np.empty((obs.shape[0], len(names)))
    for j, name in enumerate(names):
        out[:, j] = terms[TERM_OF[name]] / total
    if start is not None:
        out[:, 0] *= lr * k / (lr * k + c[0] / float(start))
    return out


def _initial(mode: str, obs: np.ndarray, write: str) -> np.ndarray:
    """Initial coefficients: the transient alone explains the median observation, each other
    term a tenth of the smallest target (the floor's not divided by n under per-sample writes)."""
    m, big_b, b, lr, k, eps = obs.T
    n = b * (big_b if mode == "sync" else 1.0)
    low = float(np.min(eps))
    start = [float(np.median(lr * k * eps)), 0.1 * low * float(np.median(n / lr)),
             0.1 * low * (1.0 if write == "per-sample" else float(np.median(n)))]
    if mode == "async":
        delay = np.maximum(m - 1, 1.0)
        start.append(0.1 * low * float(np.median(b / (lr**2 * delay))))
        start.append(0.1 * low * float(np.median((b if write == "batch-mean" else 1.0)
                                                 / (lr * delay) ** 2)))
    return np.log(np.maximum(start, 10 * TINY))


def fit_log(mode: str, obs: np.ndarray, start: float, write: str, x0: np.ndarray | None = None,
            fixed: dict[int, float] | None = None) -> tuple[np.ndarray, float]:
    """Least squares in log space; returns ``(log coefficients, residual sum of squares)``.

    ``fixed`` ``{index: log value}`` holds coefficients fixed (a profile); the others start at
    ``x0`` (default the module's initial guess)."""
    width = len(COEFFICIENTS[mode])
    if obs.shape[0] < width:
        raise ParameterError(
            f"design: {obs.shape[0]} reached targets for mode {mode!r}, fewer than its {width} "
            "coefficients; valid: more design points or steps"
        )
    x0 = _initial(mode, obs, write) if x0 is None else np.clip(x0, math.log(TINY), None)
    fixed = fixed or {}
    free = [i for i in range(width) if i not in fixed]

    def full(y):
        x = np.array(x0, dtype=float)
        x[free] = y
        for i, v in fixed.items():
            x[i] = v
        return x

    result = least_squares(lambda y: _residuals(full(y), mode, obs, start, write), x0[free],
                           jac=lambda y: _jacobian(full(y), mode, obs, start, write)[:, free],
                           method="trf", bounds=(math.log(TINY), np.inf), x_scale=1.0)
    return full(result.x), float(np.sum(result.fun**2))


def largest_shares(mode: str, values, obs: np.ndarray, start: float, write: str
                   ) -> tuple[float, ...]:
    """Per coefficient of ``mode``, its term's largest share of the model over ``obs``."""
    m, big_b, b, lr, k, _ = obs.T
    terms = model_terms(mode, values, k, lr=lr, M=m, B=big_b, b=b, start=start, write=write)
    total = sum(terms.values())
    return tuple(float(np.clip(np.max(terms[TERM_OF[name]] / total), 0.0, 1.0))
                 for name in COEFFICIENTS[mode])


def identified(values, low, high, shares, *, interval: bool) -> tuple[bool, ...]:
    """Per coefficient: share at least ``SHARE_MIN``, the fit above the lower bound and (with an
    ``interval``) the interval neither of zero width nor reaching the bound (module docstring)."""
    out = []
    for value, lo, hi, share in zip(values, low, high, shares, strict=True):
        ok = share >= SHARE_MIN and value > 10 * TINY
        if interval:
            ok = ok and lo > 10 * TINY and hi - lo > 1e-9 * value
        out.append(bool(ok))
    return tuple(out)


def profile_bound(mode: str, obs: np.ndarray, start: float, write: str, best: np.ndarray,
                  index: int, rss: float, level: float) -> float:
    """The profile upper bound of coefficient ``index`` (module docstring): ``best`` the log
    coefficients of the fit, ``rss`` its residual sum of squares."""
    n, p = obs.shape[0], len(COEFFICIENTS[mode])
    dof = max(n - p, 1)
    limit = rss * (1.0 + float(fdtri(1, dof, level)) / dof) + 1e-300

    def inside(t: float) -> bool:
        return fit_log(mode, obs, start, write, best, {index: t})[1] <= limit

    low = float(best[index])
    high = max(low, math.log(1e-8)) + math.log(10.0)
    while inside(high):
        low = high
        if high > math.log(_PROFILE_CAP):
            return math.inf
        high += math.log(10.0)
    for _ in range(_BISECTIONS):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if inside(mid) else (low, mid)
    return float(math.exp(low))


def conformal_quantile(scores, level: float) -> float:
    r"""The split-conformal quantile: the :math:`\lceil(m+1)\ell\rceil`-th smallest of the ``m``
    scores (``inf`` when that exceeds ``m``)."""
    scores = np.sort(np.asarray(scores, dtype=float))
    rank = math.ceil((scores.size + 1) * level)
    return math.inf if rank > scores.size else float(scores[rank - 1])


def pipeline_error_factor(mode: str, obs: np.ndarray, start: float, write: str, level: float,
                          x0: np.ndarray | None = None) -> tuple[float | None, int]:
    """``(f, m)``: the leave-one-pipeline-out conformal factor of ``mode`` and its number of
    scores (module docstring); ``(None, 0)`` with fewer than :data:`MIN_PIPELINES` pipelines or
    an unbounded quantile."""
    keys = [tuple(row) for row in obs[:, :3]]
    pipelines = sorted(set(keys))
    if len(pipelines) < MIN_PIPELINES:
        return None, 0
    width = len(COEFFICIENTS[mode])
    scores = []
    for pipeline in pipelines:
        out = np.array([key == pipeline for key in keys])
        if (~out).sum() < width:
            continue
        x, _ = fit_log(mode, obs[~out], start, write, x0)
        m, big_b, b, lr, k, eps = obs[out].T
        predicted = iterations_to(mode, np.exp(x), eps, lr=lr, M=m, B=big_b, b=b, start=start,
                                  write=write)
        with np.errstate(divide="ignore"):
            scores.extend(np.abs(np.log(predicted) - np.log(k)).tolist())
    q = conformal_quantile(scores, level) if scores else math.inf
    if not math.isfinite(q):
        return None, 0
    return float(math.exp(q)), len(scores)
