"""``aimc-pipeline verify``: check every bound against simulation on the oracle problems.

Runs a case table of :mod:`simulate.verification.suites`
(:func:`simulate.verification.suites.run_suite`: one
:func:`simulate.verification.checks.check_bound` per row) as a cached sweep, prints one row per
check (bound, configuration, empirical mean +- standard error, bound value, ratio bound/empirical,
pass), a summary per registry entry (smallest and median ratio) and the bounds read as
predictions (:mod:`simulate.verification.prediction`: per entry the median and worst ratio of
predicted to simulated cycles to ``eps = sqrt(floor * start)`` at the run's step, over the checks
that have such a target, and the fractions of pairs ranked like the simulation,
:func:`simulate.verification.ranking.ranking_agreement`), writes ``verify.csv`` and ``verify.json``
(the list of checks) into ``--out``, and exits 1 when a check fails (naming it on stderr).
``--json`` prints ``{"schema": "aimc-pipeline/verify/1", "version": ..., "checks": [...]}``.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from theory.commands import command_main, print_json
from theory.fileio import atomic_write, check_output_dir, output_errors, strict_json
from theory.tables import markdown_table as md_table
from theory.tables import text_table

from ..verification import SUITE_NAMES
from .options import add_sweep_arguments, sweep_options

if TYPE_CHECKING:
    from ..verification import Check, RankingAgreement

__all__ = [
    "CSV_COLUMNS",
    "DESCRIPTION",
    "PredictionSummary",
    "RatioSummary",
    "build_parser",
    "config_label",
    "main",
    "markdown_table",
    "median_line",
    "prediction_summaries",
    "ratio_summaries",
    "run",
    "write_csv",
]

DESCRIPTION = (
    "Check the convergence bounds digital_sgd, analog_sgd, analog_sgd_sp and analog_sgd_ap against "
    "simulated ensembles on the oracle problems (quadratic, least squares), where every constant "
    "is known. Empirical = mean over seeds of (1/K) sum_k ||grad f(W_k)||^2; a check passes when "
    "empirical <= bound + z * stderr; ratio = bound/empirical (>= 1: the bound holds, larger: "
    "looser). Each check is also read as a prediction: predicted (the bound at the run's step) "
    "versus simulated cycles to eps = sqrt(floor * start), with a bootstrap interval over seeds, "
    "and the fraction of SP-vs-AP and M-vs-M' pairs ranked like the simulation. Exit status 1 if "
    "any check fails."
)

#: CSV columns: the check, its configuration and the constants plugged into the bound
CSV_COLUMNS = (
    "bound", "problem", "mode", "algorithm", "stages", "micro_batches", "micro_batch_size",
    "device", "tau", "sigma2", "lr", "steps", "seeds", "seed", "empirical", "stderr",
    "bound_value", "ratio", "margin_z", "passed", "theta", "L", "Delta", "q_min", "q_max",
    "G_inf", "w_lo", "w_hi", "G2_iter", "floor_kind", "eps", "predicted_cycles",
    "simulated_cycles", "simulated_ci_low", "simulated_ci_high", "prediction_ratio", "vacuous",
)


def build_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``verify`` options (and the sweep options) to ``parser``."""
    parser.add_argument("--suite", choices=SUITE_NAMES, default="quick",
                        help="quick (43 checks, seconds), standard (260 checks, minutes), thorough "
                        "(hundreds); quick and standard add Theorem LF's local-floor rows")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="write verify.csv and verify.json (the checks) into DIR")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true",
                        help="print {schema, version, checks} as one JSON object on stdout "
                        "instead of the table")
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
    bias = f" beta={c.grad_bias:g}" if c.grad_bias else ""  # the injected gradient bias
    return (f"{c.problem} {pipeline} {device} sigma2={c.sigma2:g}{bias} lr={c.lr:.4g} "
            f"K={c.steps} R={c.seeds}")


def _floor_kind(check: Check) -> str:
    """The entry's ``Bound.floor_kind`` (``worst-case``; ``iterate-average`` for Theorem LF)."""
    from theory.theorems import get_bound  # the registry (sympy): not for --help

    return get_bound(check.bound_name).floor_kind


