"""Tiki-Taka measurements (issue 16); every number is a ratio or a measurement of this same run.

Run from the repository root: ``python bench/tiki_taka.py [--quick]``.

(a) The companion statement as a measurement. ``tiki_taka_companion`` (theory.theorems) is the
    companion's Tiki-Taka rate with its unknown constant set to 1,
    ``sqrt(L Delta sigma2/(n K)) + L Delta/K``. On the oracle quadratic (dim 16, soft bounds
    tau = 0.4, expected update, Tiki-Taka defaults, n = 1 without pipeline and n = B b = 4 for the
    synchronous pipeline, whose iterates are the non-pipelined ones at n = 4: Proposition TT) the
    run uses the statement's step ``alpha = min(1/L, sqrt(Delta n/(sigma2 L K)))`` and the script
    prints ``measured average ||grad f||^2 / the order-1 expression``: the smallest constant
    ``C_TT`` with which the statement holds there (the mean over 8 seeds; no margin). For analog
    SGD the same ratio grows with K (its floor); for Tiki-Taka it should not.
(b) Cost of the simulation: Tiki-Taka against analog SGD on the same run (oracle quadratic and the
    digits MLP), the minimum of a few repeats.
(c) With ``--digits``: the digits MLP (16 layers of width 32, soft bounds tau = 2, step 0.1,
    micro-batches of 8, M = 4) at equal samples through SP (B = 4) and AP, with and without
    Tiki-Taka (T = 1 and T = 4): final test accuracy (mean +- std over seeds) and the cycles
    (transfers included) until the seed-mean test accuracy first reaches the target (logged
    every 5 % of the run).

No timing is asserted; nothing here is a test.
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import replace

from simulate import NetworkSpec, SimConfig, make_problem, run, train_network
from theory import compile_expr, get_bound
from theory.symbols import K


def companion_ratios(steps: tuple[int, ...], seeds: int) -> list[tuple]:
    """Rows ``(algorithm, mode, n, K, alpha, measured, statement, ratio)``."""
    rows = []
    for mode, batches in (("none", 1), ("sync", 4)):
        name = "tiki_taka_companion" if mode == "none" else "tiki_taka_sp"
        bound = get_bound(name)
        formula = compile_expr(bound.expr, K)
        for k in steps:
            for algorithm in ("analog", "tiki-taka"):
                config = SimConfig(algorithm=algorithm, mode=mode, stages=4 if mode == "sync"
                                   else 1, micro_batches=batches, tau=0.4, steps=k, seeds=seeds,
                                   log_every=max(1, k // 100))
                problem = make_problem(config)
                n = config.samples_per_update
                lr = min(1 / problem.L, math.sqrt(problem.Delta * n
                                                  / (problem.sigma2 * problem.L * k)))
                trace = run(replace(config, lr=float(f"{lr:.4g}")))
                measured = float(trace.avg_grad_norm2.mean())
                values = {"L": problem.L, "Delta": problem.Delta, "sigma2": problem.sigma2,
                          "n": n, "B": batches, "b": 1}
                statement = float(formula(k, values))
                rows.append((algorithm, mode, n, k, lr, measured, statement, measured / statement))
    return rows


def digits_rows(samples: int, seeds: int, target: float) -> list[tuple]:
    """Rows ``(algorithm, mode, updates, final accuracy mean, std, cycles to target)``; the
    target is reached up to float rounding of the seed mean (``>= target - 1e-9``)."""
    rows = []
    spec = NetworkSpec(grad_norm=False)
    for label, algorithm, every in (("analog", "analog", 1), ("TT, T=1", "tiki-taka", 1),
                                    ("TT, T=4", "tiki-taka", 4)):
        for mode, batches in (("sync", 4), ("async", 1)):
            steps = samples // (8 * batches)
            config = SimConfig(problem="digits-mlp", algorithm=algorithm, mode=mode, stages=4,
                               micro_batches=batches, micro_batch_size=8, tau=2.0, lr=0.1,
                               steps=steps, seeds=seeds, log_every=max(1, steps // 20),
                               transfer_every=every)
            trace = train_network(config, spec=spec).trace
            curve = trace.test_accuracy.mean(axis=0)
            hit = [i for i, v in enumerate(curve) if v >= target - 1e-9]
            cycles = int(trace.cycles[hit[0]]) if hit else None
            final = trace.test_accuracy[:, -1]
            rows.append((label, mode, steps, float(final.mean()), float(final.std()), cycles))
    return rows


def best_seconds(function, repeats: int) -> float:
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer updates and seeds")
    parser.add_argument("--digits", action="store_true", help="also run (c), a few minutes")
    args = parser.parse_args(argv)
    steps = (500, 2000) if args.quick else (500, 2000, 8000)
    seeds = 4 if args.quick else 8
    print("(a) measured average ||grad f||^2 / the companion statement with C_TT = 1")
    print(f"{'algorithm':<10} {'mode':<5} {'n':>2} {'K':>5} {'alpha':>8} {'measured':>10} "
          f"{'statement':>10} {'ratio':>7}")
    for algorithm, mode, n, k, lr, measured, statement, ratio in companion_ratios(steps, seeds):
        print(f"{algorithm:<10} {mode:<5} {n:>2} {k:>5} {lr:>8.4g} {measured:>10.4g} "
              f"{statement:>10.4g} {ratio:>7.3g}")
    print("\n(b) simulation cost, Tiki-Taka / analog SGD (same run)")
    repeats = 2 if args.quick else 3
    oracle = SimConfig(mode="async", stages=4, steps=2000, seeds=16, tau=0.4, lr=0.02)
    net = SimConfig(problem="digits-mlp", mode="async", stages=4, steps=100, seeds=2,
                    micro_batch_size=16, lr=0.1, log_every=100)
    spec = NetworkSpec(grad_norm=False)
    for label, config, fn in (
        ("quadratic, async M=4, 2000 updates x 16 seeds", oracle, run),
        ("digits-mlp, async M=4, 100 updates x 2 seeds", net,
         lambda c: train_network(c, spec=spec)),
    ):
        analog = best_seconds(lambda c=config, f=fn: f(c), repeats)
        tt = best_seconds(lambda c=config, f=fn: f(replace(c, algorithm="tiki-taka")), repeats)
        print(f"  {label}: {tt / analog:.2f}x ({tt:.2f} s vs {analog:.2f} s)")
    if args.digits:
        samples, seeds, target = (3200, 2, 0.5) if args.quick else (9600, 3, 0.7)
        print(f"\n(c) digits MLP, M = 4, b = 8, {samples} samples, {seeds} seeds; cycles to test "
              f"accuracy {target:g}")
        for algorithm, mode, steps, mean, std, cycles in digits_rows(samples, seeds, target):
            shown = "not reached" if cycles is None else f"{cycles}"
            print(f"  {algorithm:<10} {mode:<5} {steps:>5} updates  accuracy {mean:.3f} +- "
                  f"{std:.3f}  cycles to target {shown}")


if __name__ == "__main__":
    main()
