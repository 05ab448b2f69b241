"""Firing pulses on a tile: the pulsed update, the closed-form n-pulse sums, the pulse loop."""

from __future__ import annotations

import numpy as np

from theory.devices import PulseMap, geometric_sum
from theory.errors import ParameterError
from theory.limits import MAX_PULSES_PER_UPDATE, check_size

from .catalog import PULSE_METHODS, PULSE_TYPES
from .draws import NOISE_BLOCK, Rng, floating, in_dtype, pulse_noise, uniforms
from .trains import (
    INVERSION_MEAN,
    affine_constants,
    binomial_from_values,
    check_bit_length,
    pulse_counts,
)

__all__ = [
    "MEMBER_BLOCK",
    "apply_pulses",
    "check_pulses",
    "member_blocks",
    "pulsed_update",
    "stochastic_write",
]


def _stochastic_closed_form(w: np.ndarray, dw: np.ndarray, device, rng: Rng, bl: int,
                            scale: float = 1.0, out: np.ndarray | None = None
                            ) -> np.ndarray | None:
    """The ``stochastic`` update of a noise-free affine device without spread by desired
    increments ``scale * dw`` in one compiled call
    (:func:`simulate.device.pulse_kernels.stochastic_affine_update`; into ``out`` if given, a
    C-contiguous array of ``w``'s shape and dtype, float64 or float32), or ``None`` if it does
    not apply (then :func:`pulsed_update` takes the general path; nothing is drawn). A member
    (row) whose weights leave the range or whose mean counts exceed :data:`INVERSION_MEAN` is
    redone by the general path from the same uniforms, so its bits are those it gets alone."""
    from .pulse_kernels import stochastic_affine_update

    one = isinstance(rng, np.random.Generator)
    if w.size == 0 or not (one or (w.ndim >= 2 and len(rng) == w.shape[0])):
        return None
    constants = affine_constants(device, bl)
    if constants is None:
        return None
    flat = np.ascontiguousarray(w).reshape(-1)
    increments = np.ascontiguousarray(dw, dtype=w.dtype).reshape(-1)
    rows = 1 if one else len(rng)
    u = uniforms(rng, w.shape).reshape(-1)
    # the weights' arithmetic in their dtype (float32 or float64; the probabilities in float64)
    constants = in_dtype(constants, w.dtype)
    result, ok = stochastic_affine_update(flat, increments, u, rows, float(device.dw_min), bl,
                                          INVERSION_MEAN, *constants, w.dtype.type(scale),
                                          np.empty_like(flat) if out is None else out.reshape(-1))
    result = result.reshape(w.shape)
    if not ok.all():
        for r in np.flatnonzero(~ok):
            part, g = (slice(None), rng) if one else (slice(r, r + 1), [rng[r]])
            per = u.size // rows
            increment = dw[part] * scale  # (numpy's product: the kernel's, bit for bit)
            counts = binomial_from_values(bl, increment, g, device.dw_min, u[r * per:(r + 1) * per])
            result[part] = apply_pulses(w[part], counts, increment >= 0, device, g,
                                        device.dw_min)
    return result


def stochastic_write(w: np.ndarray, gw: np.ndarray, scale: float, device, rng: Rng,
                     out: np.ndarray) -> bool:
    r"""The ``stochastic`` pulse update of ``w`` by desired increments :math:`\Delta w = s\,g_w`
    (``scale`` :math:`s`), in place and fused: the scaling, the counts and the closed form in one
    compiled call, the same bits as ``pulsed_update(w, s * gw, device, rng,
    pulse_type="stochastic")`` (default closed form, no spread, no BL management); ``gw`` is
    left unchanged.

    Parameters
    ----------
    w, gw : ndarray of shape (R, P)
        Weights (updated in place) and gradients, C-contiguous float64.
    scale : float
        :math:`s`, e.g. :math:`-\alpha`.
    device : theory.devices.Device
    rng : Generator or sequence of Generator
        As :func:`pulsed_update` (one per row for an ensemble).
    out : ndarray
        Work array of ``w``'s shape (C-contiguous float64, not ``w``).

    Returns
    -------
    bool
        ``False`` (nothing drawn, ``w`` unchanged) where the fused call does not apply: a
        device with cycle-to-cycle noise or without affine responses, a rate outside
        :math:`[0, 1)`; the caller then takes the general path.
    """
    if device.dw_min_std != 0:
        return False
    bl = check_bit_length(device.desired_bl, "desired_bl")
    new = _stochastic_closed_form(w, gw, device, rng, bl, scale, out)
    if new is None:
        return False
    np.copyto(w, new)
    return True


