r"""The analog matrix-vector product of a crossbar tile with aihwkit's IO non-idealities.

A tile holding the weights ``W`` (shape ``(n_in, n_out)``) computes, for every input row ``x``
(one sample; aihwkit processes the vectors of a batch one by one), the product ``y = x W`` through
a DAC, the analog array and an ADC. This module reproduces the rules of aihwkit's
``ForwardBackwardPassIOManaged`` (``src/rpucuda/rpu_forward_backward_pass.cpp``, the one-pass
``AnalogMVType``) with the parameter names and defaults of its ``IOParameters``
(``src/aihwkit/simulator/parameters/io.py``):

1. **Noise management** (input scaling): :math:`\alpha = \max_j |x_j|` (``abs_max``),
   :math:`\max_j x_j` (``max``) or ``nm_thres`` (``constant``); with ``nm_thres > 0``,
   ``abs_max`` and ``max`` use :math:`\min(\alpha, \mathrm{nm\_thres})`. A row with
   :math:`\alpha \le 0` gives the output 0 (in the forward only when ``inp_noise = 0``).
2. **Input (DAC)**: :math:`v_j = \mathrm{clip}(Q_{\Delta_{in}}(x_j / (\alpha\rho)), \pm b_{in})
   + \sigma_{in}\xi_j`, where :math:`\rho` is the bound-management reduction (1 in the first
   pass), :math:`b_{in}` = ``inp_bound`` and the quantisation step is
   :math:`\Delta_{in} = 2 b_{in}\,\mathrm{res}(\mathrm{inp\_res})`.
3. **Analog product**: :math:`y = v W`, plus, with ``w_noise_type = "additive_constant"``, the
   output-referred weight noise :math:`\sigma_w \|v\|_2 \xi` per output.
4. **Output (ADC)**: :math:`u_i = \mathrm{clip}(Q_{\Delta_{out}}(y_i + \sigma_{out}\xi_i),
   \pm b_{out})` with :math:`\Delta_{out} = 2 b_{out}\,\mathrm{res}(\mathrm{out\_res})`.
5. **Rescaling**: the result is :math:`\alpha\rho\,u` (the digital periphery undoes the input
   scaling).
6. **Bound management** (``iterative``, forward only, as in aihwkit which ignores it in the
   backward): while an output of a row hit the bound (:math:`Q(\cdot) > b_{out}`, or
   :math:`< -b_{out}` when ``bm_test_negative_bound``), the row is recomputed with
   :math:`\rho \leftarrow 2\rho` (new noise draws), until it passes or
   :math:`\rho > \mathrm{max\_bm\_factor}` or :math:`\rho > \mathrm{max\_bm\_res}/\Delta_{in}`.

The quantiser is :math:`Q_\Delta(v) = \mathrm{rint}(v/\Delta)\,\Delta` (round half to even, as
aihwkit's ``rintf``), or with stochastic rounding :math:`\mathrm{rint}(v/\Delta + u - 1/2)\,\Delta`,
:math:`u \sim U[0, 1)`; :math:`\Delta \le 0` means no quantisation. aihwkit's resolution rule
``res(r)`` is ``r`` for ``0 < r <= 1`` (a fraction of the full range ``2 b``), ``1/r`` for
``r > 1`` (a number of steps) and 0 (none) for ``r <= 0``; so ``b bits`` is
``res = 1 / (2**bits - 2)``: with ``inp_bound = 1`` and 7 bits the levels are ``k / 63``,
``k = -63..63`` (127 levels). A bound ``<= 0`` means no bound (and, for the output, no
quantisation, as aihwkit's step ``res * 2 * bound`` is then not positive).

Units: inputs and outputs in the units of the layer's activations and errors, weights in weight
units; ``inp_bound``, ``inp_noise`` are in units of the scaled input :math:`x/(\alpha\rho)`
(``[-1, 1]`` with noise management), ``out_bound``, ``out_noise`` in units of the analog output
:math:`vW` (so, relative to the rescaled output, the noise is :math:`\alpha\rho\,\sigma_{out}`).

Differences from aihwkit, stated: double precision instead of float32; numpy's generators instead
of aihwkit's (same distributions, other bits); the rarer options (IR drop, asymmetries,
non-linearity, voltage offsets, ``out_noise_std``, PCM read noise, average-abs-max and
NP-sum noise management, worst-case and shift bound management, ``mv_type`` other than one pass)
are not modelled.

Randomness: member ``r`` draws from its own generator (the ``io`` stream of
:mod:`simulate.rng`) and only for its own rows, so a member gives the same bits alone and in an
ensemble.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

from theory.errors import ParameterError, check_range

__all__ = [
    "AnalogPass", "BOUND_MANAGEMENT", "IOParameters", "IO_PRESETS", "NOISE_MANAGEMENT",
    "W_NOISE_TYPES", "analog_matmul", "bits_to_res", "io_preset", "resolution_step",
]

#: noise-management types (aihwkit ``NoiseManagementType`` ``None``, ``AbsMax``, ``Max``,
#: ``Constant``)
NOISE_MANAGEMENT = ("none", "abs_max", "max", "constant")
#: bound-management types (aihwkit ``BoundManagementType`` ``None``, ``Iterative``)
BOUND_MANAGEMENT = ("none", "iterative")
#: output-referred weight-noise types (aihwkit ``WeightNoiseType`` ``None``, ``AdditiveConstant``)
W_NOISE_TYPES = ("none", "additive_constant")


def bits_to_res(bits: int) -> float:
    """aihwkit's resolution of a ``bits``-bit converter: ``1 / (2**bits - 2)`` of the full range.

    (``2**bits - 2`` steps over ``[-bound, bound]``, so ``2**bits - 1`` levels, symmetric about 0.)
    """
    check_range("bits", bits, 2, 52, integer=True)
    return 1.0 / (2 ** int(bits) - 2)


def resolution_step(res: float, bound: float) -> float:
    """The quantisation step of a converter: ``res' * 2 * bound`` (0: no quantisation).

    ``res' = res`` for ``0 < res <= 1``, ``1 / res`` for ``res > 1`` (a number of steps), 0 for
    ``res <= 0`` (aihwkit's ``checkRes``); a ``bound <= 0`` (no bound) gives no quantisation.
    """
    r = max(float(res), 0.0)
    r = 1.0 / r if r > 1.0 else r
    return r * 2.0 * float(bound) if bound > 0 else 0.0


@dataclass(frozen=True)
class IOParameters:
    r"""The IO non-idealities of one pass (forward or backward) of an analog tile.

    Names, defaults and meanings are aihwkit's ``IOParameters`` (the subset modelled here; see
    the module docstring for the formulas).

    Parameters
    ----------
    is_perfect : bool
        Exact product :math:`xW`, every other setting ignored (aihwkit default ``False``).
    inp_bound : float
        DAC range :math:`b_{in}`: scaled inputs are clipped to ``[-inp_bound, inp_bound]``
        (default 1; ``<= 0`` no bound). Noise management requires 1 (as aihwkit).
    inp_res : float
        DAC resolution: fraction of the range ``2 inp_bound`` per step, or a number of steps if
        ``> 1``; ``<= 0`` none (default ``1 / (2**7 - 2)``, 7 bits).
    inp_sto_round : bool
        Stochastic rounding in the DAC (default ``False``).
    inp_noise : float
        Std of the Gaussian noise added to the DAC output (default 0; scaled-input units).
    out_bound : float
        ADC range :math:`b_{out}` (default 12; ``<= 0`` no bound and no quantisation; analog
        output units).
    out_res : float
        ADC resolution (default ``1 / (2**9 - 2)``, 9 bits; same convention as ``inp_res``).
    out_sto_round : bool
        Stochastic rounding in the ADC (default ``False``).
    out_noise : float
        Std :math:`\sigma_{out}` of the additive Gaussian noise at each output before the ADC
        (default 0.06; analog output units).
    noise_management : {"abs_max", "max", "constant", "none"}
        Input scaling :math:`\alpha` per row (default ``abs_max``).
    nm_thres : float
        Threshold of ``abs_max``/``max`` (``min(alpha, nm_thres)`` when ``> 0``), the value of
        ``constant`` (1 when ``<= 0``); default 0.
    bound_management : {"iterative", "none"}
        Recompute a clipped row with the input scale halved (default ``iterative``; forward
        only: a backward pass ignores it, as aihwkit does).
    max_bm_factor : int
        Bound management stops when the reduction exceeds this (default 1000).
    max_bm_res : float
        ... or when it exceeds ``max_bm_res / step_in`` (default 0.25).
    bm_test_negative_bound : bool
        Whether hitting ``-out_bound`` also triggers bound management (default ``True``).
    w_noise : float
        Std :math:`\sigma_w` of the output-referred weight noise (default 0).
    w_noise_type : {"none", "additive_constant"}
        ``additive_constant``: :math:`\sigma_w \|v\|_2 \xi_i` added to each output (default
        ``none``).
    """

    is_perfect: bool = False
    inp_bound: float = 1.0
    inp_res: float = 1.0 / (2**7 - 2)
    inp_sto_round: bool = False
    inp_noise: float = 0.0
    out_bound: float = 12.0
    out_res: float = 1.0 / (2**9 - 2)
    out_sto_round: bool = False
    out_noise: float = 0.06
    noise_management: str = "abs_max"
    nm_thres: float = 0.0
    bound_management: str = "iterative"
    max_bm_factor: int = 1000
    max_bm_res: float = 0.25
    bm_test_negative_bound: bool = True
    w_noise: float = 0.0
    w_noise_type: str = "none"

    def __post_init__(self):
        for name, valid in (("noise_management", NOISE_MANAGEMENT),
                            ("bound_management", BOUND_MANAGEMENT),
                            ("w_noise_type", W_NOISE_TYPES)):
            if getattr(self, name) not in valid:
                raise ParameterError(f"{name}={getattr(self, name)!r} is unknown; valid: "
                                     f"{', '.join(valid)}")
        for name in ("inp_bound", "inp_res", "out_bound", "out_res", "nm_thres", "max_bm_res"):
            check_range(name, getattr(self, name), None, None)
        for name in ("inp_noise", "out_noise", "w_noise"):
            check_range(name, getattr(self, name), 0, None)
        check_range("max_bm_factor", self.max_bm_factor, 1, None, integer=True)
        if (not self.is_perfect and self.noise_management != "none"
                and self.inp_bound != 1.0):
            raise ParameterError(
                f"inp_bound={self.inp_bound:g} must be 1 with noise_management="
                f"{self.noise_management!r} (aihwkit: noise management expects bound == 1)"
            )

    @property
    def inp_step(self) -> float:
        """The DAC step :math:`\\Delta_{in}` (0: none)."""
        return resolution_step(self.inp_res, self.inp_bound)

    @property
    def out_step(self) -> float:
        """The ADC step :math:`\\Delta_{out}` (0: none)."""
        return resolution_step(self.out_res, self.out_bound)

    def to_dict(self) -> dict:
        """The parameters as a JSON-ready dict."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


