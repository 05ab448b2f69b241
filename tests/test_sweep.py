"""The sweep runner and its cache: equal to a plain loop, cached, resumable, same on Dask."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path

import _sweep_fns as fns
import numpy as np
import pytest

from simulate import CorruptEntryError, ResultCache, SweepError, run_sweep
from simulate.commands.options import add_sweep_arguments, sweep_options
from simulate.execution import (
    BLAS_THREAD_VARS,
    CACHE_ENV,
    cache_version,
    canonical_json,
    decode_result,
    encode_result,
    function_name,
    normalize_result,
    package_version,
    source_fingerprint,
)
from theory import ParameterError

REPO = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent


def points(count: int, **extra) -> list[dict]:
    return [{"seed": 1000 + s, "n": 7, "scale": 0.5 + s, **extra} for s in range(count)]


def as_bytes(results) -> bytes:
    """Results as canonical JSON bytes, arrays as (dtype, shape, values): what a figure writes."""

    def plain(value):
        if isinstance(value, np.ndarray):
            return {"dtype": value.dtype.str, "shape": list(value.shape), "values": value.tolist()}
        raise TypeError(type(value).__name__)

    return json.dumps(list(results), sort_keys=True, default=plain).encode()


def plain_loop(fn, pts) -> bytes:
    return as_bytes(normalize_result(fn(p)) for p in pts)


def calls(log: Path) -> int:
    """How many times :func:`_sweep_fns.logged` ran with this log directory."""
    return sum(1 for p in log.iterdir() if p.name != "died")


# --- results, cache hits, duplicates ------------------------------------------------------------


@pytest.mark.parametrize("jobs", [1, 2])
def test_results_equal_a_plain_loop(jobs):
    pts = points(6)
    sweep = run_sweep(fns.noisy_mean, pts, jobs=jobs, cache=False, progress=False)
    assert as_bytes(sweep.results) == plain_loop(fns.noisy_mean, pts)
    assert (sweep.computed, sweep.cached, len(sweep)) == (6, 0, 6)
    assert sweep.elapsed_s > 0
    assert sweep.results[2]["seed"] == pts[2]["seed"]  # order of the points, not of completion


def test_rerun_reads_everything_from_the_cache(tmp_path):
    log = tmp_path / "log"
    log.mkdir()
    pts = points(5, sleep=0.0, log=str(log))
    first = run_sweep(fns.logged, pts, jobs=2, cache=tmp_path / "c", progress=False)
    assert (first.computed, first.cached, calls(log)) == (5, 0, 5)
    again = run_sweep(fns.logged, pts, jobs=2, cache=tmp_path / "c", progress=False)
    assert (again.computed, again.cached, calls(log)) == (0, 5, 5)
    assert as_bytes(again.results) == as_bytes(first.results) == plain_loop(fns.noisy_mean, pts)
    assert isinstance(again.results[0]["draws"], np.ndarray)
    assert len(ResultCache(tmp_path / "c").entries()) == 5


def test_repeated_points_are_computed_once(tmp_path):
    log = tmp_path / "log"
    log.mkdir()
    base = points(2, sleep=0.0, log=str(log))
    pts = [base[0], base[1], dict(reversed(base[0].items())), base[1]]  # key order is irrelevant
    sweep = run_sweep(fns.logged, pts, jobs=1, cache=False, progress=False)
    assert calls(log) == 2
    assert (sweep.computed, sweep.cached) == (4, 0)
    assert as_bytes(sweep.results) == plain_loop(fns.noisy_mean, pts)


def test_the_key_depends_on_function_point_and_version(tmp_path):
    store = ResultCache(tmp_path, version="1.0")
    key = store.key("m.f", {"a": 1, "b": 2.5})
    assert key == store.key("m.f", {"b": 2.5, "a": 1})
    assert key != store.key("m.g", {"a": 1, "b": 2.5})
    assert key != store.key("m.f", {"a": 1, "b": 2.50001})
    assert key != ResultCache(tmp_path, version="1.1").key("m.f", {"a": 1, "b": 2.5})
    pts = points(3)
    run_sweep(fns.noisy_mean, pts, jobs=1, cache=ResultCache(tmp_path, "1.0"), progress=False)
    newer = run_sweep(fns.noisy_mean, pts, jobs=1, cache=ResultCache(tmp_path, "1.1"))
    assert (newer.computed, newer.cached) == (3, 0)


def test_default_directory_and_version(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "env"))
    assert ResultCache().directory == tmp_path / "env"
    monkeypatch.delenv(CACHE_ENV)
    assert ResultCache().directory == Path(".cache") / "aimc-pipeline"
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert package_version() == pyproject["project"]["version"]
    expected = f"{package_version()}+src.{source_fingerprint()}"
    assert ResultCache().version == cache_version() == expected


def test_source_fingerprint_changes_with_the_source(tmp_path, monkeypatch):
    """An edited source file gives a new fingerprint (so stale cached results are not read)."""
    import simulate.execution.cache as cache_module

    fake = tmp_path / "simulate"
    fake.mkdir()
    for name in ("theory", "bounds", "paper_figures"):
        (tmp_path / name).mkdir()
    (fake / "cache.py").write_text("x = 1\n")
    monkeypatch.setattr(cache_module, "__file__", str(fake / "cache.py"))
    source_fingerprint.cache_clear()
    before = source_fingerprint()
    (tmp_path / "theory" / "a.py").write_text("y = 2\n")
    source_fingerprint.cache_clear()
    after = source_fingerprint()
    source_fingerprint.cache_clear()
    assert before != after


@pytest.mark.parametrize(
    "array",
    [
        np.arange(6, dtype=np.float32).reshape(2, 3),
        np.array([1 + 2j, np.nan]),
        np.array([True, False]),
        np.array(["ab", "c"]),
        np.int8(-3) * np.ones((0, 4), dtype=np.int8),
        np.array(2.5),
    ],
    ids=["float32", "complex-nan", "bool", "str", "empty", "0d"],
)
def test_arrays_round_trip_through_the_cache(tmp_path, array):
    value = {"x": array, "nested": {"list": [array, 1, np.int64(7)], "nan": float("nan")}}
    store = ResultCache(tmp_path, version="t")
    store.put("ab" * 32, value, function="m.f", point={})
    back = store.get("ab" * 32)
    for got in (back["x"], back["nested"]["list"][0]):
        assert got.dtype == array.dtype and got.shape == array.shape
        np.testing.assert_array_equal(got, array)
    assert back["nested"]["list"][1:] == [1, 7] and type(back["nested"]["list"][2]) is int
    assert np.isnan(back["nested"]["nan"])
    data, arrays = encode_result(value)
    assert decode_result(json.loads(json.dumps(data)), arrays)["x"] is array


# --- resume after corruption, a killed sweep, a killed worker -----------------------------------


def test_corrupt_or_partial_entries_are_recomputed(tmp_path):
    log = tmp_path / "log"
    log.mkdir()
    pts = points(4, sleep=0.0, log=str(log))
    store = ResultCache(tmp_path / "c")
    run_sweep(fns.logged, pts, jobs=1, cache=store, progress=False)
    name = function_name(fns.logged)
    json0, _ = store.paths(store.key(name, pts[0]))
    json0.write_bytes(json0.read_bytes()[:40])  # a truncated record
    _, npz1 = store.paths(store.key(name, pts[1]))
    blob = bytearray(npz1.read_bytes())
    blob[len(blob) // 2] ^= 0xFF  # one flipped byte in the arrays
    npz1.write_bytes(bytes(blob))
    _, npz2 = store.paths(store.key(name, pts[2]))
    npz2.unlink()  # the arrays of a record are missing
    assert [store.get(store.key(name, p)) is None for p in pts] == [True, True, True, False]
    again = run_sweep(fns.logged, pts, jobs=2, cache=store, progress=False)
    assert (again.computed, again.cached, calls(log)) == (3, 1, 7)
    assert as_bytes(again.results) == plain_loop(fns.noisy_mean, pts)
    assert all(store.get(store.key(name, p)) is not None for p in pts)


def test_a_killed_sweep_resumes_with_only_the_missing_points(tmp_path):
    log, cache = tmp_path / "log", tmp_path / "cache"
    log.mkdir()
    pts = points(8, sleep=0.4, log=str(log))
    script = textwrap.dedent(
        f"""
        import sys
        sys.path[:0] = [{str(REPO)!r}, {str(TESTS)!r}]
        import _sweep_fns
        from simulate.execution.sweep import run_sweep
        run_sweep(_sweep_fns.logged, {pts!r}, jobs=2, cache={str(cache)!r}, progress=False)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    store = ResultCache(cache)
    deadline = time.monotonic() + 30
    try:
        while len(store.entries()) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its workers (its own session)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the sweep finished before it could be killed"
    done = sum(store.get(p.stem) is not None for p in store.entries())
    assert 2 <= done < len(pts)
    ran = calls(log)
    again = run_sweep(fns.logged, pts, jobs=2, cache=store, progress=False)
    assert (again.computed, again.cached) == (len(pts) - done, done)
    assert calls(log) - ran == len(pts) - done
    assert as_bytes(again.results) == plain_loop(fns.noisy_mean, pts)


