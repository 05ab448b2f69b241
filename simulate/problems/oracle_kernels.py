r"""The compiled (numba) product of the oracle problems, with the bits of numpy's ``einsum``.

:func:`matvec` is ``x @ a`` over the last axis of ``x``,

.. math:: y_{rj} = \sum_{i=1}^{n} x_{ri}\, a_{ij} \quad (\text{added for } i = 1, \dots, n),

each output element a sum in that one order whatever the leading shape, so an ensemble member
gets the bits of its run alone (BLAS picks kernels, and summation orders, by the number of rows).
That is the order of ``numpy.einsum("...i,ij->...j", x, a)`` (without ``optimize``), which adds
``x[r, i] * a[i, :]`` to the output row for ``i`` in order: :func:`matvec_numpy`, the reference
the tests hold the kernel to (the same bits in float64 and float32). The kernel is the one loop
without einsum's dispatch and iterator set-up, which cost most of an oracle update at the
ensemble sizes of verify (2.3x at ``48 x 64`` by ``64 x 64``, more for smaller ``d``).

:func:`quadratic_steps` is the update loop of the common oracle run on the quadratic (digital or
expected soft-bounds writes or both, batch-mean or per-sample, read fresh or stale; and
Corollary TT0's Tiki-Taka, whose writes go to a digital buffer moved onto the weights by the
expected soft-bounds write every ``T`` updates): the
operations of :class:`simulate.problems.oracle_run.OracleTraining`'s numpy steps on each element,
in their order, and the product as :func:`matvec`, so the same bits (tested against the numpy path,
``tests/test_oracle_kernels.py``). Compiled with ``numba.njit(cache=True)`` (no fastmath: no
fused multiply-add, no reordering).
"""

from __future__ import annotations

import numba
import numpy as np

from ..device import soft_bounds_write

__all__ = ["matvec", "matvec_numpy", "quadratic_steps"]


