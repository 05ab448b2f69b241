"""Theorem LF against the worst case: bound / simulated over a verification suite.

Run ``python -m bench.local_floor [--suite quick|standard] [--jobs N]`` from the repository root.
The suite's checks are run once, uncached (:func:`simulate.verification.run_suite`); each local
row (``*_local``, Theorem LF: the floor with the measured iterate average ``G2_iter``) is checked
on the very run of its worst-case row. Printed, in one process:

- the median bound / simulated over every check the suite shows, and over its worst-case checks
  alone (the suite before Theorem LF);
- the **floor-dominated** checks: worst-case checks whose floor term (``Bound.floor``, the
  G term), at the check's constants and theta, is at least half the bound; the
  median of their ratios, and of their local rows' on the same runs;
- per floor-dominated check: the worst-case and the local ratio, ``G_inf^2`` and ``G2_iter``.

Nothing is asserted (the tests are ``tests/test_local_floor.py``).
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from simulate.verification import run_suite
from theory import compile_expr, get_bound, text_table

#: a check is floor-dominated when its floor is at least this share of its bound
FLOOR_SHARE = 0.5


def floor_share(check) -> float:
    """The floor term of the check's entry (``Bound.floor``, free of ``K`` and ``alpha``) at the
    check's constants and theta, over the bound value."""
    floor = compile_expr(get_bound(check.bound_name).floor)
    return float(floor(check.constants)) / check.bound


def _key(check) -> str:
    return json.dumps(check.config.to_dict(), sort_keys=True)


def summary(checks) -> tuple[dict, list[list[str]]]:
    """The medians and one row per floor-dominated worst-case check."""
    worst = [c for c in checks if get_bound(c.bound_name).floor_kind == "worst-case"]
    local = {(c.bound_name.removesuffix("_local"), _key(c)): c for c in checks
             if get_bound(c.bound_name).floor_kind != "worst-case"}
    dominated = [c for c in worst if floor_share(c) >= FLOOR_SHARE]
    pairs = [(c, local.get((c.bound_name, _key(c)))) for c in dominated]
    rows = [[c.bound_name, f"{floor_share(c):.2f}", f"{c.ratio:.3g}",
             "-" if lc is None else f"{lc.ratio:.3g}", f"{c.constants.get('G_inf', 0.0) ** 2:.3g}"
             if "G_inf" in c.constants else f"{c.constants.get('G2_bar', float('nan')):.3g}",
             "-" if lc is None else f"{lc.constants['G2_iter']:.3g}"] for c, lc in pairs]
    medians = {
        "checks": len(checks), "median": float(np.median([c.ratio for c in checks])),
        "worst-case checks": len(worst),
        "worst-case median": float(np.median([c.ratio for c in worst])),
        "floor-dominated": len(dominated),
        "floor-dominated worst-case median": float(np.median([c.ratio for c in dominated]))
        if dominated else None,
        "floor-dominated local median": float(np.median([lc.ratio for _, lc in pairs if lc]))
        if any(lc for _, lc in pairs) else None,
        "failed": sum(not c.passed for c in checks),
    }
    return medians, rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", choices=("quick", "standard"), default="quick")
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args(argv)
    checks = run_suite(args.suite, jobs=args.jobs, cache=False, progress=False)
    medians, rows = summary(checks)
    for name, value in medians.items():
        print(f"{name}: {value:.3g}" if isinstance(value, float) else f"{name}: {value}")
    print()
    print(text_table(("bound", "floor share", "worst-case ratio", "local ratio",
                      "G_inf^2 (G2_bar)", "G2_iter"), rows))


if __name__ == "__main__":
    main()
