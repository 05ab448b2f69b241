r"""Figure ``speedup``: speedup over training without pipeline against the number of stages.

Bars for the synchronous (SP) and asynchronous (AP) pipelines and the linear reference ``M``, with
``B = 8`` micro-batches per mini-batch, in two variants:

1. **Throughput** (cycles per sample), from the discrete-event timelines of
   :mod:`simulate.timeline` (measured cycles, never the closed forms): the non-pipelined timeline
   of the same micro-batches over the pipelined one. Synchronous, one mini-batch of ``B``:

   .. math:: S_{\mathrm{SP}} = \frac{2MB}{2(B + M - 1)} = \frac{MB}{B + M - 1};

   asynchronous, ``N`` micro-batches without flush:
   :math:`S_{\mathrm{AP}} = MN/(N + M - 1) \to M` as :math:`N \to \infty`.
2. **Time to a target test accuracy** on digits with the 16-layer residual MLP (settings of
   :class:`paper_figures.training.DigitsSettings`): per seed, the clock cycles until the test
   accuracy first reaches the target without pipeline over those with the pipeline, each
   pipeline against the same training (same batch per update, same step) run without pipeline:

   - synchronous: its iterates equal those of non-pipelined mini-batch SGD (``B b`` samples,
     step ``lr``), so its speedup is the throughput ratio applied to the same number of updates
     ``K``: :math:`2MBK / (2(B + M - 1)K)`;
   - asynchronous: it runs its own stale training (micro-batch ``b``, step ``lr / B``), reaching
     the target after :math:`K'_M` updates, :math:`2(K'_M + M - 1)` cycles. Its non-pipelined
     counterpart updates after every micro-batch too, :math:`2M` cycles per update; its iterates
     are those of the asynchronous pipeline with ``M = 1`` (no delay), so

     .. math:: S_{\mathrm{AP}}(M) = \frac{2M K'_1}{2(K'_M + M - 1)} ,

     1 at ``M = 1``; below ``M`` where staleness costs extra samples.

   Bars show the mean over the seeds that reached the target (seed ``r`` of every run starts
   from the same weights), error bars one standard deviation; a seed that does not reach the
   target within the budget is left out and counted in the CSV (``reached``). The manifest
   also records the samples each baseline needed.

The CSV holds every plotted bar: variant, mode, stages, speedup, spread, seeds reached.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from simulate.networks import NetworkSpec
from simulate.staleness import cycles_after
from simulate.sweep import run_sweep
from simulate.timeline import build_timeline
from theory.errors import ParameterError, check_range

from .common import new_figure, use_style, write_figure
from .training import DigitsSettings, digits_point, digits_run

__all__ = [
    "DESCRIPTION", "NAME", "SpeedupSettings", "accuracy_speedups", "caption", "compute",
    "first_hit", "manifest", "plot", "settings", "table", "throughput_speedup", "write",
]

NAME = "speedup"
DESCRIPTION = ("speedup over no pipeline vs stages (B = 8): throughput, and time to a target "
               "test accuracy on digits (residual MLP)")
#: whether compute/write take the sweep keywords jobs, scheduler, cache
USES_SWEEP = True

VARIANTS = {"throughput": "throughput (cycles per sample)",
            "accuracy": "time to target test accuracy"}


@dataclass(frozen=True)
class SpeedupSettings:
    """Settings of the speedup figure.

    Parameters
    ----------
    stages : tuple of int
        Stage counts ``M`` (each in [1, 16], the residual MLP's layers).
    async_micro_batches : int
        ``N``, micro-batches of the asynchronous throughput timeline (>= 1).
    target_accuracy : float
        Test-accuracy target of variant 2, in (0, 1).
    digits : DigitsSettings
        The digits training settings of variant 2 (``B`` is also the throughput's ``B``).
    """

    stages: tuple[int, ...] = (1, 2, 4, 8, 12, 16)
    async_micro_batches: int = 800
    target_accuracy: float = 0.85
    digits: DigitsSettings = field(default_factory=lambda: DigitsSettings(
        updates=250, async_budget=2.0, seeds=5, log_samples=64))

    def __post_init__(self):
        if not self.stages:
            raise ParameterError("stages=() is empty; valid: one or more stage counts in [1, 16]")
        for m in self.stages:
            check_range("stages", m, 1, 16, integer=True)
        if 1 not in self.stages:
            raise ParameterError(
                f"stages={self.stages!r} lacks 1; valid: stage counts in [1, 16] including 1 "
                "(the asynchronous run without delay is the baseline of the others)"
            )
        check_range("async_micro_batches", self.async_micro_batches, 1, None, integer=True)
        check_range("target_accuracy", self.target_accuracy, 0, 1, low_open=True,
                    high_open=True)

    @property
    def micro_batches(self) -> int:
        """``B``."""
        return self.digits.micro_batches


def settings(quick: bool) -> SpeedupSettings:
    """Full: stages {1, 2, 4, 8, 12, 16}, 5 seeds, target 85%; quick: {1, 2, 4, 8}, 3 seeds,
    fewer updates, target 80%."""
    if quick:
        return SpeedupSettings(
            stages=(1, 2, 4, 8), target_accuracy=0.8,
            digits=DigitsSettings(updates=120, async_budget=2.0, seeds=3, log_samples=64),
        )
    return SpeedupSettings()


def throughput_speedup(mode: str, stages: int, micro_batches: int) -> float:
    """Measured throughput speedup of ``mode`` over no pipeline (:attr:`Timeline.speedup`).

    ``micro_batches`` is ``B`` (one mini-batch) for ``sync`` and ``N`` for ``async``. Returned as
    a float; the timeline's exact value is a fraction.
    """
    return float(build_timeline(mode, stages, micro_batches).speedup)


def first_hit(accuracy: np.ndarray, steps: np.ndarray, target: float) -> float:
    """The first logged update index whose accuracy is ``>= target`` (``nan`` if none)."""
    hit = np.flatnonzero(np.asarray(accuracy) >= target)
    return float(steps[hit[0]]) if hit.size else float("nan")


def accuracy_speedups(s: SpeedupSettings, none_runs: Sequence[Mapping],
                      async_runs: Mapping[int, Sequence[Mapping]]) -> dict:
    """Per mode and stage count, the per-seed speedups to the target accuracy (module docstring).

    Parameters
    ----------
    s : SpeedupSettings
    none_runs : sequence of dict
        :func:`~paper_figures.training.digits_run` results of the non-pipelined mini-batch run,
        one per seed.
    async_runs : mapping
        Stage count -> the asynchronous results, one per seed (same seed order); ``async_runs[1]``
        is the non-pipelined micro-batch baseline.

    Returns
    -------
    dict
        ``{(mode, M): ndarray of per-seed speedups, nan where a run missed the target}``, and
        ``"updates"``: ``{"none": K, "async": K'_1}`` per seed, the baselines' updates to the
        target.
    """
    target, batches = s.target_accuracy, s.micro_batches

    def hits(results):
        return np.array([first_hit(r["test_accuracy"], r["step"], target) for r in results])

    k_none, k_base = hits(none_runs), hits(async_runs[1])
    out = {"updates": {"none": k_none, "async": k_base}}
    for m in s.stages:
        out["sync", m] = _cycles("none", m, batches, k_none) / _cycles("sync", m, batches, k_none)
        out["async", m] = _cycles("none", m, 1, k_base) / _cycles("async", m, 1,
                                                                   hits(async_runs[m]))
    return out


def _cycles(mode: str, stages: int, micro_batches: int, updates: np.ndarray) -> np.ndarray:
    """Cycles after ``updates`` updates (:func:`simulate.staleness.cycles_after`); nan stays nan."""
    ok = np.isfinite(updates)
    out = np.full(updates.shape, np.nan)
    out[ok] = cycles_after(mode, stages, micro_batches, updates[ok].astype(np.int64))
    return out


def compute(quick: bool = False, jobs: int | None = None, scheduler=None, cache=True) -> dict:
    """Both variants: timelines for the throughput, one cached sweep of digits runs for accuracy.

    Returns
    -------
    dict
        ``settings``, ``bars``: list of dicts (variant, mode, stages, speedup, spread, reached,
        seeds), ``updates_to_target`` (the two baselines', per seed).
    """
    s = settings(quick)
    d = s.digits
    bars = []
    for m in s.stages:
        for mode, count in (("sync", s.micro_batches), ("async", s.async_micro_batches)):
            bars.append(_bar("throughput", mode, m, [throughput_speedup(mode, m, count)],
                             micro_batches=count))
        bars.append(_bar("throughput", "linear", m, [float(m)], micro_batches=0))

    plan = [("none", 1, seed) for seed in range(d.seeds)]
    plan += [("async", m, seed) for m in s.stages for seed in range(d.seeds)]
    points = [digits_point(d, "analog", mode, m, seed) for mode, m, seed in plan]
    sweep = run_sweep(digits_run, points, jobs=jobs, scheduler=scheduler, cache=cache,
                      desc=NAME)
    none_runs = sweep.results[:d.seeds]
    async_runs = {m: [r for (mode, mm, _), r in zip(plan, sweep.results, strict=True)
                      if mode == "async" and mm == m] for m in s.stages}
    speed = accuracy_speedups(s, none_runs, async_runs)
    for m in s.stages:
        bars.append(_bar("accuracy", "sync", m, speed["sync", m], micro_batches=s.micro_batches))
        bars.append(_bar("accuracy", "async", m, speed["async", m], micro_batches=1))
        bars.append(_bar("accuracy", "linear", m, [float(m)], micro_batches=0))
    return {"settings": s, "bars": bars, "updates_to_target": speed["updates"]}


def _bar(variant: str, mode: str, stages: int, values, micro_batches: int) -> dict:
    values = np.asarray(values, dtype=float)
    ok = values[np.isfinite(values)]
    return {
        "variant": variant, "mode": mode, "stages": stages, "micro_batches": micro_batches,
        "speedup": float(ok.mean()) if ok.size else float("nan"),
        "spread": float(ok.std(ddof=1)) if ok.size > 1 else 0.0,
        "reached": int(ok.size), "seeds": int(values.size),
    }


def table(data: dict) -> list[dict[str, object]]:
    """One row per plotted bar (``micro_batches``: ``B`` for sync, ``N`` for async throughput)."""
    return [{**bar, "speedup": repr(bar["speedup"]), "spread": repr(bar["spread"])}
            for bar in data["bars"]]


_COLORS = {"sync": "C0", "async": "C1", "linear": "0.6"}
_LABELS = {"sync": "synchronous (SP)", "async": "asynchronous (AP)", "linear": "linear (= M)"}


def plot(data: dict) -> Figure:
    """Two bar charts (throughput, time to target accuracy) of speedup against stages."""
    s = data["settings"]
    x = np.arange(len(s.stages))
    width = 0.27
    with use_style():
        fig = new_figure(figsize=(7.0, 3.2), layout="constrained")
        axes = fig.subplots(1, 2, sharey=True)
        for ax, variant in zip(axes, VARIANTS, strict=True):
            for j, mode in enumerate(("sync", "async", "linear")):
                bars = [b for b in data["bars"] if b["variant"] == variant and b["mode"] == mode]
                heights = [b["speedup"] for b in bars]
                errors = ([b["spread"] for b in bars] if (variant, mode) == ("accuracy", "async")
                          else None)
                ax.bar(x + (j - 1) * width, heights, width, yerr=errors, capsize=2,
                       color=_COLORS[mode], label=_LABELS[mode] if variant == "throughput"
                       else None, error_kw={"linewidth": 0.8})
                for xi, bar in zip(x, bars, strict=True):
                    if bar["reached"] < bar["seeds"]:
                        ax.annotate(f"{bar['reached']}/{bar['seeds']}",
                                    (xi + (j - 1) * width, np.nan_to_num(bar["speedup"])),
                                    ha="center", va="bottom", fontsize=6)
            ax.set_xticks(x, [str(m) for m in s.stages])
            ax.set_xlabel("stages M")
            ax.set_title(VARIANTS[variant])
        axes[0].set_ylabel("speedup over no pipeline")
        axes[0].text(0.02, 0.97, f"B = {s.micro_batches}; async N = {s.async_micro_batches}",
                     transform=axes[0].transAxes, va="top", fontsize=7)
        axes[1].text(0.02, 0.97,
                     f"target {100 * s.target_accuracy:g}% test accuracy, "
                     f"{s.digits.problem}, mean +- std of {s.digits.seeds} seeds",
                     transform=axes[1].transAxes, va="top", fontsize=7)
        fig.legend(loc="outside lower center", ncols=3)
    return fig


def caption(rows: Sequence[Mapping]) -> str:
    """One sentence from the CSV rows: both variants' speedups at the largest stage count."""
    stages = max(int(r["stages"]) for r in rows)

    def value(variant, mode):
        row = next(r for r in rows if r["variant"] == variant and r["mode"] == mode
                   and int(r["stages"]) == stages)
        return float(row["speedup"])

    return (f"Speedup over training without pipeline at {stages} stages: throughput "
            f"{value('throughput', 'sync'):.2f}x (sync) and {value('throughput', 'async'):.2f}x "
            f"(async); time to the target test accuracy {value('accuracy', 'sync'):.2f}x (sync) "
            f"and {value('accuracy', 'async'):.2f}x (async), against linear {stages}x.")


def manifest(data: dict, quick: bool) -> dict:
    """The figure's JSON manifest: configuration and seeds (``write_figure`` adds the rest)."""
    s = data["settings"]
    return {
        "config": {**asdict(s), "quick": quick, "async_lr": s.digits.async_lr,
                   "async_updates": s.digits.async_updates,
                   "network": asdict(NetworkSpec(grad_norm=False))},
        "seed": list(range(s.digits.seeds)),
        "baseline_samples_to_target": {
            mode: [float(k) * per if np.isfinite(k) else None
                   for k in data["updates_to_target"][mode]]
            for mode, per in (("none", s.digits.mini_batch),
                              ("async", s.digits.micro_batch_size))},
    }


def write(out_dir: str | Path, quick: bool = False, jobs: int | None = None, scheduler=None,
          cache=True) -> list[Path]:
    """Compute, plot and save the figure; return the paths written (PNG, PDF, CSV, manifest)."""
    return write_figure(sys.modules[__name__], out_dir, quick, jobs=jobs, scheduler=scheduler,
                        cache=cache)
