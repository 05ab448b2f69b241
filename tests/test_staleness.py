"""The shared pipeline machinery: the ring buffer of stale versions and the divergence rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simulate.staleness import (
    DIVERGENCE_FACTOR,
    StaleVersions,
    check_divergence,
    cycles_after,
    divergence_limit,
    forward_delays,
)
from theory.errors import DivergenceError
from theory.schedules import max_delay


def _version(j: int, shape=(2, 3)) -> np.ndarray:
    """Parameters whose every entry says which version they are."""
    return np.full(shape, float(j))


@given(delays=st.lists(st.integers(0, 6), min_size=1, max_size=4), pushes=st.integers(0, 20))
def test_a_read_after_k_pushes_with_delay_d_is_version_max0_k_minus_d(delays, pushes):
    ring = StaleVersions(delays, [(_version(0), _version(0, (4,))) for _ in delays])
    for k in range(pushes + 1):
        if k:
            ring.push(k, [(_version(k), _version(k, (4,))) for _ in delays])
        for s, d in enumerate(delays):
            expected = max(0, k - d)
            assert ring.version(k, s) == (k if d == 0 else expected)
            stored = ring.read(k, s)
            if d == 0:
                assert stored is None and ring.slot(k, s) is None  # reads the current version
                continue
            weights, biases = stored
            assert np.all(weights == expected) and np.all(biases == expected)
            assert weights.shape == (2, 3) and biases.shape == (4,)


def test_the_ring_keeps_its_memory_and_only_delayed_stages_keep_copies():
    ring = StaleVersions((2, 0), [(_version(0),), (_version(0),)])
    assert ring.stale
    views = [ring.stored(0, slot)[0] for slot in range(3)]  # built once, as the networks do
    for k in range(1, 7):
        ring.push(k, [(_version(k),), (_version(k),)])
        (read,) = ring.read(k, 0)
        assert np.shares_memory(read, views[ring.slot(k, 0)])
        assert np.all(views[ring.slot(k, 0)] == max(0, k - 2))
    assert not StaleVersions((0, 0), [(_version(0),), (_version(0),)]).stale


def test_forward_delays_and_cycles_follow_the_closed_forms():
    assert forward_delays("async", 4) == (3, 2, 1, 0)
    assert max(forward_delays("async", 7)) == int(max_delay(7))
    assert forward_delays("sync", 3) == forward_delays("none", 3) == (0, 0, 0)
    updates = np.array([0, 1, 5])
    np.testing.assert_array_equal(cycles_after("async", 4, 3, updates), [0, 2 * (1 + 3), 2 * 8])
    np.testing.assert_array_equal(cycles_after("sync", 4, 3, updates), [0, 12, 60])
    np.testing.assert_array_equal(cycles_after("none", 4, 3, updates), [0, 24, 120])
    assert cycles_after("none", 2, 1, updates).dtype == np.int64


def test_the_divergence_limit_is_relative_to_the_start():
    assert divergence_limit(np.array([0.0, 0.2])) == DIVERGENCE_FACTOR  # max(1, .) near zero
    assert divergence_limit(np.array([-30.0, 2.0])) == 30 * DIVERGENCE_FACTOR
    assert divergence_limit(np.array([4.0]), squared=True) == 4 * DIVERGENCE_FACTOR**2


def test_check_divergence_passes_inside_the_limit():
    check_divergence(3, "loss", np.array([1.0, -5.0]), 5.0, 0.1)


@pytest.mark.parametrize(
    ("values", "reported"),
    [
        (np.array([1.0, 7.0, -9.0]), "-9"),  # the largest magnitude beyond the limit
        (np.array([1.0, np.inf]), "inf"),
        (np.array([np.nan, 100.0]), "nan"),  # nan wins: it is never below a limit
        (np.array([[1.0, np.nan], [2.0, 3.0]]), "nan"),
    ],
)
def test_check_divergence_names_step_quantity_value_and_lr(values, reported):
    with pytest.raises(DivergenceError, match=rf"step 12: loss = {reported} .*lr=0\.25") as info:
        check_divergence(12, "loss", values, 5.0, 0.25)
    assert info.value.step == 12 and info.value.lr == 0.25


def test_an_infinite_limit_still_catches_non_finite_values():
    check_divergence(0, "w", np.array([1e300]), np.inf, 1.0)
    with pytest.raises(DivergenceError):
        check_divergence(0, "w", np.array([np.inf]), np.inf, 1.0)
