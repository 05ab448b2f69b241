r"""Mixed analog and digital blocks: per-block constants aggregated for Theorem 2M.

A pipeline whose stage ``m`` (block ``m`` of the weights) sits on an analog tile obeys A3 with its
own constants :math:`q_{\min,m} \le q_{\max,m}`, :math:`G_{\infty,m}`; a digital stage updates
exactly (:math:`q_\pm \equiv 1`, :math:`G = 0`). The gradient noise splits over the blocks,
:math:`\mathbb{E}\lVert\nu^{(m)}\rVert^2 \le s_m\sigma^2/n` with shares :math:`s_m \ge 0`,
:math:`\sum_m s_m = 1` (for the oracle problems, isotropic noise: :math:`s_m = d_m/d`, the block's
share of the dimension, :func:`shares_from_sizes`). Theorem 2M of ``docs/theory.md`` then needs
four scalars, computed here (:func:`mixed_constants`):

.. math::

    q_{\min} = \min_m q_{\min,m}, \quad q_{\max} = \max_m q_{\max,m}
    \quad\text{(worst block)}, \qquad
    \bar{p^2} = \sum_m s_m q_{\max,m}^2, \quad \bar{G^2} = \sum_m s_m G_{\infty,m}^2
    \quad\text{(noise-weighted sums)}.

All blocks on one device give ``p2_bar = q_max**2`` and ``G2_bar = G_inf**2`` (Theorems 2, 3,
4' exactly); all blocks digital give ``q_min = q_max = p2_bar = 1``, ``G2_bar = 0`` (Theorem 1).
Units: every constant is dimensionless (a response relative to the nominal pulse).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .errors import ParameterError, check_range

__all__ = [
    "Block", "MixedConstants", "SHARE_TOLERANCE", "digital_block", "mixed_constants",
    "shares_from_sizes",
]

#: the noise shares must sum to 1 within this absolute tolerance
SHARE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Block:
    r"""The A3 constants of one block (stage) and its share of the gradient noise.

    Parameters
    ----------
    q_min, q_max : float
        Bounds of the block's response functions on the region it visits,
        :math:`0 < q_{\min} \le q_{\max}` (digital: 1, 1).
    G_inf : float
        :math:`\sup\lvert G\rvert` on that region, :math:`0 \le G_\infty \le (q_{\max} -
        q_{\min})/2` (digital: 0).
    noise_share : float
        :math:`s_m = \mathbb{E}\lVert\nu^{(m)}\rVert^2 / \mathbb{E}\lVert\nu\rVert^2 \in [0, 1]`.
    """

    q_min: float
    q_max: float
    G_inf: float
    noise_share: float

    def __post_init__(self):
        check_range("q_min", self.q_min, 0, None, low_open=True)
        check_range("q_max", self.q_max, self.q_min, None)
        limit = (self.q_max - self.q_min) / 2
        check_range("G_inf", self.G_inf, 0, limit * (1 + 1e-12) + 1e-12 * self.q_max)
        check_range("noise_share", self.noise_share, 0, 1)

    @property
    def digital(self) -> bool:
        """Whether the block updates exactly (``q_min = q_max = 1``, ``G_inf = 0``)."""
        return self.q_min == 1 and self.q_max == 1 and self.G_inf == 0


def digital_block(noise_share: float) -> Block:
    """A digital block: exact update, :math:`q_\\pm \\equiv 1`, :math:`G = 0`."""
    return Block(1.0, 1.0, 0.0, noise_share)


def shares_from_sizes(sizes: Sequence[int]) -> tuple[float, ...]:
    r"""Noise shares of blocks of ``sizes`` weights under isotropic noise: :math:`s_m = d_m/d`.

    The oracle problems' noise is :math:`\sqrt{\sigma^2/(nd)}\,\xi`, :math:`\xi \sim N(0, I_d)`,
    so block ``m`` carries :math:`d_m/d` of :math:`\sigma^2/n`.
    """
    sizes = [check_range("sizes", s, 0, None, integer=True) for s in sizes]
    total = sum(sizes)
    if not sizes or total == 0:
        raise ParameterError(f"sizes={list(sizes)} holds no weight; valid: block sizes >= 0, "
                             "at least one positive")
    return tuple(s / total for s in sizes)


@dataclass(frozen=True)
class MixedConstants:
    r"""The aggregated constants of Theorem 2M (names of :mod:`theory.symbols`).

    Attributes
    ----------
    q_min, q_max : float
        :math:`\min_m q_{\min,m}` and :math:`\max_m q_{\max,m}` (the worst block; they set the
        step cap and the :math:`1/q_{\min}` of every term).
    p2_bar : float
        :math:`\sum_m s_m q_{\max,m}^2` (second moment of the update noise).
    G2_bar : float
        :math:`\sum_m s_m G_{\infty,m}^2` (the floor's numerator).
    analog_blocks : int
        Blocks that are not digital.
    analog_share : float
        :math:`\sum_{m\ \mathrm{analog}} s_m`, the noise on analog blocks.
    """

    q_min: float
    q_max: float
    p2_bar: float
    G2_bar: float
    analog_blocks: int
    analog_share: float

    def values(self) -> dict[str, float]:
        """``q_min``, ``q_max``, ``p2_bar``, ``G2_bar`` by symbol name (for
        :func:`theory.complexity.evaluate_complexity`)."""
        return {"q_min": self.q_min, "q_max": self.q_max, "p2_bar": self.p2_bar,
                "G2_bar": self.G2_bar}


def _as_block(item) -> Block:
    if isinstance(item, Block):
        return item
    try:
        q_lo, q_hi, g, share = item
    except (TypeError, ValueError):
        raise ParameterError(
            f"blocks={item!r}: a block is Block(...) or (q_min, q_max, G_inf, noise_share)"
        ) from None
    return Block(q_lo, q_hi, g, share)


def mixed_constants(blocks: Iterable[Block | tuple]) -> MixedConstants:
    r"""Aggregate per-block constants for Theorem 2M (see the module docstring).

    Parameters
    ----------
    blocks : iterable of Block or (q_min, q_max, G_inf, noise_share)
        One entry per block (stage), noise shares summing to 1 (within
        :data:`SHARE_TOLERANCE`).

    Returns
    -------
    MixedConstants

    Raises
    ------
    ParameterError
        No block, a block's constants out of range, or shares that do not sum to 1.
    """
    blocks = [_as_block(b) for b in blocks]
    if not blocks:
        raise ParameterError("blocks=[] is empty; valid: at least one block")
    total = math.fsum(b.noise_share for b in blocks)
    if abs(total - 1.0) > SHARE_TOLERANCE:
        raise ParameterError(f"blocks: noise_share sums to {total:.12g}; valid: shares summing "
                             "to 1 (shares_from_sizes gives d_m/d)")
    analog = [b for b in blocks if not b.digital]
    return MixedConstants(
        q_min=min(b.q_min for b in blocks),
        q_max=max(b.q_max for b in blocks),
        p2_bar=math.fsum(b.noise_share * b.q_max**2 for b in blocks) / total,
        G2_bar=math.fsum(b.noise_share * b.G_inf**2 for b in blocks) / total,
        analog_blocks=len(analog),
        analog_share=math.fsum(b.noise_share for b in analog) / total,
    )
