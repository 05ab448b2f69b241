r"""Dependency-driven discrete-event timelines of the three pipeline schedules.

The timeline is built from the **dependencies** of the actions, never from the closed forms of
:mod:`theory.schedules` (the tests compare the two):

* the forward ``F(b, m)`` of micro-batch ``b`` at stage ``m > 1`` needs ``F(b, m - 1)``;
* the backward ``B(b, M)`` needs ``F(b, M)``; ``B(b, m)``, ``m < M``, needs ``B(b, m + 1)``
  and ``F(b, m)``;
* a stage does at most one action per cycle, and an action finished in cycle ``t`` enables its
  dependents from cycle ``t + 1``;
* **injection**: ``sync`` injects micro-batch ``b`` of a mini-batch into stage 1 at cycle
  :math:`2(b - 1)` counted from the start of that mini-batch, ``async`` at cycle
  :math:`2(b - 1)` of the run; ``none`` injects it when micro-batch ``b - 1`` has fully
  finished (one micro-batch in flight);
* **updates**: ``none`` and ``sync`` flush: every stage updates at the end of the mini-batch's
  last cycle and the next mini-batch starts in the cycle after; ``async`` updates stage ``m`` at
  the end of the cycle of each of its backwards.

Every other action runs at the earliest cycle its dependencies and its stage allow (greedy list
scheduling). **Tie-break**: if a stage has several ready actions in one cycle, a backward goes
before a forward, then the lower micro-batch index first; the others wait one cycle and every such
wait is counted in :attr:`Timeline.stalls`. The closed forms predict that forwards and backwards
never collide in these schedules (opposite cycle parity), so ``stalls`` is measured to be 0
(tested).

One clock cycle is one stage doing one forward or one backward of one micro-batch; cycles count
from 0. The **weight version** an action reads is the number of updates its stage applied before
the action's cycle (an update at the end of cycle ``t`` is visible from cycle ``t + 1``). The
**delay** of an action of micro-batch ``b`` at stage ``m`` is

.. math::

    d = (u_b - 1) - v,

where :math:`u_b` is the number of updates stage ``m`` has applied once the update that contains
micro-batch ``b``'s gradient is done, and :math:`v` the version read: the number of updates missing
from the weights the action used, compared with exact (non-stale) SGD. For ``async`` after the
pipeline fills this is measured to be :math:`M - m` for forwards and 0 for backwards.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from functools import cache, cached_property

import numpy as np

from theory.errors import ParameterError, check_range
from theory.limits import MAX_TIMELINE_CELLS, check_size
from theory.vocabulary import MODES

__all__ = ["Event", "Timeline", "build_timeline", "timeline_cells"]

KINDS = ("F", "B", "U")
#: tie-break among ready actions of one stage in one cycle: backward first, then forward
_PRIORITY = {"B": 0, "F": 1}


@dataclass(frozen=True, order=True)
class Event:
    """One action of the timeline.

    Attributes
    ----------
    kind : {"F", "B", "U"}
        Forward, backward or weight update.
    stage : int
        Stage ``m`` (1 takes the input).
    micro_batch : int
        Micro-batch index ``b`` (1-based, over the whole run). For an update: the last micro-batch
        whose gradient it applies.
    cycle : int
        Clock cycle (from 0). An update happens at the end of this cycle.
    version : int
        Weight version read: updates of this stage applied before ``cycle``. For an update: the
        version it replaces (the stage holds ``version + 1`` afterwards).
    """

    kind: str
    stage: int
    micro_batch: int
    cycle: int
    version: int


def _validate(mode, stages, micro_batches, mini_batches) -> tuple[int, int, int]:
    if mode not in MODES:
        raise ParameterError(f"mode={mode!r} is unknown; valid modes {', '.join(MODES)}")
    stages = check_range("stages", stages, 1, integer=True)
    micro_batches = check_range("micro_batches", micro_batches, 1, integer=True)
    mini_batches = check_range("mini_batches", mini_batches, 1, integer=True)
    if mode == "async" and mini_batches != 1:
        raise ParameterError(
            f"mini_batches={mini_batches!r} is out of range for mode='async' (no mini-batches; "
            "give the run's micro-batch count as micro_batches); valid range [1, 1]"
        )
    return stages, micro_batches, mini_batches


def _run_block(stages: int, first: int, count: int, start: int, serial: bool):
    """List-schedule ``count`` micro-batches ``first..first+count-1`` from cycle ``start``.

    Returns the ``(kind, stage, micro_batch, cycle)`` actions and the number of stalls.
    """
    heap: list[tuple[int, int, int, int, str]] = []
    waiting: dict[tuple[int, int], int] = {}  # (b, m) -> dependencies B(b, m) still misses
    occupied: set[tuple[int, int]] = set()
    actions: list[tuple[str, int, int, int]] = []
    stalls = 0
    last = first + count - 1

    def push(cycle: int, kind: str, stage: int, b: int) -> None:
        heapq.heappush(heap, (cycle, stage, _PRIORITY[kind], b, kind))

    def satisfy_backward(b: int, stage: int, cycle: int) -> None:
        left = waiting.get((b, stage), 2) - 1
        if left:
            waiting[(b, stage)] = left
        else:
            waiting.pop((b, stage), None)
            push(cycle, "B", stage, b)

    if serial:
        push(start, "F", 1, first)
    else:
        for i in range(count):
            push(start + 2 * i, "F", 1, first + i)

    # every push is for a later cycle than the one popped, so cycles pop in non-decreasing order
    while heap:
        cycle, stage, _, b, kind = heapq.heappop(heap)
        if (stage, cycle) in occupied:
            stalls += 1
            push(cycle + 1, kind, stage, b)
            continue
        occupied.add((stage, cycle))
        actions.append((kind, stage, b, cycle))
        enabled = cycle + 1
        if kind == "F":
            if stage < stages:
                push(enabled, "F", stage + 1, b)
                satisfy_backward(b, stage, enabled)
            else:
                push(enabled, "B", stages, b)
        elif stage > 1:
            satisfy_backward(b, stage - 1, enabled)
        elif serial and b < last:
            push(enabled, "F", 1, b + 1)
    return actions, stalls


def _simulate(mode: str, stages: int, micro_batches: int, mini_batches: int):
    """All events of a run and its stall count (see the module docstring for the rules)."""
    actions: list[tuple[str, int, int, int]] = []
    updates: list[tuple[int, int, int]] = []  # (stage, micro_batch, cycle)
    stalls = 0
    if mode == "async":
        actions, stalls = _run_block(stages, 1, micro_batches, 0, serial=False)
        updates = [(m, b, t) for kind, m, b, t in actions if kind == "B"]
    else:
        start = 0
        for k in range(mini_batches):
            block, block_stalls = _run_block(
                stages, k * micro_batches + 1, micro_batches, start, serial=mode == "none"
            )
            actions += block
            stalls += block_stalls
            flush = max(t for *_, t in block)
            updates += [(m, (k + 1) * micro_batches, flush) for m in range(1, stages + 1)]
            start = flush + 1

    update_cycles: dict[int, list[int]] = {m: [] for m in range(1, stages + 1)}
    for m, _, t in sorted(updates, key=lambda u: u[2]):
        update_cycles[m].append(t)
    events = [
        Event(kind, m, b, t, bisect.bisect_left(update_cycles[m], t)) for kind, m, b, t in actions
    ]
    seen: Counter[int] = Counter()
    for m, b, t in sorted(updates, key=lambda u: (u[2], u[0])):
        events.append(Event("U", m, b, t, seen[m]))
        seen[m] += 1
    order = {kind: i for i, kind in enumerate(KINDS)}
    events.sort(key=lambda e: (e.cycle, e.stage, order[e.kind], e.micro_batch))
    return tuple(events), stalls


@cache
def _none_cycles(stages: int, micro_batches: int) -> int:
    return build_timeline("none", stages, micro_batches).cycles


@dataclass(frozen=True)
class Timeline:
    r"""The measured timeline of one schedule, with everything it implies.

    Attributes
    ----------
    mode : {"none", "sync", "async"}
    stages : int
        ``M``.
    micro_batches : int
        ``B`` micro-batches per mini-batch (``none``, ``sync``) or ``N`` in the run (``async``).
    events : tuple of Event
        Every forward, backward and update, sorted by cycle then stage.
    mini_batches : int
        Mini-batches simulated back to back (``none``, ``sync``; 1 for ``async``).
    stalls : int
        Cycles a ready action waited because its stage was busy (0 in these schedules).

    Notes
    -----
    Rates (:attr:`density`, :attr:`bubble_rate`, ...) are exact :class:`fractions.Fraction` s
    over the whole pipeline (all stages); per-stage counts are in :attr:`busy` and :attr:`idle`.
    """

    mode: str
    stages: int
    micro_batches: int
    events: tuple[Event, ...]
    mini_batches: int = 1
    stalls: int = 0

    def __post_init__(self):
        _validate(self.mode, self.stages, self.micro_batches, self.mini_batches)

    # -- counts -------------------------------------------------------------------------------
    @property
    def total_micro_batches(self) -> int:
        """Micro-batches in the run, ``micro_batches * mini_batches``."""
        return self.micro_batches * self.mini_batches

    @cached_property
    def cycles(self) -> int:
        """Total clock cycles: last forward/backward cycle + 1."""
        return 1 + max(e.cycle for e in self.events if e.kind != "U")

    @cached_property
    def busy(self) -> tuple[int, ...]:
        """Cycles each stage computes (stage 1 first)."""
        count = Counter(e.stage for e in self.events if e.kind != "U")
        return tuple(count[m] for m in range(1, self.stages + 1))

    @property
    def idle(self) -> tuple[int, ...]:
        """Bubble (idle) cycles of each stage, ``cycles - busy`` (stage 1 first)."""
        return tuple(self.cycles - busy for busy in self.busy)

    @property
    def density(self) -> Fraction:
        r"""Computation density :math:`\sum_m \mathrm{busy}_m / (M \cdot \mathrm{cycles})`."""
        return Fraction(sum(self.busy), self.stages * self.cycles)

    @property
    def bubble_rate(self) -> Fraction:
        r"""Bubble rate :math:`\sum_m \mathrm{idle}_m / \sum_m \mathrm{busy}_m` (idle per busy)."""
        return Fraction(sum(self.idle), sum(self.busy))

    @property
    def bubble_fraction(self) -> Fraction:
        r"""Bubble fraction :math:`\sum_m \mathrm{idle}_m / (M \cdot \mathrm{cycles})`."""
        return Fraction(sum(self.idle), self.stages * self.cycles)

    @property
    def cycles_per_micro_batch(self) -> Fraction:
        """Cycles per micro-batch (inverse throughput)."""
        return Fraction(self.cycles, self.total_micro_batches)

    @property
    def speedup(self) -> Fraction:
        r"""Throughput speedup over no pipeline: cycles of the simulated ``none`` timeline with the
        same number of micro-batches, divided by :attr:`cycles`."""
        return Fraction(_none_cycles(self.stages, self.total_micro_batches), self.cycles)

    # -- per-action arrays --------------------------------------------------------------------
    def action_cycles(self, kind: str) -> np.ndarray:
        """Cycle of every ``kind`` ("F" or "B") action, shape ``(stages, micro-batches)``.

        Row ``m - 1`` is stage ``m``, column ``b - 1`` is micro-batch ``b``.
        """
        return self._tables[self._check_kind(kind)][0].copy()

    def versions(self, kind: str) -> np.ndarray:
        """Weight version read by every ``kind`` action, shape ``(stages, micro-batches)``."""
        return self._tables[self._check_kind(kind)][1].copy()

    def delays(self, kind: str) -> np.ndarray:
        r"""Measured delay :math:`(u_b - 1) - v` of every ``kind`` action.

        Shape ``(stages, micro-batches)``. :math:`u_b` counts the updates of the stage up to and
        including the one that applies micro-batch ``b``'s gradient; :math:`v` is the version the
        action read.
        """
        return self._tables["U"][1] - self._tables[self._check_kind(kind)][1]

    @cached_property
    def _tables(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per kind, (cycle, version) arrays of shape ``(stages, micro-batches)``; for "U", the
        cycle and version of the update that applies each micro-batch's gradient."""
        shape = (self.stages, self.total_micro_batches)
        tables = {kind: (np.full(shape, -1, np.int64), np.full(shape, -1, np.int64))
                  for kind in KINDS}
        for e in self.events:
            cycles, versions = tables[e.kind]
            cycles[e.stage - 1, e.micro_batch - 1] = e.cycle
            versions[e.stage - 1, e.micro_batch - 1] = e.version
        # an update applies every micro-batch after the stage's previous update: fill backwards
        for array in tables["U"]:
            for col in range(self.total_micro_batches - 2, -1, -1):
                array[:, col] = np.where(array[:, col] < 0, array[:, col + 1], array[:, col])
        return tables

    def _check_kind(self, kind: str) -> str:
        if kind not in _PRIORITY:
            raise ParameterError(f"kind={kind!r} is unknown; valid kinds F, B")
        return kind

    @cached_property
    def forward_delay(self) -> tuple[int, ...]:
        """Forward delay of each stage (stage 1 first): the largest measured over micro-batches.

        For ``async`` this is the steady-state value once micro-batch ``b > M - m`` has reached
        stage ``m``; a run with fewer micro-batches never fills and reports the largest delay seen.
        """
        return tuple(int(d) for d in self.delays("F").max(axis=1))

    @cached_property
    def backward_delay(self) -> tuple[int, ...]:
        """Backward delay of each stage (stage 1 first): the largest measured over micro-batches."""
        return tuple(int(d) for d in self.delays("B").max(axis=1))

    @property
    def max_delay(self) -> int:
        """The largest forward or backward delay of any stage."""
        return max(self.forward_delay + self.backward_delay)

    # -- views --------------------------------------------------------------------------------
    def grid(self) -> list[list[str]]:
        """The timeline as rows of cells (stage 1 first): ``"F3"``, ``"B3"`` or ``"."`` (idle)."""
        rows = [["."] * self.cycles for _ in range(self.stages)]
        for e in self.events:
            if e.kind != "U":
                rows[e.stage - 1][e.cycle] = f"{e.kind}{e.micro_batch}"
        return rows

    def gantt(self) -> str:
        """A text Gantt chart: one row per stage, stage ``M`` on top, with a cycle axis below."""
        grid = self.grid()
        width = max(len(cell) for row in grid for cell in row) + 1
        label = len(f"stage {self.stages}")
        lines = [
            f"{f'stage {m}':>{label}} |" + "".join(f"{cell:>{width}}" for cell in grid[m - 1])
            for m in range(self.stages, 0, -1)
        ]
        step = next(s for s in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
                    if s * width > len(str(self.cycles)))
        axis = [" "] * (self.cycles * width)
        for t in range(0, self.cycles, step):
            text = str(t)
            end = (t + 1) * width
            axis[end - len(text):end] = text
        lines.append(f"{'':>{label}} +" + "-" * (self.cycles * width))
        lines.append(f"{'cycle':>{label}}  " + "".join(axis))
        lines.append(self._update_note())
        return "\n".join(lines)

    def _update_note(self) -> str:
        updates = [e for e in self.events if e.kind == "U"]
        per_stage = len(updates) // self.stages
        if self.mode == "async":
            return (f"updates: each stage after each of its backwards ({per_stage} per stage); "
                    "F<b>/B<b> forward/backward of micro-batch b, '.' idle")
        flushes = sorted({e.cycle for e in updates})
        return (f"updates: every stage at the end of cycle {', '.join(map(str, flushes))} "
                f"(flush; {per_stage} per stage); F<b>/B<b> forward/backward of micro-batch b, "
                "'.' idle")

    def summary(self) -> dict:
        """Every measured quantity as JSON-ready plain Python (rates as floats)."""
        return {
            "mode": self.mode,
            "stages": self.stages,
            "micro_batches": self.micro_batches,
            "mini_batches": self.mini_batches,
            "cycles": self.cycles,
            "busy_cycles_per_stage": list(self.busy),
            "bubble_cycles_per_stage": list(self.idle),
            "density": float(self.density),
            "bubble_rate": float(self.bubble_rate),
            "bubble_fraction": float(self.bubble_fraction),
            "cycles_per_micro_batch": float(self.cycles_per_micro_batch),
            "speedup": float(self.speedup),
            "forward_delay": list(self.forward_delay),
            "backward_delay": list(self.backward_delay),
            "max_delay": self.max_delay,
            "updates_per_stage": sum(e.kind == "U" for e in self.events) // self.stages,
            "stalls": self.stalls,
            "grid": self.grid(),
        }


