"""``aimc-pipeline schedule``: chart, summary table, JSON, and one-line errors."""

import json

import pytest

from paper_figures.cli import main
from simulate import build_timeline
from theory import ParameterError


def run(capsys, *argv):
    code = main(["schedule", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_fields(capsys):
    code, out, err = run(capsys, "--stages", "4", "--micro-batches", "5", "--mode", "sync",
                         "--json")
    assert code == 0 and err == ""
    document = json.loads(out)
    assert list(document)[:2] == ["schema", "version"]
    assert document["schema"] == "aimc-pipeline/schedule/1"
    summary = document["summary"]
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
    summary = json.loads(out)["summary"]
    assert code == 0
    assert summary["micro_batches"] == 9
    assert summary["cycles"] == build_timeline("async", 4, 9).cycles
    assert summary["forward_delay"] == [3, 2, 1, 0]


def test_async_samples_default_to_micro_batches(capsys):
    _, out, _ = run(capsys, "--stages", "3", "--micro-batches", "4", "--mode", "async", "--json")
    assert json.loads(out)["summary"]["cycles"] == build_timeline("async", 3, 4).cycles


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


@pytest.mark.parametrize(("argv", "message"), [
    # an unknown flag is named before the required flags that are missing
    (["--no-such-flag"], "unrecognized arguments: --no-such-flag;"),
    (["--stages", "4", "--bogus", "1"], "unrecognized arguments: --bogus 1;"),
    # without one, the missing required flags are listed as argparse does
    ([], "the following arguments are required: --stages, --micro-batches, --mode;"),
    (["--stages", "4"], "the following arguments are required: --micro-batches, --mode;"),
])
def test_a_bad_or_missing_flag_is_one_line_naming_it(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["schedule", *argv])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and len(err.strip().splitlines()) == 1 and message in err


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


# --- large schedules: summarised from the closed forms (issue 11) --------------------------------

@pytest.mark.parametrize("mode", ["none", "sync", "async"])
@pytest.mark.parametrize(("stages", "count"), [(1, 1), (1, 7), (3, 1), (4, 2), (4, 5), (6, 3),
                                                 (8, 13)])
def test_closed_form_summary_equals_the_simulated_timeline(mode, stages, count):
    from simulate.commands.schedule import closed_form_summary

    simulated = build_timeline(mode, stages, count).summary()
    closed = closed_form_summary(mode, stages, count)
    assert closed.pop("grid") is None and closed.pop("source").startswith("closed forms")
    assert "cells" in closed.pop("grid_omitted")
    simulated.pop("grid")
    assert closed == simulated  # every value, to the bit (async N < M included)


def test_a_huge_schedule_is_summarised_at_once_without_the_chart(capsys):
    code, out, err = run(capsys, "--stages", "4", "--micro-batches", "1000000", "--mode",
                         "sync", "--json")
    assert code == 0
    (line,) = err.splitlines()
    assert "no Gantt chart" in line and "closed forms" in line and "--micro-batches" in line
    summary = json.loads(out)["summary"]
    assert summary["grid"] is None and "cells" in summary["grid_omitted"]
    assert summary["cycles"] == 2 * (1000000 + 4 - 1)
    assert summary["forward_delay"] == [0, 0, 0, 0]
    code, out, err = run(capsys, "--stages", "100000", "--micro-batches", "3", "--mode", "async")
    assert code == 0 and "no Gantt chart" in err and "stage 1 |" not in out
    assert "2 2 2 ... 2 1 0 (100000 stages)" in out  # N = 3 < M: delays min(M - m, N - 1)


def test_just_below_the_chart_limit_the_timeline_is_simulated(capsys):
    from simulate.pipeline import timeline_cells
    from theory import MAX_GANTT_CELLS

    assert timeline_cells("sync", 4, 5) == build_timeline("sync", 4, 5).stages * 16
    code, out, err = run(capsys, "--stages", "2", "--micro-batches", "40", "--mode", "none")
    assert code == 0 and err == "" and out.startswith("stage 2 |")
    assert timeline_cells("none", 2, 40) <= MAX_GANTT_CELLS


@pytest.mark.parametrize(("argv", "message"), [
    (["--stages", "4", "--micro-batches", "10000000000000000000", "--mode", "none"],
     "--micro-batches=10000000000000000000 asks for 8e+19 cycles"),
    (["--stages", "3", "--micro-batches", "1", "--mode", "async", "--samples",
      "10000000000000000000"], "--samples=10000000000000000000 asks for"),
    (["--stages", "2000000", "--micro-batches", "1", "--mode", "async"],
     "--stages=2000000 asks for 2e+06 per-stage values"),
])
def test_counts_beyond_int64_are_refused_with_the_flag(argv, message, capsys):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    (line,) = err.splitlines()
    assert message in line


def test_build_timeline_refuses_beyond_the_documented_cell_limit():
    from theory import MAX_TIMELINE_CELLS

    with pytest.raises(ParameterError, match=r"^micro_batches=100000 asks for 4e\+10 timeline "
                                             r"cells"):
        build_timeline("sync", 100000, 100000)
    assert MAX_TIMELINE_CELLS < 4e10
