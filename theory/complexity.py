r"""Iteration, sample and clock-cycle complexities of the registry's bounds (Proposition 5).

Every bound of :mod:`theory.theorems` has, at its best admissible step, the rate form
:math:`a/\sqrt{K} + c/K + \mathrm{floor}`. Setting it to :math:`\epsilon` and writing
:math:`x = 1/\sqrt{K}` gives :math:`c x^2 + a x = \epsilon - \mathrm{floor}`, whose positive
root gives

.. math::

    K(\epsilon) = \left(\frac{a + \sqrt{a^2 + 4c(\epsilon - \mathrm{floor})}}
                              {2(\epsilon - \mathrm{floor})}\right)^2
                = \left(\frac{2c}{\sqrt{a^2 + 4c(\epsilon - \mathrm{floor})} - a}\right)^2 ,

the first form free of cancellation (it also covers ``c = 0``:
:math:`a^2/(\epsilon-\mathrm{floor})^2`). A bound that is only established for
``K >= min_iterations`` uses :math:`\max(K(\epsilon), K_{\min})`.

Conventions (the same in ``docs/theory.md``):

- samples :math:`= \mathrm{batch}\times K`; clock cycles come from
  :func:`theory.schedules.cycles_for_iterations`: ``sync`` :math:`2(B+M-1)K`, ``async``
  :math:`2(K+M-1)`, and ``none`` :math:`2MBK` **with** :math:`B = n/b`: a non-pipelined step of
  ``n`` samples runs ``n/b`` micro-batches of ``b`` samples, ``2M`` cycles each, i.e.
  :math:`2MnK/b`. So a non-pipelined entry evaluated with ``n = B b`` has exactly the mini-batch
  of the synchronous pipeline, which makes the comparison fair;
- for ``async`` entries the delay ``D`` defaults to the schedule's maximal delay ``M - 1``;
- numeric results count whole iterations: ``iterations_int = max(1, ceil(K(eps)))``, and
  ``samples``, ``cycles`` and ``step`` are those of that integer run (the bound is decreasing in
  ``K``); an entry written in transfer windows of ``T`` updates (Corollary TT0) rounds that up
  to a multiple of ``T`` (its proof holds after whole windows);
- where the compiled closed form over- or underflows (``eps - floor`` beyond about 1e154 squares
  out of the float range), ``K`` comes from the same root scaled as
  :math:`\sqrt{K} = p + \sqrt{p^2 + q}`, :math:`p = a/(2g)`, :math:`q = c/g`; on every other
  point the closed form's numbers are unchanged.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import cache

import numpy as np
import sympy as sp

from . import local_sgd
from .compiled import compile_expr
from .errors import IterationLimitError, ParameterError, UnreachableTargetError
from .mixed import Block, mixed_constants
from .ranges import PARAMETER_RANGES, check_relations, parameter_array
from .schedules import MODES, cycles_for_iterations, max_delay, transfer_cycles, write_delay
from .symbols import B, K, b, eps
from .theorems import Bound, bounds_for, get_bound, registry
from .vocabulary import MIXED_ENTRIES

__all__ = [
    "BELOW_FLOOR",
    "ComplexityResult",
    "FloatRangeError",
    "PARAMETER_RANGES",
    "REACHABLE",
    "SETTING_PREFIX",
    "TOO_MANY",
    "conditions_met",
    "cycles_expr",
    "evaluate_complexity",
    "evaluate_guarantee",
    "evaluate_mixed",
    "fewest_iterations",
    "guarantee_entries",
    "iterations_expr",
    "latex_table",
    "samples_expr",
    "setting_conditions",
    "solve_rate",
]

FloatOrArray = float | np.ndarray
IntOrArray = int | np.ndarray
StrOrArray = str | np.ndarray

#: per-point status of :func:`evaluate_complexity` (``on_unreachable="status"``)
REACHABLE = "reachable"
#: ``eps`` at or below the bound's asymptotic floor
BELOW_FLOOR = "below floor"
#: more iterations than an int64 holds (``eps`` too close to the floor, or to 0)
TOO_MANY = "too many iterations"

#: largest iteration count a result can hold (``iterations_int`` is int64)
_MAX_ITERATIONS = float(2**63 - 1024)  # the largest float below 2**63


def solve_rate(a: sp.Expr, c: sp.Expr, gap: sp.Expr) -> sp.Expr:
    r"""The ``K`` solving :math:`a/\sqrt{K} + c/K = \mathrm{gap}` (Proposition 5, stable form).

    .. math:: K = \left(\frac{a + \sqrt{a^2 + 4 c\,\mathrm{gap}}}{2\,\mathrm{gap}}\right)^2
    """
    return ((a + sp.sqrt(a**2 + 4 * c * gap)) / (2 * gap)) ** 2


def iterations_expr(bound: Bound) -> sp.Expr:
    r"""Iterations :math:`K(\epsilon)` to reach :math:`\epsilon` (valid for ``eps > floor``)."""
    k_eps = solve_rate(bound.rate_a, bound.rate_c, eps - bound.floor)
    if bound.min_iterations != 0:
        return sp.Max(k_eps, bound.min_iterations)
    return k_eps


def _cycles_per_run(bound: Bound) -> sp.Expr:
    """Cycles for ``K`` updates in ``bound.mode``; ``none`` runs ``n/b`` micro-batches per step.

    The ``R`` replicas of the local-SGD row (batch ``R n``) run in parallel: one replica's
    micro-batches set the cycles (``R = 1`` in the batch)."""
    cycles = cycles_for_iterations(bound.mode)
    if bound.mode == "none":
        cycles = cycles.subs(B, bound.batch.subs(local_sgd.R, 1) / b)
    return cycles


def samples_expr(bound: Bound) -> sp.Expr:
    r"""Sample complexity :math:`N(\epsilon) = \mathrm{batch}\cdot K(\epsilon)`."""
    return bound.batch * iterations_expr(bound)


def cycles_expr(bound: Bound) -> sp.Expr:
    r"""Clock-cycle complexity: the schedule's cycles for :math:`K(\epsilon)` updates.

    ``none``: :math:`2M(n/b)K`; ``sync``: :math:`2(B+M-1)K`; ``async``: :math:`2(K+M-1)`.
    """
    return _cycles_per_run(bound).subs(K, iterations_expr(bound))


@dataclass(frozen=True)
class ComplexityResult:
    """Complexities of one bound at a target (arrays broadcast over the inputs, or scalars).

    Attributes
    ----------
    algorithm : str or ndarray of str
        Registry name (per point for :func:`evaluate_guarantee`).
    eps, floor : float or ndarray
        Target and asymptotic floor (``eps > floor``), squared-gradient units.
    rate_a, rate_c : float or ndarray
        Coefficients of the rate form ``a/sqrt(K) + c/K + floor``.
    iterations : float or ndarray
        Real :math:`K(\\epsilon)`.
    iterations_int : int or ndarray
        ``ceil(iterations)``, the run that ``samples``, ``cycles`` and ``step`` describe.
    samples : float or ndarray
        ``batch * iterations_int``.
    cycles : float or ndarray
        Clock cycles of ``iterations_int`` updates in the bound's schedule.
    step : float or ndarray
        Best admissible constant step at ``iterations_int``.
    step_limited_by : str or ndarray of str
        ``"step cap"`` when :math:`1/\\mathrm{inv\\_step\\_cap}` is the smaller, else
        ``"noise balance"``.
    status : str or ndarray of str
        :data:`REACHABLE`, :data:`BELOW_FLOOR` or :data:`TOO_MANY` per point (always
        :data:`REACHABLE` unless ``on_unreachable="status"``).
    """

    algorithm: StrOrArray
    eps: FloatOrArray
    floor: FloatOrArray
    rate_a: FloatOrArray
    rate_c: FloatOrArray
    iterations: FloatOrArray
    iterations_int: IntOrArray
    samples: FloatOrArray
    cycles: FloatOrArray
    step: FloatOrArray
    step_limited_by: StrOrArray
    status: StrOrArray


class _Compiled:
    """The numpy evaluators of one bound (built once per name, see :func:`_compiled`)."""

    def __init__(self, bound: Bound):
        per_run = _cycles_per_run(bound)
        self.floor, self.rate_a, self.rate_c, self.iterations = (
            compile_expr(e, eps)
            for e in (bound.floor, bound.rate_a, bound.rate_c, iterations_expr(bound))
        )
        self.batch, self.cycles, self.step_cap, self.noise_step = (
            compile_expr(e, K)
            for e in (bound.batch, per_run, 1 / bound.inv_step_cap, bound.noise_step)
        )
        everything = (self.floor, self.rate_a, self.rate_c, self.iterations, self.batch,
                      self.cycles, self.step_cap, self.noise_step)
        self.min_iterations = compile_expr(sp.sympify(bound.min_iterations), eps)
        self.parameters = tuple(sorted(set().union(*(f.parameters for f in everything))))


@cache
def _compiled(name: str) -> _Compiled:
    return _Compiled(get_bound(name))


def _scaled_iterations(compiled: _Compiled, eps_arr, arrays, floor, shape) -> np.ndarray:
    r""":math:`K(\epsilon)` from the rate form, scaled so no intermediate leaves the float range.

    With :math:`g = \epsilon - \mathrm{floor}`, :math:`p = a/(2g)` and :math:`q = c/g`,
    :math:`\sqrt{K} = p + \sqrt{p^2 + q}` (``hypot``: no overflow of :math:`p^2`); the same root
    as :func:`solve_rate`. Used only where the compiled closed form over- or underflowed; an
    overflow here means :math:`K` itself is beyond the float range. ``min_iterations`` applies.
    """
    gap = np.broadcast_to(eps_arr, shape) - floor
    a = np.broadcast_to(compiled.rate_a(eps_arr, arrays), shape)
    c = np.broadcast_to(compiled.rate_c(eps_arr, arrays), shape)
    p = a / (2 * gap)
    root = p + np.hypot(p, np.sqrt(c / gap))
    k_eps = root * root
    return np.maximum(k_eps, np.broadcast_to(compiled.min_iterations(eps_arr, arrays), shape))


class FloatRangeError(ParameterError):
    """Constants so extreme that a bound's floor or rate coefficients leave the float range."""


