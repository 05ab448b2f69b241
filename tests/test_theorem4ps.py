"""Machine checks of Theorem 4'PS (docs/theory.md): the asynchronous pipeline, per-sample writes.

Symbolic (sympy; encodings as in ``tests/test_theorem4prime.py``: ``theta = s/(1 + s)``,
``q_max = q_min (1 + v)``, ``D = 1 + d``, ``b = 1 + k``): the registry entry is the bound rebuilt
from Steps 2-6 (the cap of Step 5 is Theorem 4''s), it is Corollary 3PS at ``D = 0`` and Theorem 4'
at ``b = 1``, at least Theorem 4' for every ``b``, and it implies the statement proposed in
``theory-turn3.md`` section 3 (smaller cap, larger last term). Property tests (hypothesis, exact
expectations over a two-point noise enumerated outcome by outcome, the writes' drift included):
Step 0's split of each write and its martingale part, Step 2's inner product, Step 3's second
moment, and Step 4's orthogonality of the writes' martingale differences across updates.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import sympy as sp
from _sympy_checks import is_zero, nonneg
from hypothesis import given, settings
from hypothesis import strategies as st

from theory import REGISTRY, ParameterError, ap_inv_step_cap, ap_kappa, bound_for, bounds_for
from theory.symbols import D, Delta, G_inf, K, L, L_s, alpha, b, n, q_max, q_min, sigma2, theta

NAME = "analog_sgd_ap_per_sample"

s = sp.Symbol("s", positive=True)  # theta = s/(1 + s)
v = sp.Symbol("v", nonnegative=True)  # q_max = q_min (1 + v)
d = sp.Symbol("d", nonnegative=True)  # D = 1 + d
k = sp.Symbol("k", nonnegative=True)  # b = 1 + k
ENC = {theta: s / (1 + s), q_max: q_min * (1 + v)}


def enc(expr, delay=True, batch=False):
    out = sp.sympify(expr).subs(ENC)
    if delay:
        out = out.subs(D, 1 + d)
    return out.subs(b, 1 + k) if batch else out


# ---- the registry -----------------------------------------------------------------------------

def test_registered_derived_per_sample_async():
    bound = REGISTRY[NAME]
    assert (bound.provenance, bound.proof, bound.mode, bound.algorithm, bound.write) == (
        "derived", "Theorem 4'PS", "async", "analog", "per-sample")
    assert [x.name for x in bounds_for("async", "analog", "per-sample")] == [NAME]
    assert bound_for("async", "analog", "per-sample").name == NAME
    # batch-mean callers are unchanged
    assert [x.name for x in bounds_for("async")] == ["analog_sgd_ap", "analog_sgd_ap_b"]
    with pytest.raises(ParameterError, match="^no derived bound .*write='per-sample'"):
        bounds_for("async", "mixed", "per-sample")
    assert is_zero(bound.batch - b)


# ---- Steps 2-6 assembled ----------------------------------------------------------------------

S_grad, S_x, S_e = sp.symbols("S_grad S_x S_e", nonnegative=True)


def step5_abc():
    """A, B, C of Step 5 (Theorem 4''s, at kappa_2 = (1 - theta)/4, kappa_3 <= kappa, lambda_1 =
    1/2): the coefficient of S_x is alpha (C - A alpha - B alpha^2)."""
    return (L * q_max**2 / 2, 2 * ap_kappa() * q_min * L_s**2 * D**2 * q_max**2,
            (1 - theta) / 4 * q_min)


def assembled(lams):
    """(coefficient of S_x, bound on S_grad/K) from Steps 1-4 with one sample's sigma^2 in Steps
    2-3 and Step 4's noise part D p^2 sigma^2/b (the writes' martingale differences)."""
    lam1, lam2, lam3 = lams
    c2, c3 = (1 - theta) / 4 * q_min, ap_kappa() * q_min
    step2 = (q_min / 2 * S_grad + c2 * S_x - c3 * S_e
             - K * G_inf**2 * sigma2 / (2 * theta * q_min))
    step3 = q_max**2 * (S_x + K * sigma2)
    step4 = L_s**2 * alpha**2 * (
        D**2 * q_max**2 * S_x / lam1 + K * D**2 * G_inf**2 * sigma2 / lam2
        + K * D * q_max**2 * sigma2 / (b * lam3))
    total = sp.expand((Delta - alpha * step2 + L * alpha**2 / 2 * step3).subs(S_e, step4))
    coef_grad, coef_x = total.coeff(S_grad), total.coeff(S_x)
    rest = total - coef_grad * S_grad - coef_x * S_x
    assert is_zero(coef_grad + alpha * q_min / 2)
    return -coef_x, rest / (alpha * q_min * K / 2)


def test_steps_assemble_into_the_registry_entry():
    # Step 6's optimal split for lambda = 1/2: l2 : l3 = sqrt X : sqrt Y, X = D^2 G^2, Y = D p^2/b
    x, y = G_inf * D, q_max * sp.sqrt(D / b)
    coef_x, bound = assembled((sp.Rational(1, 2), x / (2 * (x + y)), y / (2 * (x + y))))
    big_a, big_b, big_c = step5_abc()
    assert is_zero(coef_x - alpha * (big_c - big_a * alpha - big_b * alpha**2))
    assert is_zero(enc(bound - REGISTRY[NAME].expr))


def test_step5_cap_is_theorem_4prime_cap():
    big_a, big_b, big_c = step5_abc()
    root_part = ap_inv_step_cap() - big_a / big_c  # sqrt(B/C), compared squared
    assert is_zero(enc(root_part**2 - big_b / big_c))
    assert sp.simplify(enc(root_part)).is_positive
    assert is_zero(REGISTRY[NAME].inv_step_cap - REGISTRY["analog_sgd_ap"].inv_step_cap)


def test_variant_b_remark():
    """The remark's variant B: lambda = (1/2, 1/4, 1/4), the bias part charged to the floor."""
    coef_x, bound = assembled((sp.Rational(1, 2), sp.Rational(1, 4), sp.Rational(1, 4)))
    kappa = ap_kappa()
    bias = 8 * kappa * L_s**2 * alpha**2 * D**2 * G_inf**2 * sigma2
    floor = G_inf**2 * sigma2 / (theta * q_min**2)
    charged = theta * (1 - theta) * q_min**2 / q_max**2 * floor
    variant_b = (2 * Delta / (alpha * q_min * K) + L * alpha * q_max**2 * sigma2 / q_min
                 + floor + charged + 8 * kappa * L_s**2 * alpha**2 * D * q_max**2 * sigma2 / b)
    assert is_zero(enc(bound - bias + charged - variant_b))
    # under the cap (alpha = cap/(1 + w)) the bias part is at most the charged amount
    w = sp.Symbol("w", nonnegative=True)
    at_cap = {alpha: 1 / (ap_inv_step_cap() * (1 + w))}
    assert nonneg(enc((charged - bias).subs(at_cap)))


