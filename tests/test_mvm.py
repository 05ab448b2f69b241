"""Fidelity of the analog MVM (simulate.device.mvm) to aihwkit's IO rules, and its use by the
networks.

Expected values are computed by hand from aihwkit's rules (rpu_forward_backward_pass.cpp):
quantise ``rint(v / step) * step`` with ``step = res * 2 * bound``, clip after quantising, bound
management doubling the reduction while an output exceeds the bound.
"""

from __future__ import annotations

import numpy as np
import pytest

from simulate import NetworkSpec, SimConfig, train_network
from simulate.device import (
    IO_PRESETS,
    AnalogPass,
    IOParameters,
    analog_matmul,
    bits_to_res,
    io_preset,
    resolution_step,
)
from simulate.problems import Network
from simulate.rng import STREAMS, member_generators, member_sequence
from theory import ParameterError

#: every non-ideality off, but not ``is_perfect``: the managed path itself
ALL_OFF = IOParameters(inp_bound=0.0, inp_res=0.0, out_bound=0.0, out_res=0.0, out_noise=0.0,
                       noise_management="none", bound_management="none")


def rngs(n=1, seed=0):
    return [np.random.default_rng([seed, r]) for r in range(n)]


def one(x, w, io, direction="forward", seed=0):
    """analog_matmul of one member: x (n, n_in), w (n_in, n_out) -> (n, n_out)."""
    x, w = np.asarray(x, float), np.asarray(w, float)
    return analog_matmul(x[None], w[None], io, rngs(1, seed), direction=direction)[0]


def test_bits_to_res_and_steps_follow_aihwkit():
    assert bits_to_res(7) == 1 / 126 and bits_to_res(9) == 1 / 510
    assert IO_PRESETS["aihwkit"] == IOParameters()
    companion = io_preset("companion")
    assert companion == IOParameters()  # the table's numbers are aihwkit's defaults
    assert companion.inp_step == pytest.approx(1 / 63, rel=1e-15)
    assert companion.out_step == pytest.approx(24 / 510, rel=1e-15)
    assert resolution_step(126, 1.0) == resolution_step(1 / 126, 1.0)  # steps or resolution
    assert resolution_step(0.0, 1.0) == 0.0 and resolution_step(0.1, 0.0) == 0.0


def test_dac_levels_are_exact_and_127_for_seven_bits():
    io = IOParameters(out_noise=0.0, out_res=0.0, bound_management="none")
    step = io.inp_step
    # abs-max 1: 0.5 * 63 = 31.5 -> 32 (half to even), 0.2 * 63 = 12.6 -> 13, -0.01 * 63 -> -1
    y = one([[1.0, 0.5, 0.2, -0.01]], np.eye(4), io)
    np.testing.assert_array_equal(y[0], np.array([63, 32, 13, -1]) * step)
    # with abs-max 2 the same levels, scaled back by 2
    y = one([[2.0, 1.0, 0.4, -0.02]], np.eye(4), io)
    np.testing.assert_array_equal(y[0], 2 * (np.array([63, 32, 13, -1]) * step))
    grid = np.linspace(-1, 1, 5001)
    levels = one(np.stack([np.ones_like(grid), grid], axis=1), np.eye(2), io)[:, 1]
    assert np.unique(levels).size == 2**7 - 1


def test_dac_clips_without_noise_management():
    io = IOParameters(out_noise=0.0, out_res=0.0, noise_management="none",
                      bound_management="none")
    y = one([[2.0, -3.0, 0.5]], np.eye(3), io)
    np.testing.assert_array_equal(y[0], [63 * io.inp_step, -63 * io.inp_step,
                                         32 * io.inp_step])


def test_adc_levels_and_clip_are_exact():
    io = IOParameters(inp_res=0.0, out_noise=0.0, noise_management="none",
                      bound_management="none")
    step = io.out_step  # 24 / 510
    # outputs 1.0 -> rint(21.25) = 21 steps; 9.0 -> rint(191.25) = 191; 30 -> clipped to 12
    y = one([[1.0]], [[1.0, 9.0, 30.0, -30.0]], io)
    np.testing.assert_array_equal(y[0], [21 * step, 191 * step, 12.0, -12.0])