def test_a_killed_worker_fails_the_sweep_and_a_rerun_resumes(tmp_path):
    log = tmp_path / "log"
    log.mkdir()
    pts = points(6, sleep=0.05, log=str(log), bad=1003)
    with pytest.raises(SweepError, match="worker process died") as info:
        run_sweep(fns.die_once, pts, jobs=2, cache=tmp_path / "c", progress=False)
    assert info.value.desc == "sweep" and info.value.point in pts
    assert multiprocessing.active_children() == []
    done = len(ResultCache(tmp_path / "c").entries())
    assert done < len(pts)
    again = run_sweep(fns.die_once, pts, jobs=2, cache=tmp_path / "c", progress=False)
    assert (again.computed, again.cached) == (len(pts) - done, done)
    assert as_bytes(again.results) == plain_loop(fns.noisy_mean, pts)


# --- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_failing_point_is_named_after_the_workers_stop(tmp_path, jobs):
    pts = points(5, bad=1002)
    with pytest.raises(SweepError) as info:
        run_sweep(fns.failing, pts, jobs=jobs, cache=tmp_path, desc="demo", progress=False)
    error = info.value
    assert (error.index, error.point) == (2, pts[2])
    assert str(error).startswith("sweep 'demo' failed: ValueError: seed 1002 is bad")
    assert canonical_json(pts[2]) in str(error)
    assert isinstance(error.__cause__, ValueError)
    assert multiprocessing.active_children() == []
    store = ResultCache(tmp_path)
    assert store.get(store.key(function_name(fns.failing), pts[2])) is None
    if jobs == 1:  # in process, the points before the failure are cached, none after it
        cached = [store.get(store.key(function_name(fns.failing), p)) is not None for p in pts]
        assert cached == [True, True, False, False, False]