#: the named presets of ``SimConfig.forward_io`` / ``backward_io``: ``perfect`` (the exact
#: product, the default), ``aihwkit`` (aihwkit's ``IOParameters()`` defaults) and ``companion``
#: (the companion paper's table: DAC 7 bits, ADC 9 bits, output noise 0.06, output bound 12,
#: input bound 1; noise and bound management as aihwkit's defaults, which the table does not
#: list, so it equals ``aihwkit`` field by field)
IO_PRESETS: dict[str, IOParameters] = {
    "perfect": IOParameters(is_perfect=True),
    "aihwkit": IOParameters(),
    "companion": IOParameters(inp_bound=1.0, inp_res=bits_to_res(7), out_bound=12.0,
                              out_res=bits_to_res(9), out_noise=0.06),
}


def io_preset(name: str) -> IOParameters:
    """The :class:`IOParameters` of the preset ``name`` (:data:`IO_PRESETS`)."""
    if name not in IO_PRESETS:
        raise ParameterError(f"io={name!r} is unknown; valid: {', '.join(IO_PRESETS)}")
    return IO_PRESETS[name]


def _quantise(v: np.ndarray, step: float, stochastic: bool, uniform) -> np.ndarray:
    if step <= 0:
        return v
    if stochastic:
        return np.rint(v / step + (uniform(v.shape) - 0.5)) * step
    return np.rint(v / step) * step


