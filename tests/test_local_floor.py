"""Theorem LF (docs/theory.md): the local-floor rows ``*_local`` and the measured ``G2_iter``.

Symbolic: each local row is its worst-case row with ``G_inf -> sqrt(G2_iter)``,
``G2_bar -> G2_iter`` (equal at ``G2_iter = G_inf^2``), the step cap, batch and the G-free terms
unchanged, and the bound increasing in ``G2_iter`` (so at most the worst-case row when
``G2_iter <= G_inf^2``). Steps 1-3 of the proof at random points. Simulation: the measured
``G2_iter`` along a run, the same bits as :func:`simulate.engine.run`, and the local check below the
worst-case check of the same run.
"""

from dataclasses import replace

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from simulate.config import SimConfig, device_from_config
from simulate.engine import run
from simulate.verification.checks import check_bound
from simulate.verification.local_floor import g2_of_weights, run_measuring_g2
from simulate.verification.suites import QUICK, Case, local_cases
from theory.errors import ParameterError
from theory.symbols import D, G2_bar, G2_iter, G_inf, n, q_max, q_min, sigma2, theta
from theory.theorems import FLOOR_KINDS, REGISTRY, bounds_for

LOCAL = [name for name, bound in REGISTRY.items() if bound.floor_kind == "iterate-average"]
FIELDS = ("expr", "inv_step_cap", "rate_a", "rate_c", "floor", "noise_step", "batch",
          "min_iterations")
g = sp.Symbol("g", positive=True)  # sqrt(G2_iter), positive
_s, _v = sp.symbols("s_theta v_ratio", positive=True)


def _domain(expr):
    """theta = s/(1 + s) in (0, 1) and q_max = q_min (1 + v) >= q_min (as tests/test_theorems)."""
    return sp.sympify(expr).subs(theta, _s / (1 + _s)).subs(q_max, q_min * (1 + _v))


def _worst(name: str):
    return REGISTRY[name.removesuffix("_local")]


def test_one_local_row_per_derived_row_with_a_floor():
    floored = [name for name, bound in REGISTRY.items()
               if bound.provenance == "derived" and bound.floor != 0
               and bound.floor_kind == "worst-case"]
    assert LOCAL == [f"{name}_local" for name in floored]
    assert len(LOCAL) == 20 and FLOOR_KINDS == ("worst-case", "iterate-average")
    for name in LOCAL:
        bound, worst = REGISTRY[name], _worst(name)
        assert bound.proof == "Theorem LF" and bound.provenance == "derived"
        assert (bound.mode, bound.algorithm, bound.write, bound.gradient) == (
            worst.mode, worst.algorithm, worst.write, worst.gradient)
        assert bound.conditions[:len(worst.conditions)] == worst.conditions
        assert any(c.startswith("A2S") for c in bound.conditions)
        assert "G2_iter" in bound.parameters and not {"G_inf", "G2_bar"} & set(bound.parameters)
        # never a guarantee of the planner: G2_iter is measured
        assert bound not in bounds_for(bound.mode, bound.algorithm, bound.write, bound.gradient)


@pytest.mark.parametrize("name", LOCAL)
def test_the_substitution_changes_nothing_else(name):
    """At G2_iter = G_inf^2 (mixed: G2_bar) every field is the worst-case row's; the step cap and
    the batch are free of G and identical; at G = 0 the two rows agree."""
    bound, worst = REGISTRY[name], _worst(name)
    top = G2_bar if bound.algorithm == "mixed" else G_inf**2
    for field in FIELDS:
        local, base = getattr(bound, field), getattr(worst, field)
        assert sp.simplify(sp.sympify(local).subs(G2_iter, top) - base) == 0, field
        assert sp.simplify(sp.sympify(local).subs(G2_iter, 0)
                           - sp.sympify(base).subs({G_inf: 0, G2_bar: 0})) == 0, field
    assert bound.inv_step_cap == worst.inv_step_cap and bound.batch == worst.batch


def _delay_cases(expr):
    return [{}] if D not in expr.free_symbols else [{D: 0}, {D: 1}, {D: 7}]


@pytest.mark.parametrize("name", LOCAL)
def test_the_local_row_increases_in_g2_iter(name):
    """d expr / d sqrt(G2_iter) >= 0: the local row is at most the worst-case row whenever
    G2_iter <= G_inf^2 (they are equal at the top)."""
    expr = REGISTRY[name].expr.subs(G2_iter, g**2)
    for case in _delay_cases(expr):
        derivative = sp.factor(_domain(sp.diff(expr.subs(case), g)))
        assert derivative.is_nonnegative, (name, case)