def _local_fn(point):
    return point


def _set_result(point):
    return {"x": {1, 2}}


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: run_sweep(lambda p: p, [{}], jobs=1), TypeError, "not a top-level function"),
        (lambda: run_sweep(_local_fn, [{}], jobs=0), ParameterError, r"jobs=0 .*\[1, 1024\]"),
        (lambda: run_sweep(_local_fn, [{}], jobs=10**400), ParameterError, r"jobs=.*401 digits"),
        (lambda: run_sweep(_local_fn, [{}], jobs=1.5), ParameterError, "jobs=1.5 is not an int"),
        (lambda: run_sweep(_local_fn, [[1]], jobs=1), TypeError, "point 0 is a list"),
        (lambda: run_sweep(_local_fn, [{}], cache=3), TypeError, "cache=3"),
        (lambda: run_sweep(_local_fn, [{"x": {1}}]), TypeError, "point 0 is not JSON-ser"),
        (lambda: run_sweep(_set_result, [{}], jobs=1, cache=False), TypeError, r"\['x'\] .*set"),
    ],
    ids=["lambda", "jobs0", "jobs-huge", "jobs-float", "point-list", "cache-int", "point-set",
         "result-set"],
)
def test_bad_input_is_reported(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_results_must_be_dicts_of_serialisable_values():
    with pytest.raises(TypeError, match="must return a dict"):
        encode_result([1, 2])
    with pytest.raises(TypeError, match=r"result\['a'\]\[1\] is an object array"):
        encode_result({"a": [0, np.array([None])]})
    with pytest.raises(TypeError, match="reserved key"):
        encode_result({"a": {"__ndarray__": "x"}})
    with pytest.raises(TypeError, match="non-string key 3"):
        encode_result({"a": {3: 1}})


# --- workers and the command line ---------------------------------------------------------------


def test_pool_workers_use_one_blas_thread():
    pts = [{"vars": list(BLAS_THREAD_VARS), "i": i} for i in range(2)]
    sweep = run_sweep(fns.blas_threads, pts, jobs=2, cache=False, progress=False)
    for result in sweep.results:
        assert result["pools"] and set(result["pools"].values()) == {1}
        assert result["env"] == dict.fromkeys(BLAS_THREAD_VARS, "1")


def test_progress_bar_only_when_asked_or_on_a_terminal(capsys):
    run_sweep(fns.noisy_mean, points(3), jobs=1, cache=False, progress=True, desc="demo")
    err = capsys.readouterr().err
    assert "demo: 100%" in err and "3/3" in err
    run_sweep(fns.noisy_mean, points(3), jobs=1, cache=False, progress=None, desc="demo")
    assert capsys.readouterr().err == ""  # pytest's stderr is not a terminal


def test_sweep_arguments():
    parser = add_sweep_arguments(argparse.ArgumentParser())
    args = parser.parse_args(["--jobs", "3", "--scheduler", "tcp://127.0.0.1:8786"])
    opts = sweep_options(args)
    assert (opts["jobs"], opts["scheduler"], opts["cache"]) == (3, "tcp://127.0.0.1:8786", True)
    assert sweep_options(parser.parse_args(["--no-cache"]))["cache"] is False
    store = sweep_options(parser.parse_args(["--cache-dir", "x/y"]))["cache"]
    assert store.directory == Path("x/y")
    with pytest.raises(SystemExit):
        parser.parse_args(["--no-cache", "--cache-dir", "x"])


def simulation_points() -> list[dict]:
    """Small analog pipeline simulations (the sweeps the figures run)."""
    config = {"steps": 40, "seeds": 2, "stages": 2, "log_every": 10}
    return [
        {"config": {**config, "mode": mode, "micro_batches": 2 if mode == "sync" else 1},
         "seed": seed}
        for mode in ("sync", "async") for seed in (11, 12)
    ]


# --- Dask ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_dask_gives_the_same_bytes_as_the_local_pool(tmp_path, dask_scheduler):
    pts = points(6)
    local = run_sweep(fns.noisy_mean, pts, jobs=2, cache=False, progress=False)
    dask = run_sweep(fns.noisy_mean, pts, scheduler=dask_scheduler, cache=tmp_path)
    assert (dask.computed, dask.cached) == (6, 0)
    assert as_bytes(dask.results) == as_bytes(local.results) == plain_loop(fns.noisy_mean, pts)
    reread = run_sweep(fns.noisy_mean, pts, jobs=2, cache=tmp_path, progress=False)
    assert (reread.computed, reread.cached) == (0, 6)  # Dask filled the same cache
    assert as_bytes(reread.results) == as_bytes(local.results)


@pytest.mark.slow
def test_simulation_sweeps_on_dask_and_local_equal_a_plain_loop(tmp_path, dask_scheduler):
    pts = simulation_points()
    dask = run_sweep(fns.simulate_point, pts, scheduler=dask_scheduler, cache=False)
    local = run_sweep(fns.simulate_point, pts, jobs=1, cache=tmp_path, progress=False)
    assert as_bytes(dask.results) == as_bytes(local.results) == plain_loop(fns.simulate_point, pts)
    assert local.results[0]["loss"].shape == (2, 5)  # (seeds, logging points), stored as NPZ
    again = run_sweep(fns.simulate_point, pts, jobs=1, cache=tmp_path, progress=False)
    assert again.cached == len(pts) and as_bytes(again.results) == as_bytes(local.results)


@pytest.mark.slow
def test_dask_names_a_failing_point(dask_scheduler):
    pts = points(4, bad=1001)
    with pytest.raises(SweepError, match="ValueError: seed 1001 is bad") as info:
        run_sweep(fns.failing, pts, scheduler=dask_scheduler, cache=False, desc="dask")
    assert (info.value.index, info.value.point) == (1, pts[1])


def test_module_exports_are_sorted_and_exist():
    import simulate.execution.cache
    import simulate.execution.sweep

    for module in (simulate.execution.cache, simulate.execution.sweep):
        assert list(module.__all__) == sorted(module.__all__), module.__name__
        for name in module.__all__:
            assert hasattr(module, name), name


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--jobs", "0"], "--jobs=0 is out of range"),
        (["--scheduler", "nonsense"], "--scheduler='nonsense' is not a scheduler address"),
        (["--scheduler", "tcp://127.0.0.1"], "is not a scheduler address"),
    ],
)
def test_sweep_options_are_checked_before_anything_runs(argv, message):
    parser = argparse.ArgumentParser()
    add_sweep_arguments(parser)
    with pytest.raises(ParameterError, match=re.escape(message)):
        sweep_options(parser.parse_args(argv))


