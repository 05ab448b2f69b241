"""``aimc-pipeline bounds``: evaluate and compare the complexity bounds for given hardware.

Prints, for one target ``eps``, the iterations, samples, clock cycles and seconds each registry
entry needs (digital SGD, analog SGD without pipeline, the synchronous and asynchronous pipelines,
the literature rows), with the speedups over analog SGD without pipeline. Hardware comes from a
preset (``--device``) or a TOML file (``--hardware``, layout in :mod:`bounds.params`); flags
override single values. ``--json`` prints ``{"schema": "aimc-pipeline/bounds/1", "version": ...,
"rows": [...]}``, ``--out DIR`` writes the rows to ``DIR/bounds.csv``, ``--list-presets`` lists
the presets, ``--latex`` every registry entry as LaTeX. ``--preset``, ``--config`` and ``--csv
FILE`` are the old spellings (deprecated, still accepted). ``python -m bounds`` runs this command.
"""

from __future__ import annotations

import argparse
import csv
import io
from collections.abc import Sequence
from pathlib import Path

from theory import devices
from theory.commands import add_alias, command_main, print_json
from theory.errors import ParameterError
from theory.fileio import atomic_write, check_output_dir, check_output_file, output_errors

from ..params import (
    DEFAULT_EPS,
    DEFAULT_PRESET,
    BoundsConfig,
    HardwareParams,
    PipelineConfig,
    ProblemParams,
    from_preset,
    load_config,
)
from .options import (
    add_flags,
    add_problem_flags,
    add_weight_bound_flag,
    given,
    init_fields,
    problem_from_args,
)

__all__ = [
    "CSV_FILE", "DESCRIPTION", "TABLE_MARKERS", "bounds_config_from_args", "build_parser", "main",
    "readme_table", "run",
]

#: the file ``--out DIR`` writes
CSV_FILE = "bounds.csv"

DESCRIPTION = (
    "Evaluate and compare the complexity bounds (iterations, samples, clock cycles, seconds to "
    "reach a target eps) of digital SGD, analog SGD and analog SGD with synchronous (SP) and "
    "asynchronous (AP) pipelines for given hardware. eps is the target of the average squared "
    "gradient norm (1/K) sum_k E||grad f(W_k)||^2, in squared-gradient units (those of sigma2); "
    "cycles are pipeline clock cycles (one stage doing one forward or backward of one "
    "micro-batch); seconds = cycles x the slowest stage's cycle time (bounds.timing). A target "
    "at or below an entry's asymptotic floor gives that row the floor instead of numbers; if no "
    "analog entry can reach it the command fails with the floor in the message."
)


