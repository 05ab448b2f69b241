"""Machine checks of the proof of Theorem 4' and Theorem 4'B (docs/theory.md), step by step.

Encodings (so that sympy decides signs instead of answering None): ``theta = s/(1 + s)`` with
``s > 0``; ``q_max = q_min (1 + v)`` (``r = 1 + v``) with ``v >= 0``; ``D = 1 + d`` with ``d >= 0``;
``kappa_2 = ((1 - theta)/2) t/(1 + t)`` with ``t > 0`` (so ``0 < kappa_2 < (1 - theta)/2``); a step
``alpha <= cap`` as ``cap/(1 + w)`` with ``w >= 0``. Where a claim holds for every value of a
subexpression, that subexpression is replaced by a positive symbol (a stronger claim). The
probabilistic steps (Lemma 0, Step 0, the window counting and the martingale identity) are checked
by hypothesis property tests and a Monte Carlo test with a statistical margin.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from _sympy_checks import is_zero, nonneg
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bench.theorem4_constants import COMMON, DEVICES, constants
from theory import (
    REGISTRY,
    ap_b_floor_factor,
    ap_general_parts,
    ap_inv_step_cap,
    ap_kappa,
    ap_kappa_3,
    ap_root,
    compile_expr,
)
from theory.symbols import (
    B,
    D,
    Delta,
    G_inf,
    K,
    L,
    L_s,
    alpha,
    b,
    q_max,
    q_min,
    sigma2,
    theta,
)
from theory.symbols import kappa_2 as kappa_2_sym
from theory.symbols import lam as lam_sym

s = sp.Symbol("s", positive=True)  # theta = s/(1 + s)
v = sp.Symbol("v", nonnegative=True)  # q_max = q_min (1 + v)
d = sp.Symbol("d", nonnegative=True)  # D = 1 + d
t = sp.Symbol("t", positive=True)  # kappa_2 = ((1 - theta)/2) t/(1 + t)
w = sp.Symbol("w", nonnegative=True)  # alpha = cap/(1 + w)
kappa_2, kappa_3, lam = sp.symbols("kappa_2 kappa_3 lambda", positive=True)
a_, e_, x_ = sp.symbols("a e x", real=True)
slope = sp.Symbol("s_slope", positive=True)

TH = s / (1 + s)
ENC = {theta: TH, q_max: q_min * (1 + v)}


def registry_kappa(qmin: float, qmax: float, th: float) -> float:
    """The registry's kappa (:func:`theory.theorems.ap_kappa`) at a point."""
    return float(compile_expr(ap_kappa())({"q_min": qmin, "q_max": qmax, "theta": th}))


def enc(expr, delay=True):
    out = sp.sympify(expr).subs(ENC)
    return out.subs(D, 1 + d) if delay else out





# ---- Step 2: Lemma A --------------------------------------------------------------------------

def lemma_a_form(s_, c1, c2, c3):
    """s a x - c1 a^2 - c2 x^2 + c3 e^2 with x = a + e, as a quadratic form in (a, e)."""
    return s_ * a_ * (a_ + e_) - c1 * a_**2 - c2 * (a_ + e_) ** 2 + c3 * e_**2


def form_coefficients(s_, c1, c2, c3):
    """Coefficients of a^2, a e, e^2 in :func:`lemma_a_form` (read off with ``sympy.Poly``)."""
    poly = sp.Poly(sp.expand(lemma_a_form(s_, c1, c2, c3)), a_, e_)
    return tuple(poly.coeff_monomial(m) for m in (a_**2, a_ * e_, e_**2))


def form_terms(s_, c1, c2, c3):
    """(diagonal a^2, diagonal e^2, discriminant 4 AC - B^2) of :func:`lemma_a_form`, from the
    closed forms that ``test_lemma_a_form_is_the_stated_quadratic_form`` checks against
    :func:`form_coefficients` (expanding the encoded constants directly takes a minute)."""
    caa, cae, cee = s_ - c1 - c2, s_ - 2 * c2, c3 - c2
    return caa, cee, 4 * caa * cee - cae**2


def rational_zero(expr) -> bool:
    return sp.cancel(sp.together(expr)) == 0


