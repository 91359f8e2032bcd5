"""Reading a bundle from an untrusted source: nothing in it is ever executed, unpickled or written to
disk, and it is refused, naming the file, unless every check passes. Every part is checked against the
declared schema (schema.py for the JSON, parquet_schema.py for the tables) before it is used, and every
resource is bounded (manifest.Limits) before it is spent.

Before any content is read: a zip whose end record declares at most `Limits.members` members (core/
bounded_zip.py), each name relative and plain (no `..`, no absolute or drive path, no backslash), no
name twice, no zip feature this reader does not support, each member and all of them together within the
size limits, and no member or whole file compressed past the ratio a zip bomb needs. Then: the manifest
is its format version's model and lists exactly the files present, each file's SHA-256 and size match
it; the JSON members are their models; each table's columns, types, row count and value counts, read
from its footer, are the schema's and agree with the manifest; every record validates as a RunRecord
with possible values and safe names (record_checks.py); every test set hashes to its name, every
probability vector hashes to its name and has its test set's shape, and every record's AUROC recomputed
from its probabilities equals the stored AUROC (a swapped or edited prediction file fails here even when
the manifest was rewritten to match it).
"""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crsbench.bundles import parquet_schema as tables
from crsbench.bundles import schema
from crsbench.bundles import subgroup_member
from crsbench.bundles.content import Bundle
from crsbench.bundles.record_checks import check_names, check_records
from crsbench.bundles.vectors import VectorSink, stream_vectors, vector_digests
from crsbench.bundles.manifest import FORMAT, FORMAT_VERSION, MANIFEST, MEMBER_NAME, Limits, bundle_id, reader_limits
from crsbench.core.bounded_zip import ZipRefused, member_bytes, open_bounded, read_member, unsupported
from crsbench.core.printable import printable
from crsbench.errors import DataError
from crsbench.results.predictions import CaseSet
from crsbench.results.records import RECORD_FIELDS

AUROC_TOLERANCE = 1e-9  # beyond the ties float32 rounding may make (_tie_slack): summation order only


class BundleError(DataError):
    """A bundle that cannot be trusted or read: the message names the bundle and the file inside it."""


WHOLE_RATIO_FROM = 64 << 20  # below this many bytes uncompressed, a bundle's JSON may compress as it likes
VECTOR_MEMBER = re.compile(r"^predictions/probs/[^/]+\.parquet$")


def _members(archive: zipfile.ZipFile, where: str, limits: Limits) -> dict[str, zipfile.ZipInfo]:
    infos = archive.infolist()
    members: dict[str, zipfile.ZipInfo] = {}
    total = 0
    for info in infos:
        name = info.filename
        if not MEMBER_NAME.match(name) or ".." in name.split("/"):
            raise BundleError(f"{where}: {printable(repr(name))[:80]}: not a plain relative file name (path traversal refused)")
        if name in members:
            raise BundleError(f"{where}: {name}: stored twice")
        feature = unsupported(info)
        if feature:
            raise BundleError(f"{where}: {name}: {feature}, a zip feature this reader does not support")
        if info.file_size > limits.member_bytes:
            raise BundleError(f"{where}: {name}: {info.file_size} bytes, over the {limits.member_bytes}-byte limit")
        if info.file_size > 1 << 20 and info.file_size > limits.ratio * max(info.compress_size, 1):
            raise BundleError(f"{where}: {name}: compressed {info.file_size / max(info.compress_size, 1):.0f}:1, "
                              "refused as a possible zip bomb")
        total += info.file_size
        if total > limits.total_bytes:
            raise BundleError(f"{where}: more than {limits.total_bytes} bytes uncompressed in all, over the limit")
        members[name] = info
    on_disk = max(Path(archive.filename).stat().st_size, 1) if archive.filename else 1
    if total > WHOLE_RATIO_FROM and total > limits.whole_ratio * on_disk:
        raise BundleError(f"{where}: {total} bytes uncompressed in a file of {on_disk}, compressed "
                          f"{total / on_disk:.0f}:1 in all, over the {limits.whole_ratio:.0f}:1 limit (a possible zip bomb)")
    return members


