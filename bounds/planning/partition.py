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
the most. Tested against the discrete-event timelines of :mod:`simulate.pipeline.timeline`.

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

import math
from dataclasses import dataclass

import numpy as np

from theory.errors import ParameterError, check_range

__all__ = ["KindPartition", "KindTable", "Partition", "best_partition", "kind_partitions"]


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


@dataclass(frozen=True)
class KindPartition:
    """A split of a layer chain into contiguous stages, each on an accelerator kind.

    Attributes
    ----------
    starts : tuple of int
        First layer (0-based) of each stage, stage 1 first.
    kinds : tuple of int
        Index of the kind hosting each stage.
    stage_times : tuple of float
        Seconds of one forward (or backward) of a micro-batch on each stage.
    layers : int
        Layers of the chain.
    """

    starts: tuple[int, ...]
    kinds: tuple[int, ...]
    stage_times: tuple[float, ...]
    layers: int

    @property
    def stages(self) -> int:
        """Number of stages ``M``."""
        return len(self.starts)

    @property
    def bottleneck(self) -> float:
        """Seconds of the slowest stage: the pipeline's clock cycle."""
        return max(self.stage_times)

    @property
    def sizes(self) -> tuple[int, ...]:
        """Layers per stage."""
        ends = (*self.starts[1:], self.layers)
        return tuple(e - s for s, e in zip(self.starts, ends, strict=True))

    def used(self, kinds: int) -> tuple[int, ...]:
        """Stages on each of ``kinds`` kinds."""
        return tuple(self.kinds.count(t) for t in range(kinds))


@dataclass(frozen=True)
class KindTable:
    r"""The exact bottleneck of every stage count and kind usage (:func:`kind_partitions`).

    ``value[j][s]`` is the smallest slowest-stage time of a split into ``j + 1`` stages whose
    usage of the kinds is state ``s`` (the counts of all kinds but the last, flattened over
    ``counts[:-1] + 1``; the last kind's count is ``j + 1`` minus their sum), ``inf`` where no
    split exists. :meth:`best` reads it for given stage count and available counts,
    :meth:`partition` rebuilds a split.
    """

    value: tuple[np.ndarray, ...]
    kind_choice: tuple[np.ndarray, ...]
    start_choice: tuple[np.ndarray, ...]
    counts: tuple[int, ...]
    seg_times: tuple[np.ndarray, ...]

    def _usage(self) -> np.ndarray:
        """Counts of the first K-1 kinds of every state, shape (S, K-1)."""
        shape = tuple(c + 1 for c in self.counts[:-1])
        if not shape:
            return np.zeros((1, 0), dtype=np.int64)
        size = int(np.prod(shape))
        return np.array(np.unravel_index(np.arange(size), shape)).T.reshape(size, len(shape))

    def usage(self, stages: int) -> np.ndarray:
        """Counts of every kind of every state at ``stages`` stages, shape (S, K)."""
        first = self._usage()
        last = stages - first.sum(axis=1, keepdims=True)
        return np.concatenate([first, last], axis=1)

    def best(self, stages: int, available=None) -> tuple[float, int]:
        """Smallest bottleneck at ``stages`` stages using at most ``available`` of each kind.

        Returns ``(seconds, state)``; ``(inf, -1)`` when infeasible. Ties: the lowest state.
        """
        if not 1 <= stages <= len(self.value):
            return math.inf, -1
        available = self.counts if available is None else tuple(available)
        ok = np.all(self.usage(stages) <= np.asarray(available)[None, :], axis=1)
        values = np.where(ok, self.value[stages - 1][-1], np.inf)
        s = int(np.argmin(values))
        return (float(values[s]), s) if np.isfinite(values[s]) else (math.inf, -1)

    def partition(self, stages: int, state: int) -> KindPartition:
        """Rebuild the split of ``stages`` stages ending in ``state`` (from :meth:`best`)."""
        n = self.value[0].shape[0] - 1
        strides = _strides(self.counts)
        starts, kinds, times = [], [], []
        end, s = n, state
        for j in range(stages - 1, -1, -1):
            t = int(self.kind_choice[j][end, s])
            k = int(self.start_choice[j][end, s])
            starts.append(k)
            kinds.append(t)
            times.append(float(self.seg_times[t][k, end]))
            if t < len(self.counts) - 1:
                s -= strides[t]
            end = k
        return KindPartition(tuple(starts[::-1]), tuple(kinds[::-1]), tuple(times[::-1]), n)


#: largest [k, i, state] block of the kinds DP evaluated at once (32 MB of float64)
_CHUNK_CELLS = 2**22


