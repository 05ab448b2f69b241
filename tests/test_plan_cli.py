"""The ``aimc-pipeline plan`` command: table, JSON fields, files, exit codes."""

from __future__ import annotations

import csv
import json

import pytest

from bounds import PlanHardware, PlanLimits, ProblemParams, from_preset, load_model, plan
from bounds.planning import ModeLimits, plan_modes, single_kind, time_grid
from paper_figures.cli import main

SMALL = ["--max-micro-batches", "32", "--max-micro-batch-size", "32"]


def test_list_models(capsys):
    assert main(["plan", "--list-models"]) == 0
    out = capsys.readouterr().out
    for name in ("digits-mlp", "digits-resmlp", "resnet-cnn", "llama2-7b"):
        assert name in out


def test_table_output(capsys):
    assert main(["plan", "--model", "digits-mlp", "--accelerators", "4", "--eps", "0.5",
                 *SMALL]) == 0
    out = capsys.readouterr().out
    for label in ("mode", "stages M", "partition", "micro-batches B", "micro-batch size b",
                  "iterations", "clock cycles", "guaranteed time", "dominant term",
                  "alternatives", "relaxation (GP)"):
        assert label in out


def test_json_equals_the_library_plan(capsys):
    argv = ["plan", "--model", "resnet-cnn", "--accelerators", "6", "--eps", "0.6",
            "--preset", "reram-softbounds", "--sigma2", "2", *SMALL, "--json"]
    assert main(argv) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["schema"] == "aimc-pipeline/plan/1"
    assert document["plan_error"] is None and document["modes"] is None
    data = document["plan"]
    expected = plan(
        load_model("resnet-cnn"), PlanHardware(from_preset("reram-softbounds"), accelerators=6),
        ProblemParams(sigma2=2.0), 0.6, PlanLimits(32, 32),
    )
    for key in ("mode", "stages", "micro_batches", "micro_batch_size", "iterations", "cycles"):
        assert data[key] == getattr(expected, key)
    assert data["seconds"] == pytest.approx(expected.seconds, rel=1e-12)
    assert data["partition"] == list(expected.partition.sizes)
    assert data["dominant"] == expected.dominant
    assert len(data["alternatives"]) == len(expected.alternatives) == 3
    assert set(data["relaxed"]) >= {"value", "stages", "micro_batches", "micro_batch_size"}
    assert data["relaxed"]["value"] <= data["seconds"] * (1 + 1e-6)


