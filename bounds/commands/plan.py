"""The ``aimc-pipeline plan`` command: choose mode, stages, partition and micro-batches.

``aimc-pipeline plan --model NAME|FILE --accelerators P [--eps E] [--device NAME] [--json]`` prints
the chosen plan (mode, M, partition, B, b, predicted iterations, cycles and seconds to eps), the
three best alternatives, which term of the bound dominates, and the relaxed optimum with the gap;
``--json`` prints one JSON object of one shape, ``{"schema": "aimc-pipeline/plan/1", "version":
..., "plan": {...} or null, "plan_error": null or the reason, "modes": {...} or null}``; ``--out
DIR`` also writes ``plan.json`` (the ``plan`` part) and ``plan_alternatives.csv``. ``--preset`` is
the old spelling of ``--device`` and ``--algorithm analog-sgd`` of ``--algorithm analog`` (both
deprecated, still accepted). ``--list-models`` lists the built-in models. The report itself is
:meth:`bounds.Plan.table`.

``--algorithm tiki-taka [--transfer-every T] [--transfer-slice column|all]`` plans a Tiki-Taka run
(:func:`bounds.plan_tiki_taka`): the guarantee uses only proved (derived) Tiki-Taka
entries whose settings the plan meets, a mode without one has none (said in the table and the
JSON); with ``--calibration FILE`` (of ``aimc-pipeline calibrate --algorithm tiki-taka``) the
forecast chooses; every cycle count includes the transfers. Without either it exits 2 with one
line saying to pass ``--calibration``. A calibration of another algorithm is refused.

``--calibration FILE --step forecast`` runs every forecast plan at its step of fewest
calibrated iterations within the stability limit (:func:`theory.step_choice.best_steps`) instead
of the guarantee's step (``--step guarantee``, the default), and reports beside the chosen plan
whether that step is inside the proved cap and, if so, the guarantee there (text: the ``step``,
``inside proved cap`` and ``guarantee at step`` lines; JSON: ``forecast.step``). Without
``--calibration``, with a network calibration or with ``--algorithm tiki-taka`` it exits 2 with
one line.

A calibration file is checked as :mod:`theory.calibration_file` says; one whose checksum does not
match (edited after ``calibrate`` wrote it) is refused unless ``--accept-edited-calibration`` is
given, and then a ``warning:`` line, the report (``calibration ... edited``) and the JSON
(``forecast.calibration_edited``, ``calibration.edited`` for Tiki-Taka) say so.

Every plan states the problem constants it used and where each came from (a flag such as
``--sigma2``, the model file's ``[problem]`` table, or the default placeholder of
:class:`~bounds.params.ProblemParams`; :mod:`bounds.planning.constants`), that eps is in their
squared-gradient units, and words its time as the guarantee under them (text: one ``problem
constants:`` line, ``guaranteed time ... under these constants``, one ``note:`` when L, Delta or
sigma2 is a placeholder; JSON: ``constants`` ``{name: {"value", "source"}}`` and ``eps_units``,
also in ``modes``). Precedence: default, then the model file, then the flags.

``--hardware FILE.toml`` (accelerator kinds, :mod:`bounds.planning.hardware`),
``--digital-accelerators N`` or ``--compare-modes`` also print the best plan of each mode (sync,
async, dp, hybrid) on the same accelerators with its time, dominant cost and layer-to-kind
assignment (:func:`bounds.plan_modes`): sync and async times are guarantees, dp and hybrid times
estimates (the unproved ``local_sgd`` row), in their own columns, the best guarantee chosen among
the proved plans only; JSON then has a ``modes`` object (``basis``, ``guaranteed_seconds`` or
``estimated_seconds`` per plan, ``best_guarantee``, ``best_estimate``; ``--out`` writes
``modes.json``). With ``--hardware`` today's plan is made for its first analog
kind; when that plan cannot be made (say the model needs the digital kinds too), the reason is
printed (JSON ``plan_error``, with ``plan`` null) and the comparison still runs.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from theory.commands import add_alias, command_main, print_json
from theory.errors import ParameterError, check_range
from theory.fileio import atomic_write, check_output_dir, output_errors
from theory.limits import MAX_COUNT
from theory.vocabulary import TRANSFER_SLICES, WRITE_SEMANTICS

from ..params import (
    DEFAULT_EPS,
    DEFAULT_PRESET,
    PLAN_MODES,
    STEP_CHOICES,
    PlanHardware,
    PlanLimits,
    TransferSettings,
    from_preset,
)
from ..planning.constants import ProblemConstants
from ..planning.hardware import KindsHardware, load_hardware, single_kind, with_digital
from ..planning.mode_limits import ModeLimits
from ..planning.models import Model, list_models, load_model
from .options import (
    PROBLEM_FLAGS,
    add_problem_flags,
    add_weight_bound_flag,
    given,
    problem_from_args,
)

if TYPE_CHECKING:
    from ..planning.results import Plan

__all__ = ["DESCRIPTION", "PLAN_ALGORITHMS", "build_parser", "main", "run"]

#: the algorithms ``--algorithm`` plans for (analog: today's planner, bit for bit)
PLAN_ALGORITHMS = ("analog", "tiki-taka")

#: old spellings of ``--algorithm`` values (deprecated, accepted for one release)
_ALGORITHM_ALIASES = {"analog-sgd": "analog"}

#: the files ``--out DIR`` may write
_OUT_FILES = ("plan.json", "plan_alternatives.csv", "modes.json")


def _algorithm(value: str) -> str:
    """``--algorithm``'s value, an old spelling (``analog-sgd``) read as today's."""
    return _ALGORITHM_ALIASES.get(value, value)

DESCRIPTION = (
    "Choose the pipeline mode (sync or async), the number of stages M, a contiguous layer "
    "partition, the micro-batches per mini-batch B and the samples per micro-batch b that minimise "
    "the guaranteed wall-clock time to reach eps = target of the average squared gradient norm "
    "(iterations from the theory's bound x clock cycles per iteration x seconds per cycle of the "
    "slowest stage), subject to the tiles and activation memory of each accelerator. The "
    "guarantee holds under the problem constants L, Delta, sigma2 (flags, the model file's "
    "[problem] table, else the default placeholders 1), which the plan states with their "
    "sources; eps is in their squared-gradient units."
)


def build_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``plan`` options to ``parser`` (units and defaults in each help text)."""
    hw, limits = PlanHardware.__dataclass_fields__, PlanLimits()
    parser.add_argument(
        "--model", metavar="NAME|FILE", default=argparse.SUPPRESS,
        help="a built-in model (see --list-models) or a model-description TOML file",
    )
    parser.add_argument(
        "--sequence-length", type=int, metavar="TOKENS", default=argparse.SUPPRESS,
        help="tokens per sample of a transformer model (MVMs per sample of each matrix); "
        "default: the model file's value",
    )
    parser.add_argument(
        "--accelerators", type=int, metavar="P", default=hw["accelerators"].default,
        help="number of AIMC accelerators available (one per pipeline stage)",
    )
    parser.add_argument(
        "--tiles-per-accelerator", type=int, metavar="TILES",
        default=hw["tiles_per_accelerator"].default,
        help="crossbar tiles per accelerator (tile size from the preset's [timing])",
    )
    parser.add_argument(
        "--buffer-bytes", type=float, metavar="BYTES",
        default=hw["activation_buffer_bytes"].default,
        help="activation buffer per accelerator, bytes",
    )
    parser.add_argument(
        "--bytes-per-activation", type=int, metavar="BYTES",
        default=hw["bytes_per_activation"].default, help="bytes per stored activation value",
    )
    parser.add_argument(
        "--eps", type=float, metavar="E", default=DEFAULT_EPS,
        help="target for (1/K) sum_k E||grad f(W_k)||^2, in squared-gradient units (those of "
        "sigma2)",
    )
    device = parser.add_argument(
        "--device", metavar="NAME", dest="preset", default=DEFAULT_PRESET,
        help="device and timing preset (aimc-pipeline bounds --list-presets); MVM read time in "
        "seconds, pulse width in seconds, bit length in pulses, tile size (--preset: the old "
        "spelling, deprecated)",
    )
    add_alias(parser, "--preset", device)
    add_weight_bound_flag(parser)
    add_problem_flags(parser)
    parser.add_argument(
        "--max-micro-batches", type=int, metavar="B", default=limits.max_micro_batches,
        help="largest B searched (sync micro-batches per mini-batch)",
    )
    parser.add_argument(
        "--max-micro-batch-size", type=int, metavar="b", default=limits.max_micro_batch_size,
        help="largest b searched (samples per micro-batch)",
    )
    parser.add_argument(
        "--modes", nargs="+", choices=PLAN_MODES, default=list(limits.modes),
        help="pipeline modes to consider",
    )
    parser.add_argument(
        "--write", choices=WRITE_SEMANTICS, default="batch-mean",
        help="write semantics of an update: batch-mean (one analog write of the mean gradient) "
        "or per-sample (one rank-1 write per sample, as a crossbar does; guarantees Corollary "
        "3PS for sync, Theorem 4'PS for async; tiki-taka: Corollary TT0PS); default batch-mean",
    )
    parser.add_argument("--no-relax", action="store_true",
                        help="skip the geometric-programming relaxation")
    parser.add_argument("--json", action="store_true",
                        help="print {schema, version, plan, plan_error, modes} as one JSON object")
    parser.add_argument("--out", metavar="DIR", default=argparse.SUPPRESS,
                        help="also write DIR/plan.json and DIR/plan_alternatives.csv")
    parser.add_argument("--list-models", action="store_true",
                        help="list the built-in models and exit")
    parser.add_argument(
        "--algorithm", choices=PLAN_ALGORITHMS, type=_algorithm, default=PLAN_ALGORITHMS[0],
        help="the training algorithm: analog (analog SGD, the proved analog bounds; analog-sgd: "
        "the old spelling, deprecated) or tiki-taka (two "
        "arrays and transfers; its guarantee uses only proved tiki-taka bounds that meet the "
        "transfer settings, its forecast a calibration of aimc-pipeline calibrate --algorithm "
        "tiki-taka; cycles include the transfers)",
    )
    transfer, defaults = parser.add_argument_group("tiki-taka transfers"), TransferSettings()
    transfer.add_argument(
        "--transfer-every", type=int, metavar="T", default=defaults.every,
        help="tiki-taka: a transfer event after every T-th update (>= 1)",
    )
    transfer.add_argument(
        "--transfer-slice", choices=TRANSFER_SLICES, default=defaults.slice,
        help="tiki-taka: what an event moves: one column of every layer (round robin) or all "
        "columns; each column costs 2 clock cycles (a read and a pulse update), the slowest "
        "stage sets the event's cycles",
    )
    transfer.add_argument(
        "--transfer-reset", action="store_true",
        help="tiki-taka: a transfer sets the moved columns of A back to 0 (matched against the "
        "proved bounds' settings)",
    )
    transfer.add_argument(
        "--fast-device", metavar="NAME", default=argparse.SUPPRESS,
        help="tiki-taka: A's device, e.g. digital for an ideal buffer (matched against the "
        "proved bounds' settings; default: the preset's device)",
    )
    _add_calibration_flags(parser)
    kinds = parser.add_argument_group("accelerator kinds and modes (bounds.mode_planner)")
    kinds.add_argument(
        "--hardware", metavar="FILE.toml", default=argparse.SUPPRESS,
        help="hardware description with accelerator kinds ([[kinds]] tables: type analog or "
        "digital, count, tiles or memory_bytes, preset); also prints the best plan per mode",
    )
    kinds.add_argument(
        "--digital-accelerators", type=int, metavar="N", default=argparse.SUPPRESS,
        help="add N digital accelerators (A100-like defaults of bounds.hardware) to the "
        "--accelerators analog ones; also prints the best plan per mode",
    )
    kinds.add_argument("--compare-modes", action="store_true",
                       help="also print the best plan of each mode (sync, async, dp, hybrid)")
    kinds.add_argument(
        "--mode-micro-batch-sizes", type=int, nargs="+", metavar="b",
        default=list(ModeLimits().micro_batch_sizes),
        help="values of b the per-mode comparison searches",
    )


