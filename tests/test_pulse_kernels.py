"""The compiled loops of the pulse update (simulate.device.pulse_kernels, issue 13 item 4): the
Binomial inversion against a direct per-element inversion in Python with the same uniforms, its
counts exactly Binomial (moments and a chi-square test against the pmf), the fused ``stochastic``
update against those counts and the closed-form formula, the closed-form n-pulse map against
``PulseMap.after``, the ``deterministic`` rounding, and an ensemble's members."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom, chi2

from simulate import pulsed_update
from simulate.device import apply_pulses, binomial_counts, pulse_counts, stochastic_write
from simulate.device import pulse_kernels as kernels
from theory.devices import geometric_sum, make_device

EPS = np.finfo(float).eps

#: mean counts above this are left to numpy's binomial (simulate.device.trains.INVERSION_MEAN)
CUT = 30.0


def _zero_probability(q: float, bl: int) -> float:
    """P(0) = (1 - q)^bl as documented: the factors (1 - q)^(2^j) of the set bits of bl, lowest
    first, for bl <= 64; exp(bl log1p(-q)) beyond."""
    if bl > 64:
        return math.exp(bl * math.log1p(-q))
    base, out, e = 1.0 - q, None, bl
    while e:
        if e & 1:
            out = base if out is None else out * base
        e >>= 1
        if e:
            base = base * base
    return out


def _direct_inversion(bl: int, p: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Binomial(bl, p) counts of the uniforms ``u`` by the documented inversion, element by
    element in Python: ``n = min{k : u < P(N <= k)}``, the pmf built by
    ``P(k) = P(k - 1) * (q / (1 - q) * ((bl - k + 1) / k))`` from ``P(0)``,
    ``q = min(p, 1 - p)``, ``bl - n`` for ``p > 1/2``; -1 where numpy's binomial draws
    instead (``q bl > 30``)."""
    out = np.empty(p.size, dtype=np.int64)
    for i in range(p.size):
        q = 1.0 - float(p[i]) if p[i] > 0.5 else float(p[i])
        if q * bl > CUT:
            out[i] = -1
            continue
        pmf = cdf = _zero_probability(q, bl)
        ratio = q / (1.0 - q)
        n = 0
        while n < bl and u[i] >= cdf:
            n += 1
            pmf *= ratio * ((bl - n + 1) / n)
            cdf += pmf
        out[i] = bl - n if p[i] > 0.5 else n
    return out


def _probabilities(bl: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.uniform(0.0, 3.0 / bl, 3000), rng.uniform(0.0, 1.0, 2000),
                        rng.uniform(1.0 - 3.0 / bl, 1.0, 2000), [0.0, 1.0, 0.5]])
    return np.clip(p, 0.0, 1.0)


@pytest.mark.parametrize("bl", [1, 2, 5, 8, 31, 64, 100])
def test_inversion_counts_equal_the_direct_inversion(bl):
    """The compiled inversion gives the count of the direct inversion for every element,
    including the flipped ones (p > 1/2) and the ends of [0, 1); the elements left to numpy's
    binomial are listed (and only those)."""
    p = _probabilities(bl, bl)
    u = np.random.default_rng(bl + 1).random(p.size)
    u[:3] = [0.0, 1.0 - EPS / 2, 1.0 - 16 * EPS]  # the ends of [0, 1)
    counts, big, p_big = kernels.binomial_inversion(p, 0.0, bl, u, CUT)
    direct = _direct_inversion(bl, p, u)
    drawn = direct >= 0
    np.testing.assert_array_equal(np.flatnonzero(~drawn), big)
    np.testing.assert_array_equal(p_big, p[big])
    np.testing.assert_array_equal(counts[drawn], direct[drawn])
    assert counts[drawn].min() >= 0 and counts.max() <= bl
    assert (bl <= 60) == (big.size == 0)


def test_probabilities_are_those_of_numpy():
    """Counts from desired increments equal the counts from ``min(1, (|dw| / dw_min) / bl)``
    computed by numpy (a nan fires nothing)."""
    dw = np.random.default_rng(0).normal(0.0, 0.02, 5000)
    dw[:3] = [0.0, -0.0, np.nan]
    p = np.minimum(1.0, np.abs(dw) / 1e-3 / 31)
    u = np.random.default_rng(1).random(dw.size)
    from_dw = kernels.binomial_inversion(dw, 1e-3, 31, u, CUT)[0]
    np.testing.assert_array_equal(from_dw, kernels.binomial_inversion(p, 0.0, 31, u, CUT)[0])
    assert from_dw[2] == 0


@pytest.mark.parametrize("bl", [31, 200])
def test_large_means_are_numpy_s_binomial(bl):
    """``binomial_counts``: one uniform per element first, then numpy's binomial of the elements
    of mean count above 30 (none at bl = 31), from the same generator."""
    p = np.random.default_rng(1).uniform(0.02, 0.98, 20_000)
    big = np.minimum(p, 1.0 - p) * bl > CUT
    assert big.any() == (bl > 60)
    theirs = np.random.default_rng(9)
    theirs.random(p.size)
    counts = binomial_counts(bl, p, np.random.default_rng(9))
    np.testing.assert_array_equal(counts[big], theirs.binomial(bl, p[big]))


