"""Propositions IO and IO' against simulation: bound / simulated on runs with a gradient bias.

Run ``python -m bench.biased_floors [--steps K] [--seeds R] [--quick]`` from the repository root.
Each run is the oracle quadratic with a fixed gradient bias of norm ``beta`` (``grad_bias``,
:func:`simulate.problems.oracle_run.gradient_bias`: along ``W* - W_0``, against the descent),
soft bounds of range ``tau``, noise ``sigma2``, the expected analog update and the step
``fraction`` of Proposition IO's cap on the run's region (:class:`simulate.verification.Case`;
IO and IO' share that cap). Both entries are checked on the **same** run
(:func:`simulate.verification.check_bound`, each at its own tightest admissible ``theta`` and
the constants that held) and the script prints, per run: the simulated average of
``||grad f(W_k)||^2`` (+- one standard error over seeds), each bound, its ratio bound / simulated
(>= 1: the bound holds), each floor, and whether the one-sided check passed.

The first three runs are those of ``../shared/theory-turn3.md`` section 2 (beta 0.1, tau 3,
sigma2 0.01; beta 0.3, sigma2 1; beta 0.5, sigma2 0.01, tau 1); the last is an almost digital
device (``tau = 50``: ``q_max / q_min - 1 < 0.01`` on the visited region, ``G_inf ~ 0``), where
IO''s floor tends to ``beta^2 (1 + theta^2)/(1 - theta)``. Nothing is asserted (the tests are in
``tests/test_biased_sharp.py``); ``docs/results/biased-floors.md`` records the output.
"""

from __future__ import annotations

import argparse

from simulate.verification import Case, check_bound
from theory import compile_expr, get_bound, text_table

#: (beta, tau, sigma2, fraction of the cap) of each run
RUNS = ((0.1, 3.0, 0.01, 0.5), (0.3, 1.0, 1.0, 0.5), (0.5, 1.0, 0.01, 0.2), (0.3, 50.0, 0.01, 0.5))
NAMES = ("analog_sgd_biased", "analog_sgd_biased_sharp")


def measure(steps: int, seeds: int) -> list[list[str]]:
    """One table row per run: the simulated average, and per entry its bound, ratio and floor."""
    rows = []
    for beta, tau, sigma2, fraction in RUNS:
        config = Case(NAMES[0], fraction, grad_bias=beta, tau=tau, sigma2=sigma2, steps=steps,
                      seeds=seeds).config()
        checks = [check_bound(name, config) for name in NAMES]
        floors = []
        for name, check in zip(NAMES, checks, strict=True):
            floor = compile_expr(get_bound(name).floor)
            floors.append(floor({p: check.constants[p] for p in floor.parameters}))
        sim = checks[0]
        rows.append([
            f"{beta:g}", f"{tau:g}", f"{sigma2:g}", f"{config.lr:.4g}",
            f"{sim.empirical:.4g} +- {sim.stderr:.1g}",
            *(f"{check.bound:.4g}" for check in checks),
            *(f"{check.ratio:.3g}" for check in checks),
            *(f"{floor:.4g}" for floor in floors),
            "yes" if all(check.passed for check in checks) else "NO",
        ])
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--seeds", type=int, default=48)
    parser.add_argument("--quick", action="store_true", help="400 steps, 16 seeds")
    args = parser.parse_args(argv)
    steps, seeds = (400, 16) if args.quick else (args.steps, args.seeds)
    head = ["beta", "tau", "sigma2", "lr", "simulated", "IO bound", "IO' bound", "IO ratio",
            "IO' ratio", "IO floor", "IO' floor", "both hold"]
    print(f"K = {steps}, R = {seeds} seeds, oracle quadratic, expected analog update")
    print(text_table(head, measure(steps, seeds)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
