r"""The calibration judged on runs it was not fitted on: the held-out check (issue 14, item 4)
and the calibration read on a verification suite.

**Held-out check** (:func:`heldout_check`). A random instance (:func:`draw_instance`: a problem,
a grid of pipelines and a calibration design with no grid point in it) is calibrated
(:func:`simulate.verification.calibration_fit.calibrate`); the calibrated and the theory-only
planner each pick the grid point of fewest forecast / guaranteed cycles to a target
(:func:`grid_target`), and the simulation of every grid point (:func:`simulate_grid`, sweep function
:func:`hitting_run`) says whether the pick reaches it within :data:`HELDOUT_TOLERANCE` of the
best (:class:`HeldOut`).

**Suite forecasts** (:func:`suite_forecasts`). The problem of every pipeline check of a suite is
calibrated (at :data:`SUITE_FRACTIONS`, no design point a checked run) and its forecast compared
with the check's simulated cycles to eps and with the bound's (:class:`SuiteForecast`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from theory.calibration import Calibration
from theory.schedules import transfer_cycles

from ..config import SimConfig
from ..engine import run
from ..execution import run_sweep
from ..pipeline import cycles_after
from ..problems import make_problem
from .calibration_design import CALIBRATE_FORMAT, CalibrationProblem, design
from .calibration_fit import calibrate
from .calibration_settings import CALIBRATION_STANDARD
from .prediction import first_hit, running_average

__all__ = [
    "HELDOUT_FRACTIONS",
    "HELDOUT_MAX_STEPS",
    "HELDOUT_SEEDS",
    "HELDOUT_STEPS",
    "HELDOUT_TOLERANCE",
    "HeldOut",
    "SUITE_FRACTIONS",
    "SuiteForecast",
    "draw_instance",
    "grid_target",
    "heldout_check",
    "hitting_run",
    "problem_of",
    "simulate_grid",
    "suite_forecasts",
]

#: the held-out criterion: a choice succeeds when its simulated cycles to eps are within this
#: factor of the best simulated configuration's
HELDOUT_TOLERANCE = 1.15
#: a held-out simulation doubles its length from this many updates until it reaches eps
_FIRST_STEPS = 256
#: ... and gives up (unreached) beyond this many
HELDOUT_MAX_STEPS = 2**16
#: the held-out instances' calibration: seeds, updates per design point, step fractions of the cap
HELDOUT_SEEDS, HELDOUT_STEPS, HELDOUT_FRACTIONS = 8, 2000, (0.05, 0.2, 0.6)


def hitting_run(point: dict) -> dict:
    """Sweep function: the first ``K`` at which the ensemble mean running average reaches
    ``point["eps"]`` (0: not within ``point["max_steps"]``), doubling the run from
    :data:`_FIRST_STEPS` updates (a run's iterates are a prefix of a longer run's).

    ``point = {"config": SimConfig.to_dict(), "eps": float, "max_steps": int, "format": ...}``;
    returns ``{"iterations": int, "steps": int}``.
    """
    config = SimConfig(**point["config"])
    eps, limit = float(point["eps"]), int(point["max_steps"])
    steps = min(_FIRST_STEPS, limit)
    while True:
        trace = run(replace(config, steps=steps, log_every=1))
        k = int(first_hit(running_average(trace.grad_norm2[:, :-1]).mean(axis=0), eps))
        if k or steps >= limit:
            return {"iterations": k, "steps": steps}
        steps = min(2 * steps, limit)


@dataclass(frozen=True)
class HeldOut:
    """One held-out instance: the grid, what each planner chose and what simulation says.

    Attributes
    ----------
    spec : CalibrationProblem
        The drawn problem.
    eps : float
        The target (squared-gradient units).
    grid : tuple of (str, int, int)
        The judged ``(mode, M, B)`` (``b = 1``), none of them in the calibration's design.
    steps : tuple of float
        The step of each grid point: the guarantee's best step for ``eps``
        (:func:`theory.complexity.evaluate_guarantee`), the step a plan runs at.
    simulated, guaranteed, predicted : tuple of float
        Cycles to ``eps``: simulated (``inf``: not reached), proved and calibrated.
    calibrated_choice, theory_choice : int
        Index of the grid point each planner picks (fewest predicted / guaranteed cycles).
    design : tuple of (str, int, int, int)
        The ``(mode, M, B, b)`` the calibration was fitted on.
    low, high : tuple of float
        The ends of each forecast's prediction interval, cycles
        (:func:`theory.calibration.predicted_cycles`).
    level : float
        Their claimed coverage (:attr:`theory.calibration.Forecast.level`).
    """

    spec: CalibrationProblem
    eps: float
    grid: tuple
    steps: tuple
    simulated: tuple
    guaranteed: tuple
    predicted: tuple
    calibrated_choice: int
    theory_choice: int
    design: tuple = ()
    low: tuple = ()
    high: tuple = ()
    level: float = 0.9

    @property
    def covered(self) -> tuple[bool, ...]:
        """Per grid point reached in simulation, whether its forecast interval holds the
        simulated cycles (points not reached are left out)."""
        return tuple(lo <= s <= hi for s, lo, hi in zip(self.simulated, self.low, self.high,
                                                         strict=True) if math.isfinite(s))

    @property
    def best(self) -> float:
        """The fewest simulated cycles over the grid."""
        return min(self.simulated)

    def success(self, choice: int) -> bool:
        """The choice reaches eps within :data:`HELDOUT_TOLERANCE` of the best simulated time."""
        return self.simulated[choice] <= HELDOUT_TOLERANCE * self.best

    @property
    def calibrated_success(self) -> bool:
        """:meth:`success` of the calibrated planner's choice."""
        return self.success(self.calibrated_choice)

    @property
    def theory_success(self) -> bool:
        """:meth:`success` of the theory-only planner's choice."""
        return self.success(self.theory_choice)