@pytest.mark.parametrize("bl, p", [(31, 0.03), (31, 0.3), (31, 0.9), (100, 0.25), (1000, 0.001),
                                   (200, 0.4)])
def test_binomial_counts_have_the_binomial_moments(bl, p):
    """Mean and variance of 200k counts against Binomial(bl, p) at z = 4 (inverted elements,
    with P(0) by squaring and by exp/log1p, numpy-drawn ones (mean 80) and flipped ones)."""
    counts = binomial_counts(bl, np.full(200_000, p), np.random.default_rng(3))
    n, mean, var = counts.size, bl * p, bl * p * (1.0 - p)
    assert abs(counts.mean() - mean) <= 4.0 * np.sqrt(var / n)
    mu4 = var * (1.0 + 3.0 * (bl - 2) * p * (1.0 - p))
    assert abs(counts.var(ddof=1) - var) <= 4.0 * np.sqrt((mu4 - var**2 * (n - 3) / (n - 1)) / n)


@pytest.mark.parametrize("bl, p", [(31, 0.01), (31, 0.08), (31, 0.45), (31, 0.7), (31, 0.97),
                                   (100, 0.2), (5, 0.5)])
def test_binomial_counts_follow_the_binomial_pmf(bl, p):
    """Chi-square of 200k counts against the Binomial(bl, p) pmf (scipy), the outcomes with an
    expected number below 5 pooled into their neighbours: a p-value below 1e-6 fails (a correct
    sampler fails with probability 1e-6 per case; a wrong pmf at the 1 % level of one count is
    detected at these sizes). Covers small means, means above 2 (the former numpy draws),
    p > 1/2 (flipped) and the exp/log1p P(0) (bl = 100)."""
    size = 200_000
    counts = binomial_counts(bl, np.full(size, p), np.random.default_rng(17))
    observed = np.bincount(counts, minlength=bl + 1).astype(float)
    expected = size * binom.pmf(np.arange(bl + 1), bl, p)
    bins_o, bins_e, acc_o, acc_e = [], [], 0.0, 0.0
    for o, e in zip(observed, expected, strict=True):  # pool the sparse outcomes, in order
        acc_o, acc_e = acc_o + o, acc_e + e
        if acc_e >= 5.0:
            bins_o.append(acc_o)
            bins_e.append(acc_e)
            acc_o = acc_e = 0.0
    bins_o[-1] += acc_o
    bins_e[-1] += acc_e
    bins_o, bins_e = np.array(bins_o), np.array(bins_e)
    statistic = float(np.sum((bins_o - bins_e) ** 2 / bins_e))
    assert bins_o.size >= 2
    assert chi2.sf(statistic, bins_o.size - 1) > 1e-6, (statistic, bins_o.size)


#: the affine families (the fused stochastic update's devices)
AFFINE = [
    ("softbounds", dict(tau=0.7, dw_min=1e-3)),
    ("asymmetric-softbounds", dict(w_min=-0.6, w_max=0.9, up=1.2, down=0.8, dw_min=2e-3)),
    ("linear-step", dict(w_min=-1.0, w_max=1.0, gamma_up=0.5, gamma_down=0.3, dw_min=5e-3)),
    ("constant-step", dict(w_min=-1.0, w_max=1.0, up=1.1, down=0.9, dw_min=5e-3)),
]


