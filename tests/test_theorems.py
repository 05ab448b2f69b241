"""Symbolic checks of the theorem registry and of the proofs in docs/theory.md.

Positivity is proved with sympy's assumptions. ``theta in (0, 1)`` is encoded as ``s/(1+s)`` with
``s > 0``; ``D >= 1`` as ``1 + d`` with ``d >= 0``; a step ``alpha <= cap`` as ``cap/(1 + w)``.
Where sympy cannot decide, a hypothesis check at drawn points stands in.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from theory.complexity import iterations_expr, solve_rate
from theory.errors import ParameterError
from theory.symbols import (
    B,
    D,
    Delta,
    G_inf,
    K,
    L,
    L_s,
    M,
    W_max,
    alpha,
    b,
    eps,
    n,
    q_max,
    q_min,
    sigma2,
    tau,
    theta,
)
from theory.theorems import PROVENANCES, REGISTRY, Bound, bound_for, bounds_for, get_bound

DOCS = Path(__file__).resolve().parents[1] / "docs" / "theory.md"

s = sp.Symbol("s", positive=True)  # theta = s/(1+s) in (0, 1)
w = sp.Symbol("w", nonnegative=True)
z = sp.Symbol("z", nonnegative=True)
d = sp.Symbol("d", nonnegative=True)
u = sp.Symbol("u", positive=True)
g_pos = sp.Symbol("g_pos", positive=True)  # a strictly positive G_inf
gap = sp.Symbol("gap", positive=True)  # eps - floor
a_ = sp.Symbol("a", positive=True)
c_pos = sp.Symbol("c_pos", positive=True)
c_nn = sp.Symbol("c", nonnegative=True)
THETA01 = {theta: s / (1 + s)}
DERIVED_ANALOG = ("analog_sgd", "analog_sgd_sp", "analog_sgd_ap")
FIELDS = ("expr", "inv_step_cap", "rate_a", "rate_c", "floor", "best_step", "noise_step")


def is_zero(expr) -> bool:
    return sp.simplify(sp.sympify(expr)) == 0


def nonneg(expr) -> bool | None:
    """sympy's verdict on ``expr >= 0`` after putting it over one denominator (then simplifying)."""
    verdict = sp.factor(sp.together(expr)).is_nonnegative
    if verdict is None:
        verdict = sp.factor(sp.simplify(expr)).is_nonnegative
    return verdict


def domain(expr):
    """Substitute the domain encodings (theta in (0,1), W_max < tau) into ``expr``."""
    return sp.sympify(expr).subs(THETA01).subs(tau, W_max + u)


def rate(bound: Bound, k=K):
    return bound.rate_a / sp.sqrt(k) + bound.rate_c / k + bound.floor


# ---- registry structure --------------------------------------------------------------------------

def test_registry_names_and_order():
    assert list(REGISTRY) == [
        "digital_sgd", "analog_sgd_companion", "analog_sgd", "analog_sgd_sp", "analog_sgd_ap",
        "literature_sgd", "literature_delay_fixed", "literature_delay_arbitrary",
        "literature_async_sgd",
    ]
    for name, bound in REGISTRY.items():
        assert bound.name == name
        assert bound.provenance in PROVENANCES
        assert list(bound.parameters) == sorted(bound.parameters)
        assert "K" not in bound.parameters and "alpha" not in bound.parameters


def test_batches_and_modes():
    expected = {
        "digital_sgd": (n, "none"), "analog_sgd_companion": (n, "none"),
        "analog_sgd": (n, "none"), "analog_sgd_sp": (B * b, "sync"), "analog_sgd_ap": (b, "async"),
    }
    for name, (batch, mode) in expected.items():
        assert is_zero(REGISTRY[name].batch - batch)
        assert REGISTRY[name].mode == mode


def test_derived_entries_name_a_heading_of_docs():
    headings = re.findall(r"^## (.+)$", DOCS.read_text(), flags=re.MULTILINE)
    derived = [bd for bd in REGISTRY.values() if bd.provenance == "derived"]
    assert {bd.name for bd in derived} == {"digital_sgd", *DERIVED_ANALOG}
    for bound in derived:
        assert any(h.startswith(f"{bound.proof} ") for h in headings), bound.proof
        assert f"`{bound.name}`" in next(h for h in headings if h.startswith(f"{bound.proof} "))
    assert any(h.startswith("Proposition 5 ") for h in headings)


