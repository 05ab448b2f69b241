"""``aimc-pipeline simulate``: train with digital or analog SGD through a pipeline, print a summary.

Prints a summary table (ensemble means over the ``--seeds`` runs) by default, the whole trace as
JSON with ``--json`` (``{"schema": "aimc-pipeline/simulate/1", "version": ..., "trace": {...}}``),
and writes ``trace.csv`` and ``trace.json`` into ``--out``. A progress bar is shown on a terminal
only.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence

import numpy as np

from theory.commands import add_config_flags, command_main, config_from_args, print_json
from theory.errors import ParameterError
from theory.fileio import check_output_dir, output_errors

from ..config import NotApplicableError, SimConfig
from ..device import DEFAULT_TAU, PinnedWarning, check_device_tau
from ..execution import progress_bar
from ..trace import Trace
from .options import add_output_arguments

__all__ = ["DESCRIPTION", "build_parser", "main", "run", "summary_rows"]

DESCRIPTION = (
    "Simulate digital or analog SGD on an oracle problem (quadratic, least squares) or a network "
    "(digits MLP / residual MLP) through no pipeline, the synchronous pipeline or the asynchronous "
    "pipeline. Iterations are updates: none/sync use B*b samples per update, async b. Time is in "
    "clock cycles (one stage doing one forward or backward of one micro-batch)."
)


class _DefaultTau(float):
    """The default of ``--tau`` (shown as 1.0), told apart from a ``--tau`` the user typed."""


#: ``--tau`` when not given: a fixed-range preset then records no tau, any other device 1.0
_TAU_NOT_GIVEN = _DefaultTau(DEFAULT_TAU)


def build_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``simulate`` options to ``parser``: one flag per :class:`SimConfig` field, output."""
    add_config_flags(parser, SimConfig)
    parser.set_defaults(tau=_TAU_NOT_GIVEN)
    add_output_arguments(
        parser, out_help="directory for trace.csv and trace.json",
        json_help="print {schema, version, trace} as one JSON object on stdout instead of a table",
    )


def summary_rows(trace: Trace) -> list[tuple[str, str]]:
    """The summary table: (quantity, value) with ensemble mean +- std where it applies."""

    def stat(values) -> str:
        values = np.asarray(values, dtype=float)
        if values.size == 0 or np.all(np.isnan(values)):
            return "n/a"
        if values.size == 1:
            return f"{values[0]:.6g}"
        return f"{np.mean(values):.6g} +- {np.std(values, ddof=1):.2g}"

    return [
        ("updates", str(int(trace.step[-1]))),
        ("samples", str(int(trace.samples[-1]))),
        ("cycles", str(int(trace.cycles[-1]))),
        ("seeds", str(trace.seeds)),
        ("final loss", stat(trace.loss[:, -1])),
        ("final ||grad f||^2", stat(trace.grad_norm2[:, -1])),
        ("mean ||grad f||^2 over iterates", stat(trace.avg_grad_norm2)),
        ("final test accuracy", stat(trace.test_accuracy[:, -1])),
        ("max |w| visited", stat(trace.max_abs_w)),
    ]


def run(args: argparse.Namespace) -> int:
    """Run the simulation of ``args``; print the summary (or JSON); write ``--out`` files.

    Checked before any work: ``--out`` (:func:`~theory.fileio.check_output_dir`), a
    ``--tau`` typed for a preset whose range is fixed (refused), every field and resource limit
    (:class:`SimConfig`). A run pinned at the device bounds (:class:`PinnedWarning`) prints one
    warning line on stderr.
    """
    if args.out is not None:
        check_output_dir(args.out, "--out", ("trace.csv", "trace.json"))
    given_tau = args.tau is not _TAU_NOT_GIVEN
    tau = float(args.tau)
    if given_tau:
        check_device_tau(args.device, tau, explicit=True)
    try:
        config = config_from_args(SimConfig, args, tau=tau)
    except NotApplicableError as error:  # named as flags: --transfer-every=5 ... --algorithm ...
        raise ParameterError(error.flag_message) from None
    from ..engine import run as run_simulation  # numba and sympy: not for --help

    bar = progress_bar(config.steps, unit="update")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", PinnedWarning)
            trace = run_simulation(config, progress=bar.update)
    finally:
        bar.close()
    for warning in caught:
        if issubclass(warning.category, PinnedWarning):
            print(f"aimc-pipeline simulate: warning: {warning.message}", file=sys.stderr)
        else:  # anything else is shown as it would have been
            warnings.showwarning(warning.message, warning.category, warning.filename,
                                 warning.lineno)
    if args.out is not None:
        with output_errors("--out"):
            csv_path, json_path = trace.write(args.out)
        print(f"wrote {csv_path} and {json_path}", file=sys.stderr)
    if args.json:
        print_json("simulate", trace=trace.as_dict())
        return 0
    rows = summary_rows(trace)
    width = max(len(name) for name, _ in rows)
    print(_header(config))
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``aimc-pipeline simulate`` (and ``python -m simulate``)."""
    return command_main("aimc-pipeline simulate", DESCRIPTION, build_parser, run, argv)


def _header(config: SimConfig) -> str:
    """The summary's first line: the run's settings (those at their defaults left out)."""
    parts = [config.problem, f"mode={config.mode}", f"algorithm={config.algorithm}",
             f"M={config.stages}", f"B={config.micro_batches}", f"b={config.micro_batch_size}",
             f"device={config.device}", f"lr={config.lr:g}"]
    analog = config.algorithm != "digital"
    if config.update == "pulsed" and analog and config.pulse_type != "deterministic":
        parts.append(f"pulse_type={config.pulse_type}")
    if config.algorithm == "tiki-taka":
        parts += [f"T={config.transfer_every}", f"transfer_lr={config.transfer_lr:g}",
                  f"gamma={config.tt_gamma:g}", f"slice={config.transfer_slice}"]
        if config.fast_device:
            parts.append(f"fast_device={config.fast_device}")
        if config.transfer_reset:
            parts.append("reset")
    if config.digital_stages:
        parts.append(f"digital_stages={config.digital_stages}")
    if config.replicas > 1:
        parts += [f"replicas={config.replicas}", f"P={config.average_every}",
                  f"programming_error={config.programming_error:g}"]
    if config.write != "batch-mean":
        parts.append(f"write={config.write}")
    for name in ("forward_io", "backward_io"):
        if getattr(config, name) != "perfect":
            parts.append(f"{name}={getattr(config, name)}")
    if config.dtype != "float64":
        parts.append(f"dtype={config.dtype}")
    return ", ".join(parts)
