r"""The continuous relaxation of the planner as a geometric program (cvxpy, ``gp=True``, CLARABEL).

For one mode, with positive continuous variables :math:`M, B, b, K, s, t_c`:

.. math::

    \min\; \underline{C}(K, M, B)\; t_c \quad\text{s.t.}\quad
    a_0 B^{e_{aB}} b^{e_{ab}} M^{\gamma_a} K^{-1/2} + c_0 B^{e_{cB}} b^{e_{cb}} M^{\gamma_c} K^{-1}
        + f_0 B^{e_{fB}} b^{e_{fb}} M^{\gamma_f} \le \epsilon,

.. math::

    t_c \ge t_\mathrm{read}\, b\, s + \mathrm{BL}\,t_\mathrm{pulse},\quad
    s \ge W/M,\quad s \ge w_{\max},\quad
    b\, a_{\max}\,\mathrm{bytes} \le \mathrm{buf},\quad b\, A\, \mathrm{bytes} \le M\,\mathrm{buf},

.. math::

    M_\mathrm{lo} \le M \le M_\mathrm{hi},\quad 1 \le B \le B_{\max},\quad 1 \le b \le b_{\max},
    \quad K \ge 1,

with :math:`W` the model's MVMs per sample, :math:`w_{\max}` the largest layer's, :math:`A` and
:math:`a_{\max}` the total and largest activation values per sample. Every piece is a lower bound of
the exact problem at every integer point, so the relaxed optimum is a lower bound of the planner's
integer optimum:

- the rate form is read from the theory: ``rate_a``, ``rate_c``, ``floor`` of the mode's registry
  entry, with the problem and device constants substituted; their exponents in ``B`` and ``b`` are
  read symbolically (:math:`x\,\partial_x \log t` must be a number: the terms are monomials), their
  coefficients :math:`a_0, c_0, f_0` by evaluating at :math:`B = b = 1, M = 1`, and their dependence
  on :math:`M` (through the delay :math:`D = M - 1`) is replaced by the monomial minorant
  :math:`t(1) M^{\gamma}` with
  :math:`\gamma = \min_{2 \le M \le M_\mathrm{hi}} \log(t(M)/t(1))/\log M`
  over the integers (exact at :math:`M = 1`, below :math:`t` at every integer :math:`M`);
- the cycle counts of :func:`theory.schedules.cycles_for_iterations` are replaced by posynomial
  minorants: with :math:`\kappa = 1 - 1/M_\mathrm{lo}` (so :math:`M - 1 \ge \kappa M` for
  :math:`M \ge M_\mathrm{lo}`), :math:`2(B + M - 1)K \ge 2\max(B + \kappa M, M)K` (sync) and
  :math:`2(K + M - 1) \ge 2\max(K + \kappa M, M)` (async) for integers :math:`B, K \ge 1`,
  :math:`M \ge M_\mathrm{lo}` (tested against the theory at integer points). The remaining
  relaxation gap comes mostly from here when :math:`M_\mathrm{lo}` is small (:math:`B \approx M`);
- the cycle time drops the rounding to clock periods of
  :meth:`bounds.timing.TimingModel.stage_time_s` (a ceiling, so the relaxed cycle time is never
  above the exact one, up to the timing model's relative rounding slack of 1e-9);
- :math:`W/M` and :math:`w_{\max}` are lower bounds of any partition's bottleneck; the memory
  constraints keep only consequences of the per-stage limits (every stage holds at least one
  micro-batch).

The eps-dependent and hardware coefficients are ``cp.Parameter`` objects, so a sweep over ``eps``
(or the timing) re-solves the cached, compiled problem (``problem.is_dgp(dpp=True)`` holds); a
problem is compiled once per mode and set of exponents. Continuous ``B`` and ``M`` are relaxed as
well (the GP never uses ``integer=True``).

The answer is a :class:`Relaxed` with a ``status`` and a ``message`` (as scipy's
``OptimizeResult``): a GP that fails (a solver error, or a status other than optimal) says so
instead of vanishing.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import cache

import cvxpy as cp
import numpy as np
import sympy as sp

from theory.compiled import compile_expr
from theory.errors import ParameterError
from theory.fileio import strict_json
from theory.schedules import max_delay
from theory.symbols import B as B_SYM
from theory.symbols import b as b_SYM
from theory.symbols import q_max as q_max_SYM
from theory.symbols import q_min as q_min_SYM
from theory.symbols import theta as theta_SYM
from theory.theorems import bounds_for, get_bound

from ..evaluation import theory_values
from ..params import PlanHardware, PlanLimits, ProblemParams
from .models import Model

__all__ = [
    "FAILED", "GPModel", "GP_OPTIMAL", "INFEASIBLE", "NO_MODE", "OPTIMAL_INACCURATE", "Relaxed",
    "SKIPPED", "SOLVED", "SOLVER_ERROR", "build_gp", "rate_monomials", "solve_relaxation",
]

#: :attr:`Relaxed.status`: the GP of the returned mode was solved to optimality (a plan's own
#: ``OPTIMAL``, :data:`bounds.OPTIMAL`, is about the exact search)
GP_OPTIMAL = "optimal"
#: solved, but the solver reports reduced accuracy (cvxpy's ``optimal_inaccurate``)
OPTIMAL_INACCURATE = "optimal_inaccurate"
#: no mode solved: the solver raised (``cvxpy.error.SolverError``)
SOLVER_ERROR = "solver_error"
#: no mode solved: the solver ended infeasible, unbounded or at a limit (its status in the message)
INFEASIBLE = "infeasible"
#: no mode to relax (every mode was ruled out)
NO_MODE = "no_mode"
#: not asked for (``plan(..., relax=False)``)
SKIPPED = "skipped"
#: the statuses with a relaxed optimum
SOLVED = (GP_OPTIMAL, OPTIMAL_INACCURATE)
#: the statuses of a relaxation that was asked for and has no optimum
FAILED = (SOLVER_ERROR, INFEASIBLE, NO_MODE)

_TERMS = ("rate_a", "rate_c", "floor")
#: lower limit of the activation coefficients: a model without activations would give a zero
#: parameter, which a GP does not accept (its memory constraints then hold for every b)
_TINY = 1e-12
_K_POWER = {"rate_a": -0.5, "rate_c": -1.0, "floor": 0.0}


@cache
def _relaxed_term(name: str, term: str) -> sp.Expr:
    r"""The rate-form term ``term`` of bound ``name`` the relaxation uses: the term itself, or,
    where it is no monomial in ``b``, its limit as ``b`` grows when that is a minorant for every
    ``b`` (checked symbolically on :math:`\theta \in (0, 1)`, :math:`q_{\max} \ge q_{\min}`).

    Theorem 4'PS's ``c`` is :math:`2\Delta/(\alpha_{AP} q_{\min}) + 8\kappa (L_s^2\Delta/L)
    (\sqrt{D/b} + (G_\infty/q_{\max}) D)^2`, which decreases in ``b``: its minorant drops the
    :math:`\sqrt{D/b}` part (a lower bound stays a lower bound, only less tight).
    """
    expr = getattr(get_bound(name), term)
    if b_SYM not in expr.free_symbols or sp.sympify(
            sp.simplify(b_SYM * sp.diff(expr, b_SYM) / expr)).is_number:
        return expr
    limit = expr.subs(b_SYM, sp.oo)
    s, v = sp.symbols("s v", nonnegative=True)
    gap = (expr - limit).subs({theta_SYM: s / (1 + s), q_max_SYM: q_min_SYM * (1 + v)})
    if (b_SYM in limit.free_symbols or limit.has(sp.oo, -sp.oo, sp.zoo, sp.nan)
            or sp.factor(sp.together(gap)).is_nonnegative is not True):
        raise ParameterError(
            f"{name}.{term} is not a monomial in {b_SYM} and has no monomial minorant: the "
            "relaxation needs one")
    return limit


@cache
def _exponents(name: str) -> dict[str, tuple[float, float]]:
    """Exponents of ``B`` and ``b`` in each rate-form term of bound ``name`` (symbolic check)."""
    out = {}
    for term in _TERMS:
        expr = _relaxed_term(name, term)
        powers = []
        for x in (B_SYM, b_SYM):
            e = sp.simplify(x * sp.diff(expr, x) / expr) if x in expr.free_symbols else 0
            e = sp.sympify(e)
            if not e.is_number:
                raise ParameterError(
                    f"{name}.{term} is not a monomial in {x}: the relaxation needs it to be"
                )
            powers.append(float(e))
        out[term] = tuple(powers)
    return out


def _term_values(name: str, term: str, values: dict, stages: np.ndarray) -> np.ndarray:
    """The term at ``B = b = 1`` for each ``M`` in ``stages`` (``D`` the schedule's ``M - 1``)."""
    env = {**values, "B": 1, "b": 1, "M": stages, "D": max_delay(stages)}
    term_at = compile_expr(_relaxed_term(name, term))
    return np.broadcast_to(np.asarray(term_at(env), float), stages.shape)


def rate_monomials(name: str, values: dict, max_stages: int) -> dict[str, tuple]:
    r"""The GP's monomial minorants of the rate-form terms of bound ``name``.

    Returns ``{term: (coefficient, e_B, e_b, gamma)}`` with
    ``term(M, B, b) >= coefficient * B**e_B * b**e_b * M**gamma`` at every integer
    ``1 <= M <= max_stages`` (equality in ``B`` and ``b``; equality in ``M`` when the term does
    not depend on the delay).
    """
    stages = np.arange(1, max(1, max_stages) + 1, dtype=float)
    out = {}
    for term, (e_big, e_small) in _exponents(name).items():
        series = _term_values(name, term, values, stages)
        coefficient = float(series[0])
        gamma = 0.0
        if coefficient > 0 and len(stages) > 1 and np.any(series != coefficient):
            gamma = float(np.min(np.log(series[1:] / coefficient) / np.log(stages[1:])))
        out[term] = (coefficient, e_big, e_small, gamma)
    return out


@dataclass(frozen=True)
class GPModel:
    """A compiled relaxation of one mode: the cvxpy problem, its variables and parameters."""

    mode: str
    problem: cp.Problem
    variables: dict
    parameters: dict


@cache
def build_gp(mode: str, exponents: tuple, shifted: bool = False) -> GPModel:
    """Build (once per mode, exponents and ``shifted``) the parametrised GP of the module docstring.

    ``shifted`` adds the tighter cycle minorant with :math:`\\kappa = 1 - 1/M_\\mathrm{lo} > 0`
    (a zero :math:`\\kappa` is not a valid positive parameter, so it is a separate problem).

    The cached problem is shared and mutable on purpose (the DPP idiom): every
    :func:`solve_relaxation` overwrites its ``Parameter.value``s before solving, so the compiled
    problem is reused and a new ``eps`` re-solves without recompiling.
    """
    v = {k: cp.Variable(pos=True, name=k) for k in ("M", "b", "K", "s", "tc")}
    count = cp.Variable(pos=True, name="B") if mode == "sync" else None
    names = ("a0", "c0", "f0", "eps", "t_read", "t_update", "work", "work_max", "m_lo", "m_hi",
             "B_max", "b_max", "act_max", "act_total", "kappa")
    p = {k: cp.Parameter(pos=True, name=k) for k in names}
    terms = []
    for (term, coef), exps in zip(
        (("rate_a", p["a0"]), ("rate_c", p["c0"]), ("floor", p["f0"])), exponents, strict=True
    ):
        if exps is None:  # the term is zero for these constants (e.g. no floor when G_inf = 0)
            continue
        e_big, e_small, gamma = exps
        mono = coef * v["K"] ** _K_POWER[term] if _K_POWER[term] else coef
        if e_small:
            mono = mono * v["b"] ** e_small
        if e_big and count is not None:
            mono = mono * count ** e_big
        if gamma:
            mono = mono * v["M"] ** gamma
        terms.append(mono)
    constraints = [
        cp.sum(cp.hstack(terms)) <= p["eps"],
        p["t_read"] * v["b"] * v["s"] + p["t_update"] <= v["tc"],
        p["work"] / v["M"] <= v["s"], p["work_max"] <= v["s"],
        p["m_lo"] <= v["M"], v["M"] <= p["m_hi"],
        1 <= v["b"], v["b"] <= p["b_max"], 1 <= v["K"],
        p["act_max"] * v["b"] <= 1, p["act_total"] * v["b"] / v["M"] <= 1,
    ]
    if count is not None:
        constraints += [1 <= count, count <= p["B_max"]]
        first = count + p["kappa"] * v["M"] if shifted else count
        objective = 2 * v["K"] * cp.maximum(first, v["M"]) * v["tc"]
        v["B"] = count
    else:
        first = v["K"] + p["kappa"] * v["M"] if shifted else v["K"]
        objective = 2 * cp.maximum(first, v["M"]) * v["tc"]
    problem = cp.Problem(cp.Minimize(objective), constraints)
    if not problem.is_dgp(dpp=True):  # pragma: no cover - a structural error of this module
        raise RuntimeError("the planner relaxation is not a DPP geometric program")
    return GPModel(mode, problem, v, p)


@dataclass(frozen=True)
class Relaxed:
    """The optimum of the continuous relaxation (a lower bound of the integer optimum).

    Attributes
    ----------
    value : float
        Relaxed optimal time, seconds (``inf`` if no mode was solved, ``nan`` if the relaxation
        was skipped).
    mode : str
        The mode of the relaxed optimum (``""`` without one).
    stages, micro_batches, micro_batch_size, iterations : float
        The relaxed optimum's ``M``, ``B`` (1 for async), ``b`` and ``K`` (``nan`` without one).
    solve_time_s : float
        Seconds spent solving (all modes).
    status : str
        :data:`GP_OPTIMAL` or :data:`OPTIMAL_INACCURATE` (the returned mode's GP), or why there is
        no optimum: :data:`SOLVER_ERROR`, :data:`INFEASIBLE`, :data:`NO_MODE`, :data:`SKIPPED`.
    message : str
        One line on the outcome, naming every mode whose GP failed and why.
    """

    value: float
    mode: str
    stages: float
    micro_batches: float
    micro_batch_size: float
    iterations: float
    solve_time_s: float
    status: str
    message: str

    @classmethod
    def empty(cls, status: str, message: str, *, value: float = math.inf,
              solve_time_s: float = 0.0) -> Relaxed:
        """A relaxation without an optimum (``status`` says why)."""
        return cls(value=value, mode="", stages=math.nan, micro_batches=math.nan,
                   micro_batch_size=math.nan, iterations=math.nan, solve_time_s=solve_time_s,
                   status=status, message=message)

    @property
    def success(self) -> bool:
        """Whether a relaxed optimum was found (``status`` in :data:`SOLVED`)."""
        return self.status in SOLVED

    def to_dict(self) -> dict:
        """JSON-ready fields; a non-finite number (no relaxation solved) is ``None``."""
        return {key: strict_json(value) for key, value in self.__dict__.items()}


def _failure(mode: str, gp: GPModel) -> tuple[str, str] | None:
    """Solve ``gp``; ``None`` on success, else ``(status, reason)`` of the failed mode."""
    try:
        value = gp.problem.solve(gp=True, solver=cp.CLARABEL)
    except cp.error.SolverError as error:
        return SOLVER_ERROR, f"{mode}: the solver failed ({error})"
    status = gp.problem.status
    if status not in SOLVED or value is None:
        return INFEASIBLE, f"{mode}: the solver ended with status {status!r}"
    return None


def solve_relaxation(
    model: Model,
    hardware: PlanHardware,
    problem: ProblemParams,
    eps: float,
    limits: PlanLimits,
    modes: tuple[str, ...],
    stage_range: range | None = None,
) -> Relaxed:
    """Solve the relaxation for each mode in ``modes``; return the best as a :class:`Relaxed`.

    Parameters
    ----------
    model : bounds.Model
    hardware : bounds.params.PlanHardware
    problem : bounds.params.ProblemParams
    eps : float
    limits : bounds.params.PlanLimits
    modes : tuple of str
        Modes not ruled out (each relaxed with every bound of :func:`theory.theorems.bounds_for`).
    stage_range : range, optional
        Integer ``M`` range (default ``1 .. min(P, layers)``).

    Returns
    -------
    Relaxed
        The fastest solved mode (status :data:`GP_OPTIMAL` or :data:`OPTIMAL_INACCURATE`; the
        message names any other mode that failed), or, if none was solved, ``value = inf`` with
        status :data:`NO_MODE` (``modes`` empty), :data:`SOLVER_ERROR` (a mode's solver raised) or
        :data:`INFEASIBLE` (every GP ended with another status), and the reasons in the message.
    """
    start = time.perf_counter()
    if not modes:
        return Relaxed.empty(NO_MODE, "no mode to relax: every mode was ruled out")
    h = hardware.hardware
    if stage_range is None:
        stage_range = range(1, min(hardware.accelerators, len(model)) + 1)
    values = theory_values(h, problem)
    buffer = hardware.activation_buffer_bytes / hardware.bytes_per_activation
    best: dict | None = None
    failures: list[tuple[str, str]] = []
    # every proved bound of a mode is a guarantee; the relaxation of their minimum is the
    # minimum of their relaxations, so each is solved and the smallest value kept
    pairs = [(m, b.name) for m in modes for b in bounds_for(m, "analog", limits.write)]
    try:
        monomials = {bound: rate_monomials(bound, values, stage_range.stop - 1)
                     for _, bound in pairs}
    except ParameterError as error:  # Theorem 4'PS: its c is no monomial in b (no GP); the
        # other modes' relaxations alone would be no lower bound of the plan
        return Relaxed.empty(INFEASIBLE, f"no relaxation: {error}",
                             solve_time_s=time.perf_counter() - start)
    for mode, bound in pairs:
        mono = monomials[bound]
        exps = tuple(
            (mono[t][1], mono[t][2], mono[t][3]) if mono[t][0] > 0 else None for t in _TERMS
        )
        kappa = 1 - 1 / stage_range.start
        gp = build_gp(mode, exps, kappa > 0)
        par = gp.parameters
        settings = {
            "a0": mono["rate_a"][0], "c0": mono["rate_c"][0], "f0": mono["floor"][0],
            "eps": eps, "t_read": h.timing.read_time_s, "t_update": h.timing.update_time_s,
            "work": float(np.sum(model.work)), "work_max": float(np.max(model.work)),
            "m_lo": float(stage_range.start), "m_hi": float(stage_range.stop - 1),
            "B_max": float(limits.max_micro_batches), "b_max": float(limits.max_micro_batch_size),
            "act_max": max(float(np.max(model.activations)), _TINY) / buffer,
            "act_total": max(float(np.sum(model.activations)), _TINY) / buffer,
            "kappa": kappa,
        }
        for key, value in settings.items():
            if value > 0:  # zero rate terms are left out of the compiled problem
                par[key].value = float(value)
        failure = _failure(f"{mode} ({bound})", gp)
        if failure is not None:
            failures.append(failure)
            continue
        value = float(gp.problem.value)
        if value < (math.inf if best is None else best["value"]):
            var = gp.variables
            best = dict(
                value=value, mode=mode, bound=bound, stages=float(var["M"].value),
                micro_batches=float(var["B"].value) if "B" in var else 1.0,
                micro_batch_size=float(var["b"].value), iterations=float(var["K"].value),
                status=gp.problem.status,
            )
    elapsed = time.perf_counter() - start
    reasons = "; ".join(reason for _, reason in failures)
    if best is None:
        status = SOLVER_ERROR if any(s == SOLVER_ERROR for s, _ in failures) else INFEASIBLE
        return Relaxed.empty(status, f"no mode solved: {reasons}", solve_time_s=elapsed)
    message = f"solved ({best['status']}) at {best['mode']} ({best.pop('bound')})"
    if failures:
        message += f"; not solved: {reasons}"
    return Relaxed(**best, solve_time_s=elapsed, message=message)
