r"""Compiled (numba) loops of the pulse-level update: the CDF walk of the Binomial inversion and the
closed-form n-pulse map of affine responses (:mod:`simulate.analog` calls them).

Each kernel does, element by element, exactly the floating-point operations of the vectorised
numpy code it replaces, in the same order (no ``fastmath``: no reassociation, no fused
multiply-add), so the same seed gives the same bits. The transcendental functions (``log1p``,
``exp``, ``expm1``) and the device's response functions stay in numpy, evaluated by the caller at
the same values as before, so their bits are numpy's. No kernel draws a random number: the
uniforms come from the callers' generators, in their order.

The kernels take flat (1-d, contiguous) arrays. Compiled on first call and cached on disk
(``cache=True``, in ``__pycache__`` next to this file).
"""

from __future__ import annotations

import math

import numba
import numpy as np

#: steps of the CDF walk every element takes without a branch (most counts are below this)
_FIRST_STEPS = 3

__all__ = [
    "affine_apply", "affine_split", "binomial_inversion_ok", "inversion_candidates",
    "inversion_probabilities", "inversion_walk", "numpy_binomial", "numpy_binomial_lanes",
    "stochastic_rounding",
]


@numba.njit(cache=True)
def stochastic_rounding(x, u):  # pragma: no cover - compiled
    r""":math:`n = \lfloor x \rfloor + [u < x - \lfloor x \rfloor]` element-wise (the
    ``deterministic`` pulse count of :func:`simulate.analog.pulse_counts`, as int64), and
    whether every ``x`` was finite (if not, the caller keeps numpy's conversion)."""
    counts = np.empty(x.size, dtype=np.int64)
    finite = True
    for i in range(x.size):
        whole = np.floor(x[i])
        value = whole + (1.0 if u[i] < x[i] - whole else 0.0)
        finite &= abs(value) < np.inf
        counts[i] = np.int64(value) if abs(value) < np.inf else 0
    return counts, finite


@numba.njit(cache=True)
def inversion_probabilities(dw, dw_min, bl):  # pragma: no cover - compiled
    r""":math:`p = \min(1, (|\Delta w| / \Delta w_{\min}) / BL)` element-wise (the operations of
    :func:`simulate.analog.pulsed_update` then :func:`simulate.analog.pulse_counts`; a nan stays
    nan, as with numpy's ``minimum``)."""
    p = np.empty(dw.size)
    for i in range(dw.size):
        v = abs(dw[i]) / dw_min / bl
        p[i] = 1.0 if v > 1.0 else v
    return p


@numba.njit(cache=True)
def inversion_candidates(values, dw_min, bl, u, mean_cut, margin):  # pragma: no cover - compiled
    r"""Screen the elements of a Binomial(``bl``, ``p``) draw by inversion.

    ``values`` holds the probabilities :math:`p` (``dw_min <= 0``) or desired increments
    :math:`\Delta w`, whose probabilities are then those of :func:`inversion_probabilities`
    (computed here). With :math:`q = \min(p, 1 - p)` (``1 - p`` where :math:`p > 1/2`):

    - ``big``: the indices where :math:`q\, BL >` ``mean_cut`` (drawn by numpy's ``binomial``
      with probability ``p_big``; their :math:`q` counts as 0 here, so they fire nothing by
      inversion);
    - ``left``: the indices where :math:`q\, BL + u \ge` ``margin`` (:math:`1 - 16\epsilon`);
      every other element has :math:`u < 1 - BL q \le (1 - q)^{BL} = P(0)` (Bernoulli's
      inequality) and draws 0 pulses, decided without a logarithm; ``q_left``: :math:`q` there
      (the caller computes :math:`P(0) = (1 - q)^{BL}` there with numpy).

    Both lists ascending (counted first, so that no array larger than the result is
    allocated). ``any_flip``: some :math:`p > 1/2`. Returns
    ``(p, left, q_left, big, p_big, any_flip)``.
    """
    if dw_min > 0:  # the probabilities of the increments (one pass, vectorisable)
        p = np.empty(values.size)
        for i in range(values.size):
            v = abs(values[i]) / dw_min / bl
            p[i] = 1.0 if v > 1.0 else v  # numpy's minimum(1, v): a nan stays nan
    else:
        p = values
    m = 0
    b = 0
    flip = 0
    for i in range(p.size):  # (vectorisable) counts of both lists
        flip += p[i] > 0.5
        q = 1.0 - p[i] if p[i] > 0.5 else p[i]
        drop = q * bl > mean_cut
        b += drop
        m += (not drop) & (q * bl + u[i] >= margin)
    left = np.empty(m + 1, dtype=np.int64)  # one spare slot: the appends are branch-free
    q_left = np.empty(m + 1)
    big = np.empty(b + 1, dtype=np.int64)
    p_big = np.empty(b + 1)
    m = 0
    b = 0
    for i in range(p.size):  # (branch-free: the conditions depend on random numbers)
        value = p[i]
        q = 1.0 - value if value > 0.5 else value
        drop = q * bl > mean_cut
        big[b] = i
        p_big[b] = value
        b += drop
        left[m] = i
        q_left[m] = q
        m += (not drop) & (q * bl + u[i] >= margin)
    return p, left[:m], q_left[:m], big[:b], p_big[:b], flip > 0


