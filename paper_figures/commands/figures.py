"""``aimc-pipeline figures`` (and ``python -m paper_figures``): regenerate the paper's figures.

``all`` writes every figure of :data:`~paper_figures.registry.FIGURES`, ``list`` prints the names
(those of :data:`~paper_figures.registry.ON_DEMAND` too, written only by name), ``NAME`` writes
one figure. Each figure
writes ``NAME.png``, ``NAME.pdf``, ``NAME.csv`` (the plotted numbers) and ``NAME.json`` (manifest)
into ``--out`` (default ``figures/``); the paths written are printed, one per line. Figures that
simulate run their points through :func:`simulate.execution.sweep.run_sweep`: ``--jobs``,
``--scheduler``, ``--cache-dir`` and ``--no-cache`` choose where they run and where finished points
are cached.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from simulate.commands.options import sweep_options
from theory import ParameterError
from theory.commands import command_main
from theory.fileio import check_output_dir, output_errors

from ..registry import FIGURES, KNOWN, ON_DEMAND, load_figure
from . import add_figure_arguments

__all__ = ["DESCRIPTION", "build_parser", "main", "run"]

DESCRIPTION = (
    "Regenerate the paper's figures: 'all', 'list' (names and descriptions) or one figure NAME. "
    "Each figure writes NAME.png, NAME.pdf, NAME.csv (exactly the plotted numbers) and NAME.json "
    "(configuration, seed and versions); output is byte-identical from run to run."
)


def build_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``figures`` options to ``parser``."""
    parser.add_argument("target", nargs="?", default="all", metavar="all|list|NAME",
                        help=f"what to do; figures: {', '.join(FIGURES)}; only by name "
                        f"(not in all): {', '.join(ON_DEMAND)}")
    add_figure_arguments(
        parser, out="figures", out_help="output directory",
        quick_help="smaller runs for a fast preview (figures that simulate training)",
    )


def run(args: argparse.Namespace) -> int:
    """List the figures, or write the chosen ones and print each path written."""
    if args.target == "list":
        width = max(map(len, KNOWN))
        for name in FIGURES:
            print(f"{name:<{width}}  {load_figure(name).DESCRIPTION}")
        for name in ON_DEMAND:
            print(f"{name:<{width}}  (not in all) {load_figure(name).DESCRIPTION}")
        return 0
    if args.target != "all" and args.target not in KNOWN:
        raise ParameterError(
            f"figure={args.target!r} is unknown; valid: all, list, "
            f"{', '.join(KNOWN)}"
        )
    from simulate.execution import progress_bar, shared_pool  # tqdm: to compute, not for --help

    from ..common import output_dir, write_figures  # matplotlib: to compute, not for --help

    names = list(FIGURES) if args.target == "all" else [args.target]
    # before any figure is computed: the folder, and no non-regular file where one goes
    check_output_dir(args.out, "--out", [f"{name}.{suffix}" for name in names
                                         for suffix in ("png", "pdf", "csv", "json")])
    sweep = sweep_options(args)
    with output_errors("--out"):
        output_dir(args.out)
    modules = [load_figure(name) for name in names]
    # the figures' sweeps share one pool of warm workers; their data are computed while the
    # analytic figures are written (write_figures); a full disk: one line, the points stay cached
    with shared_pool(sweep["jobs"]), progress_bar(len(modules), desc="figures",
                                                  unit="figure") as bar, output_errors("--out"):
        for _, written in write_figures(modules, args.out, quick=args.quick, **sweep):
            for path in written:
                print(path)
            bar.update()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``aimc-pipeline figures`` / ``python -m paper_figures``."""
    return command_main("aimc-pipeline figures", DESCRIPTION, build_parser, run, argv)
