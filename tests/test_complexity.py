"""Numeric complexities: exactness, vectorisation, schedules, and the error paths."""

from __future__ import annotations

import decimal
import functools
import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from theory import (
    PARAMETER_RANGES,
    REACHABLE,
    REGISTRY,
    ComplexityResult,
    FloatRangeError,
    IterationLimitError,
    ParameterError,
    UnreachableTargetError,
    cycles_expr,
    evaluate_complexity,
    iterations_expr,
    latex_table,
    samples_expr,
    schedules,
)
from theory.symbols import K, alpha, eps

BASE = dict(
    L=2.0, L_s=1.5, Delta=3.0, sigma2=0.5, n=16, b=4, B=4, M=5, q_min=0.7, q_max=1.3,
    G_inf=0.3, theta=0.5, tau=1.0, W_max=0.3, beta=0.05, R=2, P=3, nu=0.01,  # R, P, nu: local_sgd
    p2_bar=1.3**2, G2_bar=0.3**2,  # Theorem 2M: every block on this device
    T=4, rho=2.0,  # Corollary TT0: transfer period and rate
    G2_iter=0.1**2,  # Theorem LF: the iterate average, below G_inf^2
)


def floor_of(name, **values):
    bound = REGISTRY[name]
    subs = {s: values[s.name] for s in bound.floor.free_symbols}
    return float(bound.floor.subs(subs))


@st.composite
def point(draw):
    qmin = draw(st.floats(0.1, 1.0))
    qmax = qmin * draw(st.floats(1.0, 3.0))
    return dict(
        L=draw(st.floats(1e-2, 1e2)), L_s=draw(st.floats(1e-2, 1e2)),
        Delta=draw(st.floats(1e-2, 1e2)), sigma2=draw(st.floats(1e-2, 1e2)),
        n=draw(st.integers(1, 512)), b=draw(st.integers(1, 64)), B=draw(st.integers(1, 32)),
        M=draw(st.integers(1, 16)), q_min=qmin, q_max=qmax,
        # A3: |G| <= (q_max - q_min)/2 (evaluate_complexity refuses the rest)
        G_inf=draw(st.floats(0.0, 1.0)) * (qmax - qmin) / 2, theta=draw(st.floats(0.05, 0.95)),
        tau=1.0,
        W_max=draw(st.floats(0.01, 0.9)), beta=draw(st.floats(0.0, 1.0)),
        # Theorem 2M's noise-weighted sums, in their ranges (drawn last: the draws above are kept)
        p2_bar=qmin**2 + draw(st.floats(0.0, 1.0)) * (qmax**2 - qmin**2),
        G2_bar=draw(st.floats(0.0, 1.0)) * ((qmax - qmin) / 2) ** 2,
        R=draw(st.integers(1, 16)), P=draw(st.integers(1, 16)), nu=draw(st.floats(0.0, 1.0)),
        T=draw(st.integers(1, 64)), rho=draw(st.floats(1e-2, 1e2)),  # Corollary TT0 (last)
        # Theorem LF's iterate average, in its range (drawn after the others: their draws kept)
        G2_iter=draw(st.floats(0.0, 1.0)) * ((qmax - qmin) / 2) ** 2,
    )


@functools.cache
def _expr_fn(name):
    bound = REGISTRY[name]
    args = (K, alpha, *sorted(bound.expr.free_symbols - {K, alpha}, key=str))
    return args, sp.lambdify(args, bound.expr, "math")


@functools.cache
def _rate_fn(name):
    bound = REGISTRY[name]
    rate = bound.rate_a / sp.sqrt(K) + bound.rate_c / K + bound.floor
    args = (K, *sorted(rate.free_symbols - {K}, key=str))
    return args, sp.lambdify(args, rate, "math")


