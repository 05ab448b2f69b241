r"""Evaluate the registry's bounds for given hardware, problem and pipeline; compare them.

For one registry entry (:data:`theory.theorems.REGISTRY`) and a target :math:`\epsilon` on the
average squared gradient norm, :func:`evaluate` returns the iterations :math:`K(\epsilon)` (exact
root of the rate form, Proposition 5 of ``docs/theory.md``, rounded up), the samples
:math:`\mathrm{batch}\cdot K`, the pipeline clock cycles of the entry's schedule and the seconds of
the timing model:

.. math::

    \frac{a}{\sqrt{K}} + \frac{c}{K} + \mathrm{floor} = \epsilon, \qquad
    N = \mathrm{batch}\; K, \qquad
    C = \begin{cases} 2 M B K & \text{no pipeline} \\ 2 (B + M - 1) K & \text{sync} \\
        2 (K + M - 1) & \text{async} \end{cases}, \qquad
    t = C\; t_\mathrm{cycle}(M, b).

Every number comes from the compiled evaluators of :mod:`theory.complexity` (and the registry's
own ``expr`` for the bound's value); nothing is restated here. Parameter mapping: the device
constants :math:`q_{\min}, q_{\max}, G_\infty` over the visited region come from
:meth:`bounds.params.HardwareParams.device_constants`; the non-pipelined entries (digital, analog,
companion, ``literature_sgd``) get the synchronous pipeline's mini-batch :math:`n = B b`, run as
:math:`B` micro-batches of :math:`b` (fair comparison); the asynchronous entries use :math:`b` and
the delay :math:`D = M - 1`. The companion theorem is stated for symmetric soft bounds
(:math:`\tau`, :math:`W_{\max}`); for other devices its row says it does not apply.

A target at or below an entry's asymptotic floor, or one so close to it (or so small) that it needs
more iterations than an int64 holds, gives a row with the floor and the reason instead of numbers
(never a NaN).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from theory import complexity, theorems
from theory.compiled import compile_expr
from theory.devices import SoftBounds
from theory.errors import (
    IterationLimitError,
    ParameterError,
    UnreachableTargetError,
    check_range,
    show_value,
)
from theory.symbols import K, alpha
from theory.tables import text_table

from .params import HardwareParams, PipelineConfig, ProblemParams, check_type

__all__ = [
    "BASELINE", "BoundResult", "Comparison", "FLOAT_RANGE", "TOO_MANY", "check_arguments",
    "compare", "evaluate", "theory_values",
]

#: the entry speedups are measured against: analog SGD without pipeline, mini-batch B*b
BASELINE = "analog_sgd"
#: ``limiting`` of a row whose target needs more iterations than an int64 holds (just above the
#: floor, or a tiny eps without floor)
TOO_MANY = "too many iterations"
#: ``limiting`` of a row whose step, counts or bound value leave the float range (extreme
#: problem constants, e.g. ``L = 1e-308``)
FLOAT_RANGE = "beyond the float range"
#: the analog entries whose reachability decides whether a comparison is useful
ANALOG = ("analog_sgd", "analog_sgd_sp", "analog_sgd_ap")


@dataclass(frozen=True)
class BoundResult:
    r"""One registry entry evaluated at a target ``eps`` for given parameters.

    Attributes
    ----------
    algorithm, provenance, mode : str
        Registry name, provenance label and schedule (``none``, ``sync``, ``async``).
    eps : float
        Target for :math:`\frac1K\sum_k\mathbb{E}\lVert\nabla f(W_k)\rVert^2` (squared-gradient
        units).
    floor : float or None
        Asymptotic error floor of the bound (``None`` when the entry does not apply).
    batch : int
        Samples per iteration (:math:`Bb`, :math:`Bb` or :math:`b`).
    iterations, samples, cycles : int or None
        :math:`K = \lceil K(\epsilon)\rceil`, samples :math:`\mathrm{batch}\, K`, pipeline clock
        cycles of those :math:`K` updates.
    seconds : float or None
        ``cycles * cycle_time_s``.
    cycle_time_s : float
        Seconds per pipeline clock cycle (:class:`bounds.timing.TimingModel`).
    value : float or None
        The bound ``expr`` at ``K = iterations`` and ``alpha = step`` (``<= eps``).
    step : float or None
        Best admissible constant step at ``iterations``.
    limiting : str
        What limits the step: ``"step cap"`` or ``"noise balance"``; ``"floor"`` when ``eps`` is
        unreachable, ``"too many iterations"`` when it needs more than an int64 holds
        (:data:`TOO_MANY`), ``"not applicable"`` when the entry does not apply,
        ``"beyond the float range"`` (:data:`FLOAT_RANGE`) when its numbers overflow.
    rate_a, rate_c : float or None
        Coefficients of the rate form :math:`a/\sqrt{K} + c/K + \mathrm{floor}`.
    reason : str or None
        Why there are no numbers (unreachable target, too many iterations, entry not
        applicable); ``None`` otherwise.
    """

    algorithm: str
    provenance: str
    mode: str
    eps: float
    floor: float | None
    batch: int
    iterations: int | None
    samples: int | None
    cycles: int | None
    seconds: float | None
    cycle_time_s: float
    value: float | None
    step: float | None
    limiting: str
    rate_a: float | None
    rate_c: float | None
    reason: str | None = None

    @property
    def reachable(self) -> bool:
        """Whether the row has numbers (the target is above the floor and the entry applies)."""
        return self.reason is None

    def to_row(self) -> dict:
        """The fields as a flat dict of JSON-ready values."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@cache
