"""bounds.evaluation: each row consistent with the schedules and the timing model; compare()."""

from __future__ import annotations

import math
import re
import warnings

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from bounds import (
    BASELINE,
    FLOAT_RANGE,
    TOO_MANY,
    PipelineConfig,
    ProblemParams,
    compare,
    evaluate,
    from_preset,
)
from theory import REGISTRY, ParameterError, UnreachableTargetError, schedules

#: the rows `compare` evaluates: every entry but Theorem LF's (their G2_iter is measured)
COMPARED = [name for name, bound in REGISTRY.items() if bound.floor_kind == "worst-case"]

PRESETS = ("softbounds-tau1", "reram-softbounds", "ecram-linearstep", "idealized-constantstep")
HARDWARE = {name: from_preset(name) for name in PRESETS}

pipelines = st.builds(
    PipelineConfig, st.integers(1, 16), st.integers(1, 64), st.integers(1, 16)
)
problems = st.builds(
    ProblemParams, L=st.floats(0.1, 10), Delta=st.floats(0.1, 10), sigma2=st.floats(0.01, 10),
    theta=st.floats(0.1, 0.9),
)


def _schedule_cycles(mode: str, K: int, pipe: PipelineConfig) -> int:
    """Cycles of K updates from the schedule closed forms (not through theory.complexity)."""
    M, B = pipe.stages, pipe.micro_batches
    if mode == "async":  # one update per micro-batch: K micro-batches, no flush
        return int(schedules.evaluate_schedule("async", "total_cycles", stages=M, micro_batches=K))
    return K * int(schedules.evaluate_schedule(mode, "total_cycles", stages=M, micro_batches=B))


@given(
    preset=st.sampled_from(PRESETS), pipe=pipelines, problem=problems,
    slack=st.floats(0.05, 50), name=st.sampled_from(list(REGISTRY)),
)
def test_row_is_consistent_with_schedule_and_timing(preset, pipe, problem, slack, name):
    hw = HARDWARE[preset]
    probe = evaluate(name, 1e9, hw, problem, pipe)
    assume(probe.reachable)  # the companion row does not apply to every device
    eps = probe.floor + slack
    row = evaluate(name, eps, hw, problem, pipe)
    assert row.reachable and row.reason is None
    assert row.samples == row.batch * row.iterations
    expected_batch = pipe.micro_batch_size if row.mode == "async" else pipe.mini_batch
    assert row.batch == expected_batch
    assert row.cycles == _schedule_cycles(row.mode, row.iterations, pipe)
    cycle_time = hw.timing.cycle_time_s(pipe.stages, pipe.micro_batch_size)
    assert row.cycle_time_s == cycle_time
    assert row.seconds == pytest.approx(row.cycles * cycle_time, rel=1e-12)
    # the bound at the chosen (K, step) meets the target; one iteration fewer may not
    assert row.value <= eps * (1 + 1e-9)
    assert row.step > 0 and row.limiting in ("step cap", "noise balance")
    assert row.floor < eps


@given(preset=st.sampled_from(PRESETS), pipe=pipelines, problem=problems,
       slack=st.floats(0.05, 50))
def test_sp_floor_is_theory_spec_floor_with_mini_batch(preset, pipe, problem, slack):
    hw = HARDWARE[preset]
    c = hw.device_constants()
    floor = c.G_inf**2 * problem.sigma2 / (problem.theta * pipe.mini_batch * c.q_min**2)
    row = evaluate("analog_sgd_sp", floor + slack, hw, problem, pipe)
    assert row.floor == pytest.approx(floor, rel=1e-12, abs=1e-300)


@given(preset=st.sampled_from(PRESETS), pipe=pipelines, problem=problems,
       slack=st.floats(0.05, 50))
def test_sp_needs_fewer_iterations_than_ap(preset, pipe, problem, slack):
    hw = HARDWARE[preset]
    eps = evaluate("analog_sgd_ap", 1e9, hw, problem, pipe).floor + slack
    sp_row = evaluate("analog_sgd_sp", eps, hw, problem, pipe)
    ap_row = evaluate("analog_sgd_ap", eps, hw, problem, pipe)
    assert sp_row.iterations <= ap_row.iterations
    assert sp_row.floor <= ap_row.floor


@pytest.mark.parametrize("eps", [2.0, 4.0, 10.0])
@pytest.mark.parametrize("stages", [2, 3])
def test_ap_cheaper_in_cycles_than_sp_at_loose_eps(eps, stages):
    # Loose eps: K ~ c/eps, so AP wins in cycles when 2(K_AP + M - 1) < 2(B + M - 1) K_SP. With
    # the derived AP constants (rate_c grows like D^2) that needs many micro-batches per flush,
    # here B = 64 at D = 1, 2; SP still needs fewer iterations (it averages B micro-batches).
    hw = HARDWARE["idealized-constantstep"]
    pipe = PipelineConfig(stages=stages, micro_batches=64, micro_batch_size=1)
    sp_row = evaluate("analog_sgd_sp", eps, hw, pipeline=pipe)
    ap_row = evaluate("analog_sgd_ap", eps, hw, pipeline=pipe)
    assert ap_row.cycles < sp_row.cycles
    assert sp_row.iterations < ap_row.iterations