def _values_with_delay(name, values):
    """The default delay evaluate_complexity uses: M - 1 updates, or ceil((M - 1)/T) writes for an
    entry counted in transfer windows (Corollary TT0-AP)."""
    bound = REGISTRY[name]
    if bound.mode != "async":
        return values
    if any(s.name == "T" for s in bound.expr.free_symbols):
        return {**values, "D": -((1 - values["M"]) // values["T"])}
    return {**values, "D": values["M"] - 1}


def test_result_fields_and_types():
    result = evaluate_complexity("analog_sgd_sp", 0.5, **BASE)
    assert isinstance(result, ComplexityResult)
    assert result.algorithm == "analog_sgd_sp"
    assert result.iterations_int == math.ceil(result.iterations)
    assert result.step_limited_by in ("step cap", "noise balance")
    with pytest.raises(AttributeError):
        result.iterations = 1.0  # frozen


@pytest.mark.parametrize("name", list(REGISTRY))
def test_target_reached_by_the_integer_run_and_not_one_step_earlier(name):
    """The bound at (ceil K, step) is <= eps, and the rate form one step earlier exceeds eps
    (one transfer window of ``T`` updates earlier for an entry counted in windows, TT0)."""
    for target in (0.2, 1.0, 5.0):
        target = floor_of(name, **_values_with_delay(name, BASE)) + target
        result = evaluate_complexity(name, target, **BASE)
        args, bound_at = _expr_fn(name)
        vals = _values_with_delay(name, BASE)
        value = bound_at(
            float(result.iterations_int), float(result.step), *(vals[a.name] for a in args[2:])
        )
        assert value <= target * (1 + 1e-12)
        k_min = float(REGISTRY[name].min_iterations.subs(
            {s: vals[s.name] for s in REGISTRY[name].min_iterations.free_symbols}
        ))
        uses_t = any(s.name == "T" for s in REGISTRY[name].expr.free_symbols)
        window = float(vals["T"]) if uses_t else 1.0
        if window > 1:  # whole windows: a multiple of T
            assert result.iterations_int % window == 0
        if result.iterations_int > max(window, math.ceil(k_min)):
            rargs, rate_at = _rate_fn(name)
            before = rate_at(result.iterations_int - window,
                             *(vals[a.name] for a in rargs[1:]))
            assert before > target


def test_unreachable_target_names_the_floor():
    floor = floor_of("analog_sgd", **BASE)
    assert floor > 0
    for target in (floor, floor / 2):
        with pytest.raises(UnreachableTargetError) as info:
            evaluate_complexity("analog_sgd", target, **BASE)
        assert f"{floor:.6g}" in str(info.value)
        assert info.value.floor == pytest.approx(floor)
        assert info.value.algorithm == "analog_sgd"


def test_unreachable_anywhere_in_an_array_raises():
    floor = floor_of("analog_sgd_ap", **{**BASE, "D": BASE["M"] - 1})
    with pytest.raises(UnreachableTargetError):
        evaluate_complexity("analog_sgd_ap", np.array([1.0, floor * 0.9, 2.0]), **BASE)


@pytest.mark.parametrize("name", list(REGISTRY))
def test_vectorised_matches_scalar(name):
    eps_grid = np.array([[0.3], [1.0], [3.0]]) + floor_of(name, **_values_with_delay(name, BASE))
    sigma_grid = np.array([0.25, 0.5])
    floors = [floor_of(name, **_values_with_delay(name, {**BASE, "sigma2": s})) for s in sigma_grid]
    eps_grid = eps_grid + max(floors)
    vec = evaluate_complexity(name, eps_grid, **{**BASE, "sigma2": sigma_grid})
    assert np.shape(vec.iterations) == (3, 2)
    for i in range(3):
        for j in range(2):
            one = evaluate_complexity(name, eps_grid[i, 0], **{**BASE, "sigma2": sigma_grid[j]})
            for field in ("floor", "rate_a", "rate_c", "iterations", "samples", "cycles", "step"):
                assert np.asarray(getattr(vec, field))[i, j] == pytest.approx(
                    getattr(one, field), rel=1e-12
                ), field
            assert vec.iterations_int[i, j] == one.iterations_int
            assert vec.step_limited_by[i, j] == one.step_limited_by


def _substitute(expr, values, extra=None) -> float:
    """Evaluate ``expr`` by symbolic substitution (``xreplace`` with sympy Floats: exact ``subs``
    semantics for plain symbols, without ``subs``'s re-simplification)."""
    at = {sym: sp.Float(values[sym.name]) for sym in expr.free_symbols if sym.name in values}
    at.update({sym: sp.Float(v) for sym, v in (extra or {}).items()})
    return float(expr.xreplace(at))


@settings(max_examples=20)
@given(values=point(), excess=st.floats(0.01, 100.0))
def test_compiled_values_equal_subs(values, excess):
    for name, bound in REGISTRY.items():
        vals = _values_with_delay(name, values)
        target = _substitute(bound.floor, vals) + excess
        result = evaluate_complexity(name, target, **values)
        assert result.floor == pytest.approx(_substitute(bound.floor, vals), rel=1e-12)
        assert result.rate_a == pytest.approx(_substitute(bound.rate_a, vals), rel=1e-12)
        assert result.rate_c == pytest.approx(_substitute(bound.rate_c, vals), rel=1e-12)
        k_real = _substitute(iterations_expr(bound), vals, {eps: target})
        assert result.iterations == pytest.approx(k_real, rel=1e-9)
        k_int = float(result.iterations_int)
        assert result.step == pytest.approx(
            _substitute(bound.best_step, vals, {K: k_int}), rel=1e-12
        )
        # samples and cycles of the real K(eps) are at most those of the integer run ceil(K)
        assert _substitute(samples_expr(bound), vals, {eps: target}) <= result.samples * (
            1 + 1e-9
        )
        assert _substitute(cycles_expr(bound), vals, {eps: target}) <= result.cycles * (1 + 1e-9)


@pytest.mark.parametrize("name", list(REGISTRY))
def test_cycles_come_from_the_schedules(name):
    bound = REGISTRY[name]
    result = evaluate_complexity(name, 1.0 + floor_of(name, **_values_with_delay(name, BASE)),
                                 **BASE)
    k = int(result.iterations_int)
    m = BASE["M"]
    if bound.mode == "async":
        expected = schedules.evaluate_schedule("async", "total_cycles", stages=m, micro_batches=k)
        assert expected == 2 * (k + m - 1)
    elif bound.mode == "sync":
        expected = k * schedules.evaluate_schedule("sync", "total_cycles", stages=m,
                                          micro_batches=BASE["B"])
    else:  # none: a step of n samples runs n/b micro-batches
        micro = BASE["n"] // BASE["b"]
        expected = k * schedules.evaluate_schedule(
            "none", "total_cycles", stages=m, micro_batches=micro
        )
    assert result.cycles == expected
    batch = {"none": BASE["n"], "sync": BASE["B"] * BASE["b"], "async": BASE["b"]}[bound.mode]
    if name == "local_sgd":  # R replicas in parallel: R n samples, one replica's cycles
        batch *= BASE["R"]
    assert result.samples == batch * k


def test_fair_comparison_non_pipelined_with_sp_mini_batch():
    values = {**BASE, "n": BASE["B"] * BASE["b"]}
    analog = evaluate_complexity("analog_sgd", 0.5, **values)
    sync = evaluate_complexity("analog_sgd_sp", 0.5, **values)
    assert analog.iterations == sync.iterations and analog.samples == sync.samples
    m, bb = BASE["M"], BASE["B"]
    assert analog.cycles / sync.cycles == pytest.approx(m * bb / (bb + m - 1))


def test_ap_with_one_stage_equals_sp_with_one_micro_batch():
    ap = evaluate_complexity("analog_sgd_ap", 0.4, **{**BASE, "M": 1})
    sp_ = evaluate_complexity("analog_sgd_sp", 0.4, **{**BASE, "M": 1, "B": 1})
    for field in ("floor", "rate_a", "rate_c", "iterations", "samples", "step"):
        assert getattr(ap, field) == pytest.approx(getattr(sp_, field), rel=1e-12)


def test_delay_defaults_to_stages_minus_one_and_can_be_given():
    implicit = evaluate_complexity("analog_sgd_ap", 0.4, **BASE)
    explicit = evaluate_complexity("analog_sgd_ap", 0.4, **BASE, D=BASE["M"] - 1)
    assert implicit.iterations == explicit.iterations
    smaller = evaluate_complexity("analog_sgd_ap", 0.4, **BASE, D=1)
    assert smaller.iterations < implicit.iterations


def test_iterations_grow_with_delay_and_shrink_with_eps():
    stages = np.arange(1, 17)
    result = evaluate_complexity("analog_sgd_ap", 0.4, **{**BASE, "M": stages})
    assert np.all(np.diff(result.iterations) > 0)
    targets = np.linspace(0.2, 5.0, 25)
    result = evaluate_complexity("analog_sgd_sp", targets, **BASE)
    assert np.all(np.diff(result.iterations) < 0)


def test_step_limited_by_both_regimes():
    loose = evaluate_complexity("digital_sgd", 10.0, **{**BASE, "L": 100.0, "sigma2": 1e-3})
    tight = evaluate_complexity("digital_sgd", 1e-3, **BASE)
    assert loose.step_limited_by == "step cap"
    assert loose.step == pytest.approx(1 / 100.0)
    assert tight.step_limited_by == "noise balance"
    assert tight.step < 1 / BASE["L"]


def test_companion_minimum_iterations_enforced():
    name = "analog_sgd_companion"
    bound = REGISTRY[name]
    k_min = float(bound.min_iterations.subs(
        {s: BASE[s.name] for s in bound.min_iterations.free_symbols}
    ))
    easy = evaluate_complexity(name, 100.0, **BASE)
    assert easy.iterations == pytest.approx(k_min)
    assert easy.step == pytest.approx(1 / (4 * BASE["L"]))
    hard = evaluate_complexity(name, floor_of(name, **BASE) + 1e-3, **BASE)
    assert hard.iterations > k_min


def test_missing_parameters_list_the_required_names():
    with pytest.raises(ParameterError) as info:
        evaluate_complexity("analog_sgd_ap", 0.5, L=1.0, Delta=1.0)
    message = str(info.value)
    for required in ("sigma2", "q_min", "q_max", "G_inf", "theta", "L_s", "b", "M"):
        assert required in message


def test_unknown_parameter_and_unknown_bound():
    with pytest.raises(ParameterError, match="sigma"):
        evaluate_complexity("digital_sgd", 0.5, **BASE, sigma=1.0)
    with pytest.raises(ParameterError, match="digital_sgd"):
        evaluate_complexity("digitl_sgd", 0.5, **BASE)


@pytest.mark.parametrize(
    ("key", "value"),
    [("theta", 1.0), ("theta", 0.0), ("L", -1.0), ("n", 0), ("b", 2.5), ("sigma2", np.nan),
     ("q_min", 2.0), ("W_max", 1.0), ("M", [3, 0])],
)
def test_out_of_range_values_name_the_parameter(key, value):
    name = "analog_sgd_companion" if key == "W_max" else "analog_sgd_ap"
    if key == "n":
        name = "analog_sgd"
    with pytest.raises(ParameterError) as info:
        evaluate_complexity(name, 0.5, **{**BASE, key: value})
    assert str(info.value).startswith(key)
    assert "range" in str(info.value)


def test_eps_must_be_positive_number():
    with pytest.raises(ParameterError, match="eps"):
        evaluate_complexity("digital_sgd", -1.0, **BASE)
    with pytest.raises(ParameterError, match="eps"):
        evaluate_complexity("digital_sgd", object(), **BASE)


def test_parameter_ranges_cover_every_registry_parameter():
    used = set().union(*(bound.parameters for bound in REGISTRY.values()))
    assert used <= set(PARAMETER_RANGES)


def test_latex_table_one_row_per_bound():
    table = latex_table().strip().splitlines()
    assert table[0].startswith("| bound | provenance |")
    rows = table[2:]
    assert len(rows) == len(REGISTRY)
    for row, bound in zip(rows, REGISTRY.values(), strict=True):
        assert row.count("|") == 4
        assert row.startswith(f"| `{bound.name}` | {bound.provenance} | $")


@pytest.mark.parametrize("name", ["digital_sgd", "analog_sgd"])
def test_iteration_count_beyond_int64_is_an_error_not_garbage(name):
    """K(eps) ~ a^2/(eps - floor)^2 overflows int64 for a target too close to the floor."""
    floor = floor_of(name, **BASE)
    target = floor + 1e-12 if floor > 0 else 1e-12
    with pytest.raises(IterationLimitError, match=r"^eps=.*int64.*choose a larger eps"):
        evaluate_complexity(name, target, **BASE)
    with pytest.raises(IterationLimitError, match="int64"):
        evaluate_complexity(name, np.array([1.0 + floor, target]), **BASE)


def test_guarantee_is_the_fewest_iterations_of_the_proved_bounds():
    """evaluate_guarantee picks, per point, the proved entry of fewest whole iterations."""
    from theory import bounds_for, evaluate_guarantee

    values = dict(L=1.0, L_s=1.0, Delta=1.0, sigma2=1.0, theta=0.5, q_min=0.5, q_max=1.5,
                  G_inf=0.4, b=4)
    stages = np.array([[1], [2], [4], [8], [16]])
    eps_grid = np.array([0.5, 1.0, 3.0])
    got = evaluate_guarantee("async", eps_grid, M=stages, **values)
    names = [b.name for b in bounds_for("async")]
    each = [evaluate_complexity(n, eps_grid, M=stages, **values) for n in names]
    iters = np.stack([np.asarray(r.iterations_int) for r in each])
    np.testing.assert_array_equal(got.iterations_int, iters.min(axis=0))
    np.testing.assert_array_equal(got.algorithm, np.array(names)[iters.argmin(axis=0)])
    for field in ("cycles", "floor", "step", "rate_c"):
        stacked = np.stack([np.asarray(getattr(r, field)) for r in each])
        np.testing.assert_array_equal(
            getattr(got, field), np.take_along_axis(stacked, iters.argmin(axis=0)[None], 0)[0]
        )
    assert set(np.unique(got.algorithm)) == set(names)  # both theorems win somewhere here
    with pytest.raises(UnreachableTargetError):
        evaluate_guarantee("async", 1e-3, M=4, **values)
    status = evaluate_guarantee("async", 1e-3, M=4, on_unreachable="status", **values)
    assert status.status == "below floor" and np.isinf(status.iterations)


def test_device_constants_that_contradict_a3_are_refused():
    """|G| = |q_- - q_+|/2 <= (q_max - q_min)/2 whenever both responses lie in [q_min, q_max]."""
    values = dict(L=1.0, L_s=1.0, Delta=1.0, sigma2=1.0, theta=0.5, q_min=0.5, q_max=1.5, b=1, M=4)
    evaluate_complexity("analog_sgd_ap", 10.0, G_inf=0.5, **values)  # the edge is allowed
    with pytest.raises(ParameterError, match=r"G_inf=0.6 is out of range.*\(q_max - q_min\)/2"):
        evaluate_complexity("analog_sgd_ap", 10.0, G_inf=0.6, **values)
    with pytest.raises(ParameterError, match="G_inf=0.1 is out of range"):
        evaluate_complexity("analog_sgd", 10.0, n=1, **{**values, "q_max": 0.5, "G_inf": 0.1})


# -- numerical guards: a huge eps, a floor beyond the float range ------------------------------

@pytest.mark.parametrize("name", list(REGISTRY))
@pytest.mark.parametrize("target", [1e155, 1e200, 1e300, 1.7e308])
def test_huge_eps_needs_at_least_one_iteration(name, target):
    # the closed form squares eps - floor beyond the float range; the scaled root does not
    values = _values_with_delay(name, BASE)
    with np.errstate(all="raise"):
        res = evaluate_complexity(name, target, **values)
    assert res.status == REACHABLE
    assert 0 <= float(res.iterations) < 1 or REGISTRY[name].min_iterations != 0
    assert int(res.iterations_int) >= 1
    assert np.isfinite([res.samples, res.cycles, res.step]).all()


def _exact_root(a: float, c: float, gap: float) -> float:
    """Proposition 5's K for a/sqrt(K) + c/K = gap, in 60-digit decimal arithmetic."""
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        a_, c_, g_ = (decimal.Decimal(x) for x in (a, c, gap))
        return float(((a_ + (a_ * a_ + 4 * c_ * g_).sqrt()) / (2 * g_)) ** 2)


@pytest.mark.parametrize("name", list(REGISTRY))
@pytest.mark.parametrize("target", [3.0, 1e3, 1e60, 1e150, 1e156, 1e200, 1e300, 1e308])
def test_iterations_match_the_exact_root_for_any_eps(name, target):
    # closed form (moderate eps) and scaled root (huge eps) both give Proposition 5's K
    values = _values_with_delay(name, BASE)
    res = evaluate_complexity(name, target, **values)
    exact = _exact_root(float(res.rate_a), float(res.rate_c), target - float(res.floor))
    minimum = float(REGISTRY[name].min_iterations.subs(
        {s: values[s.name] for s in REGISTRY[name].min_iterations.free_symbols}))
    expected = max(exact, minimum)
    if expected < 1e-300:  # K itself below the normal float range
        assert float(res.iterations) == pytest.approx(expected, abs=1e-300)
    else:
        assert float(res.iterations) == pytest.approx(expected, rel=1e-12)


def test_floor_beyond_the_float_range_is_a_named_error():
    # (G_inf within A3 for BASE: at most (q_max - q_min)/2 = 0.3)
    values = dict(_values_with_delay("analog_sgd", BASE), sigma2=1e308, G_inf=0.3, n=1,
                  theta=0.01)
    with pytest.raises(ParameterError, match="^sigma2=1e\\+308 puts the floor of analog_sgd "
                                             "beyond the float range"):
        evaluate_complexity("analog_sgd", 1.0, **values)


def test_rate_beyond_the_float_range_names_the_constant_not_the_iterations():
    values = dict(_values_with_delay("analog_sgd", BASE), L=1e308)
    with pytest.raises(FloatRangeError, match="^L=1e\\+308 puts the rate coefficient c of "
                                              "analog_sgd beyond the float range"):
        evaluate_complexity("analog_sgd", 1.0, **values)
    res = evaluate_complexity("analog_sgd", 1e300, **dict(values, L=1e300))  # c finite: a count
    assert 1 <= float(res.iterations) < 1e3
