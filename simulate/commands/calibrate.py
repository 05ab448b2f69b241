"""``aimc-pipeline calibrate``: fit the theorems' complexity form to simulated ensembles.

Runs the design of :mod:`simulate.verification.calibration_fit` (synchronous and asynchronous
pipelines at a few stage counts, micro-batches and steps, as one cached sweep with progress on
stderr), fits per mode the coefficients of :mod:`theory.calibration` with bootstrap intervals over
seeds, writes the calibration file (``--out DIR``: ``DIR/calibration.json``, strict JSON; a path
ending in ``.json`` that is not a directory is still read as the file itself for one release, with a
``warning:`` line) and prints a table of the coefficients with their intervals (``--json``:
``{"schema": "aimc-pipeline/calibrate/1", "version": ..., "calibration": {...}}``, the file's
content under ``calibration``), the problem's constants and its fingerprint (what ``aimc-pipeline
plan --calibration`` checks the plan's constants against). ``--algorithm tiki-taka [--transfer-every
T] [--transfer-slice column|all]`` runs the same design with Tiki-Taka
(:mod:`simulate.device.tiki_taka`) and records the algorithm and the transfers in the file (``plan
--algorithm tiki-taka`` needs such a file and refuses one of another algorithm).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from theory.commands import command_main, print_json
from theory.errors import ParameterError, check_range
from theory.fileio import check_output_dir, check_output_file, output_errors
from theory.limits import MAX_RESAMPLES, MAX_TRANSFER_PERIOD, check_size
from theory.tables import text_table
from theory.vocabulary import CALIBRATED_ALGORITHMS, TRANSFER_SLICES

from ..config import SimConfig, check_rules
from ..problems import NETWORK_PROBLEMS, ORACLE_PROBLEMS
from ..verification import (  # calibration_settings only: no simulation for --help
    ASYNC_DESIGN,
    CALIBRATION_QUICK,
    CALIBRATION_STANDARD,
    FRACTIONS,
    NETWORK_CALIBRATION,
    NETWORK_CALIBRATION_QUICK,
    NETWORK_TARGET,
    STABILITY_FRACTIONS,
    SYNC_DESIGN,
    ProblemFields,
)
from .options import add_sweep_arguments, sweep_options

if TYPE_CHECKING:
    from theory.calibration import Calibration

__all__ = ["CALIBRATION_FILE", "DESCRIPTION", "build_parser", "calibration_path",
           "coefficient_table", "main", "network_table", "run"]

#: the file ``--out DIR`` writes
CALIBRATION_FILE = "calibration.json"

DESCRIPTION = (
    "Calibrate the complexity model of one oracle problem: simulate small ensembles of the "
    "synchronous (SP) and asynchronous (AP) pipelines at a designed set of (M, B, b, lr), fit per "
    "mode E||grad f||^2 after K updates = c_K/(lr K + c_K/S) + (c_noise lr + c_floor)/n "
    "[+ (c_s1 D + c_s2 D^2) lr^2/b for AP, D = M - 1], S = ||grad f(W_0)||^2 (the form of "
    "Corollary 3 and Theorems 4'B and 4' with free coefficients, its transient saturating at "
    "the start) by least squares on log residuals, with bootstrap intervals over seeds, each "
    "term's largest share of the model over the design, a profile upper bound for a "
    "coefficient the design does not identify, and the model's own error measured leaving one "
    "pipeline out (the forecast's interval includes it), and write the calibration "
    "file that 'aimc-pipeline plan --calibration' forecasts with. --write per-sample (one "
    "write per sample, as a crossbar) fits the per-sample form, whose floor c_floor is not "
    "divided by n (Corollary 3PS: the floor is one sample's); --update and --pulse-type as "
    "simulate's. The file records the update, pulse type and write, and its fingerprint covers "
    "them. --problem digits-mlp|digits-resmlp calibrates a digits network instead: the same form "
    "fitted to its test error (--target-accuracy A, eps = 1 - A) or training loss "
    "(--target-loss X) at fixed steps and one sample budget, unreached levels censored; plan "
    "--model NETWORK --calibration FILE forecasts the cycles to that target."
)

#: what a coefficient measures (for the table)
_MEANING = {
    "c_K": "transient c_K/(lr K + c_K/S); proof: 2 Delta/q_min",
    "c_noise": "noise ball c_noise lr/n; proof: L q_max^2 sigma2/q_min",
    "c_floor": "floor c_floor/n; proof: G_inf^2 sigma2/(theta q_min^2)",
    "c_s1": "staleness c_s1 lr^2 D/b; proof: 8 kappa L_s^2 q_max^2 sigma2",
    "c_s2": "bias c_s2 lr^2 D^2/b; proof: 8 kappa L_s^2 G_inf^2 sigma2 (Theorem 4')",
}
#: the terms of the per-sample form that differ (its floor and bias are not divided by the batch)
_PER_SAMPLE_TERMS = {"c_floor": ("c_floor/n", "c_floor"),
                     "c_s2": ("D^2/b; proof: 8 kappa L_s^2 G_inf^2 sigma2 (Theorem 4')",
                              "D^2; proof: 8 kappa L_s^2 G_inf^2 sigma2")}


def build_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``calibrate`` options to ``parser`` (units and defaults in each help text)."""
    spec = ProblemFields()  # the defaults only: nothing is validated or built for --help
    problem = parser.add_argument_group("the problem (an oracle problem with known constants)")
    problem.add_argument("--problem", choices=ORACLE_PROBLEMS + NETWORK_PROBLEMS,
                         default=spec.problem,
                         help="oracle problem, or a digits network (the network group below)")
    problem.add_argument("--dim", type=int, default=spec.dim,
                         help="dimension of the quadratic, >= the largest M of the design")
    problem.add_argument("--sigma2", type=float, default=spec.sigma2,
                         help="per-sample gradient-noise variance, squared-gradient units")
    problem.add_argument("--device", default=spec.device,
                         help="device preset (e.g. softbounds-tau1) or response family")
    problem.add_argument("--tau", type=float, default=spec.tau,
                         help="range tau of a family device, weight units (not for presets with a "
                         "fixed range)")
    problem.add_argument("--weight-bound", type=float, metavar="W", default=spec.weight_bound,
                         help="half-width W of the weight region around the device's centre on "
                         "which q_min, q_max, G_inf are computed, weight units (pass the same to "
                         "plan --weight-bound)")
    problem.add_argument("--theta", type=float, default=spec.theta,
                         help="Young split theta recorded with the constants, in (0, 1) (the "
                         "plan's --theta)")
    problem.add_argument("--seed", type=int, default=spec.seed,
                         help="root seed of the problem and the ensembles")
    meta = {name: SimConfig.__dataclass_fields__[name].metadata
            for name in ("update", "pulse_type", "write")}
    writes = parser.add_argument_group("the update and the writes of the runs (as simulate's)")
    writes.add_argument("--update", choices=meta["update"]["choices"], default=spec.update,
                        help=meta["update"]["help"] + " (recorded in the file)")
    writes.add_argument("--pulse-type", choices=meta["pulse_type"]["choices"], default=None,
                        help=meta["pulse_type"]["help"] + " (recorded in the file)")
    writes.add_argument("--write", choices=meta["write"]["choices"], default=spec.write,
                        help=meta["write"]["help"] + "; per-sample fits the per-sample form (its "
                        "floor not divided by n, Corollary 3PS); plan refuses a file of other "
                        "writes than its own")
    algorithm = parser.add_argument_group("the algorithm of the runs")
    algorithm.add_argument("--algorithm", choices=CALIBRATED_ALGORITHMS, default=spec.algorithm,
                           help="analog SGD, or tiki-taka (A and C on the device, the same "
                           "design and steps; the file records the algorithm and transfers, "
                           "plan --algorithm tiki-taka --calibration reads it)")
    algorithm.add_argument("--transfer-every", type=int, metavar="T",
                           default=spec.transfer_every,
                           help="tiki-taka: a transfer event after every T-th update (>= 1)")
    algorithm.add_argument("--transfer-slice", choices=TRANSFER_SLICES,
                           default=spec.transfer_slice,
                           help="tiki-taka: one column of every tile per event, or all")
    network = parser.add_argument_group(
        "a digits network (--problem digits-mlp|digits-resmlp; --dim, --sigma2, --algorithm "
        "are the oracle's)")
    target = network.add_mutually_exclusive_group()
    defaults = ", ".join(f"{name} {value:g}" for name, (_, value) in NETWORK_TARGET.items())
    target.add_argument("--target-accuracy", type=float, metavar="A", default=argparse.SUPPRESS,
                        help=f"test accuracy to reach, in (0, 1) (default: {defaults})")
    target.add_argument("--target-loss", type=float, metavar="X", default=argparse.SUPPRESS,
                        help="training loss to get below instead, nats (> 0)")
    network.add_argument("--samples", type=int, metavar="S", default=argparse.SUPPRESS,
                         help="training samples of every design point (default "
                         + ", ".join(f"{n} {d['samples']}" for n, d in
                                     NETWORK_CALIBRATION.items())
                         + "; --quick " + ", ".join(f"{n} {d['samples']}" for n, d in
                                                    NETWORK_CALIBRATION_QUICK.items()) + ")")
    run_group = parser.add_argument_group("the design")
    run_group.add_argument("--steps", type=int, default=argparse.SUPPRESS, metavar="K",
                           help="updates per design point (default "
                           f"{CALIBRATION_STANDARD['steps']}, "
                           f"--quick {CALIBRATION_QUICK['steps']})")
    run_group.add_argument("--seeds", type=int, default=argparse.SUPPRESS, metavar="R",
                           help="ensemble size per point (default "
                           f"{CALIBRATION_STANDARD['seeds']}, "
                           f"--quick {CALIBRATION_QUICK['seeds']})")
    run_group.add_argument("--resamples", type=int, default=argparse.SUPPRESS,
                           help="bootstrap resamples of the seeds for the intervals (default "
                           f"{CALIBRATION_STANDARD['resamples']}, "
                           f"--quick {CALIBRATION_QUICK['resamples']})")
    run_group.add_argument("--quick", action="store_true",
                           help="a small design (per mode 2 pipelines x 2 steps), fewer seeds, "
                           "updates and resamples: seconds")
    parser.add_argument("--out", type=Path, metavar="DIR", default=argparse.SUPPRESS,
                        help=f"write the calibration to DIR/{CALIBRATION_FILE} (JSON; read by "
                        "plan --calibration); a path ending in .json is read as the file itself "
                        "(deprecated, one release)")
    parser.add_argument("--json", action="store_true",
                        help="print {schema, version, calibration} as one JSON object (the "
                        "calibration file's content under calibration) instead of the table")
    add_sweep_arguments(parser)


