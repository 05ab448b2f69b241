r"""Tiki-Taka (aihwkit ``TransferCompound``): a fast array A takes the gradient, a slow array C
holds the weights, and every ``T`` updates a slice of A is read and written into C.

Per run (ensemble of ``R`` members), with the arrays of shape ``(R, n_weights)``:

.. math::

    A_{k+1} = U_A(A_k, -\alpha g_k), \qquad
    C_{k+1} = \begin{cases} U_C(C_k, \beta\, S_j A_{k+1}) & (k + 1) \bmod T = 0 \\
              C_k & \text{otherwise} \end{cases}, \qquad
    W_{k+1} = \gamma A_{k+1} + C_{k+1},

where ``g_k`` is the run's stochastic gradient at the (possibly stale) effective weights,
:math:`U_A`, :math:`U_C` the update of the run (:class:`simulate.device.updates.Updater`:
``expected``, or ``pulsed`` with its pulse type) on the devices of A (``fast_device``, default the
run's device) and of C (the run's device), :math:`\beta = \alpha\,` ``transfer_lr`` (aihwkit's
default ``scale_transfer_lr=True``: the transfer rate is relative to the SGD step; dimensionless),
:math:`\gamma` = ``tt_gamma`` (0 allowed: the forward reads C alone, aihwkit's default) and
:math:`S_j` the selection of the slice transferred at that event:

- ``transfer_slice="column"`` (aihwkit's ``n_reads_per_transfer=1``, ``transfer_columns=True``):
  one column of every tile, round robin (column ``j`` of a tile at its ``j``-th event modulo its
  columns), each tile keeping its own pointer;
- ``transfer_slice="all"``: every column of every tile at every event.

The transfer follows aihwkit's ``readAndUpdate``: the column is read through the forward path (a
plain read: an MVM with a one-hot input returns the column of A exactly; read noise is not
modelled) and written into C by the update of the run with increment :math:`\beta` times what was
read (aihwkit's outer product of the one-hot input and the read vector, whose pulses are counted
element-wise here with the run's pulse type). A is not reset (aihwkit) unless
``transfer_reset``: then the transferred columns of A are set to 0 right after the write,
:math:`A \leftarrow (I - S_j) A`. At the start ``A_0 = 0`` and ``C_0 = W_0`` (aihwkit's
``onSetWeights``: the last device gets the weights).

**Digital fast buffer.** ``fast_device="digital"`` (:data:`simulate.device.catalog.DIGITAL_FAST`)
makes A ideal: :math:`U_A(A, \Delta) = A + \Delta` exactly, no device, no pulses and no randomness
(TT-v2's digital buffer; A is then read exactly, C keeps the run's update and device). The
state then reports the ``digital`` kind, so a network hands it increments (no bit trains);
:attr:`TikiTaka.device` is C's device. With ``gamma = 0``, ``transfer_slice="all"`` and the
reset this is Corollary TT0 of docs/theory.md (registry ``tiki_taka_reset``,
``tiki_taka_reset_sp``): C is then analog SGD with step :math:`\beta\alpha T` on the mean of
the ``T`` gradients of a window.

**Tiles and columns.** A tile is one crossbar; a *column* is the block of its weights fed by one
input line, contiguous in the flat weight array:

- networks: each layer (``fan_in x fan_out``, stored row-major) is a tile of ``fan_in`` columns
  of ``fan_out`` weights (input ``i`` drives the weights ``W[i, :]``, aihwkit's column ``i``);
- oracle problems: stage ``m``'s block of ``n_m`` coordinates is one tile of
  ``c_m = ceil(sqrt(n_m))`` columns of ``h_m = ceil(n_m / c_m)`` consecutive coordinates (the last
  column may be shorter, :func:`oracle_tiles`).

**Updates, not writes.** ``T`` counts updates (mini-batches), under both write semantics: with
per-sample writes (``write="per-sample"``) an update of ``n`` samples is ``n`` writes of A, and the
event follows the last write of every ``T``-th update (:attr:`TransferRule.writes_per_update`
``= n``; aihwkit's ``units_in_mbatch=True``), so the cycles' :math:`\lfloor k/T\rfloor` events are
the events run.

**Pipelines.** Each stage's tiles live on its accelerator and are transferred on the stage's own
update count; every stage applies exactly one update per update ``k`` in the ``none``, ``sync``
and ``async`` schedules, so every count equals ``k + 1`` after update ``k``. The forward of a stage
reads the effective weights ``W`` (the asynchronous pipeline's :class:`simulate.pipeline.staleness.
StaleVersions` stores stale *effective* weights, exactly as for analog SGD); the update goes to A.

**Clock cycles of a transfer.** Reading one column is one MVM (one cycle, like a forward) and
writing it into C one pulse update (one cycle): :data:`CYCLES_PER_COLUMN` ``= 2`` per column. A
stage transfers its tiles one after the other; the stages transfer at the same time, after the
update, and the pipeline waits for the slowest stage. So each transfer event adds

.. math:: c_T = 2 \max_m \sum_{\text{tiles of } m} s_{\text{tile}}

cycles (``s = 1`` for ``column``, the tile's columns for ``all``), and after ``k`` updates
:func:`transfer_cycles` ``= \lfloor k/T \rfloor c_T`` cycles are added on top of the schedule's
(:func:`simulate.pipeline.staleness.cycles_after`, unchanged).

**Randomness.** The pulses of A and then of C come from the member's ``device`` stream
(:mod:`simulate.rng`), in that order, row by row: member ``r`` alone gives the bits of member
``r`` in any ensemble. A's device-to-device spread (if its device has one) is drawn from the same
stream when the state is built, after the run's (C's) spread.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from theory import schedules
from theory.errors import ParameterError
from theory.schedules import CYCLES_PER_COLUMN, TRANSFER_SLICES

from .catalog import DIGITAL_FAST, fast_device_named
from .draws import DeviceSpread
from .updates import Updater

__all__ = [
    "CYCLES_PER_COLUMN", "TikiTaka", "Tile", "TransferRule", "layer_tiles", "oracle_tiles",
    "transfer_cycles", "wrap",
]


@dataclass(frozen=True)
class Tile:
    """One crossbar in the flat weight array: ``columns`` columns of ``height`` weights.

    Attributes
    ----------
    stage : int
        The pipeline stage whose accelerator holds the tile (0-based).
    start, size : int
        Offset and number of its weights in the flat ``(R, n_weights)`` arrays.
    height : int
        Weights per column (the last column holds ``size - (columns - 1) height``).
    """

    stage: int
    start: int
    size: int
    height: int

    @property
    def columns(self) -> int:
        """Number of columns, ``ceil(size / height)``."""
        return -(-self.size // self.height)

    def column(self, j: int) -> np.ndarray:
        """Flat indices of column ``j``."""
        lo = self.start + j * self.height
        return np.arange(lo, min(lo + self.height, self.start + self.size))


def oracle_tiles(blocks) -> tuple[Tile, ...]:
    """One tile per stage block (slices of the oracle's weight vector): ``c = ceil(sqrt(n))``
    columns of ``ceil(n / c)`` consecutive coordinates."""
    tiles = []
    for stage, block in enumerate(blocks):
        size = block.stop - block.start
        columns = math.isqrt(size - 1) + 1 if size > 1 else 1
        tiles.append(Tile(stage, block.start, size, -(-size // columns)))
    return tuple(tiles)


def layer_tiles(network) -> tuple[Tile, ...]:
    """One tile per layer of a :class:`simulate.problems.network.Network`: ``fan_in`` columns of
    ``fan_out`` weights (row ``i`` of the row-major ``fan_in x fan_out`` matrix)."""
    tiles = []
    for stage, (layers, block) in enumerate(zip(network.stages, network.weight_slices,
                                                strict=True)):
        for layer in layers:
            tiles.append(Tile(stage, block.start + layer.w_offset, layer.w_size, layer.fan_out))
    return tuple(tiles)


@dataclass(frozen=True)
class TransferRule:
    """The transfer settings of a run (``SimConfig.transfer_every`` etc.).

    Attributes
    ----------
    every : int
        ``T``: a transfer event after every ``T``-th update (>= 1).
    lr : float
        ``beta``, the absolute transfer rate (>= 0; 0 never writes C).
    gamma : float
        Weight of A in the effective weight ``W = gamma A + C`` (>= 0).
    slice : {"column", "all"}
    reset : bool
        Set the transferred columns of A back to 0 after each transfer (default ``False``).
    writes_per_update : int
        Writes of A that make one update (>= 1): ``n`` under per-sample writes (an update of
        ``n`` samples is ``n`` rank-1 writes), else 1. ``every`` counts updates, so an event
        follows every ``every * writes_per_update``-th write (aihwkit's ``units_in_mbatch=True``).
    """

    every: int = 1
    lr: float = 1.0
    gamma: float = 0.0
    slice: str = "column"
    reset: bool = False
    writes_per_update: int = 1

    def __post_init__(self):
        if self.slice not in TRANSFER_SLICES:
            raise ParameterError(
                f"transfer_slice={self.slice!r} is unknown; valid: {', '.join(TRANSFER_SLICES)}")
        if not isinstance(self.writes_per_update, int) or self.writes_per_update < 1:
            raise ParameterError(
                f"writes_per_update={self.writes_per_update!r} is out of range; valid: integer "
                "in [1, inf)")

    @classmethod
    def from_config(cls, config) -> TransferRule:
        """``beta = config.transfer_lr * config.lr`` (aihwkit's ``scale_transfer_lr=True``);
        ``config.samples_per_update`` writes per update under ``write="per-sample"``, else 1."""
        writes = config.samples_per_update if config.write == "per-sample" else 1
        return cls(config.transfer_every, config.transfer_lr * config.lr, config.tt_gamma,
                   config.transfer_slice, config.transfer_reset, writes)


class TikiTaka:
    """The Tiki-Taka state of a run, called like a :class:`simulate.device.updates.Updater`.

    ``state(w, dw, rng, spread)`` applies ``dw`` to A (``w`` is ignored: it is the effective
    weight the caller holds), runs a transfer event when one is due and returns the new effective
    weights ``gamma A + C`` (a new array). :meth:`fire` does the same for pulse counts made
    outside (a network's bit trains). Each call is one write; ``rule.writes_per_update`` calls
    are one update (:attr:`count`), and the events follow every ``rule.every``-th update.

    Parameters
    ----------
    fast, slow : Updater
        The updates of A and of C (same kind and pulse type, their own devices).
    rule : TransferRule
    tiles : tuple of Tile
        The crossbars, covering the weights.
    w0 : ndarray, shape (R, n_weights)
        The initial weights (``C_0``; ``A_0 = 0``).
    fast_spread, slow_spread : DeviceSpread, optional
        Device-to-device spreads of A and C.
    """

    def __init__(self, fast: Updater, slow: Updater, rule: TransferRule, tiles, w0,
                 fast_spread: DeviceSpread | None = None,
                 slow_spread: DeviceSpread | None = None):
        self.fast, self.slow, self.rule, self.tiles = fast, slow, rule, tuple(tiles)
        self.fast_spread = DeviceSpread() if fast_spread is None else fast_spread
        self.slow_spread = DeviceSpread() if slow_spread is None else slow_spread
        self.c = np.array(w0, dtype=float)
        self.a = np.zeros_like(self.c)
        self.count = 0  # updates (each of rule.writes_per_update writes)
        self.writes = 0
        self.pointers = [0] * len(self.tiles)
        self._all = np.concatenate([np.arange(t.start, t.start + t.size) for t in self.tiles])

    # what the simulators read of an Updater
    @property
    def kind(self) -> str:
        return self.fast.kind

    @property
    def pulse_type(self) -> str:
        return self.fast.pulse_type

    @property
    def device(self):
        """A's device, or C's when A is a digital buffer."""
        return self.slow.device if self.fast.device is None else self.fast.device

    @property
    def lr(self):
        return self.fast.lr

    @property
    def uses_dtod(self) -> bool:
        return self.fast.uses_dtod or self.slow.uses_dtod

    def weights(self) -> np.ndarray:
        """The effective weights ``gamma A + C`` (a new array)."""
        if self.rule.gamma == 0:
            return self.c.copy()
        return self.rule.gamma * self.a + self.c

    def __call__(self, w, dw, rng=None, spread=None) -> np.ndarray:
        self.a = self.fast(self.a, dw, rng, self.fast_spread)
        return self._finish(rng)

    def fire(self, w, pulses, up, rng, spread=None) -> np.ndarray:
        """Fire pulse counts made outside on A (:meth:`simulate.device.updates.Updater.fire`)."""
        self.a = self.fast.fire(self.a, pulses, up, rng, self.fast_spread)
        return self._finish(rng)

    def _finish(self, rng) -> np.ndarray:
        """After a write of A: the write count, and at the last write of an update the update
        count and a transfer event after every ``rule.every``-th update."""
        self.writes += 1
        if self.writes % self.rule.writes_per_update == 0:
            self.count += 1
            if self.count % self.rule.every == 0:
                self.transfer(rng)
        return self.weights()

    def due_columns(self) -> np.ndarray:
        """Flat indices the next transfer event moves (sorted within each tile)."""
        if self.rule.slice == "all":
            return self._all
        return np.concatenate([t.column(p) for t, p in zip(self.tiles, self.pointers,
                                                           strict=True)])

    def transfer(self, rng=None) -> None:
        """One transfer event: read the due columns of A, write ``beta`` times them into C, and
        with ``rule.reset`` set those columns of A to 0."""
        idx = self.due_columns()
        if self.rule.slice == "column":
            self.pointers = [(p + 1) % t.columns for t, p in zip(self.tiles, self.pointers,
                                                                 strict=True)]
        if self.rule.lr != 0:
            read = self.a[:, idx]  # the forward read of a one-hot input: the column, exactly
            spread = DeviceSpread(*(None if s is None else s[:, idx] for s in
                                    (self.slow_spread.dw_min_scale,
                                     self.slow_spread.bound_scale)))
            self.c[:, idx] = self.slow(self.c[:, idx], self.rule.lr * read, rng, spread)
        if self.rule.reset:
            self.a[:, idx] = 0.0

    @property
    def event_cycles(self) -> int:
        """Cycles of one transfer event, ``CYCLES_PER_COLUMN * max_m sum_tiles s``
        (:func:`theory.schedules.transfer_event_cycles`, the one rule)."""
        per_stage: dict[int, list[int]] = {}
        for t in self.tiles:
            per_stage.setdefault(t.stage, []).append(t.columns)
        return schedules.transfer_event_cycles(per_stage.values(), self.rule.slice)

    def pinned_monitor(self, spread=None):
        """C's :class:`simulate.device.pinned.PinnedMonitor` when the forward reads C alone
        (``gamma = 0``), else ``None`` (``gamma A + C`` has no device bounds)."""
        if self.rule.gamma != 0:
            return None
        return self.slow.pinned_monitor(self.slow_spread)


def wrap(config, updater: Updater, spread: DeviceSpread | None, w0, tiles, rngs):
    """``updater`` itself, or for ``config.algorithm == "tiki-taka"`` the :class:`TikiTaka` state
    whose C uses ``updater`` and ``spread`` (the run's device and spread) and whose A uses
    ``config.fast_device`` (default the run's device; its spread is drawn from ``rngs``;
    ``"digital"``: an ideal buffer, the ``digital`` update, nothing drawn)."""
    if config.algorithm != "tiki-taka":
        return updater
    if config.fast_device == DIGITAL_FAST:
        fast = Updater("digital", None, updater.lr)
    else:
        fast, device = updater, fast_device_named(config.fast_device, config.tau)
        if device is not None:
            fast = Updater(updater.kind, device, updater.lr, updater.pulse_type)
    fast_spread = (DeviceSpread.draw(fast.device, np.shape(w0), rngs) if fast.uses_dtod
                   else None)
    return TikiTaka(fast, updater, TransferRule.from_config(config), tiles, w0, fast_spread,
                    spread)


def transfer_cycles(updater, updates) -> np.ndarray | int:
    """Cycles the transfers add after ``updates`` updates: ``floor(k/T) c_T`` for a
    :class:`TikiTaka` state, 0 for any other update (int64 like the schedule's cycles)."""
    if not isinstance(updater, TikiTaka):
        return 0
    updates = np.asarray(updates, dtype=np.int64)
    return schedules.transfer_cycles(updates, updater.rule.every, updater.event_cycles)
