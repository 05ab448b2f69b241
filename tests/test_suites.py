"""The verification suites (simulate.verification.suites): case tables, and every quick row as its
own test."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from simulate import Check, check_bound, run_suite
from simulate.verification import (
    CHECKABLE,
    QUICK,
    STANDARD,
    SUITES,
    THOROUGH,
    VERIFY_FORMAT,
    Case,
    check_point,
    local_cases,
    ranking,
    region_step_cap,
    step_region,
    suite_points,
    suites,
)
from theory import ParameterError, get_bound

#: the statistical margin run_suite uses by default
Z = 4.0


@pytest.mark.parametrize("case", QUICK, ids=[case.label for case in QUICK])
def test_quick_row_holds(case):
    """The row's bound holds at z = 4: the check run_suite runs for it (same sweep point)."""
    config = case.config()
    point = {"bound": case.bound, "config": config.to_dict(), "z": Z, "format": VERIFY_FORMAT}
    check = Check.from_dict(check_point(point))
    assert check.passed, (
        f"{case.bound} fails: empirical {check.empirical:.6g} +- {check.stderr:.3g} > bound "
        f"{check.bound:.6g}; constants {check.constants}; config {config}"
    )
    assert check == check_bound(case.bound, config, z=Z)


def test_suites_cover_every_checkable_bound():
    quick = suite_points("quick")
    standard = suite_points("standard")
    assert {p["bound"] for p in quick} == set(CHECKABLE)
    # a size budget: 61 rows + 12 per-sample + 12 mixed + 8 TT0 + 8 TT0-AP + 6 per-sample AP (IO'
    # took two IO rows) + 16 TT0PS (four per-sample Tiki-Taka entries, the minimum 4 rows each)
    # Theorem LF: every row's local-floor row on the same run follows the worst-case rows
    worst = [case for case in STANDARD if not case.bound.endswith("_local")]
    assert 35 <= len(worst) <= 132
    assert STANDARD == (*worst, *local_cases(worst)) and len(standard) == len(STANDARD)
    assert QUICK == (*(c for c in QUICK if not c.bound.endswith("_local")),
                     *local_cases([c for c in QUICK if not c.bound.endswith("_local")]))
    for name in CHECKABLE:
        assert sum(p["bound"] == name for p in standard) >= 4
    for point in standard:
        cfg = point["config"]
        assert cfg["seeds"] >= 32 and cfg["update"] == "expected"
    with pytest.raises(ParameterError, match="suite='huge' is unknown"):
        suite_points("huge")


def test_run_suite_quick_passes_and_equals_direct_checks(tmp_path):
    checks = run_suite("quick", jobs=1, cache=tmp_path)
    assert len(checks) == len(suite_points("quick"))
    assert all(check.passed for check in checks)
    assert all(check.ratio >= 1 for check in checks)
    direct = check_bound(checks[0].bound_name, checks[0].config)
    assert direct == checks[0]
    # a local-floor row, checked on its worst-case row's run, is the check of a run of its own
    local = next(check for check in checks if check.bound_name.endswith("_local"))
    assert check_bound(local.bound_name, local.config) == local
    assert run_suite("quick", jobs=1, cache=tmp_path) == checks  # from the cache


def test_rows_build_their_configs_from_the_step_cap():
    for case in (*QUICK, *STANDARD):
        config = case.config()
        bound = get_bound(case.bound)
        assert (config.algorithm, config.mode) == (bound.algorithm, bound.mode)
        assert config.log_every == config.steps == case.steps and config.seeds == case.seeds
        cap = region_step_cap(case.bound, config, *step_region(config))
        assert config.lr == float(f"{case.fraction * cap:.4g}")
        assert 0 < config.lr < cap


def test_labels_are_unique_and_the_tables_are_rows():
    for table in SUITES.values():
        assert isinstance(table, tuple) and all(isinstance(case, Case) for case in table)
    for table in (QUICK, STANDARD):
        assert len({case.label for case in table}) == len(table)
    assert len(THOROUGH) == 405 and len(set(THOROUGH)) == len(THOROUGH)


