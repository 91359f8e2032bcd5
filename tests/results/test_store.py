import numpy as np
import pandas as pd
import pytest

from crsbench.results.records import RECORD_FIELDS, aggregate_seeds
from crsbench.report import export_records as export
from crsbench.results.store import ResultsStore, load_records
from crsbench.errors import DataError


def make_record(seed=0, fraction=1.0, encoder="enc", task="t", auroc=0.8, key=None):
    record = {name: None for name in RECORD_FIELDS}
    record.update(
        record_key=key or f"{encoder}-{task}-{seed}-{fraction}", run_id="r", suite_hash="s", encoder=encoder,
        encoder_revision="1", encoder_fingerprint="f", task=task, dataset="d", dataset_fingerprint="g",
        task_type="single_label", seed=seed, fraction=fraction, condition_kind="clean", condition="clean",
        severity=0, auroc=auroc, auroc_per_class=[auroc, None], balanced_accuracy=0.7, ece=0.05, brier=0.3,
        nll=0.6, n_train=10, n_eval=20, positives_train=[5, 5], positives_eval=[10, 10], created_at="now",
    )
    return record


def test_records_are_appended_once_and_never_duplicated(tmp_path):
    with ResultsStore(tmp_path / "results.sqlite") as store:
        assert store.add(make_record(seed=0)) is True
        assert store.add(make_record(seed=0, auroc=0.1)) is False  # same key: the first record stands
        assert store.add(make_record(seed=1)) is True
    frame = load_records(tmp_path)
    assert len(frame) == 2 and frame.loc[frame.seed == 0, "auroc"].item() == 0.8
    assert frame.loc[0, "auroc_per_class"] == "[0.8, null]"


def test_record_missing_a_field_is_rejected(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        record = make_record()
        del record["auroc"]
        with pytest.raises(ValueError, match="auroc"):
            store.add(record)


def test_aggregate_seeds_matches_pandas(tmp_path):
    rng = np.random.default_rng(0)
    records = pd.DataFrame([make_record(seed=s, fraction=f, encoder=e, auroc=rng.random())
                            for e in ("a", "b") for f in (0.1, 1.0) for s in range(5)])
    table = aggregate_seeds(records)
    assert len(table) == 4 and set(table.n_seeds) == {5}
    for _, row in table.iterrows():
        group = records[(records.encoder == row.encoder) & (records.fraction == row.fraction)]
        assert row.auroc_mean == pytest.approx(group.auroc.mean())
        assert row.auroc_std == pytest.approx(group.auroc.std(ddof=1))


def test_export_parquet_and_csv_round_trip(tmp_path):
    with ResultsStore(tmp_path / "results.sqlite") as store:
        for s in range(3):
            store.add(make_record(seed=s))
    records = load_records(tmp_path)
    paths = export(records, tmp_path / "out")
    assert {p.name for p in paths} == {"records.parquet", "records.csv", "records_by_seed_mean.parquet",
                                       "records_by_seed_mean.csv"}
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "out" / "records.parquet"), records)
    assert len(pd.read_csv(tmp_path / "out" / "records.csv")) == 3


def test_missing_results_is_a_clear_error(tmp_path):
    with pytest.raises(DataError, match="no results database"):
        load_records(tmp_path)
