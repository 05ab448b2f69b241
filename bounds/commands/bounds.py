"""``aimc-pipeline bounds``: evaluate and compare the complexity bounds for given hardware.

Prints, for one target ``eps``, the iterations, samples, clock cycles and seconds each registry
entry needs (digital SGD, analog SGD without pipeline, the synchronous and asynchronous pipelines,
the literature rows), with the speedups over analog SGD without pipeline. Hardware comes from a
preset (``--preset``) or a TOML file (``--config``, layout in :mod:`bounds.params`); flags override
single values. ``--json`` / ``--csv FILE`` give machine-readable rows, ``--list-presets`` the
presets, ``--latex`` every registry entry as LaTeX. ``python -m bounds`` runs this command.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from theory import ParameterError, devices, strict_json
from theory.commands import command_main

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
    "DESCRIPTION", "TABLE_MARKERS", "bounds_config_from_args", "build_parser", "main",
    "readme_table", "run",
]

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
    source.add_argument(
        "--preset", metavar="NAME", default=argparse.SUPPRESS,
        help=f"hardware preset (see --list-presets); default {DEFAULT_PRESET}",
    )
    source.add_argument(
        "--config", metavar="FILE.toml", type=Path, default=argparse.SUPPRESS,
        help="TOML file with preset = NAME or [device], and [timing], [problem], [pipeline]",
    )
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
    output = parser.add_mutually_exclusive_group()
    output.add_argument(
        "--json", action="store_true",
        help="print a JSON list of rows (algorithm, provenance, iterations, samples, cycles, "
        "seconds, floor, ...) instead of the table",
    )
    parser.add_argument(
        "--csv", metavar="FILE", type=Path, default=argparse.SUPPRESS,
        help="also write the rows to a CSV file (with the table or with --json)",
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
    from ..evaluation import compare  # sympy and the registry: imported to compute, not for --help

    config = bounds_config_from_args(args)
    comparison = compare(config.eps, config.hardware, config.problem, config.pipeline)
    comparison.require_analog()
    rows = comparison.to_rows()
    if args.json:
        strict = strict_json(rows)
        json.dump(strict, sys.stdout, indent=2, allow_nan=False)
        print()
    else:
        print(comparison.table())
    if "csv" in args:
        try:
            with open(args.csv, "w", newline="", encoding="utf-8") as handle:
                writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
        except OSError as error:
            raise ParameterError(f"csv={str(args.csv)!r} cannot be written: {error.strerror}") \
                from None
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``aimc-pipeline bounds`` and ``python -m bounds``."""
    return command_main("aimc-pipeline bounds", DESCRIPTION, build_parser, run, argv)