def branches(th, r, k2):
    """The two branches of kappa_3 - kappa_2 (times 4): at s = q and at s = p."""
    return (
        (1 - 2 * k2) ** 2 / ((1 - th) / 2 - k2),
        (r - 2 * k2) ** 2 / (r - (1 + th) / 2 - k2),
    )


def test_lemma_a_form_is_the_stated_quadratic_form():
    c1, c2, c3 = sp.symbols("c1 c2 c3", positive=True)
    caa, cae, cee = form_coefficients(slope, c1, c2, c3)
    closed = form_terms(slope, c1, c2, c3)
    assert is_zero(caa - closed[0]) and is_zero(cee - closed[1])
    assert is_zero(4 * caa * cee - cae**2 - closed[2])
    assert is_zero(closed[2] - (4 * (slope - c1 - c2) * (c3 - c2) - (slope - 2 * c2) ** 2))
    # affine in s: the form at s = (1 - mu) q + mu p is the convex combination of its endpoints
    mu = sp.Symbol("mu", nonnegative=True)
    at = lemma_a_form((1 - mu) * q_min + mu * q_max, c1, c2, c3)
    assert is_zero(at - (1 - mu) * lemma_a_form(q_min, c1, c2, c3)
                   - mu * lemma_a_form(q_max, c1, c2, c3))


def test_lemma_a_general_kappa_3_closes_both_discriminants():
    """kappa_3 = kappa_2 + max(branches)/4: each branch makes its discriminant exactly 0, the
    diagonals are positive, and the discriminant increases in c_3, so the max makes both >= 0."""
    stored = ap_kappa_3()  # the general form's constant is this max
    assert stored == kappa_2_sym + sp.Max(*branches(theta, q_max / q_min, kappa_2_sym)) / 4
    r = 1 + v
    k2 = (1 - TH) / 2 * t / (1 + t)
    c1, c2 = q_min * (1 + TH) / 2, k2 * q_min
    for endpoint, branch in zip((q_min, q_min * r), branches(TH, r, k2), strict=True):
        c3 = (k2 + branch / 4) * q_min
        caa, cee, disc = form_terms(endpoint, c1, c2, c3)
        assert sp.factor(sp.together(caa)).is_positive
        assert nonneg(cee)
        assert rational_zero(disc)
        c3_free = sp.Symbol("c3_free", positive=True)
        slope_c3 = sp.diff(form_terms(endpoint, c1, c2, c3_free)[2], c3_free)
        assert rational_zero(slope_c3 - 4 * caa)


def test_lemma_a_registered_instance_both_discriminants():
    """kappa_2 = (1 - theta)/4, kappa_3 = kappa (the registry's): both conditions hold."""
    k2 = (1 - TH) / 4
    c1, c2, c3 = q_min * (1 + TH) / 2, k2 * q_min, enc(ap_kappa()) * q_min
    for endpoint in (q_min, q_min * (1 + v)):
        caa, cee, disc = form_terms(endpoint, c1, c2, c3)
        assert sp.factor(sp.simplify(caa)).is_positive
        assert nonneg(cee)
        assert nonneg(disc), endpoint


def test_kappa_3_at_most_kappa():
    """kappa_3 <= kappa_2 + (r - 1)/4 + (1 - 2 kappa_2)^2/(4((1 - theta)/2 - kappa_2)), which is
    kappa at kappa_2 = (1 - theta)/4; the key identity is
    (t + a')(t + d'^2/a') - (t + d')^2 = t (d' - a')^2/a'."""
    tt, ap_, dp = sp.symbols("t_ a_p d_p", positive=True)
    assert is_zero((tt + ap_) * (tt + dp**2 / ap_) - (tt + dp) ** 2 - tt * (dp - ap_) ** 2 / ap_)
    r = 1 + v
    k2 = (1 - TH) / 2 * t / (1 + t)
    first, second = branches(TH, r, k2)
    upper = v + first  # 4 (kappa_3 - kappa_2) <= r - 1 + first
    assert nonneg(sp.simplify(upper - first))
    assert nonneg(sp.simplify(upper - second))
    # the substitution t = r - 1, a' = (1 - theta)/2 - kappa_2, d' = 1 - 2 kappa_2 is that identity
    a_prime, d_prime = (1 - TH) / 2 - k2, 1 - 2 * k2
    assert is_zero(upper - second - v * (d_prime - a_prime) ** 2 / (a_prime * (v + a_prime)))
    # at kappa_2 = (1 - theta)/4 the upper bound is the registry's kappa
    k2_rec = (1 - TH) / 4
    kappa_upper = k2_rec + (v + branches(TH, r, k2_rec)[0]) / 4
    assert is_zero(kappa_upper - enc(ap_kappa(), delay=False))