def matvec_numpy(x: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Reference of :func:`matvec`: ``numpy.einsum("...i,ij->...j", x, a)``."""
    return np.einsum("...i,ij->...j", x, a)


def matvec(x: np.ndarray, a: np.ndarray) -> np.ndarray:
    r"""``x @ a`` over the last axis of ``x`` (shape ``(..., n)``; ``a``: ``(n, m)``), each
    element summed in the order of ``i`` (:func:`matvec_numpy`'s bits), in the inputs' common
    dtype. Compiled when ``a`` is C-contiguous in that dtype (einsum's order follows the memory
    layout of ``a``); einsum otherwise.

    Returns
    -------
    ndarray, shape (..., m)
    """
    x, a = np.asarray(x), np.asarray(a)
    dtype = np.result_type(x, a)
    if (x.ndim == 0 or a.ndim != 2 or x.shape[-1] != a.shape[0] or dtype.kind != "f"
            or a.shape[1] < 2 or not (a.flags.c_contiguous and a.dtype == dtype)):
        # einsum's errors and other dtypes, one output column (einsum sums it as a dot), and an
        # ``a`` not in rows (einsum's order follows the memory layout: ``A.T`` sums otherwise)
        return matvec_numpy(x, a)
    rows = x.reshape(-1, x.shape[-1]).astype(dtype, copy=False)
    out = _matvec(rows, a)
    return out.reshape(*x.shape[:-1], a.shape[1])


@numba.njit(cache=True, inline="always")
def _row_times(x, a, out):  # pragma: no cover - compiled
    """``out = x @ a`` for one row ``x``: ``out[j]`` from 0, adding ``x[i] * a[i, j]`` for ``i``
    in order (einsum's order; every product of this module)."""
    for j in range(a.shape[1]):
        out[j] = 0.0
    for i in range(a.shape[0]):
        xi = x[i]
        for j in range(a.shape[1]):
            out[j] += xi * a[i, j]


@numba.njit(cache=True)
def _matvec(x, a):  # pragma: no cover - compiled
    out = np.empty((x.shape[0], a.shape[1]), dtype=x.dtype)
    for r in range(x.shape[0]):
        _row_times(x[r], a, out[r])
    return out


@numba.njit(cache=True)
def quadratic_steps(w, g, w_star, a, xi, noise_scale, step, bias, analog, tracked, tau, lo, hi,
                    delays, starts, ends, ring, k0, w_lo, w_hi, grads, iterates, max_abs,
                    fast, every, beta):  # pragma: no cover - compiled
    r"""Updates ``k0, ..., k0 + T - 1`` of a quadratic oracle run, in place.

    Per member ``r`` and update ``k``: the signal read at the current or stale point (block
    ``s`` from version ``max(0, k - delays[s])`` of ``ring``), each of the ``n`` writes
    :math:`\Delta w = \text{step}\,(g + \text{scale}\,\xi_j + b)` (on an ``analog`` weight the
    expected soft-bounds update :math:`\mathrm{clip}(\Delta w - |\Delta w|\,(w/\tau) + w)`, on a
    digital one :math:`w + \Delta w`), the visited extremes of the ``tracked`` weights, then the
    gradient :math:`A (W - W^*)` at the new iterate.

    With ``every > 0``, Corollary TT0's Tiki-Taka (:mod:`simulate.device.tiki_taka` with
    ``gamma = 0``, every column, the reset and a digital fast buffer): the writes go to the
    buffer ``fast`` (:math:`A + \Delta w`), ``w`` is the slow array ``C`` (the weights read), and
    after every ``every``-th update (:math:`(k + 1) \bmod T = 0`) every weight takes the expected
    soft-bounds update of increment :math:`\beta A` (if :math:`\beta \ne 0`), then ``A = 0``;
    the visited extremes are those of ``C`` after the event (``C`` does not move between events).

    Parameters
    ----------
    w, g : ndarray, shape (R, d)
        The iterate and its gradient, updated in place.
    w_star : ndarray, shape (d,)
    a : ndarray, shape (d, d), C-contiguous
    xi : ndarray, shape (R, T, n, d)
        The standard normals of the writes.
    noise_scale, step, tau, lo, hi : scalars of the arrays' dtype
        ``step`` is the write's ``-lr`` (``-lr / n`` per sample).
    bias : ndarray, shape (d,)
        Added to the signal when its length is ``d`` (none when empty).
    analog, tracked : ndarray of bool, shape (d,)
        The weights written by the expected analog update (the others digitally), and those
        whose visited extremes are kept.
    delays, starts, ends : ndarray of int64, shape (M,)
        Per stage, its forward delay and block ``[start, end)``.
    ring : ndarray, shape (D + 1, R, d)
        Version ``j`` in slot ``j mod (D + 1)``, ``D`` the largest delay (unused when 0).
    k0 : int
    w_lo, w_hi : ndarray, shape (R,)
        The visited extremes, updated in place.
    grads, iterates : ndarray, shape (T, R, d)
        Output: the gradient and the iterate after each update.
    max_abs : ndarray, shape (T, R)
        Output: :math:`\max_i |w_i|` after each update (``nan`` if a weight is ``nan``).
    fast : ndarray, shape (R, d)
        Tiki-Taka's buffer ``A``, updated in place (unused when ``every == 0``).
    every : int
        Tiki-Taka's ``T`` (0: no Tiki-Taka).
    beta : scalar
        Tiki-Taka's transfer rate.
    """
    rows, d = w.shape
    updates, n = xi.shape[1], xi.shape[2]
    slots = ring.shape[0]
    stale = slots > 1
    read = np.empty(d, dtype=w.dtype)
    e = np.empty(d, dtype=w.dtype)
    gr = np.empty(d, dtype=w.dtype)
    biased = bias.shape[0] == d
    for t in range(updates):
        k = k0 + t
        for r in range(rows):
            if stale:
                here = k % slots
                for i in range(d):
                    ring[here, r, i] = w[r, i]
                for s in range(delays.shape[0]):
                    version = max(0, k - delays[s]) % slots
                    for i in range(starts[s], ends[s]):
                        read[i] = ring[version, r, i]
                for i in range(d):
                    e[i] = read[i] - w_star[i]
                _row_times(e, a, gr)
            else:
                for i in range(d):
                    gr[i] = g[r, i]
            low, high = w_lo[r], w_hi[r]
            for j in range(n):
                for i in range(d):
                    signal = gr[i] + noise_scale * xi[r, t, j, i]
                    if biased:
                        signal = signal + bias[i]
                    dw = step * signal
                    if every:
                        fast[r, i] = fast[r, i] + dw
                        continue
                    x = w[r, i]
                    if analog[i]:
                        v = soft_bounds_write(x, dw, tau, lo, hi)
                    else:
                        v = x + dw
                    w[r, i] = v
                    if tracked[i]:
                        low = v if v < low else low
                        high = v if v > high else high
            if every and (k + 1) % every == 0:  # Tiki-Taka's transfer event
                for i in range(d):
                    if beta != 0:
                        w[r, i] = soft_bounds_write(w[r, i], beta * fast[r, i], tau, lo, hi)
                    fast[r, i] = 0.0
                    if tracked[i]:
                        v = w[r, i]
                        low = v if v < low else low
                        high = v if v > high else high
            w_lo[r], w_hi[r] = low, high
            biggest = 0.0
            for i in range(d):
                e[i] = w[r, i] - w_star[i]
                magnitude = abs(w[r, i])
                if magnitude != magnitude or biggest != biggest:
                    biggest = np.nan
                elif magnitude > biggest:
                    biggest = magnitude
            _row_times(e, a, g[r])
            for i in range(d):
                grads[t, r, i] = g[r, i]
                iterates[t, r, i] = w[r, i]
            max_abs[t, r] = biggest
