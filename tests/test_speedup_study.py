"""The speedup study (issue 15): time to target, step choice, bootstrap speedups, the figure.

The protocol's pieces (:mod:`simulate.verification.tuning`) are checked on hand-made curves whose
answers are known; the sweep function on tiny runs (a diverging seed is isolated, not dropped); the
figure on a tiny study (two stage counts, two steps, two seeds, a short budget) whose exact
identities (sync = ``MB/(B + M - 1)``, async over its own counterpart = 1 at ``M = 1``) must hold.
"""

from __future__ import annotations

import csv
import json
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paper_figures import speedup
from simulate import NetworkSpec, SimConfig, train_network
from simulate.problems import CURVE_SPEC
from simulate.rng import bootstrap_generator
from simulate.verification import (
    BOOTSTRAP_RESAMPLES,
    Target,
    TimeToTarget,
    choose_step,
    initial_sharpness,
    log_grid,
    percentile_interval,
    resample_counts,
    speedup_interval,
    study_point,
    study_run,
    time_to_target,
    tune,
)
from theory import ParameterError


def _times(cycles, reached):
    cycles = np.asarray(cycles, dtype=np.int64)
    return TimeToTarget(updates=cycles // 2, cycles=cycles, reached=np.asarray(reached))


# ------------------------------------------------------------------------------------------------
# time to target, choice of the step


def test_time_to_target_first_hit_and_censoring():
    curves = np.array([[0.1, 0.5, 0.9, 0.95], [0.1, 0.2, 0.3, 0.4], [np.nan] * 4])
    steps = np.array([0, 10, 20, 30])
    t = time_to_target(curves, steps, Target("accuracy", 0.9), "async", 4, 1)
    np.testing.assert_array_equal(t.updates, [20, 30, 30])  # censored at the budget
    np.testing.assert_array_equal(t.reached, [True, False, False])  # nan (diverged) never
    np.testing.assert_array_equal(t.cycles, 2 * (t.updates + 3))
    assert t.fraction == pytest.approx(1 / 3)
    none = time_to_target(curves, steps, Target("accuracy", 0.5), "none", 4, 8)
    np.testing.assert_array_equal(none.cycles, 2 * 4 * 8 * none.updates)
    loss = time_to_target(np.array([[3.0, 1.0, 0.2, 0.1]]), steps, Target("loss", 0.3), "sync",
                          4, 8)
    np.testing.assert_array_equal(loss.updates, [20])
    np.testing.assert_array_equal(loss.cycles, [2 * (8 + 4 - 1) * 20])


def test_target_labels_curves_and_validation():
    acc, loss = Target("accuracy", 0.85), Target("loss", 0.3)
    assert (acc.label, acc.select_curve, acc.report_curve) == (
        "85% accuracy", "validation_accuracy", "test_accuracy")
    assert (loss.label, loss.select_curve, loss.report_curve) == ("loss 0.3", "loss", "loss")
    with pytest.raises(ParameterError, match="^value="):
        Target("accuracy", 1.0)
    with pytest.raises(ParameterError, match="^kind="):
        Target("error", 0.1)
    assert log_grid(0.01, 1, 2) == (0.005, 0.01, 0.02, 0.04)


def test_choose_step_median_then_fraction_then_smaller_step():
    fast = _times([10, 12, 100], [True, True, False])  # median 12
    slow = _times([20, 20, 20], [True, True, True])
    assert choose_step({0.1: slow, 0.2: fast}) == 0.2
    censored_a = _times([100, 100, 100], [True, False, False])
    censored_b = _times([100, 100, 100], [False, False, False])
    assert choose_step({0.1: censored_b, 0.2: censored_a}) == 0.2  # more seeds reached
    assert choose_step({0.3: slow, 0.1: slow}) == 0.1  # a tie: the smaller step
    with pytest.raises(ParameterError, match="^selection="):
        choose_step({})


def test_tune_chooses_on_validation_and_reports_on_test():
    steps = np.array([0, 1, 2, 3])

    def run(validation, test):
        return {"step": steps, "validation_accuracy": np.array([validation]),
                "test_accuracy": np.array([test]), "loss": np.array([[2.0, 1.0, 0.5, 0.1]])}

    # step 0.1 looks fastest on the test images but step 0.2 on the validation images
    runs = {0.1: run([0, 0, 0, 0.9], [0.9, 0.9, 0.9, 0.9]),
            0.2: run([0, 0.9, 0.9, 0.9], [0, 0, 0.9, 0.9])}
    t = tune(runs, Target("accuracy", 0.8), "async", 2, 1)
    assert t.step == 0.2
    np.testing.assert_array_equal(t.time.updates, [2])  # its test time, not its validation one
    assert t.selection == {0.1: (2.0 * (3 + 1), 1.0), 0.2: (2.0 * (1 + 1), 1.0)}


# ------------------------------------------------------------------------------------------------
# speedups and their intervals


def test_resample_counts_are_the_predict_bootstrap():
    counts = np.concatenate(list(resample_counts(bootstrap_generator(3), 5)))
    assert counts.shape == (BOOTSTRAP_RESAMPLES, 5)
    np.testing.assert_array_equal(counts.sum(axis=1), 5)
    again = np.concatenate(list(resample_counts(bootstrap_generator(3), 5)))
    np.testing.assert_array_equal(counts, again)  # the same bits every time
    lo, hi = percentile_interval(np.arange(1000))
    assert (lo, hi) == (25, 974)  # values that occurred (inverted CDF)


def test_speedup_interval_ratio_of_medians_and_paired_bootstrap():
    base = _times([100, 120, 140, 160, 180], [True] * 5)
    arm = _times([50, 60, 70, 80, 90], [True] * 5)
    est = speedup_interval(base, arm)
    assert est.value == 140 / 70 and est.status == "ok"
    # every seed's pair has ratio 2: every resample's ratio of medians is 2 (paired)
    assert est.low == est.high == 2.0
    noisy = speedup_interval(base, _times([50, 90, 70, 140, 60], [True] * 5))
    assert noisy.low < noisy.value < noisy.high
    assert noisy.resamples == BOOTSTRAP_RESAMPLES


def test_speedup_interval_marks_censored_medians_as_bounds():
    base = _times([100, 100, 100], [True, True, True])
    censored = _times([400, 400, 50], [False, False, True])
    assert speedup_interval(base, censored).status == "upper bound"
    assert speedup_interval(censored, base).status == "lower bound"
    assert speedup_interval(censored, censored).status == "censored"
    with pytest.raises(ParameterError, match="same seeds"):
        speedup_interval(base, _times([1, 2], [True, True]))


# ------------------------------------------------------------------------------------------------
# the sweep function


def _tiny(**changes):
    fields = {"problem": "digits-resmlp", "data": "digits-holdout", "mode": "async",
              "stages": 2, "micro_batch_size": 4, "lr": 0.01, "steps": 24, "seeds": 3,
              "log_every": 8}
    return SimConfig(**{**fields, **changes})


def test_study_run_curves_of_every_seed():
    config = _tiny()
    result = study_run(study_point(config))
    assert result["test_accuracy"].shape == result["validation_accuracy"].shape == (3, 4)
    np.testing.assert_array_equal(result["step"], [0, 8, 16, 24])
    np.testing.assert_array_equal(result["diverged"], [-1, -1, -1])
    # the same bits as the network's own ensemble run, and validation accuracy is measured
    run = train_network(config, spec=CURVE_SPEC)
    np.testing.assert_array_equal(result["test_accuracy"], run.trace.test_accuracy)
    np.testing.assert_array_equal(result["validation_accuracy"], run.validation_accuracy)
    assert np.all((0 <= result["validation_accuracy"]) & (result["validation_accuracy"] <= 1))


def test_study_run_isolates_a_diverging_seed(monkeypatch):
    # member 1 diverges (a fake error for that member only): the others are kept, it is marked
    import simulate.verification.tuning as tuning

    real = tuning.train_network

    def fake(config, members, spec):
        if 1 in members:
            from theory import DivergenceError
            raise DivergenceError(7, "training loss", float("inf"), config.lr)
        return real(config, members=members, spec=spec)

    monkeypatch.setattr(tuning, "train_network", fake)
    result = study_run(study_point(_tiny()))
    np.testing.assert_array_equal(result["diverged"], [-1, 7, -1])
    assert np.isnan(result["test_accuracy"][1]).all()
    assert np.isfinite(result["test_accuracy"][[0, 2]]).all()
    t = time_to_target(result["test_accuracy"], result["step"], Target("accuracy", 0.01),
                       "async", 2, 1)
    assert not t.reached[1] and t.reached[0]  # counted as not reached, never dropped


def test_initial_sharpness_matches_a_dense_hessian():
    # a 2-layer network of width 2 has 148 weights: its Hessian by finite differences
    spec = NetworkSpec(layers=2, width=2)
    config = SimConfig(problem="digits-mlp")
    value = initial_sharpness(config, spec=spec, iterations=200)
    from simulate import device_from_config
    from simulate.problems import Network, load_digits_data
    from simulate.rng import member_generators

    data = load_digits_data()
    net = Network.build("digits-mlp", spec, 1, 64, 10)
    device = device_from_config(config)
    w, c = net.init(member_generators(0, [0])["data"], 0.5 * device.w_min, 0.5 * device.w_max)

    def grad(weights):
        gw, gc = np.empty_like(weights), np.empty_like(c)
        views = net.views(weights, c)
        net.gradient(data.x_train, data.y_train, views, [v.weights for v in views],
                     net.views(gw, gc))
        return gw[0]

    n, h = w.shape[1], 1e-4
    hessian = np.empty((n, n))
    for i in range(n):
        e = np.zeros_like(w)
        e[0, i] = h
        hessian[i] = (grad(w + e) - grad(w - e)) / (2 * h)
    top = np.linalg.eigvalsh((hessian + hessian.T) / 2)
    largest = top[np.argmax(np.abs(top))]  # power iteration finds the largest in magnitude
    assert value == pytest.approx(largest, rel=1e-3)


# ------------------------------------------------------------------------------------------------
# the figure on a tiny study


TINY = speedup.SpeedupSettings(
    stages=(1, 2), grid=(0.00625, 0.0125), seeds=2, budget_samples=640, log_samples=128,
    accuracy_targets=(0.3, 0.5), loss_target=1.5, sensitivity_stages=2, sensitivity_seeds=2,
    sensitivity_target=0.5, sensitivity_budget_samples=512,
    workloads=(speedup.Workload("resmlp digits", "digits-resmlp", "digits-holdout"),),
    variants=(speedup.Variant("tuned step (reference)", reason="reference"),
              speedup.Variant("fixed 0.00625", fixed_step=0.00625, reason="fixed"),
              speedup.Variant("digital", (("algorithm", "digital"),), reason="ideal"),
              speedup.Variant("per-sample", (("write", "per-sample"),), reason="writes")),
)


def write_tiny(module, study, out):
    """``module.write`` (quick, one job, a cache in ``out``) with ``speedup.settings`` patched to
    ``study``; its CSV rows and manifest."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(speedup, "settings", lambda quick: study)
        paths = module.write(out, quick=True, jobs=1, cache=out / "cache")
    with open(paths[2], newline="") as handle:
        rows = list(csv.DictReader(handle))
    return rows, json.loads(paths[3].read_text())


@pytest.fixture(scope="module")
def tiny_study(tmp_path_factory):
    return write_tiny(speedup, TINY, tmp_path_factory.mktemp("speedup"))


def test_tiny_study_csv_identities(tiny_study):
    rows, _ = tiny_study
    assert list(rows[0]) == list(speedup.COLUMNS)
    b = TINY.micro_batches
    tta = [r for r in rows if r["kind"] == "time-to-target"]
    # 1 workload x 3 targets x 2 stage counts x (sync own, sync minibatch, async own, minibatch)
    assert len(tta) == 3 * 2 * 4
    for row in tta:
        m = int(row["stages"])
        value, low, high = (float(row[k]) for k in ("speedup", "ci_low", "ci_high"))
        assert low <= value <= high or row["status"] != "ok"
        assert 0 <= float(row["reached"]) <= 1 and int(row["seeds"]) == 2
        assert float(row["step"]) in TINY.grid and float(row["baseline_step"]) in TINY.grid
        if row["mode"] == "sync":  # the iterates of mini-batch SGD: exactly the throughput ratio
            assert value == pytest.approx(m * b / (b + m - 1), rel=1e-14)
            assert high - low < 1e-12
        elif row["baseline"] == "own" and m == 1:
            assert value == low == high == 1.0  # the M = 1 run is its own counterpart
    sens = [r for r in rows if r["kind"] == "sensitivity"]
    assert [r["variant"] for r in sens] == [v.label for v in TINY.variants]
    assert [r["write"] for r in sens] == [speedup.DEFAULT_WRITE] * 3 + ["per-sample"]
    fixed = sens[1]
    assert float(fixed["step"]) == float(fixed["baseline_step"]) == 0.00625
    # every sensitivity row is read within its budget of 512 samples: 128 updates of 4, at M = 2
    # at most 2 (128 + 1) cycles, the reference rows too (the main runs cut to that budget)
    for row in sens:
        assert float(row["median_cycles"]) <= 2 * (512 // 4 + 1)


def test_tiny_study_manifest_records_the_protocol(tiny_study):
    rows, manifest = tiny_study
    protocol = manifest["protocol"]
    assert protocol["grid"] == list(TINY.grid)
    assert protocol["budget_samples"] == 640
    assert protocol["budget_updates"] == {"none": 20, "async": 160}
    assert protocol["sensitivity_budget_samples"] == 512
    assert protocol["seeds"] == [0, 1]
    assert protocol["split"] == {"test": 360, "validation": 287, "digits-holdout": 1150}
    chosen = manifest["chosen_steps"]
    # per target: none, async M = 1, async M = 2 (main), then the sensitivity arms
    assert {(c["mode"], c["stages"], c["variant"]) for c in chosen} >= {
        ("none", 1, ""), ("async", 1, ""), ("async", 2, ""), ("async", 2, "digital")}
    for c in chosen:
        assert c["step"] in TINY.grid
        assert len(c["selection"]) == (1 if c["fixed"] else len(TINY.grid))
    assert {t["label"] for t in manifest["config"]["targets"]} == {
        "30% accuracy", "50% accuracy", "loss 1.5"}
    assert len(manifest["runs"]) == manifest["sweep"]["points"] == 2 * (1 + 2 + 2 + 2)
    assert "| digital |" in manifest["sensitivity_markdown"]
    summary = manifest["summary_markdown"]
    assert summary.startswith("**resmlp digits**") and "| M = 1 | M = 2 |" in summary
    assert summary.count("| 30% accuracy | async / own counterpart | 1.00 [1.00, 1.00]") == 1
    text = speedup.caption(rows)
    assert "at 2 stages" in text and "(sync) and" in text and "time to 30% accuracy" in text


def test_settings_refuse_what_the_protocol_cannot_run():
    with pytest.raises(ParameterError, match="lacks 1"):
        replace(TINY, stages=(2, 4))
    with pytest.raises(ParameterError, match="^budget_samples="):
        replace(TINY, budget_samples=1000)
    with pytest.raises(ParameterError, match="^fixed_step="):
        replace(TINY, variants=(speedup.Variant("x", fixed_step=0.3),))
    with pytest.raises(ParameterError, match="^sensitivity_target="):
        replace(TINY, sensitivity_target=0.85)
    with pytest.raises(ParameterError, match="^log_samples="):
        replace(TINY, log_samples=100)
    with pytest.raises(ParameterError, match="^sensitivity_budget_samples="):
        replace(TINY, sensitivity_budget_samples=1280)
    quick, full = speedup.settings(True), speedup.settings(False)
    assert full.seeds >= 10 and len(full.workloads) >= 2 and full.stages == (1, 2, 4, 8, 12, 16)
    assert {t.label for t in full.targets} == {"70% accuracy", "80% accuracy", "85% accuracy",
                                               "90% accuracy", "loss 0.3"}
    assert set(quick.grid) < set(full.grid)  # quick: part of the same grid


# ------------------------------------------------------------------------------------------------
# the training figure's caption explains the early loss spike


def _training_rows(losses, mode="none"):
    return [{"run": "analog SGD, no pipeline", "mode": mode, "samples": str(160 * i),
             "test_accuracy_mean": "0.5", "loss_mean": repr(loss)} for i, loss in enumerate(losses)]


def test_training_caption_names_the_spike_only_when_there_is_one():
    from paper_figures import training

    spiking = training.caption(_training_rows([4.4, 7.8, 3.0, 1.0]))
    assert "to 7.8 nats at 160 samples" in spiking and "not a bug" in spiking
    assert "lambda_max" in spiking
    assert "nats" not in training.caption(_training_rows([4.4, 3.0, 1.0]))
    assert "nats" not in training.caption(_training_rows([4.4, 7.8, 1.0], mode="async"))


def test_write_setting_reaches_every_run():
    s = replace(TINY, write="per-sample")
    configs = [speedup._config(s, a[4], a[0], a[1], lr, a[2], a[3], a[5])
               for a in speedup._plan(s).values() for lr in s.grid]
    assert configs and all(c.write == "per-sample" for c in configs)
    plain = [speedup._config(TINY, a[4], a[0], a[1], 0.0125, a[2], a[3], a[5])
             for a in speedup._plan(TINY).values() if not a[3]]
    assert all(c.write == "batch-mean" for c in plain)


@settings(max_examples=80, deadline=None)
@given(seeds=st.integers(1, 12), rows=st.integers(1, 6), kind=st.sampled_from(["real", "ties"]),
       nan=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_weighted_medians_have_the_bits_of_numpys_median(seeds, rows, kind, nan, seed):
    """All resamples at once give ``numpy.median`` of each resample's repeated values."""
    from simulate.verification.tuning import _weighted_medians

    rng = np.random.default_rng(seed)
    values = (rng.standard_normal(seeds) * 1e3 if kind == "real"
              else rng.integers(0, 3, seeds).astype(float) * 100.0)
    if nan:
        values[0] = np.nan
    counts = rng.multinomial(seeds, np.full(seeds, 1 / seeds), size=rows)
    want = np.array([np.median(np.repeat(values, row)) for row in counts])
    got = _weighted_medians(values, counts)
    assert got.tobytes() == want.tobytes()
