"""Theorem 2M (mixed analog and digital blocks): identities, proof steps, monotonicity, simulation.

The symbolic checks follow ``docs/theory.md``, Theorem 2M: the reductions (all blocks on one device
= Theorems 2, 3, 4'; all digital = Theorem 1), the rebuild of each registry expression from the
proof steps, the rate form of Proposition 5 (a), and (hypothesis) the blockwise inner-product step
and the monotonicity of the bound when a block is made digital.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from _sympy_checks import is_zero
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from theory import (
    MIXED_ENTRIES,
    REGISTRY,
    Block,
    ParameterError,
    ap_inv_step_cap,
    ap_kappa,
    bounds_for,
    digital_block,
    evaluate_complexity,
    evaluate_mixed,
    mixed_constants,
    shares_from_sizes,
)
from theory.symbols import (
    B,
    D,
    Delta,
    G2_bar,
    G_inf,
    K,
    L,
    L_s,
    alpha,
    b,
    n,
    p2_bar,
    q_max,
    q_min,
    sigma2,
    theta,
)

FIELDS = ("expr", "inv_step_cap", "rate_a", "rate_c", "floor", "noise_step", "best_step", "batch")
#: each mixed entry and the homogeneous theorem it generalises
PAIRS = {"analog_sgd_mixed": "analog_sgd", "analog_sgd_sp_mixed": "analog_sgd_sp",
         "analog_sgd_ap_mixed": "analog_sgd_ap"}
ONE_DEVICE = {p2_bar: q_max**2, G2_bar: G_inf**2}
ALL_DIGITAL = {q_min: 1, q_max: 1, p2_bar: 1, G2_bar: 0}
d = sp.Symbol("d", nonnegative=True)


# ---- registry structure ----------------------------------------------------------------------

def test_entries_are_derived_mixed_and_the_only_mixed_guarantees():
    for name in MIXED_ENTRIES:
        bound = REGISTRY[name]
        assert bound.provenance == "derived" and bound.proof == "Theorem 2M"
        assert bound.algorithm == "mixed"
        assert {"p2_bar", "G2_bar", "q_min", "q_max"} <= set(bound.parameters)
        assert "G_inf" not in bound.parameters  # the floor reads G2_bar only
        assert bounds_for(bound.mode, "mixed") == (bound,)
    assert [REGISTRY[x].mode for x in MIXED_ENTRIES] == ["none", "sync", "async"]
    for mode in ("none", "sync", "async"):  # the homogeneous guarantees are unchanged
        assert all(x.algorithm == "analog" for x in bounds_for(mode))


# ---- reductions --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", MIXED_ENTRIES)
def test_one_device_on_every_block_is_todays_theorem(name):
    mixed, today = REGISTRY[name], REGISTRY[PAIRS[name]]
    for field in FIELDS:
        assert is_zero(getattr(mixed, field).subs(ONE_DEVICE) - getattr(today, field)), field


def test_all_digital_is_theorem_1():
    mixed, digital = REGISTRY["analog_sgd_mixed"], REGISTRY["digital_sgd"]
    assert is_zero(mixed.expr.subs(ALL_DIGITAL) - digital.expr)  # exactly, every theta
    assert mixed.floor.subs(ALL_DIGITAL) == 0
    for field in ("inv_step_cap", "rate_a", "rate_c", "noise_step"):
        reduced = sp.limit(getattr(mixed, field).subs(ALL_DIGITAL), theta, 0, "+")
        assert is_zero(reduced - getattr(digital, field)), field
    sync = REGISTRY["analog_sgd_sp_mixed"]
    assert is_zero(sync.expr.subs(ALL_DIGITAL) - digital.expr.subs(n, B * b))
    ap, ideal = REGISTRY["analog_sgd_ap_mixed"], REGISTRY["analog_sgd_ap"]
    for field in FIELDS:
        assert is_zero(getattr(ap, field).subs(ALL_DIGITAL)
                       - getattr(ideal, field).subs({q_min: 1, q_max: 1, G_inf: 0})), field


def test_analog_share_scales_the_floor():
    """k analog blocks of one device, the rest digital: G2_bar = s_A G^2, floor = s_A x today's."""
    s_a = sp.Symbol("s_A", positive=True)
    for name in MIXED_ENTRIES:
        mixed, today = REGISTRY[name], REGISTRY[PAIRS[name]]
        assert is_zero(mixed.floor.subs(G2_bar, s_a * G_inf**2) - s_a * today.floor)


