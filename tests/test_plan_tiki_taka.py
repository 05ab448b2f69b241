"""``plan --algorithm tiki-taka``: the transfer timing rule, the guarantee of proved rows only,
the Tiki-Taka calibration (recorded, mismatches refused) and the exact search against brute force.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math

import numpy as np
import pytest

from bounds import (
    FORECAST_ONLY,
    GUARANTEED,
    NO_GUARANTEE,
    OPTIMAL,
    Layer,
    Model,
    PlanHardware,
    PlanLimits,
    ProblemParams,
    TransferSettings,
    best_partition,
    from_preset,
    load_model,
    plan,
    plan_tiki_taka,
    theory_values,
)
from paper_figures.cli import main
from simulate import SimConfig
from simulate.device import TikiTaka, Tile, TransferRule
from simulate.verification import CalibrationProblem
from tests._calibration_files import complete_problem, file_calibration
from theory import (
    CYCLES_PER_COLUMN,
    REACHABLE,
    ParameterError,
    bound_for,
    conditions_met,
    cycles_after,
    evaluate_guarantee,
    guarantee_entries,
    in_flight,
    local_sgd,
    setting_conditions,
    theorems,
    transfer_cycles,
    transfer_event_cycles,
)
from theory.admissible import step_cap
from theory.calibration import (
    Calibration,
    check_algorithm,
    forecast_iterations,
    predicted_cycles,
    problem_fingerprint,
)
from theory.calibration_file import read_calibration, write_calibration
from theory.vocabulary import TRANSFER_SLICES

SMALL = ["--max-micro-batches", "16", "--max-micro-batch-size", "16"]
MLP = load_model("digits-mlp")
HW = PlanHardware(from_preset("softbounds-tau1"), accelerators=8)


def _fake_row(monkeypatch, *settings: str, name: str = "tt_test_sp"):
    """A ``derived`` Tiki-Taka sync row (the companion's expression, for the test only)."""
    base = theorems.REGISTRY["tiki_taka_sp"]
    row = dataclasses.replace(base, name=name, provenance="derived",
                              conditions=(*base.conditions, *settings))
    monkeypatch.setitem(theorems.REGISTRY, name, row)
    return row


def _tt_calibration(every=2, slice_="column", problem=None) -> Calibration:
    problem = complete_problem(**(problem or {"L": 1.0, "Delta": 0.5, "start": 2.0}))
    problem |= {"algorithm": "tiki-taka", "transfer_every": every, "transfer_slice": slice_}
    return file_calibration({"sync": (0.5, 0.3, 1e-12), "async": (0.4, 0.3, 1e-3, 0.2, 0.05)},
                            problem, draws={"sync": ((0.45, 0.25, 1e-12), (0.55, 0.35, 1e-3))})


# -- the one transfer timing rule -----------------------------------------------------------------

def test_transfer_rule_by_hand():
    # stage 1: tiles of 3 and 4 columns, stage 2: one of 5
    assert transfer_event_cycles([[3, 4], [5]], "column") == CYCLES_PER_COLUMN * 2
    assert transfer_event_cycles([[3, 4], [5]], "all") == CYCLES_PER_COLUMN * 7
    assert transfer_cycles(np.array([0, 2, 3, 7]), 3, 4).tolist() == [0, 0, 4, 8]
    assert transfer_cycles(np.array([7.0, np.inf]), 2, 4).tolist() == [12.0, math.inf]
    with pytest.raises(ParameterError, match="transfer_every=0"):
        transfer_cycles(5, 0, 4)
    with pytest.raises(ParameterError, match="transfer_slice='rows'"):
        transfer_event_cycles([[1]], "rows")
    assert TRANSFER_SLICES == ("column", "all")  # simulate's choices are theory's


@pytest.mark.parametrize("slice_", ["column", "all"])
def test_simulator_uses_the_theory_rule(slice_):
    tiles = (Tile(0, 0, 6, 2), Tile(0, 6, 4, 2), Tile(1, 10, 9, 3))  # columns 3, 2, 3
    state = TikiTaka(None, None, TransferRule(every=3, slice=slice_), tiles, np.zeros((1, 19)))
    expected = 2 * (2 if slice_ == "column" else 5)
    assert state.event_cycles == expected == transfer_event_cycles([[3, 2], [3]], slice_)


def test_transfer_settings_defaults_are_simconfig_defaults():
    s, c = TransferSettings(), SimConfig()
    assert (s.every, s.slice, s.lr, s.gamma, s.fast_device) == (
        c.transfer_every, c.transfer_slice, c.transfer_lr, c.tt_gamma, c.fast_device)
    assert s.reset is getattr(c, "transfer_reset", False)


def test_reset_and_fast_device_settings_select_rows(capsys):
    # the registry's own Corollary TT0 rows: gamma = 0, slice all, reset, digital fast buffer
    met = TransferSettings(slice="all", reset=True, fast_device="digital").settings()
    assert [b.name for b in guarantee_entries("sync", "tiki-taka", met)] == ["tiki_taka_reset_sp"]
    assert [b.name for b in guarantee_entries("none", "tiki-taka", met)] == ["tiki_taka_reset"]
    assert guarantee_entries("sync", "tiki-taka", TransferSettings(slice="all").settings()) == ()
    assert guarantee_entries("sync", "tiki-taka", TransferSettings(
        slice="all", reset=True, fast_device="digital", gamma=0.5).settings()) == ()
    argv = ["plan", "--model", "digits-mlp", "--algorithm", "tiki-taka", "--eps", "0.5",
            "--transfer-slice", "all", *SMALL]
    assert main(argv) == 2
    assert "pass --calibration FILE" in capsys.readouterr().err  # A is reset only when asked
    assert main([*argv, "--transfer-reset", "--fast-device", "digital"]) == 0
    out = capsys.readouterr().out
    assert "guarantee sync       guaranteed: proved by tiki_taka_reset_sp" in out


def test_write_per_sample_plans_with_corollary_tt0ps(capsys):
    """--write per-sample: the Corollary TT0PS rows (the TT0 rows' formulas), so the same plan as
    batch-mean writes with the per-sample rows named (library = CLI)."""
    transfer = TransferSettings(every=4, slice="all", reset=True, fast_device="digital")
    met = transfer.settings()
    for mode, names in (("none", ["tiki_taka_reset_per_sample"]),
                        ("sync", ["tiki_taka_reset_sp_per_sample"]),
                        ("async", ["tiki_taka_reset_ap_per_sample",
                                   "tiki_taka_reset_ap_b_per_sample"])):
        found = guarantee_entries(mode, "tiki-taka", met, "per-sample")
        assert [b.name for b in found] == names
    results = {write: plan_tiki_taka(MLP, HW, None, 2.5, PlanLimits(16, 16, write=write),
                                     transfer=transfer) for write in ("batch-mean", "per-sample")}
    batch_mean, per_sample = results["batch-mean"].best, results["per-sample"].best
    assert per_sample.bound == f"{batch_mean.bound}_per_sample"
    for field in ("mode", "stages", "micro_batches", "micro_batch_size", "iterations", "cycles"):
        assert getattr(per_sample, field) == getattr(batch_mean, field), field
    assert [g.entries for g in results["per-sample"].guarantees] == [
        tuple(f"{name}_per_sample" for name in g.entries)
        for g in results["batch-mean"].guarantees]
    argv = ["plan", "--model", "digits-mlp", "--accelerators", "8", "--algorithm", "tiki-taka",
            "--eps", "2.5", "--transfer-every", "4", "--transfer-slice", "all", "--transfer-reset",
            "--fast-device", "digital", "--write", "per-sample", "--json", *SMALL]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)["plan"]
    assert data["best"]["bound"] == per_sample.bound
    assert data["best"]["iterations"] == per_sample.iterations