def test_scheduler_addresses_that_are_valid():
    parser = argparse.ArgumentParser()
    add_sweep_arguments(parser)
    for address in ("tcp://127.0.0.1:8786", "tcp://scheduler.local:8786", "tls://[::1]:8786"):
        assert sweep_options(parser.parse_args(["--scheduler", address]))["scheduler"] == address


# --- an honest cache: every entry verified, damage recomputed and counted -----------------------


def _record(store: ResultCache, key: str) -> dict:
    return json.loads(store.paths(key)[0].read_text())


def _rewrite(store: ResultCache, key: str, record, *, checksum: bool) -> None:
    """Write ``record`` as the entry's JSON; with ``checksum``, as a forger would (valid sum)."""
    if checksum:
        body = {k: v for k, v in record.items() if k != "checksum"}
        record = {**body, "checksum": hashlib.sha256(canonical_json(body).encode()).hexdigest()}
    text = record if isinstance(record, str) else json.dumps(record)
    store.paths(key)[0].write_text(text)


def _scaled(record):
    record["result"]["mean"] *= 1000  # another valid JSON value (the 14.26-for-0.01426 case)


def _nan(record):
    record["result"]["mean"] = float("nan")


def _missing(record):
    del record["result"]["mean"]


def _not_a_dict(record):
    record["result"] = [1, 2]