def _check_finite(name: str, what: str, value: np.ndarray, eps_b, arrays) -> None:
    """Raise FloatRangeError if ``what`` (the floor, a rate coefficient) is inf or nan."""
    bad = ~np.isfinite(value)
    if not bad.any():
        return
    i = np.flatnonzero(bad)[0]
    shown = {p: np.broadcast_to(v, value.shape).flat[i].item() for p, v in arrays.items()}
    largest = max(shown, key=lambda p: abs(math.log10(abs(shown[p]) or 1.0)))
    others = ", ".join(f"{p}={v:g}" for p, v in shown.items() if p != largest)
    raise FloatRangeError(
        f"{largest}={shown[largest]:g} puts the {what} of {name} beyond the float range "
        f"(with {others}, eps={eps_b.flat[i].item():g}); rescale the problem constants"
    )


def _scalar(x):
    arr = np.asarray(x)
    return arr[()] if arr.ndim == 0 else arr


def evaluate_complexity(name: str, eps, *, on_unreachable: str = "raise", **values
                        ) -> ComplexityResult:
    r"""Iterations, samples, cycles and step to reach ``eps`` for bound ``name`` (vectorised).

    Parameters
    ----------
    name : str
        A key of :data:`theory.theorems.REGISTRY`.
    eps : float or array
        Target for :math:`\frac1K\sum_k\mathbb{E}\lVert\nabla f(W_k)\rVert^2` (squared-gradient
        units).
    on_unreachable : {"raise", "status"}
        ``"raise"`` (default): every point must be reachable, else the call raises.
        ``"status"``: never raise for a point; :attr:`ComplexityResult.status` says per point
        whether it is :data:`REACHABLE`, :data:`BELOW_FLOOR` (``eps <= floor``) or
        :data:`TOO_MANY` (more iterations than an int64 holds). At such points ``iterations`` is
        ``inf``, ``iterations_int`` 0 and ``samples``, ``cycles``, ``step`` are ``nan``.
    **values : float or array
        The constants, by symbol name (``L``, ``Delta``, ``sigma2``, ``n``, ``b``, ``B``, ``M``,
        ``D``, ``q_min``, ``q_max``, ``G_inf``, ``theta``, ``L_s``, ``tau``, ``W_max``); arrays
        broadcast. Names of :data:`PARAMETER_RANGES` that the bound does not use are ignored; ``D``
        defaults to ``M - 1`` for ``async`` bounds.

    Returns
    -------
    ComplexityResult

    Raises
    ------
    ParameterError
        Unknown bound, unknown or missing parameter (the message lists the required names), a
        value out of range, or (with ``on_unreachable="raise"``) an ``eps`` so close to the floor
        (or to 0) that ``K(eps)`` exceeds the int64 range of ``iterations_int`` (about 9.2e18),
        or (:class:`FloatRangeError`) constants that put the floor or a rate coefficient
        beyond the float range (the message names the most extreme one).
    UnreachableTargetError
        With ``on_unreachable="raise"``, if ``eps <= floor`` anywhere (the message gives that
        floor).
    """
    if on_unreachable not in ("raise", "status"):
        raise ParameterError(
            f"on_unreachable={on_unreachable!r} is unknown; valid: 'raise', 'status'"
        )
    compiled = _compiled(name)
    arrays = _parameter_arrays(name, get_bound(name).mode, compiled.parameters, values)
    eps_arr = parameter_array("eps", eps)
    shape = np.broadcast_shapes(eps_arr.shape, *(a.shape for a in arrays.values()))
    point = _Point(name, compiled, eps_arr, arrays, shape)
    floor, iterations, below, too_many = point.iterations()
    if on_unreachable == "raise":
        point.refuse_unreachable(floor, below, too_many)
    return point.result(floor, iterations, below, too_many)


