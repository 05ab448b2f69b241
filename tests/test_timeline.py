"""The simulated timelines (simulate.pipeline.timeline) against the closed forms
(theory.schedules)."""

import json
from fractions import Fraction
from functools import cache, lru_cache

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from simulate import Event, Timeline, build_timeline
from theory import ParameterError, cycles_for_iterations, evaluate_schedule, schedule
from theory.symbols import B, K, M, N

stages = st.integers(1, 32)
#: (mode, micro-batch count): B <= 64 per mini-batch for none/sync, N <= 200 for async
counted_modes = st.one_of(
    st.tuples(st.sampled_from(["none", "sync"]), st.integers(1, 64)),
    st.tuples(st.just("async"), st.integers(1, 200)),
)

timeline = lru_cache(maxsize=32)(build_timeline)

@cache
def closed_forms(mode):
    return schedule(mode).quantities()


def exact(mode, quantity, stages, count):
    """A closed-form rate as an exact sympy Rational (no float rounding)."""
    value = closed_forms(mode)[quantity].subs({M: stages, B: count, N: count})
    assert value.is_Rational
    return value


def as_rational(value: Fraction) -> sp.Rational:
    return sp.Rational(value.numerator, value.denominator)


def grid_indices(stages, count):
    """Stage and micro-batch index arrays of shape (stages, count), 1-based."""
    return np.meshgrid(np.arange(1, stages + 1), np.arange(1, count + 1), indexing="ij")


@given(stages, counted_modes)
def test_action_cycles_equal_closed_form(M_, mode_count):
    mode, count = mode_count
    tl = timeline(mode, M_, count)
    m_idx, b_idx = grid_indices(M_, count)
    for kind, quantity in (("F", "forward_cycle"), ("B", "backward_cycle")):
        expected = evaluate_schedule(mode, quantity, stages=M_, micro_batches=count,
                            stage=m_idx, micro_batch=b_idx)
        np.testing.assert_array_equal(tl.action_cycles(kind), expected)


@given(stages, counted_modes)
def test_counts_and_rates_equal_closed_form(M_, mode_count):
    mode, count = mode_count
    tl = timeline(mode, M_, count)

    assert tl.cycles == exact(mode, "total_cycles", M_, count)
    assert tl.busy == (exact(mode, "busy_cycles", M_, count),) * M_
    assert tl.idle == (exact(mode, "idle_cycles", M_, count),) * M_
    for quantity in ("density", "bubble_rate", "bubble_fraction", "cycles_per_micro_batch",
                     "speedup"):
        assert as_rational(getattr(tl, quantity)) == exact(mode, quantity, M_, count), quantity


@given(stages, counted_modes)
def test_one_action_per_stage_per_cycle(M_, mode_count):
    tl = timeline(*mode_count[:1], M_, mode_count[1])
    slots = [(e.stage, e.cycle) for e in tl.events if e.kind != "U"]
    assert len(slots) == len(set(slots)) == 2 * M_ * mode_count[1]
    assert tl.stalls == 0  # no ready forward ever met a ready backward at the same stage


@given(stages, counted_modes)
def test_dependencies_and_injection(M_, mode_count):
    mode, count = mode_count
    tl = timeline(mode, M_, count)
    f, bw = tl.action_cycles("F"), tl.action_cycles("B")
    assert (f[1:] > f[:-1]).all()  # F(b, m) after F(b, m - 1)
    assert (bw[:-1] > bw[1:]).all()  # B(b, m) after B(b, m + 1)
    assert (bw > f).all()  # B(b, m) after F(b, m)
    if mode == "none":  # one micro-batch in flight: b enters after b - 1 has finished
        assert (f[0, 1:] == bw[0, :-1] + 1).all()
        assert f[0, 0] == 0
    else:
        np.testing.assert_array_equal(f[0], 2 * np.arange(count))
    # greedy: with no stalls every other action runs right after its last dependency
    assert (f[1:] == f[:-1] + 1).all()
    assert (bw[-1] == f[-1] + 1).all()
    assert (bw[:-1] == np.maximum(bw[1:], f[:-1]) + 1).all()


