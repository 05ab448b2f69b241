"""The networks' float64 tanh (simulate.problems.activation): the kernel has its numpy reference's
bits, and the formula is a tanh: within 2 ulps of the true value, odd, bounded, non-decreasing."""

from __future__ import annotations

import mpmath
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from simulate.problems.activation import tanh_inplace, tanh_numpy

SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1e-310, 1e-160, 1e300,
                    -1e300, 0.625, np.nextafter(0.625, 1.0), np.nextafter(0.625, 0.0), 20.0,
                    np.nextafter(20.0, 0.0), np.nextafter(20.0, 30.0), 19.06, 1.0, -3.5])


def _bits(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).view(np.int64)


def _ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    return np.abs(got - exact) / np.spacing(np.abs(exact))


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(max_dims=3, max_side=9),
                  elements=st.floats(allow_nan=True, allow_infinity=True, width=64)))
def test_the_kernel_has_the_bits_of_its_numpy_reference(x):
    out = tanh_inplace(x.copy())
    assert np.array_equal(_bits(out), _bits(tanh_numpy(x)))


def test_the_bits_at_special_values_on_grids_and_in_any_layout():
    for x in (SPECIAL, np.linspace(-25.0, 25.0, 200_001),
              np.random.default_rng(0).standard_normal((64, 33)) * 4):
        assert np.array_equal(_bits(tanh_inplace(x.copy())), _bits(tanh_numpy(x)))
    x = np.random.default_rng(1).standard_normal((33, 64))
    strided, fortran = x.copy()[:, ::2], np.asfortranarray(x)
    want = tanh_numpy(x)
    assert np.array_equal(tanh_inplace(strided), want[:, ::2])  # in place, through a copy
    assert np.array_equal(tanh_inplace(fortran), want) and fortran.flags.f_contiguous


def test_special_values():
    out = tanh_inplace(SPECIAL.copy())
    assert out[0] == 0.0 and not np.signbit(out[0]) and out[1] == 0.0 and np.signbit(out[1])
    assert (out[2], out[3]) == (1.0, -1.0) and np.isnan(out[4])
    tiny = SPECIAL[5:9]
    assert np.array_equal(out[5:9], tiny)  # tanh x = x to the last bit below 1e-8
    assert (out[9], out[10]) == (1.0, -1.0)
    assert tanh_inplace(np.array([20.0]))[0] == 1.0 == np.tanh(20.0)


def test_within_two_ulps_of_the_true_tanh():
    """Against mpmath at 120 bits: random points, both sides of the branch at 0.625, near 0 and
    near where tanh rounds to 1."""
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.uniform(-8.0, 8.0, 1500), rng.uniform(0.6, 0.65, 300),
                        np.geomspace(1e-9, 1e-1, 200), rng.uniform(17.0, 20.0, 100)])
    with mpmath.workprec(120):
        exact = np.array([float(mpmath.tanh(mpmath.mpf(float(v)))) for v in x])
    got = tanh_inplace(x.copy())
    assert _ulps(got, exact).max() <= 2.0


def test_odd_bounded_and_non_decreasing():
    x = np.linspace(0.0, 25.0, 1_000_001)
    up = tanh_inplace(x.copy())
    assert np.array_equal(tanh_inplace(-x), -up)
    assert np.all(np.diff(up) >= 0.0) and up.max() == 1.0 and up.min() == 0.0
    assert _ulps(up[1:], np.tanh(x[1:])).max() <= 3.0  # libm's is within 1 ulp itself


def test_float32_is_numpys_tanh():
    x = np.random.default_rng(3).standard_normal(100).astype(np.float32)
    assert np.array_equal(tanh_inplace(x.copy()), np.tanh(x))


def test_the_network_forward_uses_it():
    from simulate.problems.network import Network, NetworkSpec

    net = Network.build("digits-mlp", NetworkSpec(layers=3, width=8), 1, 64, 10)
    w, c = net.init([np.random.default_rng(4)], -1.0, 1.0)
    params = net.views(w, c)[0]
    x = np.random.default_rng(5).standard_normal((1, 6, 64))
    _, saved = net.forward_stage(0, params, x)
    z = x @ params.weights[0] + params.biases[0]
    assert np.array_equal(saved[0][1], tanh_numpy(z))
