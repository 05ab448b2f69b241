"""Held-out check (issue 14, item 4): the calibrated planner's choice really reaches eps first.

Ten instances of :func:`simulate.verification.heldout.heldout_check` (seeds 0-9): each draws an
oracle problem, a grid of (mode, M, B) and a target; calibrates on design points outside the grid;
simulates every grid point at the plan's step until it reaches eps. The calibrated planner must
choose a point whose simulated cycles are within 15 % of the fastest in at least 90 % of the
instances (9 of 10). That threshold is the issue's acceptance criterion; with 10 instances one
miss is allowed, so a planner that succeeds only 80 % of the time or less fails this test. The
theory-only planner's rate is reported in the message, not asserted (``bench/bench_heldout.py``
measures both on 40 instances).
"""

from __future__ import annotations

import pytest

from simulate.verification import HELDOUT_TOLERANCE, heldout_check

INSTANCES = range(10)
#: the issue's criterion: at least this fraction of instances
REQUIRED = 0.9


@pytest.fixture(scope="module")
def results():
    return [heldout_check(seed, seeds=6, steps=1200) for seed in INSTANCES]


@pytest.mark.slow
def test_calibrated_planner_reaches_eps_first(results):
    calibrated = sum(h.calibrated_success for h in results)
    theory = sum(h.theory_success for h in results)
    n = len(results)
    assert calibrated >= REQUIRED * n, (
        f"calibrated planner within {HELDOUT_TOLERANCE}x of the best simulated time in "
        f"{calibrated}/{n} instances (theory-only planner: {theory}/{n})"
    )


@pytest.mark.slow
def test_the_choice_matters(results):
    """The criterion can fail: in most instances some grid point is slower than the tolerance,
    so a planner that chose blindly would miss."""
    hard = sum(any(not h.success(i) for i in range(len(h.grid))) for h in results)
    assert hard >= len(results) // 2


@pytest.mark.slow
def test_grid_is_held_out(results):
    """No grid point (mode, M, B, b = 1) is a design point, and every grid point reached eps."""
    for h in results:
        fitted = {point[:3] for point in h.design if point[3] == 1}
        assert fitted and not fitted & set(h.grid)
        assert all(s < float("inf") for s in h.simulated)