def test_rate_form_is_proposition_5a():
    bound = REGISTRY[NAME]
    big_p, big_q = 2 * Delta / q_min, L * q_max**2 * sigma2 / q_min
    big_r = 4 * ap_kappa() * L_s**2 * (q_max * sp.sqrt(D / b) + G_inf * D) ** 2 * sigma2
    assert is_zero(bound.expr - (big_p / (alpha * K) + big_q * alpha + big_r * alpha**2
                                 + bound.floor))
    assert is_zero(bound.rate_a - 2 * sp.sqrt(big_p * big_q))
    assert is_zero(bound.rate_c - (big_p * ap_inv_step_cap() + big_r * big_p / big_q))
    assert is_zero(bound.noise_step - sp.sqrt(big_p / (big_q * K)))


# ---- reductions and comparisons -----------------------------------------------------------------

FIELDS = ("expr", "inv_step_cap", "rate_a", "rate_c", "floor", "noise_step")


def test_zero_delay_is_corollary_3ps_at_n_equal_b():
    ps, cor = REGISTRY[NAME], REGISTRY["analog_sgd_per_sample"]
    for field in FIELDS:
        assert is_zero(getattr(ps, field).subs(D, 0) - getattr(cor, field).subs(n, b)), field


def test_one_sample_is_theorem_4prime_at_one_sample():
    ps, ap = REGISTRY[NAME], REGISTRY["analog_sgd_ap"]
    for field in (*FIELDS, "batch"):
        assert is_zero(getattr(ps, field).subs(b, 1) - getattr(ap, field).subs(b, 1)), field


