"""``aimc-pipeline verify``: check every bound against simulation on the oracle problems.

Runs a case table of :mod:`simulate.suites` (:func:`simulate.suites.run_suite`: one
:func:`simulate.verify.check_bound` per row) as a cached sweep, prints one row per
check (bound, configuration, empirical mean +- standard error, bound value, ratio bound/empirical,
pass) and a summary per registry entry (smallest and median ratio), writes ``verify.csv`` and
``verify.json`` into ``--out``, and exits 1 when a check fails (naming it on stderr).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from theory.commands import command_main
from theory.errors import ParameterError
from theory.fileio import check_writable_dir, strict_json
from theory.tables import markdown_table as md_table
from theory.tables import text_table

from ..suites import SUITES, run_suite
from ..verify import Check
from .options import add_sweep_arguments, sweep_options

__all__ = [
    "CSV_COLUMNS",
    "DESCRIPTION",
    "RatioSummary",
    "build_parser",
    "config_label",
    "main",
    "markdown_table",
    "ratio_summaries",
    "run",
    "write_csv",
]

DESCRIPTION = (
    "Check the convergence bounds digital_sgd, analog_sgd, analog_sgd_sp and analog_sgd_ap against "
    "simulated ensembles on the oracle problems (quadratic, least squares), where every constant "
    "is known. Empirical = mean over seeds of (1/K) sum_k ||grad f(W_k)||^2; a check passes when "
    "empirical <= bound + z * stderr; ratio = bound/empirical (>= 1: the bound holds, larger: "
    "looser). Exit status 1 if any check fails."
)

#: CSV columns: the check, its configuration and the constants plugged into the bound
CSV_COLUMNS = (
    "bound", "problem", "mode", "algorithm", "stages", "micro_batches", "micro_batch_size",
    "device", "tau", "sigma2", "lr", "steps", "seeds", "seed", "empirical", "stderr",
    "bound_value", "ratio", "margin_z", "passed", "theta", "L", "Delta", "q_min", "q_max",
    "G_inf", "w_lo", "w_hi",
)


def build_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``verify`` options (and the sweep options) to ``parser``."""
    parser.add_argument("--suite", choices=tuple(SUITES), default="quick",
                        help="quick (seconds), standard (~40 checks, 1-3 min), thorough (hundreds)")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="write verify.csv and verify.json into DIR")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true",
                        help="print the checks as JSON on stdout instead of the table")
    output.add_argument("--markdown", action="store_true",
                        help="print the table as Markdown (for docs/verification.md)")
    parser.add_argument("--z", type=float, default=4.0,
                        help="statistical margin of the one-sided check, in standard errors")
    add_sweep_arguments(parser)


def config_label(check: Check) -> str:
    """A short description of the checked configuration."""
    c = check.config
    if c.algorithm == "digital":
        device = "digital"
    else:
        device = c.device if c.tau is None else f"{c.device}(tau={c.tau:g})"
    pipeline = f"M={c.stages} B={c.micro_batches} b={c.micro_batch_size}"
    return (f"{c.problem} {pipeline} {device} sigma2={c.sigma2:g} lr={c.lr:.4g} "
            f"K={c.steps} R={c.seeds}")


def _row(check: Check) -> dict:
    c, k = check.config, check.constants
    return {
        "bound": check.bound_name, "problem": c.problem, "mode": c.mode,
        "algorithm": c.algorithm, "stages": c.stages, "micro_batches": c.micro_batches,
        "micro_batch_size": c.micro_batch_size, "device": c.device, "tau": c.tau,
        "sigma2": c.sigma2, "lr": c.lr, "steps": c.steps, "seeds": c.seeds, "seed": c.seed,
        "empirical": check.empirical, "stderr": check.stderr, "bound_value": check.bound,
        "ratio": check.ratio, "margin_z": check.margin_z, "passed": check.passed,
        "theta": k.get("theta"), "L": k.get("L"), "Delta": k.get("Delta"),
        "q_min": k.get("q_min"), "q_max": k.get("q_max"), "G_inf": k.get("G_inf"),
        "w_lo": k.get("w_lo"), "w_hi": k.get("w_hi"),
    }


def write_csv(checks: list[Check], path: Path) -> Path:
    """Write one row per check with :data:`CSV_COLUMNS` (empty cells for unused constants)."""
    with Path(path).open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for check in checks:
            writer.writerow({k: ("" if v is None else v) for k, v in _row(check).items()})
    return Path(path)