# ---- the proof steps ---------------------------------------------------------------------------

def test_statement_a_rebuilt_from_steps_3_to_5():
    """Step 5: descent with Step 3's bracket and Step 4's second moment, divided by alpha q K/2."""
    for name, batch in (("analog_sgd_mixed", n), ("analog_sgd_sp_mixed", B * b)):
        sn2 = sigma2 / batch
        constant = alpha * G2_bar * sn2 / (2 * theta * q_min) + L * alpha**2 * p2_bar * sn2 / 2
        rebuilt = (Delta + K * constant) / (alpha * q_min * K / 2)
        assert is_zero(rebuilt - REGISTRY[name].expr), name
        assert is_zero(REGISTRY[name].inv_step_cap - L * q_max**2 / ((1 - theta) * q_min))


def test_step5_bracket_at_the_worst_block():
    s, w = sp.symbols("s w", positive=True)
    th = s / (1 + s)
    step = (1 - th) * q_min / (L * q_max**2) / (1 + w)  # any alpha <= cap
    bracket = q_min * (1 - th / 2) - L * step * q_max**2 / 2
    assert sp.factor(sp.together(bracket - q_min / 2)).is_nonnegative


def test_statement_c_rebuilt_from_steps_2_to_6():
    """Theorem 4''s steps with the window's bias X = D^2 G2_bar and noise Y = D p2_bar."""
    ap = REGISTRY["analog_sgd_ap_mixed"]
    x, y = D**2 * G2_bar, D * p2_bar
    lam = sp.Rational(1, 2)
    window = (sp.sqrt(x) + sp.sqrt(y)) ** 2  # Step 6: min over lambda_2 + lambda_3 = 1 - lambda
    stale = 2 * ap_kappa() / (1 - lam) * L_s**2 * alpha**2 * window * sigma2 / b
    base = REGISTRY["analog_sgd_mixed"].expr.subs(n, b)
    assert is_zero(base + stale - ap.expr)
    assert is_zero(ap.inv_step_cap - ap_inv_step_cap())  # Theorem 4''s cap at the worst block
    assert ap.expr.subs(D, 0) == base  # D = 0: statement (a) with n = b


def _gauss_abs_mean(x, s):
    """E|x + nu| for nu ~ N(0, s^2) (s > 0)."""
    tail = 1 - 2 * norm.cdf(-x / s)
    return s * math.sqrt(2 / math.pi) * np.exp(-(x**2) / (2 * s**2)) + x * tail


@st.composite
def blocks_and_point(draw):
    m = draw(st.integers(1, 5))
    sizes = [draw(st.integers(1, 4)) for _ in range(m)]
    digital = [draw(st.booleans()) for _ in range(m)]
    rows = []
    for dig in digital:
        if dig:
            rows.append((1.0, 1.0, 0.0))
        else:
            lo = draw(st.floats(0.1, 1.0))
            hi = lo * draw(st.floats(1.0, 3.0))
            rows.append((lo, hi, draw(st.floats(0.0, 1.0)) * (hi - lo) / 2))
    grad = np.array([draw(st.floats(-3, 3)) for _ in range(sum(sizes))])
    return sizes, rows, grad, draw(st.floats(0.05, 3.0))


