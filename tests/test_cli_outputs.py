"""One CLI convention (issue 24 item 4) and safe writes (issue 25 item 1).

- every ``--json`` is one object ``{"schema": "aimc-pipeline/COMMAND/1", "version": ..., NAME:
  ...}`` made by :func:`theory.commands.json_document`;
- ``--help`` states each default once, lists and byte counts as typed, one placeholder per
  quantity, the new flag names with the old ones still accepted;
- no command writes over a device node or a FIFO (a private node made under ``tmp_path``), each
  refuses it before any work with one line naming the flag; on a full file system (a 64 KiB
  tmpfs, where ``mount`` is allowed) each fails in one line naming the flag and the path, leaves
  no partial or temporary file, and keeps its finished sweep points in the cache.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import json
import math
import os
import re
import stat
import subprocess
from pathlib import Path

import pytest

from paper_figures.cli import COMMANDS, main
from theory.commands import HelpFormatter, format_default, json_document
from theory.errors import ParameterError
from theory.fileio import (
    atomic_write,
    check_output_dir,
    check_output_file,
    output_errors,
    package_version,
)

SIM = ["--steps", "20", "--log-every", "10"]
PLAN = ["--model", "digits-mlp", "--accelerators", "4", "--no-relax", "--max-micro-batches", "8",
        "--max-micro-batch-size", "8"]
CAL = ["--quick", "--steps", "300", "--seeds", "2", "--resamples", "1", "--dim", "8",
       "--jobs", "1"]


def _run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


# -- the JSON envelope ------------------------------------------------------------------------

@pytest.mark.parametrize("command, argv, key", [
    ("schedule", ["--stages", "2", "--micro-batches", "2", "--mode", "sync"], "summary"),
    ("bounds", [], "rows"),
    ("simulate", SIM, "trace"),
    ("pulse-response", ["--devices", "10"], "rows"),
    ("plan", PLAN, "plan"),
])
def test_every_json_is_one_object_with_schema_and_version(command, argv, key, capsys):
    status, out, _ = _run(capsys, command, *argv, "--json")
    assert status == 0
    document = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-strict JSON {c}"))
    assert isinstance(document, dict)
    assert list(document)[:2] == ["schema", "version"]
    assert document["schema"] == f"aimc-pipeline/{command}/1"
    assert document["version"] == package_version() and document["version"] != "0+unknown"
    assert key in document and document[key]


def test_verify_json_has_the_envelope(monkeypatch, capsys):
    import simulate.verification as verification  # where verify looks run_suite up

    monkeypatch.setattr(verification, "run_suite", lambda *a, **k: [])
    status, out, _ = _run(capsys, "verify", "--no-cache", "--json")
    assert status == 0
    assert json.loads(out) == {"schema": "aimc-pipeline/verify/1", "version": package_version(),
                               "checks": []}


def test_plan_json_has_one_shape(tmp_path, capsys):
    """With or without --compare-modes, and when the single-kind plan fails: the same keys."""
    hardware = tmp_path / "hw.toml"
    hardware.write_text("[[kinds]]\ntype = 'analog'\ncount = 1\ntiles = 4\n"
                        "[[kinds]]\ntype = 'digital'\ncount = 2\n")
    shapes = []
    for extra in ([], ["--compare-modes"], ["--hardware", str(hardware)]):
        status, out, _ = _run(capsys, "plan", *PLAN, *extra, "--json")
        assert status == 0
        document = json.loads(out)
        shapes.append(list(document))
        assert (document["plan"] is None) == (document["plan_error"] is not None)
        assert (document["modes"] is None) == (not extra)
    assert shapes[0] == shapes[1] == shapes[2] == ["schema", "version", "plan", "plan_error",
                                                   "modes"]
    assert document["plan"] is None and "tiles" in document["plan_error"]


def test_json_document_is_strict_and_keeps_its_own_keys():
    document = json_document("x", 2, value=math.nan, items=(1, 2.5))
    assert document == {"schema": "aimc-pipeline/x/2", "version": package_version(),
                        "value": None, "items": [1, 2.5]}
    with pytest.raises(ValueError, match="envelope"):
        json_document("x", version="mine")


# -- --help: defaults once, placeholders, names ------------------------------------------------

def _parser(command: str) -> argparse.ArgumentParser:
    module = importlib.import_module(COMMANDS[command][0])
    parser = argparse.ArgumentParser(prog=command, formatter_class=HelpFormatter)
    module.build_parser(parser)
    return parser


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_states_each_default_at_most_once(command):
    parser = _parser(command)
    formatter = parser._get_formatter()
    for action in parser._actions:
        if action.help in (None, argparse.SUPPRESS):
            continue
        text = formatter._expand_help(action)
        # a help that states its default gets no second one appended ("defaults of" is not one)
        assert len(re.findall(r"\bdefault\b", text, re.IGNORECASE)) <= 1, (action, text)
        assert "(default: None)" not in text and "(default: )" not in text, text
        assert "(default: [" not in text and "(default: (" not in text, text  # no Python repr
        assert "(default: False)" not in text and "(default: True)" not in text, text


def test_help_formats_lists_bytes_and_switches():
    plan = _parser("plan").format_help()
    assert "(default: sync async)" in " ".join(plan.split())
    assert "1073741824.0" not in plan
    assert "(default: 1073741824)" in " ".join(plan.split())
    simulate = " ".join(_parser("simulate").format_help().split())
    assert "(default: --no-update-management)" in simulate
    assert "(default: none)" in simulate  # --digital-stages ""
    assert format_default(1.0) == "1.0" and format_default(2.0**30) == "1073741824"
    assert format_default(["a", "b"]) == "a b" and format_default(()) == "none"


def test_one_placeholder_per_quantity():
    simulate = _parser("simulate").format_help()
    for flag, symbol in (("--stages", "M"), ("--micro-batches", "B"),
                         ("--micro-batch-size", "b"), ("--steps", "K"), ("--seeds", "R"),
                         ("--transfer-every", "T")):
        assert f"{flag} {symbol}" in simulate, flag
    for command in ("plan", "calibrate", "simulate"):
        text = _parser(command).format_help()
        t_flags = {line.split()[0] for line in text.splitlines()
                   if line.strip().startswith("--") and len(line.split()) > 1
                   and line.split()[1].rstrip(",") == "T"}
        assert t_flags <= {"--transfer-every"}, (command, t_flags)
    for command in ("bounds", "plan", "report"):
        assert "--eps E" in _parser(command).format_help()


@pytest.mark.parametrize("command", ["bounds", "plan", "report"])
def test_device_is_the_preset_flag_and_preset_is_hidden(command):
    text = _parser(command).format_help()
    assert "--device NAME" in text and "--preset NAME" not in text
    assert "--preset: the old spelling, deprecated" in " ".join(text.split())


def test_plan_old_spellings_give_the_same_plan(capsys):
    outputs = []
    for argv in (["--device", "softbounds-tau1", "--algorithm", "analog"],
                 ["--preset", "softbounds-tau1", "--algorithm", "analog-sgd"]):
        status, out, err = _run(capsys, "plan", *PLAN, *argv, "--json")
        assert status == 0 and err == ""
        document = json.loads(out)
        document["plan"].pop("solve_times")
        outputs.append(document)
    assert outputs[0] == outputs[1]
    with pytest.raises(SystemExit) as caught:
        main(["plan", *PLAN, "--algorithm", "nope"])
    err = capsys.readouterr().err
    assert caught.value.code == 2 and "'analog'" in err and "'analog-sgd'" not in err


# -- calibrate --out DIR ----------------------------------------------------------------------

def test_calibrate_out_is_a_folder_and_a_json_path_the_deprecated_file(tmp_path, capsys):
    from simulate.commands.calibrate import calibration_path

    assert calibration_path(tmp_path / "cal") == tmp_path / "cal" / "calibration.json"
    assert capsys.readouterr().err == ""
    assert calibration_path(tmp_path / "mine.json") == tmp_path / "mine.json"
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("aimc-pipeline calibrate: warning: --out=") and "deprecated" in line
    (tmp_path / "d.json").mkdir()  # an existing folder is a folder, whatever its name
    assert calibration_path(tmp_path / "d.json") == tmp_path / "d.json" / "calibration.json"
    (tmp_path / "x" / "calibration.json").mkdir(parents=True)
    with pytest.raises(ParameterError, match="calibration.json in it is a directory"):
        calibration_path(tmp_path / "x")


# -- writes: never over a non-regular file, refused before any work ----------------------------

def _node(path: Path, kind: str) -> Path:
    """A private FIFO or character device (1, 3: what /dev/null is) at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
        return path
    try:
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except (PermissionError, OSError) as error:
        pytest.skip(f"cannot make a device node here ({error.strerror})")
    return path