def draw_instance(rng: np.random.Generator) -> tuple[CalibrationProblem, tuple, tuple, tuple]:
    """A random held-out instance: the problem, the judged grid and the calibration design rows.

    The device is, with probabilities 1/2, 1/4, 1/4: soft bounds with ``tau`` log-uniform in
    [2, 8], the ECRAM or the capacitor linear-step preset; ``sigma2`` log-uniform in [0.05, 0.5];
    a quadratic of dimension 16 with a drawn root seed; device constants on ``[-0.6, 0.6]``
    around the device's centre. The grid has the stage counts ``{m, 4m}`` (``m`` in {1, 2, 3})
    and the micro-batches ``{1, B_hi}`` (``B_hi`` in {4, 8}); the design uses the stage counts
    ``{m + 1, 3m}`` and micro-batches {1, 2, 3} at other (M, B) or ``b = 2``: no grid point.
    """
    kind = int(rng.choice(4))
    sigma2 = float(f"{math.exp(rng.uniform(math.log(0.05), math.log(0.5))):.3g}")
    tau = float(f"{math.exp(rng.uniform(math.log(2.0), math.log(8.0))):.3g}")
    device = {0: "softbounds", 1: "softbounds", 2: "ecram-linearstep",
              3: "capacitor-linearstep"}[kind]
    spec = CalibrationProblem(problem="quadratic", dim=16, sigma2=sigma2, device=device,
                              tau=tau if kind < 2 else None, weight_bound=0.6,
                              seed=int(rng.integers(0, 2**31)))
    m = int(rng.choice([1, 2, 3]))
    b_hi = int(rng.choice([4, 8]))
    grid = tuple([("sync", stages, count) for stages in (m, 4 * m) for count in (1, b_hi)]
                 + [("async", stages, 1) for stages in (m, 4 * m)])
    sync = ((m + 1, 2, 1), (3 * m, 3, 1), (m + 1, 1, 2))
    async_ = ((m + 1, 1, 1), (3 * m, 1, 1), (3 * m, 1, 2))
    return spec, grid, sync, async_


def grid_target(spec: CalibrationProblem, grid: Sequence[tuple]) -> tuple[float, list]:
    r"""The target of a grid of ``(mode, M, B)`` (``b = 1``) and the guarantee at each point.

    :math:`\epsilon = \sqrt{F S}` with ``F`` the largest proved floor over the grid and ``S``
    the start :math:`\lVert\nabla f(W_0)\rVert^2`, so every point has a guarantee and a step
    (:func:`theory.complexity.evaluate_guarantee` with the problem's constants); returns ``eps``
    and the guarantees (their ``step`` is the step a plan runs at, their ``cycles`` the proved
    cycles).
    """
    from theory.complexity import evaluate_guarantee

    values = spec.constants()
    problem = make_problem(spec.config("sync", 1, 1, 1, 0.1, 10, 2))
    start = float(np.sum(problem.grad(problem.w0) ** 2))
    floors = [float(evaluate_guarantee(mode, start, on_unreachable="status", **values, M=m, B=c,
                                       b=1, n=c).floor) for mode, m, c in grid]
    eps = math.sqrt(max(floors) * start)
    return eps, [evaluate_guarantee(mode, eps, **values, M=m, B=c, b=1, n=c)
                 for mode, m, c in grid]


