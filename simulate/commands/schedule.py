"""``aimc-pipeline schedule``: print a simulated pipeline timeline as a Gantt chart and a summary.

The timeline comes from the discrete-event simulation in :mod:`simulate.timeline` (dependencies and
the injection rule), not from the closed forms.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from theory.commands import command_main
from theory.errors import ParameterError, check_range
from theory.schedules import MODES

from ..timeline import Timeline, build_timeline
from .options import add_output_arguments

__all__ = ["DESCRIPTION", "build_parser", "main", "run", "summary_table"]

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
        parser, json_help="print the summary as one JSON object instead of the chart and table"
    )


def _cell(value) -> str:
    if isinstance(value, list):
        return " ".join(map(str, value))
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def summary_table(timeline: Timeline) -> str:
    """The measured quantities of ``timeline`` as an aligned text table with units."""
    summary = timeline.summary()
    rows = [(label, _cell(summary[key]), unit) for key, label, unit in _ROWS]
    width = max(len(label) for label, _, _ in rows)
    value_width = max(len(value) for _, value, _ in rows)
    header = (f"mode={timeline.mode}  stages M={timeline.stages}  "
              f"{'N' if timeline.mode == 'async' else 'B'}={timeline.micro_batches}")
    return "\n".join([header] + [f"{label:<{width}}  {value:>{value_width}}  {unit}"
                                 for label, value, unit in rows])


def run(args: argparse.Namespace) -> int:
    """Build the timeline of the parsed options and print it (chart and table, or JSON)."""
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
    timeline = build_timeline(args.mode, args.stages, count)
    if args.json:
        print(json.dumps(timeline.summary()))
    else:
        print(timeline.gantt())
        print()
        print(summary_table(timeline))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``aimc-pipeline schedule``."""
    return command_main("aimc-pipeline schedule", DESCRIPTION, build_parser, run, argv)