def timeline_cells(mode: str, stages: int, micro_batches: int, mini_batches: int = 1) -> int:
    """Cells (stages x cycles) of the timeline :func:`build_timeline` would build, exactly.

    Counted from the run's shape alone (Python integers, before anything is built): ``none``
    runs ``2M`` cycles per micro-batch, ``sync`` ``2(B + M - 1)`` per mini-batch, ``async``
    ``2(N + M - 1)`` in all (the cycle counts the tests measure on built timelines).
    """
    stages, micro_batches, mini_batches = _validate(mode, stages, micro_batches, mini_batches)
    if mode == "none":
        cycles = 2 * stages * micro_batches * mini_batches
    elif mode == "sync":
        cycles = 2 * (micro_batches + stages - 1) * mini_batches
    else:
        cycles = 2 * (micro_batches + stages - 1)
    return stages * cycles


def build_timeline(
    mode: str, stages: int, micro_batches: int, *, mini_batches: int = 1
) -> Timeline:
    """Simulate a schedule from its dependencies and injection rule (module docstring).

    Parameters
    ----------
    mode : {"none", "sync", "async"}
        The schedule.
    stages : int
        Pipeline stages ``M >= 1``.
    micro_batches : int
        ``B >= 1`` micro-batches per mini-batch (``none``, ``sync``), or ``N >= 1`` micro-batches in
        the run (``async``).
    mini_batches : int, optional
        Mini-batches run back to back, each ending in a flush and update (``none``, ``sync``);
        must be 1 for ``async``.

    Returns
    -------
    Timeline
        Events and the measured cycles, bubbles, density, speedup and weight delays.

    Raises
    ------
    theory.errors.ParameterError
        For an unknown mode or a count out of range, or a timeline of more than
        :data:`theory.limits.MAX_TIMELINE_CELLS` cells (:func:`timeline_cells`; refused before
        anything is built).
    """
    stages, micro_batches, mini_batches = _validate(mode, stages, micro_batches, mini_batches)
    cells = timeline_cells(mode, stages, micro_batches, mini_batches)
    check_size("micro_batches", micro_batches, need=cells if cells < 10**300 else math.inf,
               limit=MAX_TIMELINE_CELLS,
               what="timeline cells (stages x cycles)",
               hint="the closed forms of theory.schedules give the same summary")
    events, stalls = _simulate(mode, stages, micro_batches, mini_batches)
    return Timeline(mode, stages, micro_batches, events, mini_batches, stalls)
