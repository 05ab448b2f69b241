"""Figure ``modes``: its CSV is the per-mode comparison of bounds.plan_modes, point for point."""

import csv
import json

from bounds import ModeLimits, ProblemParams, load_model, plan_modes
from paper_figures import modes


def _tiny(quick):
    return {"preset": modes.PRESET, "tiles": 64, "eps": 0.5, "digital_share": 0.25,
            "accelerators": [4, 8], "micro_batch_sizes": [1, 2], "periods": [1, 4],
            "models": ["digits-mlp"], "model_parameters": {}}


def test_modes_figure_files_match_the_planner(tmp_path, monkeypatch):
    monkeypatch.setattr(modes, "_config", _tiny)
    monkeypatch.setattr(modes, "TILES", 64)
    paths = modes.write(tmp_path, quick=True)
    assert sorted(p.suffix for p in paths) == [".csv", ".json", ".pdf", ".png"]
    with (tmp_path / "modes.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert {(r["accelerators"], r["mode"]) for r in rows} == {
        (str(n), m) for n in (4, 8) for m in ("sync", "async", "dp", "hybrid")}
    limits = ModeLimits(micro_batch_sizes=(1, 2), replica_micro_batches=(1, 2), periods=(1, 4))
    for n in (4, 8):
        hardware = modes.hardware(n)
        assert hardware.counts == (n - n // 4, n // 4)
        expected = plan_modes(load_model("digits-mlp"), hardware, ProblemParams(), 0.5, limits)
        for row in (r for r in rows if r["accelerators"] == str(n)):
            plan = expected.get(row["mode"])
            if plan is None:
                assert row["seconds"] == "" and row["ruled_out"]
            else:
                assert float(row["seconds"]) == plan.seconds
                assert row["assignment"] == plan.assignment()
    manifest = json.loads((tmp_path / "modes.json").read_text())
    assert manifest["config"]["accelerators"] == [4, 8]
    for row in rows:
        assert row["basis"] == ("" if not row["seconds"] else
                                "guarantee" if row["mode"] in ("sync", "async") else "estimate")
    text = modes.caption(rows)
    for basis, lead in (("guarantee", "On 8 accelerators the fastest guaranteed mode is "),
                        ("estimate", "Fastest estimate (unproved local-SGD row): ")):
        found = [r for r in rows if r["accelerators"] == "8" and r["basis"] == basis]
        if found:  # the best of each basis, never one ranked among the other
            best = min(found, key=lambda r: float(r["seconds"]))
            assert lead + best["mode"] in text and f"{float(best['seconds']):.3g} s" in text
    assert text.startswith("On 8 accelerators the fastest guaranteed mode is ")
    assert set(manifest) >= {"best_guarantee", "best_estimate"}
    for value in manifest["best_guarantee"].values():
        assert value["basis"] == "guarantee" and value["estimated_seconds"] is None