def _parameter_arrays(name: str, mode: str, required: tuple[str, ...], values: dict
                      ) -> dict[str, np.ndarray]:
    """The checked arrays of the ``required`` parameters of bound ``name`` from ``values``.

    ``D`` defaults to the schedule's maximal delay for ``async`` bounds (in transfer windows of
    ``T`` updates for Corollary TT0-AP); unknown and missing names are refused, listing the
    required ones, and so are values that break a relation between parameters.
    """
    unknown = sorted(set(values) - set(PARAMETER_RANGES))
    if unknown:
        raise ParameterError(
            f"unknown parameter(s) {', '.join(unknown)} for {name}; required: {', '.join(required)}"
        )
    values = dict(values)
    if mode == "async" and "D" in required and "D" not in values and "M" in values:
        stages = parameter_array("M", values["M"])
        # Corollary TT0-AP counts the delay in transfer windows of T updates
        values["D"] = (write_delay(stages, parameter_array("T", values["T"])) if "T" in values
                       and "T" in required else max_delay(stages))
    missing = [p for p in required if p not in values]
    if missing:
        raise ParameterError(
            f"missing parameter(s) {', '.join(missing)} for {name}; required: {', '.join(required)}"
        )
    arrays = {p: parameter_array(p, values[p]) for p in required}
    check_relations(arrays)
    return arrays