def _interval(fit, i: int) -> str:
    """A coefficient's bootstrap interval, or ``not identified, <= bound`` (its profile bound)."""
    name = fit.names[i]
    if fit.is_identified(name):
        return f"[{fit.low[i]:.4g}, {fit.high[i]:.4g}]"
    bound = fit.profile_high[i]
    return "not identified, " + (f"<= {bound:.4g}" if bound < float("inf") else "unbounded")


def _share(fit, i: int) -> str:
    return f"{100 * fit.shares[i]:.3g}%" if fit.shares else "n/a"


def _error_lines(cal: Calibration) -> list[str]:
    """What the coefficients' and forecasts' intervals mean, and each mode's error factor."""
    out = [f"interval: the {100 * cal.ci_level:g}% bootstrap interval over seeds; a coefficient "
           "whose term is below 1% of the model everywhere on the design, or whose interval "
           "collapses or reaches the bound 1e-12, is not identified and shows its profile upper "
           f"bound (refits within the F threshold at {100 * cal.ci_level:g}%); share: the "
           "term's largest share of the fitted model over the design"]
    for mode, fit in cal.fits.items():
        if fit.error_factor is None:
            out.append(f"model error {mode}: not measured (fewer than 3 pipelines): a forecast's "
                       f"interval is the {100 * cal.ci_level:g}% bootstrap's, seed noise only")
        else:
            out.append(f"model error {mode}: x{fit.error_factor:.3g} (leave-one-pipeline-out, "
                       f"{fit.error_scores} held-out hitting times): a forecast's "
                       f"{100 * cal.prediction_level:g}% interval is at least K/"
                       f"{fit.error_factor:.3g} - K x {fit.error_factor:.3g}")
    return out


