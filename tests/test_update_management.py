"""aihwkit's update management and BL management of the pulse trains (issue 13, item 1).

The expected values are worked by hand from aihwkit's formulas (IBM/aihwkit
``src/rpucuda/rpu_pulsed_meta_parameter.cpp``, ``calculateBlAB`` and
``performUpdateManagement``), with numbers exact in binary (lr = 0.5, dw_min = 0.25) so that
``k = lr x_max d_max / dw_min`` and ``ceil(k)`` carry no rounding.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from simulate import SimConfig, pulsed_update
from simulate.device import TrainScales, coincidence_counts, pulse_counts, train_scale, train_scales
from theory import ParameterError, make_device

LR, DW = 0.5, 0.25


def _close(got: TrainScales, bl: int, a: float, b: float) -> None:
    assert got.bl == bl
    assert got.a == pytest.approx(a, rel=1e-15) and got.b == pytest.approx(b, rel=1e-15)


@pytest.mark.parametrize("kwargs, want", [
    # calculateBlAB, fixed_BL: BL = 31, A = B = sqrt(lr / (dw_min BL)) = sqrt(2/31)
    ({}, (31, np.sqrt(2 / 31), np.sqrt(2 / 31))),
    # not fixed_BL and dw_min * desired_BL = 7.75 >= lr: the same
    ({"fixed_bl": False}, (31, np.sqrt(2 / 31), np.sqrt(2 / 31))),
    # BL management: k = 0.5 * 3 * 1.5 / 0.25 = 9 -> BL = 9, A = B = sqrt(0.5 / 2.25) = sqrt(2/9)
    ({"bl_management": True}, (9, np.sqrt(2 / 9), np.sqrt(2 / 9))),
    # + update management: A *= sqrt(x/d) = sqrt(2) -> 2/3, B *= sqrt(d/x) -> 1/3
    ({"bl_management": True, "update_management": True}, (9, 2 / 3, 1 / 3)),
    # update management alone: BL = 31, A = sqrt(2/31) sqrt(2), B = sqrt(2/31) / sqrt(2)
    ({"update_management": True}, (31, 2 / np.sqrt(31), 1 / np.sqrt(31))),
    # um_grad_scale 0.5: d_v = 0.75, k = 4.5 -> BL = 5, A = sqrt(0.4) * 2, B = sqrt(0.4) / 2
    ({"bl_management": True, "update_management": True, "um_grad_scale": 0.5},
     (5, 2 * np.sqrt(0.4), 0.5 * np.sqrt(0.4))),
])
def test_train_scales_are_aihwkits(kwargs, want):
    _close(train_scales(LR, DW, 31, 3.0, 1.5, **kwargs), *want)


def test_update_management_beyond_the_bit_length_clips_d_not_x():
    """x_max = 3, d_max = 15: k = 90 > 31, so d_v = 15 * 31/90 = 31/6 and
    A = sqrt(2/31) sqrt(3 / (31/6)) = 6/31, B = sqrt(2/31) sqrt((31/6) / 3) = 1/3:
    p_x(x_max) = 1 exactly (x never clipped), p_d(d_max) = 90/31 (clipped at 1)."""
    for bl_management in (False, True):  # BL management: min(ceil(90), 31) = 31, the same
        got = train_scales(LR, DW, 31, 3.0, 15.0, update_management=True,
                           bl_management=bl_management)
        _close(got, 31, 6 / 31, 1 / 3)
        assert got.b * 3.0 == pytest.approx(1.0, rel=1e-15)


def test_train_scales_edge_cases():
    # not fixed_BL and dw_min * desired_BL = 0.031 < lr = 0.1: A = B = 1, BL = ceil(lr / dw_min)
    _close(train_scales(0.1, 0.001, 31, fixed_bl=False), 100, 1.0, 1.0)
    assert train_scales(0.0, DW, 31) == TrainScales(0, 0.0, 0.0)
    assert train_scales(LR, DW, 31, 0.0, 1.5, update_management=True) == TrainScales(0, 1.0, 1.0)
    # management off is today's train_scale, to the bit
    got = train_scales(0.01, 0.001, 31)
    assert got.a == got.b == train_scale(0.01, 0.001, 31) and got.bl == 31
    with pytest.raises(ParameterError, match="need x_abs_max"):
        train_scales(LR, DW, 31, update_management=True)
    with pytest.raises(ParameterError, match=r"^lr=-1"):
        train_scales(-1.0, DW, 31)


def test_managed_coincidences_fire_the_managed_trains():
    """UM + BLM, x = (3, 1.5), d = (1.5, -0.75): BL = 9, p_x = (1, 1/2), p_d = (1, 1/2), so
    device (0, 0) fires all 9 bits every time and the others Binomial(9, 1/2) or (9, 1/4)."""
    rng = np.random.default_rng(3)
    counts = np.stack([coincidence_counts([3.0, 1.5], [1.5, -0.75], LR, DW, 31, rng,
                                          update_management=True, bl_management=True)
                       for _ in range(4000)])
    assert np.all(counts[:, 0, 0] == 9) and counts.max() == 9
    for (i, j), p in {(0, 1): 0.5, (1, 0): 0.5, (1, 1): 0.25}.items():
        mean, var = 9 * p, 9 * p * (1 - p)
        assert abs(counts[:, i, j].mean() - mean) <= 4 * np.sqrt(var / 4000)
    # without management: BL = 31, p = sqrt(2/31) |v|: device (0, 0) expects k = 9 pulses too
    plain = np.stack([coincidence_counts([3.0], [1.5], LR, DW, 31, rng)[0, 0]
                      for _ in range(4000)])
    p = (np.sqrt(2 / 31) * 3.0) * (np.sqrt(2 / 31) * 1.5)
    assert abs(plain.mean() - 9.0) <= 4 * np.sqrt(31 * p * (1 - p) / 4000)
    assert plain.std() > 1.0  # ... with Binomial(31, 9/31) noise, where UM + BLM has none


def test_managed_mean_count():
    """MeanCount with UM + BLM: c_x = rint(9 (1, 1/2)) = (9, 4), c_d = rint(9) = 9,
    n = rint(c_d c_x / 9) = (9, 4)."""
    got = coincidence_counts([3.0, 1.5], [1.5], LR, DW, 31, np.random.default_rng(0),
                             "mean-count", update_management=True, bl_management=True)
    assert np.array_equal(got, [[9, 4]])


def test_zero_input_fires_nothing_under_management():
    got = coincidence_counts([0.0, 0.0], [1.0, 2.0], LR, DW, 31, np.random.default_rng(0),
                             update_management=True)
    assert got.shape == (2, 2) and not got.any()


def test_bl_management_on_the_dw_only_path_is_per_tile():
    """x = |dW| / dw_min with maxima 4.2 and 30.5: BL = 5 and 31 per member; counts never
    exceed them, and the mean count is still x (p = x / BL)."""
    x = np.stack([np.full(20000, 4.2), np.full(20000, 30.5)])
    x[0, 0] = 4.2
    rngs = [np.random.default_rng(s) for s in (1, 2)]
    counts = pulse_counts(x, rngs, "stochastic", 31, bl_management=True)
    assert counts[0].max() <= 5 and counts[1].max() <= 31
    for r, bl in ((0, 5), (1, 31)):
        p = x[r, 0] / bl
        assert abs(counts[r].mean() - x[r, 0]) <= 4 * np.sqrt(bl * p * (1 - p) / 20000)
    mean = pulse_counts(np.array([[0.4, 2.6], [0.0, 0.0]]), rngs, "mean-count", 31,
                        bl_management=True)
    assert np.array_equal(mean, [[0, 3], [0, 0]])
    # a member of the ensemble gets the same bits alone
    alone = pulse_counts(x[1:], [np.random.default_rng(2)], "stochastic", 31,
                         bl_management=True)
    assert np.array_equal(alone[0], pulse_counts(
        x, [np.random.default_rng(1), np.random.default_rng(2)], "stochastic", 31,
        bl_management=True)[1])


def test_bl_management_through_pulsed_update():
    device = make_device("constant-step", w_min=-1.0, w_max=1.0, dw_min=1e-3)
    dw = np.full(5000, 2.5e-3)  # x = 2.5 pulses: BL = 3
    w = pulsed_update(np.zeros(5000), dw, device, np.random.default_rng(0),
                      pulse_type="stochastic", bl_management=True)
    assert w.max() <= 3e-3 + 1e-15 and abs(w.mean() - 2.5e-3) < 4 * 1e-3 * np.sqrt(
        3 * (2.5 / 3) * (0.5 / 3) / 5000)


def test_management_flags_are_config_fields_recorded_in_traces():
    from simulate import train_network
    base = SimConfig(problem="digits-mlp", update="pulsed", pulse_type="stochastic", steps=4,
                     lr=0.1, micro_batch_size=1, log_every=2)
    assert not base.update_management and not base.bl_management
    off = train_network(base, 0)
    on = train_network(replace(base, update_management=True, bl_management=True), 0)
    assert on.trace.config["update_management"] and on.trace.config["bl_management"]
    assert not np.array_equal(off.weights, on.weights)
    with pytest.raises(ParameterError, match=r"^bl_management='yes' must be true or false"):
        SimConfig(bl_management="yes")
