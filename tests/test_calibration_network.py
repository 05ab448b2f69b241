"""A calibration of a digits network (issue 27, item 6): calibrate --problem digits-mlp writes a
file, plan --model digits-mlp forecasts with it, another model refuses it; censored levels stay
out of the fit; the planner's digits models are the simulator's networks."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bounds import PlanHardware, PlanLimits, ProblemParams, from_preset, load_model, plan
from paper_figures.cli import main
from simulate.problems import Network, NetworkSpec
from simulate.verification import (
    LEVELS,
    DesignPoint,
    NetworkCalibrationProblem,
    network_observations,
)
from theory import ParameterError
from theory.calibration import problem_fingerprint
from theory.calibration_file import read_calibration
from theory.networks import NETWORK_PROBLEMS, network_layers, target_level

#: a tiny network design: one sync and two async pipelines at 2 steps, 2 seeds, 1600 samples
QUICK = ["calibrate", "--problem", "digits-mlp", "--quick", "--target-accuracy", "0.5"]
#: the plan's flags: the calibration's device region (weight bound 0.6) and a reachable eps
PLAN = ["plan", "--model", "digits-mlp", "--accelerators", "4", "--no-relax", "--eps", "10",
        "--device", "softbounds-tau1", "--weight-bound", "0.6"]


@pytest.fixture(scope="module")
def network_file(tmp_path_factory):
    """``calibrate --problem digits-mlp --quick`` once (its runs cached in the test's folder)."""
    folder = tmp_path_factory.mktemp("network")
    assert main([*QUICK, "--jobs", "1", "--cache-dir", str(folder / "cache"),
                 "--out", str(folder / "cal")]) == 0
    return folder / "cal" / "calibration.json"


def test_calibrate_a_network_writes_a_file_of_its_target(network_file, capsys):
    cal = read_calibration(network_file)
    assert cal.network and cal.problem["problem"] == "digits-mlp"
    assert cal.target == {"kind": "accuracy", "value": 0.5, "eps": 0.5,
                          "label": "test accuracy 0.5"}
    assert set(cal.fits) == {"sync", "async"}
    # the unknown constants of a network are not recorded; the device's are
    assert not {"L", "Delta", "sigma2", "dim"} & set(cal.problem)
    assert cal.problem["q_min"] > 0 and cal.start > cal.target["eps"]
    # every design row says whether the mean curve reached the target and when
    for row in cal.design:
        assert row["reached"] == (row["updates"] is not None)
        assert row["updates"] is None or 1 <= row["updates"] <= row["steps"]
    # the fingerprint covers the network and the target
    for key, value in (("problem", "digits-resmlp"), ("target_value", 0.6), ("target", "loss")):
        assert problem_fingerprint({**cal.problem, key: value}) != cal.fingerprint


def test_plan_of_the_network_forecasts_the_cycles_to_its_target(network_file, capsys):
    assert main([*PLAN, "--calibration", str(network_file)]) == 0
    captured = capsys.readouterr()
    assert "to test accuracy 0.5 (the calibration's target" in captured.out
    assert "predicted time" in captured.out and "guaranteed time" in captured.out
    # the guarantee's constants are placeholders, and the plan says so
    assert "L = 1 (default placeholder)" in captured.out and "placeholders" in captured.out
    assert "warning" not in captured.err  # the same device region as the calibration
    assert main([*PLAN, "--calibration", str(network_file), "--json"]) == 0
    forecast = json.loads(capsys.readouterr().out)["plan"]["forecast"]
    assert forecast["target"]["label"] == "test accuracy 0.5" and forecast["matches"]
    steps = {row["lr"] for row in read_calibration(network_file).design}
    chosen = forecast["chosen"]
    assert chosen["lr"] in steps and chosen["predicted_seconds"] > 0  # a step of the design
    # the plan of another device warns that the forecast is of the calibration's device
    assert main([*PLAN[:-2], "--weight-bound", "0.4", "--calibration", str(network_file)]) == 0
    assert "its forecast describes another device" in capsys.readouterr().err


def test_step_forecast_refuses_a_network_calibration(network_file, capsys):
    """A network's forecast runs at the steps of its design: --step forecast is refused."""
    assert main([*PLAN, "--calibration", str(network_file), "--step", "forecast"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is of a network, whose forecast runs at the steps" in err
    assert "use --step guarantee" in err


@pytest.mark.parametrize("model", ["digits-resmlp", "llama2-7b"])
def test_another_model_refuses_a_network_calibration(network_file, model, capsys):
    argv = [*PLAN, "--calibration", str(network_file)]
    argv[argv.index("digits-mlp")] = model
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "is of the network digits-mlp" in err and "forecasts its own network only" in err
    assert err.count("\n") == 1


def test_an_oracle_calibration_of_a_network_model_says_whose_forecast_it_is():
    from tests._calibration_files import complete_problem, file_calibration

    cal = file_calibration({"sync": (0.15, 0.04, 0.002), "async": (0.13, 0.035, 0.003, 0.05, 0.01)},
                           complete_problem())
    hardware = PlanHardware(from_preset("softbounds-tau1"), accelerators=4)
    result = plan(load_model("digits-mlp"), hardware, ProblemParams(), 3.0, PlanLimits(),
                  relax=False, calibration=cal)
    assert result.forecast.target is None
    assert "not of the network digits-mlp" in result.forecast.warning
    assert "calibrate --problem digits-mlp" in result.forecast.warning


@pytest.mark.parametrize("argv, pattern", [
    ([*QUICK, "--dim", "8"], "--dim=8 applies to an oracle problem"),
    ([*QUICK, "--algorithm", "tiki-taka"], "--algorithm=tiki-taka applies to an oracle"),
    (["calibrate", "--quick", "--target-loss", "0.3"], "--target-loss applies to a digits"),
    ([*QUICK[:-2], "--target-accuracy", "1.5"], "target_value=1.5 is out of range"),
])
def test_calibrate_refuses_oracle_flags_for_a_network_in_one_line(argv, pattern, capsys):
    assert main([*argv, "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert pattern in err and err.count("\n") == 1


def test_unreached_levels_are_censored_not_fitted():
    """A point whose mean curve stops above the target counts its levels as censored, its row
    says so, and no level it missed is an observation."""
    spec = NetworkCalibrationProblem(problem="digits-mlp", target_value=0.8)
    steps = np.array([0, 10, 20, 30, 40])
    fast = {"step": steps, "test_accuracy": np.array([[0.1, 0.5, 0.7, 0.85, 0.9]] * 2),
            "loss": np.zeros((2, 5))}
    slow = {"step": steps, "test_accuracy": np.array([[0.1, 0.2, 0.3, 0.4, 0.5]] * 2),
            "loss": np.zeros((2, 5))}
    diverged = {**fast, "test_accuracy": np.array([[0.1, 0.5, 0.7, 0.85, 0.9],
                                                   [np.nan] * 5])}
    points = [DesignPoint("sync", 2, 1, 4, lr, 40, 2) for lr in (0.1, 0.01, 0.05)]
    dense, levels, rows, counts, bad = network_observations(spec, points, [fast, slow, diverged])
    assert [r["reached"] for r in rows] == [True, False, False] and bad == 1
    assert rows[0]["updates"] == 30 and rows[1]["updates"] is None and rows[2]["diverged"]
    assert levels[0][0] == pytest.approx(target_level("accuracy", 0.8)) and levels[2].size == 0
    # the slow curve (error down to 0.5) reaches none of the levels 0.2 .. sqrt(0.2 * 0.9),
    # the diverged point is censored whole, the fast one reaches all
    assert levels[0][-1] == pytest.approx(np.sqrt(0.2 * 0.9))
    assert counts == {"reached": {"sync": LEVELS}, "censored": {"sync": 2 * LEVELS}}
    # every hitting time of the first point is a logging step (the dense curve's steps)
    mean = dense[0].mean(axis=0)
    hits = [int(np.argmax(mean <= e)) + 1 for e in levels[0]]
    assert set(hits) <= set(steps.tolist())


@pytest.mark.parametrize("problem", NETWORK_PROBLEMS)
def test_the_plan_models_are_the_networks_of_one_spec(problem):
    model = load_model(problem)
    net = Network.build(problem, NetworkSpec(), 1, 64, 10)
    shapes = [(layer.fan_in, layer.fan_out) for stage in net.stages for layer in stage]
    assert [(layer.rows, layer.cols) for layer in model.layers] == shapes
    assert shapes == [(rows, cols) for _, rows, cols in network_layers(problem)]
    with pytest.raises(ParameterError, match="is not a network"):
        network_layers("quadratic")
