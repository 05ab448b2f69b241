"""Analog updates: expected update vs pulse level, soft-bounds identity, q = 1 is digital SGD."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simulate import (
    SimConfig,
    Updater,
    device_from_config,
    digital_update,
    expected_update,
    pulsed_update,
)
from simulate.device import DeviceSpread, draw_bound_scale, draw_dw_min_scale
from theory import ParameterError, load_preset, make_device

Z = 4.0


def _soft(tau=1.0, dw_min=1e-3, **kw):
    return make_device("softbounds", tau=tau, dw_min=dw_min, **kw)


@given(
    tau=st.floats(0.2, 5.0),
    w_frac=st.floats(-0.99, 0.99),
    alpha=st.floats(1e-4, 1.0),
    g_frac=st.floats(-1.0, 1.0),
)
def test_soft_bounds_identity(tau, w_frac, alpha, g_frac):
    """W+ = W - alpha g - (alpha/tau)|g| W (paper-notes section 3) while |alpha g| <= tau."""
    w, g = w_frac * tau, g_frac * tau / alpha
    got = expected_update(np.array([w]), np.array([-alpha * g]), _soft(tau))
    want = w - alpha * g - (alpha / tau) * abs(g) * w
    np.testing.assert_allclose(got, [want], rtol=1e-12, atol=1e-12 * tau)


@pytest.mark.parametrize("preset", ["reram-softbounds", "ecram-linearstep", "capacitor-linearstep"])
def test_expected_update_is_q_plus_or_q_minus(preset):
    """U(w, dw) = w + dw q_+(w) for dw >= 0 and w + dw q_-(w) for dw < 0 (inside the range)."""
    device = load_preset(preset)
    rng = np.random.default_rng(3)
    w = rng.uniform(0.8 * device.w_min, 0.8 * device.w_max, 1000)
    dw = rng.uniform(-0.05, 0.05, 1000)
    want = np.where(dw >= 0, w + dw * device.q_plus(w), w + dw * device.q_minus(w))
    np.testing.assert_allclose(expected_update(w, dw, device), want, rtol=1e-12, atol=1e-15)


def test_constant_step_q1_is_digital_exactly():
    device = load_preset("idealized-constantstep")
    rng = np.random.default_rng(0)
    w, dw = rng.uniform(-0.5, 0.5, (4, 50)), rng.normal(0, 0.1, (4, 50))
    assert np.array_equal(expected_update(w, dw, device), digital_update(w, dw))


def test_large_tau_approaches_digital():
    rng = np.random.default_rng(1)
    w, dw = rng.uniform(-0.5, 0.5, 200), rng.normal(0, 0.1, 200)
    err = [np.max(np.abs(expected_update(w, dw, _soft(tau)) - (w + dw))) for tau in (1e2, 1e4, 1e6)]
    assert err[0] > err[1] > err[2] and err[2] < 1e-6


def _pulse_stats(device, w, dw, samples, seed):
    rng = np.random.default_rng(seed)
    out = pulsed_update(np.full(samples, w), np.full(samples, dw), device, rng)
    return out.mean(), out.std(ddof=1) / np.sqrt(samples)


@pytest.mark.parametrize("preset", ["reram-softbounds", "ecram-linearstep"])
@pytest.mark.parametrize("ratio", [0.3, 2.5, 20.0])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_expected_update_is_mean_of_pulses(preset, ratio, sign):
    r"""E[pulsed] = expected update + O((|dw| + dw_min)^2): the bias is at most
    :math:`\tfrac12 \sup|q'| q_{\max} (|dw| + dw_{\min})^2` (the response drifts during the pulses),
    plus a z = 4 statistical margin with the standard error estimated from the samples."""
    base = load_preset(preset)
    for dw_min in (1e-2, 1e-3):
        device = make_device(base.family, dw_min=dw_min, dw_min_std=0.3, **base.response.params())
        w, dw = 0.3 * device.w_max, sign * ratio * dw_min
        mean, se = _pulse_stats(device, w, dw, 40_000, seed=int(ratio * 10) + (sign > 0))
        expected = expected_update(np.array([w]), np.array([dw]), device)[0]
        grid = np.linspace(device.w_min, device.w_max, 2001)
        slope = max(np.max(np.abs(np.gradient(device.q_plus(grid), grid))),
                    np.max(np.abs(np.gradient(device.q_minus(grid), grid))))
        q_max = max(device.q_plus(grid).max(), device.q_minus(grid).max()) * (1 + Z * 0.3)
        bias = 0.5 * slope * q_max * (abs(dw) + dw_min) ** 2
        assert abs(mean - expected) <= Z * se + bias, (dw_min, mean, expected, se, bias)


def test_stochastic_rounding_is_unbiased_and_sequential():
    """Soft bounds without pulse noise: after n up-pulses tau - w_n = (tau - w)(1 - dw_min/tau)^n
    exactly, so E[w+] is known in closed form over n = floor(x) + Bernoulli(frac(x))."""
    tau, dw_min, w, dw = 1.0, 0.02, 0.2, 0.37
    device = _soft(tau, dw_min)
    mean, se = _pulse_stats(device, w, dw, 50_000, seed=7)
    x = dw / dw_min
    n0, frac = np.floor(x), x - np.floor(x)
    decay = (1 - dw_min / tau) ** n0 * ((1 - frac) + frac * (1 - dw_min / tau))
    exact = tau - (tau - w) * decay
    assert abs(mean - exact) <= Z * se
    # the first-order expected update differs from it by O(dw^2/tau): visible at this size
    assert abs(exact - expected_update(np.array([w]), np.array([dw]), device)[0]) > 10 * Z * se


def test_pulsed_clips_at_device_bounds():
    device = make_device("constant-step", w_min=-1.0, w_max=1.0, dw_min=0.05)
    w = np.array([0.98, -0.98, 0.0])
    out = pulsed_update(w, np.array([0.5, -0.5, 0.5]), device, np.random.default_rng(0))
    np.testing.assert_array_equal(out[:2], [1.0, -1.0])
    assert out[2] == pytest.approx(0.5)


def test_pulsed_members_draw_from_their_own_generator():
    """Row r of an ensemble update equals the same row updated alone with the same generator."""
    device = _soft(1.0, 0.01, dw_min_std=0.5)
    rng = np.random.default_rng(0)
    w, dw = rng.uniform(-0.5, 0.5, (3, 20)), rng.normal(0, 0.1, (3, 20))
    dw[1] *= 5  # member 1 needs many more pulses than the others
    together = pulsed_update(w, dw, device, [np.random.default_rng(s) for s in range(3)])
    for r in range(3):
        alone = pulsed_update(w[r:r + 1], dw[r:r + 1], device, [np.random.default_rng(r)])
        assert np.array_equal(together[r], alone[0])


def test_dw_min_scale_spread():
    device = _soft(1.0, 0.001, dw_min_dtod=0.2)
    scale = draw_dw_min_scale(device, (2, 50_000), [np.random.default_rng(s) for s in (1, 2)])
    assert scale.shape == (2, 50_000) and np.all(scale > 0)
    assert abs(scale.mean() - 1) < Z * 0.2 / np.sqrt(scale.size)
    # the sample std of n normals has standard error sigma / sqrt(2n)
    assert abs(scale.std() - 0.2) < Z * 0.2 / np.sqrt(2 * scale.size)


def test_updater_from_config():
    assert Updater.from_config(SimConfig(algorithm="digital")).kind == "digital"
    up = Updater.from_config(SimConfig(update="pulsed", device="reram-softbounds"))
    assert up.kind == "pulsed" and up.device.name == "reram-softbounds"
    with pytest.raises(ParameterError, match="kind"):
        Updater("bogus")
    with pytest.raises(ParameterError, match="needs a device"):
        Updater("expected")


def test_device_from_config_tau_and_errors():
    assert device_from_config(SimConfig(device="softbounds", tau=2.5)).w_max == 2.5
    assert device_from_config(SimConfig(device="softbounds-tau1", tau=1.5)).w_max == 1.5
    # a preset whose range is w_min/w_max keeps it: another tau is refused, not ignored
    with pytest.raises(ParameterError, match=r"^tau=3 does not apply to the preset "
                                             r"device='reram-softbounds'"):
        SimConfig(device="reram-softbounds", tau=3.0)
    fixed = SimConfig(device="reram-softbounds")  # the default tau: the record says None
    assert fixed.tau is None and device_from_config(fixed).w_max == 1.25
    with pytest.raises(ParameterError, match="device='nope'"):
        device_from_config(SimConfig(device="nope"))


def test_expected_update_clips_at_device_bounds():
    """A conductance cannot leave [w_min, w_max]: an overshooting step stops at the bound."""
    device = make_device("constant-step", w_min=-1.0, w_max=1.0, dw_min=0.05)
    out = expected_update(np.array([0.98, -0.98, 0.2]), np.array([0.5, -0.5, 0.5]), device)
    np.testing.assert_array_equal(out, [1.0, -1.0, 0.7])


def test_bound_spread_sets_each_elements_saturation_level():
    """With a device-to-device spread of the bounds, many up-pulses drive element i to its own upper
    bound ``w_max * s_i`` (soft bounds: the response vanishes there), not to the nominal one."""
    device = make_device("softbounds", tau=1.0, dw_min=0.01, w_bounds_dtod=0.2)
    rngs = [np.random.default_rng(s) for s in (3, 4)]
    scale = draw_bound_scale(device, (2, 400), rngs)
    assert abs(scale.mean() - 1) < 4 * 0.2 / np.sqrt(800)
    assert abs(scale.std() - 0.2) < 4 * 0.2 / np.sqrt(2 * 800)  # std's standard error
    w = np.zeros((2, 400))
    for _ in range(60):
        w = pulsed_update(w, np.full_like(w, 0.5), device, rngs, bound_scale=scale)
    np.testing.assert_allclose(w, device.w_max * scale, atol=0.02)
    assert np.ptp(w) > 0.3  # the elements saturate at clearly different levels


def test_device_spread_draws_only_what_the_device_has():
    plain = make_device("softbounds", tau=1.0, dw_min=0.01)
    spread = DeviceSpread.draw(plain, (1, 5), [np.random.default_rng(0)])
    assert spread.dw_min_scale is None and spread.bound_scale is None
    both = make_device("softbounds", tau=1.0, dw_min=0.01, dw_min_dtod=0.3, w_bounds_dtod=0.1)
    spread = DeviceSpread.draw(both, (1, 5), [np.random.default_rng(0)])
    # the dw_min spread is drawn first, so it equals a draw of it alone from the same stream
    np.testing.assert_array_equal(
        spread.dw_min_scale, draw_dw_min_scale(both, (1, 5), [np.random.default_rng(0)])
    )
    assert spread.bound_scale.shape == (1, 5)


@pytest.mark.parametrize("c2c_noise", ["multiplicative", "additive"])
def test_cycle_to_cycle_noise_has_the_stated_mean_and_spread(c2c_noise):
    """One pulse at w: mean ``dw_min q(w)`` either way; std ``dw_min q(w) sigma_c``
    (multiplicative) or ``dw_min sigma_c`` (additive), checked with z >= 4 margins."""
    sigma_c, dw_min, w0 = 0.5, 0.01, 0.6
    device = make_device("softbounds", tau=1.0, dw_min=dw_min, dw_min_std=sigma_c,
                         c2c_noise=c2c_noise)
    w = np.full(200_000, w0)
    step = pulsed_update(w, np.full_like(w, dw_min), device, np.random.default_rng(7)) - w0
    q = 1 - w0  # q_+ of soft bounds at w0
    n = step.size
    assert abs(step.mean() - dw_min * q) < 4 * step.std() / np.sqrt(n)
    expected_std = dw_min * sigma_c * (q if c2c_noise == "multiplicative" else 1.0)
    assert abs(step.std() - expected_std) < 4 * expected_std / np.sqrt(2 * n)


def test_unknown_c2c_noise_is_a_parameter_error():
    with pytest.raises(ParameterError, match="c2c_noise"):
        make_device("softbounds", tau=1.0, dw_min=0.01, c2c_noise="gaussian")


def test_pulse_noise_memory_does_not_grow_with_the_pulse_count():
    """10^4 noisy pulses on 2000 weights: the noise is drawn a block of pulses at a time (about
    8 MB), not as one (pulses, weights) array of 160 MB."""
    import tracemalloc

    device = _soft(1.0, 1e-5, dw_min_std=0.3)
    w, dw = np.zeros((2, 1000)), np.full((2, 1000), 0.1)  # 10^4 pulses per element
    rngs = [np.random.default_rng(s) for s in (0, 1)]
    tracemalloc.start()
    try:
        out = pulsed_update(w, dw, device, rngs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32e6, peak
    assert np.all(out > 0.05)


def test_pulsed_update_refuses_too_many_pulses_before_firing_any():
    from theory import MAX_PULSES_PER_UPDATE

    device = make_device("softbounds", tau=1.0, dw_min=0.001)
    w = np.zeros((2, 3))
    dw = np.full((2, 3), 0.001 * (MAX_PULSES_PER_UPDATE + 1))
    message = (r"^lr=10000\.0 asks for 1e\+05 pulses on one device in one update "
               r"\(\|dw\| / dw_min\), more than the limit 1e\+05; lower lr")
    with pytest.raises(ParameterError, match=message):
        pulsed_update(w, dw, device, np.random.default_rng(0), lr=1e4)
    with pytest.raises(ParameterError, match=r"^dw=100\.001 asks for"):
        pulsed_update(w, dw, device, [np.random.default_rng(0)] * 2)
    # at the limit it runs (a few pulses' worth in a cheap case)
    assert pulsed_update(w, dw / 1e3, device, np.random.default_rng(0)).shape == (2, 3)


def test_updater_names_the_learning_rate_of_its_config():
    up = Updater.from_config(SimConfig(update="pulsed", pulse_type="deterministic", lr=1e4))
    assert up.lr == 1e4
    with pytest.raises(ParameterError, match=r"^lr=10000\.0 asks for"):
        up(np.zeros((1, 2)), np.full((1, 2), -1e3), [np.random.default_rng(0)])
