"""Random draws of the analog tile: per-member streams, pulse noise, device-to-device spread."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from theory.errors import ParameterError

__all__ = [
    "DeviceSpread",
    "NOISE_BLOCK",
    "Rng",
    "draw_bound_scale",
    "draw_dw_min_scale",
    "floating",
    "in_dtype",
    "per_member",
    "pulse_noise",
    "uniforms",
]

#: one generator, or one per ensemble member (the leading axis)
Rng = np.random.Generator | Sequence[np.random.Generator]


def per_member(rng: Rng, draw, shape: tuple[int, ...], sizes=None) -> np.ndarray:
    """Draw ``draw(generator, shape)`` for the whole array, or member by member along axis 0.

    With a sequence of generators, member ``r`` draws ``sizes[r]`` leading rows (default: none
    extra) of shape ``shape[1:]`` from its own generator, so its numbers do not depend on the other
    members; rows beyond a member's own size are zero padding.
    """
    if isinstance(rng, np.random.Generator):
        return draw(rng, shape)
    if len(rng) != shape[0 if sizes is None else 1]:
        raise ParameterError(
            f"got {len(rng)} generators for an ensemble axis of {shape[0 if sizes is None else 1]}"
        )
    if sizes is None:
        out = np.empty(shape)
        for r, g in enumerate(rng):
            out[r] = draw(g, shape[1:])
        return out
    out = np.zeros(shape)
    for r, (g, size) in enumerate(zip(rng, sizes, strict=True)):
        out[:size, r] = draw(g, (int(size),) + shape[2:])
    return out


def floating(x) -> np.ndarray:
    """``x`` as an array of a weights' floating-point type: a float32 array stays float32
    (``SimConfig.dtype``), anything else becomes float64 (no copy where it already is)."""
    x = np.asarray(x)
    return x if x.dtype == np.float32 else x.astype(np.float64, copy=False)


def in_dtype(values: Sequence, dtype) -> tuple:
    """Constants of a kernel in the weights' ``dtype``: each scalar as a ``dtype`` scalar, each
    array as a ``dtype`` array (float64 constants keep their values, so float64 bits)."""
    kind = np.dtype(dtype).type
    return tuple(np.asarray(v).astype(kind) if np.ndim(v) else kind(v) for v in values)


def uniforms(rng: Rng, shape: tuple[int, ...]) -> np.ndarray:
    """``per_member(rng, lambda g, s: g.random(s), shape)``, each member's uniforms drawn into
    its row of the result (the same numbers, one array fewer)."""
    if isinstance(rng, np.random.Generator) or len(shape) < 2 or len(rng) != shape[0]:
        return per_member(rng, lambda g, s: g.random(s), shape)
    out = np.empty(shape)
    for r, g in enumerate(rng):
        g.random(out=out[r])
    return out


#: pulse noise is drawn for this many weights' worth of pulses at a time (8 MB of float64)
NOISE_BLOCK = 1 << 20


def pulse_noise(rng: Rng, shape: tuple[int, ...], sizes, first: int, count: int,
                dtype=np.float64) -> np.ndarray:
    """Standard normals of pulses ``first .. first + count - 1``, shape ``(count, *shape)``, in
    ``dtype`` (the weights': float64 or float32).

    The numbers are those of one draw of every pulse at once, in the same order. One generator:
    one draw. A sequence: member ``r`` draws only its own pulses ``p < sizes[r]``, so its numbers
    do not depend on the others; rows past a member's pulse count are zero (inactive there).
    """
    if isinstance(rng, np.random.Generator):
        return rng.standard_normal((count, *shape), dtype)
    out = np.zeros((count, *shape), dtype)
    for r, (g, size) in enumerate(zip(rng, sizes, strict=True)):
        rows = min(count, int(size) - first)
        if rows > 0:
            out[:rows, r] = g.standard_normal((rows, *shape[1:]), dtype)
    return out


def draw_dw_min_scale(device, shape: tuple[int, ...], rng: Rng) -> np.ndarray:
    r"""Per-element device-to-device factor of ``dw_min``, drawn once per run.

    .. math:: s = |1 + \sigma_{d2d}\, \xi|, \quad \xi \sim N(0, 1)

    The absolute value only matters with probability :math:`\Phi(-1/\sigma_{d2d})` (4e-4 at
    :math:`\sigma_{d2d} = 0.3`); it keeps every step size positive.
    """
    xi = per_member(rng, lambda g, s: g.standard_normal(s), tuple(shape))
    return np.abs(1.0 + device.dw_min_dtod * xi)


def draw_bound_scale(device, shape: tuple[int, ...], rng: Rng) -> np.ndarray:
    r"""Per-element device-to-device factor of the weight range, drawn once per run.

    .. math:: s_b = |1 + \sigma_b\, \xi|, \quad
        \sigma_b = \frac{w_{\mathrm{bounds,dtod}}}{(w_{\max} - w_{\min})/2}

    (``w_bounds_dtod`` is in weight units; the range of element i is :math:`s_b [w_{\min},
    w_{\max}]`).
    """
    sigma = device.w_bounds_dtod / (0.5 * (device.w_max - device.w_min))
    xi = per_member(rng, lambda g, s: g.standard_normal(s), tuple(shape))
    return np.abs(1.0 + sigma * xi)


@dataclass(frozen=True)
class DeviceSpread:
    """The fixed device-to-device variation of one run (``None``: no spread of that kind).

    Attributes
    ----------
    dw_min_scale : ndarray or None
        Per-element factor of ``dw_min`` (:func:`draw_dw_min_scale`).
    bound_scale : ndarray or None
        Per-element factor of the weight range (:func:`draw_bound_scale`).
    """

    dw_min_scale: np.ndarray | None = None
    bound_scale: np.ndarray | None = None

    @classmethod
    def draw(cls, device, shape: tuple[int, ...], rng: Rng) -> DeviceSpread:
        """Draw the spreads the device has (``dw_min`` first, then the bounds)."""
        step = draw_dw_min_scale(device, shape, rng) if device.dw_min_dtod > 0 else None
        bound = draw_bound_scale(device, shape, rng) if device.w_bounds_dtod > 0 else None
        return cls(step, bound)

    def astype(self, dtype) -> DeviceSpread:
        """The spreads rounded to ``dtype`` (a float32 run's: its pulse arithmetic in float32);
        ``self`` for float64 (drawn in it)."""
        if np.dtype(dtype) == np.float64:
            return self
        return DeviceSpread(*(None if a is None else a.astype(dtype)
                              for a in (self.dw_min_scale, self.bound_scale)))

