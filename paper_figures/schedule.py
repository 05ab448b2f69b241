"""Figure ``schedule``: the three pipeline schedules as Gantt charts (the authors' schematic).

Three panels share one cycle axis: no pipeline, synchronous and asynchronous pipeline, for
``M = 4`` stages and ``B = 5`` micro-batches (``N = 5`` for the asynchronous run). Each cell is one
clock cycle of one stage: a forward, a backward (labelled with the micro-batch index) or idle (a
bubble); a black bar at the end of a cycle marks a weight update of that stage. Everything is drawn
from the simulated timelines of :mod:`simulate.pipeline.timeline`; the CSV holds every cell and
update mark.
"""

from __future__ import annotations

import sys
from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from simulate import Timeline, build_timeline

from .common import new_figure, use_style, write_figure

__all__ = [
    "DESCRIPTION", "MICRO_BATCHES", "NAME", "STAGES", "compute", "manifest", "plot", "table",
    "write",
]

NAME = "schedule"
DESCRIPTION = "Gantt charts of the none, sync and async schedules (M = 4, B = N = 5)"
#: whether compute/write take the sweep keywords jobs, scheduler, cache
USES_SWEEP = False

STAGES = 4  #: M
MICRO_BATCHES = 5  #: B for none and sync, N for async
TITLES = {"none": "No pipeline", "sync": "Synchronous pipeline", "async": "Asynchronous pipeline"}
ACTIONS = {"F": "forward", "B": "backward", ".": "idle"}
COLORS = {"F": "C0", "B": "C1", ".": "0.9"}


def compute(quick: bool = False) -> dict[str, Timeline]:
    """The simulated timelines, by mode (``quick`` changes nothing: the figure is already small)."""
    return {mode: build_timeline(mode, STAGES, MICRO_BATCHES) for mode in TITLES}


def table(data: dict[str, Timeline]) -> list[dict[str, object]]:
    """One row per plotted cell: mode, stage, cycle, cell label, action, micro-batch, update mark.

    ``update`` is 1 when the stage applies a weight update at the end of that cycle.
    """
    rows = []
    for mode, timeline in data.items():
        updates = {(e.stage, e.cycle) for e in timeline.events if e.kind == "U"}
        for m, row in enumerate(timeline.grid(), start=1):
            for t, cell in enumerate(row):
                rows.append({
                    "mode": mode, "stage": m, "cycle": t, "cell": cell,
                    "action": ACTIONS[cell[0]], "micro_batch": cell[1:],
                    "update": int((m, t) in updates),
                })
    return rows


def _panel(ax, timeline: Timeline, width: int) -> None:
    grid = timeline.grid()
    for m, row in enumerate(grid, start=1):
        for kind in ACTIONS:
            spans = [(t, 1) for t, cell in enumerate(row) if cell[0] == kind]
            ax.broken_barh(spans, (m - 0.4, 0.8), facecolors=COLORS[kind], edgecolor="white",
                           linewidth=0.6)
        for t, cell in enumerate(row):
            if cell != ".":
                ax.text(t + 0.5, m, cell[1:], ha="center", va="center", color="white",
                        fontsize=6.5, fontweight="bold")
    for e in timeline.events:
        if e.kind == "U":
            ax.plot([e.cycle + 1] * 2, [e.stage - 0.48, e.stage + 0.48], color="black",
                    linewidth=1.6, solid_capstyle="butt")
    count = "N" if timeline.mode == "async" else "B"
    ax.set_title(
        f"{TITLES[timeline.mode]} (M = {timeline.stages}, {count} = {timeline.micro_batches}): "
        f"{timeline.cycles} cycles, density {float(timeline.density):.3g}",
        loc="left",
    )
    ax.set_yticks(range(1, timeline.stages + 1))
    ax.set_ylim(0.4, timeline.stages + 0.6)
    ax.set_xlim(0, width + 0.2)
    ax.set_ylabel("stage")


def plot(data: dict[str, Timeline]) -> Figure:
    """Three stacked Gantt panels with a shared cycle axis and one legend."""
    width = max(timeline.cycles for timeline in data.values())
    with use_style():
        fig = new_figure(figsize=(6.5, 1.35 * len(data) + 0.6))
        axes = fig.subplots(len(data), 1, sharex=True)
        for ax, timeline in zip(axes, data.values(), strict=True):
            _panel(ax, timeline, width)
        axes[-1].set_xlabel("clock cycle (one stage, one forward or backward of one micro-batch)")
        handles = [Patch(facecolor=COLORS[k], label=label) for k, label in ACTIONS.items()]
        handles.append(Line2D([], [], color="black", linewidth=1.6, label="weight update"))
        fig.legend(handles=handles, loc="outside upper center", ncols=len(handles))
    return fig


def manifest(data: dict, quick: bool) -> dict:
    """The figure's JSON manifest: configuration and seeds (``write_figure`` adds the rest)."""
    return {
        "config": {"stages": STAGES, "micro_batches": MICRO_BATCHES, "modes": list(data),
                   "quick": quick},
        "seed": None,
    }


def write(out_dir: str | Path, quick: bool = False) -> list[Path]:
    """Compute, plot and save the figure; return the paths written (PNG, PDF, CSV, manifest)."""
    return write_figure(sys.modules[__name__], out_dir, quick)
