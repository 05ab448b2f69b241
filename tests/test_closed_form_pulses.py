"""The closed-form n-pulse map (issue 13, item 4) against the pulse loop, per response family.

Without cycle-to-cycle noise the closed form is the exact iterate of the pulse map, so it equals
the loop up to floating-point rounding: the loop rounds once per pulse (at most half an ulp of a
weight of size at most the range width), the closed form a few times in all, hence the tolerance
``TOL = 4 n eps (w_max - w_min)`` for ``n`` pulses; one pulse is bit for bit. With noise the
closed form draws other random numbers than the loop, so the two are compared in distribution:
mean and standard deviation over many devices, z = 4 on the difference of two independent
samples.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
import sympy.stats
from _sympy_checks import is_zero

from simulate import SimConfig, Updater, pulsed_update, run
from simulate.device import DeviceSpread, apply_pulses
from theory import ParameterError
from theory.devices import geometric_sum, make_device

Z = 4.0
EPS = np.finfo(float).eps

#: a device of every family with affine responses (a closed form), in its own parametrisation
AFFINE = {
    "softbounds": dict(family="softbounds", tau=1.0, dw_min=1e-3),
    "asymmetric-softbounds": dict(family="asymmetric-softbounds", w_min=-0.6, w_max=0.9, up=1.2,
                                  down=0.8, dw_min=2e-3),
    "linear-step": dict(family="linear-step", w_min=-1.0, w_max=1.0, gamma_up=0.5,
                        gamma_down=0.3, dw_min=5e-3),
    "constant-step": dict(family="constant-step", w_min=-1.0, w_max=1.0, up=1.1, down=0.9,
                          dw_min=5e-3),
    "power-gamma-1": dict(family="power", tau=0.8, pow_gamma=1.0, dw_min=1e-3),
}
#: families without a closed form: they keep the pulse loop
NON_AFFINE = {
    "power": dict(family="power", tau=1.0, pow_gamma=2.0, dw_min=2e-3),
    "exponential": dict(family="exponential", tau=1.0, gamma=2.0, dw_min=2e-3),
}


def _device(params, **extra):
    params = dict(params, **extra)
    return make_device(params.pop("family"), **params)


def _case(device, shape, seed, most=400):
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.9 * device.w_min, 0.9 * device.w_max, shape)
    return w, rng.integers(0, most + 1, shape), rng.random(shape) < 0.5


@pytest.mark.parametrize("name", sorted(AFFINE))
@pytest.mark.parametrize("spread", [False, True])
def test_noise_free_closed_form_equals_the_loop(name, spread):
    """Every element, random start, 0..400 pulses up or down, with and without device-to-device
    spreads (some elements then start outside their own range and saturate at a bound)."""
    device = _device(AFFINE[name])
    shape = (3, 4000)
    w, n, up = _case(device, shape, 1)
    sp_ = DeviceSpread()
    if spread:
        g = np.random.default_rng(2)
        sp_ = DeviceSpread(np.abs(1 + 0.3 * g.standard_normal(shape)),
                           np.abs(1 + 0.1 * g.standard_normal(shape)))
    step = device.dw_min * (1.0 if sp_.dw_min_scale is None else sp_.dw_min_scale)
    closed = apply_pulses(w, n, up, device, None, step, sp_.bound_scale)
    loop = apply_pulses(w, n, up, device, None, step, sp_.bound_scale, method="loop")
    tol = 4 * n.max() * EPS * (device.w_max - device.w_min)
    assert np.abs(closed - loop).max() <= tol
    one = n <= 1  # zero pulses or one: bit for bit
    assert np.array_equal(closed[one], loop[one])
    if name in ("linear-step", "constant-step"):  # the saturating closed form is exercised
        hi = device.w_max * (1.0 if sp_.bound_scale is None else sp_.bound_scale)
        assert np.mean(loop == hi) > 0.1 and np.array_equal(closed == hi, loop == hi)


@pytest.mark.parametrize("name", sorted(AFFINE))
def test_n_pulse_map_is_the_iterate_of_one_pulse(name):
    device = _device(AFFINE[name])
    w, n, up = _case(device, (2000,), 3, most=50)
    want = w.copy()
    for p in range(n.max()):
        one = device.n_pulse_map(want, np.ones_like(n), up)
        want = np.where(n > p, one, want)
    assert np.abs(device.n_pulse_map(w, n, up) - want).max() <= 4 * 50 * EPS * 2


def test_soft_bounds_closed_form_is_the_issue_formula():
    """w_n = w_max - (w_max - w)(1 - dw/w_max)^n up, its mirror down (aihwkit SoftBounds with
    up = down = 1), in the package's parametrisation q_+ = 1 - w/tau, q_- = 1 + w/tau."""
    tau, dw = 0.7, 2e-3
    device = make_device("softbounds", tau=tau, dw_min=dw)
    w, n = np.array([-0.5, 0.0, 0.3, 0.69]), np.array([10, 250, 1, 999])
    up_formula = tau - (tau - w) * (1 - dw / tau) ** n
    down_formula = -tau + (tau + w) * (1 - dw / tau) ** n
    assert np.allclose(device.n_pulse_map(w, n, True), up_formula, rtol=0, atol=1e-14)
    assert np.allclose(device.n_pulse_map(w, n, False), down_formula, rtol=0, atol=1e-14)