def pulsed_update(
    w: np.ndarray,
    dw: np.ndarray,
    device,
    rng: Rng,
    dw_min_scale: np.ndarray | None = None,
    bound_scale: np.ndarray | None = None,
    *,
    lr: float | None = None,
    pulse_type: str = "deterministic",
    bl: int | None = None,
    method: str = "closed-form",
    bl_management: bool = False,
) -> np.ndarray:
    r"""Pulse-level analog update: a pulse count per element, then pulse by pulse with c2c noise.

    The pulse count of an element with desired increment :math:`\Delta w` depends on
    ``pulse_type`` (:data:`PULSE_TYPES`, aihwkit's vocabulary); :math:`x = |\Delta w| /
    \Delta w_{\min}` with the element's own ``dw_min`` (device-to-device scaled) for
    ``deterministic``, the nominal ``dw_min`` for the others (aihwkit scales the trains with the
    tile's nominal granularity):

    - ``deterministic`` (the package's original model; mean and std of aihwkit's
      ``DeterministicImplicit`` to 0.07 % / 1.3 %): stochastic rounding,
      :math:`n = \lfloor x \rfloor + \mathrm{Bernoulli}(x - \lfloor x \rfloor)`, no cap
      (:math:`\mathrm{Var}[n] \le 1/4`);
    - ``stochastic`` (aihwkit's default ``StochasticCompressed``, per device):
      :math:`n \sim \mathrm{Binomial}(BL, p)`, :math:`p = \min(1, x / BL)` (drawn by
      :func:`binomial_counts`; for a noise-free affine device without spreads, fired by the
      closed form, counts and weights come from one compiled call with the responses
      :math:`\alpha_\pm + \beta_\pm w` evaluated there, which may differ from the device's
      compiled responses in the last bit): exactly the count of
      coincidences of an x-train and a d-train of ``BL`` bits with :math:`p_x = p_d = \sqrt{p}`
      (the symmetric factorisation :math:`A|x| = B|d|`), so :math:`E[n] = \min(x, BL)`,
      :math:`\mathrm{Var}[n] = BL\,p(1-p)`. Only ``dW`` is known here, not the ``x`` and ``d`` of
      an outer product, so the correlation between devices sharing a train is not modelled
      (:func:`coincidence_counts` has it for a rank-1 update, which the networks use at one
      sample per update, through :meth:`Updater.fire`);
    - ``mean-count``: :math:`n = \mathrm{rint}(\min(x, BL))`, the expected count without train
      noise (aihwkit ``MeanCount`` up to the rounding of its per-line counts).

    Pulse :math:`p` moves the weight by :math:`\mathrm{sign}(\Delta w)\, \Delta w_{\min}\,
    q_{\mathrm{sign}}(w_p) (1 + \sigma_c \xi_p)` at the weight :math:`w_p` left by the previous
    pulse (``additive`` ``c2c_noise``: :math:`\Delta w_{\min} (\mathrm{sign}(\Delta w)
    q_{\mathrm{sign}}(w_p) + \sigma_c \xi_p)`), clipped at the element's range.

    Parameters
    ----------
    w : ndarray
        Current weights.
    dw : ndarray
        Desired increments (same shape as ``w``).
    device : theory.devices.Device
        Provides ``q_plus``, ``q_minus``, ``dw_min``, ``dw_min_std`` (:math:`\sigma_c`, relative to
        one pulse), ``c2c_noise``, ``desired_bl`` and the bounds.
    rng : Generator or sequence of Generator
        One generator for the whole array, or one per index of the leading (ensemble) axis; member
        ``r`` then draws only from ``rng[r]`` and only as many numbers as its own pulses need.
    dw_min_scale : ndarray, optional
        Fixed per-element device-to-device factor of ``dw_min`` (:func:`draw_dw_min_scale`).
    bound_scale : ndarray, optional
        Fixed per-element device-to-device factor of the weight range (:func:`draw_bound_scale`):
        the response is evaluated at ``w / bound_scale`` and the clip range is scaled.
    lr : float, optional
        The learning rate that made ``dw`` (named in the error below; ``dw`` otherwise).
    pulse_type : {"deterministic", "stochastic", "mean-count"}
        How the pulse count is made (above); default ``deterministic``.
    bl : int, optional
        Bit length :math:`BL` of ``stochastic`` and ``mean-count`` (default
        ``device.desired_bl``): at most ``bl`` pulses per element and update.
    method : {"closed-form", "loop"}
        How the pulses are fired (:func:`apply_pulses`): all at once where the device's
        responses are affine (the default), or one by one.
    bl_management : bool
        aihwkit's BL management for ``stochastic`` and ``mean-count`` (:func:`pulse_counts`,
        per tile). aihwkit's update management has no counterpart here: it splits the
        probability between the x- and the d-train, which only ``dW`` does not determine; it
        leaves :math:`p_x p_d` unchanged unless a train clips, so the per-device count is the
        same (:func:`coincidence_counts` applies it where ``x`` and ``d`` are known).

    Returns
    -------
    ndarray
        The weights after all pulses, each pulse clipped at the element's range.

    Raises
    ------
    ParameterError
        If an element needs more than :data:`theory.limits.MAX_PULSES_PER_UPDATE` pulses
        (:math:`|\Delta w| / \Delta w_{\min}`; ``deterministic`` only, the others fire at most
        ``bl``), before any pulse is fired; it names ``lr``.
    """
    if pulse_type not in PULSE_TYPES:
        raise ParameterError(
            f"pulse_type={pulse_type!r} is unknown; valid: {', '.join(PULSE_TYPES)}"
        )
    w = floating(w)  # (apply_pulses returns a new array)
    dw = np.asarray(dw, dtype=w.dtype)
    if dw.shape != w.shape:
        dw = np.broadcast_to(dw, w.shape)
    step = device.dw_min * (1.0 if dw_min_scale is None else dw_min_scale)
    if pulse_type == "deterministic":
        x = np.abs(dw) / step
        check_pulses(x, dw, lr)
        pulses = pulse_counts(x, rng, pulse_type, 0)
    else:
        bl = check_bit_length(device.desired_bl, "desired_bl") if bl is None else \
            check_bit_length(bl)
        if pulse_type == "stochastic" and not bl_management:  # p from dw in the same pass
            if method == "closed-form" and dw_min_scale is None and bound_scale is None and \
                    device.dw_min_std == 0:
                out = _stochastic_closed_form(w, dw, device, rng, bl)
                if out is not None:
                    return out
            pulses = binomial_from_values(bl, dw, rng, device.dw_min)
        else:
            pulses = pulse_counts(np.abs(dw) / device.dw_min, rng, pulse_type, bl,
                                  bl_management=bl_management)
    return apply_pulses(w, pulses, dw >= 0, device, rng, step, bound_scale, method=method)