# -- the guarantee: proved rows whose settings are met, nothing else ------------------------------

def test_companion_rows_are_never_a_guarantee():
    assert guarantee_entries("sync", "tiki-taka", TransferSettings().settings()) == ()
    assert {b.name for b in guarantee_entries("none", "tiki-taka")} == {"tiki_taka_reset"}
    assert {b.name for b in guarantee_entries("sync", "tiki-taka")} == {"tiki_taka_reset_sp"}
    with pytest.raises(ParameterError, match="no derived bound"):
        evaluate_guarantee("sync", 0.5, algorithm="tiki-taka", settings={}, transfer=(1, 2),
                           **theory_values(HW.hardware, ProblemParams()), M=2, B=2, b=1)


def test_setting_conditions_decide(monkeypatch):
    row = _fake_row(monkeypatch, "setting transfer_slice=all", "setting tt_gamma=0")
    assert setting_conditions(row) == {"transfer_slice": "all", "tt_gamma": "0"}
    assert conditions_met(row, TransferSettings(slice="all").settings())
    assert not conditions_met(row, TransferSettings(slice="column").settings())
    assert not conditions_met(row, {"transfer_slice": "all"})  # tt_gamma not given
    silent = _fake_row(monkeypatch, name="tt_silent_sp")  # states no settings: never met
    assert not conditions_met(silent, TransferSettings().settings())
    assert [b.name for b in guarantee_entries("sync", "tiki-taka",
                                              TransferSettings(slice="all").settings())] == \
        ["tt_test_sp"]


