"""What a Tiki-Taka plan returns (``plan --algorithm tiki-taka``): typed, frozen results.

:class:`TikiTakaPlan` (the answer of :func:`bounds.plan_tiki_taka`, with a
``status`` and a ``message``, its human table and its JSON), :class:`TransferCandidate` (a
:class:`~bounds.Candidate` whose cycles include the transfers),
:class:`ModeGuarantee` (whether a mode has a proved entry, and why not) and :class:`TikiTakaRow`
(one choice of the calibrated forecast).
"""

from __future__ import annotations

from dataclasses import dataclass

from theory.fileio import strict_json
from theory.theorems import get_bound

from .constants import ProblemConstants
from .results import Candidate, format_seconds, partition_summary

__all__ = [
    "FORECAST_ONLY", "GUARANTEED", "ModeGuarantee", "NO_GUARANTEE", "TikiTakaPlan", "TikiTakaRow",
    "TransferCandidate",
]


#: :attr:`ModeGuarantee.status`: proved (derived) Tiki-Taka entries meet the plan's settings
GUARANTEED = "guaranteed"
#: :attr:`ModeGuarantee.status`: no proved entry for this mode and these settings
NO_GUARANTEE = "no guarantee"
#: :attr:`TikiTakaPlan.status`: no mode has a guarantee; the calibrated forecast chose the plan
FORECAST_ONLY = "forecast_only"


@dataclass(frozen=True)
class TransferCandidate(Candidate):
    r"""A :class:`Candidate` of a Tiki-Taka plan: its ``cycles`` include the transfers.

    Attributes
    ----------
    transfer_cycles : int
        The transfers' share of ``cycles``, :math:`\lfloor K/T \rfloor c_T`
        (:func:`theory.schedules.transfer_cycles`).
    event_cycles : int
        :math:`c_T`, cycles of one transfer event for the candidate's partition
        (:func:`theory.schedules.transfer_event_cycles`).
    """

    transfer_cycles: int = 0
    event_cycles: int = 0

    def to_dict(self) -> dict:
        """:meth:`Candidate.to_dict` with ``transfer_cycles`` and ``event_cycles``."""
        return {**super().to_dict(), "transfer_cycles": self.transfer_cycles,
                "event_cycles": self.event_cycles}


@dataclass(frozen=True)
class ModeGuarantee:
    """Whether one mode of a Tiki-Taka plan has a proved guarantee.

    Attributes
    ----------
    mode : str
    status : str
        :data:`GUARANTEED` or :data:`NO_GUARANTEE`.
    entries : tuple of str
        The registry entries used (empty without a guarantee).
    message : str
        Which entries were considered and why none applies (or which do).
    """

    mode: str
    status: str
    entries: tuple[str, ...]
    message: str

    def to_dict(self) -> dict:
        """JSON fields."""
        return {"mode": self.mode, "status": self.status, "entries": list(self.entries),
                "message": self.message}


@dataclass(frozen=True)
class TikiTakaRow:
    """One choice of the calibrated Tiki-Taka forecast.

    Attributes
    ----------
    candidate : TransferCandidate
        The choice; its ``iterations``, ``cycles`` and ``seconds`` are the **predicted** ones
        (calibrated K(eps) at ``lr``, transfers included); ``bound`` names the proved entry of
        the point or is ``"none"``.
    lr : float
        The step the plan runs at (:func:`bounds.plan_tiki_taka`).
    predicted_low_s, predicted_high_s : float
        The bootstrap interval of the predicted seconds.
    guaranteed_seconds : float or None
        The proved worst case at the same point (``None``: no guarantee for the mode).
    """

    candidate: TransferCandidate
    lr: float
    predicted_low_s: float
    predicted_high_s: float
    guaranteed_seconds: float | None = None

    @property
    def label(self) -> str:
        """``sync M=4 B=8 b=1`` (no B for async)."""
        c = self.candidate
        batch = f" B={c.micro_batches}" if c.mode != "async" else ""
        return f"{c.mode} M={c.stages}{batch} b={c.micro_batch_size}"

    def to_dict(self) -> dict:
        """Strict-JSON-ready fields (the candidate's flattened in)."""
        return strict_json({**self.candidate.to_dict(), "lr": self.lr,
                            "predicted_low_s": self.predicted_low_s,
                            "predicted_high_s": self.predicted_high_s,
                            "guaranteed_seconds": self.guaranteed_seconds})


