"""Tests of theory.admissible: the step cap, theta_max, the tightest theta, predicted cycles."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from paper_figures import asymptotic
from theory import ParameterError, admissible, get_bound
from theory.admissible import (
    THETA_HIGH,
    compiled_bound,
    step_cap,
    theta_max,
    tightest_theta,
)
from theory.symbols import alpha as ALPHA
from theory.symbols import theta as THETA

#: the analog entries, whose bound depends on theta
THETA_BOUNDS = ("analog_sgd", "analog_sgd_sp", "analog_sgd_ap")


def _symbolic(name: str, expr_attr: str, values: dict) -> float:
    """A registry expression evaluated by sympy substitution (not the lambdified path)."""
    expr = getattr(get_bound(name), expr_attr)
    subs = {s: values[s.name] for s in expr.free_symbols}
    return float(expr.subs(subs).evalf(30))


AP_CONSTANTS = dict(L=1.0, L_s=1.0, Delta=0.2, sigma2=1.0, b=1, D=3, q_min=0.6, q_max=1.4,
                    G_inf=0.4)


def test_tightest_theta_is_admissible_and_minimal_on_a_grid():
    lr, steps = 0.004, 1000
    theta, bound = tightest_theta("analog_sgd_ap", lr, steps, AP_CONSTANTS)
    values = AP_CONSTANTS | {"theta": theta, "K": steps, "alpha": lr}
    assert lr * _symbolic("analog_sgd_ap", "inv_step_cap", values) <= 1 + 1e-12
    assert bound == pytest.approx(_symbolic("analog_sgd_ap", "expr", values), rel=1e-12)
    theta_sym = next(s for s in get_bound("analog_sgd_ap").expr.free_symbols if s.name == "theta")

    def univariate(attr):  # every constant substituted, then a function of theta alone
        expr = getattr(get_bound("analog_sgd_ap"), attr)
        expr = expr.subs({s: values[s.name] for s in expr.free_symbols if s.name != "theta"})
        return sp.lambdify(theta_sym, expr, "numpy")

    grid = np.linspace(1e-4, 1 - 1e-4, 4001)
    cap, expr = univariate("inv_step_cap"), univariate("expr")
    admissible = [t for t in grid if lr * cap(t) <= 1]
    assert admissible, "the grid must contain admissible thetas"
    brute = min(expr(t) for t in admissible)
    assert bound <= brute * (1 + 1e-9)
    assert 0 < theta < max(admissible) + 1e-3  # interior optimum for Theorem 4 here


def test_tightest_theta_of_theorem_2_is_the_cap_root():
    """Theorem 2's bound decreases in theta, so the best theta puts alpha exactly at the cap."""
    constants = dict(L=1.0, Delta=0.2, sigma2=1.0, n=2, q_min=0.6, q_max=1.4, G_inf=0.4)
    lr = 0.1
    theta, _ = tightest_theta("analog_sgd", lr, 500, constants)
    cap = _symbolic("analog_sgd", "inv_step_cap", constants | {"theta": theta})
    assert lr * cap == pytest.approx(1.0, rel=1e-8)


def test_inadmissible_step_raises_and_digital_has_no_theta():
    constants = dict(L=1.0, Delta=0.2, sigma2=1.0, n=2, q_min=0.6, q_max=1.4, G_inf=0.4)
    sup = 0.6 / 1.4**2  # q_min / (L q_max^2), the cap at theta -> 0
    with pytest.raises(ParameterError, match="lr=0.31 is inadmissible for analog_sgd"):
        tightest_theta("analog_sgd", 0.31, 500, constants)
    assert sup < 0.31
    theta, bound = tightest_theta("digital_sgd", 0.5, 100, dict(L=1.0, Delta=0.2, sigma2=1.0, n=2))
    assert theta is None
    assert bound == pytest.approx(2 * 0.2 / (0.5 * 100) + 0.5 / 2)
    with pytest.raises(ParameterError, match="valid range lr < 1"):
        tightest_theta("digital_sgd", 1.5, 100, dict(L=1.0, Delta=0.2, sigma2=1.0, n=2))


# ------------------------------------------------------------------------------------------------
# step cap and theta_max


constants = st.fixed_dictionaries({
    "L": st.floats(0.2, 5.0), "L_s": st.floats(0.2, 5.0), "Delta": st.floats(0.01, 2.0),
    "sigma2": st.floats(0.01, 4.0), "n": st.integers(1, 8), "b": st.integers(1, 8),
    "B": st.integers(1, 8), "M": st.integers(1, 16), "D": st.integers(0, 15),
    "q_min": st.floats(0.05, 0.95), "q_max": st.floats(1.0, 3.0), "G_inf": st.floats(0.0, 2.0),
})


