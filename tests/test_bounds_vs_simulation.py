"""Property tests: every derived bound holds on simulated ensembles of the oracle problems.

Issue 5. Hypothesis draws the pipeline (stages, micro-batches, micro-batch size), the device
(soft bounds with a drawn tau, and two linear-step presets), the noise, the number of steps and an
admissible step (a drawn fraction of the step cap on the region +-0.5 the weights are expected to
stay in). The seed of every run is a hash of the drawn parameters, so a failure reproduces from its
printed example. A drawn run that leaves that region far enough to make its step inadmissible
for the constants that held (or that reaches the device range) is rejected: the theorems do not
apply to it.

The number of examples scales with the Hypothesis profile (``ci`` in CI, ``thorough`` by hand).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from simulate import SimConfig, check_bound, cycles_to_eps, empirical_floor, run
from simulate.verification import config_for, region_step_cap
from theory import ParameterError

#: the weight region the drawn step is a fraction of the cap on (W* in [-0.3, 0.3], W_0 = 0)
REGION = 0.5
#: statistical margin of every one-sided comparison, in standard errors
Z = 4.0

_PROFILE_EXAMPLES = settings().max_examples


def seed_of(*params) -> int:
    """A reproducible root seed from the drawn parameters (SHA-256 of their repr)."""
    return int(hashlib.sha256(repr(params).encode()).hexdigest()[:8], 16)


devices = st.one_of(
    st.tuples(st.just("softbounds"), st.floats(0.7, 3.0).map(lambda t: round(t, 3))),
    st.tuples(st.sampled_from(["ecram-linearstep", "capacitor-linearstep"]), st.none()),
)


@st.composite
def admissible_configs(draw, name: str) -> SimConfig:
    """A configuration of bound ``name`` with an lr admissible on the region +-REGION."""
    stages = draw(st.integers(1, 8))
    micro_batches = draw(st.integers(1, 4)) if name in ("analog_sgd_sp", "analog_sgd") else 1
    if name == "digital_sgd":
        micro_batches = draw(st.integers(1, 4))
        stages = 1
    if name == "analog_sgd":
        stages = 1
    b = draw(st.integers(1, 4))
    device, tau = draw(devices)
    sigma2 = round(draw(st.floats(0.05, 2.0)), 3)
    steps = draw(st.integers(100, 500))
    fraction = round(draw(st.floats(0.05, 0.7)), 3)
    problem = draw(st.sampled_from(["quadratic", "quadratic", "least-squares"]))
    params = (name, problem, stages, micro_batches, b, device, tau, sigma2, steps, fraction)
    config = config_for(
        name, problem=problem, stages=stages, micro_batches=micro_batches, micro_batch_size=b,
        device=device, tau=tau, sigma2=sigma2, steps=steps, seeds=16, log_every=steps, lr=1.0,
        seed=seed_of(*params),
    )
    lo, hi = -REGION, REGION
    if tau is not None:
        lo, hi = max(lo, -0.9 * tau), min(hi, 0.9 * tau)
    return replace(config, lr=fraction * region_step_cap(name, config, lo, hi))


def _check_or_reject(name: str, config: SimConfig):
    try:
        return check_bound(name, config, z=Z)
    except ParameterError as error:
        text = str(error)
        if "inadmissible" in text or "reached the device range" in text:
            reject()  # the weights left the region the lr was drawn for: outside the theorem
        raise


@pytest.mark.parametrize("name", ["digital_sgd", "analog_sgd", "analog_sgd_sp", "analog_sgd_ap"])
def test_bound_holds_on_drawn_configurations(name):
    @settings(max_examples=max(5, _PROFILE_EXAMPLES // 4))
    @given(config=admissible_configs(name))
    def holds(config):
        check = _check_or_reject(name, config)
        assert check.passed, (
            f"{name} fails: empirical {check.empirical:.6g} +- {check.stderr:.3g} > bound "
            f"{check.bound:.6g}; constants {check.constants}; config {config}"
        )

    holds()


@settings(max_examples=max(5, _PROFILE_EXAMPLES // 6))
@given(
    b=st.integers(1, 4),
    device=devices,
    sigma2=st.floats(0.05, 2.0).map(lambda s: round(s, 3)),
    fraction=st.floats(0.05, 0.7).map(lambda f: round(f, 3)),
    steps=st.integers(50, 300),
)
def test_async_one_stage_is_sync_one_micro_batch_bit_for_bit(b, device, sigma2, fraction, steps):
    """M = 1 async draws the noise exactly as B = 1 sync: identical iterates, identical bounds."""
    device, tau = device
    seed = seed_of(b, device, tau, sigma2, fraction, steps)
    sync = config_for("analog_sgd_sp", stages=1, micro_batches=1, micro_batch_size=b,
                      device=device, tau=tau, sigma2=sigma2, steps=steps, seeds=8, lr=1.0,
                      log_every=1, seed=seed)
    sync = replace(sync, lr=fraction * region_step_cap("analog_sgd_sp", sync, -0.45, 0.45))
    asyn = replace(sync, mode="async")
    a, s = run(asyn), run(sync)
    for field in ("loss", "grad_norm2", "avg_grad_norm2", "w_min_visited", "w_max_visited",
                  "cycles", "samples"):
        np.testing.assert_array_equal(getattr(a, field), getattr(s, field), err_msg=field)
    try:
        check_a, check_s = check_bound("analog_sgd_ap", asyn), check_bound("analog_sgd_sp", sync)
    except ParameterError:
        reject()
    assert check_a.empirical == check_s.empirical
    # D = 0: Theorem 4 is Corollary 3 at B = 1, so the tightest bounds coincide
    assert check_a.bound == pytest.approx(check_s.bound, rel=1e-9)


def _paired_increase(low, high):
    """Assert ``high`` exceeds ``low`` by more than Z standard errors of the paired difference."""
    diff = high.per_seed - low.per_seed
    se = diff.std(ddof=1) / math.sqrt(diff.size)
    assert diff.mean() > Z * se, (
        f"no significant increase: {low.mean:.6g} -> {high.mean:.6g} (diff {diff.mean():.3g}, "
        f"se {se:.3g})"
    )


_FLOOR_RUN = dict(steps=3000, seeds=12, lr=0.02, log_every=1)


def test_asymptotic_error_grows_with_sigma2():
    base = config_for("analog_sgd", tau=1.0, seed=seed_of("sigma2", 1), **_FLOOR_RUN)
    low = empirical_floor(replace(base, sigma2=0.5))
    high = empirical_floor(replace(base, sigma2=2.0))
    _paired_increase(low, high)


def test_asymptotic_error_grows_with_saturation():
    """Smaller tau puts W* (|W*| <= 0.3) closer to the bound: larger G, larger floor."""
    base = config_for("analog_sgd", sigma2=1.0, seed=seed_of("tau", 1), **_FLOOR_RUN)
    mild = empirical_floor(replace(base, tau=2.0))
    strong = empirical_floor(replace(base, tau=0.6))
    _paired_increase(mild, strong)
    assert strong.config.tau < mild.config.tau


def test_asymptotic_error_shrinks_with_sync_mini_batch():
    base = config_for("analog_sgd_sp", stages=4, tau=1.0, sigma2=1.0, seed=seed_of("B", 1),
                      **_FLOOR_RUN)
    small = empirical_floor(replace(base, micro_batches=1))
    large = empirical_floor(replace(base, micro_batches=4))
    _paired_increase(large, small)


# ------------------------------------------------------------------------------------------------
# cycles to eps: sync vs async ordering


ORDERING_GRID = (1, 2, 4, 8)


@pytest.mark.parametrize("eps", [0.05, 0.02])
def test_cycles_to_eps_stay_within_the_guarantee(eps):
    r"""Simulated at the theory's own step, every seed of both pipelines reaches ``eps`` within the
    cycles the proved bounds predict (Corollary 3 for sync, the smaller of Theorem 4' and 4'B for
    async), at every M of the grid.

    sync (B = 4) and async, R = 12 seeds, soft bounds tau = 1, sigma2 = 0.01, device constants on
    [-0.4, 0.4] (the runs are checked to stay inside). This replaces an earlier test that the
    theory and the simulation *rank* the two pipelines alike: with Theorem 4' they do not at
    M = 2 and 4 (theory ranks sync cheaper, simulation async; docs/verification.md, "Ranking"),
    which is a finding about the bounds' constants, not a failed guarantee.
    """
    region = (-0.4, 0.4)
    common = dict(tau=1.0, sigma2=0.01, seeds=12, seed=seed_of("ordering", eps))
    for stages in ORDERING_GRID:
        for result in (
            cycles_to_eps(config_for("analog_sgd_sp", stages=stages, micro_batches=4, **common),
                          eps, region=region),
            cycles_to_eps(config_for("analog_sgd_ap", stages=stages, **common), eps,
                          region=region),
        ):
            where = f"M={stages}, {result.bound_name}"
            assert result.reached == common["seeds"], (where, result.reached)
            assert np.max(result.cycles) <= result.predicted, (where, result.cycles.max(),
                                                                result.predicted)
