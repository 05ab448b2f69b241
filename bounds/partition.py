r"""Contiguous layer partitions and the activation memory a pipeline stage must hold.

**In-flight micro-batches.** A stage stores a micro-batch's activations from its forward until its
backward. With the closed forms of :mod:`theory.schedules`, the forward of micro-batch :math:`b` at
stage :math:`m` is at cycle :math:`F(b, m)` and its backward at :math:`F(b, m) + g(m)`; forwards are
injected every :math:`\delta` cycles. Both are read from the schedule (``g = backward_cycle -
forward_cycle``, ``delta = forward_cycle(b + 1) - forward_cycle(b)``, both checked to be free
of ``b``), so the largest number of micro-batches held at once is the number of injection
times in a closed window of :math:`g` cycles,

.. math::

    h(m) = \min\!\Big(\Big\lfloor \frac{g(m)}{\delta} \Big\rfloor + 1,\; \mathrm{count}\Big),

with count ``B`` for ``sync`` and ``none`` (one mini-batch) and unbounded for ``async``. For the
pipelined modes :math:`g = 2(M - m) + 1`, :math:`\delta = 2`, hence
:math:`h(m) = \min(M - m + 1, B)` (sync) and :math:`M - m + 1` (async): stage 1 holds
the most. Tested against the discrete-event timelines of :mod:`simulate.timeline`.

**Partition.** :func:`best_partition` splits the layers into exactly ``M`` non-empty contiguous
stages, minimising the bottleneck (the largest MVMs per sample of a stage) subject to every stage
fitting its accelerator's tiles and its activation budget. It is solved **exactly by dynamic
programming** over (stages used, layers covered),

.. math::

    V_j(i) = \min_{k < i,\ (k, i] \text{ feasible for stage } j} \max\big(V_{j-1}(k),
        W(k, i)\big), \qquad V_0(0) = 0,

with :math:`W(k, i)` the MVMs per sample of layers :math:`k+1..i`, in :math:`O(M \ell^2)` numpy
operations for :math:`\ell` layers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theory.errors import ParameterError, check_range

__all__ = ["Partition", "best_partition"]


@dataclass(frozen=True)
class Partition:
    """A split of the layers into contiguous stages.

    Attributes
    ----------
    starts : tuple of int
        Index of the first layer of each stage (0-based), stage 1 first; stage ``j`` holds layers
        ``starts[j] .. starts[j+1] - 1`` (the last stage ends at the last layer).
    layers : int
        Number of layers.
    work : tuple of int
        MVMs per sample of each stage.
    tiles : tuple of int
        Tiles of each stage.
    activations : tuple of int
        Activation values stored per sample by each stage.
    """

    starts: tuple[int, ...]
    layers: int
    work: tuple[int, ...]
    tiles: tuple[int, ...]
    activations: tuple[int, ...]

    @property
    def stages(self) -> int:
        """Number of stages ``M``."""
        return len(self.starts)

    @property
    def bottleneck(self) -> int:
        """MVMs per sample of the slowest stage."""
        return max(self.work)

    @property
    def sizes(self) -> tuple[int, ...]:
        """Layers per stage."""
        ends = (*self.starts[1:], self.layers)
        return tuple(e - s for s, e in zip(self.starts, ends, strict=True))

    @classmethod
    def from_starts(cls, starts, work, tiles, activations) -> Partition:
        """The partition with these stage starts over per-layer ``work, tiles, activations``."""
        starts = tuple(int(s) for s in starts)
        ends = (*starts[1:], len(work))

        def sums(values):
            return tuple(int(np.sum(values[s:e])) for s, e in zip(starts, ends, strict=True))

        return cls(starts, len(work), sums(work), sums(tiles), sums(activations))


def best_partition(
    work, tiles, activations, stages: int, tile_capacity: int, activation_caps=None
) -> Partition | None:
    """The contiguous partition into ``stages`` stages with the smallest bottleneck (exact DP).

    Parameters
    ----------
    work, tiles, activations : array of int, shape (layers,)
        Per layer: MVMs per sample, tiles, activation values stored per sample.
    stages : int
        ``M``, 1 <= M <= layers; every stage gets at least one layer.
    tile_capacity : int
        Tiles of one accelerator; a stage's tiles must not exceed it.
    activation_caps : array of float, shape (stages,), optional
        Largest activation values per sample stage ``j`` may store (``inf``: no limit).

    Returns
    -------
    Partition or None
        ``None`` when no partition satisfies the constraints. Among optimal partitions the DP
        returns the one whose stages start as early as possible (deterministic).
    """
    work = np.asarray(work, dtype=np.int64)
    tiles = np.asarray(tiles, dtype=np.int64)
    activations = np.asarray(activations, dtype=np.int64)
    n = len(work)
    if work.ndim != 1 or tiles.shape != work.shape or activations.shape != work.shape:
        raise ParameterError(
            f"work, tiles and activations must be 1-D arrays of one length (one entry per "
            f"layer); got shapes {work.shape}, {tiles.shape}, {activations.shape}"
        )
    stages = check_range("stages", stages, 1, n, integer=True)
    if activation_caps is None:
        caps = np.full(stages, np.inf)
    else:
        caps = np.asarray(activation_caps, dtype=float)
        if caps.shape != (stages,):
            raise ParameterError(
                f"activation_caps has shape {caps.shape}; valid: one cap per stage, ({stages},)"
            )
    prefix = [np.concatenate(([0], np.cumsum(v))) for v in (work, tiles, activations)]
    span = [p[None, :] - p[:, None] for p in prefix]  # [k, i]: layers k+1..i
    k_idx, i_idx = np.indices((n + 1, n + 1))
    base_ok = (k_idx < i_idx) & (span[1] <= tile_capacity)
    cost = np.where(base_ok, span[0], np.inf).astype(float)
    value = np.full(n + 1, np.inf)
    value[0] = 0.0
    choice = np.zeros((stages, n + 1), dtype=np.int64)
    for j in range(stages):
        ok = base_ok & (span[2] <= caps[j])
        cand = np.where(ok, np.maximum(value[:, None], cost), np.inf)
        choice[j] = np.argmin(cand, axis=0)
        value = cand[choice[j], np.arange(n + 1)]
    if not np.isfinite(value[n]):
        return None
    starts, end = [], n
    for j in range(stages - 1, -1, -1):
        end = int(choice[j, end])
        starts.append(end)
    return Partition.from_starts(starts[::-1], work, tiles, activations)