@numba.njit(cache=True)
def inversion_walk(p, u, bl, left, q_left, pmf, any_flip):  # pragma: no cover - compiled
    r"""Counts of a Binomial(``bl``, ``p``) draw by inversion of the CDF at the ``left``
    elements (0 elsewhere; :math:`BL - n` where :math:`p > 1/2`, looked for if ``any_flip``).

    Element ``i = left[j]`` with :math:`q` = ``q_left[j]``, :math:`P(0)` = ``pmf[j]`` and
    uniform :math:`u`: :math:`n = \min\{k : u < P(N \le k)\}` (at most :math:`BL`), the pmf
    built by :math:`P(k) = P(k-1) \cdot \bigl(\frac{q}{1 - q} \cdot \frac{BL - k + 1}{k}\bigr)`
    and the CDF summed in order, as the former vectorised walk of
    :func:`simulate.analog.binomial_counts` did (the CDF is non-decreasing in floating point,
    so stopping at the first :math:`u < P(N \le k)` gives its count).
    """
    counts = np.zeros(p.size, dtype=np.int64)
    factor = np.empty(max(bl, 1))  # (BL - k + 1) / k, each rounded once, as in Python
    for k in range(1, bl):
        factor[k] = (bl - k + 1) / k
    first = min(_FIRST_STEPS, bl - 1)
    for j in range(left.size):
        i = left[j]
        x = u[i]
        prob = pmf[j]
        q = q_left[j]
        ratio = q / (1.0 - q)
        cdf = prob
        count = 1 if x >= prob else 0  # 0 here stays 0: the CDF only grows
        for k in range(1, first + 1):  # branch-free: every element walks these steps
            prob *= ratio * factor[k]
            cdf += prob
            count += x >= cdf
        if count == first + 1:  # not decided yet: walk on to the first u < P(N <= k)
            for k in range(first + 1, bl):
                prob *= ratio * factor[k]
                cdf += prob
                if x >= cdf:
                    count += 1
                else:
                    break
        counts[i] = count
    if any_flip:
        for i in range(p.size):
            if p[i] > 0.5:
                counts[i] = bl - counts[i]
    return counts


@numba.njit(cache=True)
def binomial_inversion_ok(p, n):  # pragma: no cover - compiled
    """Whether numpy's ``binomial(n, p)`` draws every element of ``p`` (in ``(0, 1)``) by
    inversion (``n min(p, 1 - p) <= 30`` in its own arithmetic), as
    :func:`numpy_binomial` does."""
    for i in range(p.size):
        if (p[i] * n if p[i] <= 0.5 else (1.0 - p[i]) * n) > 30.0:
            return False
    return True


