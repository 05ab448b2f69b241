r"""Figure ``theory-vs-sim``: bound and simulated value against the number of stages, SP and AP.

On the oracle quadratic (dimension 16, :math:`L = 1`, exact :math:`\Delta` and :math:`\sigma^2`,
soft-bounds device with ``tau = 1``, expected analog update), for every stage count ``M``:

- **SP** (``analog_sgd_sp``, Corollary 3): synchronous pipeline, ``B = 4`` micro-batches of
  ``b = 1``;
- **AP** (``analog_sgd_ap``, Theorem 4): asynchronous pipeline, micro-batch ``b = 1``, delays
  ``M - m`` (``D = M - 1``).

Each point is :func:`simulate.verification.checks.check_bound`: the average over seeds of
:math:`\frac1K\sum_{k<K}\lVert\nabla f(W_k)\rVert^2` (every iterate; error bars ``z = 4``
standard errors) and the bound at ``K`` and the run's step with the constants that held (the
visited weight interval for :math:`q_{\min}, q_{\max}, G_\infty`) and the tightest admissible
:math:`\theta`. The step is half the admissible step cap of each configuration
(:func:`simulate.verification.suites.capped_step` on the region ``[-0.5, 0.5]``), so the AP step
shrinks as
:math:`1/D`. The sweep function is :func:`simulate.verification.suites.check_point` (cached with the
verification suites).

A third panel reads the same pipelines (SP with ``B = 4``, AP, ``b = 1``, every ``M``) as
**predictions** of the clock cycles to a target, as the planner uses them: on a problem where the
guarantee has a target below the start (:data:`PREDICTION_PROBLEM`: soft bounds ``tau = 4``,
``sigma2 = 0.1``), every pipeline runs at the guarantee's best step for
:math:`\epsilon = \sqrt{F S}` (:func:`simulate.verification.heldout.grid_target`); the proved
cycles (bound) and the calibration's (:func:`calibration_of`, fitted on its own design of other
pipelines, :data:`CALIBRATION_SYNC` and :data:`CALIBRATION_ASYNC`) are plotted against the
simulated cycles to ``eps`` of the ensemble mean running average (log-log; ``y = x`` is a perfect
forecast).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from matplotlib.figure import Figure

from simulate import Check, run_sweep
from simulate.verification import (
    CALIBRATION_QUICK,
    VERIFY_FORMAT,
    CalibrationProblem,
    calibrate,
    capped_step,
    check_point,
    config_for,
    design,
    grid_target,
    simulate_grid,
)
from theory import ParameterError, check_range
from theory.calibration import predicted_cycles

from .common import new_figure, use_style, write_figure

__all__ = [
    "BOUNDS", "CALIBRATION_ASYNC", "CALIBRATION_MIN_STEPS", "CALIBRATION_SYNC", "DESCRIPTION",
    "NAME", "PREDICTION_PROBLEM", "TheoryVsSimSettings", "calibration_of", "caption", "compute",
    "configs", "manifest", "plot", "settings", "table", "write",
]

NAME = "theory-vs-sim"
DESCRIPTION = "bound and simulated avg ||grad f||^2 vs stages M, SP and AP, oracle quadratic"
#: whether compute/write take the sweep keywords jobs, scheduler, cache
USES_SWEEP = True

#: panel -> registry entry
BOUNDS = {"SP": "analog_sgd_sp", "AP": "analog_sgd_ap"}
#: the weight region the step cap is computed on
REGION = (-0.5, 0.5)


@dataclass(frozen=True)
class TheoryVsSimSettings:
    """Settings of the theory-vs-simulation figure.

    Parameters
    ----------
    stages : tuple of int
        Stage counts ``M`` (each in [1, dim]).
    micro_batches : int
        ``B`` of the synchronous pipeline (>= 1).
    steps : int
        Iterations ``K`` (>= 1).
    seeds : int
        Ensemble size (>= 2).
    fraction : float
        The step as a fraction of the admissible step cap, in (0, 1).
    z : float
        Margin of the one-sided check, in standard errors (>= 0).
    dim : int
        Dimension of the quadratic (>= max stages).
    """

    stages: tuple[int, ...] = (1, 2, 4, 8, 16)
    micro_batches: int = 4
    steps: int = 3000
    seeds: int = 32
    fraction: float = 0.5
    z: float = 4.0
    dim: int = 16

    def __post_init__(self):
        if not self.stages:
            raise ParameterError("stages=() is empty; valid: one or more stage counts")
        check_range("dim", self.dim, 1, None, integer=True)
        for m in self.stages:
            check_range("stages", m, 1, self.dim, integer=True)
        check_range("micro_batches", self.micro_batches, 1, None, integer=True)
        check_range("steps", self.steps, 1, None, integer=True)
        check_range("seeds", self.seeds, 2, None, integer=True)
        check_range("fraction", self.fraction, 0, 1, low_open=True, high_open=True)
        check_range("z", self.z, 0, None)


def settings(quick: bool) -> TheoryVsSimSettings:
    """Full: M in {1, 2, 4, 8, 16}, 3000 iterations, 32 seeds; quick: {1, 2, 4, 8}, 400, 16."""
    if quick:
        return TheoryVsSimSettings(stages=(1, 2, 4, 8), steps=400, seeds=16)
    return TheoryVsSimSettings()


def configs(s: TheoryVsSimSettings) -> list[tuple[str, int, object]]:
    """``(panel, M, SimConfig)`` of every point, step = ``fraction`` of the step cap."""
    out = []
    for panel, name in BOUNDS.items():
        for m in s.stages:
            extra = {"micro_batches": s.micro_batches} if panel == "SP" else {}
            config = config_for(name, stages=m, steps=s.steps, seeds=s.seeds,
                                log_every=s.steps, dim=s.dim, **extra)  # lr: set from the cap
            lr = capped_step(name, config, s.fraction, REGION)
            out.append((panel, m, replace(config, lr=lr)))
    return out


def compute(quick: bool = False, jobs: int | None = None, scheduler=None, cache=True) -> dict:
    """Check every point (one cached sweep of :func:`simulate.verification.suites.check_point`) and
    calibrate the problem (:func:`calibration_of`).

    Returns
    -------
    dict
        ``settings``, ``points``: ``(panel, M, Check)`` triples, and ``calibrated``: the
        calibration's cycles to each check's target (``None`` where the check has no target).
    """
    s = settings(quick)
    plan = configs(s)
    points = [{"bound": BOUNDS[panel], "config": config.to_dict(), "z": s.z,
               "format": VERIFY_FORMAT} for panel, _, config in plan]
    sweep = run_sweep(check_point, points, jobs=jobs, scheduler=scheduler, cache=cache,
                      desc=NAME)
    checks = [Check.from_dict(result) for result in sweep.results]
    sweep_options = dict(jobs=jobs, scheduler=scheduler, cache=cache)
    grid = [("sync" if panel == "SP" else "async", m, s.micro_batches if panel == "SP" else 1)
            for panel, m, _ in plan]
    eps, guarantees = grid_target(PREDICTION_PROBLEM, grid)
    lrs = [float(g.step) for g in guarantees]
    cal = calibration_of(s, **sweep_options)
    simulated = simulate_grid(PREDICTION_PROBLEM, grid, lrs, eps, seeds=s.seeds, **sweep_options)
    predictions = []
    for (mode, m, count), lr, g, sim in zip(grid, lrs, guarantees, simulated, strict=True):
        f = predicted_cycles(cal, mode, eps, m, count, 1, lr=lr)
        predictions.append({"eps": eps, "lr": lr, "simulated": sim, "bound": float(g.cycles),
                            "calibrated": f.cycles})
    return {"settings": s, "predictions": predictions,
            "points": [(panel, m, check) for (panel, m, _), check
                       in zip(plan, checks, strict=True)]}


#: the problem of the prediction panel (a target below the start exists for every pipeline)
PREDICTION_PROBLEM = CalibrationProblem(problem="quadratic", dim=16, sigma2=0.1,
                                        device="softbounds", tau=4.0, weight_bound=0.6, seed=0)
#: (M, B, b) of the calibration's design: none is a plotted pipeline (B = 4 or async b = 1 at
#: M in {1, 2, 4, 8, 16})
CALIBRATION_SYNC = ((3, 2, 1), (6, 8, 1))
CALIBRATION_ASYNC = ((3, 1, 1), (6, 1, 2))
#: the calibration's design runs at least this many updates (the fit needs the curves to descend)
CALIBRATION_MIN_STEPS = 1000


def calibration_of(s: TheoryVsSimSettings, **sweep):
    """The calibration of :data:`PREDICTION_PROBLEM`: :data:`CALIBRATION_SYNC` and
    :data:`CALIBRATION_ASYNC` at step fractions 0.05, 0.2 and 0.6 of the caps,
    ``max(steps, 1000)`` updates, the figure's seeds, 50 bootstrap resamples."""
    points = design(PREDICTION_PROBLEM, sync=CALIBRATION_SYNC, async_=CALIBRATION_ASYNC,
                    fractions=(0.05, 0.2, 0.6), steps=max(s.steps, CALIBRATION_MIN_STEPS),
                    seeds=s.seeds)
    return calibrate(PREDICTION_PROBLEM, points, resamples=CALIBRATION_QUICK["resamples"],
                     progress=None, **sweep)


