"""The shared pipeline machinery: the ring buffer of stale versions and the divergence rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simulate import StaleVersions, cycles_after, forward_delays
from simulate.pipeline import DIVERGENCE_FACTOR, check_divergence, divergence_limit
from theory import DivergenceError, max_delay


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


def test_cycles_are_exact_int64_and_refuse_beyond_it():
    from simulate import cycles_after
    from theory import ParameterError

    big = 3**33
    assert int(cycles_after("none", 2, big, [0, 5])[-1]) == 2 * 2 * big * 5
    assert int(cycles_after("sync", 2, big, [5])[0]) == 2 * (big + 1) * 5
    assert int(cycles_after("async", 2, 1, [big])[0]) == 2 * (big + 1)
    with pytest.raises(ParameterError, match=r"^micro_batches=1000000000000000000 asks for"):
        cycles_after("none", 1, 10**18, [5])
    with pytest.raises(ParameterError, match=r"^steps=\d+ asks for .* clock cycles"):
        cycles_after("async", 1, 1, [2**62])


def test_the_network_loss_rule_uses_its_own_factor():
    from simulate.pipeline import NETWORK_LOSS_FACTOR

    assert divergence_limit([2.3], factor=NETWORK_LOSS_FACTOR) == pytest.approx(23.0)
    assert divergence_limit([0.2], factor=NETWORK_LOSS_FACTOR) == NETWORK_LOSS_FACTOR


@pytest.mark.parametrize("by_member", [False, True])
def test_pinned_monitor_of_an_ensemble_counts_the_whole_array(by_member, monkeypatch):
    """In one pass (a small ensemble) or member by member (a large one: forced here), with
    per-weight bounds (a device-to-device spread) or scalar ones, float32 or float64 weights:
    the point is pinned exactly when more than half of all the ensemble's weights are within
    one pulse of a bound."""
    import simulate.device.pinned as pinned
    from simulate.device import PINNED_FRACTION, PinnedMonitor

    if by_member:
        monkeypatch.setattr(pinned, "WHOLE_ARRAY_ELEMENTS", 0)

    rng = np.random.default_rng(np.random.SeedSequence(11))
    outcomes = set()
    for trial in range(40):
        shape = (int(rng.integers(1, 5)), int(rng.integers(1, 9)))
        spread = trial % 2 == 1
        lo = -rng.uniform(0.9, 1.1, shape) if spread else -1.0
        hi = rng.uniform(0.9, 1.1, shape) if spread else 1.0
        dw = rng.uniform(0.05, 0.2, shape) if trial % 4 == 3 else 0.1
        # about half of the weights near a bound (the fraction on either side of one half)
        near = rng.random(shape) < rng.uniform(0.3, 0.7)
        w = np.where(near, rng.choice([-1.0, 1.0], shape) * rng.uniform(0.85, 1.0, shape),
                     rng.uniform(-0.5, 0.5, shape))
        w = w.astype(np.float32 if trial % 3 == 0 else np.float64)
        expected = np.count_nonzero(np.minimum(w - lo, hi - w) <= dw) / w.size > PINNED_FRACTION
        outcomes.add(bool(expected))
        monitor = PinnedMonitor(lo, hi, dw, lr=1.0)
        monitor.observe(1, w)
        assert (monitor.points, monitor.pinned) == (1, int(expected))
    assert outcomes == {False, True}


def test_pinned_monitor_counts_points_within_one_pulse_of_a_bound():
    from simulate import PinnedWarning
    from simulate.device import PINNED_FRACTION, PinnedMonitor

    assert PINNED_FRACTION == 0.5
    monitor = PinnedMonitor(-1.0, 1.0, 0.01, lr=2.0)
    pinned = np.array([[0.995, -0.995, 0.3]])  # 2 of 3 weights within dw_min of a bound
    free = np.array([[0.985, -0.5, 0.3]])  # 0.985 is 0.015 from the bound: not pinned
    monitor.observe(0, pinned)  # the start is not counted
    for w in (pinned, free, pinned):
        monitor.observe(1, w)
    assert (monitor.points, monitor.pinned) == (3, 2)
    with pytest.warns(PinnedWarning, match=r"^lr=2: .* on 2 of 3 logging points"):
        monitor.warn()
    half = PinnedMonitor(-1.0, 1.0, 0.01, lr=2.0)
    for w in (pinned, free):
        half.observe(1, w)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        half.warn()  # exactly half is not "most"