def test_literature_rows_say_they_are_orders():
    for bound in REGISTRY.values():
        is_order = any("order only" in c for c in bound.conditions)
        assert is_order == (bound.provenance == "literature"), bound.name


def test_get_bound_unknown_lists_names():
    with pytest.raises(ParameterError) as info:
        get_bound("analog_sgd_xp")
    for name in REGISTRY:
        assert name in str(info.value)


def test_bound_validates_its_fields():
    good = REGISTRY["digital_sgd"]
    kwargs = {f: getattr(good, f) for f in good.__dataclass_fields__}
    with pytest.raises(ParameterError, match="provenance"):
        Bound(**{**kwargs, "provenance": "folklore"})
    with pytest.raises(ParameterError, match="mode"):
        Bound(**{**kwargs, "mode": "zigzag"})
    with pytest.raises(ParameterError, match="rate_c"):
        Bound(**{**kwargs, "rate_c": 2 * Delta * L / K})
    with pytest.raises(ParameterError, match="proof"):
        Bound(**{**kwargs, "proof": None})


def test_latex_has_bound_cap_and_floor_and_no_pipe():
    for bound in REGISTRY.values():
        text = bound.latex()
        assert r"\le" in text and r"\alpha \le" in text and "floor" in text
        assert "|" not in text  # it sits inside a Markdown table


def test_bound_for_maps_every_schedule_to_its_theorem():
    assert bound_for("none", "digital").proof == "Theorem 1"
    assert bound_for("none").proof == "Theorem 2"
    assert bound_for("sync").proof == "Corollary 3"
    assert bound_for("async").name == "analog_sgd_ap"
    for bound in REGISTRY.values():
        if bound.provenance == "derived":
            assert bound in bounds_for(bound.mode, bound.algorithm)
    with pytest.raises(ParameterError, match="valid pairs: analog/async"):
        bound_for("sync", "digital")


# ---- reductions (theory-spec identities) ---------------------------------------------------------

def test_ap_at_zero_delay_equals_sp_at_one_micro_batch():
    ap, sp_ = REGISTRY["analog_sgd_ap"], REGISTRY["analog_sgd_sp"]
    for field_name in FIELDS:
        assert is_zero(getattr(ap, field_name).subs(D, 0) - getattr(sp_, field_name).subs(B, 1)), (
            field_name
        )


def test_analog_with_ideal_device_is_digital():
    an, dg = REGISTRY["analog_sgd"], REGISTRY["digital_sgd"]
    ideal = {q_min: 1, q_max: 1, G_inf: 0}
    for field_name in ("expr", "inv_step_cap", "rate_a", "rate_c", "floor"):
        reduced = sp.limit(getattr(an, field_name).subs(ideal), theta, 0, "+")
        assert is_zero(reduced - getattr(dg, field_name)), field_name


def test_sp_is_analog_with_mini_batch():
    an, sp_ = REGISTRY["analog_sgd"], REGISTRY["analog_sgd_sp"]
    for field_name in (*FIELDS, "batch"):
        assert is_zero(getattr(an, field_name).subs(n, B * b) - getattr(sp_, field_name))


def test_ap_eps2_coefficient_equals_sp_at_one_micro_batch_for_every_delay():
    assert is_zero(REGISTRY["analog_sgd_ap"].rate_a - REGISTRY["analog_sgd_sp"].rate_a.subs(B, 1))
    assert is_zero(REGISTRY["analog_sgd_ap"].floor - REGISTRY["analog_sgd_sp"].floor.subs(B, 1))


# ---- the rate form: structure and domination at the best step ------------------------------------

