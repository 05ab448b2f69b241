"""Batch-mean against per-sample writes: the floor on the quadratic and the digits MLP's accuracy.

``python -m bench.write_semantics [--quick]`` prints two tables (the README's *Write semantics*
numbers):

1. the oracle quadratic (d = 16, sigma2 = 1, expected update, soft bounds tau = 0.5 and 1, so
   G_inf > 0), mode ``none`` with ``n = B`` samples per update, n = 1, 4, 16, step 0.02:
   the tail average of ||grad f||^2 (the last half of the iterates,
   :func:`simulate.verification.checks.empirical_floor`), mean +- standard error over the seeds, for
   each write semantics, and the floor of its bound (Theorem 2 at n, Corollary 3PS) at the constants
   of the region the run visited, theta -> 1;
2. the digits MLP (16 x 32 tanh) at b = 32, mode ``none``, analog expected update (soft bounds
   tau = 2, the README's accuracy table's device and step), final test accuracy for each write
   semantics, mean +- std over seeds.
"""

from __future__ import annotations

import argparse
import time

from simulate import SimConfig, device_from_config, empirical_floor, run
from theory import text_table


def floors(quick: bool) -> list[list[str]]:
    rows = []
    steps, seeds = (2000, 8) if quick else (8000, 16)
    for tau in (0.5, 1.0):
        for n in (1, 4, 16):
            row = [f"{tau:g}", str(n)]
            for write in ("batch-mean", "per-sample"):
                config = SimConfig(micro_batches=n, tau=tau, lr=0.02, steps=steps, seeds=seeds,
                                   write=write)
                est = empirical_floor(config)
                dc = device_from_config(config).constants(est.w_lo, est.w_hi)
                batch = n if write == "batch-mean" else 1  # Theorem 2 / Corollary 3PS
                floor = dc.G_inf**2 * est.constants["sigma2"] / (batch * dc.q_min**2)
                row += [f"{est.mean:.5f} +- {est.stderr:.5f}", f"{floor:.4f}"]
            rows.append(row)
    return rows


def accuracy(quick: bool) -> list[list[str]]:
    rows = []
    samples = 38_400 if not quick else 9_600
    for write in ("batch-mean", "per-sample"):
        config = SimConfig(problem="digits-mlp", micro_batch_size=32, tau=2.0, lr=0.1,
                           steps=samples // 32, seeds=2 if quick else 4,
                           log_every=samples // 32, write=write)
        start = time.perf_counter()
        trace = run(config)
        acc = trace.test_accuracy[:, -1]
        rows.append([write, f"{acc.mean():.3f} +- {acc.std():.3f}",
                     f"{time.perf_counter() - start:.0f} s"])
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps and seeds")
    args = parser.parse_args(argv)
    print(text_table(["tau", "n", "batch-mean: tail ||grad f||^2", "floor (Thm 2)",
                      "per-sample: tail ||grad f||^2", "floor (Cor 3PS)"], floors(args.quick)))
    print("floors at theta -> 1 (their smallest value) with the constants of the visited region")
    print()
    print(text_table(["write", "digits-mlp test accuracy (b = 32)", "time"],
                     accuracy(args.quick)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