def _strides(counts) -> tuple[int, ...]:
    shape = [c + 1 for c in counts[:-1]]
    strides, step = [0] * len(shape), 1
    for t in range(len(shape) - 1, -1, -1):
        strides[t] = step
        step *= shape[t]
    return tuple(strides)


def kind_partitions(seg_times, counts, max_stages: int) -> KindTable:
    r"""Exact DP: contiguous stages, each on a kind, at most ``counts[t]`` stages on kind ``t``.

    Parameters
    ----------
    seg_times : sequence of array, shape (n + 1, n + 1)
        Per kind ``t``, ``seg_times[t][k, i]`` is the time of a stage holding layers ``k..i-1``
        on kind ``t`` (``inf`` where it does not fit or may not host them; ``k >= i`` is never
        read).
    counts : sequence of int
        Accelerators of each kind.
    max_stages : int
        Largest stage count to solve (at most ``n`` and ``sum(counts)``).

    Notes
    -----
    With ``u`` the usage of the kinds (a state) and :math:`e_t` the unit vector of kind ``t``,

    .. math::

        V_j(i, u) = \min_{t,\ k < i} \max\big(V_{j-1}(k, u - e_t),\ T_t(k, i)\big),
        \qquad V_0(0, 0) = 0,

    over the states with :math:`u_t \le \mathrm{counts}_t` and :math:`\sum_t u_t = j`; the last
    kind's count is implied by ``j``, so a state holds the counts of the others. Among equal
    values the lowest start ``k``, then the lowest kind, wins (deterministic).
    """
    counts = tuple(int(c) for c in counts)
    seg = tuple(np.asarray(t, dtype=float) for t in seg_times)
    if not seg or len(seg) != len(counts):
        raise ParameterError(f"seg_times has {len(seg)} kinds and counts {len(counts)}; valid: "
                             "one segment-time table per kind, at least one")
    n = seg[0].shape[0] - 1
    max_stages = check_range("max_stages", max_stages, 1, min(n, sum(counts)), integer=True)
    strides = _strides(counts)
    shape = [c + 1 for c in counts[:-1]]
    size = int(np.prod(shape)) if shape else 1
    digits = (np.array(np.unravel_index(np.arange(size), shape)).T.reshape(size, len(shape))
              if shape else np.zeros((1, 0), dtype=np.int64))
    used = digits.sum(axis=1)
    k_idx, i_idx = np.indices((n + 1, n + 1))
    lower = k_idx < i_idx
    prev = np.full((n + 1, size), np.inf)
    prev[0, 0] = 0.0
    values, kinds, starts = [], [], []
    for j in range(1, max_stages + 1):
        last = j - used
        valid = (last >= 0) & (last <= counts[-1])
        states = np.flatnonzero(valid)  # only these can be reached with j stages
        rows = slice(j - 1, n + 1)  # a start k needs k >= j - 1 layers before it
        best = np.full((n + 1, size), np.inf)
        best_k = np.zeros((n + 1, size), dtype=np.int64)
        best_t = np.zeros((n + 1, size), dtype=np.int64)
        sub_best = np.full((n + 1, states.size), np.inf)
        sub_k = np.zeros((n + 1, states.size), dtype=np.int64)
        sub_t = np.zeros((n + 1, states.size), dtype=np.int64)
        for t, table in enumerate(seg):
            if t < len(counts) - 1:
                has = digits[states, t] >= 1
                src = np.full((n + 1, states.size), np.inf)
                src[:, has] = prev[:, states[has] - strides[t]]
            else:
                src = prev[:, states]
            src = src[rows]
            alive = np.flatnonzero(np.isfinite(src).any(axis=0))
            if not alive.size:
                continue
            cost = np.where(lower, table, np.inf)[rows]
            # states in chunks, so that one [k, i, s] block stays below _CHUNK_CELLS values
            step = max(1, _CHUNK_CELLS // cost.size)
            for first in range(0, alive.size, step):
                cols = alive[first:first + step]
                cand = np.maximum(src[:, None, cols], cost[:, :, None])  # [k, i, s]
                k_best = np.argmin(cand, axis=0)
                v = np.take_along_axis(cand, k_best[None], axis=0)[0]
                cur = sub_best[:, cols]
                better = v < cur
                sub_best[:, cols] = np.where(better, v, cur)
                sub_k[:, cols] = np.where(better, k_best + (j - 1), sub_k[:, cols])
                sub_t[:, cols] = np.where(better, t, sub_t[:, cols])
        best[:, states] = sub_best
        best_k[:, states] = sub_k
        best_t[:, states] = sub_t
        values.append(best)
        kinds.append(best_t)
        starts.append(best_k)
        prev = best
    return KindTable(tuple(values), tuple(kinds), tuple(starts), counts, seg)
