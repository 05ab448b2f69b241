"""The ``schedule`` figure, the shared figure infrastructure and the ``figures`` command."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import matplotlib
import pytest

from paper_figures import schedule
from paper_figures.cli import main
from paper_figures.common import STYLE, new_figure, save_figure, use_style
from paper_figures.registry import FIGURES, KNOWN, load_figure
from simulate import build_timeline
from theory import ParameterError

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("schedule")
    return out, schedule.write(out)


def read_rows(path):
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_files_written(written):
    out, paths = written
    assert [p.name for p in paths] == ["schedule.png", "schedule.pdf", "schedule.csv",
                                       "schedule.json"]
    assert all(p.parent == out and p.stat().st_size > 0 for p in paths)
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert paths[1].read_bytes()[:5] == b"%PDF-"
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary files left


def test_csv_grid_equals_timeline_grid(written):
    rows = read_rows(written[0] / "schedule.csv")
    assert {row["mode"] for row in rows} == {"none", "sync", "async"}
    for mode in ("none", "sync", "async"):
        timeline = build_timeline(mode, 4, 5)
        grid = [["?"] * timeline.cycles for _ in range(timeline.stages)]
        for row in rows:
            if row["mode"] == mode:
                grid[int(row["stage"]) - 1][int(row["cycle"])] = row["cell"]
        assert grid == timeline.grid()
        marks = {(int(r["stage"]), int(r["cycle"])) for r in rows
                 if r["mode"] == mode and r["update"] == "1"}
        assert marks == {(e.stage, e.cycle) for e in timeline.events if e.kind == "U"}


def test_manifest(written):
    manifest = json.loads((written[0] / "schedule.json").read_text())
    assert manifest["figure"] == "schedule" and manifest["seed"] is None
    assert manifest["config"]["stages"] == 4 and manifest["config"]["micro_batches"] == 5
    assert manifest["versions"]["matplotlib"] == matplotlib.__version__
    assert set(manifest["versions"]) == {
        "aimc-pipeline", "aimc-pipeline-source", "python", "numpy", "matplotlib"
    }


def test_second_run_is_byte_identical(written, tmp_path):
    first = written[1]
    second = schedule.write(tmp_path)
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name


@pytest.mark.slow
def test_python_m_paper_figures_is_byte_identical_across_processes(written, tmp_path):
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONHASHSEED": "12345"}
    result = subprocess.run(
        [sys.executable, "-m", "paper_figures", "schedule", "--out", str(tmp_path)],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    )
    printed = [Path(line) for line in result.stdout.splitlines()]
    assert [p.name for p in printed] == [p.name for p in written[1]]
    for path in written[1]:
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name


def test_use_style_applies_and_restores():
    before = matplotlib.rcParams["font.size"]
    with use_style():
        assert matplotlib.rcParams["font.size"] == 8
        assert matplotlib.rcParams["svg.hashsalt"] == "aimc-pipeline"
    assert matplotlib.rcParams["font.size"] == before
    assert STYLE.is_file()


def test_save_figure_needs_plotted_rows(tmp_path):
    with pytest.raises(ValueError, match="at least one row"):
        save_figure(new_figure(), tmp_path, "empty", [], {"config": {}, "seed": None})
    assert not list(tmp_path.iterdir())


def test_registry():
    assert FIGURES["schedule"] == "paper_figures.schedule"
    for name in FIGURES:
        module = load_figure(name)
        for attribute in ("NAME", "DESCRIPTION", "compute", "plot", "write"):
            assert hasattr(module, attribute), (name, attribute)
        assert module.NAME == name
    with pytest.raises(ParameterError, match="figure='nonsense' is unknown; valid: .*schedule"):
        load_figure("nonsense")


def test_figures_command(capsys, tmp_path):
    assert main(["figures", "list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == list(KNOWN)  # on-demand ones last, marked
    assert [line.split()[1:4] == ["(not", "in", "all)"] for line in listed] == [
        name not in FIGURES for name in KNOWN]
    assert f"schedule {schedule.DESCRIPTION}".split() in [line.split() for line in listed]
    assert main(["figures", "schedule", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out.split()
    assert printed == [str(tmp_path / f"schedule.{ext}") for ext in ("png", "pdf", "csv", "json")]
    assert main(["figures", "nonsense"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "figure='nonsense' is unknown; valid: all, list, schedule" in err  # then the others


def test_output_path_that_is_a_file_is_a_one_line_error(capsys, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for command in (["figures", "schedule"], ["report", "--quick"]):
        assert main([*command, "--out", str(blocker)]) == 2, command
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"out={str(blocker)!r}" in err, err
    with pytest.raises(ParameterError, match="out="):
        save_figure(new_figure(), blocker / "sub", "x", [{"a": 1}], {"config": {}, "seed": None})
