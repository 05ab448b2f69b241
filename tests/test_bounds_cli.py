"""``aimc-pipeline bounds``: JSON fields, CSV, presets, LaTeX, exit codes and one-line errors."""

from __future__ import annotations

import csv
import json

import pytest

from bounds import DEFAULT_EPS, DEFAULT_PRESET, PipelineConfig, ProblemParams, compare, from_preset
from bounds.commands.bounds import readme_table
from paper_figures.cli import main
from theory import REGISTRY, devices, latex_table

#: the rows `bounds` compares: every entry but Theorem LF's (their G2_iter is measured)
COMPARED = [name for name, bound in REGISTRY.items() if bound.floor_kind == "worst-case"]

REQUIRED = {"algorithm", "provenance", "iterations", "samples", "cycles", "seconds", "floor"}


def _run(capsys, *argv):
    status = main(["bounds", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_json_rows_have_the_required_fields_and_match_compare(capsys):
    status, out, err = _run(capsys, "--device", "reram-softbounds", "--eps", "2", "--stages", "4",
                            "--micro-batches", "16", "--micro-batch-size", "2", "--json")
    assert status == 0 and err == ""
    document = json.loads(out)
    assert list(document) == ["schema", "version", "rows"]
    assert document["schema"] == "aimc-pipeline/bounds/1"
    rows = document["rows"]
    assert [row["algorithm"] for row in rows] == COMPARED
    assert all(REQUIRED <= set(row) for row in rows)
    expected = compare(2.0, from_preset("reram-softbounds"),
                       pipeline=PipelineConfig(4, 16, 2)).to_rows()
    assert rows == json.loads(json.dumps(expected))


def test_default_run_prints_table(capsys):
    status, out, _ = _run(capsys)
    assert status == 0
    assert f"device {DEFAULT_PRESET}" in out and f"eps = {DEFAULT_EPS:g}" in out
    for name in COMPARED:
        assert name in out


def test_flags_override_problem_constants(capsys):
    status, out, _ = _run(capsys, "--sigma2", "0.5", "--L", "2", "--delta", "3", "--theta", "0.25",
                          "--weight-bound", "0.3", "--json")
    assert status == 0
    rows = {row["algorithm"]: row for row in json.loads(out)["rows"]}
    expected = compare(DEFAULT_EPS, from_preset(DEFAULT_PRESET, weight_bound=0.3),
                       ProblemParams(L=2, Delta=3, sigma2=0.5, theta=0.25))
    assert rows["analog_sgd_ap"]["iterations"] == expected.result("analog_sgd_ap").iterations
    assert rows["analog_sgd_ap"]["floor"] == expected.result("analog_sgd_ap").floor


def test_config_file_then_flags(tmp_path, capsys):
    path = tmp_path / "hw.toml"
    path.write_text('preset = "reram-softbounds"\neps = 2.0\n[pipeline]\nstages = 2\n'
                    "micro_batches = 4\n", encoding="utf-8")
    expected = compare(2.0, from_preset("reram-softbounds"), pipeline=PipelineConfig(2, 4, 3))
    for flag in ("--hardware", "--config"):  # --config: the old spelling
        status, out, _ = _run(capsys, flag, str(path), "--micro-batch-size", "3", "--json")
        assert status == 0
        assert json.loads(out)["rows"] == json.loads(json.dumps(expected.to_rows()))


def test_old_spellings_give_the_same_output(capsys):
    outputs = []
    for flag in ("--device", "--preset"):
        status, out, err = _run(capsys, flag, "reram-softbounds", "--eps", "2")
        assert status == 0 and err == ""
        outputs.append(out)
    assert outputs[0] == outputs[1]
    status, _, err = _run(capsys, "--preset", "nope")  # messages name the spelling typed
    assert status == 2 and "--preset='nope'" in err
    status, _, err = _run(capsys, "--device", "nope")
    assert status == 2 and "--device='nope'" in err
    with pytest.raises(SystemExit):
        main(["bounds", "--help"])
    text = capsys.readouterr().out
    assert "--device NAME" in text and "--hardware FILE.toml" in text and "--out DIR" in text
    assert "--preset NAME" not in text and "--config FILE" not in text  # hidden aliases


def test_out_dir_writes_bounds_csv(tmp_path, capsys):
    status, out, _ = _run(capsys, "--out", str(tmp_path / "o"))
    assert status == 0 and "analog_sgd_ap" in out
    with open(tmp_path / "o" / "bounds.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["algorithm"] for row in rows] == COMPARED
    status, _, _ = _run(capsys, "--csv", str(tmp_path / "rows.csv"))
    assert status == 0  # the old --csv FILE writes the same bytes
    assert (tmp_path / "rows.csv").read_bytes() == (tmp_path / "o" / "bounds.csv").read_bytes()


def test_csv_file(tmp_path, capsys):
    path = tmp_path / "rows.csv"
    status, out, _ = _run(capsys, "--csv", str(path))
    assert status == 0 and "analog_sgd_ap" in out
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["algorithm"] for row in rows] == COMPARED
    assert REQUIRED <= set(rows[0])


def test_list_presets(capsys):
    status, out, _ = _run(capsys, "--list-presets")
    assert status == 0
    assert [line.split()[0] for line in out.strip().splitlines()] == devices.list_presets()


def test_latex_has_every_entry(capsys):
    status, out, _ = _run(capsys, "--latex")
    assert status == 0
    for name, bound in REGISTRY.items():
        assert f"% {name} ({bound.provenance}" in out
        assert bound.latex() in out


def test_readme_table_flag(capsys):
    status, out, _ = _run(capsys, "--readme-table")
    assert status == 0 and out.strip() == readme_table()
    assert latex_table().strip() in out


def test_partly_unreachable_eps_reports_rows_and_succeeds(capsys):
    # between the SP floor (mini-batch 32) and the AP floor (micro-batch 4)
    status, out, _ = _run(capsys, "--preset", "reram-softbounds", "--eps", "0.2", "--json")
    rows = {row["algorithm"]: row for row in json.loads(out)["rows"]}
    assert status == 0
    assert rows["analog_sgd_ap"]["iterations"] is None
    assert rows["analog_sgd_ap"]["floor"] > 0.2
    assert "unreachable" in rows["analog_sgd_ap"]["reason"]
    assert rows["analog_sgd_sp"]["iterations"] > 0


def test_unreachable_eps_exits_nonzero_with_floor(capsys):
    hw = from_preset("reram-softbounds")
    floor = compare(1e9, hw).result("analog_sgd_sp").floor  # lowest analog floor (largest batch)
    status, out, err = _run(capsys, "--preset", "reram-softbounds", "--eps", f"{floor / 2}")
    assert status == 2 and out == ""
    assert err.count("\n") == 1
    assert f"floor is {floor:.6g}" in err and "aimc-pipeline bounds: error:" in err


@pytest.mark.parametrize(
    ("argv", "pattern"),
    [
        (["--weight-bound", "1.0"], "--weight-bound=1.0 is out of range; valid range (0, 1)"),
        (["--preset", "nope"], "preset='nope' is unknown; valid presets: "),
        (["--sigma2", "0"], "sigma2=0.0 is out of range; valid range (0, inf)"),
        (["--delta", "-1"], "--delta=-1.0 is out of range"),
        (["--theta", "1"], "theta=1.0 is out of range; valid range (0, 1)"),
        (["--stages", "0"], "stages=0 is out of range; valid range [1, 1e+06]"),
        (["--stages", "17"], "stages=17 is out of range; valid range [1, 16]"),
        (["--eps", "0"], "eps=0.0 is out of range"),
    ],
)
def test_bad_input_is_one_line_error(capsys, argv, pattern):
    status, out, err = _run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and pattern in err


def test_unknown_toml_key_is_one_line_error(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text('preset = "softbounds-tau1"\n[problem]\nsigma = 1.0\n', encoding="utf-8")
    status, _, err = _run(capsys, "--config", str(path))
    assert status == 2 and err.count("\n") == 1
    assert "unknown key 'sigma'" in err and "valid keys: L, Delta, sigma2, L_s, theta" in err


def test_help_gives_units(capsys):
    with pytest.raises(SystemExit) as info:
        main(["bounds", "--help"])
    assert info.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "average squared gradient norm" in out and "squared-gradient units" in out
    assert "clock cycles" in out and "seconds" in out


def test_python_dash_m_bounds():
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-m", "bounds", "--list-presets"], cwd=root,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and DEFAULT_PRESET in done.stdout
    bad = subprocess.run([sys.executable, "-m", "bounds", "--preset", "nope"], cwd=root,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "valid presets" in bad.stderr


def test_unreadable_config_and_unwritable_csv_are_one_line_errors(tmp_path, capsys):
    (tmp_path / "dir.toml").mkdir()
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00")
    for argv, pattern in (
        (["--config", str(tmp_path / "dir.toml")], "config='"),
        (["--config", str(binary)], "is not UTF-8 text"),
        (["--csv", str(tmp_path)], f"--csv={str(tmp_path)!r} cannot be used"),
        (["--out", str(binary)], f"--out={str(binary)!r} cannot be used"),
    ):
        status, _, err = _run(capsys, *argv)
        assert status == 2 and err.count("\n") == 1 and pattern in err


def test_rows_beyond_int64_iterations(capsys):
    floor = compare(1e9, from_preset("reram-softbounds")).result("analog_sgd_ap").floor
    eps = repr(floor * (1 + 1e-13))
    status, out, _ = _run(capsys, "--preset", "reram-softbounds", "--eps", eps, "--json")
    rows = {row["algorithm"]: row for row in json.loads(out)["rows"]}
    assert status == 0 and rows["analog_sgd_ap"]["iterations"] is None
    assert "int64" in rows["analog_sgd_ap"]["reason"] and rows["analog_sgd_sp"]["iterations"] > 0
    # every analog row beyond int64 (tiny eps, tiny floor): one line naming the iteration count
    status, out, err = _run(capsys, "--weight-bound", "1e-12", "--eps", "1e-10")
    assert status == 2 and out == "" and err.count("\n") == 1 and "int64" in err


def test_json_and_csv_together(tmp_path, capsys):
    path = tmp_path / "rows.csv"
    status, out, _ = _run(capsys, "--json", "--csv", str(path))
    assert status == 0 and [row["algorithm"] for row in json.loads(out)["rows"]] == COMPARED
    with open(path, newline="", encoding="utf-8") as handle:
        assert [row["algorithm"] for row in csv.DictReader(handle)] == COMPARED
    with pytest.raises(SystemExit):
        main(["bounds", "--help"])
    assert "default: None" not in capsys.readouterr().out


def test_constants_beyond_the_float_range_name_the_flag(capsys):
    assert main(["bounds", "--L", "1e308"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nan" not in err
    assert "--L=1e+308 puts the rate coefficient c of analog_sgd beyond the float range" in err


def test_g_star_and_radius_show_the_local_rows_conditional_on_c_rho(capsys):
    """Corollary LF: with --g-star and --radius the *_local rows get numbers, below their
    worst-case rows (G_rho <= G_inf), and a note names the condition; one flag alone is refused."""
    status, out, _ = _run(capsys, "--g-star", "0.1", "--radius", "0.1", "--json")
    assert status == 0
    rows = {row["algorithm"]: row for row in json.loads(out)["rows"]}
    local = [name for name, bound in REGISTRY.items() if bound.floor_kind != "worst-case"]
    assert set(local) <= set(rows)
    for name in local:
        worst = rows[name.removesuffix("_local")]
        assert rows[name]["floor"] <= worst["floor"]
    status, out, _ = _run(capsys, "--g-star", "0.1", "--radius", "0.1")
    assert status == 0 and "conditional on C_rho" in out and "analog_sgd_local" in out
    status, _, err = _run(capsys, "--g-star", "0.1")
    assert status != 0 and "--g-star and --radius go together" in err