@dataclass(frozen=True)
class TikiTakaPlan:
    """The Tiki-Taka planner's answer (:func:`bounds.plan_tiki_taka`).

    Attributes
    ----------
    model : str
    eps : float
    transfer : dict
        The plan's transfer settings (:meth:`bounds.params.TransferSettings.settings`).
    guarantees : tuple of ModeGuarantee
        Per searched mode, whether a proved entry applies.
    best : TransferCandidate or None
        The guarantee's plan (fewest guaranteed seconds over the guaranteed modes); ``None``
        when no mode has a guarantee.
    alternatives : tuple of TransferCandidate
        The best of the next (mode, M) pairs by guaranteed seconds.
    forecast : tuple of TikiTakaRow
        With a calibration: the choice of fewest predicted seconds first, then the best of the
        next (mode, M) pairs; empty without one.
    calibration : dict or None
        ``source``, ``fingerprint``, ``matches``, ``warning`` (a line when the plan's problem
        constants are not the calibration's) and ``edited`` (its file's checksum did not match,
        accepted by ``--accept-edited-calibration``) of the calibration used.
    ruled_out : tuple of (str, str)
        Modes excluded from the guarantee's search, with the reason.
    status : str
        ``"optimal"`` (a guaranteed plan; with a calibration the forecast is beside it) or
        :data:`FORECAST_ONLY` (no guarantee in any mode: the forecast's choice alone).
    message : str
        One line on the outcome.
    constants : ProblemConstants or None
        The problem constants used and their sources (:mod:`bounds.planning.constants`).
    """

    model: str
    eps: float
    transfer: dict
    guarantees: tuple[ModeGuarantee, ...]
    best: TransferCandidate | None
    alternatives: tuple[TransferCandidate, ...]
    forecast: tuple[TikiTakaRow, ...]
    calibration: dict | None
    ruled_out: tuple[tuple[str, str], ...]
    status: str
    message: str
    constants: ProblemConstants | None = None

    @property
    def chosen(self) -> TransferCandidate:
        """The plan to run: the forecast's choice with a calibration, else the guarantee's."""
        return self.forecast[0].candidate if self.forecast else self.best

    def to_dict(self) -> dict:
        """Strict-JSON-ready fields."""
        return strict_json({
            "model": self.model, "eps": self.eps, "algorithm": "tiki-taka",
            **({} if self.constants is None else self.constants.to_dict()),
            "transfer": dict(self.transfer),
            "guarantees": [g.to_dict() for g in self.guarantees],
            "best": None if self.best is None else self.best.to_dict(),
            "alternatives": [c.to_dict() for c in self.alternatives],
            "chosen_by": "predicted time" if self.forecast else "guaranteed time",
            "forecast": [r.to_dict() for r in self.forecast],
            "calibration": self.calibration,
            "ruled_out": [{"mode": m, "reason": r} for m, r in self.ruled_out],
            "status": self.status, "message": self.message,
        })

    def table(self) -> str:
        """The human report (what ``aimc-pipeline plan --algorithm tiki-taka`` prints)."""
        t = self.transfer
        lines = [f"tiki-taka plan for model {self.model!r} at eps = {self.eps:g} (transfer every "
                 f"T = {t['transfer_every']} updates, slice {t['transfer_slice']})"]
        under = ""
        if self.constants is not None:
            lines.append(self.constants.line())
            under = " under these constants"
        for g in self.guarantees:
            lines.append(f"  guarantee {g.mode:<6}     {g.status}: {g.message}")
        header = (f"  {'plan':<22} {'iterations':>12} {'cycles':>14} {'transfers':>12} "
                  f"{'seconds':>11}")
        if self.forecast:
            c, cal = self.forecast[0], self.calibration
            lines += [
                f"chosen by predicted time (calibration {cal['source']})",
                *(["  calibration          EDITED after calibrate wrote it (its checksum does "
                   "not match), used because of --accept-edited-calibration"]
                  if cal.get("edited") else []),
                f"  plan                 {c.label}, step {c.lr:.4g}, "
                f"{partition_summary(c.candidate.partition.sizes)}",
                f"  predicted time       {format_seconds(c.candidate.seconds)}  "
                f"({cal.get('level', '95%')} interval "
                f"{format_seconds(c.predicted_low_s)} - {format_seconds(c.predicted_high_s)})",
                "  guaranteed time      " + ("none (no proved tiki-taka bound for this mode)"
                                             if c.guaranteed_seconds is None
                                             else format_seconds(c.guaranteed_seconds)),
                f"  transfers            {c.candidate.transfer_cycles:,d} of "
                f"{c.candidate.cycles:,d} cycles (c_T = {c.candidate.event_cycles} per event)",
                "predicted time of the chosen plan and the alternatives:",
                header + f" {cal.get('level', '95%') + ' interval':>22} {'guaranteed s':>13}",
            ]
            for r in self.forecast:
                k = r.candidate
                interval = f"{r.predicted_low_s:.4g} - {r.predicted_high_s:.4g}"
                proved = "none" if r.guaranteed_seconds is None else f"{r.guaranteed_seconds:.4g}"
                lines.append(f"  {r.label:<22} {k.iterations:>12,d} {k.cycles:>14,d} "
                             f"{k.transfer_cycles:>12,d} {k.seconds:>11.4g} {interval:>22} "
                             f"{proved:>13}")
        if self.best is not None:
            b = self.best
            lines += [
                "the guarantee's plan (proved tiki-taka bounds, worst case):",
                f"  plan                 {b.mode} M={b.stages}"
                + (f" B={b.micro_batches}" if b.mode != "async" else "")
                + f" b={b.micro_batch_size}, {partition_summary(b.partition.sizes)}",
                f"  guarantee            {b.bound} ({get_bound(b.bound).proof})",
                f"  guaranteed time      {format_seconds(b.seconds)}{under}  "
                f"({b.iterations:,d} iterations, {b.cycles:,d} cycles of which "
                f"{b.transfer_cycles:,d} transfers)",
            ]
            if self.alternatives:
                lines.append(header)
                for c in self.alternatives:
                    batch = f" B={c.micro_batches}" if c.mode != "async" else ""
                    label = f"{c.mode} M={c.stages}{batch} b={c.micro_batch_size}"
                    lines.append(f"  {label:<22} {c.iterations:>12,d} {c.cycles:>14,d} "
                                 f"{c.transfer_cycles:>12,d} {c.seconds:>11.4g}")
        for mode, reason in self.ruled_out:
            lines.append(f"ruled out: {mode}: {reason}")
        note = None if self.constants is None else self.constants.note(self.model)
        if note:
            lines.append(f"note: {note}")
        lines.append(f"status: {self.status}: {self.message}")
        return "\n".join(lines)
