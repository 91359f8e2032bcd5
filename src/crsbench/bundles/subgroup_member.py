"""The optional subgroup member of a bundle: each case's patient attributes, per test set.

    predictions/subgroups/<test_set>.parquet   case_id, then one text column per attribute (sex, age_band, ...)

Per-case attributes are quasi-identifiers, and some datasets' terms forbid passing them on (MIMIC-CXR's
credentialed-access agreement), so a bundle carries them only when written with `crsbench bundle
--with-subgroups`. Read as untrusted as every other member: the test set must be one the bundle holds, the
columns text, at most `Limits.attributes` of them with names and values of at most `Limits.name_chars`
printable characters, at most `Limits.subgroups` distinct values an attribute, and exactly one row per case
of the test set, no case twice and none the test set lacks.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa

from crsbench.bundles.manifest import Limits
from crsbench.core.printable import printable
from crsbench.results.subgroup_files import CASE_COLUMN

DIRECTORY = "predictions/subgroups/"
_MEMBER = re.compile(r"^predictions/subgroups/([^/]+)\.parquet$")


def member_name(test_set: str) -> str:
    return f"{DIRECTORY}{test_set}.parquet"


def member_test_set(name: str) -> str | None:
    """The test set a subgroup member names; None for a member outside the subgroup folder. A name inside
    it that is not `<test_set>.parquet` is refused (ValueError)."""
    if not name.startswith(DIRECTORY):
        return None
    found = _MEMBER.match(name)
    if found is None:
        raise ValueError(f"{printable(name)[:80]}: not a subgroup member (expected {DIRECTORY}<test set>.parquet)")
    return found.group(1)


def arrow_table(table: pd.DataFrame) -> pa.Table:
    """The stored subgroup table (results.subgroup_files) as the member's columns, every one text."""
    return pa.table({str(c): pa.array(table[c].astype(str).tolist(), pa.string()) for c in table.columns})


def _text_values(values: np.ndarray) -> np.ndarray:
    return np.asarray([str(v) for v in values], dtype=object)


def checked_table(table: pd.DataFrame, name: str, case_ids: np.ndarray, limits: Limits) -> pd.DataFrame:
    """The member's table once it holds `case_ids` exactly (any order) and bounded, printable attributes;
    ValueError naming the member, the column and the value otherwise."""
    if table.columns[0] != CASE_COLUMN or len(table.columns) < 2:
        raise ValueError(f"{name}: expected a {CASE_COLUMN!r} column first and at least one attribute column")
    attributes = list(table.columns[1:])
    if len(attributes) > limits.attributes:
        raise ValueError(f"{name}: {len(attributes)} attributes, more than the {limits.attributes} a test set may carry")
    for column in table.columns:
        values = table[column]
        if values.isna().any():
            raise ValueError(f"{name}: a null {printable(column)[:40]} in row {int(np.argmax(values.isna().to_numpy()))}")
    for text in [*attributes, *(v for c in attributes for v in pd.unique(table[c]))]:
        if len(text) > limits.name_chars or printable(text) != text:
            raise ValueError(f"{name}: attribute name or value '{printable(text)[:60]}': "
                             f"{'over ' + str(limits.name_chars) + ' characters' if len(text) > limits.name_chars else 'a control or invisible character'}")
    for column in attributes:
        distinct = table[column].nunique()
        if distinct > limits.subgroups:
            raise ValueError(f"{name}: attribute '{printable(column)[:40]}' has {distinct} values, more than the "
                             f"{limits.subgroups} subgroups an attribute may have")
    ids = table[CASE_COLUMN]
    twice = ids[ids.duplicated()]
    if len(twice):
        raise ValueError(f"{name}: case id '{printable(twice.iloc[0])[:40]}' twice")
    held = set(_text_values(case_ids))
    stray = [c for c in ids if c not in held]
    if stray:
        raise ValueError(f"{name}: case id '{printable(stray[0])[:40]}', a case its test set lacks")
    return table.reset_index(drop=True)

