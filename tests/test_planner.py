"""The planner: exact optimum = brute force, relaxation <= optimum, constraints, errors."""

from __future__ import annotations

import itertools
import json
import math
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bounds import (
    OPTIMAL,
    RELAXATION_FAILED,
    Layer,
    Model,
    PlanHardware,
    PlanLimits,
    ProblemParams,
    best_partition,
    from_preset,
    plan,
)
from bounds.planning import (
    NO_MODE,
    SKIPPED,
    SOLVER_ERROR,
    build_gp,
    rate_monomials,
    solve_relaxation,
)
from simulate import build_timeline
from theory import (
    ParameterError,
    UnreachableTargetError,
    bounds_for,
    cycles_for_iterations,
    evaluate_complexity,
    in_flight,
)
from theory.symbols import B as B_SYM
from theory.symbols import K as K_SYM
from theory.symbols import M as M_SYM

ALGO = {"sync": "analog_sgd_sp", "async": "analog_sgd_ap"}
#: the proved bounds of each mode (Corollary 3; Theorem 4' and 4'B), stated here independently
GUARANTEES = {"sync": ("analog_sgd_sp",), "async": ("analog_sgd_ap", "analog_sgd_ap_b")}


def test_the_stated_guarantees_are_the_registry_s():
    for mode, names in GUARANTEES.items():
        assert tuple(b.name for b in bounds_for(mode)) == names


@cache
def held_from_timeline(mode: str, stages: int, micro_batches: int) -> tuple[int, ...]:
    """Most micro-batches between their forward and backward at each stage, from the timeline."""
    count = micro_batches if mode == "sync" else stages + 3  # async: enough to fill the pipe
    events = build_timeline(mode, stages, count).events
    fwd = {(e.stage, e.micro_batch): e.cycle for e in events if e.kind == "F"}
    bwd = {(e.stage, e.micro_batch): e.cycle for e in events if e.kind == "B"}
    out = []
    for m in range(1, stages + 1):
        spans = [(fwd[m, k], bwd[m, k]) for k in range(1, count + 1)]
        cycles = range(max(b for _, b in spans) + 1)
        out.append(max(sum(f <= t <= b for f, b in spans) for t in cycles))
    return tuple(out)


def brute_force(model, hw, problem, eps, limits):
    """Best seconds of every (mode, M), trying every partition, B and b (independent of planner)."""
    dc = hw.hardware.device_constants()
    values = dict(L=problem.L, L_s=problem.L_s, Delta=problem.Delta, sigma2=problem.sigma2,
                  theta=problem.theta, q_min=dc.q_min, q_max=dc.q_max, G_inf=dc.G_inf)
    tiles = [layer.tiles(hw.hardware.tile_rows, hw.hardware.tile_cols) for layer in model.layers]
    work = [layer.mvms_per_sample for layer in model.layers]
    acts = [layer.activations for layer in model.layers]
    n = len(model.layers)
    best = {}
    for mode in limits.modes:
        for stages in range(1, min(hw.accelerators, n) + 1):
            counts = range(1, limits.max_micro_batches + 1) if mode == "sync" else [1]
            for cuts in itertools.combinations(range(1, n), stages - 1):
                bounds = list(zip((0, *cuts), (*cuts, n), strict=True))
                if any(sum(tiles[s:e]) > hw.tiles_per_accelerator for s, e in bounds):
                    continue
                slowest = max(sum(work[s:e]) for s, e in bounds)
                sizes = range(1, limits.max_micro_batch_size + 1)
                for count, b in itertools.product(counts, sizes):
                    held = held_from_timeline(mode, stages, count)
                    memory = [b * h * sum(acts[s:e]) * hw.bytes_per_activation
                              for h, (s, e) in zip(held, bounds, strict=True)]
                    if max(memory) > hw.activation_buffer_bytes:
                        continue
                    # the planner's objective: the fewest cycles over the proved bounds of the mode
                    cycles = []
                    for name in GUARANTEES[mode]:
                        try:
                            r = evaluate_complexity(name, eps, B=count, b=b, M=stages, **values)
                        except UnreachableTargetError:
                            continue
                        cycles.append(float(r.cycles))
                    if not cycles:
                        continue
                    seconds = min(cycles) * hw.timing.stage_time_s(b * slowest)
                    key = (mode, stages)
                    best[key] = min(best.get(key, math.inf), seconds)
    return best


