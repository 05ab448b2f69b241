r"""Per-sample pulse-train writes, compiled: a batch's ``n`` rank-1 updates of each layer in one
call (:func:`simulate.device.sample_kernels.layer_sample_writes`).

A crossbar, and aihwkit, write a mini-batch as one rank-1 update per sample: sample ``t`` fires
aihwkit's bit trains on each layer's outer product :math:`-\eta\, h_t dz_t^T`
(:func:`simulate.device.trains.coincidence_counts`), the pulses through the device at the
weights sample ``t - 1`` left. :class:`SampleWrites` does that for a whole batch and every layer
where the device allows it (the ``stochastic`` and ``mean-count`` pulse types, an affine
response (soft bounds, asymmetric soft bounds, linear step, constant step) fired by the closed
form, ``desired_bl <= 64``), with or without cycle-to-cycle noise (multiplicative or additive) and
device-to-device spreads of ``dw_min`` and of the range; elsewhere the caller keeps the numpy path
(:mod:`simulate.problems.network_run`), which is also the tests' reference.

Noise and spreads. Each element is fired as :func:`simulate.device.pulses.apply_pulses`' closed
form fires it (``sample_kernels._fire_general``): its own granularity and range, a start outside
its range first clipped by one noise-free pulse, the mean :math:`w + \mathrm{inc}\, S_n(c)` plus
the closed form's std times one standard normal (multiplicative noise: its Gaussian
approximation; additive: exact), and pulse by pulse, one normal per pulse, where the numpy path
loops (a rate :math:`c \ge 1`; an additive walk ending within six std of a bound). The normals
come from per-member buffers (:attr:`SampleWrites.normals`, ``standard_normal``), one per
element fired, not the numpy path's one per weight and sample, so under noise both pulse types
have other bits than the numpy path and its distribution (tested: the mean and variance of every
weight after a write). With a spread and no noise, ``mean-count`` and the exact mode give the
numpy path's weights up to the last bits of ``expm1`` / ``log1p`` (numpy's SIMD versions against
libm's; 4 ulp, tested) and its draws.

Bits. ``mean-count`` draws nothing and gives the numpy path's bits. ``stochastic`` with
``exact=True`` draws one uniform per train bit in the numpy path's order and gives its bits too
(tested), at its cost (a million draws per update of the digits MLP at ``b = 32``). The default
(``exact=False``) draws each d-train by its count and positions and each x-train only where a
d-train has a bit (:mod:`simulate.device.sample_kernels`): the same distribution (each train bit
Bernoulli(``p``), independent, trains shared along rows and columns; tested against the moments of
the counts), about 12 times fewer draws (the digits MLP), other bits. Its uniforms are 32-bit
draws of the members' generators (``bit_generator.random_raw``, each 64-bit word two draws,
drawn into a buffer per member, :attr:`SampleWrites.draws`, refilled in blocks; a grid of
:math:`2^{-32}`, so each Bernoulli is exact to :math:`2^{-32}`:
:mod:`simulate.device.sample_kernels`): a member's bits depend on its own generator only.
(32-bit draws, not float32 uniforms: float32's :math:`2^{-24}` grid would do too, but numpy
draws those at 1.5-2 ns each here against about 1 ns per 32-bit draw, the copy into the buffer
included, measured.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from theory.devices import geometric_sum

from .sample_kernels import DIGITAL, MEAN_COUNT, STOCHASTIC, layer_sample_writes
from .trains import train_scales

__all__ = ["SampleLayer", "SampleWrites", "response_constants", "train_tables"]

#: the most bits of one train the kernel holds (one 64-bit word)
MAX_KERNEL_BL = 64
#: uniforms (32-bit draws) per member buffer at least (256 KiB); four samples' worst case of the
#: widest layer if more
BUFFER_WORDS = 1 << 16


class SampleLayer(NamedTuple):
    """One layer of a per-sample write: its block of the flat weights starts at column ``base``
    (``(fan_in, fan_out)``, row-major), ``h`` ``(R, n, fan_in)`` and ``dz`` ``(R, n, fan_out)``
    are its factors, and ``digital`` layers take ``w + dw`` (mixed pipelines)."""

    base: int
    h: np.ndarray
    dz: np.ndarray
    digital: bool = False


def response_constants(device) -> np.ndarray | None:
    r"""``(s+, g+, d+, s-, g-, d-)`` with :math:`q_\pm(w) = s_\pm (1 - (g_\pm w) / d_\pm)` computed
    with the same IEEE operations as the family's compiled expression (``1 - w/tau``,
    ``1 + w/tau`` = ``1 - w/(-tau)``, ``up*(-w/w_max + 1)``, ``-gamma*w/w_max + 1``, the constant
    ``up``), or ``None`` for another family or where the bits differ on probe weights."""
    family, params = device.family, device.response.params()
    if family == "softbounds":
        tau = params["tau"]
        resp = (1.0, 1.0, tau, 1.0, 1.0, -tau)
    elif family == "asymmetric-softbounds":
        resp = (params["up"], 1.0, params["w_max"], params["down"], 1.0, params["w_min"])
    elif family == "linear-step":
        resp = (1.0, params["gamma_up"], params["w_max"], 1.0, params["gamma_down"],
                params["w_min"])
    elif family == "constant-step":
        resp = (params["up"], 0.0, 1.0, params["down"], 0.0, 1.0)
    else:
        return None
    resp = np.array(resp, dtype=float)
    lo, hi = device.w_min, device.w_max
    probe = np.concatenate([np.linspace(lo, hi, 101), [0.0, lo, hi, 1 / 3 * hi, 0.7 * lo],
                            np.random.default_rng(0).uniform(lo, hi, 64)])
    for (s, g, d), compiled in ((resp[:3], device.q_plus), (resp[3:], device.q_minus)):
        ours = s * (1.0 - (g * probe) / d)
        if not np.array_equal(ours.view(np.int64), np.asarray(compiled(probe)).view(np.int64)):
            return None
    return resp


def train_tables(device, bl: int):
    r"""``(step, t_up, t_down)``: the pulse granularity and the tables
    :math:`T_\pm[c] = \sum_{j<c} (1 - r_\pm)^j`, ``c = 0 .. bl``, as
    :func:`simulate.device.pulses.apply_pulses` evaluates them (one rate: ``geometric_sum`` of a
    float; two: of an array of rates), or ``None`` where a rate is outside ``[0, 1)`` or the
    responses are not affine."""
    coefficients = device.response.affine_responses()
    if coefficients is None:
        return None
    (_, beta_plus), (_, beta_minus) = coefficients
    step = device.dw_min
    counts = np.arange(bl + 1)
    if -beta_plus == beta_minus:  # Device.pulse_map: one rate for every element
        rate = float(step * beta_minus)
        if not 0.0 <= rate < 1.0:
            return None
        table = np.ascontiguousarray(geometric_sum(counts, rate), dtype=float)
        return float(step), table, table
    rates = (float(step * -beta_plus), float(step * beta_minus))
    if not all(0.0 <= rate < 1.0 for rate in rates):
        return None
    up, down = (np.ascontiguousarray(geometric_sum(counts, np.full(bl + 1, rate)), dtype=float)
                for rate in rates)
    return float(step), up, down


class SampleWrites:
    r"""The compiled per-sample writes of one run (:func:`SampleWrites.of`), with its members'
    uniform buffers.

    Attributes
    ----------
    draws : ndarray of uint32, shape (R, S), or None
        Per member, 32-bit draws of its generator (its raw 64-bit output, each word two draws)
        not yet read from ``cursor[r]`` on (allocated at the first write); the kernel reads
        draw ``k`` as the uniform :math:`k\,2^{-32}`.
    cursor : ndarray of int64, shape (R,), or None
    normals : ndarray of float64, shape (R, S'), or None
        Per member, standard normals of the cycle-to-cycle noise not yet read from
        ``ncursor[r]`` on (allocated at the first noisy write).
    ncursor : ndarray of int64, shape (R,), or None
    general : bool
        Fire by the general closed form (noise or a spread), not by the tables.
    """

    def __init__(self, device, lr: float, pulse_type: str, update_management: bool,
                 bl_management: bool, resp: np.ndarray, tables, *, exact: bool = False,
                 spread=None):
        self.device, self.lr, self.pulse_type = device, float(lr), pulse_type
        self.um, self.blm, self.exact = bool(update_management), bool(bl_management), exact
        self.resp = resp
        self.step, self.t_up, self.t_down = tables
        self.bl = int(device.desired_bl)
        self.kind = MEAN_COUNT if pulse_type == "mean-count" else STOCHASTIC
        self.draws = self.cursor = None
        self.normals = self.ncursor = None
        (_, beta_plus), (_, beta_minus) = device.response.affine_responses()
        self.sigma = float(device.dw_min_std)
        self.additive = device.c2c_noise == "additive"
        #: ``(-beta_+, beta_-, sigma, additive)``: the rates' slopes and the noise
        self.noise = np.array([-beta_plus, beta_minus, self.sigma, self.additive], dtype=float)
        scales = (None, None) if spread is None else (spread.dw_min_scale, spread.bound_scale)
        self.spread = any(a is not None for a in scales)
        #: fire by the general closed form (noise or spread), not the tables
        self.general = self.sigma != 0 or self.spread
        #: the factors of ``dw_min`` and of the range, (2, R, P) (ones where there is none; a
        #: factor 1 changes no bit), or (2, 1, 0) without a spread
        self.scales = np.zeros((2, 1, 0))
        if self.spread:
            shape = next(np.shape(a) for a in scales if a is not None)
            self.scales = np.stack([np.ones(shape) if a is None else np.asarray(a, dtype=float)
                                    for a in scales])
        self._empty = {}

    @classmethod
    def of(cls, update, spread=None, *, exact: bool = False) -> SampleWrites | None:
        """The compiled writes of ``update`` (a :class:`simulate.device.updates.Updater`) with
        the run's device-to-device ``spread`` (a :class:`simulate.device.DeviceSpread` of the
        weights' shape, or ``None``), or ``None`` where they do not apply: not a plain updater
        of kind ``pulsed`` with the ``stochastic`` or ``mean-count`` pulse type and the closed
        form; ``desired_bl > 64``; a response other than soft bounds, asymmetric soft bounds,
        linear step or constant step (or whose bits differ); a nominal rate outside ``[0, 1)``;
        ``exact`` with cycle-to-cycle noise (the numpy path's normals interleave with its
        trains)."""
        from .updates import Updater

        if type(update) is not Updater or update.kind != "pulsed" or \
                update.pulse_type not in ("stochastic", "mean-count") or \
                update.pulse_method != "closed-form" or update.lr is None:
            return None
        device = update.device
        if device.desired_bl > MAX_KERNEL_BL or (exact and device.dw_min_std != 0):
            return None
        resp = response_constants(device)
        tables = train_tables(device, int(device.desired_bl)) if resp is not None else None
        if tables is None:
            return None
        return cls(device, update.lr, update.pulse_type, update.update_management,
                   update.bl_management, resp, tables, exact=exact, spread=spread)

    def write(self, w: np.ndarray, layers: Sequence[SampleLayer],
              rngs: Sequence[np.random.Generator], w_min: np.ndarray, w_max: np.ndarray) -> bool:
        r"""The batch's per-sample writes into ``w`` ``(R, P)`` (C-contiguous float64, in place)
        and the running extremes ``w_min``, ``w_max`` ``(R,)``; ``layers`` in the gradient's
        order (the numpy path's draw order), ``rngs`` one generator per member.

        Returns ``False``, having drawn and written nothing, where this batch must take the
        numpy path: an analog layer's weight outside the device range or not finite (the numpy
        path then fires the clipping pulse first), or (with a management) a non-finite factor.
        """
        lo, hi = float(self.device.w_min), float(self.device.w_max)
        blocks = [w] if not any(layer.digital for layer in layers) else \
            [w[:, layer.base:layer.base + layer.h.shape[2] * layer.dz.shape[2]]
             for layer in layers if not layer.digital]
        # (general: the kernel fires a start outside an element's range as the loop does)
        low, high = (-np.finfo(float).max, np.finfo(float).max) if self.general else (lo, hi)
        if not all(low <= block.min() and block.max() <= high for block in blocks if block.size):
            return False
        if (self.um or self.blm) and not all(np.isfinite(layer.h).all() and
                                             np.isfinite(layer.dz).all() for layer in layers):
            return False
        members, n = layers[0].h.shape[:2] if layers else (w.shape[0], 0)
        if self.exact and self.kind == STOCHASTIC:
            u, offsets = self._uniforms(layers, rngs, members, n)
        else:
            u, offsets = np.zeros((members, 1)), None
        fast = not self.exact and self.kind == STOCHASTIC
        if members not in self._empty:  # work arrays of the unused inputs (never read)
            self._empty[members] = (np.zeros((members, 1), dtype=np.int64),
                                    np.zeros((members, 1)), np.zeros(members, dtype=np.int64),
                                    np.zeros(members, dtype=np.int64),
                                    np.zeros((members, 2), dtype=np.uint32))
        no_offsets, no_draws, cursor, no_ncursor, no_bits = self._empty[members]
        if fast:
            self._buffers(layers, members)
        noisy = self.sigma != 0
        if noisy:
            self._normal_buffers(layers, members)
        normals, ncursor = (self.normals, self.ncursor) if noisy else (no_draws, no_ncursor)
        for index, layer in enumerate(layers):
            h = np.ascontiguousarray(layer.h, dtype=float)
            dz = np.ascontiguousarray(layer.dz, dtype=float)
            kind = DIGITAL if layer.digital else self.kind
            worst = h.shape[2] * self.bl + dz.shape[2] * (1 + self.bl // 2)
            start = (0, 0)
            while True:
                r, t = layer_sample_writes(
                    w, layer.base, h, dz, kind, self.lr, self.device.dw_min, self.bl, self.um,
                    self.blm, self.resp, self.step, self.t_up, self.t_down, lo, hi, self.exact,
                    u, no_offsets if offsets is None else offsets[index],
                    self.draws if fast else no_bits, self.cursor if fast else cursor, worst,
                    *start, w_min, w_max, self.general, self.noise, self.scales, normals,
                    ncursor, self._normal_worst(h.shape[2] * dz.shape[2]) if noisy else 0)
                if r < 0:
                    break
                if fast:
                    self._refill(r, rngs[r])
                if noisy:
                    self._refill_normals(r, rngs[r])
                start = (r, t)
        return True

    def _normal_worst(self, size: int) -> int:
        """The most normals one sample of a layer of ``size`` weights reads: one per weight,
        ``desired_bl`` per weight where some may be fired pulse by pulse (additive noise, a
        spread)."""
        loops = self.additive or self.spread
        return size * (self.bl if loops else 1)

    def _normal_buffers(self, layers, members: int) -> None:
        """Allocate the normals' buffers (empty: every member refills at its first need)."""
        if self.normals is not None and self.normals.shape[0] == members:
            return
        widest = max((self._normal_worst(layer.h.shape[2] * layer.dz.shape[2])
                      for layer in layers), default=0)
        size = max(BUFFER_WORDS, 2 * widest)
        self.normals = np.zeros((members, size))
        self.ncursor = np.full(members, size, dtype=np.int64)

    def _refill_normals(self, r: int, rng: np.random.Generator) -> None:
        """Member ``r``'s unread normals to the front of its buffer, the rest drawn from ``rng``
        into it (``standard_normal``)."""
        normals, size = self.normals[r], self.normals.shape[1]
        left = size - int(self.ncursor[r])
        normals[:left] = normals[size - left:].copy()
        rng.standard_normal(out=normals[left:])
        self.ncursor[r] = 0

    def _buffers(self, layers, members: int) -> None:
        """Allocate the uniform buffers (empty: every member refills at its first need)."""
        if self.draws is not None and self.draws.shape[0] == members:
            return
        widest = max((layer.h.shape[2] * self.bl + layer.dz.shape[2] * (1 + self.bl // 2)
                      for layer in layers), default=0)
        size = max(BUFFER_WORDS, 4 * widest)
        self.draws = np.zeros((members, size), dtype=np.uint32)
        self.cursor = np.full(members, size, dtype=np.int64)

    def _refill(self, r: int, rng: np.random.Generator) -> None:
        """Member ``r``'s unread draws to the front of its buffer, the rest from ``rng``'s raw
        64-bit output (``bit_generator.random_raw``), each word as two 32-bit draws (the native
        byte order's halves; an odd count drops the last half)."""
        draws, size = self.draws[r], self.draws.shape[1]
        left = size - int(self.cursor[r])
        draws[:left] = draws[size - left:].copy()
        fresh = size - left
        draws[left:] = rng.bit_generator.random_raw((fresh + 1) // 2).view(np.uint32)[:fresh]
        self.cursor[r] = 0

    def _uniforms(self, layers, rngs, members: int, n: int):
        """``exact``: each member's uniforms in the numpy path's order (sample by sample, layer
        by layer: ``BL_t`` bits of every x-train, then of every d-train; none where a
        management's bit length is 0), and the offset of every (layer, member, sample)."""
        offsets = np.zeros((len(layers), members, n), dtype=np.int64)
        totals = np.zeros(members, dtype=np.int64)
        for r in range(members):
            for t in range(n):
                for index, layer in enumerate(layers):
                    x, d = layer.h[r, t], layer.dz[r, t]
                    bl = self.bl
                    if self.um or self.blm:
                        bl = train_scales(self.lr, self.device.dw_min, self.bl,
                                          float(np.max(np.abs(x))), float(np.max(np.abs(d))),
                                          update_management=self.um,
                                          bl_management=self.blm).bl
                    offsets[index, r, t] = totals[r]
                    totals[r] += (x.size + d.size) * bl
        u = np.zeros((members, max(1, int(totals.max()))))
        for r, g in enumerate(rngs):
            g.random(out=u[r, :totals[r]])
        return u, offsets
