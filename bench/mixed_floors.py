"""Floors of a mixed analog/digital pipeline at M = 4: simulation against Theorem 2M.

Run ``python -m bench.mixed_floors [--steps K] [--seeds R]`` from the repository root. For each
schedule (``none``, ``sync`` with ``B = 4``, ``async``) on the oracle quadratic (``dim = 16``,
``sigma2 = 1``, soft bounds ``tau = 1``, one step ``lr`` for every row) it runs the stages
analog, half digital (stages 1, 2) and all digital (``algorithm="mixed"``, ``digital_stages``)
and prints:

- ``sim floor``: the mean of ``||grad f(W_k)||^2`` over the last half of the run
  (:func:`simulate.verification.checks.empirical_floor`, +- one standard error over seeds), the
  asymptotic error of the simulation (noise ball plus analog bias);
- ``bound floor``: Theorem 2M's floor ``G2_bar sigma2/(theta n q_min^2)`` and ``bound limit``: the
  bound as ``K -> inf`` at this step (floor plus ``L alpha p2_bar sigma2/(n q_min)``, plus the
  staleness term for ``async``), both at the theta the check of the run chose
  (:func:`simulate.verification.checks.check_bound`: the tightest admissible one at ``K``) and with
  the constants that held in the run (the analog stages' visited region).

The three rows of a schedule draw the same noise (paired). Nothing is asserted; the numbers are
those of the README's "Mixed analog and digital stages".
"""

from __future__ import annotations

import argparse

from simulate import SimConfig, check_bound, empirical_floor
from theory import compile_expr, get_bound, text_table
from theory.symbols import K

ROWS = (("all analog", ""), ("half digital", "1,2"), ("all digital", "1,2,3,4"))
MODES = (("none", "analog_sgd_mixed", 1), ("sync", "analog_sgd_sp_mixed", 4),
         ("async", "analog_sgd_ap_mixed", 1))


def measure(steps: int, seeds: int, lr: float) -> list[list[str]]:
    """One table row per (schedule, digital stages)."""
    rows = []
    for mode, name, micro_batches in MODES:
        bound = get_bound(name)
        limit = compile_expr(bound.expr.subs(K, 1e300))  # K -> inf at this alpha
        for label, digital in ROWS:
            config = SimConfig(problem="quadratic", mode=mode, algorithm="mixed", stages=4,
                               micro_batches=micro_batches, lr=lr, steps=steps, seeds=seeds,
                               digital_stages=digital, log_every=steps)
            floor = empirical_floor(config)
            check = check_bound(name, config)
            c = check.constants
            values = {p: c[p] for p in compile_expr(bound.floor).parameters}
            at_lr = {**{p: c[p] for p in limit.parameters if p != "alpha"}, "alpha": lr}
            rows.append([
                mode, label, f"{c['G2_bar']:.4f}", f"{floor.mean:.5f} +- {floor.stderr:.1g}",
                f"{compile_expr(bound.floor)(values):.5f}",
                f"{limit(at_lr):.5f}",
                f"{c['theta']:.3f}" if c.get("theta") is not None else "-",
            ])
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--seeds", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.01)
    args = parser.parse_args(argv)
    head = ["mode", "stages", "G2_bar", "sim floor", "bound floor", "bound limit", "theta"]
    print(text_table(head, measure(args.steps, args.seeds, args.lr)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