@st.composite
def lemma_a_points(draw):
    qmin = draw(st.floats(0.05, 2.0))
    r = draw(st.one_of(st.floats(1.0, 5.0), st.floats(5.0, 200.0)))  # kappa's slack shrinks in r
    th = draw(st.floats(0.01, 0.99))
    k2 = (1 - th) / 2 * draw(st.floats(0.01, 0.99))
    mu = draw(st.floats(0.0, 1.0))
    a = draw(st.floats(-1e3, 1e3))
    e = draw(st.floats(-1e3, 1e3))
    recommended = draw(st.booleans())
    return qmin, r, th, k2, mu, a, e, recommended


@example(point=(1.0, 200.0, 0.5, 0.125, 1.0, 1.0, 1.0, True))  # s = p at a large r: least slack
@example(point=(0.3, 1.0, 0.99, 0.004, 0.0, 1.0, -1.0, True))  # s = q = p, theta near 1
@given(point=lemma_a_points())
def test_lemma_a_property_over_slopes_and_reals(point):
    """s a (a + e) >= c1 a^2 + c2 (a + e)^2 - c3 e^2 for s in [q, p] (general and kappa forms)."""
    qmin, r, th, k2, mu, a, e, recommended = point
    if recommended:
        k2 = (1 - th) / 4
        k3 = registry_kappa(qmin, qmin * r, th)
    else:
        k3 = k2 + max(
            (1 - 2 * k2) ** 2 / ((1 - th) / 2 - k2), (r - 2 * k2) ** 2 / (r - (1 + th) / 2 - k2)
        ) / 4
    s_val = qmin * ((1 - mu) + mu * r)
    x = a + e
    lhs = s_val * a * x
    c1, c2, c3 = qmin * (1 + th) / 2, k2 * qmin, k3 * qmin
    rhs = c1 * a**2 + c2 * x**2 - c3 * e**2
    scale = qmin * k3 * (a * a + e * e) + 1e-300
    assert lhs - rhs >= -1e-9 * scale
    # and in the worst direction (a, e): the form's matrix is positive semidefinite at this s
    matrix = np.array([[s_val - c1 - c2, (s_val - 2 * c2) / 2], [(s_val - 2 * c2) / 2, c3 - c2]])
    assert np.linalg.eigvalsh(matrix)[0] >= -1e-9 * (1 + np.abs(matrix).max())


# ---- Lemma 0 and Step 0 (property tests over random responses) --------------------------------

@st.composite
def device_and_noise(draw):
    """A coordinate-wise device (q_+, q_- in [q_min, q_max]), a point x, a zero-mean noise with
    finite support (values, probabilities) in dimension ``dim``."""
    dim = draw(st.integers(1, 4))
    atoms = draw(st.integers(2, 5))
    qmin = draw(st.floats(0.05, 2.0))
    qmax = qmin * draw(st.floats(1.0, 4.0))
    unit = st.floats(0.0, 1.0)
    q_plus = np.array([qmin + (qmax - qmin) * draw(unit) for _ in range(dim)])
    q_minus = np.array([qmin + (qmax - qmin) * draw(unit) for _ in range(dim)])
    real = st.floats(-10.0, 10.0)
    x = np.array([draw(real) for _ in range(dim)])
    y = np.array([draw(real) for _ in range(dim)])
    weights = np.array([draw(st.floats(0.05, 1.0)) for _ in range(atoms)])
    prob = weights / weights.sum()
    values = np.array([[draw(real) for _ in range(dim)] for _ in range(atoms)])
    values = values - prob @ values  # zero mean
    return qmin, qmax, q_plus, q_minus, x, y, prob, values