@settings(max_examples=200, deadline=None)
@given(blocks_and_point())
def test_step2_blockwise_inner_product(data):
    """E<grad, U(grad + nu)> >= q ||grad||^2 - sqrt(G2_bar) ||grad|| sigma_n (Gaussian noise).

    Per coordinate the responses F_i, G_i are drawn inside the block's A3 box (q_- = F + G and
    q_+ = F - G in [q_min_m, q_max_m], |G| <= G_inf_m) and E|x + nu| is exact.
    """
    sizes, rows, grad, sigma_n = data
    rng = np.random.default_rng(len(grad))
    shares = shares_from_sizes(sizes)
    agg = mixed_constants([(*row, s) for row, s in zip(rows, shares, strict=True)])
    lhs = 0.0
    start = 0
    for size, (lo, hi, g_inf) in zip(sizes, rows, strict=True):
        g = rng.uniform(-1, 1, size) * g_inf
        f = rng.uniform(lo + np.abs(g), np.maximum(hi - np.abs(g), lo + np.abs(g)))
        x = grad[start:start + size]
        s = sigma_n / math.sqrt(len(grad))  # isotropic: E||nu^(m)||^2 = s_m sigma_n^2
        lhs += float(np.sum(x * (f * x + g * _gauss_abs_mean(x, s))))
        start += size
    norm_g = float(np.linalg.norm(grad))
    rhs = agg.q_min * norm_g**2 - math.sqrt(agg.G2_bar) * norm_g * sigma_n
    assert lhs >= rhs - 1e-9 * (1 + abs(rhs))


# ---- aggregation and evaluation ----------------------------------------------------------------

def test_mixed_constants_of_one_device_and_of_digital_blocks():
    one = mixed_constants([(0.5, 1.5, 0.4, 0.25)] * 4)
    assert (one.q_min, one.q_max, one.analog_blocks, one.analog_share) == (0.5, 1.5, 4, 1.0)
    assert one.p2_bar == pytest.approx(2.25) and one.G2_bar == pytest.approx(0.16)
    half = mixed_constants([(0.5, 1.5, 0.4, 0.25)] * 2 + [digital_block(0.25)] * 2)
    assert (half.q_min, half.q_max, half.analog_blocks, half.analog_share) == (0.5, 1.5, 2, 0.5)
    assert half.p2_bar == pytest.approx(0.5 * 2.25 + 0.5) and half.G2_bar == pytest.approx(0.08)
    none = mixed_constants([digital_block(0.5)] * 2)
    assert none.values() == {"q_min": 1.0, "q_max": 1.0, "p2_bar": 1.0, "G2_bar": 0.0}


def test_bad_blocks_are_one_line_errors():
    with pytest.raises(ParameterError, match="^blocks: noise_share sums to 0.5"):
        mixed_constants([(0.5, 1.5, 0.4, 0.25)] * 2)
    with pytest.raises(ParameterError, match="^blocks=\\[\\] is empty"):
        mixed_constants([])
    with pytest.raises(ParameterError, match="^G_inf=0.6 is out of range"):
        Block(0.5, 1.5, 0.6, 1.0)
    with pytest.raises(ParameterError, match="^q_max=0.4 is out of range"):
        Block(0.5, 0.4, 0.0, 1.0)
    with pytest.raises(ParameterError, match="^blocks=3"):
        mixed_constants([3])
    base = dict(L=1.0, Delta=1.0, sigma2=1.0, theta=0.5, n=4, b=1, M=1)
    with pytest.raises(ParameterError, match="^q_min=0.5 is given twice"):
        evaluate_mixed("none", 1.0, [(0.5, 1.5, 0.4, 1.0)], q_min=0.5, **base)
    with pytest.raises(ParameterError, match="^mode='dp' is unknown"):
        evaluate_mixed("dp", 1.0, [(0.5, 1.5, 0.4, 1.0)], **base)
    with pytest.raises(ParameterError, match="^p2_bar=3 is out of range"):
        evaluate_complexity("analog_sgd_mixed", 1.0, q_min=0.5, q_max=1.5, p2_bar=3.0,
                            G2_bar=0.0, **base)
    with pytest.raises(ParameterError, match="^G2_bar=0.3 is out of range"):
        evaluate_complexity("analog_sgd_mixed", 1.0, q_min=0.5, q_max=1.5, p2_bar=1.0,
                            G2_bar=0.3, **base)


