r"""Figure ``asymptotic``: analog SGD's error floor against tau and against the learning rate.

The authors' least-squares setup (paper-notes section 3): :math:`f(x) = \frac{1}{2 n_r}\lVert Ax -
y\rVert^2` with :math:`A \in \mathbb{R}^{100 \times 40}`, entries N(0, 1), additive Gaussian
gradient noise of variance ``sigma2`` (batch ``n = 1``), soft-bounds devices of dynamic range
``tau``, step 3e-2 and 2500 iterations (:mod:`simulate.problems.oracle`, expected analog update).
For each run the **empirical floor** is the average squared gradient norm over the last half of the
iterates,

.. math:: \hat e_\infty = \frac1R \sum_r \frac{1}{|T|} \sum_{k \in T}
          \lVert \nabla f(W_k^{(r)}) \rVert^2, \qquad T = \{k \ge K/2\}

(the estimator of :func:`simulate.verification.checks.empirical_floor`), mean over ``R`` seeds with
its standard error. It contains the analog asymmetric floor and the :math:`O(\alpha)` noise ball;
the digital SGD run of the same seed (same problem, same noise draws) shows the noise ball alone.

The theory's floor (Theorem 2, ``analog_sgd`` in :mod:`theory.theorems`)

.. math:: \frac{G_\infty^2\,\sigma^2}{\theta\, n\, q_{\min}^2}

is drawn with the device constants on the weight interval the run visited
(:meth:`theory.devices.Device.constants`) and the largest admissible :math:`\theta` for the step,
:math:`\theta_{\max}`, the root of :math:`\alpha \cdot \mathrm{inv\_step\_cap}(\theta) = 1` (the
smallest floor the theorem states at this step; :func:`theory.admissible.theta_max`).

Left panel: against ``tau`` at step 3e-2; right panel: against the step at ``tau = 1``.
Every run is one point of :func:`simulate.execution.sweep.run_sweep` (function :func:`floor_run`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from simulate import SimConfig, device_from_config, empirical_floor, run_sweep
from simulate.verification import standard_error
from theory import ParameterError, check_range, compile_expr, get_bound
from theory.admissible import theta_max
from theory.symbols import theta

from .common import new_figure, use_style, write_figure

__all__ = [
    "AsymptoticSettings", "DESCRIPTION", "FLOOR_FORMAT", "NAME", "caption", "compute",
    "floor_run", "manifest", "plot", "settings", "table", "theory_floor", "write",
]

NAME = "asymptotic"
DESCRIPTION = ("analog SGD's error floor vs tau and vs learning rate, digital SGD beside it "
               "(least squares 100 x 40), theory floor for reference")
#: whether compute/write take the sweep keywords jobs, scheduler, cache
USES_SWEEP = True

#: bumped when the meaning of a cached floor run changes (part of every sweep point)
FLOOR_FORMAT = 1
#: the registry entry whose floor is drawn
BOUND = "analog_sgd"


@dataclass(frozen=True)
class AsymptoticSettings:
    """Settings of the asymptotic-error figure.

    Parameters
    ----------
    taus : tuple of float
        Dynamic ranges of the left panel (> 0).
    lrs : tuple of float
        Steps of the right panel (> 0).
    lr : float
        Step of the left panel (> 0), 3e-2 as the authors.
    tau : float
        Dynamic range of the right panel (> 0).
    steps : int
        Iterations ``K`` per run (>= 2).
    seeds : int
        Ensemble size ``R`` (>= 2).
    tail : float
        Fraction of the iterates averaged, in (0, 1].
    sigma2 : float
        Gradient-noise variance (> 0).
    """

    taus: tuple[float, ...] = (0.5, 0.75, 1.0, 1.5, 2.0, 2.5)
    lrs: tuple[float, ...] = (0.015, 0.02, 0.03, 0.05, 0.08)
    lr: float = 3e-2
    tau: float = 1.0
    steps: int = 2500
    seeds: int = 16
    tail: float = 0.5
    sigma2: float = 1.0

    def __post_init__(self):
        if not self.taus or not self.lrs:
            raise ParameterError("taus and lrs must each hold at least one value")
        for value in self.taus:
            check_range("taus", value, 0, None, low_open=True)
        for value in self.lrs:
            check_range("lrs", value, 0, None, low_open=True)
        check_range("lr", self.lr, 0, None, low_open=True)
        check_range("tau", self.tau, 0, None, low_open=True)
        check_range("steps", self.steps, 2, None, integer=True)
        check_range("seeds", self.seeds, 2, None, integer=True)
        check_range("tail", self.tail, 0, 1, low_open=True)
        check_range("sigma2", self.sigma2, 0, None, low_open=True)


def settings(quick: bool) -> AsymptoticSettings:
    """Full: 2500 iterations, 16 seeds; quick: the same iterations (runs are cheap), 6 seeds."""
    return AsymptoticSettings(seeds=6) if quick else AsymptoticSettings()


def _config(s: AsymptoticSettings, algorithm: str, tau: float, lr: float) -> SimConfig:
    return SimConfig(problem="least-squares", mode="none", algorithm=algorithm, tau=tau,
                     update="expected", lr=lr, steps=s.steps, seeds=s.seeds, log_every=1,
                     sigma2=s.sigma2, seed=0)


def floor_run(point: Mapping) -> dict:
    """Sweep function: one ensemble run and its tail-averaged squared gradient norm per seed.

    ``point = {"config": SimConfig.to_dict(), "tail": float, "format": FLOOR_FORMAT}``.

    Returns
    -------
    dict
        ``per_seed`` (tail averages), ``w_lo``, ``w_hi`` (weight interval visited by the
        ensemble), ``L``, ``sigma2``, ``n`` (the problem's exact constants).
    """
    estimate = empirical_floor(SimConfig(**point["config"]), tail=point["tail"])
    constants = estimate.constants
    return {
        "per_seed": estimate.per_seed, "w_lo": estimate.w_lo, "w_hi": estimate.w_hi,
        "L": float(constants["L"]), "sigma2": float(constants["sigma2"]),
        "n": int(constants["samples_per_update"]),
    }


def theory_floor(lr: float, values: Mapping[str, float]) -> tuple[float, float]:
    r"""The registry floor at :math:`\theta_{\max}(\alpha)`; ``(nan, nan)`` if no theta admits it.

    :math:`\theta_{\max}` is :func:`theory.admissible.theta_max` (the largest :math:`\theta`
    with :math:`\alpha\,\mathrm{inv\_step\_cap}(\theta) \le 1`).

    Parameters
    ----------
    lr : float
        Step :math:`\alpha`.
    values : mapping
        ``L``, ``sigma2``, ``n``, ``q_min``, ``q_max``, ``G_inf`` by symbol name.

    Returns
    -------
    (theta_max, floor) : (float, float)
    """
    try:
        top = theta_max(BOUND, lr, values)
    except ParameterError:  # no theta in (0, 1) admits the step
        return math.nan, math.nan
    if not 0 < top < 1:
        return math.nan, math.nan
    floor = compile_expr(get_bound(BOUND).floor, leading=(theta,))
    return top, float(floor(top, values))


def compute(quick: bool = False, jobs: int | None = None, scheduler=None, cache=True) -> dict:
    """Run every (algorithm, tau, lr) ensemble (one cached sweep); floors and theory values.

    Returns
    -------
    dict
        ``settings`` and ``rows``: per run, panel (``tau`` or ``lr``), algorithm, tau, lr,
        empirical mean and standard error, visited interval, theta_max and theory floor.
    """
    s = settings(quick)
    plan = [("tau", "analog", tau, s.lr) for tau in s.taus]
    plan += [("tau", "digital", s.tau, s.lr)]
    plan += [("lr", algorithm, s.tau, lr) for lr in s.lrs for algorithm in ("analog", "digital")]
    configs = [_config(s, algorithm, tau, lr) for _, algorithm, tau, lr in plan]
    points = [{"config": c.to_dict(), "tail": s.tail, "format": FLOOR_FORMAT} for c in configs]
    sweep = run_sweep(floor_run, points, jobs=jobs, scheduler=scheduler, cache=cache,
                      desc=NAME)
    rows = []
    for (panel, algorithm, tau, lr), config, result in zip(plan, configs, sweep.results,
                                                           strict=True):
        per_seed = np.asarray(result["per_seed"], dtype=float)
        theta_max = floor = math.nan
        if algorithm == "analog":
            dc = device_from_config(config).constants(result["w_lo"], result["w_hi"])
            values = {"L": result["L"], "sigma2": result["sigma2"], "n": result["n"],
                      "q_min": dc.q_min, "q_max": dc.q_max, "G_inf": dc.G_inf}
            theta_max, floor = theory_floor(lr, values)
        rows.append({
            "panel": panel, "algorithm": algorithm, "tau": tau, "lr": lr,
            "empirical": float(per_seed.mean()),
            "stderr": standard_error(per_seed),
            "w_lo": result["w_lo"], "w_hi": result["w_hi"],
            "theta_max": theta_max, "theory_floor": floor,
        })
    return {"settings": s, "rows": rows}


def table(data: dict) -> list[dict[str, object]]:
    """One row per plotted run (theory columns empty for digital runs)."""
    out = []
    for row in data["rows"]:
        out.append({k: ("" if isinstance(v, float) and math.isnan(v) else
                        repr(v) if isinstance(v, float) else v) for k, v in row.items()})
    return out


def plot(data: dict) -> Figure:
    """Two log-scale panels: floor against tau (step fixed) and against the step (tau fixed)."""
    s = data["settings"]
    with use_style():
        fig = new_figure(figsize=(7.0, 3.2), layout="constrained")
        axes = fig.subplots(1, 2)
        for ax, panel, xname in ((axes[0], "tau", "tau"), (axes[1], "lr", "lr")):
            rows = [r for r in data["rows"] if r["panel"] == panel]
            analog = [r for r in rows if r["algorithm"] == "analog"]
            digital = [r for r in rows if r["algorithm"] == "digital"]
            x = [r[xname] for r in analog]
            ax.errorbar(x, [r["empirical"] for r in analog], yerr=[r["stderr"] for r in analog],
                        marker="o", color="C1", capsize=2, label="analog SGD (simulated)")
            ax.plot(x, [r["theory_floor"] for r in analog], "--", marker="^", color="C1",
                    alpha=0.7, label=r"theory floor $G_\infty^2\sigma^2/(\theta n q_{\min}^2)$")
            if panel == "tau":
                d = digital[0]
                ax.axhline(d["empirical"], color="C0", label="digital SGD (simulated)")
                ax.axhspan(d["empirical"] - d["stderr"], d["empirical"] + d["stderr"],
                           color="C0", alpha=0.15, linewidth=0)
                ax.set_xlabel(r"device dynamic range $\tau$")
                ax.set_title(f"step {s.lr:g}")
            else:
                ax.errorbar([r["lr"] for r in digital], [r["empirical"] for r in digital],
                            yerr=[r["stderr"] for r in digital], marker="s", color="C0",
                            capsize=2, label="digital SGD (simulated)")
                ax.set_xscale("log")
                ax.set_xlabel(r"learning rate $\alpha$")
                ax.set_title(f"tau = {s.tau:g}")
            ax.set_yscale("log")
        for ax in axes:  # not shared: each panel has its own range
            ax.set_ylabel(r"avg $\|\nabla f\|^2$ over the last half")
        handles, labels = axes[1].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=3)
        fig.suptitle(f"least squares 100 x 40, sigma2 = {s.sigma2:g}, {s.steps} iterations, "
                     f"{s.seeds} seeds", fontsize=8)
    return fig


def caption(rows: Sequence[Mapping]) -> str:
    """One sentence from the CSV rows: analog vs digital floor at the smallest and largest tau."""
    tau_rows = [r for r in rows if r["panel"] == "tau"]
    analog = sorted((r for r in tau_rows if r["algorithm"] == "analog"),
                    key=lambda r: float(r["tau"]))
    digital = next(r for r in tau_rows if r["algorithm"] == "digital")
    lo, hi = analog[0], analog[-1]
    theory = (f"is {float(lo['theory_floor']):.3g}" if lo["theory_floor"] not in ("", "nan")
              else "not stated (no admissible theta at this step)")
    return (f"Analog SGD's error floor is {float(lo['empirical']):.3g} at tau = "
            f"{float(lo['tau']):g} and {float(hi['empirical']):.3g} at tau = "
            f"{float(hi['tau']):g} (digital SGD {float(digital['empirical']):.3g} at the same "
            f"step); the theory's floor at tau = {float(lo['tau']):g} {theory}.")


def manifest(data: dict, quick: bool) -> dict:
    """The figure's JSON manifest: configuration and seeds (``write_figure`` adds the rest)."""
    return {
        "config": {**asdict(data["settings"]), "quick": quick, "problem": "least-squares",
                   "rows": 100, "cols": 40, "update": "expected", "bound": BOUND},
        "seed": 0,
    }


def write(out_dir: str | Path, quick: bool = False, jobs: int | None = None, scheduler=None,
          cache=True) -> list[Path]:
    """Compute, plot and save the figure; return the paths written (PNG, PDF, CSV, manifest)."""
    return write_figure(sys.modules[__name__], out_dir, quick, jobs=jobs, scheduler=scheduler,
                        cache=cache)
