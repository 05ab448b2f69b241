"""Calibration that says what it knows (issue 27, item 4): Theorem 4''s bias term, shares and
identifiability, profile bounds, the leave-one-pipeline-out error factor, its coverage, file
format 3 and the plan's interval level."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest
import sympy as sp

from simulate.verification import (
    CalibrationProblem,
    DesignPoint,
    conformal_quantile,
    design,
    fit_calibration,
    fit_log,
    observations,
    pipeline_error_factor,
)
from tests._calibration_files import complete_problem, file_calibration
from theory import ParameterError
from theory.calibration import (
    BIAS_FORMS,
    PROOF_FORMS,
    Calibration,
    iterations_to,
    model_terms,
    predicted_cycles,
    theory_coefficients,
)
from theory.calibration_file import read_calibration, write_calibration
from theory.compiled import compile_expr
from theory.step_choice import stability_limit
from theory.symbols import D as D_sym
from theory.symbols import alpha
from theory.symbols import b as b_sym
from theory.theorems import get_bound

#: the constants of the synthetic problem (complete_problem's)
VALUES = {k: v for k, v in complete_problem().items() if isinstance(v, float)}
#: coefficients of the synthetic curves
TRUE = {"sync": (0.15, 0.04, 0.002), "async": (0.13, 0.035, 0.003, 0.05, 0.02)}
START = 0.2


def test_model_at_the_proof_coefficients_is_theorem_4b_and_young_of_4prime():
    """Batch-mean async: without the bias the model at the proof's coefficients is Theorem 4'B
    exactly (D >= 1); its staleness plus bias is Young's split 2(x^2 + y^2) of Theorem 4''s
    square (x + y)^2, at or above it and at most twice it."""
    proved = theory_coefficients("async", VALUES)
    b4 = compile_expr(get_bound(PROOF_FORMS["async", "batch-mean"]).expr)
    entry4 = get_bound(BIAS_FORMS["async", "batch-mean"]).expr
    square = compile_expr(sp.expand(entry4).coeff(alpha, 2) * alpha**2)
    for k, lr, b, m in ((10, 0.01, 1, 2), (300, 0.002, 4, 5), (37, 0.03, 2, 9)):
        at = {**VALUES, "K": k, "alpha": lr, "b": b, "D": m - 1, "B": 1, "n": b}
        no_bias = model_terms("async", {**proved, "c_s2": 0.0}, k, lr=lr, M=m, b=b)
        assert sum(no_bias.values()) == pytest.approx(float(b4(at)), rel=1e-12)
        terms = model_terms("async", proved, k, lr=lr, M=m, b=b)
        split, sq = terms["staleness"] + terms["bias"], float(square(at))
        assert sq <= split * (1 + 1e-12) <= 2 * sq * (1 + 1e-12)
    d2 = compile_expr(2 * sp.expand(entry4).coeff(alpha, 2).coeff(D_sym, 2) * b_sym)
    assert proved["c_s2"] == pytest.approx(float(d2({**VALUES, "b": 3})), rel=1e-12)
    # the per-sample bias is not divided by the batch; the batch-mean one is
    one = model_terms("async", TRUE["async"], 100, lr=0.01, M=5, b=4, write="per-sample")
    mean = model_terms("async", TRUE["async"], 100, lr=0.01, M=5, b=4)
    assert one["bias"] == pytest.approx(4 * mean["bias"]) and one["staleness"] == mean["staleness"]


@pytest.mark.parametrize("mode, write", [("sync", "batch-mean"), ("async", "batch-mean"),
                                         ("sync", "per-sample"), ("async", "per-sample")])
def test_the_proved_coefficients_are_products_of_the_problem_constants(mode, write):
    """Factored, each coefficient is free of the batch, the delay, the step and ``K`` (the
    model's form carries them), and its value is the proof's at the problem's constants."""
    from theory.calibration_model import _proved_coefficients
    from theory.symbols import K as K_sym

    for expr in _proved_coefficients(mode, write):
        assert not expr.free_symbols & {b_sym, D_sym, alpha, K_sym}, expr
    values = theory_coefficients(mode, VALUES, write)
    assert all(math.isfinite(v) and v > 0 for v in values.values())


def _curves(points, rng, scale=None, noise=0.02, coefficients=TRUE):
    """Per-seed running averages of the model; ``scale[i]`` multiplies point i's c_K (a model
    error of its pipeline)."""
    out = []
    for i, p in enumerate(points):
        c = list(coefficients[p.mode])
        if scale is not None:
            c[0] *= scale[i]
        k = np.arange(1, p.steps + 1)
        curve = sum(model_terms(p.mode, c, k, lr=p.lr, M=p.stages, B=p.micro_batches,
                                b=p.micro_batch_size, start=START).values())
        curve[0] = START
        out.append(curve * (1 + noise * rng.standard_normal((p.seeds, 1))))
    return out


def _points(rows, lrs, steps=3000, seeds=6):
    return [DesignPoint(mode=mode, stages=m, micro_batches=big_b, micro_batch_size=b, lr=lr,
                        steps=steps, seeds=seeds) for mode, m, big_b, b in rows for lr in lrs]


ASYNC_ROWS = [("async", m, 1, b) for m, b in ((2, 1), (3, 2), (5, 1), (8, 1), (4, 4))]


def test_a_term_the_design_cannot_see_is_not_identified_with_a_profile_bound():
    """Curves without a bias (c_s2 = 1e-12) at small steps: c_s2 is not identified, its share
    is tiny, and its profile bound is where the refit's residual sum of squares crosses the F
    threshold (inside just below it, outside at twice it); the identified coefficients keep
    their intervals."""
    from simulate.verification.calibration_fit import _targets

    truth = {"async": (0.13, 0.035, 0.003, 0.05, 1e-12)}
    points = _points(ASYNC_ROWS, (0.01, 0.04))
    curves = _curves(points, np.random.default_rng(3), coefficients=truth)
    cal = fit_calibration(CalibrationProblem(), points, curves, resamples=20)
    fit = cal.fit("async")
    assert fit.identified[:3] == (True, True, True) and not fit.identified[4]
    assert fit.shares[4] < 0.01
    bound = fit.profile_high[4]
    assert fit.values[4] < bound < math.inf
    means = [c.mean(axis=0) for c in curves]
    obs = observations(points, means, [_targets(m) for m in means])["async"]
    x, rss = fit_log("async", obs, cal.start, "batch-mean")
    from scipy.stats import f as f_dist

    n = obs.shape[0]
    limit = rss * (1 + float(f_dist.ppf(cal.ci_level, 1, n - 5)) / (n - 5))
    inside = fit_log("async", obs, cal.start, "batch-mean", x, {4: math.log(bound * 0.999)})[1]
    outside = fit_log("async", obs, cal.start, "batch-mean", x, {4: math.log(2 * bound)})[1]
    assert inside <= limit < outside
    from simulate.commands.calibrate import coefficient_table

    text = coefficient_table(cal)
    assert f"not identified, <= {bound:.4g}" in text and "share" in text


def test_conformal_quantile_is_the_split_conformal_rank():
    scores = np.arange(1.0, 10.0)  # 9 scores
    assert conformal_quantile(scores, 0.9) == 9.0  # ceil(10 * 0.9) = 9th
    assert conformal_quantile(scores, 0.5) == 5.0
    assert math.isinf(conformal_quantile(scores, 0.95))  # rank 10 > 9


def test_the_error_factor_measures_a_known_pipeline_error():
    """Hitting times of the model itself: the factor is the rounding of K only (< 1.05); one of
    five pipelines whose times are twice the model's: the 90 % factor is about 2."""
    c = TRUE["async"]
    rows = []
    for _, m, _, b in ASYNC_ROWS:
        for lr in (0.01, 0.03, 0.1):
            for eps in np.geomspace(0.01, 0.1, 6):
                k = float(iterations_to("async", c, eps, lr=lr, M=m, b=b, start=START))
                if math.isfinite(k):
                    rows.append((m, 1, b, lr, k, eps))
    obs = np.asarray(rows)
    exact, scores = pipeline_error_factor("async", obs, START, "batch-mean", 0.9)
    assert scores == obs.shape[0] and exact < 1.05
    off = obs.copy()
    off[off[:, 0] == 5, 4] *= 2.0  # pipeline M = 5 takes twice the model's updates
    factor, _ = pipeline_error_factor("async", off, START, "batch-mean", 0.9)
    assert 1.6 < factor < 2.6
    assert pipeline_error_factor("async", obs[obs[:, 0] < 4], START, "batch-mean", 0.9) == (
        None, 0)  # two pipelines: no factor


def test_forecast_intervals_cover_held_out_pipelines_on_a_synthetic_case():
    """Every pipeline's c_K off the model by a random factor (log-normal, sd 0.25): fitted on 6
    pipelines, the 90 % forecast intervals hold at least 75 % of 40 new pipelines' true hitting
    times, where the fit's point forecast alone (no error factor, no bootstrap) holds few."""
    rng = np.random.default_rng(11)
    rows = [("async", m, 1, b) for m, b in ((2, 1), (3, 2), (5, 1), (8, 1), (4, 4), (6, 2))]
    points = _points(rows, (0.01, 0.04), steps=2000, seeds=4)
    scale = np.repeat(np.exp(0.25 * rng.standard_normal(len(rows))), 2)
    cal = fit_calibration(CalibrationProblem(), points, _curves(points, rng, scale), resamples=0)
    fit = cal.fit("async")
    assert fit.error_factor is not None and fit.error_factor > 1.1
    bare = replace(cal, fits={"async": replace(fit, error_factor=None)})
    covered = bare_covered = total = 0
    for _ in range(40):
        m, b = int(rng.integers(2, 12)), int(rng.choice([1, 2, 4]))
        lr = float(np.exp(rng.uniform(np.log(0.005), np.log(0.05))))
        c = list(TRUE["async"])
        c[0] *= float(np.exp(0.25 * rng.standard_normal()))
        eps = 3 * float(sum(model_terms("async", c, np.inf, lr=lr, M=m, b=b).values()))
        k = float(iterations_to("async", c, eps, lr=lr, M=m, b=b, start=START))
        f = predicted_cycles(cal, "async", eps, m, 1, b, lr=lr)
        g = predicted_cycles(bare, "async", eps, m, 1, b, lr=lr)
        cycles = 2 * (k + m - 1)
        total += 1
        covered += f.low <= cycles <= f.high
        bare_covered += g.low <= cycles <= g.high
    assert covered >= 0.75 * total, (covered, total)
    assert bare_covered <= 0.3 * total
    assert f.level == 0.9 and g.level == cal.ci_level


def test_format_3_round_trips_and_format_2_is_refused_in_one_line(tmp_path):
    cal = file_calibration(TRUE)
    fit = cal.fit("async")
    fit = replace(fit, identified=(True, True, True, True, False),
                  profile_high=(*fit.high[:4], math.inf), shares=(0.9, 0.5, 0.3, 0.05, 1e-4),
                  error_factor=1.4, error_scores=40)
    cal = replace(cal, fits={**cal.fits, "async": fit})
    path = write_calibration(tmp_path / "cal.json", cal)
    again = read_calibration(path)
    assert again == cal and again.fit("async").error_factor == 1.4
    assert math.isinf(again.fit("async").profile_high[4])
    data = json.loads(path.read_text())
    assert data["format"] == 3 and data["fits"]["async"]["profile_high"][4] is None
    data["format"] = 2
    path.write_text(json.dumps(data))
    with pytest.raises(ParameterError) as error:
        read_calibration(path)
    message = str(error.value)
    assert "\n" not in message and "format = 2" in message and "re-run aimc-pipeline calibrate" \
        in message
    with pytest.raises(ParameterError, match="re-run aimc-pipeline calibrate"):
        Calibration(fits=cal.fits, problem=cal.problem, fingerprint=cal.fingerprint,
                    design=cal.design, seeds=cal.seeds, version="test", format=2)


def test_the_plan_prints_the_calibrations_interval_level(tmp_path, capsys):
    from paper_figures.cli import main

    cal = file_calibration(TRUE)
    with_error = replace(cal, fits={m: replace(f, error_factor=1.3, error_scores=30)
                                    for m, f in cal.fits.items()})
    argv = ["plan", "--model", "digits-mlp", "--accelerators", "4", "--no-relax", "--eps",
            "0.1", "--max-micro-batches", "32", "--max-micro-batch-size", "32", "--calibration"]
    for c, level in ((with_error, "90%"), (cal, "95%")):
        path = write_calibration(tmp_path / f"{level[:2]}.json", c)
        assert main([*argv, str(path)]) == 0
        out = capsys.readouterr().out
        assert f"({level} interval" in out and f"{level} interval" in out.split(
            "alternatives:")[1]
        assert ("90%" in out) == (level == "90%")


def test_design_adds_async_rows_at_the_stability_limit():
    spec = CalibrationProblem()
    points = design(spec, sync=(), async_=((4, 1, 1),), fractions=(0.5,), steps=100, seeds=2,
                    stability=(0.3, 0.6))
    c = spec.constants()
    limit = stability_limit(3, c["L"], c["q_max"])
    assert [p.lr for p in points][1:] == [float(f"{f * limit:.4g}") for f in (0.3, 0.6)]
    with pytest.raises(ParameterError, match="stability fraction"):
        design(spec, sync=(), async_=((4, 1, 1),), steps=100, seeds=2, stability=(1.0,))
