"""Symbolic checks of the theorem registry and of the proofs in docs/theory.md.

Positivity is proved with sympy's assumptions. ``theta in (0, 1)`` is encoded as ``s/(1+s)`` with
``s > 0``; ``q_max >= q_min`` as ``q_min (1 + v)`` with ``v >= 0``; ``D >= 1`` as ``1 + d`` with
``d >= 0``; a step ``alpha <= cap`` as ``cap/(1 + w)``. The proof steps of Theorem 4' and 4'B are
checked in ``tests/test_theorem4prime.py``.
Where sympy cannot decide, a hypothesis check at drawn points stands in.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from _sympy_checks import is_zero, nonneg
from hypothesis import given, settings
from hypothesis import strategies as st

from theory import (
    MIXED_ENTRIES,
    PROVENANCES,
    REGISTRY,
    Bound,
    ParameterError,
    ap_inv_step_cap,
    ap_kappa,
    ap_root,
    bound_for,
    bounds_for,
    get_bound,
    iterations_expr,
    local_sgd,
    solve_rate,
)
from theory.symbols import (
    B,
    D,
    Delta,
    G2_bar,
    G2_iter,
    G_inf,
    K,
    L,
    L_s,
    M,
    T,
    W_max,
    alpha,
    b,
    beta,
    eps,
    n,
    p2_bar,
    q_max,
    q_min,
    rho,
    sigma2,
    tau,
    theta,
)

DOCS = Path(__file__).resolve().parents[1] / "docs" / "theory.md"

s = sp.Symbol("s", positive=True)  # theta = s/(1+s) in (0, 1)
w = sp.Symbol("w", nonnegative=True)
z = sp.Symbol("z", nonnegative=True)
d = sp.Symbol("d", nonnegative=True)
u = sp.Symbol("u", positive=True)
v = sp.Symbol("v", nonnegative=True)  # q_max = q_min (1 + v)
g_pos = sp.Symbol("g_pos", positive=True)  # a strictly positive G_inf
gap = sp.Symbol("gap", positive=True)  # eps - floor
a_ = sp.Symbol("a", positive=True)
c_pos = sp.Symbol("c_pos", positive=True)
p_extra = sp.Symbol("p_extra", nonnegative=True)  # local-SGD period P = 1 + p_extra
c_nn = sp.Symbol("c", nonnegative=True)
THETA01 = {theta: s / (1 + s)}
k_root = sp.Symbol("k_root", positive=True)  # stands for sqrt(8 kappa/(1 - theta)) of Theorem 4'
DERIVED_ANALOG = ("analog_sgd", "analog_sgd_sp", "analog_sgd_ap", "analog_sgd_ap_b",
                  "analog_sgd_per_sample", "analog_sgd_sp_per_sample", "analog_sgd_ap_per_sample",
                  "analog_sgd_biased", "analog_sgd_biased_sharp")
ASYNC_ANALOG = ("analog_sgd_ap", "analog_sgd_ap_b")
FIELDS = ("expr", "inv_step_cap", "rate_a", "rate_c", "floor", "best_step", "noise_step")





def domain(expr):
    """Substitute the domain encodings (theta in (0,1), W_max < tau, q_max >= q_min, P >= 1)."""
    return (sp.sympify(expr).subs(THETA01).subs(tau, W_max + u).subs(q_max, q_min * (1 + v))
            .subs(local_sgd.P, 1 + p_extra))


def rate(bound: Bound, k=K):
    return bound.rate_a / sp.sqrt(k) + bound.rate_c / k + bound.floor


def delay_cases(bound: Bound) -> list:
    """The substitutions that split the domain of ``D``: ``[{}]`` or ``D = 0`` and ``D = 1 + d``.

    ``min(D, 1)`` in the asynchronous entries is 0 or 1 on these two cases, so sympy can decide.
    """
    if D not in bound.expr.free_symbols | bound.inv_step_cap.free_symbols:
        return [{}]
    return [{D: 0}, {D: 1 + d}]


def opaque_root(expr):
    """Replace ``sqrt(8 kappa/(1 - theta))`` by a positive symbol (a claim for every value)."""
    return sp.sympify(expr).subs(ap_root(), k_root)


# ---- registry structure --------------------------------------------------------------------------

#: Theorem LF's rows, in the registry's order (one per derived row with a floor)
LOCAL_FLOOR_ROWS = [f"{name}_local" for name in (
    "analog_sgd", "analog_sgd_sp", "analog_sgd_ap", "analog_sgd_ap_b", "analog_sgd_per_sample",
    "analog_sgd_sp_per_sample", "analog_sgd_ap_per_sample", "tiki_taka_reset",
    "tiki_taka_reset_sp", "tiki_taka_reset_ap", "tiki_taka_reset_ap_b",
    "tiki_taka_reset_per_sample", "tiki_taka_reset_sp_per_sample",
    "tiki_taka_reset_ap_per_sample", "tiki_taka_reset_ap_b_per_sample", "analog_sgd_mixed",
    "analog_sgd_sp_mixed", "analog_sgd_ap_mixed", "analog_sgd_biased", "analog_sgd_biased_sharp",
)]


def test_registry_names_and_order():
    assert list(REGISTRY) == [
        "digital_sgd", "analog_sgd_companion", "analog_sgd", "analog_sgd_sp", "analog_sgd_ap",
        "analog_sgd_ap_b", "analog_sgd_per_sample", "analog_sgd_sp_per_sample",
        "analog_sgd_ap_per_sample", "tiki_taka_companion", "tiki_taka_sp", "tiki_taka_reset",
        "tiki_taka_reset_sp",
        "tiki_taka_reset_ap", "tiki_taka_reset_ap_b", "tiki_taka_reset_per_sample",
        "tiki_taka_reset_sp_per_sample", "tiki_taka_reset_ap_per_sample",
        "tiki_taka_reset_ap_b_per_sample", "analog_sgd_mixed", "analog_sgd_sp_mixed",
        "analog_sgd_ap_mixed", "analog_sgd_biased", "analog_sgd_biased_sharp",
        *LOCAL_FLOOR_ROWS, "literature_sgd",
        "literature_delay_fixed", "literature_delay_arbitrary", "literature_async_sgd", "local_sgd",
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
        "analog_sgd_ap_b": (b, "async"), "analog_sgd_per_sample": (n, "none"),
        "analog_sgd_sp_per_sample": (B * b, "sync"), "analog_sgd_ap_per_sample": (b, "async"),
        "analog_sgd_biased": (n, "none"), "analog_sgd_biased_sharp": (n, "none"),
    }
    for name, (batch, mode) in expected.items():
        assert is_zero(REGISTRY[name].batch - batch)
        assert REGISTRY[name].mode == mode


def test_derived_entries_name_a_heading_of_docs():
    headings = re.findall(r"^## (.+)$", DOCS.read_text(), flags=re.MULTILINE)
    derived = [bd for bd in REGISTRY.values() if bd.provenance == "derived"]
    assert {bd.name for bd in derived} == {"digital_sgd", *DERIVED_ANALOG, *MIXED_ENTRIES,
                                           "tiki_taka_reset", "tiki_taka_reset_sp",
                                           "tiki_taka_reset_ap", "tiki_taka_reset_ap_b",
                                           *(f"{name}_per_sample" for name in (
                                               "tiki_taka_reset", "tiki_taka_reset_sp",
                                               "tiki_taka_reset_ap", "tiki_taka_reset_ap_b")),
                                           *LOCAL_FLOOR_ROWS}
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
    with pytest.raises(ParameterError, match="^gradient='skewed' is unknown"):
        Bound(**{**kwargs, "gradient": "skewed"})


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
    assert bound_for("async").proof == "Theorem 4'"
    assert [bd.name for bd in bounds_for("async")] == list(ASYNC_ANALOG)
    for bound in REGISTRY.values():
        if bound.provenance == "derived":
            found = bounds_for(bound.mode, bound.algorithm, bound.write, bound.gradient)
            # Theorem LF's rows need a measured G2_iter: never a guarantee of the planner
            assert (bound in found) == (bound.floor_kind == "worst-case"), bound.name
    # the biased-gradient entry is no guarantee of the planner (it needs a measured beta)
    assert [bd.name for bd in bounds_for("none")] == ["analog_sgd"]
    assert [bd.name for bd in bounds_for("none", gradient="biased")] == [
        "analog_sgd_biased", "analog_sgd_biased_sharp"]
    with pytest.raises(ParameterError, match="^no derived bound for gradient='biased'"):
        bounds_for("sync", gradient="biased")
    with pytest.raises(ParameterError, match="^gradient='skewed' is unknown"):
        bounds_for("none", gradient="skewed")
    with pytest.raises(ParameterError, match="valid pairs: analog/async"):
        bound_for("sync", "digital")


# ---- reductions (theory-spec identities) ---------------------------------------------------------

@pytest.mark.parametrize("name", ASYNC_ANALOG)
def test_ap_at_zero_delay_equals_sp_at_one_micro_batch(name):
    ap, sp_ = REGISTRY[name], REGISTRY["analog_sgd_sp"]
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
    sp_ = REGISTRY["analog_sgd_sp"]
    for name in ASYNC_ANALOG:
        assert is_zero(REGISTRY[name].rate_a - sp_.rate_a.subs(B, 1)), name
    assert is_zero(REGISTRY["analog_sgd_ap"].floor - sp_.floor.subs(B, 1))
    # variant B pays at most theta (1 - theta)/r^2 <= 1/4 of the floor for D >= 1
    ratio = sp.simplify(REGISTRY["analog_sgd_ap_b"].floor / sp_.floor.subs(B, 1))
    assert is_zero(ratio.subs(D, 0) - 1)
    assert is_zero(ratio.subs(D, 1 + d) - 1 - theta * (1 - theta) * q_min**2 / q_max**2)
    # 1/4 - s/((1+s)^2 (1+v)^2) = [(1+s)^2 ((1+v)^2 - 1) + (1-s)^2] / (4 (1+s)^2 (1+v)^2)
    slack = domain(sp.Rational(5, 4) - ratio.subs(D, 1 + d))
    sos = ((1 + s) ** 2 * (v**2 + 2 * v) + (1 - s) ** 2) / (4 * (1 + s) ** 2 * (1 + v) ** 2)
    assert is_zero(slack - sos) and sos.is_nonnegative


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


@pytest.mark.parametrize("name", ["digital_sgd", *DERIVED_ANALOG, *MIXED_ENTRIES])
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
    for case in delay_cases(bound):
        def on(expr, case=case):
            return domain(opaque_root(expr).subs(case))

        # case 1: alpha = noise step (<= cap)
        rem = sp.factor(sp.simplify(on(rate(bound) - bound.expr.subs(alpha, bound.noise_step))))
        assert rem.is_nonnegative, (case, rem)
        # case 2: alpha = cap (<= noise step): K = K*/(1+z)^2, where the two steps meet at K*
        cap = 1 / bound.inv_step_cap
        k_small = K * (bound.noise_step / cap) ** 2 / (1 + z) ** 2
        rem = rate(bound) - bound.expr.subs(alpha, cap)
        rem = sp.factor(sp.simplify(on(rem.subs(K, k_small))))
        assert rem.is_nonnegative, (case, rem)


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
        D: draw(st.integers(0, 15)), tau: 1.0, W_max: wmax, beta: draw(st.floats(0, 10)),
        # Theorem 2M's noise-weighted sums (drawn after the others: their draws are unchanged)
        p2_bar: qmin**2 * (1 + draw(st.floats(0.0, 15.0))), G2_bar: draw(st.floats(0, 1)),
        local_sgd.R: draw(st.integers(1, 16)), local_sgd.P: draw(st.integers(1, 16)),
        local_sgd.nu: draw(st.floats(0, 1)),
        # Corollary TT0's transfer period and rate (drawn last: the other draws are unchanged)
        T: draw(st.integers(1, 64)), rho: draw(st.floats(1e-2, 1e2)),
        # Theorem LF's iterate average (drawn last: the other draws are unchanged)
        G2_iter: draw(st.floats(0, 1)),
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


# ---- Theorem 2: the proof arithmetic (Theorem 4' and 4'B: tests/test_theorem4prime.py) ------

def test_theorem2_step5_coefficient():
    th = s / (1 + s)
    step = (1 - th) * q_min / (L * q_max**2) / (1 + w)  # any alpha <= cap
    bracket = q_min * (1 - th / 2) - L * step * q_max**2 / 2
    assert nonneg(bracket - q_min / 2)


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
    "analog_sgd_ap_b": (sigma2, L, Delta, G_inf, D, L_s),
    "analog_sgd_per_sample": (sigma2, L, Delta, G_inf),
    "analog_sgd_sp_per_sample": (sigma2, L, Delta, G_inf),
    "analog_sgd_ap_per_sample": (sigma2, L, Delta, G_inf, D, L_s),
    "tiki_taka_companion": (sigma2, L, Delta),
    "tiki_taka_sp": (sigma2, L, Delta),
    "tiki_taka_reset": (sigma2, L, Delta, G_inf),
    "tiki_taka_reset_sp": (sigma2, L, Delta, G_inf),
    "tiki_taka_reset_ap": (sigma2, L, Delta, G_inf, L_s),
    "tiki_taka_reset_ap_b": (sigma2, L, Delta, G_inf, L_s),
    "tiki_taka_reset_per_sample": (sigma2, L, Delta, G_inf),
    "tiki_taka_reset_sp_per_sample": (sigma2, L, Delta, G_inf),
    "tiki_taka_reset_ap_per_sample": (sigma2, L, Delta, G_inf, L_s),
    "tiki_taka_reset_ap_b_per_sample": (sigma2, L, Delta, G_inf, L_s),
    "analog_sgd_mixed": (sigma2, L, Delta, p2_bar),
    "analog_sgd_sp_mixed": (sigma2, L, Delta, p2_bar),
    "analog_sgd_ap_mixed": (sigma2, L, Delta, p2_bar, D, L_s),
    "analog_sgd_biased": (sigma2, L, Delta, G_inf, beta),
    # beta: 4 kappa beta, zero at beta = 0 (no cross term); tests/test_biased_sharp.py
    "analog_sgd_biased_sharp": (sigma2, L, Delta, G_inf),
    "literature_sgd": (sigma2, L, Delta),
    "literature_delay_fixed": (sigma2, L, Delta, D),
    "literature_delay_arbitrary": (sigma2, L, Delta, D),
    "literature_async_sgd": (sigma2, L, Delta, M),
    "local_sgd": (sigma2, L, Delta, G_inf, local_sgd.nu),
}
# Theorem LF: each local row increases in what its worst-case row does, G2_iter for G_inf
INCREASING |= {
    name: tuple(G2_iter if var is G_inf else var for var in INCREASING[name.removesuffix("_local")])
    + ((G2_iter,) if G_inf not in INCREASING[name.removesuffix("_local")] else ())
    for name in LOCAL_FLOOR_ROWS
}


def _positive_g(expr):
    return expr.subs({G_inf: g_pos, G2_iter: g_pos**2})


@pytest.mark.parametrize("name", list(REGISTRY))
def test_bound_increasing_in_problem_constants(name):
    bound = REGISTRY[name]
    for var in INCREASING[name]:
        target = g_pos if var in (G_inf, G2_iter) else var
        expr = _positive_g(bound.expr)
        if var is D and delay_cases(bound) != [{}]:
            # min(D, 1): the step D = 0 -> 1, then the derivative in d on D = 1 + d
            assert sp.factor(domain(expr.subs(D, 1) - expr.subs(D, 0))).is_positive, name
            expr, target = expr.subs(D, 1 + d), d
        derivative = sp.factor(domain(sp.diff(expr, target)))
        if var in (D, L_s):  # D = 0 is in the domain (no staleness); strict for D > 0
            derivative = derivative.subs(D, 1 + d)
        assert derivative.is_positive, (name, var)


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_bound_positive_on_its_domain(name):
    bound = REGISTRY[name]
    assert domain(bound.expr).is_positive
    assert domain(bound.inv_step_cap).is_positive
    if name == "local_sgd":  # rate form at the step cap: no 1/sqrt(K) term (theory.local_sgd)
        assert bound.rate_a == 0
    else:
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
    "name", [*ASYNC_ANALOG, "analog_sgd_ap_per_sample", "literature_delay_fixed",
             "literature_delay_arbitrary"]
)
def test_iterations_increasing_in_delay(name):
    bound = REGISTRY[name]
    k_gap = domain(solve_rate(bound.rate_a, bound.rate_c, gap))
    if delay_cases(bound) == [{}] or bound.provenance == "literature":
        assert sp.diff(k_gap, D).subs(D, d).is_positive
        return
    # min(D, 1): K grows from D = 0 to D = 1 (c grows, a unchanged; floor grows for B), then in d
    # on D = 1 + d. K(eps) increases in c and in the floor, so compare those.
    c0, c1 = (domain(bound.rate_c.subs(D, x)) for x in (0, 1))
    assert sp.factor(sp.simplify(c1 - c0)).is_positive
    f0, f1 = (domain(bound.floor.subs(D, x)) for x in (0, 1))
    assert sp.factor(sp.simplify(f1 - f0)).is_nonnegative
    assert sp.diff(k_gap.subs(D, 1 + d), d).is_positive


def test_ap_eps1_coefficient_growth_in_delay():
    r"""c(D) of Theorem 4' and 4'B (Proposition 5, the c(D) paragraph), for D >= 1.

    4': 4 Delta L r^2/(1-theta) + 2 Delta L_s r D sqrt(8 kappa/(1-theta))
        + 8 kappa (L_s^2 Delta/L)(D + 2 (G/p) D^{3/2} + (G/p)^2 D^2);
    4'B: the same first two terms + 16 kappa L_s^2 Delta D/L.
    """
    kappa, r = ap_kappa(), q_max / q_min
    g = G_inf / q_max
    root = ap_root()  # = sqrt(8 kappa/(1 - theta)) (tests/test_theorem4prime.py)
    lead = 4 * Delta * L * r**2 / (1 - theta) + 2 * Delta * L_s * r * D * root
    window = D + 2 * g * D**sp.Rational(3, 2) + g**2 * D**2
    explicit = lead + 8 * kappa * L_s**2 * Delta / L * window
    assert is_zero((REGISTRY["analog_sgd_ap"].rate_c - explicit).subs(D, 1 + d))
    explicit_b = lead + 16 * kappa * L_s**2 * Delta * D / L
    assert is_zero((REGISTRY["analog_sgd_ap_b"].rate_c - explicit_b).subs(D, 1 + d))
    # at G_inf = 0 4' is linear in D and B pays twice its last term (lambda_3 = 1/4, not 1/2)
    diff_c = REGISTRY["analog_sgd_ap_b"].rate_c - REGISTRY["analog_sgd_ap"].rate_c
    assert is_zero(diff_c.subs({G_inf: 0, D: 1 + d}) - 8 * kappa * L_s**2 * Delta * (1 + d) / L)
    assert sp.diff(explicit.subs(D, 1 + d), d, 2).subs(G_inf, 0) == 0
    # the cap is the one stored for both entries
    for name in ASYNC_ANALOG:
        assert is_zero(REGISTRY[name].inv_step_cap - ap_inv_step_cap())


def test_get_bound_builds_only_its_entry_until_the_registry_is_asked_for():
    """In a fresh interpreter: ``names`` builds nothing, ``get_bound`` and ``bounds_for`` build the
    entries they return, and the registry built afterwards holds those same objects."""
    import json
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    code = (
        "import json\n"
        "from theory.theorems import entries as e\n"
        "derived = e.names('derived')\n"
        "built_by_names = e._entry.cache_info().currsize\n"
        "one = e.get_bound('analog_sgd_sp')\n"
        "found = e.bounds_for('async')\n"
        "built = e._entry.cache_info().currsize\n"
        "full = e.registry()\n"
        "print(json.dumps({'names': built_by_names, 'built': built, 'whole': len(full),\n"
        "    'same': full['analog_sgd_sp'] is one and all(full[b.name] is b for b in found),\n"
        "    'derived': list(derived) == [k for k, b in full.items()\n"
        "                                 if b.provenance == 'derived'],\n"
        "    'all': list(e.names()) == list(full), 'found': [b.name for b in found]}))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(root), *filter(None, [os.environ.get("PYTHONPATH")])]))
    done = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["names"] == 0 and out["built"] == 1 + len(out["found"]) < out["whole"]
    assert out["same"] and out["derived"] and out["all"]
    assert out["found"] == [b.name for b in bounds_for("async")]
