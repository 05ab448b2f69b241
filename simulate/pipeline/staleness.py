r"""The pipeline machinery the oracle engine and the networks share (a leaf module).

- :func:`forward_delays`: the forward delay :math:`d_m` of each stage, from the closed form
  ``forward_delay`` of :mod:`theory.schedules` (:math:`M - m` for ``async``, 0 for ``none`` and
  ``sync``);
- :func:`cycles_after`: the clock cycles elapsed after ``K`` updates,
  :func:`theory.schedules.cycles_after` as integers (0 before the first update);
- :class:`StaleVersions`: **the** ring buffer of the stale weight versions each stage's forward
  still reads;
- :func:`divergence_limit` and :func:`check_divergence`: **the** divergence rule.

(A run pinned at its device bounds is the device's business: :mod:`simulate.device.pinned`.)

**Staleness.** At update ``k`` (0-based) the forward of stage ``m`` reads version
:math:`\max(0, k - d_m)` of its parameters, where version ``j`` is the parameters after ``j``
updates. Before the pipeline has filled (:math:`k < d_m`) that is the initial version :math:`W_0`.
Stage ``m`` keeps only :math:`d_m + 1` versions (none when :math:`d_m = 0`: it reads the current
parameters).

**Divergence.** A monitored quantity :math:`x` (a loss, a squared gradient norm, the weights) of a
run *diverges* at step ``k`` when a value is non-finite or

.. math:: |x_k| > F \max\bigl(1, \max |x_0|\bigr), \qquad F = \texttt{DIVERGENCE\_FACTOR} = 10^6,

relative to the run's start :math:`x_0`, so the rule does not depend on the scale of the problem
(the ``max(1, .)`` keeps a run that starts near 0 from tripping on noise). A squared quantity
:math:`x = y^2` uses the square of the limit of :math:`y`: :math:`F^2 \max(1, \max x_0)`.
This is the rule of the oracle problems (their gradient norm and weights) and of every run's
weights.

**Divergence of a network's training loss.** The mean cross-entropy of a classifier starts near
:math:`\log(\text{classes})` (2.3 nats on the digits) and a run that learns never climbs far
above its start, so the networks' training loss (at every logging point) uses the same rule with
the factor :math:`F_{\text{net}}` = ``NETWORK_LOSS_FACTOR`` = 10 instead of :math:`F`:

.. math:: L_k > F_{\text{net}} \max(1, \max L_0).

A loss 10 times its start means a mean probability of the true class below
:math:`e^{-23}` on the digits: the run has left the region where it learns (e.g. ``digits-mlp``
with ``lr = 1e4`` reaches 9141 nats at step 10). The largest ratio :math:`L_k / \max(1, L_0)`
measured in the package's network runs is 2.31 (the training figure, 18 runs), 1.01 (the network
tests, 33 runs) and below 1 (the README's digits table): the factor leaves 4x headroom.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache

import numpy as np

from theory import schedules
from theory.compiled import compile_expr
from theory.errors import DivergenceError, ParameterError
from theory.limits import MAX_COUNT
from theory.symbols import K

__all__ = [
    "DIVERGENCE_FACTOR",
    "NETWORK_LOSS_FACTOR",
    "StaleVersions",
    "check_divergence",
    "cycles_after",
    "divergence_limit",
    "forward_delays",
]

#: a quantity diverged when it exceeds this factor times max(1, its magnitude at the run's start)
DIVERGENCE_FACTOR = 1e6
#: a network's training loss diverged when it exceeds this factor times max(1, its start)
NETWORK_LOSS_FACTOR = 10.0


@cache
def forward_delays(mode: str, stages: int) -> tuple[int, ...]:
    """Forward delay ``d_m`` of each stage ``m = 1..M`` (the closed form of ``theory.schedules``).

    ``M - m`` for ``async`` (at most :func:`theory.schedules.max_delay`), 0 for ``none`` and
    ``sync``; cached.
    """
    delays = schedules.evaluate_schedule(
        mode, "forward_delay", stages=stages, stage=np.arange(1, stages + 1)
    )
    return tuple(int(d) for d in np.broadcast_to(delays, (stages,)))


def cycles_after(mode: str, stages: int, micro_batches: int, updates) -> np.ndarray:
    """Clock cycles elapsed after ``updates`` updates, int64, exact (0 before the first update).

    The closed form :func:`theory.schedules.cycles_for_iterations`: ``2MBK`` (none),
    ``2(B + M - 1)K`` (sync), ``2(K + M - 1)`` (async), evaluated in int64 after an exact Python
    integer check that the largest count fits (it never wraps).

    Raises
    ------
    ParameterError
        If a count exceeds ``MAX_COUNT`` (an int64).
    """
    updates = np.asarray(updates, dtype=np.int64)
    if updates.size:
        most = int(updates.max())
        need = {"none": 2 * stages * micro_batches * most, "sync":
                2 * (micro_batches + stages - 1) * most}.get(mode, 2 * (most + stages - 1))
        if need > MAX_COUNT:
            name, value = ("steps", most) if mode == "async" else ("micro_batches", micro_batches)
            raise ParameterError(
                f"{name}={value} asks for {need:.3g} clock cycles, more than an int64 holds "
                f"({MAX_COUNT:.3g})"
            )
    formula = compile_expr(schedules.cycles_for_iterations(mode), K)
    value = np.broadcast_to(formula(updates, {"M": int(stages), "B": int(micro_batches)}),
                            updates.shape)
    return np.where(updates == 0, 0, value).astype(np.int64)


class StaleVersions:
    """Ring buffers of the parameter versions each stage's forward will still read.

    Stage ``s`` (0-based) with forward delay ``d > 0`` keeps ``d + 1`` slots per parameter block;
    version ``j`` lives in slot ``j mod (d + 1)``. At update ``k`` its forward reads version
    ``max(0, k - d)``; pushing version ``k + 1`` overwrites version ``k - d``, the oldest, which is
    never read again. A stage with ``d = 0`` reads the current parameters and keeps no copy.

    Parameters
    ----------
    delays : sequence of int
        Forward delay of each stage (:func:`forward_delays`).
    initial : sequence of sequence of ndarray
        Per stage, its parameter blocks at version 0 (e.g. ``(weights,)`` or ``(weights,
        biases)``). Every slot starts as a copy of them, so before the pipeline has filled the
        forward reads the initial parameters.

    The stored arrays keep their memory for the buffer's lifetime: views built on
    :meth:`stored` once stay valid.
    """

    def __init__(self, delays: Sequence[int], initial: Sequence[Sequence[np.ndarray]]):
        self.delays = tuple(int(d) for d in delays)
        if len(initial) != len(self.delays):
            raise ValueError(f"{len(initial)} stages of parameters for {len(self.delays)} delays")
        rings = [
            tuple(np.repeat(np.asarray(block)[None], d + 1, axis=0) for block in blocks)
            for blocks, d in zip(initial, self.delays, strict=True)
        ]
        # per stage and slot, the stored blocks (views of the rings); per stage, each slot's version
        self._slots = [[tuple(ring[j] for ring in stage) for j in range(d + 1)] if d else None
                       for stage, d in zip(rings, self.delays, strict=True)]
        self._versions = [[0] * (d + 1) if d else None for d in self.delays]

    @property
    def stale(self) -> bool:
        """Whether any stage reads an old version (some delay is positive)."""
        return any(self.delays)

    def slot(self, k: int, s: int) -> int | None:
        """The slot stage ``s``'s forward reads at update ``k`` (``None`` when its delay is 0)."""
        d = self.delays[s]
        return max(0, k - d) % (d + 1) if d else None

    def version(self, k: int, s: int) -> int:
        """The version stage ``s``'s forward reads at update ``k``, as recorded in its slot."""
        slot = self.slot(k, s)
        return k if slot is None else self._versions[s][slot]

    def stored(self, s: int, slot: int) -> tuple[np.ndarray, ...]:
        """The parameter blocks of stage ``s`` stored in ``slot`` (views of the buffer)."""
        return self._slots[s][slot]

    def read(self, k: int, s: int) -> tuple[np.ndarray, ...] | None:
        """The blocks stage ``s``'s forward reads at update ``k`` (``None``: the current ones)."""
        d = self.delays[s]
        return self._slots[s][max(0, k - d) % (d + 1)] if d else None

    def push(self, version: int, blocks: Sequence[Sequence[np.ndarray]]) -> None:
        """Store ``blocks`` (per stage, its current parameter blocks) as ``version``."""
        for s, d in enumerate(self.delays):
            if not d:
                continue
            slot = version % (d + 1)
            for stored, block in zip(self._slots[s][slot], blocks[s], strict=True):
                np.copyto(stored, block)
            self._versions[s][slot] = int(version)


