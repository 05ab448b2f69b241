r"""The step of a run as a decision: the stability limit of the asynchronous recursion.

On :math:`f = (L/2) w^2` with a constant response :math:`q` and a block of forward delay
:math:`D`, the asynchronous update is the delayed recursion
:math:`w_{k+1} = w_k - a\,w_{k-D}` with :math:`a = \alpha L q`. Its characteristic polynomial
:math:`z^{D+1} - z^D + a` has every root inside the unit circle iff

.. math:: 0 < a < 2 \sin\!\Bigl(\frac{\pi}{4D + 2}\Bigr),

(:math:`a < 2` at :math:`D = 0`, gradient descent), so no step above

.. math:: \alpha_{\mathrm{stab}}(D) = \frac{2 \sin(\pi / (4D + 2))}{L\, q_{\max}}

can be stable on every problem of curvature :math:`L` (``docs/theory.md``, Theorem 4', remark on
the cap; ``tests/test_ap_stability.py`` checks the root moduli and that the simulator diverges
just above it). Every proved asynchronous step cap lies below this limit; a step chosen by a
forecast (a calibration) is searched up to it, never beyond.
"""

from __future__ import annotations

import numpy as np

from theory.errors import check_range

__all__ = ["stability_limit"]


def stability_limit(D, L=1.0, q_max=1.0):
    r"""The largest stable step of the delayed recursion, :math:`2\sin(\pi/(4D+2))/(L q_{\max})`.

    Parameters
    ----------
    D : int or array_like
        The maximal forward delay (``M - 1`` for an asynchronous pipeline of ``M`` stages;
        0 for a run without staleness), >= 0.
    L : float
        The smoothness constant (the largest curvature), > 0.
    q_max : float
        The largest response factor of the device (1 for a digital update), > 0.

    Returns
    -------
    float or numpy.ndarray
        :math:`\alpha_{\mathrm{stab}}`; a float for scalar ``D``.
    """
    delays = np.asarray(D, dtype=float)
    for delay in delays.ravel():
        check_range("D", float(delay), low=0)
    check_range("L", L, low=0, low_open=True)
    check_range("q_max", q_max, low=0, low_open=True)
    limit = 2.0 * np.sin(np.pi / (4.0 * delays + 2.0)) / (L * q_max)
    return float(limit) if limit.ndim == 0 else limit