VALUES = dict(L=1.0, L_s=1.0, Delta=1.0, sigma2=1.0, theta=0.5, n=4, B=4, b=1, M=4)


@pytest.mark.parametrize("mode", ["none", "sync", "async"])
def test_evaluate_mixed_of_one_device_equals_todays_evaluation(mode):
    device = dict(q_min=0.5, q_max=1.5, G_inf=0.4)
    today = bounds_for(mode)[0].name
    got = evaluate_mixed(mode, 2.0, [(0.5, 1.5, 0.4, 0.25)] * 4, **VALUES)
    want = evaluate_complexity(today, 2.0, **VALUES, **device)
    for field in ("floor", "rate_a", "rate_c", "iterations", "samples", "cycles", "step"):
        assert float(getattr(got, field)) == pytest.approx(float(getattr(want, field)),
                                                           rel=1e-12), field


def test_evaluate_mixed_all_digital_has_no_floor_and_theorem_1s_a():
    got = evaluate_mixed("none", 0.1, [digital_block(0.5)] * 2, **VALUES)
    want = evaluate_complexity("digital_sgd", 0.1, **VALUES)
    assert float(got.floor) == 0 and float(got.rate_a) == pytest.approx(float(want.rate_a))


# ---- monotonicity: a digital block never increases the bound -----------------------------------

@st.composite
def normalised_blocks(draw):
    """Analog blocks with q_min_m <= 1 <= q_max_m (normalised responses), some digital."""
    m = draw(st.integers(1, 8))
    raw = [draw(st.floats(0.05, 1.0)) for _ in range(m)]
    shares = [x / sum(raw) for x in raw]
    rows = []
    for share in shares:
        if draw(st.booleans()):
            rows.append(digital_block(share))
        else:
            lo, hi = draw(st.floats(0.05, 1.0)), draw(st.floats(1.0, 3.0))
            rows.append(Block(lo, hi, draw(st.floats(0, 1)) * (hi - lo) / 2, share))
    return rows, draw(st.integers(0, m - 1))


def _numbers(name, blocks, eps):
    values = {"L": 1.3, "L_s": 0.7, "Delta": 2.0, "sigma2": 1.5, "theta": 0.4, "n": 8, "B": 4,
              "b": 2, "M": len(blocks), **mixed_constants(blocks).values()}
    result = evaluate_complexity(name, eps, on_unreachable="status", **values)
    return result, values


@settings(max_examples=150, deadline=None)
@given(normalised_blocks(), st.sampled_from(MIXED_ENTRIES))
def test_making_a_block_digital_never_increases_the_bound(data, name):
    blocks, which = data
    made = list(blocks)
    made[which] = digital_block(blocks[which].noise_share)
    before, v0 = _numbers(name, blocks, 2.0)
    after, v1 = _numbers(name, made, 2.0)
    tol = 1e-12
    # (c)'s c = 2 Delta/(alpha_AP q) + R P/Q is not monotone: Proposition 5's step sqrt(P/(QK))
    # grows as Q (p2_bar) falls, and R alpha^2 pays for it (docs/theory.md, Theorem 2M)
    fields = ("floor", "rate_a") if name == "analog_sgd_ap_mixed" else ("floor", "rate_a", "rate_c")
    for field in fields:
        assert float(getattr(after, field)) <= float(getattr(before, field)) * (1 + tol), field
    if before.status == "reachable" and name != "analog_sgd_ap_mixed":
        assert after.status == "reachable"
        assert float(after.iterations) <= float(before.iterations) * (1 + tol)
    bound = REGISTRY[name]
    args = sorted(bound.expr.free_symbols - {K, alpha}, key=str)
    f = sp.lambdify((K, alpha, *args), bound.expr, "math")
    cap = sp.lambdify(args, bound.inv_step_cap, "math")
    delay = {"D": v0["M"] - 1}
    at = [(v0 | delay)[a.name] for a in args]
    at1 = [(v1 | delay)[a.name] for a in args]
    assert cap(*at1) <= cap(*at) * (1 + tol)
    step = 0.5 / cap(*at)  # admissible for both (the cap never shrinks)
    for k in (1.0, 100.0, 1e6):  # the bound itself, at every (K, alpha), for all three
        assert f(k, step, *at1) <= f(k, step, *at) * (1 + tol)