def test_guarantee_cycles_include_the_transfers(monkeypatch):
    _fake_row(monkeypatch, "setting transfer_slice=column")
    values = theory_values(HW.hardware, ProblemParams())
    settings = TransferSettings().settings()
    plain = evaluate_guarantee("sync", 0.5, algorithm="tiki-taka", settings=settings,
                               transfer=(3, 0), **values, M=4, B=2, b=1)
    moved = evaluate_guarantee("sync", 0.5, algorithm="tiki-taka", settings=settings,
                               transfer=(3, 10), **values, M=4, B=2, b=1)
    k = int(plain.iterations_int)
    assert plain.cycles == float(cycles_after("sync", k, 4, 2))
    assert moved.cycles - plain.cycles == (k // 3) * 10
    with pytest.raises(ParameterError, match="transfer=None"):
        evaluate_guarantee("sync", 0.5, algorithm="tiki-taka", settings=settings, **values, M=4,
                           B=2, b=1)


def test_plan_with_a_proved_row_counts_the_transfers(monkeypatch):
    _fake_row(monkeypatch, "setting transfer_slice=all")
    limits = PlanLimits(16, 16)
    r = plan_tiki_taka(MLP, HW, ProblemParams(), 0.5, limits,
                       transfer=TransferSettings(every=3, slice="all"))
    assert r.status == OPTIMAL and r.forecast == ()
    status = {g.mode: g.status for g in r.guarantees}
    assert status == {"sync": GUARANTEED, "async": NO_GUARANTEE}
    b = r.best
    assert b.mode == "sync" and b.bound == "tt_test_sp"
    ends = (*b.partition.starts[1:], len(MLP.layers))
    starts = b.partition.starts
    rows = [[MLP.layers[i].rows for i in range(a, e)] for a, e in zip(starts, ends, strict=True)]
    event = 2 * max(sum(stage) for stage in rows)  # slice all: every column of every layer
    assert b.event_cycles == event
    assert b.transfer_cycles == (b.iterations // 3) * event
    assert b.cycles == int(cycles_after("sync", b.iterations, b.stages, b.micro_batches)) + \
        b.transfer_cycles
    assert b.seconds == pytest.approx(b.cycles * b.cycle_time_s, rel=1e-12)
    # the same settings with the column slice do not meet the row: no guarantee at all
    with pytest.raises(ParameterError, match="pass --calibration FILE"):
        plan_tiki_taka(MLP, HW, ProblemParams(), 0.5, limits,
                       transfer=TransferSettings(every=3, slice="column"))


# -- the calibration of Tiki-Taka runs ------------------------------------------------------------

def test_calibration_records_the_algorithm(tmp_path):
    cal = _tt_calibration(every=4, slice_="all")
    path = write_calibration(tmp_path / "tt.json", cal)
    back = read_calibration(path)
    assert back.algorithm == "tiki-taka"
    assert back.transfer == {"transfer_every": 4, "transfer_slice": "all"}
    assert check_algorithm(back, "tiki-taka") is back
    with pytest.raises(ParameterError, match="made with algorithm 'tiki-taka', the plan is for "
                                             "algorithm 'analog'"):
        check_algorithm(back, "analog", "tt.json")
    with pytest.raises(ParameterError, match="records transfer_slice"):
        Calibration(fits=cal.fits, problem={"algorithm": "tiki-taka", "transfer_every": 1},
                    fingerprint="x", design=(), seeds={}, version="t")


def test_calibration_problem_runs_tiki_taka_and_keeps_analog_files():
    analog = CalibrationProblem()
    assert analog.to_dict()["algorithm"] == "analog"  # recorded: the fingerprint covers it
    assert "transfer_every" not in analog.to_dict()
    assert analog.config("sync", 2, 2, 1, 0.1, 10, 2).algorithm == "analog"
    assert analog.event_cycles(4) == 0
    tt = CalibrationProblem(algorithm="tiki-taka", transfer_every=3, transfer_slice="all")
    config = tt.config("async", 4, 1, 1, 0.1, 10, 2)
    assert (config.algorithm, config.transfer_every, config.transfer_slice) == \
        ("tiki-taka", 3, "all")
    assert tt.to_dict()["algorithm"] == "tiki-taka"
    # dim 16 over 4 stages: blocks of 4 coordinates, one tile of 2 columns each
    assert tt.event_cycles(4) == 2 * 2
    with pytest.raises(ParameterError, match="algorithm='digital'"):
        CalibrationProblem(algorithm="digital")


def test_predicted_cycles_add_the_transfers():
    cal = _tt_calibration(every=2)
    f = predicted_cycles(cal, "sync", 0.5, 4, 2, 1, lr=0.2, event_cycles=6)
    k = f.iterations
    assert f.cycles == float(cycles_after("sync", k, 4, 2)) + (int(k) // 2) * 6
    with pytest.raises(ParameterError, match="event_cycles=None"):
        predicted_cycles(cal, "sync", 0.5, 4, 2, 1, lr=0.2)


def test_mismatched_calibrations_are_refused(tmp_path, capsys):
    tt = write_calibration(tmp_path / "tt.json", _tt_calibration())
    analog_cal = file_calibration({"sync": (0.5, 0.3, 1e-12)})
    analog = write_calibration(tmp_path / "analog.json", analog_cal)
    base = ["plan", "--model", "digits-mlp", "--accelerators", "4", "--no-relax", *SMALL]
    assert main([*base, "--calibration", str(tt)]) == 2
    err = capsys.readouterr().err
    assert "made with algorithm 'tiki-taka', the plan is for algorithm 'analog'" in err
    assert err.count("\n") == 1
    assert main([*base, "--algorithm", "tiki-taka", "--calibration", str(analog)]) == 2
    err = capsys.readouterr().err
    assert "made with algorithm 'analog', the plan is for algorithm 'tiki-taka'" in err
    assert err.count("\n") == 1


# -- the command ----------------------------------------------------------------------------------

def test_tiki_taka_without_guarantee_or_calibration_exits_2(capsys):
    assert main(["plan", "--model", "digits-mlp", "--algorithm", "tiki-taka", *SMALL]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "algorithm=tiki-taka has no proved (derived) guarantee" in err
    assert "pass --calibration FILE made by aimc-pipeline calibrate --algorithm tiki-taka" in err


@pytest.mark.parametrize("argv, pattern", [
    (["--algorithm", "sgd"], "invalid choice: 'sgd'"),
    (["--transfer-slice", "rows"], "invalid choice: 'rows'"),
    (["--algorithm", "tiki-taka", "--transfer-every", "0"], "--transfer-every=0"),
    (["--algorithm", "tiki-taka", "--compare-modes"], "algorithm=tiki-taka plans one"),
])
def test_parser_refuses_bad_flags(argv, pattern, capsys):
    try:
        status = main(["plan", "--model", "digits-mlp", *SMALL, *argv])
    except SystemExit as stop:  # argparse's own refusals
        status = stop.code
    assert status == 2
    err = capsys.readouterr().err
    assert pattern in err


def test_default_algorithm_is_todays_plan(capsys):
    base = ["plan", "--model", "digits-resmlp", "--accelerators", "4", "--no-relax", "--json",
            *SMALL]
    assert main(base) == 0
    plain = json.loads(capsys.readouterr().out)["plan"]
    assert main([*base, "--algorithm", "analog-sgd", "--transfer-every", "7",
                 "--transfer-slice", "all"]) == 0
    explicit = json.loads(capsys.readouterr().out)["plan"]
    plain.pop("solve_times"), explicit.pop("solve_times")
    assert plain == explicit
    assert "transfer_cycles" not in plain and "guarantees" not in plain
    library = plan(load_model("digits-resmlp"), PlanHardware(from_preset("softbounds-tau1"),
                                                             accelerators=4),
                   ProblemParams(), 1.0, PlanLimits(16, 16), relax=False)
    assert plain["cycles"] == library.cycles and plain["bound"] == library.best.bound


def test_tiki_taka_plan_with_a_calibration(tmp_path, capsys):
    path = write_calibration(tmp_path / "tt.json", _tt_calibration(every=2))
    argv = ["plan", "--model", "digits-mlp", "--accelerators", "8", "--eps", "0.05",
            "--algorithm", "tiki-taka", "--transfer-every", "2", "--calibration", str(path),
            *SMALL]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "chosen by predicted time" in captured.out
    assert "guarantee sync       no guarantee" in captured.out
    assert "status: forecast_only" in captured.out
    assert captured.err.count("warning:") == 1  # the calibration's constants are not the plan's
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["plan"]
    assert data["status"] == FORECAST_ONLY and data["best"] is None
    assert [g["status"] for g in data["guarantees"]] == [NO_GUARANTEE, NO_GUARANTEE]
    chosen = data["forecast"][0]
    assert chosen["guaranteed_seconds"] is None and chosen["transfer_cycles"] > 0
    assert chosen["seconds"] == min(r["seconds"] for r in data["forecast"])
    # another transfer period than the calibration's is said on stderr
    argv[argv.index("--transfer-every") + 1] = "5"
    assert main(argv) == 0
    assert "transferred every 2 updates" in capsys.readouterr().err


def test_tiki_taka_plan_reports_an_accepted_edited_calibration(tmp_path, capsys):
    """An edited Tiki-Taka calibration is refused in one line; accepted, the report and the
    JSON's calibration.edited say so."""
    path = write_calibration(tmp_path / "tt.json", _tt_calibration(every=2))
    data = json.loads(path.read_text())
    data["problem"]["Delta"] = 0.25  # with a recomputed fingerprint: only the checksum tells
    data["fingerprint"] = problem_fingerprint(data["problem"])
    path.write_text(json.dumps(data))
    argv = ["plan", "--model", "digits-mlp", "--accelerators", "8", "--eps", "0.05",
            "--algorithm", "tiki-taka", "--transfer-every", "2", "--calibration", str(path),
            *SMALL]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "checksum = sha256:" in err
    assert main([*argv, "--accept-edited-calibration"]) == 0
    captured = capsys.readouterr()
    assert "calibration          EDITED" in captured.out and "edited after" in captured.err
    assert main([*argv, "--accept-edited-calibration", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["plan"]["calibration"]["edited"] is True


# -- brute force: the exact search is the optimum of the grid under the same forecast -------------

def _small_model() -> Model:
    layers = [Layer(f"l{i}", rows=r, cols=8, mvms_per_sample=w, activations=a)
              for i, (r, w, a) in enumerate([(4, 1, 40), (9, 2, 10), (3, 1, 30), (6, 3, 20),
                                             (5, 1, 10)])]
    return Model(name="tiny", layers=tuple(layers))


def _step(mode, values, eps, grid, proved, settings):
    """The forecast's step rule (planner docstring), written out for one point."""
    if proved:
        r = evaluate_guarantee(mode, eps, algorithm="tiki-taka", settings=settings,
                               transfer=(1, 0), on_unreachable="status", **values, **grid)
        return float(r.step) if r.status == REACHABLE else math.nan
    r = evaluate_guarantee(mode, eps, on_unreachable="status", **values, **grid)
    if r.status == REACHABLE:
        return float(r.step)
    return step_cap(bound_for(mode).name, {**values, "M": grid["M"], "D": grid["M"] - 1})


def _brute_force(model, hw, eps, limits, transfer, cal, proved_modes, guarantee=False):
    """The least seconds over every (mode, M, B, b) and the points that have them: the forecast
    (``cal``) or, with ``guarantee``, the proved Tiki-Taka iterations."""
    values = theory_values(hw.hardware, ProblemParams())
    h = hw.hardware
    tiles = model.tiles(h.tile_rows, h.tile_cols)
    work, act = model.work, model.activations
    found = {}
    for mode in limits.modes:
        counts = range(1, limits.max_micro_batches + 1) if mode == "sync" else [1]
        for stages, count, b in itertools.product(range(1, len(model.layers) + 1), counts,
                                                  range(1, limits.max_micro_batch_size + 1)):
            free = best_partition(work, tiles, act, stages, hw.tiles_per_accelerator, None)
            if free is None:
                continue
            held = in_flight(mode, stages, count)
            fits = all(b * hh * a * hw.bytes_per_activation <= hw.activation_buffer_bytes
                       for hh, a in zip(held, free.activations, strict=True))
            caps = hw.activation_buffer_bytes / (hw.bytes_per_activation * b * held)
            part = free if fits else best_partition(work, tiles, act, stages,
                                                    hw.tiles_per_accelerator, caps)
            if part is None:
                continue
            grid = {"M": stages, "b": b} | ({"B": count} if mode == "sync" else {})
            if guarantee:
                if mode not in proved_modes:
                    continue
                g = evaluate_guarantee(mode, eps, algorithm="tiki-taka",
                                       settings=transfer.settings(), transfer=(1, 0),
                                       on_unreachable="status", **values, **grid)
                k = float(g.iterations_int) if g.status == REACHABLE else math.inf
            else:
                lr = _step(mode, values, eps, grid, mode in proved_modes, transfer.settings())
                if not math.isfinite(lr):
                    continue
                k = float(forecast_iterations(cal, mode, eps, lr=lr, M=stages, B=count,
                                              b=b)[0])
            if not math.isfinite(k):
                continue
            ends = (*part.starts[1:], len(model.layers))
            event = transfer_event_cycles(
                [[model.layers[i].rows for i in range(a, e)]
                 for a, e in zip(part.starts, ends, strict=True)],
                transfer.slice)
            cycles = float(cycles_after(mode, k, stages, count)) + float(
                transfer_cycles(k, transfer.every, event))
            found[mode, stages, count, b] = cycles * float(
                hw.timing.stage_time_s(b * part.bottleneck))
    least = min(found.values())
    return least, {key for key, value in found.items() if value == least}


@pytest.mark.parametrize("slice_, buffer, proved", [
    ("column", 1e9, False), ("all", 2.5e3, False), ("all", 2.5e3, True),
])
def test_exact_search_equals_brute_force(monkeypatch, slice_, buffer, proved):
    if proved:
        _fake_row(monkeypatch, f"setting transfer_slice={slice_}")
    model = _small_model()
    hw = PlanHardware(from_preset("softbounds-tau1"), accelerators=5, tiles_per_accelerator=4,
                      activation_buffer_bytes=buffer)
    limits = PlanLimits(6, 6)
    transfer = TransferSettings(every=2, slice=slice_)
    cal = _tt_calibration(every=2, slice_=slice_)
    eps = 0.3
    r = plan_tiki_taka(model, hw, ProblemParams(), eps, limits, transfer=transfer,
                       calibration=cal)
    least, keys = _brute_force(model, hw, eps, limits, transfer, cal,
                               {"sync"} if proved else set())
    chosen = r.forecast[0].candidate
    assert chosen.seconds == pytest.approx(least, rel=1e-12)
    assert (chosen.mode, chosen.stages, chosen.micro_batches, chosen.micro_batch_size) in keys
    assert (r.best is not None) == proved
    if proved:  # the guarantee's plan is the optimum of the proved times on the same grid
        least, keys = _brute_force(model, hw, eps, limits, transfer, cal, {"sync"},
                                   guarantee=True)
        b = r.best
        assert b.seconds == pytest.approx(least, rel=1e-12)
        assert (b.mode, b.stages, b.micro_batches, b.micro_batch_size) in keys


@pytest.mark.parametrize("seed", range(4))
def test_exact_search_equals_brute_force_on_drawn_models(seed):
    rng = np.random.default_rng(seed)
    rows, work, act = (rng.integers(lo, hi, 5) for lo, hi in ((1, 40), (1, 4), (5, 60)))
    model = Model(name="drawn", layers=tuple(
        Layer(f"l{i}", rows=int(r), cols=8, mvms_per_sample=int(w), activations=int(a))
        for i, (r, w, a) in enumerate(zip(rows, work, act, strict=True))))
    hw = PlanHardware(from_preset("softbounds-tau1"), accelerators=5, tiles_per_accelerator=4,
                      activation_buffer_bytes=float(rng.choice([1e3, 2e3, 4e3, 8e3])))
    slice_ = ("column", "all")[seed % 2]
    transfer, cal = TransferSettings(every=1 + seed, slice=slice_), _tt_calibration(1 + seed,
                                                                                    slice_)
    r = plan_tiki_taka(model, hw, ProblemParams(), 0.3, PlanLimits(6, 6), transfer=transfer,
                       calibration=cal)
    least, keys = _brute_force(model, hw, 0.3, PlanLimits(6, 6), transfer, cal, set())
    chosen = r.forecast[0].candidate
    assert chosen.seconds == pytest.approx(least, rel=1e-12)
    assert (chosen.mode, chosen.stages, chosen.micro_batches, chosen.micro_batch_size) in keys


def test_calibrate_command_records_tiki_taka_and_plan_reads_it(tmp_path, capsys):
    out = tmp_path / "tt.json"
    argv = ["calibrate", "--quick", "--steps", "300", "--seeds", "4", "--resamples", "2",
            "--dim", "8", "--algorithm", "tiki-taka", "--transfer-every", "2",
            "--transfer-slice", "all", "--out", str(out), "--jobs", "1", "--cache-dir",
            str(tmp_path / "cache")]
    assert main(argv) == 0  # --out FILE.json: the deprecated form, one warning line
    captured = capsys.readouterr()
    table = captured.out
    assert "algorithm tiki-taka (transfer every 2 updates, slice all)" in table
    (warning,) = [line for line in captured.err.splitlines() if "warning:" in line]
    assert "--out=" in warning and "deprecated" in warning and "calibration.json" in warning
    cal = read_calibration(out)
    assert cal.algorithm == "tiki-taka"
    assert cal.transfer == {"transfer_every": 2, "transfer_slice": "all"}
    assert cal.created_by["algorithm"] == "tiki-taka"
    base = ["plan", "--model", "digits-mlp", "--accelerators", "4", "--eps", "0.1", *SMALL,
            "--calibration", str(out)]
    assert main([*base, "--algorithm", "tiki-taka", "--transfer-every", "2",
                 "--transfer-slice", "all", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["plan"]
    assert data["calibration"]["transfer"] == cal.transfer
    assert data["forecast"] and data["status"] == FORECAST_ONLY
    assert main(base) == 2  # the analog planner refuses it
    assert "made with algorithm 'tiki-taka'" in capsys.readouterr().err


def test_a_row_needing_unknown_constants_gives_no_guarantee(monkeypatch):
    row = _fake_row(monkeypatch, "setting transfer_slice=column", name="tt_needs_sp")
    nu = local_sgd.nu  # the programming noise: not a constant of a plan
    monkeypatch.setitem(theorems.REGISTRY, row.name, dataclasses.replace(
        row, expr=row.expr * (1 + nu), rate_a=row.rate_a * (1 + nu)))
    with pytest.raises(ParameterError, match="pass --calibration"):
        plan_tiki_taka(MLP, HW, ProblemParams(), 0.5, PlanLimits(8, 8))
    r = plan_tiki_taka(MLP, HW, ProblemParams(), 0.5, PlanLimits(8, 8),
                       calibration=_tt_calibration(every=1))
    sync = next(g for g in r.guarantees if g.mode == "sync")
    assert sync.status == NO_GUARANTEE
    assert "tt_needs_sp cannot be evaluated here" in sync.message and "nu" in sync.message
