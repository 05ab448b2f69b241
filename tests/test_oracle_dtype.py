"""The oracle problems in float32 (``SimConfig.dtype``): the iterate, gradients, noise and device
updates in float32, the same bits within the dtype, results that agree with float64 within their
seed intervals, the verification checks passing, the dtype in the record and the cache key."""

import json
from dataclasses import replace

import numpy as np
import pytest

from simulate import ResultCache, SimConfig, run, run_sweep
from simulate.commands import simulate as simulate_command
from simulate.config import device_from_config
from simulate.device import DeviceSpread, Updater
from simulate.problems import make_problem
from simulate.problems.oracle_run import OracleTraining
from simulate.verification.checks import check_bound
from simulate.verification.suites import SUITES, VERIFY_FORMAT, check_point
from theory.errors import DivergenceError

#: one-sided statistical margin of the agreement tests (the design's z >= 4)
Z = 4.0


def test_a_float32_oracle_run_computes_in_float32_and_repeats_its_bits():
    cfg = SimConfig(update="pulsed", steps=60, seeds=3, dtype="float32", mode="async", stages=2,
                    micro_batch_size=2)
    problem = make_problem(cfg)
    training = OracleTraining(cfg, cfg.seed, problem, Updater.from_config(
        cfg, device_from_config(cfg)), [0, 1, 2])
    assert training.w.dtype == training.problem.A.dtype == np.float32
    assert training.problem.L == problem.L and training.problem.Delta == problem.Delta
    trace = training.run()
    assert training.w.dtype == np.float32  # still, after 60 pulsed writes
    again = run(cfg)
    np.testing.assert_array_equal(trace.loss, again.loss)
    np.testing.assert_array_equal(trace.avg_grad_norm2, again.avg_grad_norm2)
    alone = run(cfg, members=[2])  # a member alone: its ensemble bits
    np.testing.assert_array_equal(alone.grad_norm2[0], trace.grad_norm2[2])
    assert trace.config["dtype"] == "float32"
    assert trace.loss.dtype == trace.avg_grad_norm2.dtype == np.float64  # the statistics
    double = run(replace(cfg, dtype="float64"))
    assert not np.array_equal(double.loss, trace.loss)


@pytest.mark.parametrize("kw", [
    dict(algorithm="digital"),
    dict(update="expected"),
    dict(update="expected", device="ecram-linearstep"),
    dict(update="pulsed", device="capacitor-linearstep"),
    dict(update="pulsed", device="ecram-linearstep"),
    dict(update="pulsed"),
    dict(update="pulsed", pulse_type="stochastic"),
    dict(update="pulsed", pulse_type="mean-count"),
    dict(update="pulsed", pulse_method="loop"),
    dict(update="pulsed", device="reram-softbounds"),
    dict(update="pulsed", device="reram-softbounds", pulse_method="loop"),
], ids=lambda kw: "-".join(str(v) for v in kw.values()))
def test_the_updates_keep_float32(kw):
    """Each update of a float32 weight array returns float32 (computed in it: the device's
    responses, the pulse kernels' float32 specialisations, the cycle-to-cycle noise)."""
    cfg = SimConfig(dtype="float32", **kw)
    updater = Updater.from_config(cfg, device_from_config(cfg))
    rngs = [np.random.default_rng(np.random.SeedSequence(7, spawn_key=(r,))) for r in range(2)]
    w = np.linspace(-0.2, 0.2, 32, dtype=np.float32).reshape(2, 16)
    dw = np.linspace(-0.01, 0.012, 32, dtype=np.float32).reshape(2, 16)
    spread = DeviceSpread.draw(updater.device, w.shape, rngs) if updater.uses_dtod else None
    out = updater(w, dw, rngs, None if spread is None else spread.astype(np.float32))
    assert out.dtype == np.float32 and np.all(np.isfinite(out))
    assert not np.array_equal(out, w)


AGREEMENT = {
    "digital": dict(algorithm="digital"),
    "analog-expected": dict(update="expected"),
    "analog-pulsed": dict(update="pulsed"),
    "per-sample": dict(update="pulsed", write="per-sample", micro_batch_size=4),
    "least-squares": dict(problem="least-squares", update="expected", lr=0.02),
}


@pytest.mark.parametrize("kw", AGREEMENT.values(), ids=AGREEMENT.keys())
def test_float32_agrees_with_float64_within_the_seed_intervals(kw):
    """16 seeds each: the float32 and float64 runs solve the same problem with independent noise
    (each dtype draws its own), so the difference of their seed means of the average and the
    final squared gradient norm lies within ``Z`` standard errors of the difference (a float32
    run that trained differently, e.g. lost its small updates to rounding, would fall
    outside)."""
    cfg = SimConfig(steps=300, seeds=16, **kw)
    double, single = run(cfg), run(replace(cfg, dtype="float32"))
    for a, b in ((double.avg_grad_norm2, single.avg_grad_norm2),
                 (double.grad_norm2[:, -1], single.grad_norm2[:, -1])):
        standard_error = np.hypot(a.std(ddof=1), b.std(ddof=1)) / np.sqrt(a.size)
        assert abs(b.mean() - a.mean()) <= Z * standard_error
    assert double.grad_norm2[:, -1].mean() < 0.2 * double.grad_norm2[:, 0].mean()  # it trained


@pytest.mark.parametrize("index", [0, 1, 3, 5, 6, 9, 12, 14])
def test_the_quick_suites_checks_pass_in_float32(index):
    """A spread of the quick suite's checks (digital, analog, async, least-squares, per-sample,
    mixed, biased, Tiki-Taka) hold in float32 as they do in float64."""
    case = SUITES["quick"][index]
    check = check_bound(case.bound, replace(case.config(), dtype="float32"))
    assert check.passed, (case.bound, check.empirical, check.bound)


def test_a_sweep_keys_and_runs_each_dtype_apart(tmp_path):
    case = SUITES["quick"][1]
    points = [{"bound": case.bound, "config": replace(case.config(), dtype=dtype).to_dict(),
               "z": 4.0, "format": VERIFY_FORMAT} for dtype in ("float64", "float32")]
    store = ResultCache(tmp_path)
    assert store.key("check_point", points[0]) != store.key("check_point", points[1])
    sweep = run_sweep(check_point, points, jobs=1, cache=store, progress=False)
    double, single = sweep.results
    assert double["config"]["dtype"] == "float64" and single["config"]["dtype"] == "float32"
    assert double["empirical"] != single["empirical"] and double["passed"] and single["passed"]
    assert len(store.entries()) == 2


def test_the_cli_runs_an_oracle_problem_in_float32(capsys):
    code = simulate_command.main(["--problem", "quadratic", "--update", "pulsed", "--dtype",
                                  "float32", "--steps", "20", "--json"])
    assert code in (0, None)
    trace = json.loads(capsys.readouterr().out)["trace"]
    assert trace["config"]["dtype"] == "float32"
    assert simulate_command.main(["--dtype", "float32", "--steps", "20"]) in (0, None)
    assert "dtype=float32" in capsys.readouterr().out


def test_a_diverging_float32_run_is_reported_with_its_step():
    with pytest.raises(DivergenceError, match=r"step \d+"):
        run(SimConfig(algorithm="digital", lr=3.0, steps=400, dtype="float32"))
