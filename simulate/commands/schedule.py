"""``aimc-pipeline schedule``: print a simulated pipeline timeline as a Gantt chart and a summary.

The timeline comes from the discrete-event simulation in :mod:`simulate.pipeline.timeline`
(dependencies and the injection rule), not from the closed forms, when its grid has at most
:data:`theory.limits.MAX_GANTT_CELLS` cells (stages x cycles). A larger schedule is summarised
from the closed forms of :mod:`theory.schedules` (:func:`closed_form_summary`: the same numbers,
which the tests check equal to the timeline's; nothing is built event by event, so any size
answers at once), without the Gantt chart (one stderr line says so; in JSON ``grid`` is ``null``
and ``grid_omitted`` gives the reason). ``--json`` prints ``{"schema":
"aimc-pipeline/schedule/1", "version": ..., "summary": {...}}``.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from theory.commands import command_main, print_json
from theory.errors import ParameterError, check_range
from theory.limits import MAX_COUNT, MAX_GANTT_CELLS, check_size
from theory.vocabulary import MODES

from ..pipeline import Timeline, build_timeline, timeline_cells
from .options import add_output_arguments

__all__ = [
    "DESCRIPTION", "MAX_SUMMARY_STAGES", "build_parser", "closed_form_summary",
    "main", "run", "summary_table",
]

#: the most stages a summary lists per-stage values for (a million numbers per row)
MAX_SUMMARY_STAGES = 10**6
#: per-stage lists longer than this are shortened in the human table of a closed-form summary
_SHOWN_STAGES = 8

DESCRIPTION = (
    "Simulate one pipeline schedule and print its timeline (one row per stage, stage M on top) and "
    "a summary. Unit of time: one clock cycle = one stage doing one forward (F) or one backward "
    "(B) of one micro-batch; cycles count from 0. none: one micro-batch in flight (2M cycles "
    "each); sync: one mini-batch of B micro-batches, then a flush and one update per stage; "
    "async: N micro-batches, no flush, each stage updates after each of its backwards."
)

#: (summary key, label, unit) of the rows of the human-readable table
_ROWS = (
    ("cycles", "total cycles", "cycles"),
    ("busy_cycles_per_stage", "busy cycles per stage", "cycles"),
    ("bubble_cycles_per_stage", "bubble (idle) cycles per stage", "cycles"),
    ("density", "computation density", "busy / total"),
    ("bubble_rate", "bubble rate", "idle / busy"),
    ("bubble_fraction", "bubble fraction", "idle / total"),
    ("cycles_per_micro_batch", "cycles per micro-batch", "cycles"),
    ("speedup", "throughput speedup over no pipeline", "x"),
    ("updates_per_stage", "updates per stage", "updates"),
    ("forward_delay", "forward weight delay, stage 1..M", "updates"),
    ("backward_delay", "backward weight delay, stage 1..M", "updates"),
)


def build_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``schedule`` options to ``parser``."""
    # required options and --samples suppress the "(default: ...)" the help formatter appends
    parser.add_argument("--stages", type=int, required=True, metavar="M", default=argparse.SUPPRESS,
                        help="pipeline stages M (>= 1), one accelerator each")
    parser.add_argument("--micro-batches", type=int, required=True, metavar="B",
                        default=argparse.SUPPRESS,
                        help="micro-batches per mini-batch B (>= 1; none and sync)")
    parser.add_argument("--mode", choices=MODES, required=True, default=argparse.SUPPRESS,
                        help="schedule: no pipeline, synchronous or asynchronous pipeline")
    parser.add_argument("--samples", type=int, metavar="N", default=argparse.SUPPRESS,
                        help="async only: micro-batches N in the run (>= 1; default: B)")
    add_output_arguments(
        parser,
        json_help="print {schema, version, summary} as one JSON object instead of the chart "
        "and table",
    )


def _cell(value) -> str:
    if isinstance(value, list):
        return " ".join(map(str, value))
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _short_cell(value) -> str:
    """:func:`_cell`, a long per-stage list shortened to its ends (closed-form summaries)."""
    if isinstance(value, list) and len(value) > _SHOWN_STAGES:
        if all(v == value[0] for v in value):
            return f"{value[0]} (each of {len(value)} stages)"
        head, tail = " ".join(map(str, value[:3])), " ".join(map(str, value[-3:]))
        return f"{head} ... {tail} ({len(value)} stages)"
    return _cell(value)


def summary_table(timeline: Timeline | dict) -> str:
    """The quantities of ``timeline`` (or of a :func:`closed_form_summary`) as an aligned text
    table with units."""
    closed = isinstance(timeline, dict)
    summary = timeline if closed else timeline.summary()
    cell = _short_cell if closed else _cell
    rows = [(label, cell(summary[key]), unit) for key, label, unit in _ROWS]
    width = max(len(label) for label, _, _ in rows)
    value_width = max(len(value) for _, value, _ in rows)
    mode, stages, count = summary["mode"], summary["stages"], summary["micro_batches"]
    header = f"mode={mode}  stages M={stages}  {'N' if mode == 'async' else 'B'}={count}"
    if closed:
        header += "  (from the closed forms of theory.schedules)"
    return "\n".join([header] + [f"{label:<{width}}  {value:>{value_width}}  {unit}"
                                 for label, value, unit in rows])