def coefficient_table(cal: Calibration) -> str:
    """The fitted coefficients with their bootstrap intervals (or profile bounds), shares and
    the proofs' products, one row per (mode, coefficient)."""
    from theory.calibration import (
        COEFFICIENTS,
        FINGERPRINT_KEYS,
        proof_label,
        theory_coefficients,
    )

    rows = []
    level = f"{100 * cal.ci_level:g}%"
    for mode, fit in cal.fits.items():
        proved = theory_coefficients(mode, cal.problem, cal.write)
        for i, (name, value) in enumerate(zip(COEFFICIENTS[mode], fit.values, strict=True)):
            meaning = _MEANING[name]
            if cal.write == "per-sample" and name in _PER_SAMPLE_TERMS:
                meaning = meaning.replace(*_PER_SAMPLE_TERMS[name])
            rows.append([mode, name, f"{value:.4g}", _interval(fit, i), _share(fit, i),
                         f"{proved[name]:.4g}", f"{value / proved[name]:.3g}", meaning])
    table = text_table(["mode", "coefficient", "fit", f"{level} interval", "share", "proof",
                        "fit/proof", "term"], rows)
    fits = ", ".join(f"{mode}: {fit.observations} hitting times, rms log residual "
                     f"{fit.residual_rms:.3g}" for mode, fit in cal.fits.items())
    constants = " ".join(f"{key}={cal.problem[key]:.6g}" for key in FINGERPRINT_KEYS)
    runs = f"update {cal.update}" + (f", pulses {cal.pulse_type}" if cal.pulse_type else "")
    lines = [table, f"fit: {fits}", *_error_lines(cal),
             f"problem constants: {constants} (fingerprint {cal.fingerprint}, covering the "
             f"constants, problem, device, algorithm, {runs}, write {cal.write})"]
    if cal.write == "per-sample":
        proofs = " and ".join(f"{proof_label(mode, cal.write)}'s for {mode}" for mode in cal.fits)
        lines.append("write per-sample: the per-sample form (its floor and bias not divided by "
                     f"the batch); the proof column is {proofs} (the noise at one sample per "
                     "write, n = 1, where the form's 1/n, which the proofs do not have, is 1; "
                     "the staleness square split by Young into c_s1 and c_s2)")
    if cal.algorithm != "analog":
        t = cal.transfer
        lines.append(f"algorithm {cal.algorithm} (transfer every {t['transfer_every']} updates, "
                     f"slice {t['transfer_slice']}): the proof column is analog SGD's (no proved "
                     f"{cal.algorithm} form); fit/proof compares with analog SGD")
    return "\n".join(lines)