def test_at_least_theorem_4prime_and_floor_b_times():
    ps, ap = REGISTRY[NAME], REGISTRY["analog_sgd_ap"]
    assert is_zero(ps.floor - b * ap.floor)
    # the O(alpha) term and the floor: b times; the staleness term: the bracket below, >= 0
    assert is_zero(ps.expr.coeff(alpha, 1) - b * ap.expr.coeff(alpha, 1))
    gap = (ps.expr - ap.expr).coeff(alpha, 2) / (4 * ap_kappa() * L_s**2 * sigma2)
    j, g = sp.Symbol("j", nonnegative=True), sp.Symbol("g", nonnegative=True)
    bracket = (q_max * sp.sqrt(D / b) + G_inf * D) ** 2 - (q_max * sp.sqrt(D) + G_inf * D) ** 2 / b
    assert is_zero(gap - bracket)
    assert nonneg(sp.expand(bracket.subs({b: (1 + j) ** 2, G_inf: g, D: 1 + d})))
    diff = sp.expand(ps.expr - ap.expr)
    assert is_zero(diff - diff.coeff(alpha, 1) * alpha - diff.coeff(alpha, 0)
                   - diff.coeff(alpha, 2) * alpha**2)
    assert is_zero(diff.coeff(alpha, 0) - (b - 1) * ap.floor)


def test_implies_the_statement_of_theory_turn3():
    """theory-turn3.md section 3: cap with sqrt(8 kappa (D^2 + 2 D)/(1 - theta)) on the delay
    branch, last term 8 kappa L_s^2 alpha^2 (D^2 G^2 + D p^2) sigma^2: a smaller cap and a larger
    bound, so it follows from the registered statement."""
    kappa = ap_kappa()
    inv_turn3 = (2 * L * q_max**2 / ((1 - theta) * q_min)
                 + L_s * q_max * sp.sqrt(8 * kappa * (D**2 + 2 * D) / (1 - theta)))
    # 1/alpha_turn3 >= 1/alpha_AP for D >= 1: compare the delay branches squared
    branch_ap = ap_inv_step_cap() - 2 * L * q_max**2 / ((1 - theta) * q_min)
    branch_turn3 = inv_turn3 - 2 * L * q_max**2 / ((1 - theta) * q_min)
    assert nonneg(enc(branch_turn3**2 - branch_ap**2))
    turn3 = (2 * Delta / (alpha * q_min * K) + L * alpha * q_max**2 * sigma2 / q_min
             + G_inf**2 * sigma2 / (theta * q_min**2)
             + 8 * kappa * L_s**2 * alpha**2 * (D**2 * G_inf**2 + D * q_max**2) * sigma2)
    gap = (turn3 - REGISTRY[NAME].expr).coeff(alpha, 2) / (4 * kappa * L_s**2 * sigma2)
    x, y = G_inf * D, q_max * sp.sqrt(D / b)  # gap = 2 x^2 + 2 b y^2 - (x + y)^2
    assert is_zero(gap - ((x - y) ** 2 + 2 * (b - 1) * y**2))  # >= 0 for b >= 1
    diff = sp.expand(turn3 - REGISTRY[NAME].expr)
    assert is_zero(diff - diff.coeff(alpha, 2) * alpha**2)  # only the alpha^2 terms differ
    # the ratio of the delay branches is the note's 1/sqrt(1 + 2/D)
    assert is_zero(enc(branch_ap**2 / branch_turn3**2 - 1 / (1 + 2 / D)))


# ---- Steps 0, 2, 3 by exact expectations over per-sample writes --------------------------------

def _write(v, h, tau):
    """The expected soft-bounds write U_V(h) = h + (V/tau)|h| (F = 1, G = V/tau)."""
    return h + (v / tau) * np.abs(h)


def _slope(v, x, tau):
    """The slope s of u_V at x (Lemma 0.1): q_-(v) = 1 + v/tau for x >= 0, q_+ = 1 - v/tau."""
    return np.where(x >= 0, 1 + v / tau, 1 - v / tau)


def _update(w0, x, noises, lr, tau):
    """One per-sample update from W_k = w0 with the signals x + nu_i. Per write i: the point V_{i-1}
    written at, the write Y_i, its conditional mean given F_{k,i-1} (over sample i's two-point
    noise +-|nu_i|), Step 0's parts s_i o x and G(V_{i-1}) o r_i, and the conditional
    E[||eta_i||^2 | F_{k,i-1}]; and the weights after the update."""
    count = len(noises)
    vv, parts = w0.copy(), []
    for nu in noises:
        y = _write(vv, x + nu, tau)
        scale = np.abs(nu)
        signals = [x + np.array(sg) * scale
                   for sg in itertools.product((-1.0, 1.0), repeat=len(x))]
        writes = np.array([_write(vv, g, tau) for g in signals])
        mean = writes.mean(axis=0)
        r = np.mean([np.abs(g) for g in signals], axis=0) - np.abs(x)
        cond_eta2 = float(np.mean(np.sum((writes - mean) ** 2, axis=1)))
        parts.append((vv.copy(), y, mean, _slope(vv, x, tau) * x, (vv / tau) * r, cond_eta2))
        vv = vv - (lr / count) * y
    return parts, vv