def _same_node(path: Path, kind: str, before: os.stat_result) -> bool:
    now = os.lstat(path)
    test = stat.S_ISFIFO if kind == "fifo" else stat.S_ISCHR
    return test(now.st_mode) and now.st_ino == before.st_ino and now.st_rdev == before.st_rdev


#: (id, argv with {out} for the folder, the file in it that is made a node)
WRITERS = [
    ("simulate", ["simulate", *SIM, "--out", "{out}"], "trace.json"),
    ("calibrate", ["calibrate", *CAL, "--no-cache", "--out", "{out}"], "calibration.json"),
    ("verify", ["verify", "--suite", "quick", "--no-cache", "--out", "{out}"], "verify.csv"),
    ("figures", ["figures", "schedule", "--no-cache", "--out", "{out}"], "schedule.png"),
    ("bounds", ["bounds", "--out", "{out}"], "bounds.csv"),
    ("plan", ["plan", *PLAN, "--out", "{out}"], "plan_alternatives.csv"),
    ("report", ["report", "--quick", "--no-cache", "--out", "{out}"], "index.html"),
]


@pytest.mark.parametrize("kind", ["chardev", "fifo"])
@pytest.mark.parametrize("name, argv, target", WRITERS, ids=[w[0] for w in WRITERS])
def test_no_command_writes_over_a_node(name, argv, target, kind, tmp_path, capsys):
    out = tmp_path / "out"
    node = _node(out / target, kind)
    before = os.lstat(node)
    status, stdout, err = _run(capsys, *[a.format(out=out) for a in argv])
    assert status == 2 and stdout == ""  # refused before any work: nothing computed or printed
    (line,) = err.splitlines()
    assert "--out=" in line and target in line and ("FIFO" in line or "device" in line), line
    assert _same_node(node, kind, before)
    assert sorted(p.name for p in out.iterdir()) == [target]  # nothing else written


