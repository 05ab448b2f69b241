r"""The step of a run as a decision: the stability limit of the asynchronous recursion.

On :math:`f = (L/2) w^2` with a constant response :math:`q` and a block of forward delay
:math:`D`, the asynchronous update is the delayed recursion
:math:`w_{k+1} = w_k - a\,w_{k-D}` with :math:`a = \alpha L q`. Its characteristic polynomial
:math:`z^{D+1} - z^D + a` has every root inside the unit circle iff

.. math:: 0 < a < 2 \sin\!\Bigl(\frac{\pi}{4D + 2}\Bigr),

(:math:`a < 2` at :math:`D = 0`, gradient descent), so no step above

.. math:: \alpha_{\mathrm{stab}}(D) = \frac{2 \sin(\pi / (4D + 2))}{L\, q_{\max}}

can be stable on every problem of curvature :math:`L` (``docs/theory.md``, Theorem 4', remark on
the cap; ``tests/test_ap_stability.py`` checks the root moduli and that the simulator diverges
just above it). Every proved asynchronous step cap lies below this limit; a step chosen by a
forecast (a calibration) is searched up to it, never beyond.

**The forecast's step** (:func:`forecast_steps`, :func:`best_steps`). At a fixed configuration
``(mode, M, B, b)`` the clock cycles grow with the updates (:func:`theory.schedules.
cycles_after`) and the cycle time does not depend on the step, so the step of fewest predicted
seconds is the step of fewest calibrated updates :math:`K(\epsilon;\alpha)`
(:func:`theory.calibration.forecast_iterations`) over
:math:`\alpha \in (0, \alpha_{\mathrm{stab}}]`: a log grid of :data:`SEARCH_POINTS` steps over
:data:`SEARCH_DECADES` decades below the limit, then a golden-section search in log
:math:`\alpha` between the neighbours of the grid's best (:data:`GOLDEN_ITERATIONS`).

**The guarantee there** (:func:`guarantee_at_step`). A step at or below the step cap of one of
the mode's proved entries (:func:`theory.admissible.step_cap` of :func:`theory.theorems.
bounds_for`) has a guarantee: the fewest whole :math:`K` at which the bound at that step and its
tightest admissible :math:`\theta` (:func:`theory.admissible.tightest_theta`) is at most
:math:`\epsilon`; above every cap there is none.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from theory.admissible import step_cap, tightest_theta
from theory.calibration import Calibration, Forecast, forecast_iterations, predicted_cycles
from theory.errors import ParameterError, check_range
from theory.schedules import cycles_after
from theory.theorems import bounds_for

__all__ = [
    "BELOW_FLOOR_AT_STEP",
    "FOUND",
    "GOLDEN_ITERATIONS",
    "INSIDE_CAP",
    "OUTSIDE_CAP",
    "SEARCH_DECADES",
    "SEARCH_POINTS",
    "StepForecast",
    "StepGuarantee",
    "UNREACHABLE",
    "best_steps",
    "forecast_steps",
    "guarantee_at_step",
    "stability_limit",
]

#: steps of the coarse log grid of the forecast's step search
SEARCH_POINTS = 121
#: the grid spans ``[limit 10**-SEARCH_DECADES, limit]``
SEARCH_DECADES = 8
#: golden-section iterations in log step between the grid best's neighbours
GOLDEN_ITERATIONS = 40
#: :attr:`StepForecast.status`: a step of the search reaches ``eps``
FOUND = "found"
#: :attr:`StepForecast.status`: ``eps`` is at or below the calibrated floor at every step searched
UNREACHABLE = "unreachable"
#: :attr:`StepGuarantee.status`: the step is inside a proved cap and its bound reaches ``eps``
INSIDE_CAP = "inside the proved cap"
#: :attr:`StepGuarantee.status`: inside a cap, but ``eps`` is at or below every bound's floor there
BELOW_FLOOR_AT_STEP = "inside the proved cap, eps at or below its floor at this step"
#: :attr:`StepGuarantee.status`: above every proved cap of the mode: no guarantee
OUTSIDE_CAP = "none: outside the proved cap"
#: the largest whole iteration count a guarantee at a step is searched up to (an int64 holds it)
_MAX_ITERATIONS = 2**62


def stability_limit(D, L=1.0, q_max=1.0):
    r"""The largest stable step of the delayed recursion, :math:`2\sin(\pi/(4D+2))/(L q_{\max})`.

    Parameters
    ----------
    D : int or array_like
        The maximal forward delay (``M - 1`` for an asynchronous pipeline of ``M`` stages;
        0 for a run without staleness), >= 0.
    L : float
        The smoothness constant (the largest curvature), > 0.
    q_max : float
        The largest response factor of the device (1 for a digital update), > 0.

    Returns
    -------
    float or numpy.ndarray
        :math:`\alpha_{\mathrm{stab}}`; a float for scalar ``D``.
    """
    delays = np.asarray(D, dtype=float)
    for delay in delays.ravel():
        check_range("D", float(delay), low=0)
    check_range("L", L, low=0, low_open=True)
    check_range("q_max", q_max, low=0, low_open=True)
    limit = 2.0 * np.sin(np.pi / (4.0 * delays + 2.0)) / (L * q_max)
    return float(limit) if limit.ndim == 0 else limit


def _delay(mode: str, M) -> np.ndarray:
    """The maximal forward delay of the mode: ``M - 1`` async, 0 sync."""
    stages = np.asarray(M)
    return stages - 1 if mode == "async" else np.zeros_like(stages)


def _point_only(cal: Calibration, mode: str) -> Calibration:
    """``cal`` with the bootstrap draws of ``mode`` left out: the point forecast only (the search
    compares point forecasts; the interval is computed once, at the chosen step)."""
    fit = cal.fit(mode)
    return replace(cal, fits={**cal.fits, mode: replace(fit, draws=())})


def best_steps(cal: Calibration, mode: str, eps: float, M, B=1, b=1, *, L: float = 1.0,
               q_max: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""The step of fewest calibrated updates to ``eps`` in :math:`(0, \alpha_{\mathrm{stab}}]`.

    For every point of the broadcast ``(M, B, b)``: :math:`\arg\min_\alpha K(\epsilon;\alpha)`
    (:func:`theory.calibration.forecast_iterations`, point forecast) over a log grid of
    :data:`SEARCH_POINTS` steps spanning :data:`SEARCH_DECADES` decades below
    :math:`\alpha_{\mathrm{stab}}(D)` (:func:`stability_limit`, ``D = M - 1`` async, 0 sync),
    refined by :data:`GOLDEN_ITERATIONS` golden-section steps in :math:`\log\alpha` between the
    grid best's neighbours (kept only where it improves on the grid).

    Returns
    -------
    (lr, iterations, limit) : (ndarray, ndarray, ndarray)
        The chosen step (``nan`` where no step reaches ``eps``), its point iterations (``inf``
        there) and the stability limit, each of the broadcast shape.
    """
    point = _point_only(cal, mode)
    shape = np.broadcast_shapes(*(np.shape(x) for x in (M, B, b)))
    limit = np.broadcast_to(stability_limit(_delay(mode, M), L, q_max), shape)
    top = np.log(limit)
    fractions = np.linspace(-SEARCH_DECADES * math.log(10.0), 0.0, SEARCH_POINTS)

    def step(log_lr):  # exp(log(limit)) may be one float above the limit
        return np.minimum(np.exp(log_lr), limit)

    def k_at(log_lr):
        return np.broadcast_to(forecast_iterations(point, mode, eps, lr=step(log_lr), M=M,
                                                   B=B, b=b)[0], shape)

    ks = np.stack([k_at(top + f) for f in fractions])  # (points, *shape)
    best = np.argmin(ks, axis=0)
    k_best = np.take_along_axis(ks, best[None], axis=0)[0]
    lo = top + fractions[np.maximum(best - 1, 0)]
    hi = top + fractions[np.minimum(best + 1, SEARCH_POINTS - 1)]
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    x1, x2 = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    k1, k2 = k_at(x1), k_at(x2)
    for _ in range(GOLDEN_ITERATIONS):
        left = k1 <= k2
        hi, lo = np.where(left, x2, hi), np.where(left, lo, x1)
        x1, x2 = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        k1, k2 = k_at(x1), k_at(x2)
    golden = np.where(k1 <= k2, x1, x2)
    k_golden = np.minimum(k1, k2)
    better = k_golden < k_best
    log_lr = np.where(better, golden, top + fractions[best])
    k = np.where(better, k_golden, k_best)
    lr = np.where(np.isfinite(k), step(log_lr), np.nan)
    return lr, k, np.asarray(limit, dtype=float)


