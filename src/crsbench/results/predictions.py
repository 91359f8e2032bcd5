"""Per-case predictions beside the run records: what the case-level bootstrap resamples.

Layout under a results folder (PROTOCOL section 8):

    <output>/predictions/probs/<hh>/<hash>.npy   float32 [n_cases, k]: one record's probabilities
    <output>/predictions/cases/<test_set>.npz    case_id, cluster, labels: one test set, once
    <output>/predictions/subgroups/<test_set>.csv  case_id and one column per subgroup attribute (optional)

Files are content-addressed (the name is the SHA-256 of the content), so predictions that do not
depend on the seed (at 100% labels every seed fits on the same rows) are stored once, and a test
set (the task's test split, or its shift set) once however many records use it. The `predictions`
table of results.sqlite links each record_key to its probabilities and test set; its row is
committed in the same transaction as the record, after the files are durably on disk (written to a
temporary name, fsynced, renamed), so a killed run never leaves a committed row pointing at a
half-written file, and a rerun writes only what is missing.

The subgroup file (results.subgroup_files) is keyed by the test set's id and the case ids, and enters no
test-set id, record key or fingerprint: adding attributes to a store, or changing them, re-keys nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from crsbench.core.atomic import atomic_write
from crsbench.errors import DataError
from crsbench.results.store import ResultsStore, database_path
from crsbench.results.subgroup_files import aligned_attributes, read_subgroup_tables, subgroup_table

PREDICTIONS_DIR = "predictions"

_INSERT_PREDICTION = "INSERT OR IGNORE INTO predictions (record_key, test_set, probs) VALUES (?, ?, ?)"
_INSERT_TEST_SET = "INSERT OR IGNORE INTO test_sets VALUES (?, ?, ?, ?, ?)"


@dataclass(frozen=True)
class CaseSet:
    """One test set: case ids, cluster ids (patient / lesion / image; the case id when the dataset
    has no groups) and labels (int class [n], or float [n, L] with NaN for a masked label)."""

    case_id: np.ndarray
    cluster: np.ndarray
    labels: np.ndarray
    task: str = ""
    role: str = "test"  # test | shift
    # attribute -> subgroup per case; not part of identity(): attributes never re-key a test set
    subgroups: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.case_id)
        if not (len(self.cluster) == len(self.labels) == n):
            raise DataError(
                f"test set of task {self.task!r} ({self.role}): {n} case ids, {len(self.cluster)} cluster ids, "
                f"{len(self.labels)} labels"
            )
        for attribute, values in self.subgroups.items():
            if len(values) != n:
                raise DataError(f"test set of task {self.task!r} ({self.role}): {n} case ids, {len(values)} "
                                f"values of subgroup attribute {attribute!r}")

    def identity(self) -> str:
        digest = hashlib.sha256()
        for part in (self.case_id.astype(str), self.cluster.astype(str), np.ascontiguousarray(self.labels)):
            digest.update(str(part.dtype).encode() + str(part.shape).encode())
            digest.update(part.tobytes())
        return digest.hexdigest()[:32]

    def cluster_codes(self) -> tuple[np.ndarray, int]:
        """Cluster index per case (0..n_clusters-1) and the number of clusters."""
        _, codes = np.unique(self.cluster.astype(str), return_inverse=True)
        return codes.astype(np.int64), int(codes.max()) + 1 if len(codes) else 0


def probability_hash(probs: np.ndarray) -> str:
    array = np.ascontiguousarray(probs, dtype=np.float32)
    return hashlib.sha256(str(array.shape).encode() + array.tobytes()).hexdigest()[:40]


class PredictionFiles:
    """Writer of the files under <output>/predictions; every write is idempotent."""

    def __init__(self, output: str | Path):
        self.root = Path(output) / PREDICTIONS_DIR
        self._known: set[Path] = set()

    def probs_path(self, digest: str) -> Path:
        return self.root / "probs" / digest[:2] / f"{digest}.npy"

    def case_path(self, test_set: str) -> Path:
        return self.root / "cases" / f"{test_set}.npz"

    def _ensure(self, path: Path, write) -> None:
        if path in self._known or path.exists():
            self._known.add(path)
            return
        atomic_write(path, write)
        self._known.add(path)

    def write_probabilities(self, probs: np.ndarray) -> str:
        array = np.ascontiguousarray(probs, dtype=np.float32)
        digest = probability_hash(array)
        self._ensure(self.probs_path(digest), lambda out: np.save(out, array, allow_pickle=False))
        return digest

    def write_case_set(self, cases: CaseSet) -> tuple[str, tuple]:
        """The test set's id, and the statement that indexes it (run with the record)."""
        test_set = cases.identity()
        arrays = {"case_id": cases.case_id.astype(str), "cluster": cases.cluster.astype(str), "labels": cases.labels}
        self._ensure(self.case_path(test_set), lambda out: np.savez(out, **arrays))
        n_clusters = cases.cluster_codes()[1]
        return test_set, (_INSERT_TEST_SET, (test_set, cases.task, cases.role, len(cases.case_id), n_clusters))


