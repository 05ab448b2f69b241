"""``write_figures``: the simulated figures' data computed in a background thread while the
analytic figures are written, the paths yielded in order, plotting in the calling thread, an
error stopping what is left (``paper_figures.common.write_figures``)."""

from __future__ import annotations

import threading
import types
from pathlib import Path

import pytest

from paper_figures.common import write_figures
from simulate.execution import shared_pool


def _module(name, uses_sweep, log, fail=False):
    """A figure module that records which thread computes and which plots it."""

    def compute(quick, **sweep):
        log.append((name, "compute", threading.current_thread().name))
        if fail:
            raise RuntimeError(f"{name} failed")
        return {"name": name}

    def write(out_dir, quick=False, **sweep):
        data = compute(quick, **sweep)
        log.append((name, "plot", threading.current_thread().name))
        return [Path(out_dir) / f"{data['name']}.png"]

    return types.SimpleNamespace(NAME=name, USES_SWEEP=uses_sweep, compute=compute, write=write,
                                 log=log)


@pytest.fixture
def saved(monkeypatch):
    """``save_data`` replaced by a recorder (no matplotlib): the thread that plots each figure."""
    import paper_figures.common as common

    def save_data(module, out_dir, data, quick=False):
        module.log.append((module.NAME, "plot", threading.current_thread().name))
        return [Path(out_dir) / f"{data['name']}.png"]

    monkeypatch.setattr(common, "save_data", save_data)


def _modules(log, fail=None):
    return [_module("a", False, log), _module("s1", True, log, fail == "s1"),
            _module("b", False, log), _module("s2", True, log, fail == "s2"),
            _module("s3", True, log)]


def test_paths_in_order_data_in_the_background_plots_here(saved, tmp_path):
    log = []
    main = threading.current_thread().name
    got = [(m.NAME, paths) for m, paths in write_figures(_modules(log), tmp_path, jobs=2)]
    assert [name for name, _ in got] == ["a", "s1", "b", "s2", "s3"]
    assert all(paths == [tmp_path / f"{name}.png"] for name, paths in got)
    computed = {name: thread for name, what, thread in log if what == "compute"}
    plotted = {name: thread for name, what, thread in log if what == "plot"}
    assert all(computed[n].startswith("figure-data") for n in ("s1", "s2", "s3"))
    assert computed["a"] == computed["b"] == main
    assert set(plotted.values()) == {main}
    # the simulated figures are computed in their given order
    assert [n for n, what, _ in log if what == "compute" and n.startswith("s")] == \
        ["s1", "s2", "s3"]


def test_one_job_writes_one_figure_at_a_time(saved, tmp_path):
    log = []
    list(write_figures(_modules(log), tmp_path, jobs=1))
    assert {thread for _, _, thread in log} == {threading.current_thread().name}
    assert [(n, w) for n, w, _ in log] == [(n, w) for n in ("a", "s1", "b", "s2", "s3")
                                           for w in ("compute", "plot")]


def test_an_error_stops_the_figures_left(saved, tmp_path):
    log = []
    written = []
    with shared_pool(2), pytest.raises(RuntimeError, match="s2 failed"):
        for module, _ in write_figures(_modules(log, fail="s2"), tmp_path, jobs=2):
            written.append(module.NAME)
    assert written == ["a", "s1", "b"]
    assert ("s3", "plot", threading.current_thread().name) not in log