@settings(max_examples=30, deadline=None)
@given(values=st.fixed_dictionaries({
    "L": st.floats(0.1, 10), "Delta": st.floats(0.1, 10), "sigma2": st.floats(0.01, 10),
    "q_min": st.floats(0.2, 1.0), "ratio": st.floats(1.0, 3.0), "G_inf": st.floats(0.0, 0.9),
    "theta": st.floats(0.05, 0.95), "share": st.floats(0.0, 1.0), "K": st.floats(1, 1e6),
    "alpha": st.floats(1e-6, 1e-2), "beta": st.floats(0, 2), "L_s": st.floats(0.1, 10),
}), name=st.sampled_from(LOCAL))
def test_local_is_below_worst_case_numerically(values, name):
    v = dict(values)
    v["q_max"] = v["q_min"] * v.pop("ratio")
    share = v.pop("share")
    v.update(n=4, b=2, B=2, M=4, D=3, T=2, rho=1.5, p2_bar=v["q_max"] ** 2, G2_bar=v["G_inf"] ** 2)
    v["G2_iter"] = share * v["G2_bar"]
    bound, worst = REGISTRY[name], _worst(name)
    subs = {s: v[s.name] for s in bound.expr.free_symbols}
    local = float(bound.expr.subs(subs))
    base = float(worst.expr.subs({s: v[s.name] for s in worst.expr.free_symbols}))
    assert local <= base * (1 + 1e-12)


def test_theorem_lf_step1_rebuilds_theorem2_floor():
    """Steps 1-3 on Theorem 2: Young's remainder Gamma^2 sigma_n^2/(2 theta q) divided by
    alpha q/2 (Step 5) is the local floor."""
    gamma2, sigma_n2 = sp.symbols("Gamma2 sigma_n2", positive=True)
    alpha = sp.Symbol("alpha", positive=True)
    remainder = alpha * gamma2 * sigma_n2 / (2 * theta * q_min)
    floor = sp.simplify(remainder / (alpha * q_min / 2)).subs(
        {gamma2: G2_iter, sigma_n2: sigma2 / n})
    assert sp.simplify(floor - REGISTRY["analog_sgd_local"].floor) == 0
    # the staleness window of Theorem 4' at the local X = D^2 G2_iter (Step 2)
    window = (q_max * sp.sqrt(D) + D * sp.sqrt(G2_iter)) ** 2
    assert REGISTRY["analog_sgd_ap_local"].expr.has(window)
    assert not REGISTRY["analog_sgd_ap_local"].expr.has(G_inf)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 12))