def response(q_plus, q_minus, x):
    """u(x) = F x + G |x|, F = (q_- + q_+)/2, G = (q_- - q_+)/2 (Lemma 0)."""
    return (q_minus + q_plus) / 2 * x + (q_minus - q_plus) / 2 * np.abs(x)


@given(case=device_and_noise())
def test_lemma_0_properties(case):
    qmin, qmax, q_plus, q_minus, x, y, prob, values = case
    tol = 1e-9 * (1 + qmax) * (1 + np.abs(x).max() + np.abs(y).max() + np.abs(values).max()) ** 2
    u = response(q_plus, q_minus, x)
    # 0.1: u = q_- x for x >= 0, q_+ x for x < 0; |u| <= q_max |x|
    assert np.allclose(u, np.where(x >= 0, q_minus, q_plus) * x)
    assert np.all(np.abs(u) <= qmax * np.abs(x) + tol)
    # 0.2: x u(x) >= q_min x^2
    assert np.all(x * u >= qmin * x**2 - tol)
    # 0.3: |u(x + y) - u(x)| <= q_max |y|
    assert np.all(np.abs(response(q_plus, q_minus, x + y) - u) <= qmax * np.abs(y) + tol)
    # 0.4: E|x + nu| = |x| + r, 0 <= r <= E|nu|, sum_i (E|nu_i|)^2 <= E||nu||^2
    r = prob @ np.abs(x + values) - np.abs(x)
    mean_abs = prob @ np.abs(values)
    assert np.all(r >= -tol) and np.all(r <= mean_abs + tol)
    assert np.sum(mean_abs**2) <= prob @ np.sum(values**2, axis=1) + tol


@given(case=device_and_noise())
def test_step_0_mean_and_martingale_part(case):
    """m = E U(x + nu) = u(x) + G r, E||U - m||^2 <= E||U - u(x)||^2 <= q_max^2 E||nu||^2."""
    qmin, qmax, q_plus, q_minus, x, _, prob, values = case
    scale = (1 + qmax) ** 2 * (1 + np.abs(x).max() + np.abs(values).max()) ** 2
    tol = 1e-9 * scale
    updates = response(q_plus, q_minus, x + values)  # one row per atom
    mean = prob @ updates
    r = prob @ np.abs(x + values) - np.abs(x)
    assert np.allclose(mean, response(q_plus, q_minus, x) + (q_minus - q_plus) / 2 * r,
                       atol=tol)
    var = prob @ np.sum((updates - mean) ** 2, axis=1)
    around_u = prob @ np.sum((updates - response(q_plus, q_minus, x)) ** 2, axis=1)
    noise = prob @ np.sum(values**2, axis=1)
    assert var <= around_u + tol
    assert around_u <= qmax**2 * noise + tol
    # ||r||^2 <= E||nu||^2 (so ||G o r|| <= G_inf sigma_b)
    assert np.sum(r**2) <= noise + tol


@given(case=device_and_noise(), th=st.floats(0.01, 0.99), grad_scale=st.floats(-3.0, 3.0))
def test_step_2_inner_product_lower_bound(case, th, grad_scale):
    """<grad, m> >= (q/2)||grad||^2 + c2||x||^2 - c3||e||^2 - G^2 sigma_b^2/(2 theta q) with
    x = grad + e, the slope of u at x (Lemma 0.1), Lemma A and Young for the bias."""
    qmin, qmax, q_plus, q_minus, x, y, prob, values = case
    grad = grad_scale * y
    err = x - grad
    g_inf = np.max(np.abs(q_minus - q_plus) / 2)
    sigma_b2 = prob @ np.sum(values**2, axis=1)
    mean = prob @ response(q_plus, q_minus, x + values)
    k2 = (1 - th) / 4
    k3 = registry_kappa(qmin, qmax, th)
    lower = (
        qmin / 2 * grad @ grad + k2 * qmin * x @ x - k3 * qmin * err @ err
        - g_inf**2 * sigma_b2 / (2 * th * qmin)
    )
    scale = (1 + qmax) * k3 * (1 + grad @ grad + x @ x + err @ err + sigma_b2 / (th * qmin**2))
    assert grad @ mean >= lower - 1e-9 * scale


# ---- Step 4: window counting (pathwise) and the martingale identity (Monte Carlo) -------------