@pytest.mark.parametrize("family, params", AFFINE)
@pytest.mark.parametrize("bl", [3, 31, 100])
def test_fused_stochastic_update_is_the_counts_and_the_closed_form(family, params, bl):
    """The fused kernel: the counts of ``binomial_inversion`` from the same uniforms and the
    closed form ``clip(T[n] (+-dw_min) (alpha + beta w) + w)`` of ``PulseMap.after``, bit for
    bit (numpy reference), per row; a row with a weight outside the range (or not finite) or a
    mean count above the cut is reported (``ok`` False) and the others are unaffected."""
    from simulate.device.trains import affine_constants
    device = make_device(family, desired_bl=bl, **params)
    constants = affine_constants(device, bl)
    (alpha_up, beta_up, alpha_down, beta_down, step, t_up, t_down, lo, hi) = constants
    rng = np.random.default_rng(bl)
    rows, per = 3, 2000
    w = rng.uniform(device.w_min, device.w_max, (rows, per))
    w[0, :4] = [0.0, -0.0, device.w_min, device.w_max]
    dw = rng.normal(0.0, 2.0 * step, w.shape) * rng.integers(0, 2, w.shape) ** 2
    dw[0, 4:10] = [0.0, -0.0, np.nan, 1.0, -1.0, -bl * step * 0.9]  # p = 1 both ways, p > 1/2
    dw[1] *= min(1.0, 20.0 / bl)  # a row within the cut even at bl = 100
    if bl > 60:
        dw[2, 0] = 0.5 * bl * step  # mean count bl / 2 > 30: row 2 to the general path
    u = rng.random(w.shape)
    out, ok = kernels.stochastic_affine_update(w.ravel(), dw.ravel(), u.ravel(), rows,
                                               device.dw_min, bl, CUT, *constants)
    out = out.reshape(w.shape)
    assert list(ok) == [True, True, bl <= 60]
    for r in np.flatnonzero(ok):
        counts = kernels.binomial_inversion(dw[r], device.dw_min, bl, u[r], CUT)[0]
        up = dw[r] >= 0
        inc = np.where(up, step * (alpha_up + beta_up * w[r]),
                       -step * (alpha_down + beta_down * w[r]))
        want = np.clip(np.where(up, t_up[counts], t_down[counts]) * inc + w[r], lo, hi)
        assert out[r].tobytes() == want.tobytes()
        np.testing.assert_array_equal(t_up, geometric_sum(np.arange(bl + 1),
                                                          step * -beta_up))
    bad = w.copy()
    bad[1, 7] = np.nan
    bad[0, 3] = hi * 1.5
    _, ok = kernels.stochastic_affine_update(bad.ravel(), dw.ravel(), u.ravel(), rows,
                                             device.dw_min, bl, CUT, *constants)
    assert list(ok) == [False, False, bl <= 60]


def test_fused_update_keeps_a_member_s_bits_when_another_takes_the_general_path():
    """``pulsed_update`` with a sequence of generators: a member whose weights leave the range,
    or whose mean counts exceed 30 (numpy's binomial), takes the general path alone; every
    member's result equals its run alone, and the fused members equal the general path's
    counts fired by ``apply_pulses`` (tau = 1: the same responses)."""
    device = make_device("softbounds", tau=1.0, dw_min=1e-3, desired_bl=100)
    g = np.random.default_rng(12)
    w = g.uniform(-0.5, 0.5, (3, 800))
    dw = g.normal(0.0, 5e-3, w.shape)
    w[1, 5] = 1.2  # outside [-1, 1]
    dw[2, 9] = 0.05  # mean count 50
    together = pulsed_update(w, dw, device, [np.random.default_rng(s) for s in range(3)],
                             pulse_type="stochastic")
    for r in range(3):
        alone = pulsed_update(w[r:r + 1], dw[r:r + 1], device, [np.random.default_rng(r)],
                              pulse_type="stochastic")
        assert np.array_equal(together[r:r + 1], alone)
        counts = binomial_counts(100, np.minimum(1.0, np.abs(dw[r:r + 1]) / 1e-3 / 100),
                                 [np.random.default_rng(r)])
        fired = apply_pulses(w[r:r + 1], counts, dw[r:r + 1] >= 0, device,
                             [np.random.default_rng(r)], 1e-3)
        assert np.array_equal(alone, fired)
    assert together[1, 5] != w[1, 5] or dw[1, 5] == 0


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


@pytest.mark.parametrize("rows", [1, 3])
def test_stochastic_write_is_pulsed_update_of_the_scaled_increments(rows):
    """``stochastic_write(w, gw, s, ...)`` (the network's fused step) leaves ``gw`` alone and
    gives ``w`` the bits of ``pulsed_update(w, s * gw, ...)``, also for a member that takes the
    general path (a weight outside the range); a device with cycle-to-cycle noise is refused
    before anything is drawn."""
    device = make_device("softbounds", tau=0.7, dw_min=1e-3)
    g = np.random.default_rng(40 + rows)
    w = g.uniform(-0.6, 0.6, (rows, 1500))
    gw = g.normal(0.0, 0.05, w.shape)
    gw[0, :3] = [0.0, -0.0, 40.0]  # +-0 (no pulse either way) and p = 1
    if rows > 1:
        w[1, 4] = 0.9  # outside [-0.7, 0.7]: member 1 takes the general path
    scale = -0.05
    want = pulsed_update(w, gw * scale, device, [np.random.default_rng(s) for s in range(rows)],
                         pulse_type="stochastic")
    got, grads = w.copy(), gw.copy()
    done = stochastic_write(got, grads, scale, device,
                            [np.random.default_rng(s) for s in range(rows)], np.empty_like(w))
    assert done
    assert got.tobytes() == want.tobytes()
    assert grads.tobytes() == gw.tobytes()
    assert not np.array_equal(got, w)
    noisy = make_device("softbounds", tau=0.7, dw_min=1e-3, dw_min_std=0.3)
    gens = [np.random.default_rng(s) for s in range(rows)]
    state = [x.bit_generator.state for x in gens]
    same = w.copy()
    assert not stochastic_write(same, gw, scale, noisy, gens, np.empty_like(w))
    assert same.tobytes() == w.tobytes()
    assert [x.bit_generator.state for x in gens] == state