EDITS = {"scaled-value": _scaled, "nan-value": _nan, "missing-key": _missing,
         "result-not-a-dict": _not_a_dict}


def finite_mean(result: dict) -> None:
    """A sweep ``validate``: the results of noisy_mean have a finite ``mean``."""
    if not np.isfinite(result["mean"]):
        raise ValueError(f"mean={result['mean']!r} is not finite")


@pytest.mark.parametrize("edit", list(EDITS), ids=list(EDITS))
def test_an_edited_entry_fails_its_checksum_and_is_recomputed_and_counted(tmp_path, edit):
    log = tmp_path / "log"
    log.mkdir()
    pts = points(3, sleep=0.0, log=str(log))
    store = ResultCache(tmp_path / "c")
    first = run_sweep(fns.logged, pts, jobs=1, cache=store, progress=False)
    assert first.corrupt == 0
    key = store.key(function_name(fns.logged), pts[1])
    record = _record(store, key)
    EDITS[edit](record)
    _rewrite(store, key, record, checksum=False)
    with pytest.raises(CorruptEntryError, match="checksum does not match"):
        store.read(key)
    assert store.get(key) is None
    again = run_sweep(fns.logged, pts, jobs=1, cache=store, progress=False)
    assert (again.computed, again.cached, again.corrupt, calls(log)) == (1, 2, 1, 4)
    assert as_bytes(again.results) == as_bytes(first.results)
    assert store.read(key) is not None  # rewritten, valid again


