"""The compiled product of the oracle problems has einsum's bits; the loss computed with the
gradient has the bits of the loss computed alone."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulate.problems.oracle import LeastSquares, Quadratic
from simulate.problems.oracle_kernels import matvec, matvec_numpy


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 64), n=st.integers(1, 300), m=st.integers(1, 300),
       dtype=st.sampled_from(["float64", "float32"]), lead=st.sampled_from([(), (2,), (3, 2)]),
       seed=st.integers(0, 2**32 - 1))
def test_matvec_has_einsums_bits(rows, n, m, dtype, lead, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((*lead, rows, n)).astype(dtype)
    a = rng.standard_normal((n, m)).astype(dtype)
    got, want = matvec(x, a), matvec_numpy(x, a)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)


@pytest.mark.parametrize("layout", ["transposed", "strided x", "fortran x", "mixed dtypes",
                                    "vector"])
def test_matvec_layouts_have_einsums_bits(layout):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((40, 40))
    x = rng.standard_normal((48, 40))
    if layout == "transposed":
        a = rng.standard_normal((60, 40)).T  # einsum's own order (the kernel steps aside)
    elif layout == "strided x":
        x = rng.standard_normal((48, 80))[:, ::2]
    elif layout == "fortran x":
        x = np.asfortranarray(x)
    elif layout == "mixed dtypes":
        x = x.astype(np.float32)
    else:
        x = x[0]
    assert np.array_equal(matvec(x, a), matvec_numpy(x, a))


def test_matvec_rows_do_not_depend_on_the_others():
    rng = np.random.default_rng(4)
    x, a = rng.standard_normal((48, 64)), rng.standard_normal((64, 64))
    whole = matvec(x, a)
    assert all(np.array_equal(whole[r], matvec(x[r:r + 1], a)[0]) for r in range(48))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind", ["quadratic", "least-squares"])
def test_grad_and_loss_have_the_bits_of_each(kind, dtype):
    rng = np.random.default_rng(5)
    problem = (Quadratic.random(24, 3, rng, sigma2=1.0) if kind == "quadratic"
               else LeastSquares.random(2, rng, sigma2=1.0)).in_dtype(dtype)
    w = rng.standard_normal((7, problem.dim)).astype(dtype)
    g, loss = problem.grad_and_loss(w)
    assert np.array_equal(g, problem.grad(w)) and np.array_equal(loss, problem.loss(w))
    assert g.dtype == problem.grad(w).dtype
