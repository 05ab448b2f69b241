r"""Compiled (numba) per-sample writes of one layer: ``n`` rank-1 pulse-train updates (one per
sample, in order) in one call (:mod:`simulate.device.sample_writes` calls it).

Sample ``t`` of the batch writes the layer's outer product :math:`-\eta\, h_t dz_t^T` as
aihwkit's bit trains (:func:`simulate.device.trains.coincidence_counts`): an x-train of ``BL``
bits per input column ``j`` (probability :math:`p_{x,j} = \min(1, B|h_{t,j}|)`) and a d-train per
output row ``i`` (:math:`p_{d,i} = \min(1, A|dz_{t,i}|)`), the scales and the bit length from
update and BL management as :func:`simulate.device.trains.train_scales` computes them (the same
IEEE operations, in the same order); device ``(j, i)`` fires one pulse per coincidence, and the
pulses are fired by the closed form of a noise-free affine response
(:func:`simulate.device.pulses.apply_pulses`: :math:`w_n = \mathrm{clip}(T_\pm[n]\,
(\pm\Delta w_{\min})\, q_\pm(w) + w, lo, hi)`, the responses evaluated here with the operations of
their compiled expressions, the tables :math:`T_\pm` from numpy). With cycle-to-cycle noise or a
device-to-device spread (``general``) each element is fired by :func:`_fire_general` instead:
its own granularity, range and rate, the closed form's mean and std (one normal), or pulse by
pulse where the numpy closed form loops. The next sample reads the weights this one left.

Two sources of train bits (``exact``):

- **uniforms** (``exact=True``): one uniform per bit, drawn by the caller in the numpy path's
  order (per sample, per layer in the gradient's order: the ``BL`` bits of every x-train, then
  of every d-train); bit ``k`` is ``u < p``. The counts, the pulses and the weights are then
  those of the numpy path bit for bit (tested), at the numpy path's cost of the draws.
- **draws** (``exact=False``, the fast default): 32-bit draws of the caller's generator (its
  raw 64-bit output, two draws per word), consumed in order, as many as the trains need; draw
  ``k`` is the uniform :math:`u = k\,2^{-32}`. A d-train's number of set
  bits is Binomial(``BL``, ``p``), drawn by inversion of one uniform (the CDF walk of
  :func:`simulate.device.pulse_kernels._walk`, on :math:`\min(p, 1 - p)`), and its positions are a
  uniform subset of that size (Floyd's algorithm, one uniform per position of the smaller of the
  set and the unset bits). Most d-trains are empty: where :math:`u < 1 - BL\,p \le (1 - p)^{BL}`
  the train has no bit without computing :math:`P(0)` (one branch-free pass over the rows; the
  others invert the same uniform). Only the
  positions where some d-train of the sample has a bit can make a coincidence, so each x-train
  draws only those bits, one draw each, position by position over all x-trains (``k <
  ceil(p 2^32)``, exactly :math:`u < p`, as one vectorised integer comparison; also where ``p`` is
  0 or 1). The bits are Bernoulli and independent in distribution up to the rounding of the CDF
  and the 32-bit grid of the uniforms: :math:`P(u < p) = \lceil p\,2^{32}\rceil 2^{-32}`, within
  :math:`2^{-32} \approx 2.3\cdot 10^{-10}` of ``p`` (a cell of the CDF or of Floyd's choice
  likewise), against a train's own resolution of :math:`1/BL \ge 2^{-6}` per bit and a bit's
  std :math:`\sqrt{p(1-p)}`; the numpy path's float64 uniforms are on a :math:`2^{-53}` grid.
  The draws are about 12 times fewer than the numpy path's uniforms on the digits MLP (25 times
  fewer generator words). Not the numpy path's bits.

No ``fastmath``; ``error_model="numpy"``; ``cache=True``. The kernel draws nothing: the uniforms
of both modes come from the callers' generators, in their order.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .pulse_kernels import zero_probability

__all__ = ["layer_sample_writes", "train_masks"]

_ONE = np.uint64(1)
_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)

#: ``kind`` of a layer: stochastic trains, mean-count trains, digital (``w + dw``)
STOCHASTIC, MEAN_COUNT, DIGITAL = 0, 1, 2


@numba.njit(cache=True, inline="always")
def _popcount(x):  # pragma: no cover - compiled
    """Set bits of a uint64 (SWAR)."""
    x = x - ((x >> _ONE) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return np.int64((x * _H01) >> np.uint64(56))


@numba.njit(cache=True, inline="always")
def _row_hits(x_mask, rows, fan_in, hits, hit_counts):  # pragma: no cover - compiled
    """The columns with a coincidence of the d bits ``rows`` (one row) and their x-trains
    ``x_mask``: their indices in ``hits`` and counts (popcount) in ``hit_counts``, listed
    branch-free; returns how many."""
    n_hits = 0
    for j in range(fan_in):
        count = _popcount(x_mask[j] & rows)
        hits[n_hits] = j
        hit_counts[n_hits] = count
        n_hits += count > 0
    return n_hits


@numba.njit(cache=True, inline="always")
def _row_share(bl, scale_d, di):  # pragma: no cover - compiled
    """``mean-count``: the share ``c_d / BL`` of the x-trains' pulses that row ``d = di`` takes
    (``c_d`` its d-train's count, rounded to the nearest of ``0..BL``); 0 (or ``nan``) fires
    nothing."""
    c_d = min(max(np.rint(bl * _probability(scale_d, di)), 0.0), bl)
    return c_d / bl


@numba.njit(cache=True, inline="always")
def _element(idx, dw_min, per_step, step_scale, per_bound, bound_scale, w_lo, w_hi
             ):  # pragma: no cover - compiled
    """One element's pulse granularity, range scale and range ``(step, scale, lo, hi)``: the
    device's, scaled by the member's device-to-device spread where there is one."""
    step = dw_min * step_scale[idx] if per_step else dw_min
    scale = bound_scale[idx] if per_bound else 1.0
    lo, hi = (w_lo * scale, w_hi * scale) if per_bound else (w_lo, w_hi)
    return step, scale, lo, hi


@numba.njit(cache=True, inline="always")
def _full(m):  # pragma: no cover - compiled
    """The mask of the lowest ``m`` bits (``m <= 64``)."""
    if m >= 64:
        return ~np.uint64(0)
    return (_ONE << np.uint64(m)) - _ONE


#: the 32-bit draws' range: draw ``k`` is the uniform ``k / 2^32`` on ``[0, 1)`` (exact in float64)
_TWO32 = 2.0 ** 32
_U32 = 1.0 / _TWO32


@numba.njit(cache=True, inline="always")
def _uniform(draws, k):  # pragma: no cover - compiled
    r"""Draw ``k`` (a uint32 of the generator's raw bits) as a uniform :math:`k\,2^{-32}`."""
    return draws[k] * _U32


@numba.njit(cache=True, inline="always", error_model="numpy")
def _threshold(p):  # pragma: no cover - compiled
    r"""The integer threshold of a Bernoulli(``p``) on a 32-bit draw ``k``: ``k < ceil(p 2^32)``
    exactly where :math:`k\,2^{-32} < p` (``p 2^32`` is exact); 0 for ``p`` nan or ``<= 0``."""
    return np.int64(math.ceil(p * _TWO32)) if p > 0.0 else np.int64(0)


@numba.njit(cache=True, inline="always", error_model="numpy")
def _subset(c, m, draws, pos):  # pragma: no cover - compiled
    """A uniformly random ``c``-subset of the bits ``0 .. m-1`` (Floyd's algorithm, one uniform per
    element); returns ``(mask, pos)``."""
    mask = np.uint64(0)
    for j in range(m - c, m):
        t = np.int64(math.floor(_uniform(draws, pos) * (j + 1)))
        pos += 1
        t = min(t, j)
        bit = _ONE << np.uint64(t)
        if mask & bit:
            mask |= _ONE << np.uint64(j)
        else:
            mask |= bit
    return mask, pos


@numba.njit(cache=True, inline="always", error_model="numpy")
def _count(p, m, x):  # pragma: no cover - compiled
    """The Binomial(``m``, ``p``) count inverting the uniform ``x`` (the CDF walk), ``p <= 1/2``."""
    prob = zero_probability(p, m)
    cdf = prob
    ratio = p / (1.0 - p)
    n = 0
    while n < m and x >= cdf:
        n += 1
        prob *= ratio * ((m - n + 1) / n)
        cdf += prob
    return n


@numba.njit(cache=True, inline="always", error_model="numpy")
def _with_ones(ones, m, draws, pos):  # pragma: no cover - compiled
    """A uniformly random ``m``-bit train with ``ones`` set bits: :func:`_subset` of the set or
    of the unset bits, whichever is smaller. Returns ``(mask, pos)``."""
    if ones <= m - ones:
        return _subset(ones, m, draws, pos)
    zeros, pos = _subset(m - ones, m, draws, pos)
    return _full(m) ^ zeros, pos


@numba.njit(cache=True, inline="always", error_model="numpy")
def _train_from(p, m, x, draws, pos):  # pragma: no cover - compiled
    r""":func:`_train` of ``p <= 1/2`` whose count is the inversion of the given uniform ``x``
    (the positions from the draws at ``pos``). Returns ``(mask, pos)``."""
    return _with_ones(_count(p, m, x), m, draws, pos)


@numba.njit(cache=True, inline="always", error_model="numpy")
def _train(p, m, draws, pos):  # pragma: no cover - compiled
    r"""``m`` independent Bernoulli(``p``) bits from the draws at ``pos``: the count by inversion
    of one uniform (Binomial(``m``, :math:`\min(p, 1-p)`), :func:`_count`), then the positions
    (:func:`_with_ones`). ``p`` nan or :math:`\le 0`: no bit, no draw. Returns ``(mask, pos)``."""
    if not p > 0.0:
        return np.uint64(0), pos
    flip = p > 0.5
    n = _count(1.0 - p if flip else p, m, _uniform(draws, pos))
    return _with_ones(m - n if flip else n, m, draws, pos + 1)


@numba.njit(cache=True, inline="always", error_model="numpy")
def _scales(x, d, lr, dw_min, desired_bl, um, blm):  # pragma: no cover - compiled
    r"""``(bl, scale_x, scale_d)`` of one rank-1 update: :func:`simulate.device.trains.train_scales`
    with ``fixed_bl`` (the IEEE operations of its Python floats, in order); ``bl = 0`` where
    a management sees a zero maximum."""
    bl = desired_bl
    a = math.sqrt(lr / (dw_min * bl))
    if not (um or blm):
        return bl, a, a
    x_max = 0.0
    for j in range(x.size):
        x_max = max(x_max, abs(x[j]))
    d_max = 0.0
    for i in range(d.size):
        d_max = max(d_max, abs(d[i]))
    if x_max == 0.0 or d_max == 0.0:
        return 0, 1.0, 1.0
    d_val = 1.0 * d_max
    k = lr * x_max * d_val / dw_min
    b = a
    if blm:
        bl = desired_bl if k >= desired_bl else min(np.int64(math.ceil(k)), desired_bl)
        a = math.sqrt(lr / (dw_min * bl))
        b = a
    if um:
        if k > desired_bl:
            d_val *= desired_bl / k
        a *= math.sqrt(x_max / d_val)
        b *= math.sqrt(d_val / x_max)
    return bl, b, a


@numba.njit(cache=True, inline="always", error_model="numpy")
def _probability(scale, value):  # pragma: no cover - compiled
    """:math:`\\min(1, s|v|)` as numpy's ``minimum(1.0, s * abs(v))`` (nan stays nan)."""
    v = scale * abs(value)
    return 1.0 if v > 1.0 else v


@numba.njit(cache=True, inline="always", error_model="numpy")
def train_masks(x, d, scale_x, scale_d, bl, exact, u, off, draws, pos, x_mask, d_mask,
                thresholds, listed):  # pragma: no cover - compiled
    r"""The x- and d-trains of one rank-1 update as bit masks (bit ``k``: pulse slot ``k``) into
    ``x_mask`` ``(x.size,)`` and ``d_mask`` ``(d.size,)``: from the uniforms ``u`` at ``off``
    (``exact``: every bit ``u < p``, x-trains first, row-major) or from the draws at ``pos``
    (d-trains by count and positions, then each x-train at the d-trains' union only;
    ``thresholds`` (``x.size``) and ``listed`` (``d.size``), int64, are work space).
    Returns the position after the last uniform read (``pos`` when ``exact``)."""
    if exact:
        for j in range(x.size):
            p = _probability(scale_x, x[j])
            mask = np.uint64(0)
            for k in range(bl):
                if u[off + j * bl + k] < p:
                    mask |= _ONE << np.uint64(k)
            x_mask[j] = mask
        base = off + x.size * bl
        for i in range(d.size):
            p = _probability(scale_d, d[i])
            mask = np.uint64(0)
            for k in range(bl):
                if u[base + i * bl + k] < p:
                    mask |= _ONE << np.uint64(k)
            d_mask[i] = mask
        return pos
    # one uniform per d-train: below 1 - BL p <= (1 - p)^BL = P(0) the train is empty (a
    # branch-free pass); the others (``listed``) are drawn in a second
    m = 0
    for i in range(d.size):
        p = _probability(scale_d, d[i])
        empty = (_uniform(draws, pos + i) < 1.0 - bl * p) | (not p > 0.0)
        d_mask[i] = 0
        listed[m] = i
        m += not empty
    start = pos
    pos += d.size
    union = np.uint64(0)
    for k in range(m):
        i = listed[k]
        p = _probability(scale_d, d[i])
        if p <= 0.5:  # the count by inversion of the same uniform (exact P(0) now)
            mask, pos = _train_from(p, bl, _uniform(draws, start + i), draws, pos)
        else:
            mask, pos = _train(p, bl, draws, pos)
        d_mask[i] = mask
        union |= mask
    # each x-train at the union's positions only, lane by lane: one draw per bit (a vectorised
    # integer comparison; p <= 0 or nan sets none, p >= 1 all)
    for j in range(x.size):
        thresholds[j] = _threshold(_probability(scale_x, x[j]))
        x_mask[j] = 0
    rest = union
    while rest:
        bit = rest & (~rest + _ONE)
        rest ^= bit
        for j in range(x.size):
            x_mask[j] |= bit * np.uint64(draws[pos + j] < thresholds[j])
        pos += x.size
    return pos


@numba.njit(cache=True, inline="always", error_model="numpy")
def _fire(w, r, base, fan_out, j, i, count, v, resp, step, t_up, t_down, lo, hi
          ):  # pragma: no cover - compiled
    r"""``count`` pulses on weight ``(j, i)`` of member ``r`` (flat index ``base + j fan_out + i``)
    in the direction of the desired increment ``v``; returns the new weight. The response
    :math:`q = s (1 - (g w)/d)` with ``resp = (s+, g+, d+, s-, g-, d-)`` (the operations of the
    families' compiled expressions: :func:`simulate.device.sample_writes.response_constants`)."""
    idx = base + j * fan_out + i
    x = w[r, idx]
    if v >= 0:
        q = resp[0] * (1.0 - (resp[1] * x) / resp[2])
        new = t_up[count] * (step * q) + x
    else:
        q = resp[3] * (1.0 - (resp[4] * x) / resp[5])
        new = t_down[count] * (-step * q) + x
    new = lo if new < lo else (hi if new > hi else new)
    w[r, idx] = new
    return new


@numba.njit(cache=True, inline="always", error_model="numpy")
def _fire_rows(w, base, fan_in, fan_out, x, d, lr, x_mask, d_mask, active, m, resp, step, t_up,
               t_down, lo, hi, a, b, hits, hit_counts):  # pragma: no cover - compiled
    r"""The coincidences of one sample at the ``m`` rows ``active`` (those with a d bit), fired
    (:func:`_fire`'s numbers): per row, the counts of every column by popcount and the columns
    with a pulse listed (branch-free, in ``hits`` / ``hit_counts``), then those fired; ``w`` is
    the member's flat row. Returns the running extremes ``(a, b)`` lowered / raised by the
    weights written."""
    s_up, g_up, e_up, s_down, g_down, e_down = resp[0], resp[1], resp[2], resp[3], resp[4], resp[5]
    for k in range(m):
        i = active[k]
        rows = d_mask[i]
        n_hits = _row_hits(x_mask, rows, fan_in, hits, hit_counts)
        di = d[i]
        for e in range(n_hits):
            j = hits[e]
            count = hit_counts[e]
            idx = base + j * fan_out + i
            old = w[idx]
            up = (x[j] * di) * (-lr) >= 0  # (selects, not branches: the sign is random)
            s_q = s_up if up else s_down
            g_q = g_up if up else g_down
            e_q = e_up if up else e_down
            signed = step if up else -step
            table = t_up[count] if up else t_down[count]
            q = s_q * (1.0 - (g_q * old) / e_q)
            new = table * (signed * q) + old
            new = lo if new < lo else (hi if new > hi else new)
            w[idx] = new
            a = min(a, new)
            b = max(b, new)
    return a, b


@numba.njit(cache=True, inline="always", error_model="numpy")
def _geometric(n, rate):  # pragma: no cover - compiled
    r""":func:`theory.devices.geometric_sum` of one count and rate (its operations):
    ``-expm1(n log1p(-c)) / c``, exactly ``n`` for ``n <= 1`` or ``c <= 0``."""
    if rate > 0.0 and n > 1:
        return -math.expm1(n * math.log1p(-rate)) / rate
    return float(n)


@numba.njit(cache=True, inline="always", error_model="numpy")
def _spread_std(n, rate, sigma):  # pragma: no cover - compiled
    r"""The std of ``n`` multiplicative-noise pulses per unit first increment
    (:func:`simulate.device.pulses._multiplicative_spread`, its operations)."""
    if rate > 0.0:
        growth = math.sqrt(math.expm1(n * math.log1p((rate * sigma / (1.0 - rate)) ** 2)))
        spread = growth / rate
    else:
        spread = sigma * math.sqrt(n)
    return spread * math.exp(n * math.log1p(-rate))


@numba.njit(cache=True, inline="always", error_model="numpy")
def _increment(x, signed, scale, s, g, e):  # pragma: no cover - compiled
    """One noise-free pulse's increment at ``x`` (range scale ``scale``):
    ``signed q(x / scale)``."""
    return signed * (s * (1.0 - (g * (x / scale)) / e))


@numba.njit(cache=True, error_model="numpy")
def _fire_general(x, count, up, step, scale, resp, slopes, lo, hi, sigma, additive, normals,
                  npos):  # pragma: no cover - compiled
    r"""``count`` pulses from ``x`` on one element of granularity ``step`` and range scale
    ``scale`` (range ``[lo, hi]``, responses :math:`q_\pm(w / s)`) with cycle-to-cycle noise
    ``sigma`` (``additive`` or multiplicative), as :func:`simulate.device.pulses.apply_pulses`'
    closed form fires them: an element outside its range first gets one noise-free pulse clipped
    into it; rate :math:`c = \Delta w\, |\beta| / s \ge 1` fires pulse by pulse; else the mean
    :math:`w + \mathrm{inc}\, S_n(c)` plus its std times one normal (the additive walk ending
    within six std of a bound pulse by pulse), clipped. The normals are read from ``normals`` at
    ``npos``. Returns ``(new, npos)``."""
    k = 0 if up else 3
    s, g, e = resp[k], resp[k + 1], resp[k + 2]
    signed = step if up else -step
    rate = (step * (slopes[0] if up else slopes[1])) / scale
    n = count
    if not rate < 1.0:
        loop = True
    else:
        inc = _increment(x, signed, scale, s, g, e)
        if x < lo or x > hi:  # the loop's first pulse clips it into the range (noise-free)
            x = x + inc
            x = lo if x < lo else (hi if x > hi else x)
            n -= 1
            if n == 0:
                return x, npos
            inc = _increment(x, signed, scale, s, g, e)
        mean = _geometric(n, rate) * inc + x
        if sigma == 0.0:
            return (lo if mean < lo else (hi if mean > hi else mean)), npos
        if additive:
            std = math.sqrt(_geometric(n, rate * (2.0 - rate))) * sigma * step
            reach = 6.0 * std
            loop = min(x, mean) - reach < lo or max(x, mean) + reach > hi
        else:
            std = _spread_std(n, rate, sigma) * abs(inc)
            loop = False
        if not loop:
            mean += std * normals[npos]
            return (lo if mean < lo else (hi if mean > hi else mean)), npos + 1
    for _ in range(n):  # pulse by pulse (simulate.device.pulses._pulse_loop)
        q = s * (1.0 - (g * (x / scale)) / e)
        if sigma == 0.0:
            inc = signed * q
        else:
            noise = sigma * normals[npos]
            npos += 1
            inc = signed * q + step * noise if additive else signed * q * (1.0 + noise)
        x = x + inc
        x = lo if x < lo else (hi if x > hi else x)
    return x, npos


@numba.njit(cache=True, error_model="numpy")
def _fire_rows_general(w, base, fan_in, fan_out, x, d, lr, x_mask, d_mask, active, m, resp,
                       slopes, dw_min, sigma, additive, per_step, step_scale, per_bound,
                       bound_scale, w_lo, w_hi, normals, npos, a, b, hits, hit_counts
                       ):  # pragma: no cover - compiled
    r""":func:`_fire_rows` with per-element granularity ``dw_min * step_scale`` (``per_step``)
    and range scale ``bound_scale`` (``per_bound``; both the member's flat rows) and noise, each
    element fired by :func:`_fire_general`. Returns ``(a, b, npos)``."""
    for k in range(m):
        i = active[k]
        rows = d_mask[i]
        n_hits = _row_hits(x_mask, rows, fan_in, hits, hit_counts)
        di = d[i]
        for e in range(n_hits):
            j = hits[e]
            idx = base + j * fan_out + i
            step, scale, lo, hi = _element(idx, dw_min, per_step, step_scale, per_bound,
                                           bound_scale, w_lo, w_hi)
            new, npos = _fire_general(w[idx], hit_counts[e], (x[j] * di) * (-lr) >= 0, step,
                                      scale, resp, slopes, lo, hi, sigma, additive, normals,
                                      npos)
            w[idx] = new
            a = min(a, w[idx])
            b = max(b, w[idx])
    return a, b, npos


@numba.njit(cache=True, inline="always", error_model="numpy")
def _mean_count(w, r, base, fan_in, fan_out, x, d, lr, bl, scale_d, x_count, resp, step, t_up,
                t_down, lo, hi, a, b):  # pragma: no cover - compiled
    """The ``mean-count`` pulses of one sample of member ``r`` (``x_count``: the x-trains'
    counts), fired by :func:`_fire`. Returns the running extremes ``(a, b)``."""
    for i in range(fan_out):
        row_share = _row_share(bl, scale_d, d[i])
        if not row_share > 0:
            continue
        for j in range(fan_in):
            count = np.int64(np.rint(row_share * x_count[j]))
            if count > 0:
                new = _fire(w, r, base, fan_out, j, i, count, (x[j] * d[i]) * (-lr), resp, step,
                            t_up, t_down, lo, hi)
                a = min(a, new)
                b = max(b, new)
    return a, b


@numba.njit(cache=True, error_model="numpy")
def _mean_count_general(w, base, fan_in, fan_out, x, d, lr, bl, scale_d, x_count, resp, slopes,
                        dw_min, sigma, additive, per_step, step_scale, per_bound, bound_scale,
                        w_lo, w_hi, normals, npos, a, b):  # pragma: no cover - compiled
    """The ``mean-count`` pulses of one sample (the counts of :func:`layer_sample_writes`), each
    element fired by :func:`_fire_general` (arguments as :func:`_fire_rows_general`). Returns
    ``(a, b, npos)``."""
    for i in range(fan_out):
        row_share = _row_share(bl, scale_d, d[i])
        if not row_share > 0:
            continue
        for j in range(fan_in):
            count = np.int64(np.rint(row_share * x_count[j]))
            if count > 0:
                idx = base + j * fan_out + i
                step, scale, lo, hi = _element(idx, dw_min, per_step, step_scale, per_bound,
                                               bound_scale, w_lo, w_hi)
                new, npos = _fire_general(w[idx], count, (x[j] * d[i]) * (-lr) >= 0, step,
                                          scale, resp, slopes, lo, hi, sigma, additive, normals,
                                          npos)
                w[idx] = new
                a = min(a, w[idx])
                b = max(b, w[idx])
    return a, b, npos


@numba.njit(cache=True, error_model="numpy")
def layer_sample_writes(w, base, h, dz, kind, lr, dw_min, desired_bl, um, blm, resp, step,
                        t_up, t_down, lo, hi, exact, u, u_off, draws, cursor, worst, start_r,
                        start_t, w_min, w_max, general, noise, scales, normals, ncursor,
                        nworst):  # pragma: no cover - compiled
    r"""The ``n`` per-sample writes of one layer for every member, in place.

    Parameters
    ----------
    w : float64 (R, P), C-contiguous
        All weights; the layer's ``(fan_in, fan_out)`` block of member ``r`` starts at
        ``w[r, base]``.
    h, dz : float64 (R, n, fan_in), (R, n, fan_out), C-contiguous
        The layer's inputs and errors per sample (:math:`-\eta\, h_t dz_t^T` is sample ``t``'s
        desired increment).
    kind : int
        ``STOCHASTIC`` (0), ``MEAN_COUNT`` (1), or ``DIGITAL`` (2: ``w + dw`` per sample, no
        trains).
    lr, dw_min, desired_bl, um, blm
        The trains' learning rate, nominal granularity, bit length and managements.
    resp, step, t_up, t_down, lo, hi
        Responses (:func:`_fire`), ``dw_min`` of the pulses, the tables :math:`T_\pm[c]`
        (``c = 0 .. desired_bl``), the range.
    exact, u, u_off
        Uniform bits: ``u`` (R, U) and the offset ``u_off[r, t]`` of sample ``t``'s trains.
    draws, cursor, worst
        Drawn bits: ``draws`` (R, S) float64 uniforms, ``cursor[r]`` the next unread one (advanced),
        ``worst`` the most draws one sample can read.
    start_r, start_t
        Where to start (a call that stopped resumes there).
    w_min, w_max : float64 (R,)
        Running extremes, lowered / raised by every weight written.
    general, noise, scales, normals, ncursor, nworst
        ``general``: every element fired by :func:`_fire_general` (``noise`` =
        :math:`(-\beta_+, \beta_-, \sigma_c, \mathrm{additive})`, ``scales`` (2, R, P) the
        factors of ``dw_min`` and of the range, or (2, 1, 0): none), normals (R, S') read from
        ``ncursor[r]`` on, ``nworst`` the most one sample reads.

    Returns
    -------
    (int, int)
        ``(-1, -1)`` when done; else ``(r, t)``, where member ``r`` stopped before sample ``t``
        because fewer than ``worst`` draws (or ``nworst`` normals, where there is noise) were
        left (the caller refills and calls again).
    """
    members, n, fan_in = h.shape
    fan_out = dz.shape[2]
    active = np.empty(fan_out, dtype=np.int64)
    thresholds = np.empty(fan_in, dtype=np.int64)
    x_count = np.empty(fan_in)
    hits = np.empty(fan_in, dtype=np.int64)
    hit_counts = np.empty(fan_in, dtype=np.int64)
    x_mask = np.empty(fan_in, dtype=np.uint64)
    d_mask = np.empty(fan_out, dtype=np.uint64)
    size = draws.shape[1]
    nsize = normals.shape[1]
    slopes, sigma, additive = noise[:2], noise[2], noise[3] != 0.0
    per_step = per_bound = scales.shape[2] > 0
    noisy = general and sigma != 0.0
    for r in range(start_r, members):
        a, b = w_min[r], w_max[r]
        pos = cursor[r]
        npos = ncursor[r]
        steps = scales[0, r] if per_step else scales[0, 0]
        ranges = scales[1, r] if per_bound else scales[1, 0]
        for t in range(start_t if r == start_r else 0, n):
            x = h[r, t]
            d = dz[r, t]
            if kind == DIGITAL:
                for j in range(fan_in):
                    for i in range(fan_out):
                        idx = base + j * fan_out + i
                        new = w[r, idx] + (x[j] * d[i]) * (-lr)
                        w[r, idx] = new
                        a = min(a, new)
                        b = max(b, new)
                continue
            bl, scale_x, scale_d = _scales(x, d, lr, dw_min, desired_bl, um, blm)
            if bl == 0:
                continue
            if noisy and nsize - npos < nworst:
                cursor[r], ncursor[r] = pos, npos
                w_min[r], w_max[r] = a, b
                return r, t
            if kind == MEAN_COUNT:
                for j in range(fan_in):
                    x_count[j] = min(max(np.rint(bl * _probability(scale_x, x[j])), 0.0), bl)
                if general:
                    a, b, npos = _mean_count_general(
                        w[r], base, fan_in, fan_out, x, d, lr, bl, scale_d, x_count, resp,
                        slopes, dw_min, sigma, additive, per_step, steps, per_bound, ranges, lo,
                        hi, normals[r], npos, a, b)
                    continue
                a, b = _mean_count(w, r, base, fan_in, fan_out, x, d, lr, bl, scale_d, x_count,
                                   resp, step, t_up, t_down, lo, hi, a, b)
                continue
            if not exact and size - pos < worst:
                cursor[r], ncursor[r] = pos, npos
                w_min[r], w_max[r] = a, b
                return r, t
            pos = train_masks(x, d, scale_x, scale_d, bl, exact, u[r],
                              u_off[r, t] if exact else 0, draws[r], pos, x_mask, d_mask,
                              thresholds, active)
            m = 0
            for i in range(fan_out):  # the rows with a d bit (branch-free appends)
                active[m] = i
                m += d_mask[i] != 0
            if m and general:
                a, b, npos = _fire_rows_general(
                    w[r], base, fan_in, fan_out, x, d, lr, x_mask, d_mask, active, m, resp,
                    slopes, dw_min, sigma, additive, per_step, steps, per_bound, ranges, lo, hi,
                    normals[r], npos, a, b, hits, hit_counts)
            elif m:
                a, b = _fire_rows(w[r], base, fan_in, fan_out, x, d, lr, x_mask, d_mask, active,
                                  m, resp, step, t_up, t_down, lo, hi, a, b, hits, hit_counts)
        cursor[r] = pos
        ncursor[r] = npos
        w_min[r], w_max[r] = a, b
    return -1, -1
