r"""Figure ``tiki-taka``: Tiki-Taka against analog SGD, without pipeline, synchronous and
asynchronous, on the oracle quadratic (issue 16).

Every run is the oracle quadratic (``dim = 16``, :mod:`simulate.problems.oracle`) with the expected
analog update on a soft-bounds device of range ``tau`` (its minimiser lies in ``[-0.3, 0.3]``, so a
small ``tau`` saturates), one sample per micro-batch (``b = 1``) and one step ``lr`` for all. The
schedules: no pipeline (``M = 1``, one sample per update); the synchronous pipeline with ``B = M``
micro-batches (``n = M`` samples per update; its iterates are those of the non-pipelined run with
``n = M``, Corollary 3 / Proposition TT); the asynchronous pipeline (one sample per update, stage
delays ``M - m``). Tiki-Taka runs with the defaults of :class:`simulate.config.SimConfig`
(column round robin, ``T = 1``, ``transfer_lr = 1``, ``gamma = 0``).

**Asymptotic error** (left and middle panels): the mean over seeds of the average of
:math:`\lVert\nabla f(W_k)\rVert^2` over the last half of the iterates (logged every
``log_every`` updates), against ``tau`` at ``sigma2`` = :attr:`TikiTakaSettings.sigma2s` ``[-1]``
and against the noise at ``tau`` = :attr:`TikiTakaSettings.taus` ``[0]``, with its standard error.

**Cycles to eps** (right panel): per seed the running average
:math:`\frac1K\sum_{k<K}\lVert\nabla f(W_k)\rVert^2` (every iterate logged) and the clock cycles
after the first ``K`` where the ensemble mean reaches ``eps`` (the trace's cycles: the schedule's
closed form plus the transfers of :func:`simulate.device.tiki_taka.transfer_cycles`). The interval
is the percentile bootstrap of :mod:`simulate.verification.stats`
(:data:`simulate.verification.stats.BOOTSTRAP_RESAMPLES` resamples of the seeds,
:func:`simulate.rng.bootstrap_generator`, :data:`simulate.verification.stats.CI_LEVEL`); the
SP-vs-AP ratio resamples both ensembles (independently) and takes the ratio of their hitting cycles
per resample. A target not reached within the run is ``inf``.

Every run is one point of :func:`simulate.execution.sweep.run_sweep` (function :func:`tt_run`;
cached).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from simulate import SimConfig, run, run_sweep
from simulate.rng import bootstrap_generator
from simulate.verification import (
    BOOTSTRAP_RESAMPLES,
    bootstrap_means,
    first_hit,
    percentile_interval,
    running_average,
    standard_error,
)
from theory import ParameterError, check_range

from .common import new_figure, use_style, write_figure

__all__ = [
    "DESCRIPTION", "NAME", "TT_FORMAT", "TikiTakaSettings", "caption", "compute",
    "cycles_interval", "manifest", "plot", "settings", "table", "tt_run", "write",
]

NAME = "tiki-taka"
DESCRIPTION = ("Tiki-Taka vs analog SGD on the oracle quadratic: asymptotic error vs tau and noise "
               "(none, SP, AP) and SP-vs-AP cycles to eps with bootstrap intervals")
#: whether compute/write take the sweep keywords jobs, scheduler, cache
USES_SWEEP = True
#: bumped when the meaning of a cached run changes (part of every sweep point)
TT_FORMAT = 1
ALGORITHMS = ("analog", "tiki-taka")


@dataclass(frozen=True)
class TikiTakaSettings:
    """Settings of the Tiki-Taka figure.

    Parameters
    ----------
    taus : tuple of float
        Device ranges of the error-vs-tau panel (> 0); the first is the noise panel's.
    sigma2s : tuple of float
        Noise levels of the error-vs-noise panel (> 0); the last is the tau panel's.
    stages : tuple of int
        Pipeline depths ``M`` of the SP and AP runs (1 to 16).
    lr : float
        The one step of every run (> 0).
    steps, seeds : int
        Updates and ensemble size of the asymptotic-error runs.
    eps : tuple of float
        Targets of the running average for the cycles (> 0); the panel shows the first.
    cycle_steps, cycle_seeds : int
        Updates and ensemble size of the cycles runs (every iterate logged).
    log_every : int
        Logging period of the asymptotic-error runs.
    """

    taus: tuple[float, ...] = (0.4, 0.6, 1.0)
    sigma2s: tuple[float, ...] = (0.25, 1.0)
    stages: tuple[int, ...] = (4, 16)
    lr: float = 0.02
    steps: int = 8000
    seeds: int = 8
    eps: tuple[float, ...] = (0.03, 0.06)
    cycle_steps: int = 6000
    cycle_seeds: int = 16
    log_every: int = 10

    def __post_init__(self):
        if not self.taus or not self.sigma2s or not self.stages:
            raise ParameterError("taus, sigma2s and stages must each hold at least one value")
        for value in self.taus:
            check_range("taus", value, 0, None, low_open=True)
        for value in self.sigma2s:
            check_range("sigma2s", value, 0, None, low_open=True)
        for value in self.stages:
            check_range("stages", value, 1, 16, integer=True)
        check_range("lr", self.lr, 0, None, low_open=True)
        if not self.eps:
            raise ParameterError("eps must hold at least one value")
        for value in self.eps:
            check_range("eps", value, 0, None, low_open=True)
        for name in ("steps", "seeds", "cycle_steps", "cycle_seeds", "log_every"):
            check_range(name, getattr(self, name), 2 if "seeds" in name else 1, None,
                        integer=True)


def settings(quick: bool) -> TikiTakaSettings:
    """Full: 3 taus, M in {4, 16}, 8000 updates x 8 seeds; quick: 2 taus, M = 4, 2000 updates."""
    if quick:
        return TikiTakaSettings(taus=(0.4, 1.0), stages=(4,), steps=2000, seeds=3,
                                cycle_steps=2000, cycle_seeds=6)
    return TikiTakaSettings()


def _schedules(s: TikiTakaSettings) -> list[tuple[str, int]]:
    return [("none", 1)] + [(mode, m) for m in s.stages for mode in ("sync", "async")]


def _config(s: TikiTakaSettings, algorithm: str, mode: str, stages: int, tau: float,
            sigma2: float, *, cycles: bool) -> SimConfig:
    return SimConfig(
        problem="quadratic", mode=mode, algorithm=algorithm, stages=stages,
        micro_batches=stages if mode == "sync" else 1, micro_batch_size=1, tau=tau,
        update="expected", lr=s.lr, steps=s.cycle_steps if cycles else s.steps,
        seeds=s.cycle_seeds if cycles else s.seeds, log_every=1 if cycles else s.log_every,
        sigma2=sigma2, seed=0,
    )


def tt_run(point: Mapping) -> dict:
    """Sweep function: one ensemble run.

    ``point = {"config": SimConfig.to_dict(), "curves": bool, "format": TT_FORMAT}``.

    Returns
    -------
    dict
        ``tail`` (per seed, the mean of the logged squared gradient norms over the last half),
        ``max_abs_w``; with ``curves``, ``grad_norm2`` (every iterate, ``(R, K)``) and
        ``cycles`` (after ``0..K`` updates).
    """
    config = SimConfig(**point["config"])
    trace = run(config)
    half = len(trace.step) // 2
    out = {"tail": trace.grad_norm2[:, half:].mean(axis=1),
           "max_abs_w": np.asarray(trace.max_abs_w, dtype=float)}
    if point["curves"]:
        out |= {"grad_norm2": trace.grad_norm2[:, :-1], "cycles": trace.cycles}
    return out


def _hit_cycles(curves: np.ndarray, cycles: np.ndarray, eps: float) -> float:
    k = int(first_hit(curves, eps))
    return float(cycles[k]) if k else math.inf


def cycles_interval(grad_norm2: np.ndarray, cycles: np.ndarray, eps: float,
                    seed: int = 0) -> tuple[float, float, float, np.ndarray]:
    """Cycles to ``eps`` of the ensemble-mean running average, its bootstrap interval and the
    per-resample values (``inf`` where a resample never reaches ``eps``).

    Parameters
    ----------
    grad_norm2 : ndarray, shape (R, K)
        Every iterate's squared gradient norm per seed.
    cycles : ndarray, shape (K + 1,)
        Cycles after ``0..K`` updates.
    """
    per_seed = running_average(grad_norm2)
    point = _hit_cycles(per_seed.mean(axis=0), cycles, eps)
    rng = bootstrap_generator(seed)
    hits = first_hit(bootstrap_means(per_seed, rng, BOOTSTRAP_RESAMPLES), eps)
    values = np.where(hits > 0, cycles[hits].astype(float), math.inf)
    lo, hi = percentile_interval(values)
    return point, float(lo), float(hi), values


def compute(quick: bool = False, jobs: int | None = None, scheduler=None, cache=True) -> dict:
    """Run every ensemble (one cached sweep); asymptotic errors and cycles to eps.

    Returns
    -------
    dict
        ``settings``, ``floors`` (per run: panel, algorithm, mode, M, tau, sigma2, mean and
        standard error of the tail average) and ``cycles`` (per algorithm and M: SP and AP cycles
        to eps with intervals, and the SP/AP ratio with its interval).
    """
    s = settings(quick)
    plan = []
    for mode, m in _schedules(s):
        for algorithm in ALGORITHMS:
            plan += [("tau", algorithm, mode, m, tau, s.sigma2s[-1]) for tau in s.taus]
            plan += [("noise", algorithm, mode, m, s.taus[0], sigma2) for sigma2 in s.sigma2s
                     if sigma2 != s.sigma2s[-1]]
    cycle_plan = [(algorithm, mode, m) for m in s.stages for algorithm in ALGORITHMS
                  for mode in ("sync", "async")]
    configs = [_config(s, a, mode, m, tau, s2, cycles=False) for _, a, mode, m, tau, s2 in plan]
    configs += [_config(s, a, mode, m, s.taus[0], s.sigma2s[-1], cycles=True)
                for a, mode, m in cycle_plan]
    points = [{"config": c.to_dict(), "curves": i >= len(plan), "format": TT_FORMAT}
              for i, c in enumerate(configs)]
    sweep = run_sweep(tt_run, points, jobs=jobs, scheduler=scheduler, cache=cache, desc=NAME)
    floors = []
    for (panel, algorithm, mode, m, tau, sigma2), result in zip(plan, sweep.results[:len(plan)],
                                                                 strict=True):
        tail = np.asarray(result["tail"], dtype=float)
        floors.append({"panel": panel, "algorithm": algorithm, "mode": mode, "M": m, "tau": tau,
                       "sigma2": sigma2, "error": float(tail.mean()),
                       "stderr": standard_error(tail)})
    # the tau panel's point at taus[0] is the noise panel's point at sigma2s[-1]
    floors += [dict(r, panel="noise") for r in floors if r["panel"] == "tau"
               and r["tau"] == s.taus[0]]
    runs = dict(zip(cycle_plan, sweep.results[len(plan):], strict=True))
    cycles = []
    for eps, m, algorithm in ((e, m, a) for e in s.eps for m in s.stages for a in ALGORITHMS):
        sp_run, ap_run = runs[(algorithm, "sync", m)], runs[(algorithm, "async", m)]
        sp = cycles_interval(np.asarray(sp_run["grad_norm2"]), np.asarray(sp_run["cycles"]),
                             eps)
        ap = cycles_interval(np.asarray(ap_run["grad_norm2"]), np.asarray(ap_run["cycles"]),
                             eps, seed=1)
        with np.errstate(invalid="ignore"):
            ratios = sp[3] / ap[3]  # inf/inf (neither reached) -> nan, counted as unknown
        ratios = np.where(np.isnan(ratios), math.inf, ratios)
        lo, hi = percentile_interval(ratios)
        with np.errstate(invalid="ignore"):
            ratio = sp[0] / ap[0] if math.isfinite(sp[0]) or math.isfinite(ap[0]) \
                else math.nan
        cycles.append({"algorithm": algorithm, "M": m, "eps": eps,
                       "sp_cycles": sp[0], "sp_low": sp[1], "sp_high": sp[2],
                       "ap_cycles": ap[0], "ap_low": ap[1], "ap_high": ap[2],
                       "ratio": ratio, "ratio_low": float(lo), "ratio_high": float(hi)})
    return {"settings": s, "floors": floors, "cycles": cycles}


def table(data: dict) -> list[dict[str, object]]:
    """One row per plotted value: the asymptotic errors, then the cycles to eps."""
    rows = ([{"kind": "floor", **r} for r in data["floors"]]
            + [{"kind": "cycles", **r} for r in data["cycles"]])
    columns = list(dict.fromkeys(k for r in rows for k in r))
    return [{k: repr(r[k]) if isinstance(r.get(k), float) else r.get(k, "") for k in columns}
            for r in rows]


def _label(algorithm: str, mode: str, m: int) -> str:
    name = "TT" if algorithm == "tiki-taka" else "analog"
    return f"{name} {mode}" + ("" if mode == "none" else f" M={m}")


def plot(data: dict) -> Figure:
    """Error vs tau, error vs noise (log scales), and SP/AP cycles to eps with intervals."""
    s = data["settings"]
    with use_style():
        fig = new_figure(figsize=(9.0, 3.4), layout="constrained")
        axes = fig.subplots(1, 3)
        styles = {"none": "-", "sync": "--", "async": ":"}
        for ax, panel, key in ((axes[0], "tau", "tau"), (axes[1], "noise", "sigma2")):
            for i, (mode, m) in enumerate(_schedules(s)):
                for algorithm, color in zip(ALGORITHMS, ("C1", "C2"), strict=True):
                    rows = sorted((r for r in data["floors"] if r["panel"] == panel
                                   and r["algorithm"] == algorithm and r["mode"] == mode
                                   and r["M"] == m), key=lambda r: r[key])
                    ax.errorbar([r[key] for r in rows], [r["error"] for r in rows],
                                yerr=[r["stderr"] for r in rows], linestyle=styles[mode],
                                marker="os^v"[i % 4], color=color, capsize=2,
                                label=_label(algorithm, mode, m))
            ax.set_yscale("log")
            ax.set_ylabel(r"avg $\|\nabla f\|^2$, last half")
        axes[0].set_xlabel(r"device range $\tau$")
        axes[0].set_title(f"sigma2 = {s.sigma2s[-1]:g}")
        axes[1].set_xlabel(r"noise $\sigma^2$")
        axes[1].set_xscale("log")
        axes[1].set_title(f"tau = {s.taus[0]:g}")
        ax = axes[2]
        labels, x = [], 0
        shown_rows = [r for r in data["cycles"] if r["eps"] == s.eps[0]]
        top = max([r[f"{k}_{e}"] for r in shown_rows for k in ("sp", "ap")
                   for e in ("cycles", "high") if math.isfinite(r[f"{k}_{e}"])] or [1.0])
        for r in shown_rows:
            for mode, key, color in (("SP", "sp", "C0"), ("AP", "ap", "C3")):
                value, lo, hi = r[f"{key}_cycles"], r[f"{key}_low"], r[f"{key}_high"]
                shown = value if math.isfinite(value) else top * 2  # not reached: off the top
                ax.bar(x, shown, color=color, alpha=0.8 if math.isfinite(value) else 0.2,
                       hatch=None if math.isfinite(value) else "//")
                if math.isfinite(lo) and math.isfinite(hi):
                    ax.errorbar(x, value, yerr=[[value - lo], [hi - value]], color="k",
                                capsize=2)
                labels.append(f"{'TT' if r['algorithm'] == 'tiki-taka' else 'an'} {mode}"
                              f"\nM={r['M']}")
                x += 1
        ax.set_xticks(range(x), labels, fontsize=6)
        ax.set_yscale("log")
        ax.set_ylabel(f"cycles to eps = {s.eps[0]:g} (hatched: not reached)")
        ax.set_title(f"tau = {s.taus[0]:g}, sigma2 = {s.sigma2s[-1]:g}")
        handles, names = axes[0].get_legend_handles_labels()
        fig.legend(handles, names, loc="outside lower center", ncols=5, fontsize=6)
        fig.suptitle(f"oracle quadratic (dim 16), step {s.lr:g}, b = 1, B = M for SP",
                     fontsize=8)
    return fig


def _value(row: Mapping, key: str) -> float:
    return float(row[key])


def caption(rows: Sequence[Mapping]) -> str:
    """One sentence from the CSV rows: the floor removal at the smallest tau (AP at the largest
    M) and the SP/AP cycles ratio of Tiki-Taka there."""
    floors = [r for r in rows if r["kind"] == "floor" and r["panel"] == "tau"]
    tau = min(_value(r, "tau") for r in floors)
    m = max(int(r["M"]) for r in floors)

    def error(algorithm, mode, stages):
        return next(_value(r, "error") for r in floors if r["algorithm"] == algorithm
                    and r["mode"] == mode and int(r["M"]) == stages and _value(r, "tau") == tau)

    eps = min(_value(r, "eps") for r in rows if r["kind"] == "cycles")
    cycles = next(r for r in rows if r["kind"] == "cycles" and r["algorithm"] == "tiki-taka"
                  and int(r["M"]) == m and _value(r, "eps") == eps)
    return (f"At tau = {tau:g}, Tiki-Taka lowers the asymptotic error from "
            f"{error('analog', 'none', 1):.3g} to {error('tiki-taka', 'none', 1):.3g} without "
            f"pipeline and from {error('analog', 'async', m):.3g} to "
            f"{error('tiki-taka', 'async', m):.3g} in the asynchronous pipeline (M = {m}); "
            f"there its SP/AP cycles-to-eps ratio is {_value(cycles, 'ratio'):.3g} "
            f"({_value(cycles, 'ratio_low'):.3g} to {_value(cycles, 'ratio_high'):.3g}, "
            f"eps = {_value(cycles, 'eps'):g}).")


def manifest(data: dict, quick: bool) -> dict:
    """The figure's JSON manifest: configuration and seeds (``write_figure`` adds the rest)."""
    return {"config": {**asdict(data["settings"]), "quick": quick, "problem": "quadratic",
                       "dim": 16, "update": "expected"}, "seed": 0}


def write(out_dir: str | Path, quick: bool = False, jobs: int | None = None, scheduler=None,
          cache=True) -> list[Path]:
    """Compute, plot and save the figure; return the paths written (PNG, PDF, CSV, manifest)."""
    return write_figure(sys.modules[__name__], out_dir, quick, jobs=jobs, scheduler=scheduler,
                        cache=cache)