@dataclass(frozen=True)
class _Point:
    """One call of :func:`evaluate_complexity`: a bound's evaluators at the checked inputs."""

    name: str
    compiled: _Compiled
    eps_arr: np.ndarray
    arrays: dict[str, np.ndarray]
    shape: tuple[int, ...]

    def full(self, value) -> np.ndarray:
        return np.broadcast_to(value, self.shape)

    def iterations(self):
        r"""``(floor, iterations, below, too_many)``: the real :math:`K(\epsilon)` per point
        (``inf`` below the floor) and where it is unreachable or beyond the int64 range."""
        name, compiled, eps_arr, arrays = self.name, self.compiled, self.eps_arr, self.arrays
        eps_b = self.full(eps_arr)
        with np.errstate(all="ignore"):  # unreachable points give nan/inf; masked below
            floor = self.full(compiled.floor(eps_arr, arrays))
            _check_finite(name, "floor", floor, eps_b, arrays)
            below = eps_b <= floor
            iterations = self.full(compiled.iterations(eps_arr, arrays)).astype(float)
            # where the closed form's intermediates over- or underflow (a huge eps - floor
            # squares beyond the float range), the scaled root of the quadratic gives the same K
            lost = ~below & ~((iterations > 0) & np.isfinite(iterations))
            if lost.any():
                for what, f in (("rate coefficient a", compiled.rate_a),
                                ("rate coefficient c", compiled.rate_c)):
                    _check_finite(name, what, np.where(below, 0.0, self.full(f(eps_arr, arrays))),
                                  eps_b, arrays)
                iterations = np.where(
                    lost, _scaled_iterations(compiled, eps_arr, arrays, floor, self.shape),
                    iterations)
            iterations = np.where(below, np.inf, iterations)
            # too many: also inf where eps - floor underflows
            too_many = ~below & ~(iterations < _MAX_ITERATIONS)
        return floor, iterations, below, too_many

    def refuse_unreachable(self, floor, below, too_many) -> None:
        """Raise for the first point below the floor, else the first with too many iterations."""
        eps_b = self.full(self.eps_arr)
        if below.any():
            i = np.flatnonzero(below)[0]
            raise UnreachableTargetError(self.name, eps_b.flat[i].item(), floor.flat[i].item())
        if too_many.any():
            i = np.flatnonzero(too_many)[0]
            raise IterationLimitError(
                f"eps={eps_b.flat[i].item():.6g} needs more than the {_MAX_ITERATIONS:.3g} "
                f"iterations an int64 iteration count holds for {self.name} (floor "
                f"{floor.flat[i].item():.6g}); choose a larger eps"
            )

    def whole_iterations(self, ok, iterations) -> np.ndarray:
        """The run's whole iterations: ``ceil(K)``, at least 1, a multiple of ``T`` for the
        entries written in transfer windows (Corollary TT0); 1 where ``ok`` is false."""
        # at least one whole iteration: a K(eps) below 1 (or one that underflowed to 0) needs one
        k_int = np.where(ok, np.maximum(np.ceil(np.where(ok, iterations, 1.0)), 1.0), 1.0)
        if "T" in self.compiled.parameters:  # Corollary TT0 counts whole transfer windows
            period = self.full(self.arrays["T"]).astype(float)
            k_int = np.ceil(k_int / period) * period
        return k_int

    def result(self, floor, iterations, below, too_many) -> ComplexityResult:
        """The :class:`ComplexityResult`: numbers of the whole run where reachable, a status
        per point."""
        compiled, arrays, eps_arr, full = self.compiled, self.arrays, self.eps_arr, self.full
        ok = ~(below | too_many)
        iterations = np.where(ok, iterations, np.inf)
        k_int = self.whole_iterations(ok, iterations)
        with np.errstate(all="ignore"):
            cap = full(compiled.step_cap(k_int, arrays))
            noise = full(compiled.noise_step(k_int, arrays))
            samples = full(compiled.batch(k_int, arrays)) * k_int
            cycles = full(compiled.cycles(k_int, arrays)).astype(float)
        status = np.where(below, BELOW_FLOOR, np.where(too_many, TOO_MANY, REACHABLE))
        return ComplexityResult(
            algorithm=self.name,
            eps=_scalar(full(eps_arr)),
            floor=_scalar(floor),
            rate_a=_scalar(full(compiled.rate_a(eps_arr, arrays))),
            rate_c=_scalar(full(compiled.rate_c(eps_arr, arrays))),
            iterations=_scalar(iterations),
            iterations_int=_scalar(np.where(ok, k_int, 0).astype(np.int64)),
            samples=_scalar(np.where(ok, samples, np.nan)),
            cycles=_scalar(np.where(ok, cycles, np.nan)),
            step=_scalar(np.where(ok, np.minimum(cap, noise), np.nan)),
            step_limited_by=_scalar(np.where(cap <= noise, "step cap", "noise balance")),
            status=_scalar(status),
        )


