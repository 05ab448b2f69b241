"""Symbolic identities of the schedule closed forms in :mod:`theory.schedules`."""

import numpy as np
import pytest
import sympy as sp

from theory import MODES, ParameterError, cycles_for_iterations, evaluate_schedule, schedule
from theory.symbols import B, K, M, N, m, mb

#: a second micro-batch index, for "two actions of different micro-batches" identities
other = sp.Symbol("c", positive=True, integer=True)


@pytest.mark.parametrize("mode", MODES)
def test_density_and_bubble_fraction_sum_to_one(mode):
    s = schedule(mode)
    assert sp.simplify(s.density + s.bubble_fraction - 1) == 0


@pytest.mark.parametrize("mode", MODES)
def test_bubble_rate_is_idle_per_busy(mode):
    s = schedule(mode)
    assert sp.simplify(s.bubble_rate - s.bubble_fraction / s.density) == 0
    assert sp.simplify(s.idle_cycles + s.busy_cycles - s.total_cycles) == 0


def test_sync_speedup_is_the_throughput_ratio():
    assert sp.simplify(schedule("sync").speedup - M * B / (B + M - 1)) == 0


def test_none_speedup_is_one():
    assert sp.simplify(schedule("none").speedup - 1) == 0


def test_async_speedup_tends_to_the_stage_count():
    assert sp.limit(schedule("async").speedup, N, sp.oo) == M


@pytest.mark.parametrize("mode", MODES)
def test_last_backward_ends_the_run(mode):
    """The backward of the last micro-batch at stage 1 is the last cycle of the run."""
    s = schedule(mode)
    last = s.backward_cycle.subs({mb: s.count, m: 1}) + 1
    assert sp.simplify(last - s.total_cycles) == 0
    assert s.forward_cycle.subs({mb: 1, m: 1}) == 0


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_forward_and_backward_never_collide(mode):
    """F(b, m) - B(c, m) is odd for all micro-batches b, c, so they never share a cycle."""
    s = schedule(mode)
    gap = s.forward_cycle - s.backward_cycle.subs(mb, other)
    assert sp.simplify((gap - 1) / 2).is_integer


def test_async_delays_follow_from_the_cycle_formulas():
    """An update at the end of cycle t is visible from t + 1: the forward of b at m sees
    exactly the updates of micro-batches <= b - 1 - (M - m), its backward those <= b - 1."""
    s = schedule("async")

    def visible(action, c):  # >= 0 iff the update of micro-batch c at stage m is visible
        return sp.simplify(action - (s.backward_cycle.subs(mb, c) + 1))

    newest_f = mb - 1 - s.forward_delay
    assert visible(s.forward_cycle, newest_f) == 0
    assert visible(s.forward_cycle, newest_f + 1) < 0
    newest_b = mb - 1 - s.backward_delay
    assert visible(s.backward_cycle, newest_b) >= 0
    assert visible(s.backward_cycle, newest_b + 1) < 0
    assert s.max_delay == M - 1


@pytest.mark.parametrize("mode", MODES)
def test_latex_strings_non_empty(mode):
    latex = schedule(mode).latex()
    assert set(latex) == set(schedule(mode).quantities())
    assert all(isinstance(text, str) and text.strip() for text in latex.values())


def test_cycles_for_iterations():
    assert sp.simplify(cycles_for_iterations("sync") - 2 * (B + M - 1) * K) == 0
    assert sp.simplify(cycles_for_iterations("none") - 2 * M * B * K) == 0
    assert sp.simplify(cycles_for_iterations("async") - 2 * (K + M - 1)) == 0


def test_evaluate_matches_sympy():
    value = evaluate_schedule("sync", "total_cycles", stages=4, micro_batches=5)
    assert value == schedule("sync").total_cycles.subs({M: 4, B: 5})


def test_unknown_mode_and_quantity():
    with pytest.raises(ParameterError, match="mode='pipedream'"):
        schedule("pipedream")
    with pytest.raises(ParameterError, match="quantity='latency'"):
        evaluate_schedule("sync", "latency", stages=2)


def test_evaluate_broadcasts_constant_quantities():
    """A quantity free of some arguments (a delay of 0, busy cycles) still has their shape."""
    stages = np.array([2, 3, 4])
    delay = evaluate_schedule("sync", "forward_delay", stages=stages)
    busy = evaluate_schedule("sync", "busy_cycles", stages=stages, micro_batches=3)
    assert delay.shape == busy.shape == (3,)
    np.testing.assert_array_equal(delay, [0, 0, 0])
    np.testing.assert_array_equal(busy, [6, 6, 6])
    delays = evaluate_schedule("async", "backward_delay", stages=4, stage=np.arange(1, 5))
    assert delays.shape == (4,)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(stages=0), r"^stages=0 is out of range; valid range \[1, inf\)"),
        (dict(stages=2.5), r"^stages=2.5 is not an integer"),
        (dict(stages=2, micro_batches=[3, -1]), r"^micro_batches=-1 is out of range"),
        (dict(stages=3, stage=7),
         r"^stage=7 is out of range; valid range: 1 <= stage <= stages = 3"),
        (dict(stages=3, micro_batches=2, micro_batch=[1, 3]),
         r"^micro_batch=3 is out of range; valid range: 1 <= micro_batch <= micro_batches = 2"),
    ],
)
def test_evaluate_rejects_out_of_range_arguments(kwargs, message):
    with pytest.raises(ParameterError, match=message):
        evaluate_schedule("async", "forward_delay", **kwargs)