@settings(max_examples=40)
@given(seed=st.integers(0, 2**32 - 1), delays=st.lists(st.integers(0, 6), min_size=1, max_size=4),
       iterations=st.integers(1, 30))
def test_step_4_window_counting(seed, delays, iterations):
    """Each t lies in at most d_m windows T_m(k) = [k - d_m, k - 1] (k < K), so, pathwise,
    sum_k ||sum_{t in T_m(k)} a_t||^2 <= d_m sum_k sum_{t in T_m(k)} ||a_t||^2
    <= d_m^2 sum_t ||a_t||^2 <= D^2 sum_t ||a_t||^2 (blocks summed)."""
    rng = np.random.default_rng(seed)
    delay = max(delays)
    steps = rng.normal(size=(iterations, len(delays), 3))  # a_t, block m, 3 coordinates
    total = 0.0
    for m, d_m in enumerate(delays):
        counts = np.zeros(iterations, dtype=int)
        for k in range(iterations):
            window = range(max(0, k - d_m), k)
            counts[list(window)] += 1
            total += np.sum(steps[list(window), m].sum(axis=0) ** 2) if d_m else 0.0
        assert counts.max(initial=0) <= d_m
    assert total <= delay**2 * np.sum(steps**2) * (1 + 1e-12) + 1e-12


def test_step_4_martingale_window_identity_monte_carlo():
    """E||sum_{t in window} zeta_t||^2 = sum_t E||zeta_t||^2 for martingale differences whose
    scale depends on the past (not independent); Cauchy-Schwarz would give D sum_t E||zeta_t||^2.

    ``zeta_t = (1 + 0.8 tanh(zeta_{t-1,0})) xi_t``, ``xi_t`` standard normal in R^2. The check is
    ``|mean(lhs - rhs)| <= 5`` standard errors over 40000 independent windows; the same check on
    a positively correlated (non-martingale) sequence fails, so the test can fail.
    """
    rng = np.random.default_rng(20261201)
    runs, window, dim = 40000, 7, 2

    def paths(correlated: bool) -> np.ndarray:
        xi = rng.normal(size=(runs, window + 1, dim))
        zeta = np.zeros_like(xi)
        zeta[:, 0] = xi[:, 0]
        for step in range(1, window + 1):
            scale = 1 + 0.8 * np.tanh(zeta[:, step - 1, :1])
            zeta[:, step] = scale * xi[:, step] + (0.5 * zeta[:, step - 1] if correlated else 0)
        return zeta[:, 1:]

    def z_score(zeta: np.ndarray) -> tuple[float, float, float]:
        lhs = np.sum(zeta.sum(axis=1) ** 2, axis=1)
        rhs = np.sum(zeta**2, axis=(1, 2))
        diff = lhs - rhs
        return float(diff.mean() / (diff.std(ddof=1) / np.sqrt(runs))), lhs.mean(), rhs.mean()

    z, lhs, rhs = z_score(paths(correlated=False))
    assert abs(z) <= 5.0, (z, lhs, rhs)
    assert lhs < 0.5 * window * rhs  # far below the Cauchy-Schwarz D sum E||zeta||^2
    z_bad, _, _ = z_score(paths(correlated=True))
    assert z_bad > 5.0


# ---- Step 5: the cap lemma and the step cap ---------------------------------------------------

def test_cap_lemma():
    """alpha (A/C + sqrt(B/C)) <= 1 implies A alpha + B alpha^2 <= C (A, B, C > 0)."""
    beta, gamma, c = sp.symbols("beta gamma C", positive=True)  # A = beta C, B = gamma^2 C
    step = 1 / ((beta + gamma) * (1 + w))
    slack = c - beta * c * step - gamma**2 * c * step**2
    assert nonneg(slack)
    # tight: equality only when the cap binds and one of A, B vanishes (A = 0 here)
    assert is_zero(slack.subs({beta: 0, w: 0}))


def step5_abc(k2=None, k3=None, lam1=None):
    """A, B, C of Step 5 (coefficients of the S_x term): C - A alpha - B alpha^2 >= 0 needed."""
    k2 = (1 - theta) / 4 if k2 is None else k2
    k3 = ap_kappa() if k3 is None else k3
    lam1 = sp.Rational(1, 2) if lam1 is None else lam1
    return L * q_max**2 / 2, k3 * q_min * L_s**2 * D**2 * q_max**2 / lam1, k2 * q_min


