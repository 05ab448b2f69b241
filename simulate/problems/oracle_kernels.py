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
Compiled with ``numba.njit(cache=True)`` (no fastmath: no fused multiply-add, no reordering).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["matvec", "matvec_numpy"]


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


@numba.njit(cache=True)
def _matvec(x, a):  # pragma: no cover - compiled
    rows, n = x.shape
    m = a.shape[1]
    out = np.zeros((rows, m), dtype=x.dtype)
    for r in range(rows):
        for i in range(n):
            xi = x[r, i]
            for j in range(m):
                out[r, j] += xi * a[i, j]
    return out
