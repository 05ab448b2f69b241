r"""Oracle problems: every constant of the theory (L, Delta, sigma2) known exactly.

Both problems act on weight arrays of shape ``(..., dim)`` (leading axes: the ensemble), split the
weight vector into ``M`` contiguous stage blocks, and return exact full-objective gradients. The
stochastic oracle adds Gaussian noise scaled so that its squared norm has mean exactly
``sigma2 / n`` for a batch of ``n`` samples (assumption A2 with equality):

.. math::

    g = \nabla f(\hat W) + \sqrt{\frac{\sigma^2}{n\, d}}\, \xi, \qquad \xi \sim N(0, I_d),
    \qquad E\|g - \nabla f(\hat W)\|^2 = \frac{\sigma^2}{n}.

Averaging ``B`` independent micro-batch gradients of ``b`` samples gives noise of exactly this law
with ``n = B b``, so one draw with ``n = B b`` is the mini-batch mean in distribution.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from theory.errors import ParameterError, check_range

from .oracle_kernels import matvec
from .sizes import LEAST_SQUARES_DIM

__all__ = [
    "LeastSquares",
    "OracleProblem",
    "Quadratic",
    "row_dot",
    "stage_blocks",
    "sum_in_order",
]


#: einsum reduces a row longer than its buffer (8192 elements) in buffer-sized pieces whose grouping
#: depends on the leading axes; such rows are reduced one at a time (see :func:`row_dot`)
_EINSUM_BUFFER = 8192


def _matvec(x: np.ndarray, a: np.ndarray) -> np.ndarray:
    """``x @ a`` over the last axis of ``x``, summed in an order independent of the leading axes.

    BLAS picks different kernels (and summation orders) for different numbers of rows, so an
    ensemble member would not reproduce the bits of the same run alone; ``einsum`` without
    ``optimize`` sums each output element the same way whatever the leading shape, and the
    compiled :func:`simulate.problems.oracle_kernels.matvec` does it with einsum's bits, faster.
    """
    return matvec(x, a)


def sum_in_order(total: np.ndarray, parts: np.ndarray) -> np.ndarray:
    """``total + parts[0] + parts[1] + ...`` added one part at a time, in order (the bits of a
    loop of ``total = total + part``), in one call: the last row of ``cumsum`` over ``total``
    stacked on ``parts`` (``cumsum`` adds along an axis sequentially)."""
    return np.cumsum(np.concatenate([np.asarray(total)[None], parts]), axis=0)[-1]


def row_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    r"""``sum_i a[..., i] * b[..., i]`` for every leading index, each row's bits those of the row
    reduced alone.

    ``einsum`` sums a reduction of at most 8192 elements the same way whatever the leading shape,
    but a longer one in buffer-sized pieces grouped differently for one row than for several
    (measured: relative differences of 1e-15 from 8193 elements on). Rows longer than that are
    therefore reduced one at a time, each as a ``(1, n)`` array: exactly the call of a one-member
    run, so an ensemble member keeps the bits of the same member run alone.
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.shape[-1] <= _EINSUM_BUFFER:  # the common case, without the shapes' broadcast
        return np.einsum("...i,...i->...", a, b)
    lead = np.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    if math.prod(lead) <= 1:
        return np.einsum("...i,...i->...", a, b)
    a, b = np.broadcast_to(a, lead + a.shape[-1:]), np.broadcast_to(b, lead + b.shape[-1:])
    out = np.empty(lead, dtype=np.result_type(a, b))
    for index in np.ndindex(*lead):
        out[index] = np.einsum("...i,...i->...", a[index][None], b[index][None])[0]
    return out


def stage_blocks(dim: int, stages: int) -> tuple[slice, ...]:
    """Split ``dim`` weights into ``stages`` contiguous blocks (sizes differ by at most one).

    Stage 1 (the input stage) owns the first block.
    """
    check_range("stages", stages, 1, dim, integer=True)
    edges = np.linspace(0, dim, stages + 1).round().astype(int)
    return tuple(slice(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:], strict=True))


