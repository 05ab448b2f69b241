r"""Figure ``training``: test accuracy and loss of the digits residual MLP vs samples and cycles.

Six runs of the 16-layer residual MLP (``digits-resmlp``, width 32, tanh) on scikit-learn's digits,
micro-batches of ``b = 4`` samples, ``B = 8`` micro-batches per mini-batch:

- digital SGD and analog SGD without pipeline (mini-batch ``B b``, step ``alpha``), counted on
  ``M = 8`` stages run one after another (:math:`2MB` cycles per update);
- analog SGD through the synchronous pipeline with 4 and 8 stages (the same iterates as without
  pipeline, :math:`2(B + M - 1)` cycles per update);
- analog SGD through the asynchronous pipeline with 4 and 8 stages (one update per micro-batch of
  ``b`` samples, stale forward weights, step :math:`\alpha / B`, the linear-scaling rule that gives
  it the same step per sample; :math:`2(N + M - 1)` cycles for ``N`` updates).

Each curve is the mean over seeds (the shaded band one standard deviation) of the test accuracy
(360 held-out images) and of the training loss (mean cross-entropy, nats: on the fixed subset of
``CURVE_SPEC.loss_rows`` = 256 of the 1437 training images before the last point, on all of them at
the last; the manifest records the spec), measured every ``log_samples`` samples.

**The early loss spike of the mini-batch runs** (digital and analog SGD without pipeline, and SP,
which has their iterates: up to about 8 nats near 200 samples in quick mode) is the step, not a
bug: at the initial weights the training loss has a Hessian eigenvalue
:math:`\lambda_{\max} \approx 200` (:func:`simulate.verification.tuning.initial_sharpness`, computed
for every seed and recorded in the manifest), so full-batch descent near :math:`W_0` is stable only
for :math:`\alpha < 2/\lambda_{\max} \approx 0.01`; ``lr = 0.05`` is about five times beyond
it. The loss rises while the step throws the weights out of that sharp region (a catapult), then
falls once the curvature has dropped below :math:`2/\alpha`. Digital SGD spikes the same, so the
device is not involved; at ``lr = 0.0125`` the loss falls from the first update; the asynchronous
runs (step ``lr / B``) do not spike. The speedup study tunes the step instead
(:mod:`paper_figures.speedup`). Every run is one point of
:func:`simulate.execution.sweep.run_sweep` (function :func:`digits_run`), so ``--jobs``,
``--scheduler`` and the result cache apply. The CSV holds every plotted point.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from simulate import SimConfig, run_sweep, train_network
from simulate.problems import CURVE_SPEC
from simulate.verification import STUDY_FORMAT, sharpness_run
from theory import ParameterError, check_range

from .common import new_figure, use_style, write_figure

__all__ = [
    "DESCRIPTION", "DigitsSettings", "NAME", "RUN_FORMAT", "Run", "caption", "compute",
    "digits_point", "digits_run", "manifest", "plot", "runs", "settings", "table", "write",
]

NAME = "training"
DESCRIPTION = ("test accuracy and loss vs samples and vs clock cycles: digital, analog, "
               "sync and async pipelines (4, 8 stages), digits residual MLP")
#: whether compute/write take the sweep keywords jobs, scheduler, cache
USES_SWEEP = True

#: bumped when the meaning of a cached digits run changes (part of every sweep point)
RUN_FORMAT = 1


@dataclass(frozen=True)
class DigitsSettings:
    """Training settings shared by the digits figures (``training`` and ``speedup``).

    Parameters
    ----------
    problem : str
        ``"digits-resmlp"`` (residual MLP) or ``"digits-mlp"``.
    micro_batches : int
        ``B``, micro-batches per mini-batch (none and sync), >= 1.
    micro_batch_size : int
        ``b``, samples per micro-batch, >= 1.
    lr : float
        Step ``alpha`` of the mini-batch runs (none, sync), > 0; the asynchronous pipeline uses
        ``lr / micro_batches`` (:attr:`async_lr`).
    updates : int
        Updates of the mini-batch runs, >= 1; the asynchronous runs get ``updates * B *
        async_budget`` updates (:attr:`async_updates`), the same samples times ``async_budget``.
    async_budget : float
        Sample budget of the asynchronous runs relative to the mini-batch runs, >= 1.
    seeds : int
        Seeds per run (root seeds ``0 .. seeds - 1``), >= 1.
    log_samples : int
        Samples between measurements; a multiple of ``B b``, >= 1.
    device : str
        Device preset or family (:class:`simulate.config.SimConfig`).
    tau : float or None
        Dynamic range of a soft-bounds family device.
    """

    problem: str = "digits-resmlp"
    micro_batches: int = 8
    micro_batch_size: int = 4
    lr: float = 0.05
    updates: int = 400
    async_budget: float = 1.0
    seeds: int = 3
    log_samples: int = 160
    device: str = "softbounds"
    tau: float | None = 1.0

    def __post_init__(self):
        if self.problem not in ("digits-resmlp", "digits-mlp"):
            raise ParameterError(
                f"problem={self.problem!r} is unknown; valid: digits-resmlp, digits-mlp"
            )
        check_range("micro_batches", self.micro_batches, 1, None, integer=True)
        check_range("micro_batch_size", self.micro_batch_size, 1, None, integer=True)
        check_range("lr", self.lr, 0, None, low_open=True)
        check_range("updates", self.updates, 1, None, integer=True)
        check_range("async_budget", self.async_budget, 1, None)
        check_range("seeds", self.seeds, 1, None, integer=True)
        check_range("log_samples", self.log_samples, 1, None, integer=True)
        if self.log_samples % self.mini_batch:
            raise ParameterError(
                f"log_samples={self.log_samples} is out of range; valid: a multiple of the "
                f"mini-batch B b = {self.mini_batch}"
            )

    @property
    def mini_batch(self) -> int:
        """Samples per mini-batch, ``B b``."""
        return self.micro_batches * self.micro_batch_size

    @property
    def async_lr(self) -> float:
        r"""Step of the asynchronous pipeline, :math:`\alpha / B` (the same step per sample)."""
        return self.lr / self.micro_batches

    @property
    def async_updates(self) -> int:
        """Updates of an asynchronous run: ``updates * B * async_budget``."""
        return int(round(self.updates * self.micro_batches * self.async_budget))


@dataclass(frozen=True)
class Run:
    """One plotted training run: a label, its algorithm, mode and stages."""

    label: str
    algorithm: str
    mode: str
    stages: int


def settings(quick: bool) -> DigitsSettings:
    """The figure's settings: 400 updates (12 800 samples), 3 seeds; quick: 120 updates, 2 seeds."""
    if quick:
        return DigitsSettings(updates=120, seeds=2)
    return DigitsSettings()


