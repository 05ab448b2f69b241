"""The calibrated complexity model: file format, forecast, fit, the calibrate and plan commands."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from bounds import (
    Model,
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
from tests._calibration_files import complete_problem, file_calibration
from theory import ParameterError, cycles_after
from theory.calibration import (
    COEFFICIENTS,
    Calibration,
    forecast_iterations,
    model_terms,
    predicted_cycles,
    problem_fingerprint,
    theory_coefficients,
)
from theory.calibration_file import read_calibration, write_calibration
from theory.fileio import content_checksum

#: the start ||grad f(W_0)||^2 of the synthetic curves
START = 0.2
#: coefficients the synthetic curves are drawn from (the fit must recover them)
TRUE = {"sync": (0.15, 0.04, 0.002), "async": (0.13, 0.035, 0.003, 0.05, 0.01)}


def _calibration(values=TRUE, draws=(), start=None) -> Calibration:
    """A calibration of ``values`` (``draws`` for every mode); with a ``start`` S it is complete
    (its file reads back), without one its transient is the unsaturated c_K/(lr K)."""
    problem = complete_problem() if start is None else complete_problem(start=start)
    if start is None:
        problem.pop("start")
    return file_calibration(values, problem,
                            draws={mode: draws for mode in values} if draws else None)


def _file_calibration() -> Calibration:
    return _calibration(start=START)


def test_file_round_trip(tmp_path):
    cal = _file_calibration()
    path = write_calibration(tmp_path / "cal.json", cal)
    again = read_calibration(path)
    assert again == cal and not again.edited
    data = json.loads(path.read_text())
    assert data["format"] == 3
    assert data["checksum"] == content_checksum(data)  # over everything but itself


def test_the_checksum_is_of_the_content_not_its_layout():
    data = _file_calibration().to_dict()
    again = json.loads(json.dumps(dict(reversed(list(data.items()))), indent=4))
    assert content_checksum(again) == content_checksum(data) == data["checksum"]
    again["fits"]["sync"]["values"][0] = float(np.nextafter(again["fits"]["sync"]["values"][0], 1))
    assert content_checksum(again) != data["checksum"]  # one ulp of one coefficient


def _scale(fit: dict, factor: float) -> None:
    for key in ("values", "low", "high"):
        fit[key] = [factor * x for x in fit[key]]
    fit["draws"] = [[factor * x for x in row] for row in fit["draws"]]


def _refit(d: dict) -> None:
    d["fingerprint"] = problem_fingerprint(d["problem"])


#: edits of a calibration file and what the reader says (each one line, naming the key)
EDITS = [
    ("format", lambda d: d.update(format=7), "format = 7 is not valid; valid: 3"),
    ("format 1", lambda d: d.update(format=1), "format = 1 is the format of an earlier release"),
    ("no fits", lambda d: d.pop("fits"), "missing key 'fits'"),
    ("null", lambda d: d["fits"]["sync"].update(values=[0.1, None, 0.2]),
     "fits.sync.values[1] = None"),
    ("negated", lambda d: d["fits"]["sync"].update(
        values=[-x for x in d["fits"]["sync"]["values"]]),
     "fits.sync.values[0] = -0.15 is out of range; valid: number > 0"),
    ("zeroed", lambda d: d["fits"]["async"]["values"].__setitem__(3, 0),
     "fits.async.values[3] = 0 is out of range; valid: number > 0"),
    ("negated draw", lambda d: d["fits"]["sync"]["draws"][0].__setitem__(2, -0.002),
     "fits.sync.draws[0][2] = -0.002 is out of range"),
    ("x1000 estimate", lambda d: d["fits"]["sync"].update(
        values=[1000 * x for x in d["fits"]["sync"]["values"]]),
     "fits.sync.values[0] = 150.0 (c_K) lies outside its interval"),
    ("x1000 all", lambda d: _scale(d["fits"]["sync"], 1000), "checksum = sha256:"),
    ("no draws", lambda d: d["fits"]["async"].update(draws=[]),
     "fits.async.draws = [] has 0 entries; valid: an array of at least 1 entries"),
    ("interval not the draws'", lambda d: d["fits"]["sync"]["low"].__setitem__(0, 0.01),
     "fits.sync.low[0] = 0.01, high = 0.15 (c_K) is not the interval its 1 draws give"),
    ("more draws than resamples", lambda d: d["seeds"].update(resamples=0),
     "seeds.resamples = 0 is out of range"),
    ("problem {}", lambda d: (d.update(problem={}), _refit(d)), "problem: missing key 'problem'"),
    ("NaN-free constants", lambda d: d["problem"].pop("G_inf"), "problem: missing key 'G_inf'"),
    ("q_min > q_max", lambda d: (d["problem"].update(q_min=1.3), _refit(d)),
     "problem.q_min = 1.3 is above problem.q_max = 1.2"),
    ("edited constant", lambda d: d["problem"].update(L=2.0),
     "fingerprint = '"),
    ("edited constant, recomputed fingerprint", lambda d: (d["problem"].update(L=2.0), _refit(d)),
     "checksum = sha256:"),
    ("bad checksum", lambda d: d.update(checksum="sha256:" + "0" * 64),
     "was edited after aimc-pipeline calibrate wrote it"),
    ("no checksum", lambda d: d.pop("checksum"), "missing key 'checksum'"),
    ("3 coefficients", lambda d: d["fits"]["sync"].update(values=[0.1, 0.2]),
     "fits.sync.values = [0.1, 0.2] has 2 entries"),
    ("unknown mode", lambda d: d["design"][0].update(mode="async") or d["fits"].pop("async"),
     "design[0].mode = 'async' has no fit"),
]


EDITS += [
    ("edited write", lambda d: d["problem"].update(write="per-sample"), "fingerprint = '"),
    ("edited write, recomputed fingerprint",
     lambda d: (d["problem"].update(write="per-sample"), _refit(d)), "checksum = sha256:"),
    ("unknown write", lambda d: d["problem"].update(write="rank-1"),
     "problem.write = 'rank-1' is not valid; valid: one of 'batch-mean', 'per-sample'"),
    ("pulse type of the expected update", lambda d: d["problem"].update(pulse_type="stochastic"),
     "problem.pulse_type = 'stochastic' is not valid; valid: None"),
    ("no update", lambda d: d["problem"].pop("update"), "problem: missing key 'update'"),
]


@pytest.mark.parametrize("edit, message", [e[1:] for e in EDITS], ids=[e[0] for e in EDITS])
def test_edited_files_are_refused_in_one_line(tmp_path, edit, message):
    """Negated, zeroed or scaled coefficients, empty draws, an emptied problem with a recomputed
    fingerprint, a changed constant: each is refused with one line naming the key (or the
    checksum, when the edit keeps the file consistent)."""
    data = _file_calibration().to_dict()
    edit(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ParameterError) as info:
        read_calibration(path)
    text = str(info.value)
    assert message in text and "\n" not in text and text.startswith(f"calibration={str(path)!r}: ")


def test_an_edited_file_is_read_when_accepted(tmp_path):
    """--accept-edited-calibration: a consistent edit is read, marked edited; an inconsistent
    one (negated coefficients) is still refused."""
    data = _file_calibration().to_dict()
    _scale(data["fits"]["sync"], 1000)
    path = tmp_path / "x1000.json"
    path.write_text(json.dumps(data))
    cal = read_calibration(path, accept_edited=True)
    assert cal.edited and cal.fit("sync").values[0] == pytest.approx(150.0)
    assert not read_calibration(write_calibration(tmp_path / "again.json", cal)).edited
    data["fits"]["sync"]["values"][0] *= -1
    path.write_text(json.dumps(data))
    with pytest.raises(ParameterError, match="out of range"):
        read_calibration(path, accept_edited=True)


@pytest.mark.parametrize("key, value", [
    ("problem", "least-squares"), ("dim", 8), ("seed", 1), ("device", "capacitor-linearstep"),
    ("tau", 4.0), ("weight_bound", 0.35), ("algorithm", "tiki-taka"), ("update", "pulsed"),
    ("pulse_type", "deterministic"), ("write", "per-sample"), ("L", 2.0), ("G_inf", 0.3),
])
def test_the_fingerprint_covers_problem_device_update_pulses_write_and_algorithm(key, value):
    base = complete_problem()
    assert problem_fingerprint({**base, key: value}) != problem_fingerprint(base)
    # the order of the keys and digits beyond the 6th do not count
    shuffled = dict(reversed(list(base.items()))) | {"L": 1.0000001}
    assert problem_fingerprint(shuffled) == problem_fingerprint(base)


def test_a_plan_matches_when_its_constants_are_the_calibrations():
    cal = _file_calibration()
    constants = {k: cal.problem[k] for k in ("L", "L_s", "Delta", "sigma2", "theta", "q_min",
                                                "q_max", "G_inf")}
    assert cal.matches(constants) and not cal.matches({**constants, "q_min": 0.5})
    assert (cal.write, cal.update, cal.pulse_type) == ("batch-mean", "expected", None)


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
    assert cal.fingerprint == problem_fingerprint(cal.problem)
    assert cal.problem["write"] == "batch-mean" and cal.problem["update"] == "expected"


def test_design_steps_are_fractions_of_the_cap():
    spec = CalibrationProblem(tau=4.0, sigma2=0.1)
    points = design(spec, sync=CALIBRATION_QUICK["sync"], async_=CALIBRATION_QUICK["async"],
                    fractions=CALIBRATION_QUICK["fractions"], steps=100, seeds=2, stability=())
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
    assert "c_s1" in captured.out and "c_s2" in captured.out and "fingerprint" in captured.out
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
    # a model that is not one of the package's networks (for digits-mlp itself the plan says
    # that an oracle calibration forecasts the oracle: tests/test_calibration_network.py)
    model = Model("mlp-shaped", load_model("digits-mlp").layers)
    result = plan(model, hardware, problem, 0.1, PlanLimits(), relax=False, calibration=cal)
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


# -- per-sample writes: the form, the fit, the file, the plan -------------------------------------

def test_the_per_sample_form_has_the_floor_of_corollary_3ps():
    """At the proof's coefficients the per-sample sync model has Corollary 3PS's floor (one
    sample's, not divided by n) and Corollary 3's averaged noise, so it lies at or below the
    registry's 3PS entry, equal at n = 1; against the batch-mean form only the floor is n times
    larger (the noise and staleness of per-sample writes average over the writes)."""
    import sympy as sp

    from theory.compiled import compile_expr
    from theory.symbols import K as K_sym
    from theory.symbols import alpha
    from theory.theorems import get_bound

    values = {k: v for k, v in complete_problem().items() if isinstance(v, float)}
    proved = theory_coefficients("sync", values)
    entry = get_bound("analog_sgd_sp_per_sample").expr
    bound = compile_expr(entry)
    floor = compile_expr(sp.limit(sp.limit(entry, K_sym, sp.oo), alpha, 0))  # K -> oo, lr -> 0
    for k, lr, big_b, b in ((10, 0.1, 4, 2), (1000, 0.02, 8, 1), (37, 0.3, 1, 1)):
        terms = model_terms("sync", proved, k, lr=lr, M=4, B=big_b, b=b, write="per-sample")
        assert terms["floor"] == pytest.approx(float(floor(values)), rel=1e-12)
        limit = float(bound({**values, "K": k, "alpha": lr}))
        total = sum(terms.values())
        assert total <= limit * (1 + 1e-12)
        assert (total == pytest.approx(limit, rel=1e-12)) == (big_b * b == 1)
    for mode, big_b, b in (("sync", 4, 2), ("async", 1, 8)):
        mean = model_terms(mode, TRUE[mode], 100, lr=0.1, M=4, B=big_b, b=b)
        each = model_terms(mode, TRUE[mode], 100, lr=0.1, M=4, B=big_b, b=b, write="per-sample")
        assert each["floor"] == pytest.approx(mean["floor"] * big_b * b)
        assert all(each[t] == mean[t] for t in ("transient", "noise", "staleness"))
        one = model_terms(mode, TRUE[mode], 100, lr=0.1, M=4, write="per-sample")
        assert one == model_terms(mode, TRUE[mode], 100, lr=0.1, M=4)
    with pytest.raises(ParameterError, match="write='rank-1' is not valid"):
        model_terms("sync", TRUE["sync"], 10, lr=0.1, M=2, write="rank-1")


def test_per_sample_proof_column_is_theorem_4ps_and_3ps():
    """Per-sample calibrations compare with Corollary 3PS and Theorem 4'PS: at the proof's
    coefficients the per-sample model is the registry entry exactly at one sample per write
    for sync; for async its transient, noise and floor are 4'PS's at b = 1 and its staleness
    and bias are Young's split of 4'PS's square, at or above it, equal where the two parts of
    the square are equal; the async floor is one sample's, without Theorem 4'B's factor."""
    import sympy as sp

    from theory.calibration import PROOF_FORMS, proof_label
    from theory.compiled import compile_expr
    from theory.symbols import alpha
    from theory.theorems import get_bound

    values = {k: v for k, v in complete_problem().items() if isinstance(v, float)}
    assert (proof_label("async", "per-sample"), proof_label("sync", "per-sample")) == (
        "Theorem 4'PS", "Corollary 3PS")
    assert (proof_label("async"), proof_label("sync")) == ("Theorem 4'B", "Corollary 3")
    for mode in ("sync", "async"):
        proved = theory_coefficients(mode, values, "per-sample")
        entry = get_bound(PROOF_FORMS[mode, "per-sample"]).expr
        bound = compile_expr(entry)
        stale = compile_expr(sp.expand(entry).coeff(alpha, 2) * alpha**2)
        cases = ((10, 0.1, 1, 1, 2), (300, 0.02, 1, 1, 2), (37, 0.3, 4, 2, 2), (50, 0.05, 1, 8, 5),
                 (50, 0.05, 1, 1, 9))
        for k, lr, big_b, b, m in cases:
            if mode == "async":
                big_b = 1
            terms = model_terms(mode, proved, k, lr=lr, M=m, B=big_b, b=b, write="per-sample")
            at = {**values, "K": k, "alpha": lr, "B": big_b, "b": b, "D": m - 1, "n": big_b * b}
            limit, square = float(bound(at)), float(stale(at)) if mode == "async" else 0.0
            rest = sum(v for name, v in terms.items() if name not in ("staleness", "bias"))
            one = big_b * b == 1
            assert rest <= (limit - square) * (1 + 1e-12), (mode, k, lr, big_b, b, m)
            assert (rest == pytest.approx(limit - square, rel=1e-12)) == one
            if mode == "async":
                split = terms["staleness"] + terms["bias"]
                assert square <= split * (1 + 1e-12)
                assert split <= 2 * square * (1 + 1e-12)  # 2(x^2 + y^2) <= 2 (x + y)^2
    batch_mean = theory_coefficients("async", values)
    per_sample = theory_coefficients("async", values, "per-sample")
    assert per_sample["c_floor"] < batch_mean["c_floor"]  # no 4'B factor
    assert per_sample["c_floor"] == pytest.approx(theory_coefficients("sync", values)["c_floor"])
    from simulate.commands.calibrate import coefficient_table

    text = coefficient_table(file_calibration(TRUE, complete_problem(write="per-sample")))
    assert "Corollary 3PS's for sync and Theorem 4'PS's for async" in text
    assert "4'B" not in text and "c_s2 lr^2 D^2; proof: 8 kappa L_s^2 G_inf^2 sigma2" in text


def test_fit_recovers_the_per_sample_form():
    """Curves of the per-sample model: a per-sample calibration recovers every coefficient within
    10 %; the batch-mean form fitted to the same curves leaves log residuals over 2x larger (the
    write semantics is part of what a calibration measures)."""
    rows = [("sync", m, big_b, b) for m, big_b, b in ((1, 1, 1), (2, 4, 1), (4, 2, 2))]
    rows += [("async", m, 1, b) for m, b in ((2, 1), (4, 2), (8, 1))]
    points = [DesignPoint(mode=mode, stages=m, micro_batches=big_b, micro_batch_size=b, lr=lr,
                          steps=4000, seeds=8)
              for mode, m, big_b, b in rows for lr in (0.02, 0.08, 0.3)]
    curves = []
    rng = np.random.default_rng(2)
    for p in points:
        k = np.arange(1, p.steps + 1)
        curve = sum(model_terms(p.mode, TRUE[p.mode], k, lr=p.lr, M=p.stages, B=p.micro_batches,
                                b=p.micro_batch_size, start=START, write="per-sample").values())
        curve[0] = START
        curves.append(curve * (1 + 0.02 * rng.standard_normal((p.seeds, 1))))
    each = fit_calibration(CalibrationProblem(write="per-sample"), points, curves, resamples=10)
    assert each.write == "per-sample" and each.problem["write"] == "per-sample"
    for mode, fit in each.fits.items():
        for name, got, want in zip(COEFFICIENTS[mode], fit.values, TRUE[mode], strict=True):
            assert got == pytest.approx(want, rel=0.1), (mode, name)
    mean = fit_calibration(CalibrationProblem(), points, curves, resamples=1)
    assert mean.fingerprint != each.fingerprint
    for mode in each.fits:  # 2 % seed noise: the right form's rms 0.017, the wrong one's 0.06-0.11
        assert mean.fit(mode).residual_rms > 2 * each.fit(mode).residual_rms, mode


def test_a_per_sample_forecast_uses_the_per_sample_form():
    problem = complete_problem(write="per-sample")
    cal = file_calibration(TRUE, problem)
    f = predicted_cycles(cal, "sync", 0.02, 4, 8, 1, lr=0.05)
    model = sum(model_terms("sync", TRUE["sync"], f.iterations, lr=0.05, M=4, B=8, b=1,
                            start=START, write="per-sample").values())
    before = sum(model_terms("sync", TRUE["sync"], f.iterations - 1, lr=0.05, M=4, B=8, b=1,
                             start=START, write="per-sample").values())
    assert model <= 0.02 < before  # the first whole K of the per-sample model at or below eps
    assert f.terms["floor"] == pytest.approx(TRUE["sync"][2])  # not divided by n = 8
    with pytest.raises(ParameterError, match="was made with write 'per-sample', the plan is for "
                                             "write 'batch-mean'"):
        plan(load_model("digits-mlp"), PlanHardware(from_preset("softbounds-tau1"),
                                                    accelerators=4), ProblemParams(), 0.1,
             PlanLimits(), relax=False, calibration=cal)


def test_calibrate_per_sample_writes_a_file_plan_refuses_for_batch_mean(tmp_path, capsys):
    """A per-sample calibration small enough for seconds: the file records the write (and the
    fingerprint tells it from the batch-mean one); plan, whose writes are batch-mean, refuses it
    in one line."""
    argv = ["calibrate", "--quick", "--steps", "200", "--seeds", "3", "--resamples", "2",
            "--dim", "8", "--write", "per-sample", "--out", str(tmp_path / "ps"), "--jobs", "1",
            "--no-cache"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "write per-sample" in captured.out and "c_floor; proof" in captured.out
    path = tmp_path / "ps" / "calibration.json"
    cal = read_calibration(path)
    assert (cal.write, cal.update, cal.pulse_type) == ("per-sample", "expected", None)
    assert cal.created_by["write"] == "per-sample"
    assert cal.fingerprint != problem_fingerprint({**cal.problem, "write": "batch-mean"})
    assert main(["plan", "--model", "digits-mlp", "--accelerators", "4", "--no-relax",
                 "--calibration", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "was made with write 'per-sample'" in err
    assert "calibrate --write batch-mean" in err


def test_calibrate_refuses_a_pulse_type_without_pulses_in_one_line(capsys):
    assert main(["calibrate", "--quick", "--no-cache", "--pulse-type", "deterministic"]) == 2
    err = capsys.readouterr().err
    assert "--pulse-type=deterministic applies to --update pulsed only" in err
    assert err.count("\n") == 1