@dataclass(frozen=True, eq=False)
class OracleProblem:
    """Common part of the oracle problems: stage blocks, initial point and the noise model.

    Subclasses define ``dim``, :meth:`loss`, :meth:`grad`, ``L`` and ``f_star``.
    """

    stages: int
    sigma2: float
    w0: np.ndarray

    def __post_init__(self):
        check_range("sigma2", self.sigma2, 0, None)
        if np.shape(self.w0) != (self.dim,):
            raise ParameterError(f"w0 has shape {np.shape(self.w0)}; valid shape ({self.dim},)")
        check_range("stages", self.stages, 1, self.dim, integer=True)

    @property
    def dim(self) -> int:  # pragma: no cover - overridden
        raise NotImplementedError

    def grad_and_loss(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`grad` and :meth:`loss` at ``w`` together, each with its own bits (a subclass
        shares the product they both compute)."""
        return self.grad(w), self.loss(w)

    @cached_property
    def blocks(self) -> tuple[slice, ...]:
        """The ``M`` stage blocks of the weight vector (see :func:`stage_blocks`)."""
        return stage_blocks(self.dim, self.stages)

    @cached_property
    def Delta(self) -> float:  # noqa: N802 - the theory's symbol
        r""":math:`\Delta = f(W_0) - f^*` (exact)."""
        return float(self.loss(self.w0) - self.f_star)

    #: the names of the problem's arrays (cast by :meth:`in_dtype`)
    _ARRAYS = ("w0",)

    @property
    def dtype(self) -> np.dtype:
        """The floating-point type of the problem's arrays and arithmetic (that of ``w0``)."""
        return np.asarray(self.w0).dtype

    def in_dtype(self, dtype) -> OracleProblem:
        r"""The same problem with its arrays (``w0``, ``A``, ...) rounded to ``dtype``, so that its
        :meth:`loss`, :meth:`grad` and :meth:`noise` compute in ``dtype``; ``self`` if it is
        already in ``dtype``.

        The exact constants (``L``, ``Delta``, ``f_star``, the least-squares minimiser) are those
        of ``self``, computed before the cast (in float64 for a problem of :func:`make_problem`),
        not those of the rounded arrays.
        """
        dtype = np.dtype(dtype)
        if dtype == self.dtype:
            return self
        for name in ("L", "Delta", "f_star", *self._CONSTANTS):
            getattr(self, name)  # cached before the copy (the copy keeps them)
        cast = copy.copy(self)
        for name in self._ARRAYS:
            object.__setattr__(cast, name, np.asarray(getattr(self, name)).astype(dtype))
        return cast

    #: cached constants computed from the float64 arrays before a cast (:meth:`in_dtype`)
    _CONSTANTS = ()

    def noise_scale(self, n: int) -> np.floating:
        r"""The scale :math:`\sqrt{\sigma^2 / (n d)}` of the noise of a batch of ``n``
        (:meth:`noise`; a run computes it once, not per update), in the problem's dtype."""
        check_range("n", n, 1, None, integer=True)
        return self.dtype.type(np.sqrt(self.sigma2 / (n * self.dim)))

    def noise(self, xi: np.ndarray, n: int) -> np.ndarray:
        r"""Scale standard normals ``xi`` (shape ``(..., dim)``) to the noise of a batch of ``n``.

        .. math:: \sqrt{\sigma^2 / (n d)}\; \xi, \quad\text{so } E\|\cdot\|^2 = \sigma^2/n.
        """
        return self.noise_scale(n) * xi

    def noisy_grad(self, w_hat: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
        """Stochastic gradient of a batch of ``n`` samples at ``w_hat`` (shape ``(..., dim)``)."""
        w_hat = np.asarray(w_hat, dtype=self.dtype)
        return self.grad(w_hat) + self.noise(rng.standard_normal(w_hat.shape, self.dtype), n)


@dataclass(frozen=True, eq=False)
class Quadratic(OracleProblem):
    r"""The oracle quadratic of theory-spec: :math:`f(W) = \tfrac12 (W - W^*)^\top A (W - W^*)`.

    ``A`` is symmetric positive definite with eigenvalues in ``[mu, L]``, the largest exactly ``L``
    (so ``L`` is the exact smoothness constant), and :math:`f^* = 0` at :math:`W^*`.

    Parameters
    ----------
    stages : int
        Stage blocks ``M``.
    sigma2 : float
        Per-sample gradient-noise variance.
    w0 : ndarray, shape (dim,)
        Initial weights.
    A : ndarray, shape (dim, dim)
        The Hessian.
    w_star : ndarray, shape (dim,)
        The minimiser.
    L : float
        The largest eigenvalue of ``A`` (checked).
    """

    A: np.ndarray = field(default=None)
    w_star: np.ndarray = field(default=None)
    L: float = 1.0

    _ARRAYS = ("w0", "A", "w_star")

    def __post_init__(self):
        a = np.asarray(self.A, dtype=float)
        if a.ndim != 2 or a.shape[0] != a.shape[1] or not np.allclose(a, a.T, rtol=0, atol=1e-12):
            raise ParameterError(f"A must be a symmetric square matrix; got shape {a.shape}")
        if np.shape(self.w_star) != (a.shape[0],):
            raise ParameterError(f"w_star has shape {np.shape(self.w_star)}; valid ({a.shape[0]},)")
        top = float(np.linalg.eigvalsh(a)[-1])
        if not np.isclose(top, self.L, rtol=1e-10, atol=0):
            raise ParameterError(f"L={self.L!r} is not lambda_max(A)={top!r}")
        super().__post_init__()

    @classmethod
    def random(
        cls,
        dim: int,
        stages: int,
        rng: np.random.Generator,
        *,
        L: float = 1.0,
        mu: float = 0.1,
        sigma2: float = 1.0,
        w_star_scale: float = 0.3,
        w0: np.ndarray | None = None,
    ) -> Quadratic:
        """A seeded instance: random eigenbasis, eigenvalues ``L``, ``mu`` and uniform in between.

        ``W*`` is uniform in ``[-w_star_scale, w_star_scale]^dim``; ``W_0`` defaults to 0 (the
        symmetric point of the symmetric devices).
        """
        check_range("dim", dim, 1, None, integer=True)
        check_range("L", L, 0, None, low_open=True)
        check_range("mu", mu, 0, L, low_open=True)
        check_range("w_star_scale", w_star_scale, 0, None)
        q, r = np.linalg.qr(rng.standard_normal((dim, dim)))
        q = q * np.sign(np.diag(r))
        eig = np.concatenate([[L], [mu] if dim > 1 else [], rng.uniform(mu, L, max(dim - 2, 0))])
        a = (q * eig) @ q.T
        a = 0.5 * (a + a.T)
        w_star = rng.uniform(-w_star_scale, w_star_scale, dim)
        w0 = np.zeros(dim) if w0 is None else np.asarray(w0, dtype=float)
        return cls(stages=stages, sigma2=sigma2, w0=w0, A=a, w_star=w_star, L=float(L))

    @property
    def dim(self) -> int:
        """Number of weights ``d``."""
        return int(self.A.shape[0])

    @property
    def f_star(self) -> float:
        """Minimum value, 0."""
        return 0.0

    def loss(self, w: np.ndarray) -> np.ndarray:
        r""":math:`\tfrac12 (W - W^*)^\top A (W - W^*)`, over the last axis."""
        return self.loss_from_grad(w, self.grad(w))

    def grad(self, w: np.ndarray) -> np.ndarray:
        r""":math:`A (W - W^*)`, over the last axis."""
        return _matvec(np.asarray(w, dtype=self.dtype) - self.w_star, self.A)

    def grad_and_loss(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`grad` and :meth:`loss` from one product (:meth:`loss_from_grad`)."""
        g = self.grad(w)
        return g, self.loss_from_grad(w, g)

    def loss_from_grad(self, w: np.ndarray, g: np.ndarray) -> np.ndarray:
        r""":meth:`loss` at ``w`` from its gradient ``g`` (:meth:`grad`'s :math:`A e`,
        :math:`e = W - W^*`): :math:`\tfrac12\, g \cdot e`, the operations of :meth:`loss`, so
        its bits."""
        return 0.5 * row_dot(g, np.asarray(w, dtype=self.dtype) - self.w_star)


@dataclass(frozen=True, eq=False)
class LeastSquares(OracleProblem):
    r"""The authors' least-squares setup: :math:`f(x) = \frac{1}{2 n_r}\|A x - y\|^2`.

    ``A`` has ``n_r`` rows (100) and ``d`` columns (40) drawn from N(0, 1) (paper-notes section 3);
    ``y = A x^* (+ \text{label noise})``. Exact constants:
    :math:`L = \lambda_{\max}(A^\top A)/n_r`, :math:`f^* = f(x_{\mathrm{lstsq}})`.

    Parameters
    ----------
    stages, sigma2, w0
        As in :class:`OracleProblem`.
    A : ndarray, shape (rows, dim)
    y : ndarray, shape (rows,)
    x_star : ndarray, shape (dim,)
        The planted solution (the minimiser when there is no label noise).
    """

    A: np.ndarray = field(default=None)
    y: np.ndarray = field(default=None)
    x_star: np.ndarray = field(default=None)

    _ARRAYS = ("w0", "A", "y", "x_star")
    _CONSTANTS = ("x_lstsq",)

    def __post_init__(self):
        a = np.asarray(self.A, dtype=float)
        if a.ndim != 2 or np.shape(self.y) != (a.shape[0],):
            raise ParameterError(
                f"A must be 2-D and y of length A.shape[0]; got {a.shape} and {np.shape(self.y)}"
            )
        super().__post_init__()

    @classmethod
    def random(
        cls,
        stages: int,
        rng: np.random.Generator,
        *,
        rows: int = 100,
        cols: int = LEAST_SQUARES_DIM,
        sigma2: float = 1.0,
        label_noise: float = 0.0,
        x_star_scale: float = 0.3,
        w0: np.ndarray | None = None,
    ) -> LeastSquares:
        """A seeded instance; ``x*`` uniform in ``[-x_star_scale, x_star_scale]^cols``; ``W_0 = 0``.

        ``cols`` is the number of weights ``d``; ``label_noise`` the std of ``y - A x*``.
        """
        check_range("rows", rows, 1, None, integer=True)
        check_range("cols", cols, 1, None, integer=True)
        check_range("label_noise", label_noise, 0, None)
        check_range("x_star_scale", x_star_scale, 0, None)
        a = rng.standard_normal((rows, cols))
        x_star = rng.uniform(-x_star_scale, x_star_scale, cols)
        y = a @ x_star + label_noise * rng.standard_normal(rows)
        w0 = np.zeros(cols) if w0 is None else np.asarray(w0, dtype=float)
        return cls(stages=stages, sigma2=sigma2, w0=w0, A=a, y=y, x_star=x_star)

    @property
    def dim(self) -> int:
        """Number of weights ``d`` (columns of ``A``)."""
        return int(self.A.shape[1])

    @property
    def rows(self) -> int:
        """Number of equations ``n_r``."""
        return int(self.A.shape[0])

    @cached_property
    def L(self) -> float:  # noqa: N802 - the theory's symbol
        r""":math:`\lambda_{\max}(A^\top A) / n_r` (exact smoothness constant)."""
        return float(np.linalg.eigvalsh(self.A.T @ self.A)[-1] / self.rows)

    @cached_property
    def x_lstsq(self) -> np.ndarray:
        """A minimiser of ``f`` (least-squares solution)."""
        return np.linalg.lstsq(self.A, self.y, rcond=None)[0]

    @cached_property
    def f_star(self) -> float:
        """Minimum value ``f(x_lstsq)``."""
        return float(self.loss(self.x_lstsq))

    def loss(self, w: np.ndarray) -> np.ndarray:
        r""":math:`\frac{1}{2 n_r}\|A x - y\|^2`, over the last axis."""
        r = _matvec(np.asarray(w, dtype=self.dtype), self.A.T) - self.y
        return 0.5 * row_dot(r, r) / self.rows

    def grad(self, w: np.ndarray) -> np.ndarray:
        r""":math:`A^\top (A x - y) / n_r`, over the last axis."""
        w = np.asarray(w, dtype=self.dtype)
        return _matvec(_matvec(w, self.A.T) - self.y, self.A) / self.rows

    def grad_and_loss(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r""":meth:`grad` and :meth:`loss` from one residual :math:`r = A x - y` (the operations
        of each, so their bits)."""
        r = _matvec(np.asarray(w, dtype=self.dtype), self.A.T) - self.y
        return _matvec(r, self.A) / self.rows, 0.5 * row_dot(r, r) / self.rows
