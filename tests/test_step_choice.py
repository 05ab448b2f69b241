"""The step as a decision (issue 27, item 5): theory.step_choice's forecast step search and the
guarantee at a step, and plan --calibration FILE --step forecast (text, JSON, refusals)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from bounds import PlanHardware, PlanLimits, ProblemParams, from_preset, load_model, plan
from paper_figures.cli import main
from tests._calibration_files import CONSTANTS, file_calibration
from theory.admissible import step_cap, tightest_theta
from theory.calibration import forecast_iterations, predicted_cycles
from theory.complexity import evaluate_guarantee
from theory.errors import ParameterError
from theory.schedules import cycles_after
from theory.step_choice import (
    BELOW_FLOOR_AT_STEP,
    FOUND,
    INSIDE_CAP,
    OUTSIDE_CAP,
    UNREACHABLE,
    best_steps,
    forecast_steps,
    guarantee_at_step,
    stability_limit,
)
from theory.theorems import bounds_for

#: known coefficients: an interior optimum (the noise ball and the staleness grow with the step)
KNOWN = {"sync": (0.15, 0.04, 0.002), "async": (0.13, 0.035, 0.003, 0.05, 0.01)}
#: the bounds' constants of the synthetic problem (tests/_calibration_files.py)
VALUES = {k: v for k, v in CONSTANTS.items() if k != "start"}


def _brute(cal, mode, eps, M, B, b, limit):
    """The fewest forecast cycles over a fine log grid of 40 001 steps up to the limit."""
    steps = limit * np.logspace(-8, 0, 40001)
    k = forecast_iterations(cal, mode, eps, lr=steps, M=M, B=B, b=b)[0]
    return float(np.min(np.where(np.isfinite(k), cycles_after(mode, np.where(
        np.isfinite(k), k, 1.0), M, B), np.inf)))


@pytest.mark.parametrize("mode, M, B, b", [("sync", 1, 1, 1), ("sync", 3, 4, 2),
                                           ("async", 2, 1, 1), ("async", 8, 1, 4)])
def test_forecast_steps_finds_the_brute_force_minimum(mode, M, B, b):
    cal = file_calibration(KNOWN)
    eps = 0.02
    chosen = forecast_steps(cal, mode, eps, M, B, b, L=VALUES["L"], q_max=VALUES["q_max"])
    limit = stability_limit(M - 1 if mode == "async" else 0, VALUES["L"], VALUES["q_max"])
    assert chosen.status == FOUND and chosen.stability_limit == pytest.approx(limit)
    assert 0 < chosen.lr <= limit
    assert chosen.forecast.lr == chosen.lr and chosen.forecast.reachable
    brute = _brute(cal, mode, eps, M, B, b, limit)
    # no worse than the fine grid (whole iterations: at most one iteration's cycles apart)
    assert chosen.forecast.cycles <= brute * (1 + 1e-3) + 2 * (B + M)
    assert chosen.forecast.cycles >= brute - 2 * (B + M)
    # and much better than a step far from the optimum
    far = predicted_cycles(cal, mode, eps, M, B, b, lr=chosen.lr / 30).cycles
    assert far > 2 * chosen.forecast.cycles


def test_the_chosen_step_never_exceeds_the_stability_limit():
    """Without staleness or noise the forecast falls with the step: the search stops at the
    limit, never beyond, on a grid of configurations (vectorised)."""
    cal = file_calibration({"sync": (0.15, 1e-12, 1e-12),
                            "async": (0.13, 1e-12, 1e-12, 1e-12, 1e-12)})
    M = np.arange(1, 13)[:, None]
    b = np.array([1, 2, 8])[None, :]
    for mode in ("sync", "async"):
        lr, k, limit = best_steps(cal, mode, 0.01, M, 1, b, L=2.0, q_max=1.5)
        assert lr.shape == (12, 3) and np.all(np.isfinite(k))
        assert np.all(lr <= limit) and np.allclose(lr, limit, rtol=1e-6)
        assert np.allclose(limit, stability_limit(M - 1 if mode == "async" else 0 * M,
                                                  2.0, 1.5) * np.ones_like(b))


def test_an_eps_below_every_floor_is_unreachable():
    cal = file_calibration(KNOWN)
    chosen = forecast_steps(cal, "sync", 1e-4, 1, 1, 1)  # the floor c_floor / n = 0.002
    assert chosen.status == UNREACHABLE and not chosen.found and chosen.forecast is None
    assert math.isnan(chosen.lr)
    lr, k, _ = best_steps(cal, "sync", np.array(1e-4), 1, 1, np.array([1, 100]))
    assert math.isnan(lr[0]) and math.isinf(k[0]) and np.isfinite(k[1])


@pytest.mark.parametrize("mode, M, B", [("sync", 2, 4), ("async", 4, 1)])
def test_guarantee_at_step_agrees_with_the_registry_cap(mode, M, B):
    values = {**VALUES, "M": M, "B": B, "b": 1, "D": M - 1 if mode == "async" else 0}
    cap = max(step_cap(entry.name, values) for entry in bounds_for(mode, "analog"))
    eps = 0.5
    inside = guarantee_at_step(mode, eps, cap * 0.999, VALUES, M=M, B=B)
    outside = guarantee_at_step(mode, eps, cap * 1.001, VALUES, M=M, B=B)
    assert inside.cap == pytest.approx(cap) and outside.cap == pytest.approx(cap)
    assert outside.status == OUTSIDE_CAP and not outside.inside
    assert math.isinf(outside.iterations) and outside.bound is None
    assert inside.inside and inside.status in (INSIDE_CAP, BELOW_FLOOR_AT_STEP)


@pytest.mark.parametrize("mode, M, B", [("sync", 2, 4), ("async", 4, 1)])
def test_guarantee_at_the_guarantees_own_step_is_its_guarantee(mode, M, B):
    """At the step the registry's guarantee chooses, the guarantee at that step reaches eps in
    no more iterations (the tightest theta at each K), and one fewer does not reach it."""
    eps = 0.5
    own = evaluate_guarantee(mode, eps, **VALUES, M=M, B=B, b=1)
    at = guarantee_at_step(mode, eps, float(own.step), VALUES, M=M, B=B)
    assert at.status == INSIDE_CAP and at.bound is not None
    assert 1 <= at.iterations <= int(own.iterations_int)
    values = {**VALUES, "M": M, "B": B, "b": 1, "D": M - 1 if mode == "async" else 0}
    assert tightest_theta(at.bound, float(own.step), int(at.iterations), values)[1] <= eps
    assert tightest_theta(at.bound, float(own.step), int(at.iterations) - 1, values)[1] > eps
    assert at.to_dict()["inside"] is True


def test_guarantee_at_a_step_below_the_floor_says_so():
    # Corollary 3's floor at n = 1, G_inf^2 sigma2 / (theta q_min^2) = 0.0125, is above
    # eps = 0.005 at every step: inside the cap, no guarantee
    at = guarantee_at_step("sync", 0.005, 0.01, VALUES, M=1)
    assert at.status == BELOW_FLOOR_AT_STEP and at.inside and math.isinf(at.cycles)
    with pytest.raises(ParameterError, match="mode='none' has no step cap"):
        guarantee_at_step("none", 0.05, 0.01, VALUES, M=1)


# ------------------------------------------------------------------------------------------------
# plan --step forecast

#: a plan of the synthetic problem's own constants (the calibration matches)
PROBLEM = ["--L", "1", "--delta", "0.1", "--sigma2", "0.1", "--theta", "0.5"]
PLAN = ["plan", "--model", "digits-mlp", "--accelerators", "4", "--no-relax", "--eps", "0.5",
        "--max-micro-batches", "8", "--max-micro-batch-size", "8", *PROBLEM]


@pytest.fixture(scope="module")
def calibration_file(tmp_path_factory):
    from theory.calibration_file import write_calibration

    return write_calibration(tmp_path_factory.mktemp("step") / "calibration.json",
                             file_calibration(KNOWN))


def test_plan_step_forecast_reports_the_step_record(calibration_file, capsys):
    assert main([*PLAN, "--calibration", str(calibration_file), "--step", "forecast"]) == 0
    out = capsys.readouterr().out
    assert "chosen by the forecast (stability limit" in out
    assert "inside proved cap    " in out and "guarantee at step    " in out
    assert main([*PLAN, "--calibration", str(calibration_file), "--step", "forecast",
                 "--json"]) == 0
    forecast = json.loads(capsys.readouterr().out)["plan"]["forecast"]
    step = forecast["step"]
    assert set(step) >= {"lr", "guarantee_lr", "stability_limit", "cap", "inside", "status",
                         "guarantee", "guaranteed_iterations", "guaranteed_seconds", "bound"}
    assert step["lr"] == forecast["chosen"]["lr"] and 0 < step["lr"] <= step["stability_limit"]
    assert step["inside"] == (step["lr"] <= step["cap"])
    if not step["inside"]:
        assert step["guarantee"] == OUTSIDE_CAP and step["guaranteed_iterations"] is None
    # the default runs at the guarantee's step and has no step record
    assert main([*PLAN, "--calibration", str(calibration_file), "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)["plan"]["forecast"]
    assert plain["step"] is None
    # the forecast at its own step is no slower than at the guarantee's
    assert forecast["chosen"]["predicted_seconds"] <= plain["chosen"]["predicted_seconds"]


def test_plan_step_forecast_library_matches_its_record():
    """The library's step record: the chosen step is the objective's, the guarantee there is
    guarantee_at_step's at the plan's constants."""
    cal = file_calibration(KNOWN)
    problem = ProblemParams(L=1.0, Delta=0.1, sigma2=0.1, theta=0.5)
    hardware = PlanHardware(from_preset("softbounds-tau1", weight_bound=0.6), accelerators=4)
    result = plan(load_model("digits-mlp"), hardware, problem, 0.5,
                  PlanLimits(max_micro_batches=8, max_micro_batch_size=8), relax=False,
                  calibration=cal, step="forecast")
    record, chosen = result.forecast.step, result.forecast.chosen
    from bounds.evaluation import theory_values

    values = theory_values(hardware.hardware, problem)
    at = guarantee_at_step(chosen.mode, 0.5, chosen.lr, values, M=chosen.stages,
                           B=chosen.micro_batches, b=chosen.micro_batch_size)
    assert record.lr == chosen.lr and record.status == at.status and record.cap == at.cap
    assert record.inside == at.inside
    lr, _, limit = best_steps(cal, chosen.mode, 0.5, chosen.stages, chosen.micro_batches,
                              chosen.micro_batch_size, L=values["L"], q_max=values["q_max"])
    assert float(lr) == pytest.approx(chosen.lr) and float(limit) == record.stability_limit


@pytest.mark.parametrize("argv, message", [
    (["--step", "forecast"], "--step forecast chooses the step by a calibration's forecast; "
                             "pass --calibration FILE"),
    (["--step", "forecast", "--algorithm", "tiki-taka", "--calibration", "CAL"],
     "--step forecast plans analog SGD only"),
], ids=["no calibration", "tiki-taka"])
def test_plan_step_errors_are_one_line(argv, message, calibration_file, capsys):
    argv = [str(calibration_file) if a == "CAL" else a for a in argv]
    assert main([*PLAN, *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_an_unknown_step_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stop:
        main([*PLAN, "--step", "best"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and "invalid choice: 'best'" in err


def test_library_step_errors():
    hardware = PlanHardware(from_preset("softbounds-tau1"), accelerators=4)
    with pytest.raises(ParameterError, match="step='forecast' chooses the step"):
        plan(load_model("digits-mlp"), hardware, None, 10.0, relax=False, step="forecast")
    with pytest.raises(ParameterError, match="step='best' is unknown; valid: guarantee, forecast"):
        plan(load_model("digits-mlp"), hardware, None, 10.0, relax=False, step="best")


def test_help_explains_the_step(capsys):
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--step {guarantee,forecast}" in out and "stability limit" in out
    assert "inside the proved step cap" in out