def _bound_value(name: str):
    """The registry bound ``expr`` as a function of ``(K, alpha, values)``, compiled once."""
    return compile_expr(theorems.get_bound(name).expr, (K, alpha))


@cache
def _floor(name: str):
    """The registry ``floor`` as a function of ``values``, compiled once."""
    return compile_expr(theorems.get_bound(name).floor)


@cache
def _batch(name: str):
    """The registry ``batch`` (samples per iteration) as a function of ``values``."""
    return compile_expr(theorems.get_bound(name).batch)


def theory_values(hardware: HardwareParams, problem: ProblemParams) -> dict[str, float]:
    """The constants the theory's bounds need, by symbol name (problem and A3 device constants).

    ``p2_bar`` and ``G2_bar`` (Theorem 2M) are those of every stage on this one device:
    ``q_max**2`` and ``G_inf**2``.
    """
    dc = hardware.device_constants()
    return {
        "L": problem.L, "L_s": problem.L_s, "Delta": problem.Delta, "sigma2": problem.sigma2,
        "theta": problem.theta, "q_min": float(dc.q_min), "q_max": float(dc.q_max),
        "G_inf": float(dc.G_inf), "p2_bar": float(dc.q_max) ** 2, "G2_bar": float(dc.G_inf) ** 2,
        "beta": problem.beta,
    }


def _values(hardware: HardwareParams, problem: ProblemParams, pipeline: PipelineConfig) -> dict:
    """Every symbol value of the theory for these parameters (names of ``theory.symbols``)."""
    values = dict(
        theory_values(hardware, problem),
        n=pipeline.mini_batch, b=pipeline.micro_batch_size, B=pipeline.micro_batches,
        M=pipeline.stages, D=pipeline.max_delay,
        R=1, P=1, nu=0.0,  # one pipeline: the local-SGD row with one replica, no averaging
        T=1, rho=1.0,  # Tiki-Taka (Corollary TT0): a transfer after every update, beta = alpha
    )
    response = hardware.device.response
    if isinstance(response, SoftBounds):
        values.update(tau=response.tau, W_max=hardware.weight_bound)
    return values


def _not_applicable(bound: theorems.Bound, hardware: HardwareParams,
                    g2_iter: float | None = None) -> str | None:
    if bound.floor_kind != "worst-case" and g2_iter is None:
        return (
            f"not applicable: {bound.name} (Theorem LF) needs G2_iter, the iterate average of "
            "the squared asymmetry measured along a run (aimc-pipeline verify measures it), or "
            "Corollary LF's value under C_r (bounds --g-star X --radius R)"
        )
    if {"tau", "W_max"} & set(bound.parameters) and not isinstance(
        hardware.device.response, SoftBounds
    ):
        return (
            f"not applicable: {bound.name} is stated for symmetric soft bounds (tau, W_max); "
            f"device {hardware.device.name!r} is {hardware.device.family}"
        )
    return None