def test_step5_cap_is_the_registry_cap():
    big_a, big_b, big_c = step5_abc()
    # 1/alpha_AP - A/C is the square root of B/C (compared squared: sympy keeps radicals apart)
    root_part = ap_inv_step_cap() - big_a / big_c
    assert is_zero(enc(root_part**2 - big_b / big_c))
    assert sp.simplify(enc(root_part)).is_positive
    # general form: 1/alpha_AP = L p^2/(2 kappa_2 q) + L_s D p sqrt(kappa_3/(lambda kappa_2))
    big_a, big_b, big_c = step5_abc(kappa_2, kappa_3, lam)
    general = L * q_max**2 / (2 * kappa_2 * q_min) + L_s * D * q_max * sp.sqrt(
        kappa_3 / (lam * kappa_2))
    assert is_zero(big_a / big_c + sp.sqrt(big_b / big_c) - general)
    # at D = 0 the registry cap is Theorem 2's (Corollary 3's)
    assert is_zero(ap_inv_step_cap().subs(D, 0) - L * q_max**2 / ((1 - theta) * q_min))


def test_root_is_sqrt_of_8_kappa_over_1_minus_theta():
    """ap_root() = sqrt(8 kappa/(1 - theta)) on theta in (0, 1), q_max >= q_min."""
    assert is_zero(enc(ap_root() ** 2 - 8 * ap_kappa() / (1 - theta), delay=False))
    assert enc(ap_root(), delay=False).is_positive


# ---- Step 6: the lambda split -----------------------------------------------------------------

def test_step6_lambda_split():
    """min_{l2 + l3 = 1 - lambda} X/l2 + Y/l3 = (sqrt X + sqrt Y)^2/(1 - lambda), via the identity
    X/l2 + Y/l3 - (sqrt X + sqrt Y)^2/(l2 + l3) = (l3 sqrt X - l2 sqrt Y)^2/(l2 l3 (l2 + l3))."""
    x, y, l2, l3 = sp.symbols("x y l2 l3", positive=True)  # x = sqrt X, y = sqrt Y
    gap = x**2 / l2 + y**2 / l3 - (x + y) ** 2 / (l2 + l3)
    assert is_zero(gap - (l3 * x - l2 * y) ** 2 / (l2 * l3 * (l2 + l3)))
    assert gap.subs({l2: x, l3: y}) == 0  # equality exactly at l2 : l3 = sqrt X : sqrt Y
    best = {l2: (1 - lam) * x / (x + y), l3: (1 - lam) * y / (x + y)}
    assert is_zero((x**2 / l2 + y**2 / l3).subs(best) - (x + y) ** 2 / (1 - lam))
    # with X = D^2 G^2, Y = D q_max^2 this is the (q_max sqrt(D) + G D)^2 of Theorem 4'
    assert is_zero(((x + y) ** 2).subs({x: G_inf * D, y: q_max * sp.sqrt(D)})
                   - (q_max * sp.sqrt(D) + G_inf * D) ** 2)


# ---- Steps 1-6 assembled: the registry expressions are what the steps produce ------------------

S_grad, S_x, S_e = sp.symbols("S_grad S_x S_e", nonnegative=True)


def assembled(lams, k3):
    """(coefficient of S_x, the bound on (1/K) S_grad) from Steps 1-5 with weights lambda_1..3.

    Step 1 summed: 0 <= Delta - alpha * (Step 2 lower bound) + (L alpha^2/2) * (Step 3 bound),
    Step 4 substituted for S_e (its coefficient alpha c_3 is >= 0).
    """
    lam1, lam2, lam3 = lams
    sigma_b2 = sigma2 / b
    c2, c3 = (1 - theta) / 4 * q_min, k3 * q_min
    step2 = (q_min / 2 * S_grad + c2 * S_x - c3 * S_e
             - K * G_inf**2 * sigma_b2 / (2 * theta * q_min))
    step3 = q_max**2 * (S_x + K * sigma_b2)
    step4 = L_s**2 * alpha**2 * (
        D**2 * q_max**2 * S_x / lam1 + K * D**2 * G_inf**2 * sigma_b2 / lam2
        + K * D * q_max**2 * sigma_b2 / lam3
    )
    total = sp.expand((Delta - alpha * step2 + L * alpha**2 / 2 * step3).subs(S_e, step4))
    coef_grad = total.coeff(S_grad)
    coef_x = total.coeff(S_x)
    rest = total - coef_grad * S_grad - coef_x * S_x
    assert is_zero(coef_grad + alpha * q_min / 2)
    return -coef_x, rest / (alpha * q_min * K / 2)