def test_a_case_refuses_an_uncheckable_bound_or_a_fraction_outside_the_cap():
    with pytest.raises(ParameterError, match="cannot be checked on the oracle problems"):
        Case("literature_sgd", 0.5, steps=10, seeds=2)
    with pytest.raises(ParameterError, match="fraction=1.2 is out of range"):
        Case("analog_sgd", 1.2, steps=10, seeds=2)
    with pytest.raises(ParameterError, match="fraction=0.0 is out of range"):
        replace(QUICK[0], fraction=0.0)


def test_module_exports_are_sorted_and_exist():
    assert list(suites.__all__) == sorted(suites.__all__)
    for name in suites.__all__:
        assert hasattr(suites, name), name


# ------------------------------------------------------------------------------------------------
# ranking agreement (issue 14)

_TINY = dict(sigma2=0.1, steps=200, seeds=4)


def _tiny_checks():
    """SP at M = 2, AP at M = 2, 4, 8 (half their caps, sigma2 = 0.1: their floors are below the
    start): one mode pair (SP2, AP2) and three stages pairs (AP2-AP4, AP2-AP8, AP4-AP8)."""
    cases = (Case("analog_sgd_sp", 0.5, stages=2, micro_batches=2, **_TINY),
             *(Case("analog_sgd_ap", 0.5, stages=m, **_TINY) for m in (2, 4, 8)))
    return [check_bound(case.bound, case.config()) for case in cases]


def _closed_form_iterations(check, eps):
    """Every registry bound is floor + 2 Delta / (alpha q_min K): its first K below eps."""
    k = check.constants
    return math.ceil(2 * k["Delta"] / (k["alpha"] * k["q_min"] * (eps - check.prediction.floor)))


def _with_running(check, first_hit_at, eps):
    """The check with a hand-made mean running average that first reaches eps at that K."""
    p = check.prediction
    running = (p.start,) * (first_hit_at - 1) + (0.99 * eps,)
    return replace(check, prediction=replace(p, running=running))


def test_ranking_agreement_equals_a_hand_count():
    sp2, ap2, ap4, ap8 = _tiny_checks()
    start = sp2.prediction.start
    assert all(c.prediction.start == start and not c.prediction.vacuous
               for c in (sp2, ap2, ap4, ap8))
    eps_mode = math.sqrt(max(sp2.prediction.floor, ap2.prediction.floor) * start)
    eps_24 = math.sqrt(max(ap2.prediction.floor, ap4.prediction.floor) * start)
    # hand-made simulated orders: SP2 at K = 5 (cycles 2 (2 + 1) 5 = 30) vs AP2 at K = 20
    # (2 (20 + 1) = 42; its curve reaches both targets there): the simulation ranks SP first;
    # AP2 (42) vs AP4 at K = 60 (2 (60 + 3) = 126): AP2 first. AP8 is made vacuous (floor
    # above the start): its two pairs are left out.
    sp2 = _with_running(sp2, 5, eps_mode)
    ap2 = _with_running(ap2, 20, min(eps_mode, eps_24))
    ap4 = _with_running(ap4, 60, eps_24)
    ap8 = replace(ap8, prediction=replace(ap8.prediction, floor=2 * start))
    result = ranking.ranking_agreement([sp2, ap2, ap4, ap8])
    (mode,) = [p for p in result.pairs if p.kind == "mode"]
    (stages,) = [p for p in result.pairs if p.kind == "stages"]
    assert (mode.first, mode.second, stages.first, stages.second) == (0, 1, 1, 2)
    assert mode.eps == eps_mode and stages.eps == eps_24
    assert mode.simulated == (2 * 3 * 5, 2 * (20 + 1))
    assert stages.simulated == (2 * (20 + 1), 2 * (60 + 3))
    assert mode.predicted == (2 * 3 * _closed_form_iterations(sp2, eps_mode),
                              2 * (_closed_form_iterations(ap2, eps_mode) + 1))
    assert stages.predicted == (2 * (_closed_form_iterations(ap2, eps_24) + 1),
                                2 * (_closed_form_iterations(ap4, eps_24) + 3))
    # the theory: AP2 cheaper than SP2 (438 vs 432 cycles: not the simulation's order); AP2
    # cheaper than AP4 (the simulation's order): 0 of 1 mode pairs, 1 of 1 stages pairs
    assert mode.predicted[0] > mode.predicted[1] and not mode.agree
    assert stages.predicted[0] < stages.predicted[1] and stages.agree
    assert result.count("mode") == (0, 1) and result.count("stages") == (1, 1)
    assert (result.fraction("mode"), result.fraction("stages")) == (0.0, 1.0)
    assert result.vacuous == {"mode": 0, "stages": 2} and result.unreached == {"mode": 0,
                                                                               "stages": 0}
    assert result.count("stages", "analog_sgd_sp") == (0, 0)
    assert result.fraction("stages", "analog_sgd_sp") is None
    data = result.to_dict()
    assert (data["mode_pairs"], data["stages_agree"], data["stages_vacuous"]) == (1, 1, 2)
    # a tie only matches a tie
    tie = replace(mode, predicted=(5, 5), simulated=(5, 5))
    assert tie.agree and not replace(tie, simulated=(4, 5)).agree


