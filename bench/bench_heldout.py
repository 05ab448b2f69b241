"""Held-out check of the planners (issue 14, item 4), with more instances than the test.

Run from the repository root: ``python bench/bench_heldout.py [--instances N] [--first S]
[--jobs J] [--cache-dir DIR] [--suite standard]``.

Each instance (:func:`simulate.verification.heldout.heldout_check`) draws an oracle problem
(soft-bounds device with a random ``tau``, noise, root seed), a small grid of (mode, M, B) and a
target eps; it calibrates on design points that are not in the grid, simulates every grid point at
the step the plan runs at (the guarantee's best step for eps) until its ensemble mean running
average reaches eps, and asks which planner's choice really reaches eps within 15 % of the fastest
grid point: the calibrated planner (fewest predicted cycles) or the theory-only planner (fewest
guaranteed cycles). It prints one row per instance and the two success rates, and the median and
worst prediction ratio (predicted / simulated cycles) of both over every grid point.

With ``--suite NAME`` it instead runs that verification suite (cached) and reads its pipeline
checks (SP, AP, 4'B) with a calibration of each check's problem
(:func:`simulate.verification.heldout.suite_forecasts`): the median and worst calibrated /
simulated cycles to each check's eps beside the bound's, and the SP-vs-AP and M-vs-M' ranking
agreement.

With ``--algorithm tiki-taka [--transfer-every T] [--transfer-slice column|all]`` every run
(calibration and grid) is Tiki-Taka and every cycle count includes the transfers; the
"theory-only" column is then the analog guarantee's choice with the transfers added (there is
no proved Tiki-Taka guarantee to plan with).

With ``--coverage`` it measures how often the forecast's prediction interval (the calibration's
level, 90 % by default, model error included) holds the simulated cycles: on ``--instances``
instances of the package's own grid (:func:`simulate.verification.heldout.heldout_check`, every
grid point at the guarantee's step) and on ``--broad`` instances of a broad set unlike it
(:func:`simulate.verification.heldout_coverage.broad_coverage`: other devices, pulsed updates,
per-sample writes, least squares, dimensions 8 - 32, steps up to 60 % of the stability limit).

No timing is asserted; the success rates are measurements (the test,
``tests/test_calibration_heldout.py``, asserts the 90 % criterion on fewer instances).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from simulate import run_suite
from simulate.verification import (
    HELDOUT_TOLERANCE,
    SUITES,
    broad_coverage,
    heldout_check,
    suite_forecasts,
)
from theory import CALIBRATED_ALGORITHMS, TRANSFER_SLICES


def point_label(point) -> str:
    """``sync M=4 B=8`` / ``async M=4``: a grid point ``(mode, M, B)`` as the benches print it."""
    mode, m, big_b = point
    return f"{mode} M={m}" + (f" B={big_b}" if mode == "sync" else "")


def instance_arguments(description: str, instances: int) -> argparse.ArgumentParser:
    """The held-out benches' parser: ``--instances`` (default ``instances``), ``--first``,
    ``--jobs``, ``--cache-dir``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--instances", type=int, default=instances, help="instances to draw")
    parser.add_argument("--first", type=int, default=100,
                        help="seed of the first instance (the test uses 0..9)")
    parser.add_argument("--jobs", type=int, default=1, help="local worker processes")
    parser.add_argument("--cache-dir", default=None,
                        help="result cache directory (default: no cache)")
    return parser


