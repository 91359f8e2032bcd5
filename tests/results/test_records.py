"""The typed run record, the schema derived from it, the one seed aggregation and the one-grid rule."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from crsbench import api
from crsbench.cli.main import app
from crsbench.results.records import (
    EVALUATION_KEY,
    METRIC_FIELDS,
    RECORD_COLUMNS,
    REQUIRED_COLUMNS,
    RecordsError,
    RunRecord,
    aggregate_seeds,
    list_field,
    schema_markdown,
)
from crsbench.results.store import ResultsStore

DOC = Path(__file__).resolve().parents[2] / "docs" / "records.md"


def run_record(seed=0, auroc=0.8, suite="aaaa1111", probe="p1", encoder="enc", fraction=1.0, **changes) -> dict:
    record = {name: None for name in RunRecord.model_fields}
    record.update(
        record_key=f"{suite}-{encoder}-{seed}-{fraction}", run_id="r", suite_hash=suite, encoder=encoder,
        encoder_fingerprint="e1", task="t", dataset="d", dataset_fingerprint="d1", task_type="single_label",
        seed=seed, fraction=fraction, condition_kind="clean", condition="clean", severity=0, auroc=auroc,
        auroc_per_class=[auroc, None], ece=0.05, brier=0.2, nll=0.5, probe_fingerprint=probe,
    )
    record.update(changes)
    return record


def test_the_doc_holds_the_schema_generated_from_the_record():
    assert schema_markdown() in DOC.read_text()


def test_schema_lists_are_derived_from_the_record():
    assert EVALUATION_KEY == ("encoder", "task", "seed", "fraction", "condition_kind", "condition", "severity")
    assert METRIC_FIELDS == ("auroc", "balanced_accuracy", "kappa_quadratic", "ece", "ece_temperature_scaled", "ece_adaptive",
                             "ece_classwise", "brier", "nll")
    assert set(REQUIRED_COLUMNS) == set(EVALUATION_KEY) | {"auroc", "ece", "brier", "nll"}
    columns = dict(RECORD_COLUMNS)
    assert columns["record_key"] == "TEXT PRIMARY KEY" and columns["seed"] == "INTEGER"
    assert columns["auroc"] == "REAL" and columns["auroc_per_class"] == "TEXT"


def test_store_takes_a_record_or_validates_a_dict(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        assert store.add(RunRecord(**run_record(seed=0)))
        assert store.add(run_record(seed=1))
        with pytest.raises(RecordsError, match="condition_kind"):
            store.add(run_record(seed=2, condition_kind="blurry"))
        with pytest.raises(RecordsError, match="colour"):
            store.add({**run_record(seed=3), "colour": "red"})
        back = store.records()
    assert back["seed"].tolist() == [0, 1] and back.loc[0, "auroc_per_class"] == "[0.8, null]"


def test_an_old_database_gains_new_columns(tmp_path):
    import sqlite3

    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE records (record_key TEXT PRIMARY KEY, encoder TEXT)")
        db.execute("INSERT INTO records VALUES ('k', 'enc')")
    with ResultsStore(path) as store:
        frame = store.records()
    assert list(frame.columns) == [name for name, _ in RECORD_COLUMNS] and frame["probe_fingerprint"].isna().all()


# --------------------------------------------------------------------------- one grid, never a silent average


def two_grids(tmp_path) -> Path:
    """Two suites with different probe grids over the same encoder and task: AUROC 0.70 and 0.90."""
    with ResultsStore(tmp_path / "results.sqlite") as store:
        store.add(run_record(seed=0, auroc=0.70, suite="aaaa1111", probe="p1"))
        store.add(run_record(seed=1, auroc=0.90, suite="bbbb2222", probe="p2"))
    return tmp_path


def test_records_of_two_grids_are_refused_naming_both_suites(tmp_path):
    frame = api.records(two_grids(tmp_path))
    with pytest.raises(RecordsError, match=r"aaaa1111 and bbbb2222 differ in probe_fingerprint"):
        aggregate_seeds(frame)


def test_results_and_score_refuse_two_grids_in_one_line_and_filter_by_suite_hash(tmp_path):
    folder = two_grids(tmp_path)
    runner = CliRunner()
    for command in (["results", str(folder)], ["score", str(folder), "--n-boot", "0"]):
        refused = runner.invoke(app, command)
        assert refused.exit_code == 2, refused.output
        assert "aaaa1111 and bbbb2222" in refused.output and "--suite-hash" in refused.output
    chosen = runner.invoke(app, ["results", str(folder), "--suite-hash", "aaaa"])
    assert chosen.exit_code == 0, chosen.output
    assert "0.700" in chosen.output and "0.800" not in chosen.output
    table = api.load_results(folder, suite_hash="bbbb").seed_means()
    assert table["auroc_mean"].tolist() == [0.9] and table["n_seeds"].tolist() == [1]
    with pytest.raises(RecordsError, match="matches no suite"):
        api.load_results(folder, suite_hash="cccc")


def test_a_suite_extended_with_a_seed_is_one_grid(tmp_path):
    with ResultsStore(tmp_path / "results.sqlite") as store:
        store.add(run_record(seed=0, auroc=0.70, suite="aaaa1111"))
        store.add(run_record(seed=1, auroc=0.90, suite="bbbb2222"))
    table = api.load_results(tmp_path).seed_means()
    assert table["auroc_mean"].tolist() == [pytest.approx(0.8)] and table["n_seeds"].tolist() == [2]


def test_records_of_several_suites_without_fingerprints_are_refused(tmp_path):
    frame = pd.DataFrame([run_record(seed=0, suite="aaaa1111", probe=None), run_record(seed=1, suite="bbbb2222", probe=None)])
    with pytest.raises(RecordsError, match="do not all record a probe_fingerprint"):
        aggregate_seeds(frame)


def test_results_score_and_api_share_one_aggregation(tmp_path):
    with ResultsStore(tmp_path / "results.sqlite") as store:
        for seed, auroc in enumerate((0.7, 0.8, 0.9)):
            store.add(run_record(seed=seed, auroc=auroc))
            store.add(run_record(seed=seed, auroc=auroc - 0.1, encoder="other"))
    from crsbench.scoring.score import score_records

    report = score_records(api.records(tmp_path), "enc", api.CRSConfig(n_boot=0, n_weight_draws=0))
    pd.testing.assert_frame_equal(report.point.seed_summary, api.load_results(tmp_path).seed_means())
    assert api.load_results(tmp_path).headline()["auroc_mean"].tolist() == pytest.approx([0.8, 0.7])


def test_user_names_are_printed_as_written_not_as_markup(tmp_path):
    with ResultsStore(tmp_path / "results.sqlite") as store:
        store.add(run_record(seed=0, encoder="vit[bold]"))
        store.add(run_record(seed=0, encoder="r[/]"))
    result = CliRunner().invoke(app, ["results", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "vit[bold]" in result.output and "r[/]" in result.output
    scored = CliRunner().invoke(app, ["score", str(tmp_path), "--n-boot", "0", "--reference", "r[/]"])
    assert scored.exit_code == 0, scored.output
    assert "vit[bold]" in scored.output


def test_an_old_database_is_read_without_writing_to_it(tmp_path):
    """Read-only commands (results, score, report) read a database written before a column existed as
    null in that column, and leave the file as it was."""
    import sqlite3

    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE records (record_key TEXT PRIMARY KEY, encoder TEXT)")
        db.execute("INSERT INTO records VALUES ('k', 'enc')")
    before = path.read_bytes()
    with ResultsStore(path, read_only=True) as store:
        frame = store.records()
    assert list(frame.columns) == [name for name, _ in RECORD_COLUMNS] and frame["probe_converged"].isna().all()
    assert frame["encoder"].tolist() == ["enc"] and path.read_bytes() == before


def test_schema_1_binary_records_are_read_in_todays_conventions():
    import json as _json

    from crsbench.results.records import upgrade_records, with_lists

    old = pd.DataFrame([
        {"task_type": "single_label", "brier": 0.4, "auroc": 0.75, "auroc_per_class": _json.dumps([0.7, 0.8]),
         "positives_eval": _json.dumps([5, 5]), "schema_version": None},
        {"task_type": "single_label", "brier": 0.9, "auroc": 0.6, "auroc_per_class": _json.dumps([0.5, 0.6, 0.7]),
         "positives_eval": _json.dumps([3, 3, 4]), "schema_version": None},
        {"task_type": "ordinal", "brier": 0.2, "auroc": 0.9, "auroc_per_class": [0.9, 0.9],
         "positives_eval": [4, 6], "schema_version": 2},
    ])
    read = upgrade_records(with_lists(old))  # JSON text as the store holds it, a list as a bundle does
    assert read["auroc_per_class"].tolist() == [[0.7, 0.8], [0.5, 0.6, 0.7], [0.9, 0.9]]
    assert read["brier"].tolist() == [0.2, 0.9, 0.2]  # binary schema-1 halved; multi-class and new unchanged
    assert read["auroc"].tolist() == [0.8, 0.6, 0.9]  # the positive column's
    assert (read["schema_version"] == 2).all()  # schema 2's conventions; none claims schema 3's refit field
    assert old["brier"].tolist() == [0.4, 0.9, 0.2]  # the stored values are not touched


def test_the_newest_version_of_a_changed_encoder_is_scored_and_the_rest_named():
    from crsbench.results.records import newest_encoder_versions

    rows = [run_record(seed=s, encoder="enc", encoder_fingerprint=fp, created_at=t, auroc=a)
            for s in (0, 1) for fp, t, a in (("old", "2026-01-01T00:00:00", 0.7), ("new", "2026-02-01T00:00:00", 0.8))]
    rows += [run_record(seed=s, encoder="other", encoder_fingerprint="o", created_at="2025-01-01T00:00:00")
             for s in (0, 1)]
    frame = pd.DataFrame(rows)
    kept, notes = newest_encoder_versions(frame)
    assert set(kept.loc[kept["encoder"] == "enc", "encoder_fingerprint"]) == {"new"}
    assert len(kept[kept["encoder"] == "other"]) == 2 and len(notes) == 1
    assert "enc on t" in notes[0] and "2 older records kept" in notes[0]
    same, none = newest_encoder_versions(frame[frame["encoder"] == "other"])
    assert none == () and len(same) == 2


@pytest.mark.parametrize("stored, expected", [
    ("[0.5, null, 0.75]", [0.5, None, 0.75]),  # the JSON text the store holds
    ([0.5, None, 0.75], [0.5, None, 0.75]),  # a list already (a bundle's table, a record in memory)
    ((3, 4), [3, 4]),
    ("null", None), (None, None), (float("nan"), None),  # no value, however it was stored
])
def test_a_list_field_reads_the_same_whether_stored_as_text_or_as_a_list(stored, expected):
    assert list_field(stored) == expected
    assert list_field(np.asarray([1, 2])) == [1, 2]