def _settings(args, defaults: dict, length: str) -> dict:
    """The design's settings: ``defaults`` with the flags given (``--LENGTH``, ``--seeds``,
    ``--resamples``), checked: the run length (``steps`` or ``samples``) at least 10, at least 2
    seeds, 1 to :data:`theory.limits.MAX_RESAMPLES` bootstrap refits."""
    settings = dict(defaults)
    for name in (length, "seeds", "resamples"):
        if getattr(args, name, None) is not None:
            settings[name] = getattr(args, name)
    check_range(f"--{length}", settings[length], 10, None, integer=True)
    check_range("--seeds", settings["seeds"], 2, None, integer=True)
    check_range("--resamples", settings["resamples"], 1, None, integer=True)
    check_size("--resamples", settings["resamples"], need=settings["resamples"],
               limit=MAX_RESAMPLES, what="bootstrap refits of every mode")
    return settings


def run(args: argparse.Namespace) -> int:
    """Run the ``calibrate`` command; returns the exit status."""
    # sympy, the registry and the engine: not for --help

    from ..device import PinnedWarning
    from ..verification import CalibrationProblem, calibrate, design

    if args.problem in NETWORK_PROBLEMS:
        return _run_network(args)
    for flag in ("target_accuracy", "target_loss", "samples"):
        if flag in args:
            raise ParameterError(f"--{flag.replace('_', '-')} applies to a digits network "
                                 f"(--problem {' or '.join(NETWORK_PROBLEMS)}) only")
    settings = _settings(args, CALIBRATION_QUICK if args.quick else CALIBRATION_STANDARD, "steps")
    out = calibration_path(args.out) if "out" in args else None
    # --transfer-every / --transfer-slice apply to tiki-taka only (simulate.config.RULES)
    check_rules({"algorithm": args.algorithm, "transfer_every": args.transfer_every,
                 "transfer_slice": args.transfer_slice}, flags=True)
    transfer = {}
    if args.algorithm != "analog":
        check_range("--transfer-every", args.transfer_every, 1, MAX_TRANSFER_PERIOD,
                    integer=True)
        transfer = {"algorithm": args.algorithm, "transfer_every": args.transfer_every,
                    "transfer_slice": args.transfer_slice}
    if args.pulse_type is not None and args.update != "pulsed":
        raise ParameterError(f"--pulse-type={args.pulse_type} applies to --update pulsed only "
                             "(the expected update fires no pulses)")
    spec = CalibrationProblem(problem=args.problem, dim=args.dim, sigma2=args.sigma2,
                              device=args.device, tau=args.tau, weight_bound=args.weight_bound,
                              theta=args.theta, seed=args.seed, update=args.update,
                              pulse_type=args.pulse_type, write=args.write, **transfer)
    points = design(spec, sync=settings.get("sync", SYNC_DESIGN),
                    async_=settings.get("async", ASYNC_DESIGN),
                    fractions=settings.get("fractions", FRACTIONS), steps=settings["steps"],
                    seeds=settings["seeds"],
                    stability=settings.get("stability", STABILITY_FRACTIONS))
    options = sweep_options(args)
    created_by = {"command": "aimc-pipeline calibrate", "quick": bool(args.quick),
                  **spec.to_dict(), "steps": settings["steps"], "seeds": settings["seeds"],
                  "resamples": settings["resamples"]}
    print(f"calibrate: {len(points)} design points, {settings['seeds']} seeds x "
          f"{settings['steps']} updates each", file=sys.stderr)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PinnedWarning)
        cal = calibrate(spec, points, resamples=settings["resamples"], created_by=created_by,
                        **options)
    for warning in caught:
        if issubclass(warning.category, PinnedWarning):  # one line, as simulate prints it
            print(f"aimc-pipeline calibrate: warning: {warning.message}", file=sys.stderr)
        else:
            warnings.showwarning(warning.message, warning.category, warning.filename,
                                 warning.lineno)
    return _report(args, out, cal, coefficient_table)


