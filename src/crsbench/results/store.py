"""The results store: the single writer of run records, in an embedded SQLite database.

Each record is committed as soon as it exists (WAL journal, one transaction per record), keyed by a
hash of everything that determines it, so a killed run loses nothing it finished and a rerun neither
duplicates nor redoes a record. Nothing here ever deletes a record.

Readers (`results`, `score`) open the database read-only: they change no byte of it and refuse a file
that is not a CRS-Bench store. Every SQLite failure a user can act on (a locked, full, read-only or
damaged database) becomes a `StoreError` naming the file.
"""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Sequence
from urllib.parse import quote

import pandas as pd

from crsbench.errors import DataError
from crsbench.results.records import RECORD_COLUMNS, RECORD_FIELDS, RunRecord, to_record

# the per-case prediction index: which probability file and test set belong to a record
PREDICTION_SCHEMAS: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS predictions (
        record_key TEXT PRIMARY KEY, test_set TEXT NOT NULL, probs TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS test_sets (
        test_set TEXT PRIMARY KEY, task TEXT, role TEXT, n_cases INTEGER, n_clusters INTEGER
    )""",
)

RUN_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "TEXT PRIMARY KEY"), ("started_at", "TEXT"), ("suite_hash", "TEXT"), ("suite_name", "TEXT"),
    ("suite_yaml", "TEXT"), ("crsbench_version", "TEXT"), ("host", "TEXT"), ("finished_at", "TEXT"),
    ("records_written", "INTEGER"),
    # running | finished | aborted (a run without finished_at found by the next run on the output)
    ("status", "TEXT"), ("pid", "INTEGER"),
    ("numerics", "TEXT"),  # JSON: the settings that change bits (threads, device, dtype), provenance.numerics
)
RUNS_SCHEMA = f"CREATE TABLE IF NOT EXISTS runs ({', '.join(f'{n} {t}' for n, t in RUN_COLUMNS)})"


RUN_DATASETS_SCHEMA = """
CREATE TABLE IF NOT EXISTS run_datasets (
    run_id TEXT, task TEXT, role TEXT, dataset TEXT, fingerprint TEXT, dropped TEXT,
    PRIMARY KEY (run_id, task, role)
)"""


DEFAULT_LOCK_TIMEOUT_S = 60.0


def lock_timeout() -> float:
    """Seconds to wait for a database another process holds locked (CRSBENCH_DB_TIMEOUT, default 60)."""
    value = os.environ.get("CRSBENCH_DB_TIMEOUT")
    try:
        return float(value) if value else DEFAULT_LOCK_TIMEOUT_S
    except ValueError:
        raise DataError(f"CRSBENCH_DB_TIMEOUT: {value!r} is not a number of seconds") from None


class StoreError(DataError):
    """A results database that cannot be used: locked, full, read-only, damaged, or not a CRS-Bench store."""


def _advice(error: sqlite3.Error, timeout: float) -> str:
    """What a user can do about a SQLite failure, by its message (sqlite3 gives no portable error code)."""
    text = str(error).lower()
    if "locked" in text or "busy" in text:
        return (f"the database is locked by another process for more than {timeout:g} s; wait for it to finish "
                "(or raise CRSBENCH_DB_TIMEOUT) and try again")
    if "full" in text:
        return "the disk is full; free space (stored records are intact) and run again"
    if "readonly" in text or "read-only" in text:
        return "the folder or file is read-only; make it writable or choose another output folder"
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return ("the file is damaged or not a SQLite database; restore it from a copy or move it away "
                "(a new run starts a new database)")
    if "unable to open" in text:
        return "the file cannot be opened; check that its folder exists and is readable"
    return "check the file and its folder"


class ResultsStore:
    def __init__(self, path: str | Path, *, read_only: bool = False, timeout: float | None = None):
        self.path = Path(path)
        self.read_only = read_only
        self.timeout = lock_timeout() if timeout is None else timeout
        if read_only:
            self._db = self._open_read_only()
            self._check_is_store()
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._guard():
            self._db = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
            self._check_is_store(allow_new=True)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")  # a committed record survives a power cut too
            columns = ", ".join(f"{name} {sql_type}" for name, sql_type in RECORD_COLUMNS)
            self._db.execute(f"CREATE TABLE IF NOT EXISTS records ({columns})")
            self._add_new_columns("records", RECORD_COLUMNS)
            self._db.execute(RUNS_SCHEMA)
            self._add_new_columns("runs", RUN_COLUMNS)
            self._db.execute(RUN_DATASETS_SCHEMA)
            for schema in PREDICTION_SCHEMAS:
                self._db.execute(schema)

    def _open_read_only(self) -> sqlite3.Connection:
        if not self.path.is_file():
            raise StoreError(f"{self.path}: no results database here (run a suite first)")
        uri = f"file:{quote(str(self.path.resolve()))}?mode=ro"
        with self._guard():
            try:
                db = sqlite3.connect(uri, uri=True, timeout=self.timeout, isolation_level=None)
                db.execute("SELECT count(*) FROM sqlite_master").fetchone()
                return db
            except sqlite3.OperationalError:
                if os.access(self.path.parent, os.W_OK):
                    raise
            # a WAL database in a read-only folder cannot get its -shm file; nobody can write there, so
            # reading it as immutable is exact
            db = sqlite3.connect(uri + "&immutable=1", uri=True, timeout=self.timeout, isolation_level=None)
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return db

    def _check_is_store(self, allow_new: bool = False) -> None:
        """Refuse a SQLite file that holds other tables than a results store's (an empty file is new)."""
        with self._guard():
            tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "records" in tables or (allow_new and not tables):
            return
        self._db.close()
        found = f"it holds tables {', '.join(sorted(tables))}" if tables else "it is empty"
        raise StoreError(f"{self.path}: not a CRS-Bench results database ({found}); point to a results folder")

    @contextmanager
    def _guard(self):
        try:
            yield
        except sqlite3.ProgrammingError:
            raise  # a bug in this code, not the user's file
        except sqlite3.DatabaseError as error:
            raise StoreError(f"{self.path}: {error}: {_advice(error, self.timeout)}") from None

    def _add_new_columns(self, table: str, columns: tuple[tuple[str, str], ...]) -> None:
        """A database written before a column existed gets it (null in its old rows)."""
        have = {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}
        for name, sql_type in columns:
            if name not in have:
                self._db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {sql_type}")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "ResultsStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def tables(self) -> set[str]:
        with self._guard():
            return {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}

    def existing_keys(self) -> set[str]:
        with self._guard():
            return {row[0] for row in self._db.execute("SELECT record_key FROM records")}

    def add(self, record: RunRecord | dict, also: Sequence[tuple[str, tuple]] = ()) -> bool:
        """Commit one record (a dict is validated into a RunRecord first); False when its key was
        already stored (nothing changes). `also`: (sql, parameters) statements committed in the same
        transaction when the record is new (the record's prediction index rows)."""
        row = to_record(record).as_row()
        placeholders = ", ".join("?" * len(RECORD_FIELDS))
        with self._guard():
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
        """Add a run row (status running); `run` holds run_id and any other RUN_COLUMNS."""
        row = {**run, "status": "running"}
        names = [n for n, _ in RUN_COLUMNS if n in row]
        with self._guard():
            self._db.execute(
                f"INSERT INTO runs ({', '.join(names)}) VALUES ({', '.join(':' + n for n in names)})", row
            )

    def mark_aborted(self, except_run: str) -> list[str]:
        """Mark every other run that never finished as aborted: the caller holds the output's lock, so no
        such run is still alive. Returns their ids."""
        with self._guard():
            ids = [row[0] for row in self._db.execute(
                "SELECT run_id FROM runs WHERE finished_at IS NULL AND coalesce(status, 'running') = 'running' "
                "AND run_id != ?", (except_run,))]
            self._db.executemany("UPDATE runs SET status = 'aborted' WHERE run_id = ?", [(i,) for i in ids])
        return ids

    def add_run_dataset(self, run_id: str, task: str, role: str, dataset: str, fingerprint: str, dropped: dict) -> None:
        """What a session read for a task (its own data or its shift target), with what was dropped and why."""
        with self._guard():
            self._db.execute(
                "INSERT OR REPLACE INTO run_datasets VALUES (?, ?, ?, ?, ?, ?)",
                (run_id, task, role, dataset, fingerprint, json.dumps(dropped, sort_keys=True)),
            )

    def run_datasets(self) -> pd.DataFrame:
        return self.query("SELECT * FROM run_datasets")

    def finish_run(self, run_id: str, finished_at: str, records_written: int, status: str = "finished") -> None:
        with self._guard():
            self._db.execute(
                "UPDATE runs SET finished_at = ?, records_written = ?, status = ? WHERE run_id = ?",
                (finished_at, records_written, status, run_id),
            )

    def query(self, sql: str) -> pd.DataFrame:
        """A SELECT as a table; SQLite failures become one-line StoreErrors naming the file."""
        with self._guard():
            try:
                return pd.read_sql_query(sql, self._db)
            except pd.errors.DatabaseError as error:  # pandas wraps the sqlite3 error
                cause = error.__cause__ or error.__context__
                raise cause if isinstance(cause, sqlite3.Error) else error from None

    def records(self) -> pd.DataFrame:
        """Every record; columns a database written before they existed are read as null (a read-only
        store cannot add them)."""
        with self._guard():
            have = {row[1] for row in self._db.execute("PRAGMA table_info(records)")}
        columns = [n if n in have else f"NULL AS {n}" for n in RECORD_FIELDS]
        return self.query(f"SELECT {', '.join(columns)} FROM records ORDER BY rowid")

    def runs(self) -> pd.DataFrame:
        """The runs table; columns a database written before they existed are read as null."""
        with self._guard():
            have = {row[1] for row in self._db.execute("PRAGMA table_info(runs)")}
        if not have:
            return pd.DataFrame(columns=[n for n, _ in RUN_COLUMNS])
        columns = [n if n in have else f"NULL AS {n}" for n, _ in RUN_COLUMNS]
        return self.query(f"SELECT {', '.join(columns)} FROM runs ORDER BY started_at")


DATABASE_FILE = "results.sqlite"


def database_path(results: str | Path) -> Path:
    """The database of a results folder, or the database file itself: the one place results.sqlite is found."""
    path = Path(results)
    return path / DATABASE_FILE if path.is_dir() else path


def load_records(results: str | Path) -> pd.DataFrame:
    """Records of a results folder or database file, read without writing to it."""
    with ResultsStore(database_path(results), read_only=True) as store:
        return store.records()


def load_runs(results: str | Path) -> pd.DataFrame:
    """The runs table of a results folder or database file, read without writing to it."""
    with ResultsStore(database_path(results), read_only=True) as store:
        return store.runs()