def runs() -> tuple[Run, ...]:
    """The six plotted runs (the non-pipelined ones counted on 8 stages)."""
    return (
        Run("digital SGD, no pipeline", "digital", "none", 8),
        Run("analog SGD, no pipeline", "analog", "none", 8),
        Run("analog SP, M = 4", "analog", "sync", 4),
        Run("analog SP, M = 8", "analog", "sync", 8),
        Run("analog AP, M = 4", "analog", "async", 4),
        Run("analog AP, M = 8", "analog", "async", 8),
    )


def digits_point(s: DigitsSettings, algorithm: str, mode: str, stages: int, seed: int) -> dict:
    """The sweep point of one digits run (a plain dict; see :func:`digits_run`)."""
    asynchronous = mode == "async"
    per_update = s.micro_batch_size if asynchronous else s.mini_batch
    config = SimConfig(
        problem=s.problem, mode=mode, algorithm=algorithm, stages=stages,
        micro_batches=1 if asynchronous else s.micro_batches,
        micro_batch_size=s.micro_batch_size, device=s.device, tau=s.tau,
        lr=s.async_lr if asynchronous else s.lr,
        steps=s.async_updates if asynchronous else s.updates,
        seeds=1, log_every=s.log_samples // per_update, seed=seed,
    )
    return {"config": config.to_dict(), "format": RUN_FORMAT}