def table(data: dict) -> list[dict[str, object]]:
    """One row per plotted point: panel, bound, M, step, empirical, its error bar, bound, ratio."""
    rows = []
    predictions = data.get("predictions") or [None] * len(data["points"])
    for (panel, m, check), p in zip(data["points"], predictions, strict=True):
        rows.append({
            "panel": panel, "bound": check.bound_name, "stages": m, "lr": repr(check.config.lr),
            "empirical": repr(check.empirical), "stderr": repr(check.stderr),
            "error_bar": repr(check.margin_z * check.stderr), "bound_value": repr(check.bound),
            "ratio": repr(check.ratio), "theta": repr(check.constants.get("theta")),
            "passed": int(check.passed),
            "prediction_eps": _cell(p and p["eps"]),
            "prediction_lr": _cell(p and p["lr"]),
            "simulated_cycles": _cell(p and p["simulated"]),
            "bound_cycles": _cell(p and p["bound"]),
            "calibrated_cycles": _cell(p and p["calibrated"]),
        })
    return rows


def _cell(value) -> str:
    """A CSV cell: empty for a missing or non-finite number."""
    return "" if value is None or not math.isfinite(value) else repr(value)


def _pairs(rows: Sequence[Mapping], column: str) -> list[tuple[float, float]]:
    """(simulated, predicted) cycles of the rows where both are known."""
    return [(float(r["simulated_cycles"]), float(r[column])) for r in rows
            if r.get("simulated_cycles") and r.get(column)]


