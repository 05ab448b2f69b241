"""The fused kernels of the network step give numpy's bits (simulate.device.update_kernels)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from simulate import (
    NetworkSpec,
    SimConfig,
    Updater,
    device_from_config,
    expected_update,
    train_network,
)
from simulate.device import (
    add_bias,
    add_bias_numpy,
    dense_backward,
    dense_backward_numpy,
    expected_step,
    expected_step_numpy,
    expected_step_ratio,
    expected_step_ratio_numpy,
    softmax_delta,
    softmax_delta_numpy,
)
from simulate.problems import network_run as networks


def _device(**kw):
    return device_from_config(SimConfig(problem="digits-mlp", **kw))


@pytest.mark.parametrize("f", [1.0, 0.5])
def test_expected_step_is_expected_update_bit_for_bit(f):
    rng = np.random.default_rng(0)
    device = _device(device="softbounds", tau=1.0)
    w = rng.uniform(-1.0, 1.0, (3, 1000))
    gw = rng.standard_normal(w.shape) * np.where(rng.random(w.shape) < 0.05, 400.0, 0.3)
    w[1, 7] = np.nan  # a diverged weight: nan reaches the extremes of its member only
    w_min, w_max = np.array([0.0, 0.0, -2.0]), np.array([0.0, 0.0, 2.0])
    g = device.G(w)
    if f == 1.0:
        want = expected_update(w, -0.1 * gw, device)
    else:  # the same operations with a constant F = f
        dw = -0.1 * gw
        want = np.clip(f * dw - np.abs(dw) * g + w, device.w_min, device.w_max)
    assert np.any(want == device.w_max) and np.any(want == device.w_min)  # the clip acts
    arrays = {}
    for name, fn in (("kernel", expected_step), ("numpy", expected_step_numpy)):
        ww, gg, lo, hi = w.copy(), gw.copy(), w_min.copy(), w_max.copy()
        fn(ww, gg, g, -0.1, f, device.w_min, device.w_max, lo, hi)
        arrays[name] = (ww, gg, lo, hi)
        np.testing.assert_array_equal(ww, want)
        np.testing.assert_array_equal(gg, -0.1 * gw)
    for a, b in zip(*arrays.values(), strict=True):
        np.testing.assert_array_equal(a, b)
    _, _, lo, hi = arrays["kernel"]
    assert np.isnan(lo[1]) and np.isnan(hi[1])
    assert lo[0] == np.nanmin(want[0]) and hi[0] == np.nanmax(want[0]) and lo[2] == -2.0


@pytest.mark.parametrize(("f", "tau"), [(1.0, 1.0), (1.0, 0.7), (0.5, 1.3)])
def test_expected_step_ratio_is_expected_update_bit_for_bit(f, tau):
    """G = w / tau inside the pass gives the bits of soft bounds' compiled G, then the step."""
    rng = np.random.default_rng(3)
    device = _device(device="softbounds", tau=tau)
    w = rng.uniform(-tau, tau, (3, 1000))
    w[0, :4] = [-0.0, 0.0, tau, -tau]  # signed zeros and the bounds keep their bits
    gw = rng.standard_normal(w.shape) * np.where(rng.random(w.shape) < 0.05, 400.0, 0.3)
    gw[0, :2] = [0.0, -0.0]
    w[1, 7] = np.nan
    w_min, w_max = np.array([0.0, 0.0, -2.0]), np.array([0.0, 0.0, 2.0])
    g = device.G(w)
    np.testing.assert_array_equal(g.view(np.int64), (w / tau).view(np.int64))
    want = [w.copy(), gw.copy(), w_min.copy(), w_max.copy()]
    expected_step(want[0], want[1], g, -0.1, f, device.w_min, device.w_max, *want[2:])
    if f == 1.0:
        np.testing.assert_array_equal(want[0], expected_update(w, -0.1 * gw, device))
    assert np.any(want[0] == device.w_max) and np.any(want[0] == device.w_min)
    for fn in (expected_step_ratio, expected_step_ratio_numpy):
        got = [w.copy(), gw.copy(), w_min.copy(), w_max.copy()]
        fn(got[0], got[1], tau, -0.1, f, device.w_min, device.w_max, *got[2:])
        for a, b in zip(got[::2] + got[3:], want[::2] + want[3:], strict=True):
            np.testing.assert_array_equal(a.view(np.int64), b.view(np.int64))
        np.testing.assert_array_equal(got[1], gw)  # the gradient is left unchanged
    other = w.copy()
    expected_step_ratio(other, gw.copy(), tau * 1.01, -0.1, f, device.w_min, device.w_max,
                        w_min.copy(), w_max.copy())
    assert not np.array_equal(other, want[0], equal_nan=True)