def _row(check: Check) -> dict:
    c, k, p = check.config, check.constants, check.prediction
    prediction = {} if p is None else {
        "eps": p.eps, "predicted_cycles": p.predicted_cycles,
        "simulated_cycles": p.simulated_cycles, "simulated_ci_low": p.ci_low,
        "simulated_ci_high": p.ci_high, "prediction_ratio": p.ratio, "vacuous": p.vacuous,
    }
    return {
        "bound": check.bound_name, "problem": c.problem, "mode": c.mode,
        "algorithm": c.algorithm, "stages": c.stages, "micro_batches": c.micro_batches,
        "micro_batch_size": c.micro_batch_size, "device": c.device, "tau": c.tau,
        "sigma2": c.sigma2, "lr": c.lr, "steps": c.steps, "seeds": c.seeds, "seed": c.seed,
        "empirical": check.empirical, "stderr": check.stderr, "bound_value": check.bound,
        "ratio": check.ratio, "margin_z": check.margin_z, "passed": check.passed,
        "theta": k.get("theta"), "L": k.get("L"), "Delta": k.get("Delta"),
        "q_min": k.get("q_min"), "q_max": k.get("q_max"), "G_inf": k.get("G_inf"),
        "w_lo": k.get("w_lo"), "w_hi": k.get("w_hi"), "G2_iter": k.get("G2_iter"),
        "floor_kind": _floor_kind(check),
        **{name: prediction.get(name) for name in CSV_COLUMNS[-7:]},
    }


def write_csv(checks: list[Check], path: Path) -> Path:
    """Write one row per check with :data:`CSV_COLUMNS` (empty cells for unused constants).

    Written atomically (:func:`theory.fileio.atomic_write`).
    """
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    for check in checks:
        writer.writerow({k: ("" if v is None else v) for k, v in _row(check).items()})
    return atomic_write(path, text.getvalue().encode())


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


@dataclass(frozen=True)
class PredictionSummary:
    """One registry entry read as a prediction over a suite
    (:mod:`simulate.verification.prediction`).

    Attributes
    ----------
    bound_name : str
    checks : int
        Checks with a prediction.
    vacuous : int
        Of them, those whose floor at the run's step is at or above the start
        ``||grad f(W_0)||^2`` (no target below the start is guaranteed); left out of the ratios.
    unreached : int
        Those whose ensemble mean did not reach the target within the run; left out.
    median_ratio, worst_ratio : float or None
        Median and worst (farthest from 1 in log) ``predicted / simulated`` cycles over the
        others (``None`` when there is none).
    worst_interval : (float, float) or None
        The bootstrap interval over seeds of the worst ratio (an end ``None``: beyond the run).
    """

    bound_name: str
    checks: int
    vacuous: int
    unreached: int
    median_ratio: float | None
    worst_ratio: float | None
    worst_interval: tuple | None


def prediction_summaries(checks: list[Check]) -> list[PredictionSummary]:
    """One :class:`PredictionSummary` per registry entry with predictions, in order of first
    appearance."""
    names = list(dict.fromkeys(c.bound_name for c in checks if c.prediction is not None))
    out = []
    for name in names:
        mine = [c.prediction for c in checks if c.bound_name == name and c.prediction is not None]
        vacuous = sum(p.vacuous for p in mine)
        ranked = [p for p in mine if p.ratio is not None]
        unreached = len(mine) - vacuous - len(ranked)
        worst = max(ranked, key=lambda p: abs(np.log(p.ratio)), default=None)
        out.append(PredictionSummary(
            bound_name=name, checks=len(mine), vacuous=vacuous, unreached=unreached,
            median_ratio=float(np.median([p.ratio for p in ranked])) if ranked else None,
            worst_ratio=None if worst is None else worst.ratio,
            worst_interval=None if worst is None else (worst.ratio_low, worst.ratio_high),
        ))
    return out


def _fmt(value, spec: str = ".3g") -> str:
    return "-" if value is None else format(value, spec)


def _agreement(ranking: RankingAgreement, kind: str, bound: str | None = None) -> str:
    agree, ranked = ranking.count(kind, bound)
    return f"{agree}/{ranked}" if ranked else "-"


_PREDICTION_HEADER = ("bound", "checks", "vacuous", "median predicted/simulated cycles",
                      "worst (95% CI)", "M vs M' agree", "SP vs AP agree")


def _prediction_rows(checks: list[Check], ranking: RankingAgreement) -> list[tuple[str, ...]]:
    rows = []
    for s in prediction_summaries(checks):
        interval = "" if s.worst_interval is None else (
            f" ({_fmt(s.worst_interval[0])}-{_fmt(s.worst_interval[1])})")
        mode = (_agreement(ranking, "mode", s.bound_name)
                if s.bound_name in ("analog_sgd_sp", "analog_sgd_ap", "analog_sgd_ap_b") else "-")
        rows.append((s.bound_name, str(s.checks), str(s.vacuous), _fmt(s.median_ratio),
                     _fmt(s.worst_ratio) + interval, _agreement(ranking, "stages", s.bound_name),
                     mode))
    return rows


def _ranking_line(ranking: RankingAgreement) -> str:
    parts = []
    for kind, label in (("mode", "SP vs AP"), ("stages", "M vs M'")):
        agree, ranked = ranking.count(kind)
        fraction = ranking.fraction(kind)
        parts.append(f"{label} {agree}/{ranked}" + ("" if fraction is None else
                                                     f" = {fraction:.2f}")
                     + f" ({ranking.vacuous[kind]} pairs vacuous, {ranking.unreached[kind]} "
                     "unreached)")
    return ("Pairs the guarantee ranks like the simulation (cycles to a common target): "
            + "; ".join(parts) + ".")


