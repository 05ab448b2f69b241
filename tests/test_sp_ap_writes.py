"""The ``sp-ap-writes`` figure: SP vs AP under batch-mean and per-sample writes (issue 26).

The derived AP-over-SP rows are checked against the paired bootstrap they stand for (the rule in
the module docstring), and the figure on a tiny study of both writes (two stage counts, two
steps, two seeds, a short budget) for its exact identities.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from paper_figures import sp_ap_writes, speedup
from paper_figures.registry import FIGURES, KNOWN, ON_DEMAND, load_figure
from simulate import cycles_after
from simulate.verification import Target, TimeToTarget, speedup_interval
from tests.test_speedup_study import TINY as SPEEDUP_TINY
from tests.test_speedup_study import write_tiny

#: the speedup study's tiny settings at M = 1 and 4 (SP's factor MB/(B+M-1) is not 1 at M = 4)
TINY = replace(SPEEDUP_TINY, stages=(1, 4), sensitivity_stages=4)


def _times(mode, stages, micro_batches, updates, reached):
    updates = np.asarray(updates, dtype=np.int64)
    cycles = np.asarray(cycles_after(mode, stages, micro_batches, updates), dtype=np.int64)
    return TimeToTarget(updates=updates, cycles=cycles, reached=np.asarray(reached))


@pytest.mark.parametrize("stages", [1, 4, 8, 16])
def test_ap_over_sp_is_the_paired_bootstrap_of_sp_over_ap(stages):
    rng = np.random.default_rng(np.random.SeedSequence(26))
    big_b, seeds, target = 8, 10, Target("accuracy", 0.85)
    k = rng.integers(5, 60, seeds)
    reached = rng.random(seeds) < 0.8
    base = _times("none", stages, big_b, k, reached)  # mini-batch SGD counted on M stages
    sync = _times("sync", stages, big_b, k, reached)  # the same updates on the SP schedule
    arm = _times("async", stages, 1, rng.integers(40, 900, seeds), rng.random(seeds) < 0.7)
    rows = [speedup._speedup_row("time-to-target", "w", mode, "minibatch", stages, target, base,
                                 t, 0.025, 0.00625) for mode, t in (("sync", sync),
                                                                   ("async", arm))]
    derived, = sp_ap_writes.ap_over_sp(speedup.table({"rows": rows}))
    direct = speedup_interval(sync, arm)
    for name, value in (("speedup", direct.value), ("ci_low", direct.low),
                        ("ci_high", direct.high)):
        assert float(derived[name]) == pytest.approx(value, rel=1e-12), name
    assert derived["status"] == direct.status
    assert float(derived["baseline_median_cycles"]) == sync.median
    assert float(derived["median_cycles"]) == arm.median


def test_sp_ap_writes_is_on_demand_only():
    assert "sp-ap-writes" in ON_DEMAND and "sp-ap-writes" not in FIGURES
    assert list(KNOWN) == [*FIGURES, *ON_DEMAND]
    module = load_figure("sp-ap-writes")
    assert module.NAME == "sp-ap-writes" and module.USES_SWEEP
    assert sp_ap_writes.settings(False).variants == speedup.settings(False).variants[:1]
    assert not sp_ap_writes.settings(True).variants[0].changes


@pytest.fixture(scope="module")
def tiny_figure(tmp_path_factory):
    return write_tiny(sp_ap_writes, TINY, tmp_path_factory.mktemp("sp-ap-writes"))


def test_tiny_figure_rows_and_identities(tiny_figure):
    rows, manifest = tiny_figure
    assert list(rows[0]) == list(speedup.COLUMNS)
    assert {r["kind"] for r in rows} == {"time-to-target", "ap-over-sp"}
    b = TINY.micro_batches
    for write in sp_ap_writes.WRITES:
        mine = [r for r in rows if r["write"] == write]
        # 3 targets x 2 stage counts x (4 time-to-target rows + 1 ap-over-sp row)
        assert len(mine) == 3 * 2 * 5, write
        for r in (r for r in mine if r["kind"] == "ap-over-sp"):
            m = int(r["stages"])
            ap, = [x for x in mine if x["kind"] == "time-to-target" and x["mode"] == "async"
                   and x["baseline"] == "minibatch" and x["stages"] == r["stages"]
                   and x["target"] == r["target"]]
            factor = m * b / (b + m - 1)  # SP over mini-batch SGD, exactly
            for name in ("speedup", "ci_low", "ci_high"):
                assert float(r[name]) * factor == pytest.approx(float(ap[name]), rel=1e-12)
            assert r["median_cycles"] == ap["median_cycles"]
    # each write ran its own sweep of the main arms only (none, async M = 1, 4; two steps):
    # nothing of the per-sample study came from the batch-mean cache
    assert manifest["sweep"] == {w: {"points": 6, "computed": 6, "cached": 0}
                                 for w in sp_ap_writes.WRITES}
    assert manifest["config"]["writes"] == list(sp_ap_writes.WRITES)
    assert [v["label"] for v in manifest["config"]["variants"]] == ["tuned step (reference)"]
    table = manifest["comparison_markdown"]
    assert table.count("| batch-mean |") == table.count("| per-sample |") == 3 * 2
    assert "| AP / SP [CI] |" in table



def test_shown_target_skips_censored_medians():
    s = speedup.SpeedupSettings()  # accuracy targets 0.7, 0.8, 0.85, 0.9; sensitivity 0.85

    def rows(bad):
        return [{"workload": "w", "target": t, "status": "censored" if t in bad else "ok"}
                for t in ("70% accuracy", "80% accuracy", "85% accuracy", "90% accuracy")]

    pick = sp_ap_writes.shown_target
    assert pick({"settings": s, "rows": rows(())}, "w") == "85% accuracy"
    assert pick({"settings": s, "rows": rows(("90% accuracy",))}, "w") == "85% accuracy"
    assert pick({"settings": s, "rows": rows(("85% accuracy",))}, "w") == "80% accuracy"
    assert pick({"settings": s, "rows": rows(("80% accuracy", "85% accuracy"))},
                "w") == "70% accuracy"
    everything = ("70% accuracy", "80% accuracy", "85% accuracy")
    assert pick({"settings": s, "rows": rows(everything)}, "w") == "70% accuracy"