def simulate_grid(spec: CalibrationProblem, grid: Sequence[tuple], steps: Sequence[float],
                  eps: float, *, seeds: int, jobs=None, scheduler=None, cache=True,
                  progress: bool | None = None) -> tuple[float, ...]:
    """Simulated cycles to ``eps`` of every ``(mode, M, B)`` (``b = 1``) at its step, one cached
    sweep of :func:`hitting_run` (``inf``: not reached within :data:`HELDOUT_MAX_STEPS` updates)."""
    hits = run_sweep(hitting_run, [
        {"config": spec.config(mode, m, c, 1, lr, 10, seeds).to_dict(), "eps": eps,
         "max_steps": HELDOUT_MAX_STEPS, "format": CALIBRATE_FORMAT}
        for (mode, m, c), lr in zip(grid, steps, strict=True)],
        jobs=jobs, scheduler=scheduler, cache=cache, progress=progress, desc="grid to eps")
    out = []
    for (mode, m, c), hit in zip(grid, hits.results, strict=True):
        k = int(hit["iterations"])
        transfers = int(transfer_cycles(k, spec.transfer_every, spec.event_cycles(m)))
        out.append(float(cycles_after(mode, m, c, k) + transfers) if k else math.inf)
    return tuple(out)


def heldout_check(seed: int, *, seeds: int = HELDOUT_SEEDS, steps: int = HELDOUT_STEPS,
                  fractions: Sequence[float] = HELDOUT_FRACTIONS, resamples: int = 0,
                  jobs=1, scheduler=None, cache=False, progress: bool | None = False,
                  algorithm: str = "analog", transfer_every: int = 1,
                  transfer_slice: str = "column") -> HeldOut:
    """Draw instance ``seed`` (:func:`draw_instance`), calibrate on its design, and judge both
    planners on its grid (see :class:`HeldOut`; target and steps from :func:`grid_target`).

    ``algorithm="tiki-taka"`` runs the same instance (same draw) with Tiki-Taka and the
    transfer settings, calibration and grid alike; every cycle count then includes the
    transfers (:func:`theory.schedules.transfer_cycles`). Without a proved Tiki-Taka bound the
    steps are the analog guarantee's (the planner's rule) and ``guaranteed`` is the analog
    guarantee's cycles plus the transfers (a reference, not a Tiki-Taka guarantee).
    """
    from theory.calibration import predicted_cycles

    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x4E1D]))
    spec, grid, sync, async_ = draw_instance(rng)
    if algorithm != "analog":
        spec = replace(spec, algorithm=algorithm, transfer_every=transfer_every,
                       transfer_slice=transfer_slice)
    eps, guarantees = grid_target(spec, grid)
    lrs = tuple(float(g.step) for g in guarantees)
    points = design(spec, sync=sync, async_=async_, fractions=fractions, steps=steps,
                    seeds=seeds)
    options = dict(jobs=jobs, scheduler=scheduler, cache=cache, progress=progress)
    cal = calibrate(spec, points, resamples=resamples, **options)
    simulated = simulate_grid(spec, grid, lrs, eps, seeds=seeds, **options)
    transfers = [int(transfer_cycles(int(g.iterations_int), spec.transfer_every,
                                     spec.event_cycles(m)))
                 for g, (_, m, _) in zip(guarantees, grid, strict=True)]
    guaranteed = tuple(float(g.cycles) + t for g, t in zip(guarantees, transfers, strict=True))
    forecasts = [predicted_cycles(cal, mode, eps, m, c, 1, lr=lr,
                                  event_cycles=spec.event_cycles(m))
                 for (mode, m, c), lr in zip(grid, lrs, strict=True)]
    predicted = tuple(f.cycles for f in forecasts)
    return HeldOut(spec=spec, eps=eps, grid=grid, steps=lrs, simulated=simulated,
                   guaranteed=guaranteed, predicted=predicted,
                   low=tuple(f.low for f in forecasts), high=tuple(f.high for f in forecasts),
                   level=min(f.level for f in forecasts),
                   calibrated_choice=int(np.argmin(predicted)),
                   theory_choice=int(np.argmin(guaranteed)),
                   design=tuple(sorted({(p.mode, p.stages, p.micro_batches, p.micro_batch_size)
                                        for p in points})))


# ------------------------------------------------------------------------------------------------
# the calibration read on a verification suite (the numbers beside docs/verification.md's)

#: step fractions of a suite's calibrations: none is a fraction of the suites' checks
SUITE_FRACTIONS = (0.15, 0.3, 0.7)
#: the calibrated modes of the registry's pipeline entries
_ENTRY_MODE = {"analog_sgd_sp": "sync", "analog_sgd_ap": "async", "analog_sgd_ap_b": "async"}