def test_output_noise_std():
    io = IOParameters(inp_res=0.0, out_res=0.0, bound_management="none")
    x = np.full((20000, 1), 0.5)
    y = one(x, [[1.0]], io)
    resid = y[:, 0] / 0.5 - 1.0  # abs-max 0.5: the noise is out_noise in the scaled units
    n = resid.size
    # std of a sample std of n Gaussians is sigma / sqrt(2 n): a z >= 4 margin
    assert abs(resid.std() - 0.06) < 4 * 0.06 / np.sqrt(2 * n)
    assert abs(resid.mean()) < 4 * 0.06 / np.sqrt(n)


def test_weight_noise_scales_with_the_input_norm():
    io = IOParameters(inp_res=0.0, out_res=0.0, out_noise=0.0, bound_management="none",
                      w_noise=0.1, w_noise_type="additive_constant")
    x = np.tile([1.0, 1.0, 1.0, 1.0], (20000, 1))  # scaled input norm 2
    y = one(x, np.zeros((4, 1)), io)[:, 0]
    assert abs(y.std() - 0.2) < 4 * 0.2 / np.sqrt(2 * y.size)


def test_noise_management_makes_the_product_scale_invariant():
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((50, 8)), 0.3 * rng.standard_normal((8, 5))
    io = IOParameters(out_noise=0.0, bound_management="none")
    # a power of two scales exactly: abs-max scaling gives the same levels, times 4
    np.testing.assert_array_equal(one(4 * x, w, io), 4 * one(x, w, io))
    plain = IOParameters(out_noise=0.0, bound_management="none", noise_management="none")
    assert not np.array_equal(one(4 * x, w, plain), 4 * one(x, w, plain))  # clipped at 1
    zero = one(np.zeros((2, 8)), w, IO_PRESETS["companion"])
    np.testing.assert_array_equal(zero, 0.0)  # abs-max 0: output 0 (aihwkit short cut)


def test_input_noise_is_added_after_the_dac_and_clip():
    io = IOParameters(inp_noise=0.1, out_res=0.0, out_noise=0.0, bound_management="none")
    x = np.tile([1.0, 0.5], (20000, 1))  # abs-max 1: levels 63/63 and 32/63, then the noise
    v = one(x, np.eye(2), io)
    resid = v - np.array([63, 32]) * io.inp_step
    assert np.all(np.abs(resid.mean(axis=0)) < 4 * 0.1 / np.sqrt(len(v)))
    assert np.all(np.abs(resid.std(axis=0) - 0.1) < 4 * 0.1 / np.sqrt(2 * len(v)))
    # a zero row is not cut short when there is input noise (aihwkit: forward only)
    assert np.all(one(np.zeros((50, 2)), np.eye(2), io) != 0.0)
    np.testing.assert_array_equal(one(np.zeros((50, 2)), np.eye(2), io, "backward"), 0.0)


def test_max_and_constant_noise_management():
    io = IOParameters(noise_management="max", out_noise=0.0, out_res=0.0,
                      bound_management="none")
    # max = 0.5: scaled [1, -2] is clipped to [1, -1], rescaled [0.5, -0.5]
    np.testing.assert_array_equal(one([[0.5, -1.0]], np.eye(2), io), [[0.5, -0.5]])
    np.testing.assert_array_equal(one([[-0.5, -1.0]], np.eye(2), io), [[0.0, 0.0]])  # max < 0
    const = IOParameters(noise_management="constant", nm_thres=2.0, out_noise=0.0, out_res=0.0,
                         bound_management="none", inp_res=0.0)
    np.testing.assert_array_equal(one([[1.0, -3.0]], np.eye(2), const), [[1.0, -2.0]])


def test_stochastic_rounding_is_unbiased():
    io = IOParameters(inp_sto_round=True, out_res=0.0, out_noise=0.0, bound_management="none")
    x = np.tile([1.0, 0.3], (20000, 1))  # 0.3 * 63 = 18.9: 19/63 w.p. 0.9, 18/63 w.p. 0.1
    v = one(x, np.eye(2), io)[:, 1]
    up = np.isclose(v, 19 * io.inp_step)
    assert np.all(up | np.isclose(v, 18 * io.inp_step))
    n, p = v.size, 0.9
    assert abs(up.mean() - p) < 4 * np.sqrt(p * (1 - p) / n)


