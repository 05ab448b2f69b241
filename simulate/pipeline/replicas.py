r"""Data-parallel and hybrid training of the oracle problems: ``R`` replicas averaged every ``P``.

``SimConfig.replicas = R`` puts ``R`` replicas on a leading axis inside each ensemble member
(rows ``r R, ..., r R + R - 1`` of the engine's weight array belong to member ``r``). Each replica
runs the run's ``mode`` (``none``: the planner's ``dp``; ``sync``/``async``: its ``hybrid``) on its
own gradient noise and device draws; every ``P = average_every`` updates the replicas of a member
are averaged and the mean is programmed back into every replica:

.. math::

    \bar W = \frac1R\sum_{j<R} W^{(j)}, \qquad
    W^{(j)} \leftarrow \operatorname{clip}_{[w_{\min}, w_{\max}]}\big(\bar W + \xi^{(j)}\big),
    \quad \xi^{(j)} \sim N(0, s^2 I),

with ``s = programming_error`` (weight units; no clip for the digital algorithm). **Why set, not
pulse:** the averaging of :mod:`bounds.modes` programs the mean with *closed-loop* pulses (write,
verify, repeat until within one pulse of the target), so the result is the target plus a
zero-mean error, not one open-loop expected update towards it (which would stop short by the
response factor ``q`` and is not how a tile is programmed to a value). Its noise model, the last
pulse's quantisation and cycle-to-cycle noise, is a per-weight error of std about
``dw_min sqrt(1/12 + dw_min_std^2)``; here ``s`` is given (default 0). The local-SGD row's
:math:`\nu = E\lVert\xi\rVert^2 = d\,s^2`.

**Randomness.** Replica 0 of member ``r`` uses the member's own streams (:mod:`simulate.rng`),
replica ``j >= 1`` the streams of ``SeedSequence(seed, spawn_key=(r, _REPLICA_TAG, j))`` (a key of
length 3, disjoint from every member stream's ``(r, i)``), and the programming error of replica
``j`` its own stream; so a member alone gives the bits of the member in an ensemble, and at
``R = 1`` nothing changes (no averaging, no draw: today's bits).

**Cycles** (:func:`averaging_cycles`): the one timing rule :func:`theory.local_sgd.averaging_phases`
with every stage's block as one tile row (``rows = 1``), all stages at once, one clock cycle per
read (an MVM) and :data:`PULSE_CYCLES` per pulse, a full-range write of
:func:`theory.local_sgd.full_range_pulses` pulses (0 for the digital algorithm), each phase
rounded up to whole cycles. The digital all-reduce over the link is not counted (the oracle run
has no link). After ``k`` updates the trace's cycles are the mode's plus
``floor(k/P)`` averagings (:func:`theory.local_sgd.averagings_after`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from theory.local_sgd import averaging_phases, averagings_after, full_range_pulses

from ..rng import STREAMS, member_generators

__all__ = [
    "PULSE_CYCLES",
    "averaging_cycles",
    "cycles_with_averaging",
    "program_mean",
    "replica_generators",
    "replica_mean",
]

#: clock cycles of one programming pulse: the default timing's pulse width over its read time
#: (``bounds.timing.TimingModel``: 1 ns / 80 ns; a test checks the two agree)
PULSE_CYCLES = 1e-9 / 80e-9
#: entropy key of the replica streams (``spawn_key = (member, _REPLICA_TAG, replica)``)
_REPLICA_TAG = 0x4E9_11CA


def replica_generators(seed: int, members: Sequence[int],
                       replicas: int) -> dict[str, list[np.random.Generator]]:
    """Generators in row order (member-major): ``{stream: [...]}`` for every stream of
    :data:`simulate.rng.STREAMS` plus ``"program"`` (the programming error).

    At ``replicas = 1`` the streams of :data:`~simulate.rng.STREAMS` are
    :func:`simulate.rng.member_generators`'s (the same generators, same bits).
    """
    base = member_generators(seed, members)
    out: dict[str, list[np.random.Generator]] = {name: [] for name in (*STREAMS, "program")}
    for i, r in enumerate(members):
        for j in range(replicas):
            kids = np.random.SeedSequence(seed, spawn_key=(int(r), _REPLICA_TAG, j)).spawn(
                len(STREAMS) + 1)
            for s, name in enumerate(STREAMS):
                out[name].append(base[name][i] if j == 0 else np.random.default_rng(kids[s]))
            out["program"].append(np.random.default_rng(kids[len(STREAMS)]))
    return out


def replica_mean(w: np.ndarray, replicas: int) -> np.ndarray:
    r""":math:`\bar W` per member: rows ``(members * R, d)`` -> ``(members, d)`` (``w`` itself at
    ``R = 1``). Row-wise: a member's mean does not depend on the other members."""
    if replicas == 1:
        return w
    return w.reshape(-1, replicas, w.shape[1]).mean(axis=1)


def program_mean(w: np.ndarray, replicas: int, error_std: float,
                 rngs: Sequence[np.random.Generator], lo=None, hi=None) -> np.ndarray:
    """Average the replicas of every member and program the mean back into each (module
    docstring): mean plus ``N(0, error_std^2)`` per weight, clipped to ``[lo, hi]`` if given.

    Parameters
    ----------
    w : ndarray, shape (members * replicas, d)
    replicas : int
    error_std : float
        Per-weight programming error std (weight units); 0 draws nothing.
    rngs : list of Generator
        One per row (:func:`replica_generators` ``["program"]``).
    lo, hi : float or ndarray, optional
        The device range (per row and weight with a device-to-device spread).
    """
    mean = np.repeat(replica_mean(w, replicas), replicas, axis=0)
    if error_std > 0:
        mean = mean + error_std * np.stack([g.standard_normal(w.shape[1]) for g in rngs])
    if lo is not None:
        mean = np.clip(mean, lo, hi)
    return mean


def averaging_cycles(analog: bool, weight_range: float, dw_min: float) -> int:
    """Clock cycles of one averaging (module docstring): ``ceil(1) + ceil(n_p PULSE_CYCLES + 1)``
    with ``n_p`` the full-range pulses (``weight_range / dw_min``, 0 for digital)."""
    pulses = full_range_pulses(weight_range, dw_min) if analog else 0
    read, program = averaging_phases(1, pulses, 1.0, PULSE_CYCLES)
    return math.ceil(read) + math.ceil(program)


def cycles_with_averaging(cycles: np.ndarray, updates: np.ndarray, period: int,
                          per_averaging: int) -> np.ndarray:
    """The mode's ``cycles`` after ``updates`` updates plus ``floor(updates/P)`` averagings."""
    done = averagings_after(np.asarray(updates, dtype=np.int64), period)
    return np.asarray(cycles, dtype=np.int64) + done * np.int64(per_averaging)