@dataclass(frozen=True)
class StepForecast:
    r"""The step a calibration chooses for one configuration (:func:`forecast_steps`).

    Attributes
    ----------
    status : str
        :data:`FOUND` or :data:`UNREACHABLE`.
    lr : float
        The chosen step (``nan`` when unreachable), at most ``stability_limit``.
    stability_limit : float
        :math:`\alpha_{\mathrm{stab}}(D)` of the configuration (:func:`stability_limit`).
    forecast : Forecast or None
        :func:`theory.calibration.predicted_cycles` at ``lr`` (iterations, cycles and their
        interval); ``None`` when unreachable.
    """

    status: str
    lr: float
    stability_limit: float
    forecast: Forecast | None

    @property
    def found(self) -> bool:
        """A step reaches ``eps``."""
        return self.status == FOUND


def forecast_steps(cal: Calibration, mode: str, eps: float, M: int, B: int = 1, b: int = 1, *,
                   L: float = 1.0, q_max: float = 1.0, event_cycles: int | None = None
                   ) -> StepForecast:
    r"""The step of fewest predicted cycles to ``eps`` for ``(mode, M, B, b)``, within the
    stability limit (:func:`best_steps`), and the forecast there (:func:`theory.calibration.
    predicted_cycles`; ``event_cycles`` for a Tiki-Taka calibration, whose transfers also grow
    with the updates).

    ``L`` and ``q_max`` set the limit :math:`2\sin(\pi/(4D+2))/(L q_{\max})`.
    """
    check_range("eps", eps, 0, None, low_open=True)
    lr, _, limit = (float(x) for x in best_steps(cal, mode, eps, M, B, b, L=L, q_max=q_max))
    if not math.isfinite(lr):
        return StepForecast(status=UNREACHABLE, lr=math.nan, stability_limit=limit,
                            forecast=None)
    forecast = predicted_cycles(cal, mode, eps, M, B, b, lr=lr, event_cycles=event_cycles)
    return StepForecast(status=FOUND, lr=lr, stability_limit=limit, forecast=forecast)


