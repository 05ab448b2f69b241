"""The simulated and analytic paper figures: each CSV checked numerically, the figures command.

Fast tests shrink each figure's settings (``monkeypatch`` of its ``settings``) so that the checks
run in seconds; the ``slow`` tests run ``python -m paper_figures all --quick`` as CI does (its
time is measured by bench/bench_figures.py), ``report --quick`` on its sweep cache, and compare a
Dask run of one figure with a local one.
"""

from __future__ import annotations

import csv
import inspect
import json
import math
import os
import subprocess
import sys
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from paper_figures import asymptotic, complexity, speedup, theory_vs_sim, training
from paper_figures.registry import FIGURES, load_figure
from paper_figures.training import DigitsSettings
from theory import REGISTRY, ParameterError

ROOT = Path(__file__).resolve().parent.parent


def read_rows(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


# ------------------------------------------------------------------------------------------------
# registry


def test_every_figure_is_registered_and_complete():
    assert set(FIGURES) == {"schedule", "plan", "speedup", "training", "asymptotic",
                            "theory-vs-sim", "complexity", "modes", "tiki-taka"}
    for name in FIGURES:
        module = load_figure(name)
        assert module.NAME == name
        for attribute in ("DESCRIPTION", "compute", "plot", "write"):
            assert hasattr(module, attribute), (name, attribute)
    simulated = {"speedup", "training", "asymptotic", "theory-vs-sim", "tiki-taka"}
    for name in FIGURES:
        module = load_figure(name)
        assert module.USES_SWEEP == (name in simulated), name
        takes = {"jobs", "scheduler", "cache"} <= set(inspect.signature(module.write).parameters)
        assert takes == module.USES_SWEEP, name  # the declaration matches the signature


# ------------------------------------------------------------------------------------------------
# speedup


def test_throughput_speedup_sync_is_mb_over_b_plus_m_minus_1_exactly():
    for m in (1, 2, 4, 8, 12, 16):
        for b in (1, 3, 8):
            assert speedup.throughput_speedup("sync", m, b) == float(Fraction(m * b, b + m - 1))


def test_async_throughput_speedup_tends_to_m():
    for m in (2, 8, 16):
        values = [speedup.throughput_speedup("async", m, n) for n in (4, 32, 256, 2048)]
        assert values == [float(Fraction(m * n, n + m - 1)) for n in (4, 32, 256, 2048)]
        gaps = [m - v for v in values]
        assert all(g > 0 for g in gaps) and gaps == sorted(gaps, reverse=True)
        assert gaps[-1] < m * (m - 1) / 2048  # M - MN/(N+M-1) = M(M-1)/(N+M-1)


def test_digits_settings_validation():
    with pytest.raises(ParameterError, match="log_samples"):
        DigitsSettings(log_samples=50)


TINY_DIGITS = DigitsSettings(updates=40, async_budget=2.0, seeds=2, log_samples=64)

# the tuned time-to-target study of the speedup figure: tests/test_speedup_study.py


# ------------------------------------------------------------------------------------------------
# training


@pytest.fixture(scope="module")
def training_files(tmp_path_factory):
    out = tmp_path_factory.mktemp("training")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(training, "settings",
                   lambda quick: replace(TINY_DIGITS, updates=60, async_budget=1.0))
        training.write(out, quick=True, jobs=2, cache=out / "cache")
    return out


def test_training_csv(training_files):
    rows = read_rows(training_files / "training.csv")
    runs = {}
    for row in rows:
        runs.setdefault(row["run"], []).append(row)
    assert list(runs) == [run.label for run in training.runs()]
    for label, points in runs.items():
        acc = [float(p["test_accuracy_mean"]) for p in points]
        samples = [int(p["samples"]) for p in points]
        cycles = [int(p["cycles"]) for p in points]
        assert samples[0] == 0 and samples[-1] == 60 * 32, label  # both modes: same samples
        assert samples == sorted(samples) and cycles == sorted(cycles)
        assert acc[0] < 0.2, label  # chance level is 0.1
        # 1920 samples: every run learns (stated range for these settings)
        assert 0.6 <= acc[-1] <= 1.0, (label, acc[-1])
        assert float(points[-1]["loss_mean"]) < float(points[0]["loss_mean"])
    # the synchronous pipeline's iterates are those of the non-pipelined run: equal curves,
    # fewer cycles
    base = runs["analog SGD, no pipeline"]
    for label, m in (("analog SP, M = 4", 4), ("analog SP, M = 8", 8)):
        assert [p["test_accuracy_mean"] for p in runs[label]] == [
            p["test_accuracy_mean"] for p in base]
        last = int(runs[label][-1]["cycles"])
        assert last == 2 * (8 + m - 1) * 60 and int(base[-1]["cycles"]) == 2 * 8 * 8 * 60
    for label, m in (("analog AP, M = 4", 4), ("analog AP, M = 8", 8)):
        assert int(runs[label][-1]["cycles"]) == 2 * (60 * 8 + m - 1)


# ------------------------------------------------------------------------------------------------
# asymptotic


TINY_ASYMPTOTIC = asymptotic.AsymptoticSettings(taus=(0.5, 1.0, 2.0), lrs=(0.02, 0.05),
                                                steps=1500, seeds=6)


@pytest.fixture(scope="module")
def asymptotic_rows(tmp_path_factory):
    out = tmp_path_factory.mktemp("asymptotic")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(asymptotic, "settings", lambda quick: TINY_ASYMPTOTIC)
        asymptotic.write(out, quick=True, jobs=1, cache=False)
    return read_rows(out / "asymptotic.csv")


def test_asymptotic_floor_shape(asymptotic_rows):
    rows = asymptotic_rows
    tau_rows = sorted((r for r in rows if r["panel"] == "tau" and r["algorithm"] == "analog"),
                      key=lambda r: float(r["tau"]))
    digital = next(r for r in rows if r["panel"] == "tau" and r["algorithm"] == "digital")

    def z(a, b):  # difference in standard errors
        return (float(a["empirical"]) - float(b["empirical"])) / math.hypot(
            float(a["stderr"]), float(b["stderr"]))

    # the floor shrinks as tau grows (less asymmetry) and stays above digital SGD's noise ball
    for small, large in zip(tau_rows, tau_rows[1:], strict=False):
        assert z(small, large) > 4
    for row in tau_rows:
        assert z(row, digital) > 4
    # the theory's floor bounds the analog excess over digital SGD, at every tau and step
    paired = {(r["tau"], r["lr"]): r for r in rows if r["algorithm"] == "digital"}
    for row in rows:
        if row["algorithm"] != "analog":
            continue
        assert 0 < float(row["theta_max"]) < 1
        base = paired.get((row["tau"], row["lr"]))
        if base is not None:
            excess = float(row["empirical"]) - float(base["empirical"])
            assert float(row["theory_floor"]) >= excess > 0


def test_theory_floor_at_theta_max():
    values = {"L": 2.0, "sigma2": 1.0, "n": 1, "q_min": 0.7, "q_max": 1.3, "G_inf": 0.3}
    theta, floor = asymptotic.theory_floor(0.05, values)
    # analog_sgd: alpha * L q_max^2 / ((1 - theta) q_min) = 1
    assert theta == pytest.approx(1 - 0.05 * 2.0 * 1.3**2 / 0.7, rel=1e-12)
    assert floor == pytest.approx(0.3**2 / (theta * 0.7**2), rel=1e-12)
    assert all(math.isnan(v) for v in asymptotic.theory_floor(1.0, values))  # inadmissible


# ------------------------------------------------------------------------------------------------
# theory vs simulation


def test_theory_vs_sim_csv(tmp_path, monkeypatch):
    tiny = theory_vs_sim.TheoryVsSimSettings(stages=(1, 2, 4), steps=200, seeds=8)
    monkeypatch.setattr(theory_vs_sim, "settings", lambda quick: tiny)
    theory_vs_sim.write(tmp_path, quick=True, jobs=1, cache=False)
    rows = read_rows(tmp_path / "theory-vs-sim.csv")
    assert [(r["panel"], int(r["stages"])) for r in rows] == [
        (p, m) for p in ("SP", "AP") for m in (1, 2, 4)]
    for row in rows:
        empirical, bound = float(row["empirical"]), float(row["bound_value"])
        assert row["passed"] == "1" and empirical <= bound + float(row["error_bar"])
        assert float(row["ratio"]) == pytest.approx(bound / empirical, rel=1e-12)
    sp = [r for r in rows if r["panel"] == "SP"]
    assert len({(r["empirical"], r["bound_value"]) for r in sp}) == 1  # SP iterates ignore M
    ap = [r for r in rows if r["panel"] == "AP"]
    lrs = [float(r["lr"]) for r in ap]
    assert lrs == sorted(lrs, reverse=True)  # the admissible step shrinks with the delay
    assert ap[0]["empirical"] != sp[0]["empirical"]  # b = 1 versus B b = 4


# ------------------------------------------------------------------------------------------------
# complexity


@pytest.fixture(scope="module")
def complexity_rows(tmp_path_factory):
    out = tmp_path_factory.mktemp("complexity")
    complexity.write(out, quick=True)
    return read_rows(out / "complexity.csv"), json.loads((out / "complexity.json").read_text())


def test_complexity_curves_decrease_and_respect_floors(complexity_rows):
    rows, manifest = complexity_rows
    curves = {}
    for row in rows:
        curves.setdefault(row["bound"], []).append(row)
    s = complexity.settings(True)
    assert set(curves) | set(manifest["config"]["not_applicable"]) == set(REGISTRY)
    for name, points in curves.items():
        eps = np.array([float(p["eps"]) for p in points])
        k = np.array([int(p["iterations"]) for p in points])
        cycles = np.array([int(p["cycles"]) for p in points])
        floor = float(points[0]["floor"])
        assert np.all(np.diff(eps) > 0), name
        assert np.all(np.diff(k) <= 0) and np.all(np.diff(cycles) <= 0), name
        assert np.all(eps > floor), name
        if floor > 0:  # refined up to the asymptote, where the counts blow up
            assert eps[0] <= floor * (1 + 1e-3), name
            assert k[0] > 1e3 * k[-1], name
        else:
            assert eps[0] == pytest.approx(s.eps_min), name


def test_complexity_output_is_deterministic(complexity_rows, tmp_path):
    complexity.write(tmp_path, quick=True)
    first = complexity_rows[0]
    assert read_rows(tmp_path / "complexity.csv") == first


# ------------------------------------------------------------------------------------------------
# the figures command, all --quick, Dask


def test_figures_command_takes_sweep_options(tmp_path, monkeypatch, capsys):
    from paper_figures.cli import main

    seen = {}

    def fake_write(out_dir, quick=False, jobs=None, scheduler=None, cache=True):
        seen.update(out=out_dir, quick=quick, jobs=jobs, scheduler=scheduler, cache=cache)
        return []

    monkeypatch.setattr(asymptotic, "write", fake_write)
    assert main(["figures", "asymptotic", "--quick", "--jobs", "1", "--no-cache",
                 "--out", str(tmp_path)]) == 0
    assert seen == {"out": tmp_path, "quick": True, "jobs": 1, "scheduler": None,
                    "cache": False}


@pytest.fixture(scope="module")
def quick_figures(tmp_path_factory):
    """``python -m paper_figures all --quick`` run once, as CI does: its output folder, printed
    paths and sweep cache (the quick report below reuses the cache: the same points, computed
    once)."""
    base = tmp_path_factory.mktemp("quick")
    env = {**os.environ, "MPLBACKEND": "Agg"}
    result = subprocess.run(
        [sys.executable, "-m", "paper_figures", "all", "--quick", "--out", str(base / "f"),
         "--cache-dir", str(base / "cache"), "--jobs", "2"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    )
    return base, [Path(line) for line in result.stdout.splitlines()]


@pytest.mark.slow
def test_all_quick_writes_every_figure(quick_figures):
    """Timing is measured by bench/bench_figures.py, never asserted here."""
    base, printed = quick_figures
    assert {p.name for p in printed} == {f"{name}.{ext}" for name in FIGURES
                                         for ext in ("png", "pdf", "csv", "json")}
    # the quick digits runs end in the stated range, the quick speedups are meaningful
    final = {}
    for row in read_rows(base / "f" / "training.csv"):
        final[row["run"]] = float(row["test_accuracy_mean"])
    assert all(0.75 <= acc <= 1.0 for acc in final.values()), final
    rows = read_rows(base / "f" / "speedup.csv")
    accuracy = {int(r["stages"]): r for r in rows if r["kind"] == "time-to-target"
                and r["mode"] == "async" and r["baseline"] == "own"
                and r["target"] == "85% accuracy"}
    for m in (2, 4, 8):  # tuned steps: every seed reaches 85%, faster than without pipeline
        row = accuracy[m]
        assert float(row["reached"]) == 1.0 and row["status"] == "ok"
        assert 1 < float(row["speedup"]) < 2 * m


@pytest.mark.slow
def test_full_quick_report_references_every_figure(quick_figures, capsys):
    """``report --quick`` on the cache of ``all --quick``: every figure, its files and sentences."""
    from _report_folder import check_folder

    from paper_figures.cli import main

    base, _ = quick_figures
    out = base / "report"
    assert main(["report", "--quick", "--out", str(out), "--jobs", "2",
                 "--cache-dir", str(base / "cache")]) == 0
    printed = capsys.readouterr().out
    assert str(out / "index.html") in printed
    md, _ = check_folder(out, tuple(FIGURES))
    assert "sync) and" in md  # the speedup sentence with its numbers


@pytest.mark.slow
def test_dask_and_local_runs_give_equal_csvs(tmp_path, monkeypatch, dask_scheduler):
    tiny = replace(TINY_ASYMPTOTIC, taus=(0.5, 2.0), lrs=(0.03,), steps=600, seeds=4)
    monkeypatch.setattr(asymptotic, "settings", lambda quick: tiny)
    asymptotic.write(tmp_path / "local", quick=True, jobs=2, cache=False)
    asymptotic.write(tmp_path / "dask", quick=True, scheduler=dask_scheduler, cache=False)
    for ext in ("csv", "png"):
        local = (tmp_path / "local" / f"asymptotic.{ext}").read_bytes()
        assert (tmp_path / "dask" / f"asymptotic.{ext}").read_bytes() == local, ext


def test_complexity_caption_states_the_plotted_cycles(complexity_rows):
    rows = complexity_rows[0]
    text = complexity.caption(rows)
    eps = float(text.split("at eps = ")[1].split(" ")[0])
    cycles = {r["bound"]: int(r["cycles"]) for r in rows
              if r["bound"] in ("analog_sgd_sp", "analog_sgd_ap") and float(r["eps"]) == eps}
    sp, ap = cycles["analog_sgd_sp"], cycles["analog_sgd_ap"]
    assert f"needs {sp:,d} cycles and the asynchronous {ap:,d}" in text
    assert f"ratio SP/AP {sp / ap:.3g})" in text


def test_training_plot_labels():
    s = replace(TINY_DIGITS, tau=1.0)
    x = np.array([0, 10])
    curve = {"samples": x, "cycles": x, "accuracy_mean": x * 0.05, "accuracy_std": x * 0.0,
             "loss_mean": 2.0 - x * 0.1, "loss_std": x * 0.0}
    data = {"settings": s, "curves": {run.label: {**curve, "run": run} for run in training.runs()}}
    fig = training.plot(data)
    title = fig.get_suptitle()
    assert "device softbounds tau = 1," in title and f"of {s.seeds} seeds" in title
    assert "coincide" in fig.axes[0].get_title()
    no_tau = training.plot({**data, "settings": replace(s, device="reram-softbounds", tau=None)})
    assert "device reram-softbounds," in no_tau.get_suptitle()


def test_complexity_names_curves_drawn_on_top_of_each_other():
    data = complexity.compute(quick=True)
    iterations = complexity.coinciding(data["curves"], "iterations")
    # same iterates: analog SGD on mini-batches of B b and SP; D + 1 = M for the delayed rates;
    # Corollary TT0 at the bounds' T = 1, rho = 1 is Theorem 2 (same rate form), and Corollary
    # TT0PS is Corollary TT0 (the same formulas under per-sample writes)
    group = {"analog_sgd", "analog_sgd_sp", "tiki_taka_reset", "tiki_taka_reset_sp",
             "tiki_taka_reset_per_sample", "tiki_taka_reset_sp_per_sample"}
    assert any(group <= set(g) for g in iterations), iterations
    assert ("literature_delay_fixed", "literature_async_sgd") in iterations
    cycles = complexity.coinciding(data["curves"], "cycles")
    assert not any({"analog_sgd", "analog_sgd_sp"} <= set(group) for group in cycles)
    labels = [t.get_text() for t in complexity.plot(data).legends[0].get_texts()]
    assert "analog_sgd_sp (= analog_sgd, iterations)" in labels
    assert "literature_async_sgd (= literature_delay_fixed)" in labels


def test_asymptotic_caption_without_an_admissible_theta():
    rows = [{"panel": "tau", "algorithm": "analog", "tau": "0.5", "empirical": "0.05",
             "theory_floor": ""},
            {"panel": "tau", "algorithm": "analog", "tau": "2.0", "empirical": "0.02",
             "theory_floor": "0.06"},
            {"panel": "tau", "algorithm": "digital", "tau": "1.0", "empirical": "0.01",
             "theory_floor": ""}]
    text = asymptotic.caption(rows)
    assert "0.05 at tau = 0.5 and 0.02 at tau = 2" in text and "no admissible theta" in text
    rows[0]["theory_floor"] = "3.456"
    assert asymptotic.caption(rows).endswith("at tau = 0.5 is 3.46.")
