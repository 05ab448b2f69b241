"""Tiki-Taka under per-sample writes (``write="per-sample"``): the transfer period ``T`` counts
updates (mini-batches), not writes, and Corollary TT0 (docs/theory.md, the remark "Per-sample
writes") holds unchanged.

An update of ``n`` samples is ``n`` rank-1 writes under per-sample writes; the compound must
transfer after every ``T``-th update (aihwkit's ``units_in_mbatch=True``), as the cycle count
(:func:`simulate.device.transfer_cycles`, ``floor(k/T) c_T``) and the theory assume.
"""

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
from simulate.verification import TT0_SETTINGS, config_for
from theory import ParameterError


@pytest.fixture
def transfers(monkeypatch, step_loop):
    """The number of transfer events of the runs made while the fixture is active (the oracle
    runs on the step loop, which calls ``TikiTaka.transfer``)."""
    events = []
    original = TikiTaka.transfer

    def counted(self, rng=None):
        events.append(self.count)
        return original(self, rng)

    monkeypatch.setattr(TikiTaka, "transfer", counted)
    return events


# ---- the period: updates, not writes -----------------------------------------------------------

@pytest.mark.parametrize("write", ["batch-mean", "per-sample"])
def test_oracle_transfers_after_every_T_th_update(transfers, write):
    """24 updates of n = 4 samples at T = 4: 6 events, after updates 4, 8, ..., 24 (the count the
    cycles charge), under both write semantics (per-sample writes: 96 writes)."""
    config = SimConfig(algorithm="tiki-taka", steps=24, seeds=1, log_every=12, lr=0.05,
                       micro_batch_size=4, write=write, transfer_every=4, **TT0_SETTINGS)
    run(config)
    assert transfers == [4, 8, 12, 16, 20, 24]  # the trace's cycles charge floor(24/4) events


@pytest.mark.parametrize("write", ["batch-mean", "per-sample"])
def test_network_transfers_after_every_T_th_update(transfers, write):
    config = SimConfig(problem="digits-mlp", algorithm="tiki-taka", steps=8, seeds=1,
                       log_every=4, lr=0.05, micro_batch_size=3, write=write, transfer_every=4,
                       update="pulsed", pulse_type="stochastic")
    train_network(config, spec=NetworkSpec(layers=2, width=8, grad_norm=False))
    assert transfers == [4, 8]


def test_asynchronous_per_sample_counts_updates(transfers):
    config = SimConfig(algorithm="tiki-taka", steps=12, seeds=1, log_every=6, lr=0.05,
                       mode="async", stages=2, micro_batch_size=2, write="per-sample",
                       transfer_every=3)
    run(config)
    assert transfers == [3, 6, 9, 12]


def test_rule_records_the_writes_of_an_update():
    """``TransferRule.from_config``: ``n`` writes per update under per-sample writes, else 1."""
    base = SimConfig(algorithm="tiki-taka", micro_batch_size=5, transfer_every=2)
    assert TransferRule.from_config(base).writes_per_update == 1
    assert TransferRule.from_config(replace(base, write="per-sample")).writes_per_update == 5
    with pytest.raises(ParameterError) as info:
        TransferRule(writes_per_update=0)
    assert str(info.value).startswith("writes_per_update=0") and "\n" not in str(info.value)


def test_flag_help_states_the_unit():
    text = TikiTakaSpec.__dataclass_fields__["transfer_every"].metadata["help"]
    assert "updates" in text and "not writes" in text and "per-sample" in text


# ---- Corollary TT0 under per-sample writes -----------------------------------------------------

def test_step2_the_buffer_sums_the_n_T_per_sample_increments_symbolically():
    """Step 2 with per-sample writes: the digital buffer adds the ``n T`` increments
    ``-(alpha/n) g_{t,i}`` exactly, so the transfer writes ``beta A = -rho alpha^2 T gbar`` with
    ``gbar`` the mean of the window's ``n T`` sample gradients, the batch-mean write's increment
    (``-alpha`` times each update's batch mean)."""
    alpha, rho = sp.symbols("alpha rho", positive=True)
    for n_, t_ in ((1, 1), (2, 3), (4, 2)):
        g = sp.Matrix(t_, n_, lambda t, i: sp.Symbol(f"g_{t}_{i}"))
        a_per_sample = sum(-(alpha / n_) * g[t, i] for t in range(t_) for i in range(n_))
        a_batch_mean = sum(-alpha * sum(g.row(t)) / n_ for t in range(t_))
        gbar = sum(g) / (n_ * t_)
        assert is_zero(a_per_sample - a_batch_mean)
        assert is_zero(rho * alpha * a_per_sample - (-rho * alpha**2 * t_ * gbar))


