"""``aimc-pipeline report``: the folder holds index.md, index.html and every referenced file.

The full ``report --quick`` is checked in tests/test_figures.py, beside ``all --quick``, whose
sweep cache it reuses."""

from __future__ import annotations

import csv

import pytest
from _report_folder import check_folder

from paper_figures import report, theory_vs_sim
from paper_figures.cli import main
from paper_figures.registry import FIGURES


@pytest.fixture(scope="module")
def small_report(tmp_path_factory):
    """A report with two figures (the cheap ones) and a small theory-vs-sim."""
    out = tmp_path_factory.mktemp("report")
    tiny = theory_vs_sim.TheoryVsSimSettings(stages=(1, 2), steps=200, seeds=8)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(report, "FIGURES", {k: FIGURES[k] for k in ("schedule", "theory-vs-sim")})
        mp.setattr(theory_vs_sim, "settings", lambda quick: tiny)
        paths = report.write_report(out, quick=True, sweep={"jobs": 1, "cache": out / "cache"})
    return out, paths


def test_report_folder_is_complete(small_report):
    out, (md_path, html_path) = small_report
    assert (md_path, html_path) == (out / "index.md", out / "index.html")
    md, page = check_folder(out, ("schedule", "theory-vs-sim"))
    for heading in ("Bounds", "Plan", "Verification", "Figure: schedule", "Figure: theory-vs-sim"):
        assert f"## {heading}" in md and f"<h2>{heading}</h2>" in page


def test_report_sentences_come_from_the_data(small_report):
    out, _ = small_report
    md = (out / "index.md").read_text()
    with open(out / "figures" / "theory-vs-sim.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    ratios = [float(r["ratio"]) for r in rows]
    assert (f"bound / simulated ranges from {min(ratios):.3g} to {max(ratios):.3g}") in md
    assert "40 cycles without pipeline, 16 synchronous and 16 asynchronous" in md  # M=4, B=5
    # the bounds table lists every registry entry; the verification table every quick check
    from simulate.verification import suite_points
    from theory import REGISTRY

    for name in REGISTRY:
        assert f"| {name} |" in md
    verification = md.split("## Verification")[1].split("## Figure")[0]
    assert sum(verification.count(f"\n| {prefix}")
               for prefix in ("analog_sgd", "digital_sgd", "tiki_taka")) == len(
        suite_points("quick"))


def test_report_plan_states_its_constants(small_report):
    out, _ = small_report
    section = (out / "index.md").read_text().split("## Plan")[1].split("## Verification")[0]
    assert "guaranteed under the problem constants the plan states" in section
    assert section.count("problem constants: L = 1 (default placeholder)") == 1
    assert "are default placeholders" in section


def test_report_command_errors_are_one_line(capsys, tmp_path):
    assert main(["report", "--preset", "nonsense", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nonsense" in err
    assert main(["report", "--eps", "-1", "--out", str(tmp_path / "r")]) == 2
    assert "eps" in capsys.readouterr().err


def test_report_help_names_units(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["report", "--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "squared-gradient units" in text and "--scheduler" in text and "--quick" in text


def test_unreachable_eps_fails_before_any_figure(capsys, tmp_path):
    # the bounds section is validated first: no figure, verification or page is computed
    out = tmp_path / "r"
    assert main(["report", "--eps", "1e-300", "--quick", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--eps=1e-300 is unreachable for analog_sgd" in err and "floor" in err
    assert not (out / "figures").exists() and not (out / "index.md").exists()