@st.composite
def ps_case(draw):
    dim, count = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    floats = st.floats(-0.6, 0.6)
    w0 = np.array([draw(floats) for _ in range(dim)])
    grad = np.array([draw(st.floats(-1, 1)) for _ in range(dim)])
    err = np.array([draw(st.floats(-0.5, 0.5)) for _ in range(dim)])
    scale = np.array([draw(st.floats(0.01, 1.0)) for _ in range(dim)])
    return w0, grad, err, scale, count, draw(st.floats(0.0, 0.2)), draw(st.floats(1.0, 3.0)), \
        draw(st.floats(0.05, 0.95))


@settings(max_examples=60, deadline=None)
@given(case=ps_case())
def test_steps_0_2_3_exact_expectations(case):
    w0, grad, err, scale, count, lr, tau, th = case
    x = grad + err  # x_k = grad f(W_k) + e_k, fixed given F_k (A4)
    dim = len(x)
    outcomes = list(itertools.product((-1.0, 1.0), repeat=dim * count))
    inner = second = zeta2 = eta2 = 0.0
    visited = []
    sigma = float(np.sqrt(scale @ scale))  # one sample's E||nu_i||^2
    for signs in outcomes:
        noises = np.array(signs).reshape(count, dim) * scale
        parts, _ = _update(w0, x, noises, lr, tau)
        ys = np.array([p[1] for p in parts])
        u_bar = ys.mean(axis=0)
        inner += grad @ u_bar
        second += u_bar @ u_bar
        etas = np.array([p[1] - p[2] for p in parts])
        zeta = etas.mean(axis=0)
        zeta2 += zeta @ zeta
        eta2 += np.sum(etas * etas) / count**2
        a_part = np.mean([p[3] for p in parts], axis=0)
        beta_part = np.mean([p[4] for p in parts], axis=0)
        vs = np.array([p[0] for p in parts])
        visited.append(vs)
        g_path, p_path = np.max(np.abs(vs)) / tau, 1 + np.max(np.abs(vs)) / tau
        # Step 0: mean of each write = slope o x + G o r; the split is exact; pathwise bounds
        for vv, _y, mean, ax, br, cond_eta2 in parts:
            assert np.allclose(mean, ax + br, atol=1e-12)
            # E[||eta_i||^2 | F_{k,i-1}] <= q_max(V_{i-1})^2 sigma^2 (Lemma 0.3 at V_{i-1})
            p_here = 1 + np.max(np.abs(vv)) / tau
            assert cond_eta2 <= p_here**2 * sigma**2 * (1 + 1e-12) + 1e-15
        assert np.allclose(u_bar, a_part + beta_part + zeta, atol=1e-12)
        assert np.all(np.abs(a_part) <= p_path * np.abs(x) + 1e-12)
        assert np.sqrt(beta_part @ beta_part) <= g_path * sigma + 1e-12
    m = len(outcomes)
    inner, second, zeta2, eta2 = inner / m, second / m, zeta2 / m, eta2 / m
    pts = np.concatenate(visited)
    g_inf = float(np.max(np.abs(pts))) / tau
    q, p = 1 - g_inf, 1 + g_inf
    assert q > 0
    # Step 0: the writes' martingale differences are orthogonal, E||zeta||^2 <= p^2 sigma^2/b
    assert zeta2 == pytest.approx(eta2, rel=1e-9, abs=1e-15)
    assert zeta2 <= p**2 * sigma**2 / count * (1 + 1e-9) + 1e-15
    # Step 2 with Lemma A (kappa_2 = (1 - theta)/4, c_3 = kappa q, r = p/q) on the visited constants
    kappa = (1 + th**2) / (2 * (1 - th)) + (p / q - 1) / 4
    lower = (q / 2 * grad @ grad + (1 - th) / 4 * q * x @ x - kappa * q * err @ err
             - g_inf**2 * sigma**2 / (2 * th * q))
    assert inner >= lower - 1e-12
    # Step 3: E||U_bar||^2 <= p^2 (||x||^2 + sigma^2)
    assert second <= p**2 * (x @ x + sigma**2) * (1 + 1e-12)