@numba.njit(cache=True)
def _binomial_constants(p, n):  # pragma: no cover - compiled
    r"""numpy's per-element constants of ``binomial(n, p)`` by inversion (its ``binomial_t``):
    ``(v, q, q_n, bound)`` with :math:`v = \min(p, 1 - p)`, :math:`q = 1 - v`,
    :math:`q_n = \exp(n \log q)` and :math:`\lfloor\min(n, nv + 10\sqrt{nvq + 1})\rfloor`."""
    value = 1.0 - p if not p <= 0.5 else p
    q = 1.0 - value
    qn = math.exp(n * math.log(q))
    mean = n * value
    bound = mean + 10.0 * math.sqrt(mean * q + 1)
    return value, q, qn, (n if n < bound else int(bound))


@numba.njit(cache=True)
def numpy_binomial(p, n, u, start, index, counts):  # pragma: no cover - compiled
    r"""numpy's ``Generator.binomial(n, p)`` of the elements ``start, ...`` of ``p`` (each in
    ``(0, 1)`` with :func:`binomial_inversion_ok`), from its uniforms ``u``: the same numbers.

    numpy (``random_binomial`` of ``numpy/random/src/distributions/distributions.c``) draws
    by inversion, for :math:`p \le 1/2` (else :math:`n - ` the draw of :math:`1 - p`): with
    :math:`q = 1 - p`, :math:`q_n = \exp(n \log q)`, the bound
    :math:`b = \lfloor \min(n, np + 10 \sqrt{npq + 1}) \rfloor` and one uniform :math:`U`,
    :math:`X = 0, p_X = q_n`; while :math:`U > p_X`: :math:`X \leftarrow X + 1`, then if
    :math:`X > b` it starts again with the next uniform, else :math:`U \leftarrow U - p_X`,
    :math:`p_X \leftarrow ((n - X + 1)\, p\, p_X) / (X q)`. The same operations here, with
    ``exp``, ``log`` and ``sqrt`` of the C library, as numpy's (tested: every count equal).

    Element ``j`` is written to ``counts[index[j]]``. Returns the first element not drawn
    (``p.size`` when done): an element that starts again needs a uniform past ``u``, which the
    caller draws next from the same generator before calling again from there.
    """
    k = 0
    for j in range(start, p.size):
        flipped = not p[j] <= 0.5
        value, q, qn, bound = _binomial_constants(p[j], n)
        if k == u.size:
            return j
        x = 0
        px = qn
        draw = u[k]
        k += 1
        while draw > px:
            x += 1
            if x > bound:
                if k == u.size:
                    return j
                x = 0
                px = qn
                draw = u[k]
                k += 1
            else:
                draw -= px
                px = ((n - x + 1) * value * px) / (x * q)
        counts[index[j]] = n - x if flipped else x
    return p.size


#: elements whose binomial walks :func:`numpy_binomial_lanes` interleaves (hides the latency
#: of the division of each step)
_LANES = 8


@numba.njit(cache=True)
def numpy_binomial_lanes(p, n, u, index, counts):  # pragma: no cover - compiled
    """:func:`numpy_binomial` of every element, element ``j`` from the uniform ``u[j]``, with
    the walks of :data:`_LANES` elements interleaved (the same operations per element). Returns
    ``False`` if an element would start again (it needs the next uniform of the stream, which
    shifts those of the later elements): the caller then draws with :func:`numpy_binomial`
    from the same uniforms."""
    size = p.size
    value = np.empty(size)
    q = np.empty(size)
    qn = np.empty(size)
    bound = np.empty(size, dtype=np.int64)
    for j in range(size):  # the constants of each element (numpy: its binomial_t)
        value[j], q[j], qn[j], bound[j] = _binomial_constants(p[j], n)
    lane = np.full(_LANES, -1, dtype=np.int64)
    draw = np.empty(_LANES)
    px = np.empty(_LANES)
    x = np.zeros(_LANES, dtype=np.int64)
    following = 0
    active = 0
    for k in range(_LANES):
        if following < size:
            lane[k], draw[k], px[k], x[k] = following, u[following], qn[following], 0
            following += 1
            active += 1
    while active > 0:
        for k in range(_LANES):
            j = lane[k]
            if j < 0:
                continue
            if draw[k] > px[k]:
                x[k] += 1
                if x[k] > bound[j]:
                    return False
                draw[k] -= px[k]
                px[k] = ((n - x[k] + 1) * value[j] * px[k]) / (x[k] * q[j])
            else:
                counts[index[j]] = n - x[k] if not p[j] <= 0.5 else x[k]
                if following < size:
                    lane[k], draw[k], px[k], x[k] = following, u[following], qn[following], 0
                    following += 1
                else:
                    lane[k] = -1
                    active -= 1
    return True