def test_bound_management_halves_the_input_until_the_output_fits():
    io = IOParameters(inp_res=0.0, out_noise=0.0, noise_management="abs_max")
    step = io.out_step
    # 18 > 12 clips; with the input halved 9 fits: rint(9 / step) = 191 steps, times 2
    np.testing.assert_array_equal(one([[1.0]], [[18.0]], io), [[2 * 191 * step]])
    # the backward ignores bound management (aihwkit): clipped at 12
    np.testing.assert_array_equal(one([[1.0]], [[18.0]], io, "backward"), [[12.0]])
    off = IOParameters(inp_res=0.0, out_noise=0.0, bound_management="none")
    np.testing.assert_array_equal(one([[1.0]], [[18.0]], off), [[12.0]])
    # negative bound: tested by default, not with bm_test_negative_bound=False
    np.testing.assert_array_equal(one([[1.0]], [[-18.0]], io), [[-2 * 191 * step]])
    pos_only = IOParameters(inp_res=0.0, out_noise=0.0, bm_test_negative_bound=False)
    np.testing.assert_array_equal(one([[1.0]], [[-18.0]], pos_only), [[-12.0]])
    # the reduction stops past max_bm_factor: 2000 / 128 still clips, output 12 * 128
    capped = IOParameters(inp_res=0.0, out_noise=0.0, max_bm_factor=100)
    np.testing.assert_array_equal(one([[1.0]], [[2000.0]], capped), [[12.0 * 128]])
    # ... or past max_bm_res / inp_step = 0.25 * 63 = 15.75 with a 7-bit DAC: reduction 16
    dac = IOParameters(out_noise=0.0)
    np.testing.assert_array_equal(one([[1.0]], [[2000.0]], dac), [[12.0 * 16]])
    # only the clipped rows are recomputed
    y = one([[1.0], [0.1]], [[18.0]], io)
    np.testing.assert_array_equal(y[:, 0], [2 * 191 * step, 0.1 * np.rint(18 / step) * step])


def test_perfect_and_all_off_reproduce_the_exact_product_bit_for_bit():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((3, 7, 6)), rng.standard_normal((3, 6, 4))
    for io in (IO_PRESETS["perfect"], ALL_OFF):
        np.testing.assert_array_equal(analog_matmul(x, w, io, rngs(3)), x @ w)
        np.testing.assert_array_equal(analog_matmul(x[0], w, io, rngs(3)), x[0] @ w)


def test_all_off_network_gradient_equals_the_exact_one_bit_for_bit():
    net = Network.build("digits-mlp", NetworkSpec(layers=4, width=8), 2, 64, 10)
    w, c = net.init(rngs(2), -0.5, 0.5)
    c += 0.01
    data = np.random.default_rng(2)
    x, y = data.standard_normal((5, 64)), data.integers(0, 10, 5)
    views = net.views(w, c)
    out = []
    for mvm in (None, AnalogPass(ALL_OFF, tuple(rngs(2)), "forward")):
        gw, gc = np.empty_like(w), np.empty_like(c)
        back = None if mvm is None else AnalogPass(ALL_OFF, tuple(rngs(2)), "backward")
        loss = net.gradient(x, y, views, [v.weights for v in views], net.views(gw, gc),
                            forward_mvm=mvm, backward_mvm=back)
        out.append((loss, gw, gc))
    for a, b in zip(*out, strict=True):
        np.testing.assert_array_equal(a, b)


def small(**kw):
    base = dict(problem="digits-mlp", steps=30, micro_batch_size=4, log_every=10, lr=0.1,
                forward_io="companion", backward_io="companion")
    return SimConfig(**{**base, **kw})


def test_member_alone_equals_member_in_ensemble_with_bound_management():
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((3, 40, 6)), 4 * rng.standard_normal((3, 6, 5))
    w[1] *= 0.1  # member 1 never clips, the others recompute different rows
    io = IO_PRESETS["companion"]
    together = analog_matmul(x, w, io, rngs(3))
    for r in range(3):
        alone = analog_matmul(x[r:r + 1], w[r:r + 1], io, [np.random.default_rng([0, r])])
        np.testing.assert_array_equal(together[r], alone[0])
    scaled = x / np.abs(x).max(axis=-1, keepdims=True)  # abs-max: the array sees x / alpha
    clipped = np.abs(scaled @ w).max(axis=-1) > 12  # rows that hit the ADC bound at first
    assert clipped[0].any() and clipped[2].any() and not clipped[1].any()