def _pqr(bound: Bound):
    """Coefficients of expr = P/(alpha K) + Q alpha + R alpha^2 + floor (Proposition 5 (a))."""
    poly = sp.Poly(sp.expand(bound.expr * alpha * K), alpha)
    coeffs = {m[0]: c for m, c in zip(poly.monoms(), poly.coeffs(), strict=True)}
    assert set(coeffs) <= {0, 1, 2, 3}
    p = coeffs.get(0, 0)
    floor = coeffs.get(1, 0) / K
    q = coeffs.get(2, 0) / K
    r = coeffs.get(3, 0) / K
    return p, q, r, floor


@pytest.mark.parametrize("name", ["digital_sgd", *DERIVED_ANALOG])
def test_rate_coefficients_follow_proposition_5a(name):
    bound = REGISTRY[name]
    p, q, r, floor = _pqr(bound)
    assert is_zero(floor - bound.floor)
    assert is_zero(bound.noise_step - sp.sqrt(p / (q * K)))
    assert is_zero(bound.rate_a - 2 * sp.sqrt(p * q))
    assert is_zero(bound.rate_c - (p * bound.inv_step_cap + r * p / q))


def test_proposition_5a_generic_algebra():
    p, q, k, cap = sp.symbols("P Q K_ cap", positive=True)
    r = sp.Symbol("R", nonnegative=True)
    bound = p / (alpha * k) + q * alpha + r * alpha**2
    a_opt = sp.sqrt(p / (q * k))
    target = 2 * sp.sqrt(p * q) / sp.sqrt(k) + (p / cap + r * p / q) / k
    # alpha = alpha_opt <= cap: the remainder is P/(cap K) >= 0
    assert is_zero(target - bound.subs(alpha, a_opt) - p / (cap * k))
    # alpha = cap <= alpha_opt: write cap = alpha_opt/(1+z)
    rem = sp.factor(sp.simplify((target - bound.subs(alpha, cap)).subs(cap, a_opt / (1 + z))))
    assert rem.is_nonnegative


@pytest.mark.parametrize("name", ["digital_sgd", *DERIVED_ANALOG])
def test_rate_form_dominates_expr_at_best_step_symbolic(name):
    bound = REGISTRY[name]
    # case 1: alpha = noise step (<= cap)
    rem = sp.factor(sp.simplify(domain(rate(bound) - bound.expr.subs(alpha, bound.noise_step))))
    assert rem.is_nonnegative, rem
    # case 2: alpha = cap (<= noise step): K = K*/(1+z)^2, where the two steps meet at K*
    cap = 1 / bound.inv_step_cap
    k_small = K * (bound.noise_step / cap) ** 2 / (1 + z) ** 2
    rem = rate(bound) - bound.expr.subs(alpha, cap)
    rem = sp.factor(sp.simplify(domain(rem.subs(K, k_small))))
    assert rem.is_nonnegative, rem


def test_rate_form_equals_expr_for_step_free_rows():
    for bound in REGISTRY.values():
        if alpha not in bound.expr.free_symbols:
            assert is_zero(rate(bound) - bound.expr), bound.name


@st.composite
def constants(draw):
    pos = st.floats(1e-3, 1e3)
    qmin = draw(st.floats(0.05, 1.0))
    wmax = draw(st.floats(0.01, 0.95))
    return {
        L: draw(pos), L_s: draw(pos), Delta: draw(pos), sigma2: draw(pos),
        q_min: qmin, q_max: qmin * draw(st.floats(1.0, 4.0)), G_inf: draw(st.floats(0, 1)),
        theta: draw(st.floats(0.01, 0.99)), n: draw(st.integers(1, 256)),
        b: draw(st.integers(1, 64)), B: draw(st.integers(1, 32)), M: draw(st.integers(1, 16)),
        D: draw(st.integers(0, 15)), tau: 1.0, W_max: wmax,
    }


@functools.cache
def _compiled_rate_check(name: str):
    bound = REGISTRY[name]
    free = (
        bound.expr.free_symbols | bound.best_step.free_symbols | rate(bound).free_symbols
        | bound.min_iterations.free_symbols
    )
    args = (K, *sorted(free - {K, alpha}, key=str))
    step = sp.lambdify(args, bound.best_step, "math")
    value = sp.lambdify((alpha, *args), bound.expr, "math")
    upper = sp.lambdify(args, rate(bound), "math")
    k_min = sp.lambdify(args, bound.min_iterations, "math")
    return args, step, value, upper, k_min