def check_pulses(x: np.ndarray, dw: np.ndarray, lr: float | None) -> None:
    """Refuse ``x = |dw| / dw_min`` beyond MAX_PULSES_PER_UPDATE pulses (naming ``lr``)."""
    most = float(np.max(x)) if x.size else 0.0
    if most > MAX_PULSES_PER_UPDATE:  # pulses <= ceil(x): beyond, refuse before looping
        name, value = ("lr", lr) if lr is not None else ("dw", float(np.max(np.abs(dw))))
        check_size(name, value, need=most, limit=MAX_PULSES_PER_UPDATE,
                   what="pulses on one device in one update (|dw| / dw_min)", hint="lower lr")


#: an ensemble's update is computed this many elements' worth of members at a time (about
#: 256 KB per float64 array: the dozens of passes of a pulsed update stay in cache; every pass
#: is element-wise or per member, so the bits are those of one call)
MEMBER_BLOCK = 1 << 15


def member_blocks(w: np.ndarray, rng) -> list[slice] | None:
    """Slices of the ensemble axis of at most about :data:`MEMBER_BLOCK` elements, or ``None``
    (one block) for one generator or a small array."""
    if isinstance(rng, np.random.Generator) or rng is None or w.ndim < 2 or \
            w.size <= MEMBER_BLOCK:
        return None
    per = max(1, MEMBER_BLOCK // max(1, w[0].size))
    blocks = [slice(r, min(r + per, w.shape[0])) for r in range(0, w.shape[0], per)]
    return blocks if len(blocks) > 1 else None


def apply_pulses(w: np.ndarray, pulses: np.ndarray, up: np.ndarray, device, rng: Rng,
                 step, bound_scale: np.ndarray | None = None, *,
                 method: str = "closed-form") -> np.ndarray:
    r"""Fire ``pulses[i]`` pulses on element ``i`` (up where ``up``), in one step or pulse by pulse.

    Pulse :math:`p` of element ``i`` moves it by :math:`\pm\,\Delta w_{\min,i}\, q_\pm(w_p)` with
    the device's cycle-to-cycle noise (:func:`pulsed_update`), clipped at the element's range;
    ``step`` is the element's ``dw_min`` (weight units, device-to-device scaled).

    ``method="closed-form"`` (the default) applies all pulses of an element at once where the
    device's responses are affine (soft bounds, asymmetric soft bounds, linear step, constant
    step; :meth:`theory.devices.Device.pulse_map`), else falls back to the loop; ``"loop"``
    always fires pulse by pulse, one vectorised pass per pulse. With :math:`c` the rate of one
    pulse, :math:`a = 1 - c`, :math:`\mathrm{inc}` the first (noise-free) increment and
    :math:`S_n(c) = \sum_{j<n} (1-c)^j`:

    - **no cycle-to-cycle noise**: :math:`w_n = \mathrm{clip}(w + \mathrm{inc}\, S_n(c))`, the
      exact iterate (equal to the loop up to floating-point rounding, bit for bit for one pulse);
    - **additive** noise :math:`\Delta w_{\min} \sigma_c \xi_p` per pulse: the iterate is the
      affine map plus :math:`\sum_j a^{n-1-j} \Delta w_{\min} \sigma_c \xi_j`, exactly Gaussian
      with variance :math:`\Delta w_{\min}^2 \sigma_c^2 S_n(1 - a^2)`, drawn as one normal per
      element (exact in distribution, not the loop's bits);
    - **multiplicative** noise :math:`\mathrm{inc}(w_p)\, \sigma_c \xi_p`: the distance to the
      fixed point :math:`u = r/c - w` evolves as :math:`u_{p+1} = u_p (a - c \sigma_c \xi_p)`, so
      :math:`E[w_n]` is the noise-free iterate and
      :math:`\mathrm{Var}[w_n] = u_0^2 ((a^2 + c^2 \sigma_c^2)^n - a^{2n})` exactly
      (:math:`n\, \mathrm{inc}^2 \sigma_c^2` at :math:`c = 0`); the closed form draws a Gaussian
      with this mean and variance (**an approximation**: the product of :math:`n` factors near 1
      is close to, not exactly, Gaussian; its mean and standard deviation over many devices are
      tested against the loop);
    - **clipping with noise**: the sum is clipped once at the end. That is exact while each
      increment keeps its sign (the walk is then monotone and sticks at the bound it reaches).
      Under additive noise an element whose walk ends within 6 standard deviations of a bound
      (where a pulse of :math:`q(w) + \sigma_c \xi` may point backwards, as at a soft bound) is
      fired by the loop instead (with its own generator, after the closed form's draw). Under
      multiplicative noise a pulse points backwards only with probability
      :math:`\Phi(-1/\sigma_c)` (4e-4 at :math:`\sigma_c = 0.3`); at a hard bound that is the
      one approximation left (tested: means within 1e-5 of the loop's at 0.3);
    - an element that starts **outside its range** (only possible with a spread of the bounds)
      first gets one noise-free pulse, clipped into the range as the loop's first pulse would be,
      then the closed form of the rest; an element whose pulse would overshoot its fixed point
      (rate :math:`c \ge 1`, possible with device-to-device spreads) is fired by the loop. Each
      such choice is the element's own, so a member's bits do not depend on the others.

    Random numbers: the loop draws the noise of pulse ``p`` as by one draw of every pulse at once
    (in blocks of bounded memory); the closed form draws one standard normal per element. Either
    way member ``r`` of a sequence of generators draws from ``rng[r]`` only, and only if its own
    pulses need it.
    """
    if method not in PULSE_METHODS:
        raise ParameterError(f"method={method!r} is unknown; valid: {', '.join(PULSE_METHODS)}")
    w = floating(w)  # every path below returns a new array
    if pulses.size == 0 or pulses.max() == 0:
        return w.copy()
    out = None
    if method == "closed-form":
        pulse = device.pulse_map(up, step, bound_scale, overshoot=True)
        if pulse is not None and not (isinstance(pulse.rate, float) and pulse.rate >= 1.0):
            out = _closed_form_pulses(w, pulses, up, device, rng, step, bound_scale, pulse)
    if out is None:
        out = _pulse_loop(w, pulses, up, device, rng, step, bound_scale)
    # float32 weights: the paths whose pulse-count tables (geometric sums, spreads) or
    # per-element spreads are float64 compute the weight in float64; it is rounded here
    return out.astype(w.dtype, copy=False)


def _first_increment(w, up, device, signed_step, bound_scale):
    """The noise-free increment of one pulse at ``w`` (as the loop computes it)."""
    v = w if bound_scale is None else w / bound_scale
    return signed_step * np.where(up, device.q_plus(v), device.q_minus(v))


def _closed_form_pulses(w, pulses, up, device, rng, step, bound_scale, pulse) -> np.ndarray:
    """All pulses at once through the affine pulse map (:func:`apply_pulses`); an element whose
    pulse overshoots its fixed point (rate >= 1, only possible with a device-to-device spread)
    is fired by the loop, so the choice is the element's own."""
    if not isinstance(pulse.rate, float):
        over = pulse.rate >= 1.0
        if over.any():
            safe = PulseMap(np.where(over, 0.0, pulse.rate), pulse.lo, pulse.hi)
            out = _closed_form_pulses(w, pulses, up, device, rng, step, bound_scale, safe)
            _loop_where(out, over & (pulses > 0), w, pulses, device, rng, step, bound_scale, up)
            return out
    if device.dw_min_std == 0 and bound_scale is None and np.ndim(step) == 0 and \
            isinstance(pulse.rate, float) and pulses.dtype.kind in "iu":
        out = _affine_after(w, pulses, up, device, float(step), pulse)
        if out is not None:
            return out
    signed_step = np.where(up, step, -step)
    inc = _first_increment(w, up, device, signed_step, bound_scale)
    n = pulses
    # screened by two reductions: only a start outside the element ranges needs the full test
    outside = None
    if w.min() < np.max(pulse.lo) or w.max() > np.min(pulse.hi):
        outside = (w < pulse.lo) | (w > pulse.hi)
    if outside is not None and outside.any():
        # the loop's first pulse clips such an element into its range
        idle = outside & (pulses == 0)
        outside &= pulses > 0
        start, w = w, np.where(outside, np.clip(w + inc, pulse.lo, pulse.hi), w)
        n = n - outside
        inc = _first_increment(w, up, device, signed_step, bound_scale)
        rest = _closed_form_sum(w, n, inc, up, pulses, device, rng, step, bound_scale, pulse)
        return np.where(idle, start, rest)
    return _closed_form_sum(w, n, inc, up, pulses, device, rng, step, bound_scale, pulse)


def _affine_after(w, pulses, up, device, step: float, pulse) -> np.ndarray | None:
    """The noise-free closed form with one rate and one range, compiled
    (:func:`simulate.device.pulse_kernels.affine_apply`; the numbers of :meth:`PulseMap.after` of
    :func:`_first_increment`, with the responses evaluated, by numpy, only where a pulse fires
    or the weight is 0 or not finite), or ``None`` if a weight starts outside the range."""
    from .pulse_kernels import affine_apply, affine_split

    flat = np.ascontiguousarray(w).reshape(-1)
    n = np.ascontiguousarray(pulses, dtype=np.int64).reshape(-1)
    direction = np.asarray(up)
    if direction.shape != w.shape:
        direction = np.broadcast_to(direction, w.shape)
    direction = np.ascontiguousarray(direction).reshape(-1)
    kind = flat.dtype.type  # the arithmetic in the weights' dtype (float32 or float64)
    lo, hi = kind(pulse.lo), kind(pulse.hi)
    up_index, w_up, down_index, w_down, inside, most = affine_split(flat, n, direction, lo, hi)
    if not inside:
        return None
    table = geometric_sum(np.arange(most + 1), pulse.rate)  # PulseMap.per_count's table
    out = affine_apply(flat, n, up_index, device.q_plus(w_up), down_index,
                       device.q_minus(w_down), kind(step), table.astype(kind), lo, hi)
    return out.reshape(w.shape)


#: an element whose noisy walk ends within this many standard deviations of a bound is fired
#: pulse by pulse under additive noise (the walk touches the bound with probability about
#: 2 Phi(-6) = 2e-9 otherwise, and only a touch makes the per-pulse clip differ from the final one)
_NEAR_BOUND_STD = 6.0


def _closed_form_sum(w, n, inc, up, pulses, device, rng, step, bound_scale, pulse) -> np.ndarray:
    """``n`` pulses from ``w`` (inside its range) whose first one moves it by ``inc``."""
    if device.dw_min_std == 0:
        return pulse.after(w, n, inc)
    sigma = device.dw_min_std
    additive = device.c2c_noise == "additive"
    if additive:
        std = np.sqrt(pulse.per_count(_squares_sum, n))
        std *= sigma
        std = std * step
    else:
        std = pulse.per_count(lambda k, c: _multiplicative_spread(k, c, sigma), n)
        std *= np.abs(inc)
    mean = pulse.per_count(geometric_sum, n)
    mean *= inc
    mean += w
    near = None
    if additive:  # a walk that may touch a bound: the loop's per-pulse clip matters there
        reach = _NEAR_BOUND_STD * std
        near = ((np.minimum(w, mean) - reach < pulse.lo) | (np.maximum(w, mean) + reach > pulse.hi))
        near &= n > 0
    mean += std * _member_normals(rng, w.shape, pulses, w.dtype)
    out = np.clip(mean, pulse.lo, pulse.hi, out=mean)
    if near is not None and near.any():
        _loop_where(out, near, w, n, device, rng, step, bound_scale, up)
    return out


def _squares_sum(n, rate):
    r""":math:`\sum_{j<n} a^{2j}`, :math:`a = 1 - c` (the additive noise's variance factor)."""
    return geometric_sum(n, rate * (2.0 - rate))


def _multiplicative_spread(n, rate, sigma):
    r"""The std of ``n`` multiplicative-noise pulses per unit first increment:
    :math:`a^n \sqrt{(1 + (c\sigma/a)^2)^n - 1} / c`, :math:`\sigma \sqrt{n}` at :math:`c = 0`."""
    n = np.asarray(n, dtype=float)
    rate = np.asarray(rate, dtype=float)
    safe = np.where(rate > 0, rate, 1.0)
    growth = np.sqrt(np.expm1(n * np.log1p((safe * sigma / (1.0 - rate)) ** 2)))
    spread = np.where(rate > 0, growth / safe, sigma * np.sqrt(n))
    spread *= np.exp(n * np.log1p(-rate))
    return spread


def _loop_where(out, mask, w, n, device, rng, step, bound_scale, up) -> None:
    """Overwrite ``out[mask]`` with the pulse loop from ``w`` (``n`` pulses); a member of a
    sequence of generators fires its own masked elements with its own generator."""
    step = np.broadcast_to(step, w.shape)
    scale = None if bound_scale is None else np.broadcast_to(bound_scale, w.shape)

    up = np.broadcast_to(up, w.shape)

    def fire(index, g):
        out[index] = _pulse_loop(w[index], n[index].astype(np.int64), up[index], device, g,
                                 step[index], None if scale is None else scale[index])

    if isinstance(rng, np.random.Generator):
        fire(mask, rng)
        return
    for r, g in enumerate(rng):
        if mask[r].any():
            fire((r, mask[r]), g)


def _member_normals(rng: Rng, shape: tuple[int, ...], pulses: np.ndarray,
                    dtype=np.float64) -> np.ndarray:
    """One standard normal per element (in ``dtype``, the weights'); a member of a sequence of
    generators draws its own only if any of its elements fires a pulse (zeros otherwise)."""
    if isinstance(rng, np.random.Generator):
        return rng.standard_normal(shape, dtype)
    if len(rng) != shape[0]:
        raise ParameterError(f"got {len(rng)} generators for an ensemble axis of {shape[0]}")
    out = np.zeros(shape, dtype)
    most = pulses.reshape(len(pulses), -1).max(axis=1)
    for r, g in enumerate(rng):
        if most[r] > 0:
            out[r] = g.standard_normal(shape[1:], dtype)
    return out


def _pulse_loop(w, pulses, up, device, rng, step, bound_scale) -> np.ndarray:
    """Pulse by pulse, one vectorised pass each (:func:`apply_pulses` with ``method="loop"``)."""
    signed_step = np.where(up, step, -step)
    sizes = None
    if device.dw_min_std > 0 and not isinstance(rng, np.random.Generator):
        sizes = pulses.reshape(len(pulses), -1).max(axis=1)
    lo, hi = device.w_min, device.w_max
    if bound_scale is not None:
        lo, hi = lo * bound_scale, hi * bound_scale
    block = max(1, NOISE_BLOCK // max(w.size, 1))  # pulses per noise draw
    for p in range(int(pulses.max())):
        active = pulses > p
        v = w if bound_scale is None else w / bound_scale
        q = np.where(up, device.q_plus(v), device.q_minus(v))
        if device.dw_min_std == 0:
            inc = signed_step * q
        else:
            # drawn a block of pulses at a time: bounded memory, whatever the pulse count
            if p % block == 0:
                count = min(block, int(pulses.max()) - p)
                xi = pulse_noise(rng, w.shape, sizes, p, count, w.dtype)
            noise = device.dw_min_std * xi[p % block]
            if device.c2c_noise == "additive":
                inc = signed_step * q + step * noise
            else:
                inc = signed_step * q * (1.0 + noise)
        w = np.where(active, np.clip(w + inc, lo, hi), w)
    return w