def digits_run(point: Mapping) -> dict:
    """Sweep function: train one digits run, return its per-measurement arrays.

    ``point = {"config": SimConfig.to_dict() (seeds = 1), "format": RUN_FORMAT}``. The network is
    the default :class:`simulate.problems.network.NetworkSpec` measured as
    :data:`simulate.problems.network.CURVE_SPEC` (every test image at every point, no gradient
    norm).

    Returns
    -------
    dict
        ``step``, ``samples``, ``cycles`` (int arrays), ``test_accuracy`` (fraction) and ``loss``
        (nats) arrays of the measurements, and ``max_abs_w``.
    """
    config = SimConfig(**point["config"])
    trace = train_network(config, spec=CURVE_SPEC).trace
    return {
        "step": trace.step, "samples": trace.samples, "cycles": trace.cycles,
        "test_accuracy": trace.test_accuracy[0], "loss": trace.loss[0],
        "max_abs_w": float(trace.max_abs_w[0]),
    }


def compute(quick: bool = False, jobs: int | None = None, scheduler=None, cache=True) -> dict:
    """Train every run for every seed (one cached sweep) and average over the seeds.

    Returns
    -------
    dict
        ``settings`` (:class:`DigitsSettings`), ``curves``: per run label a dict of ``samples``,
        ``cycles``, ``accuracy_mean``, ``accuracy_std``, ``loss_mean``, ``loss_std`` arrays.
    """
    s = settings(quick)
    plan = [(run, seed) for run in runs() for seed in range(s.seeds)]
    points = [digits_point(s, run.algorithm, run.mode, run.stages, seed) for run, seed in plan]
    sweep = run_sweep(digits_run, points, jobs=jobs, scheduler=scheduler, cache=cache,
                      desc=NAME)
    sharp = run_sweep(sharpness_run, [{"config": SimConfig(**p["config"]).to_dict(),
                                       "format": STUDY_FORMAT} for p in points[:s.seeds]],
                      jobs=jobs, scheduler=scheduler, cache=cache, desc=f"{NAME} sharpness")
    curves = {}
    for run in runs():
        results = [r for (which, _), r in zip(plan, sweep.results, strict=True) if which == run]
        acc = np.stack([r["test_accuracy"] for r in results])
        loss = np.stack([r["loss"] for r in results])
        ddof = 1 if len(results) > 1 else 0
        curves[run.label] = {
            "run": run, "samples": np.asarray(results[0]["samples"]),
            "cycles": np.asarray(results[0]["cycles"]),
            "accuracy_mean": acc.mean(axis=0), "accuracy_std": acc.std(axis=0, ddof=ddof),
            "loss_mean": loss.mean(axis=0), "loss_std": loss.std(axis=0, ddof=ddof),
        }
    return {"settings": s, "curves": curves,
            "lambda_max": [float(r["lambda_max"]) for r in sharp.results]}


def table(data: dict) -> list[dict[str, object]]:
    """One row per plotted point: run, algorithm, mode, stages, samples, cycles, means and stds."""
    rows = []
    for label, c in data["curves"].items():
        run = c["run"]
        for i in range(len(c["samples"])):
            rows.append({
                "run": label, "algorithm": run.algorithm, "mode": run.mode, "stages": run.stages,
                "samples": int(c["samples"][i]), "cycles": int(c["cycles"][i]),
                "test_accuracy_mean": repr(float(c["accuracy_mean"][i])),
                "test_accuracy_std": repr(float(c["accuracy_std"][i])),
                "loss_mean": repr(float(c["loss_mean"][i])),
                "loss_std": repr(float(c["loss_std"][i])),
            })
    return rows


_STYLE = {"none": "-", "sync": "--", "async": "-."}


