r"""The plan of a Tiki-Taka run: mode, stages, partition, micro-batches, transfers counted.

:func:`plan_tiki_taka` runs the exact search of :func:`bounds.plan` for a
Tiki-Taka run: its cycles are the schedule's plus the transfers, :math:`\lfloor K/T\rfloor c_T`
with :math:`c_T = 2\max_m \sum_{\ell\in m} s_\ell` (each layer one tile of ``rows`` columns;
:math:`s_\ell = 1` for the ``column`` slice, ``rows`` for ``all``;
:func:`theory.schedules.transfer_event_cycles`, the simulator's rule;
:class:`~bounds.planning.strategies.TransferCost`); its guarantee uses only the proved
(``derived``) Tiki-Taka entries whose ``setting`` conditions the plan's
:class:`~bounds.params.TransferSettings` meet (:class:`~bounds.planning.strategies.
TikiTakaBounds`), and a mode without one has none; its forecast needs a calibration of Tiki-Taka
runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from theory.calibration import Calibration, interval_label
from theory.complexity import guarantee_entries, setting_conditions
from theory.errors import ParameterError, UnreachableTargetError, check_range
from theory.theorems import REGISTRY

from ..evaluation import theory_values
from ..params import PlanHardware, PlanLimits, ProblemParams, TransferSettings, check_type
from .models import Model
from .planner import (
    check_arguments,
    check_calibration,
    forecast_choices,
    problem_constants,
)
from .results import OPTIMAL
from .search import GridSearch
from .strategies import ForecastObjective, GuaranteeObjective, TikiTakaBounds, TransferCost
from .tiki_taka_results import (
    FORECAST_ONLY,
    GUARANTEED,
    NO_GUARANTEE,
    ModeGuarantee,
    TikiTakaPlan,
    TikiTakaRow,
)

__all__ = ["plan_tiki_taka"]


def plan_tiki_taka(
    model: Model,
    hardware: PlanHardware,
    problem: ProblemParams | None = None,
    eps: float = 1.0,
    limits: PlanLimits | None = None,
    *,
    transfer: TransferSettings | None = None,
    calibration: Calibration | None = None,
    calibration_source: str = "given",
    sources: Mapping[str, str] | None = None,
) -> TikiTakaPlan:
    r"""The plan of a Tiki-Taka run: mode, stages, partition, micro-batches, transfers counted.

    The same exact search as :func:`bounds.plan` (partition DPs, memory, branch
    and bound) with the cycles of :class:`~bounds.planning.strategies.TransferCost` (schedule plus
    :math:`\lfloor K/T\rfloor c_T`).

    - **Guarantee**: per mode only the proved (``derived``) Tiki-Taka entries whose ``setting``
      conditions the plan's ``transfer`` settings meet; a mode without one has no guarantee
      (:attr:`TikiTakaPlan.guarantees` says why; nothing is invented: the ``companion`` entries
      are not proved here).
    - **Forecast** (``calibration``, which must be of Tiki-Taka runs): the calibrated
      :math:`K(\epsilon)` at the step of :meth:`~bounds.planning.strategies.TikiTakaBounds.step`,
      the choice of fewest predicted seconds (:attr:`TikiTakaPlan.forecast`).

    No geometric-programming relaxation (the GP is that of the analog bounds).

    Parameters
    ----------
    model : Model
        The network.
    hardware : PlanHardware
        Accelerators, tiles, buffers, device and timing.
    problem : ProblemParams, optional
        The problem constants (default: the model's ``[problem]`` over the defaults of
        :class:`ProblemParams`).
    eps : float
        The target, > 0.
    limits : PlanLimits, optional
        Search range of ``B`` and ``b`` and the modes.
    transfer : TransferSettings, optional
        The transfers (defaults of :class:`TransferSettings`).
    calibration : theory.calibration.Calibration, optional
        A calibration of Tiki-Taka runs: the forecast chooses.
    calibration_source : str
        Where the calibration came from (shown in the report).
    sources : mapping, optional
        Where each constant of ``problem`` came from (as for :func:`bounds.plan`).

    Returns
    -------
    TikiTakaPlan
        With ``status`` :data:`OPTIMAL` (a guaranteed plan) or :data:`FORECAST_ONLY`.

    Raises
    ------
    ParameterError
        No mode has a guarantee and no calibration is given (the message says to pass one made
        by ``aimc-pipeline calibrate --algorithm tiki-taka``); a calibration of another algorithm;
        no choice reaches eps; the model does not fit.
    """
    problem, constants = problem_constants(model, problem, sources)
    problem, limits = check_arguments(model, hardware, problem, limits)
    eps = check_range("eps", eps, 0, low_open=True)
    transfer = TransferSettings() if transfer is None else transfer
    check_type("transfer", transfer, TransferSettings, "e.g. bounds.TransferSettings(every=4)")
    if calibration is not None:
        check_calibration(calibration, "tiki-taka", calibration_source, limits.write)
    bounds = TikiTakaBounds(eps, theory_values(hardware.hardware, problem), transfer,
                            limits.write)
    cost = TransferCost(transfer, model)
    search = GridSearch(model, hardware, limits, GuaranteeObjective(bounds), cost)
    guarantees = _guarantees(bounds, limits.modes)
    proved = [g.mode for g in guarantees if g.status == GUARANTEED]
    if not proved and calibration is None:
        raise ParameterError(
            "algorithm=tiki-taka has no proved (derived) guarantee for mode(s) "
            f"{', '.join(limits.modes)} with transfer_every={transfer.every}, transfer_slice="
            f"{transfer.slice}; pass --calibration FILE made by aimc-pipeline calibrate "
            "--algorithm tiki-taka"
        )
    found, ruled_out = [], []
    if proved:
        found, ruled_out, floors, _ = search.search(proved)
        if not found and calibration is None:
            if floors and len(floors) == len(proved):
                mode = min(floors, key=floors.get)
                raise UnreachableTargetError(bounds.bound_name(mode), eps, floors[mode])
            raise ParameterError("; ".join(f"{m}: {r}" for m, r in ruled_out)
                                 or "no feasible plan")
    rows, info = (), None
    if calibration is not None:
        forecast = GridSearch(model, hardware, limits, ForecastObjective(bounds, calibration),
                              cost)
        rows, info = _forecast(forecast, limits, transfer, calibration, calibration_source)
    best = found[0] if found else None
    if best is not None:
        status = OPTIMAL
        message = ("exact integer optimum of the guaranteed time over the guaranteed modes"
                   + ("; the forecast's choice is the plan to run" if rows else ""))
    else:
        status = FORECAST_ONLY
        why = ("no mode has a proved tiki-taka guarantee" if not proved else
               "the proved modes give no feasible plan (see ruled out)")
        message = (f"{why}: the plan is the calibrated forecast's choice alone (a prediction, "
                   "not a guarantee)")
    return TikiTakaPlan(
        model=model.name, eps=float(eps), transfer=transfer.settings(), guarantees=guarantees,
        best=best, alternatives=tuple(found[1:]), forecast=rows, calibration=info,
        ruled_out=tuple(sorted(ruled_out)), status=status, message=message,
        constants=constants,
    )


def _guarantees(bounds: TikiTakaBounds, modes) -> tuple[ModeGuarantee, ...]:
    """Per mode, which proved Tiki-Taka entries apply and, if none, why."""
    out = []
    for mode in modes:
        used = bounds.entries[mode]
        if used:
            names = ", ".join(b.name for b in used)
            out.append(ModeGuarantee(mode=mode, status=GUARANTEED, entries=tuple(
                b.name for b in used), message=f"proved by {names}"))
            continue
        derived = guarantee_entries(mode, "tiki-taka", write=bounds.write)
        others = [b.name for b in REGISTRY.values()
                  if b.algorithm == "tiki-taka" and b.mode == mode and b.provenance != "derived"]
        if mode in bounds.unusable:
            why = bounds.unusable[mode]
        elif derived:
            unmet = "; ".join(
                f"{b.name} needs " + (", ".join(f"{k}={v}" for k, v in
                                                setting_conditions(b).items())
                                      or "settings it does not state") for b in derived)
            why = f"no derived tiki-taka bound meets the settings ({unmet})"
        else:
            why = f"no derived (proved) tiki-taka bound for mode {mode}"
        if others:
            why += f"; {', '.join(others)} is not proved here (not a guarantee)"
        out.append(ModeGuarantee(mode=mode, status=NO_GUARANTEE, entries=(), message=why))
    return tuple(out)


def _forecast(search: GridSearch, limits: PlanLimits, transfer: TransferSettings,
              calibration: Calibration, source: str) -> tuple[tuple[TikiTakaRow, ...], dict]:
    """The calibrated rows of a Tiki-Taka plan and the calibration's summary."""
    objective, bounds, cost = search.objective, search.bounds, search.cost
    found = forecast_choices(search, limits, calibration, source, "tiki-taka forecast (its floor "
                             "is at or above eps at the plan's steps)")
    rows = []
    for cand in found:
        grid = {"b": cand.micro_batch_size, "M": cand.stages}
        if cand.mode == "sync":
            grid["B"] = cand.micro_batches
        lr, _, low, high = (float(np.asarray(x).ravel()[0])
                            for x in objective.forecast(cand.mode, grid))

        def seconds(k: float, c=cand) -> float:
            if not math.isfinite(k):
                return k
            return float(cost.cycles(c.mode, k, c.stages, c.micro_batches, c.partition)
                         ) * c.cycle_time_s

        guaranteed = None
        if cand.bound != "none":
            proved = bounds.guarantee(cand.mode, grid)
            guaranteed = seconds(float(proved.iterations_int))
        rows.append(TikiTakaRow(candidate=cand, lr=lr, predicted_low_s=seconds(low),
                                predicted_high_s=seconds(high), guaranteed_seconds=guaranteed))
    warning = None
    if not calibration.matches(bounds.values):
        warning = (f"the plan's problem constants are not the calibration's (fingerprint "
                   f"{calibration.fingerprint}): its forecast describes another problem")
    trained = calibration.transfer
    if trained and (int(trained["transfer_every"]), str(trained["transfer_slice"])) != (
            transfer.every, transfer.slice):
        warning = ((warning + "; ") if warning else "") + (
            f"the calibration's runs transferred every {trained['transfer_every']} updates, "
            f"slice {trained['transfer_slice']}; the plan's are {transfer.every}, "
            f"{transfer.slice}")
    info = {"source": source, "fingerprint": calibration.fingerprint,
            "matches": calibration.matches(bounds.values), "transfer": dict(trained),
            "warning": warning, "edited": calibration.edited,
            "level": interval_label(calibration, calibration.fits)}
    return tuple(rows), info
