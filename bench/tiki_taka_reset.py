"""Corollary TT0's Tiki-Taka variant through the asynchronous pipeline: a measurement, not a bound.

Run from the repository root: ``python bench/tiki_taka_reset.py [--quick]``.

Corollary TT0 (docs/theory.md; registry ``tiki_taka_reset``, ``tiki_taka_reset_sp``) proves the
accumulate-and-transfer variant (``tt_gamma = 0``, slice ``all``, digital fast buffer, reset
after each transfer) without pipeline and through the synchronous pipeline; the asynchronous
pipeline is not proved. This script measures it there with ``T = B``: every write of C carries
the mean of ``T`` micro-batch gradients, as one synchronous update carries ``B``.

Setting: oracle quadratic (dim 16), soft bounds, expected update, ``sigma2 = 1``, ``b = 1``,
``M`` in (4, 16), ``B = T = M``, equal samples ``S`` for every schedule:

- ``analog SP``: analog SGD, ``mode=sync``, ``B = M`` micro-batches, ``S/B`` updates, step ``lr``;
- ``analog AP``: analog SGD, ``mode=async``, ``S`` updates, step ``lr``;
- ``TT0 AP``: the variant, ``mode=async``, ``S`` updates (``S/T`` writes), ``transfer_lr =
  1/(lr T)``, so that each write of C is the analog update of ``-lr`` times the window's mean
  gradient (the step ``rho alpha^2 T`` of Corollary TT0 equals ``lr``, the SP step);

The floor is the average of ``||grad f(W_k)||^2`` over the last half of the iterates
(:func:`simulate.verification.checks.empirical_floor`), mean over seeds with a 95 % interval (mean
+- 1.96 standard errors over seeds). Members of the three runs draw their own noise (independent
comparisons). ``cycles`` are the run's clock cycles, transfers included
(:func:`simulate.device.tiki_taka.transfer_cycles`). No timing is measured; nothing here is a test.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import replace

from simulate import SimConfig, empirical_floor, run
from simulate.verification import TT0_SETTINGS


def floors(stages: tuple[int, ...], taus: tuple[float, ...], samples: int, seeds: int,
           lr: float) -> list[tuple]:
    """Rows ``(tau, M, schedule, updates, cycles, mean, half-width of the 95 % interval)``."""
    rows = []
    for tau in taus:
        for m in stages:
            base = dict(problem="quadratic", stages=m, tau=tau, sigma2=1.0, lr=lr, seeds=seeds,
                        update="expected")
            runs = {
                "analog SP": SimConfig(algorithm="analog", mode="sync", micro_batches=m,
                                       steps=samples // m, **base),
                "analog AP": SimConfig(algorithm="analog", mode="async", steps=samples, **base),
                "TT0 AP": SimConfig(algorithm="tiki-taka", mode="async", steps=samples,
                                    transfer_every=m, transfer_lr=1.0 / (lr * m),
                                    **TT0_SETTINGS, **base),
            }
            for name, config in runs.items():
                est = empirical_floor(config)
                # clock cycles of the run (schedule + transfers), from one member's trace
                cycles = int(run(replace(config, seeds=1, log_every=config.steps)).cycles[-1])
                rows.append((tau, m, name, config.steps, cycles, est.mean, 1.96 * est.stderr))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples and seeds")
    args = parser.parse_args(argv)
    samples, seeds = (8192, 4) if args.quick else (32768, 12)
    lr = 0.02
    rows = floors((4, 16), (0.4, 1.0), samples, seeds, lr)
    print(f"floor: mean ||grad f||^2 over the last half, {samples} samples, {seeds} seeds, "
          f"lr = {lr}, sigma2 = 1, b = 1, B = T = M (95 % interval)")
    print(f"{'tau':>4} {'M':>3}  {'schedule':<10} {'updates':>8} {'cycles':>8} {'floor':>10}  "
          "interval")
    for tau, m, name, steps, cycles, mean, half in rows:
        print(f"{tau:4g} {m:3d}  {name:<10} {steps:8d} {cycles:8d} {mean:10.4g}  "
              f"[{mean - half:.4g}, {mean + half:.4g}]")
    print("\nratios (floor / analog SP floor, same tau and M)")
    by = {(tau, m, name): mean for tau, m, name, _, _, mean, _ in rows}
    for tau in (0.4, 1.0):
        for m in (4, 16):
            sp_floor = by[(tau, m, "analog SP")]
            text = ", ".join(f"{name} {by[(tau, m, name)] / sp_floor:.3g}"
                             for name in ("analog AP", "TT0 AP"))
            print(f"  tau={tau:g} M={m}: {text}")
    return 0 if all(math.isfinite(row[5]) for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