@pytest.mark.parametrize("n", [1, 3])
def test_state_per_sample_windows_write_the_batch_mean_step(n):
    """Steps 1-3 on the state with ``n`` writes per update: W = C is constant over the window's
    ``n T`` writes (no intermediate weights), the transfer writes C's expected update of
    ``-rho alpha^2 T`` times the mean of the ``n T`` sample gradients (equal to the batch-mean
    write up to rounding), and A is reset."""
    config = SimConfig(tau=0.5)
    slow = Updater("expected", device_from_config(config), 0.1)
    lr, rho_, t = 0.1, 3.0, 4
    w0 = np.array([[0.1, -0.2, 0.05, 0.3], [0.0, 0.1, -0.1, 0.2]])
    tiles = oracle_tiles([slice(0, 4)])
    rule = TransferRule(every=t, lr=rho_ * lr, slice="all", reset=True)
    per_sample = TikiTaka(Updater("digital"), slow, replace(rule, writes_per_update=n), tiles, w0)
    batch_mean = TikiTaka(Updater("digital"), slow, rule, tiles, w0)
    rng = np.random.default_rng(11)
    c = w0.copy()
    for _window in range(3):
        grads = rng.standard_normal((t, n, *w0.shape))
        for k in range(t):
            for i in range(n):
                w = per_sample(None, -(lr / n) * grads[k, i])
                if (k, i) != (t - 1, n - 1):
                    assert np.array_equal(w, c)  # Step 1: one point per window
            w_bm = batch_mean(None, -lr * grads[k].mean(axis=0))
        expected = slow(c, -rho_ * lr**2 * t * grads.mean(axis=(0, 1)))  # Step 3
        np.testing.assert_allclose(w, expected, rtol=0, atol=1e-15)
        np.testing.assert_allclose(w, w_bm, rtol=0, atol=1e-15)
        assert np.array_equal(per_sample.a, np.zeros_like(w0))  # the reset
        c = w


@pytest.mark.parametrize("t", [2, 4])
def test_per_sample_run_meets_the_tt0_bound(t):
    """A per-sample run of the variant (n = 4 samples per update, 4 writes each) against
    Corollary TT0's bound under per-sample writes (Corollary TT0PS): bound / simulated >= 1."""
    config = replace(config_for("tiki_taka_reset_per_sample", steps=160, seeds=4,
                                log_every=160, transfer_every=t, transfer_lr=2.0), lr=0.05,
                     micro_batch_size=4)
    assert config.write == "per-sample" and config.samples_per_update == 4
    check = check_bound("tiki_taka_reset_per_sample", config)
    assert check.constants["T"] == t and check.constants["n"] == 4
    assert check.passed and check.ratio >= 1, check.ratio


def test_step8_sync_keeps_the_non_pipelined_per_sample_iterates():
    """Step 8 with per-sample writes: sync and none give the same bits (pulsed C included)."""
    config = SimConfig(algorithm="tiki-taka", steps=24, seeds=2, log_every=12, lr=0.05,
                       stages=4, micro_batches=3, micro_batch_size=2, transfer_every=4,
                       update="pulsed", write="per-sample", **TT0_SETTINGS)
    flat, piped = run(config), run(replace(config, mode="sync"))
    for name in ("grad_norm2", "loss", "max_abs_w", "avg_grad_norm2"):
        assert np.array_equal(getattr(flat, name), getattr(piped, name)), name


def test_theory_states_the_remark_under_corollary_tt0():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "theory.md").read_text()
    start = text.index("## Corollary TT0 (")
    section = text[start:text.index("## Corollary TT0-AP", start)]
    remark = section[section.index("*Per-sample writes*"):]
    for words in ("holds unchanged", "the step to check", "tests/test_tiki_taka_per_sample.py",
                  "Corollary TT0PS below", "tiki_taka_reset_per_sample"):
        assert words in " ".join(remark.split()), words
