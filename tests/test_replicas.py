"""Data-parallel and hybrid simulation (simulate.pipeline.replicas) and the local-SGD row against
it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import sympy as sp

from bounds import TimingModel
from simulate import SimConfig, cycles_after, device_from_config, make_problem, run
from simulate.pipeline import (
    PULSE_CYCLES,
    averaging_cycles,
    program_mean,
    replica_generators,
    replica_mean,
)
from simulate.rng import member_generators
from simulate.specs import MAX_REPLICAS
from theory import REGISTRY, ParameterError, local_sgd
from theory.admissible import tightest_theta

ARRAYS = ("step", "samples", "cycles", "loss", "grad_norm2", "max_abs_w", "w_min_visited",
          "w_max_visited", "avg_grad_norm2")


def same_bits(a, b) -> None:
    for name in ARRAYS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


# ---- R = 1 is today's run ------------------------------------------------------------------------

@pytest.mark.parametrize("settings", [
    dict(mode="none"),
    dict(mode="sync", stages=4, micro_batches=3, update="pulsed", device="softbounds"),
    dict(mode="async", stages=4, update="pulsed", write="per-sample", micro_batch_size=2),
    dict(mode="none", algorithm="digital"),
])
def test_one_replica_refuses_period_and_programming_error(settings):
    """At R = 1 nothing is averaged: P and the programming error do not apply and are refused
    (simulate.config.RULES); at their defaults the run is today's (its exact outputs are pinned by
    tests/test_engine.py and others)."""
    config = SimConfig(steps=60, seeds=2, log_every=7, **settings)
    for changes in (dict(average_every=4), dict(programming_error=0.05)):
        with pytest.raises(ParameterError, match=f"^{next(iter(changes))}=.* applies to "
                                                 "replicas >= 2 only, not replicas=1"):
            replace(config, **changes)


def test_one_replica_uses_the_member_streams():
    mine = replica_generators(3, [0, 2], 1)
    base = member_generators(3, [0, 2])
    for name in ("noise", "device"):
        assert [g.standard_normal() for g in mine[name]] == [g.standard_normal()
                                                             for g in base[name]]


# ---- replicas ------------------------------------------------------------------------------------

def test_member_alone_equals_member_in_ensemble():
    config = SimConfig(steps=50, seeds=3, replicas=3, average_every=2, programming_error=0.01,
                       mode="async", stages=2, update="pulsed", log_every=5)
    whole = run(config)
    alone = run(config, members=[1])
    for name in ARRAYS:
        a, b = getattr(whole, name), getattr(alone, name)
        if a.ndim == 2 or name in ("avg_grad_norm2", "max_abs_w", "w_min_visited",
                                   "w_max_visited"):
            a, b = a[1], b[0]
        np.testing.assert_array_equal(a, b, err_msg=name)


def test_replicas_differ_and_average_helps():
    """Independent replica noise: R = 4 averaged every update has a lower average ||grad f||^2
    than R = 1 (the variance term / R; seeds fixed, 8 of them, gap far above the spread)."""
    config = SimConfig(steps=400, seeds=8, lr=0.1)
    one = run(config).avg_grad_norm2.mean()
    four = run(replace(config, replicas=4)).avg_grad_norm2.mean()
    assert four < 0.7 * one


def test_program_mean_sets_the_mean_plus_error():
    w = np.arange(12.0).reshape(4, 3)  # 2 members x 2 replicas
    out = program_mean(w, 2, 0.0, [])
    np.testing.assert_array_equal(out, [[1.5, 2.5, 3.5]] * 2 + [[7.5, 8.5, 9.5]] * 2)
    np.testing.assert_array_equal(replica_mean(w, 2), [[1.5, 2.5, 3.5], [7.5, 8.5, 9.5]])
    clipped = program_mean(w, 2, 0.0, [], lo=0.0, hi=3.0)
    assert clipped.max() == 3.0
    rngs = [np.random.default_rng(i) for i in range(4)]
    big = program_mean(np.zeros((4, 20_000)), 2, 0.1, rngs)
    assert abs(big.std() - 0.1) < 0.005  # 80k draws: the std's se is 2.5e-4
    assert not np.array_equal(big[0], big[1])  # every replica programs its own error


def test_samples_and_cycles_count_replicas_and_averagings():
    config = SimConfig(steps=40, seeds=1, replicas=4, average_every=8, stages=2,
                       micro_batches=3, mode="sync", log_every=5)
    trace = run(config)
    np.testing.assert_array_equal(trace.samples, trace.step * 3 * 4)
    device = device_from_config(config)
    per = averaging_cycles(True, device.w_max - device.w_min, device.dw_min)
    # default device: tau = 1, dw_min = 1e-3: 2000 pulses of 1/80 cycle plus a verify read and
    # the read phase of one cycle: 1 + ceil(25 + 1) cycles
    assert per == 27
    expected = cycles_after("sync", 2, 3, trace.step) + (trace.step // 8) * 27
    np.testing.assert_array_equal(trace.cycles, expected)
    assert averaging_cycles(False, 0.0, 1.0) == 2  # digital: one read, one write


def test_pulse_cycles_is_the_default_timing_ratio():
    timing = TimingModel()
    assert PULSE_CYCLES == timing.pulse_width_s / timing.read_time_s


def test_config_refusals():
    with pytest.raises(ParameterError, match="^replicas=2 "):
        SimConfig(problem="digits-mlp", replicas=2)
    with pytest.raises(ParameterError, match="^replicas="):
        SimConfig(replicas=MAX_REPLICAS + 1)
    with pytest.raises(ParameterError, match="^programming_error="):
        SimConfig(programming_error=-1.0)
    with pytest.raises(ParameterError, match="^average_every="):
        SimConfig(average_every=0)


# ---- the local-SGD row ---------------------------------------------------------------------------

def test_row_at_one_replica_is_theorem_2():
    row = local_sgd.expr().subs({local_sgd.R: 1, local_sgd.P: 1, local_sgd.nu: 0})
    assert sp.simplify(row - REGISTRY["analog_sgd"].expr) == 0
    assert REGISTRY["local_sgd"].provenance == "literature"


def _row(config: SimConfig, trace) -> float:
    """The row at K = steps, alpha = lr, the constants that held (device constants on the visited
    region, as simulate.verification.checks; q = 1, G = 0 for digital) and nu = dim s^2 (0 at R = 1:
    nothing is averaged)."""
    problem = make_problem(config)
    device = device_from_config(config)
    dc = device.constants(float(trace.w_min_visited.min()), float(trace.w_max_visited.max()))
    response = dict(q_min=dc.q_min, q_max=dc.q_max, G_inf=dc.G_inf)
    if config.algorithm == "digital":
        response = dict(q_min=1.0, q_max=1.0, G_inf=0.0)
    nu = config.dim * config.programming_error**2 if config.replicas > 1 else 0.0
    values = dict(L=problem.L, Delta=problem.Delta, sigma2=problem.sigma2,
                  n=config.samples_per_update, R=config.replicas, P=config.average_every, nu=nu,
                  **response)
    return tightest_theta("local_sgd", config.lr, config.steps, values)[1]


@pytest.mark.parametrize("replicas, period, error", [
    (1, 1, 0.0),  # (one replica: no period, no programming error)
    *((replicas, period, error) for replicas in (2, 4) for period in (1, 4)
      for error in (0.0, 0.01)),
])
@pytest.mark.parametrize("algorithm", ["analog", "digital"])
def test_local_sgd_row_holds_on_the_quadratic(replicas, period, error, algorithm):
    """Simulated mean over 8 seeds of (1/K) sum_k ||grad f(W_bar_k)||^2 <= the row + 4 se.

    alpha = 0.1 <= 1/(2 L P) = 0.125 at P = 4 (L = 1 for this seed's quadratic). The row holds
    with a wide margin (measured ratio 20-45 analog, where the floor G^2 sigma^2/(theta n
    q_min^2) dominates, and 3-9 digital); the ratio is asserted >= 1 only, the statement of the
    row."""
    config = SimConfig(steps=1000, seeds=8, lr=0.1, replicas=replicas, average_every=period,
                       programming_error=error, algorithm=algorithm)
    trace = run(config)
    per_seed = trace.avg_grad_norm2
    empirical = per_seed.mean()
    stderr = per_seed.std(ddof=1) / np.sqrt(per_seed.size)
    assert empirical <= _row(config, trace) + 4 * stderr
