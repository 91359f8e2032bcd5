"""The results store: the single writer of run records, in an embedded SQLite database.

Each record is committed as soon as it exists (WAL journal, one transaction per record), keyed by a
hash of everything that determines it, so a killed run loses nothing it finished and a rerun neither
duplicates nor redoes a record. Nothing here ever deletes a record.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Iterable

import pandas as pd

# (column, SQL type); the order is the table's and the exports'
RECORD_COLUMNS: tuple[tuple[str, str], ...] = (
    ("record_key", "TEXT PRIMARY KEY"),
    ("run_id", "TEXT"),
    ("suite_hash", "TEXT"),
    ("encoder", "TEXT"),
    ("encoder_revision", "TEXT"),
    ("encoder_fingerprint", "TEXT"),
    ("task", "TEXT"),
    ("dataset", "TEXT"),
    ("dataset_fingerprint", "TEXT"),
    ("task_type", "TEXT"),
    ("seed", "INTEGER"),
    ("fraction", "REAL"),
    ("condition_kind", "TEXT"),
    ("condition", "TEXT"),
    ("severity", "INTEGER"),
    ("auroc", "REAL"),
    ("auroc_per_class", "TEXT"),
    ("balanced_accuracy", "REAL"),
    ("kappa_quadratic", "REAL"),
    ("ece", "REAL"),
    ("ece_adaptive", "REAL"),
    ("ece_classwise", "REAL"),
    ("brier", "REAL"),
    ("nll", "REAL"),
    ("n_train", "INTEGER"),
    ("n_eval", "INTEGER"),
    ("positives_train", "TEXT"),
    ("positives_eval", "TEXT"),
    ("probe_c", "REAL"),
    ("probe_val_nll", "REAL"),
    ("probe_converged", "INTEGER"),
    ("probe_grad_norm", "REAL"),
    ("embedding_hash_train", "TEXT"),
    ("embedding_hash_eval", "TEXT"),
    ("crsbench_version", "TEXT"),
    ("fit_seconds", "REAL"),
    ("eval_seconds", "REAL"),
    ("created_at", "TEXT"),
)
RECORD_FIELDS = tuple(name for name, _ in RECORD_COLUMNS)
JSON_FIELDS = ("auroc_per_class", "positives_train", "positives_eval")
METRIC_FIELDS = ("auroc", "balanced_accuracy", "kappa_quadratic", "ece", "ece_adaptive", "ece_classwise", "brier", "nll")
GROUP_FIELDS = ("encoder", "task", "fraction", "condition_kind", "condition", "severity")

RUNS_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, started_at TEXT, suite_hash TEXT, suite_name TEXT,
    suite_yaml TEXT, crsbench_version TEXT, host TEXT, finished_at TEXT, records_written INTEGER
)"""


RUN_DATASETS_SCHEMA = """
CREATE TABLE IF NOT EXISTS run_datasets (
    run_id TEXT, task TEXT, role TEXT, dataset TEXT, fingerprint TEXT, dropped TEXT,
    PRIMARY KEY (run_id, task, role)
)"""


class ResultsStore:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")  # a committed record survives a power cut too
        columns = ", ".join(f"{name} {sql_type}" for name, sql_type in RECORD_COLUMNS)
        self._db.execute(f"CREATE TABLE IF NOT EXISTS records ({columns})")
        self._db.execute(RUNS_SCHEMA)
        self._db.execute(RUN_DATASETS_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "ResultsStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def existing_keys(self) -> set[str]:
        return {row[0] for row in self._db.execute("SELECT record_key FROM records")}

    def add(self, record: dict) -> bool:
        """Commit one record; returns False when its key was already stored (nothing changes)."""
        missing = set(RECORD_FIELDS) - set(record)
        if missing:
            raise ValueError(f"record lacks fields: {sorted(missing)}")
        values = [_to_sql(record[name], name) for name in RECORD_FIELDS]
        placeholders = ", ".join("?" * len(RECORD_FIELDS))
        cursor = self._db.execute(
            f"INSERT OR IGNORE INTO records ({', '.join(RECORD_FIELDS)}) VALUES ({placeholders})", values
        )
        return cursor.rowcount == 1

    def start_run(self, run: dict) -> None:
        self._db.execute(
            "INSERT INTO runs (run_id, started_at, suite_hash, suite_name, suite_yaml, crsbench_version, host) "
            "VALUES (:run_id, :started_at, :suite_hash, :suite_name, :suite_yaml, :crsbench_version, :host)",
            run,
        )

    def add_run_dataset(self, run_id: str, task: str, role: str, dataset: str, fingerprint: str, dropped: dict) -> None:
        """What a session read for a task (its own data or its shift target), with what was dropped and why."""
        self._db.execute(
            "INSERT OR REPLACE INTO run_datasets VALUES (?, ?, ?, ?, ?, ?)",
            (run_id, task, role, dataset, fingerprint, json.dumps(dropped, sort_keys=True)),
        )

    def run_datasets(self) -> pd.DataFrame:
        return pd.read_sql_query("SELECT * FROM run_datasets", self._db)

    def finish_run(self, run_id: str, finished_at: str, records_written: int) -> None:
        self._db.execute(
            "UPDATE runs SET finished_at = ?, records_written = ? WHERE run_id = ?",
            (finished_at, records_written, run_id),
        )

    def records(self) -> pd.DataFrame:
        frame = pd.read_sql_query(f"SELECT {', '.join(RECORD_FIELDS)} FROM records ORDER BY rowid", self._db)
        return frame

    def runs(self) -> pd.DataFrame:
        return pd.read_sql_query("SELECT * FROM runs ORDER BY started_at", self._db)


def _to_sql(value, name: str):
    if name in JSON_FIELDS and not isinstance(value, str) and value is not None:
        return json.dumps(value)
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return value


def load_records(results: str | Path) -> pd.DataFrame:
    """Records of a results folder or database file."""
    path = Path(results)
    if path.is_dir():
        path = path / "results.sqlite"
    if not path.exists():
        from crsbench.errors import DataError

        raise DataError(f"{path}: no results database here (run a suite first)")
    with ResultsStore(path) as store:
        return store.records()


def seed_aggregate(records: pd.DataFrame, metrics: Iterable[str] = METRIC_FIELDS) -> pd.DataFrame:
    """One row per (encoder, task, fraction, condition, severity): mean, std and n over seeds."""
    metrics = [m for m in metrics if m in records.columns]
    grouped = records.groupby(list(GROUP_FIELDS), dropna=False, sort=True)
    table = grouped[metrics].agg(["mean", "std"])
    table.columns = [f"{metric}_{stat}" for metric, stat in table.columns]
    table["n_seeds"] = grouped["seed"].nunique()
    return table.reset_index()


EXPORTERS = {
    "csv": lambda frame, path: frame.to_csv(path, index=False),
    "parquet": lambda frame, path: frame.to_parquet(path, index=False),
}


def export(records: pd.DataFrame, out_dir: str | Path, formats: Iterable[str] = ("parquet", "csv")) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, frame in (("records", records), ("records_by_seed_mean", seed_aggregate(records))):
        for fmt in formats:
            path = out / f"{name}.{fmt}"
            EXPORTERS[fmt](frame, path)
            written.append(path)
    return written