def index_statements(record_key: str, test_set: str, digest: str, test_set_row: tuple) -> list[tuple]:
    """SQL statements that link a record to its prediction files (committed with the record)."""
    return [test_set_row, (_INSERT_PREDICTION, (record_key, test_set, digest))]


# --------------------------------------------------------------------------- reading


class Predictions:
    """The stored predictions of a results folder: an index table and loaders.

    index: one row per record with predictions: record_key, test_set, probs (hash), and the
    record's encoder, task, seed, fraction, condition_kind, condition, severity.
    """

    def __init__(self, root: Path, index: pd.DataFrame, test_sets: pd.DataFrame,
                 subgroups: dict[str, pd.DataFrame] | None = None):
        self.root = root
        self.index = index
        self.test_sets = test_sets
        self.subgroups = dict(subgroups or {})  # test_set -> case_id and one column per attribute
        self._files = PredictionFiles(root.parent)
        self._case_cache: dict[str, CaseSet] = {}
        self._memory: dict[str, np.ndarray] = {}
        self._by_record: dict[str, str] | None = None  # record_key -> probability hash, built on first use

    @classmethod
    def in_memory(cls, index: pd.DataFrame, case_sets: dict[str, CaseSet], probabilities: dict[str, np.ndarray]):
        """Predictions held in memory (simulations, tests): `index` as load_predictions gives it; a case set's
        subgroups are its attributes."""
        rows = [(k, c.task, c.role, len(c.case_id), c.cluster_codes()[1]) for k, c in case_sets.items()]
        stored = cls(Path("."), index, pd.DataFrame(rows, columns=["test_set", "task", "role", "n_cases", "n_clusters"]),
                     {k: subgroup_table(c) for k, c in case_sets.items() if c.subgroups})
        stored._case_cache = dict(case_sets)
        if isinstance(probabilities, dict):
            stored._memory = {k: np.asarray(v, dtype=np.float32) for k, v in probabilities.items()}
        else:  # a mapping that reads each vector when asked (a bundle's spilled vectors): kept so, not loaded
            stored._memory = probabilities
        return stored

    def __len__(self) -> int:
        return len(self.index)

    def probabilities(self, key: str) -> np.ndarray:
        """float32 [n_cases, k] of a record (by record_key) or a probability hash.

        A stored file is memory-mapped, read-only: only the pages a caller touches are read, and
        nothing is held once the caller drops the array (at the published scale the files of one
        results folder are about a GB; no reader loads them all)."""
        digest = key
        if digest in self._memory:
            return self._memory[digest]
        if self._by_record is None:
            self._by_record = dict(zip(self.index["record_key"], self.index["probs"]))
        digest = self._by_record.get(key, key)
        if digest in self._memory:
            return self._memory[digest]
        path = self._files.probs_path(digest)
        if not path.exists():
            raise DataError(f"{path}: prediction file missing (record or hash {key!r})")
        try:
            return np.load(path, mmap_mode="r", allow_pickle=False)
        except ValueError as exc:  # not an .npy array file (truncated, or something else at that name)
            raise DataError(f"{path}: not a readable prediction file ({exc})") from exc

    def case_set(self, test_set: str) -> CaseSet:
        if test_set not in self._case_cache:
            path = self._files.case_path(test_set)
            if not path.exists():
                raise DataError(f"{path}: test set file missing")
            with np.load(path, allow_pickle=False) as data:
                row = self.test_sets[self.test_sets["test_set"] == test_set]
                task = str(row["task"].iloc[0]) if len(row) else ""
                role = str(row["role"].iloc[0]) if len(row) else "test"
                self._case_cache[test_set] = CaseSet(data["case_id"], data["cluster"], data["labels"], task, role)
        return self._case_cache[test_set]

    def attributes(self, test_set: str) -> dict[str, np.ndarray]:
        """attribute -> subgroup per case of a test set, in its case order ({} when none is stored); a case
        the stored table lacks is UNKNOWN."""
        table = self.subgroups.get(test_set)
        if table is None:
            return {}
        return aligned_attributes(table, self.case_set(test_set).case_id)

    def table(self, key: str) -> pd.DataFrame:
        """One record's predictions as a table: case_id, cluster, label(s), p_0..p_{k-1}."""
        row = self.index[self.index["record_key"] == key]
        if row.empty:
            raise DataError(f"record {key!r} has no stored predictions")
        cases = self.case_set(row["test_set"].iloc[0])
        probs = self.probabilities(key)
        frame = pd.DataFrame({"case_id": cases.case_id, "cluster": cases.cluster})
        labels = cases.labels
        if labels.ndim == 1:
            frame["label"] = labels
        else:
            for j in range(labels.shape[1]):
                frame[f"label_{j}"] = labels[:, j]
        for j in range(probs.shape[1]):
            frame[f"p_{j}"] = probs[:, j]
        return frame