def evaluate(
    algorithm: str,
    eps: float,
    hardware: HardwareParams,
    problem: ProblemParams | None = None,
    pipeline: PipelineConfig | None = None,
    *,
    g2_iter: float | None = None,
) -> BoundResult:
    r"""Evaluate registry entry ``algorithm`` at target ``eps`` for the given parameters.

    Parameters
    ----------
    algorithm : str
        A key of :data:`theory.theorems.REGISTRY`.
    eps : float
        Target for :math:`\frac1K\sum_k\mathbb{E}\lVert\nabla f(W_k)\rVert^2`, > 0
        (squared-gradient units; with the default :class:`ProblemParams`, units of
        :math:`\sigma^2`).
    hardware : HardwareParams
    problem : ProblemParams, optional
        Default ``ProblemParams()``.
    pipeline : PipelineConfig, optional
        Default ``PipelineConfig()``.
    g2_iter : float, optional
        Theorem LF's ``G2_iter`` for a local-floor row (``*_local``), e.g. Corollary LF's
        :func:`theory.local_floor.ball_g2_iter`; without it such a row is not applicable.

    Returns
    -------
    BoundResult
        With numbers, or with the floor and a ``reason`` when ``eps <= floor``, when reaching
        ``eps`` takes more iterations than an int64 holds, or when the entry does not apply to
        the device.

    Raises
    ------
    ParameterError
        Unknown algorithm (the message lists the registry), ``eps`` not positive.
    """
    hardware, problem, pipeline = check_arguments(hardware, problem, pipeline)
    if not isinstance(algorithm, str):
        raise ParameterError(f"algorithm={show_value(algorithm)} is not a string; valid: "
                             f"{', '.join(theorems.REGISTRY)}")
    bound = theorems.get_bound(algorithm)
    eps = float(check_range("eps", eps, 0, low_open=True))
    values = _values(hardware, problem, pipeline)
    if g2_iter is not None:
        values["G2_iter"] = float(check_range("g2_iter", g2_iter, 0, None))
    cycle_time = float(hardware.timing.cycle_time_s(pipeline.stages, pipeline.micro_batch_size))
    batch = int(_batch(algorithm)(values))
    empty = dict(
        algorithm=algorithm, provenance=bound.provenance, mode=bound.mode, eps=eps, batch=batch,
        iterations=None, samples=None, cycles=None, seconds=None, cycle_time_s=cycle_time,
        value=None, step=None, rate_a=None, rate_c=None,
    )
    reason = _not_applicable(bound, hardware, g2_iter)
    if reason is not None:
        return BoundResult(**empty, floor=None, limiting="not applicable", reason=reason)
    try:
        res = complexity.evaluate_complexity(algorithm, eps, **values)
    except UnreachableTargetError as error:
        return BoundResult(**empty, floor=error.floor, limiting="floor", reason=str(error))
    except complexity.FloatRangeError as error:  # constants beyond the float range: a row
        return BoundResult(**empty, floor=None, limiting=FLOAT_RANGE, reason=str(error))
    except IterationLimitError as error:  # only the iteration count's range makes a row
        floor = float(_floor(algorithm)(values))
        return BoundResult(**empty, floor=floor, limiting=TOO_MANY, reason=str(error))
    iterations = int(res.iterations_int)
    step = float(res.step)
    value = _value_at(algorithm, iterations, step, values)
    numbers = (float(res.cycles), float(res.samples), step, value)
    if not all(np.isfinite(numbers)):
        floor = float(res.floor)
        return BoundResult(**empty, floor=floor, limiting=FLOAT_RANGE, reason=(
            f"the step, samples, cycles or bound value of {algorithm} at K={iterations} leave "
            f"the float range for these constants ({_constants(values)}); rescale the problem"
        ))
    cycles = int(round(float(res.cycles)))
    return BoundResult(
        algorithm=algorithm, provenance=bound.provenance, mode=bound.mode, eps=eps,
        floor=float(res.floor), batch=batch, iterations=iterations,
        samples=int(round(float(res.samples))), cycles=cycles,
        seconds=float(hardware.timing.seconds(cycles, pipeline.stages, pipeline.micro_batch_size)),
        cycle_time_s=cycle_time, value=value,
        step=step, limiting=str(res.step_limited_by), rate_a=float(res.rate_a),
        rate_c=float(res.rate_c),
    )


