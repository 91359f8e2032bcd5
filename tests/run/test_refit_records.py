"""Refits at 100 % labels as their own dimension of the records: planned, paired, keyed, resumable, scored."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from crsbench import api
from crsbench.plan.fit_units import plan
from crsbench.plan.subsets import refit_resample
from crsbench.plan.suite import load_suite

from _tiny_results import tiny_suite

def _suite(root, refits: int):
    return load_suite(tiny_suite(root, refits, name=f"tiny-{refits}"))


def test_refits_are_planned_per_encoder_and_task_and_change_nothing_else(tmp_path):
    without, with_refits = _suite(tmp_path, 0), _suite(tmp_path, 3)
    assert with_refits.suite_hash() != without.suite_hash()
    units = plan(with_refits)
    refits = [u for u in units if u.refit]
    assert [u for u in units if not u.refit] == plan(without)
    assert sorted((u.encoder, u.refit) for u in refits) == sorted(
        (e, k) for e in ("raw-pixels", "colour-texture") for k in (1, 2, 3))
    assert all(u.fraction == 1.0 and u.seed == 0 and len(u.conditions) == 2 for u in refits)  # clean and jpeg@3


def test_a_refit_resample_depends_on_task_and_index_alone():
    first = refit_resample("derm", 1, 500)
    np.testing.assert_array_equal(first, refit_resample("derm", 1, 500))
    assert not np.array_equal(first, refit_resample("derm", 2, 500))
    assert not np.array_equal(first, refit_resample("fundus", 1, 500))
    assert first.min() >= 0 and first.max() < 500 and len(first) == 500
    assert len(np.unique(first)) < 500  # with replacement: a bootstrap resample


@pytest.fixture(scope="module")
def refit_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("refits")
    suite = _suite(root, 3)
    first = api.run(suite)
    again = api.run(suite)
    return root / "out", first, again


def test_the_run_stores_refits_resumably_and_the_score_includes_them(refit_run):
    out, first, again = refit_run
    assert again.written == 0 and again.planned_records == first.planned_records
    with sqlite3.connect(out / "results.sqlite") as db:
        rows = db.execute("SELECT refit, COUNT(*) FROM records GROUP BY refit ORDER BY refit").fetchall()
        linked = db.execute("SELECT COUNT(*) FROM records r JOIN predictions p USING (record_key) "
                            "WHERE r.refit > 0").fetchone()[0]
    assert rows == [(0, 2 * (3 * 2 + 3)), (1, 4), (2, 4), (3, 4)]  # 2 encoders x (clean + jpeg) per refit
    assert linked == 0  # the spread reads the refits' metrics: no prediction files
    scored = api.score(out, n_boot=200, n_weight_draws=0)
    assert "3 paired refits" in scored.intervals.label
    assert "expected over training samples" in scored.intervals.target
    narrow = api.score(out, n_boot=200, n_weight_draws=0, target="fitted-probes")
    assert "these fitted probes" in narrow.intervals.target
    wide = scored.point.scores["ci_high"] - scored.point.scores["ci_low"]
    assert (wide.dropna() >= (narrow.point.scores["ci_high"] - narrow.point.scores["ci_low"]).dropna() - 1e-9).all()


def test_refits_added_to_a_scored_folder_are_scored_not_the_stored_value_reused(tmp_path):
    api.run(_suite(tmp_path, 0))
    first, _ = api.scored_or_score(tmp_path / "out", n_boot=100, n_weight_draws=0)
    assert "not included" in first.intervals.target
    again, reused = api.scored_or_score(tmp_path / "out", n_boot=100, n_weight_draws=0)
    assert reused
    api.run(_suite(tmp_path, 3))  # the same folder: only the refit records are computed
    scored, reused = api.scored_or_score(tmp_path / "out", n_boot=100, n_weight_draws=0)
    assert not reused and "3 paired refits" in scored.intervals.label
