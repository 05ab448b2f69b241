"""The ``aimc-pipeline plan`` command: choose mode, stages, partition and micro-batches.

``aimc-pipeline plan --model NAME|FILE --accelerators P [--eps E] [--preset NAME] [--json]`` prints
the chosen plan (mode, M, partition, B, b, predicted iterations, cycles and seconds to eps), the
three best alternatives, which term of the bound dominates, and the relaxed optimum with the gap;
``--json`` prints the same fields as one JSON object, ``--out DIR`` also writes ``plan.json`` and
``plan_alternatives.csv``. ``--list-models`` lists the built-in models.
"""

from __future__ import annotations

import argparse
import csv
import json
from collections import Counter
from pathlib import Path

from theory.errors import ParameterError

from .models import list_models, load_model
from .params import ProblemParams, from_preset
from .planner import Plan, PlanHardware, PlanLimits, plan

__all__ = ["DESCRIPTION", "build_parser", "format_plan", "run"]

DESCRIPTION = (
    "Choose the pipeline mode (sync or async), the number of stages M, a contiguous layer "
    "partition, the micro-batches per mini-batch B and the samples per micro-batch b that minimise "
    "the predicted wall-clock time to reach eps = target of the average squared gradient norm "
    "(iterations from the theory's bound x clock cycles per iteration x seconds per cycle of the "
    "slowest stage), subject to the tiles and activation memory of each accelerator."
)

#: preset used when --preset is not given
DEFAULT_PRESET = "softbounds-tau1"


