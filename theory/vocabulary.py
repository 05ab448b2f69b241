"""The package's vocabulary: the names of modes, algorithms, write semantics and presets.

Plain tuples and one directory listing, free of sympy, so that a command-line parser, a run
configuration or a help text can name the valid choices without loading the symbolic theory.
Each is re-exported where it means something: :data:`MODES` and :data:`TRANSFER_SLICES` by
:mod:`theory.schedules`, :data:`ALGORITHMS`, :data:`WRITE_SEMANTICS`, :data:`GRADIENT_SIGNALS`,
:data:`PROVENANCES` and :data:`MIXED_ENTRIES` by :mod:`theory.theorems`,
:data:`CALIBRATED_MODES` and :data:`CALIBRATED_ALGORITHMS` by :mod:`theory.calibration`,
:func:`list_presets` by :mod:`theory.devices`.

>>> MODES
('none', 'sync', 'async')
>>> "reram-softbounds" in list_presets()
True
"""

from __future__ import annotations

from importlib import resources
from importlib.abc import Traversable

__all__ = [
    "ALGORITHMS",
    "CALIBRATED_ALGORITHMS",
    "CALIBRATED_MODES",
    "FLOOR_KINDS",
    "GRADIENT_SIGNALS",
    "MIXED_ENTRIES",
    "MODES",
    "PROVENANCES",
    "TRANSFER_SLICES",
    "WRITE_SEMANTICS",
    "list_presets",
    "preset_dir",
]

#: the pipeline schedules of :mod:`theory.schedules`
MODES = ("none", "sync", "async")

#: what a Tiki-Taka transfer event moves: one column of every tile (round robin) or all of them
TRANSFER_SLICES = ("column", "all")

#: where a registry entry comes from (theory-spec): the paper, the companion analog-SGD theorem,
#: a proof in ``docs/theory.md``, or a published order with unknown constants set to 1
PROVENANCES = ("paper", "companion", "derived", "literature")

#: how the weights are updated: exactly, through the device's response functions, Tiki-Taka's
#: two arrays, or per block (``mixed``: some stages analog, some digital; Theorem 2M)
ALGORITHMS = ("digital", "analog", "tiki-taka", "mixed")

#: how the samples of one update are written: one update of the batch-mean gradient (Theorems
#: 2-4'), or one update of -(alpha/n) g_i per sample, in order (Corollary 3PS)
WRITE_SEMANTICS = ("batch-mean", "per-sample")

#: the gradient signal a bound assumes: unbiased (A2) or with a bias of norm at most beta
#: (A2_beta, Proposition IO); the planner's guarantees (:func:`theory.theorems.bounds_for`) are
#: the unbiased ones
GRADIENT_SIGNALS = ("unbiased", "biased")

#: what a bound's floor is taken over: the worst case of |G| on the visited region (A3), or the
#: iterate average G2_iter of Theorem LF (the ``*_local`` rows, which need a measured G2_iter and
#: are not planned with)
FLOOR_KINDS = ("worst-case", "iterate-average")

#: the pipeline modes a calibration fits (:mod:`theory.calibration`)
CALIBRATED_MODES = ("sync", "async")

#: the algorithms a calibration's runs can use (``problem["algorithm"]``; absent: ``analog``)
CALIBRATED_ALGORITHMS = ("analog", "tiki-taka")

#: the per-block registry entries (Theorem 2M), one per schedule
MIXED_ENTRIES = ("analog_sgd_mixed", "analog_sgd_sp_mixed", "analog_sgd_ap_mixed")


def preset_dir() -> Traversable:
    """The folder of the shipped device presets, ``theory/presets/`` (package data)."""
    return resources.files("theory").joinpath("presets")


def list_presets() -> list[str]:
    """The names of the shipped device presets (:mod:`theory.devices.presets`), sorted."""
    return sorted(p.name.removesuffix(".toml") for p in preset_dir().iterdir()
                  if p.name.endswith(".toml"))