def divergence_limit(start, *, squared: bool = False, factor: float = DIVERGENCE_FACTOR) -> float:
    r"""The divergence limit of a quantity whose values at the run's start are ``start``.

    :math:`F \max(1, \max|x_0|)` with :math:`F` = ``factor`` (default
    :data:`DIVERGENCE_FACTOR`; :data:`NETWORK_LOSS_FACTOR` for a network's training loss); for a
    squared quantity (``squared=True``, e.g. :math:`\|\nabla f\|^2`) the square of the limit of
    its root, :math:`F^2 \max(1, \max x_0)`.
    """
    scale = max(1.0, float(np.max(np.abs(start))))
    return factor**2 * scale if squared else factor * scale


def check_divergence(step: int, quantity: str, values, limit: float, lr: float) -> None:
    """Raise :class:`~theory.errors.DivergenceError` if a value is non-finite or beyond ``limit``.

    The error names the step, the quantity, its worst value (``nan`` if any is ``nan``, else the
    largest in magnitude beyond the limit) and the learning rate.
    """
    magnitude = np.abs(values)
    worst = float(magnitude.max())
    if worst <= limit and math.isfinite(worst):  # False for nan
        return
    values = np.asarray(values)
    bad = values[~((magnitude <= limit) & np.isfinite(magnitude))]
    value = np.nan if np.isnan(bad).any() else bad.flat[np.argmax(np.abs(bad))]
    raise DivergenceError(step, quantity, float(value), lr)