def test_step1_cauchy_schwarz_with_shares(seed, d):
    """sum_i |G_i| |grad_i| r_i <= ||grad|| sqrt(sum_i s_i G_i^2) sigma_n when r_i <= sqrt(s_i)
    sigma_n (A2S, Lemma 0.4); and IO's mean of Gamma_k is at most sqrt of the mean of Gamma_k^2."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    grad, gmat = rng.normal(size=d), rng.uniform(-1, 1, size=d)
    shares = rng.dirichlet(np.ones(d))
    sigma_n = float(rng.uniform(0.01, 3))
    r = np.sqrt(shares) * sigma_n * rng.uniform(0, 1, size=d)
    lhs = float(np.sum(np.abs(gmat) * np.abs(grad) * r))
    gamma = float(np.sqrt(np.sum(shares * gmat**2)))
    assert lhs <= np.linalg.norm(grad) * gamma * sigma_n * (1 + 1e-12) + 1e-15
    assert gamma <= np.max(np.abs(gmat)) * (1 + 1e-12)  # G2_iter <= G_inf^2
    gammas = rng.uniform(0, 1, size=d)
    assert gammas.mean() <= np.sqrt(np.mean(gammas**2)) * (1 + 1e-12)


# ---- the measurement along a simulated run -------------------------------------------------------

_SMALL = dict(steps=40, seeds=3)


def test_run_measuring_g2_keeps_the_engine_bits_and_measures_the_mean_of_g_squared():
    config = replace(Case("analog_sgd_local", 0.5, **_SMALL).config(), log_every=1)
    measured = run_measuring_g2(config)
    trace = run(config)
    for field in ("grad_norm2", "loss", "avg_grad_norm2", "w_min_visited", "w_max_visited"):
        np.testing.assert_array_equal(getattr(measured.trace, field), getattr(trace, field))
    assert measured.points == config.steps and measured.per_seed.shape == (config.seeds,)
    device = device_from_config(config)
    worst = device.constants(float(trace.w_min_visited.min()),
                             float(trace.w_max_visited.max())).G_inf ** 2
    assert 0 < measured.mean <= worst
    w = np.array([[0.1, -0.2, 0.3], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(g2_of_weights(config, w), np.mean(device.G(w) ** 2, axis=1))


def test_mixed_runs_count_the_digital_stages_as_zero():
    config = SimConfig(algorithm="mixed", stages=2, digital_stages="1", dim=4, steps=2, seeds=2)
    w = np.full((1, 4), 0.2)
    device = device_from_config(config)
    expected = float(device.G(np.array([0.2]))[0] ** 2) / 2  # one of two equal stages analog
    np.testing.assert_allclose(g2_of_weights(config, w), [expected])


@pytest.mark.parametrize("bound", ["analog_sgd", "analog_sgd_ap", "tiki_taka_reset"])
def test_the_local_check_is_below_the_worst_case_check_of_the_same_run(bound):
    kw = {"analog_sgd_ap": dict(stages=4), "tiki_taka_reset": dict(transfer_every=4)}.get(bound, {})
    config = Case(bound, 0.5, **_SMALL, **kw).config()
    worst, local = check_bound(bound, config), check_bound(f"{bound}_local", config)
    assert local.empirical == worst.empirical  # the same run
    assert local.constants["G2_iter"] <= worst.constants["G_inf"] ** 2
    assert local.bound <= worst.bound and local.passed


def test_the_quick_suite_checks_every_local_row_on_its_worst_case_run():
    local = local_cases(QUICK)
    assert local == tuple(case for case in QUICK if case.bound.endswith("_local"))
    assert {case.bound for case in local} == set(LOCAL)
    for case in local:
        assert case.config() == replace(case, bound=case.bound.removesuffix("_local")).config()


# ---- Corollary LF: the conditional value a user evaluates ------------------------------------

def test_corollary_lf_lipschitz_of_the_affine_families():
    from theory import devices
    from theory.local_floor import asymmetry_lipschitz, ball_g2_iter

    soft = devices.make_device("softbounds", tau=2.0, dw_min=0.01)
    assert asymmetry_lipschitz(soft) == pytest.approx(0.5)  # G(w) = w/tau
    w = np.linspace(-1.5, 1.5, 7)
    np.testing.assert_allclose(np.abs(np.diff(soft.G(w))), 0.5 * np.diff(w))
    assert ball_g2_iter(soft, 0.1, 0.2, 1.0) == pytest.approx((0.1 + 0.5 * 0.2) ** 2)
    assert ball_g2_iter(soft, 0.1, 10.0, 0.3) == pytest.approx(0.09)  # capped at G_inf^2
    exponential = [name for name in devices.list_presets()
                   if devices.load_preset(name).response.affine_responses() is None]
    if exponential:
        with pytest.raises(ParameterError, match="non-affine"):
            asymmetry_lipschitz(devices.load_preset(exponential[0]))


@pytest.mark.parametrize("index", [1, 3, 9])
def test_corollary_lf_holds_at_suite_points(index):
    """C_rho at the measured rho holds by construction; the corollary's chain (Lipschitz,
    Minkowski) must put the measured G2_iter below G_rho^2, and the local row at G_rho^2 must
    still hold against the simulation (quick-suite runs, fewer steps)."""
    from theory.local_floor import ball_g2_iter

    case = replace(QUICK[index], steps=100, seeds=6)
    config = replace(case.config(), log_every=1)
    measured = run_measuring_g2(config)
    device = device_from_config(config)
    g_rho2 = ball_g2_iter(device, measured.g_star, measured.radius, 10.0)
    assert measured.mean <= g_rho2
    local = check_bound(f"{case.bound}_local", case.config())
    empirical = local.empirical
    from theory.admissible import compiled_bound

    values = dict(local.constants, G2_iter=g_rho2)
    value = float(compiled_bound(local.bound_name).value(values["theta"], values["K"],
                                                         values["alpha"], values))
    assert empirical <= value and local.bound <= value