def test_ap_at_one_stage_equals_sp_at_one_micro_batch():
    # D = 0 and B = 1: the two bounds coincide (theory-spec identity), so do their rows
    hw = HARDWARE["reram-softbounds"]
    pipe = PipelineConfig(stages=1, micro_batches=1, micro_batch_size=4)
    sp_row = evaluate("analog_sgd_sp", 0.5, hw, pipeline=pipe)
    ap_row = evaluate("analog_sgd_ap", 0.5, hw, pipeline=pipe)
    for field in ("floor", "iterations", "samples", "cycles", "seconds", "step", "value"):
        assert getattr(ap_row, field) == pytest.approx(getattr(sp_row, field), rel=1e-12)


def test_unreachable_row_reports_floor_and_reason():
    hw = HARDWARE["softbounds-tau1"]
    pipe = PipelineConfig(stages=4, micro_batches=8, micro_batch_size=1)
    ap_floor = evaluate("analog_sgd_ap", 1e9, hw, pipeline=pipe).floor
    sp_floor = evaluate("analog_sgd_sp", 1e9, hw, pipeline=pipe).floor
    assert sp_floor < ap_floor
    eps = (sp_floor + ap_floor) / 2
    comparison = compare(eps, hw, pipeline=pipe)
    ap_row = comparison.result("analog_sgd_ap")
    assert not ap_row.reachable and ap_row.limiting == "floor"
    assert ap_row.floor == ap_floor
    assert f"{ap_floor:.6g}" in ap_row.reason and "unreachable" in ap_row.reason
    assert all(getattr(ap_row, f) is None for f in ("iterations", "samples", "cycles", "seconds"))
    assert comparison.result("analog_sgd_sp").reachable
    assert comparison.speedups["analog_sgd_ap"] == (None, None)
    text = comparison.table()
    assert "unreachable" in text and not re.search(r"\bnan\b", text, re.IGNORECASE)


def test_companion_not_applicable_off_soft_bounds():
    row = evaluate("analog_sgd_companion", 1.0, HARDWARE["reram-softbounds"])
    assert not row.reachable and row.limiting == "not applicable" and row.floor is None
    assert "symmetric soft bounds" in row.reason
    assert evaluate("analog_sgd_companion", 1.0, HARDWARE["softbounds-tau1"]).reachable


@given(preset=st.sampled_from(PRESETS), pipe=pipelines, slack=st.floats(0.05, 20))
def test_compare_order_and_speedups(preset, pipe, slack):
    hw = HARDWARE[preset]
    eps = evaluate("analog_sgd_ap", 1e9, hw, pipeline=pipe).floor + slack
    comparison = compare(eps, hw, pipeline=pipe)
    assert list(r.algorithm for r in comparison.results) == COMPARED
    base = comparison.result(BASELINE)
    assert comparison.speedups[BASELINE] == (1.0, 1.0)
    for row, (by_cycles, by_seconds) in comparison.speedups.items():
        r = comparison.result(row)
        if r.reachable:
            assert by_cycles == pytest.approx(base.cycles / r.cycles, rel=1e-12)
            assert by_seconds == pytest.approx(base.seconds / r.seconds, rel=1e-12)
    # SP runs the iterates of analog SGD with the same mini-batch: its speedup is the schedule's
    sp_row = comparison.result("analog_sgd_sp")
    assert sp_row.iterations == base.iterations
    throughput = float(schedules.evaluate_schedule("sync", "speedup", stages=pipe.stages,
                                          micro_batches=pipe.micro_batches))
    assert comparison.speedups["analog_sgd_sp"][0] == pytest.approx(throughput, rel=1e-12)
    rows = comparison.to_rows()
    assert [row["algorithm"] for row in rows] == COMPARED
    assert all(isinstance(row["speedup_cycles"], float | None) for row in rows)


def test_evaluate_errors():
    hw = HARDWARE["softbounds-tau1"]
    with pytest.raises(ParameterError, match="bound='sgd' is unknown; valid: digital_sgd"):
        evaluate("sgd", 1.0, hw)
    for bad in (0.0, -1.0, math.nan):
        with pytest.raises(ParameterError, match="^eps="):
            evaluate("analog_sgd", bad, hw)


