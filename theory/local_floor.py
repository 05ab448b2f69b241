r"""Corollary LF (docs/theory.md): a value of Theorem LF's ``G2_iter`` a user can evaluate.

Under condition :math:`C_\rho` (the iterates' noise-weighted mean-square distance to a point
:math:`W^*`, :math:`\frac1K\sum_{k<K}\mathbb{E}\sum_i s_i (W_{k,i} - w^*_i)^2 \le \rho^2`, over the
points where the response is evaluated) and A2S,

.. math::

    \overline{G^2}_K \le G_\rho^2, \qquad G_\rho = \min\bigl(g_\star + \ell\,\rho,\ G_\infty\bigr),

with :math:`g_\star = (\sum_i s_i G(w^*_i)^2)^{1/2}` (at most :math:`\max_i |G(w^*_i)|`) and
:math:`\ell` a Lipschitz constant of :math:`G` on the weight region: :math:`|G(w)| \le
|G(w^*_i)| + \ell |w - w^*_i|`, and Minkowski's inequality in :math:`L^2` over
:math:`(k, \omega, i)` with weights :math:`s_i/K` gives :math:`g_\star + \ell\rho`. For the affine
response families (soft bounds, asymmetric soft bounds, linear and constant step:
:meth:`theory.devices.ResponseFamily.affine_responses`) :math:`G` is affine and
:math:`\ell = |\beta_- - \beta_+|/2` exactly (:func:`asymmetry_lipschitz`). The ``*_local`` rows
at ``G2_iter = G_rho^2`` are then valid bounds, conditional on :math:`C_\rho`
(:func:`ball_g2_iter`; ``aimc-pipeline bounds --g-star X --radius RHO``).
"""

from __future__ import annotations

from .devices import Device
from .errors import ParameterError, check_range

__all__ = ["asymmetry_lipschitz", "ball_g2_iter"]


def asymmetry_lipschitz(device: Device) -> float:
    r""":math:`\ell = \sup |G'|`: for an affine family :math:`G(w) = ((\alpha_- - \alpha_+) +
    (\beta_- - \beta_+) w)/2`, so :math:`\ell = |\beta_- - \beta_+|/2`.

    Raises
    ------
    ParameterError
        A family whose responses are not affine (exponential, power with ``pow_gamma != 1``).
    """
    coefficients = device.response.affine_responses()
    if coefficients is None:
        raise ParameterError(
            f"device {device.name!r} ({device.family}) has non-affine responses: Corollary LF "
            "needs the Lipschitz constant of G, known here for the affine families (softbounds, "
            "asymmetric softbounds, linear and constant step)")
    (_, beta_plus), (_, beta_minus) = coefficients
    return abs(beta_minus - beta_plus) / 2


def ball_g2_iter(device: Device, g_star: float, radius: float, g_inf: float) -> float:
    r""":math:`G_\rho^2 = \min(g_\star + \ell\rho, G_\infty)^2`, Corollary LF's value of
    ``G2_iter``.

    Parameters
    ----------
    device : Device
        The device (its :func:`asymmetry_lipschitz`).
    g_star : float
        :math:`g_\star \ge 0`, the noise-weighted root mean square of :math:`G` at :math:`W^*`
        (any upper bound, e.g. :math:`\max_i |G(w^*_i)|`).
    radius : float
        :math:`\rho \ge 0` of :math:`C_\rho`: the iterates' noise-weighted root-mean-square
        distance to :math:`W^*` (weight units).
    g_inf : float
        :math:`G_\infty` of the region (A3), also an upper bound.
    """
    g_star = check_range("g_star", g_star, 0, None)
    radius = check_range("radius", radius, 0, None)
    g_inf = check_range("g_inf", g_inf, 0, None)
    return float(min(g_star + asymmetry_lipschitz(device) * radius, g_inf) ** 2)
