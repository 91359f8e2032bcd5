"""Reading a bundle from an untrusted source: nothing in it is ever executed, unpickled or written to
disk, and it is refused, naming the file, unless every check passes.

Before any content is read: a zip (not encrypted), at most `Limits.members` members, each name relative
and plain (no `..`, no absolute or drive path, no backslash), no name twice, each member and all of them
together within the size limits, and no member compressed past the ratio a zip bomb needs. Then: the
manifest lists exactly the files present, each file's SHA-256 and size match it, its counts match the
tables, every record validates as a RunRecord, every test set hashes to its name, every probability
vector hashes to its name and has its test set's shape, and every record's AUROC recomputed from its
probabilities equals the stored AUROC (a swapped or edited prediction file fails here even when the
manifest was rewritten to match it).
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from crsbench.bundles.content import Bundle
from crsbench.bundles.vectors import VectorSink, stream_vectors, vector_digests
from crsbench.bundles.manifest import DEFAULT_LIMITS, FORMAT, FORMAT_VERSION, MANIFEST, MEMBER_NAME, Limits, bundle_id
from crsbench.core.printable import printable
from crsbench.errors import DataError
from crsbench.results.predictions import CaseSet
from crsbench.results.records import RECORD_FIELDS, to_record

AUROC_TOLERANCE = 1e-9  # beyond the ties float32 rounding may make (_tie_slack): summation order only


class BundleError(DataError):
    """A bundle that cannot be trusted or read: the message names the bundle and the file inside it."""


def _members(archive: zipfile.ZipFile, where: str, limits: Limits) -> dict[str, zipfile.ZipInfo]:
    infos = archive.infolist()
    if len(infos) > limits.members:
        raise BundleError(f"{where}: {len(infos)} files, more than the {limits.members} a bundle may hold")
    members: dict[str, zipfile.ZipInfo] = {}
    total = 0
    for info in infos:
        name = info.filename
        if not MEMBER_NAME.match(name) or ".." in name.split("/"):
            raise BundleError(f"{where}: {name!r}: not a plain relative file name (path traversal refused)")
        if name in members:
            raise BundleError(f"{where}: {name}: stored twice")
        if info.flag_bits & 0x1:
            raise BundleError(f"{where}: {name}: encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise BundleError(f"{where}: {name}: compression method {info.compress_type} not accepted")
        if info.file_size > limits.member_bytes:
            raise BundleError(f"{where}: {name}: {info.file_size} bytes, over the {limits.member_bytes}-byte limit")
        if info.file_size > 1 << 20 and info.file_size > limits.ratio * max(info.compress_size, 1):
            raise BundleError(f"{where}: {name}: compressed {info.file_size / max(info.compress_size, 1):.0f}:1, "
                              "refused as a possible zip bomb")
        total += info.file_size
        if total > limits.total_bytes:
            raise BundleError(f"{where}: more than {limits.total_bytes} bytes uncompressed in all")
        members[name] = info
    return members


def _read(archive: zipfile.ZipFile, info: zipfile.ZipInfo, where: str) -> bytes:
    """The member's bytes, never more than its declared size (a lying header is caught here or by zipfile's CRC)."""
    with archive.open(info) as handle:
        data = handle.read(info.file_size + 1)
    if len(data) != info.file_size:
        raise BundleError(f"{where}: {info.filename}: holds {len(data)} bytes, its header says {info.file_size}")
    return data


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)


def json_depth(data: bytes) -> int:
    """How deep the brackets of JSON text nest (strings skipped), counted without recursion: Python's
    parser recurses once per level and a hostile file would exhaust the stack before any check ran."""
    bare = np.frombuffer(_STRING.sub(b'""', data), dtype=np.uint8)
    step = np.isin(bare, (0x5B, 0x7B)).astype(np.int64) - np.isin(bare, (0x5D, 0x7D))
    return int(np.cumsum(step).max(initial=0))


def _json(data: bytes, name: str, where: str, limits: Limits) -> Any:
    if len(data) > limits.json_bytes:
        raise BundleError(f"{where}: {name}: {len(data)} bytes, over the {limits.json_bytes}-byte JSON limit")
    depth = json_depth(data)
    if depth > limits.json_depth:
        raise BundleError(f"{where}: {name}: JSON nested {depth} levels deep, over the {limits.json_depth}-level limit")
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise BundleError(f"{where}: {name}: not valid JSON ({exc.__class__.__name__}: {_first_line(exc)})") from None


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0][:120] if str(exc) else exc.__class__.__name__


def _table(data: bytes, name: str, where: str) -> pd.DataFrame:
    table = _parquet(data, name, where)
    try:
        return table.to_pandas()
    except Exception as exc:  # a nested or exotic column pandas cannot hold
        raise BundleError(f"{where}: {name}: not a readable Parquet table ({exc.__class__.__name__})") from None


def _need(frame: pd.DataFrame, columns, name: str, where: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise BundleError(f"{where}: {name}: lacks column(s) {missing}")


class _Members:
    """The members of an open bundle, read when asked: small ones whole, the vectors as a seekable stream."""

    def __init__(self, archive: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo], where: str):
        self.archive, self.members, self.where = archive, members, where

    def __contains__(self, name: str) -> bool:
        return name in self.members

    def __getitem__(self, name: str) -> bytes:
        return _read(self.archive, self.members[name], self.where)

    def open(self, name: str):
        return self.archive.open(self.members[name])


def _digest(archive: zipfile.ZipFile, info: zipfile.ZipInfo, where: str) -> tuple[int, str]:
    """A member's size and SHA-256, read in chunks (never more than its declared size and one chunk)."""
    digest, size = hashlib.sha256(), 0
    with archive.open(info) as handle:
        while size <= info.file_size:
            chunk = handle.read(1 << 20)
            if not chunk:
                break
            size += len(chunk)
            digest.update(chunk)
    if size != info.file_size:
        raise BundleError(f"{where}: {info.filename}: holds {size} bytes, its header says {info.file_size}")
    return size, digest.hexdigest()