def test_closed_form_iterate_symbolically():
    """sympy: w_n = w + inc(w) (1 - a^n)/(1 - a) satisfies w_{n+1} = w_n + inc(w_n) for the
    affine increment inc(w) = r - c w (a = 1 - c); the variance of the additive-noise sum
    satisfies V_{n+1} = a^2 V_n + s^2; the multiplicative second moment of u = r/c - w satisfies
    E[u_{n+1}^2] = (a^2 + c^2 sigma^2) E[u_n^2]."""
    w, r, c, n, s, sigma = sp.symbols("w r c n s sigma", positive=True)
    a = 1 - c
    inc = lambda v: r - c * v  # noqa: E731
    w_n = lambda k: w + inc(w) * (1 - a**k) / (1 - a)  # noqa: E731
    assert is_zero(w_n(n + 1) - (w_n(n) + inc(w_n(n))))
    var = lambda k: s**2 * (1 - a ** (2 * k)) / (1 - a**2)  # noqa: E731
    assert is_zero(var(n + 1) - (a**2 * var(n) + s**2))
    # u_{p+1} = u_p (a - c sigma xi): E[(a - c sigma xi)^2] = a^2 + c^2 sigma^2 for xi ~ N(0, 1)
    xi = sympy.stats.Normal("xi", 0, 1)
    assert is_zero(sympy.stats.E((a - c * sigma * xi) ** 2) - (a**2 + c**2 * sigma**2))


def test_geometric_sum_at_small_and_zero_rates():
    n = np.array([0.0, 1.0, 2.0, 1e4])
    assert np.array_equal(geometric_sum(n, 0.0), n)
    assert np.allclose(geometric_sum(n, 1e-300), n, rtol=1e-15)
    assert np.allclose(geometric_sum(n, 0.5), [0, 1, 1.5, 2.0], rtol=1e-15)


@pytest.mark.parametrize("name", sorted(NON_AFFINE))
def test_families_without_a_closed_form_keep_the_loop(name):
    device = _device(NON_AFFINE[name], dw_min_std=0.3)
    assert device.response.affine_responses() is None
    assert device.n_pulse_map(np.zeros(3), np.ones(3), True) is None
    w, n, up = _case(device, (2, 300), 4, most=60)
    a = apply_pulses(w, n, up, device, [np.random.default_rng(s) for s in (1, 2)], device.dw_min)
    b = apply_pulses(w, n, up, device, [np.random.default_rng(s) for s in (1, 2)], device.dw_min,
                     method="loop")
    assert np.array_equal(a, b)


def test_a_pulse_larger_than_its_fixed_point_distance_keeps_the_loop():
    """dw_min >= tau: the one-pulse map overshoots (rate >= 1); no closed form is claimed."""
    device = make_device("softbounds", tau=0.01, dw_min=0.015)
    assert device.pulse_map(True) is None
    w, n, up = np.zeros(5), np.arange(5), np.ones(5, dtype=bool)
    assert np.array_equal(apply_pulses(w, n, up, device, None, device.dw_min),
                          apply_pulses(w, n, up, device, None, device.dw_min, method="loop"))