@pytest.mark.parametrize("case", ["none", "few", "many", "zero", "nan"])
def test_expected_step_ratio_extremes_are_numpys(case):
    """The running extremes, reduced again only for the rows a weight left, are numpy's bits:
    rows inside their extremes, a few rows out (reduced alone), many (the whole reduction), an
    extreme at 0 and a nan."""
    rng = np.random.default_rng(5)
    w = rng.uniform(-0.5, 0.5, (8, 300))
    gw = 0.01 * rng.standard_normal(w.shape)
    w_min, w_max = w.min(axis=1) - 0.1, w.max(axis=1) + 0.1  # nothing leaves them
    if case == "few":
        w_min[3] += 0.2
    elif case == "many":
        w_max[:5] -= 0.2
    elif case == "zero":
        w[2] = np.abs(w[2])
        w[2, 7] = 0.0
        w_min[2], w_min[4] = 0.0, -0.0
        gw[2] = 0.0
    elif case == "nan":
        w[1, 3] = np.nan
    want = [w.copy(), w_min.copy(), w_max.copy()]
    expected_step_numpy(want[0], gw.copy(), want[0] / 1.0, -0.1, 1.0, -1.0, 1.0, *want[1:])
    got = [w.copy(), w_min.copy(), w_max.copy()]
    expected_step_ratio(got[0], gw, 1.0, -0.1, 1.0, -1.0, 1.0, *got[1:])
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a.view(np.int64), b.view(np.int64))
    moved = (want[1] != w_min) | (want[2] != w_max)
    assert moved.sum() == {"none": 0, "few": 1, "many": 5, "zero": 1, "nan": 1}[case]


@pytest.mark.parametrize(("device", "tau", "ratio"), [
    ("softbounds", 1.0, 1.0), ("softbounds", 0.7, 0.7), ("ecram-linearstep", None, None),
    ("gokmen-vlasov-constantstep", None, None)])
def test_fused_update_evaluates_g_inside_the_pass_for_soft_bounds_only(device, tau, ratio):
    config = SimConfig(problem="digits-mlp", device=device, tau=tau)
    update = Updater.from_config(config, device_from_config(config))
    fused = networks._FusedExpected.of(update, np.zeros((2, 3)))
    assert (None if fused is None else fused.ratio) == ratio


def test_add_bias_is_numpys_addition():
    rng = np.random.default_rng(4)
    c = rng.standard_normal((3, 40))
    bias = c[:, None, 5:21]  # a strided view, as the network's biases
    z = rng.standard_normal((3, 7, 16))
    z[0, 0, :2] = [-0.0, np.nan]
    want = z + bias
    for fn in (add_bias, add_bias_numpy):
        got = z.copy()
        fn(got, bias)
        np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))
    flat = z[0].copy()  # other shapes take numpy's addition
    add_bias(flat, c[:1, 5:21])
    np.testing.assert_array_equal(flat, z[0] + c[:1, 5:21])
    other = z.copy()
    add_bias(other, c[:, None, 6:22])
    assert not np.array_equal(other, want, equal_nan=True)


@pytest.mark.parametrize("tanh", [True, False])
def test_dense_backward_is_the_numpy_formula(tanh):
    rng = np.random.default_rng(1)
    a = np.tanh(rng.standard_normal((3, 7, 5))) if tanh else \
        np.maximum(rng.standard_normal((3, 7, 5)), 0.0)
    delta = rng.standard_normal(a.shape)
    want = (1.0 - a * a) * delta if tanh else delta * (a > 0.0)
    gc = np.zeros((3, 9))  # the bias gradient is a strided view, as in the network
    out = np.empty_like(a)
    dense_backward(a, delta, out, gc[:, None, 2:7], tanh)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(gc[:, 2:7], want.sum(axis=-2))
    assert np.all(gc[:, :2] == 0) and np.all(gc[:, 7:] == 0)
    ref, ref_gc = np.empty_like(a), np.zeros((3, 1, 5))
    dense_backward_numpy(a, delta, ref, ref_gc, tanh)
    np.testing.assert_array_equal(ref, out)
    np.testing.assert_array_equal(ref_gc[:, 0], gc[:, 2:7])
    strided = np.empty_like(a)  # a non-contiguous input gives the same bits
    dense_backward(a, np.asfortranarray(delta), strided, ref_gc, tanh)
    np.testing.assert_array_equal(strided, want)


