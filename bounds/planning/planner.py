r"""The planner: pipeline mode, stages, layer partition and micro-batches for a model and hardware.

Given a :class:`~bounds.Model`, the hardware (:class:`PlanHardware`: accelerators,
tiles, activation buffers, device and timing), the problem constants and a target ``eps``,
:func:`plan` chooses the mode (``sync`` or ``async``), the number of stages :math:`M`, a contiguous
partition of the layers into :math:`M` stages, the micro-batches per mini-batch :math:`B` (``sync``)
and the samples per micro-batch :math:`b` that minimise the **guaranteed wall-clock time to eps**

.. math::

    T = C\big(K(\epsilon)\big)\; t_\mathrm{cycle}\big(b\, W_{\max}\big),

where :math:`K(\epsilon)` is the proved iteration count of the mode (whole iterations) from
:func:`theory.complexity.evaluate_guarantee`: ``analog_sgd_sp`` (Corollary 3) for ``sync``, the
smaller of ``analog_sgd_ap`` and ``analog_sgd_ap_b`` (Theorem 4' and 4'B) for ``async``;
:math:`C(K)` its clock cycles (``sync`` :math:`2(B+M-1)K`, ``async`` :math:`2(K+M-1)`, from
:func:`theory.schedules.cycles_after`), and
:math:`t_\mathrm{cycle}` the cycle time of the slowest stage (:meth:`bounds.timing.TimingModel.
stage_time_s` of its MVMs per micro-batch, :math:`b` times the stage's MVMs per sample
:math:`W_{\max}`). Nothing here restates a formula of the theory.

Constraints, for every stage :math:`j`:

- **tiles**: the stage's tiles :math:`\le` tiles per accelerator (layers are not split);
- **memory**: :math:`b \cdot h_j \cdot a_j \cdot \mathrm{bytes} \le` activation buffer, with
  :math:`a_j` the activation values the stage stores per sample and :math:`h_j` the micro-batches it
  holds at once (:func:`theory.schedules.in_flight`, derived from the schedules);
- :math:`1 \le M \le \min(P, \ell)`, :math:`1 \le B \le B_{\max}`, :math:`1 \le b \le b_{\max}`
  (:class:`PlanLimits`); a target at or below a mode's floor for every allowed batch rules the mode
  out, with the reason.

**Exact search** (:class:`~bounds.planning.search.GridSearch`): lower-bound grids over
:math:`(B, b)` from the memory-free bottleneck partition, memory-constrained partition DPs solved
lazily in increasing order of the lower bound (branch and bound), so the returned plan is the exact
integer optimum over the grid; a point at or below its floor, or beyond int64 iterations, is simply
unreachable (``inf``). **Relaxation.** :mod:`bounds.planning.relaxation` solves the continuous
geometric program in :math:`(M, B, b)`, whose optimum is a lower bound; the plan reports it and the
gap, or the relaxation's status and message when it failed. **Forecast.** With a calibration,
:func:`forecast_plan` runs the same search on the calibrated iterations
(:class:`~bounds.planning.strategies.ForecastObjective`), at the guarantee's step or, with
``step="forecast"``, at each configuration's step of fewest calibrated iterations within the
stability limit (:class:`~bounds.planning.strategies.ForecastStepObjective`), reporting whether
the chosen plan's step is inside the proved cap and the guarantee there (:class:`StepRecord`).
Tiki-Taka runs are planned by :func:`bounds.plan_tiki_taka`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping

import numpy as np

from theory.calibration import (
    CALIBRATED_MODES,
    Calibration,
    check_algorithm,
    check_write,
    interval_label,
    model_terms,
)
from theory.complexity import REACHABLE, evaluate_complexity
from theory.errors import ParameterError, UnreachableTargetError, check_range
from theory.networks import NETWORK_PROBLEMS
from theory.schedules import cycles_after
from theory.step_choice import guarantee_at_step, stability_limit
from theory.theorems import bound_for

from ..evaluation import theory_values
from ..params import (
    PLAN_MODES,
    STEP_CHOICES,
    PlanHardware,
    PlanLimits,
    ProblemParams,
    check_type,
)
from .constants import ProblemConstants
from .models import Model, model_constants
from .relaxation import SKIPPED, Relaxed, solve_relaxation
from .results import (
    OPTIMAL,
    RELAXATION_FAILED,
    Candidate,
    ForecastRow,
    Plan,
    PlanForecast,
    RateTerms,
    SolveTimes,
    StepRecord,
)
from .search import Grid, GridSearch
from .strategies import (
    AnalogBounds,
    ForecastObjective,
    ForecastStepObjective,
    GuaranteeObjective,
    NetworkForecastObjective,
    PlainCost,
)

__all__ = ["check_arguments", "check_calibration", "check_calibration_model", "check_step",
           "forecast_choices", "forecast_plan", "plan", "problem_constants", "time_grid"]


def plan(
    model: Model,
    hardware: PlanHardware,
    problem: ProblemParams | None = None,
    eps: float = 1.0,
    limits: PlanLimits | None = None,
    *,
    relax: bool = True,
    calibration: Calibration | None = None,
    calibration_source: str = "given",
    sources: Mapping[str, str] | None = None,
    step: str = "guarantee",
) -> Plan:
    r"""Choose mode, stages, partition, micro-batches and micro-batch size minimising time to eps.

    Parameters
    ----------
    model : Model
        The network (:func:`bounds.load_model`).
    hardware : PlanHardware
        Accelerators, tiles, buffers, device and timing.
    problem : ProblemParams, optional
        Constants L, L_s, Delta, sigma2, theta. Default: the model's ``[problem]`` constants
        (:attr:`Model.problem`) over the default placeholders of :class:`ProblemParams`.
    eps : float
        Target for :math:`\frac1K\sum_k \mathbb{E}\lVert\nabla f(W_k)\rVert^2` (squared-gradient
        units), > 0.
    limits : PlanLimits, optional
        Search range of ``B`` and ``b`` and the modes.
    relax : bool
        Also solve the geometric-programming relaxation (default True).
    calibration : theory.calibration.Calibration, optional
        With one, :attr:`Plan.forecast` holds the plan of fewest **predicted** seconds
        (:func:`forecast_plan`) beside the guaranteed times; :attr:`Plan.best` stays the
        guarantee's choice.
    calibration_source : str
        Where the calibration came from (shown in the report).
    sources : mapping, optional
        Where each constant of ``problem`` came from (``{"L": "flag --L", ...}``, shown with the
        constants: :class:`~bounds.planning.constants.ProblemConstants`); a constant without one
        is the default placeholder when it has the default value, else ``given``.
    step : {"guarantee", "forecast"}
        The step of the forecast's plans (:data:`bounds.params.STEP_CHOICES`): the guarantee's
        best step for ``eps`` (default), or each configuration's step of fewest calibrated
        iterations within the stability limit (needs an oracle ``calibration``,
        :func:`check_step`); the guarantee's own plan always runs at its step.

    Returns
    -------
    Plan
        The exact integer optimum over the search range (see module docstring), the three
        next-best (mode, M) pairs, the relaxed optimum and the gap (or the relaxation's status
        and message when it failed: :attr:`Plan.status` is then :data:`RELAXATION_FAILED`).

    Raises
    ------
    ParameterError
        The model does not fit the tiles (a layer larger than an accelerator, or more tiles than
        all accelerators together), or no choice fits the activation buffers.
    UnreachableTargetError
        ``eps`` is at or below the floor of every mode for every allowed batch.
    """
    problem, constants = problem_constants(model, problem, sources)
    problem, limits = check_arguments(model, hardware, problem, limits)
    eps = check_range("eps", eps, 0, low_open=True)
    check_step(step, calibration, calibration_source)
    if calibration is not None:  # before any search: another algorithm or write is refused
        check_calibration(calibration, "analog", calibration_source, limits.write)
        check_calibration_model(calibration, model, calibration_source)
    start = time.perf_counter()
    bounds = AnalogBounds(eps, theory_values(hardware.hardware, problem), limits.write)
    search = GridSearch(model, hardware, limits, GuaranteeObjective(bounds), PlainCost())
    found, ruled_out, floors, _ = search.search(limits.modes)
    if not found:
        if floors and len(floors) == len(limits.modes):
            mode = min(floors, key=floors.get)
            raise UnreachableTargetError(bound_for(mode, "analog", limits.write).name, eps,
                                             floors[mode])
        raise ParameterError("; ".join(f"{m}: {r}" for m, r in ruled_out) or "no feasible plan")
    exact_time = time.perf_counter() - start
    best = found[0]
    terms = _terms(bounds, best)
    relaxed = _relaxed(model, hardware, problem, eps, limits, search, ruled_out, relax)
    gap = best.seconds / relaxed.value - 1 if relaxed.value > 0 and math.isfinite(relaxed.value) \
        else math.nan
    if relaxed.success or relaxed.status == SKIPPED:
        status = OPTIMAL
        message = f"exact integer optimum over the search range; relaxation {relaxed.message}"
    else:
        status = RELAXATION_FAILED
        message = (f"exact integer optimum over the search range; the relaxation failed "
                   f"({relaxed.status}): {relaxed.message}")
    forecast = None
    if calibration is not None:
        forecast = forecast_plan(model, hardware, problem, eps, limits, calibration, best,
                                 source=calibration_source, step=step)
    return Plan(
        model=model.name, eps=float(eps), best=best, terms=terms, dominant=terms.dominant,
        relaxed=relaxed, gap=float(gap), alternatives=tuple(found[1:]),
        ruled_out=tuple(sorted(ruled_out)),
        solve_times=SolveTimes(exact_s=exact_time, relaxation_s=relaxed.solve_time_s,
                               partition_solves=search.dp_solves),
        status=status, message=message, forecast=forecast, constants=constants,
    )


def problem_constants(model: Model, problem: ProblemParams | None,
                      sources: Mapping[str, str] | None = None
                      ) -> tuple[ProblemParams | None, ProblemConstants | None]:
    """The problem (``None``: the model's ``[problem]`` over the defaults) and its constants.

    ``(problem, None)`` when ``problem`` is not a :class:`ProblemParams` (refused by
    :func:`check_arguments`).
    """
    if problem is None:
        return ProblemConstants.build(file=model_constants(model),
                                      where=f"model {getattr(model, 'name', '?')}")
    if not isinstance(problem, ProblemParams):
        return problem, None
    return problem, ProblemConstants.of(problem, sources)


def check_arguments(model, hardware, problem, limits) -> tuple[ProblemParams, PlanLimits]:
    """The problem and limits with defaults filled in; every argument's type checked.

    ``problem`` None: the model's ``[problem]`` constants over the defaults.

    Raises
    ------
    ParameterError
        An argument of the wrong type, naming it and what to pass.
    """
    problem = ProblemParams(**model_constants(model)) if problem is None else problem
    limits = PlanLimits() if limits is None else limits
    check_type("model", model, Model, "e.g. bounds.load_model(NAME)")
    check_type("hardware", hardware, PlanHardware, "e.g. bounds.PlanHardware(from_preset(NAME))")
    check_type("problem", problem, ProblemParams, "or None for the defaults")
    check_type("limits", limits, PlanLimits, "or None for the defaults")
    return problem, limits


def check_calibration(calibration, algorithm: str, source: str, write: str = "batch-mean"
                      ) -> None:
    """Refuse what is not a :class:`~theory.calibration.Calibration` of ``algorithm`` and
    ``write`` (:func:`theory.calibration.check_algorithm`, :func:`theory.calibration.
    check_write`).

    Raises
    ------
    ParameterError
        Not a calibration, or one of another algorithm or write semantics (one line naming
        both).
    """
    if not isinstance(calibration, Calibration):
        raise ParameterError(f"calibration={calibration!r} is not a theory.calibration."
                             "Calibration; read one with theory.calibration_file.read_calibration")
    check_algorithm(calibration, algorithm, source)
    check_write(calibration, write, source)


def check_step(step: str, calibration: Calibration | None, source: str = "given") -> None:
    """Refuse a ``step`` not in :data:`bounds.params.STEP_CHOICES`, ``"forecast"`` without a
    calibration, and ``"forecast"`` with a network calibration (its design fixes the steps it
    measured: the forecast runs at the best of them, :class:`~bounds.planning.strategies.
    NetworkForecastObjective`).

    Raises
    ------
    ParameterError
        One line naming the problem.
    """
    if step not in STEP_CHOICES:
        raise ParameterError(f"step={step!r} is unknown; valid: {', '.join(STEP_CHOICES)}")
    if step != "forecast":
        return
    if calibration is None:
        raise ParameterError("step='forecast' chooses the step by a calibration's forecast; "
                             "pass --calibration FILE (aimc-pipeline calibrate)")
    if isinstance(calibration, Calibration) and calibration.network:
        raise ParameterError(
            f"step='forecast': calibration={source!r} is of a network, whose forecast runs at "
            "the steps of its design (the best of them); use --step guarantee (the default)")


def _terms(bounds: AnalogBounds, cand: Candidate) -> RateTerms:
    """The rate-form terms a/sqrt(K), c/K and floor at the candidate's whole iteration count."""
    grid = {"b": cand.micro_batch_size, "M": cand.stages}
    if cand.mode == "sync":
        grid["B"] = cand.micro_batches
    r = evaluate_complexity(cand.bound, bounds.eps, **bounds.values, **grid)
    k = float(cand.iterations)
    return RateTerms(a_over_sqrt_k=float(r.rate_a) / math.sqrt(k), c_over_k=float(r.rate_c) / k,
                     floor=float(r.floor))


def _relaxed(model: Model, hardware: PlanHardware, problem: ProblemParams, eps: float,
             limits: PlanLimits, search: GridSearch, ruled_out: list, relax: bool) -> Relaxed:
    if not relax:
        return Relaxed.empty(SKIPPED, "skipped (relax=False)", value=math.nan)
    excluded = {m for m, _ in ruled_out}
    modes = tuple(m for m in limits.modes if m not in excluded)
    return solve_relaxation(model, hardware, problem, eps, limits, modes,
                            stage_range=search.stage_range)


def time_grid(
    model: Model,
    hardware: PlanHardware,
    problem: ProblemParams | None = None,
    eps: float = 1.0,
    limits: PlanLimits | None = None,
    mode: str = "sync",
) -> dict[tuple[int, int], Candidate | None]:
    """The best choice for every feasible ``(M, B)`` of one mode (``B = 1`` only for async).

    The same exact search as :func:`plan`, restricted to one ``(M, B)`` at a time: each value is
    the fastest candidate over ``b`` and the partitions (``None`` where nothing is feasible). Used
    by the ``plan`` figure.
    """
    problem, limits = check_arguments(model, hardware, problem, limits)
    eps = check_range("eps", eps, 0, low_open=True)
    if mode not in PLAN_MODES:
        raise ParameterError(f"mode={mode!r} is unknown; valid: {', '.join(PLAN_MODES)}")
    bounds = AnalogBounds(eps, theory_values(hardware.hardware, problem), limits.write)
    search = GridSearch(model, hardware, limits, GuaranteeObjective(bounds), PlainCost())
    out = {}
    for grid in search.grids(mode):
        for i, count in enumerate(grid.counts):
            row = slice(i, i + 1)
            one = Grid(stages=grid.stages, counts=grid.counts[row], iterations=grid.iterations[row],
                       seconds=grid.seconds[row], exact=grid.exact[row])
            out[int(grid.stages), int(count)] = search.best_for(mode, one, np.inf)
    return out


def check_calibration_model(calibration: Calibration, model: Model, source: str) -> str | None:
    """Refuse a network calibration for another model than its network; ``None``, or one line
    when an oracle calibration is used for a network model (its forecast is the oracle's).

    A calibration of ``digits-mlp`` (:attr:`~theory.calibration.Calibration.network`) forecasts
    that network's cycles to its target; a plan of ``llama2-7b``, ``digits-resmlp`` or a model
    file with it would forecast another network with its numbers.

    Raises
    ------
    ParameterError
        A network calibration and a model of another name (one line naming both).
    """
    name = str(calibration.problem.get("problem"))
    if calibration.network:
        if model.name != name:
            raise ParameterError(
                f"calibration={source!r} is of the network {name} (cycles to its "
                f"{calibration.target['label']}), the plan is for model {model.name!r}: a network "
                f"calibration forecasts its own network only; plan --model {name}, or calibrate "
                "this model's problem")
        return None
    if model.name in NETWORK_PROBLEMS:
        return (f"calibration={source!r} is of the oracle problem {name}, not of the network "
                f"{model.name} the package trains: its forecast is the oracle's, in its "
                f"squared-gradient units; aimc-pipeline calibrate --problem {model.name} fits "
                "this network")
    return None


# ------------------------------------------------------------------------------------------------
# the calibrated forecast: the same search, iterations from the calibration


def forecast_choices(search: GridSearch, limits: PlanLimits, calibration: Calibration,
                     source: str, what: str) -> list[Candidate]:
    """The four best forecast choices over the calibrated modes of ``limits`` (best first).

    Raises
    ------
    ParameterError
        No mode of ``limits`` is calibrated, or no choice reaches ``eps`` in the calibration's
        ``what`` (one line each).
    """
    modes = [m for m in limits.modes if m in CALIBRATED_MODES and m in calibration.fits]
    if not modes:
        raise ParameterError(
            f"calibration={source!r} fits {', '.join(calibration.fits)}; the plan searches "
            f"{', '.join(limits.modes)}: no mode in common"
        )
    pairs = [(mode, g) for mode in modes for g in search.grids(mode)
             if np.isfinite(g.seconds).any()]
    found = search.top_candidates(pairs)
    if not found:
        raise ParameterError(
            f"eps={search.eps:g}: no choice reaches eps in the calibration's {what}; choose a "
            "larger eps")
    return found


def _row(objective: ForecastObjective, cand: Candidate) -> ForecastRow:
    """Both times of one candidate (its partition's cycle time)."""
    bounds, calibration = objective.bounds, objective.calibration
    grid = {"b": cand.micro_batch_size, "M": cand.stages}
    if cand.mode == "sync":
        grid["B"] = cand.micro_batches
    calibrated = cand.mode in calibration.fits
    if calibrated:
        lr, k, low, high = (float(np.asarray(x).ravel()[0])
                            for x in objective.forecast(cand.mode, grid))
    else:  # the guarantee's choice in a mode the calibration has no fit for
        lr = float(np.asarray(bounds.step(cand.mode, grid)).ravel()[0])
        k = low = high = math.nan
    guaranteed = bounds.guarantee(cand.mode, grid)

    def seconds(iterations: float) -> float:
        if not math.isfinite(iterations):
            return iterations
        return float(cycles_after(cand.mode, iterations, cand.stages, cand.micro_batches)
                     ) * cand.cycle_time_s

    if guaranteed.status == REACHABLE:
        k_proved = int(guaranteed.iterations_int)
        r = evaluate_complexity(str(guaranteed.algorithm), bounds.eps, **bounds.values, **grid)
        dominant = RateTerms(a_over_sqrt_k=float(r.rate_a) / math.sqrt(k_proved),
                             c_over_k=float(r.rate_c) / k_proved, floor=float(r.floor)).dominant
    else:  # a forecast-step choice where eps is at or below the proved floor: no guarantee
        k_proved, dominant = math.inf, "none"
    terms = {}
    if calibrated:
        terms = {name: float(np.asarray(v).ravel()[0]) for name, v in model_terms(
            cand.mode, calibration.fit(cand.mode).values, k, lr=lr, M=cand.stages,
            B=cand.micro_batches, b=cand.micro_batch_size, start=calibration.start,
            write=calibration.write).items()}
        if cand.mode != "async":
            terms.pop("staleness")
            terms.pop("bias")
    return ForecastRow(
        mode=cand.mode, stages=cand.stages, micro_batches=cand.micro_batches,
        micro_batch_size=cand.micro_batch_size, lr=lr, cycle_time_s=cand.cycle_time_s,
        guaranteed_iterations=k_proved, guaranteed_seconds=seconds(k_proved),
        predicted_iterations=k, predicted_seconds=seconds(k), predicted_low_s=seconds(low),
        predicted_high_s=seconds(high), guaranteed_dominant=dominant,
        predicted_terms=terms,
    )


def _step_record(objective: ForecastStepObjective, row: ForecastRow, write: str) -> StepRecord:
    """The chosen row's step: the stability limit, the proved cap and the guarantee there."""
    bounds = objective.bounds
    grid = {"b": row.micro_batch_size, "M": row.stages}
    if row.mode == "sync":
        grid["B"] = row.micro_batches
    at = guarantee_at_step(row.mode, bounds.eps, row.lr, bounds.values, M=row.stages,
                           B=row.micro_batches, b=row.micro_batch_size, write=write)
    delay = row.stages - 1 if row.mode == "async" else 0
    seconds = at.cycles * row.cycle_time_s if math.isfinite(at.cycles) else math.inf
    return StepRecord(
        lr=row.lr, guarantee_lr=float(np.asarray(bounds.step(row.mode, grid)).ravel()[0]),
        stability_limit=float(stability_limit(delay, bounds.values["L"],
                                              bounds.values["q_max"])),
        cap=at.cap, status=at.status, bound=at.bound, guaranteed_iterations=at.iterations,
        guaranteed_seconds=seconds)


def forecast_plan(model: Model, hardware: PlanHardware, problem: ProblemParams, eps: float,
                  limits: PlanLimits, calibration: Calibration, guaranteed: Candidate, *,
                  source: str = "given", step: str = "guarantee") -> PlanForecast:
    """The plan of fewest predicted seconds under ``calibration``, beside the guarantee's.

    The same exact search as :func:`plan` (partition DPs, memory, branch and bound) with the
    iterations of :class:`~bounds.planning.strategies.ForecastObjective` (``step="forecast"``:
    :class:`~bounds.planning.strategies.ForecastStepObjective`, and the chosen plan's
    :class:`StepRecord`); ``guaranteed`` is the guarantee's own choice (:attr:`Plan.best`),
    reported with its forecast.

    Raises
    ------
    ParameterError
        No mode of ``limits`` is calibrated, or no choice has a forecast that reaches ``eps``, or
        the calibration is of another algorithm than analog SGD (:func:`~bounds.planning.
        tiki_taka.plan_tiki_taka` plans with a Tiki-Taka one).
    """
    check_calibration(calibration, "analog", source, limits.write)
    check_step(step, calibration, source)
    model_warning = check_calibration_model(calibration, model, source)
    bounds = AnalogBounds(eps, theory_values(hardware.hardware, problem), limits.write)
    target = calibration.target
    if target is None and step == "forecast":
        objective = ForecastStepObjective(bounds, calibration)
        what = "forecast (its floor is at or above eps at every step up to the stability limit)"
    elif target is None:
        objective = ForecastObjective(bounds, calibration)
        what = "forecast (its floor is at or above eps wherever the guarantee gives a step)"
    else:  # a network's: to its own target, at its own steps
        objective = NetworkForecastObjective(bounds, calibration)
        what = (f"forecast: no choice reaches its target {target['label']} at a step of its "
                "design")
    search = GridSearch(model, hardware, limits, objective, PlainCost())
    found = forecast_choices(search, limits, calibration, source, what)
    matches = calibration.matches(bounds.values)
    warning = None
    if not matches and target is not None:  # a network's constants are its device's only
        keys = ("q_min", "q_max", "G_inf")
        mine = " ".join(f"{k}={bounds.values[k]:.4g}" for k in keys)
        theirs = " ".join(f"{k}={calibration.problem[k]:.4g}" for k in keys)
        warning = (f"the plan's device constants ({mine}) are not the calibration's ({theirs}, "
                   f"device {calibration.problem.get('device')}, fingerprint "
                   f"{calibration.fingerprint}): its forecast describes another device")
    elif not matches:
        keys = ("L", "Delta", "sigma2", "q_min", "q_max", "G_inf")
        mine = " ".join(f"{k}={bounds.values[k]:.4g}" for k in keys)
        theirs = " ".join(f"{k}={calibration.problem.get(k, float('nan')):.4g}" for k in keys)
        warning = (f"the plan's problem constants ({mine}) are not the calibration's ({theirs}, "
                   f"fingerprint {calibration.fingerprint}): its forecast describes another "
                   "problem")
    if model_warning is not None:
        warning = model_warning if warning is None else f"{model_warning}; {warning}"
    rows = [_row(objective, cand) for cand in found]
    own = next((r for r in rows if r.key == (guaranteed.mode, guaranteed.stages,
                                              guaranteed.micro_batches,
                                              guaranteed.micro_batch_size)), None)
    if own is None:
        own = _row(objective, guaranteed)
    return PlanForecast(source=source, fingerprint=calibration.fingerprint, matches=matches,
                        chosen=rows[0], alternatives=tuple(rows[1:]), guaranteed_choice=own,
                        eps=float(eps), warning=warning, edited=calibration.edited,
                        target=target, level=interval_label(
                            calibration, {r.mode for r in (*rows, own)}),
                        step=None if step != "forecast" else _step_record(
                            objective, rows[0], limits.write))