def test_member_alone_equals_member_in_ensemble_with_io_noise():
    spec = NetworkSpec(layers=4, width=16, grad_norm=False)
    for mode in ("sync", "async"):
        config = small(seeds=3, mode=mode, stages=2, micro_batches=2 if mode == "sync" else 1)
        together = train_network(config, spec=spec)
        alone = train_network(config, spec=spec, members=[2])
        np.testing.assert_array_equal(together.weights[2], alone.weights[0])
        np.testing.assert_array_equal(together.trace.loss[2], alone.trace.loss[0])


def test_io_changes_the_run_and_perfect_is_the_default():
    spec = NetworkSpec(layers=3, width=8, grad_norm=False)
    base = train_network(small(forward_io="perfect", backward_io="perfect"), spec=spec)
    default = train_network(SimConfig(problem="digits-mlp", steps=30, micro_batch_size=4,
                                      log_every=10, lr=0.1), spec=spec)
    np.testing.assert_array_equal(base.weights, default.weights)
    noisy = train_network(small(), spec=spec)
    assert not np.array_equal(noisy.weights, base.weights)
    assert noisy.trace.config["forward_io"] == "companion"
    only_back = train_network(small(forward_io="perfect"), spec=spec)
    assert not np.array_equal(only_back.weights, base.weights)


def test_sync_bits_do_not_depend_on_the_stage_count():
    # the IO draws follow the layers, whatever the cut into stages: sync runs agree bit for bit
    spec = NetworkSpec(layers=4, width=8, grad_norm=False)
    runs = [train_network(small(mode="sync", stages=m, micro_batches=2), spec=spec).weights
            for m in (1, 2, 4)]
    for other in runs[1:]:
        np.testing.assert_array_equal(runs[0], other)


def test_new_stream_leaves_the_old_ones_unchanged():
    assert STREAMS[:3] == ("noise", "device", "data") and STREAMS[-1] == "io"
    gens = member_generators(5, [0, 3])
    for r, member in enumerate((0, 3)):
        old = member_sequence(5, member).spawn(3)
        for i, name in enumerate(STREAMS[:3]):
            assert gens[name][r].random() == np.random.default_rng(old[i]).random()


@pytest.mark.parametrize("kw, start", [
    (dict(problem="quadratic", forward_io="companion"),
     "forward_io='companion' applies to the network problems only, not problem='quadratic'"),
    (dict(problem="least-squares", backward_io="aihwkit"),
     "backward_io='aihwkit' applies to the network problems only"),
    (dict(problem="digits-mlp", algorithm="digital", forward_io="companion"),
     "forward_io='companion' applies to algorithm='analog' only"),
    (dict(problem="digits-mlp", forward_io="ideal"), "forward_io='ideal' is unknown"),
])
def test_config_refuses_io_where_it_does_not_apply(kw, start):
    with pytest.raises(ParameterError) as err:
        SimConfig(**kw)
    assert str(err.value).startswith(start)


def test_parameters_are_checked():
    with pytest.raises(ParameterError, match="^inp_bound=2 must be 1"):
        IOParameters(inp_bound=2.0)
    with pytest.raises(ParameterError, match="^noise_management='avg' is unknown"):
        IOParameters(noise_management="avg")
    with pytest.raises(ParameterError, match="^out_noise="):
        IOParameters(out_noise=-1.0)
    IOParameters(inp_bound=2.0, noise_management="none")  # allowed without noise management


def test_the_halved_abs_max_input_is_a_half_dac_step_rounded_to_even():
    """With bound management, a row's abs-max input (scaled to 1) is 0.5 in the second pass:
    31.5 DAC steps, written as 32/63 (round half to even in exact arithmetic; aihwkit's float32
    step 0.015873017 gives 31.499998 -> 31/63, docs/device-model.md)."""
    io = IOParameters(out_noise=0.0)
    step = io.out_step
    y = one([[1.0]], [[18.0]], io)  # 18 > 12 clips; halved: (32/63) * 18 = 9.14 fits
    np.testing.assert_array_equal(y, [[2 * np.rint(32 / 63 * 18 / step) * step]])
    assert y[0, 0] != 2 * np.rint(31 / 63 * 18 / step) * step