def test_softmax_delta_is_the_numpy_formula():
    rng = np.random.default_rng(2)
    logits = 5 * rng.standard_normal((4, 6, 10))
    y = rng.integers(0, 10, (4, 6))
    exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
    total = exp.sum(axis=-1, keepdims=True)
    want = (exp / total - (y[..., None] == np.arange(10))) / 6
    for fn in (softmax_delta, softmax_delta_numpy):
        got = exp.copy()
        fn(got, total, y, 6)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mode", ["none", "async"])
def test_fused_step_gives_the_bits_of_the_general_path(mode, monkeypatch):
    """The training step with the fused update equals the general numpy path bit for bit."""
    cfg = SimConfig(problem="digits-mlp", device="softbounds", tau=1.0, lr=0.2,
                    micro_batch_size=5, steps=12, log_every=6, seeds=2, mode=mode, stages=2)
    spec = NetworkSpec(layers=4, width=8)
    fused = train_network(cfg, spec=spec)
    monkeypatch.setattr(networks._FusedExpected, "of", classmethod(lambda cls, u, w: None))
    general = train_network(cfg, spec=spec)
    np.testing.assert_array_equal(fused.weights, general.weights)
    np.testing.assert_array_equal(fused.trace.loss, general.trace.loss)
    np.testing.assert_array_equal(fused.trace.w_min_visited, general.trace.w_min_visited)
    other = train_network(replace(cfg, lr=0.21), spec=spec)
    assert not np.array_equal(other.weights, general.weights)


@pytest.mark.parametrize("tau", [0.7, 1.0])
def test_fused_ratio_step_gives_the_bits_of_the_general_path(tau, monkeypatch):
    """G inside the fused pass (soft bounds) equals the numpy G then the fused step, and the
    general path, bit for bit over a whole run."""
    cfg = SimConfig(problem="digits-mlp", device="softbounds", tau=tau, lr=0.3,
                    micro_batch_size=4, steps=15, log_every=5, seeds=3)
    spec = NetworkSpec(layers=4, width=8)
    ratio = train_network(cfg, spec=spec)
    of = networks._FusedExpected.of
    monkeypatch.setattr(networks._FusedExpected, "of",
                        classmethod(lambda cls, u, w: of(u, w)._replace(ratio=None)))
    numpy_g = train_network(cfg, spec=spec)
    monkeypatch.setattr(networks._FusedExpected, "of", classmethod(lambda cls, u, w: None))
    general = train_network(cfg, spec=spec)
    for run in (numpy_g, general):
        np.testing.assert_array_equal(ratio.weights, run.weights)
        np.testing.assert_array_equal(ratio.trace.loss, run.trace.loss)
        np.testing.assert_array_equal(ratio.trace.w_max_visited, run.trace.w_max_visited)


@pytest.mark.parametrize("mode", ["none", "async"])
def test_fused_stochastic_step_gives_the_bits_of_the_general_path(mode, monkeypatch):
    """The batch-mean stochastic pulse step through ``simulate.device.pulses.stochastic_write`` (one
    call for the whole ensemble) equals the general path (``gw *= -lr``, the updater member
    block by member block) bit for bit over a whole run; it is used for this configuration."""
    cfg = SimConfig(problem="digits-mlp", device="softbounds", tau=0.7, lr=0.3,
                    micro_batch_size=4, steps=15, log_every=5, seeds=3, mode=mode, stages=2,
                    update="pulsed", pulse_type="stochastic")
    spec = NetworkSpec(layers=4, width=8)
    calls = []
    step = networks._FusedStochastic.step
    monkeypatch.setattr(networks._FusedStochastic, "step",
                        lambda self, *a: calls.append(1) or step(self, *a))
    fused = train_network(cfg, spec=spec)
    assert len(calls) == cfg.steps
    monkeypatch.setattr(networks._FusedStochastic, "of", classmethod(lambda cls, *a: None))
    general = train_network(cfg, spec=spec)
    np.testing.assert_array_equal(fused.weights, general.weights)
    np.testing.assert_array_equal(fused.trace.loss, general.trace.loss)
    np.testing.assert_array_equal(fused.trace.w_min_visited, general.trace.w_min_visited)
    np.testing.assert_array_equal(fused.trace.w_max_visited, general.trace.w_max_visited)
    other = train_network(replace(cfg, lr=0.31), spec=spec)
    assert not np.array_equal(other.weights, general.weights)