def test_eps_a_hair_above_the_floor_gives_a_row_not_an_error():
    # the AP row needs more iterations than an int64 holds; the other rows keep their numbers
    hw = HARDWARE["reram-softbounds"]
    floor = evaluate("analog_sgd_ap", 1e9, hw).floor
    eps = floor * (1 + 1e-13)
    row = evaluate("analog_sgd_ap", eps, hw)
    assert not row.reachable and row.limiting == TOO_MANY and "int64" in row.reason
    assert row.floor == floor and row.iterations is None and row.seconds is None
    comparison = compare(eps, hw)
    assert comparison.result("analog_sgd_sp").reachable
    assert comparison.speedups["analog_sgd_ap"] == (None, None)
    assert TOO_MANY in comparison.table()


# -- hostile inputs: wrong types, a huge eps, constants at the float range's ends --------------

@pytest.mark.parametrize("kwargs, name, kind", [
    ({"hardware": "reram"}, "hardware", "HardwareParams"),
    ({"problem": {"L": 1.0}}, "problem", "ProblemParams"),
    ({"pipeline": (8, 8, 4)}, "pipeline", "PipelineConfig"),
])
def test_wrong_argument_types_are_named(kwargs, name, kind):
    args = {"hardware": HARDWARE["softbounds-tau1"], **kwargs}
    pattern = f"^{name}=.* is a .*, not a bounds.{kind}"
    with pytest.raises(ParameterError, match=pattern):
        evaluate("analog_sgd", 1.0, **args)
    with pytest.raises(ParameterError, match=pattern):
        compare(1.0, **args)


def test_algorithm_of_another_type_is_named():
    with pytest.raises(ParameterError, match="^algorithm=\\['analog_sgd'\\] is not a string; "
                                             "valid: digital_sgd"):
        evaluate(["analog_sgd"], 1.0, HARDWARE["softbounds-tau1"])


def test_evaluate_with_a_preset_name_string():
    with pytest.raises(ParameterError, match="^hardware='reram' is a str, not a "
                                             "bounds.HardwareParams"):
        evaluate("analog_sgd", 1.0, "reram")


@pytest.mark.parametrize("target", [1e155, 1e300, 1.7e308])
def test_huge_eps_is_one_iteration(target):
    comparison = compare(target, HARDWARE["softbounds-tau1"])
    for row in comparison.results:
        assert row.reachable, row.reason
        assert row.iterations >= 1 and row.value <= target
        assert math.isfinite(row.seconds) and row.cycles >= 1
    assert comparison.result("analog_sgd").iterations == 1


def test_tiny_L_gives_a_float_range_row_not_an_exception():
    comparison = compare(1.0, HARDWARE["softbounds-tau1"], ProblemParams(L=1e-308))
    rows = {r.algorithm: r for r in comparison.results}
    ap = rows["analog_sgd_ap"]
    assert ap.limiting == FLOAT_RANGE and not ap.reachable
    assert "float range" in ap.reason and "L=1e-308" in ap.reason
    for row in comparison.results:
        if row.reachable:
            assert all(math.isfinite(x) for x in (row.value, row.step, row.seconds))
    assert "beyond the float range" in comparison.table()


@pytest.mark.parametrize("problem, target", [
    (ProblemParams(), 1e-300), (ProblemParams(sigma2=1e308), 1e-3),
    (ProblemParams(L=1e308), 1e-3), (ProblemParams(Delta=1e308), 1.0),
])
def test_extreme_constants_give_rows_without_warnings_or_nan(problem, target):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        comparison = compare(target, HARDWARE["softbounds-tau1"], problem)
    for row in comparison.results:
        if row.reachable:
            assert all(math.isfinite(x) for x in (row.value, row.step, row.seconds))
        else:
            assert row.reason and "nan" not in row.reason
    with pytest.raises((ParameterError, UnreachableTargetError)):  # no analog entry has numbers
        comparison.require_analog()


def test_require_analog_names_the_lowest_floor():
    comparison = compare(1e-3, HARDWARE["softbounds-tau1"])
    with pytest.raises(UnreachableTargetError, match="^eps=0.001 is unreachable for analog_sgd"):
        comparison.require_analog()
    compare(1.0, HARDWARE["softbounds-tau1"]).require_analog()  # reachable: no error


def test_a_local_floor_row_is_not_applicable_without_a_measured_g2_iter():
    """Theorem LF's rows need G2_iter, measured along a run: evaluate says so (no numbers)."""
    hw = HARDWARE[next(iter(HARDWARE))]
    for name, bound in REGISTRY.items():
        if bound.floor_kind != "worst-case":
            result = evaluate(name, 1.0, hw)
            assert result.limiting == "not applicable" and "G2_iter" in result.reason, name
            assert result.floor is None and result.iterations is None