def _one_pass(x, w, scale, io: IOParameters, normal, uniform, *, bm: bool):
    """One DAC -> array -> ADC pass of rows ``x`` (``(..., rows, n_in)``) scaled by ``scale``
    (``(..., rows, 1)`` or ``None``); returns the ADC output and whether each row passed the
    bound test."""
    v = x * scale if scale is not None else x
    v = _quantise(v, io.inp_step, io.inp_sto_round, uniform)
    if io.inp_bound > 0:
        v = np.clip(v, -io.inp_bound, io.inp_bound)
    if io.inp_noise > 0:
        v = v + io.inp_noise * normal(v.shape)
    y = v @ w
    if io.w_noise_type == "additive_constant" and io.w_noise > 0:
        norm = np.sqrt(np.einsum("...j,...j->...", v, v))[..., None]
        y += io.w_noise * norm * normal(y.shape)
    if io.out_noise > 0:
        y += io.out_noise * normal(y.shape)
    y = _quantise(y, io.out_step, io.out_sto_round, uniform)
    passed = None
    if io.out_bound > 0:
        if bm:
            hit = y > io.out_bound
            if io.bm_test_negative_bound:
                hit |= y < -io.out_bound
            passed = ~hit.any(axis=-1)
        y = np.clip(y, -io.out_bound, io.out_bound, out=y)
    return y, passed


