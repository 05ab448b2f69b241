"""Corollary 3PS (docs/theory.md): analog SGD with one write per sample.

Symbolic (sympy): the registry entries are the bound rebuilt from the proof's Steps 1-5, Theorem
2's at a batch of one sample; they equal Theorem 2 / Corollary 3 at one sample, exceed them for more
(by the factor n, resp. B b, on the floor). Property tests (hypothesis, exact expectations over a
two-point noise enumerated outcome by outcome): Step 2's inequality with one sample's sigma, the
drift of the writes included, and that it fails with the batch's sigma / sqrt(n) (the floor really
is per sample); Step 4's pathwise convexity bound.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._sympy_checks import is_zero, nonneg
from theory import REGISTRY, WRITE_SEMANTICS, ParameterError, bound_for, bounds_for
from theory.symbols import B, Delta, G_inf, K, L, alpha, b, n, q_max, q_min, sigma2, theta

PER_SAMPLE = {"analog_sgd_per_sample": ("analog_sgd", n), "analog_sgd_sp_per_sample":
              ("analog_sgd_sp", B * b)}
#: Theorem 4'PS (tests/test_theorem4ps.py): the asynchronous pipeline's per-sample entry
PER_SAMPLE_AP = "analog_sgd_ap_per_sample"
#: Corollary TT0PS (tests/test_tiki_taka_reset_per_sample.py): the Tiki-Taka variant's rows
PER_SAMPLE_TT0 = tuple(f"{name}_per_sample" for name in (
    "tiki_taka_reset", "tiki_taka_reset_sp", "tiki_taka_reset_ap", "tiki_taka_reset_ap_b"))


# ---- the registry -----------------------------------------------------------------------------

def test_entries_are_per_sample_and_the_rest_batch_mean():
    assert WRITE_SEMANTICS == ("batch-mean", "per-sample")
    for name, bound in REGISTRY.items():
        base = name.removesuffix("_local")  # Theorem LF's row keeps its row's write semantics
        assert bound.write == ("per-sample" if base in (*PER_SAMPLE, PER_SAMPLE_AP,
                                                        *PER_SAMPLE_TT0)
                               else "batch-mean"), name
    assert bound_for("none", "analog", "per-sample").name == "analog_sgd_per_sample"
    assert bound_for("sync", "analog", "per-sample").name == "analog_sgd_sp_per_sample"
    # existing callers are unchanged; digital writes are linear (per-sample = batch mean)
    assert bound_for("none").name == "analog_sgd" and bound_for("sync").name == "analog_sgd_sp"
    assert bound_for("none", "digital", "per-sample").name == "digital_sgd"
    assert [x.name for x in bounds_for("async")] == ["analog_sgd_ap", "analog_sgd_ap_b"]
    assert [x.name for x in bounds_for("async", "analog", "per-sample")] == [PER_SAMPLE_AP]
    with pytest.raises(ParameterError, match="^no derived bound .*write='per-sample'"):
        bounds_for("async", "mixed", "per-sample")
    with pytest.raises(ParameterError, match="^write='rows' is unknown"):
        bounds_for("none", "analog", "rows")


@pytest.mark.parametrize("name", list(PER_SAMPLE))
def test_bound_rebuilt_from_the_steps(name):
    """Steps 1-5: with sigma_n^2 replaced by one sample's sigma^2, the per-update decrease
    alpha q_min/2 ||grad||^2 (Step 5's bracket) against the per-update noise
    alpha G^2 sigma^2/(2 theta q_min) + L alpha^2 q_max^2 sigma^2/2, telescoped and divided by
    alpha q_min K/2."""
    bound = REGISTRY[name]
    per_update = alpha * G_inf**2 * sigma2 / (2 * theta * q_min) \
        + L * alpha**2 * q_max**2 * sigma2 / 2
    rebuilt = (Delta + K * per_update) / (alpha * q_min * K / 2)
    assert is_zero(rebuilt - bound.expr)
    assert is_zero(bound.floor - G_inf**2 * sigma2 / (theta * q_min**2))
    assert is_zero(bound.inv_step_cap - L * q_max**2 / ((1 - theta) * q_min))
    assert is_zero(bound.batch - PER_SAMPLE[name][1])


def test_step5_bracket_under_the_cap():
    """Step 5 (Theorem 2's): alpha <= cap gives q_min (1 - theta/2) - L alpha q_max^2/2 >= q_min/2.
    """
    s, w = sp.symbols("s w", positive=True)
    th = s / (1 + s)
    step = (1 - th) * q_min / (L * q_max**2) / (1 + w)
    assert nonneg(q_min * (1 - th / 2) - L * step * q_max**2 / 2 - q_min / 2)


@pytest.mark.parametrize("name", list(PER_SAMPLE))
def test_reduces_to_batch_mean_at_one_sample_and_exceeds_it_beyond(name):
    base, batch = PER_SAMPLE[name]
    ps, bm = REGISTRY[name], REGISTRY[base]
    one = {n: 1} if batch == n else {B: 1, b: 1}
    for field in ("expr", "inv_step_cap", "rate_a", "rate_c", "floor", "noise_step", "batch"):
        assert is_zero(getattr(ps, field).subs(one) - getattr(bm, field).subs(one)), field
    # the floor is batch times the batch-mean floor; the whole bound is at least the batch-mean's
    assert is_zero(ps.floor - batch * bm.floor)
    m = sp.Symbol("m", nonnegative=True)
    k = sp.Symbol("k", nonnegative=True)
    more = {n: 1 + m} if batch == n else {B: 1 + m, b: 1 + k}  # n, B, b >= 1
    th = sp.Symbol("s", positive=True) / (1 + sp.Symbol("s", positive=True))
    assert nonneg((ps.expr - bm.expr).subs(more).subs(theta, th))


# ---- Step 2 and Step 4 by exact expectations --------------------------------------------------

def _writes(w0, grad, noise, lr, tau):
    """The n per-sample expected writes of one update on a soft-bounds device of range tau:
    U_V(h) = h + (V/tau)|h| (F = 1, G = w/tau); returns the mean update U_bar and the points
    V_0 .. V_{n-1} where the writes were evaluated."""
    v, total, points = w0.copy(), np.zeros_like(w0), []
    count = len(noise)
    for nu in noise:
        points.append(v.copy())
        h = grad + nu
        u = h + (v / tau) * np.abs(h)
        total += u
        v = v - (lr / count) * u
    return total / count, np.array(points)


def _expectations(w0, grad, scale, count, lr, tau):
    """Exact E<grad, U_bar>, E||U_bar||^2, E (1/n) sum ||h_i||^2 q_max^2 over the two-point noise
    nu_ij = +-scale_j (independent), and the A3 constants on every visited point."""
    d = len(w0)
    inner, second, jensen = 0.0, 0.0, 0.0
    q_lo, q_hi, g_hi = np.inf, 0.0, 0.0
    outcomes = list(itertools.product((-1.0, 1.0), repeat=d * count))
    for signs in outcomes:
        noise = np.array(signs).reshape(count, d) * scale
        u_bar, points = _writes(w0, grad, noise, lr, tau)
        inner += grad @ u_bar
        second += u_bar @ u_bar
        jensen += np.mean([(grad + nu) @ (grad + nu) for nu in noise])
        g = points / tau
        q_lo = min(q_lo, float(np.min(1 - np.abs(g))))
        q_hi = max(q_hi, float(np.max(1 + np.abs(g))))
        g_hi = max(g_hi, float(np.max(np.abs(g))))
        # Step 4 pathwise: ||U_bar||^2 <= q_max^2 (1/n) sum ||h_i||^2 (with this path's q_max)
        q_path = float(np.max(1 + np.abs(g)))
        assert u_bar @ u_bar <= q_path**2 * np.mean(
            [(grad + nu) @ (grad + nu) for nu in noise]) * (1 + 1e-12) + 1e-300
    m = len(outcomes)
    return inner / m, second / m, jensen / m, q_lo, q_hi, g_hi


@settings(max_examples=60, deadline=None)
@given(
    d=st.integers(1, 2), count=st.integers(1, 3),
    w0=st.lists(st.floats(-0.6, 0.6), min_size=2, max_size=2),
    grad=st.lists(st.floats(-1, 1), min_size=2, max_size=2),
    scale=st.lists(st.floats(0.01, 1), min_size=2, max_size=2),
    lr=st.floats(0.0, 0.2), tau=st.floats(1.0, 3.0),
)
def test_step2_and_step4_exact_expectations(d, count, w0, grad, scale, lr, tau):
    w0, grad, scale = (np.array(x[:d]) for x in (w0, grad, scale))
    inner, second, jensen, q_lo, q_hi, g_hi = _expectations(w0, grad, scale, count, lr, tau)
    assert q_lo > 0  # the writes stayed inside the range (A3)
    sigma = float(np.sqrt(scale @ scale))  # one sample's noise: E||nu_i||^2 = sigma^2
    gn = float(np.sqrt(grad @ grad))
    # Step 2 with the constants on every visited point (the drift of the writes included)
    assert inner >= q_lo * gn**2 - g_hi * gn * sigma - 1e-12
    # Step 4: E||U_bar||^2 <= q_max^2 (||grad||^2 + sigma^2)
    assert jensen <= gn**2 + sigma**2 + 1e-12
    assert second <= q_hi**2 * (gn**2 + sigma**2) * (1 + 1e-12)


def test_step2_fails_with_the_batch_noise():
    """The inequality is per sample: with the batch mean's sigma / sqrt(n) in its place it fails
    (one coordinate at w = 0.5 on a tau = 1 device, G = 0.5; a small gradient against the bias)."""
    w0, grad, scale, count = np.array([0.5]), np.array([-0.01]), np.array([1.0]), 4
    inner, _, _, q_lo, _, g_hi = _expectations(w0, grad, scale, count, 1e-6, 1.0)
    gn, sigma = 0.01, 1.0
    assert inner >= q_lo * gn**2 - g_hi * gn * sigma - 1e-12
    assert inner < q_lo * gn**2 - g_hi * gn * sigma / np.sqrt(count)
