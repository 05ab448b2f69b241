r"""Fused element-wise kernels of the network training step (numba), with the bits of numpy.

Each kernel does in one pass what the numpy code of :mod:`simulate.problems.network` and
:func:`simulate.device.updates.expected_update` does in several ufunc calls, with the same IEEE
operations in the same order, so the results are bit for bit those of numpy (tested against the
numpy reference functions ``*_numpy`` below). Transcendental functions (``exp``, ``log``; the
networks' float64 ``tanh`` is :mod:`simulate.problems.activation`'s) and the device's response
``G(w)`` stay outside: the kernels only add, multiply, divide, compare and clip.
:func:`soft_bounds_write` is the one soft-bounds write of a weight that the compiled loops
inline. Compiled with ``numba.njit(cache=True)`` (no fastmath, no parallel); the numpy references
are the specification the tests hold the kernels to.

Every kernel is row-wise in the ensemble axis (axis 0) and element-wise within a row, except the
bias gradient, a sum over the batch axis in sample order (as ``numpy.sum`` over a non-contiguous
axis adds rows in order), so an ensemble member gets the bits of its run alone.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = [
    "add_bias",
    "add_bias_numpy",
    "dense_backward",
    "dense_backward_numpy",
    "expected_step",
    "expected_step_numpy",
    "expected_step_ratio",
    "expected_step_ratio_numpy",
    "soft_bounds_write",
    "softmax_delta",
    "softmax_delta_numpy",
]

def expected_step_numpy(w, gw, g, scale, f, lo, hi, w_min, w_max) -> None:
    r"""Reference of :func:`expected_step` in numpy (the operations of
    :func:`simulate.device.updates.expected_update` on :math:`\Delta w = s\, g_w`)."""
    gw *= scale
    out = np.abs(gw) * g
    drift = gw if f == 1.0 else f * gw
    np.subtract(drift, out, out=out)
    out += w
    np.clip(out, lo, hi, out=out)
    np.copyto(w, out)
    np.minimum(w_min, w.min(axis=1), out=w_min)
    np.maximum(w_max, w.max(axis=1), out=w_max)


def expected_step_ratio_numpy(w, gw, tau, scale, f, lo, hi, w_min, w_max) -> None:
    r"""Reference of :func:`expected_step_ratio` in numpy: :func:`expected_step_numpy` with
    ``g = w / tau`` (soft bounds' compiled :math:`G`), ``gw`` left unchanged."""
    expected_step_numpy(w, gw.copy(), w / tau, scale, f, lo, hi, w_min, w_max)


def dense_backward_numpy(a, delta, out, bias_grad, tanh: bool) -> None:
    r"""Reference of :func:`dense_backward` in numpy (the operations of
    :meth:`simulate.problems.network.Network.backward_stage`)."""
    if tanh:
        np.multiply(a, a, out=out)
        np.subtract(1.0, out, out=out)
        out *= delta
    else:
        np.multiply(delta, a > 0.0, out=out)
    out.sum(axis=-2, keepdims=True, out=bias_grad)


def softmax_delta_numpy(exp, total, y, n: int) -> None:
    r"""Reference of :func:`softmax_delta` in numpy (the operations of
    :func:`simulate.problems.network.softmax_cross_entropy`)."""
    exp /= total
    exp -= y[..., None] == np.arange(exp.shape[-1])
    exp /= n


@numba.njit(cache=True)
def _expected_step(w, gw, g, scale, f, lo, hi):  # pragma: no cover - compiled
    rows, cols = w.shape
    for r in range(rows):  # two loops without branches, so that LLVM vectorises them
        if f == 1.0:
            for i in range(cols):
                dw = gw[r, i] * scale
                gw[r, i] = dw
                v = (dw - abs(dw) * g[r, i]) + w[r, i]
                v = lo if v < lo else v
                w[r, i] = hi if v > hi else v
        else:
            for i in range(cols):
                dw = gw[r, i] * scale
                gw[r, i] = dw
                v = (f * dw - abs(dw) * g[r, i]) + w[r, i]
                v = lo if v < lo else v
                w[r, i] = hi if v > hi else v

@numba.njit(cache=True, inline="always")
def soft_bounds_write(x, dw, tau, lo, hi):  # pragma: no cover - compiled
    r"""The expected soft-bounds write of ``dw`` on one weight ``x``,
    :math:`\mathrm{clip}((\Delta w - |\Delta w|\,(x/\tau)) + x, lo, hi)` (the operations of
    :func:`simulate.device.updates.expected_update` at :math:`F = 1`, :math:`G = w/\tau`), for
    the compiled loops (inlined)."""
    v = (dw - abs(dw) * (x / tau)) + x
    v = lo if v < lo else v
    return hi if v > hi else v


@numba.njit(cache=True)
def _expected_step_ratio(w, gw, tau, scale, f, lo, hi, w_min, w_max,
                         changed):  # pragma: no cover - compiled
    rows, cols = w.shape
    for r in range(rows):
        a, b = w_min[r], w_max[r]
        inside = 0  # weights within the running extremes [a, b] (an integer sum: it vectorises)
        if f == 1.0 and tau == 1.0:  # x / 1.0 is x (IEEE), without the division's cost
            for i in range(cols):
                dw = gw[r, i] * scale
                x = w[r, i]
                v = (dw - abs(dw) * x) + x
                v = lo if v < lo else v
                v = hi if v > hi else v
                w[r, i] = v
                inside += (v >= a) & (v <= b)
        elif f == 1.0:
            for i in range(cols):
                v = soft_bounds_write(w[r, i], gw[r, i] * scale, tau, lo, hi)
                w[r, i] = v
                inside += (v >= a) & (v <= b)
        else:
            for i in range(cols):
                dw = gw[r, i] * scale
                x = w[r, i]
                v = (f * dw - abs(dw) * (x / tau)) + x
                v = lo if v < lo else v
                v = hi if v > hi else v
                w[r, i] = v
                inside += (v >= a) & (v <= b)
        # unchanged extremes are exact only away from a signed zero (a nan fails the compares)
        changed[r] = inside != cols or a == 0.0 or b == 0.0


@numba.njit(cache=True)
def _add_bias(z, bias):  # pragma: no cover - compiled
    members, n, m = z.shape
    row = np.empty(m)  # contiguous, so that the loops over j vectorise
    for r in range(members):
        for j in range(m):
            row[j] = bias[r, 0, j]
        for t in range(n):
            for j in range(m):
                z[r, t, j] += row[j]


@numba.njit(cache=True)
def _dense_backward(a, delta, out, bias_grad, tanh):  # pragma: no cover - compiled
    members, n, m = a.shape
    total = np.empty(m)  # contiguous, so that the loops over j vectorise
    for r in range(members):
        if tanh:
            for t in range(n):
                for j in range(m):
                    x = a[r, t, j]
                    out[r, t, j] = (1.0 - x * x) * delta[r, t, j]
        else:
            for t in range(n):
                for j in range(m):
                    out[r, t, j] = delta[r, t, j] * (1.0 if a[r, t, j] > 0.0 else 0.0)
        for j in range(m):
            total[j] = out[r, 0, j]
        for t in range(1, n):  # in sample order, as numpy sums over a non-last axis
            for j in range(m):
                total[j] += out[r, t, j]
        for j in range(m):
            bias_grad[r, 0, j] = total[j]

@numba.njit(cache=True)
def _softmax_delta(exp, total, y, n):  # pragma: no cover - compiled
    members, rows, classes = exp.shape
    for r in range(members):
        for t in range(rows):
            s = total[r, t, 0]
            label = y[r, t]
            for j in range(classes):
                p = exp[r, t, j] / s
                if j == label:
                    p = p - 1.0
                exp[r, t, j] = p / n


def expected_step(w, gw, g, scale: float, f: float, lo: float, hi: float, w_min, w_max) -> None:
    r"""One expected analog update of the weights ``w`` ``(R, P)`` in place, fused.

    With :math:`\Delta w = s\, g_w` (``scale`` :math:`s = -\alpha`, ``gw`` the gradient, which is
    overwritten with :math:`\Delta w`):

    .. math:: w \leftarrow \mathrm{clip}\bigl(f\,\Delta w - |\Delta w|\, G(w) + w,\;
              [w_{\min}, w_{\max}]\bigr)

    (:func:`simulate.device.updates.expected_update` with a constant :math:`F = f`, e.g. soft
    bounds' 1; ``g`` = :math:`G(w)` evaluated by numpy before the call), and the running extremes
    ``w_min[r] = min(w_min[r], min_i w[r, i])``, ``w_max`` likewise (``nan`` propagates; these by
    numpy).
    Weights in device units; all arrays C-contiguous float64.
    """
    _expected_step(w, gw, g, float(scale), float(f), float(lo), float(hi))
    # the extremes by numpy's vectorised reductions (a fused min/max would not vectorise)
    np.minimum(w_min, w.min(axis=1), out=w_min)
    np.maximum(w_max, w.max(axis=1), out=w_max)


def expected_step_ratio(w, gw, tau: float, scale: float, f: float, lo: float, hi: float, w_min,
                        w_max) -> None:
    r""":func:`expected_step` for a response whose :math:`G(w)` is the ratio :math:`w / \tau`
    (soft bounds), with :math:`G` evaluated inside the one pass:

    .. math:: w \leftarrow \mathrm{clip}\bigl(f\,\Delta w - |\Delta w|\, (w / \tau) + w,\;
              [w_{\min}, w_{\max}]\bigr), \qquad \Delta w = s\, g_w,

    the same IEEE operations in the same order as numpy's ``w / tau`` (the compiled ``G`` of
    :class:`theory.devices.SoftBounds`) followed by :func:`expected_step_numpy`, so the same
    bits; no array of ``G`` is written, and ``gw`` is left unchanged (read once). ``tau`` in
    weight units; the running extremes ``w_min``, ``w_max`` as :func:`expected_step`, the same
    bits, reduced again only for the rows where a weight left them (the pass counts the weights
    inside). All arrays C-contiguous float64 of shape ``(R, P)``.
    """
    changed = np.empty(w.shape[0], dtype=np.bool_)
    _expected_step_ratio(w, gw, float(tau), float(scale), float(f), float(lo), float(hi),
                         w_min, w_max, changed)
    _running_extremes(w, w_min, w_max, changed)


def _running_extremes(w, w_min, w_max, changed) -> None:
    """``w_min = minimum(w_min, w.min(axis=1))`` and ``w_max`` likewise, by numpy, for the rows
    ``changed`` only: a row whose weights all lie in ``[w_min, w_max]`` (neither of them 0, the
    kernel's test) keeps both bit for bit. A few changed rows are reduced alone (their extremes
    are the same numbers: a minimum of floats is unique but for the sign of a zero and a nan's
    payload, so any zero or non-finite result takes the whole reduction instead), many take
    the whole reduction, the operations of :func:`expected_step_numpy`."""
    rows = np.flatnonzero(changed)
    if not rows.size:
        return
    if 4 * rows.size <= changed.size:
        part = w[rows]
        lo = np.minimum(w_min[rows], part.min(axis=1))
        hi = np.maximum(w_max[rows], part.max(axis=1))
        if np.all(np.isfinite(lo) & np.isfinite(hi) & (lo != 0.0) & (hi != 0.0)):
            w_min[rows], w_max[rows] = lo, hi
            return
    np.minimum(w_min, w.min(axis=1), out=w_min)
    np.maximum(w_max, w.max(axis=1), out=w_max)


def add_bias(z, bias) -> None:
    r"""The bias added to a layer's pre-activation in place, :math:`z \leftarrow z + c`
    (``z += bias`` of numpy, one IEEE addition per element: the same bits).

    ``z`` of shape ``(R, n, m)``, ``bias`` ``(R, 1, m)`` broadcast over the batch axis (a strided
    view in the network). Other shapes (e.g. ``(n, m)`` with a bias ``(1, m)``) take numpy's
    ``z += bias``.
    """
    if z.ndim == 3 and bias.ndim == 3 and bias.shape == (z.shape[0], 1, z.shape[2]) \
            and z.dtype == np.float64 and bias.dtype == np.float64:
        _add_bias(z, bias)
    else:
        z += bias


def add_bias_numpy(z, bias) -> None:
    """Reference of :func:`add_bias` in numpy."""
    z += bias


def dense_backward(a, delta, out, bias_grad, tanh: bool) -> None:
    r"""Error at a dense layer's pre-activation and its bias gradient, fused.

    .. math:: \delta_z = \delta \odot \phi'(z), \qquad
              \phi'(z) = 1 - a^2 \ (\tanh), \quad [a > 0] \ (\mathrm{ReLU}),
              \qquad \frac{\partial L}{\partial c} = \sum_{t} \delta_{z,t}

    ``a`` = :math:`\phi(z)` and ``delta`` of shape ``(R, n, m)``; writes :math:`\delta_z` into
    ``out`` ``(R, n, m)`` and the sum over the batch (in sample order) into ``bias_grad``
    ``(R, 1, m)``. float64 arrays of any strides (``bias_grad`` is a strided view in the
    network).
    """
    _dense_backward(a, delta, out, bias_grad, bool(tanh))


def softmax_delta(exp, total, y, n: int) -> None:
    r"""The gradient of the mean softmax cross-entropy from the exponentials, in place.

    .. math:: \frac{\partial L_r}{\partial z_{rij}} = \frac{e_{rij} / T_{ri} - [j = y_{ri}]}{n}

    ``exp`` :math:`e = \exp(z - \max_j z)` of shape ``(R, n, classes)`` (overwritten with the
    gradient), ``total`` :math:`T = \sum_j e` of shape ``(R, n, 1)``, ``y`` the labels
    ``(R, n)``.
    """
    if exp.ndim != 3 or y.shape != exp.shape[:2] or not exp.flags.c_contiguous:
        softmax_delta_numpy(exp, total, y, n)
    else:
        _softmax_delta(exp, total, y, float(n))
