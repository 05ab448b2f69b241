"""Corollary TT0 (docs/theory.md): Tiki-Taka's accumulate-and-transfer variant (gamma = 0, slice
all, digital fast buffer, reset), its registry rows and the simulator steps they rest on."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import sympy as sp
from _sympy_checks import is_zero

from simulate import (
    NetworkSpec,
    SimConfig,
    TikiTakaSpec,
    Updater,
    check_bound,
    device_from_config,
    run,
    train_network,
)
from simulate.device import TikiTaka, TransferRule, oracle_tiles
from simulate.verification import QUICK, STANDARD, TT0_SETTINGS, config_for
from theory import REGISTRY, ParameterError, bounds_for
from theory.symbols import B, K, T, alpha, b, n, rho

#: the variant on the oracle quadratic (a small run)
TT0 = dict(algorithm="tiki-taka", steps=120, seeds=3, log_every=20, lr=0.05, **TT0_SETTINGS)
ATTRS = ("expr", "inv_step_cap", "rate_a", "rate_c", "floor", "noise_step", "batch")


# ---- the registry rows: Steps 5-8 --------------------------------------------------------------

def test_rows_are_theorem2_on_c_with_step_rho_alpha2_T_batch_nT_and_K_over_T():
    """Steps 5-6: the registry's expression is Theorem 2's at step rho alpha^2 T, batch n T and
    K/T iterations; the cap and the noise step are Theorem 2's on that step (Step 7: rate form)."""
    an, tt = REGISTRY["analog_sgd"], REGISTRY["tiki_taka_reset"]
    eta, subs = rho * alpha**2 * T, {n: n * T, K: K / T}
    assert is_zero(tt.expr - an.expr.subs(subs).subs(alpha, eta))
    # alpha <= 1/inv_cap  <=>  rho alpha^2 T <= 1/inv_cap_2
    assert is_zero(tt.inv_step_cap**2 - rho * T * an.inv_step_cap.subs(subs))
    assert is_zero(rho * T * tt.noise_step**2 - an.noise_step.subs(subs))
    assert is_zero(tt.floor - an.floor.subs(n, n * T))
    assert is_zero(tt.rate_a - an.rate_a) and is_zero(tt.rate_c - T * an.rate_c)
    assert tt.batch == n and (tt.provenance, tt.proof, tt.mode, tt.algorithm) == (
        "derived", "Corollary TT0", "none", "tiki-taka")


def test_at_T_equal_1_it_is_theorem2_with_step_alpha_beta():
    """T = 1: Theorem 2 exactly, at the step alpha beta = rho alpha^2 (beta = rho alpha)."""
    an, tt = REGISTRY["analog_sgd"], REGISTRY["tiki_taka_reset"]
    step = rho * alpha**2
    assert is_zero(tt.expr.subs(T, 1) - an.expr.subs(alpha, step))
    assert is_zero(tt.inv_step_cap.subs(T, 1) ** 2 - rho * an.inv_step_cap)
    for attr in ("rate_a", "rate_c", "floor"):
        assert is_zero(getattr(tt, attr).subs(T, 1) - getattr(an, attr)), attr


def test_sp_row_is_the_none_row_at_n_equal_Bb():
    """Step 8 (Proposition TT with the reset and the digital buffer)."""
    flat, piped = REGISTRY["tiki_taka_reset"], REGISTRY["tiki_taka_reset_sp"]
    for attr in ATTRS:
        assert is_zero(getattr(piped, attr) - sp.sympify(getattr(flat, attr)).subs(n, B * b)), attr
    assert piped.mode == "sync" and piped.proof == "Corollary TT0"


def test_floor_is_divided_by_T_and_rate_a_is_theorem2s():
    """The remark: the floor is Theorem 2's over T; a (samples) is Theorem 2's at n."""
    tt, an = REGISTRY["tiki_taka_reset"], REGISTRY["analog_sgd"]
    assert is_zero(tt.floor * T - an.floor)
    assert sp.diff(tt.floor, T).is_nonpositive


