r"""The networks' activation :math:`\tanh` in float64, compiled (numba) from IEEE operations alone.

numpy's float64 ``tanh`` is the C library's scalar one on CPUs without AVX-512 (about 14 ns an
element on the 2-core AVX2 machine of ``docs/results/speed.md``; numpy has a SIMD one, with other
bits, only for AVX-512). A network's measurement is mostly ``tanh``: the last logging point of
a 16-layer digits MLP evaluates 862,560 of them per member. :func:`tanh_inplace` is one loop that
LLVM vectorises (about 4 ns an element there):

.. math::

    \tanh x = \operatorname{sign}(x) \begin{cases}
        z + z^3\, P(z^2)/Q(z^2) & z = |x| \le 0.625 \quad \text{(Cephes' rational form)},\\
        1 - 2/(e^{y} + 1), \quad y = 2\min(z, 20) & z > 0.625,
    \end{cases}

with :math:`P` of degree 2 and :math:`Q` monic of degree 3 (Cephes' ``tanh.c``), and
:math:`e^y = 2^k e^r` for :math:`k = \mathrm{round}(y/\ln 2)`, :math:`r = y - k\ln 2` in two
parts (Cody and Waite's :math:`\ln 2`, exact products for :math:`k \le 58`), :math:`e^r` by its
Taylor polynomial of degree 13 (:math:`|r| \le \ln 2/2`: remainder below :math:`10^{-17}`
relative) and :math:`2^k` written into the exponent bits (``k`` rounded by adding
:math:`1.5\cdot 2^{52}`). :math:`\tanh 20` rounds to 1, as does everything above it. The sign is
``copysign``'s, so :math:`\tanh(-0) = -0` and ``nan`` stays ``nan``.

Only additions, multiplications, divisions, comparisons and bit operations, compiled without
fastmath (no fused multiply-add, no reordering) and without a math library call, so the bits are
those of :func:`tanh_numpy`, the same formula in numpy ufuncs, whatever the CPU (tested, with the
accuracy: within 2 ulps of the true value (mpmath at 120 bits; 1 ulp on 3000 points measured),
odd, at most 1 in magnitude and non-decreasing on a dense grid; ``tests/test_activation.py``).
float32 stays numpy's ``tanh``, which is vectorised on AVX2 and AVX-512.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic

__all__ = ["tanh_inplace", "tanh_numpy"]

#: Cephes' rational form below 0.625: P (degree 2) and monic Q (degree 3), highest power first
_P = (-9.64399179425052238628e-1, -9.92877231001918586564e1, -1.61468768441708447952e3)
_Q = (1.12811678491632931402e2, 2.23548839060100448583e3, 4.84406305325125486048e3)
#: the rational form's range, and where tanh rounds to 1
_SMALL, _ONE = 0.625, 20.0
#: Cody and Waite's ln 2 in two parts (LN2_HI has zero low bits: k * LN2_HI is exact)
_LN2_HI, _LN2_LO, _INV_LN2 = 6.93147180369123816490e-01, 1.90821492927058770002e-10, 1 / math.log(2)
#: adding 1.5 * 2**52 rounds to an integer held in the low bits of the mantissa
_SHIFTER = 6755399441055744.0
_SHIFTER_BITS = int(np.array([_SHIFTER]).view(np.int64)[0])
#: 1/j! for j = 2..13, the Taylor coefficients of e^r after 1 + r
_C = tuple(1.0 / math.factorial(j) for j in range(2, 14))
#: Horner's order of the coefficients after the last
_HORNER = tuple(reversed(_C[:-1]))


def tanh_numpy(x) -> np.ndarray:
    """Reference of :func:`tanh_inplace`: the module's formula in numpy ufuncs (a new float64
    array)."""
    x = np.asarray(x, dtype=np.float64)
    z = np.abs(x)
    with np.errstate(over="ignore", invalid="ignore"):  # the large z this form is not used for
        z2 = z * z
        small = z + z * z2 * (((_P[0] * z2 + _P[1]) * z2 + _P[2])
                              / (((z2 + _Q[0]) * z2 + _Q[1]) * z2 + _Q[2]))
    y = 2.0 * np.where(z > _ONE, _ONE, z)
    t = y * _INV_LN2 + _SHIFTER
    k = t - _SHIFTER
    r = (y - k * _LN2_HI) - k * _LN2_LO
    p = np.full_like(r, _C[-1])
    for c in _HORNER:
        p = c + r * p
    p = 1.0 + r * (1.0 + r * p)
    scale = ((t.view(np.int64) - _SHIFTER_BITS + 1023) << 52).view(np.float64)
    big = 1.0 - 2.0 / (p * scale + 1.0)
    return np.copysign(np.where(z <= _SMALL, small, big), x)


def tanh_inplace(z: np.ndarray) -> np.ndarray:
    r""":math:`\tanh` of the float64 array ``z`` in place (the module's formula; any layout, the
    same bits), returned; other dtypes get numpy's ``tanh`` in place."""
    if z.dtype != np.float64:
        return np.tanh(z, out=z)
    if z.flags.c_contiguous:
        _tanh(z.reshape(-1))
    else:
        flat = np.ascontiguousarray(z).reshape(-1)
        _tanh(flat)
        z[...] = flat.reshape(z.shape)
    return z


@intrinsic
def _bits_of(typingctx, value):  # pragma: no cover - compiled
    """The int64 with the bits of a float64 (a bit cast, which LLVM vectorises)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.int64))
    return types.int64(types.float64), codegen


@intrinsic
def _float_of(typingctx, bits):  # pragma: no cover - compiled
    """The float64 with the bits of an int64."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))
    return types.float64(types.int64), codegen


# error_model="numpy": a division by zero gives inf (none happens here) instead of the check that
# stops LLVM from vectorising the loop
@numba.njit(cache=True, error_model="numpy")
def _tanh(a):  # pragma: no cover - compiled
    p0, p1, p2 = _P
    q0, q1, q2 = _Q
    for i in range(a.size):
        x = a[i]
        z = abs(x)
        z2 = z * z
        small = z + z * z2 * (((p0 * z2 + p1) * z2 + p2) / (((z2 + q0) * z2 + q1) * z2 + q2))
        y = 2.0 * (_ONE if z > _ONE else z)
        t = y * _INV_LN2 + _SHIFTER
        k = t - _SHIFTER
        r = (y - k * _LN2_HI) - k * _LN2_LO
        p = _C[-1]
        for c in _HORNER:
            p = c + r * p
        p = 1.0 + r * (1.0 + r * p)
        big = 1.0 - 2.0 / (p * _float_of((_bits_of(t) - _SHIFTER_BITS + 1023) << 52) + 1.0)
        a[i] = math.copysign(small if z <= _SMALL else big, x)