def _compare(closed: np.ndarray, loop: np.ndarray) -> None:
    """Means at z = 4 on the difference of two independent samples; variances at z = 4 with the
    standard error of a sample variance, sqrt((mu_4 - var^2) / N) (the fourth moment pooled over
    both samples: a walk that sticks at a hard bound has a heavy-tailed, far from Gaussian,
    distribution)."""
    size = closed.size
    spread = np.sqrt((closed.var() + loop.var()) / size)
    assert abs(closed.mean() - loop.mean()) <= Z * spread + 1e-12
    both = np.concatenate([closed - closed.mean(), loop - loop.mean()])
    var = both.var()
    if var == 0:
        return
    se = np.sqrt(max(np.mean(both**4) - var**2, 0.0) / size)
    assert abs(closed.var() - loop.var()) <= Z * np.sqrt(2) * se


#: (start weight, pulses, up): inside the range, many pulses down, towards the upper bound
CASES = [(0.2, 100, True), (-0.3, 300, False), (0.7, 300, True)]


@pytest.mark.parametrize("name", sorted(set(AFFINE) - {"power-gamma-1"}))
@pytest.mark.parametrize("noise, sigma", [("additive", 0.3), ("additive", 3.75),
                                          ("multiplicative", 0.3)])
def test_noisy_closed_form_matches_the_loop_in_distribution(name, noise, sigma):
    """20000 devices, each case: the exact Gaussian sum (additive; the loop where the walk ends
    within 6 std of a bound) and the moment-matched Gaussian (multiplicative) against the loop."""
    device = _device(AFFINE[name], dw_min_std=sigma, c2c_noise=noise)
    size = 20000
    for k, (w0, n0, up0) in enumerate(CASES):
        w, n, up = np.full(size, w0), np.full(size, n0), np.full(size, up0)
        closed = apply_pulses(w, n, up, device, np.random.default_rng(10 + k), device.dw_min)
        loop = apply_pulses(w, n, up, device, np.random.default_rng(20 + k), device.dw_min,
                            method="loop")
        _compare(closed, loop)


@pytest.mark.parametrize("noise", ["additive", "multiplicative"])
def test_noisy_closed_form_has_the_exact_moments(noise):
    """Soft bounds away from the bounds: mean tau - (tau - w) a^n either way; variance
    dw^2 s^2 (1 - a^2n)/(1 - a^2) (additive) or (tau - w)^2 ((a^2 + c^2 s^2)^n - a^2n)
    (multiplicative), c = dw/tau; z = 4 on the mean, 4/sqrt(N/2) relative on the variance."""
    tau, dw, s, w0, n0 = 1.0, 1e-3, 0.3, 0.1, 400
    device = make_device("softbounds", tau=tau, dw_min=dw, dw_min_std=s, c2c_noise=noise)
    size = 40000
    out = apply_pulses(np.full(size, w0), np.full(size, n0), np.ones(size, dtype=bool), device,
                       np.random.default_rng(5), dw)
    c = dw / tau
    a = 1 - c
    mean = tau - (tau - w0) * a**n0
    if noise == "additive":
        var = dw**2 * s**2 * (1 - a ** (2 * n0)) / (1 - a**2)
    else:
        var = (tau - w0) ** 2 * ((a**2 + c**2 * s**2) ** n0 - a ** (2 * n0))
    assert abs(out.mean() - mean) <= Z * np.sqrt(var / size)
    assert abs(out.var() / var - 1) <= Z * np.sqrt(2 / size)