def test_the_conditions_name_the_variant_and_the_planner_sees_the_rows():
    for name in ("tiki_taka_reset", "tiki_taka_reset_sp"):
        text = " ".join(REGISTRY[name].conditions)
        for word in ("gamma = 0", "slice all", "digital fast buffer", "reset", "multiple of T"):
            assert word in text, (name, word)
    assert [x.name for x in bounds_for("none", "tiki-taka")] == ["tiki_taka_reset"]
    assert [x.name for x in bounds_for("sync", "tiki-taka")] == ["tiki_taka_reset_sp"]
    # the asynchronous rows are Corollary TT0-AP's (tests/test_tiki_taka_reset_ap.py)


def test_companion_rows_state_the_measured_constant():
    for name in ("tiki_taka_companion", "tiki_taka_sp"):
        text = " ".join(REGISTRY[name].conditions)
        assert "NOT a valid bound" in text and "C_TT ~ 4" in text
        assert REGISTRY[name].provenance == "companion"


# ---- the simulator: Steps 1-3 ------------------------------------------------------------------

def test_window_is_one_point_and_the_write_is_the_analog_step_on_the_mean():
    """Steps 1-3 on the state itself: W = C is constant inside a window, the write is C's
    expected update of -rho alpha^2 T times the window's mean gradient, A is reset."""
    config = SimConfig(tau=0.5)
    slow = Updater("expected", device_from_config(config), 0.1)
    lr, rho_, t = 0.1, 3.0, 4
    rule = TransferRule(every=t, lr=rho_ * lr, slice="all", reset=True)
    w0 = np.array([[0.1, -0.2, 0.05, 0.3], [0.0, 0.1, -0.1, 0.2]])
    state = TikiTaka(Updater("digital"), slow, rule, oracle_tiles([slice(0, 4)]), w0)
    rng = np.random.default_rng(7)
    c = w0.copy()
    for _window in range(3):
        grads = rng.standard_normal((t, *w0.shape))
        for i in range(t):
            w = state(None, -lr * grads[i])
            if i < t - 1:
                assert np.array_equal(w, c)  # Step 1: one point per window
        expected = slow(c, -rho_ * lr**2 * t * grads.mean(axis=0))  # Step 3
        np.testing.assert_allclose(w, expected, rtol=0, atol=1e-15)
        assert np.array_equal(state.a, np.zeros_like(w0))  # the reset
        c = w


def test_without_reset_a_keeps_the_previous_windows():
    rule = TransferRule(every=2, lr=1.0, slice="all", reset=False)
    state = TikiTaka(Updater("digital"), Updater("digital"), rule,
                     oracle_tiles([slice(0, 2)]), np.zeros((1, 2)))
    for _ in range(4):
        state(None, np.ones((1, 2)))
    assert np.array_equal(state.a, np.full((1, 2), 4.0))
    assert np.array_equal(state.c, np.full((1, 2), 2.0 + 4.0))


def test_at_T_equal_1_with_unit_beta_the_run_is_analog_sgd_bit_for_bit():
    """transfer_lr * lr = 1 and T = 1: each write of C is exactly the run's analog update."""
    config = SimConfig(**(TT0 | {"transfer_lr": 20.0}))  # 20 * 0.05 == 1.0 in floats
    assert config.transfer_lr * config.lr == 1.0
    tt, an = run(config), run(replace(config, algorithm="analog", **TikiTakaSpec().to_dict()))
    for name in ("grad_norm2", "loss", "max_abs_w", "avg_grad_norm2"):
        assert np.array_equal(getattr(tt, name), getattr(an, name)), name


def test_sync_keeps_the_non_pipelined_iterates_with_the_reset():
    """Step 8 in the simulator: sync and none give the same bits (pulsed C included)."""
    config = SimConfig(**(TT0 | {"stages": 4, "micro_batches": 3, "transfer_every": 4,
                                 "update": "pulsed"}))
    flat, piped = run(config), run(replace(config, mode="sync"))
    for name in ("grad_norm2", "loss", "max_abs_w", "avg_grad_norm2"):
        assert np.array_equal(getattr(flat, name), getattr(piped, name)), name


