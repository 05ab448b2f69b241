"""The asynchronous step caps against the stability limit of the delayed recursion.

On ``f = (L/2) w^2`` with a constant response ``q_+ = q_- = q_max`` (admissible under A3 with
``G = 0``) and a block of delay ``D``, the asynchronous update is ``w_{k+1} = w_k - a w_{k-D}``
with ``a = alpha L q_max``, and A4 holds with ``L_s = L``. It is stable iff
``0 < a < 2 sin(pi/(4D + 2))`` (docs/theory.md, Theorem 4', remark on the cap). A bound valid for
``alpha`` must therefore have ``alpha L q_max`` below that limit whenever ``L_s >= L``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

from theory import REGISTRY, ap_inv_step_cap, ap_kappa, ap_root, compile_expr
from theory.step_choice import stability_limit
from theory.symbols import D, L, L_s, q_max, q_min, theta

ASYNC = [name for name, bound in REGISTRY.items() if bound.mode == "async"]
DELAYS = np.arange(1, 65)
#: device and problem constant sets (L_s >= L: the quadratic instance needs L_s = L at least)
CONSTANT_SETS = [
    {"L": 1.0, "L_s": 1.0, "q_min": 1.0, "q_max": 1.0, "G_inf": 0.0, "theta": 1e-6},
    {"L": 1.0, "L_s": 1.0, "q_min": 0.5, "q_max": 1.5, "G_inf": 0.4, "theta": 0.5},
    {"L": 3.0, "L_s": 3.0, "q_min": 0.9, "q_max": 1.1, "G_inf": 0.1, "theta": 0.05},
    {"L": 0.2, "L_s": 0.5, "q_min": 0.2, "q_max": 1.8, "G_inf": 0.8, "theta": 0.9},
    {"L": 10.0, "L_s": 10.0, "q_min": 0.999, "q_max": 1.0, "G_inf": 0.0, "theta": 0.01},
]


def spectral_radius(a: float, delay: int) -> float:
    """Largest root modulus of z^{D+1} - z^D + a (companion matrix of the recursion)."""
    companion = np.zeros((delay + 1, delay + 1))
    companion[0, 0] = 1.0
    companion[0, delay] -= a
    companion[1:, :-1] += np.eye(delay)
    return float(np.max(np.abs(np.linalg.eigvals(companion))))


@pytest.mark.parametrize("delay", range(1, 17))
def test_delayed_recursion_stability_limit(delay):
    limit = stability_limit(delay)
    assert limit == pytest.approx(2 * math.sin(math.pi / (4 * delay + 2)), rel=1e-15)
    assert spectral_radius(limit * (1 - 1e-3), delay) < 1
    assert spectral_radius(limit * (1 + 1e-3), delay) > 1
    assert spectral_radius(limit, delay) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("name", ASYNC)
@pytest.mark.parametrize("values", CONSTANT_SETS)
def test_async_caps_below_the_stability_limit(name, values):
    bound = REGISTRY[name]
    point = {**values, "D": DELAYS, "M": DELAYS + 1, "b": 1}
    if bound.algorithm == "tiki-taka":
        # Corollary TT0-AP: the recursion is that of the writes of C, of delay D writes and
        # step eta = rho alpha^2 T; its cap on alpha is the cap on eta, whatever rho and T
        for every, rho in ((1, 1.0), (4, 2.5), (16, 0.1)):
            cap = 1.0 / compile_expr(bound.inv_step_cap)({**point, "T": every, "rho": rho})
            eta = rho * cap**2 * every
            assert np.all(eta * values["L"] * values["q_max"] < stability_limit(DELAYS)), name
        return
    cap = 1.0 / compile_expr(bound.inv_step_cap)(point)
    # digital rows update exactly: the recursion's a is alpha L
    gain = values["q_max"] if bound.algorithm == "analog" else 1.0
    assert np.all(cap * values["L"] * gain < stability_limit(DELAYS)), name


def test_theorem_4prime_cap_at_most_quarter_of_the_limit_symbolic():
    """For L_s >= L: 1/(alpha_AP L q_max) >= 2 + 2D, and 2/(2D + 1) > 1/(2 + 2D) lies below the
    limit (sin x >= 2x/pi on [0, pi/2]): the cap is at least ~pi x below the limit."""
    s, v, ell, d = sp.symbols("s v ell d", nonnegative=True)
    enc = {theta: s / (1 + s), q_max: q_min * (1 + v), L_s: L * (1 + ell), D: 1 + d}
    kappa = ap_kappa().subs(enc)
    assert sp.factor(sp.together(8 * kappa / (1 - theta.subs(enc)) - 4)).is_nonnegative
    root = ap_root()
    normalised = (ap_inv_step_cap() / (L * q_max)).subs(root, 2 + sp.Symbol("y", nonnegative=True))
    gap = sp.factor(sp.together(sp.expand(normalised.subs(enc) - (2 + 2 * (1 + d)))))
    assert gap.is_nonnegative, gap
    delays = np.arange(1, 10_000)
    assert np.all(1 / (2 + 2 * delays) < 2 / (2 * delays + 1))
    assert np.all(2 / (2 * delays + 1) <= stability_limit(delays))


# -- the simulator at the limit -----------------------------------------------------------------

def _decoupled_quadratic(config, seed=None):
    """``f = (L/2)||W||^2`` with ``L = 1``: each stage block evolves alone, block 1 with delay
    ``D = M - 1``, so the asynchronous pipeline runs the recursion ``x_{k+1} = x_k - a x_{k-D}``
    on it (digital update, ``a = lr``)."""
    from simulate.problems import Quadratic

    dim = config.dim
    return Quadratic(stages=config.stages, sigma2=config.sigma2, w0=np.ones(dim),
                     A=np.eye(dim), w_star=np.zeros(dim), L=1.0)


@pytest.mark.parametrize("stages", [2, 4, 8])
def test_the_simulator_diverges_just_above_the_stability_limit(stages, monkeypatch):
    """The async oracle run (A = I, so ``a = alpha L``) converges at 0.9 of the limit and raises
    DivergenceError at 1.1 of it: the limit is the simulator's, not only the recursion's."""
    import simulate.engine as engine
    from simulate import SimConfig
    from theory import DivergenceError

    monkeypatch.setattr(engine, "make_problem", _decoupled_quadratic)
    limit = stability_limit(stages - 1)
    common = dict(problem="quadratic", mode="async", algorithm="digital", stages=stages,
                  dim=stages, sigma2=1e-12, steps=6000, seeds=1, log_every=100)
    below = engine.run(SimConfig(lr=0.9 * limit, **common))
    assert below.grad_norm2[0, -1] < 1e-6 * below.grad_norm2[0, 0]
    with pytest.raises(DivergenceError, match="diverged at step"):
        engine.run(SimConfig(lr=1.1 * limit, **common))


def test_stability_limit_scales_with_the_curvature_and_the_response():
    assert stability_limit(0) == pytest.approx(2.0)
    assert stability_limit(3, L=2.0, q_max=1.5) == pytest.approx(stability_limit(3) / 3.0)
    assert stability_limit(np.arange(4)).shape == (4,)
    from theory import ParameterError
    with pytest.raises(ParameterError, match="D=-1"):
        stability_limit(-1)
    with pytest.raises(ParameterError, match="L=0"):
        stability_limit(1, L=0.0)