@numba.njit(cache=True)
def affine_split(w, n, up, lo, hi):  # pragma: no cover - compiled
    r"""The elements whose closed-form pulse needs the response at ``w``, split by direction.

    :meth:`theory.devices.PulseMap.after` gives :math:`w + 0 \cdot \mathrm{inc} = w` exactly
    for an element without pulses whose weight is finite and non-zero, so only the others (a
    pulse, or :math:`w = \pm 0`, or :math:`w` not finite) need :math:`q_\pm(w)`: their indices
    and weights, up (``up``) and down, ascending. ``inside``: every weight is in
    ``[lo, hi]`` (else the caller takes the general path); ``most``: :math:`\max n`.

    Returns ``(up_index, w_up, down_index, w_down, inside, most)``.
    """
    size = w.size
    a = 0
    d = 0
    inside = True
    most = 0
    for i in range(size):  # (vectorisable) the sizes and the checks
        x = w[i]
        inside &= not (x < lo or x > hi)
        most = max(most, n[i])
        need = (n[i] > 0) | (not abs(x) < np.inf) | (x == 0.0)
        a += need & up[i]
        d += need & (not up[i])
    up_index = np.empty(a + 1, dtype=np.int64)  # one spare slot: branch-free appends
    w_up = np.empty(a + 1)
    down_index = np.empty(d + 1, dtype=np.int64)
    w_down = np.empty(d + 1)
    a = 0
    d = 0
    for i in range(size):
        x = w[i]
        need = (n[i] > 0) | (not abs(x) < np.inf) | (x == 0.0)
        direction = up[i]
        up_index[a] = i
        w_up[a] = x
        a += need & direction
        down_index[d] = i
        w_down[d] = x
        d += need & (not direction)
    return up_index[:a], w_up[:a], down_index[:d], w_down[:d], inside, most


@numba.njit(cache=True)
def affine_apply(w, n, up_index, q_up, down_index, q_down, step, table, lo, hi
                 ):  # pragma: no cover - compiled
    r"""The weights after ``n[i]`` noise-free pulses of an affine response, all in ``[lo, hi]``.

    .. math:: w_n = \mathrm{clip}\bigl(T[n]\, \mathrm{inc} + w,\ lo,\ hi\bigr), \qquad
        \mathrm{inc} = (\pm \Delta w_{\min})\, q_\pm(w)

    (:meth:`theory.devices.PulseMap.after` of the first increment of
    :func:`simulate.analog.apply_pulses`, element by element) at the elements of
    :func:`affine_split` (``q_up``, ``q_down``: the responses :math:`q_+`, :math:`q_-` there,
    from numpy), :math:`w` at the others. :math:`T[k] = \sum_{j<k} (1 - c)^j` is tabulated by
    the caller (numpy); ``step`` (:math:`\Delta w_{\min}`), ``lo`` and ``hi`` are scalars
    (weight units).
    """
    out = w.copy()
    for j in range(up_index.size):
        i = up_index[j]
        v = table[n[i]] * (step * q_up[j]) + w[i]
        out[i] = lo if v < lo else (hi if v > hi else v)
    for j in range(down_index.size):
        i = down_index[j]
        v = table[n[i]] * (-step * q_down[j]) + w[i]
        out[i] = lo if v < lo else (hi if v > hi else v)
    return out