@settings(max_examples=40)
@given(values=constants(), log_k=st.floats(0, 9))
def test_rate_form_dominates_expr_numerically(values, log_k):
    """Both cases of the min occur: the drawn K spans the crossover K* of every bound."""
    k = 10.0**log_k
    for bound in REGISTRY.values():
        args, step, value, upper, k_min = _compiled_rate_check(bound.name)
        point = [k, *(values[a] for a in args[1:])]
        if k < k_min(*point):
            continue
        lhs = value(step(*point), *point)
        assert lhs <= upper(*point) * (1 + 1e-12), bound.name


# ---- Theorem 2 and Theorem 4: the proof arithmetic -----------------------------------------------

def test_theorem2_step5_coefficient():
    th = s / (1 + s)
    step = (1 - th) * q_min / (L * q_max**2) / (1 + w)  # any alpha <= cap
    bracket = q_min * (1 - th / 2) - L * step * q_max**2 / 2
    assert nonneg(bracket - q_min / 2)


def test_theorem4_step5_coefficients():
    th = s / (1 + s)
    rho, beta = (1 - th) / 4, sp.Rational(1, 2)
    delay = 1 + d  # D >= 1
    qmax = q_min * (1 + u)  # q_max >= q_min
    cap1 = (1 - th) * q_min / (L * qmax**2 * (1 + 2 * delay))
    cap2 = (1 - th) * q_min / (8 * sp.sqrt(2) * L_s * delay * qmax**2)
    # (a) with alpha = cap1/(1+w): A >= alpha q_min (5 - theta)/8
    a1 = cap1 / (1 + w)
    coef_a = a1 * q_min * (1 - th / 2 - rho / 2) - L * a1**2 * qmax**2 * (1 + beta) / 2
    assert nonneg(coef_a - a1 * q_min * (5 - th) / 8)
    # the 1 + 2D cap: (1-theta)(3/2)/(1+2D) <= (1-theta)/2 for D >= 1
    assert nonneg((1 - th) / 2 - (1 - th) * beta * 3 / (1 + 2 * delay))
    # (b) E <= 4 alpha q_max^2/((1-theta) q_min) under alpha <= cap1
    coef_e = a1 * qmax**2 / (2 * rho * q_min) + L * a1**2 * qmax**2 * (1 + 1 / beta) / 2
    assert nonneg(4 * a1 * qmax**2 / ((1 - th) * q_min) - coef_e)
    # (c) under alpha <= cap2: 2 c_e <= 1/2 and 4 c_e E_bound <= alpha q_min (1-theta)/8
    a2 = cap2 / (1 + w)
    c_e = L_s**2 * delay**2 * a2**2 * qmax**2
    assert nonneg(sp.Rational(1, 2) - 2 * c_e)
    e_bound = 4 * a2 * qmax**2 / ((1 - th) * q_min)
    assert nonneg(a2 * q_min * (1 - th) / 8 - 4 * c_e * e_bound)
    # (d) the net coefficient
    assert is_zero(alpha * q_min * (5 - th) / 8 - alpha * q_min * (1 - th) / 8 - alpha * q_min / 2)


def test_theorem4_step6_gives_the_registry_expression():
    """(Delta + K const + 2 c_e E_bound K sigma2/b) / (alpha q_min K / 2) is the stored bound."""
    c_e = L_s**2 * D**2 * alpha**2 * q_max**2
    e_bound = 4 * alpha * q_max**2 / ((1 - theta) * q_min)
    const = (
        alpha * G_inf**2 * sigma2 / (2 * theta * q_min * b)
        + L * alpha**2 * q_max**2 * sigma2 / (2 * b)
    )
    rhs = (Delta + K * const + 2 * c_e * e_bound * K * sigma2 / b) / (alpha * q_min * K / 2)
    assert is_zero(rhs - REGISTRY["analog_sgd_ap"].expr)


