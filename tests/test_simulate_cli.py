"""``aimc-pipeline simulate``: table, JSON, output files, and one-line errors with exit status 2."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest

from paper_figures.cli import run_command

SMALL = ["--steps", "40", "--seeds", "2", "--log-every", "10", "--stages", "2"]


def test_table(capsys):
    assert run_command("simulate", SMALL + ["--mode", "async"]) == 0
    out = capsys.readouterr().out
    assert "mode=async" in out and "mean ||grad f||^2 over iterates" in out
    assert "cycles" in out and " 82" in out  # 2 (K + M - 1) = 2 (40 + 1)


def test_json_is_strict_and_complete(capsys):
    assert run_command("simulate", SMALL + ["--json", "--problem", "least-squares"]) == 0
    data = json.loads(capsys.readouterr().out)  # NaN would not parse with a strict parser below
    json.loads(json.dumps(data), parse_constant=lambda c: pytest.fail(f"non-strict JSON {c}"))
    assert data["step"] == [0, 10, 20, 30, 40] and len(data["loss"]) == 2
    assert data["test_accuracy"][0][0] is None and len(data["avg_grad_norm2"]) == 2
    assert data["config"]["problem"] == "least-squares"


def test_out_writes_csv_and_json(tmp_path, capsys):
    assert run_command("simulate", SMALL + ["--out", str(tmp_path), "--mode", "sync"]) == 0
    rows = list(csv.DictReader((tmp_path / "trace.csv").open()))
    assert [int(r["step"]) for r in rows] == [0, 10, 20, 30, 40]
    summary = json.loads((tmp_path / "trace.json").read_text(),
                         parse_constant=lambda c: pytest.fail(f"non-strict JSON {c}"))
    assert summary["config"]["mode"] == "sync"
    assert summary["final"]["test_accuracy_mean"] is None  # not computed on an oracle problem


@pytest.mark.parametrize("argv,message", [
    (["--lr", "60", "--algorithm", "digital"], "diverged at step"),
    (["--stages", "0"], "stages=0"),
    (["--device", "nope"], "device='nope' is unknown"),
    (["--tau", "-1"], "tau=-1"),
])
def test_errors_exit_2_with_one_line(argv, message, capsys):
    assert run_command("simulate", SMALL[:2] + argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_python_m_simulate_help_shows_units():
    result = subprocess.run([sys.executable, "-m", "simulate", "--help"], capture_output=True,
                            text=True, check=True)
    assert "weight units" in result.stdout and "--micro-batch-size" in result.stdout
