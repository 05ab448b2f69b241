"""``aimc-pipeline schedule``: chart, summary table, JSON, and one-line errors."""

import json

import pytest

from paper_figures.cli import main
from simulate.timeline import build_timeline


def run(capsys, *argv):
    code = main(["schedule", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_fields(capsys):
    code, out, err = run(capsys, "--stages", "4", "--micro-batches", "5", "--mode", "sync",
                         "--json")
    assert code == 0 and err == ""
    summary = json.loads(out)
    timeline = build_timeline("sync", 4, 5)
    assert summary["mode"] == "sync" and summary["stages"] == 4 and summary["micro_batches"] == 5
    assert summary["cycles"] == timeline.cycles
    assert summary["density"] == float(timeline.density)
    assert summary["bubble_cycles_per_stage"] == list(timeline.idle)
    assert summary["forward_delay"] == [0, 0, 0, 0] and summary["backward_delay"] == [0, 0, 0, 0]
    assert summary["grid"] == timeline.grid()
    assert summary["grid"][0][:3] == ["F1", ".", "F2"]


def test_async_samples_sets_the_run_length(capsys):
    code, out, _ = run(capsys, "--stages", "4", "--micro-batches", "2", "--mode", "async",
                       "--samples", "9", "--json")
    summary = json.loads(out)
    assert code == 0
    assert summary["micro_batches"] == 9
    assert summary["cycles"] == build_timeline("async", 4, 9).cycles
    assert summary["forward_delay"] == [3, 2, 1, 0]


def test_async_samples_default_to_micro_batches(capsys):
    _, out, _ = run(capsys, "--stages", "3", "--micro-batches", "4", "--mode", "async", "--json")
    assert json.loads(out)["cycles"] == build_timeline("async", 3, 4).cycles


def test_human_output_has_chart_and_table(capsys):
    code, out, _ = run(capsys, "--stages", "4", "--micro-batches", "5", "--mode", "sync")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("stage 4 |") and lines[3].startswith("stage 1 |")
    assert any(line.startswith("computation density") and "0.625" in line for line in lines)
    assert any(line.startswith("total cycles") and " 16 " in line for line in lines)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--stages", "0", "--micro-batches", "5", "--mode", "sync"],
         "--stages=0 is out of range; valid range [1, inf)"),
        (["--stages", "4", "--micro-batches", "-3", "--mode", "sync"],
         "--micro-batches=-3 is out of range; valid range [1, inf)"),
        (["--stages", "4", "--micro-batches", "2", "--mode", "async", "--samples", "0"],
         "--samples=0 is out of range; valid range [1, inf)"),
        (["--stages", "4", "--micro-batches", "2", "--mode", "sync", "--samples", "7"],
         "--samples=7 only applies to --mode async"),
    ],
)
def test_bad_input_exits_with_one_line(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err


def test_unknown_mode_names_the_choices(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["schedule", "--stages", "4", "--micro-batches", "5", "--mode", "gpipe"])
    assert exit_info.value.code != 0
    err = capsys.readouterr().err
    assert "--mode" in err and "'none', 'sync', 'async'" in err


def test_help_explains_the_unit(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["schedule", "--help"])
    assert exit_info.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "one clock cycle = one stage doing one forward (F) or one backward (B)" in help_text


def test_file_system_errors_are_one_line(tmp_path, capsys):
    """An output path that is a directory gives one line and exit 2, not a traceback."""
    from paper_figures.cli import main

    status = main(["bounds", "--csv", str(tmp_path)])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and "error:" in err
