"""What the planner returns: the plan, its candidates and their parts (typed, frozen results).

:class:`Plan` (the answer of :func:`bounds.plan`, with a ``status`` and a
``message``, its human table and its JSON), :class:`Candidate` (one evaluated choice of mode, M, B,
b and partition, naming the theorem that gave its iterations), :class:`RateTerms`,
:class:`SolveTimes`; with a calibration :class:`PlanForecast` of :class:`ForecastRow` (and with
``step="forecast"`` its :class:`StepRecord`). The results
of a Tiki-Taka plan are in :mod:`bounds.planning.tiki_taka_results`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from theory.fileio import strict_json
from theory.step_choice import OUTSIDE_CAP
from theory.theorems import get_bound

from .constants import ProblemConstants
from .partition import Partition
from .relaxation import SKIPPED, Relaxed

__all__ = [
    "A4_NOTE", "Candidate", "ForecastRow", "GUARANTEE_NOTE", "OPTIMAL", "Plan", "PlanForecast",
    "RELAXATION_FAILED", "RateTerms", "SolveTimes", "StepRecord", "TERMS", "format_seconds",
    "partition_summary",
]

#: names of the three terms of the rate form a/sqrt(K) + c/K + floor
TERMS = ("a/sqrt(K)", "c/K", "floor")
#: :attr:`Plan.status`: the exact optimum, with the relaxation solved (or not asked for)
OPTIMAL = "optimal"
#: what every asynchronous row of a plan relies on (docs/theory.md, remark on the scope of A4)
A4_NOTE = (
    "async iterations assume A4 (the stale signal's error is fixed before the sample is drawn): "
    "exact for the oracle problems, not proved for networks, whose stale forward and current "
    "backward both see the sample"
)
#: :attr:`Plan.status`: the exact optimum, but the relaxation failed (no lower bound, no gap)
RELAXATION_FAILED = "relaxation_failed"
#: the line a plan without a calibration adds: what its time is
GUARANTEE_NOTE = (
    "the guaranteed time is proved, a worst case: a run of this plan reaches eps by then on every "
    "problem with these constants; for a forecast of the likely time fit a calibration "
    "(aimc-pipeline calibrate) and pass it with --calibration FILE"
)


@dataclass(frozen=True)
class Candidate:
    """One fully evaluated choice (mode, M, B, b, partition) and its time to eps.

    The iterations are those of the search's objective (:mod:`bounds.planning.strategies`): the
    proved ones (``plan``'s :attr:`Plan.best`), or the calibrated forecast's (the candidates of
    :func:`~bounds.planning.planner.forecast_plan` and of a Tiki-Taka plan's forecast).

    Attributes
    ----------
    mode : str
    stages : int
        ``M``.
    micro_batches : int
        ``B`` (``sync``); 1 for ``async``, which updates after every micro-batch.
    micro_batch_size : int
        ``b``.
    iterations : int
        Whole iterations (updates) to reach ``eps`` under the objective (the guarantee's
        ``ceil(K(eps))``).
    cycles : int
        Pipeline clock cycles of those iterations.
    cycle_time_s : float
        Seconds per clock cycle (slowest stage).
    seconds : float
        Wall-clock time to eps, ``cycles * cycle_time_s`` (guaranteed, or forecast).
    partition : Partition
        The layer partition (stage 1 first).
    memory_bytes : tuple of int
        Peak activation memory of each stage, bytes.
    bound : str
        The registry entry whose iteration count this is: of the proved bounds of ``mode``
        (:func:`theory.theorems.bounds_for`), the one needing the fewest iterations here
        (:func:`theory.complexity.evaluate_guarantee`; for ``async`` Theorem 4' or 4'B).
    """

    mode: str
    stages: int
    micro_batches: int
    micro_batch_size: int
    iterations: int
    cycles: int
    cycle_time_s: float
    seconds: float
    partition: Partition
    memory_bytes: tuple[int, ...]
    bound: str

    @property
    def samples(self) -> int:
        """Training samples consumed: ``iterations * B * b`` (sync) or ``iterations * b``."""
        return self.iterations * self.micro_batches * self.micro_batch_size

    def to_dict(self) -> dict:
        """JSON-ready fields (the partition as stage sizes and per-stage loads)."""
        p = self.partition
        return {
            "mode": self.mode, "stages": self.stages, "micro_batches": self.micro_batches,
            "micro_batch_size": self.micro_batch_size, "iterations": self.iterations,
            "samples": self.samples, "cycles": self.cycles, "cycle_time_s": self.cycle_time_s,
            "seconds": self.seconds, "bound": self.bound, "partition": list(p.sizes),
            "stage_mvms_per_sample": list(p.work), "stage_tiles": list(p.tiles),
            "stage_memory_bytes": list(self.memory_bytes),
        }


@dataclass(frozen=True)
class RateTerms(Mapping):
    """The three terms of the rate form at a plan's whole iteration count ``K``.

    A read-only mapping by the names of :data:`TERMS` (``a/sqrt(K)``, ``c/K``, ``floor``), in the
    squared-gradient units of ``eps``.

    Attributes
    ----------
    a_over_sqrt_k : float
        :math:`a/\\sqrt{K}`.
    c_over_k : float
        :math:`c/K`.
    floor : float
        The asymptotic floor.
    """

    a_over_sqrt_k: float
    c_over_k: float
    floor: float

    def _values(self) -> tuple[float, float, float]:
        return (self.a_over_sqrt_k, self.c_over_k, self.floor)

    def __getitem__(self, key: str) -> float:
        return dict(zip(TERMS, self._values(), strict=True))[key]

    def __iter__(self) -> Iterator[str]:
        return iter(TERMS)

    def __len__(self) -> int:
        return len(TERMS)

    @property
    def dominant(self) -> str:
        """The name of the largest term."""
        return max(self, key=self.__getitem__)

    def to_dict(self) -> dict[str, float]:
        """``{name: value}`` in the order of :data:`TERMS`."""
        return dict(zip(TERMS, self._values(), strict=True))


@dataclass(frozen=True)
class SolveTimes:
    """Where the planner spent its time.

    Attributes
    ----------
    exact_s : float
        Seconds of the exact search (grids and partitions).
    relaxation_s : float
        Seconds solving the relaxation (0 when skipped).
    partition_solves : int
        Number of partition DPs solved.
    """

    exact_s: float
    relaxation_s: float
    partition_solves: int

    def to_dict(self) -> dict:
        """JSON fields ``exact``, ``relaxation``, ``partition_solves``."""
        return {"exact": self.exact_s, "relaxation": self.relaxation_s,
                "partition_solves": self.partition_solves}


@dataclass(frozen=True)
class Plan:
    """The planner's answer (see :func:`plan`).

    Attributes
    ----------
    model : str
        Model name.
    eps : float
        Target for the average squared gradient norm.
    best : Candidate
        The chosen plan; ``mode``, ``stages``, ``partition``, ``micro_batches``,
        ``micro_batch_size``, ``iterations``, ``cycles`` and ``seconds`` are shortcuts to it.
    terms : RateTerms
        The three terms of the rate form at the plan, ``a/sqrt(K)``, ``c/K``, ``floor``.
    dominant : str
        The largest of :attr:`terms`.
    relaxed : Relaxed
        The continuous relaxation's optimum, or its status and message when it failed.
    gap : float
        Relative gap ``seconds / relaxed.value - 1`` (>= 0; ``nan`` without a relaxation).
    alternatives : tuple of Candidate
        The best plans of the three next-best (mode, M) pairs, fastest first.
    ruled_out : tuple of (str, str)
        Modes excluded, with the reason.
    solve_times : SolveTimes
        Seconds of the exact search and of the relaxation, and the number of partition DPs.
    status : str
        :data:`OPTIMAL` (the exact optimum; the relaxation solved or skipped) or
        :data:`RELAXATION_FAILED` (the exact optimum; the relaxation failed, see ``relaxed``).
    message : str
        One line on the outcome.
    forecast : PlanForecast or None
        With a calibration, the plan of fewest predicted seconds (else ``None``).
    constants : ProblemConstants or None
        The problem constants the guarantee used and their sources (what eps, the iterations and
        the seconds are measured under; :mod:`bounds.planning.constants`).
    """

    model: str
    eps: float
    best: Candidate
    terms: RateTerms
    dominant: str
    relaxed: Relaxed
    gap: float
    alternatives: tuple[Candidate, ...]
    ruled_out: tuple[tuple[str, str], ...]
    solve_times: SolveTimes
    status: str
    message: str
    forecast: PlanForecast | None = None
    constants: ProblemConstants | None = None

    mode = property(lambda self: self.best.mode, doc="Pipeline mode of the plan.")
    stages = property(lambda self: self.best.stages, doc="Stages M.")
    partition = property(lambda self: self.best.partition, doc="The layer partition.")
    micro_batches = property(lambda self: self.best.micro_batches, doc="B (1 for async).")
    micro_batch_size = property(lambda self: self.best.micro_batch_size, doc="b.")
    iterations = property(lambda self: self.best.iterations, doc="Whole iterations to eps.")
    cycles = property(lambda self: self.best.cycles, doc="Clock cycles to eps.")
    seconds = property(lambda self: self.best.seconds, doc="Predicted seconds to eps.")

    @property
    def notes(self) -> tuple[str, ...]:
        """What the plan's numbers rely on beyond the model (today: A4 for asynchronous rows)."""
        if any(c.mode == "async" for c in (self.best, *self.alternatives)):
            return (A4_NOTE,)
        return ()

    def to_dict(self) -> dict:
        """JSON-ready fields of the plan, its alternatives and the relaxation.

        Strict JSON: the relaxation's fields and ``gap`` are ``None`` when no relaxation was
        solved (``relax=False`` or a failed GP), never NaN. ``constants`` (``{name: {"value",
        "source"}}``) and ``eps_units`` say what the numbers are measured under.
        """
        return {
            "model": self.model, "eps": self.eps,
            **({} if self.constants is None else self.constants.to_dict()),
            **self.best.to_dict(),
            "terms": self.terms.to_dict(), "dominant": self.dominant,
            "relaxed": self.relaxed.to_dict(), "gap": strict_json(self.gap),
            "alternatives": [c.to_dict() for c in self.alternatives],
            "ruled_out": [{"mode": m, "reason": r} for m, r in self.ruled_out],
            "solve_times": self.solve_times.to_dict(),
            "status": self.status, "message": self.message, "notes": list(self.notes),
            "chosen_by": "guaranteed time" if self.forecast is None else "predicted time",
            "forecast": None if self.forecast is None else self.forecast.to_dict(),
        }

    def table(self) -> str:
        """The human-readable report of the plan (what ``aimc-pipeline plan`` prints)."""
        best = self.best
        sizes = best.partition.sizes
        lines = [
            f"plan for model {self.model!r} at eps = {self.eps:g}",
            f"  mode                 {best.mode}",
            f"  stages M             {best.stages}",
            f"  partition            {partition_summary(sizes)}",
            f"  slowest stage        {best.partition.bottleneck} MVMs per sample, "
            f"{best.cycle_time_s:.4g} s per cycle",
            f"  micro-batches B      {best.micro_batches}" + ("  (async: one per update)"
                                                              if best.mode == "async" else ""),
            f"  micro-batch size b   {best.micro_batch_size}",
            f"  iterations           {best.iterations:,d}  ({best.samples:,d} samples)",
            f"  guarantee            {best.bound} ({get_bound(best.bound).proof})",
            f"  clock cycles         {best.cycles:,d}",
            f"  guaranteed time      {format_seconds(best.seconds)}"
            + ("" if self.constants is None else " under these constants"),
            f"  peak stage memory    {max(best.memory_bytes):,d} bytes",
            "  dominant term        " + self.dominant + "  ("
            + ", ".join(f"{k} = {v:.4g}" for k, v in self.terms.items()) + ")",
        ]
        r = self.relaxed
        if r.success:
            lines.append(
                f"  relaxation (GP)      {format_seconds(r.value)} at {r.mode}, "
                f"M = {r.stages:.3g}, B = {r.micro_batches:.3g}, b = {r.micro_batch_size:.3g}; gap "
                f"{100 * self.gap:.3g}%"
            )
        elif r.status != SKIPPED:
            lines.append(f"  relaxation (GP)      not solved ({r.status}): {r.message}")
        times = self.solve_times
        lines.append(
            f"  solve times          exact search {times.exact_s:.3g} s "
            f"({times.partition_solves} partition DPs), relaxation {times.relaxation_s:.3g} s"
        )
        if self.alternatives:
            lines.append("alternatives (best of the next (mode, M) pairs):")
            lines.append(f"  {'mode':<6} {'M':>4} {'B':>5} {'b':>5} {'iterations':>12} "
                         f"{'cycles':>14} {'seconds':>12}")
            for c in self.alternatives:
                lines.append(f"  {c.mode:<6} {c.stages:>4} {c.micro_batches:>5} "
                             f"{c.micro_batch_size:>5} {c.iterations:>12,d} {c.cycles:>14,d} "
                             f"{c.seconds:>12.4g}")
        for mode, reason in self.ruled_out:
            lines.append(f"ruled out: {mode}: {reason}")
        lines += [f"note: {note}" for note in self.notes]
        placeholders = None if self.constants is None else self.constants.note(self.model)
        if placeholders:
            lines.append(f"note: {placeholders}")
        head = [] if self.constants is None else [self.constants.line()]
        if self.forecast is None:
            lines.append(f"note: {GUARANTEE_NOTE}")
            return "\n".join([lines[0], *head, *lines[1:]])
        return "\n".join([*head, *self.forecast.lines(), "", "the guarantee's own plan "
                          "(proved bounds, worst case):", *lines])


@dataclass(frozen=True)
class ForecastRow:
    """One choice (mode, M, B, b) with its guaranteed and its predicted (calibrated) time.

    Attributes
    ----------
    mode : str
    stages, micro_batches, micro_batch_size : int
        ``M``, ``B`` (1 for async), ``b``.
    lr : float
        The step the plan runs at: the guarantee's best step for ``eps``, or with
        ``step="forecast"`` the step of fewest calibrated iterations within the stability limit
        (:func:`theory.step_choice.best_steps`).
    cycle_time_s : float
        Seconds per clock cycle (slowest stage of the choice's partition).
    guaranteed_iterations : int or float
        Proved whole iterations to eps (:func:`theory.complexity.evaluate_guarantee`); ``inf``
        (``None`` in JSON) for a choice of ``step="forecast"`` whose ``eps`` is at or below the
        proved floor (no guarantee, ``guaranteed_dominant`` ``"none"``).
    guaranteed_seconds : float
        Their clock cycles times ``cycle_time_s``: the worst case (at the guarantee's own step;
        the guarantee at a forecast's step is :class:`StepRecord`'s).
    predicted_iterations : float
        Calibrated iterations to eps at ``lr`` (:func:`theory.calibration.forecast_iterations`).
    predicted_seconds, predicted_low_s, predicted_high_s : float
        The forecast and its bootstrap interval, seconds.
    guaranteed_dominant : str
        The largest term of the bound's rate form at its iterations (:data:`TERMS`).
    predicted_terms : dict
        The calibrated model's terms at the predicted iterations
        (:data:`theory.calibration.MODEL_TERMS`).
    """

    mode: str
    stages: int
    micro_batches: int
    micro_batch_size: int
    lr: float
    cycle_time_s: float
    guaranteed_iterations: int | float
    guaranteed_seconds: float
    predicted_iterations: float
    predicted_seconds: float
    predicted_low_s: float
    predicted_high_s: float
    guaranteed_dominant: str
    predicted_terms: dict

    @property
    def key(self) -> tuple:
        """``(mode, M, B, b)``."""
        return (self.mode, self.stages, self.micro_batches, self.micro_batch_size)

    @property
    def predicted_dominant(self) -> str:
        """The largest term of the calibrated model at the predicted iterations (``"n/a"``: the
        calibration has no fit for this mode)."""
        if not self.predicted_terms:
            return "n/a"
        return max(self.predicted_terms, key=self.predicted_terms.get)

    @property
    def label(self) -> str:
        """``sync M=4 B=8 b=1`` (no B for async)."""
        batch = f" B={self.micro_batches}" if self.mode != "async" else ""
        return f"{self.mode} M={self.stages}{batch} b={self.micro_batch_size}"

    def to_dict(self) -> dict:
        """Strict-JSON-ready fields (an unreachable forecast is ``None``)."""
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        out["predicted_dominant"] = self.predicted_dominant
        return strict_json(out)


@dataclass(frozen=True)
class StepRecord:
    """The step the forecast chose for the chosen plan, and what is proved there
    (``plan --calibration FILE --step forecast``).

    Attributes
    ----------
    lr : float
        The chosen step (:func:`theory.step_choice.best_steps`).
    guarantee_lr : float
        The guarantee's best step for ``eps`` at the same configuration (what ``--step
        guarantee`` runs at).
    stability_limit : float
        :func:`theory.step_choice.stability_limit` of the configuration: no step above it was
        searched.
    cap : float
        The largest proved step cap of the mode (:func:`theory.step_choice.guarantee_at_step`).
    status : str
        :attr:`theory.step_choice.StepGuarantee.status`: inside the cap (with a guarantee, or
        with ``eps`` at or below the bound's floor at this step) or
        ``"none: outside the proved cap"``.
    bound : str or None
        The registry entry of the guarantee at ``lr`` (``None``: none).
    guaranteed_iterations : float
        Proved whole iterations to ``eps`` at ``lr`` (``inf``: none).
    guaranteed_seconds : float
        Their seconds at the plan's cycle time (``inf``: none).
    """

    lr: float
    guarantee_lr: float
    stability_limit: float
    cap: float
    status: str
    bound: str | None
    guaranteed_iterations: float
    guaranteed_seconds: float

    @property
    def inside(self) -> bool:
        """``lr`` is at or below the proved cap (:attr:`status` is not :data:`theory.step_choice.
        OUTSIDE_CAP`)."""
        return self.status != OUTSIDE_CAP

    @property
    def guarantee(self) -> str:
        """The guarantee at ``lr`` in words: its time and entry, or why there is none."""
        if self.bound is None:
            return self.status
        return (f"{format_seconds(self.guaranteed_seconds)} ({self.guaranteed_iterations:,.0f} "
                f"iterations, {self.bound})")

    def lines(self) -> list[str]:
        """The report's lines (below the chosen plan)."""
        return [
            f"  step                 {self.lr:.4g} chosen by the forecast (stability limit "
            f"{self.stability_limit:.4g}; the guarantee's step "
            + (f"{self.guarantee_lr:.4g})" if self.guarantee_lr == self.guarantee_lr else
               "none: eps at or below its floor here)"),
            f"  inside proved cap    {'yes' if self.inside else 'no'} (cap {self.cap:.4g})",
            f"  guarantee at step    {self.guarantee}",
        ]

    def to_dict(self) -> dict:
        """Strict-JSON-ready fields (``inf`` as ``None``)."""
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        return strict_json({**out, "inside": self.inside, "guarantee": self.guarantee})


@dataclass(frozen=True)
class PlanForecast:
    """The plan chosen by the calibrated forecast, beside the guarantee's (``plan --calibration``).

    Attributes
    ----------
    source : str
        Where the calibration came from (its file).
    fingerprint : str
        The calibration's problem fingerprint.
    matches : bool
        Whether the plan's problem constants have that fingerprint.
    chosen : ForecastRow
        The choice of fewest predicted seconds.
    alternatives : tuple of ForecastRow
        The best of the next (mode, M) pairs by predicted seconds.
    guaranteed_choice : ForecastRow
        The guarantee's own plan (:attr:`Plan.best`) with its forecast.
    eps : float
        The target.
    warning : str or None
        One line when the constants do not match the calibration (``aimc-pipeline plan``
        prints it on stderr; the JSON carries it).
    edited : bool
        The calibration file's checksum does not match its content and it was accepted
        (:attr:`theory.calibration.Calibration.edited`; ``plan --accept-edited-calibration``):
        the report says so, the JSON has ``calibration_edited``.
    target : dict or None
        A network calibration's target (:attr:`theory.calibration.Calibration.target`): the
        forecast is the cycles to it, at the calibration's own steps, not to ``eps`` (the
        guarantee's, in the units of the placeholder constants); ``None`` for an oracle one.
    step : StepRecord or None
        With ``step="forecast"``: every row runs at its forecast-chosen step, and this is the
        chosen plan's step record; ``None``: every row runs at the guarantee's step.
    level : str
        The central coverage of the forecast intervals, as printed (``"90%"``; per mode
        ``"90%/95%"`` when they differ: :meth:`theory.calibration.Calibration.interval_level`).
    """

    source: str
    fingerprint: str
    matches: bool
    chosen: ForecastRow
    alternatives: tuple[ForecastRow, ...]
    guaranteed_choice: ForecastRow
    eps: float
    warning: str | None = None
    edited: bool = False
    target: dict | None = None
    step: StepRecord | None = None
    level: str = "95%"

    @property
    def differ(self) -> bool:
        """The guarantee and the forecast choose different (mode, M, B, b)."""
        return self.chosen.key != self.guaranteed_choice.key

    @property
    def reason(self) -> str:
        """One sentence: whether the two choose alike and, if not, which terms make them differ."""
        c, g = self.chosen, self.guaranteed_choice
        if self.target is not None:  # two targets: the times are not to be divided
            same = "the same plan" if not self.differ else f"{g.label} and {c.label}"
            return (f"the guarantee and the forecast choose {same}; their times are to "
                    f"different targets (eps = {self.eps:g} in the units of the plan's constants, "
                    f"and {self.target['label']}), so neither is a check of the other")
        if not self.differ:
            return (f"the guarantee and the forecast choose the same plan ({c.label}); the "
                    f"guarantee is {c.guaranteed_seconds / c.predicted_seconds:.3g}x the forecast "
                    f"there (its dominant term {c.guaranteed_dominant}, the calibration's "
                    f"{c.predicted_dominant})")
        if c.guaranteed_seconds == float("inf"):  # a forecast step's choice below the floor
            return (f"the two choose differently: the guarantee would run {g.label} (guaranteed "
                    f"{format_seconds(g.guaranteed_seconds)}, forecast "
                    f"{format_seconds(g.predicted_seconds)}), the forecast runs {c.label} "
                    f"(forecast {format_seconds(c.predicted_seconds)}), where eps is at or below "
                    "the proved floor: no guarantee there")
        return (
            f"the two choose differently: the guarantee would run {g.label} (guaranteed "
            f"{format_seconds(g.guaranteed_seconds)}, forecast "
            f"{format_seconds(g.predicted_seconds)}), the forecast runs {c.label} (guaranteed "
            f"{format_seconds(c.guaranteed_seconds)}, forecast "
            f"{format_seconds(c.predicted_seconds)}): the guarantee over-predicts {c.label} "
            f"{c.guaranteed_seconds / c.predicted_seconds:.3g}x, where its dominant term is "
            f"{c.guaranteed_dominant}, but {g.label} only "
            f"{g.guaranteed_seconds / g.predicted_seconds:.3g}x (dominant "
            f"{g.guaranteed_dominant}); "
            f"the calibration's dominant term is {c.predicted_dominant} at {c.label} and "
            f"{g.predicted_dominant} at {g.label}"
        )

    def rows(self) -> tuple[ForecastRow, ...]:
        """The chosen plan, its alternatives and (if not among them) the guarantee's choice."""
        rows = [self.chosen, *self.alternatives]
        if self.guaranteed_choice.key not in {r.key for r in rows}:
            rows.append(self.guaranteed_choice)
        return tuple(rows)

    def lines(self) -> list[str]:
        """The human report: the chosen plan, the table of both times, the comparison."""
        c = self.chosen
        at = " at the guarantee's step" if self.step is not None else ""
        head = (f"at eps = {self.eps:g}" if self.target is None else
                f"to {self.target['label']} (the calibration's target, the network's runs; "
                f"each plan at the best step of its design)")
        lines = [
            f"chosen by predicted time (calibration {self.source}) {head}",
            *(["  calibration          EDITED after calibrate wrote it (its checksum does not "
               "match), used because of --accept-edited-calibration: the forecast is the "
               "edited file's, not a fit's"] if self.edited else []),
            f"  plan                 {c.label}, step {c.lr:.4g}",
            *(self.step.lines() if self.step is not None else []),
            f"  predicted time       {format_seconds(c.predicted_seconds)}  ({self.level} interval "
            f"{format_seconds(c.predicted_low_s)} - {format_seconds(c.predicted_high_s)}; "
            f"{c.predicted_iterations:,.0f} iterations)",
            f"  guaranteed time      {format_seconds(c.guaranteed_seconds)}  (proved worst case"
            f"{at}; {_count(c.guaranteed_iterations)} iterations)",
            "guaranteed and predicted time of the chosen plan and the alternatives"
            + (" (predicted at each one's forecast step, guaranteed at the guarantee's step):"
               if self.step is not None else ":"),
            f"  {'plan':<22} {'guaranteed s':>13} {'predicted s':>12} "
            f"{self.level + ' interval':>22} "
            f"{'bound term':>11} {'fit term':>10}",
        ]
        for r in self.rows():
            mark = "  (guarantee's choice)" if r.key == self.guaranteed_choice.key else ""
            interval = f"{r.predicted_low_s:.4g} - {r.predicted_high_s:.4g}"
            lines.append(f"  {r.label:<22} {r.guaranteed_seconds:>13.4g} "
                         f"{r.predicted_seconds:>12.4g} {interval:>22} "
                         f"{r.guaranteed_dominant:>11} {r.predicted_dominant:>10}{mark}")
        lines.append(f"  {self.reason}")
        return lines

    def to_dict(self) -> dict:
        """Strict-JSON-ready fields."""
        return {"source": self.source, "fingerprint": self.fingerprint, "matches": self.matches,
                "eps": self.eps, "chosen": self.chosen.to_dict(),
                "alternatives": [r.to_dict() for r in self.alternatives],
                "guaranteed_choice": self.guaranteed_choice.to_dict(), "differ": self.differ,
                "reason": self.reason, "warning": self.warning,
                "calibration_edited": self.edited, "target": self.target,
                "interval_level": self.level,
                "step": None if self.step is None else self.step.to_dict()}


def _count(iterations: float) -> str:
    """Whole iterations with thousands separators (``none`` for ``inf``: no guarantee)."""
    return f"{iterations:,.0f}" if iterations != float("inf") else "none"


def partition_summary(sizes) -> str:
    """Layers per stage: the list for up to 16 stages, else counts (e.g. ``56 stages x 4``)."""
    if len(sizes) <= _LISTED_STAGES:
        return f"layers per stage {list(sizes)}"
    counts = Counter(sizes)
    return "layers per stage: " + ", ".join(
        f"{n} stages x {size}" for size, n in sorted(counts.items(), key=lambda kv: -kv[1])
    )


#: up to this many stages the plan table lists the layers of every stage
_LISTED_STAGES = 16


def format_seconds(value: float) -> str:
    """``value`` seconds as the reports print them (4 significant digits)."""
    return f"{value:.4g} s"