@pytest.mark.parametrize("kind", ["chardev", "fifo"])
@pytest.mark.parametrize("argv", [
    ["simulate", *SIM, "--out", "{node}"],
    ["bounds", "--out", "{node}"],
    ["bounds", "--csv", "{node}"],
    ["calibrate", *CAL, "--no-cache", "--out", "{node}.json"],
    ["figures", "schedule", "--no-cache", "--out", "{node}"],
], ids=["simulate-out", "bounds-out", "bounds-csv", "calibrate-out-file", "figures-out"])
def test_a_node_given_as_the_output_itself_is_refused(argv, kind, tmp_path, capsys):
    node = _node(tmp_path / ("node.json" if "{node}.json" in argv else "node"), kind)
    before = os.lstat(node)
    given = [str(node) if a in ("{node}", "{node}.json") else a for a in argv]
    status, stdout, err = _run(capsys, *given)
    assert status == 2 and stdout == ""
    (line,) = [x for x in err.splitlines() if "warning:" not in x]
    flag = "--csv" if "--csv" in argv else "--out"
    assert line.count("error:") == 1 and f"{flag}=" in line and str(node) in line, line
    assert _same_node(node, kind, before)


def test_atomic_write_never_replaces_a_node(tmp_path):
    node = _node(tmp_path / "f", "fifo")
    before = os.lstat(node)
    with pytest.raises(OSError) as caught:
        atomic_write(node, b"data")
    assert caught.value.errno == errno.EEXIST and caught.value.filename == str(node)
    assert _same_node(node, "fifo", before) and os.listdir(tmp_path) == ["f"]  # no temp file
    (tmp_path / "d").mkdir()
    with pytest.raises(IsADirectoryError):
        atomic_write(tmp_path / "d", b"data")
    with pytest.raises(ParameterError, match=r"--x=.*\(it is a FIFO\)"):
        check_output_file(node, "--x")
    with pytest.raises(ParameterError, match=r"--x=.*f in it is a FIFO"):
        check_output_dir(tmp_path, "--x", ["f"])
    (tmp_path / "plain").write_text("x")
    with pytest.raises(ParameterError, match=r"--x=.*not a directory"):
        check_output_file(tmp_path / "plain" / "sub.csv", "--x")