def main(argv=None) -> int:
    parser = instance_arguments(__doc__.splitlines()[0], 40)
    parser.add_argument("--suite", choices=SUITES, default=None,
                        help="read this verification suite with calibrations instead")
    parser.add_argument("--algorithm", choices=CALIBRATED_ALGORITHMS, default="analog",
                        help="algorithm of every run (calibration and grid)")
    parser.add_argument("--transfer-every", type=int, default=1, metavar="T",
                        help="tiki-taka: updates per transfer event")
    parser.add_argument("--transfer-slice", choices=TRANSFER_SLICES, default="column",
                        help="tiki-taka: what a transfer event moves")
    parser.add_argument("--coverage", action="store_true",
                        help="measure the forecast intervals' held-out coverage instead")
    parser.add_argument("--broad", type=int, default=50,
                        help="--coverage: instances of the broad held-out set (seeds 0..N-1)")
    args = parser.parse_args(argv)
    cache = args.cache_dir if args.cache_dir else False
    if args.coverage:
        return _coverage(args.first, args.instances, args.broad, args.jobs, cache)
    if args.suite:
        return _suite(args.suite, args.jobs, cache)
    calibrated = theory = judged = unforecast = 0
    ratios = {"bound": [], "calibration": []}
    start = time.perf_counter()
    print(f"{'seed':>5} {'device':<22} {'sigma2':>7} {'eps':>8}  {'best (simulated)':<17} "
          f"{'calibrated choice':<17} {'theory choice':<17} ok(cal) ok(theory)")
    for seed in range(args.first, args.first + args.instances):
        h = heldout_check(seed, jobs=args.jobs, cache=cache, algorithm=args.algorithm,
                          transfer_every=args.transfer_every,
                          transfer_slice=args.transfer_slice)
        if math.isfinite(h.best):  # else no grid point reaches eps: nothing to judge
            judged += 1
            calibrated += h.calibrated_success
            theory += h.theory_success
        for s, g, p in zip(h.simulated, h.guaranteed, h.predicted, strict=True):
            if math.isfinite(s):
                ratios["bound"].append(g / s)
                if math.isfinite(p):
                    ratios["calibration"].append(p / s)
                else:
                    unforecast += 1
        best = int(np.argmin(h.simulated))
        device = h.spec.device if h.spec.tau is None else f"{h.spec.device}(tau={h.spec.tau:g})"
        print(f"{seed:>5} {device:<22} {h.spec.sigma2:>7.3g} {h.eps:>8.4g}  "
              f"{point_label(h.grid[best]):<17} {point_label(h.grid[h.calibrated_choice]):<17} "
              f"{point_label(h.grid[h.theory_choice]):<17} {str(h.calibrated_success):<7} "
              f"{h.theory_success}")
    n = args.instances
    if args.algorithm != "analog":
        print(f"\nalgorithm {args.algorithm}, transfer_every={args.transfer_every}, "
              f"transfer_slice={args.transfer_slice}")
    if judged < n:
        print(f"\n{n - judged} of {n} instances not judged: no grid point reaches eps within "
              "the simulation's limit")
    rate = (lambda k: f"{k}/{judged} = {k / judged:.0%}") if judged else (lambda k: "n/a")
    print(f"\nsuccess (simulated cycles to eps within {HELDOUT_TOLERANCE:g}x of the best grid "
          f"point) over {judged} judged instances: calibrated planner {rate(calibrated)}, "
          f"theory-only planner {rate(theory)}")
    for name, values in ratios.items():
        v = np.asarray(values)
        if not v.size:
            continue
        worst = v[np.argmax(np.abs(np.log(v)))]
        print(f"prediction ratio of the {name} over {v.size} grid points: median "
              f"{np.median(v):.3g}, worst {worst:.3g}")
    if unforecast:
        print(f"the calibration forecasts {unforecast} grid points that the simulation reaches "
              "as unreachable (its floor at or above eps)")
    print(f"({time.perf_counter() - start:.0f} s)")
    return 0


def _coverage(first: int, instances: int, broad: int, jobs: int, cache) -> int:
    """Held-out coverage of the forecast intervals on the own grid and the broad set."""
    start = time.perf_counter()
    own, levels, ratios = [], set(), []
    for seed in range(first, first + instances):
        h = heldout_check(seed, jobs=jobs, cache=cache)
        own.extend(h.covered)
        levels.add(h.level)
        ratios += [p / s for p, s in zip(h.predicted, h.simulated, strict=True)
                   if math.isfinite(s) and math.isfinite(p)]
        print(f"own grid seed {seed}: {sum(h.covered)}/{len(h.covered)} covered", flush=True)
    wide, unreached, kinds = [], 0, {}
    for seed in range(broad):
        points = broad_coverage(seed, jobs=jobs, cache=cache)
        for p in points:
            if not math.isfinite(p.simulated):
                unreached += 1
                continue
            wide.append(p.covered)
            levels.add(p.level)
            ratios.append(p.predicted / p.simulated)
            kinds.setdefault(p.mode, []).append(p.covered)
        print(f"broad seed {seed}: {sum(p.covered for p in points)}/{len(points)} covered",
              flush=True)
    label = "/".join(f"{100 * v:g}%" for v in sorted(levels))
    for name, hits in (("own grid", own), ("broad held-out set", wide)):
        if hits:
            print(f"coverage of the {label} forecast intervals on the {name}: "
                  f"{sum(hits)}/{len(hits)} = {sum(hits) / len(hits):.0%}")
    for mode, hits in kinds.items():
        print(f"  broad {mode}: {sum(hits)}/{len(hits)}")
    if unreached:
        print(f"  {unreached} broad points not brought to eps by the simulation (left out)")
    v = np.asarray(ratios)
    print(f"predicted / simulated cycles over {v.size} points: median {np.median(v):.3g}, "
          f"worst {v[np.argmax(np.abs(np.log(v)))]:.3g}")
    print(f"({time.perf_counter() - start:.0f} s)")
    return 0


def _summary(values) -> str:
    v = np.asarray(values, dtype=float)
    worst = v[np.argmax(np.abs(np.log(v)))]
    return f"{v.size} checks, median {np.median(v):.3g}, worst {worst:.3g}"


def _suite(name: str, jobs: int, cache) -> int:
    start = time.perf_counter()
    checks = run_suite(name, jobs=jobs, cache=cache if cache else True)
    f = suite_forecasts(checks, jobs=jobs, cache=cache if cache else True)
    print(f"suite {name}: {len(checks)} checks, {f.calibrations} problems calibrated")
    print("predicted / simulated cycles to each check's eps = sqrt(floor x start):")
    for entry in f.ratios:
        print(f"  {entry:<16} calibration {_summary(f.ratios[entry])}; bound "
              f"{_summary(f.bound_ratios[entry])}")
    print(f"ranking agreement of the calibration: SP vs AP {f.mode_pairs[0]}/{f.mode_pairs[1]}, "
          f"M vs M' {f.stage_pairs[0]}/{f.stage_pairs[1]}")
    print(f"({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
