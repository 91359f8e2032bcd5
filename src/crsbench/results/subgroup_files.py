"""The subgroup attributes of a test set beside its predictions: `<output>/predictions/subgroups/<test_set>.csv`.

One row per case: `case_id`, then one column per attribute (sex, age band, site, view, ...), every value
text. Keyed by the test set's id and the case ids only, so the file enters no record key, test-set id or
dataset fingerprint: a store scored before attributes existed keeps every key when they are added, and a
run that changes them rewrites this file alone (atomically). Reading is bounded (MAX_BYTES) and checked:
the header, one row per case id, no repeated case.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.core.atomic import atomic_write
from crsbench.datasets.subgroups import UNKNOWN
from crsbench.errors import DataError

SUBGROUPS_DIR = "subgroups"
CASE_COLUMN = "case_id"
MAX_BYTES = 256 * 1024 * 1024  # a subgroup table larger than this is not one a test set needs


def subgroup_table(cases) -> pd.DataFrame:
    """A CaseSet's attributes as the stored table: case_id, then the attributes in sorted order."""
    columns = {CASE_COLUMN: np.asarray(cases.case_id).astype(str)}
    columns.update({name: np.asarray(cases.subgroups[name]).astype(str) for name in sorted(cases.subgroups)})
    return pd.DataFrame(columns)


def subgroup_path(predictions_root: Path, test_set: str) -> Path:
    return Path(predictions_root) / SUBGROUPS_DIR / f"{test_set}.csv"


def _csv_bytes(table: pd.DataFrame) -> bytes:
    return table.to_csv(index=False, lineterminator="\n").encode("utf-8")


def write_subgroup_table(predictions_root: Path, test_set: str, cases) -> bool:
    """Write a test set's attributes when it has any and they differ from what is stored; True when written."""
    if not cases.subgroups:
        return False
    content = _csv_bytes(subgroup_table(cases))
    path = subgroup_path(predictions_root, test_set)
    if path.is_file() and path.read_bytes() == content:
        return False
    atomic_write(path, lambda out: out.write(content))
    return True


def read_subgroup_table(path: Path) -> pd.DataFrame:
    """One stored table, checked: bounded size, a case_id column first, no repeated case id."""
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise DataError(f"{path}: {size:,} bytes, above the {MAX_BYTES:,} a subgroup table may hold")
    try:
        table = pd.read_csv(io.BytesIO(path.read_bytes()), dtype=str, keep_default_na=False)
    except (ValueError, UnicodeDecodeError) as error:
        raise DataError(f"{path}: not a readable subgroup table ({error})") from None
    if list(table.columns[:1]) != [CASE_COLUMN] or len(table.columns) < 2:
        raise DataError(f"{path}: expected a '{CASE_COLUMN}' column first and at least one attribute column")
    repeated = table[CASE_COLUMN].duplicated()
    if repeated.any():
        raise DataError(f"{path} line {int(np.flatnonzero(repeated)[0]) + 2}: case id "
                        f"{table[CASE_COLUMN][repeated].iloc[0]!r} listed twice")
    return table


def read_subgroup_tables(predictions_root: Path, test_sets: list[str]) -> dict[str, pd.DataFrame]:
    """The stored tables of these test sets (those that have one)."""
    out = {}
    for test_set in test_sets:
        path = subgroup_path(predictions_root, test_set)
        if path.is_file():
            out[test_set] = read_subgroup_table(path)
    return out


def aligned_attributes(table: pd.DataFrame, case_ids: np.ndarray) -> dict[str, np.ndarray]:
    """attribute -> subgroup per case in `case_ids`' order; a case the table lacks is UNKNOWN."""
    indexed = table.set_index(CASE_COLUMN)
    positions = indexed.index.get_indexer(np.asarray(case_ids).astype(str))
    out = {}
    for column in indexed.columns:
        picked = np.full(len(positions), UNKNOWN, dtype=object)
        found = positions >= 0
        picked[found] = indexed[column].to_numpy(dtype=object)[positions[found]]
        out[str(column)] = picked.astype(str)
    return out


def subgroup_digest(tables: dict[str, pd.DataFrame]) -> bytes:
    """What a score's fingerprint reads of the stored attributes (scoring.inputs.inputs_key)."""
    return b"".join(test_set.encode() + _csv_bytes(tables[test_set]) for test_set in sorted(tables))
