"""``aimc-pipeline report``: write one folder with bounds, plan, verification and figures.

``aimc-pipeline report [--device NAME] [--eps E] [--quick] [--out DIR]``; see
:func:`paper_figures.report.write_report` for what each section holds. ``--preset`` is the old
spelling of ``--device`` (deprecated, still accepted).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from bounds import DEFAULT_EPS, DEFAULT_PRESET
from simulate.commands.options import sweep_options
from theory.commands import add_alias, command_main
from theory.fileio import check_output_dir, output_errors

from . import add_figure_arguments

__all__ = ["DESCRIPTION", "build_parser", "main", "run"]

DESCRIPTION = (
    "Write one folder (default report/) with index.md and index.html: the bound comparison for a "
    "hardware preset, the plan for the default model, the verification table (simulation against "
    "every checkable bound) and every figure with one sentence on what it shows. eps is the "
    "target of the average squared gradient norm, in squared-gradient units (those of sigma2); "
    "cycles are pipeline clock cycles."
)


def build_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``report`` options to ``parser``."""
    device = parser.add_argument(
        "--device", dest="preset", default=DEFAULT_PRESET, metavar="NAME",
        help="hardware preset of the bounds and plan sections (aimc-pipeline bounds "
        "--list-presets; --preset: the old spelling, deprecated)")
    add_alias(parser, "--preset", device)
    parser.add_argument("--eps", type=float, default=DEFAULT_EPS, metavar="E",
                        help="target of the average squared gradient norm for the bounds table, "
                        "squared-gradient units (those of sigma2)")
    add_figure_arguments(
        parser, out="report", out_help="output folder",
        quick_help="quick figures (fewer seeds and steps), for a preview",
    )


def run(args: argparse.Namespace) -> int:
    """Write the report and print where to look (``--out`` and the sweep options are checked
    before any section is computed)."""
    from simulate.execution import shared_pool

    from ..report import write_report  # the planner, the suites, matplotlib: not for --help

    check_output_dir(args.out, "--out", ("index.md", "index.html"))
    options = sweep_options(args)
    # the suite's and the figures' sweeps share one pool of warm workers
    with shared_pool(options["jobs"]), output_errors("--out"):  # a full disk: one line, the
        # points stay cached
        md, page = write_report(args.out, args.preset, args.eps, args.quick, options)
    print(f"report written: open {page} (Markdown: {md}; figures in {page.parent / 'figures'})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``aimc-pipeline report``."""
    return command_main("aimc-pipeline report", DESCRIPTION, build_parser, run, argv)
