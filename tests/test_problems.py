"""Oracle problems: exact constants (L, Delta, f*), gradients, noise variance, stage blocks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simulate.problems import LeastSquares, Quadratic, stage_blocks
from theory import ParameterError

Z = 4.0


def _quadratic(dim=12, stages=3, seed=0, **kw):
    return Quadratic.random(dim, stages, np.random.default_rng(seed), **kw)


def _finite_difference(f, x, h=1e-6):
    eye = np.eye(len(x))
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in eye])


@given(dim=st.integers(1, 30), seed=st.integers(0, 2**32 - 1),
       L=st.floats(0.1, 100.0), ratio=st.floats(1e-3, 1.0))
def test_quadratic_constants_exact(dim, seed, L, ratio):
    q = _quadratic(dim, 1, seed, L=L, mu=ratio * L)
    eig = np.linalg.eigvalsh(q.A)
    assert eig[-1] == pytest.approx(L, rel=1e-10)
    assert eig[0] >= ratio * L * (1 - 1e-10)
    e = q.w0 - q.w_star
    assert q.Delta == pytest.approx(0.5 * e @ q.A @ e, rel=1e-12)
    assert q.loss(q.w_star) == 0.0 and q.f_star == 0.0


def test_quadratic_gradient_matches_finite_differences():
    q = _quadratic()
    x = np.random.default_rng(5).uniform(-0.5, 0.5, q.dim)
    np.testing.assert_allclose(q.grad(x), _finite_difference(q.loss, x), rtol=1e-6, atol=1e-9)


def test_least_squares_constants_exact():
    p = LeastSquares.random(4, np.random.default_rng(2), label_noise=0.1)
    assert (p.rows, p.dim) == (100, 40)
    assert p.L == pytest.approx(np.linalg.eigvalsh(p.A.T @ p.A)[-1] / 100, rel=1e-12)
    np.testing.assert_allclose(p.grad(p.x_lstsq), 0, atol=1e-12)
    assert p.f_star > 0 and p.Delta == pytest.approx(p.loss(p.w0) - p.f_star, rel=1e-12)
    x = np.random.default_rng(6).uniform(-0.5, 0.5, p.dim)
    np.testing.assert_allclose(p.grad(x), _finite_difference(p.loss, x), rtol=1e-6, atol=1e-9)
    # the Hessian A^T A / rows has top eigenvalue L: the gradient is exactly L-Lipschitz
    v = np.linalg.eigh(p.A.T @ p.A)[1][:, -1]
    assert np.linalg.norm(p.grad(x + v) - p.grad(x)) == pytest.approx(p.L, rel=1e-10)


def test_noiseless_least_squares_has_zero_minimum():
    p = LeastSquares.random(1, np.random.default_rng(3))
    assert p.f_star < 1e-25 and p.Delta == pytest.approx(p.loss(p.w0), rel=1e-12)


@pytest.mark.parametrize("problem", [_quadratic(dim=16, sigma2=2.0),
                                     LeastSquares.random(2, np.random.default_rng(1), sigma2=0.5)])
@pytest.mark.parametrize("n", [1, 8])
def test_noise_variance_is_sigma2_over_n(problem, n):
    """Monte Carlo: E||g - grad f||^2 = sigma2/n and E[g] = grad f, with z = 4 margins."""
    draws = 40_000
    w = np.tile(np.linspace(-0.2, 0.2, problem.dim), (draws, 1))
    noise = problem.noisy_grad(w, n, np.random.default_rng(11)) - problem.grad(w)
    sq = np.sum(noise**2, axis=1)
    assert abs(sq.mean() - problem.sigma2 / n) <= Z * sq.std(ddof=1) / np.sqrt(draws)
    se = noise.std(axis=0, ddof=1) / np.sqrt(draws)
    assert np.all(np.abs(noise.mean(axis=0)) <= (Z + 0.5) * se)


def test_batched_rows_equal_single_rows_bitwise():
    """Loss and gradient of an ensemble row do not depend on the other rows (einsum, not BLAS)."""
    for p in (_quadratic(dim=40), LeastSquares.random(2, np.random.default_rng(0))):
        w = np.random.default_rng(9).uniform(-0.3, 0.3, (7, p.dim))
        g, f = p.grad(w), p.loss(w)
        for r in range(7):
            assert np.array_equal(g[r], p.grad(w[r:r + 1])[0])
            assert f[r] == p.loss(w[r:r + 1])[0]


@given(dim=st.integers(1, 200), data=st.data())
def test_stage_blocks_partition(dim, data):
    stages = data.draw(st.integers(1, dim))
    blocks = stage_blocks(dim, stages)
    assert len(blocks) == stages and blocks[0].start == 0 and blocks[-1].stop == dim
    sizes = [b.stop - b.start for b in blocks]
    assert all(a.stop == b.start for a, b in zip(blocks[:-1], blocks[1:], strict=True))
    assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1


def test_bad_inputs():
    with pytest.raises(ParameterError, match="stages"):
        stage_blocks(4, 5)
    with pytest.raises(ParameterError, match="mu"):
        _quadratic(L=1.0, mu=2.0)
    q = _quadratic(dim=3, stages=1)
    with pytest.raises(ParameterError, match="lambda_max"):
        Quadratic(stages=1, sigma2=1.0, w0=q.w0, A=q.A, w_star=q.w_star, L=2.0)
    with pytest.raises(ParameterError, match="symmetric"):
        Quadratic(stages=1, sigma2=1.0, w0=q.w0, A=q.A + np.triu(q.A, 1), w_star=q.w_star)
    with pytest.raises(ParameterError, match="w0"):
        Quadratic(stages=1, sigma2=1.0, w0=np.zeros(2), A=q.A, w_star=q.w_star, L=q.L)
    with pytest.raises(ParameterError, match="sigma2"):
        _quadratic(sigma2=-1.0)
    with pytest.raises(ParameterError, match="stages"):
        LeastSquares.random(41, np.random.default_rng(0))


@pytest.mark.parametrize("scale", [-0.1, float("nan")])
def test_scale_of_the_planted_solution_is_validated(scale):
    with pytest.raises(ParameterError, match="x_star_scale"):
        LeastSquares.random(1, np.random.default_rng(0), x_star_scale=scale)
    with pytest.raises(ParameterError, match="w_star_scale"):
        Quadratic.random(4, 1, np.random.default_rng(0), w_star_scale=scale)
