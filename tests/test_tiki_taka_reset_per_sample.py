"""Corollary TT0PS (docs/theory.md): Corollaries TT0 and TT0-AP under per-sample writes.

The per-sample writes land on the digital fast buffer A, the analog array C is written once per
transfer event: the four ``tiki_taka_reset*_per_sample`` rows are the batch-mean rows with
``write="per-sample"``. Checked here: the rows field by field, Step 1 (W moves only at the events,
in every mode), Step 3 (per-sample and batch-mean runs agree in law), and bound / simulated >= 1.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from _sympy_checks import is_zero

from simulate import SimConfig, check_bound, run
from simulate.device import TikiTaka
from simulate.verification import TT0_SETTINGS, capped_step, config_for, step_region
from theory import REGISTRY, ParameterError, bounds_for
from theory.symbols import T, n

ROWS = ("tiki_taka_reset", "tiki_taka_reset_sp", "tiki_taka_reset_ap", "tiki_taka_reset_ap_b")
FIELDS = ("expr", "inv_step_cap", "rate_a", "rate_c", "floor", "best_step", "noise_step", "batch")


@pytest.mark.parametrize("name", ROWS)
def test_rows_are_the_batch_mean_rows_with_per_sample_writes(name):
    batch_mean, per_sample = REGISTRY[name], REGISTRY[f"{name}_per_sample"]
    assert (per_sample.provenance, per_sample.proof, per_sample.write) == (
        "derived", "Corollary TT0PS", "per-sample")
    assert batch_mean.write == "batch-mean"
    assert (per_sample.mode, per_sample.algorithm) == (batch_mean.mode, batch_mean.algorithm)
    assert set(batch_mean.conditions) < set(per_sample.conditions)
    for field in FIELDS:
        assert is_zero(getattr(per_sample, field) - getattr(batch_mean, field)), field


def test_bounds_for_returns_the_per_sample_rows():
    for mode, names in (("none", ["tiki_taka_reset_per_sample"]),
                        ("sync", ["tiki_taka_reset_sp_per_sample"]),
                        ("async", ["tiki_taka_reset_ap_per_sample",
                                   "tiki_taka_reset_ap_b_per_sample"])):
        assert [b.name for b in bounds_for(mode, "tiki-taka", "per-sample")] == names
        assert all(b.write == "batch-mean" for b in bounds_for(mode, "tiki-taka"))


def test_the_floor_keeps_its_1_over_nT_not_corollary_3ps():
    """The floor is Theorem 2's at n T samples: at T = 1 Theorem 2's at n, Corollary 3PS's / n."""
    floor = REGISTRY["tiki_taka_reset_per_sample"].floor
    assert is_zero(floor.subs(T, 1) - REGISTRY["analog_sgd"].floor)
    assert is_zero(floor.subs(T, 1) * n - REGISTRY["analog_sgd_per_sample"].floor)


def _tt0_config(mode: str, **settings) -> SimConfig:
    return SimConfig(algorithm="tiki-taka", mode=mode, steps=12, seeds=2, log_every=12,
                     lr=0.05, update="expected", write="per-sample", **settings, **TT0_SETTINGS)


@pytest.mark.parametrize("mode, settings", [
    ("none", dict(micro_batch_size=3, transfer_every=4)),
    ("sync", dict(stages=3, micro_batches=2, micro_batch_size=2, transfer_every=3)),
    ("async", dict(stages=4, micro_batch_size=3, transfer_every=2)),
])
def test_step1_the_weights_move_only_at_the_events(monkeypatch, step_loop, mode, settings):
    """Step 1: each per-sample write returns the effective weights; they change only at the
    write that ends a T-th update (n writes per update), in every mode."""
    seen = []
    original = TikiTaka.__call__

    def recorded(self, w, dw, rng=None, spread=None):
        before = self.weights()
        out = original(self, w, dw, rng, spread)
        seen.append((self.writes, self.rule.writes_per_update, self.rule.every,
                     not np.array_equal(out, before)))
        return out

    monkeypatch.setattr(TikiTaka, "__call__", recorded)
    config = _tt0_config(mode, **settings)
    run(config)
    per_update = config.samples_per_update
    assert seen and all(wpu == per_update for _, wpu, _, _ in seen)
    events = {w for w, wpu, every, _ in seen if w % (wpu * every) == 0}
    assert events  # K = 12 is a multiple of T: there are events
    moved = {writes for writes, _, _, changed in seen if changed}
    assert moved <= events, sorted(moved - events)  # no write inside a window moves W
    assert moved  # and the events do move it


def test_step3_per_sample_and_batch_mean_runs_agree_in_law():
    """Step 3: the window's write sees the same signal in law (mean of n T samples); the
    average squared gradient norms of the two write semantics agree within 4 standard errors
    (a statistical test: it fails if the per-sample run wrote a different signal)."""
    base = replace(config_for("tiki_taka_reset", steps=200, seeds=32, log_every=200,
                              transfer_every=4, transfer_lr=2.0), lr=0.05, micro_batch_size=4)
    means, errors = [], []
    for write in ("batch-mean", "per-sample"):
        values = run(replace(base, write=write)).avg_grad_norm2
        means.append(values.mean())
        errors.append(values.std(ddof=1) / np.sqrt(len(values)))
    assert abs(means[0] - means[1]) <= 4 * np.hypot(*errors), (means, errors)


@pytest.mark.parametrize("name, settings", [
    ("tiki_taka_reset_per_sample", dict(micro_batch_size=4, transfer_every=4)),
    ("tiki_taka_reset_sp_per_sample", dict(stages=4, micro_batches=2, micro_batch_size=2,
                                           transfer_every=2)),
    ("tiki_taka_reset_ap_per_sample", dict(stages=4, micro_batch_size=4, transfer_every=4)),
    ("tiki_taka_reset_ap_b_per_sample", dict(stages=8, micro_batch_size=2, transfer_every=2)),
])
def test_per_sample_runs_meet_the_tt0ps_bounds(name, settings):
    """bound / simulated >= 1 on per-sample runs (config_for sets write="per-sample")."""
    config = config_for(name, steps=160, seeds=8, log_every=160, **settings)
    assert config.write == "per-sample"
    config = replace(config, lr=capped_step(name, config, 0.5, step_region(config)))
    check = check_bound(name, config)
    assert check.passed and check.ratio >= 1, check.ratio


def test_a_batch_mean_row_refuses_a_per_sample_run():
    config = config_for("tiki_taka_reset_per_sample", steps=8, seeds=2, log_every=8,
                        transfer_every=4, micro_batch_size=2)
    with pytest.raises(ParameterError) as info:
        check_bound("tiki_taka_reset", config)
    message = str(info.value)
    assert message.startswith("write='per-sample'") and "\n" not in message
