"""Per-case predictions: stored for every record, seed-invariant ones once, crash-safe, loadable."""

import numpy as np
import pytest

from crsbench import api

from crsbench.metrics import classification as metrics
from crsbench.results.predictions import PredictionFiles, load_predictions, storage_bytes
from crsbench.plan.suite import parse_suite

SIZES = {"n_train": 40, "n_val": 16, "n_test": 24, "image_size": 32}


def _suite(tmp_path, seeds=(0, 1)):
    return parse_suite({
        "name": "predictions", "output": str(tmp_path / "out"), "cache": str(tmp_path / "cache"),
        "encoders": ["raw-pixels"],
        "tasks": [{"name": "derm", "dataset": {"kind": "demo", "specialty": "derm", **SIZES},
                   "shift": {"kind": "demo", "specialty": "derm", "site": "B", **SIZES}}],
        "seeds": list(seeds), "fractions": [0.5, 1.0], "probe": {"c_grid": [0.1]},
        "perturbations": {"select": ["gaussian_noise"], "severities": [1, 3]},
    })


@pytest.mark.slow
def test_every_record_has_predictions_and_seed_invariant_ones_are_stored_once(tmp_path):
    suite = _suite(tmp_path)
    summary = api.run(suite)
    records = api.records(suite.output)
    stored = api.predictions(suite.output)
    assert len(stored) == len(records) == summary.written
    assert set(stored.index["record_key"]) == set(records["record_key"])

    full = stored.index[stored.index["fraction"] == 1.0]
    # at 100% labels both seeds fit on the same rows: one file per condition, not per seed
    assert full.groupby(["condition", "severity"])["probs"].nunique().eq(1).all()
    partial = stored.index[stored.index["fraction"] < 1.0]
    assert partial["probs"].nunique() == 2  # the seeds draw different label subsets
    files = storage_bytes(suite.output)
    assert files["probs_files"] == stored.index["probs"].nunique() < len(records)
    assert files["cases_files"] == 2  # the task's test set (clean and perturbed share it) and the shift set

    roles = stored.test_sets.set_index("test_set")["role"]
    assert set(roles[stored.index.loc[stored.index["condition_kind"] == "shift", "test_set"]]) == {"shift"}
    assert set(roles[stored.index.loc[stored.index["condition_kind"] != "shift", "test_set"]]) == {"test"}


def test_metrics_recomputed_from_stored_predictions_match_the_records(tmp_path):
    suite = _suite(tmp_path, seeds=(0,))
    api.run(suite)
    records = api.records(suite.output).set_index("record_key")
    stored = api.predictions(suite.output)
    for row in stored.index.itertuples():
        probs = stored.probabilities(row.record_key)
        assert probs.dtype == np.float32
        cases = stored.case_set(row.test_set)
        assert len(cases.case_id) == probs.shape[0] == SIZES["n_test"]
        record = records.loc[row.record_key]
        proba = probs.astype(np.float64)
        proba /= proba.sum(axis=1, keepdims=True)
        assert metrics.auroc_macro(record["task_type"], cases.labels, proba) == pytest.approx(record["auroc"], abs=1e-6)
        assert metrics.brier(record["task_type"], cases.labels, proba) == pytest.approx(record["brier"], abs=1e-6)
    table = stored.table(stored.index["record_key"].iloc[0])
    assert {"case_id", "cluster", "label", "p_0"} <= set(table.columns)


def test_a_kill_while_writing_predictions_commits_nothing_and_a_rerun_resumes(tmp_path, monkeypatch):
    suite = _suite(tmp_path, seeds=(0,))
    original = PredictionFiles.write_probabilities
    calls = {"n": 0}

    def dying(self, probs):
        calls["n"] += 1
        if calls["n"] == 3:
            # the process dies halfway through writing: a partial temporary file, then the exception
            path = self.probs_path("partial")
            path.parent.mkdir(parents=True, exist_ok=True)
            (path.parent / ".tmp-partial.npy").write_bytes(b"\x93NUMPY half")
            raise KeyboardInterrupt
        return original(self, probs)

    monkeypatch.setattr(PredictionFiles, "write_probabilities", dying)
    with pytest.raises(KeyboardInterrupt):
        api.run(suite)
    after_kill = api.records(suite.output)
    assert len(after_kill) == 2  # the two records finished before the kill are committed
    stored = load_predictions(suite.output)
    assert len(stored) == 2
    for key in stored.index["record_key"]:  # every committed row points at a complete file
        assert stored.probabilities(key).shape == (SIZES["n_test"], 7) or stored.probabilities(key).ndim == 2

    monkeypatch.setattr(PredictionFiles, "write_probabilities", original)
    summary = api.run(suite)
    assert summary.written == summary.planned_records - 2
    stored = load_predictions(suite.output)
    assert len(stored) == summary.planned_records
    for key in stored.index["record_key"]:
        assert np.isfinite(stored.probabilities(key)).all()
