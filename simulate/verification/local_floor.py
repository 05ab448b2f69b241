r"""The iterate average of Theorem LF measured along a simulated run (the ``*_local`` rows).

Theorem LF (docs/theory.md) replaces the worst case :math:`G_\infty^2` of a floor by

.. math:: \overline{G^2}_K = \frac1K\sum_{k=0}^{K-1}\mathbb{E}\sum_i s_i G_i(W_k)^2

with :math:`s_i` the noise's share of coordinate :math:`i` (assumption A2S; the oracle noise is
isotropic, :math:`s_i = 1/d`; digital coordinates of a ``mixed`` run have :math:`G = 0`).
:func:`run_measuring_g2` runs an oracle configuration with :func:`simulate.engine.run`
(its ``observe`` hook reads the iterates: the same bits) and evaluates
:math:`\sum_i s_i G_i(W)^2` at the **logging points** only, outside the update loop's arithmetic.
The estimate is the ensemble mean over the logged iterates
``k < K`` (with per-sample writes the proof's points are the
intermediate weights, which differ from the iterates by one update's drift; Tiki-Taka's C is held
between its writes, so the average over the updates is the average over C's writes).
"""

from __future__ import annotations

import numpy as np

from theory.errors import ParameterError

from ..config import SimConfig, device_from_config
from ..engine import run
from ..problems import NETWORK_PROBLEMS, make_problem, stage_blocks, sum_in_order
from ..problems.oracle import Quadratic
from ..trace import Trace

__all__ = ["G2Measurement", "g2_of_weights", "run_measuring_g2"]


def g2_of_weights(config: SimConfig, w: np.ndarray, device=None) -> np.ndarray:
    r"""Per row of ``w`` (shape ``(R, d)``): :math:`\sum_i s_i G(w_i)^2` with the oracle noise's
    shares :math:`s_i = 1/d` (isotropic, :meth:`simulate.problems.oracle.OracleProblem.noise`),
    i.e. the mean of :math:`G(w_i)^2` over the coordinates; the stages of ``digital_stages``
    (``mixed`` runs, Theorem 2M) contribute 0. ``device``: the config's device
    (:func:`simulate.config.device_from_config`), built here when not given."""
    device = device_from_config(config) if device is None else device
    g2 = device.G(np.asarray(w, dtype=float)) ** 2
    if config.algorithm == "mixed" and config.digital_stage_indices:
        blocks = stage_blocks(g2.shape[1], config.stages)
        g2 = g2.copy()
        for stage in config.digital_stage_indices:
            g2[:, blocks[stage - 1]] = 0.0
    return g2.mean(axis=1)


class G2Measurement:
    r"""A run's trace and its measured iterate average (Theorem LF).

    Attributes
    ----------
    trace : Trace
        The run's trace (bit for bit :func:`simulate.engine.run`'s).
    per_seed : ndarray, shape (R,)
        Per member, the mean of :func:`g2_of_weights` over the logged iterates ``k < K``.
    points : int
        Logged iterates averaged (``K`` when every iterate is logged).
    distance2 : ndarray, shape (R,)
        Per member, the mean over the logged iterates ``k < K`` of
        :math:`\sum_i s_i (W_{k,i} - w^*_i)^2` (:math:`s_i = 1/d`; :math:`W^*` the quadratic's
        ``w_star``, the least-squares ``x_lstsq``): Corollary LF's condition :math:`C_\rho`
        holds for :math:`\rho^2` at least its ensemble mean (:attr:`radius`).
    g_star : float
        :math:`g_\star = (\sum_i s_i G(w^*_i)^2)^{1/2}` at that :math:`W^*`
        (:func:`g2_of_weights`).
    """

    def __init__(self, trace: Trace, per_seed: np.ndarray, points: int, distance2: np.ndarray,
                 g_star: float):
        self.trace, self.per_seed, self.points = trace, per_seed, points
        self.distance2, self.g_star = distance2, g_star

    @property
    def radius(self) -> float:
        r"""The smallest :math:`\rho` of :math:`C_\rho` on this ensemble: the root of the mean
        of :attr:`distance2`."""
        return float(np.sqrt(np.mean(self.distance2)))

    @property
    def mean(self) -> float:
        """The ensemble mean: the estimate of ``G2_iter``."""
        return float(np.mean(self.per_seed))


def run_measuring_g2(config: SimConfig) -> G2Measurement:
    """Run the oracle ``config`` (every member) and measure ``G2_iter`` at its logging points.

    Raises
    ------
    ParameterError
        A network problem or a run with replicas (the theorems' iterates are one array's).
    """
    if config.problem in NETWORK_PROBLEMS or config.replicas != 1:
        raise ParameterError(
            f"problem={config.problem!r}, replicas={config.replicas}: G2_iter is measured on "
            "oracle runs of one replica")
    problem = make_problem(config, config.seed)  # for W* only: the run builds its own
    device = device_from_config(config)
    w_star = np.asarray(problem.w_star if isinstance(problem, Quadratic) else problem.x_lstsq,
                        dtype=float)
    measured = _IterateSums(config, device, w_star)
    trace = run(config, observe=measured.observe)
    total, distance2, points = measured.sums()
    g_star = float(np.sqrt(g2_of_weights(config, w_star[None, :], device)[0]))
    return G2Measurement(trace, total / points, points, distance2 / points, g_star)


class _IterateSums:
    r"""The sums over the logged iterates ``k < K`` of :func:`g2_of_weights` and of
    :math:`\frac1d \lVert W_k - W^* \rVert^2`, per member, added in the order of the iterates
    (the bits of adding one iterate at a time).

    The iterates are copied into a buffer of :data:`_BUFFERED` and evaluated a buffer at a time
    (one call of the device's ``G`` on all of them instead of one per iterate: verify's runs log
    every iterate); per iterate the row-wise ``G`` and means are those of one call on that
    iterate alone, and :func:`simulate.problems.oracle.sum_in_order` adds them in order.
    """

    def __init__(self, config: SimConfig, device, w_star: np.ndarray):
        self._config, self._device, self._w_star = config, device, w_star
        self._total, self._distance2 = np.zeros(config.seeds), np.zeros(config.seeds)
        self._buffer, self._filled, self._points = None, 0, 0

    def observe(self, k: int, w: np.ndarray) -> None:
        """The engine's ``observe`` hook: keep a copy of ``W_k`` for ``k < K``."""
        if k >= self._config.steps:
            return
        if self._buffer is None:
            self._buffer = np.empty((_BUFFERED, *w.shape))
        self._buffer[self._filled] = w
        self._filled += 1
        if self._filled == _BUFFERED:
            self._flush()

    def sums(self) -> tuple[np.ndarray, np.ndarray, int]:
        """The two sums, shape (R,) each, and the number of iterates they hold."""
        self._flush()
        return self._total, self._distance2, self._points

    def _flush(self) -> None:
        n = self._filled
        if n == 0:
            return
        held = self._buffer[:n]
        rows = held.reshape(n * held.shape[1], held.shape[2])
        g2 = g2_of_weights(self._config, rows, self._device).reshape(n, -1)
        d2 = np.mean((rows - self._w_star) ** 2, axis=1).reshape(n, -1)
        self._total = sum_in_order(self._total, g2)
        self._distance2 = sum_in_order(self._distance2, d2)
        self._points += n
        self._filled = 0


#: logged iterates evaluated together by :class:`_IterateSums`
_BUFFERED = 256