@pytest.mark.parametrize(
    "damage",
    ["deep", "list", "number", "empty", "no-result", "other-key"],
)
def test_malformed_records_are_corrupt_not_errors(tmp_path, damage):
    store = ResultCache(tmp_path)
    pts = points(1)
    run_sweep(fns.noisy_mean, pts, jobs=1, cache=store, progress=False)
    key = store.key(function_name(fns.noisy_mean), pts[0])
    record = _record(store, key)
    if damage == "deep":  # json.loads raises RecursionError
        _rewrite(store, key, "[" * 200_000 + "]" * 200_000, checksum=False)
    elif damage == "list":
        _rewrite(store, key, [record], checksum=False)
    elif damage == "number":
        _rewrite(store, key, "14.26", checksum=False)
    elif damage == "empty":
        _rewrite(store, key, "", checksum=False)
    elif damage == "no-result":  # structurally incomplete, even with a valid checksum
        del record["result"]
        _rewrite(store, key, record, checksum=True)
    else:  # an entry copied from another key, checksum and all
        record["key"] = "0" * 64
        _rewrite(store, key, record, checksum=True)
    with pytest.raises(CorruptEntryError):
        store.read(key)
    again = run_sweep(fns.noisy_mean, pts, jobs=1, cache=store, progress=False)
    assert (again.computed, again.cached, again.corrupt) == (1, 0, 1)


@pytest.mark.parametrize("edit", ["nan-value", "missing-key"])
def test_validate_catches_what_a_valid_checksum_would_let_through(tmp_path, edit):
    """An entry with a recomputed checksum but a NaN (or missing key) where the result must be
    finite: the sweep's ``validate`` rejects it, and it is recomputed and counted."""
    pts = points(2)
    store = ResultCache(tmp_path)
    first = run_sweep(fns.noisy_mean, pts, jobs=1, cache=store, validate=finite_mean)
    key = store.key(function_name(fns.noisy_mean), pts[0])
    record = _record(store, key)
    EDITS[edit](record)
    _rewrite(store, key, record, checksum=True)
    assert store.read(key) is not None  # the checksum holds: only validate can tell
    again = run_sweep(fns.noisy_mean, pts, jobs=1, cache=store, validate=finite_mean)
    assert (again.computed, again.cached, again.corrupt) == (1, 1, 1)
    assert as_bytes(again.results) == as_bytes(first.results)


def test_a_fresh_result_that_fails_validate_is_an_error(tmp_path):
    def never(result):
        raise ValueError("never valid")

    with pytest.raises(ValueError, match="returned an invalid result: never valid"):
        run_sweep(fns.noisy_mean, points(1), jobs=1, cache=tmp_path, validate=never)
    assert ResultCache(tmp_path).entries() == []


def test_the_entry_format_is_part_of_the_key(tmp_path, monkeypatch):
    """Entries of the previous format (no record checksum) are never looked up, so never
    trusted: a format bump changes every key."""
    import simulate.execution.cache as cache_module

    store = ResultCache(tmp_path, version="v")
    assert cache_module.FORMAT == 2
    key = store.key("m.f", {"a": 1})
    monkeypatch.setattr(cache_module, "FORMAT", 1)
    assert store.key("m.f", {"a": 1}) != key


# --- checked before any point runs: the cache directory and the scheduler -----------------------


@pytest.mark.parametrize("where", ["file", "under-a-file", "proc"])
def test_an_unusable_cache_directory_is_refused_before_any_point(tmp_path, where):
    log = tmp_path / "log"
    log.mkdir()
    (tmp_path / "f").write_text("x")
    directory = {"file": tmp_path / "f", "under-a-file": tmp_path / "f" / "sub",
                 "proc": Path("/proc/sys/aimc-cache")}[where]
    with pytest.raises(ParameterError, match=r"cache='.*' cannot be used; valid: a writable dir"):
        run_sweep(fns.logged, points(2, sleep=0.0, log=str(log)), jobs=1, cache=directory)
    assert calls(log) == 0


def test_an_unreachable_scheduler_fails_at_once_naming_it():
    """A refused connection fails without Dask's 30 s of retries (hang detector: < 10 s)."""
    start = time.monotonic()
    with pytest.raises(ParameterError, match=re.escape(
            "scheduler='tcp://127.0.0.1:1' cannot be reached (connection refused)")):
        run_sweep(fns.noisy_mean, points(1), scheduler="tcp://127.0.0.1:1", cache=False)
    assert time.monotonic() - start < 10