def _read(archive: zipfile.ZipFile, info: zipfile.ZipInfo, where: str) -> bytes:
    """The member's bytes, never more than its declared size (a lying header is caught here or by the CRC)."""
    try:
        return member_bytes(archive, info)
    except ZipRefused as exc:
        raise BundleError(f"{where}: {exc}") from None


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


def _table(data: bytes, name: str, where: str, columns, rows: int, limits: Limits, said_by: str = MANIFEST) -> pd.DataFrame:
    """The member as a frame, once its footer declares the schema's columns, `rows` rows and a decoded size
    within the limit."""
    try:
        parquet = tables.open_footer(data, name)
        if callable(columns):
            columns = columns(list(parquet.schema_arrow.names))
        tables.check(parquet, name, columns, rows, said_by=said_by)
        tables.check_decoded_size(parquet, name, limits.table_bytes)
        return parquet.read().to_pandas()
    except tables.TableRefused as exc:
        raise BundleError(f"{where}: {exc}") from None
    except Exception as exc:  # pyarrow raises many kinds for a damaged file; none is a bug of ours
        raise BundleError(f"{where}: {name}: not a readable Parquet table ({exc.__class__.__name__}: "
                          f"{printable(_first_line(exc))})") from None


def _no_nulls(frame: pd.DataFrame, name: str, where: str) -> None:
    for column in frame.columns:
        if frame[column].isna().any():
            raise BundleError(f"{where}: {name}: a null {column} in row {int(np.argmax(frame[column].isna().to_numpy()))}")


def _unique(frame: pd.DataFrame, column: str, name: str, where: str) -> None:
    twice = frame[column][frame[column].duplicated()]
    if len(twice):
        raise BundleError(f"{where}: {name}: {column} {printable(str(twice.iloc[0]))[:40]!r} twice")


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
    try:
        for chunk in read_member(archive, info):
            size += len(chunk)
            digest.update(chunk)
    except ZipRefused as exc:
        raise BundleError(f"{where}: {exc}") from None
    if size != info.file_size:
        raise BundleError(f"{where}: {info.filename}: holds {size} bytes, its header says {info.file_size}")
    return size, digest.hexdigest()


def read_bundle(path: str | Path, *, expected_id: str | None = None, limits: Limits | None = None,
                keep_predictions: bool = True) -> Bundle:
    """The verified content of a bundle file; `expected_id`: the id it was published under (a prefix is
    enough). Members are read by streaming: each file hashed in chunks, the probability vectors one row
    group at a time; `keep_predictions=False` checks every vector and keeps none (what `verify` needs)."""
    path = Path(path)
    where = printable(str(path))
    limits = limits or reader_limits()
    if not path.is_file():
        raise BundleError(f"{where}: no such bundle file")
    try:
        archive = open_bounded(path, limits.members)
    except ZipRefused as exc:
        raise BundleError(f"{where}: {exc}") from None
    except OSError as exc:
        raise BundleError(f"{where}: not a bundle (not a zip file: {exc})") from None
    with archive:
        members = _members(archive, where, limits)
        if MANIFEST not in members:
            raise BundleError(f"{where}: {MANIFEST}: missing")
        try:
            identity, manifest = _manifest(archive, members, where, limits, expected_id)
            sink = VectorSink(keep_predictions, limits.memory_bytes)
            bundle = _parse(_Members(archive, members, where), manifest, where, limits, sink)
        except ZipRefused as exc:
            raise BundleError(f"{where}: {exc}") from None
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as exc:
            raise BundleError(f"{where}: damaged zip ({printable(_first_line(exc))})") from None
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
    if not isinstance(version, int) or isinstance(version, bool) or version not in schema.MANIFESTS:
        raise BundleError(f"{where}: {MANIFEST}: format_version {printable(repr(version))[:40]}; this version reads "
                          f"{', '.join(map(str, schema.MANIFESTS))}")
    try:
        schema.manifest(manifest, limits)
    except schema.SchemaError as exc:
        raise BundleError(f"{where}: {exc}") from None
    listed = manifest["files"]
    present = set(members) - {MANIFEST}
    for name in sorted(present - set(listed)):
        raise BundleError(f"{where}: {name}: not listed in the manifest (an extra file)")
    for name in sorted(set(listed) - present):
        raise BundleError(f"{where}: {printable(name)[:80]}: listed in the manifest but missing")
    for name in sorted(present):
        entry = listed[name]
        if (entry["bytes"], entry["sha256"]) != _digest(archive, members[name], where):
            raise BundleError(f"{where}: {name}: content does not match its manifest hash (edited or damaged)")
    return identity, manifest


