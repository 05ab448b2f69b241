r"""Figure ``complexity``: iterations and clock cycles to reach eps, for every registry bound.

For each entry of :data:`theory.theorems.REGISTRY`, :func:`bounds.evaluate` gives the
whole iterations :math:`K = \lceil K(\epsilon) \rceil` (the exact inversion of the rate form
:math:`a/\sqrt{K} + c/K + \mathrm{floor} = \epsilon`, :mod:`theory.complexity`) and the pipeline
clock cycles of those iterations (``none``: :math:`2M(n/b)K`, ``sync``: :math:`2(B + M - 1)K`,
``async``: :math:`2(K + M - 1)`) on a log grid of targets ``eps`` (squared-gradient units, those
of ``sigma2``). Hardware: preset ``softbounds-tau1`` (``tau = 1``, ``W_max = 0.5``), default
problem constants (:math:`L = \Delta = \sigma^2 = 1`, ``theta = 1/2``) and pipeline
(``M = 8``, ``B = 8``, ``b = 4``). Near an entry's asymptotic floor the curves blow up; each
positive floor is drawn as a vertical dotted asymptote, and the grid is refined just above it.
Targets at or below a floor have no numbers (not plotted, not in the CSV). Deterministic: no
simulation, no seed.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure

from bounds import HardwareParams, PipelineConfig, ProblemParams, evaluate, from_preset
from theory import REGISTRY, check_range

from .common import new_figure, use_style, write_figure

__all__ = [
    "ComplexitySettings", "DESCRIPTION", "NAME", "caption", "coinciding", "compute", "eps_grid",
    "manifest", "plot", "settings", "table", "write",
]

NAME = "complexity"
DESCRIPTION = "iterations and clock cycles to eps vs eps for every registry bound (log-log)"
#: whether compute/write take the sweep keywords jobs, scheduler, cache
USES_SWEEP = False


@dataclass(frozen=True)
class ComplexitySettings:
    """Settings of the complexity figure.

    Parameters
    ----------
    preset : str
        Hardware preset (:func:`bounds.params.from_preset`).
    eps_min, eps_max : float
        Range of the target grid, ``0 < eps_min < eps_max``.
    points : int
        Points of the log grid (>= 2).
    refine : int
        Extra points just above each positive floor (>= 0).
    """

    preset: str = "softbounds-tau1"
    eps_min: float = 1e-3
    eps_max: float = 10.0
    points: int = 81
    refine: int = 20

    def __post_init__(self):
        check_range("eps_min", self.eps_min, 0, None, low_open=True)
        check_range("eps_max", self.eps_max, self.eps_min, None, low_open=True)
        check_range("points", self.points, 2, None, integer=True)
        check_range("refine", self.refine, 0, None, integer=True)


def settings(quick: bool) -> ComplexitySettings:
    """Full: 81 grid points; quick: 41 (the figure is cheap either way)."""
    return ComplexitySettings(points=41, refine=10) if quick else ComplexitySettings()


def eps_grid(s: ComplexitySettings, floor: float | None) -> np.ndarray:
    r"""The targets of one bound: the log grid above ``floor``, refined as
    :math:`\mathrm{floor}\,(1 + 10^{-4 \ldots 0})` just above a positive floor."""
    grid = np.geomspace(s.eps_min, s.eps_max, s.points)
    if floor:
        near = floor * (1 + np.geomspace(1e-4, 1.0, s.refine)) if s.refine else np.empty(0)
        grid = np.union1d(grid[grid > floor], near[(near > floor) & (near <= s.eps_max)])
    return grid


#: why the Theorem 2M rows have no curve: with every stage on the figure's one device they are
#: the analog rows (Theorems 2, 3, 4')
_MIXED_REASON = ("not drawn: Theorem 2M (mixed analog/digital stages) with every stage on this "
                 "device equals the analog rows")


def compute(quick: bool = False) -> dict:
    """Evaluate every registry bound on its grid (deterministic; sweep options are unused).

    Returns
    -------
    dict
        ``settings``, ``hardware``, ``problem``, ``pipeline`` and ``curves``: per bound a dict
        with ``provenance``, ``mode``, ``floor`` (``None`` if not applicable), ``eps``,
        ``iterations``, ``cycles`` arrays (reachable targets only) and ``reason`` when the bound
        has no numbers at all.
    """
    s = settings(quick)
    hardware: HardwareParams = from_preset(s.preset)
    problem, pipeline = ProblemParams(), PipelineConfig()
    curves = {}
    for name, bound in REGISTRY.items():
        if bound.algorithm == "mixed":  # per-stage constants: not a curve of one device
            curves[name] = {"provenance": bound.provenance, "mode": bound.mode, "floor": None,
                            "eps": [], "iterations": [], "cycles": [], "reason": _MIXED_REASON}
            continue
        probe = evaluate(name, s.eps_max, hardware, problem, pipeline)
        curve = {"provenance": bound.provenance, "mode": bound.mode, "floor": probe.floor,
                 "eps": [], "iterations": [], "cycles": [], "reason": None}
        if probe.floor is None:  # not applicable to this device
            curve["reason"] = probe.reason
        else:
            for eps in eps_grid(s, probe.floor):
                result = evaluate(name, float(eps), hardware, problem, pipeline)
                if result.reachable:
                    curve["eps"].append(float(eps))
                    curve["iterations"].append(result.iterations)
                    curve["cycles"].append(result.cycles)
        curves[name] = {k: np.asarray(v) if isinstance(v, list) else v
                        for k, v in curve.items()}
    return {"settings": s, "hardware": hardware, "problem": problem, "pipeline": pipeline,
            "curves": curves}


def table(data: dict) -> list[dict[str, object]]:
    """One row per plotted point: bound, provenance, mode, eps, iterations, cycles, floor."""
    rows = []
    for name, c in data["curves"].items():
        for eps, k, cycles in zip(c["eps"], c["iterations"], c["cycles"], strict=True):
            rows.append({"bound": name, "provenance": c["provenance"], "mode": c["mode"],
                         "eps": repr(float(eps)), "iterations": int(k), "cycles": int(cycles),
                         "floor": repr(float(c["floor"]))})
    return rows


#: nine registry entries need more distinct colours than the style's cycle of eight
_COLORS = colormaps["tab10"]
_LINES = {"paper": "-", "companion": ":", "derived": "-", "literature": "--"}


def coinciding(curves: Mapping[str, Mapping], key: str) -> list[tuple[str, ...]]:
    """Groups of bounds whose ``key`` curves (``"iterations"`` or ``"cycles"``) are identical."""
    groups: dict[tuple, list[str]] = {}
    for name, c in curves.items():
        if len(c["eps"]):
            signature = (tuple(np.asarray(c["eps"]).tolist()), tuple(np.asarray(c[key]).tolist()))
            groups.setdefault(signature, []).append(name)
    return [tuple(names) for names in groups.values() if len(names) > 1]


def _legend_labels(curves: Mapping[str, Mapping]) -> dict[str, str]:
    """Bound names, each curve drawn on top of an identical one saying so (or it looks missing)."""
    labels = {name: name for name in curves}
    both = set(coinciding(curves, "cycles"))
    for group in coinciding(curves, "iterations"):
        where = "" if group in both else ", iterations"
        for name in group[1:]:
            labels[name] = f"{name} (= {group[0]}{where})"
    return labels


def plot(data: dict) -> Figure:
    """Two log-log panels: iterations and clock cycles against eps; floors as vertical lines."""
    s, pipe = data["settings"], data["pipeline"]
    labels = _legend_labels(data["curves"])
    with use_style():
        fig = new_figure(figsize=(7.0, 3.6), layout="constrained")
        axes = fig.subplots(1, 2, sharex=True)
        for i, (name, c) in enumerate(data["curves"].items()):
            if not len(c["eps"]):
                continue
            color = _COLORS(i % _COLORS.N)
            for ax, key in zip(axes, ("iterations", "cycles"), strict=True):
                ax.plot(c["eps"], c[key], _LINES[c["provenance"]], color=color,
                        label=labels[name] if key == "iterations" else None)
                if c["floor"] > 0:
                    ax.axvline(c["floor"], color=color, linestyle=":", linewidth=0.8)
        for ax, label in zip(axes, ("iterations K to eps", "clock cycles to eps"), strict=True):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(r"target $\epsilon$ (units of $\sigma^2$)")
            ax.set_ylabel(label)
            ax.set_xlim(s.eps_min, s.eps_max)
        fig.suptitle(f"{s.preset}, M = {pipe.stages}, B = {pipe.micro_batches}, "
                     f"b = {pipe.micro_batch_size}; dotted verticals: asymptotic floors",
                     fontsize=8)
        fig.legend(loc="outside right center", fontsize=6)
    return fig


def caption(rows: Sequence[Mapping]) -> str:
    """One sentence from the CSV rows: cycles of SP and AP at the common target nearest 1."""
    by = {}
    for row in rows:
        by.setdefault(row["bound"], {})[float(row["eps"])] = int(row["cycles"])
    common = sorted(set(by.get("analog_sgd_sp", {})) & set(by.get("analog_sgd_ap", {})))
    eps = min(common, key=lambda e: abs(np.log(e)))
    sp_c, ap_c = by["analog_sgd_sp"][eps], by["analog_sgd_ap"][eps]
    floors = {row["bound"]: float(row["floor"]) for row in rows}
    return (f"Iterations and clock cycles to eps for every registry bound; at eps = {eps:.3g} "
            f"the synchronous pipeline needs {sp_c:,d} cycles and the asynchronous "
            f"{ap_c:,d} (ratio SP/AP {sp_c / ap_c:.3g}); the analog floors are "
            f"{floors.get('analog_sgd_sp', float('nan')):.3g} (SP) and "
            f"{floors.get('analog_sgd_ap', float('nan')):.3g} (AP).")


def manifest(data: dict, quick: bool) -> dict:
    """The figure's JSON manifest: configuration and seeds (``write_figure`` adds the rest)."""
    return {
        "config": {**asdict(data["settings"]), "quick": quick,
                   "problem": asdict(data["problem"]), "pipeline": asdict(data["pipeline"]),
                   "weight_bound": data["hardware"].weight_bound,
                   "not_applicable": {name: c["reason"] for name, c in data["curves"].items()
                                      if c["reason"]}},
        "seed": None,
    }


def write(out_dir: str | Path, quick: bool = False) -> list[Path]:
    """Compute, plot and save the figure; return the paths written (PNG, PDF, CSV, manifest)."""
    return write_figure(sys.modules[__name__], out_dir, quick)