def test_steps_assemble_into_theorem_4prime():
    kappa = ap_kappa()
    # the optimal split of Step 6 for lambda = 1/2: l2 : l3 = G D : q_max sqrt(D)
    x, y = G_inf * D, q_max * sp.sqrt(D)
    lams = (sp.Rational(1, 2), x / (2 * (x + y)), y / (2 * (x + y)))
    coef_x, bound = assembled(lams, kappa)
    big_a, big_b, big_c = step5_abc()
    assert is_zero(coef_x - alpha * (big_c - big_a * alpha - big_b * alpha**2))
    assert is_zero(enc(bound - REGISTRY["analog_sgd_ap"].expr))


def test_steps_assemble_into_theorem_4prime_b():
    kappa = ap_kappa()
    coef_x, bound = assembled((sp.Rational(1, 2), sp.Rational(1, 4), sp.Rational(1, 4)), kappa)
    big_a, big_b, big_c = step5_abc()
    assert is_zero(coef_x - alpha * (big_c - big_a * alpha - big_b * alpha**2))
    # the bias part 8 kappa L_s^2 alpha^2 D^2 G^2 sigma_b^2 is replaced by its bound under the cap
    bias = 8 * kappa * L_s**2 * alpha**2 * D**2 * G_inf**2 * sigma2 / b
    charged = (1 - theta) * G_inf**2 * sigma2 / (b * q_max**2)
    assert is_zero(enc(bound - bias + charged - REGISTRY["analog_sgd_ap_b"].expr))


def test_variant_b_inequality_under_the_cap():
    """alpha <= alpha_AP implies L_s^2 D^2 alpha^2 <= (1 - theta)/(8 kappa q_max^2), hence the bias
    part is at most theta (1 - theta)/r^2 of the floor (and that is at most 1/4)."""
    kappa = ap_kappa()
    root = ap_root()
    # (1 - theta)/(8 kappa q_max^2) = 1/(root q_max)^2, 1/alpha >= 1/alpha_AP >= L_s D q_max root
    assert is_zero((1 - theta) / (8 * kappa * q_max**2) - 1 / (root * q_max) ** 2)
    rest = ap_inv_step_cap() - L_s * D * q_max * root
    assert is_zero(rest - L * q_max**2 * (1 + sp.Min(D, 1)) / ((1 - theta) * q_min))
    assert enc(rest).is_positive
    # so L_s D alpha <= L_s D/(L_s D q_max root) = 1/(q_max root) for every alpha <= alpha_AP
    # the charged bias as a fraction of Corollary 3's floor at B = 1
    floor = G_inf**2 * sigma2 / (theta * b * q_min**2)
    charged = 8 * kappa * L_s**2 * D**2 * G_inf**2 * sigma2 / b * (1 - theta) / (
        8 * kappa * q_max**2 * L_s**2 * D**2)
    assert is_zero(charged / floor - theta * (1 - theta) * q_min**2 / q_max**2)
    assert is_zero(enc(ap_b_floor_factor()) - 1 - enc(theta * (1 - theta) * q_min**2 / q_max**2))


@pytest.mark.parametrize("name", ["analog_sgd_ap", "analog_sgd_ap_b"])
def test_staleness_term_vanishes_at_zero_delay(name):
    bound = REGISTRY[name]
    sp_one = REGISTRY["analog_sgd_sp"].expr.subs(B, 1)
    assert is_zero(bound.expr.subs(D, 0) - sp_one)


# ---- the numbers of the note (theory-async-sharper.md), from the registry ---------------------