def plot(data: dict) -> Figure:
    """Two log-log panels (SP, AP): the bound and the simulated value against M."""
    s = data["settings"]
    with use_style():
        fig = new_figure(figsize=(10.0, 3.2), layout="constrained")
        axes = fig.subplots(1, 3)
        axes[1].sharey(axes[0])
        for ax, panel in zip(axes[:2], BOUNDS, strict=True):
            pts = [(m, c) for p, m, c in data["points"] if p == panel]
            ms = [m for m, _ in pts]
            ax.plot(ms, [c.bound for _, c in pts], "--", marker="^", color="C1",
                    label="bound (tightest admissible theta)")
            ax.errorbar(ms, [c.empirical for _, c in pts],
                        yerr=[c.margin_z * c.stderr for _, c in pts], marker="o", color="C0",
                        capsize=2, label=f"simulated (+- {s.z:g} s.e.)")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xticks(ms, [str(m) for m in ms])
            ax.set_xlabel("stages M")
            detail = f"B = {s.micro_batches}, b = 1" if panel == "SP" else "b = 1, D = M - 1"
            ax.set_title(f"{panel} ({BOUNDS[panel]}), {detail}")
        axes[0].set_ylabel(r"$\frac{1}{K}\sum_k \|\nabla f(W_k)\|^2$")
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=2)
        _prediction_panel(axes[2], table(data))
        fig.suptitle(f"oracle quadratic d = {s.dim}, tau = 1, K = {s.steps}, {s.seeds} seeds, "
                     f"step = {s.fraction:g} x step cap", fontsize=8)
    return fig


