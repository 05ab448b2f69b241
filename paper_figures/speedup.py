r"""Figure ``speedup``: speedup over training without pipeline against the number of stages.

Throughput, and time to a target with the step **tuned** for every configuration (issue 15; the
protocol is :mod:`simulate.verification.tuning`), with ``B = 8`` micro-batches of ``b = 4`` samples:

1. **Throughput** (cycles per sample), from the discrete-event timelines of
   :mod:`simulate.pipeline.timeline` (measured cycles, never the closed forms): synchronous, one
   mini-batch of ``B``, :math:`S_{\mathrm{SP}} = MB/(B + M - 1)`; asynchronous, ``N``
   micro-batches without flush, :math:`S_{\mathrm{AP}} = MN/(N + M - 1) \to M`.
2. **Time to target**, per workload (network, data) of :attr:`SpeedupSettings.workloads`: every
   arm (mini-batch SGD without pipeline, ``none``; the asynchronous pipeline at every ``M``) is run
   at every step of one log-spaced grid with the same sample budget and seeds; for every target
   (test accuracies and a training loss) the step with the smallest median time on the
   validation images is chosen and its time on the test images reported
   (:func:`simulate.verification.tuning.tune`). Two baselines, both at their own tuned step:

   - **own**: the pipeline's non-pipelined counterpart. Synchronous: mini-batch SGD (same
     iterates; :math:`2MBK` cycles against :math:`2(B + M - 1)K`). Asynchronous: micro-batch SGD
     without pipeline (the asynchronous run at ``M = 1``, :math:`2MK'_1` cycles against
     :math:`2(K'_M + M - 1)`);
   - **minibatch**: mini-batch SGD (``B b`` samples per update) counted on ``M`` stages run
     one after another, :math:`2MBK` cycles: the same baseline for both modes, so "speedup over
     training without pipeline" means one thing. For the synchronous pipeline the two coincide,
     and its speedup is exactly :math:`MB/(B + M - 1)` at every target (same runs, interval of
     zero width).

   The speedup is the ratio of median times in cycles; the interval a paired bootstrap over
   seeds (:func:`simulate.verification.tuning.speedup_interval`); seeds that miss a target are
   censored at the budget and counted (``reached``); a ratio whose median is censored is marked a
   bound (``status``).
3. **Sensitivity** of the asynchronous speedup at ``M = 8`` (over its own counterpart, first
   workload, :attr:`SpeedupSettings.sensitivity_target`): one row per :class:`Variant` (the step
   fixed or tuned, micro-batch size, device, pulse type, write semantics), each a change of
   :class:`~simulate.config.SimConfig` fields with the reason it moves the speedup; the
   ``write`` column names each row's write semantics (``SimConfig.write``).

Every training run goes through one cached sweep (:func:`simulate.execution.sweep.run_sweep` of
:func:`simulate.verification.tuning.study_run`, one point per arm and step with all its seeds), so
``--jobs``/``--scheduler`` scale it out. The CSV holds every number (columns :data:`COLUMNS`;
``kind`` = ``throughput``, ``time-to-target``, ``sensitivity``); the manifest records the
protocol: grid, budgets, seeds, targets, the chosen steps and every median of the selection.
The manifest also holds the tables in Markdown (``summary_markdown``: every time-to-target
speedup with its CI and chosen steps; ``sensitivity_markdown``).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from simulate import SimConfig, build_timeline, cycles_after, run_sweep
from simulate.problems import CURVE_SPEC, VALIDATION_SIZE, train_rows
from simulate.verification import (
    BOOTSTRAP_RESAMPLES,
    CI_LEVEL,
    Target,
    TimeToTarget,
    log_grid,
    speedup_interval,
    study_point,
    study_run,
    tune,
)
from theory import ParameterError, check_range, markdown_table

from .common import new_figure, use_style, write_figure

__all__ = [
    "COLUMNS", "DESCRIPTION", "NAME", "SpeedupSettings", "Variant", "Workload", "caption",
    "compute", "manifest", "plot", "sensitivity_markdown", "settings", "summary_markdown",
    "table", "throughput_speedup", "write",
]

NAME = "speedup"
DESCRIPTION = ("speedup over no pipeline vs stages (B = 8): throughput, and time to target "
               "with tuned steps on digits (CIs over seeds), and its sensitivity at M = 8")
#: whether compute/write take the sweep keywords jobs, scheduler, cache
USES_SWEEP = True

#: the CSV's columns (every row has all of them; blank where they do not apply)
COLUMNS = ("kind", "workload", "mode", "baseline", "stages", "target", "speedup", "ci_low",
           "ci_high", "status", "reached", "baseline_reached", "seeds", "median_cycles",
           "baseline_median_cycles", "step", "baseline_step", "variant", "write", "reason")
#: the write semantics of a row that does not set ``write`` (``SimConfig``'s default)
DEFAULT_WRITE = "batch-mean"


@dataclass(frozen=True)
class Workload:
    """A (network, data) pair of the study.

    Parameters
    ----------
    label : str
    problem : str
        A network problem of :data:`simulate.problems.sizes.NETWORK_PROBLEMS`.
    data : str
        A data set with validation images (``digits-holdout``, ``digits-augmented``).
    """

    label: str
    problem: str
    data: str


@dataclass(frozen=True)
class Variant:
    """One row of the sensitivity table: a change of the asynchronous runs and why it matters.

    Parameters
    ----------
    label : str
    changes : tuple of (field, value)
        :class:`~simulate.config.SimConfig` fields set for both ``M = 1`` and ``M = 8`` (none:
        the reference runs of the first workload).
    reason : str
        One sentence: why the change moves the speedup.
    fixed_step : float, optional
        Use this grid step at both stage counts instead of tuning.
    """

    label: str
    changes: tuple[tuple[str, object], ...] = ()
    reason: str = ""
    fixed_step: float | None = None

    @property
    def write(self) -> str:
        """The write semantics the row ran with (``SimConfig.write``; :data:`DEFAULT_WRITE`)."""
        return str(dict(self.changes).get("write", DEFAULT_WRITE))


_REFERENCE_REASON = ("the reference: analog soft bounds tau = 1, b = 4, expected update, the "
                     "step tuned on the grid at M = 1 and at M = 8")
_VARIANTS = (
    Variant("tuned step (reference)", reason=_REFERENCE_REASON),
    Variant("fixed step lr/B = 0.00625", fixed_step=0.00625,
            reason="one step for both: the M = 1 baseline is then not at its best step, so the "
                   "ratio measures the step as much as the pipeline"),
    Variant("micro-batch b = 1", (("micro_batch_size", 1),),
            reason="one sample per update: the delay of M - 1 updates spans fewer samples, but "
                   "each update is noisier"),
    Variant("micro-batch b = 16", (("micro_batch_size", 16),),
            reason="fewer updates per sample: the same delay of M - 1 updates spans more "
                   "samples"),
    Variant("ideal device (digital SGD)", (("algorithm", "digital"),),
            reason="no device response: only the staleness separates M = 8 from M = 1"),
    Variant("soft bounds tau = 2", (("tau", 2.0),),
            reason="a wider range makes the response more symmetric near the weights in use: "
                   "less device bias on top of the stale gradients"),
    Variant("soft bounds tau = 4", (("tau", 4.0),),
            reason="wider still: closer to the ideal device"),
    Variant("ReRAM preset", (("device", "reram-softbounds"), ("tau", None)),
            reason="an asymmetric device with a coarse pulse and noise: its bias and "
                   "granularity act at both M and limit the useful step"),
    Variant("pulsed, deterministic", (("update", "pulsed"), ("pulse_type", "deterministic")),
            reason="every update is rounded to whole pulses of dw_min: increments below a pulse "
                   "survive only at random, more so at the small steps staleness asks for"),
    Variant("pulsed, stochastic", (("update", "pulsed"), ("pulse_type", "stochastic")),
            reason="aihwkit's bit-train coincidences add count noise on top of the rounding"),
    Variant("per-sample writes", (("write", "per-sample"),),
            reason="each of the b samples is its own analog write: the device bias of one "
                   "sample's noise is not averaged over the micro-batch (Corollary 3PS), at "
                   "M = 1 and M = 8 alike"),
)


def _default_workloads() -> tuple[Workload, ...]:
    return (Workload("residual MLP, digits", "digits-resmlp", "digits-holdout"),
            Workload("residual MLP, augmented digits", "digits-resmlp", "digits-augmented"))


@dataclass(frozen=True)
class SpeedupSettings:
    """Settings of the speedup study.

    Parameters
    ----------
    stages : tuple of int
        Stage counts ``M`` (each in [1, 16], the residual MLP's layers; 1 included).
    micro_batches, micro_batch_size : int
        ``B`` (the mini-batch of the none runs and of the throughput) and ``b``.
    grid : tuple of float
        The log-spaced steps every arm is run at.
    seeds : int
        Seeds of every arm (ensemble members ``0 .. seeds - 1``).
    budget_samples : int
        Training samples of every run (a multiple of every samples-per-update used).
    log_samples : int
        Samples between measurements (the resolution of the time to target).
    accuracy_targets : tuple of float
        Test-accuracy targets, each in (0, 1).
    loss_target : float
        Training-loss target (nats).
    workloads : tuple of Workload
    algorithm, device, tau
        Of every run but the variants that change them.
    async_micro_batches : int
        ``N`` of the asynchronous throughput timeline.
    sensitivity_stages : int
        The ``M`` of the sensitivity table (one of ``stages``).
    sensitivity_seeds : int
        Seeds of the variants' runs (the reference rows use ``seeds``).
    sensitivity_budget_samples : int
        Training samples of the variants' runs (at most ``budget_samples``); the reference rows
        read the main runs up to the same budget, so every row is censored alike.
    sensitivity_target : float
        The test-accuracy target of the sensitivity table (one of ``accuracy_targets``).
    variants : tuple of Variant
    write : str
        Write semantics of every run (``SimConfig.write``) unless a variant sets its own;
        ``batch-mean`` (the default) leaves every run's config unchanged.
    """

    stages: tuple[int, ...] = (1, 2, 4, 8, 12, 16)
    micro_batches: int = 8
    micro_batch_size: int = 4
    grid: tuple[float, ...] = log_grid(0.00625, 3, 3)
    seeds: int = 10
    budget_samples: int = 12800
    log_samples: int = 128
    accuracy_targets: tuple[float, ...] = (0.7, 0.8, 0.85, 0.9)
    loss_target: float = 0.3
    workloads: tuple[Workload, ...] = field(default_factory=_default_workloads)
    algorithm: str = "analog"
    device: str = "softbounds"
    tau: float | None = 1.0
    async_micro_batches: int = 800
    sensitivity_stages: int = 8
    sensitivity_seeds: int = 5
    sensitivity_budget_samples: int = 6400
    sensitivity_target: float = 0.85
    variants: tuple[Variant, ...] = _VARIANTS
    write: str = DEFAULT_WRITE

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
        check_range("micro_batches", self.micro_batches, 1, None, integer=True)
        check_range("micro_batch_size", self.micro_batch_size, 1, None, integer=True)
        if not self.grid:
            raise ParameterError("grid=() is empty; valid: one or more steps > 0")
        for lr in self.grid:
            check_range("grid", lr, 0, None, low_open=True)
        check_range("seeds", self.seeds, 1, None, integer=True)
        check_range("sensitivity_seeds", self.sensitivity_seeds, 1, None, integer=True)
        check_range("log_samples", self.log_samples, 1, None, integer=True)
        check_range("budget_samples", self.budget_samples, 1, None, integer=True)
        check_range("sensitivity_budget_samples", self.sensitivity_budget_samples, 1,
                    self.budget_samples, integer=True)
        for b in {self.micro_batch_size, self.mini_batch, *self._variant_sizes()}:
            for name in ("budget_samples", "log_samples", "sensitivity_budget_samples"):
                if getattr(self, name) % b:
                    raise ParameterError(
                        f"{name}={getattr(self, name)} is out of range; valid: a multiple of "
                        f"every samples-per-update of the study, {b} among them"
                    )
        if not self.accuracy_targets:
            raise ParameterError("accuracy_targets=() is empty; valid: fractions in (0, 1)")
        for t in self.accuracy_targets:
            check_range("accuracy_targets", t, 0, 1, low_open=True, high_open=True)
        check_range("loss_target", self.loss_target, 0, None, low_open=True)
        if not self.workloads:
            raise ParameterError("workloads=() is empty; valid: one or more Workload")
        if self.sensitivity_stages not in self.stages:
            raise ParameterError(f"sensitivity_stages={self.sensitivity_stages} is not one of "
                                 f"stages={self.stages!r}")
        if self.sensitivity_target not in self.accuracy_targets:
            raise ParameterError(f"sensitivity_target={self.sensitivity_target:g} is not one of "
                                 f"accuracy_targets={self.accuracy_targets!r}")
        for v in self.variants:
            if v.fixed_step is not None and v.fixed_step not in self.grid:
                raise ParameterError(f"fixed_step={v.fixed_step:g} of variant {v.label!r} is "
                                     f"not on grid={self.grid!r}")
        check_range("async_micro_batches", self.async_micro_batches, 1, None, integer=True)

    def _variant_sizes(self) -> set[int]:
        return {int(value) for v in self.variants for name, value in v.changes
                if name == "micro_batch_size"}

    @property
    def mini_batch(self) -> int:
        """``B b``, samples per update of the mini-batch runs."""
        return self.micro_batches * self.micro_batch_size

    @property
    def targets(self) -> tuple[Target, ...]:
        """Every target: the accuracies, then the loss."""
        return (*(Target("accuracy", t) for t in self.accuracy_targets),
                Target("loss", self.loss_target))


def settings(quick: bool, write: str = DEFAULT_WRITE) -> SpeedupSettings:
    """Full: the defaults of :class:`SpeedupSettings` (two workloads, 7 steps, 10 seeds, every
    variant). Quick: stages {1, 2, 4, 8}, 3 steps, 3 seeds, half the budget, the first workload,
    the reference, fixed-step and ideal-device rows. ``write`` is :attr:`SpeedupSettings.write`."""
    if quick:
        return SpeedupSettings(write=write,
            stages=(1, 2, 4, 8), grid=log_grid(0.0125, 1, 1), seeds=3, budget_samples=6400,
            workloads=_default_workloads()[:1], sensitivity_seeds=3,
            variants=(_VARIANTS[0], replace(_VARIANTS[1], fixed_step=0.00625,
                                            label="fixed step 0.00625"), _VARIANTS[4]),
        )
    return SpeedupSettings(write=write)


def throughput_speedup(mode: str, stages: int, micro_batches: int) -> float:
    """Measured throughput speedup of ``mode`` over no pipeline (:attr:`Timeline.speedup`).

    ``micro_batches`` is ``B`` (one mini-batch) for ``sync`` and ``N`` for ``async``. Returned as
    a float; the timeline's exact value is a fraction.
    """
    return float(build_timeline(mode, stages, micro_batches).speedup)


# ------------------------------------------------------------------------------------------------
# the plan of runs


def _config(s: SpeedupSettings, w: Workload, mode: str, stages: int, lr: float, seeds: int,
            changes: Sequence[tuple[str, object]] = (), budget: int | None = None) -> SimConfig:
    fields = {"problem": w.problem, "data": w.data, "mode": mode, "algorithm": s.algorithm,
              "stages": stages, "micro_batch_size": s.micro_batch_size, "device": s.device,
              "tau": s.tau, "lr": lr, "seeds": seeds, "seed": 0}
    if s.write != DEFAULT_WRITE:
        fields["write"] = s.write
    fields.update(dict(changes))
    asynchronous = mode == "async"
    fields["micro_batches"] = 1 if asynchronous else s.micro_batches
    per_update = fields["micro_batch_size"] * fields["micro_batches"]
    budget = s.budget_samples if budget is None else budget
    return SimConfig(**fields, steps=budget // per_update,
                     log_every=s.log_samples // per_update)


def _plan(s: SpeedupSettings) -> dict:
    """Arm key -> (mode, stages, seeds, changes, workload, budget); an arm is run at every grid
    step."""
    arms = {}
    for w in s.workloads:
        arms[w.label, "none", 1, ""] = ("none", 1, s.seeds, (), w, s.budget_samples)
        for m in s.stages:
            arms[w.label, "async", m, ""] = ("async", m, s.seeds, (), w, s.budget_samples)
    first = s.workloads[0]
    for v in s.variants:
        if v.changes:
            for m in sorted({1, s.sensitivity_stages}):
                arms[first.label, "async", m, v.label] = (
                    "async", m, s.sensitivity_seeds, v.changes, first,
                    s.sensitivity_budget_samples)
    return arms


def _truncated(result: Mapping, samples: int) -> dict:
    """A :func:`~simulate.verification.tuning.study_run` result cut to the logging points within
    ``samples`` training samples (the same run with a smaller budget: its first points are the
    same)."""
    keep = np.asarray(result["samples"]) <= samples
    out = dict(result)
    for name in ("step", "samples"):
        out[name] = np.asarray(result[name])[keep]
    for name in ("test_accuracy", "validation_accuracy", "loss"):
        out[name] = np.asarray(result[name])[:, keep]
    return out


def _counted(t: TimeToTarget, mode: str, stages: int, micro_batches: int) -> TimeToTarget:
    """The same updates counted in cycles of another schedule (none/sync share iterates)."""
    return TimeToTarget(updates=t.updates, reached=t.reached,
                        cycles=np.asarray(cycles_after(mode, stages, micro_batches, t.updates),
                                          dtype=np.int64))


def _row(**values) -> dict:
    row = dict.fromkeys(COLUMNS, "")
    unknown = set(values) - set(COLUMNS)
    if unknown:
        raise KeyError(f"unknown CSV columns {sorted(unknown)}")
    row.update(values)
    return row


def _speedup_row(kind, workload, mode, baseline, stages, target, base, arm, base_step, arm_step,
                 **extra) -> dict:
    est = speedup_interval(base, arm)
    return _row(kind=kind, workload=workload, mode=mode, baseline=baseline, stages=stages,
                target=target.label, speedup=est.value, ci_low=est.low, ci_high=est.high,
                status=est.status, reached=arm.fraction, baseline_reached=base.fraction,
                seeds=int(arm.cycles.size), median_cycles=arm.median,
                baseline_median_cycles=base.median, step=arm_step, baseline_step=base_step,
                **extra)


def compute(quick: bool = False, jobs: int | None = None, scheduler=None, cache=True,
            write: str = DEFAULT_WRITE, study: SpeedupSettings | None = None) -> dict:
    """Throughput from the timelines; one cached sweep of every arm at every step; tuning.

    ``study`` replaces ``settings(quick)`` (the ``sp-ap-writes`` figure runs the main arms
    only); ``write``, when not the default, replaces its :attr:`SpeedupSettings.write`.

    Returns
    -------
    dict
        ``settings``; ``rows`` (the CSV rows, :data:`COLUMNS`); ``chosen``: the chosen steps and
        the selection medians per arm and target; ``runs``: per arm the seeds that diverged and
        whether a run was pinned; ``sweep``: points computed and cached.
    """
    s = settings(quick) if study is None else study
    s = s if write == DEFAULT_WRITE else replace(s, write=write)
    b, big_b = s.micro_batch_size, s.micro_batches
    rows = []
    for m in s.stages:
        for mode, count in (("sync", big_b), ("async", s.async_micro_batches)):
            rows.append(_row(kind="throughput", mode=mode, stages=m,
                             speedup=throughput_speedup(mode, m, count)))
        rows.append(_row(kind="throughput", mode="linear", stages=m, speedup=float(m)))

    arms = _plan(s)
    plan = [(key, lr) for key in arms for lr in s.grid]
    points = [study_point(_config(s, arms[key][4], arms[key][0], arms[key][1], lr, arms[key][2],
                                  arms[key][3], arms[key][5])) for key, lr in plan]
    sweep = run_sweep(study_run, points, jobs=jobs, scheduler=scheduler, cache=cache, desc=NAME)
    results = {key: {} for key in arms}
    for (key, lr), result in zip(plan, sweep.results, strict=True):
        results[key][lr] = result

    chosen = []

    def tuned(key, target, mode, stages, micro_batches, fixed=None, budget=None):
        runs = results[key] if fixed is None else {fixed: results[key][fixed]}
        if budget is not None:
            runs = {lr: _truncated(result, budget) for lr, result in runs.items()}
        t = tune(runs, target, mode, stages, micro_batches)
        workload, _, m, variant = key
        chosen.append({"workload": workload, "mode": key[1], "stages": m, "variant": variant,
                       "target": target.label, "step": t.step, "fixed": fixed is not None,
                       "selection": [{"step": lr, "median_cycles": med, "reached": frac}
                                     for lr, (med, frac) in t.selection.items()]})
        return t

    for w in s.workloads:
        for target in s.targets:
            mb = tuned((w.label, "none", 1, ""), target, "none", 1, big_b)
            own = tuned((w.label, "async", 1, ""), target, "async", 1, 1)
            for m in s.stages:
                base = _counted(mb.time, "none", m, big_b)
                sync = _counted(mb.time, "sync", m, big_b)
                for baseline in ("own", "minibatch"):
                    rows.append(_speedup_row("time-to-target", w.label, "sync", baseline, m,
                                             target, base, sync, mb.step, mb.step))
                arm = own if m == 1 else tuned((w.label, "async", m, ""), target, "async", m, 1)
                rows.append(_speedup_row("time-to-target", w.label, "async", "own", m, target,
                                         _counted(own.time, "none", m, 1), arm.time, own.step,
                                         arm.step))
                rows.append(_speedup_row("time-to-target", w.label, "async", "minibatch", m,
                                         target, base, arm.time, mb.step, arm.step))

    first, m8 = s.workloads[0], s.sensitivity_stages
    target = Target("accuracy", s.sensitivity_target)
    for v in s.variants:
        tag = v.label if v.changes else ""
        cut = s.sensitivity_budget_samples
        low = tuned((first.label, "async", 1, tag), target, "async", 1, 1, v.fixed_step, cut)
        high = (low if m8 == 1 else
                tuned((first.label, "async", m8, tag), target, "async", m8, 1, v.fixed_step, cut))
        rows.append(_speedup_row("sensitivity", first.label, "async", "own", m8, target,
                                 _counted(low.time, "none", m8, 1), high.time, low.step,
                                 high.step, variant=v.label, write=v.write, reason=v.reason))

    runs = [{"workload": key[0], "mode": key[1], "stages": key[2], "variant": key[3], "step": lr,
             "diverged_seeds": int(np.sum(results[key][lr]["diverged"] >= 0)),
             "pinned": bool(results[key][lr]["pinned"])} for key, lr in plan]
    return {"settings": s, "rows": rows, "chosen": chosen, "runs": runs,
            "sweep": {"points": len(points), "computed": sweep.computed, "cached": sweep.cached},
            "updates_per_run": {"none": s.budget_samples // s.mini_batch,
                                "async": s.budget_samples // b}}


def table(data: dict) -> list[dict[str, object]]:
    """The CSV rows (floats written with ``repr``, so the numbers round-trip exactly)."""
    return [{k: repr(v) if isinstance(v, float) else v for k, v in row.items()}
            for row in data["rows"]]


# ------------------------------------------------------------------------------------------------
# drawing


_COLORS = {"sync": "C0", "async": "C1", "async-minibatch": "C2", "linear": "0.6"}


def _value(row, name) -> float:
    value = row[name]
    return float("nan") if value == "" else float(value)


def _bars(ax, x, width, offset, rows, color, label):
    heights = np.array([_value(r, "speedup") for r in rows])
    low = np.array([_value(r, "ci_low") for r in rows]) if rows and rows[0]["ci_low"] != "" \
        else heights
    high = np.array([_value(r, "ci_high") for r in rows]) if rows and rows[0]["ci_high"] != "" \
        else heights
    errors = np.vstack([np.clip(heights - low, 0, None), np.clip(high - heights, 0, None)])
    ax.bar(x + offset, heights, width, yerr=errors, capsize=2, color=color, label=label,
           error_kw={"linewidth": 0.8})
    for xi, row, h in zip(x, rows, heights, strict=True):
        if row["status"] not in ("", "ok"):
            ax.annotate("*", (xi + offset, np.nan_to_num(h)), ha="center", va="bottom",
                        fontsize=7)


def plot(data: dict) -> Figure:
    """Throughput; time to target per workload (the sensitivity target); sensitivity at M = 8."""
    s, rows = data["settings"], data["rows"]
    label = f"{100 * s.sensitivity_target:g}% accuracy"
    x = np.arange(len(s.stages))
    panels = 2 + len(s.workloads)
    with use_style():
        fig = new_figure(figsize=(7.0, 2.6 * ((panels + 1) // 2)), layout="constrained")
        axes = fig.subplots((panels + 1) // 2, 2).ravel()
        ax = axes[0]
        for j, mode in enumerate(("sync", "async", "linear")):
            picked = [r for r in rows if r["kind"] == "throughput" and r["mode"] == mode]
            _bars(ax, x, 0.27, (j - 1) * 0.27, picked, _COLORS[mode], None)
        ax.set_title(f"throughput (B = {s.micro_batches}, async N = {s.async_micro_batches})",
                     fontsize=7)
        for ax, w in zip(axes[1:], s.workloads, strict=False):
            series = (("sync", "own", "sync (SP; both baselines)", "sync"),
                      ("async", "own", "async (AP) / own counterpart", "async"),
                      ("async", "minibatch", "async (AP) / mini-batch SGD", "async-minibatch"))
            for j, (mode, baseline, name, color) in enumerate(series):
                picked = [r for r in rows if r["kind"] == "time-to-target"
                          and r["workload"] == w.label and r["mode"] == mode
                          and r["baseline"] == baseline and r["target"] == label]
                _bars(ax, x, 0.2, (j - 1.5) * 0.2, picked, _COLORS[color], name)
            ax.bar(x + 1.5 * 0.2, [float(m) for m in s.stages], 0.2, color=_COLORS["linear"],
                   label="linear (= M)")
            ax.set_title(f"time to {label}, tuned steps: {w.label}", fontsize=7)
        for ax in axes[:1 + len(s.workloads)]:
            ax.set_xticks(x, [str(m) for m in s.stages])
            ax.set_xlabel("stages M")
            ax.set_ylabel("speedup over no pipeline")
        ax = axes[1 + len(s.workloads)]
        sens = [r for r in rows if r["kind"] == "sensitivity"]
        y = np.arange(len(sens))
        values = np.array([_value(r, "speedup") for r in sens])
        errors = np.vstack([np.clip(values - [_value(r, "ci_low") for r in sens], 0, None),
                            np.clip([_value(r, "ci_high") for r in sens] - values, 0, None)])
        ax.barh(y, values, xerr=errors, color=_COLORS["async"], capsize=2,
                error_kw={"linewidth": 0.8})
        ax.axvline(float(s.sensitivity_stages), color=_COLORS["linear"], linewidth=0.8)
        ax.set_yticks(y, [r["variant"] for r in sens], fontsize=6)
        ax.invert_yaxis()
        ax.set_xlabel(f"AP speedup at M = {s.sensitivity_stages} / own counterpart")
        ax.set_title(f"sensitivity (time to {label}; line: linear)", fontsize=7)
        for ax in axes[2 + len(s.workloads):]:
            ax.set_visible(False)
        handles, labels = axes[1].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=2, fontsize=7)
        fig.suptitle(f"median over {s.seeds} seeds (sensitivity: {s.sensitivity_seeds}), "
                     f"{100 * CI_LEVEL:g}% bootstrap CI; * = a median censored at the budget "
                     "(a bound)", fontsize=7)
    return fig


def caption(rows: Sequence[Mapping]) -> str:
    """One sentence from the CSV rows: throughput and tuned time-to-target at the largest M."""
    stages = max(int(r["stages"]) for r in rows if r["kind"] == "throughput")

    def find(**want):
        return next(r for r in rows if all(str(r[k]) == str(v) for k, v in want.items()))

    thr = {mode: float(find(kind="throughput", mode=mode, stages=stages)["speedup"])
           for mode in ("sync", "async")}
    tta = [r for r in rows if r["kind"] == "time-to-target" and int(r["stages"]) == stages
           and r["baseline"] == "minibatch"]
    target = "85% accuracy" if any(r["target"] == "85% accuracy" for r in tta) else tta[0]["target"]
    workload = tta[0]["workload"]
    sync = find(kind="time-to-target", workload=workload, mode="sync", baseline="minibatch",
                stages=stages, target=target)
    asy = find(kind="time-to-target", workload=workload, mode="async", baseline="minibatch",
               stages=stages, target=target)
    own = find(kind="time-to-target", workload=workload, mode="async", baseline="own",
               stages=stages, target=target)
    return (f"Speedup over training without pipeline at {stages} stages: throughput "
            f"{thr['sync']:.2f}x (sync) and {thr['async']:.2f}x (async); time to {target} "
            f"({workload}, steps tuned) {float(sync['speedup']):.2f}x (sync) and "
            f"{float(asy['speedup']):.2f}x [{float(asy['ci_low']):.2f}, "
            f"{float(asy['ci_high']):.2f}] (async over mini-batch SGD; "
            f"{float(own['speedup']):.2f}x over its own counterpart), against linear {stages}x.")


def sensitivity_markdown(rows: Sequence[Mapping]) -> str:
    """The sensitivity rows as a Markdown table (variant, steps, speedup and CI, reached, why)."""
    sens = [r for r in rows if r["kind"] == "sensitivity"]
    stages = max((int(r["stages"]) for r in sens), default=8)
    head = ("variant", "write", "step M=1", f"step M={stages}", "speedup [CI]", "reached M=1 / "
            f"M={stages}", "why")
    body = [(r["variant"], r["write"], f"{float(r['baseline_step']):g}", f"{float(r['step']):g}",
             f"{float(r['speedup']):.2f} [{float(r['ci_low']):.2f}, {float(r['ci_high']):.2f}]"
             + ("" if r["status"] == "ok" else f" ({r['status']})"),
             f"{float(r['baseline_reached']):.0%} / {float(r['reached']):.0%}", r["reason"])
            for r in sens]
    return markdown_table(head, body)


def summary_markdown(rows: Sequence[Mapping]) -> str:
    """The time-to-target speedups as Markdown, one table per workload: a row per target and
    (mode, baseline), a column per ``M``, each cell ``speedup [CI]`` (``*``: a bound, ``r%``:
    the arm's seeds that reached the target when not all did), and the chosen steps."""
    tta = [r for r in rows if r["kind"] == "time-to-target"]
    stages = sorted({int(r["stages"]) for r in tta})
    parts = []
    for workload in dict.fromkeys(r["workload"] for r in tta):
        body = []
        for target in dict.fromkeys(r["target"] for r in tta):
            for mode, baseline in (("async", "own"), ("async", "minibatch"), ("sync", "own")):
                cells, steps = [], []
                for m in stages:
                    r = next(r for r in tta if r["workload"] == workload and r["target"] == target
                             and r["mode"] == mode and r["baseline"] == baseline
                             and int(r["stages"]) == m)
                    cell = (f"{float(r['speedup']):.2f} [{float(r['ci_low']):.2f}, "
                            f"{float(r['ci_high']):.2f}]")
                    cell += "" if r["status"] == "ok" else "*"
                    reached = float(r["reached"])
                    cell += "" if reached == 1 else f" {reached:.0%}"
                    cells.append(cell)
                    steps.append(f"{float(r['step']):g}")
                name = {"own": "own counterpart", "minibatch": "mini-batch SGD"}[baseline]
                body.append((target, f"{mode} / {name}", *cells, ", ".join(steps)))
        head = ("target", "speedup over", *(f"M = {m}" for m in stages), "chosen steps")
        parts.append(f"**{workload}**\n\n{markdown_table(head, body)}")
    return "\n\n".join(parts)


def manifest(data: dict, quick: bool) -> dict:
    """The figure's JSON manifest: the protocol, the chosen steps, the runs."""
    s = data["settings"]
    config = asdict(s)
    config["targets"] = [asdict(t) | {"label": t.label} for t in s.targets]
    return {
        "config": {**config, "quick": quick, "network": asdict(CURVE_SPEC)},
        "seed": list(range(s.seeds)),
        "protocol": {
            "grid": list(s.grid), "budget_samples": s.budget_samples,
            "budget_updates": data["updates_per_run"], "log_samples": s.log_samples,
            "seeds": list(range(s.seeds)), "sensitivity_seeds": list(range(s.sensitivity_seeds)),
            "sensitivity_budget_samples": s.sensitivity_budget_samples,
            "split": {"test": 360, "validation": VALIDATION_SIZE,
                      **{w.data: train_rows(w.data) for w in s.workloads}},
            "selection": "per arm and target: the grid step with the smallest median time "
                         "(cycles) to the target on the validation images (training loss for "
                         "the loss target); ties: larger fraction reached, then smaller step; "
                         "reported: that step's time on the test images",
            "censoring": "a seed that misses a target (or diverged) counts at the budget and "
                         "in the fraction reached",
            "speedup": "median baseline cycles / median arm cycles, each at its own step",
            "interval": {"kind": "paired percentile bootstrap over seeds",
                         "resamples": BOOTSTRAP_RESAMPLES, "level": CI_LEVEL},
        },
        "summary_markdown": summary_markdown(table(data)),
        "sensitivity_markdown": sensitivity_markdown(table(data)),
        "chosen_steps": data["chosen"],
        "runs": data["runs"],
        "sweep": data["sweep"],
    }


def write(out_dir: str | Path, quick: bool = False, jobs: int | None = None, scheduler=None,
          cache=True) -> list[Path]:
    """Compute, plot and save the figure; return the paths written (PNG, PDF, CSV, manifest)."""
    return write_figure(sys.modules[__name__], out_dir, quick, jobs=jobs, scheduler=scheduler,
                        cache=cache)