def _value_at(algorithm: str, iterations: int, step: float, values: dict) -> float:
    """The bound at ``(K, alpha)``; ``inf``/``nan`` (not an exception) beyond the float range.

    Python floats raise on overflow in ``**`` and on division by zero; those points are
    evaluated again in numpy float64 (same IEEE arithmetic), whose inf/nan the caller checks.
    """
    try:
        return float(_bound_value(algorithm)(iterations, step, values))
    except (ZeroDivisionError, OverflowError):
        wide = {k: np.float64(v) for k, v in values.items()}
        with np.errstate(all="ignore"):
            return float(_bound_value(algorithm)(np.float64(iterations), np.float64(step), wide))


def _constants(values: dict) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in values.items())


def check_arguments(hardware, problem=None, pipeline=None
                    ) -> tuple[HardwareParams, ProblemParams, PipelineConfig]:
    """``(hardware, problem, pipeline)`` with the defaults filled in, types checked.

    Raises
    ------
    ParameterError
        An argument of another type (e.g. a preset name where a HardwareParams is expected);
        the message names the argument and the expected type.
    """
    problem = ProblemParams() if problem is None else problem
    pipeline = PipelineConfig() if pipeline is None else pipeline
    check_type("hardware", hardware, HardwareParams, "e.g. bounds.from_preset(NAME)")
    check_type("problem", problem, ProblemParams, "or None for the defaults")
    check_type("pipeline", pipeline, PipelineConfig, "or None for the defaults")
    return hardware, problem, pipeline


@dataclass(frozen=True)
class Comparison:
    r"""Every registry entry at one target, side by side, with speedups over the baseline.

    Attributes
    ----------
    eps : float
        The target.
    hardware, problem, pipeline : HardwareParams, ProblemParams, PipelineConfig
        The parameters evaluated.
    results : tuple of BoundResult
        In registry order: digital, companion, analog (no pipeline, mini-batch :math:`Bb`), SP,
        AP, then the literature rows.
    speedup_cycles, speedup_seconds : tuple of (float or None)
        Per result, :math:`C_\mathrm{baseline}/C` and :math:`t_\mathrm{baseline}/t` against
        :data:`BASELINE` (analog SGD without pipeline); ``None`` where either has no numbers.
        With one timing model at the same :math:`(M, b)` for every row the two agree; they are
        reported separately because they differ once cycle times differ (e.g. in the planner).
    """

    eps: float
    hardware: HardwareParams
    problem: ProblemParams
    pipeline: PipelineConfig
    results: tuple[BoundResult, ...]
    speedup_cycles: tuple[float | None, ...]
    speedup_seconds: tuple[float | None, ...]

    def result(self, algorithm: str) -> BoundResult:
        """The row of ``algorithm``."""
        for row in self.results:
            if row.algorithm == algorithm:
                return row
        theorems.get_bound(algorithm)  # raises the ParameterError listing names
        raise KeyError(algorithm)  # pragma: no cover - every registry entry has a row

    @property
    def speedups(self) -> dict[str, tuple[float | None, float | None]]:
        """``{algorithm: (speedup in cycles, speedup in seconds)}`` over :data:`BASELINE`."""
        return {
            r.algorithm: (c, s)
            for r, c, s in zip(self.results, self.speedup_cycles, self.speedup_seconds, strict=True)
        }

    @property
    def analog_results(self) -> tuple[BoundResult, ...]:
        """The rows of analog SGD, SP and AP (those the comparison is about)."""
        return tuple(r for r in self.results if r.algorithm in ANALOG)

    def require_analog(self) -> None:
        """Raise unless some analog entry (SGD, SP, AP) reaches :attr:`eps`.

        Raises
        ------
        UnreachableTargetError
            Every analog entry has ``eps`` at or below its floor (the lowest floor is named).
        ParameterError
            No analog entry has numbers for another reason (too many iterations, not
            applicable, beyond the float range): the first such reason.
        """
        analog = self.analog_results
        if any(r.reachable for r in analog):
            return
        if all(r.limiting == "floor" for r in analog):
            lowest = min(analog, key=lambda r: r.floor)
            raise UnreachableTargetError(lowest.algorithm, self.eps, lowest.floor)
        raise ParameterError(next(r.reason for r in analog if r.limiting != "floor"))

    def to_rows(self) -> list[dict]:
        """One flat dict per result (the JSON/CSV rows), with the two speedups."""
        return [
            {**r.to_row(), "speedup_cycles": c, "speedup_seconds": s}
            for r, c, s in zip(self.results, self.speedup_cycles, self.speedup_seconds, strict=True)
        ]

    def table(self) -> str:
        """A human-readable table with a header naming device, region, pipeline and target."""
        hw, pipe = self.hardware, self.pipeline
        c = hw.device_constants()
        cycle_time = hw.timing.cycle_time_s(pipe.stages, pipe.micro_batch_size)
        head = [
            f"device {hw.device.name} ({hw.device.family}), W_max = {hw.weight_bound:g} around "
            f"{hw.centre:g}: q_min = {c.q_min:.4g}, q_max = {c.q_max:.4g}, G_inf = {c.G_inf:.4g}",
            f"problem L = {self.problem.L:g}, L_s = {self.problem.L_s:g}, Delta = "
            f"{self.problem.Delta:g}, sigma2 = {self.problem.sigma2:g}, theta = "
            f"{self.problem.theta:g}"
            + (f", beta = {self.problem.beta:g}" if self.problem.beta else ""),
            f"pipeline M = {pipe.stages}, B = {pipe.micro_batches}, b = {pipe.micro_batch_size} "
            f"(D = {pipe.max_delay}); cycle time {cycle_time * 1e9:.4g} ns "
            f"({hw.layers} layers); eps = {self.eps:g}",
            "",
        ]
        columns = ("algorithm", "provenance", "floor", "iterations", "samples", "cycles",
                   "seconds", "speedup", "step limited by")
        body = []
        for r, speed in zip(self.results, self.speedup_cycles, strict=True):
            floor = "-" if r.floor is None else _fmt(r.floor)
            if r.reachable:
                body.append((r.algorithm, r.provenance, floor, _fmt(r.iterations),
                             _fmt(r.samples), _fmt(r.cycles), _fmt(r.seconds),
                             "-" if speed is None else f"{speed:.3g}x", r.limiting))
            else:
                short = "unreachable (eps <= floor)" if r.limiting == "floor" else r.limiting
                body.append((r.algorithm, r.provenance, floor, short, "", "", "", "", ""))
        lines = text_table(columns, body).split("\n")
        notes = [f"note: {r.algorithm}: {r.reason}" for r in self.results if not r.reachable]
        speed_note = f"speedup: cycles of {BASELINE} (no pipeline, mini-batch B*b) / cycles"
        return "\n".join([*head, *lines, "", speed_note, *notes])