def test_a_silent_scheduler_address_times_out_naming_it(monkeypatch):
    """Something listens but does not speak Dask: one error after the connect timeout."""
    import socket

    import simulate.execution.sweep as sweep_module

    monkeypatch.setattr(sweep_module, "CONNECT_TIMEOUT_S", 0.5)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
        with pytest.raises(ParameterError, match=re.escape(
                f"scheduler={address!r} accepted a connection but did not answer")):
            run_sweep(fns.noisy_mean, points(1), scheduler=address, cache=False)


@pytest.mark.parametrize(
    "address", ["tcp://127.0.0.1:99999", "tcp://127.0.0.1:0", "http://127.0.0.1:8786", 8786]
)
def test_malformed_scheduler_addresses_are_refused_by_the_library_too(address):
    with pytest.raises(ParameterError, match="is not a scheduler address"):
        run_sweep(fns.noisy_mean, points(1), scheduler=address, cache=False)


# --- process lifecycle and concurrent sweeps ----------------------------------------------------


def _sweep_script(pts: list[dict], cache, *, command: bool = False) -> str:
    """A child that runs ``logged`` over ``pts`` with 2 workers (as a command: Ctrl-C -> 130)."""
    body = f"run_sweep(_sweep_fns.logged, {pts!r}, jobs=2, cache={cache!r}, progress=False)"
    if command:
        body = textwrap.dedent(f"""
            from theory.commands import command_main
            def run(args):
                sweep = {body}
                print(sweep.computed, sweep.cached, flush=True)
            sys.exit(command_main("demo", "demo", lambda parser: None, run, []))
            """)
    else:
        body = f"sweep = {body}\nprint(sweep.computed, sweep.cached, flush=True)"
    return textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(REPO)!r}, {str(TESTS)!r}]
        import _sweep_fns
        from simulate.execution.sweep import run_sweep
        """) + body


def _live(process) -> bool:
    import psutil

    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_pool_workers_die_with_their_parent(tmp_path):
    """SIGKILL of the sweep's process (not of its group): its workers go too, within seconds."""
    import psutil

    log = tmp_path / "log"
    log.mkdir()
    pts = points(4, sleep=5.0, log=str(log))
    proc = subprocess.Popen([sys.executable, "-c", _sweep_script(pts, False)],
                            start_new_session=True)
    parent = psutil.Process(proc.pid)
    workers = []
    try:
        deadline = time.monotonic() + 30
        while len(workers) < 2 and time.monotonic() < deadline:
            workers = parent.children()
            time.sleep(0.05)
        assert len(workers) == 2, "the pool did not start"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 5
        while any(_live(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_live(w) for w in workers), "workers outlived their parent"
    finally:
        for worker in workers:
            with contextlib.suppress(psutil.NoSuchProcess):
                worker.kill()
        if proc.poll() is None:
            proc.kill()


def test_ctrl_c_gives_one_line_exit_130_and_keeps_the_finished_points(tmp_path):
    """A real SIGINT to the sweep's process group (what Ctrl-C in a terminal does): the workers
    print nothing, the command prints one line and exits 130, and the finished points stay."""
    log, cache = tmp_path / "log", tmp_path / "cache"
    log.mkdir()
    pts = points(8, sleep=1.0, log=str(log))
    proc = subprocess.Popen([sys.executable, "-c", _sweep_script(pts, str(cache), command=True)],
                            start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    store = ResultCache(cache)
    try:
        deadline = time.monotonic() + 30
        while len(store.entries()) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert err.splitlines() == ["demo: interrupted (finished points stay cached)"]
    assert out == ""
    done = sum(store.get(p.stem) is not None for p in store.entries())
    assert 2 <= done < len(pts)
    time.sleep(0.5)
    with pytest.raises(ProcessLookupError):  # no worker is left in the group
        os.killpg(proc.pid, 0)
    again = run_sweep(fns.logged, pts, jobs=2, cache=store, progress=False)
    assert (again.computed, again.cached) == (len(pts) - done, done)


def test_two_identical_sweeps_into_one_cache_compute_each_point_once(tmp_path):
    """The per-key lock: the second sweep waits for the first's points and reads them."""
    log, cache = tmp_path / "log", tmp_path / "cache"
    log.mkdir()
    pts = points(4, sleep=0.5, log=str(log))
    script = _sweep_script(pts, str(cache))
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [proc.communicate(timeout=120)[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0]
    assert calls(log) == len(pts)  # not 2 * len(pts)
    counts = [tuple(map(int, out.split())) for out in outs]  # (computed, cached) of each
    assert all(computed + cached == len(pts) for computed, cached in counts)
    assert sum(computed for computed, _ in counts) == len(pts)  # the rest was read, not run
    again = run_sweep(fns.logged, pts, jobs=1, cache=cache, progress=False)
    assert again.cached == len(pts) and calls(log) == len(pts)
    assert as_bytes(again.results) == plain_loop(fns.noisy_mean, pts)


def test_a_lock_is_exclusive_and_released_when_its_holder_dies(tmp_path):
    store = ResultCache(tmp_path)
    key = "cd" * 32
    held = store.lock(key)
    assert store.lock(key, block=False) is None
    held.release()
    held.release()  # idempotent
    with store.lock(key, block=False) as again:
        assert again is not None and store.lock(key, block=False) is None
    script = textwrap.dedent(f"""
        import sys, time
        sys.path[:0] = [{str(REPO)!r}]
        from simulate.execution.cache import ResultCache
        lock = ResultCache({str(tmp_path)!r}).lock({key!r})
        print("locked", flush=True)
        time.sleep(60)
        """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        assert store.lock(key, block=False) is None
    finally:
        proc.kill()
        proc.wait()
    assert store.lock(key, block=False) is not None


def test_a_forked_child_does_not_keep_its_parents_locks(tmp_path):
    """Pool workers are forked while the parent holds the key of the point they will run: the
    lock must be released when the parent releases it, not when the workers exit."""
    store = ResultCache(tmp_path)
    key = "ef" * 32
    held = store.lock(key)
    pid = os.fork()
    if pid == 0:  # the child sleeps; it must not hold the lock
        time.sleep(3)
        os._exit(0)
    try:
        held.release()
        deadline = time.monotonic() + 1.5  # the child closes its copy as soon as it runs
        again = store.lock(key, block=False)
        while again is None and time.monotonic() < deadline:
            time.sleep(0.01)
            again = store.lock(key, block=False)
        assert again is not None, "the forked child kept the lock"
        again.release()
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def test_shared_pool_reuses_workers_and_gives_the_same_results(tmp_path):
    """Sweeps inside one shared_pool block run on the same worker processes (warm), with the
    results of separate pools; after a worker's death the next sweep starts a new pool."""
    from simulate.execution import shared_pool

    def points(log, seeds, bad=-1):
        return [{"seed": s, "scale": 1.0, "n": 8, "sleep": 0.05, "log": str(log), "bad": bad}
                for s in seeds]

    alone = run_sweep(fns.logged, points(tmp_path, range(6)), jobs=2, cache=False)
    logs = [tmp_path / name for name in ("a", "b", "c", "d")]
    for log in logs:
        log.mkdir()
    with shared_pool(2):
        first = run_sweep(fns.logged, points(logs[0], range(3)), jobs=2, cache=False)
        second = run_sweep(fns.logged, points(logs[1], range(3, 6)), jobs=2, cache=False)
        with pytest.raises(SweepError, match="worker process died"):
            run_sweep(fns.die_once, points(logs[2], range(4), bad=1), jobs=2, cache=False)
        run_sweep(fns.logged, points(logs[3], range(2)), jobs=2, cache=False)

    def pids(log):
        return {int(p.name.split("-")[1]) for p in log.iterdir() if p.name != "died"}

    for got, want in zip(first.results + second.results, alone.results, strict=True):
        assert got["mean"] == want["mean"] and np.array_equal(got["draws"], want["draws"])
    assert len(pids(logs[0]) | pids(logs[1])) <= 2  # the same two workers for both sweeps
    assert not pids(logs[3]) & (pids(logs[0]) | pids(logs[1]))  # a new pool after the death