def _run_network(args: argparse.Namespace) -> int:
    """``calibrate --problem digits-mlp|digits-resmlp``
    (:func:`simulate.verification.calibrate_network`)."""

    from ..verification import NetworkCalibrationProblem, calibrate_network, network_design

    oracle = ProblemFields()
    for flag in ("dim", "sigma2", "algorithm", "steps"):
        if getattr(args, flag, getattr(oracle, flag, None)) != getattr(oracle, flag, None):
            raise ParameterError(f"--{flag}={getattr(args, flag)} applies to an oracle problem; "
                                 f"a network ({args.problem}) has its own data and noise, trains "
                                 "with analog SGD and has a sample budget (--samples)")
    settings = _settings(args, (NETWORK_CALIBRATION_QUICK if args.quick else NETWORK_CALIBRATION)
                         [args.problem], "samples")
    out = calibration_path(args.out) if "out" in args else None
    target = (("loss", args.target_loss) if "target_loss" in args
              else ("accuracy", getattr(args, "target_accuracy", None)))
    if args.pulse_type is not None and args.update != "pulsed":
        raise ParameterError(f"--pulse-type={args.pulse_type} applies to --update pulsed only "
                             "(the expected update fires no pulses)")
    if target[1] is None and target[0] != NETWORK_TARGET[args.problem][0]:
        raise ParameterError("--target-loss needs a value")
    spec = NetworkCalibrationProblem(
        problem=args.problem, target=target[0], target_value=target[1], device=args.device,
        tau=args.tau, weight_bound=args.weight_bound, theta=args.theta, seed=args.seed,
        update=args.update, pulse_type=args.pulse_type, write=args.write)
    points = network_design(spec, settings)
    created_by = {"command": "aimc-pipeline calibrate", "quick": bool(args.quick),
                  **spec.to_dict(), "samples": settings["samples"], "seeds": settings["seeds"],
                  "resamples": settings["resamples"]}
    print(f"calibrate: {args.problem}, {len(points)} design points, {settings['seeds']} seeds x "
          f"{settings['samples']} samples each, target {spec.target} {spec.target_value:g}",
          file=sys.stderr)
    result = calibrate_network(spec, points, resamples=settings["resamples"],
                               created_by=created_by, **sweep_options(args))
    cal = result.calibration
    return _report(args, out, cal, lambda _: network_table(result))