def read_bundle(path: str | Path, *, expected_id: str | None = None, limits: Limits = DEFAULT_LIMITS,
                keep_predictions: bool = True) -> Bundle:
    """The verified content of a bundle file; `expected_id`: the id it was published under (a prefix is
    enough). Members are read by streaming: each file hashed in chunks, the probability vectors one row
    group at a time; `keep_predictions=False` checks every vector and keeps none (what `verify` needs)."""
    path = Path(path)
    where = str(path)
    if not path.is_file():
        raise BundleError(f"{where}: no such bundle file")
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise BundleError(f"{where}: not a bundle (not a zip file: {exc})") from None
    with archive:
        members = _members(archive, where, limits)
        if MANIFEST not in members:
            raise BundleError(f"{where}: {MANIFEST}: missing")
        try:
            identity, manifest = _manifest(archive, members, where, limits, expected_id)
            sink = VectorSink(keep_predictions, limits.memory_bytes)
            bundle = _parse(_Members(archive, members, where), manifest, where, limits, sink)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as exc:
            raise BundleError(f"{where}: damaged zip ({exc})") from None
        except RecursionError:  # a nested Parquet column or record field the checks above did not reach
            raise BundleError(f"{where}: nested too deeply to read") from None
    bundle.source, bundle.bundle_id = path.name, identity
    return bundle


