"""The compiled loops of the pulse update (simulate.pulse_kernels, issue 13 item 4) give the numbers
of the numpy formulas they replace, bit for bit: the Binomial inversion against a direct
per-element inversion with the same uniforms, numpy's own binomial, the closed-form n-pulse map
against ``PulseMap.after``, the ``deterministic`` rounding, and an ensemble's members."""

from __future__ import annotations

import numpy as np
import pytest

from simulate import pulse_kernels as kernels
from simulate.analog import apply_pulses, binomial_counts, pulse_counts, pulsed_update
from theory.devices import make_device

EPS = np.finfo(float).eps


def _direct_inversion(bl: int, p: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Binomial(bl, p) counts of the uniforms ``u`` by the documented inversion, element by
    element in Python (no screening): ``n = min{k : u < P(N <= k)}``, the pmf built by
    ``P(k) = P(k - 1) * (q / (1 - q) * ((bl - k + 1) / k))`` from ``P(0) = (1 - q)^bl``
    (numpy), ``q = min(p, 1 - p)``, ``bl - n`` for ``p > 1/2``; -1 where numpy's binomial draws
    instead (``q bl > 2``)."""
    q = np.where(p > 0.5, 1.0 - p, p)
    log_zero = np.log1p(-q)
    log_zero *= bl
    zero = np.exp(log_zero)
    out = np.empty(p.size, dtype=np.int64)
    for i in range(p.size):
        if q[i] * bl > 2.0:
            out[i] = -1
            continue
        pmf = cdf = float(zero[i])
        ratio = float(q[i]) / (1.0 - float(q[i]))
        n = 0
        while n < bl and u[i] >= cdf:
            n += 1
            pmf *= ratio * ((bl - n + 1) / n)
            cdf += pmf
        out[i] = bl - n if p[i] > 0.5 else n
    return out


@pytest.mark.parametrize("bl", [1, 2, 5, 31, 100])
def test_inversion_counts_equal_the_direct_inversion(bl):
    """The screened, compiled walk (kernels) gives the count of the direct inversion for every
    element, including the flipped ones (p > 1/2) and those screened out by Bernoulli's
    inequality; the elements left to numpy's binomial are listed (and only those)."""
    rng = np.random.default_rng(bl)
    p = np.concatenate([rng.uniform(0.0, 3.0 / bl, 4000), rng.uniform(0.0, 1.0, 2000),
                        rng.uniform(1.0 - 3.0 / bl, 1.0, 2000), [0.0, 1.0, 0.5]])
    p = np.clip(p, 0.0, 1.0)
    u = rng.random(p.size)
    u[:3] = [0.0, 1.0 - EPS / 2, 1.0 - 16 * EPS]  # the ends of [0, 1)
    same, left, q_left, big, p_big, flip = kernels.inversion_candidates(p, 0.0, bl, u, 2.0,
                                                                        1.0 - 16 * EPS)
    assert same is p
    assert flip
    log_zero = np.log1p(-q_left)
    log_zero *= bl
    counts = kernels.inversion_walk(p, u, bl, left, q_left, np.exp(log_zero), flip)
    direct = _direct_inversion(bl, p, u)
    drawn = direct >= 0
    np.testing.assert_array_equal(np.flatnonzero(~drawn), big)
    np.testing.assert_array_equal(p_big, p[big])
    np.testing.assert_array_equal(counts[drawn], direct[drawn])
    assert counts[drawn].min() >= 0 and counts.max() <= bl
    assert left.size < drawn.sum()  # the screen decided some elements without a logarithm


def test_probabilities_are_those_of_numpy():
    """``min(1, (|dw| / dw_min) / bl)`` compiled equals numpy's (a nan stays nan)."""
    dw = np.random.default_rng(0).normal(0.0, 0.02, 5000)
    dw[:3] = [0.0, -0.0, np.nan]
    expected = np.minimum(1.0, np.abs(dw) / 1e-3 / 31)
    np.testing.assert_array_equal(kernels.inversion_probabilities(dw, 1e-3, 31), expected)
    u = np.random.default_rng(1).random(dw.size)
    np.testing.assert_array_equal(kernels.inversion_candidates(dw, 1e-3, 31, u, 2.0, 0.5)[0],
                                  expected)


@pytest.mark.parametrize("bl", [31, 60, 200])
def test_compiled_binomial_is_numpy_s_binomial(bl):
    """numpy's binomial by inversion, compiled: every count equal to ``Generator.binomial`` from
    the same generator, which is left in the same state; where numpy would use BTPE
    (``n min(p, 1 - p) > 30``) the compiled draw is refused (the caller keeps numpy's)."""
    p = np.random.default_rng(1).uniform(0.02, 0.98, 100_000)
    if bl > 60:
        p = np.concatenate([p[np.minimum(p, 1 - p) * bl <= 30][:20_000], [0.5]])
        assert not kernels.binomial_inversion_ok(p, bl)
        p = p[:-1]
    assert kernels.binomial_inversion_ok(p, bl)
    ours, theirs = np.random.default_rng(7), np.random.default_rng(7)
    counts = np.full(p.size, -1, dtype=np.int64)
    start = kernels.numpy_binomial(p, bl, ours.random(p.size), 0, np.arange(p.size), counts)
    assert start == p.size
    expected = theirs.binomial(bl, p)
    np.testing.assert_array_equal(counts, expected)
    assert ours.random() == theirs.random()
    lanes = np.full(p.size, -1, dtype=np.int64)  # the interleaved walks: the same counts
    assert kernels.numpy_binomial_lanes(p, bl, np.random.default_rng(7).random(p.size),
                                        np.arange(p.size), lanes)
    np.testing.assert_array_equal(lanes, expected)
    # binomial_counts: one uniform per element first, then numpy's binomial of the big ones
    big = np.minimum(p, 1.0 - p) * bl > 2.0
    theirs = np.random.default_rng(9)
    theirs.random(p.size)
    counts = binomial_counts(bl, p, np.random.default_rng(9))
    np.testing.assert_array_equal(counts[big], theirs.binomial(bl, p[big]))


def test_compiled_binomial_starts_again_with_the_next_uniform():
    """A uniform beyond the CDF up to numpy's bound starts the element again with the next
    uniform; without one, the kernel returns the element to resume from."""
    p, index = np.array([0.5, 0.2]), np.arange(2)
    counts = np.full(2, -1, dtype=np.int64)
    top = 1.0 - EPS / 2  # the largest uniform: beyond numpy's bound at p = 1/2, BL = 31
    assert kernels.numpy_binomial(p, 31, np.array([top]), 0, index, counts) == 0
    assert kernels.numpy_binomial(p, 31, np.array([top, 0.0, 0.0]), 0, index, counts) == 2
    np.testing.assert_array_equal(counts, [0, 0])
    assert kernels.numpy_binomial(p, 31, np.array([0.9]), 1, index, counts) == 2
    assert counts[1] == _inversion(31, 0.2, 0.9) > 0
    assert not kernels.numpy_binomial_lanes(p, 31, np.array([top, 0.0]), index, counts)


def _inversion(n: int, p: float, u: float) -> int:
    """numpy's ``random_binomial_inversion`` of one uniform (no restart), in Python."""
    q = 1.0 - p
    px, x = float(np.exp(n * np.log(q))), 0
    while u > px:
        x += 1
        u -= px
        px = ((n - x + 1) * p * px) / (x * q)
    return x


@pytest.mark.parametrize("bl, p", [(31, 0.03), (31, 0.3), (31, 0.9), (1000, 0.001)])
def test_binomial_counts_have_the_binomial_moments(bl, p):
    """Mean and variance of 200k counts against Binomial(bl, p) at z = 4 (inverted elements,
    numpy-drawn ones and flipped ones)."""
    counts = binomial_counts(bl, np.full(200_000, p), np.random.default_rng(3))
    n, mean, var = counts.size, bl * p, bl * p * (1.0 - p)
    assert abs(counts.mean() - mean) <= 4.0 * np.sqrt(var / n)
    mu4 = var * (1.0 + 3.0 * (bl - 2) * p * (1.0 - p))
    assert abs(counts.var(ddof=1) - var) <= 4.0 * np.sqrt((mu4 - var**2 * (n - 3) / (n - 1)) / n)


def test_ensemble_members_draw_their_own_counts():
    """Member r of a sequence of generators gets the counts of its own row drawn alone."""
    p = np.random.default_rng(4).uniform(0.0, 0.6, (3, 2000))
    together = binomial_counts(31, p, [np.random.default_rng(s) for s in range(3)])
    for r in range(3):
        np.testing.assert_array_equal(together[r],
                                      binomial_counts(31, p[r], np.random.default_rng(r)))


@pytest.mark.parametrize("family, params", [
    ("softbounds", dict(tau=1.0, dw_min=1e-3)),
    ("asymmetric-softbounds", dict(w_min=-0.6, w_max=0.9, up=1.2, down=0.8, dw_min=2e-3)),
    ("linear-step", dict(w_min=-1.0, w_max=1.0, gamma_up=0.5, gamma_down=0.3, dw_min=5e-3)),
    ("constant-step", dict(w_min=-1.0, w_max=1.0, up=1.1, down=0.9, dw_min=5e-3)),
])
def test_compiled_closed_form_is_the_pulse_map_formula(family, params):
    """The compiled n-pulse map equals ``PulseMap.after`` of the first increment (the numpy
    formula) bit for bit, signed zeros included, also where it skips the response (no pulse)
    and where it clips."""
    device = make_device(family, **params)
    rng = np.random.default_rng(5)
    w = rng.uniform(device.w_min, device.w_max, 6000)
    w[:4] = [0.0, -0.0, device.w_min, device.w_max]
    n = rng.integers(0, 3, w.size) * rng.integers(0, 400, w.size)
    n[:4] = 0
    up = rng.random(w.size) < 0.5
    step = device.dw_min
    got = apply_pulses(w, n, up, device, rng, step)
    pulse = device.pulse_map(up, step)
    inc = np.where(up, step, -step) * np.where(up, device.q_plus(w), device.q_minus(w))
    assert got.tobytes() == pulse.after(w, n, inc).tobytes()


def test_deterministic_rounding_is_numpy_s():
    """``floor(x) + [u < x - floor(x)]`` compiled, against numpy with the same uniforms."""
    x = np.random.default_rng(6).exponential(2.0, (2, 3000))
    x[0, :2] = [0.0, 5.0]
    got = pulse_counts(x, [np.random.default_rng(8), np.random.default_rng(9)], "deterministic", 0)
    u = np.stack([np.random.default_rng(8).random(3000), np.random.default_rng(9).random(3000)])
    np.testing.assert_array_equal(got, (np.floor(x) + (u < x - np.floor(x))).astype(np.int64))


def test_stochastic_pulsed_update_from_dw_equals_the_counts_from_p():
    """``pulsed_update`` computes the probabilities from ``dw`` in the kernel: the result is the
    one of the counts from ``p = min(1, (|dw| / dw_min) / bl)`` fired by ``apply_pulses``."""
    device = make_device("softbounds", tau=1.0, dw_min=1e-3)
    w = np.random.default_rng(10).uniform(-0.5, 0.5, (2, 3000))
    dw = np.random.default_rng(11).normal(0.0, 4e-3, w.shape)
    got = pulsed_update(w, dw, device, [np.random.default_rng(1), np.random.default_rng(2)],
                        pulse_type="stochastic")
    gens = [np.random.default_rng(1), np.random.default_rng(2)]
    counts = binomial_counts(31, np.minimum(1.0, np.abs(dw) / 1e-3 / 31), gens)
    np.testing.assert_array_equal(got, apply_pulses(w, counts, dw >= 0, device, gens, 1e-3))