@dataclass(frozen=True)
class StepGuarantee:
    r"""What the proved bounds say at a given step (:func:`guarantee_at_step`).

    Attributes
    ----------
    status : str
        :data:`INSIDE_CAP`, :data:`BELOW_FLOOR_AT_STEP` or :data:`OUTSIDE_CAP`.
    lr : float
        The step.
    cap : float
        The largest step cap of the mode's proved entries (:func:`theory.admissible.step_cap`).
    bound : str or None
        The entry giving the fewest iterations at ``lr`` (``None`` without a guarantee).
    theta : float or None
        Its tightest admissible :math:`\theta` at those iterations.
    iterations : float
        The fewest whole :math:`K` with the bound at ``lr`` at most ``eps`` (``inf``: none).
    cycles : float
        Their clock cycles (:func:`theory.schedules.cycles_after`; ``inf``: none).
    """

    status: str
    lr: float
    cap: float
    bound: str | None
    theta: float | None
    iterations: float
    cycles: float

    @property
    def inside(self) -> bool:
        """``lr`` is at or below a proved cap of the mode."""
        return self.status != OUTSIDE_CAP

    def to_dict(self) -> dict:
        """JSON-ready fields (``inf`` as ``None``)."""
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        for key in ("iterations", "cycles"):
            out[key] = out[key] if math.isfinite(out[key]) else None
        return {**out, "inside": self.inside}