@pytest.mark.parametrize("settings", [
    {"transfer_every": 3},
    {"mode": "async", "stages": 4, "transfer_every": 4},
    {"update": "pulsed", "pulse_type": "stochastic", "transfer_every": 2},
], ids=lambda s: "-".join(f"{k}={v}" for k, v in s.items()))
def test_member_alone_is_member_in_ensemble(settings):
    config = SimConfig(**(TT0 | settings))
    whole, alone = run(config), run(config, members=[2])
    for name in ("grad_norm2", "loss", "max_abs_w"):
        assert np.array_equal(getattr(whole, name)[2], getattr(alone, name)[0]), name


def test_network_with_a_digital_buffer_gets_increments_and_pulses_c():
    spec = NetworkSpec(layers=4, width=8, grad_norm=False)
    config = SimConfig(problem="digits-mlp", update="pulsed", pulse_type="stochastic",
                       **(TT0 | {"steps": 8, "log_every": 4, "seeds": 2, "transfer_every": 2,
                                 "mode": "async", "stages": 2}))
    out = train_network(config, spec=spec)
    assert np.all(np.isfinite(out.trace.loss))
    alone = train_network(config, spec=spec, members=[1])
    assert np.array_equal(out.weights[1], alone.weights[0])


def test_defaults_keep_todays_bits_and_the_flags_are_recorded():
    plain = SimConfig(algorithm="tiki-taka", steps=60, seeds=2, log_every=30)
    assert plain.transfer_reset is False and plain.fast_device is None
    explicit = replace(plain, transfer_reset=False)
    assert np.array_equal(run(plain).avg_grad_norm2, run(explicit).avg_grad_norm2)
    tt0 = SimConfig(**TT0)
    assert tt0.to_dict()["transfer_reset"] is True and tt0.to_dict()["fast_device"] == "digital"
    assert not np.array_equal(run(replace(plain, transfer_reset=True)).avg_grad_norm2,
                              run(plain).avg_grad_norm2)


def test_bad_settings_are_one_line_errors():
    for settings, start in (({"transfer_reset": 1}, "transfer_reset=1"),
                            ({"fast_device": "nonsense"}, "fast_device='nonsense'")):
        with pytest.raises(ParameterError) as info:
            SimConfig(algorithm="tiki-taka", **settings)
        assert str(info.value).startswith(start) and "\n" not in str(info.value)


def test_simulate_command_prints_the_variant(capsys):
    from simulate.commands.simulate import main

    assert main(["--algorithm", "tiki-taka", "--steps", "20", "-T", "4", "--transfer-slice",
                 "all", "--fast-device", "digital", "--transfer-reset"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert head.endswith("slice=all, fast_device=digital, reset")


# ---- checks against simulation -----------------------------------------------------------------

def test_suites_have_rows_for_both_entries():
    for name in ("tiki_taka_reset", "tiki_taka_reset_sp"):
        assert sum(c.bound == name for c in QUICK) == 1
        rows = [c for c in STANDARD if c.bound == name]
        assert len(rows) >= 4 and all(c.steps % c.transfer_every == 0 for c in rows)
        assert len({c.transfer_every for c in rows}) >= 3


def test_config_for_sets_the_variant_and_the_check_refuses_others():
    config = config_for("tiki_taka_reset", steps=40, seeds=2, transfer_every=4, lr=0.05)
    assert all(getattr(config, key) == value for key, value in TT0_SETTINGS.items())
    for change, start in ((dict(transfer_reset=False), "transfer_reset=False"),
                          (dict(fast_device=None), "fast_device=None"),
                          (dict(transfer_slice="column"), "transfer_slice='column'"),
                          (dict(tt_gamma=0.5), "tt_gamma=0.5"),
                          (dict(steps=42), "steps=42"),
                          (dict(update="pulsed"), "update='pulsed'")):
        with pytest.raises(ParameterError) as info:
            check_bound("tiki_taka_reset", replace(config, **change))
        assert str(info.value).startswith(start), str(info.value)


def test_the_check_uses_T_and_rho_of_the_run():
    config = replace(config_for("tiki_taka_reset", steps=200, seeds=4, log_every=200,
                                transfer_every=4, transfer_lr=2.0), lr=0.05)
    check = check_bound("tiki_taka_reset", config)
    assert check.constants["T"] == 4 and check.constants["rho"] == 2.0
    assert check.passed and check.ratio >= 1