def _eta_second_moments(w0, tau, lr, count, scale, updates):
    """Exact E||sum_{t,i} eta_{t,i}||^2 and sum E||eta_{t,i}||^2 over ``updates`` per-sample updates
    of a 1-d quadratic f = (w - 0.3)^2/2 whose signal is read one update late (D = 1: x_t =
    grad f(W_{t-1}) = grad f(W_t) + e_t, e_t F_t-measurable), two-point noise +-scale."""
    total = 0.0
    summed = 0.0
    draws = list(itertools.product((-1.0, 1.0), repeat=updates * count))
    for signs in draws:
        w_prev, w = w0.copy(), w0.copy()
        acc = np.zeros_like(w0)
        it = iter(signs)
        for _ in range(updates):
            x = w_prev - 0.3  # gradient at the stale point W_{t-1}
            noises = [np.array([next(it)]) * scale for _ in range(count)]
            parts, w_next = _update(w, x, noises, lr, tau)
            for _vv, y, mean, _ax, _br, _c in parts:
                eta = y - mean
                acc += eta
                summed += eta @ eta
            w_prev, w = w, w_next
        total += acc @ acc
    return total / len(draws), summed / len(draws)


@settings(max_examples=30, deadline=None)
@given(w0=st.floats(-0.5, 0.5), tau=st.floats(1.0, 3.0), lr=st.floats(0.05, 0.5),
       count=st.integers(1, 3), scale=st.floats(0.05, 1.0))
def test_step_4_writes_are_martingale_differences_across_updates(w0, tau, lr, count, scale):
    """Step 4's noise part: over consecutive updates (stale signals, drifting writes), the second
    moment of the sum of the eta_{t,i} is the sum of their second moments (exactly)."""
    total, summed = _eta_second_moments(np.array([w0]), tau, lr, count, scale, updates=3)
    assert total == pytest.approx(summed, rel=1e-9, abs=1e-14)


def test_step_4_fails_without_the_conditional_mean():
    """The orthogonality needs the conditional mean of the write (slope included): with the mean
    at W_k's slope in its place the cross terms do not vanish (a check that the test can fail)."""
    w0, tau, lr, count, scale = np.array([0.5]), 1.0, 0.5, 3, np.array([1.0])
    x = np.array([0.01])
    outcomes = list(itertools.product((-1.0, 1.0), repeat=count))
    total = summed = 0.0
    for signs in outcomes:
        noises = [np.array([sg]) * scale for sg in signs]
        parts, _ = _update(w0, x, noises, lr, tau)
        base = np.mean([_write(w0, x + np.array([sg]) * scale, tau) for sg in (-1.0, 1.0)],
                       axis=0)  # the mean of the first write, used for every write
        etas = [y - base for _vv, y, _mean, _ax, _br, _c in parts]
        total += sum(etas) @ sum(etas)
        summed += sum(e @ e for e in etas)
    assert abs(total - summed) / len(outcomes) > 1e-3


# ---- simulation: the per-sample entry holds where the batch-mean Theorem 4' does not ------------

def test_per_sample_run_breaks_theorem_4prime_and_keeps_4ps():
    """An asynchronous per-sample run (M = 2, b = 32, tau = 0.5, sigma^2 = 4, K = 2000, 8 seeds) at
    half the cap: Theorem 4'PS holds; Theorem 4' (batch-mean writes), at the same constants and
    its best theta, is below the simulated average (its floor is 1/b of the per-sample one)."""
    from simulate.verification.checks import check_bound
    from simulate.verification.suites import Case
    from theory import compile_expr

    case = Case(NAME, 0.5, steps=2000, seeds=8, stages=2, micro_batch_size=32, sigma2=4.0,
                tau=0.5)
    config = case.config()
    check = check_bound(NAME, config, z=4.0)
    assert check.passed and check.ratio > 1
    batch_mean = compile_expr(REGISTRY["analog_sgd_ap"].expr, (K, alpha))
    best = min(float(batch_mean(config.steps, config.lr, {**check.constants, "theta": th}))
               for th in np.linspace(0.01, 0.99, 99))
    assert best < check.empirical - 4 * check.stderr