@given(stages, counted_modes)
def test_measured_delays(M_, mode_count):
    mode, count = mode_count
    tl = timeline(mode, M_, count)
    m_idx, b_idx = grid_indices(M_, count)
    fwd = evaluate_schedule(mode, "forward_delay", stages=M_, micro_batches=count, stage=m_idx)
    bwd = evaluate_schedule(mode, "backward_delay", stages=M_, micro_batches=count, stage=m_idx)
    filled = b_idx > M_ - m_idx  # the micro-batch entered after the stage's first update
    if mode != "async":
        filled = np.ones_like(filled)
    fwd = np.broadcast_to(fwd, filled.shape)
    np.testing.assert_array_equal(tl.delays("F")[filled], fwd[filled])
    np.testing.assert_array_equal(tl.delays("B"), np.broadcast_to(bwd, filled.shape))
    # before the pipeline fills, a forward reads the initial weights
    assert (tl.versions("F")[~filled] == 0).all()
    if mode != "async" or count >= M_:  # every stage's pipeline fills
        assert tl.forward_delay == tuple(fwd[:, -1])
        assert tl.max_delay == exact(mode, "max_delay", M_, count)
    assert tl.backward_delay == (0,) * M_


@given(stages, st.integers(1, 64), st.integers(1, 4), st.sampled_from(["none", "sync"]))
def test_cycles_for_iterations_matches_mini_batch_timelines(M_, B_, K_, mode):
    tl = timeline(mode, M_, B_, mini_batches=K_)
    assert tl.cycles == cycles_for_iterations(mode).subs({M: M_, B: B_, K: K_})
    updates = [e for e in tl.events if e.kind == "U"]
    assert len(updates) == K_ * M_
    # mini-batch k reads the weights of k - 1 updates: no staleness across flushes
    mini_batch = (np.arange(K_ * B_) // B_)[None, :]
    np.testing.assert_array_equal(tl.versions("F"), np.broadcast_to(mini_batch, (M_, K_ * B_)))
    assert not tl.delays("F").any() and not tl.delays("B").any()


@given(stages, st.integers(1, 200))
def test_cycles_for_iterations_matches_async_timeline(M_, K_):
    tl = timeline("async", M_, K_)
    assert tl.cycles == cycles_for_iterations("async").subs({M: M_, K: K_})
    assert sum(e.kind == "U" for e in tl.events) == K_ * M_


def test_sync_reproduces_the_authors_schematic():
    grid = build_timeline("sync", 4, 5).grid()
    assert grid[3] == ". . . F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 . . .".split()
    assert grid[0] == "F1 . F2 . F3 . F4 B1 F5 B2 . B3 . B4 . B5".split()


def test_gantt_puts_the_last_stage_on_top():
    text = build_timeline("sync", 4, 5).gantt().splitlines()
    top = ". . . F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 . . .".split()
    assert text[0].split() == ["stage", "4", "|", *top]
    assert text[3].startswith("stage 1 |")
    assert text[5].split()[0] == "cycle" and text[5].split()[1:4] == ["0", "1", "2"]


def test_updates_are_flushes_in_sync_and_per_backward_in_async():
    sync = build_timeline("sync", 3, 4)
    assert {(e.stage, e.cycle) for e in sync.events if e.kind == "U"} == {
        (m, sync.cycles - 1) for m in (1, 2, 3)}
    tl = build_timeline("async", 3, 4)
    updates = {(e.stage, e.micro_batch, e.cycle) for e in tl.events if e.kind == "U"}
    backwards = {(e.stage, e.micro_batch, e.cycle) for e in tl.events if e.kind == "B"}
    assert updates == backwards


def test_summary_is_json_ready():
    summary = build_timeline("async", 4, 6).summary()
    decoded = json.loads(json.dumps(summary))
    for key in ("mode", "stages", "micro_batches", "cycles", "density", "bubble_cycles_per_stage",
                "bubble_rate", "bubble_fraction", "speedup", "forward_delay", "backward_delay",
                "grid"):
        assert key in decoded
    assert decoded["forward_delay"] == [3, 2, 1, 0]
    assert decoded["grid"] == build_timeline("async", 4, 6).grid()


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (("sync", 0, 5), {}, r"stages=0 is out of range; valid range \[1, inf\)"),
        (("sync", 4, -1), {}, r"micro_batches=-1 is out of range; valid range \[1, inf\)"),
        (("sync", 2.5, 5), {}, r"stages=2.5 is not an integer"),
        (("gpipe", 4, 5), {}, r"mode='gpipe' is unknown; valid modes none, sync, async"),
        (("async", 4, 5), {"mini_batches": 2}, r"mini_batches=2 is out of range for mode='async'"),
        (("sync", 4, 5), {"mini_batches": 0}, r"mini_batches=0 is out of range"),
    ],
)
def test_bad_input_is_rejected(args, kwargs, match):
    with pytest.raises(ParameterError, match=match):
        build_timeline(*args, **kwargs)


def test_timeline_validates_its_fields():
    with pytest.raises(ParameterError, match="stages=0"):
        Timeline("sync", 0, 1, (Event("F", 1, 1, 0, 0),))
    with pytest.raises(ParameterError, match="kind='U'"):
        build_timeline("sync", 2, 2).action_cycles("U")