@dataclass(frozen=True)
class RatioSummary:
    """Tightness of one registry entry over a suite.

    Attributes
    ----------
    bound_name : str
    checks, passed : int
        Number of checks and of passed checks.
    min_ratio, median_ratio : float
        Smallest and median ``bound / empirical``.
    """

    bound_name: str
    checks: int
    passed: int
    min_ratio: float
    median_ratio: float


def ratio_summaries(checks: list[Check]) -> list[RatioSummary]:
    """One :class:`RatioSummary` per registry entry, in order of first appearance."""
    names = list(dict.fromkeys(check.bound_name for check in checks))
    out = []
    for name in names:
        mine = [check for check in checks if check.bound_name == name]
        ratios = np.array([check.ratio for check in mine])
        out.append(RatioSummary(
            bound_name=name, checks=len(mine), passed=sum(check.passed for check in mine),
            min_ratio=float(ratios.min()), median_ratio=float(np.median(ratios)),
        ))
    return out


def _table_rows(checks: list[Check]) -> list[tuple[str, ...]]:
    return [
        (check.bound_name, config_label(check), f"{check.empirical:.4g} +- {check.stderr:.2g}",
         f"{check.bound:.4g}", f"{check.ratio:.3g}", "yes" if check.passed else "NO")
        for check in checks
    ]


_HEADER = ("bound", "config", "empirical +- stderr", "bound value", "ratio", "pass")


def markdown_table(checks: list[Check]) -> str:
    """The checks and the per-entry summary as Markdown tables."""
    rows = [(f"`{r[0]}`", *r[1:]) for r in _table_rows(checks)]
    summary = [(f"`{s.bound_name}`", str(s.checks), str(s.passed), f"{s.min_ratio:.3g}",
                f"{s.median_ratio:.3g}") for s in ratio_summaries(checks)]
    summary_header = ("bound", "checks", "passed", "smallest ratio", "median ratio")
    return md_table(_HEADER, rows) + "\n\n" + md_table(summary_header, summary) + "\n"


def _summary_text(checks: list[Check]) -> str:
    rows = [(s.bound_name, f"{s.passed}/{s.checks}", f"{s.min_ratio:.3g}", f"{s.median_ratio:.3g}")
            for s in ratio_summaries(checks)]
    return text_table(("bound", "passed", "smallest ratio", "median ratio"), rows)


def run(args: argparse.Namespace) -> int:
    """Run the suite; print the table (or JSON / Markdown); write ``--out``; 1 if a check fails.

    ``--out`` and the sweep options are checked before the first check runs.
    """
    if args.out is not None:
        check_writable_dir(args.out, "--out")
        for name in ("verify.csv", "verify.json"):
            if (args.out / name).is_dir():
                raise ParameterError(f"--out={str(args.out)!r} cannot be used: {name} in it is a "
                                     "directory; valid: a directory where that file can be written")
    options = sweep_options(args)
    sweeps = []
    checks = run_suite(args.suite, z=args.z, on_sweep=sweeps.append, **options)
    for sweep in sweeps:
        if sweep.corrupt:
            print(f"verify: {sweep.corrupt} damaged cache "
                  f"{'entry was' if sweep.corrupt == 1 else 'entries were'} recomputed",
                  file=sys.stderr)
    # strict JSON: a ratio of inf (empirical 0) or a nan constant is written as null
    payload = strict_json([check.to_dict() for check in checks])
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        csv_path = write_csv(checks, args.out / "verify.csv")
        json_path = args.out / "verify.json"
        json_path.write_text(json.dumps(payload, indent=2, allow_nan=False))
        print(f"wrote {csv_path} and {json_path}", file=sys.stderr)
    if args.json:
        print(json.dumps(payload, allow_nan=False))
    elif args.markdown:
        print(markdown_table(checks), end="")
    else:
        print(text_table(_HEADER, _table_rows(checks)))
        print()
        print(_summary_text(checks))
    failed = [check for check in checks if not check.passed]
    for check in failed:
        print(f"FAILED {check.bound_name}: {config_label(check)}: empirical {check.empirical:.6g} "
              f"> bound {check.bound:.6g} + {check.margin_z:g} * stderr {check.stderr:.3g}",
              file=sys.stderr)
    return 1 if failed else 0


def main(argv=None) -> int:
    """``aimc-pipeline verify`` with ``argv`` (default: ``sys.argv[1:]``); the exit status."""
    return command_main("aimc-pipeline verify", DESCRIPTION, build_parser, run, argv)
