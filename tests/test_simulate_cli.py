"""``aimc-pipeline simulate``: table, JSON, output files, and one-line errors with exit status 2."""

from __future__ import annotations

import csv
import json
import re
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
    document = json.loads(capsys.readouterr().out,
                          parse_constant=lambda c: pytest.fail(f"non-strict JSON {c}"))
    assert document["schema"] == "aimc-pipeline/simulate/1" and document["version"]
    data = document["trace"]
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


# --- checked before any work (issue 11) ----------------------------------------------------------

def _no_run(monkeypatch):
    """Make the simulation itself fail: a refusal must come before any compute."""
    import simulate.engine as engine  # where the command looks the run up, when it runs

    def refuse(*args, **kwargs):
        pytest.fail("the run started before the input was refused")

    monkeypatch.setattr(engine, "run", refuse)


@pytest.mark.parametrize(("out", "files", "message"), [
    ("f", {"f": "x"}, "--out='{tmp}/f' cannot be used; valid: a writable directory "
                      "(not a directory)"),
    ("f/sub", {"f": "x"}, "--out='{tmp}/f/sub' cannot be used; valid: a writable directory "
                          "('{tmp}/f' is not a directory)"),
    ("/proc/version", {}, "--out='/proc/version' cannot be used; valid: a writable directory "
                          "(not a directory)"),
    ("/proc/new-dir", {}, "--out='/proc/new-dir' cannot be used; valid: a writable directory "
                          "(no file can be created in '/proc'"),
])
def test_out_is_checked_before_any_work(out, files, message, tmp_path, monkeypatch, capsys):
    _no_run(monkeypatch)
    for name, content in files.items():
        (tmp_path / name).write_text(content)
    path = out if out.startswith("/") else str(tmp_path / out)
    assert run_command("simulate", SMALL + ["--out", path]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert message.replace("{tmp}", str(tmp_path)) in line


def test_out_not_writable_is_refused_first(tmp_path, monkeypatch, capsys):
    import os

    if os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    _no_run(monkeypatch)
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    assert run_command("simulate", SMALL + ["--out", str(locked / "new")]) == 2
    assert "no file can be created" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["--device", "reram-softbounds", "--tau", "5"],
     "--tau=5 does not apply to the preset device='reram-softbounds', whose range [-0.75, 1.25] "
     "is fixed"),
    (["--device", "idealized-constantstep", "--tau", "1"],  # the default value, but typed
     "--tau=1 does not apply to the preset device='idealized-constantstep'"),
    (["--device", "constant-step", "--tau", "5"],
     "--tau=5 does not apply to the family device='constant-step', whose range is set by w_min "
     "and w_max"),
    (["--tau", "1e-6"], "--tau=1e-06 is too small for device='softbounds': its range [-tau, tau] "
                        "must hold one pulse dw_min=0.001; valid range [0.0005, inf)"),
    (["--device", "softbounds-tau1", "--tau", "1e-4"], "--tau=0.0001 is too small"),
    (["--steps", "1000000000000"], "--steps=1000000000000 asks for 1e+12 updates"),
    (["--micro-batches", "1000000000000000000"], "--micro-batches=1000000000000000000 asks for"),
    (["--update", "pulsed", "--pulse-type", "deterministic", "--lr", "1e4"],
     "--lr=10000.0 asks for"),
])
def test_refusals_name_the_flag(argv, message, capsys):
    assert run_command("simulate", SMALL[:2] + argv) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert message in line, line


def test_a_preset_with_a_fixed_range_records_no_tau(capsys):
    assert run_command("simulate", SMALL + ["--device", "reram-softbounds", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["trace"]["config"]["tau"] is None
    assert run_command("simulate", SMALL + ["--device", "softbounds-tau1", "--tau", "2",
                                            "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["trace"]["config"]["tau"] == 2.0
    assert run_command("simulate", SMALL + ["--json"]) == 0  # a family: the default tau 1
    assert json.loads(capsys.readouterr().out)["trace"]["config"]["tau"] == 1.0


def test_a_pinned_run_prints_one_warning_line_and_succeeds(capsys):
    assert run_command("simulate", ["--lr", "1e6", "--steps", "50"]) == 0
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith("aimc-pipeline simulate: warning: lr=1e+06: the run was pinned")
    assert "final loss" in captured.out
    assert run_command("simulate", SMALL) == 0
    assert capsys.readouterr().err == ""


def test_tiki_taka_transfer_every_counts_updates_under_per_sample_writes(capsys, monkeypatch,
                                                                         step_loop):
    """``--transfer-every T`` is in updates (its help says so): a per-sample run of n = 4 samples
    per update transfers after every T-th update, not every T-th write."""
    import argparse

    from simulate.commands.simulate import build_parser
    from simulate.device import TikiTaka

    parser = argparse.ArgumentParser()
    build_parser(parser)
    text = " ".join(re.sub(r"-\n\s+", "-", parser.format_help()).split())
    assert "transfer period T in updates (mini-batches), not writes" in text
    events, original = [], TikiTaka.transfer
    monkeypatch.setattr(TikiTaka, "transfer",
                        lambda self, rng=None: (events.append(self.count), original(self, rng)))
    argv = ["--algorithm", "tiki-taka", "-T", "4", "--transfer-slice", "all", "--fast-device",
            "digital", "--transfer-reset", "--micro-batch-size", "4", "--steps", "16",
            "--seeds", "1", "--json"]
    assert run_command("simulate", argv + ["--write", "per-sample"]) == 0
    per_sample = json.loads(capsys.readouterr().out)["trace"]
    assert events == [4, 8, 12, 16]
    assert run_command("simulate", argv) == 0
    batch_mean = json.loads(capsys.readouterr().out)["trace"]
    assert per_sample["cycles"] == batch_mean["cycles"]  # the same floor(k/T) events charged