def problem_of(config: SimConfig, weight_bound: float = 0.5) -> CalibrationProblem:
    """The :class:`CalibrationProblem` a check's configuration runs on (its problem, dimension,
    noise, device, ``tau`` and root seed)."""
    return CalibrationProblem(problem=config.problem, dim=config.dim, sigma2=config.sigma2,
                              device=config.device, tau=config.tau, weight_bound=weight_bound,
                              seed=config.seed)


@dataclass(frozen=True)
class SuiteForecast:
    """The calibration read on the pipeline checks of a suite (:func:`suite_forecasts`).

    Attributes
    ----------
    ratios : dict
        ``{entry: [calibrated / simulated cycles to each check's eps, ...]}`` over the checks with
        a target the simulation reached.
    bound_ratios : dict
        The same checks' bound / simulated ratios
        (:attr:`simulate.verification.prediction.Prediction.ratio`).
    mode_pairs, stage_pairs : (int, int)
        ``(agreeing, ranked)`` pairs of :func:`simulate.verification.ranking.ranking_agreement` that
        the calibration ranks like the simulation (SP vs AP; M vs M').
    calibrations : int
        Problems calibrated (one per distinct problem of the checks).
    """

    ratios: dict
    bound_ratios: dict
    mode_pairs: tuple[int, int]
    stage_pairs: tuple[int, int]
    calibrations: int


def suite_forecasts(checks: Sequence, *, steps: int = CALIBRATION_STANDARD["steps"],
                    seeds: int = CALIBRATION_STANDARD["seeds"], resamples: int = 0, jobs=None,
                    scheduler=None, cache=True, progress: bool | None = None) -> SuiteForecast:
    """Calibrate the problem of every pipeline check (SP, AP, 4'B) with a target and compare.

    Each distinct problem gets the standard design at :data:`SUITE_FRACTIONS` (no design point
    is a checked run); each check's calibrated cycles to its own ``eps`` at its own step
    (:func:`theory.calibration.predicted_cycles`) are divided by its simulated cycles; the pairs
    of :func:`simulate.verification.ranking.ranking_agreement` between two such checks are ranked
    again with the calibrated cycles at the pair's common target.
    """
    from theory.calibration import predicted_cycles

    from .ranking import ranking_agreement

    checks = list(checks)
    usable = [i for i, c in enumerate(checks) if c.bound_name in _ENTRY_MODE
              and c.prediction is not None and c.prediction.eps is not None]
    problems: dict[CalibrationProblem, Calibration] = {}
    options = dict(jobs=jobs, scheduler=scheduler, cache=cache, progress=progress)
    checked = {(c.config.mode, c.config.stages, c.config.micro_batches,
                c.config.micro_batch_size, c.config.lr) for c in checks}
    for i in usable:
        spec = problem_of(checks[i].config)
        if spec not in problems:
            points = design(spec, fractions=SUITE_FRACTIONS, steps=steps, seeds=seeds)
            overlap = [p for p in points if (p.mode, p.stages, p.micro_batches,
                                             p.micro_batch_size, p.lr) in checked]
            points = tuple(p for p in points if p not in overlap)
            problems[spec] = calibrate(spec, points, resamples=resamples, **options)

    def forecast(i: int, eps: float) -> float:
        c = checks[i].config
        return predicted_cycles(problems[problem_of(c)], _ENTRY_MODE[checks[i].bound_name], eps,
                                c.stages, c.micro_batches, c.micro_batch_size, lr=c.lr).cycles

    ratios: dict[str, list] = {}
    bound_ratios: dict[str, list] = {}
    for i in usable:
        p = checks[i].prediction
        if p.simulated_cycles is None:
            continue
        ratios.setdefault(checks[i].bound_name, []).append(forecast(i, p.eps) /
                                                           p.simulated_cycles)
        bound_ratios.setdefault(checks[i].bound_name, []).append(p.ratio)
    counts = {"mode": [0, 0], "stages": [0, 0]}
    inside = set(usable)
    for pair in ranking_agreement(checks).pairs:
        if pair.first not in inside or pair.second not in inside:
            continue
        a, b = forecast(pair.first, pair.eps), forecast(pair.second, pair.eps)
        s_a, s_b = pair.simulated
        agree = ((a > b) - (a < b)) == ((s_a > s_b) - (s_a < s_b))
        counts[pair.kind][0] += int(agree)
        counts[pair.kind][1] += 1
    return SuiteForecast(ratios=ratios, bound_ratios=bound_ratios,
                         mode_pairs=tuple(counts["mode"]), stage_pairs=tuple(counts["stages"]),
                         calibrations=len(problems))