def test_ranking_agreement_on_the_quick_suite(tmp_path):
    checks = run_suite("quick", jobs=1, cache=tmp_path)
    result = ranking.ranking_agreement(checks)
    for kind in ("mode", "stages"):
        agree, ranked = result.count(kind)
        assert 0 <= agree <= ranked
        fraction = result.fraction(kind)
        assert fraction is None or 0.0 <= fraction <= 1.0
    # the quick suite's one SP row (M = 4, B = 4) and its AP row (M = 4) form one mode pair
    assert result.count("mode")[1] + result.vacuous["mode"] + result.unreached["mode"] == 1
    with pytest.raises(ParameterError, match="every check needs its prediction"):
        ranking.ranking_agreement([replace(checks[0], prediction=None)])


def test_a_tampered_prediction_is_refused_by_validate_check():
    sp2 = _tiny_checks()[0]
    good = sp2.to_dict()
    suites.validate_check(good)
    p = sp2.prediction
    for bad in (replace(p, ratio=p.ratio * 1.001), replace(p, running=p.running[:-1]),
                replace(p, eps=p.eps * 1.01), replace(p, predicted_iterations=1),
                replace(p, floor=p.floor * 2)):
        with pytest.raises(ValueError):
            suites.validate_check(replace(sp2, prediction=bad).to_dict())
    with pytest.raises(ValueError, match="no prediction"):
        suites.validate_check(replace(sp2, prediction=None).to_dict())


def test_the_rows_of_one_configuration_share_one_run():
    """run_suite's points: one per distinct configuration, every row of the table in exactly one
    place, each local-floor row on the point of its worst-case row."""
    rows = suite_points("quick")
    points, where = suites.suite_runs("quick")
    assert len(where) == len(rows) and len(set(where)) == len(rows)
    assert len(points) == len({str(sorted(row["config"].items())) for row in rows}) < len(rows)
    for row, (point, i) in zip(rows, where, strict=True):
        assert points[point]["bounds"][i] == row["bound"]
        assert points[point]["config"] == row["config"]
        if row["bound"].endswith("_local"):
            assert row["bound"].removesuffix("_local") in points[point]["bounds"]


def test_validate_group_refuses_checks_of_different_runs():
    first, second = (check_bound(case.bound, case.config(), z=Z).to_dict()
                     for case in QUICK[:2])
    suites.validate_group({"checks": [first]})
    with pytest.raises(ValueError, match="differ in their empirical"):
        suites.validate_group({"checks": [first, second]})
    with pytest.raises(ValueError, match="non-empty list"):
        suites.validate_group({"checks": []})