def _prediction_panel(ax, rows: Sequence[Mapping]) -> None:
    """Predicted against simulated cycles to eps: the bound and the calibration, y = x."""
    sets = (("bound_cycles", "^", "C1", "bound (guarantee)"),
            ("calibrated_cycles", "o", "C2", "calibration (forecast)"))
    every = []
    for column, marker, color, label in sets:
        pairs = _pairs(rows, column)
        every += [v for pair in pairs for v in pair]
        if pairs:
            ax.plot(*zip(*pairs, strict=True), linestyle="none", marker=marker, color=color,
                    label=label)
    if every:
        low, high = min(every) / 1.5, max(every) * 1.5
        ax.plot([low, high], [low, high], ":", color="0.4", label="y = x")
        ax.set_xlim(low, high)
        ax.set_ylim(low, high)
    else:
        ax.text(0.5, 0.5, "no check has a target", ha="center", transform=ax.transAxes)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("simulated cycles to eps")
    ax.set_ylabel("predicted cycles to eps")
    pp = PREDICTION_PROBLEM
    ax.set_title(f"cycles to eps at the plan's step\n(tau = {pp.tau:g}, sigma2 = {pp.sigma2:g})")
    ax.legend(fontsize=7)


def _ratio_summary(rows: Sequence[Mapping], column: str) -> str:
    ratios = [p / s for s, p in _pairs(rows, column)]
    if not ratios:
        return "none"
    worst = max(ratios, key=lambda r: abs(math.log(r)))
    return f"median {sorted(ratios)[len(ratios) // 2]:.3g}, worst {worst:.3g}"


def caption(rows: Sequence[Mapping]) -> str:
    """From the CSV rows: tightness range, how many points the bound holds at, and the median and
    worst predicted / simulated cycles to eps of the bound and of the calibration."""
    ratios = [float(r["ratio"]) for r in rows]
    held = sum(int(r["passed"]) for r in rows)
    text = (f"The bound holds at {held} of {len(rows)} (panel, M) points; bound / simulated "
            f"ranges from {min(ratios):.3g} to {max(ratios):.3g}.")
    targets = len(_pairs(rows, "bound_cycles"))
    if "calibrated_cycles" in (rows[0] if rows else {}):
        bound, fit = (_ratio_summary(rows, c) for c in ("bound_cycles", "calibrated_cycles"))
        text += (f" As forecasts of the cycles to eps of the same {targets} pipelines at the "
                 f"plan's step, predicted / simulated is {bound} for the bound and {fit} for "
                 "the calibration.")
    return text


def manifest(data: dict, quick: bool) -> dict:
    """The figure's JSON manifest: configuration and seeds (``write_figure`` adds the rest)."""
    return {
        "config": {**asdict(data["settings"]), "quick": quick, "problem": "quadratic",
                   "device": "softbounds", "tau": 1.0, "bounds": BOUNDS,
                   "step_cap_region": list(REGION),
                   "prediction_problem": PREDICTION_PROBLEM.to_dict(),
                   "calibration_design": {"sync": CALIBRATION_SYNC, "async": CALIBRATION_ASYNC}},
        "seed": 0,
    }


def write(out_dir: str | Path, quick: bool = False, jobs: int | None = None, scheduler=None,
          cache=True) -> list[Path]:
    """Compute, plot and save the figure; return the paths written (PNG, PDF, CSV, manifest)."""
    return write_figure(sys.modules[__name__], out_dir, quick, jobs=jobs, scheduler=scheduler,
                        cache=cache)