def _fewest_iterations(name: str, lr: float, eps: float, constants: dict
                       ) -> tuple[float, float | None]:
    """The fewest whole ``K`` with the tightest bound ``name`` at ``lr`` at most ``eps`` (the
    bound falls with ``K``: doubling, then bisection), and its theta; ``(inf, None)`` when even
    :data:`_MAX_ITERATIONS` does not reach it."""
    def value(k: int) -> tuple[float | None, float]:
        return tightest_theta(name, lr, k, constants)

    if value(_MAX_ITERATIONS)[1] > eps:
        return math.inf, None
    low, high = 0, 1
    while value(high)[1] > eps:
        low, high = high, 2 * high
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if value(mid)[1] > eps else (low, mid)
    return float(high), value(high)[0]


def guarantee_at_step(mode: str, eps: float, lr: float, values: Mapping[str, float], *, M: int,
                      B: int = 1, b: int = 1, write: str = "batch-mean") -> StepGuarantee:
    r"""Whether ``lr`` is inside a proved step cap of ``mode`` and, if so, the guarantee there.

    Over the analog entries of ``(mode, write)`` (:func:`theory.theorems.bounds_for`): the largest
    step cap (:func:`theory.admissible.step_cap`), and among the entries whose cap admits ``lr``
    the fewest whole iterations at which the bound at :math:`\alpha = \mathrm{lr}`, its tightest
    admissible :math:`\theta` (:func:`theory.admissible.tightest_theta`), is at most ``eps``.

    Parameters
    ----------
    mode : {"sync", "async"}
    eps : float
        The target, > 0.
    lr : float
        The step, > 0.
    values : mapping
        The bounds' constants by symbol name (:func:`bounds.theory_values`).
    M, B, b : int
        The configuration (``D = M - 1`` async; ``B`` unused async).
    write : {"batch-mean", "per-sample"}
        The write semantics of the entries.
    """
    check_range("eps", eps, 0, None, low_open=True)
    check_range("lr", lr, 0, None, low_open=True)
    if mode not in ("sync", "async"):
        raise ParameterError(f"mode={mode!r} has no step cap; valid: sync, async")
    M = check_range("M", M, 1, None, integer=True)
    B = check_range("B", B, 1, None, integer=True) if mode == "sync" else 1
    constants = {**values, "M": M, "B": B, "b": b, "D": int(_delay(mode, M))}
    entries = [(entry.name, step_cap(entry.name, constants))
               for entry in bounds_for(mode, "analog", write)]
    cap = max(c for _, c in entries)
    found = []
    for name, entry_cap in entries:
        if lr <= entry_cap:
            k, theta = _fewest_iterations(name, lr, eps, constants)
            found.append((k, name, theta))
    if not found:
        return StepGuarantee(status=OUTSIDE_CAP, lr=float(lr), cap=cap, bound=None, theta=None,
                             iterations=math.inf, cycles=math.inf)
    k, name, theta = min(found, key=lambda item: item[0])
    if not math.isfinite(k):
        return StepGuarantee(status=BELOW_FLOOR_AT_STEP, lr=float(lr), cap=cap, bound=None,
                             theta=None, iterations=math.inf, cycles=math.inf)
    return StepGuarantee(status=INSIDE_CAP, lr=float(lr), cap=cap, bound=name, theta=theta,
                         iterations=k, cycles=float(cycles_after(mode, k, M, B)))
