"""The verification suites (simulate.suites): case tables, and every quick row as its own test."""

from __future__ import annotations

from dataclasses import replace

import pytest

from simulate import suites
from simulate.suites import (
    QUICK,
    STANDARD,
    SUITES,
    THOROUGH,
    VERIFY_FORMAT,
    Case,
    check_point,
    run_suite,
    step_region,
    suite_points,
)
from simulate.verify import CHECKABLE, Check, check_bound, region_step_cap
from theory.errors import ParameterError
from theory.theorems import get_bound

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
    assert 35 <= len(standard) <= 80
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