#: the prefix of a machine-checked condition of a registry entry: ``"setting KEY=VALUE"`` (e.g.
#: ``"setting transfer_slice=all"``) names a run setting the bound needs (:func:`conditions_met`)
SETTING_PREFIX = "setting "


def setting_conditions(bound: Bound) -> dict[str, str]:
    """The run settings ``bound`` is proved for: its ``"setting KEY=VALUE"`` conditions.

    Returns ``{KEY: VALUE}`` (strings, stripped); the other conditions (assumptions A1-A4, the
    step cap, ...) are the problem's and not read here.
    """
    out = {}
    for condition in bound.conditions:
        if condition.startswith(SETTING_PREFIX):
            key, sep, value = condition[len(SETTING_PREFIX):].partition("=")
            if not sep or not key.strip():
                raise ParameterError(f"condition={condition!r} of {bound.name} is not "
                                     f"'{SETTING_PREFIX}KEY=VALUE'")
            out[key.strip()] = value.strip()
    return out


def _setting_text(value) -> str:
    """A setting as the registry writes it: ``true``/``false``, integral floats without ``.0``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def conditions_met(bound: Bound, settings) -> bool:
    """Whether the run ``settings`` (``{KEY: value}``) meet every ``setting`` condition of
    ``bound`` (:func:`setting_conditions`; a key the settings lack is not met).

    Values compare as text (:func:`_setting_text`: ``True`` is ``true``, ``1.0`` is ``1``).
    Tiki-Taka entries must state their settings: one without any ``setting`` condition is never
    met for ``algorithm="tiki-taka"`` (its transfers, slice, reset and fast device are part of
    what is proved; an entry silent on them cannot be matched to a plan).
    """
    needed = setting_conditions(bound)
    if bound.algorithm == "tiki-taka" and not needed:
        return False
    return all(key in settings and _setting_text(settings[key]) == value
               for key, value in needed.items())


def guarantee_entries(mode: str, algorithm: str = "analog", settings=None,
                      write: str = "batch-mean") -> tuple[Bound, ...]:
    """The ``derived`` entries :func:`evaluate_guarantee` would use (possibly none).

    :func:`theory.theorems.bounds_for` ``(mode, algorithm, write)`` (empty where it has none), kept
    only where ``settings`` meet their ``setting`` conditions (:func:`conditions_met`;
    ``settings=None`` keeps them all, today's analog and digital guarantees).
    """
    try:
        entries = bounds_for(mode, algorithm, write)
    except ParameterError:
        if mode not in MODES:
            raise
        return ()
    if settings is None:
        return entries
    return tuple(b for b in entries if conditions_met(b, settings))


def evaluate_guarantee(mode: str, eps, *, algorithm: str = "analog",
                       on_unreachable: str = "raise", settings=None, transfer=None,
                       write: str = "batch-mean", **values) -> ComplexityResult:
    r"""The proved complexity of ``algorithm`` under ``mode``: the smallest K(eps) of its theorems.

    Every ``derived`` entry of :func:`theory.theorems.bounds_for` ``(mode, algorithm, write)`` is a
    valid guarantee (for ``async``: Theorem 4' and its floor-charged variant 4'B; with
    ``write="per-sample"``: Theorem 4'PS), so the smallest
    iteration count among them is one too. Per point, the result holds the fields of the entry
    that gives the fewest whole iterations, and ``algorithm`` names it (a string, or an array of
    names for array inputs); where no entry reaches ``eps`` the first entry's values (floor,
    status) are reported.

    Parameters
    ----------
    mode : {"none", "sync", "async"}
    eps, on_unreachable, **values
        As for :func:`evaluate_complexity`.
    algorithm : {"digital", "analog", "tiki-taka"}
    settings : mapping, optional
        The run's settings (``{KEY: value}``); entries whose ``setting`` conditions they do not
        meet are left out (:func:`guarantee_entries`). ``None``: every entry.
    transfer : (int, int), optional
        ``(T, c_T)``, the transfer period and the cycles of one transfer event
        (:func:`theory.schedules.transfer_event_cycles`); required for ``algorithm="tiki-taka"``,
        whose cycles are the schedule's plus :math:`\lfloor K/T \rfloor c_T`
        (:func:`theory.schedules.transfer_cycles`, the one timing rule).
    write : {"batch-mean", "per-sample"}
        The write semantics of the entries (:func:`theory.theorems.bounds_for`).

    Raises
    ------
    UnreachableTargetError, ParameterError
        As :func:`evaluate_complexity` with ``on_unreachable="raise"``, for the first entry, when
        no entry reaches ``eps`` at some point; :class:`ParameterError` when no entry is left
        (none derived for ``(mode, algorithm)``, or none whose settings are met), or
        ``algorithm="tiki-taka"`` without ``transfer``.
    """
    if algorithm == "tiki-taka" and transfer is None:
        raise ParameterError("transfer=None: tiki-taka cycles need (transfer_every, "
                             "event_cycles), the transfers counted on top of the schedule")
    entries = guarantee_entries(mode, algorithm, settings, write) if settings is not None \
        else bounds_for(mode, algorithm, write)
    if not entries:
        raise ParameterError(
            f"algorithm={algorithm!r}: no derived bound for mode={mode!r} meets the settings "
            + ", ".join(f"{k}={_setting_text(v)}" for k, v in dict(settings).items())
        )
    results = [evaluate_complexity(b.name, eps, on_unreachable="status", **values)
               for b in entries]
    best = fewest_iterations(results)
    if on_unreachable == "raise" and np.any(np.asarray(best.status) != REACHABLE):
        evaluate_complexity(entries[0].name, eps, **values)  # raises, naming the first failure
    fields = {f.name: getattr(best, f.name) for f in dataclasses.fields(ComplexityResult)}
    if algorithm == "tiki-taka":
        every, event = transfer
        k = np.asarray(fields["iterations_int"])
        extra = transfer_cycles(k, every, event).astype(float)
        fields["cycles"] = _scalar(np.asarray(fields["cycles"], dtype=float) + extra)
    return ComplexityResult(**fields)


def fewest_iterations(results) -> ComplexityResult:
    """Per point, the result of ``results`` with the fewest whole iterations (ties: the first).

    Each result is a valid guarantee of the same quantity (two theorems, or one theorem at two
    sets of constants), so the smallest iteration count is one too. The fields of the chosen
    result are taken together, ``algorithm`` naming its entry; where none reaches ``eps`` the
    first result's values (floor, status) are reported.
    """
    whole = [np.where(np.asarray(r.status) == REACHABLE, np.asarray(r.iterations_int, dtype=float),
                      np.inf) for r in results]
    shape = np.broadcast_shapes(*(np.shape(w) for w in whole))
    best = np.argmin(np.stack([np.broadcast_to(w, shape) for w in whole]), axis=0)

    def pick(field: str):
        stacked = np.stack([np.broadcast_to(np.asarray(getattr(r, field)), shape)
                            for r in results])
        return _scalar(np.take_along_axis(stacked, best[None], axis=0)[0])

    return ComplexityResult(**{f.name: pick(f.name) for f in dataclasses.fields(ComplexityResult)})


@cache
def _mixed_by_mode() -> dict[str, str]:
    """The Theorem 2M entry of each schedule."""
    return {get_bound(name).mode: name for name in MIXED_ENTRIES}


#: what :func:`evaluate_mixed` computes from the blocks (not accepted as keywords)
_BLOCK_NAMES = ("q_min", "q_max", "G_inf", "p2_bar", "G2_bar")


def evaluate_mixed(mode: str, eps, blocks, *, on_unreachable: str = "raise", **values
                   ) -> ComplexityResult:
    r"""Theorem 2M for a pipeline of analog and digital blocks: K(eps), samples, cycles, step.

    The block constants are aggregated by :func:`theory.mixed.mixed_constants`
    (:math:`q_{\min} = \min_m q_{\min,m}`, :math:`q_{\max} = \max_m q_{\max,m}`,
    :math:`\overline{p^2} = \sum_m s_m q_{\max,m}^2`, :math:`\overline{G^2} = \sum_m s_m
    G_{\infty,m}^2`) and the entry of ``mode`` (``analog_sgd_mixed``, ``analog_sgd_sp_mixed``,
    ``analog_sgd_ap_mixed``) is evaluated by :func:`evaluate_complexity`.

    Parameters
    ----------
    mode : {"none", "sync", "async"}
    eps : float or array
        Target (squared-gradient units).
    blocks : sequence of theory.mixed.Block or (q_min, q_max, G_inf, noise_share)
        One per stage, shares summing to 1; a digital stage is ``(1, 1, 0, share)``
        (:func:`theory.mixed.digital_block`).
    on_unreachable : {"raise", "status"}
        As for :func:`evaluate_complexity`.
    **values
        The other constants (``L``, ``Delta``, ``sigma2``, ``theta``, ``n`` / ``B``, ``b`` /
        ``b``, ``M``, ``L_s``, optional ``D``); arrays broadcast. Not ``q_min``, ``q_max``,
        ``G_inf``, ``p2_bar``, ``G2_bar`` (they come from ``blocks``).

    Returns
    -------
    ComplexityResult
        ``algorithm`` names the Theorem 2M entry used.

    Examples
    --------
    >>> half = [(0.7, 1.3, 0.3, 0.25)] * 2 + [(1, 1, 0, 0.25)] * 2
    >>> r = evaluate_mixed("sync", 0.5, half, L=1, Delta=1, sigma2=1, theta=0.5, B=4, b=1, M=4)
    >>> r.algorithm, round(float(r.floor), 6)
    ('analog_sgd_sp_mixed', 0.045918)
    """
    by_mode = _mixed_by_mode()
    if mode not in by_mode:
        raise ParameterError(f"mode={mode!r} is unknown; valid: {', '.join(MODES)}")
    given = sorted(set(values) & set(_BLOCK_NAMES))
    if given:
        raise ParameterError(f"{given[0]}={values[given[0]]!r} is given twice: evaluate_mixed "
                             "computes q_min, q_max, G_inf, p2_bar, G2_bar from blocks")
    blocks = [block if isinstance(block, Block) else tuple(block) for block in blocks]
    constants = mixed_constants(blocks)
    return evaluate_complexity(by_mode[mode], eps, on_unreachable=on_unreachable,
                               **values, **constants.values())


def latex_table() -> str:
    """Markdown table (name, provenance, formula) of every registry entry, for the README."""
    rows = ["| bound | provenance | statement |", "|---|---|---|"]
    for bound in registry().values():
        rows.append(f"| `{bound.name}` | {bound.provenance} | ${bound.latex()}$ |")
    return "\n".join(rows) + "\n"

