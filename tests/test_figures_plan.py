"""Figure ``plan``: files written, the CSV is the plotted grid, the optimum is the plan's."""

from __future__ import annotations

import csv

import pytest

from paper_figures import plan as figure


@pytest.fixture(scope="module")
def data():
    return figure.compute(quick=True)


def test_grid_minimum_is_the_plan(data):
    best = data["plan"].best
    cells = [c for mode in ("sync", "async") for c in data[mode].values() if c is not None]
    assert min(c.seconds for c in cells) == pytest.approx(best.seconds, rel=1e-12)
    assert data[best.mode][best.stages, best.micro_batches].seconds == pytest.approx(
        best.seconds, rel=1e-12
    )


def test_write_outputs_the_plotted_table(tmp_path, data, monkeypatch):
    monkeypatch.setattr(figure, "compute", lambda quick=False: data)
    paths = figure.write(tmp_path, quick=True)
    assert [p.suffix for p in paths] == [".png", ".pdf", ".csv", ".json"]
    with paths[2].open() as handle:
        rows = list(csv.DictReader(handle))
    expected = figure.table(data)
    assert rows == [{k: str(v) for k, v in row.items()} for row in expected]
    assert len(rows) == len(data["sync"]) + len(data["async"])


def test_colour_scale_spans_the_synchronous_cells(data):
    fig = figure.plot(data)
    heatmap = fig.axes[0].collections[0]
    seconds = [c.seconds for c in data["sync"].values() if c is not None]
    assert heatmap.norm.vmin == pytest.approx(min(seconds), rel=1e-12)
    assert heatmap.norm.vmax == pytest.approx(max(seconds), rel=1e-12)
    assert fig.axes[1].get_xlabel() == "predicted time to eps (s)"