def _h(name: str, lr: float, t: float, values: dict) -> float:
    """``alpha * inv_step_cap(theta) - 1`` on the compiled path theta_max itself uses."""
    return lr * float(compiled_bound(name).inv_cap(t, values)) - 1.0


@settings(max_examples=200)
@given(name=st.sampled_from(THETA_BOUNDS), values=constants, fraction=st.floats(1e-4, 0.9999))
def test_theta_max_is_the_last_admissible_float(name, values, fraction):
    lr = fraction * step_cap(name, values)
    top = theta_max(name, lr, values)
    assert 0 < top <= THETA_HIGH
    assert _h(name, lr, top, values) <= 0  # admits lr
    if top < THETA_HIGH:
        assert _h(name, lr, np.nextafter(top, 1.0), values) > 0  # the next float does not


def test_step_cap_is_the_theta_zero_cap():
    values = dict(L=2.0, q_min=0.6, q_max=1.4, sigma2=1.0, n=1, Delta=0.2, G_inf=0.3)
    assert step_cap("analog_sgd", values) == pytest.approx(0.6 / (2.0 * 1.4**2), rel=1e-15)
    assert step_cap("digital_sgd", values) == pytest.approx(1 / 2.0, rel=1e-15)


def test_theta_max_refuses_inadmissible_steps_and_bounds_without_theta():
    values = dict(L=1.0, q_min=0.6, q_max=1.4)
    with pytest.raises(ParameterError, match="lr=0.31 is inadmissible for analog_sgd"):
        theta_max("analog_sgd", 0.31, values)
    with pytest.raises(ParameterError, match="does not depend on theta"):
        theta_max("digital_sgd", 0.1, dict(L=1.0))


#: (lr, constants) points of the asymptotic figure's kind (Theorem 2, least squares, soft bounds)
ASYMPTOTIC_POINTS = [
    (0.03, dict(L=2.0, sigma2=1.0, n=1, q_min=0.7, q_max=1.3, G_inf=0.3)),
    (0.05, dict(L=2.0, sigma2=1.0, n=1, q_min=0.7, q_max=1.3, G_inf=0.3)),
    (0.015, dict(L=3.7, sigma2=1.0, n=1, q_min=0.41, q_max=1.62, G_inf=0.58)),
    (0.08, dict(L=1.1, sigma2=0.5, n=2, q_min=0.83, q_max=1.17, G_inf=0.17)),
    (1e-4, dict(L=5.0, sigma2=1.0, n=1, q_min=0.2, q_max=2.0, G_inf=0.9)),
]


@pytest.mark.parametrize(("lr", "values"), ASYMPTOTIC_POINTS)
def test_theta_max_is_the_symbolic_root_the_asymptotic_figure_solved(lr, values):
    """The figure used to solve ``alpha * inv_step_cap = 1`` for theta with sympy; same root."""
    bound = get_bound("analog_sgd")
    (root,) = sp.solve(sp.Eq(ALPHA * bound.inv_step_cap, 1), THETA)
    given_values = values | {"alpha": lr}
    exact = float(root.subs({s: given_values[s.name] for s in root.free_symbols}).evalf(30))
    assert 0 < exact < 1
    assert theta_max("analog_sgd", lr, values) == pytest.approx(exact, rel=1e-12)
    top, floor = asymptotic.theory_floor(lr, values)
    assert top == theta_max("analog_sgd", lr, values)
    assert floor == pytest.approx(_symbolic("analog_sgd", "floor", values | {"theta": exact}),
                                  rel=1e-12)


# ------------------------------------------------------------------------------------------------
# tightest theta over a grid


@pytest.mark.parametrize("name", THETA_BOUNDS)
@pytest.mark.parametrize(("fraction", "steps"), [(0.05, 100), (0.3, 1000), (0.8, 5000)])
def test_tightest_theta_beats_every_admissible_theta_of_a_grid(name, fraction, steps):
    values = dict(AP_CONSTANTS, n=2, B=2, M=4)
    lr = fraction * step_cap(name, values)
    theta, bound = tightest_theta(name, lr, steps, values)
    top = theta_max(name, lr, values)
    assert 0 < theta <= top
    c = compiled_bound(name)
    assert bound == float(c.value(theta, steps, lr, values))
    grid = np.linspace(0, top, 2001)[1:]
    on_grid = c.value(grid, steps, lr, values)
    assert np.all(lr * c.inv_cap(grid, values) <= 1)
    assert bound <= on_grid.min() * (1 + 1e-9)


def test_module_exports_are_sorted_and_exist():
    assert list(admissible.__all__) == sorted(admissible.__all__)
    for name in admissible.__all__:
        assert hasattr(admissible, name), name