def test_async_rate_c_can_grow_when_a_block_turns_digital():
    """Documented: the rate form's c of (c) is not monotone (the bound expression is)."""
    before = [Block(1.0, 2.0, 0.0, 0.5), Block(1.0, 2.0, 0.5, 0.5)]
    after = [digital_block(0.5), Block(1.0, 2.0, 0.5, 0.5)]
    c0 = float(_numbers("analog_sgd_ap_mixed", before, 2.0)[0].rate_c)
    c1 = float(_numbers("analog_sgd_ap_mixed", after, 2.0)[0].rate_c)
    assert c1 > c0


def test_monotonicity_needs_normalised_responses():
    """A block with q_min > 1 sets q; making it digital lowers q to 1 and raises the bound."""
    high = [Block(1.2, 1.4, 0.0, 0.5), Block(1.2, 1.4, 0.0, 0.5)]
    made = [digital_block(0.5), Block(1.2, 1.4, 0.0, 0.5)]
    before, _ = _numbers("analog_sgd_mixed", high, 2.0)
    after, _ = _numbers("analog_sgd_mixed", made, 2.0)
    assert float(after.rate_c) > float(before.rate_c)


# ---- simulation: SimConfig.digital_stages, the engine, the pairing ------------------------------

def test_digital_stages_is_checked_and_stored_sorted():
    from simulate import SimConfig

    config = SimConfig(algorithm="mixed", stages=4, digital_stages="4, 1")
    assert config.digital_stages == "1,4" and config.digital_stage_indices == (1, 4)
    assert SimConfig().digital_stages == "" and SimConfig().digital_stage_indices == ()
    bad = [
        (dict(algorithm="mixed", stages=4, digital_stages="5"), "^digital_stages='5' is out of"),
        (dict(algorithm="mixed", stages=4, digital_stages="0"), "^digital_stages='0' is out of"),
        (dict(algorithm="mixed", stages=4, digital_stages="2,2"), "^digital_stages='2,2' is out"),
        (dict(algorithm="mixed", stages=4, digital_stages="x"), "^digital_stages='x' is out of"),
        (dict(algorithm="analog", stages=4, digital_stages="1"),
         "^digital_stages='1' applies to algorithm='mixed' only"),
    ]
    for kwargs, message in bad:
        with pytest.raises(ParameterError, match=message) as info:
            SimConfig(**kwargs)
        assert "\n" not in str(info.value)


@pytest.mark.parametrize("mode", ["none", "sync", "async"])
def test_no_digital_stage_is_analog_and_every_stage_is_digital_bit_for_bit(mode):
    from simulate import SimConfig, run

    base = dict(stages=4, mode=mode, micro_batches=1 if mode == "async" else 2, steps=200,
                seeds=3, lr=0.05, log_every=50)
    analog = run(SimConfig(algorithm="analog", **base))
    mixed = run(SimConfig(algorithm="mixed", **base))
    digital = run(SimConfig(algorithm="digital", **base))
    every = run(SimConfig(algorithm="mixed", digital_stages="1,2,3,4", **base))
    for a, b_ in ((analog, mixed), (digital, every)):
        for field in ("avg_grad_norm2", "loss", "grad_norm2", "w_min_visited", "w_max_visited"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b_, field))


