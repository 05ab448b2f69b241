"""Flag groups shared by the ``bounds`` and ``plan`` commands, written once.

Every flag here has no argparse default (``SUPPRESS``): a flag that is not given leaves the value
of the configuration underneath (a ``--config`` file, or the dataclass default), and the help
text states that default.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence

from ..params import ProblemParams

__all__ = ["PROBLEM_FLAGS", "add_flags", "add_problem_flags", "add_weight_bound_flag", "given",
           "init_fields", "problem_from_args"]

#: the :class:`~bounds.params.ProblemParams` fields that have a flag (the flags' ``dest``)
PROBLEM_FLAGS = ("L", "L_s", "Delta", "sigma2", "theta", "beta")


def add_flags(parser: argparse.ArgumentParser, rows: Sequence[tuple]) -> None:
    """Add one flag without an argparse default per row ``(flag, dest, type, metavar, help)``.

    ``metavar`` None keeps argparse's (the upper-case ``dest``).
    """
    for flag, dest, kind, metavar, help_text in rows:
        parser.add_argument(flag, type=kind, dest=dest, metavar=metavar,
                            default=argparse.SUPPRESS, help=help_text)


def add_problem_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--L --L-s --delta --sigma2 --theta --beta`` (the constants of
    :class:`ProblemParams`)."""
    problem = ProblemParams()
    add_flags(parser, (
        ("--L", "L", float, None, f"smoothness constant L of f (A1); default {problem.L:g}"),
        ("--L-s", "L_s", float, None,
         "Lipschitz constant L_s of the stale update signal (A4); default L"),
        ("--delta", "Delta", float, None,
         f"initial gap Delta = f(W_0) - f* (A1); default {problem.Delta:g}"),
        ("--sigma2", "sigma2", float, None,
         f"per-sample gradient variance sigma^2 (A2); default {problem.sigma2:g}"),
        ("--theta", "theta", float, None,
         f"Young split theta of the analog bounds, in (0, 1); default {problem.theta:g}"),
        ("--beta", "beta", float, None,
         "norm bound beta of the gradient's bias (e.g. measured by bench/io_gradient_error.py), "
         "for analog_sgd_biased and analog_sgd_biased_sharp (Propositions IO, IO'); "
         f"default {problem.beta:g}"),
    ))


def add_weight_bound_flag(parser: argparse.ArgumentParser) -> None:
    """Add ``--weight-bound`` (W_max of :class:`~bounds.params.HardwareParams`)."""
    add_flags(parser, [(
        "--weight-bound", "weight_bound", float, "W",
        "W_max, half-width of the weight region around the device's symmetric point (weight "
        "units of the device); default half the distance to the nearer device bound",
    )])


def init_fields(obj) -> dict:
    """The constructor fields of dataclass instance ``obj`` (to rebuild it with overrides)."""
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}


def given(args: argparse.Namespace, names) -> dict:
    """The options among ``names`` that were given on the command line (by ``dest``)."""
    return {name: getattr(args, name) for name in names if hasattr(args, name)}


def problem_from_args(args: argparse.Namespace, base: ProblemParams | None = None) -> ProblemParams:
    """``base`` (default ``ProblemParams()``) with the problem flags that were given.

    ``L_s`` follows a new ``--L`` unless ``--L-s`` is given or ``base`` sets an ``L_s`` of its own.
    """
    base = ProblemParams() if base is None else base
    flags = given(args, PROBLEM_FLAGS)
    if not flags:
        return base
    if "L" in flags and "L_s" not in flags and base.L_s == base.L:
        flags["L_s"] = None  # L_s follows L unless set
    return ProblemParams(**{**init_fields(base), **flags})