def test_theorem4_cap_is_min_of_the_two_caps():
    th = s / (1 + s)
    cap1 = (1 - th) * q_min / (L * q_max**2 * (1 + 2 * D))
    cap2 = (1 - th) * q_min / (8 * sp.sqrt(2) * L_s * D * q_max**2)
    inv = REGISTRY["analog_sgd_ap"].inv_step_cap.subs(THETA01)
    (the_max,) = inv.atoms(sp.Max)
    prefactor = sp.simplify(inv / the_max)
    assert prefactor.is_positive  # so prefactor * Max(x, y) = Max(prefactor x, prefactor y)
    branches = sorted(
        (sp.simplify(prefactor * arg) for arg in the_max.args), key=sp.default_sort_key
    )
    expected = sorted((sp.simplify(1 / cap1), sp.simplify(1 / cap2)), key=sp.default_sort_key)
    assert all(is_zero(x - y) for x, y in zip(branches, expected, strict=True))


# ---- Proposition 5: exact iterations -------------------------------------------------------------

def test_solve_rate_solves_the_quadratic_exactly():
    k = solve_rate(a_, c_nn, gap)
    assert is_zero(a_ / sp.sqrt(k) + c_nn / k - gap)
    # equal to the 2c/(sqrt - a) form (for c > 0)
    root = sp.sqrt(a_**2 + 4 * c_pos * gap)
    assert is_zero(solve_rate(a_, c_pos, gap) - (2 * c_pos / (root - a_)) ** 2)
    assert is_zero(solve_rate(a_, 0, gap) - a_**2 / gap**2)


def test_solve_rate_bracket():
    """a^2/g^2 + c/g <= K(eps) <= a^2/g^2 + 2c/g (Proposition 5 (c))."""
    k = solve_rate(a_, c_nn, gap)
    # K - a^2/g^2 - c/g = a (sqrt(a^2 + 4 c g) - a)/(2 g^2), and sqrt(a^2 + 4cg) >= a
    assert is_zero(k - a_**2 / gap**2 - c_nn / gap
                   - a_ * (sp.sqrt(a_**2 + 4 * c_nn * gap) - a_) / (2 * gap**2))
    # and sqrt(a^2 + 4cg) - a <= 2cg/a, i.e. (a + 2cg/a)^2 - (a^2 + 4cg) = 4c^2g^2/a^2 >= 0
    assert is_zero((a_ + 2 * c_nn * gap / a_) ** 2 - (a_**2 + 4 * c_nn * gap)
                   - 4 * c_nn**2 * gap**2 / a_**2)


def _nonneg_numeric(expr) -> bool:
    """``expr >= 0`` at 2000 log-normal points (each point judged on its own, no shared slack)."""
    rng = np.random.default_rng(np.random.SeedSequence(5))
    f = sp.lambdify(sorted(expr.free_symbols, key=str), expr, "numpy")
    pts = rng.lognormal(0, 3, size=(len(expr.free_symbols), 2000))
    values = f(*pts)
    return bool(np.all(np.isfinite(values)) and np.all(values >= 0))


@pytest.mark.parametrize("name", [nm for nm, bd in REGISTRY.items() if bd.floor == 0])
def test_iterations_order_a2_over_eps2(name):
    bound = REGISTRY[name]
    k_eps = iterations_expr(bound)
    assert sp.simplify(sp.limit(k_eps * eps**2, eps, 0, "+") - bound.rate_a**2) == 0


@pytest.mark.parametrize("name", DERIVED_ANALOG)
def test_iterations_blow_up_like_a2_over_gap2_near_the_floor(name):
    bound = REGISTRY[name]
    k_gap = iterations_expr(bound).subs(eps, bound.floor + gap)
    assert sp.simplify(sp.limit(k_gap * gap**2, gap, 0, "+") - bound.rate_a**2) == 0


def test_companion_step_condition_is_automatic_below_sigma2_over_n_smin():
    bound = REGISTRY["analog_sgd_companion"]
    s_min = 1 - W_max**2 / tau**2
    k_eps = domain(solve_rate(bound.rate_a, bound.rate_c, gap))
    threshold = domain(sigma2 / (n * s_min))
    # K(eps) = K_min exactly at gap = sigma2/(n S_min), and K(eps) decreases in gap
    assert is_zero(k_eps.subs(gap, threshold) - bound.min_iterations)
    assert sp.diff(k_eps, gap).is_negative