def _report(args: argparse.Namespace, out: Path | None, cal: Calibration, table) -> int:
    """Write ``cal`` to ``out`` (if given) and print its JSON or ``table(cal)``."""
    from theory.calibration_file import write_calibration

    if out is not None:
        with output_errors("--out"):
            out.parent.mkdir(parents=True, exist_ok=True)
            write_calibration(out, cal)
        print(f"calibration written to {out}", file=sys.stderr)
    if args.json:
        print_json("calibrate", indent=1, calibration=cal.to_dict())
    else:
        print(table(cal))
    return 0


def network_table(result) -> str:
    """The fitted coefficients of a network calibration with their intervals, and what its
    design reached (:class:`simulate.verification.NetworkCalibration`)."""
    from theory.calibration import COEFFICIENTS

    cal = result.calibration
    level = f"{100 * cal.ci_level:g}%"
    rows = [[mode, name, f"{value:.4g}", _interval(fit, i), _share(fit, i),
             _MEANING[name].split(";")[0]]
            for mode, fit in cal.fits.items()
            for i, (name, value) in enumerate(zip(COEFFICIENTS[mode], fit.values, strict=True))]
    target = cal.target
    reached = {mode: sum(1 for p in cal.design if p["mode"] == mode and p["reached"])
               for mode in cal.fits}
    points = {mode: sum(1 for p in cal.design if p["mode"] == mode) for mode in cal.fits}
    measure = "test error 1 - accuracy" if target["kind"] == "accuracy" else "training loss"
    lines = [
        text_table(["mode", "coefficient", "fit", f"{level} interval", "share", "term"], rows),
        f"fit: {cal.problem['problem']}, the {measure} (eps = {target['eps']:.4g} at the target "
        f"{target['label']}, start S = {cal.start:.4g})",
        *(f"  {mode}: {fit.observations} hitting times fitted, {result.censored[mode]} levels "
          f"censored (not reached within the budget); target reached on {reached[mode]} of "
          f"{points[mode]} points; rms log residual {fit.residual_rms:.3g}"
          for mode, fit in cal.fits.items()),
        *([f"  {result.diverged} design points had a diverged seed (censored whole)"]
          if result.diverged else []),
        f"device constants: q_min={cal.problem['q_min']:.6g} q_max={cal.problem['q_max']:.6g} "
        f"G_inf={cal.problem['G_inf']:.6g} (fingerprint {cal.fingerprint}, covering the network, "
        "its data and target, the device, update and write)",
        "no proof column: a network's L, Delta, sigma2 are unknown; the form is the theorems' "
        "dependence on the step, batch and delay with free coefficients",
        *_error_lines(cal),
    ]
    return "\n".join(lines)


def calibration_path(out: Path) -> Path:
    """The file ``--out`` names, checked before any work (one line naming ``--out`` otherwise).

    ``DIR`` gives ``DIR/calibration.json`` (:func:`~theory.fileio.check_output_dir`). A path
    ending in ``.json`` that is not an existing directory is the file itself, as before this
    release, with one ``warning:`` line on stderr (deprecated; it goes in the next release); its
    folder must exist (a mistyped folder such as ``/nonexistent_dir`` is refused, not created).
    """
    out = Path(out)
    if out.suffix.lower() == ".json" and not out.is_dir():
        if not out.parent.is_dir():  # a mistyped folder is not created for a deprecated form
            raise ParameterError(
                f"--out={str(out)!r} cannot be used: its folder {str(out.parent)!r} is not an "
                f"existing directory; valid: a file in an existing folder, or --out DIR (DIR/"
                f"{CALIBRATION_FILE}, DIR created)")
        print(f"aimc-pipeline calibrate: warning: --out={str(out)!r}: a file name is deprecated; "
              f"pass the folder (--out DIR writes DIR/{CALIBRATION_FILE})", file=sys.stderr)
        return check_output_file(out, "--out")
    return check_output_dir(out, "--out", (CALIBRATION_FILE,)) / CALIBRATION_FILE


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``aimc-pipeline calibrate``."""
    return command_main("aimc-pipeline calibrate", DESCRIPTION, build_parser, run, argv)
