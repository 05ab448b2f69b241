"""Corollary TT0-AP (docs/theory.md): Corollary TT0's variant through the asynchronous pipeline is
Theorem 4' (and 4'B) on the writes of C; the steps it rests on, checked."""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
from _sympy_checks import is_zero
from hypothesis import given, settings
from hypothesis import strategies as st

from theory import REGISTRY, bounds_for, compile_expr, max_delay, write_delay
from theory.symbols import B, K, T, alpha, b, rho

PAIRS = (("tiki_taka_reset_ap", "analog_sgd_ap"), ("tiki_taka_reset_ap_b", "analog_sgd_ap_b"))


def _window_subs(expr):
    """Step 4's substitution: micro-batch b T (D is the delay in writes)."""
    return sp.sympify(expr).subs(b, b * T)


def test_rows_are_theorem4prime_on_the_writes_of_c():
    """Step 5: the expression is Theorem 4''s (4'B's) at step rho alpha^2 T, micro-batch b T,
    D the delay in writes and K/T writes; the cap and the noise step are its cap and noise step on
    that step; the rate form is Corollary TT0's rewriting in updates."""
    eta = rho * alpha**2 * T
    for tt_name, ap_name in PAIRS:
        tt, ap = REGISTRY[tt_name], REGISTRY[ap_name]
        assert is_zero(tt.expr - _window_subs(ap.expr).subs({alpha: eta, K: K / T},
                                                            simultaneous=True)), tt_name
        assert is_zero(tt.inv_step_cap**2 - rho * T * _window_subs(ap.inv_step_cap)), tt_name
        assert is_zero(rho * T * tt.noise_step**2 - _window_subs(ap.noise_step).subs(K, K / T))
        assert is_zero(tt.floor - _window_subs(ap.floor)), tt_name
        assert is_zero(tt.rate_a - sp.sqrt(T) * _window_subs(ap.rate_a)), tt_name
        assert is_zero(tt.rate_c - T * _window_subs(ap.rate_c)), tt_name
        assert tt.batch == b and (tt.provenance, tt.proof, tt.mode, tt.algorithm) == (
            "derived", "Corollary TT0-AP", "async", "tiki-taka")


def test_at_T_equal_1_it_is_theorem4prime_with_step_rho_alpha2():
    """T = 1: one write per update and a delay of M - 1 writes: Theorem 4' (4'B) exactly."""
    for tt_name, ap_name in PAIRS:
        tt, ap = REGISTRY[tt_name], REGISTRY[ap_name]
        assert is_zero(tt.expr.subs(T, 1) - ap.expr.subs(alpha, rho * alpha**2))
        assert is_zero(tt.inv_step_cap.subs(T, 1) ** 2 - rho * ap.inv_step_cap)
        for attr in ("rate_a", "rate_c", "floor"):
            assert is_zero(getattr(tt, attr).subs(T, 1) - getattr(ap, attr)), attr
    stages = np.arange(1, 65)
    assert np.array_equal(write_delay(stages, 1), max_delay(stages))  # and D = M - 1 there


def test_at_T_equal_B_the_floor_is_the_synchronous_pipelines():
    """The point of the variant: with T = B micro-batches per write, the asynchronous floor
    (Theorem 4''s) is Corollary 3's with B micro-batches, not B times it."""
    sync = REGISTRY["analog_sgd_sp"].floor
    assert is_zero(REGISTRY["tiki_taka_reset_ap"].floor.subs(T, B) - sync)
    assert is_zero(REGISTRY["analog_sgd_ap"].floor - sync.subs(B, 1))


def test_async_tiki_taka_entries_are_the_variant():
    assert [x.name for x in bounds_for("async", "tiki-taka")] == [n for n, _ in PAIRS]


def test_write_delay_lemma_exhaustive():
    """Step 2: update t = j T + s reads stage m's C at write floor((t - d)/T) for a delay of
    d <= M - 1 updates, at most ceil(d/T) <= ceil((M - 1)/T) = write_delay(M, T) writes old, and
    the bound is attained (every M, T <= 24, every d, s and the windows j <= 6)."""
    for m in range(1, 25):
        for t in range(1, 25):
            bound = int(write_delay(m, t))
            assert bound == math.ceil((m - 1) / t)
            worst = 0
            for d in range(m):
                for s in range(t):
                    for j in range(7):
                        read = (j * t + s - d) // t  # the write the stale weights belong to
                        assert 0 <= j - read <= math.ceil(d / t) <= bound, (m, t, d, s, j)
                        worst = max(worst, j - read)
            assert worst == bound, (m, t)  # attained (s = 0, d = M - 1)


@settings(max_examples=200, deadline=None)
@given(d1=st.floats(0, 64), d2=st.floats(0, 64), q_max=st.floats(1.0, 3.0),
       g=st.floats(0, 1), theta=st.floats(0.05, 0.95), lr=st.floats(1e-4, 1.0))
def test_theorem4prime_grows_with_the_delay(d1, d2, q_max, g, theta, lr):
    """Step 3: Theorem 4' and 4'B (expression and 1/cap) do not decrease in D, so any upper bound
    on the write delay (the planner's M - 1, say) also gives a valid bound."""
    lo, hi = sorted((d1, d2))
    values = dict(L=1.0, L_s=1.0, Delta=1.0, sigma2=1.0, b=1, K=100, alpha=lr, theta=theta,
                  q_min=1.0, q_max=q_max, G_inf=g)
    for name in ("analog_sgd_ap", "analog_sgd_ap_b"):
        bound = REGISTRY[name]
        for field in ("expr", "inv_step_cap"):
            f = compile_expr(getattr(bound, field))
            at = [float(np.asarray(f({**values, "D": d}))) for d in (lo, hi)]
            assert at[0] <= at[1] * (1 + 1e-12), (name, field, lo, hi)