@st.composite
def instances(draw):
    n = draw(st.integers(1, 4))
    layers = tuple(
        Layer(f"l{i}", draw(st.integers(1, 256)), draw(st.integers(1, 256)),
              draw(st.integers(1, 5)), draw(st.integers(0, 400)))
        for i in range(n)
    )
    base = from_preset("softbounds-tau1", weight_bound=draw(st.floats(0.05, 0.9)),
                       read_time_s=draw(st.sampled_from([8e-8, 1e-6])))
    hw = PlanHardware(
        base, accelerators=draw(st.integers(1, 4)),
        tiles_per_accelerator=draw(st.integers(4, 16)),
        activation_buffer_bytes=float(draw(st.integers(400, 12000))),
        bytes_per_activation=draw(st.sampled_from([1, 2])),
    )
    problem = ProblemParams(L=draw(st.floats(0.2, 5)), Delta=draw(st.floats(0.2, 5)),
                            sigma2=draw(st.floats(0.1, 5)), theta=draw(st.floats(0.2, 0.8)))
    limits = PlanLimits(draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    eps = draw(st.floats(0.2, 20))
    return Model("random", layers), hw, problem, eps, limits


@settings(max_examples=60)
@given(instances())
def test_plan_equals_brute_force(instance):
    model, hw, problem, eps, limits = instance
    expected = brute_force(model, hw, problem, eps, limits)
    if not expected:
        with pytest.raises((ParameterError, UnreachableTargetError)):
            plan(model, hw, problem, eps, limits)
        return
    result = plan(model, hw, problem, eps, limits)
    ranked = sorted(expected.values())
    assert result.seconds == pytest.approx(ranked[0], rel=1e-12)
    assert [c.seconds for c in result.alternatives] == pytest.approx(ranked[1:4], rel=1e-12)
    # the relaxation is a lower bound (up to the interior-point solver's relative accuracy)
    assert result.relaxed.value <= result.seconds * (1 + 1e-6)
    assert result.gap >= -1e-6
    for cand in (result.best, *result.alternatives):
        part = cand.partition
        assert part.stages == cand.stages and sum(part.sizes) == len(model.layers)
        assert max(part.tiles) <= hw.tiles_per_accelerator
        assert max(cand.memory_bytes) <= hw.activation_buffer_bytes
        held = held_from_timeline(cand.mode, cand.stages, cand.micro_batches)
        assert cand.memory_bytes == tuple(
            cand.micro_batch_size * h * a * hw.bytes_per_activation
            for h, a in zip(held, part.activations, strict=True)
        )


@settings(max_examples=30)
@given(st.sampled_from(["sync", "async"]), st.integers(1, 8), st.integers(1, 10))
def test_in_flight_matches_timeline(mode, stages, micro_batches):
    assert tuple(in_flight(mode, stages, micro_batches)) == held_from_timeline(
        mode, stages, micro_batches
    )


@settings(max_examples=60)
@given(st.data())
def test_partition_dp_equals_enumeration(data):
    n = data.draw(st.integers(1, 7))
    work = data.draw(st.lists(st.integers(1, 20), min_size=n, max_size=n))
    tiles = data.draw(st.lists(st.integers(1, 6), min_size=n, max_size=n))
    acts = data.draw(st.lists(st.integers(0, 20), min_size=n, max_size=n))
    stages = data.draw(st.integers(1, n))
    capacity = data.draw(st.integers(1, 15))
    caps = data.draw(st.lists(st.integers(0, 60), min_size=stages, max_size=stages))
    best = None
    for cuts in itertools.combinations(range(1, n), stages - 1):
        spans = list(zip((0, *cuts), (*cuts, n), strict=True))
        if all(sum(tiles[s:e]) <= capacity and sum(acts[s:e]) <= c
               for (s, e), c in zip(spans, caps, strict=True)):
            value = max(sum(work[s:e]) for s, e in spans)
            best = value if best is None else min(best, value)
    part = best_partition(work, tiles, acts, stages, capacity, caps)
    assert (part is None) == (best is None)
    if part is not None:
        assert part.bottleneck == best
        assert all(t <= capacity for t in part.tiles)
        assert all(a <= c for a, c in zip(part.activations, caps, strict=True))


def _small_hardware(**kw):
    return PlanHardware(from_preset("softbounds-tau1"), **kw)


def test_model_larger_than_all_tiles_is_a_clear_error():
    model = Model("big", tuple(Layer(f"l{i}", 256, 256) for i in range(6)))  # 4 tiles each
    hw = _small_hardware(accelerators=2, tiles_per_accelerator=8)
    with pytest.raises(ParameterError, match=r"needs 24 tiles .* 16 are available"):
        plan(model, hw, eps=1.0)


def test_layer_larger_than_an_accelerator_is_a_clear_error():
    model = Model("wide", (Layer("huge", 1024, 1024),))
    with pytest.raises(ParameterError, match=r"layer 'huge' alone needs 64 tiles"):
        plan(model, _small_hardware(tiles_per_accelerator=16), eps=1.0)


def test_memory_too_small_for_any_plan_is_a_clear_error():
    model = Model("m", (Layer("a", 8, 8, activations=100),))
    hw = _small_hardware(activation_buffer_bytes=10.0)
    with pytest.raises(ParameterError, match="activation_buffer_bytes"):
        plan(model, hw, eps=1.0)


def test_target_below_every_floor_raises_with_the_floor():
    model = Model("m", (Layer("a", 8, 8),))
    limits = PlanLimits(2, 2)
    with pytest.raises(UnreachableTargetError, match="floor"):
        plan(model, _small_hardware(), eps=1e-6, limits=limits)


def test_async_ruled_out_below_its_floor_with_reason():
    hw = _small_hardware(accelerators=2)
    model = Model("m", (Layer("a", 8, 8), Layer("b", 8, 8)))
    limits = PlanLimits(8, 2)
    values = dict(L=1, Delta=1, sigma2=1, theta=0.5, L_s=1)
    dc = hw.hardware.device_constants()
    values.update(q_min=dc.q_min, q_max=dc.q_max, G_inf=dc.G_inf)
    floor_async = evaluate_complexity(ALGO["async"], 1e9, b=2, M=2, **values).floor
    floor_sync = evaluate_complexity(ALGO["sync"], 1e9, B=8, b=2, M=2, **values).floor
    eps = (floor_async + floor_sync) / 2  # reachable only by the larger sync mini-batch
    result = plan(model, hw, eps=eps, limits=limits)
    assert result.mode == "sync"
    assert [m for m, _ in result.ruled_out] == ["async"]
    assert "floor" in result.ruled_out[0][1]


def test_dominant_term_is_the_largest_at_the_plan():
    model = Model("m", (Layer("a", 8, 8), Layer("b", 8, 8)))
    result = plan(model, _small_hardware(accelerators=2), eps=0.8, limits=PlanLimits(8, 8))
    assert result.terms[result.dominant] == max(result.terms.values())
    assert sum(result.terms.values()) <= result.eps * (1 + 1e-12)


def test_gp_is_dpp_and_re_solves_without_recompiling():
    model = Model("m", tuple(Layer(f"l{i}", 64, 64, 4) for i in range(4)))
    hw, limits = _small_hardware(accelerators=4), PlanLimits(16, 16)
    values, misses = [], []
    for eps in (2.0, 1.0, 0.7, 0.5):
        relaxed = solve_relaxation(model, hw, ProblemParams(), eps, limits, ("sync",))
        values.append(relaxed.value)
        misses.append(build_gp.cache_info().misses)
    assert values == sorted(values)  # a smaller target never takes less time
    # one compiled problem serves every eps: no new build after the first solve
    assert len(set(misses)) == 1
    mono = rate_monomials(ALGO["sync"], {**_values(hw), "L_s": 1.0}, 4)
    gp = build_gp("sync", tuple(mono[t][1:] for t in ("rate_a", "rate_c", "floor")), False)
    assert gp.problem.is_dgp(dpp=True)
    param_prog = gp.problem._cache.param_prog
    assert param_prog is not None  # compiled by the solves above and kept
    solve_relaxation(model, hw, ProblemParams(), 0.9, limits, ("sync",))
    assert gp.problem._cache.param_prog is param_prog


def _values(hw):
    dc = hw.hardware.device_constants()
    return dict(L=1.0, Delta=1.0, sigma2=1.0, theta=0.5, q_min=dc.q_min, q_max=dc.q_max,
                G_inf=dc.G_inf)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_rate_monomials_are_minorants_of_the_theory(mode):
    hw = _small_hardware()
    dc = hw.hardware.device_constants()
    values = dict(L=1.3, L_s=0.7, Delta=2.0, sigma2=0.5, theta=0.4, q_min=dc.q_min,
                  q_max=dc.q_max, G_inf=dc.G_inf)
    mono = rate_monomials(ALGO[mode], values, 12)
    for stages, count, b in itertools.product(range(1, 13), (1, 3, 7), (1, 2, 5)):
        r = evaluate_complexity(ALGO[mode], 1e9, B=count, b=b, M=stages, **values)
        exact = {"rate_a": r.rate_a, "rate_c": r.rate_c, "floor": r.floor}
        for term, (coef, e_big, e_small, gamma) in mono.items():
            lower = coef * (count if mode == "sync" else 1) ** e_big * b**e_small * stages**gamma
            assert lower <= exact[term] * (1 + 1e-12)
            if stages == 1:
                assert lower == pytest.approx(exact[term], rel=1e-12)


@pytest.mark.parametrize("m_lo", [1, 2, 7])
def test_cycle_minorants_of_the_relaxation_hold_at_integer_points(m_lo):
    import sympy as sp

    sync = sp.lambdify((K_SYM, M_SYM, B_SYM), cycles_for_iterations("sync"))
    asyn = sp.lambdify((K_SYM, M_SYM), cycles_for_iterations("async"))
    kappa = 1 - 1 / m_lo
    grid = np.arange(1, 40)
    k, m, b = np.meshgrid(grid, np.arange(m_lo, 40), grid, indexing="ij")
    assert np.all(2 * k * np.maximum(b + kappa * m, m) <= sync(k, m, b))
    assert np.all(2 * np.maximum(k + kappa * m, m) <= asyn(k, m))
    assert np.any(2 * k * np.maximum(b + kappa * m, m) == sync(k, m, b))  # tight somewhere


def test_relaxed_timing_is_below_the_clock_rounded_cycle_time():
    from bounds import ROUNDING_SLACK  # the timing model's documented rounding slack

    timing = from_preset("reram-softbounds").timing
    work = np.arange(1, 5000)
    raw = work * timing.read_time_s + timing.update_time_s
    assert np.all(raw * (1 - ROUNDING_SLACK) <= timing.stage_time_s(work))


def test_async_ruled_out_when_the_batches_that_fit_cannot_reach_eps():
    hw = _small_hardware(accelerators=1, activation_buffer_bytes=300.0, bytes_per_activation=2)
    model = Model("m", (Layer("a", 8, 8, activations=100),))  # 200 bytes per sample: b = 1 only
    values = {**_values(hw), "L_s": 1.0}
    floors = [evaluate_complexity(ALGO["async"], 1e9, b=b, M=1, **values).floor for b in (1, 2)]
    eps = sum(floors) / 2  # async needs b >= 2, which does not fit; sync reaches it with B >= 2
    result = plan(model, hw, eps=eps, limits=PlanLimits(4, 4))
    assert result.mode == "sync" and result.micro_batch_size == 1
    assert [m for m, _ in result.ruled_out] == ["async"]
    assert "too small to reach" in result.ruled_out[0][1]


@pytest.mark.parametrize("scale", [1e-6, 1e-15])
def test_rate_monomial_exponents_do_not_depend_on_the_units(scale):
    # rate_c is proportional to Delta, so its exponent in M must not change when Delta is tiny
    # (an absolute tolerance once treated a small but growing term as constant in M)
    hw = _small_hardware()
    values = {**_values(hw), "L_s": 1.0}
    reference = rate_monomials(ALGO["async"], values, 8)["rate_c"]
    scaled = rate_monomials(ALGO["async"], {**values, "Delta": scale}, 8)["rate_c"]
    assert reference[3] > 0
    assert scaled[0] == pytest.approx(scale * reference[0], rel=1e-12)
    assert scaled[1:] == pytest.approx(reference[1:], rel=1e-9)


def test_a_batch_just_above_its_floor_does_not_abort_the_search():
    # at b = 3, B = 1 the sync floor is 2/3; eps a hair above it needs ~1e27 iterations there
    # (more than int64), while larger batches reach eps easily: that point is just unreachable
    hw = _small_hardware(accelerators=2)
    model = Model("m", (Layer("a", 8, 8), Layer("b", 8, 8)))
    values = {**_values(hw), "L_s": 1.0}
    floor = evaluate_complexity(ALGO["sync"], 1e9, B=1, b=3, M=1, **values).floor
    eps = floor * (1 + 1e-13)
    with pytest.raises(ParameterError, match="int64"):
        evaluate_complexity(ALGO["sync"], eps, B=1, b=3, M=1, **values)
    result = plan(model, hw, eps=eps, limits=PlanLimits(4, 4), relax=False)
    assert result.micro_batches * result.micro_batch_size > 3
    reference = plan(model, hw, eps=eps * (1 + 1e-6), limits=PlanLimits(4, 4), relax=False)
    assert (result.mode, result.stages, result.micro_batches, result.micro_batch_size) == (
        reference.mode, reference.stages, reference.micro_batches, reference.micro_batch_size)


def test_best_partition_rejects_mismatched_shapes():
    with pytest.raises(ParameterError, match=r"activation_caps has shape \(1,\); valid: .*\(3,\)"):
        best_partition([1, 2, 3], [1, 1, 1], [1, 1, 1], 3, 10, [5])
    with pytest.raises(ParameterError, match="one entry per layer"):
        best_partition([1, 2, 3], [1, 1], [1, 1, 1], 2, 10)


def test_target_beyond_int64_iterations_everywhere_is_not_called_below_the_floor():
    hw = PlanHardware(from_preset("softbounds-tau1", weight_bound=1e-12), accelerators=2)
    model = Model("m", (Layer("a", 8, 8), Layer("b", 8, 8)))
    with pytest.raises(ParameterError, match="int64") as info:
        plan(model, hw, eps=1e-10, limits=PlanLimits(2, 2))
    assert not isinstance(info.value, UnreachableTargetError)


def test_relaxation_without_a_mode_says_so():
    model = Model("m", (Layer("a", 8, 8),))
    relaxed = solve_relaxation(model, _small_hardware(), ProblemParams(), 1.0, PlanLimits(2, 2),
                               ())
    assert relaxed.status == NO_MODE and not relaxed.success
    assert relaxed.value == math.inf and relaxed.mode == "" and "ruled out" in relaxed.message


def test_a_failed_relaxation_is_reported_not_dropped(monkeypatch):
    import cvxpy as cp

    def fail(self, *args, **kwargs):
        raise cp.error.SolverError("no convergence")

    monkeypatch.setattr(cp.Problem, "solve", fail)
    model = Model("m", (Layer("a", 8, 8), Layer("b", 8, 8)))
    result = plan(model, _small_hardware(accelerators=2), eps=0.8, limits=PlanLimits(4, 4))
    assert result.relaxed.status == SOLVER_ERROR and not result.relaxed.success
    assert "no convergence" in result.relaxed.message and "sync" in result.relaxed.message
    assert result.status == RELAXATION_FAILED and math.isnan(result.gap)
    assert "relaxation (GP)      not solved (solver_error)" in result.table()
    data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert data["relaxed"]["status"] == "solver_error" and data["gap"] is None


def test_plan_status_when_the_relaxation_is_solved_or_skipped():
    model = Model("m", (Layer("a", 8, 8), Layer("b", 8, 8)))
    hw, limits = _small_hardware(accelerators=2), PlanLimits(4, 4)
    solved = plan(model, hw, eps=0.8, limits=limits)
    assert solved.status == OPTIMAL and solved.relaxed.success
    assert solved.relaxed.status in ("optimal", "optimal_inaccurate")
    assert solved.relaxed.mode in solved.relaxed.message
    skipped = plan(model, hw, eps=0.8, limits=limits, relax=False)
    assert skipped.status == OPTIMAL and skipped.relaxed.status == SKIPPED
    assert "relaxation (GP)" not in skipped.table()
    assert (skipped.best, skipped.terms) == (solved.best, solved.terms)


# -- hostile inputs: wrong types, grids beyond MAX_GRID_POINTS, a huge eps ----------------------

@pytest.mark.parametrize("kwargs, name", [
    ({"model": "digits-mlp"}, "model"), ({"hardware": from_preset("softbounds-tau1")}, "hardware"),
    ({"problem": 1.0}, "problem"), ({"limits": (4, 4)}, "limits"),
])
def test_plan_names_arguments_of_the_wrong_type(kwargs, name):
    args = {"model": Model("m", (Layer("a", 4, 4),)), "hardware": _small_hardware(), **kwargs}
    with pytest.raises(ParameterError, match=f"^{name}=.* is a .*, not a bounds."):
        plan(eps=1.0, **args)


def test_stage_grid_beyond_the_limit_is_refused_before_allocating():
    model = Model("wide", tuple(Layer(f"l{i}", 1, 1) for i in range(120_000)))
    hw = _small_hardware(accelerators=120_000, tiles_per_accelerator=10**6)
    with pytest.raises(ParameterError, match="^max_micro_batch_size=512 asks for 6.14e\\+07 "
                                             "planner grid points \\(stages x"):
        plan(model, hw, eps=1.0, relax=False)


def test_huge_eps_is_one_iteration():
    model = Model("m", tuple(Layer(f"l{i}", 8, 8) for i in range(4)))
    result = plan(model, _small_hardware(accelerators=4), eps=1e300, limits=PlanLimits(4, 4),
                  relax=False)
    assert result.iterations == 1 and math.isfinite(result.seconds)