def plot(data: dict) -> Figure:
    """2 x 2 panels: accuracy and loss (rows) against samples and cycles (columns)."""
    s = data["settings"]
    with use_style():
        fig = new_figure(figsize=(7.0, 5.2), layout="constrained")
        axes = fig.subplots(2, 2, sharey="row")
        for i, (label, c) in enumerate(data["curves"].items()):
            run = c["run"]
            for row, key in enumerate(("accuracy", "loss")):
                mean, std = c[f"{key}_mean"], c[f"{key}_std"]
                for col, x in enumerate((c["samples"], c["cycles"])):
                    ax = axes[row, col]
                    ax.plot(x, mean, _STYLE[run.mode], color=f"C{i}",
                            label=label if row == col == 0 else None)
                    ax.fill_between(x, mean - std, mean + std, color=f"C{i}", alpha=0.15,
                                    linewidth=0)
        for col, xlabel in enumerate(("training samples", "clock cycles")):
            axes[1, col].set_xlabel(xlabel)
        axes[0, 0].set_ylabel("test accuracy")
        axes[1, 0].set_ylabel("training loss (nats)")
        # the synchronous runs have the iterates of analog SGD without pipeline: against samples
        # their curves lie on top of it, so say so where it would otherwise look missing
        axes[0, 0].set_title("SP curves coincide with analog SGD, no pipeline", fontsize=7)
        axes[0, 1].set_title("same runs, against clock cycles", fontsize=7)
        device = s.device if s.tau is None else f"{s.device} tau = {s.tau:g}"
        fig.suptitle(
            f"{s.problem} on digits: b = {s.micro_batch_size}, B = {s.micro_batches}, "
            f"lr = {s.lr:g} (async {s.async_lr:g}), device {device}, "
            f"mean +- std of {s.seeds} seeds", fontsize=8,
        )
        fig.legend(loc="outside lower center", ncols=3)
    return fig


def caption(rows: Sequence[Mapping]) -> str:
    """From the CSV rows: final accuracy of each run, and the early loss spike of the mini-batch
    runs with its cause (module docstring)."""
    final, peak = {}, {}
    for row in rows:
        final[row["run"]] = float(row["test_accuracy_mean"])
        loss = float(row["loss_mean"])
        if row["mode"] == "none" and loss > peak.get(row["run"], (-1.0, 0))[0]:
            peak[row["run"]] = (loss, int(row["samples"]))
    order = sorted(final, key=final.get, reverse=True)
    parts = ", ".join(f"{label} {100 * final[label]:.1f}%" for label in order)
    text = ("Test accuracy of the digits residual MLP against samples and clock cycles; "
            f"final accuracy: {parts}.")
    starts = {row["run"]: float(row["loss_mean"]) for row in reversed(rows)
              if row["mode"] == "none" and int(row["samples"]) == 0}
    spikes = {run: value for run, value in peak.items()
              if value[1] > 0 and value[0] > starts.get(run, np.inf)}
    if spikes:
        run, (value, samples) = max(spikes.items(), key=lambda item: item[1][0])
        text += (f" The early rise of the mini-batch runs' training loss (to {value:.1f} nats at "
                 f"{samples} samples, {run}; SP has the same iterates) comes from the step, "
                 "not a bug: lr exceeds 2/lambda_max of the initial network (lambda_max in the "
                 "manifest), the loss rises until the curvature has dropped, digital SGD does "
                 "the same, and a step of a quarter of it does not.")
    return text


def manifest(data: dict, quick: bool) -> dict:
    """The figure's JSON manifest: configuration and seeds (``write_figure`` adds the rest)."""
    s = data["settings"]
    return {
        "config": {**asdict(s), "quick": quick, "async_lr": s.async_lr,
                   "async_updates": s.async_updates,
                   "network": asdict(CURVE_SPEC),
                   "runs": [asdict(run) for run in runs()]},
        "seed": list(range(s.seeds)),
        "initial_sharpness": {
            "lambda_max": data["lambda_max"],
            "stable_step_limit": [2.0 / v for v in data["lambda_max"]],
            "what": "largest Hessian eigenvalue of the training loss at each seed's initial "
                    "weights (simulate.verification.tuning.initial_sharpness); full-batch descent "
                    "is stable near W_0 for lr < 2 / lambda_max",
        },
    }


def write(out_dir: str | Path, quick: bool = False, jobs: int | None = None, scheduler=None,
          cache=True) -> list[Path]:
    """Compute, plot and save the figure; return the paths written (PNG, PDF, CSV, manifest)."""
    return write_figure(sys.modules[__name__], out_dir, quick, jobs=jobs, scheduler=scheduler,
                        cache=cache)