_KEY_COLUMNS = ("encoder", "task", "seed", "fraction", "condition_kind", "condition", "severity")


def load_predictions(results: str | Path) -> Predictions | None:
    """The predictions of a results folder (or its results.sqlite); None when it stores none."""
    database = database_path(results)
    if not database.exists():
        raise DataError(f"{database}: no results database here (run a suite first)")
    # read-only, as every reading command opens the store: it never writes, and works in a read-only folder
    with ResultsStore(database, read_only=True) as store:
        if "predictions" not in store.tables():
            return None
        columns = ", ".join(f"r.{c}" for c in _KEY_COLUMNS)
        index = store.query(
            f"SELECT p.record_key, p.test_set, p.probs, {columns} FROM predictions p "
            "JOIN records r ON r.record_key = p.record_key ORDER BY r.rowid"
        )
        test_sets = store.query("SELECT * FROM test_sets")
    if index.empty:
        return None
    root = database.parent / PREDICTIONS_DIR
    return Predictions(root, index, test_sets, read_subgroup_tables(root, list(test_sets["test_set"])))


def storage_bytes(results: str | Path) -> dict[str, int]:
    """Bytes on disk of the prediction files: probabilities, test sets, and the number of each."""
    root = Path(results) / PREDICTIONS_DIR
    probs = [p for p in (root / "probs").rglob("*.npy")] if (root / "probs").exists() else []
    cases = [p for p in (root / "cases").glob("*.npz")] if (root / "cases").exists() else []
    return {
        "probs_bytes": sum(p.stat().st_size for p in probs),
        "probs_files": len(probs),
        "cases_bytes": sum(p.stat().st_size for p in cases),
        "cases_files": len(cases),
    }


def case_set_of(split, labels: np.ndarray, task: str, role: str) -> CaseSet:
    """The test set of a split (SplitData): its ids, group ids and the labels as scored."""
    groups = getattr(split, "groups", None)
    return CaseSet(np.asarray(split.ids).astype(str), np.asarray(groups if groups is not None else split.ids).astype(str),
                   np.asarray(labels), task, role, dict(split.subgroups))


__all__: Sequence[str] = (
    "CaseSet", "PredictionFiles", "Predictions", "load_predictions", "storage_bytes", "probability_hash",
    "index_statements", "case_set_of",
)