NOTE_TABLE = {
    # device key, D: (old cap, 4' cap, old c, 4' c), as rounded in the note
    ("q_min 0.5, q_max 1.5, G_inf 0.4", 1): (0.00982, 0.0386, 983, 126),
    ("q_min 0.5, q_max 1.5, G_inf 0.4", 3): (0.00327, 0.0239, 6406, 257),
    ("q_min 0.5, q_max 1.5, G_inf 0.4", 7): (0.00140, 0.0136, 31075, 579),
    ("q_min 0.5, q_max 1.5, G_inf 0.4", 15): (0.000655, 0.0073, 135710, 1416),
    ("ideal (q = 1, G_inf = 0)", 1): (0.0442, 0.118, 109, 27),
    ("ideal (q = 1, G_inf = 0)", 15): (0.00295, 0.0141, 15080, 292),
}


@pytest.mark.parametrize(("key", "expected"), list(NOTE_TABLE.items()))
def test_note_table_is_reproduced_by_the_registry(key, expected):
    device, delay = key
    got = constants({**COMMON, **DEVICES[device], "D": delay})
    old_cap, new_cap, old_c, new_c = expected
    assert got["Theorem 4 (old)"][0] == pytest.approx(old_cap, rel=6e-3)
    assert got["Theorem 4'"][0] == pytest.approx(new_cap, rel=6e-3)
    assert got["Theorem 4 (old)"][1] == pytest.approx(old_c, rel=6e-3)
    assert got["Theorem 4'"][1] == pytest.approx(new_c, rel=6e-3)
    assert got["Theorem 4'B"][0] == got["Theorem 4'"][0]  # same cap


# ---- the general form (kappa_2, lambda free), for numeric optimisation of the proof parameters --

def test_general_form_at_the_recommended_instance_is_the_registry_entry():
    general = ap_general_parts(kappa_3=ap_kappa())
    instance = {kappa_2_sym: (1 - theta) / 4, lam_sym: sp.Rational(1, 2)}
    ap = REGISTRY["analog_sgd_ap"]
    assert is_zero(enc(general["expr"].subs(instance) - ap.expr))
    # the cap: compare the root parts squared (radicals); c: its part beyond 2 Delta/(q alpha_AP)
    inv = general["inv_step_cap"].subs(instance)
    lead = L * q_max**2 / (2 * (1 - theta) / 4 * q_min)
    assert is_zero(enc((inv - lead) ** 2 - (ap.inv_step_cap - lead) ** 2))
    rest = general["rate_c"].subs(instance) - 2 * Delta * inv / q_min
    assert is_zero(enc(rest - (ap.rate_c - 2 * Delta * ap.inv_step_cap / q_min)))
    for key in ("rate_a", "floor", "noise_step"):
        assert is_zero(general[key] - getattr(ap, key)), key


def test_general_form_rate_coefficients_follow_proposition_5a():
    general = ap_general_parts()
    poly = sp.Poly(sp.expand(general["expr"] * alpha * K), alpha)
    coeffs = dict(zip((m[0] for m in poly.monoms()), poly.coeffs(), strict=True))
    p_, q_, r_ = coeffs[0], coeffs[2] / K, coeffs[3] / K
    assert is_zero(general["floor"] - coeffs[1] / K)
    assert is_zero(general["rate_c"] - (p_ * general["inv_step_cap"] + r_ * p_ / q_))


@settings(max_examples=40)
@given(qmin=st.floats(0.05, 2.0), r=st.floats(1.0, 20.0), th=st.floats(0.01, 0.99),
       g=st.floats(0.0, 1.0), delay=st.integers(1, 64))
def test_general_form_at_the_instance_is_at_most_the_registry_entry(qmin, r, th, g, delay):
    """kappa_3 <= kappa numerically: the general form's cap is larger, its c smaller."""
    general = ap_general_parts()
    values = {"L": 1.0, "L_s": 1.3, "Delta": 1.0, "sigma2": 1.0, "b": 1, "q_min": qmin,
              "q_max": qmin * r, "G_inf": g, "theta": th, "D": delay,
              "kappa_2": (1 - th) / 4, "lam": 0.5}
    ap = REGISTRY["analog_sgd_ap"]
    for key in ("inv_step_cap", "rate_c"):
        got = float(compile_expr(general[key])(values))
        assert got <= float(compile_expr(getattr(ap, key))(values)) * (1 + 1e-12), key