def _manifest(archive: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo], where: str, limits: Limits,
              expected_id: str | None) -> tuple[str, dict]:
    """The bundle id and the manifest, once it lists exactly the members and each one's size and hash."""
    manifest_bytes = _read(archive, members[MANIFEST], where)
    identity = bundle_id(manifest_bytes)
    if expected_id and not identity.startswith(expected_id):
        raise BundleError(f"{where}: {MANIFEST}: bundle id {identity[:16]} is not the expected {expected_id}")
    manifest = _json(manifest_bytes, MANIFEST, where, limits)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BundleError(f"{where}: {MANIFEST}: not a {FORMAT} manifest")
    version = manifest.get("format_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
        raise BundleError(f"{where}: {MANIFEST}: bundle format {version} is newer than the {FORMAT_VERSION} this "
                          f"crsbench reads (written by {printable(str(manifest.get('written_by', 'a later version')))[:60]}); "
                          "upgrade crsbench to read it")
    if version != FORMAT_VERSION:
        raise BundleError(f"{where}: {MANIFEST}: format_version {printable(repr(version))[:40]}; this version reads {FORMAT_VERSION}")
    listed = manifest.get("files")
    if not isinstance(listed, dict):
        raise BundleError(f"{where}: {MANIFEST}: no file list")
    present = set(members) - {MANIFEST}
    for name in sorted(present - set(listed)):
        raise BundleError(f"{where}: {name}: not listed in the manifest (an extra file)")
    for name in sorted(set(listed) - present):
        raise BundleError(f"{where}: {printable(name)[:80]}: listed in the manifest but missing")
    for name in sorted(present):
        entry = listed[name] if isinstance(listed[name], dict) else {}
        if (entry.get("bytes"), entry.get("sha256")) != _digest(archive, members[name], where):
            raise BundleError(f"{where}: {name}: content does not match its manifest hash (edited or damaged)")
    return identity, manifest


def _parse(raw: _Members, manifest: dict, where: str, limits: Limits, sink: VectorSink) -> Bundle:
    for required in ("records.parquet", "predictions/index.parquet", "predictions/test_sets.parquet",
                     "suites.json", "runs.json", "datasets.json", "encoders.json"):
        if required not in raw:
            raise BundleError(f"{where}: {required}: missing")
    records = _table(raw["records.parquet"], "records.parquet", where)
    _need(records, RECORD_FIELDS, "records.parquet", where)
    records = records[list(RECORD_FIELDS)]
    records = records.astype(object).where(records.notna(), None)
    for row in records.to_dict(orient="records"):
        try:
            to_record(row)
        except RecursionError:
            raise BundleError(f"{where}: records.parquet: record {printable(str(row.get('record_key')))[:40]!r}: "
                              "a list field nested too deeply to read") from None
        except (DataError, ValueError) as exc:  # ValueError: a list field's JSON text
            raise BundleError(f"{where}: records.parquet: record {printable(str(row.get('record_key')))[:40]!r}: "
                              f"{_first_line(exc)}") from None
    _finite_metrics(records, where)
    if records["record_key"].duplicated().any():
        raise BundleError(f"{where}: records.parquet: record_key {records['record_key'][records['record_key'].duplicated()].iloc[0]!r} twice")
    records = _typed(records)
    index = _table(raw["predictions/index.parquet"], "predictions/index.parquet", where)
    _need(index, ("record_key", "test_set", "probs"), "predictions/index.parquet", where)
    test_sets = _table(raw["predictions/test_sets.parquet"], "predictions/test_sets.parquet", where)
    _need(test_sets, ("test_set", "task", "role", "n_cases", "n_clusters"), "predictions/test_sets.parquet", where)
    cases, home = {}, {}
    for row in test_sets.itertuples():
        cases[row.test_set] = _cases(raw, row, where)
        name = f"predictions/probs/{row.test_set}.parquet"
        if name not in raw:
            raise BundleError(f"{where}: {name}: missing")
        with raw.open(name) as handle:
            home.update(dict.fromkeys(vector_digests(handle, name, where, BundleError), row.test_set))
    strays = index[index["probs"].map(home).fillna(index["test_set"]) != index["test_set"]]
    if len(strays):
        row = strays.iloc[0]
        raise BundleError(f"{where}: predictions/index.parquet: record {row['record_key']!r} points at a vector of "
                          f"test set {home[row['probs']]!r}, not of its own {row['test_set']!r} (swapped or edited)")
    unknown = set(index["record_key"]) - set(records["record_key"])
    if unknown:
        raise BundleError(f"{where}: predictions/index.parquet: names record {sorted(unknown)[0]!r}, not in records.parquet")
    for name, values in (("test_set", cases), ("probs", home)):
        absent = set(index[name]) - set(values)
        if absent:
            raise BundleError(f"{where}: predictions/index.parquet: {name} {sorted(absent)[0]!r} has no file")
    contents = manifest.get("contents") or {}
    counts = {"records": len(records), "predictions": len(index), "test_sets": len(cases),
              "vectors": int(index["probs"].nunique()) if len(index) else 0}
    for key, n in counts.items():
        if contents.get(key) != n:
            raise BundleError(f"{where}: {MANIFEST}: says {contents.get(key)!r} {key}, the bundle holds {n}")
    for key in ("encoders", "tasks"):
        held = sorted(records[key[:-1]].astype(str).unique())
        if contents.get(key) != held:
            raise BundleError(f"{where}: {MANIFEST}: lists {key} {contents.get(key)!r}, the records hold {held}")
    for row in test_sets.itertuples():  # the vectors, one row group at a time, each checked as it comes
        name = f"predictions/probs/{row.test_set}.parquet"
        mine = index[index["test_set"] == row.test_set]

        def check(vectors: dict, mine=mine) -> None:
            _check_auroc(records, mine[mine["probs"].isin(list(vectors))], cases, vectors, where)

        with raw.open(name) as handle:
            stream_vectors(handle, name, where, len(cases[row.test_set].case_id), BundleError, check, sink)
    probabilities = sink.vectors()
    facts = {k: v for k, v in manifest.items() if k not in ("format", "format_version", "contents", "files")}
    return Bundle(records, index.reset_index(drop=True), test_sets.reset_index(drop=True), cases, probabilities,
                  _json(raw["runs.json"], "runs.json", where, limits), _json(raw["datasets.json"], "datasets.json", where, limits),
                  _json(raw["suites.json"], "suites.json", where, limits), _json(raw["encoders.json"], "encoders.json", where, limits),
                  facts)


def _finite_metrics(records: pd.DataFrame, where: str) -> None:
    """Every number a record holds is finite or absent (null): an infinite AUROC or loss would pass
    scoring's arithmetic and print as a rank."""
    from crsbench.results.records import RECORD_COLUMNS

    for name, kind in RECORD_COLUMNS:
        if kind not in ("INTEGER", "REAL"):
            continue
        values = pd.to_numeric(records[name], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        infinite = np.isinf(values)
        if infinite.any():
            key = records["record_key"].iloc[int(np.argmax(infinite))]
            raise BundleError(f"{where}: records.parquet: record {printable(str(key))[:40]!r}: {name} is "
                              f"{values[infinite][0]}, not a finite number")


def _typed(records: pd.DataFrame) -> pd.DataFrame:
    """Numbers as numbers (the columns scoring reads), text as text: as the results store reads them."""
    from crsbench.results.records import RECORD_COLUMNS

    out = records.copy()
    for name, kind in RECORD_COLUMNS:
        if kind in ("INTEGER", "REAL") and out[name].notna().any():
            out[name] = pd.to_numeric(out[name])
    return out


def _cases(raw: dict[str, bytes], row, where: str) -> CaseSet:
    name = f"predictions/cases/{row.test_set}.parquet"
    if name not in raw:
        raise BundleError(f"{where}: {name}: missing")
    table = _table(raw[name], name, where)
    _need(table, ("case_id", "cluster"), name, where)
    if "label" in table.columns:
        labels = table["label"].to_numpy()
    else:
        columns = sorted((c for c in table.columns if c.startswith("label_")), key=lambda c: int(c.split("_")[1]))
        if not columns:
            raise BundleError(f"{where}: {name}: no label column")
        labels = np.stack([table[c].to_numpy() for c in columns], axis=1)
    _check_labels(labels, name, where)
    cases = _named_case_set(table["case_id"].to_numpy().astype(str), table["cluster"].to_numpy().astype(str),
                            labels, row)
    if cases is None or len(cases.case_id) != row.n_cases:
        raise BundleError(f"{where}: {name}: its case ids, clusters or labels do not hash to its name (edited)")
    return cases


# the text widths numpy gives integer ids turned into text (int8, int16, int32, uint64, int64): a test set's
# name hashes its arrays with their dtype, and ids written as text keep the width they were made with
_INTEGER_TEXT_WIDTHS = (4, 6, 11, 20, 21)


def _named_case_set(case_id: np.ndarray, cluster: np.ndarray, labels: np.ndarray, row) -> CaseSet | None:
    """The case set whose identity is the test set's name, the id columns at their own width or at the
    width integer ids turned into text have; None where none is."""
    def widths(values: np.ndarray) -> list[np.ndarray]:
        own = values.dtype.itemsize // 4
        return [values] + [values.astype(f"<U{w}") for w in _INTEGER_TEXT_WIDTHS if w > own]

    for ids in widths(case_id):
        for clusters in widths(cluster):
            cases = CaseSet(ids, clusters, labels, str(row.task), str(row.role))
            if cases.identity() == row.test_set:
                return cases
    return None


def _check_labels(labels: np.ndarray, name: str, where: str) -> None:
    """Class indices (one column), or 0/1 with NaN where a label is masked (one column per label, the
    multi-label convention of docs/records.md); nothing else."""
    values = np.asarray(labels, dtype=np.float64) if labels.dtype.kind in "biuf" else None
    if values is None:
        raise BundleError(f"{where}: {name}: labels of type {labels.dtype}, not numbers")
    if np.isinf(values).any():
        raise BundleError(f"{where}: {name}: an infinite label")
    if values.ndim == 1 and np.isnan(values).any():
        raise BundleError(f"{where}: {name}: a NaN label in a single-label test set (only multi-label masks labels)")
    seen = values[~np.isnan(values)]
    if (seen < 0).any() or (seen != np.round(seen)).any() or (values.ndim == 2 and (seen > 1).any()):
        raise BundleError(f"{where}: {name}: labels must be class indices, or 0/1 per label")


def _parquet(data: bytes, name: str, where: str):
    try:
        return pq.read_table(io.BytesIO(data))
    except Exception as exc:  # pyarrow raises many kinds for a damaged file; none is a bug of ours
        raise BundleError(f"{where}: {name}: not a readable Parquet table ({exc.__class__.__name__}: "
                          f"{printable(_first_line(exc))})") from None


def _tie_slack(task_type: str, labels: np.ndarray, proba: np.ndarray) -> float:
    """How far the AUROC of the stored float32 probabilities may sit from the record's (computed in float64):
    rounding is monotone, so only scores it tied can swap order, each positive-negative pair it tied moving
    a class's AUROC by at most half a pair. The largest such share over the classes bounds the macro mean."""
    worst = 0.0
    for j in range(proba.shape[1]):
        if task_type == "multi_label":
            y = labels[:, j]
            seen = ~np.isnan(y)
            positive, scores = y[seen] == 1, proba[seen, j]
        else:
            positive, scores = labels == j, proba[:, j]
        n_pos, n_neg = int(positive.sum()), int((~positive).sum())
        if not n_pos or not n_neg:
            continue
        _, tie = np.unique(scores, return_inverse=True)
        tied = float(np.dot(np.bincount(tie, weights=positive), np.bincount(tie, weights=~positive)))
        worst = max(worst, 0.5 * tied / (n_pos * n_neg))
    return worst


def _check_auroc(records: pd.DataFrame, index: pd.DataFrame, cases: dict, probabilities: dict, where: str) -> None:
    """Each record's stored AUROC from its own predictions: catches predictions moved between records."""
    from crsbench.metrics import classification as metrics

    rows = index.merge(records[["record_key", "task_type", "auroc"]], on="record_key")
    done: dict[tuple[str, str, str], float] = {}
    slack: dict[tuple[str, str, str], float] = {}
    for row in rows.itertuples():
        if row.auroc is None or pd.isna(row.auroc):
            continue
        key = (row.probs, row.test_set, str(row.task_type))
        if key not in done:
            try:
                done[key] = metrics.auroc_macro(row.task_type, cases[row.test_set].labels,
                                                probabilities[row.probs].astype(np.float64))
            except ValueError as exc:
                raise BundleError(f"{where}: predictions/probs/{row.test_set}.parquet: vector {row.probs!r}: {exc}") from None
        auroc = done[key]
        if abs(auroc - float(row.auroc)) > AUROC_TOLERANCE and key not in slack:  # rare: only then count the ties
            slack[key] = _tie_slack(str(row.task_type), np.asarray(cases[row.test_set].labels),
                                    probabilities[row.probs].astype(np.float64))
        if not abs(auroc - float(row.auroc)) <= slack.get(key, 0.0) + AUROC_TOLERANCE:
            raise BundleError(f"{where}: records.parquet and predictions/index.parquet disagree: record "
                              f"{row.record_key!r} says AUROC {float(row.auroc):.6f}, its predictions give "
                              f"{auroc:.6f} (a record or its predictions edited or swapped)")
