"""``aimc-pipeline simulate``: train with digital or analog SGD through a pipeline, print a summary.

Prints a summary table (ensemble means over the ``--seeds`` runs) by default, the whole trace as
JSON with ``--json``, and writes ``trace.csv`` and ``trace.json`` into ``--out``. A progress bar is
shown on a terminal only.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from .config import ALGORITHMS, PROBLEMS, UPDATES, SimConfig
from .engine import run as run_simulation
from .trace import Trace, strict_json

__all__ = ["DESCRIPTION", "build_parser", "run", "summary_rows"]

DESCRIPTION = (
    "Simulate digital or analog SGD on an oracle problem (quadratic, least squares) or a network "
    "(digits MLP / residual MLP) through no pipeline, the synchronous pipeline or the asynchronous "
    "pipeline. Iterations are updates: none/sync use B*b samples per update, async b. Time is in "
    "clock cycles (one stage doing one forward or backward of one micro-batch)."
)

_DEFAULTS = SimConfig()


def build_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``simulate`` options to ``parser``."""
    d = _DEFAULTS
    add = parser.add_argument
    add("--problem", choices=PROBLEMS, default=d.problem, help="training problem")
    add("--mode", choices=("none", "sync", "async"), default=d.mode, help="pipeline schedule")
    add("--algorithm", choices=ALGORITHMS, default=d.algorithm, help="digital or analog SGD")
    add("--stages", "-M", type=int, default=d.stages,
        help="pipeline stages M (1 to 64; at most --dim for the quadratic, layers for networks)")
    add("--micro-batches", "-B", type=int, default=d.micro_batches,
        help="micro-batches per mini-batch B (none, sync; ignored by async)")
    add("--micro-batch-size", "-b", type=int, default=d.micro_batch_size,
        help="samples per micro-batch b")
    add("--device", default=d.device,
        help="device preset (e.g. reram-softbounds) or response family (e.g. softbounds)")
    add("--tau", type=float, default=d.tau,
        help="dynamic range tau of a soft-bounds/power/exponential device (weight units)")
    add("--update", choices=UPDATES, default=d.update,
        help="analog update: expected, or pulse-level with stochastic rounding")
    add("--lr", type=float, default=d.lr, help="step size alpha (weight units per gradient unit)")
    add("--steps", "-K", type=int, default=d.steps, help="updates K")
    add("--seeds", "-R", type=int, default=d.seeds, help="ensemble size R (independent runs)")
    add("--log-every", type=int, default=d.log_every,
        help="record the trace every this many updates")
    add("--dim", type=int, default=d.dim, help="dimension of the oracle quadratic")
    add("--sigma2", type=float, default=d.sigma2,
        help="per-sample gradient-noise variance of the oracle problems")
    add("--seed", type=int, default=d.seed, help="root seed")
    add("--out", default=None, help="directory for trace.csv and trace.json")
    add("--json", action="store_true", help="print the trace as JSON on stdout instead of a table")


def _config(args: argparse.Namespace) -> SimConfig:
    return SimConfig(
        problem=args.problem, mode=args.mode, algorithm=args.algorithm, stages=args.stages,
        micro_batches=args.micro_batches, micro_batch_size=args.micro_batch_size,
        device=args.device, tau=args.tau, update=args.update, lr=args.lr, steps=args.steps,
        seeds=args.seeds, log_every=args.log_every, dim=args.dim, sigma2=args.sigma2,
        seed=args.seed,
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
    """Run the simulation of ``args``; print the summary (or JSON); write ``--out`` files."""
    config = _config(args)
    bar = None
    if sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=config.steps, unit="update", file=sys.stderr)
    try:
        trace = run_simulation(config, progress=None if bar is None else bar.update)
    finally:
        if bar is not None:
            bar.close()
    if args.out:
        csv_path, json_path = trace.write(args.out)
        print(f"wrote {csv_path} and {json_path}", file=sys.stderr)
    if args.json:
        print(json.dumps(strict_json(trace.as_dict()), allow_nan=False))
        return 0
    rows = summary_rows(trace)
    width = max(len(name) for name, _ in rows)
    print(f"{config.problem}, mode={config.mode}, algorithm={config.algorithm}, "
          f"M={config.stages}, B={config.micro_batches}, b={config.micro_batch_size}, "
          f"device={config.device}, lr={config.lr:g}")
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    return 0
