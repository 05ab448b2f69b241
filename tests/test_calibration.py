"""The calibrated complexity model: file format, forecast, fit, the calibrate and plan commands."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from bounds import (
    PlanHardware,
    PlanLimits,
    ProblemParams,
    from_preset,
    load_model,
    plan,
    theory_values,
)
from paper_figures.cli import main
from simulate.verification import (
    CALIBRATION_QUICK,
    CalibrationProblem,
    DesignPoint,
    design,
    fit_calibration,
)
from theory import ParameterError, cycles_after
from theory.calibration import (
    COEFFICIENTS,
    Calibration,
    ModeFit,
    forecast_iterations,
    model_terms,
    predicted_cycles,
    problem_fingerprint,
    read_calibration,
    write_calibration,
)

#: the start ||grad f(W_0)||^2 of the synthetic curves
START = 0.2
#: coefficients the synthetic curves are drawn from (the fit must recover them)
TRUE = {"sync": (0.15, 0.04, 0.002), "async": (0.13, 0.035, 0.003, 0.05)}


def _calibration(values=TRUE, draws=()) -> Calibration:
    fits = {mode: ModeFit(mode=mode, values=v, low=tuple(0.9 * x for x in v),
                          high=tuple(1.1 * x for x in v), draws=draws or (v,),
                          residual_rms=0.01, observations=10)
            for mode, v in values.items()}
    problem = {"L": 1.0, "L_s": 1.0, "Delta": 0.1, "sigma2": 0.1, "theta": 0.5, "q_min": 0.8,
               "q_max": 1.2, "G_inf": 0.2}
    return Calibration(fits=fits, problem=problem, fingerprint=problem_fingerprint(problem),
                       design=({"mode": "sync", "M": 1, "B": 1, "b": 1, "lr": 0.1},),
                       seeds={"root": 0, "R": [8], "resamples": 1}, version="test")


def test_file_round_trip(tmp_path):
    cal = _calibration()
    path = write_calibration(tmp_path / "cal.json", cal)
    again = read_calibration(path)
    assert again == cal
    assert json.loads(path.read_text())["format"] == 1


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(format=7), "format=7 is not supported"),
    (lambda d: d.pop("fits"), "missing key(s) fits"),
    (lambda d: d["fits"]["sync"].update(values=[0.1, None, 0.2]), "None is not a finite number"),
    (lambda d: d["problem"].update(L=2.0), "does not match the problem constants"),
    (lambda d: d["fits"]["sync"].update(values=[0.1, 0.2]), "sync has 3 coefficients"),
])
def test_bad_files_are_refused_in_one_line(tmp_path, edit, message):
    data = _calibration().to_dict()
    edit(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ParameterError) as info:
        read_calibration(path)
    text = str(info.value)
    assert message in text and "\n" not in text and text.startswith("calibration=")


@pytest.mark.parametrize(("name", "content", "message"), [
    ("binary", b"\x00\xff\xfe\x80" * 64, "UTF-8"),
    ("utf16", '{"format": 1}'.encode("utf-16"), "UTF-8"),
    ("deep", b"[" * 100_000 + b"]" * 100_000, "deep"),
    ("huge-int", b'{"format": 1' + b"0" * 400 + b"}", "digits"),
])
def test_hostile_calibration_files_are_one_line(tmp_path, name, content, message):
    """The calibration reader shares the user-file limits (theory.userfiles): one line, no
    UnicodeDecodeError, RecursionError or OverflowError."""
    path = tmp_path / f"{name}.json"
    path.write_bytes(content)
    with pytest.raises(ParameterError) as info:
        read_calibration(path)
    text = str(info.value)
    assert text.startswith("calibration=") and "\n" not in text
    assert message.lower() in text.lower()


def test_a_device_that_never_ends_is_refused_at_the_size_limit():
    """/dev/zero is read to the 16 MiB limit plus one byte, not to memory exhaustion."""
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero here")
    with pytest.raises(ParameterError, match="calibration='/dev/zero'"):
        read_calibration("/dev/zero")


def test_non_json_and_missing_files(tmp_path):
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(ParameterError, match="not JSON"):
        read_calibration(tmp_path / "x.json")
    with pytest.raises(ParameterError, match="cannot be read"):
        read_calibration(tmp_path / "none.json")
    (tmp_path / "nan.json").write_text(json.dumps(_calibration().to_dict()).replace(
        '"residual_rms": 0.01', '"residual_rms": NaN'))
    with pytest.raises(ParameterError, match="not a finite number"):
        read_calibration(tmp_path / "nan.json")


def test_forecast_inverts_the_model_and_uses_the_timing_rule():
    cal = _calibration()
    for mode, (m, big_b, b) in (("sync", (4, 8, 1)), ("async", (8, 1, 2))):
        lr, eps = 0.05, 0.02
        f = predicted_cycles(cal, mode, eps, m, big_b, b, lr=lr)
        k = f.iterations
        total = sum(model_terms(mode, TRUE[mode], k, lr=lr, M=m, B=big_b, b=b).values())
        before = sum(model_terms(mode, TRUE[mode], k - 1, lr=lr, M=m, B=big_b, b=b).values())
        assert total <= eps < before  # the first whole K of the model at or below eps
        assert f.cycles == float(cycles_after(mode, k, m, big_b if mode == "sync" else 1))
        assert f.low <= f.cycles <= f.high


def test_forecast_unreachable_below_the_calibrated_floor():
    cal = _calibration()
    f = predicted_cycles(cal, "sync", 0.001, 1, 1, 1, lr=0.1)  # floor 0.004 + 0.002 > eps
    assert not f.reachable and math.isinf(f.cycles)
    assert f.to_dict()["cycles"] is None


def test_saturated_transient_inverts_exactly():
    """With a recorded start S the transient is c_K/(lr K + c_K/S): K(eps) is the first whole K
    of that model at or below eps, and a target near S needs only a few updates."""
    cal = _calibration()
    cal = Calibration(fits=cal.fits, problem={**cal.problem, "start": 0.2},
                      fingerprint=cal.fingerprint, design=cal.design, seeds=cal.seeds,
                      version="test")
    assert cal.start == 0.2
    for eps in (0.19, 0.1, 0.02):
        f = predicted_cycles(cal, "async", eps, 4, 1, 2, lr=0.05)
        k = f.iterations

        def g(k):
            return sum(model_terms("async", TRUE["async"], k, lr=0.05, M=4, b=2,
                                   start=0.2).values())
        assert g(k) <= eps and (k == 1 or g(k - 1) > eps)
    plain = predicted_cycles(_calibration(), "async", 0.19, 4, 1, 2, lr=0.05)
    near = predicted_cycles(cal, "async", 0.19, 4, 1, 2, lr=0.05)
    assert near.iterations < plain.iterations / 5


def test_interval_comes_from_the_draws():
    draws = tuple((0.15 * s, 0.04, 0.002) for s in (0.5, 1.0, 2.0))
    cal = _calibration({"sync": TRUE["sync"]}, draws=draws)
    k, low, high = forecast_iterations(cal, "sync", 0.05, lr=0.1, M=2, B=4, b=1)
    assert low < k < high
    with pytest.raises(ParameterError, match="not in this calibration"):
        forecast_iterations(cal, "async", 0.05, lr=0.1, M=2)


def _synthetic(points, rng, noise=0.02):
    """Per-seed running averages of the model at TRUE, multiplicative seed noise."""
    out = []
    for p in points:
        k = np.arange(1, p.steps + 1)
        curve = sum(model_terms(p.mode, TRUE[p.mode], k, lr=p.lr, M=p.stages,
                                B=p.micro_batches, b=p.micro_batch_size, start=START).values())
        curve[0] = START  # every run starts at ||grad f(W_0)||^2 (the fit reads S there)
        out.append(curve * (1 + noise * rng.standard_normal((p.seeds, 1))))
    return out


def test_fit_recovers_known_coefficients():
    """Curves drawn from the model: the fit recovers every coefficient within 10 % (2 % seed
    noise on 8 seeds; a wrong residual, start or bound of the fit misses by far more) and the
    bootstrap interval covers it."""
    spec = CalibrationProblem()
    rows = [("sync", m, big_b, b) for m, big_b, b in ((1, 1, 1), (2, 4, 1), (4, 2, 2))]
    rows += [("async", m, 1, b) for m, b in ((2, 1), (4, 2), (8, 1))]
    points = [DesignPoint(mode=mode, stages=m, micro_batches=big_b, micro_batch_size=b, lr=lr,
                          steps=4000, seeds=8)
              for mode, m, big_b, b in rows for lr in (0.02, 0.08, 0.3)]
    cal = fit_calibration(spec, points, _synthetic(points, np.random.default_rng(1)),
                          resamples=20)
    for mode, fit in cal.fits.items():
        for name, got, want, low, high in zip(COEFFICIENTS[mode], fit.values, TRUE[mode],
                                              fit.low, fit.high, strict=True):
            assert got == pytest.approx(want, rel=0.1), (mode, name)
            assert low <= got <= high
    assert cal.fingerprint == problem_fingerprint(spec.constants())


def test_design_steps_are_fractions_of_the_cap():
    spec = CalibrationProblem(tau=4.0, sigma2=0.1)
    points = design(spec, sync=CALIBRATION_QUICK["sync"], async_=CALIBRATION_QUICK["async"],
                    fractions=CALIBRATION_QUICK["fractions"], steps=100, seeds=2)
    assert len(points) == 8
    by = {}
    for p in points:
        by.setdefault((p.mode, p.stages), []).append(p.lr)
    for lrs in by.values():
        assert lrs[1] / lrs[0] == pytest.approx(4.0, rel=1e-3)  # fractions 0.2 and 0.8


def test_calibrate_command_writes_a_file_plan_reads(tmp_path, capsys):
    argv = ["calibrate", "--quick", "--steps", "300", "--seeds", "4", "--resamples", "3",
            "--tau", "4", "--sigma2", "0.1", "--dim", "8", "--out", str(tmp_path / "cal"),
            "--jobs", "1", "--cache-dir", str(tmp_path / "cache")]
    assert main(argv) == 0
    out = tmp_path / "cal" / "calibration.json"  # --out DIR
    captured = capsys.readouterr()
    assert "c_stale" in captured.out and "fingerprint" in captured.out
    assert "calibrate:" in captured.err and "warning" not in captured.err
    assert main([*argv, "--json"]) == 0  # every point cached
    document = json.loads(capsys.readouterr().out)
    assert document["schema"] == "aimc-pipeline/calibrate/1"
    assert document["calibration"] == json.loads(out.read_text())
    cal = read_calibration(out)
    assert set(cal.fits) == {"sync", "async"} and cal.created_by["quick"] is True
    # the plan with and without it; the digits model's constants are not this problem's
    base = ["plan", "--model", "digits-mlp", "--accelerators", "4", "--no-relax", "--eps", "0.1",
            "--sigma2", "0.1", "--delta", f"{cal.problem['Delta']:.6g}"]
    assert main(base) == 0
    plain = capsys.readouterr().out
    assert "worst case" in plain and "chosen by predicted time" not in plain
    assert main([*base, "--calibration", str(out)]) == 0
    captured = capsys.readouterr()
    assert "chosen by predicted time" in captured.out and "guaranteed s" in captured.out
    assert captured.err.count("warning:") == 1  # the softbounds-tau1 preset is not tau = 4
    assert main([*base, "--calibration", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["plan"]
    assert data["chosen_by"] == "predicted time"
    chosen = data["forecast"]["chosen"]
    assert chosen["predicted_seconds"] > 0 and chosen["guaranteed_seconds"] > 0
    assert data["forecast"]["matches"] is False


def test_plan_forecast_matches_when_the_constants_do():
    spec = CalibrationProblem(device="softbounds-tau1", tau=None, weight_bound=0.35, sigma2=0.1)
    constants = spec.constants()
    hardware = PlanHardware(from_preset("softbounds-tau1", weight_bound=0.35), accelerators=4)
    problem = ProblemParams(L=constants["L"], Delta=constants["Delta"], sigma2=0.1)
    assert problem_fingerprint(theory_values(hardware.hardware, problem)) == \
        problem_fingerprint(constants)
    cal = _calibration()
    cal = Calibration(fits=cal.fits, problem=constants, fingerprint=problem_fingerprint(constants),
                      design=cal.design, seeds=cal.seeds, version="test")
    result = plan(load_model("digits-mlp"), hardware, problem, 0.1, PlanLimits(), relax=False,
                  calibration=cal)
    f = result.forecast
    assert f.matches and f.warning is None
    rows = f.rows()
    assert f.chosen.predicted_seconds == min(r.predicted_seconds for r in rows)
    assert f.guaranteed_choice.key == (result.mode, result.stages, result.micro_batches,
                                       result.micro_batch_size)
    assert f.guaranteed_choice.guaranteed_seconds == pytest.approx(result.seconds)
    assert ("choose differently" in f.reason) == f.differ


@pytest.mark.parametrize("argv, pattern", [
    (["--seeds", "1"], "--seeds=1 is out of range"),
    (["--dim", "4"], "--dim=4 is out of range for this design: its largest pipeline has 8"),
    (["--theta", "1.5"], "theta=1.5"),
])
def test_calibrate_refuses_bad_flags_in_one_line(argv, pattern, capsys, tmp_path):
    assert main(["calibrate", "--quick", "--no-cache", *argv]) == 2
    err = capsys.readouterr().err
    assert pattern in err and err.count("\n") == 1


def test_plan_refuses_a_bad_calibration_file(tmp_path, capsys):
    bad = tmp_path / "cal.json"
    bad.write_text("[]")
    argv = ["plan", "--model", "digits-mlp", "--accelerators", "2", "--no-relax",
            "--calibration", str(bad)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "calibration=" in err and err.count("\n") == 1