def build_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``bounds`` options to ``parser`` (units and defaults in each help text)."""
    source = parser.add_mutually_exclusive_group()
    device = source.add_argument(
        "--device", metavar="NAME", dest="preset", default=argparse.SUPPRESS,
        help=f"hardware preset (see --list-presets); default {DEFAULT_PRESET} (--preset: the "
        "old spelling, deprecated)",
    )
    add_alias(source, "--preset", device)
    hardware = source.add_argument(
        "--hardware", metavar="FILE.toml", dest="config", type=Path, default=argparse.SUPPRESS,
        help="TOML file with preset = NAME or [device], and [timing], [problem], [pipeline] "
        "(--config: the old spelling, deprecated)",
    )
    add_alias(source, "--config", hardware)
    parser.add_argument(
        "--eps", type=float, metavar="E", default=argparse.SUPPRESS,
        help="target of the average squared gradient norm (1/K) sum_k E||grad f(W_k)||^2, "
        f"squared-gradient units (those of sigma2); default {DEFAULT_EPS:g}",
    )
    pipe = PipelineConfig()
    add_flags(parser, (
        ("--stages", "stages", int, "M",
         f"pipeline stages M (accelerators); default {pipe.stages}"),
        ("--micro-batches", "micro_batches", int, "B",
         "micro-batches per mini-batch B (synchronous pipeline, and the mini-batch B*b of the "
         f"non-pipelined baselines); default {pipe.micro_batches}"),
        ("--micro-batch-size", "micro_batch_size", int, "b",
         f"samples per micro-batch b; default {pipe.micro_batch_size}"),
    ))
    add_weight_bound_flag(parser)
    add_flags(parser, [("--layers", "layers", int, "N",
                        "analog layers of the model (timing model); default 16")])
    add_problem_flags(parser)
    ball = parser.add_argument_group(
        "Corollary LF (the local-floor rows *_local, conditional on C_rho)",
        "G2_iter <= min(g_star + l RHO, G_inf)^2 when the iterates' noise-weighted RMS distance "
        "to W* is at most RHO (C_rho), l the Lipschitz constant of the device's G; both flags "
        "or neither")
    ball.add_argument("--g-star", type=float, metavar="X", default=None,
                      help="noise-weighted RMS of G at W* (any upper bound, e.g. max_i |G(w*_i)|)")
    ball.add_argument("--radius", type=float, metavar="RHO", default=None,
                      help="RHO of C_rho: the iterates' RMS distance to W* (weight units)")
    output = parser.add_mutually_exclusive_group()
    output.add_argument(
        "--json", action="store_true",
        help="print {schema, version, rows} as one JSON object, a row (algorithm, provenance, "
        "iterations, samples, cycles, seconds, floor, ...) per entry, instead of the table",
    )
    files = parser.add_mutually_exclusive_group()
    files.add_argument(
        "--out", metavar="DIR", type=Path, default=argparse.SUPPRESS,
        help=f"also write the rows to DIR/{CSV_FILE} (with the table or with --json)",
    )
    files.add_argument(
        "--csv", metavar="FILE", type=Path, default=argparse.SUPPRESS,
        help="also write the rows to the CSV file FILE (deprecated: use --out DIR)",
    )
    output.add_argument(
        "--list-presets", action="store_true", help="list the hardware presets and exit"
    )
    output.add_argument(
        "--latex", action="store_true", help="print every registry entry as LaTeX and exit"
    )
    output.add_argument(
        "--readme-table", action="store_true",
        help="print the README's Markdown table of every bound (between its markers) and exit",
    )


_PIPELINE_FLAGS = ("stages", "micro_batches", "micro_batch_size")
_HARDWARE_FLAGS = ("weight_bound", "layers")


def bounds_config_from_args(args: argparse.Namespace) -> BoundsConfig:
    """The :class:`~bounds.params.BoundsConfig` of the parsed options (file, then flags)."""
    hardware_flags = given(args, _HARDWARE_FLAGS)
    if hasattr(args, "config"):
        base = load_config(args.config)
        hardware = base.hardware
        if hardware_flags:
            hardware = HardwareParams(**{**init_fields(hardware), **hardware_flags})
        problem, pipeline, eps, preset = base.problem, base.pipeline, base.eps, base.preset
    else:
        preset = getattr(args, "preset", DEFAULT_PRESET)
        hardware = from_preset(preset, **hardware_flags)
        problem, pipeline, eps = ProblemParams(), PipelineConfig(), None
    problem = problem_from_args(args, problem)
    pipeline_flags = given(args, _PIPELINE_FLAGS)
    if pipeline_flags:
        pipeline = PipelineConfig(**{**init_fields(pipeline), **pipeline_flags})
    eps = getattr(args, "eps", eps if eps is not None else DEFAULT_EPS)
    return BoundsConfig(hardware=hardware, problem=problem, pipeline=pipeline, eps=eps,
                        preset=preset)


def _list_presets() -> str:
    lines = []
    for name in devices.list_presets():
        device = devices.load_preset(name)
        lines.append(
            f"{name:<28} {device.family:<22} range [{device.w_min:g}, {device.w_max:g}]  "
            f"dw_min {device.dw_min:g}"
        )
    return "\n".join(lines)


def _latex() -> str:
    from theory import REGISTRY  # built on first use (seconds): not for --help

    return "\n\n".join(
        f"% {name} ({bound.provenance}; {bound.reference})\n{bound.latex()}"
        for name, bound in REGISTRY.items()
    )


#: the markers around the generated table in README.md and docs/bounds-table.md
TABLE_MARKERS = ("<!-- bounds-table:start -->", "<!-- bounds-table:end -->")


def readme_table() -> str:
    """The README block: :func:`theory.complexity.latex_table` between :data:`TABLE_MARKERS`."""
    from theory import latex_table  # builds the registry: not for --help

    start, end = TABLE_MARKERS
    return f"{start}\n{latex_table().strip()}\n{end}"


def run(args: argparse.Namespace) -> int:
    """Run the command; returns the exit status (user errors propagate to ``command_main``)."""
    if args.list_presets:
        print(_list_presets())
        return 0
    if args.latex:
        print(_latex())
        return 0
    if args.readme_table:
        print(readme_table())
        return 0
    target, flag = _csv_target(args)
    from ..evaluation import compare  # sympy and the registry: imported to compute, not for --help

    config = bounds_config_from_args(args)
    g2_iter = _ball_g2_iter(args, config.hardware)
    comparison = compare(config.eps, config.hardware, config.problem, config.pipeline,
                         g2_iter=g2_iter)
    comparison.require_analog()
    rows = comparison.to_rows()
    if args.json:
        print_json("bounds", indent=2, rows=rows)
    else:
        print(comparison.table())
        if g2_iter is not None:
            print(f"note: *_local rows: Corollary LF, conditional on C_rho (the iterates' RMS "
                  f"distance to W* at most {args.radius:g}): G2_iter <= {g2_iter:.4g} "
                  f"(g_star = {args.g_star:g})")
    if target is not None:
        table = io.StringIO(newline="")
        writer = csv.DictWriter(table, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
        with output_errors(flag):
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, table.getvalue().encode("utf-8"))
    return 0


def _ball_g2_iter(args: argparse.Namespace, hardware: HardwareParams) -> float | None:
    """Corollary LF's ``G2_iter`` from ``--g-star`` and ``--radius`` (``None`` without them)."""
    if args.g_star is None and args.radius is None:
        return None
    if args.g_star is None or args.radius is None:
        raise ParameterError("--g-star and --radius go together (Corollary LF's C_rho); "
                             "valid: both or neither")
    from theory.local_floor import ball_g2_iter  # the device's response: not for --help

    return ball_g2_iter(hardware.device, args.g_star, args.radius,
                        float(hardware.device_constants().G_inf))


def _csv_target(args: argparse.Namespace) -> tuple[Path | None, str]:
    """The CSV file to write (``--out DIR`` or the old ``--csv FILE``) and its flag, checked
    before any work."""
    if "out" in args:
        return check_output_dir(args.out, "--out", (CSV_FILE,)) / CSV_FILE, "--out"
    if "csv" in args:
        return check_output_file(args.csv, "--csv"), "--csv"
    return None, "--out"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``aimc-pipeline bounds`` and ``python -m bounds``."""
    return command_main("aimc-pipeline bounds", DESCRIPTION, build_parser, run, argv)