def test_output_errors_names_the_flag_and_the_path():
    with pytest.raises(ParameterError) as caught, output_errors("--out"):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/x/trace.csv")
    assert str(caught.value) == "--out: cannot write '/x/trace.csv': no space left on device"


# -- writes on a full file system --------------------------------------------------------------

@contextlib.contextmanager
def _full_tmpfs(where: Path):
    """A 64 KiB tmpfs at ``where``, filled to the last byte (skip where it cannot be mounted)."""
    where.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        pytest.skip(f"mount not available: {error}")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        fd = os.open(where / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            for size in (4096, 1):  # pages, then the last bytes (unbuffered writes)
                with contextlib.suppress(OSError):
                    while os.write(fd, b"\0" * size):
                        pass
        finally:
            os.close(fd)
        yield where
    finally:
        subprocess.run(["umount", str(where)], capture_output=True, timeout=30)


FULL = [
    ("simulate", ["simulate", *SIM, "--out", "{out}"], False),
    ("calibrate", ["calibrate", *CAL, "--cache-dir", "{cache}", "--out", "{out}"], True),
    ("verify", ["verify", "--suite", "quick", "--jobs", "1", "--cache-dir", "{cache}", "--out",
                "{out}"], True),
    ("figures", ["figures", "schedule", "--no-cache", "--out", "{out}"], False),
    ("bounds", ["bounds", "--out", "{out}"], False),
]


@pytest.mark.parametrize("name, argv, sweeps", FULL, ids=[f[0] for f in FULL])
def test_a_full_disk_is_one_line_and_leaves_no_partial_file(name, argv, sweeps, tmp_path,
                                                            capsys):
    cache = tmp_path / "cache"
    with _full_tmpfs(tmp_path / "full") as full:
        out = full / "out"
        status, _, err = _run(capsys, *[a.format(out=out, cache=cache) for a in argv])
        assert status == 2
        lines = [line for line in err.splitlines() if line.startswith("aimc-pipeline")]
        assert len(lines) == 1 and "Traceback" not in err, err
        (line,) = lines
        assert "error: --out: cannot write '" in line and str(full) in line, line
        assert "no space left on device" in line
        left = sorted(p.name for p in full.rglob("*") if p.is_file())
        assert left == ["filler"], left  # no partial file, no temporary file
    if sweeps:  # the finished points stay cached: the rerun computes nothing new
        entries = sorted(cache.glob("??/*.json"))
        assert entries
        status, _, _ = _run(capsys, *[a.format(out=tmp_path / "ok", cache=cache) for a in argv])
        assert status == 0 and sorted(cache.glob("??/*.json")) == entries
