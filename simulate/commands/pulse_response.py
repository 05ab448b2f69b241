"""``aimc-pipeline pulse-response``: what a device does with one update (mean and std of its
increments over a tile of rows sharing one input bit train), per start weight and increment.

The experiment is :func:`simulate.device.response.pulse_response`; the flags are the fields of
:class:`simulate.device.response.PulseResponseConfig` (``--w0`` and ``--delta`` take lists).
``--json`` prints ``{"schema": "aimc-pipeline/pulse-response/1", "version": ..., "rows": [...]}``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from theory.commands import add_config_flags, command_main, config_from_args, print_json
from theory.tables import text_table

from ..device import PulseResponseConfig, pulse_response
from .options import add_output_arguments

__all__ = ["DESCRIPTION", "build_parser", "main", "run"]

DESCRIPTION = (
    "Fire one update on a tile of --devices rows and one input column (input --x, its bit train "
    "shared by every row; row error d = -delta/x, aihwkit's w -= lr x d with lr = 1) from each "
    "start weight --w0 with each desired increment --delta, and print the mean and std over the "
    "rows of the increment (weight units) and of the pulse count. Pulse types as aihwkit names "
    "them: stochastic (StochasticCompressed: coincidences of two Bernoulli trains of --bl bits, "
    "p = min(1, |v| sqrt(lr/(dw_min BL)))), mean-count (MeanCount), deterministic (stochastic "
    "rounding of |delta|/dw_min, the package's default for --update pulsed)."
)


def build_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``pulse-response`` options to ``parser``."""
    add_config_flags(parser, PulseResponseConfig, exclude=("w0", "delta"))
    parser.add_argument("--w0", type=float, nargs="+", default=[0.0], metavar="W",
                        help="start weights (weight units, inside the device range)")
    parser.add_argument("--delta", type=float, nargs="+", default=[0.01], metavar="D",
                        help="desired increments per update (weight units)")
    add_output_arguments(parser, json_help="print one JSON object {schema, version, rows}, a row "
                                           "(w0, delta, mean, std, n, pulses_mean, pulses_std, "
                                           "expected_pulses) per start weight and increment")


def run(args: argparse.Namespace) -> int:
    """Run the experiment and print the table or JSON."""
    config = config_from_args(PulseResponseConfig, args, w0=tuple(args.w0),
                              delta=tuple(args.delta))
    rows = pulse_response(config)
    if args.json:
        print_json("pulse-response", rows=[r.to_dict() for r in rows])
        return 0
    device = config.resolved_device()
    print(f"device {device.name} ({device.family}), dw_min {device.dw_min:g}, c2c "
          f"{device.dw_min_std:g} {device.c2c_noise}, pulse type {config.pulse_type}, "
          f"BL {config.bl}, x {config.x:g}, {config.devices} devices, seed {config.seed}")
    print(text_table(
        ("w0", "delta", "mean", "std", "n", "pulses mean", "pulses std", "expected pulses"),
        [(f"{r.w0:g}", f"{r.delta:g}", f"{r.mean:.6g}", f"{r.std:.4g}", r.n,
          f"{r.pulses_mean:.4g}", f"{r.pulses_std:.4g}", f"{r.expected_pulses:.4g}")
         for r in rows]))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``aimc-pipeline pulse-response``."""
    return command_main("aimc-pipeline pulse-response", DESCRIPTION, build_parser, run, argv)