def _noise_scale(x: np.ndarray, io: IOParameters) -> np.ndarray | None:
    """The noise-management factor alpha per row, shape ``(..., rows, 1)`` (``None``: none)."""
    nm = io.noise_management
    if nm == "none":
        return None
    if nm == "constant":
        value = io.nm_thres if io.nm_thres > 0 else 1.0
        return np.full(x.shape[:-1] + (1,), value)
    alpha = (np.abs(x) if nm == "abs_max" else x).max(axis=-1, keepdims=True)
    if io.nm_thres > 0:
        alpha = np.minimum(alpha, io.nm_thres)
    return alpha


def _stacked(rngs, method):
    """A draw of ``shape = (R, ...)``: member ``r`` fills row ``r`` from its own generator."""
    def draw(shape):
        out = np.empty(shape)
        for r, g in enumerate(rngs):
            getattr(g, method)(out=out[r])
        return out
    return draw


def analog_matmul(x: np.ndarray, w: np.ndarray, io: IOParameters,
                  rngs: Sequence[np.random.Generator], *, direction: str = "forward"):
    r"""The analog product :math:`x W` of every row of ``x`` through the tile ``W``.

    Parameters
    ----------
    x : ndarray, shape (R, n, n_in) or (n, n_in)
        Input rows (one per sample; a 2-D input is shared by every member).
    w : ndarray, shape (R, n_in, n_out)
        The tile's weights as read by this pass (for a backward pass, the transposed view).
    io : IOParameters
        ``is_perfect`` returns ``x @ w`` exactly.
    rngs : sequence of numpy.random.Generator
        One per member (``R``); member ``r`` draws only for its own rows.
    direction : {"forward", "backward"}
        ``backward`` ignores ``bound_management`` (aihwkit's rule).

    Returns
    -------
    ndarray, shape (R, n, n_out)
        :math:`\alpha\rho\,u` per row (module docstring), 0 for a row with
        :math:`\alpha \le 0` under noise management (forward: only without input noise).
    """
    if io.is_perfect:
        return x @ w
    if direction not in ("forward", "backward"):
        raise ParameterError(f"direction={direction!r} is unknown; valid: forward, backward")
    n_members = w.shape[0]
    if len(rngs) != n_members:
        raise ParameterError(f"rngs={len(rngs)} generators for {n_members} members")
    if x.ndim == 2:
        x = np.broadcast_to(x, (n_members,) + x.shape)
    bm = io.bound_management == "iterative" and direction == "forward"
    alpha = _noise_scale(x, io)
    zero = None
    if alpha is not None:
        zero = alpha[..., 0] <= 0
        if direction == "forward" and io.inp_noise > 0:
            zero = None
        alpha = np.where(alpha > 0, alpha, 1.0)  # rows with alpha <= 0: unscaled (or zeroed)
    scale = None if alpha is None else 1.0 / alpha
    if bm:
        scale = np.ones(x.shape[:-1] + (1,)) if scale is None else scale
    y, passed = _one_pass(x, w, scale, io, _stacked(rngs, "standard_normal"),
                          _stacked(rngs, "random"), bm=bm)
    if bm and passed is not None and not passed.all():
        limit = io.max_bm_res / io.inp_step if io.inp_step > 0 else np.inf
        base = scale.copy()
        for r in np.flatnonzero(~passed.all(axis=-1)):  # members with a clipped row
            rng = rngs[r]
            rows = np.flatnonzero(~passed[r])
            reduction = 1.0
            while rows.size and not (int(reduction) > io.max_bm_factor or reduction > limit):
                reduction *= 2.0
                row_scale = base[r, rows] / reduction
                y_rows, ok = _one_pass(x[r, rows], w[r], row_scale, io, rng.standard_normal,
                                       rng.random, bm=True)
                y[r, rows] = y_rows
                scale[r, rows] = row_scale
                rows = rows[~ok]
    if scale is not None:
        y *= 1.0 / scale
    if zero is not None and zero.any():
        y[zero] = 0.0
    return y


@dataclass(frozen=True, eq=False)
class AnalogPass:
    """One direction of a network's analog products: :func:`analog_matmul` with fixed
    parameters and the members' generators.

    Attributes
    ----------
    io : IOParameters
    rngs : tuple of numpy.random.Generator
        One per member (the ``io`` stream of :mod:`simulate.rng`).
    direction : {"forward", "backward"}
    """

    io: IOParameters
    rngs: tuple
    direction: str = "forward"

    def __call__(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        """:func:`analog_matmul` of ``x`` through ``w``."""
        return analog_matmul(x, w, self.io, self.rngs, direction=self.direction)
