"""A bundle value to bytes: Parquet tables and canonical JSON in a zip whose every byte is decided by the
content (fixed timestamps and permissions, sorted entries, no Parquet metadata but the schema), so the
same results give the same bundle, and a bundle read back and written again is byte-identical.

    records.parquet                      the run records (docs/records.md)
    predictions/index.parquet            record_key -> test_set, probs (the probability hash)
    predictions/test_sets.parquet        test_set, task, role, n_cases, n_clusters
    predictions/cases/<test_set>.parquet case_id, cluster, label (or label_0 .. label_{L-1})
    predictions/probs/<test_set>.parquet probs, values (the n x k probabilities, row-major, float32)
    predictions/subgroups/<test_set>.parquet case_id and each attribute (only when the bundle carries them)
    suites.json, runs.json, datasets.json, encoders.json
    manifest.json                        versions, what the bundle holds, every file's SHA-256 and size
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from crsbench.core.atomic import atomic_write
from crsbench.bundles.content import Bundle
from crsbench.bundles import subgroup_member
from crsbench.bundles.vectors import ROW_GROUP_BYTES
from crsbench.bundles.manifest import MANIFEST, bundle_id, json_bytes, manifest_value
from crsbench.results.records import RECORD_COLUMNS

_ARROW = {"TEXT": pa.string(), "INTEGER": pa.int64(), "REAL": pa.float64(), "TEXT PRIMARY KEY": pa.string()}
_CAST = {"TEXT": str, "INTEGER": int, "REAL": float, "TEXT PRIMARY KEY": str}
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest a zip can say: no clock enters the bytes


def _array(values, kind: str) -> pa.Array:
    cast = _CAST[kind]
    return pa.array([None if v is None or (isinstance(v, float) and np.isnan(v)) else cast(v) for v in values],
                    type=_ARROW[kind])


def parquet_bytes(table: pa.Table, row_group_size: int | None = None) -> bytes:
    sink = io.BytesIO()
    table = table.replace_schema_metadata(None)  # no pandas metadata: nothing but the columns decides the bytes
    text = [f.name for f in table.schema if pa.types.is_string(f.type)]  # floats gain nothing from a dictionary
    pq.write_table(table, sink, compression="zstd", compression_level=9, use_dictionary=text,
                   write_statistics=False, store_schema=False, row_group_size=row_group_size)
    return sink.getvalue()


def _vector_rows_per_group(table: pa.Table) -> int:
    """Vectors per row group: about ROW_GROUP_BYTES of float32, the unit a reader holds at once."""
    if not table.num_rows:
        return 1
    per_vector = 4 * max(1, len(table["values"][0]))
    return max(1, ROW_GROUP_BYTES // per_vector)


def _records_table(records: pd.DataFrame) -> pa.Table:
    columns = {name: _array(records[name].tolist() if name in records else [None] * len(records), kind)
               for name, kind in RECORD_COLUMNS}
    return pa.table(columns)


def _frame_table(frame: pd.DataFrame, kinds: dict[str, str]) -> pa.Table:
    return pa.table({name: _array(frame[name].tolist(), kind) for name, kind in kinds.items()})


def _case_table(cases) -> pa.Table:
    columns = {"case_id": pa.array(cases.case_id.astype(str).tolist(), pa.string()),
               "cluster": pa.array(cases.cluster.astype(str).tolist(), pa.string())}
    labels = np.asarray(cases.labels)
    if labels.ndim == 1:
        columns["label"] = pa.array(labels)
    else:
        for j in range(labels.shape[1]):
            columns[f"label_{j}"] = pa.array(np.ascontiguousarray(labels[:, j]))
    return pa.table(columns)


def _probability_table(digests: list[str], probabilities: dict[str, np.ndarray]) -> pa.Table:
    values = [np.ascontiguousarray(probabilities[d], dtype=np.float32) for d in digests]
    return pa.table({
        "probs": pa.array(digests, pa.string()),
        "k": pa.array([int(v.shape[1]) for v in values], pa.int64()),
        "values": pa.array([v.reshape(-1) for v in values], pa.list_(pa.float32())),
    })


INDEX_KINDS = {"record_key": "TEXT", "test_set": "TEXT", "probs": "TEXT"}
TEST_SET_KINDS = {"test_set": "TEXT", "task": "TEXT", "role": "TEXT", "n_cases": "INTEGER", "n_clusters": "INTEGER"}


def bundle_files(bundle: Bundle) -> dict[str, bytes]:
    """Every file of the bundle by member name, the manifest included."""
    files = {
        "records.parquet": parquet_bytes(_records_table(bundle.records)),
        "predictions/index.parquet": parquet_bytes(_frame_table(bundle.index, INDEX_KINDS)),
        "predictions/test_sets.parquet": parquet_bytes(_frame_table(bundle.test_sets, TEST_SET_KINDS)),
        "suites.json": json_bytes(bundle.suites),
        "runs.json": json_bytes(bundle.runs),
        "datasets.json": json_bytes(bundle.datasets),
        "encoders.json": json_bytes(bundle.encoders),
    }
    for test_set in sorted(bundle.cases):
        files[f"predictions/cases/{test_set}.parquet"] = parquet_bytes(_case_table(bundle.cases[test_set]))
        digests = sorted(set(bundle.index.loc[bundle.index["test_set"] == test_set, "probs"]))
        vectors = _probability_table(digests, bundle.probabilities)
        files[f"predictions/probs/{test_set}.parquet"] = parquet_bytes(vectors, _vector_rows_per_group(vectors))
    carried = sorted(t for t in bundle.subgroups if t in bundle.cases)
    for test_set in carried:
        files[subgroup_member.member_name(test_set)] = parquet_bytes(subgroup_member.arrow_table(bundle.subgroups[test_set]))
    contents = {
        "records": int(len(bundle.records)),
        "predictions": int(len(bundle.index)),
        "test_sets": int(len(bundle.cases)),
        "vectors": int(bundle.index["probs"].nunique()) if len(bundle.index) else 0,
        "encoders": sorted(bundle.records["encoder"].astype(str).unique()),
        "tasks": sorted(bundle.records["task"].astype(str).unique()),
    }
    if carried:  # only then: a bundle without subgroups keeps the bytes (and the id) it had before they existed
        contents["subgroup_sets"] = len(carried)
    files[MANIFEST] = json_bytes(manifest_value(files, contents, bundle.facts))
    return files


def zip_bytes_to(out, files: dict[str, bytes]) -> None:
    """The zip of `files`: the manifest first, then every other member by name."""
    names = [MANIFEST] + sorted(n for n in files if n != MANIFEST)
    with zipfile.ZipFile(out, "w") as archive:
        for name in names:
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED if name.endswith(".json") else zipfile.ZIP_STORED
            info.create_system = 3  # what the permissions below mean, whatever system wrote it
            info.external_attr = 0o644 << 16
            archive.writestr(info, files[name], compresslevel=9 if name.endswith(".json") else None)


def write_bundle(bundle: Bundle, path: str | Path) -> tuple[Path, str]:
    """Write the bundle to `path` (crash-safe); returns the path and the bundle's id."""
    path = Path(path)
    files = bundle_files(bundle)
    atomic_write(path, lambda out: zip_bytes_to(out, files))
    return path, bundle_id(files[MANIFEST])
