"""The compiled per-sample pulse-train writes (simulate.device.sample_writes, issue 26 item 3).

- with the numpy path's uniforms (``exact=True``) and for ``mean-count``, the kernel gives the
  numpy path's bits (weights, running extremes, generator states) over hypothesis-drawn small
  layers, batches, members, devices (soft bounds, asymmetric soft bounds, linear step, hard-bounded
  constant step), update and BL management on and off, and digital layers;
- the fast trains (``exact=False``) have the moments of aihwkit's trains: per-device mean and
  variance of the coincidences and the covariance of two devices sharing a d-train;
- with a device-to-device spread and no cycle-to-cycle noise, the exact kernel and mean-count give
  the numpy path's weights to 4 ulp (numpy's SIMD expm1 / log1p against libm's), the same draws;
- with cycle-to-cycle noise (multiplicative, additive, hard bounds) and a spread, the kernel's
  weights after a write have the numpy path's mean and variance;
- end to end, a network run with the kernel in exact mode is the numpy path's run bit for bit, the
  fast kernel is reproducible and a member's bits do not depend on the others (also on the noisy
  presets); where the kernel does not apply, the numpy path runs.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simulate.problems.network_run as network_run
from simulate import NetworkSpec, SimConfig, train_network
from simulate.device import DeviceSpread, SampleLayer, SampleWrites, Updater
from simulate.device.sample_kernels import train_masks
from simulate.problems.network import Network
from theory.devices import make_device

DEVICES = {
    "softbounds": dict(family="softbounds", tau=0.6, dw_min=0.01),
    "asymmetric": dict(family="asymmetric-softbounds", w_min=-0.4, w_max=0.7, up=1.3, down=0.6,
                       dw_min=0.02),
    "linear-step": dict(family="linear-step", w_min=-0.5, w_max=0.4, gamma_up=0.7, gamma_down=0.2,
                        dw_min=0.015),
    "constant-step": dict(family="constant-step", w_min=-0.05, w_max=0.06, up=1.0, down=0.8,
                          dw_min=0.01),  # hard bounds, reached within a few pulses
}


def _device(name: str, bl: int):
    params = dict(DEVICES[name])
    return make_device(params.pop("family"), desired_bl=bl, **params)


def _numpy_path(update, net, w, factors, rngs, lr, n, digital_stages, spread=None):
    """The numpy per-sample path of simulate.problems.network_run on ``w`` (in place)."""
    counts = np.zeros(w.shape, dtype=np.int64)
    views = (counts, net.views(counts, np.zeros((w.shape[0], net.n_biases), dtype=np.int64)))
    config = SimpleNamespace(lr=lr, pulse_type=update.pulse_type,
                             update_management=update.update_management,
                             bl_management=update.bl_management)
    gw = np.empty_like(w)
    grads = net.views(gw, np.empty((w.shape[0], net.n_biases)))
    digital = [net.weight_slices[s] for s in digital_stages]
    general = network_run._UpdaterWrite(update, rngs, spread, True, views, config, digital)
    w_min, w_max = w.min(axis=1), w.max(axis=1)
    network_run._PerSampleWrite(general, grads, n, lr)(w, gw, factors, w_min, w_max)
    return w_min, w_max


def _layers(net, factors, digital_stages):
    return [SampleLayer(net.weight_slices[s].start + net.stages[s][i].w_offset, h, dz,
                        s in digital_stages) for s, i, h, dz in factors]


@st.composite
def cases(draw):
    layers = draw(st.integers(2, 3))
    stages = draw(st.integers(1, 2))
    return dict(
        layers=layers, width=draw(st.integers(1, 5)), n_in=draw(st.integers(1, 4)),
        n_out=draw(st.integers(1, 3)), stages=stages, n=draw(st.integers(1, 4)),
        members=draw(st.integers(1, 2)), device=draw(st.sampled_from(sorted(DEVICES))),
        pulse_type=draw(st.sampled_from(["stochastic", "mean-count"])),
        um=draw(st.booleans()), blm=draw(st.booleans()), bl=draw(st.sampled_from([1, 5, 31, 64])),
        lr=draw(st.sampled_from([0.05, 0.5, 3.0])), scale=draw(st.sampled_from([0.01, 0.3, 3.0])),
        digital=draw(st.booleans()) and stages == 2, seed=draw(st.integers(0, 2**16)))


@settings(max_examples=60, deadline=None)
@given(cases())
def test_exact_kernel_is_the_numpy_path_bit_for_bit(case):
    device = _device(case["device"], case["bl"])
    update = Updater("pulsed", device, case["lr"], case["pulse_type"],
                     update_management=case["um"], bl_management=case["blm"])
    net = Network.build("digits-mlp", NetworkSpec(layers=case["layers"], width=case["width"]),
                        case["stages"], case["n_in"], case["n_out"])
    rng = np.random.default_rng(case["seed"])
    r, n = case["members"], case["n"]
    lo, hi = device.w_min, device.w_max
    w = rng.uniform(lo, hi, (r, net.n_weights))
    w[:, ::7] = rng.choice([lo, hi], w[:, ::7].shape)  # some weights on the bounds
    factors = []
    for s in range(net.n_stages - 1, -1, -1):
        for i in range(len(net.stages[s]) - 1, -1, -1):
            layer = net.stages[s][i]
            h = np.tanh(rng.normal(0.0, 1.0, (r, n, layer.fan_in)))
            h[rng.random(h.shape) < 0.1] = 0.0
            dz = rng.normal(0.0, case["scale"], (r, n, layer.fan_out))
            factors.append((s, i, h, dz))
    digital_stages = {0} if case["digital"] else set()
    gens = [np.random.default_rng([case["seed"], m]) for m in range(r)]
    w_ref, gens_ref = w.copy(), copy.deepcopy(gens)
    ref_min, ref_max = _numpy_path(update, net, w_ref, factors, gens_ref, case["lr"], n,
                                   digital_stages)
    writes = SampleWrites.of(update, exact=True)
    assert writes is not None
    w_min, w_max = w.min(axis=1), w.max(axis=1)
    assert writes.write(w, _layers(net, factors, digital_stages), gens, w_min, w_max)
    assert np.array_equal(w.view(np.int64), w_ref.view(np.int64))
    assert np.array_equal(w_min, ref_min) and np.array_equal(w_max, ref_max)
    for g, g_ref in zip(gens, gens_ref, strict=True):  # the same number of draws
        assert g.bit_generator.state == g_ref.bit_generator.state


def _popcounts(masks: np.ndarray) -> np.ndarray:
    return np.unpackbits(masks.view(np.uint8)).reshape(*masks.shape, 64).sum(axis=-1)


@pytest.mark.parametrize("p_d", [0.02, 0.15, 0.6])
def test_fast_trains_have_the_moments_of_aihwkit_trains(p_d):
    """Per device: E[n] = BL p_x p_d, Var[n] = BL p (1 - p); devices (j, i), (j', i) sharing the
    d-train: Cov = BL p_x p_x' p_d (1 - p_d) (0 for independent counts); devices (j, i), (j, i')
    sharing the x-train: Cov = BL p_x (1 - p_x) p_d p_d'. Sample means of 20,000 updates,
    z < 4 against their standard errors."""
    bl, trials = 31, 20_000
    p_x = np.array([0.1, 0.35, 0.8, 1.0, 0.0])
    # rows of small p: most of their trains are empty (decided by the bound 1 - BL p)
    x, d = p_x.copy(), np.array([p_d, p_d * 0.5, 0.0, 0.004, 0.006, 0.003, 0.01])
    words = np.random.default_rng(7).bit_generator.random_raw(trials * 200).view(np.uint32)
    x_mask = np.empty(x.size, dtype=np.uint64)
    d_mask = np.empty(d.size, dtype=np.uint64)
    thresholds = np.empty(x.size, dtype=np.int64)
    listed = np.empty(d.size, dtype=np.int64)
    counts = np.empty((trials, x.size, d.size))
    pos, u = 0, np.zeros(1)
    for k in range(trials):
        pos = train_masks(x, d, 1.0, 1.0, bl, False, u, 0, words, pos, x_mask, d_mask,
                          thresholds, listed)
        counts[k] = _popcounts(x_mask[:, None] & d_mask[None, :])
    assert pos < words.size
    p = p_x[:, None] * d[None, :]
    mean = bl * p
    var = bl * p * (1 - p)
    z = (counts.mean(axis=0) - mean) / np.sqrt(np.maximum(var, 1e-300) / trials)
    assert np.all(np.abs(z[var > 0]) < 4), z
    assert np.all(counts[:, var == 0] == mean[var == 0])
    centred = counts - counts.mean(axis=0)
    sample_var = (centred**2).mean(axis=0)
    fourth = (centred**4).mean(axis=0)
    z_var = (sample_var - var) / np.sqrt(np.maximum(fourth - sample_var**2, 1e-300) / trials)
    assert np.all(np.abs(z_var[var > 0]) < 4), z_var
    for j, k in ((0, 1), (1, 2), (0, 2)):  # the pairs sharing row 0's d-train
        a, b = centred[:, j, 0], centred[:, k, 0]
        cov = bl * p_x[j] * p_x[k] * d[0] * (1 - d[0])
        product = a * b
        z_cov = (product.mean() - cov) / (product.std() / np.sqrt(trials))
        assert abs(z_cov) < 4, (j, k, z_cov)
        assert cov > 5 * product.std() / np.sqrt(trials)  # independent counts would fail
    for j in (0, 1, 2):  # (j, 0) and (j, 1) share x-train j: Cov = BL p_x (1 - p_x) p_d p_d'
        product = centred[:, j, 0] * centred[:, j, 1]
        cov = bl * p_x[j] * (1 - p_x[j]) * d[0] * d[1]
        z_cov = (product.mean() - cov) / (product.std() / np.sqrt(trials))
        assert abs(z_cov) < 4, (j, z_cov)


def _config(**kw):
    base = dict(problem="digits-mlp", micro_batch_size=4, steps=6, seeds=2, log_every=3,
                update="pulsed", pulse_type="stochastic", lr=0.1, write="per-sample")
    return SimConfig(**{**base, **kw})


SPEC = NetworkSpec(layers=3, width=6)


def _run(config, monkeypatch, how):
    """A run with the kernel in exact mode, the numpy path, or the default fast kernel."""
    original = SampleWrites.of
    if how == "numpy":
        monkeypatch.setattr(network_run.SampleWrites, "of", lambda *a, **k: None)
    elif how == "exact":
        monkeypatch.setattr(network_run.SampleWrites, "of",
                            lambda update, spread=None: original(update, spread, exact=True))
    try:
        return train_network(config, spec=SPEC)
    finally:
        monkeypatch.setattr(network_run.SampleWrites, "of", original)


@pytest.mark.parametrize("kw", [
    dict(), dict(pulse_type="mean-count"), dict(update_management=True, bl_management=True),
    dict(mode="async", stages=2, algorithm="mixed", digital_stages="1"),
    dict(tau=0.3, lr=0.6),
])
def test_network_run_with_the_exact_kernel_is_the_numpy_run(kw, monkeypatch):
    config = _config(**kw)
    exact, ref = _run(config, monkeypatch, "exact"), _run(config, monkeypatch, "numpy")
    assert np.array_equal(exact.weights, ref.weights)
    assert np.array_equal(exact.biases, ref.biases)
    assert np.array_equal(exact.trace.max_abs_w, ref.trace.max_abs_w)
    assert np.array_equal(exact.trace.loss, ref.trace.loss)


def test_fast_kernel_reproducible_and_members_independent(monkeypatch):
    config = _config()
    a, b = _run(config, monkeypatch, "fast"), _run(config, monkeypatch, "fast")
    assert np.array_equal(a.weights, b.weights)
    alone = train_network(config, spec=SPEC, members=[1])
    assert np.array_equal(alone.weights[0], a.weights[1])
    ref = _run(config, monkeypatch, "numpy")
    assert not np.array_equal(a.weights, ref.weights)  # its own bits


def test_where_the_kernel_does_not_apply():
    soft = make_device("softbounds", tau=1.0, dw_min=0.01)
    assert SampleWrites.of(Updater("pulsed", soft, 0.1, "stochastic")) is not None
    assert SampleWrites.of(Updater("pulsed", soft, 0.1, "deterministic")) is None
    assert SampleWrites.of(Updater("expected", soft, 0.1)) is None
    assert SampleWrites.of(Updater("pulsed", soft, 0.1, "stochastic", "loop")) is None
    noisy = make_device("softbounds", tau=1.0, dw_min=0.01, dw_min_std=0.3)
    assert SampleWrites.of(Updater("pulsed", noisy, 0.1, "stochastic")) is not None
    assert SampleWrites.of(Updater("pulsed", noisy, 0.1, "stochastic"), exact=True) is None
    long = make_device("softbounds", tau=1.0, dw_min=0.01, desired_bl=65)
    assert SampleWrites.of(Updater("pulsed", long, 0.1, "stochastic")) is None
    power = make_device("power", tau=1.0, pow_gamma=2.0, dw_min=0.01)
    assert SampleWrites.of(Updater("pulsed", power, 0.1, "stochastic")) is None
    spread = DeviceSpread(dw_min_scale=np.ones((1, 4)))
    assert SampleWrites.of(Updater("pulsed", soft, 0.1, "stochastic"), spread).general
    # a weight outside the range: nothing drawn or written, the caller takes the numpy path
    writes = SampleWrites.of(Updater("pulsed", soft, 0.1, "stochastic"))
    w = np.full((1, 4), 0.5)
    w[0, 2] = 1.5
    g = np.random.default_rng(0)
    state = copy.deepcopy(g.bit_generator.state)
    layer = SampleLayer(0, np.ones((1, 2, 2)), np.ones((1, 2, 2)))
    assert not writes.write(w, [layer], [g], w.min(axis=1), w.max(axis=1))
    assert g.bit_generator.state == state and w[0, 2] == 1.5


@pytest.mark.parametrize("device", ["reram-softbounds", "ecram-linearstep"])
def test_noisy_preset_runs_the_kernel(device, monkeypatch):
    """Presets with cycle-to-cycle noise (additive, multiplicative) and device-to-device spreads
    run the kernel: reproducible, a member's bits its own, other bits than the numpy path's."""
    config = _config(device=device, tau=None, steps=3)
    a, b = _run(config, monkeypatch, "fast"), _run(config, monkeypatch, "fast")
    assert np.array_equal(a.weights, b.weights)
    assert np.array_equal(train_network(config, spec=SPEC, members=[1]).weights[0], a.weights[1])
    assert not np.array_equal(a.weights, _run(config, monkeypatch, "numpy").weights)
    mean_count = replace(config, pulse_type="mean-count")
    assert not np.array_equal(_run(mean_count, monkeypatch, "fast").weights,
                              _run(mean_count, monkeypatch, "numpy").weights)


def test_one_sample_per_update_keeps_the_numpy_path(monkeypatch):
    """At b = 1 a per-sample write is the batch-mean write: the numpy path, its bits."""
    config = _config(micro_batch_size=1)
    assert np.array_equal(_run(config, monkeypatch, "fast").weights,
                          _run(config, monkeypatch, "numpy").weights)
    assert np.array_equal(train_network(replace(config, write="batch-mean"), spec=SPEC).weights,
                          _run(config, monkeypatch, "fast").weights)


def _small_write(family, pulse_type, params, members, n=3, seed=3):
    """A two-layer net's update, weights (some on the device bounds, so outside the range of an
    element whose bound spread is < 1), factors, and a spread whose doubled ``dw_min`` factors
    give some rates >= 1 (fired pulse by pulse)."""
    device = make_device(family, dw_min_dtod=0.3, w_bounds_dtod=0.05, desired_bl=31, **params)
    update = Updater("pulsed", device, 0.5, pulse_type)
    net = Network.build("digits-mlp", NetworkSpec(layers=2, width=4), 1, 3, 2)
    rng = np.random.default_rng(seed)
    w = rng.uniform(device.w_min, device.w_max, (members, net.n_weights))
    w[:, ::5] = rng.choice([device.w_min, device.w_max], w[:, ::5].shape)
    spread = DeviceSpread.draw(device, w.shape, [np.random.default_rng([9, m])
                                                 for m in range(members)])
    spread = DeviceSpread(spread.dw_min_scale * 2, spread.bound_scale)
    factors = []
    for s in range(net.n_stages - 1, -1, -1):
        for i in range(len(net.stages[s]) - 1, -1, -1):
            layer = net.stages[s][i]
            factors.append((s, i, np.tanh(rng.normal(0, 1, (members, n, layer.fan_in))),
                            rng.normal(0, 0.5, (members, n, layer.fan_out))))
    return update, net, w, factors, spread


@pytest.mark.parametrize("family", sorted(DEVICES))
@pytest.mark.parametrize("pulse_type", ["stochastic", "mean-count"])
def test_spread_without_noise_is_the_numpy_path_to_the_last_bits(family, pulse_type):
    """A device-to-device spread (no cycle-to-cycle noise), with rates >= 1 and starts outside
    an element's range: the exact kernel and mean-count give the numpy path's weights to 4 ulp
    of the range (its closed forms use numpy's expm1 / log1p, SIMD on an AVX-512 machine, the
    kernel libm's: bit for bit where numpy's are libm's too; the affine families without a rate,
    constant step, bit for bit everywhere) and draw the same numbers."""
    params = dict(DEVICES[family])
    name = params.pop("family")
    update, net, w, factors, spread = _small_write(name, pulse_type, params, members=2)
    gens = [np.random.default_rng([5, m]) for m in range(2)]
    w_ref, gens_ref = w.copy(), copy.deepcopy(gens)
    ref_min, ref_max = _numpy_path(update, net, w_ref, factors, gens_ref, 0.5, 3, set(), spread)
    writes = SampleWrites.of(update, spread, exact=True)
    w_min, w_max = w.min(axis=1), w.max(axis=1)
    assert writes.general and writes.write(w, _layers(net, factors, set()), gens, w_min, w_max)
    device = update.device
    ulp = np.spacing(device.w_max - device.w_min)
    assert np.abs(w - w_ref).max() <= 4 * ulp
    if family == "constant-step":
        assert np.array_equal(w, w_ref)
    assert np.allclose(w_min, ref_min, rtol=0, atol=4 * ulp)
    assert np.allclose(w_max, ref_max, rtol=0, atol=4 * ulp)
    assert not np.array_equal(w, _small_write(name, pulse_type, params, 2)[2])  # it wrote
    for g, g_ref in zip(gens, gens_ref, strict=True):
        assert g.bit_generator.state == g_ref.bit_generator.state


NOISY = {
    "multiplicative": ("linear-step", dict(w_min=-0.5, w_max=0.4, gamma_up=0.7, gamma_down=0.2,
                                           dw_min=0.015, dw_min_std=0.3), "stochastic"),
    "additive": ("asymmetric-softbounds", dict(w_min=-0.4, w_max=0.7, up=1.3, down=0.6,
                                               dw_min=0.02, dw_min_std=1.5,
                                               c2c_noise="additive"), "stochastic"),
    "hard bounds": ("constant-step", dict(w_min=-0.05, w_max=0.06, up=1.0, down=0.8,
                                          dw_min=0.01, dw_min_std=0.3), "mean-count"),
}


@pytest.mark.parametrize("case", sorted(NOISY))
def test_noisy_writes_have_the_numpy_paths_moments(case):
    """Cycle-to-cycle noise with a device-to-device spread (rates >= 1, starts outside the
    range, weights on hard bounds; additive noise large enough for walks near a bound, fired
    pulse by pulse): the mean and the variance of every weight after a three-sample write, the
    kernel's (2,000 writes from one generator) against the numpy path's (2,000 members), z < 4.5
    (two-sample; the variance's standard error from the fourth moment)."""
    family, params, pulse_type = NOISY[case]
    trials = 2000
    update, net, w0, factors, spread = _small_write(family, pulse_type, params, members=1)
    many = np.repeat(w0, trials, axis=0)
    ref = many.copy()
    _numpy_path(update, net, ref, [(s, i, np.repeat(h, trials, axis=0),
                                    np.repeat(dz, trials, axis=0)) for s, i, h, dz in factors],
                [np.random.default_rng([1, k]) for k in range(trials)], 0.5, 3, set(),
                DeviceSpread(*(np.repeat(a, trials, axis=0)
                               for a in (spread.dw_min_scale, spread.bound_scale))))
    writes = SampleWrites.of(update, spread)
    g, layers, got = np.random.default_rng(2), _layers(net, factors, set()), np.empty_like(many)
    for k in range(trials):
        w = w0.copy()
        assert writes.write(w, layers, [g], w.min(axis=1), w.max(axis=1))
        got[k] = w[0]
    a, b = ref - w0, got - w0
    var_a, var_b = a.var(axis=0), b.var(axis=0)
    assert np.all(var_a > 0)  # every weight pulsed, with noise

    def var_se2(x):
        c = x - x.mean(axis=0)
        return ((c ** 4).mean(axis=0) - c.var(axis=0) ** 2) / trials

    z_mean = (a.mean(axis=0) - b.mean(axis=0)) / np.sqrt((var_a + var_b) / trials)
    z_var = (var_a - var_b) / np.sqrt(var_se2(a) + var_se2(b))
    assert np.abs(z_mean).max() < 4.5, z_mean
    assert np.abs(z_var).max() < 4.5, z_var


@pytest.mark.parametrize("pulse_type", ["stochastic", "mean-count"])
def test_float32_noisy_runs_take_the_kernel_in_float32(pulse_type, monkeypatch):
    """A float32 run on a noisy preset writes through the kernel (float32 weights) and, drawing
    the same draws and normals, stays within float32 rounding of the float64 run."""
    chosen = []
    original = SampleWrites.of
    monkeypatch.setattr(network_run.SampleWrites, "of",
                        lambda *a, **k: chosen.append(original(*a, **k)) or chosen[-1])
    config = _config(device="ecram-linearstep", tau=None, pulse_type=pulse_type, dtype="float32")
    single = train_network(config, spec=SPEC)
    assert chosen[-1] is not None and single.weights.dtype == np.float32
    double = train_network(replace(config, dtype="float64"), spec=SPEC)
    np.testing.assert_allclose(single.weights, double.weights, rtol=0, atol=1e-5)