def closed_form_summary(mode: str, stages: int, micro_batches: int) -> dict:
    """The keys of :meth:`simulate.pipeline.timeline.Timeline.summary`, from the closed forms.

    Cycles, busy cycles and the per-stage delays are :func:`theory.schedules.evaluate_schedule`;
    the rates are exact fractions of those counts (as the timeline computes them), so every
    value equals the simulated timeline's (tested). An ``async`` run of ``N < M`` micro-batches
    never fills: stage m's forward delay is then ``min(M - m, N - 1)``, the largest it meets.
    ``stalls`` is 0 (forwards and backwards never collide in these schedules), ``grid`` is
    ``None`` and ``source`` says where the numbers come from.

    Raises
    ------
    ParameterError
        More than :data:`MAX_SUMMARY_STAGES` stages, or more cycles than an int64 holds.
    """
    count_name = "samples" if mode == "async" else "micro_batches"
    check_size("stages", stages, need=stages, limit=MAX_SUMMARY_STAGES, what="per-stage values")
    cycles = timeline_cells(mode, stages, micro_batches) // stages
    unpipelined = 2 * stages * micro_batches  # the speedup's reference run
    check_size(count_name, micro_batches, need=max(cycles, unpipelined) if
               max(cycles, unpipelined) < 10**300 else math.inf, limit=MAX_COUNT,
               what="cycles (more than an int64 holds)")
    from theory.schedules import evaluate_schedule  # sympy: not for --help

    kw = {"stages": stages, "micro_batches": micro_batches}
    cycles = int(evaluate_schedule(mode, "total_cycles", **kw))
    busy = int(evaluate_schedule(mode, "busy_cycles", **kw))
    stage = np.arange(1, stages + 1)
    delays = {}
    for kind in ("forward_delay", "backward_delay"):
        values = np.broadcast_to(evaluate_schedule(mode, kind, stage=stage, **kw), (stages,))
        delays[kind] = [min(int(d), micro_batches - 1) for d in values]
    total_busy, total = stages * busy, stages * cycles
    return {
        "mode": mode,
        "stages": stages,
        "micro_batches": micro_batches,
        "mini_batches": 1,
        "cycles": cycles,
        "busy_cycles_per_stage": [busy] * stages,
        "bubble_cycles_per_stage": [cycles - busy] * stages,
        "density": float(Fraction(total_busy, total)),
        "bubble_rate": float(Fraction(total - total_busy, total_busy)),
        "bubble_fraction": float(Fraction(total - total_busy, total)),
        "cycles_per_micro_batch": float(Fraction(cycles, micro_batches)),
        "speedup": float(Fraction(2 * stages * micro_batches, cycles)),
        "forward_delay": delays["forward_delay"],
        "backward_delay": delays["backward_delay"],
        "max_delay": max(delays["forward_delay"] + delays["backward_delay"]),
        "updates_per_stage": micro_batches if mode == "async" else 1,
        "stalls": 0,
        "grid": None,
        "grid_omitted": f"{stages * cycles} cells (stages x cycles), more than {MAX_GANTT_CELLS}",
        "source": "closed forms (theory.schedules)",
    }


def run(args: argparse.Namespace) -> int:
    """Build the timeline of the parsed options and print it (chart and table, or JSON).

    A grid of more than :data:`theory.limits.MAX_GANTT_CELLS` cells is summarised from the closed
    forms instead (one stderr line says so).
    """
    check_range("--stages", args.stages, 1, integer=True)
    check_range("--micro-batches", args.micro_batches, 1, integer=True)
    count = args.micro_batches
    samples = getattr(args, "samples", None)
    if samples is not None:
        if args.mode != "async":
            raise ParameterError(
                f"--samples={samples} only applies to --mode async; for {args.mode} the run "
                "is one mini-batch of --micro-batches"
            )
        count = check_range("--samples", samples, 1, integer=True)
    cells = timeline_cells(args.mode, args.stages, count)
    if cells > MAX_GANTT_CELLS:
        flag = "--samples" if samples is not None else "--micro-batches"
        try:
            summary = closed_form_summary(args.mode, args.stages, count)
        except ParameterError as error:  # name the flag the count came from
            text = str(error)
            for name, shown in (("samples", flag), ("micro_batches", flag),
                                ("stages", "--stages")):
                if text.startswith(f"{name}="):
                    raise ParameterError(shown + text[len(name):]) from None
            raise
        print(f"aimc-pipeline schedule: note: --stages {args.stages} x {flag} {count} gives "
              f"{cells:.3g} cells, more than {MAX_GANTT_CELLS:.0e}: no Gantt chart; the summary "
              "comes from the closed forms of theory.schedules", file=sys.stderr)
        if args.json:
            print_json("schedule", summary=summary)
        else:
            print(summary_table(summary))
        return 0
    timeline = build_timeline(args.mode, args.stages, count)
    if args.json:
        print_json("schedule", summary=timeline.summary())
    else:
        print(timeline.gantt())
        print()
        print(summary_table(timeline))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``aimc-pipeline schedule``."""
    return command_main("aimc-pipeline schedule", DESCRIPTION, build_parser, run, argv)
