"""Unit tests of simulate.verification.checks and the ``aimc-pipeline verify`` command."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import replace

import numpy as np
import pytest

import simulate.verification as verification  # where verify looks run_suite up
from paper_figures.cli import main
from simulate import (
    Check,
    check_bound,
    cycles_after,
    cycles_to_eps,
    device_from_config,
    empirical_floor,
    run,
)
from simulate.commands import verify as verify_cli
from simulate.verification import checks as verify
from simulate.verification import config_for, region_step_cap, suite_points
from theory import ParameterError, evaluate_complexity, get_bound
from theory.admissible import compiled_bound, predicted_cycles

SMALL = dict(steps=120, seeds=4, log_every=120)


def _symbolic(name: str, expr_attr: str, values: dict) -> float:
    """A registry expression evaluated by sympy substitution (not the lambdified path)."""
    expr = getattr(get_bound(name), expr_attr)
    subs = {s: values[s.name] for s in expr.free_symbols}
    return float(expr.subs(subs).evalf(30))


# ------------------------------------------------------------------------------------------------
# check_bound


def test_check_bound_plugs_in_the_constants_of_the_run():
    config = config_for("analog_sgd_ap", stages=3, micro_batch_size=2, lr=0.004, **SMALL)
    check = check_bound("analog_sgd_ap", config)
    trace = run(config)  # deterministic: the same run again
    per_seed = trace.avg_grad_norm2
    assert check.empirical == pytest.approx(per_seed.mean(), rel=1e-15)
    assert check.stderr == pytest.approx(per_seed.std(ddof=1) / 2, rel=1e-12)
    w_lo, w_hi = trace.w_min_visited.min(), trace.w_max_visited.max()
    dc = device_from_config(config).constants(w_lo, w_hi)
    k = check.constants
    assert (k["q_min"], k["q_max"], k["G_inf"]) == (dc.q_min, dc.q_max, dc.G_inf)
    assert (k["w_lo"], k["w_hi"]) == (w_lo, w_hi)
    assert k["L"] == k["L_s"] == trace.constants.L
    assert k["Delta"] == trace.constants.Delta
    assert (k["b"], k["D"], k["K"], k["alpha"]) == (2, 2, 120, 0.004)
    assert check.bound == pytest.approx(_symbolic("analog_sgd_ap", "expr", k), rel=1e-12)
    assert check.ratio == pytest.approx(check.bound / check.empirical)
    assert check.passed == (check.empirical <= check.bound + 4.0 * check.stderr)
    assert Check.from_dict(json.loads(json.dumps(check.to_dict()))) == check


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        ("analog_sgd_sp", dict(mode="async"), "analog_sgd_sp describes algorithm='analog'"),
        ("digital_sgd", dict(algorithm="analog"), "digital_sgd describes algorithm='digital'"),
        ("analog_sgd", dict(update="pulsed"), "update='pulsed'"),
        ("analog_sgd", dict(seeds=1), "seeds=1 is out of range"),
    ],
)
def test_check_bound_rejects_configs_outside_the_theorems(name, change, message):
    config = replace(config_for(name, lr=0.01, **SMALL), **change)
    with pytest.raises(ParameterError, match=message):
        check_bound(name, config)


def test_check_bound_rejects_unknown_and_uncheckable_bounds():
    config = config_for("analog_sgd", lr=0.01, **SMALL)
    with pytest.raises(ParameterError, match="bound='nope' is unknown"):
        check_bound("nope", config)
    with pytest.raises(ParameterError, match="cannot be checked on the oracle problems"):
        check_bound("analog_sgd_companion", config)
    with pytest.raises(ParameterError, match="problem='digits-mlp'"):
        check_bound("analog_sgd", replace(config, problem="digits-mlp"))


def test_check_bound_rejects_a_run_outside_its_admissible_step():
    """A step above the cap of the region the run visited: no theta admits it."""
    config = config_for("analog_sgd", lr=0.3, tau=1.0, **SMALL)
    with pytest.raises(ParameterError, match="lr=0.3 is inadmissible for analog_sgd"):
        check_bound("analog_sgd", config)


def test_check_bound_rejects_a_clipped_run():
    """Steps larger than tau overshoot a soft bound: the update is clipped, outside Lemma 0."""
    config = config_for("analog_sgd", lr=0.5, tau=0.2, sigma2=100.0, **SMALL)
    with pytest.raises(ParameterError, match="reached the device range"):
        check_bound("analog_sgd", config)


def test_step_cap_is_the_theta_zero_cap_on_the_region():
    config = config_for("analog_sgd_sp", micro_batches=2, tau=1.0, lr=0.01, **SMALL)
    cap = region_step_cap("analog_sgd_sp", config, -0.5, 0.5)
    assert cap == pytest.approx(0.5 / 1.5**2)  # q_min / (L q_max^2), soft bounds, L = 1
    with pytest.raises(ParameterError, match="W_max=1.2 must be < tau=1"):
        region_step_cap("analog_sgd_sp", config, -1.2, 0.5)


# ------------------------------------------------------------------------------------------------
# asymptotic error and cycles to eps


def test_empirical_floor_is_the_tail_mean():
    config = config_for("analog_sgd", lr=0.05, steps=200, seeds=3)
    floor = empirical_floor(config, tail=0.25)
    trace = run(replace(config, log_every=1))
    expected = trace.grad_norm2[:, 150:].mean(axis=1)
    np.testing.assert_array_equal(floor.per_seed, expected)
    assert floor.mean == pytest.approx(expected.mean())


def test_cycles_to_eps_counts_the_first_crossing_and_the_theory_prediction():
    config = config_for("analog_sgd_ap", stages=3, seeds=4, sigma2=0.01)
    result = cycles_to_eps(config, 0.05, region=(-0.4, 0.4))
    assert result.reached == 4
    trace = run(replace(result.config, log_every=1))
    gn2 = trace.grad_norm2[:, :-1]
    running = np.cumsum(gn2, axis=1) / np.arange(1, gn2.shape[1] + 1)
    first = np.array([np.flatnonzero(row <= 0.05)[0] + 1 for row in running])
    np.testing.assert_array_equal(result.cycles, cycles_after("async", 3, 1, first))
    assert np.all(result.cycles == 2 * (first + 3 - 1))
    prediction = evaluate_complexity(
        "analog_sgd_ap", 0.05, theta=result.theta,
        **{k: v for k, v in result.constants.items() if k not in ("w_lo", "w_hi")},
    )
    assert result.predicted == float(prediction.cycles)
    assert result.config.lr == float(prediction.step)
    # the theta of the prediction is the best one (coarse grid check)
    best, _ = predicted_cycles("analog_sgd_ap", 0.05, result.constants)
    assert float(best.cycles) == result.predicted
    for theta in np.linspace(0.05, 0.95, 19):
        try:
            other = evaluate_complexity(
                "analog_sgd_ap", 0.05, theta=theta,
                **{k: v for k, v in result.constants.items() if k not in ("w_lo", "w_hi")},
            )
        except ValueError:
            continue
        assert result.predicted <= float(other.cycles) * (1 + 1e-6)


def test_cycles_to_eps_refuses_a_region_the_run_leaves():
    config = config_for("analog_sgd_sp", micro_batches=2, seeds=2, sigma2=1.0)
    with pytest.raises(ParameterError, match="outside region"):
        cycles_to_eps(config, 0.1, region=(-0.1, 0.1), lr=0.2)


# ------------------------------------------------------------------------------------------------
# command line


def test_a_negative_margin_is_refused_before_any_check_runs(capsys):
    """``--z -1`` is a one-line user error up front, not a failure inside the first sweep point."""
    with pytest.raises(ParameterError, match=r"z=-1.0 is out of range; valid range \[0, inf\)"):
        suite_points("quick", z=-1.0)
    assert main(["verify", "--no-cache", "--jobs", "1", "--z", "-1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "z=-1.0" in err and "sweep" not in err and len(err.splitlines()) == 1


def test_cli_writes_csv_and_json_and_prints_the_summary(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["verify", "--suite", "quick", "--jobs", "1", "--cache-dir", str(tmp_path / "c"),
                 "--out", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "smallest ratio" in text and "analog_sgd_ap" in text
    rows = list(csv.DictReader((out / "verify.csv").open()))
    assert [r["bound"] for r in rows] == [p["bound"] for p in suite_points("quick")]
    assert set(rows[0]) == set(verify_cli.CSV_COLUMNS)
    data = json.loads((out / "verify.json").read_text())
    assert [Check.from_dict(d).ratio for d in data] == [float(r["ratio"]) for r in rows]
    assert main(["verify", "--suite", "quick", "--jobs", "1", "--cache-dir",
                 str(tmp_path / "c"), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["schema"] == "aimc-pipeline/verify/1"
    assert document["checks"] == data  # the file holds the same checks


def test_cli_exits_1_and_names_a_failed_check(monkeypatch, capsys):
    config = config_for("analog_sgd", lr=0.01, **SMALL)
    bad = Check(bound_name="analog_sgd", config=config, empirical=2.0, stderr=0.1, bound=1.0,
                ratio=0.5, margin_z=4.0, passed=False, constants={})
    good = replace(bad, empirical=0.5, ratio=2.0, passed=True)
    monkeypatch.setattr(verification, "run_suite", lambda *a, **k: [good, bad])
    assert main(["verify", "--no-cache"]) == 1
    captured = capsys.readouterr()
    assert "FAILED analog_sgd" in captured.err and "empirical 2 > bound 1" in captured.err
    assert "NO" in captured.out


def test_cli_json_is_strict_when_a_ratio_is_infinite(monkeypatch, capsys):
    config = config_for("analog_sgd", lr=0.01, **SMALL)
    exact = Check(bound_name="analog_sgd", config=config, empirical=0.0, stderr=0.0, bound=1.0,
                  ratio=math.inf, margin_z=4.0, passed=True, constants={"theta": math.nan})
    monkeypatch.setattr(verification, "run_suite", lambda *a, **k: [exact])
    assert main(["verify", "--no-cache", "--json"]) == 0
    out = capsys.readouterr().out
    (data,) = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-strict JSON {c}"))[
        "checks"]
    assert data["ratio"] is None and data["constants"]["theta"] is None


def test_ratio_summaries_and_markdown():
    config = config_for("analog_sgd", lr=0.01, **SMALL)
    checks = [Check("analog_sgd", config, 1.0, 0.1, r, r, 4.0, True, {}) for r in (3.0, 1.5, 9.0)]
    (summary,) = verify_cli.ratio_summaries(checks)
    assert (summary.checks, summary.passed, summary.min_ratio, summary.median_ratio) == (
        3, 3, 1.5, 3.0)
    table = verify_cli.markdown_table(checks)
    assert table.count("| `analog_sgd` |") == 4 and "median ratio" in table
    assert math.isfinite(summary.median_ratio)


def test_module_exports_are_sorted_and_exist():
    for module in (verify, verify_cli):
        assert list(module.__all__) == sorted(module.__all__)
        for name in module.__all__:
            assert hasattr(module, name), name


def test_a_damaged_cached_check_is_recomputed_and_counted(tmp_path, capsys):
    """An entry edited to another valid JSON value (a ratio 1000 times off), or one whose checksum
    was forged around a NaN, is not shown: it is recomputed, and verify says how many were."""
    import hashlib

    from simulate import ResultCache, run_suite
    from simulate.execution import canonical_json, function_name
    from simulate.verification import check_group, suite_runs, validate_group

    cache = tmp_path / "c"
    argv = ["verify", "--suite", "quick", "--jobs", "1", "--cache-dir", str(cache), "--json"]
    assert main(argv) == 0
    clean = capsys.readouterr()
    assert "damaged" not in clean.err
    store = ResultCache(cache)
    points, _ = suite_runs("quick")
    keys = [store.key(function_name(check_group), p) for p in points]
    edited = json.loads(store.paths(keys[0])[0].read_text())
    edited["result"]["checks"][0]["empirical"] *= 1000
    store.paths(keys[0])[0].write_text(json.dumps(edited))
    forged = json.loads(store.paths(keys[1])[0].read_text())
    forged["result"]["checks"][0]["bound"] = float("nan")
    body = {k: v for k, v in forged.items() if k != "checksum"}
    forged["checksum"] = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    store.paths(keys[1])[0].write_text(json.dumps(forged))
    with pytest.raises(ValueError, match="bound=nan is not a finite number"):
        validate_group(store.read(keys[1]))
    assert main(argv) == 0
    again = capsys.readouterr()
    assert again.out == clean.out  # the same checks, recomputed
    assert again.err.splitlines() == ["verify: 2 damaged cache entries were recomputed"]
    sweeps = []
    run_suite("quick", jobs=1, cache=cache, on_sweep=sweeps.append)
    assert (sweeps[0].cached, sweeps[0].corrupt) == (len(points), 0)


def test_out_and_cache_dir_are_checked_before_any_check_runs(tmp_path, monkeypatch, capsys):
    def fail(*args, **kwargs):
        raise AssertionError("a check ran")

    monkeypatch.setattr(verification, "run_suite", fail)
    (tmp_path / "f").write_text("x")
    (tmp_path / "d" / "verify.csv").mkdir(parents=True)
    for argv, flag in [
        (["--out", str(tmp_path / "f")], "--out"),
        (["--out", "/proc/version"], "--out"),
        (["--out", str(tmp_path / "f" / "sub")], "--out"),
        (["--out", str(tmp_path / "d")], "--out"),
        (["--cache-dir", str(tmp_path / "f")], "--cache-dir"),
        (["--cache-dir", "/proc/sys/x"], "--cache-dir"),
    ]:
        assert main(["verify", *argv]) == 2
        (line,) = capsys.readouterr().err.splitlines()
        assert f"error: {flag}=" in line and "cannot be used" in line, line


# ------------------------------------------------------------------------------------------------
# the check read as a prediction (issue 14)


@pytest.mark.parametrize("name, settings", [
    ("digital_sgd", dict(sigma2=0.1, lr=0.5)),
    ("analog_sgd_sp", dict(stages=2, micro_batches=2, sigma2=0.1, lr=0.1111)),
    ("analog_sgd_ap", dict(stages=4, micro_batch_size=2, sigma2=0.1, lr=0.023)),
])
def test_prediction_is_the_first_k_of_guarantee_and_simulation(name, settings):
    config = config_for(name, steps=300, seeds=6, log_every=300, **settings)
    check = check_bound(name, config)
    p = check.prediction
    trace = run(replace(config, log_every=1))
    gn2 = trace.grad_norm2[:, :-1]
    # by brute force: the ensemble mean running average, the bound at every K
    mean = np.array([gn2[:, :k].sum(axis=1).mean() / k for k in range(1, config.steps + 1)])
    assert p.start == pytest.approx(gn2[:, 0].mean(), rel=1e-14)
    k = check.constants
    c = compiled_bound(name)
    theta = 0.0 if k["theta"] is None else k["theta"]
    assert p.floor == pytest.approx(float(c.value(theta, 1e300, k["alpha"], k)), rel=1e-12)
    assert not p.vacuous and p.floor < p.eps < p.start
    assert p.eps == pytest.approx(math.sqrt(p.floor * p.start), rel=1e-15)
    ks = np.arange(1, 100_000)
    k_pred = int(np.argmax(c.value(theta, ks, k["alpha"], k) <= p.eps)) + 1
    assert p.predicted_iterations == k_pred
    k_sim = int(np.argmax(mean <= p.eps)) + 1
    assert p.simulated_iterations == k_sim and mean[k_sim - 1] <= p.eps < mean[k_sim - 2]
    cycles = cycles_after(config.mode, config.stages, config.micro_batches, [k_pred, k_sim])
    assert (p.predicted_cycles, p.simulated_cycles) == tuple(int(v) for v in cycles)
    n = config.samples_per_update
    assert (p.predicted_samples, p.simulated_samples) == (k_pred * n, k_sim * n)
    assert p.ratio == p.predicted_cycles / p.simulated_cycles
    # the bound holds at every K, so the guarantee never promises eps before the simulation
    # reaches it (a property that fails if a bound is violated at K_pred)
    assert check.passed and p.ratio >= 1
    assert p.ci_low <= p.simulated_cycles <= p.ci_high and p.resamples == 1000
    assert p.ratio_low <= p.ratio <= p.ratio_high
    assert p.running == pytest.approx(tuple(mean[:k_sim]), rel=1e-12)
    # the check's own numbers are those of the run logged once (the same iterates)
    once = run(config)
    assert check.empirical == float(np.mean(once.avg_grad_norm2))
    assert Check.from_dict(json.loads(json.dumps(check.to_dict()))) == check


def test_a_floor_above_the_start_makes_a_vacuous_prediction():
    config = config_for("digital_sgd", sigma2=1.0, lr=0.5, steps=100, seeds=4, log_every=100)
    p = check_bound("digital_sgd", config).prediction
    assert p.floor >= p.start and p.vacuous
    assert (p.eps, p.predicted_cycles, p.simulated_cycles, p.ratio, p.running) == (
        None, None, None, None, ())


def test_cli_prints_the_prediction_summary(tmp_path, capsys):
    cache = str(tmp_path / "c")
    assert main(["verify", "--suite", "quick", "--jobs", "1", "--cache-dir", cache]) == 0
    text = capsys.readouterr().out
    assert "median predicted/simulated cycles" in text and "SP vs AP" in text
    assert main(["verify", "--suite", "quick", "--jobs", "1", "--cache-dir", cache,
                 "--markdown"]) == 0
    text = capsys.readouterr().out
    assert "| bound | checks | vacuous | median predicted/simulated cycles |" in text
    assert main(["verify", "--suite", "quick", "--jobs", "1", "--cache-dir", cache,
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["checks"]
    for entry in data:
        p = entry["prediction"]
        assert {"floor", "start", "eps", "predicted_cycles", "simulated_cycles", "ci_low",
                "ci_high", "ratio", "running"} <= set(p)
        if p["ratio"] is not None:
            assert p["ratio"] >= 1


def test_prediction_summaries_count_vacuous_checks_apart():
    from simulate import Prediction

    config = config_for("analog_sgd", lr=0.01, **SMALL)
    base = dict(floor=0.1, start=0.2, predicted_iterations=1, predicted_samples=1,
                simulated_iterations=1, simulated_samples=1, ci_low=1, ci_high=1, resamples=1)

    def made(ratio):
        if ratio is None:
            return Prediction(**{**base, "floor": 0.3}, eps=None, predicted_cycles=None,
                              simulated_cycles=None, ratio=None, ratio_low=None,
                              ratio_high=None)
        return Prediction(**base, eps=0.14, predicted_cycles=int(10 * ratio),
                          simulated_cycles=10, ratio=ratio, ratio_low=ratio, ratio_high=ratio)

    checks = [Check("analog_sgd", config, 1.0, 0.1, 2.0, 2.0, 4.0, True, {}, made(r))
              for r in (3.0, None, 1.5, 9.0)]
    (s,) = verify_cli.prediction_summaries(checks)
    assert (s.checks, s.vacuous, s.unreached, s.median_ratio, s.worst_ratio) == (
        4, 1, 0, 3.0, 9.0)


def test_a_check_too_long_to_log_every_iterate_is_a_user_error_naming_steps():
    config = config_for("analog_sgd", lr=0.01, steps=10**8, seeds=48, log_every=10**8)
    with pytest.raises(ParameterError, match=r"^steps=100000000 with seeds=48: .*logs every"):
        check_bound("analog_sgd", config)
