"""The shared writers of simulate: one atomic writer, one JSON converter, one progress bar."""

from __future__ import annotations

import json
import math
import os
import stat

import numpy as np
import pytest

from simulate.execution import normalize_result, progress_bar
from theory import atomic_write, strict_json, to_json_value


def test_atomic_write_takes_bytes_or_a_writer_and_gives_the_usual_permissions(tmp_path):
    path = atomic_write(tmp_path / "a.bin", b"abc")
    assert path.read_bytes() == b"abc"
    atomic_write(path, lambda handle: handle.write(b"xyz"))  # replaces the old file
    assert path.read_bytes() == b"xyz"
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask
    assert [p.name for p in tmp_path.iterdir()] == ["a.bin"]


def test_a_failed_atomic_write_keeps_the_old_file_and_no_temporary(tmp_path):
    path = atomic_write(tmp_path / "a.txt", b"old")

    def broken(handle):
        handle.write(b"partial")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        atomic_write(path, broken)
    assert path.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_strict_json_turns_numpy_into_python_and_nan_into_null():
    value = {"a": np.float64(1.5), "b": (np.int64(2), np.array([1.0, np.nan])), "c": -np.inf,
             "d": [np.bool_(True), "s", None]}
    out = strict_json(value)
    assert out == {"a": 1.5, "b": [2, [1.0, None]], "c": None, "d": [True, "s", None]}
    assert type(out["b"][0]) is int and type(out["d"][0]) is bool
    json.dumps(out, allow_nan=False)  # strict JSON


def test_the_cache_converter_keeps_nan_and_arrays():
    array = np.arange(3.0)
    out = normalize_result({"x": array, "t": (1, np.float32(0.5)), "n": math.nan})
    assert out["x"] is array and out["t"] == [1, 0.5] and math.isnan(out["n"])
    assert math.isnan(to_json_value(math.nan, strict=False))


def test_progress_bar_shows_only_when_asked_or_on_a_terminal(capsys):
    bar = progress_bar(4, desc="demo", unit="pt", show=True)
    bar.update(4)
    bar.close()
    assert "demo: 100%" in capsys.readouterr().err
    bar = progress_bar(4, desc="demo")  # pytest's stderr is not a terminal
    bar.update(4)
    bar.close()
    assert capsys.readouterr().err == ""
