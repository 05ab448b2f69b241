"""``aimc-pipeline``: the console script; it dispatches to the command modules of each package.

Commands are imported lazily, so ``aimc-pipeline schedule`` does not import cvxpy or matplotlib.
Each command module provides ``DESCRIPTION``, ``build_parser(parser)`` and ``run(args)``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from theory.commands import command_main

__all__ = ["COMMANDS", "main"]

#: command name -> (module, one-line summary)
COMMANDS: dict[str, tuple[str, str]] = {
    "schedule": ("simulate.commands.schedule",
                 "print a pipeline timeline (Gantt chart) and summary"),
    "bounds": ("bounds.commands.bounds",
               "evaluate and compare the complexity bounds for given hardware"),
    "plan": ("bounds.commands.plan",
             "choose mode, stages and micro-batches for a model and hardware"),
    "simulate": ("simulate.commands.simulate", "simulate digital/analog SGD through a pipeline"),
    "pulse-response": ("simulate.commands.pulse_response",
                       "the mean and std of one update's increments on a tile of devices"),
    "verify": ("simulate.commands.verify",
               "check every bound against simulation on oracle problems"),
    "calibrate": ("simulate.commands.calibrate", "fit the complexity model to simulation"),
    "figures": ("paper_figures.commands.figures", "regenerate the paper's figures"),
    "report": ("paper_figures.commands.report", "one folder: bounds, plan, verification, figures"),
}


def _usage() -> str:
    width = max(map(len, COMMANDS))
    rows = "\n".join(f"  {name:<{width}}  {summary}" for name, (_, summary) in COMMANDS.items())
    return (
        "usage: aimc-pipeline COMMAND [options]\n\n"
        "Pipeline-parallel training on analog in-memory accelerators: theory, bounds, "
        "simulation.\n\n"
        f"commands:\n{rows}\n\n"
        "'aimc-pipeline COMMAND --help' explains each command's options and units."
    )


def run_command(name: str, argv: Sequence[str] | None = None) -> int:
    """Run command ``name`` with ``argv`` (its options only)."""
    module = importlib.import_module(COMMANDS[name][0])
    return command_main(
        f"aimc-pipeline {name}", module.DESCRIPTION, module.build_parser, module.run, argv
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``aimc-pipeline`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(
            f"aimc-pipeline: error: unknown command {name!r}; valid: {', '.join(COMMANDS)}",
            file=sys.stderr,
        )
        return 2
    return run_command(name, rest)


if __name__ == "__main__":
    sys.exit(main())
