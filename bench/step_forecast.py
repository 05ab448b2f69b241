"""The step as a decision (issue 27, item 5): the forecast-chosen step against the guarantee's.

Run from the repository root: ``python bench/step_forecast.py [--instances N] [--first S]
[--jobs J] [--cache-dir DIR]``.

Each instance is a held-out instance of :func:`simulate.verification.heldout.draw_instance` (a
problem, a grid of six ``(mode, M, B)`` with ``b = 1`` and a calibration design with no grid point
in it), its target from :func:`simulate.verification.heldout.grid_target` and its calibration
fitted by the package on the design (:func:`simulate.verification.calibration_fit.calibrate`,
the held-out check's settings: 8 seeds, 2000 updates, step fractions 0.05 / 0.2 / 0.6 of the
proved cap). At every grid point:

- the **guarantee's step**: the proved bound's best step for eps (what ``plan`` runs at);
- the **forecast's step**: :func:`theory.step_choice.forecast_steps`, the step of fewest
  calibrated cycles within the stability limit (what ``plan --step forecast`` runs at), and
  whether it is inside the proved cap (:func:`theory.step_choice.guarantee_at_step`).

Both are simulated to eps (:func:`simulate.verification.heldout.simulate_grid`, the ensemble mean
running average, up to 2**16 updates). Printed: the median speed-up per point (simulated cycles at
the guarantee's step / at the forecast's step), per instance (the simulated cycles of the
configuration the forecast picks at the guarantee's steps, ``plan --calibration``, over those of
the one it picks at its own steps, ``plan --calibration --step forecast``), and how often the
forecast at the chosen step is within 2x of the simulated cycles, split inside / outside the
proved cap. A point not reached in simulation at the chosen step counts as a speed-up of 0 and a
forecast not within 2x. Nothing is asserted: these are measurements.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_heldout import instance_arguments, point_label  # noqa: E402
from simulate.verification.calibration_design import design  # noqa: E402
from simulate.verification.calibration_fit import calibrate  # noqa: E402
from simulate.verification.heldout import (  # noqa: E402
    HELDOUT_FRACTIONS,
    HELDOUT_SEEDS,
    HELDOUT_STEPS,
    draw_instance,
    grid_target,
    simulate_grid,
)
from theory.calibration import predicted_cycles  # noqa: E402
from theory.step_choice import forecast_steps, guarantee_at_step  # noqa: E402


def instance(seed: int, *, jobs: int, cache) -> list[dict]:
    """Every grid point of held-out instance ``seed`` at both steps (one dict per point)."""
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x4E1D]))  # heldout_check's
    spec, grid, sync, async_ = draw_instance(rng)
    eps, guarantees = grid_target(spec, grid)
    values = spec.constants()
    options = dict(jobs=jobs, cache=cache, progress=False)
    cal = calibrate(spec, design(spec, sync=sync, async_=async_, fractions=HELDOUT_FRACTIONS,
                                 steps=HELDOUT_STEPS, seeds=HELDOUT_SEEDS), resamples=0, **options)
    chosen = [forecast_steps(cal, mode, eps, m, c, 1, L=values["L"], q_max=values["q_max"])
              for mode, m, c in grid]
    at_guarantee = simulate_grid(spec, grid, [float(g.step) for g in guarantees], eps,
                                 seeds=HELDOUT_SEEDS, **options)
    reached = [s for s in chosen if s.found]
    at_choice = iter(simulate_grid(spec, [p for p, s in zip(grid, chosen, strict=True)
                                          if s.found], [s.lr for s in reached], eps,
                                   seeds=HELDOUT_SEEDS, **options) if reached else ())
    rows = []
    for (mode, m, c), g, s, sim_g in zip(grid, guarantees, chosen, at_guarantee, strict=True):
        sim_f = next(at_choice) if s.found else math.inf
        inside = s.found and guarantee_at_step(mode, eps, s.lr, values, M=m, B=c, b=1).inside
        at_g = predicted_cycles(cal, mode, eps, m, c, 1, lr=float(g.step)).cycles
        rows.append({"seed": seed, "point": (mode, m, c), "lr_guarantee": float(g.step),
                     "lr_forecast": s.lr, "limit": s.stability_limit, "inside": inside,
                     "forecast": s.forecast.cycles if s.found else math.inf,
                     "forecast_at_guarantee": at_g, "sim_guarantee": sim_g, "sim_forecast": sim_f})
    return rows


def _speedup(at_guarantee: float, at_forecast: float) -> float:
    if not math.isfinite(at_forecast):
        return 0.0
    return at_guarantee / at_forecast


def _within(forecast: float, simulated: float, factor: float = 2.0) -> bool:
    return math.isfinite(simulated) and simulated / factor <= forecast <= factor * simulated


def main(argv=None) -> int:
    parser = instance_arguments(__doc__.splitlines()[0], 10)
    args = parser.parse_args(argv)
    cache = args.cache_dir if args.cache_dir else False
    start = time.perf_counter()
    rows, per_instance = [], []
    print(f"{'seed':>5} {'point':<14} {'lr guar':>9} {'lr fcst':>9} {'limit':>8} {'cap':>7} "
          f"{'sim@guar':>10} {'sim@fcst':>10} {'fcst':>10} {'speed-up':>8}")
    for seed in range(args.first, args.first + args.instances):
        found = instance(seed, jobs=args.jobs, cache=cache)
        rows += found
        for r in found:
            print(f"{seed:>5} {point_label(r['point']):<14} {r['lr_guarantee']:>9.4g} "
                  f"{r['lr_forecast']:>9.4g} "
                  f"{r['limit']:>8.4g} {'inside' if r['inside'] else 'outside':>7} "
                  f"{r['sim_guarantee']:>10.4g} {r['sim_forecast']:>10.4g} "
                  f"{r['forecast']:>10.4g} "
                  f"{_speedup(r['sim_guarantee'], r['sim_forecast']):>8.3g}")
        plain = min(found, key=lambda r: r["forecast_at_guarantee"])  # plan --calibration
        stepped = min(found, key=lambda r: r["forecast"])  # plan --calibration --step forecast
        per_instance.append(_speedup(plain["sim_guarantee"], stepped["sim_forecast"]))
    judged = [r for r in rows if math.isfinite(r["sim_guarantee"])]
    speedups = [_speedup(r["sim_guarantee"], r["sim_forecast"]) for r in judged]
    print(f"\n{len(rows)} points on {args.instances} instances (seeds {args.first}.."
          f"{args.first + args.instances - 1}), {len(judged)} reached at the guarantee's step")
    print(f"median speed-up per point (simulated cycles at the guarantee's step / at the "
          f"forecast's step): {np.median(speedups):.3g} (quartiles "
          f"{np.quantile(speedups, 0.25):.3g} - {np.quantile(speedups, 0.75):.3g}; "
          f"{sum(s < 1 for s in speedups)} points slower)")
    print(f"median speed-up per instance (the forecast's pick at the guarantee's steps / its pick "
          f"at its own steps): {np.median(per_instance):.3g} "
          f"(min {min(per_instance):.3g}, max {max(per_instance):.3g})")
    for name, part in (("all", rows), ("inside the proved cap", [r for r in rows if r["inside"]]),
                       ("outside the proved cap", [r for r in rows if not r["inside"]])):
        ok = sum(_within(r["forecast"], r["sim_forecast"]) for r in part)
        print(f"forecast at the chosen step within 2x of the simulated, {name}: {ok}/{len(part)}")
    unreached = sum(not math.isfinite(r["sim_forecast"]) for r in rows)
    print(f"not reached in simulation at the forecast's step: {unreached}/{len(rows)}")
    print(f"wall time {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