def _fmt(x) -> str:
    if isinstance(x, int | np.integer):
        return f"{x:d}" if abs(x) < 10**7 else f"{x:.4g}"
    return f"{x:.4g}"


def compare(
    eps: float,
    hardware: HardwareParams,
    problem: ProblemParams | None = None,
    pipeline: PipelineConfig | None = None,
    *,
    g2_iter: float | None = None,
) -> Comparison:
    """Evaluate every registry entry at ``eps`` (see :func:`evaluate`) and the speedups.

    The local-floor rows of Theorem LF (``Bound.floor_kind = "iterate-average"``) are left out
    unless ``g2_iter`` is given (their ``G2_iter`` is measured along a run, or Corollary LF's
    value under the condition C_r, :func:`theory.local_floor.ball_g2_iter`).

    Parameters
    ----------
    eps : float
        Target, > 0.
    hardware : HardwareParams
    problem : ProblemParams, optional
    pipeline : PipelineConfig, optional

    Returns
    -------
    Comparison
    """
    hardware, problem, pipeline = check_arguments(hardware, problem, pipeline)
    eps = check_range("eps", eps, 0, low_open=True)
    results = tuple(
        evaluate(name, eps, hardware, problem, pipeline, g2_iter=g2_iter)
        for name, bound in theorems.REGISTRY.items()
        if bound.floor_kind == "worst-case" or g2_iter is not None
    )
    base = next(r for r in results if r.algorithm == BASELINE)

    def ratio(ref, x):
        return None if ref is None or x is None else ref / x

    return Comparison(
        eps=float(eps), hardware=hardware, problem=problem, pipeline=pipeline, results=results,
        speedup_cycles=tuple(ratio(base.cycles, r.cycles) for r in results),
        speedup_seconds=tuple(ratio(base.seconds, r.seconds) for r in results),
    )