def build_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``plan`` options to ``parser`` (units and defaults in each help text)."""
    hw, limits, problem = PlanHardware.__dataclass_fields__, PlanLimits(), ProblemParams()
    parser.add_argument(
        "--model", metavar="NAME|FILE", default=argparse.SUPPRESS,
        help="a built-in model (see --list-models) or a model-description TOML file",
    )
    parser.add_argument(
        "--sequence-length", type=int, metavar="T", default=argparse.SUPPRESS,
        help="tokens per sample of a transformer model (MVMs per sample of each matrix); "
        "default: the model file's value",
    )
    parser.add_argument(
        "--accelerators", type=int, metavar="P", default=hw["accelerators"].default,
        help="number of AIMC accelerators available (one per pipeline stage)",
    )
    parser.add_argument(
        "--tiles-per-accelerator", type=int, metavar="T",
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
        "--eps", type=float, default=1.0,
        help="target for (1/K) sum_k E||grad f(W_k)||^2, in squared-gradient units (those of "
        "sigma2)",
    )
    parser.add_argument(
        "--preset", metavar="NAME", default=DEFAULT_PRESET,
        help="device and timing preset (aimc-pipeline bounds --list-presets); MVM read time in "
        "seconds, pulse width in seconds, bit length in pulses, tile size",
    )
    parser.add_argument(
        "--weight-bound", type=float, metavar="W", default=argparse.SUPPRESS,
        help="W_max, half-width of the visited weight region (device weight units); default "
        "half the distance from the symmetric point to the nearer device bound",
    )
    parser.add_argument("--L", type=float, dest="L", default=problem.L,
                        help="smoothness constant L (A1)")
    parser.add_argument("--L-s", type=float, dest="L_s", default=argparse.SUPPRESS,
                        help="Lipschitz constant L_s of the stale update signal (A4); default L")
    parser.add_argument("--delta", type=float, dest="Delta", default=problem.Delta,
                        help="initial optimality gap Delta = f(W_0) - f* (loss units)")
    parser.add_argument("--sigma2", type=float, default=problem.sigma2,
                        help="per-sample gradient variance sigma^2 (A2)")
    parser.add_argument("--theta", type=float, default=problem.theta,
                        help="Young's-inequality split theta of the analog bounds, in (0, 1)")
    parser.add_argument(
        "--max-micro-batches", type=int, metavar="B", default=limits.max_micro_batches,
        help="largest B searched (sync micro-batches per mini-batch)",
    )
    parser.add_argument(
        "--max-micro-batch-size", type=int, metavar="b", default=limits.max_micro_batch_size,
        help="largest b searched (samples per micro-batch)",
    )
    parser.add_argument(
        "--modes", nargs="+", choices=("sync", "async"), default=list(limits.modes),
        help="pipeline modes to consider",
    )
    parser.add_argument("--no-relax", action="store_true",
                        help="skip the geometric-programming relaxation")
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    parser.add_argument("--out", metavar="DIR", default=argparse.SUPPRESS,
                        help="also write DIR/plan.json and DIR/plan_alternatives.csv")
    parser.add_argument("--list-models", action="store_true",
                        help="list the built-in models and exit")


def _list_models() -> str:
    rows = []
    for name in list_models():
        s = load_model(name).summary()
        rows.append(f"{name:<14} {s['layers']:>4} layers  {s['weights']:>13,d} weights  "
                    f"{s['mvms_per_sample']:>9,d} MVMs/sample  {s['description']}")
    return "\n".join(rows)


def _partition_summary(sizes) -> str:
    """Layers per stage: the list for up to 16 stages, else counts (e.g. ``56 stages x 4``)."""
    if len(sizes) <= 16:
        return f"layers per stage {list(sizes)}"
    counts = Counter(sizes)
    return "layers per stage: " + ", ".join(
        f"{n} stages x {size}" for size, n in sorted(counts.items(), key=lambda kv: -kv[1])
    )


def _seconds(value: float) -> str:
    return f"{value:.4g} s"


def format_plan(result: Plan) -> str:
    """The human-readable report of a plan."""
    best = result.best
    sizes = best.partition.sizes
    lines = [
        f"plan for model {result.model!r} at eps = {result.eps:g}",
        f"  mode                 {best.mode}",
        f"  stages M             {best.stages}",
        f"  partition            {_partition_summary(sizes)}",
        f"  slowest stage        {best.partition.bottleneck} MVMs per sample, "
        f"{best.cycle_time_s:.4g} s per cycle",
        f"  micro-batches B      {best.micro_batches}" + ("  (async: one per update)"
                                                          if best.mode == "async" else ""),
        f"  micro-batch size b   {best.micro_batch_size}",
        f"  iterations           {best.iterations:,d}  ({best.samples:,d} samples)",
        f"  clock cycles         {best.cycles:,d}",
        f"  predicted time       {_seconds(best.seconds)}",
        f"  peak stage memory    {max(best.memory_bytes):,d} bytes",
        "  dominant term        " + result.dominant + "  ("
        + ", ".join(f"{k} = {v:.4g}" for k, v in result.terms.items()) + ")",
    ]
    r = result.relaxed
    if r.mode:
        lines.append(
            f"  relaxation (GP)      {_seconds(r.value)} at {r.mode}, M = {r.stages:.3g}, "
            f"B = {r.micro_batches:.3g}, b = {r.micro_batch_size:.3g}; gap {100 * result.gap:.3g}%"
        )
    lines.append(
        f"  solve times          exact search {result.solve_times['exact']:.3g} s "
        f"({result.solve_times['partition_solves']} partition DPs), relaxation "
        f"{result.solve_times['relaxation']:.3g} s"
    )
    if result.alternatives:
        lines.append("alternatives (best of the next (mode, M) pairs):")
        lines.append(f"  {'mode':<6} {'M':>4} {'B':>5} {'b':>5} {'iterations':>12} "
                     f"{'cycles':>14} {'seconds':>12}")
        for c in result.alternatives:
            lines.append(f"  {c.mode:<6} {c.stages:>4} {c.micro_batches:>5} "
                         f"{c.micro_batch_size:>5} {c.iterations:>12,d} {c.cycles:>14,d} "
                         f"{c.seconds:>12.4g}")
    for mode, reason in result.ruled_out:
        lines.append(f"ruled out: {mode}: {reason}")
    return "\n".join(lines)


def _json(result: Plan) -> str:
    """The plan as strict JSON (``Plan.to_dict`` has no NaN; ``allow_nan=False`` enforces it)."""
    return json.dumps(result.to_dict(), indent=2, allow_nan=False)


def _write_out(result: Plan, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "plan.json").write_text(_json(result) + "\n")
    rows = [{"rank": i, **c.to_dict()} for i, c in enumerate((result.best, *result.alternatives))]
    with (out / "plan_alternatives.csv").open("w", newline="") as handle:
        fields = [k for k in rows[0] if not isinstance(rows[0][k], list)]
        writer = csv.DictWriter(handle, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def run(args: argparse.Namespace) -> int:
    """Run the ``plan`` command; returns the exit status."""
    if args.list_models:
        print(_list_models())
        return 0
    if not getattr(args, "model", None):
        raise ParameterError(
            f"--model is required; give a built-in model ({', '.join(list_models())}) or a "
            "TOML file"
        )
    overrides = {"sequence_length": args.sequence_length} if "sequence_length" in args else {}
    model = load_model(args.model, **overrides)
    extra = {"weight_bound": args.weight_bound} if "weight_bound" in args else {}
    hardware = PlanHardware(
        from_preset(args.preset, **extra), accelerators=args.accelerators,
        tiles_per_accelerator=args.tiles_per_accelerator,
        activation_buffer_bytes=args.buffer_bytes, bytes_per_activation=args.bytes_per_activation,
    )
    problem = ProblemParams(L=args.L, Delta=args.Delta, sigma2=args.sigma2,
                            L_s=getattr(args, "L_s", None), theta=args.theta)
    limits = PlanLimits(args.max_micro_batches, args.max_micro_batch_size, tuple(args.modes))
    result = plan(model, hardware, problem, args.eps, limits, relax=not args.no_relax)
    if "out" in args:
        try:
            _write_out(result, Path(args.out))
        except OSError as error:
            raise ParameterError(f"out={args.out!r} cannot be written: {error.strerror}") \
                from None
    print(_json(result) if args.json else format_plan(result))
    return 0