def _list_models() -> str:
    rows = []
    for name in list_models():
        s = load_model(name).summary()
        rows.append(f"{name:<14} {s['layers']:>4} layers  {s['weights']:>13,d} weights  "
                    f"{s['mvms_per_sample']:>9,d} MVMs/sample  {s['description']}")
    return "\n".join(rows)


def _json(result: Plan) -> str:
    """The plan as strict JSON (``Plan.to_dict`` has no NaN; ``allow_nan=False`` enforces it)."""
    return json.dumps(result.to_dict(), indent=2, allow_nan=False)


def _write_out(result: Plan, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / "plan.json", (_json(result) + "\n").encode())
    rows = [{"rank": i, **c.to_dict()} for i, c in enumerate((result.best, *result.alternatives))]
    table = io.StringIO(newline="")
    fields = [k for k in rows[0] if not isinstance(rows[0][k], list)]
    writer = csv.DictWriter(table, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write(out / "plan_alternatives.csv", table.getvalue().encode())


def run(args: argparse.Namespace) -> int:
    """Run the ``plan`` command; returns the exit status."""
    if args.list_models:
        print(_list_models())
        return 0
    # the flags first (cheap, and each names itself), then the model file
    check_range("eps", args.eps, 0, low_open=True)
    limits = PlanLimits(max_micro_batches=args.max_micro_batches,
                        max_micro_batch_size=args.max_micro_batch_size, modes=tuple(args.modes),
                        write=args.write)
    extra = {"weight_bound": args.weight_bound} if "weight_bound" in args else {}
    hardware = PlanHardware(
        from_preset(args.preset, **extra), accelerators=args.accelerators,
        tiles_per_accelerator=args.tiles_per_accelerator,
        activation_buffer_bytes=args.buffer_bytes, bytes_per_activation=args.bytes_per_activation,
    )
    kinds = _kinds(args, hardware)
    if kinds is not None and "hardware" in args:
        first = next(k for k in kinds.kinds if k.analog)
        hardware = PlanHardware(
            first.hardware, accelerators=first.count, tiles_per_accelerator=first.tiles,
            activation_buffer_bytes=args.buffer_bytes,
            bytes_per_activation=args.bytes_per_activation,
        )
    sizes = tuple(check_range("mode-micro-batch-sizes", b, 1, 10**9, integer=True)
                  for b in args.mode_micro_batch_sizes)
    mode_limits = ModeLimits(micro_batch_sizes=sizes) if kinds is not None else None
    problem_from_args(args)  # the flags checked now; the model file's [problem] joins below
    calibration = None
    if getattr(args, "calibration", None) is not None:
        from theory.calibration_file import read_calibration  # sympy: not for --help

        calibration = read_calibration(args.calibration,
                                       accept_edited=args.accept_edited_calibration)
        if calibration.edited:
            print(f"warning: --calibration={args.calibration!r} was edited after aimc-pipeline "
                  "calibrate wrote it (its checksum does not match); used because of "
                  "--accept-edited-calibration", file=sys.stderr)
    elif args.accept_edited_calibration:
        raise ParameterError("--accept-edited-calibration applies to --calibration FILE only")
    if args.step == "forecast" and calibration is None:
        raise ParameterError("--step forecast chooses the step by a calibration's forecast; "
                             "pass --calibration FILE (aimc-pipeline calibrate)")
    if args.step == "forecast" and args.algorithm == "tiki-taka":
        raise ParameterError("--step forecast plans analog SGD only; a Tiki-Taka plan runs at "
                             "the analog guarantee's step (use --step guarantee)")
    if "out" in args:
        check_output_dir(args.out, "--out", _OUT_FILES)
    if not getattr(args, "model", None):
        raise ParameterError(
            f"--model is required; give a built-in model ({', '.join(list_models())}) or a "
            "TOML file"
        )
    overrides = {"sequence_length": args.sequence_length} if "sequence_length" in args else {}
    # the search and the relaxation (cvxpy) only now: --help and flag errors do not need them
    from ..planning.planner import plan

    if args.algorithm == "tiki-taka":
        return _run_tiki_taka(args, hardware, limits, calibration, kinds, overrides)
    model = load_model(args.model, **overrides)
    problem, constants = _problem(args, model)
    extra = {"sources": constants.sources, "step": args.step}
    if calibration is not None:
        extra.update(calibration=calibration, calibration_source=str(args.calibration))
    if kinds is None:
        result = plan(model, hardware, problem, args.eps, limits, relax=not args.no_relax,
                      **extra)
        _warn_forecast(result)
        _write(args, result, None)
        if args.json:
            _print_json(result.to_dict())
        else:
            print(result.table())
        return 0
    from ..planning.kinds import plan_modes  # sympy: not for --help
    from ..planning.search_size import check_search

    # the mode search's size first (before the single-kind plan): refused before any work
    check_search(model, kinds, mode_limits, _kinds_flag(args, kinds))
    if args.write != "batch-mean":
        print(f"warning: --write {args.write}: the mode comparison (accelerator kinds) uses the "
              "batch-mean guarantees; only the single-kind plan uses the per-sample ones",
              file=sys.stderr)
    # with kinds, a single-kind plan that cannot be made does not stop the mode comparison
    try:
        result, failure = plan(model, hardware, problem, args.eps, limits,
                               relax=not args.no_relax, **extra), None
    except ParameterError as error:  # includes UnreachableTargetError
        result, failure = None, str(error)
    if result is not None:
        _warn_forecast(result)
    modes = plan_modes(model, kinds, problem, args.eps, mode_limits,
                       parameter=_kinds_flag(args, kinds))
    modes_dict = {**modes.to_dict(), **constants.to_dict()}  # what the comparison is under
    _write(args, result, modes_dict)
    if args.json:
        _print_json(None if result is None else result.to_dict(), failure, modes_dict)
    else:
        # the constants once: in the plan's table, or above the comparison without a plan
        first = result.table() if result is not None else "\n".join([
            f"single-kind plan (first analog kind alone): not available: {failure}",
            *constants.lines(model.name)])
        print(first + "\n\n" + modes.table())
    return 0


def _problem(args: argparse.Namespace, model: Model) -> tuple:
    """The problem of the defaults, the model file's ``[problem]`` and the flags, with the
    source of each constant (:class:`~bounds.planning.constants.ProblemConstants`)."""
    return ProblemConstants.build(flags=given(args, PROBLEM_FLAGS), file=model.problem,
                                  where=str(args.model))


def _run_tiki_taka(args, hardware, limits, calibration, kinds, overrides) -> int:
    """``plan --algorithm tiki-taka`` (:func:`bounds.plan_tiki_taka`)."""
    from ..planning.tiki_taka import plan_tiki_taka

    if kinds is not None:
        raise ParameterError("algorithm=tiki-taka plans one accelerator kind; --hardware, "
                             "--digital-accelerators and --compare-modes are for analog")
    transfer = TransferSettings(every=args.transfer_every, slice=args.transfer_slice,
                                reset=args.transfer_reset,
                                fast_device=getattr(args, "fast_device", None))
    model = load_model(args.model, **overrides)
    problem, constants = _problem(args, model)
    extra = {"sources": constants.sources}
    if calibration is not None:
        extra.update(calibration=calibration, calibration_source=str(args.calibration))
    result = plan_tiki_taka(model, hardware, problem, args.eps, limits, transfer=transfer,
                            **extra)
    if result.calibration is not None and result.calibration["warning"]:
        print(f"warning: {result.calibration['warning']}", file=sys.stderr)
    text = json.dumps(result.to_dict(), indent=2, allow_nan=False)
    if "out" in args:
        with output_errors("--out"):
            Path(args.out).mkdir(parents=True, exist_ok=True)
            atomic_write(Path(args.out) / "plan.json", (text + "\n").encode())
    if args.json:
        _print_json(result.to_dict())
    else:
        print(result.table())
    return 0


def _print_json(plan_dict: dict | None, plan_error: str | None = None,
                modes: dict | None = None) -> None:
    """Print the one JSON shape of ``plan --json``: ``plan``, ``plan_error`` and ``modes``."""
    print_json("plan", indent=2, plan=plan_dict, plan_error=plan_error, modes=modes)


def _write(args: argparse.Namespace, result: Plan | None, modes: dict | None) -> None:
    """Write ``--out DIR`` files: plan.json and plan_alternatives.csv, and modes.json (``modes``:
    the comparison's JSON with the problem constants)."""
    if "out" not in args:
        return
    with output_errors("--out"):
        if result is not None:
            _write_out(result, Path(args.out))
        if modes is not None:
            Path(args.out).mkdir(parents=True, exist_ok=True)
            text = json.dumps(modes, indent=2, allow_nan=False) + "\n"
            atomic_write(Path(args.out) / "modes.json", text.encode())


def _warn_forecast(result: Plan) -> None:
    """One stderr line when the calibration's problem is not the plan's (fingerprint)."""
    if result.forecast is not None and result.forecast.warning:
        print(f"warning: {result.forecast.warning}", file=sys.stderr)


def _add_calibration_flags(parser: argparse.ArgumentParser) -> None:
    """``--calibration FILE`` and ``--accept-edited-calibration``."""
    parser.add_argument(
        "--calibration", metavar="FILE", default=argparse.SUPPRESS,
        help="a calibration file of aimc-pipeline calibrate: choose by the predicted "
        "(calibrated) time to eps, in seconds with its prediction interval (the calibration's "
        "level, 90%% by default, including the model's own error), and report the guaranteed "
        "(proved, worst-case) time beside it",
    )
    parser.add_argument(
        "--accept-edited-calibration", action="store_true",
        help="use a --calibration file whose checksum does not match its content (edited after "
        "calibrate wrote it; every other check still applies); the plan's text and JSON say so",
    )
    parser.add_argument(
        "--step", choices=STEP_CHOICES, default=STEP_CHOICES[0],
        help="the step the --calibration forecast plans run at: 'guarantee' (default), the "
        "proved bound's best step for eps; 'forecast', each configuration's step of fewest "
        "predicted time up to the stability limit 2 sin(pi/(4D+2))/(L q_max), reported with "
        "whether it is inside the proved step cap and the guarantee there (none above the cap). "
        "Needs --calibration FILE of an oracle problem; analog SGD only",
    )


def _kinds(args: argparse.Namespace, hardware: PlanHardware) -> KindsHardware | None:
    """The accelerator kinds of the flags, or None when no mode comparison is asked for."""
    if "hardware" in args:
        if "digital_accelerators" in args:
            raise ParameterError(
                f"digital-accelerators={args.digital_accelerators} with --hardware: give the "
                "digital kind in the hardware file's [[kinds]] instead"
            )
        return load_hardware(args.hardware)
    if "digital_accelerators" in args:
        check_range("--digital-accelerators", args.digital_accelerators, 1, MAX_COUNT,
                    integer=True)
        return with_digital(single_kind(hardware), args.digital_accelerators)
    return single_kind(hardware) if args.compare_modes else None


def _kinds_flag(args: argparse.Namespace, kinds: KindsHardware) -> tuple[str, object]:
    """The flag (and its value) that asked for the mode search, for a refusal of its size: the
    hardware file's ``kinds`` (their number), ``--digital-accelerators`` or ``--accelerators``."""
    if "hardware" in args:
        return f"--hardware={str(args.hardware)!r}: kinds", len(kinds.kinds)
    if "digital_accelerators" in args:
        return "--digital-accelerators", args.digital_accelerators
    return "--accelerators", args.accelerators


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``aimc-pipeline plan``."""
    return command_main("aimc-pipeline plan", DESCRIPTION, build_parser, run, argv)