@pytest.mark.parametrize("noise", ["additive", "multiplicative"])
def test_closed_form_with_spreads_matches_the_loop(noise):
    """Device-to-device spreads of dw_min and the bounds, linear step with noise: the increments
    of all elements together agree in mean and std."""
    device = _device(AFFINE["linear-step"], dw_min_std=0.3, c2c_noise=noise, dw_min_dtod=0.3,
                     w_bounds_dtod=0.1)
    shape = (20000,)
    spread = DeviceSpread.draw(device, shape, np.random.default_rng(1))
    w, dw = np.full(shape, 0.2), np.full(shape, 0.3)
    closed = pulsed_update(w, dw, device, np.random.default_rng(2), spread.dw_min_scale,
                           spread.bound_scale)
    loop = pulsed_update(w, dw, device, np.random.default_rng(3), spread.dw_min_scale,
                         spread.bound_scale, method="loop")
    _compare(closed, loop)


def test_ensemble_members_keep_their_own_bits_with_the_closed_form():
    device = _device(AFFINE["softbounds"], dw_min_std=0.5, c2c_noise="additive")
    w = np.random.default_rng(0).uniform(-0.9, 0.9, (3, 500))
    dw = np.random.default_rng(1).normal(0, 0.05, (3, 500))
    dw[1] = 0.0  # member 1 fires nothing and draws nothing
    together = pulsed_update(w, dw, device, [np.random.default_rng(s) for s in range(3)])
    for r in range(3):
        alone = pulsed_update(w[r:r + 1], dw[r:r + 1], device, [np.random.default_rng(r)])
        assert np.array_equal(together[r:r + 1], alone)
    assert np.array_equal(together[1], w[1])


def test_pulse_method_is_a_config_field_and_the_loop_reproduces_it():
    base = SimConfig(problem="quadratic", update="pulsed", device="softbounds-tau1", tau=None,
                     steps=40, seeds=2, dim=6, lr=0.02)
    assert base.pulse_method == "closed-form"
    closed = run(base, 1)
    loop = run(SimConfig(**{**base.to_dict(), "pulse_method": "loop"}), 1)
    assert loop.config["pulse_method"] == "loop"
    assert np.allclose(closed.loss, loop.loss, rtol=1e-9, atol=0)  # noise-free preset
    with pytest.raises(ParameterError, match=r"^pulse_method='x' is unknown"):
        SimConfig(pulse_method="x")
    with pytest.raises(ParameterError, match=r"^method='x' is unknown"):
        apply_pulses(np.zeros(2), np.ones(2, dtype=int), np.ones(2, dtype=bool),
                     make_device("softbounds", tau=1.0, dw_min=1e-3), None, 1e-3, method="x")


@pytest.mark.parametrize("kind, pulse_type, preset", [
    ("expected", "deterministic", "softbounds"),
    ("pulsed", "deterministic", "reram-softbounds"),
    ("pulsed", "stochastic", "ecram-linearstep"),
    ("pulsed", "mean-count", "capacitor-linearstep"),
    ("pulsed", "stochastic", "exponential"),  # the pulse loop
])
def test_an_ensemble_updated_a_few_members_at_a_time_has_the_same_bits(kind, pulse_type, preset):
    """Updater splits a large ensemble into blocks of members (cache-sized): the result equals
    one call on the whole ensemble, bit for bit, spreads included."""
    from simulate.device import device_named
    if preset == "exponential":
        device = make_device("exponential", tau=1.0, gamma=2.0, dw_min=1e-3, dw_min_std=0.3,
                             dw_min_dtod=0.2)
    else:
        device = device_named(preset, 1.0 if preset == "softbounds" else None)
    shape = (5, 12000)  # 60000 elements: blocks of 2 members
    g = np.random.default_rng(0)
    w = g.uniform(0.4 * device.w_min, 0.4 * device.w_max, shape)
    dw = g.normal(0, 3 * device.dw_min, shape)
    spread = DeviceSpread.draw(device, shape, [np.random.default_rng(s) for s in range(5)])
    update = Updater(kind, device, 0.1, pulse_type)
    got = update(w, dw, [np.random.default_rng(10 + s) for s in range(5)], spread)
    if kind == "expected":
        from simulate import expected_update
        want = expected_update(w, dw, device)
    else:
        want = pulsed_update(w, dw, device, [np.random.default_rng(10 + s) for s in range(5)],
                             spread.dw_min_scale, spread.bound_scale, lr=0.1,
                             pulse_type=pulse_type)
    assert np.array_equal(got, want)