# ---- monotonicity and positivity -----------------------------------------------------------------

INCREASING = {
    "digital_sgd": (sigma2, L, Delta),
    "analog_sgd_companion": (sigma2, L, Delta, W_max),
    "analog_sgd": (sigma2, L, Delta, G_inf),
    "analog_sgd_sp": (sigma2, L, Delta, G_inf),
    "analog_sgd_ap": (sigma2, L, Delta, G_inf, D, L_s),
    "literature_sgd": (sigma2, L, Delta),
    "literature_delay_fixed": (sigma2, L, Delta, D),
    "literature_delay_arbitrary": (sigma2, L, Delta, D),
    "literature_async_sgd": (sigma2, L, Delta, M),
}


def _positive_g(expr):
    return expr.subs(G_inf, g_pos)


@pytest.mark.parametrize("name", list(REGISTRY))
def test_bound_increasing_in_problem_constants(name):
    bound = REGISTRY[name]
    for var in INCREASING[name]:
        target = g_pos if var is G_inf else var
        derivative = sp.factor(domain(sp.diff(_positive_g(bound.expr), target)))
        if var in (D, L_s):  # D = 0 is in the domain (no staleness); strict for D > 0
            derivative = derivative.subs(D, 1 + d)
        assert derivative.is_positive, (name, var)


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_bound_positive_on_its_domain(name):
    bound = REGISTRY[name]
    assert domain(bound.expr).is_positive
    assert domain(bound.inv_step_cap).is_positive
    assert domain(bound.rate_a).is_positive
    assert domain(bound.rate_c).is_nonnegative
    assert domain(bound.floor).is_nonnegative
    assert domain(bound.noise_step).is_positive


@pytest.mark.parametrize("name", list(REGISTRY))
def test_iterations_decreasing_in_eps(name):
    bound = REGISTRY[name]
    k_gap = solve_rate(bound.rate_a, bound.rate_c, gap)  # eps = floor + gap
    derivative = sp.diff(domain(k_gap), gap)
    if derivative.is_negative is None:  # Max of the AP cap: decide numerically
        assert _nonneg_numeric(-derivative.subs(s, 1))  # theta = s/(1+s) = 1/2
    else:
        assert derivative.is_negative


@pytest.mark.parametrize(
    "name", ["analog_sgd_ap", "literature_delay_fixed", "literature_delay_arbitrary"]
)
def test_iterations_increasing_in_delay(name):
    bound = REGISTRY[name]
    k_gap = domain(solve_rate(bound.rate_a, bound.rate_c, gap))
    derivative = sp.diff(k_gap, D).subs(D, d)
    decided = derivative.is_positive
    if decided is None:  # Max(L (1 + 2D), 8 sqrt2 L_s D): check on both branches and numerically
        for branch in sp.Max(L * (1 + 2 * D), 8 * sp.sqrt(2) * L_s * D).args:
            k_branch = k_gap.replace(sp.Max, lambda *args, br=branch: br)
            assert sp.diff(k_branch, D).subs(D, d).is_positive
        assert _nonneg_numeric(derivative.subs(s, 1))
    else:
        assert decided


def test_ap_eps1_coefficient_growth_in_delay():
    """c(D) = 2 Delta q_max^2/((1-theta) q_min^2) [max(L(1+2D), 8 sqrt2 L_s D) + 16 L_s^2 D^2/L]."""
    c = REGISTRY["analog_sgd_ap"].rate_c
    pref = 2 * Delta * q_max**2 / ((1 - theta) * q_min**2)
    explicit = pref * (sp.Max(L * (1 + 2 * D), 8 * sp.sqrt(2) * L_s * D) + 16 * L_s**2 * D**2 / L)
    assert is_zero(c - explicit)
    # oracle problems (L_s = L): the L_s cap binds for every D >= 1
    cap_gap = (8 * sp.sqrt(2) * L * D - L * (1 + 2 * D)).subs(D, 1 + d)
    assert sp.simplify(cap_gap).is_positive