def _parse(raw: _Members, manifest: dict, where: str, limits: Limits, sink: VectorSink) -> Bundle:
    for required in ("records.parquet", "predictions/index.parquet", "predictions/test_sets.parquet",
                     "suites.json", "runs.json", "datasets.json", "encoders.json"):
        if required not in raw:
            raise BundleError(f"{where}: {required}: missing")
    contents = manifest["contents"]
    described = _described(raw, where, limits)  # the JSON members, each by its schema, before anything is used
    if contents["records"] > limits.records:
        raise BundleError(f"{where}: {MANIFEST}: {contents['records']} records, over the {limits.records}-record limit")
    if contents["predictions"] > contents["records"] or contents["vectors"] > contents["predictions"]:
        raise BundleError(f"{where}: {MANIFEST}: says {contents['predictions']} predictions for {contents['records']} "
                          f"records and {contents['vectors']} vectors (at most one prediction a record, one vector a prediction)")
    subgroup_members = _subgroup_members(raw, where)
    said = contents.get("subgroup_sets", 0)  # absent in bundles written before subgroups existed
    if said != len(subgroup_members):
        raise BundleError(f"{where}: {MANIFEST}: says {said} subgroup_sets, the bundle holds "
                          f"{len(subgroup_members)}")
    # a test set has two files, and a subgroup member where the bundle carries them
    most_test_sets = max(0, (len(raw.members) - len(_JSON_SCHEMAS) - 3 - len(subgroup_members)) // 2)
    if contents["test_sets"] > most_test_sets:
        raise BundleError(f"{where}: {MANIFEST}: says {contents['test_sets']} test sets; a bundle's files hold at most "
                          f"{most_test_sets}")
    for key, most in (("encoders", limits.encoders), ("tasks", limits.tasks)):
        if len(contents[key]) > most:
            raise BundleError(f"{where}: {MANIFEST}: {len(contents[key])} {key}, more than the {most} a bundle may hold")
    records = _table(raw["records.parquet"], "records.parquet", where, tables.record_columns, contents["records"],
                     limits)
    records = records.reindex(columns=list(RECORD_FIELDS))  # a later column a bundle lacks: null, as in the store
    records = records.astype(object).where(records.notna(), None)
    try:
        check_records(records, limits)
    except ValueError as exc:
        raise BundleError(f"{where}: records.parquet: {exc}") from None
    records = _typed(records)
    index = _table(raw["predictions/index.parquet"], "predictions/index.parquet", where, tables.INDEX,
                   contents["predictions"], limits)
    _no_nulls(index, "predictions/index.parquet", where)
    _unique(index, "record_key", "predictions/index.parquet", where)
    test_sets = _table(raw["predictions/test_sets.parquet"], "predictions/test_sets.parquet", where, tables.TEST_SETS,
                       contents["test_sets"], limits)
    _no_nulls(test_sets, "predictions/test_sets.parquet", where)
    _unique(test_sets, "test_set", "predictions/test_sets.parquet", where)
    _check_test_sets(test_sets, where, limits)
    cases, home = {}, {}
    for row in test_sets.itertuples():
        cases[row.test_set] = _cases(raw, row, where, limits)
        name = f"predictions/probs/{row.test_set}.parquet"
        if name not in raw:
            raise BundleError(f"{where}: {name}: missing")
        with raw.open(name) as handle:
            _vector_footer(handle, name, where, int(row.n_cases), contents["vectors"], limits)
            home.update(dict.fromkeys(vector_digests(handle, name, where, BundleError), row.test_set))
    subgroups = _subgroups(raw, subgroup_members, cases, where, limits)
    strays = index[index["probs"].map(home).fillna(index["test_set"]) != index["test_set"]]
    if len(strays):
        row = strays.iloc[0]
        raise BundleError(f"{where}: predictions/index.parquet: record {printable(row['record_key'])[:40]!r} points at a "
                          f"vector of test set {home[row['probs']]!r}, not of its own {printable(row['test_set'])[:40]!r} "
                          "(swapped or edited)")
    unknown = set(index["record_key"]) - set(records["record_key"])
    if unknown:
        raise BundleError(f"{where}: predictions/index.parquet: names record {printable(sorted(unknown)[0])[:40]!r}, "
                          "not in records.parquet")
    for name, values in (("test_set", cases), ("probs", home)):
        absent = set(index[name]) - set(values)
        if absent:
            raise BundleError(f"{where}: predictions/index.parquet: {name} {printable(sorted(absent)[0])[:40]!r} has no file")
    counts = {"records": len(records), "predictions": len(index), "test_sets": len(cases),
              "vectors": int(index["probs"].nunique()) if len(index) else 0}
    for key, n in counts.items():
        if contents[key] != n:
            raise BundleError(f"{where}: {MANIFEST}: says {contents[key]!r} {key}, the bundle holds {n}")
    for key in ("encoders", "tasks"):
        held = sorted(records[key[:-1]].astype(str).unique())
        if contents[key] != held:
            raise BundleError(f"{where}: {MANIFEST}: lists {key} {printable(contents[key])[:120]}, the records hold "
                              f"{printable(held)[:120]}")
    notes = _names(records, where, limits)
    for row in test_sets.itertuples():  # the vectors, one row group at a time, each checked as it comes
        name = f"predictions/probs/{row.test_set}.parquet"
        mine = index[index["test_set"] == row.test_set]

        def check(vectors: dict, mine=mine) -> None:
            _check_auroc(records, mine[mine["probs"].isin(list(vectors))], cases, vectors, where)

        with raw.open(name) as handle:
            stream_vectors(handle, name, where, len(cases[row.test_set].case_id), BundleError, check, sink,
                           limits.classes)
    probabilities = sink.vectors()
    facts = {k: v for k, v in manifest.items() if k not in ("format", "format_version", "contents", "files")}
    for suite in described["suites.json"]:
        crs = suite["suite"].get("crs")
        if isinstance(crs, dict):
            suite["suite"]["crs"], capped = schema.bounded_crs(crs, limits, f"suite {printable(suite['name'])[:40]}")
            notes += capped
    bundle = Bundle(records, index.reset_index(drop=True), test_sets.reset_index(drop=True), cases, probabilities,
                    described["runs.json"], described["datasets.json"], described["suites.json"],
                    described["encoders.json"], facts, subgroups=subgroups)
    bundle.notes = notes
    return bundle


def _subgroup_members(raw: _Members, where: str) -> dict[str, str]:
    """test set -> its subgroup member's name, for each member under predictions/subgroups/."""
    out = {}
    for name in sorted(raw.members):
        try:
            test_set = subgroup_member.member_test_set(name)
        except ValueError as exc:
            raise BundleError(f"{where}: {exc}") from None
        if test_set is not None:
            out[test_set] = name
    return out


def _subgroups(raw: _Members, members: dict[str, str], cases: dict[str, CaseSet], where: str,
               limits: Limits) -> dict[str, pd.DataFrame]:
    """Each subgroup member, checked against the test set it names (subgroup_member.checked_table)."""
    out = {}
    for test_set, name in members.items():
        if test_set not in cases:
            raise BundleError(f"{where}: {name}: names test set {printable(test_set)[:40]!r}, not in "
                              "predictions/test_sets.parquet")
        case_ids = cases[test_set].case_id
        table = _table(raw[name], name, where, lambda names, name=name: tables.subgroup_columns(names, name, limits.attributes),
                       len(case_ids), limits, "its test set")
        try:
            out[test_set] = subgroup_member.checked_table(table, name, case_ids, limits)
        except ValueError as exc:
            raise BundleError(f"{where}: {exc}") from None
    return out


_JSON_SCHEMAS = {"suites.json": schema.suites, "runs.json": schema.runs, "datasets.json": schema.datasets,
                 "encoders.json": schema.encoders}


def _described(raw: _Members, where: str, limits: Limits) -> dict[str, Any]:
    out = {}
    for name, validate in _JSON_SCHEMAS.items():
        try:
            out[name] = validate(_json(raw[name], name, where, limits), limits)
        except schema.SchemaError as exc:
            raise BundleError(f"{where}: {exc}") from None
    return out


def _names(records: pd.DataFrame, where: str, limits: Limits) -> list[str]:
    try:
        return check_names({"encoder": records["encoder"].astype(str).unique(),
                            "task": records["task"].astype(str).unique()}, limits)
    except ValueError as exc:
        raise BundleError(f"{where}: records.parquet: {exc}") from None


ROLES = ("test", "shift")


def _check_test_sets(test_sets: pd.DataFrame, where: str, limits: Limits) -> None:
    name = "predictions/test_sets.parquet"
    if not test_sets["role"].isin(ROLES).all():
        raise BundleError(f"{where}: {name}: role {printable(test_sets.loc[~test_sets['role'].isin(ROLES), 'role'].iloc[0])[:20]!r}"
                          f", not one of {', '.join(ROLES)}")
    for column, most in (("n_cases", limits.cases), ("n_clusters", limits.cases)):
        values = test_sets[column].to_numpy()
        bad = (values < 1) | (values > most)
        if bad.any():
            raise BundleError(f"{where}: {name}: {column} {int(values[bad][0])} in row {int(np.argmax(bad))}, "
                              f"not between 1 and the {most}-case limit")


def _vector_footer(handle, name: str, where: str, n_cases: int, vectors: int, limits: Limits) -> None:
    """A test set's vector member, from its footer: the schema's columns, at most the manifest's vectors,
    and no row group declaring more floats than its vectors can hold."""
    try:
        parquet = tables.open_footer(handle, name)
        tables.check(parquet, name, tables.VECTORS, vectors, exact=False, said_by=MANIFEST)
        tables.check_vector_groups(parquet, name, n_cases, limits.classes, limits.group_values)
    except tables.TableRefused as exc:
        raise BundleError(f"{where}: {exc}") from None
    finally:
        handle.seek(0)


def _typed(records: pd.DataFrame) -> pd.DataFrame:
    """Numbers as numbers (the columns scoring reads), text as text: as the results store reads them."""
    from crsbench.results.records import RECORD_COLUMNS

    out = records.copy()
    for name, kind in RECORD_COLUMNS:
        if kind in ("INTEGER", "REAL") and out[name].notna().any():
            out[name] = pd.to_numeric(out[name])
    return out


def _cases(raw: dict[str, bytes], row, where: str, limits: Limits) -> CaseSet:
    name = f"predictions/cases/{row.test_set}.parquet"
    if name not in raw:
        raise BundleError(f"{where}: {name}: missing")
    table = _table(raw[name], name, where, tables.case_columns, int(row.n_cases), limits, "its test set")
    _no_nulls(table[["case_id", "cluster"]], name, where)
    if "label" in table.columns:
        labels = table["label"].to_numpy()
    else:
        columns = sorted((c for c in table.columns if c.startswith("label_")), key=lambda c: int(c.split("_")[1]))
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