def test_network_mixed_runs_are_analog_and_digital_at_the_ends_bit_for_bit():
    from simulate import SimConfig, run

    base = dict(problem="digits-mlp", stages=4, steps=10, seeds=1, lr=0.05, log_every=10,
                micro_batch_size=4)
    analog, digital = (run(SimConfig(algorithm=a, **base)) for a in ("analog", "digital"))
    mixed = run(SimConfig(algorithm="mixed", **base))
    every = run(SimConfig(algorithm="mixed", digital_stages="1,2,3,4", **base))
    half = run(SimConfig(algorithm="mixed", digital_stages="1,2", **base))
    np.testing.assert_array_equal(analog.loss, mixed.loss)
    np.testing.assert_array_equal(digital.loss, every.loss)
    assert not np.array_equal(half.loss, analog.loss)
    assert not np.array_equal(half.loss, digital.loss)


def test_digital_stage_updates_exactly_and_analog_stages_through_the_device():
    """digital_blocks: the listed blocks get w + dw exactly, the others keep the device's update."""
    from simulate import expected_update
    from simulate.device import digital_blocks
    from theory import make_device

    device = make_device("softbounds", tau=1.0, dw_min=0.001)
    rng = np.random.default_rng(0)
    w, dw = rng.uniform(-0.5, 0.5, (2, 6)), rng.normal(0, 0.1, (2, 6))
    analog = expected_update(w, dw, device)
    mixed = digital_blocks(analog.copy(), w, dw, [slice(0, 2), slice(4, 6)])
    np.testing.assert_array_equal(mixed[:, 0:2], w[:, 0:2] + dw[:, 0:2])
    np.testing.assert_array_equal(mixed[:, 4:6], w[:, 4:6] + dw[:, 4:6])
    np.testing.assert_array_equal(mixed[:, 2:4], analog[:, 2:4])
    assert not np.array_equal(analog[:, 0:2], w[:, 0:2] + dw[:, 0:2])  # the device matters here


def test_check_plugs_in_the_aggregated_constants_of_the_run():
    from simulate import check_bound, device_from_config
    from simulate.verification import config_for

    config = config_for("analog_sgd_sp_mixed", stages=4, micro_batches=4, digital_stages="1,2",
                        steps=300, seeds=4, lr=0.05, log_every=300)
    check = check_bound("analog_sgd_sp_mixed", config)
    c = check.constants
    # analog stages 3, 4 on the region they visited; stages 1, 2 digital; shares 1/4 (dim 16)
    dc = device_from_config(config).constants(c["w_lo"], c["w_hi"])
    assert c["q_min"] == pytest.approx(min(dc.q_min, 1.0))
    assert c["q_max"] == pytest.approx(max(dc.q_max, 1.0))
    assert c["p2_bar"] == pytest.approx(0.5 * dc.q_max**2 + 0.5)
    assert c["G2_bar"] == pytest.approx(0.5 * dc.G_inf**2)
    assert check.passed and check.ratio > 1


def test_simulated_floor_follows_the_analog_share():
    """Paired runs (same noise): the tail error falls as stages turn digital, as the bound's floor.

    Threshold: the all-analog minus half-digital difference of the tail means is > 10 standard
    errors at these settings (measured ~40; bench.mixed_floors has the long runs)."""
    from simulate import SimConfig, empirical_floor

    base = dict(problem="quadratic", mode="sync", algorithm="mixed", stages=4, micro_batches=1,
                lr=0.02, steps=3000, seeds=8, log_every=3000)
    tails = [empirical_floor(SimConfig(digital_stages=d, **base)) for d in ("", "1,2", "1,2,3,4")]
    for hi, lo in zip(tails, tails[1:], strict=False):
        diff = hi.per_seed - lo.per_seed
        assert diff.mean() > 10 * diff.std(ddof=1) / math.sqrt(diff.size)
