"""The results store: the single writer of run records, in an embedded SQLite database.

Each record is committed as soon as it exists (WAL journal, one transaction per record), keyed by a
hash of everything that determines it, so a killed run loses nothing it finished and a rerun neither
duplicates nor redoes a record. Nothing here ever deletes a record.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Sequence

import pandas as pd

from crsbench.predictions import PREDICTION_SCHEMAS
from crsbench.records import RECORD_COLUMNS, RECORD_FIELDS, RunRecord, to_record

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
        self._add_new_columns()
        self._db.execute(RUNS_SCHEMA)
        self._db.execute(RUN_DATASETS_SCHEMA)
        for schema in PREDICTION_SCHEMAS:
            self._db.execute(schema)

    def _add_new_columns(self) -> None:
        """A database written before a column existed gets it (null in its old records)."""
        have = {row[1] for row in self._db.execute("PRAGMA table_info(records)")}
        for name, sql_type in RECORD_COLUMNS:
            if name not in have:
                self._db.execute(f"ALTER TABLE records ADD COLUMN {name} {sql_type}")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "ResultsStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def existing_keys(self) -> set[str]:
        return {row[0] for row in self._db.execute("SELECT record_key FROM records")}

    def add(self, record: RunRecord | dict, also: Sequence[tuple[str, tuple]] = ()) -> bool:
        """Commit one record (a dict is validated into a RunRecord first); False when its key was
        already stored (nothing changes). `also`: (sql, parameters) statements committed in the same
        transaction when the record is new (the record's prediction index rows)."""
        row = to_record(record).as_row()
        placeholders = ", ".join("?" * len(RECORD_FIELDS))
        self._db.execute("BEGIN IMMEDIATE")
        try:
            cursor = self._db.execute(
                f"INSERT OR IGNORE INTO records ({', '.join(RECORD_FIELDS)}) VALUES ({placeholders})",
                [row[name] for name in RECORD_FIELDS],
            )
            added = cursor.rowcount == 1
            for sql, parameters in also if added else ():
                self._db.execute(sql, parameters)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        return added

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
