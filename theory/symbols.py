"""The sympy symbols of the theory, each with its assumptions (one place for every symbol).

Positive real symbols let sympy prove monotonicity with ``diff(expr, x).is_positive``; integer
symbols carry ``integer=True``. Names follow ``theory-spec``: problem constants (``L``, ``Delta``,
``sigma2``), batch and pipeline sizes (``b``, ``B``, ``M``, ``N``, ``D``), the optimisation run
(``K``, ``alpha``, ``eps``), and the device constants (``q_min``, ``q_max``, ``G_inf``, ``tau``,
``W_max``).
"""

from __future__ import annotations

import sympy as sp

__all__ = [
    "B", "D", "Delta", "G2_bar", "G2_iter", "G_inf", "K", "L", "L_s", "M", "N", "T", "W_max",
    "alpha", "b", "beta", "eps", "kappa_2", "lam", "m", "mb", "n", "p2_bar", "q_max", "q_min",
    "rho", "sigma2", "tau", "theta",
]

# problem (A1, A2)
L = sp.Symbol("L", positive=True)  #: smoothness constant of f
L_s = sp.Symbol("L_s", positive=True)  #: Lipschitz constant of the stale signal (A4)
Delta = sp.Symbol("Delta", positive=True)  #: f(W_0) - f*
sigma2 = sp.Symbol("sigma2", positive=True)  #: per-sample gradient variance
n = sp.Symbol("n", positive=True, integer=True)  #: samples per gradient (batch size)
#: norm bound of the gradient signal's bias (A2_beta, Proposition IO; 0: unbiased)
beta = sp.Symbol("beta", nonnegative=True)

# batch and pipeline sizes
b = sp.Symbol("b", positive=True, integer=True)  #: samples per micro-batch
B = sp.Symbol("B", positive=True, integer=True)  #: micro-batches per mini-batch (sync)
M = sp.Symbol("M", positive=True, integer=True)  #: pipeline stages
N = sp.Symbol("N", positive=True, integer=True)  #: micro-batches in an asynchronous run
D = sp.Symbol("D", nonnegative=True, integer=True)  #: maximal delay, M - 1
m = sp.Symbol("m", positive=True, integer=True)  #: stage index, 1..M (stage 1 takes the input)
mb = sp.Symbol("b_mb", positive=True, integer=True)  #: micro-batch index, 1-based

# optimisation run
K = sp.Symbol("K", positive=True)  #: iterations (updates); positive real for the complexity algebra
alpha = sp.Symbol("alpha", positive=True)  #: step size (learning rate)
eps = sp.Symbol("epsilon", positive=True)  #: target for (1/K) sum_k E||grad f(W_k)||^2
theta = sp.Symbol("theta", positive=True)  #: Young's-inequality split, in (0, 1)
#: Lemma A's weight of ||x_k||^2 in Theorem 4' (general form), in (0, (1 - theta)/2)
kappa_2 = sp.Symbol("kappa_2", positive=True)
#: Tiki-Taka's transfer period (updates between transfers; Corollary TT0)
T = sp.Symbol("T", positive=True, integer=True)
#: Tiki-Taka's transfer rate relative to the step, ``transfer_lr``: beta = rho alpha (Corollary TT0)
rho = sp.Symbol("rho", positive=True)
#: Theorem 4''s weight lambda_1 of the gradient part of the staleness (general form), in (0, 1)
lam = sp.Symbol("lam", positive=True)

# device (A3)
q_min = sp.Symbol("q_min", positive=True)  #: lower bound of the response functions
q_max = sp.Symbol("q_max", positive=True)  #: upper bound of the response functions
G_inf = sp.Symbol("G_inf", nonnegative=True)  #: sup |G(w)| = sup |q_- - q_+|/2 on the region
tau = sp.Symbol("tau", positive=True)  #: dynamic range of the soft-bounds device
W_max = sp.Symbol("W_max", positive=True)  #: bound on ||W_k||_inf, W_max < tau

# mixed analog/digital blocks (Theorem 2M of docs/theory.md; aggregated by theory.mixed)
#: noise-weighted mean of the blocks' q_max^2: sum_m s_m q_max,m^2 (digital block: 1)
p2_bar = sp.Symbol("p2_bar", positive=True)
#: noise-weighted mean of the blocks' G_inf^2: sum_m s_m G_inf,m^2 (digital block: 0)
G2_bar = sp.Symbol("G2_bar", nonnegative=True)

# the iterate average of Theorem LF (docs/theory.md; the local-floor rows ``*_local``)
#: (1/K) sum_k E sum_i s_i G_i(W_k)^2 (s_i: the noise's share of coordinate i, A2S) over the
#: points where the proof evaluates the response; at most G_inf^2 (G2_bar for mixed blocks)
G2_iter = sp.Symbol("G2_iter", nonnegative=True)
