"""Figure ``plan``: predicted wall-clock time to eps over stages and micro-batches, optimum marked.

Left: the synchronous pipeline's predicted time to reach ``eps`` (log colour scale) over the number
of stages ``M`` and micro-batches per mini-batch ``B``, each cell minimised over the micro-batch
size ``b`` and the layer partition (the planner's exact search, :func:`bounds.time_grid`).
Right: the asynchronous pipeline's time over ``M`` (no ``B``: it updates after every micro-batch).
The planner's optimum (:func:`bounds.plan`) is marked with a star. Model ``digits-mlp``
on 16 accelerators, device preset ``softbounds-tau1``, default problem constants, ``eps = 0.5``.
The CSV holds every plotted cell: mode, M, B, best b, iterations, cycles and seconds.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure

from bounds import (
    DEFAULT_PRESET,
    PlanHardware,
    PlanLimits,
    ProblemParams,
    from_preset,
    load_model,
    plan,
    time_grid,
)

from .common import new_figure, use_style, write_figure

__all__ = ["DESCRIPTION", "NAME", "compute", "manifest", "plot", "table", "write"]

NAME = "plan"
DESCRIPTION = "predicted time to eps over stages M and micro-batches B, planner optimum marked"
#: whether compute/write take the sweep keywords jobs, scheduler, cache
USES_SWEEP = False

MODEL = "digits-mlp"
PRESET = DEFAULT_PRESET
ACCELERATORS = 16
EPS = 0.5


def _config(quick: bool) -> dict:
    return {"model": MODEL, "preset": PRESET, "accelerators": ACCELERATORS, "eps": EPS,
            "max_micro_batches": 16 if quick else 40, "max_micro_batch_size": 16 if quick else 40}


def compute(quick: bool = False) -> dict:
    """The per-(M, B) best candidates of both modes and the plan (deterministic, no randomness)."""
    cfg = _config(quick)
    model = load_model(cfg["model"])
    hardware = PlanHardware(from_preset(cfg["preset"]), accelerators=cfg["accelerators"])
    limits = PlanLimits(cfg["max_micro_batches"], cfg["max_micro_batch_size"])
    args = (model, hardware, ProblemParams(), cfg["eps"], limits)
    return {
        "config": cfg,
        "sync": time_grid(*args, mode="sync"),
        "async": time_grid(*args, mode="async"),
        "plan": plan(*args),
    }


def table(data: dict) -> list[dict[str, object]]:
    """One row per plotted cell (infeasible cells have empty numbers)."""
    rows = []
    for mode in ("sync", "async"):
        for (stages, count), cand in sorted(data[mode].items()):
            rows.append({
                "mode": mode, "stages": stages, "micro_batches": count,
                "micro_batch_size": "" if cand is None else cand.micro_batch_size,
                "iterations": "" if cand is None else cand.iterations,
                "cycles": "" if cand is None else cand.cycles,
                "seconds": "" if cand is None else repr(cand.seconds),
            })
    return rows


def _matrix(grid: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    stages = sorted({m for m, _ in grid})
    counts = sorted({c for _, c in grid})
    values = np.full((len(stages), len(counts)), np.nan)
    for (m, c), cand in grid.items():
        if cand is not None:
            values[stages.index(m), counts.index(c)] = cand.seconds
    return np.array(stages), np.array(counts), values


def plot(data: dict) -> Figure:
    """Heatmap of the synchronous time over (M, B) and the asynchronous time over M."""
    best = data["plan"].best
    stages, counts, values = _matrix(data["sync"])
    a_stages, _, a_values = _matrix(data["async"])
    # the colour scale spans the synchronous cells only: the asynchronous times (own axis) are
    # often orders of magnitude larger and would squeeze the heatmap into one colour
    norm = LogNorm(vmin=np.nanmin(values), vmax=np.nanmax(values))
    with use_style():
        fig = new_figure(figsize=(7.0, 3.4), layout="constrained")
        ax, ax2 = fig.subplots(1, 2, width_ratios=(3, 1.3))
        mesh = ax.pcolormesh(counts, stages, values, norm=norm, cmap="viridis", shading="nearest")
        ax.set_xlabel("micro-batches per mini-batch B")
        ax.set_ylabel("stages M")
        ax.set_title(f"synchronous ({data['config']['model']}, eps = {data['config']['eps']:g})")
        ax2.plot(a_values[:, 0], a_stages, marker="o", color="C1")
        ax2.set_xscale("log")
        ax2.set_xlabel("predicted time to eps (s)")
        ax2.set_title("asynchronous")
        ax2.set_ylim(ax.get_ylim())
        target = ax if best.mode == "sync" else ax2
        xy = (best.micro_batches, best.stages) if best.mode == "sync" else (best.seconds,
                                                                            best.stages)
        target.plot(*xy, marker="*", markersize=14, color="red", markeredgecolor="white",
                    linestyle="none", label=f"optimum: {best.mode}, M={best.stages}, "
                    f"B={best.micro_batches}, b={best.micro_batch_size}")
        fig.colorbar(mesh, ax=ax, label="predicted time to eps (s)")
        fig.legend(loc="outside lower center")
    return fig


def manifest(data: dict, quick: bool) -> dict:
    """The figure's JSON manifest: configuration and seeds (``write_figure`` adds the rest)."""
    return {"config": data["config"], "seed": None, "plan": data["plan"].best.to_dict()}


def write(out_dir: str | Path, quick: bool = False) -> list[Path]:
    """Compute, plot and save the figure; return the paths written (PNG, PDF, CSV, manifest)."""
    return write_figure(sys.modules[__name__], out_dir, quick)
