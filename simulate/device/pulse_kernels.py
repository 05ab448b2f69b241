r"""Compiled (numba) loops of the pulse-level update (:mod:`simulate.device` calls them): the
``deterministic`` rounding, the Binomial inversion of the ``stochastic`` count, the fused
``stochastic`` update of noise-free affine responses, and the closed-form n-pulse map of affine
responses.

Bits policy. :func:`stochastic_rounding` and the closed-form map (:func:`affine_split`,
:func:`affine_apply`, used by the ``deterministic`` and ``mean-count`` pulse types) do, element
by element, exactly the floating-point operations of the vectorised numpy code they replaced, in
the same order, with the device's responses and the geometric-sum table from numpy, so those
bits are numpy's. The ``stochastic`` kernels (:func:`binomial_inversion`,
:func:`stochastic_affine_update`) define their own bits: :math:`P(0) = (1 - q)^{BL}` is computed
here (by squaring, or ``exp``/``log1p`` of the C library for long trains), every element with a
mean count up to the caller's cut is drawn by inversion, and the fused update evaluates the
affine responses :math:`\alpha + \beta w` itself; the two kernels give the same counts from the
same uniforms (tested). Either way: same seed, same bits; no ``fastmath`` (no reassociation,
no fused multiply-add); ``error_model="numpy"`` (a float division by zero gives inf or nan, as
in numpy, instead of raising; it lets the loops vectorise). No kernel draws a random number:
the uniforms come from the callers' generators, in their order.

The kernels take flat (1-d, contiguous) arrays. Compiled on first call and cached on disk
(``cache=True``, in ``__pycache__`` next to this file).
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = [
    "affine_apply", "affine_split", "binomial_inversion", "stochastic_affine_update",
    "stochastic_rounding", "zero_probability",
]


@numba.njit(cache=True)
def stochastic_rounding(x, u):  # pragma: no cover - compiled
    r""":math:`n = \lfloor x \rfloor + [u < x - \lfloor x \rfloor]` element-wise (the
    ``deterministic`` pulse count of :func:`simulate.device.trains.pulse_counts`, as int64), and
    whether every ``x`` was finite (if not, the caller keeps numpy's conversion)."""
    counts = np.empty(x.size, dtype=np.int64)
    finite = True
    for i in range(x.size):
        whole = np.floor(x[i])
        value = whole + (1.0 if u[i] < x[i] - whole else 0.0)
        finite &= abs(value) < np.inf
        counts[i] = np.int64(value) if abs(value) < np.inf else 0
    return counts, finite


#: pmf steps of the CDF walk that :func:`stochastic_affine_update` takes for every element
#: without a branch (most counts are below this); the walk goes on only where it did not stop
_FIRST_STEPS = 7

#: elements per block of :func:`stochastic_affine_update` (its work arrays stay in L1)
_BLOCK = 512

#: bit lengths up to this compute P(0) = (1 - q)^BL by squaring, longer ones as exp(BL log1p(-q))
_POWER_BL = 64


@numba.njit(cache=True, error_model="numpy")
def _probability(value, dw_min, bl):  # pragma: no cover - compiled
    r""":math:`p = \min(1, (|\Delta w| / \Delta w_{\min}) / BL)` of a desired increment
    (``dw_min > 0``), else ``value`` itself (a nan stays nan, as with numpy's ``minimum``)."""
    if dw_min > 0:
        v = abs(value) / dw_min / bl
        return 1.0 if v > 1.0 else v
    return value


@numba.njit(cache=True, error_model="numpy")
def zero_probability(q, bl):  # pragma: no cover - compiled
    r""":math:`P(0) = (1 - q)^{BL}`: for :math:`BL \le 64` by squaring (the factors
    :math:`(1 - q)^{2^j}` of the set bits of :math:`BL`, lowest first, multiplied in that
    order: relative error at most about :math:`BL\,\epsilon`), else
    :math:`\exp(BL \log(1 - q))` with ``log1p``."""
    if bl > _POWER_BL:
        return math.exp(bl * math.log1p(-q))
    base = 1.0 - q
    out = 1.0
    started = False
    e = bl
    while e:
        if e & 1:
            out = out * base if started else base
            started = True
        e >>= 1
        if e:
            base = base * base
    return out


@numba.njit(cache=True, error_model="numpy")
def _walk(q, x, zero, bl, factor):  # pragma: no cover - compiled
    r"""The count :math:`n = \min\{k : x < P(N \le k)\}` (at most :math:`BL`) of
    Binomial(``bl``, ``q``) by inversion of the uniform ``x``, from :math:`P(0)` = ``zero``:
    :math:`P(k) = P(k-1) \cdot (\frac{q}{1 - q} \cdot \mathrm{factor}[k])`,
    :math:`\mathrm{factor}[k] = (BL - k + 1) / k`, the CDF summed in order (non-decreasing in
    floating point, so the first :math:`k` with :math:`x < P(N \le k)` is the count)."""
    ratio = q / (1.0 - q)
    prob = zero
    cdf = prob
    n = 0
    while n < bl and x >= cdf:
        n += 1
        prob *= ratio * factor[n]
        cdf += prob
    return n


@numba.njit(cache=True, error_model="numpy")
def _factors(bl):  # pragma: no cover - compiled
    """``factor[k] = (bl - k + 1) / k`` for ``k = 1 .. bl - 1`` (each rounded once; at least
    ``_FIRST_STEPS + 1`` entries)."""
    factor = np.ones(max(bl, _FIRST_STEPS + 1))
    for k in range(1, bl):
        factor[k] = (bl - k + 1) / k
    return factor


@numba.njit(cache=True, error_model="numpy")
def binomial_inversion(values, dw_min, bl, u, cut):  # pragma: no cover - compiled
    r"""Binomial(``bl``, ``p``) counts by inversion of one uniform per element.

    ``values`` holds the probabilities :math:`p` (``dw_min <= 0``) or desired increments
    :math:`\Delta w`, whose probabilities are :math:`p = \min(1, (|\Delta w| /
    \Delta w_{\min}) / BL)`. With :math:`q = \min(p, 1 - p)` (``1 - p`` where
    :math:`p > 1/2`, the count then :math:`BL - ` that of :math:`q`): :math:`P(0) = (1-q)^{BL}`
    (:func:`zero_probability`) and the CDF walk of :func:`_walk` with the uniform ``u[i]``.
    An element whose mean count :math:`q\, BL` exceeds ``cut`` is not drawn here (count 0):
    it is listed in ``big`` (ascending) with its ``p`` in ``p_big``, for the caller (numpy's
    ``binomial``). Returns ``(counts, big, p_big)``.
    """
    size = values.size
    factor = _factors(bl)
    counts = np.zeros(size, dtype=np.int64)
    big = np.empty(size, dtype=np.int64)
    p_big = np.empty(size)
    b = 0
    for i in range(size):
        p = _probability(values[i], dw_min, bl)
        flip = p > 0.5
        q = 1.0 - p if flip else p
        if q * bl > cut:
            big[b] = i
            p_big[b] = p
            b += 1
            continue
        n = _walk(q, u[i], zero_probability(q, bl), bl, factor)
        counts[i] = bl - n if flip else n
    return counts, big[:b].copy(), p_big[:b].copy()


@numba.njit(cache=True, error_model="numpy")
def _block_zero_probability(p_block, size_b, bl, short, base, zero):  # pragma: no cover - compiled
    r""":math:`P(0) = (1 - q)^{BL}` of the first ``size_b`` probabilities of ``p_block`` into
    ``zero`` (:func:`zero_probability`; ``base`` is work space): element by element for long
    trains (``bl > _POWER_BL``) or ``short`` ones, else by squaring, one branch-free
    (vectorisable) pass per bit of ``bl``, in the order of :func:`zero_probability`."""
    if bl > _POWER_BL or short:
        for k in range(size_b):
            p = p_block[k]
            q = 1.0 - p if p > 0.5 else p
            zero[k] = zero_probability(q, bl)
    else:  # by squaring, one pass per bit of bl (the order of zero_probability)
        for k in range(size_b):
            p = p_block[k]
            base[k] = 1.0 - (1.0 - p if p > 0.5 else p)
        started = False
        e = bl
        while e:
            if e & 1:
                if started:
                    for k in range(size_b):
                        zero[k] *= base[k]
                else:
                    for k in range(size_b):
                        zero[k] = base[k]
                    started = True
            e >>= 1
            if e:
                for k in range(size_b):
                    base[k] *= base[k]


@numba.njit(cache=True, error_model="numpy")
def _block_counts(p_block, u_b, zero, size_b, bl, short, factor, counts,
                  longer):  # pragma: no cover - compiled
    r"""The counts of the first ``size_b`` elements into ``counts``: the CDF walk of
    :func:`_walk` from ``zero`` (:math:`P(0)`) with the uniforms ``u_b``. Unless ``short``
    (``bl <= _FIRST_STEPS``), the first :data:`_FIRST_STEPS` pmf steps are taken branch-free
    for every element (the same operations as :func:`_walk`, in the same order), and the walk
    goes on element by element only where it did not stop (listed in the work array
    ``longer``)."""
    if short:
        for k in range(size_b):
            p = p_block[k]
            flip = p > 0.5
            n = _walk(1.0 - p if flip else p, u_b[k], zero[k], bl, factor)
            counts[k] = bl - n if flip else n
    else:
        for k in range(size_b):  # the first steps of the walk (vectorisable)
            p = p_block[k]
            flip = p > 0.5
            q = 1.0 - p if flip else p
            ratio = q / (1.0 - q)
            x = u_b[k]
            prob = zero[k]
            cdf = prob
            n = np.int64(x >= cdf)
            for s in range(1, _FIRST_STEPS + 1):  # (unrolled: a constant count)
                prob *= ratio * factor[s]
                cdf += prob
                n += np.int64(x >= cdf)
            counts[k] = n + np.int64(flip) * (bl - 2 * n)
        m = 0
        for k in range(size_b):  # where the walk did not stop
            longer[m] = k
            flip = p_block[k] > 0.5
            m += counts[k] == (bl - _FIRST_STEPS - 1 if flip else _FIRST_STEPS + 1)
        for j in range(m):
            k = longer[j]
            p = p_block[k]
            flip = p > 0.5
            n = _walk(1.0 - p if flip else p, u_b[k], zero[k], bl, factor)
            counts[k] = bl - n if flip else n


@numba.njit(cache=True, error_model="numpy")
def stochastic_affine_update(w, values, u, rows, dw_min, bl, cut, alpha_up, beta_up,
                             alpha_down, beta_down, step, table_up, table_down, lo, hi,
                             scale=1.0, out=None):  # pragma: no cover - compiled
    r"""One ``stochastic`` pulse update of an affine response without noise, fused: counts
    and weights in one call.

    Element :math:`i` with desired increment :math:`\Delta w` = ``scale * values[i]`` (one
    IEEE product, as numpy's ``values * scale``; the default ``scale = 1`` leaves it exact) fires
    :math:`n` pulses, the count of :func:`binomial_inversion` of ``u[i]`` (the same numbers),
    then moves to

    .. math:: w_n = \mathrm{clip}\bigl(T_\pm[n]\, (\pm\Delta w_{\min})(\alpha_\pm +
        \beta_\pm w) + w,\ lo,\ hi\bigr)

    (up where :math:`\Delta w \ge 0`): :meth:`theory.devices.PulseMap.after` with the
    responses :math:`q_\pm(w) = \alpha_\pm + \beta_\pm w` evaluated here and the tables
    :math:`T_\pm[k] = \sum_{j<k} (1 - c_\pm)^j` of the caller (numpy); :math:`T[0] = 0`, so
    an element without a pulse keeps its weight. ``step`` (:math:`\Delta w_{\min}`), ``lo``,
    ``hi`` in weight units.

    The arrays are ``rows`` rows (ensemble members) of equal length, flattened; ``ok[r]`` is
    ``False`` where row ``r`` has a weight outside ``[lo, hi]`` (or not finite) or an element
    of mean count above ``cut``: its ``out`` is then meaningless and the caller takes the
    general path for that row. Blocks of :data:`_BLOCK` elements go through branch-free
    (vectorisable) passes: probabilities, :math:`P(0)` by squaring
    (:func:`_block_zero_probability`), the first :data:`_FIRST_STEPS` pmf steps of the walk
    (the same operations as :func:`_walk`, in the same order; :func:`_block_counts`); then the
    walk goes on element by element where it did not stop, and the closed form. ``out``
    (optional): the result array (flat, the size of ``w``; not ``w`` itself). Returns
    ``(out, ok)``.
    """
    size = w.size
    per = size // rows if rows else 0
    if out is None:
        out = np.empty(size, w.dtype)  # (the weights' dtype: float64 or float32)
    ok = np.ones(rows, dtype=np.bool_)
    factor = _factors(bl)
    short = bl <= _FIRST_STEPS  # (the branch-free steps need bl > _FIRST_STEPS)
    p_block = np.empty(_BLOCK)
    base = np.empty(_BLOCK)
    zero = np.empty(_BLOCK)
    counts = np.empty(_BLOCK, dtype=np.int64)
    longer = np.empty(_BLOCK, dtype=np.int64)
    for r in range(rows):
        big = 0
        bad = 0
        for start in range(r * per, (r + 1) * per, _BLOCK):
            size_b = min(_BLOCK, (r + 1) * per - start)
            w_b = w[start:start + size_b]  # (views: a non-negative index vectorises)
            values_b = values[start:start + size_b]
            u_b = u[start:start + size_b]
            out_b = out[start:start + size_b]
            for k in range(size_b):  # probabilities (vectorisable)
                v = abs(values_b[k] * scale) / dw_min / bl
                p = 1.0 if v > 1.0 else v
                q = 1.0 - p if p > 0.5 else p
                p_block[k] = p
                big += q * bl > cut
            for k in range(size_b):
                x = w_b[k]
                bad += not ((x >= lo) & (x <= hi))
            _block_zero_probability(p_block, size_b, bl, short, base, zero)
            _block_counts(p_block, u_b, zero, size_b, bl, short, factor, counts, longer)
            for k in range(size_b):  # the closed form (clip: the value is finite here)
                x = w_b[k]
                n = counts[k]
                inc_up = table_up[n] * (step * (alpha_up + beta_up * x))
                inc_down = table_down[n] * (-step * (alpha_down + beta_down * x))
                up = values_b[k] * scale >= 0
                out_b[k] = min(max((inc_up if up else inc_down) + x, lo), hi)
        ok[r] = big == 0 and bad == 0
    return out, ok


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
    w_up = np.empty(a + 1, w.dtype)  # (the weights' dtype: float64 or float32)
    down_index = np.empty(d + 1, dtype=np.int64)
    w_down = np.empty(d + 1, w.dtype)
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
    :func:`simulate.device.pulses.apply_pulses`, element by element) at the elements of
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