def test_out_dir_files(tmp_path, capsys):
    assert main(["plan", "--model", "digits-resmlp", "--accelerators", "4", *SMALL,
                 "--no-relax", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    data = json.loads((tmp_path / "plan.json").read_text())
    with (tmp_path / "plan_alternatives.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert rows[0]["mode"] == data["mode"] and int(rows[0]["stages"]) == data["stages"]
    assert len(rows) == 1 + len(data["alternatives"])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--model", "digits-mlp", "--accelerators", "0"], "accelerators=0"),
        (["--model", "nope"], "built-in models"),
        (["--model", "digits-mlp", "--preset", "nope"], "valid presets"),
        (["--model", "digits-mlp", "--eps", "1e-9", *SMALL], "floor"),
        (["--model", "llama2-7b", "--accelerators", "2"], "tiles"),
        ([], "--model is required"),
        # the flags are checked before the model is read (and before any grid is allocated)
        (["--eps", "-1"], "--eps=-1.0 is out of range"),
        (["--max-micro-batches", "1000000"], "--max-micro-batches=1000000 asks for 5.12e+08 "
                                             "planner grid points"),
        (["--model", "digits-mlp", "--max-micro-batch-size", "100000000"],
         "--max-micro-batch-size=100000000 is out of range; valid range [1, 5e+07]"),
        (["--model", "digits-mlp", "--accelerators", "1" + "0" * 400],
         "--accelerators=1000000000...0000000000 (401 digits) is out of range"),
        (["--model", "digits-mlp", "--bytes-per-activation", "1" + "0" * 400],
         "--bytes-per-activation=1000000000...0000000000 (401 digits) is out of range; valid "
         "range [1, 1024]"),
    ],
)
def test_errors_exit_2_with_one_line(argv, message, capsys):
    assert main(["plan", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_help_states_units(capsys):
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    out = " ".join(capsys.readouterr().out.split())  # undo argparse's line wrapping
    assert "bytes" in out and "gradient units" in out and "seconds" in out


def _strict_json(text: str):
    """Parse ``text`` rejecting NaN and Infinity, which are not JSON."""
    def reject(constant):
        raise ValueError(f"{constant} is not valid JSON")

    return json.loads(text, parse_constant=reject)


def test_json_without_relaxation_is_strict_json(tmp_path, capsys):
    argv = ["plan", "--model", "digits-mlp", "--accelerators", "4", *SMALL, "--no-relax"]
    assert main([*argv, "--json", "--out", str(tmp_path)]) == 0
    printed = _strict_json(capsys.readouterr().out)["plan"]
    written = _strict_json((tmp_path / "plan.json").read_text())
    assert printed == written  # plan.json is the printed plan part
    for data in (printed, written):
        assert data["gap"] is None and data["relaxed"]["value"] is None
        assert data["relaxed"]["solve_time_s"] == 0.0 and data["seconds"] > 0


def test_unreadable_model_and_unwritable_out_are_one_line_errors(tmp_path, capsys):
    (tmp_path / "model.toml").mkdir()
    taken = tmp_path / "file"
    taken.write_text("", encoding="utf-8")
    for argv, pattern in (
        (["--model", str(tmp_path / "model.toml")], "cannot be read"),
        (["--model", "digits-mlp", *SMALL, "--no-relax", "--out", str(taken)],
         f"--out={str(taken)!r} cannot be used; valid: a writable directory"),
    ):
        assert main(["plan", *argv]) == 2
        err = capsys.readouterr().err
        assert pattern in err and err.count("\n") == 1


def test_help_shows_no_meaningless_default(capsys):
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    assert "default: None" not in capsys.readouterr().out


def test_a_failed_relaxation_is_printed_with_its_status(monkeypatch, capsys):
    import cvxpy as cp

    def fail(self, *args, **kwargs):
        raise cp.error.SolverError("no convergence")

    monkeypatch.setattr(cp.Problem, "solve", fail)
    argv = ["plan", "--model", "digits-mlp", "--accelerators", "4", *SMALL]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "relaxation (GP)      not solved (solver_error): " in out and "no convergence" in out
    assert main([*argv, "--json"]) == 0
    data = _strict_json(capsys.readouterr().out)["plan"]
    assert data["status"] == "relaxation_failed" and data["relaxed"]["status"] == "solver_error"
    assert data["gap"] is None and data["relaxed"]["value"] is None


def test_huge_eps_plans_one_iteration(capsys):
    assert main(["plan", "--model", "digits-mlp", "--eps", "1e300", *SMALL, "--no-relax",
                 "--json"]) == 0
    data = _strict_json(capsys.readouterr().out)["plan"]
    assert data["iterations"] == 1 and data["eps"] == 1e300 and data["seconds"] > 0


def test_write_per_sample_plans_with_the_per_sample_guarantees(capsys):
    """--write per-sample: Corollary 3PS for sync and Theorem 4'PS for async (library = CLI)."""
    argv = ["plan", "--model", "digits-mlp", "--accelerators", "4", "--eps", "2.5", *SMALL,
            "--write", "per-sample", "--json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)["plan"]
    hardware = PlanHardware(from_preset("softbounds-tau1"), accelerators=4)
    for modes, name in ((("async",), "analog_sgd_ap_per_sample"),
                        (("sync",), "analog_sgd_sp_per_sample")):
        limits = PlanLimits(32, 32, modes=modes, write="per-sample")
        result = plan(load_model("digits-mlp"), hardware, ProblemParams(), 2.5, limits,
                      relax=False)
        assert result.best.bound == name
    expected = plan(load_model("digits-mlp"), hardware, ProblemParams(), 2.5,
                    PlanLimits(32, 32, write="per-sample"), relax=False)
    assert (data["mode"], data["iterations"]) == (expected.mode, expected.iterations)
    # the relaxation uses a minorant of Theorem 4'PS's c (no monomial in b): still a lower bound
    assert data["relaxed"]["value"] <= data["seconds"] * (1 + 1e-6)
    # batch-mean (the default) is unchanged
    default = plan(load_model("digits-mlp"), hardware, ProblemParams(), 2.5, PlanLimits(32, 32),
                   relax=False)
    assert default.best.bound in ("analog_sgd_sp", "analog_sgd_ap", "analog_sgd_ap_b")


def test_write_errors_are_one_line(capsys):
    with pytest.raises(SystemExit) as exit_info:  # argparse's own choice check
        main(["plan", "--model", "digits-mlp", "--write", "rows"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --write: invalid choice: 'rows'" in err and err.count("\n") == 1
    # tiki-taka + per-sample is planned (Corollary TT0PS: tests/test_plan_tiki_taka.py); without
    # the variant's settings there is no guarantee: one line
    assert main(["plan", "--model", "digits-mlp", "--algorithm", "tiki-taka",
                 "--write", "per-sample"]) == 2
    err = capsys.readouterr().err
    assert "no proved (derived) guarantee" in err and err.count("\n") == 1


def test_relaxation_minorant_of_the_per_sample_async_c():
    """Theorem 4'PS's c decreases in b; the relaxation drops its sqrt(D/b) part (b-free, below c
    at every b) and keeps every other term as it is."""
    import sympy as sp

    from bounds.planning.relaxation import _relaxed_term
    from theory import REGISTRY, compile_expr
    from theory.symbols import b

    name = "analog_sgd_ap_per_sample"
    minorant = _relaxed_term(name, "rate_c")
    assert b not in minorant.free_symbols
    assert _relaxed_term(name, "rate_a") == REGISTRY[name].rate_a
    assert _relaxed_term("analog_sgd_ap", "rate_c") == REGISTRY["analog_sgd_ap"].rate_c
    full, low = compile_expr(REGISTRY[name].rate_c), compile_expr(minorant)
    values = dict(L=1.0, L_s=1.0, Delta=1.0, q_min=0.5, q_max=1.5, G_inf=0.4, theta=0.5, D=7)
    for batch in (1, 4, 64, 10**6):
        assert float(low(values)) <= float(full({**values, "b": batch}))
    assert float(full({**values, "b": 10**12})) == pytest.approx(float(low(values)), rel=1e-5)
    assert sp.simplify(minorant - REGISTRY[name].rate_c.subs(b, sp.oo)) == 0


def test_write_per_sample_with_kinds_warns_in_one_line(capsys):
    argv = ["plan", "--model", "digits-mlp", "--digital-accelerators", "2", "--accelerators", "4",
            "--eps", "2.5", "--write", "per-sample", *SMALL]
    assert main(argv) == 0
    captured = capsys.readouterr()
    warnings = [x for x in captured.err.splitlines() if x.startswith("warning:")]
    assert warnings == ["warning: --write per-sample: the mode comparison (accelerator kinds) "
                        "uses the batch-mean guarantees; only the single-kind plan uses the "
                        "per-sample ones"]
    assert "analog_sgd_ap_per_sample" in captured.out or "analog_sgd_sp_per_sample" in captured.out


# -- calibration files: edited files are refused, or reported when accepted ------------------------

def _calibration_file(tmp_path, edit=None):
    from tests._calibration_files import file_calibration
    from theory.calibration_file import write_calibration

    cal = file_calibration({"sync": (0.15, 0.04, 0.002), "async": (0.13, 0.035, 0.003, 0.05, 0.01)})
    path = write_calibration(tmp_path / "calibration.json", cal)
    if edit is not None:
        data = json.loads(path.read_text())
        edit(data)
        path.write_text(json.dumps(data))
    return path


def _times_1000(data):
    fit = data["fits"]["sync"]
    for key in ("values", "low", "high"):
        fit[key] = [1000 * x for x in fit[key]]
    fit["draws"] = [[1000 * x for x in row] for row in fit["draws"]]


PLAN = ["plan", "--model", "digits-mlp", "--accelerators", "4", "--no-relax", "--eps", "0.1",
        *SMALL]


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["fits"]["sync"].update(values=[-x for x in d["fits"]["sync"]["values"]]),
     "fits.sync.values[0] = -0.15 is out of range"),
    (lambda d: d["fits"]["sync"]["values"].__setitem__(1, 0.0),
     "fits.sync.values[1] = 0.0 is out of range"),
    (_times_1000, "checksum = sha256:"),
    (lambda d: d["fits"]["async"].update(draws=[]), "fits.async.draws = [] has 0 entries"),
    (lambda d: d.update(problem={}), "problem: missing key"),
], ids=["negated", "zeroed", "x1000", "no draws", "problem {}"])
def test_plan_refuses_an_edited_calibration_in_one_line(tmp_path, capsys, edit, message):
    path = _calibration_file(tmp_path, edit)
    assert main([*PLAN, "--calibration", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--calibration={str(path)!r}: " in err and message in err
    assert "Traceback" not in err


def test_plan_reports_an_accepted_edited_calibration(tmp_path, capsys):
    """--accept-edited-calibration reads a consistently edited file (x1000) and says so in the
    text, on stderr and in the JSON; an unedited file says it is not edited."""
    clean = _calibration_file(tmp_path)
    assert main([*PLAN, "--calibration", str(clean), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["plan"]["forecast"]["calibration_edited"] is False
    (tmp_path / "edited").mkdir()
    edited = _calibration_file(tmp_path / "edited", _times_1000)
    argv = [*PLAN, "--calibration", str(edited), "--accept-edited-calibration"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "EDITED after calibrate wrote it" in captured.out
    assert "warning: --calibration=" in captured.err and "edited" in captured.err
    assert main([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["plan"]["forecast"]["calibration_edited"] is True
    assert main([*PLAN, "--accept-edited-calibration"]) == 2
    assert "applies to --calibration FILE only" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------
# what the numbers mean: the problem constants, their sources and the units of eps

TINY = """
name = "tiny"
[[blocks]]
layers = [ { rows = 8, cols = 8 }, { rows = 8, cols = 4 } ]
[problem]
L = 2.0
sigma2 = 0.5
"""


def _constants_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("problem constants: "))


def test_llama2_plan_states_its_placeholder_constants_and_units(capsys):
    argv = ["plan", "--model", "llama2-7b", "--sequence-length", "64", "--accelerators", "64",
            "--tiles-per-accelerator", "16384", "--no-relax", *SMALL]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.count("problem constants: ") == 1
    assert _constants_line(out) == (
        "problem constants: L = 1 (default placeholder), Delta = 1 (default placeholder), "
        "sigma2 = 1 (default placeholder); eps in squared-gradient units of these constants")
    assert "  guaranteed time      " in out and " under these constants" in out
    assert "predicted time" not in out
    note = [line for line in out.splitlines() if "default placeholders" in line]
    assert len(note) == 1 and note[0].startswith("note: L, Delta, sigma2 are default placeholders")
    assert "'llama2-7b'" in note[0] and "--L, --delta, --sigma2" in note[0]


def test_sources_flag_file_and_default_each_appear(tmp_path, capsys):
    net = tmp_path / "tiny.toml"
    net.write_text(TINY)
    argv = ["plan", "--model", str(net), "--accelerators", "2", "--delta", "3", "--theta",
            "0.25", "--no-relax", *SMALL]
    assert main(argv) == 0
    out = capsys.readouterr().out
    line = _constants_line(out)
    assert f"L = 2 ({net}: problem.L)" in line and f"sigma2 = 0.5 ({net}: problem.sigma2)" in line
    assert "Delta = 3 (flag --delta)" in line and "theta = 0.25 (flag --theta)" in line
    assert "L_s" not in line  # follows L: not shown
    assert "default placeholder" not in out  # no placeholder: no note
    # a flag overrides the file; what is not given anywhere is the default placeholder
    assert main([*argv[:5], "--L", "4", "--no-relax", *SMALL, "--json"]) == 0
    constants = json.loads(capsys.readouterr().out)["plan"]["constants"]
    assert constants["L"] == {"value": 4.0, "source": "flag --L"}
    assert constants["L_s"] == {"value": 4.0, "source": "follows L"}
    assert constants["sigma2"] == {"value": 0.5, "source": f"{net}: problem.sigma2"}
    assert constants["Delta"] == {"value": 1.0, "source": "default placeholder"}
    assert constants["theta"] == {"value": 0.5, "source": "default placeholder"}


def test_model_file_constants_change_the_plan_like_the_flags(tmp_path, capsys):
    net = tmp_path / "tiny.toml"
    net.write_text(TINY)
    base = ["plan", "--accelerators", "2", "--no-relax", *SMALL, "--json"]
    assert main([*base, "--model", str(net)]) == 0
    from_file = json.loads(capsys.readouterr().out)["plan"]
    net.write_text(TINY.split("[problem]")[0])
    assert main([*base, "--model", str(net), "--L", "2", "--sigma2", "0.5"]) == 0
    from_flags = json.loads(capsys.readouterr().out)["plan"]
    assert main([*base, "--model", str(net)]) == 0
    defaults = json.loads(capsys.readouterr().out)["plan"]
    assert from_file["iterations"] == from_flags["iterations"] != defaults["iterations"]
    assert from_file["seconds"] == from_flags["seconds"]


def test_json_states_constants_and_eps_units(capsys):
    argv = ["plan", "--model", "digits-mlp", "--accelerators", "4", "--sigma2", "0.1",
            "--no-relax", *SMALL, "--json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)["plan"]
    assert data["eps_units"] == "squared-gradient units of these constants"
    assert set(data["constants"]) == {"L", "L_s", "Delta", "sigma2", "theta"}
    assert data["constants"]["sigma2"] == {"value": 0.1, "source": "flag --sigma2"}
    assert data["constants"]["L"]["source"] == "default placeholder"


def test_library_plan_names_given_and_model_constants(tmp_path):
    hardware = PlanHardware(from_preset("reram-softbounds"), accelerators=2)
    net = tmp_path / "tiny.toml"
    net.write_text(TINY)
    model = load_model(net)
    assert model.problem == {"L": 2.0, "sigma2": 0.5}
    own = plan(model, hardware, None, 1.0, PlanLimits(8, 8), relax=False)
    assert own.constants.sources["L"] == "model tiny: problem.L"
    assert own.constants.values["sigma2"] == 0.5
    given = plan(model, hardware, ProblemParams(sigma2=0.1), 1.0, PlanLimits(8, 8), relax=False)
    assert given.constants.sources["sigma2"] == "given"
    assert given.constants.sources["L"] == "default placeholder"  # problem= replaces the file's
    # every planner reads the model's constants when no problem is given
    same = ProblemParams(L=2.0, sigma2=0.5)
    assert own.seconds == plan(model, hardware, same, 1.0, PlanLimits(8, 8), relax=False).seconds
    assert time_grid(model, hardware, None, 1.0, PlanLimits(8, 8)) == time_grid(
        model, hardware, same, 1.0, PlanLimits(8, 8))
    kinds, few = single_kind(hardware), ModeLimits(micro_batch_sizes=(1, 2))
    assert plan_modes(model, kinds, None, 1.0, few).to_dict() == plan_modes(
        model, kinds, same, 1.0, few).to_dict()


def test_model_problem_table_refuses_unknown_and_nonpositive_keys(tmp_path, capsys):
    net = tmp_path / "bad.toml"
    for body, word in (("theta = 0.3", "theta"), ("L = -1", "L")):
        net.write_text(TINY.split("[problem]")[0] + "[problem]\n" + body + "\n")
        assert main(["plan", "--model", str(net), "--accelerators", "2", "--no-relax"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and word in err and "Traceback" not in err


def test_compare_modes_states_the_constants_once(tmp_path, capsys):
    argv = ["plan", "--model", "digits-mlp", "--accelerators", "4", "--compare-modes",
            "--no-relax", *SMALL, "--mode-micro-batch-sizes", "1", "2"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.count("problem constants: ") == 1 and out.count("default placeholders") == 1
    assert main([*argv, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["modes"]["constants"] == document["plan"]["constants"]
    assert document["modes"]["eps_units"] == document["plan"]["eps_units"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    for name in ("plan.json", "modes.json"):
        written = json.loads((tmp_path / name).read_text())
        assert written["constants"] == document["plan"]["constants"], name


def test_compare_modes_without_a_plan_still_states_the_constants(tmp_path, capsys):
    """The single-kind plan cannot be made: the constants stand above the comparison, once."""
    path = tmp_path / "hw.toml"
    path.write_text("[[kinds]]\ntype = 'analog'\ncount = 1\ntiles = 4\n"
                    "[[kinds]]\ntype = 'digital'\ncount = 2\n")
    argv = ["plan", "--model", "digits-mlp", "--hardware", str(path), "--sigma2", "0.2", *SMALL,
            "--mode-micro-batch-sizes", "1", "2"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "not available" in out and out.count("problem constants: ") == 1
    assert out.index("problem constants: ") < out.index("best plan per mode")
    assert "sigma2 = 0.2 (flag --sigma2)" in out
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["plan"] is None
    assert data["modes"]["constants"]["sigma2"] == {"value": 0.2, "source": "flag --sigma2"}
