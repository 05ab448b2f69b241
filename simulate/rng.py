"""Seeding helpers: one :class:`numpy.random.SeedSequence` tree per run, one stream per purpose.

Ensemble member ``r`` of a run with root seed ``s`` is seeded by ``SeedSequence(s).spawn(R)[r]``,
whose spawn key is ``(r,)`` whatever ``R`` is; so a member's numbers do not depend on the ensemble
size, and :func:`member_sequence` builds the same sequence directly. Each member then splits into
independent named streams (:data:`STREAMS`), so drawing, say, more pulse noise never shifts the
gradient noise: the draws of a stream depend only on that member's own state. The problem itself
(the oracle's matrix, minimiser and data) comes from a separate stream of the root seed and is
shared by all members.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from theory.errors import check_range

__all__ = [
    "STREAMS", "bootstrap_generator", "member_generators", "member_sequence", "problem_generator",
]

#: per-member streams, in spawn order: gradient noise, device (pulse rounding and noise, spreads),
#: a spare stream for the networks (data order, initialisation), and the IO non-idealities of the
#: analog forward and backward products (:mod:`simulate.device.mvm`). A new stream goes at the end:
#: the child ``i`` of a member's sequence depends on ``i`` only, so the earlier streams keep their
#: bits
STREAMS = ("noise", "device", "data", "io")

#: entropy tag appended to the root seed for the problem stream (disjoint from every member key)
_PROBLEM_TAG = 0x5EED_0B1E
#: entropy tag of the bootstrap stream of a run's analysis (:mod:`simulate.verification.prediction`)
_BOOTSTRAP_TAG = 0xB0075_7A9


def member_sequence(seed: int, member: int) -> np.random.SeedSequence:
    """The seed sequence of ensemble member ``member``: ``SeedSequence(seed).spawn(R)[member]``.

    Parameters
    ----------
    seed : int
        Root seed (>= 0).
    member : int
        Member index ``r`` (>= 0); the result is the same for every ensemble size ``R > r``.
    """
    check_range("seed", seed, 0, None, integer=True)
    check_range("member", member, 0, None, integer=True)
    return np.random.SeedSequence(seed, spawn_key=(int(member),))


def member_generators(seed: int, members: Iterable[int]) -> dict[str, list[np.random.Generator]]:
    """One generator per member for every stream of :data:`STREAMS`.

    Returns
    -------
    dict
        ``{stream: [Generator of member r for r in members]}``.
    """
    children = [member_sequence(seed, r).spawn(len(STREAMS)) for r in members]
    return {
        name: [np.random.default_rng(kids[i]) for kids in children]
        for i, name in enumerate(STREAMS)
    }


def problem_generator(seed: int) -> np.random.Generator:
    """The generator of the problem instance (shared by every member of a run with this seed)."""
    check_range("seed", seed, 0, None, integer=True)
    return np.random.default_rng(np.random.SeedSequence([int(seed), _PROBLEM_TAG]))


def bootstrap_generator(seed: int) -> np.random.Generator:
    """The generator of the bootstrap over seeds of a run's analysis (never used by the run)."""
    check_range("seed", seed, 0, None, integer=True)
    return np.random.default_rng(np.random.SeedSequence([int(seed), _BOOTSTRAP_TAG]))