def _predictions(checks: list[Check]) -> tuple[list[tuple[str, ...]], str] | None:
    """The prediction table's rows and the ranking line (``None``: no check has a prediction)."""
    with_prediction = [c for c in checks if c.prediction is not None]
    if not with_prediction:
        return None
    from ..verification import ranking_agreement  # the registry (sympy): not for --help

    ranking = ranking_agreement(with_prediction)
    return _prediction_rows(with_prediction, ranking), _ranking_line(ranking)


def _table_rows(checks: list[Check]) -> list[tuple[str, ...]]:
    return [
        (check.bound_name, config_label(check), f"{check.empirical:.4g} +- {check.stderr:.2g}",
         f"{check.bound:.4g}", f"{check.ratio:.3g}", _floor_kind(check),
         "yes" if check.passed else "NO")
        for check in checks
    ]


_HEADER = ("bound", "config", "empirical +- stderr", "bound value", "ratio", "floor", "pass")


def median_line(checks: list[Check]) -> str:
    """The median ``bound / empirical`` over every check, and over the worst-case rows alone."""
    worst = [check.ratio for check in checks if _floor_kind(check) == "worst-case"]
    line = f"Median ratio {np.median([c.ratio for c in checks]):.3g} over {len(checks)} checks"
    if len(worst) < len(checks):
        line += (f" ({np.median(worst):.3g} over the {len(worst)} worst-case floors; the others "
                 "use the iterate average G2_iter of Theorem LF, measured along the same runs)")
    return line + "."


def markdown_table(checks: list[Check]) -> str:
    """The checks and the per-entry summary as Markdown tables."""
    rows = [(f"`{r[0]}`", *r[1:]) for r in _table_rows(checks)]
    summary = [(f"`{s.bound_name}`", str(s.checks), str(s.passed), f"{s.min_ratio:.3g}",
                f"{s.median_ratio:.3g}") for s in ratio_summaries(checks)]
    summary_header = ("bound", "checks", "passed", "smallest ratio", "median ratio")
    out = (md_table(_HEADER, rows) + "\n\n" + md_table(summary_header, summary) + "\n\n"
           + median_line(checks) + "\n")
    predictions = _predictions(checks)
    if predictions is not None:
        rows, line = predictions
        rows = [(f"`{r[0]}`", *r[1:]) for r in rows]
        out += "\n" + md_table(_PREDICTION_HEADER, rows) + "\n\n" + line + "\n"
    return out


def _summary_text(checks: list[Check]) -> str:
    rows = [(s.bound_name, f"{s.passed}/{s.checks}", f"{s.min_ratio:.3g}", f"{s.median_ratio:.3g}")
            for s in ratio_summaries(checks)]
    return text_table(("bound", "passed", "smallest ratio", "median ratio"), rows)


def run(args: argparse.Namespace) -> int:
    """Run the suite; print the table (or JSON / Markdown); write ``--out``; 1 if a check fails.

    ``--out`` (:func:`~theory.fileio.check_output_dir`) and the sweep options are checked before
    the first check runs; an OS error while writing (a full disk) is one line naming ``--out`` and
    the file, with the finished points in the cache.
    """
    if args.out is not None:
        check_output_dir(args.out, "--out", ("verify.csv", "verify.json"))
    from ..verification import run_suite  # the registry and the engine: not for --help

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
        with output_errors("--out"):
            args.out.mkdir(parents=True, exist_ok=True)
            csv_path = write_csv(checks, args.out / "verify.csv")
            json_path = atomic_write(args.out / "verify.json",
                                     json.dumps(payload, indent=2, allow_nan=False).encode())
        print(f"wrote {csv_path} and {json_path}", file=sys.stderr)
    if args.json:
        print_json("verify", checks=payload)
    elif args.markdown:
        print(markdown_table(checks), end="")
    else:
        print(text_table(_HEADER, _table_rows(checks)))
        print()
        print(_summary_text(checks))
        print(median_line(checks))
        predictions = _predictions(checks)
        if predictions is not None:
            rows, line = predictions
            print()
            print(text_table(_PREDICTION_HEADER, rows))
            print(line)
    failed = [check for check in checks if not check.passed]
    for check in failed:
        print(f"FAILED {check.bound_name}: {config_label(check)}: empirical {check.empirical:.6g} "
              f"> bound {check.bound:.6g} + {check.margin_z:g} * stderr {check.stderr:.3g}",
              file=sys.stderr)
    return 1 if failed else 0


def main(argv=None) -> int:
    """``aimc-pipeline verify`` with ``argv`` (default: ``sys.argv[1:]``); the exit status."""
    return command_main("aimc-pipeline verify", DESCRIPTION, build_parser, run, argv)
